"""The library call of `python -m ciq_build tune <target>`: `ciq_build.tune_target(...)`.

It is the command line's tune, with Python values instead of flags: every
option `tune` declares in ``TuneOptions`` (generations=, pool_size=, seed=, controls=[...],
max_evaluations=, jobs=, pin=, quiet=, ...) and each executor in its own (ray_address=, ...:
ciq_build.tune.executors) is a keyword, and a strategy may
be a ``Strategy`` object of the caller's own (ciq_build.search.strategies).
Errors a user can meet are raised as ``CiqError`` (the command line turns
them into its exit codes); the outcome is returned, not an exit status.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ciq_build.core.options import declared
from ciq_build.errors import ConfigError
from ciq_build.project.backend import BuildBackend, setuptools_project_of
from ciq_build.project.cmake_backend import CMakeBackend
from ciq_build.tune.driver import run_tune
from ciq_build.tune.executors import keyword_names, tune_options
from ciq_build.tune.finish import TuneOutcome
from ciq_build.tune.tune_options import TuneOptions


def tune_target(target: str, *, build_dir: str | Path = "build", source_dir: str | Path | None = None,
                objectives: Sequence[str] | None = None, backend: BuildBackend | None = None,
                setuptools: str | Path | None = None, **options: Any) -> TuneOutcome:
    """Tune one target of a project: by default of a CMake build tree (`CMakeBackend`, configured first from
    `source_dir` when it has no cache yet); a setuptools project's CudaExtension where the command line would take
    one (`tune --setuptools PROJECT`, `-S` a folder with a setup.py and no CMakeLists.txt, `-B` such a folder's
    build/): `setuptools=`, `source_dir=` or `build_dir=` alike; `backend`: the project's own build backend
    (ciq_build.project.backend), whose build tree is then the tune's."""
    known = keyword_names()  # every option `tune` and its executors declare; the tree and targets are the arguments
    unknown = sorted(set(options) - known)
    if unknown:
        raise ConfigError(f"tune_target() takes no option {', '.join(unknown)}; its options are "
                          f"{', '.join(sorted(known))} (as `python -m ciq_build tune --help` describes them)")
    if backend is None:
        # As the command line decides (ciq_build.cli._backend): a newcomer's tune_target(source_dir=<a setup.py
        # project>) ran cmake on it ("does not appear to contain CMakeLists.txt"), and build_dir=<project>/build
        # was "not a configured CMake build tree".
        project = setuptools_project_of(Path(build_dir), Path(source_dir) if source_dir is not None else None,
                                        Path(setuptools) if setuptools is not None else None)
        if project is not None:
            from ciq_build.project.setuptools_backend import SetuptoolsBackend

            backend = SetuptoolsBackend(project)
    elif setuptools is not None:
        raise ConfigError("tune_target() takes backend= or setuptools=, not both")
    # One word where a list is declared (objectives="registers", controls="params") is that one item, as on the
    # command line (--objective registers): list() of it made the objectives 'r', 'e', 'g', ... ("'r' is not an
    # objective").
    repeated = {f.name for f, how in declared(TuneOptions) if how.repeated}
    options = {key: [value] if key in repeated and isinstance(value, str) else value for key, value in options.items()}
    if isinstance(objectives, str):
        objectives = [objectives]
    tune = tune_options(
        options, target=target, build_dir=backend.build_dir if backend is not None else Path(build_dir).resolve(),
        source_dir=Path(source_dir).resolve() if source_dir is not None else None,
        objectives=list(objectives) if objectives is not None else None)
    return run_tune(tune, backend if backend is not None else CMakeBackend(tune.build_dir, tune.source_dir,
                                                                           tuple(tune.cmake_args)))
