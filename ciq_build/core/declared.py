"""Where a target's tuning settings are declared, in the words of the front end the user wrote them in.

A CMake target declares them as ciq_tune_target() keywords (PARAMS, CONSTRAINTS, TIMEOUT), a setuptools
CudaExtension as its arguments (params=, ciq_constraints=, ciq_timeout=: docs/setuptools.md). A message that
tells the user what to change names the one they wrote: a setuptools project has no ciq_tune_target().
"""

from __future__ import annotations

# Each ciq_tune_target() keyword a message may ask to change, and the CudaExtension argument that declares it.
SETUPTOOLS_ARGUMENTS = {
    "PARAMS": "params",
    "CONSTRAINTS": "ciq_constraints",
    "TIMEOUT": "ciq_timeout",
    "OBJECTIVES": "ciq_objectives",
    "SEARCH_SPACE": "ciq_search_space",
    "BENCHMARK": "ciq_benchmark",
}


def declared(keyword: str, setuptools: bool) -> str:
    """`keyword` (a ciq_tune_target() keyword of SETUPTOOLS_ARGUMENTS) and where the user writes it:
    "PARAMS in ciq_tune_target()", or "params= in its CudaExtension" for a setuptools target."""
    if setuptools:
        return f"{SETUPTOOLS_ARGUMENTS[keyword]}= in its CudaExtension"
    return f"{keyword} in ciq_tune_target()"
