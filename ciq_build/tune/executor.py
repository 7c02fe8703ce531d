"""Where candidates are evaluated: the `Executor` contract the driver calls, and the local executor.

The driver measures the baseline itself and derives the candidates' limits from
it (ciq_build.tune.timeouts); only then does it start the executor's workers,
handing them every per-phase value as a frozen `SearchPhase`. An executor
reads nothing the driver may change later: with --executor ray the actors
once read the settings' bare TIMEOUT while the driver's own runner had the
derived limits (4x a 162 s baseline would be 648 s; Ray's candidates got 60 s).

An executor imports this contract, never the registry that names it
(ciq_build.tune.executors: `--executor NAME`, and each executor's own
options).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

from ciq_build.compiler.toolchain import Toolchain
from ciq_build.core.objectives import Objective
from ciq_build.project.backend import BuildBackend
from ciq_build.project.manifest import Manifest
from ciq_build.project.sources import Snapshot
from ciq_build.project.worker import WorkerTree
from ciq_build.tune.runner import BuildRunner, Runner
from ciq_build.tune.target_result import TargetResult
from ciq_build.tune.timeouts import Timeouts
from ciq_build.tune.tune_options import TuneOptions, TuneSettings


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
    executor_options: Any  # the executor's own options, as given (TuneSettings.executor_options; None: defaults)
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
