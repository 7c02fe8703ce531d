"""Where candidates are evaluated: the `Executor` protocol the driver calls, the local executor, and the registry
that resolves `--executor NAME` in one place.

The driver measures the baseline itself and derives the candidates' limits from
it (ciq_build.tune.timeouts); only then does it start the executor's workers,
handing them every per-phase value as a frozen `SearchPhase`. An executor
reads nothing the driver may change later: with --executor ray the actors
once read the settings' bare TIMEOUT while the driver's own runner had the
derived limits (4x a 162 s baseline would be 648 s; Ray's candidates got 60 s).

The registry maps a name to `module:attribute`, imported when a tune first
asks for it, so Ray is imported only by `--executor ray` (Kernel Tuner's
`_STRATEGY_IMPORTS`, Optuna's `get_storage`); `register_executor` adds one
from Python (a user's own, a test's double). No other module interprets an
executor's name: the CLI's choices, the refusals and the driver's dispatch
all come from here.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

from ciq_build.compiler.toolchain import Toolchain
from ciq_build.core.objectives import Objective
from ciq_build.errors import ConfigError
from ciq_build.project.backend import BuildBackend
from ciq_build.project.manifest import Manifest
from ciq_build.project.sources import Snapshot
from ciq_build.project.worker import WorkerTree
from ciq_build.tune.runner import BuildRunner, Runner
from ciq_build.tune.target_result import TargetResult
from ciq_build.tune.timeouts import Timeouts
from ciq_build.tune.tune_options import ExecutorSettings, TuneOptions, TuneSettings


@dataclass(frozen=True)
class SearchPhase:
    """What an executor's workers need for the search, fixed once the baseline is measured."""

    backend: BuildBackend  # the project's: what makes a worker's tree (BuildBackend.make_tree)
    manifest: Manifest
    toolchain: Toolchain
    objectives: tuple[Objective, ...]
    repeats: int
    jobs: int  # candidates evaluated at once (--jobs)
    timeouts: Timeouts  # each candidate's compile and benchmark run: derived from the baseline
    configure_timeout: float  # a worker's scratch tree configure
    executor: ExecutorSettings
    snapshot: Snapshot  # the fingerprinted source files as the driver hashed them (what the search measures)
    writes_sources: bool  # the project writes into its source tree (WorkerTree.writes_sources)
    # The driver's runner: what the tune knows so far (the race's incumbent, measured code), shared with the
    # workers as a local worker thread shares it. The one mutable part, and only the driver writes it.
    known: BuildRunner
    say: Callable[[str], None]


@dataclass(frozen=True)
class Workers:
    """The search loop's runner and its workers (scratch trees, Ray slots, ...): one candidate per worker at once."""

    runner: Runner[Any]
    slots: Sequence[Any]


class Executor:
    """Where a tune's candidates are evaluated. The driver keeps the search, the journal, the baseline and the pin.

    Each hook has the local default (Optuna's BaseSampler, Kernel Tuner's Runner): an executor writes only
    what it changes, beside its `name`.
    """

    name: str  # what --executor says
    # True: its workers are the trees the driver made (so any build of the target works); False: it makes
    # trees of its own, asking phase.backend for them (ciq_build.ray's actors configure theirs on the workers),
    # and is refused for a backend whose candidates cannot be built elsewhere (BuildBackend.remote_builds).
    uses_driver_trees = True

    def validate(self, options: TuneOptions) -> None:
        """Refuse options this executor cannot honour, before anything is configured (by default, none: --jobs
        and --gpus are the driver's own, checked by TuneOptions.validate)."""

    def check(self, settings: TuneSettings) -> None:
        """Refuse resolved settings this executor cannot honour (the objectives known), before the baseline."""

    def local_trees(self, jobs: int, benchmark_slots: int) -> int:
        """How many scratch trees the driver makes besides the baseline's (at least 1: confirmation, minimal pin).

        By default a worker more per GPU than --jobs: the next candidates compile while the GPUs benchmark."""
        return jobs + benchmark_slots

    def workers(self, phase: SearchPhase, trees: Sequence[WorkerTree]) -> AbstractContextManager[Workers]:
        """The search's runner and workers, started on entry and stopped on exit; `trees`: the driver's.

        By default the driver's runner (the candidates' one, limited by phase.timeouts) over its trees."""
        return nullcontext(Workers(phase.known, trees))

    def tune_targets(self, options: TuneOptions, targets: list[str],
                     one_after_another: Callable[[], list[TargetResult]]) -> list[TargetResult]:
        """`tune --all` (or several targets): what each came to; `one_after_another` tunes them here, in turn
        (the default)."""
        return one_after_another()


class LocalExecutor(Executor):
    """`--executor local` (the default): worker threads on this machine, one per scratch tree of the driver's."""

    name = "local"


# Built in, by name: `module:attribute` (a class, made with no arguments), imported when first asked for.
_BUILT_IN = {"local": f"{__name__}:LocalExecutor", "ray": "ciq_build.ray.plugin:RayExecutor"}
_REGISTERED: dict[str, Executor] = {}


def register_executor(executor: Executor) -> None:
    """Make `executor` available as `--executor <its name>` (and `TuneOptions(executor=...)`) in this process."""
    if executor.name in _BUILT_IN:
        raise ConfigError(f"the executor name {executor.name!r} is taken by a built-in executor: pick another")
    _REGISTERED[executor.name] = executor


def executor_names() -> tuple[str, ...]:
    """Every executor --executor accepts: the built-in ones, then those registered."""
    return (*_BUILT_IN, *(name for name in _REGISTERED if name not in _BUILT_IN))


def get_executor(name: str) -> Executor:
    """The executor called `name`; a ConfigError naming the choices for any other."""
    if name in _REGISTERED:
        return _REGISTERED[name]
    if name not in _BUILT_IN:
        raise ConfigError(f"--executor must be one of {', '.join(executor_names())}, not {name!r}")
    module, attribute = _BUILT_IN[name].split(":")
    executor: Executor = getattr(importlib.import_module(module), attribute)()
    _REGISTERED[name] = executor
    return executor


def checked_executor(options: TuneOptions) -> Executor:
    """`options` checked (TuneOptions.validate, then by their executor), and their executor."""
    options.validate()
    executor = get_executor(options.executor)
    executor.validate(options)
    return executor
