"""ciq_build: tune the NVIDIA CUDA compiler for a project's own kernels.

The public Python API (docs/python-api.md), shaped like NVIDIA
CompileIQ's so that a CompileIQ objective function runs unchanged::

    from ciq_build import Search, SearchConfiguration, space as ss

    def objective(config):
        return config["x"] ** 2 + config["y"]

    results = Search(objective_function=objective, search_space={"x": ss.range(1.0, 20.0, 0.5),
                     "y": ss.choice([1, 2, 3])}, search_config=SearchConfiguration(generations=5)).start()

and the library call of ``python -m ciq_build tune``: ``tune_target(...)``.

Each name is imported on first use (PEP 562): ``import ciq_build`` stays as
cheap as it is, and ``__version__`` (ciq_build.version) as cheap as the
CMake module and setuptools builds need it. The package's own modules import
ciq_build.version, not this registry, which names the modules above them.
"""

from __future__ import annotations

import importlib
from typing import Any

# name -> "module:attribute", or "module" for a module itself.
_PUBLIC = {
    "__version__": "ciq_build.version:__version__",
    "Search": "ciq_build.search.search_api:Search",
    "SearchConfiguration": "ciq_build.search.configuration:SearchConfiguration",
    "INVALID_SCORE": "ciq_build.search.configuration:INVALID_SCORE",
    "space": "ciq_build.core.space",
    "tune_target": "ciq_build.api:tune_target",
}

__all__ = [*_PUBLIC]


def __getattr__(name: str) -> Any:
    target = _PUBLIC.get(name)
    if target is None:
        raise AttributeError(f"module 'ciq_build' has no attribute {name!r}")
    module, _, attribute = target.partition(":")
    value = importlib.import_module(module)
    return getattr(value, attribute) if attribute else value


def __dir__() -> list[str]:
    return sorted(__all__)
