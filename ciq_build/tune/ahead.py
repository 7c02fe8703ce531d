"""Builds ahead: candidates compiled before the loop hands them to a worker, so the GPU does not wait for compiles.

A runtime tune leaves the GPU idle wherever a benchmark waits for its
candidate's compile with nothing else to run: after the baseline (the loop
starts compiling only once the baseline is measured) and at each generation's
end (the next generation is asked only once the last candidate is told). Both
next batches can be guessed while the GPU is still busy: the first from the
seed alone, the next from a copy of the source told what has finished so far
(those still running told as failed: most of them, raced out, would not
survive anyway). Their builds then run in worker trees that are free, and the
loop hands a candidate to the tree that already holds its build.

Nothing here changes what the search asks or is told: the source itself sees
the same asks and tells in the same order, so the same seed gives the same
candidates and winner, and a resume replays the journal as before. A guess
that misses costs one compile on a worker that was idle; its tree is rebuilt
when needed (once that build ends: a tree holds one build at a time).
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from ciq_build.compiler.controls import Controls
from ciq_build.errors import CiqError
from ciq_build.measure import stopping
from ciq_build.project.worker import CandidateBuild, WorkerTree
from ciq_build.search.base import CandidateSource, Proposal
from ciq_build.search.evaluation import Evaluation


def guess_next(source: CandidateSource, told: Sequence[tuple[Proposal, Evaluation | None]]) -> list[Proposal]:
    """The batch `source` would ask next, once told `told` (None: not finished, told as failed); [] when it
    cannot be guessed (a source that cannot be copied, or whose copy refuses)."""
    if not getattr(source, "proposes_ahead", False):  # a source whose ask writes files or calls out (compileiq)
        return []
    try:
        guess = copy.deepcopy(source)
        for proposal, evaluated in told:
            if evaluated is None or not evaluated.ok:
                guess.tell(proposal, None, "not finished yet" if evaluated is None else "failed")
            else:
                guess.tell(proposal, evaluated.scores)
        return guess.ask()
    except Exception:  # noqa: BLE001 - a guess that fails is no guess; the real source is untouched
        return []


class BuildsAhead:
    """Builds of guessed candidates, one per worker tree at most, `build` doing each (the runner's own build).

    `take` is the runner's: the build ahead of the candidate it evaluates in that tree, if any.
    """

    def __init__(self, build: Callable[[WorkerTree, Controls], CandidateBuild], jobs: int) -> None:
        self._build = build
        self._pool = ThreadPoolExecutor(max_workers=max(1, jobs), thread_name_prefix="ciq-ahead")
        self._lock = threading.Lock()
        self._held: dict[int, tuple[Controls, Future[CandidateBuild]]] = {}  # id(tree) -> its build ahead
        self._stopped = threading.Event()
        self.started = 0  # builds ahead started, for the tests and the bench
        self.used = 0  # of them, taken by the candidate they were built for

    def holds(self, controls: Controls) -> int | None:
        """The id of a tree whose build ahead is `controls` (running or done), or None."""
        with self._lock:
            return next((tree for tree, (held, _) in self._held.items() if held == controls), None)

    def held(self, tree: WorkerTree) -> Controls | None:
        """The controls `tree` builds or holds ahead, or None."""
        with self._lock:
            held = self._held.get(id(tree))
        return None if held is None else held[0]

    def busy(self, tree: WorkerTree) -> bool:
        """Whether a build ahead is running in `tree` (handing it another candidate waits for it)."""
        with self._lock:
            held = self._held.get(id(tree))
        return held is not None and not held[1].done()

    def start(self, proposals: Iterable[Proposal], trees: Sequence[WorkerTree], wanted: Callable[[Controls], bool],
              limit: int | None = None) -> None:
        """Build ahead each of `proposals` that is `wanted` and not held yet, in `trees` that are neither
        building ahead nor holding a build of one of `proposals`; at most `limit` new builds."""
        guessed: list[Controls] = []
        for proposal in proposals:
            try:
                guessed.append(proposal.controls())
            except CiqError:
                continue  # the loop fails it without a build
        with self._lock:
            held = {controls for controls, _ in self._held.values()}
            free = [tree for tree in trees if id(tree) not in self._held or (
                self._held[id(tree)][1].done() and self._held[id(tree)][0] not in guessed)]
            count = 0
            for controls in guessed:
                if self._stopped.is_set() or not free or (limit is not None and count >= limit):
                    break
                if controls in held or not wanted(controls):
                    continue
                tree = free.pop(0)
                self._held[id(tree)] = (controls, self._pool.submit(self._run, tree, controls))
                held.add(controls)
                count += 1
                self.started += 1

    def _run(self, tree: WorkerTree, controls: Controls) -> CandidateBuild:
        with stopping.cancellable(self._stopped):  # after `stop`, a build not started yet starts nothing
            return self._build(tree, controls)

    def take(self, tree: WorkerTree, controls: Controls) -> CandidateBuild | None:
        """The build of `controls` made ahead in `tree` (waited for), or None: build it now. Any other build
        ahead there is waited for and forgotten, since the tree is rebuilt next."""
        with self._lock:
            held = self._held.pop(id(tree), None)
        if held is None:
            return None
        ahead, future = held
        try:
            built = future.result()
        except BaseException:  # noqa: BLE001 - stopped or broken ahead: the candidate's own build says why
            return None
        if ahead != controls:
            return None
        self.used += 1
        return built

    def stop(self) -> None:
        """Start no more builds ahead and wait for those running; every tree is then free to rebuild."""
        self._stopped.set()
        self._pool.shutdown(wait=True, cancel_futures=True)
        with self._lock:
            self._held.clear()

    def describe(self) -> dict[str, Any]:
        return {"started": self.started, "used": self.used}


def start_builds_ahead(build: Callable[[WorkerTree, Controls], CandidateBuild], source: CandidateSource | None,
                       workers: Sequence[WorkerTree], jobs: int, is_new: Callable[[Controls], bool]) -> BuildsAhead:
    """The first batch's builds, started beside the baseline's build and runs: at most `jobs` - 1, so the
    baseline's build is never kept waiting, and not in the first worker's tree, which the PARAMS probe builds
    in meanwhile; none without a `source` (one made again once the baseline is measured)."""
    ahead = BuildsAhead(build, jobs)
    if source is not None and jobs > 1 and len(workers) > 1:
        ahead.start(guess_next(source, []), workers[1:], is_new, limit=jobs - 1)
    return ahead
