"""Ask/tell in batches over a grid, and the loop that runs an objective itself: what every ciq_build search shares.

Two ways to drive a search:

* ``search.start(num_workers=4)`` evaluates candidates itself (in a
  ``concurrent.futures`` executor) and returns
  :class:`~ciq_build.search.results.Results`.
* ``ask()`` / ``tell()`` for a caller that evaluates candidates itself.
  ``ask()`` returns the current batch's candidates that have no score yet
  (asking again before telling returns the same ones); once every candidate
  of the batch has been told, the next ``ask()`` makes the next batch. A
  batch is a pure function of the seed and of the scores told so far (never
  of timing or tell order), so a resumed run that answers each asked
  candidate from a journal -- keyed by :func:`canonical_key` -- re-creates
  the same state and carries on where the first one stopped.

A subclass says how a batch is made (``_breed``) and what it learns once a
batch is told (``_learn``).
"""

from __future__ import annotations

import concurrent.futures as cf
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict

from ciq_build.compiler.controls import Controls
from ciq_build.core.causes import Cause
from ciq_build.core.space import Genome, Param, SearchSpace, as_space
from ciq_build.errors import ConfigError, SearchError
from ciq_build.search.base import Proposal
from ciq_build.search.configuration import (
    INVALID_SCORE,
    SearchConfiguration,
    _call_objective,
    _positive_int,
    interpret,
)
from ciq_build.search.evaluation import Evaluation
from ciq_build.search.progress import ProgressReporter
from ciq_build.search.results import Results

_NO_CONTROLS = Controls()  # a search over a grid compiles nothing: every evaluation shares the empty (frozen) controls


@dataclass(frozen=True)
class Candidate:
    """A configuration to evaluate: ``params`` is what the objective receives."""

    id: int
    generation: int
    params: dict[str, Any]
    key: str
    genome: Genome = field(repr=False)


class SearchOptions(TypedDict, total=False):
    """BatchSearch's keyword options, which every batch search takes and passes on unchanged (its subclasses'
    ``**options``): ``seeds``, ``objective_names`` and ``progress``, as BatchSearch describes them."""

    seeds: Sequence[Mapping[str, Any]]
    objective_names: Sequence[str] | None
    progress: bool | None


class BatchSearch:
    """A search over ``search_space`` for ``objective_function`` that proposes its candidates in batches.

    ``seeds``: configurations (params dicts, absent keys = knocked out) to
    evaluate first, e.g. the compiler's defaults. ``progress``: True/False
    forces the stderr status line on/off; None shows it only on a terminal.
    """

    def __init__(
        self,
        objective_function: Callable[[dict[str, Any]], Any] | None,
        search_space: Mapping[str, Param] | SearchSpace,
        search_config: SearchConfiguration,
        *,
        seeds: Sequence[Mapping[str, Any]] = (),
        objective_names: Sequence[str] | None = None,
        progress: bool | None = None,
    ):
        if objective_function is not None and not callable(objective_function):
            raise ConfigError(f"objective_function must be callable, got {objective_function!r}")
        if not isinstance(search_config, SearchConfiguration):
            raise ConfigError(f"search_config must be a SearchConfiguration, got {search_config!r}")
        self.objective_function = objective_function
        self.space = as_space(search_space)
        self.config = search_config
        self.seed: int = search_config.seed if search_config.seed is not None else secrets.randbits(63)
        self.directions = search_config.directions
        self._seed_genomes: list[Genome] = []
        for i, params in enumerate(seeds):
            try:
                genome = self.space.to_genome(params)
            except ConfigError as error:
                raise ConfigError(f"seed configuration {i} ({params!r}) does not fit the search space: {error}") from None
            if genome not in self._seed_genomes:
                self._seed_genomes.append(genome)
        self.progress = progress
        self.results = Results(self.directions, objective_names=objective_names)
        self._generation = 0
        self._batch: list[Candidate] | None = None
        self._waiting: dict[int, Candidate] = {}  # the batch's candidates not told yet, in batch order
        self._told: dict[int, Evaluation] = {}
        self._seen: set[Genome] = set()
        self._next_id = 0
        self._issued = 0
        self._started: float | None = None
        self._stop_reason: str | None = None

    # -- state ----------------------------------------------------------------------

    @property
    def generation(self) -> int:
        """The batch (generation) ask() works on (0-based)."""
        return self._generation

    @property
    def finished(self) -> bool:
        return self._stop_reason is not None

    @property
    def stop_reason(self) -> str | None:
        """Why the search ended: generations, max_evaluations, time_limit, exhausted, all_invalid."""
        return self._stop_reason

    @property
    def pending(self) -> list[Candidate]:
        """Candidates asked but not told yet."""
        return list(self._waiting.values())

    # -- ask / tell -------------------------------------------------------------------

    def ask(self) -> list[Candidate]:
        """The current batch's candidates that still need a score ([] once finished)."""
        if self._started is None:
            self._started = time.monotonic()
        if self._stop_reason is not None:
            return []
        if self._batch is None:
            self._batch = self._breed()
            self._waiting = {c.id: c for c in self._batch}
            if not self._batch:
                if self._generation == 0 and self.space.constrained:
                    raise self.space.nothing_allowed()
                self._stop_reason = "exhausted"
                return []
        return self.pending

    def tell(
        self,
        candidate: Candidate | int,
        scores: Any = INVALID_SCORE,
        *,
        cause: Cause | None = None,
        message: str = "",
        seconds: float = 0.0,
    ) -> Evaluation:
        """Record one asked candidate's outcome and return its Evaluation.

        ``scores`` is what the objective returned (a number, a tuple, or
        INVALID_SCORE). A ``cause`` marks the candidate failed whatever
        ``scores`` is, with ``message`` saying why. Telling the last
        candidate of a batch lets the search learn from it; it raises
        SearchError when the search cannot go on (every candidate failed).
        """
        cid = candidate.id if isinstance(candidate, Candidate) else candidate
        if cid not in self._waiting:
            raise SearchError(
                f"candidate {cid!r} is not waiting for a score (ask() for the current generation's "
                f"candidates; each is told once)"
            )
        asked = self._waiting[cid]
        if isinstance(candidate, Candidate) and candidate.key != asked.key:
            raise SearchError(f"candidate {cid} was asked with other params than the ones told")
        if cause is None:
            values, cause, why = interpret(scores, len(self.directions))
            message = message or why
        else:
            values = None
            message = message or str(cause)
        evaluation = Evaluation(
            key=asked.key,
            proposal=Proposal(id=asked.id, generation=asked.generation, params=dict(asked.params)),
            controls=_NO_CONTROLS,
            ok=cause is None,
            cause=cause,
            message=message,
            metrics={},
            spread={},
            scores=values,
            seconds=float(seconds),
        )
        self._told[cid] = evaluation
        del self._waiting[cid]
        self.results.add(evaluation)
        if not self._waiting:
            self._close_batch()
        return evaluation

    # -- what a subclass provides -------------------------------------------------------

    def _breed(self) -> list[Candidate]:
        """The next batch (empty: nothing left to propose)."""
        raise NotImplementedError

    def _learn(self, batch: list[Candidate], generation: int) -> None:
        """Take in a batch whose every candidate has been told (self._told); may raise SearchError."""
        raise NotImplementedError

    # -- shared steps ---------------------------------------------------------------------

    def _batch_size(self) -> int:
        """The pool size, cut to what --max-evaluations leaves."""
        size = self.config.pool_size
        if self.config.max_evaluations is not None:
            size = min(size, self.config.max_evaluations - self._issued)
        return size

    def _new(self, genome: Genome, out: list[Genome]) -> bool:
        """Adds `genome` to `out` if it was never proposed and the constraints allow it."""
        if genome in self._seen:
            return False
        self._seen.add(genome)
        # A configuration the constraints refuse is never proposed; seen, so it is not drawn again.
        if not self.space.allows(genome):
            return False
        out.append(genome)
        return True

    def _candidate(self, genome: Genome) -> Candidate:
        candidate = Candidate(self._next_id, self._generation, self.space.to_params(genome), self.space.key_of(genome),
                              genome)
        self._next_id += 1
        self._issued += 1
        return candidate

    def _close_batch(self) -> None:
        assert self._batch is not None
        batch, self._batch = self._batch, None
        generation = self._generation
        self._generation += 1
        self._learn(batch, generation)
        if self._generation >= self.config.generations:
            self._stop_reason = "generations"
        elif self.config.max_evaluations is not None and self._issued >= self.config.max_evaluations:
            self._stop_reason = "max_evaluations"
        elif (
            self.config.time_limit is not None
            and self._started is not None
            and time.monotonic() - self._started >= self.config.time_limit
        ):
            self._stop_reason = "time_limit"

    def _all_invalid(self, batch: list[Candidate], generation: int) -> SearchError:
        self._stop_reason = "all_invalid"
        reasons = sorted({self._told[c.id].message for c in batch})
        return SearchError(
            f"every candidate of generation {generation} ({len(batch)} of {len(batch)}) was invalid, "
            f"so the search cannot go on. Reasons: {'; '.join(reasons[:5])}. "
            "Check the objective (run it on one configuration by hand) and the search space."
        )

    # -- running the objective itself -----------------------------------------------------

    def _best_text(self) -> str | None:
        if len(self.directions) > 1:
            front = self.results.pareto_front()
            return f"front of {len(front)}" if front else None
        best = self.results.get_best_result()
        return None if best is None else f"{best.scores[0]:.6g}"  # type: ignore[index]

    def start(
        self,
        num_workers: int = 1,
        *,
        executor: cf.Executor | None = None,
        processes: bool = False,
    ) -> Results:
        """Run to the end, evaluating each batch in parallel; return the Results.

        With ``num_workers`` > 1 a thread pool (or a process pool with
        ``processes=True``; the objective must then be picklable) runs the
        objective; ``executor`` uses the caller's own instead. Results and the
        sequence of candidates do not depend on the number of workers.
        """
        if self.objective_function is None:
            raise ConfigError("start() needs an objective_function; use ask()/tell() to evaluate candidates yourself")
        workers = _positive_int("num_workers", num_workers)
        own: cf.Executor | None = None
        if executor is None and workers > 1:
            pool_type = cf.ProcessPoolExecutor if processes else cf.ThreadPoolExecutor
            executor = own = pool_type(max_workers=workers)
        reporter = ProgressReporter(
            self.config.generations, enabled=self.progress if self.progress is not None else None,
            time_limit=self.config.time_limit,
        )
        try:
            while batch := self.ask():
                reporter.update(self._generation, evaluations=len(self.results),
                                failures=self.results.failures, best=self._best_text)
                for candidate, (value, error, wall) in zip(batch, self._evaluate(batch, executor)):
                    if error is not None:
                        self.tell(candidate, None, cause=Cause.ERROR, message=error, seconds=wall)
                    else:
                        self.tell(candidate, value, seconds=wall)
            reporter.update(self._generation, evaluations=len(self.results),
                            failures=self.results.failures, best=self._best_text, force=True)
        finally:
            reporter.close()
            if own is not None:
                own.shutdown(wait=True, cancel_futures=True)
        return self.results

    def _evaluate(self, batch: list[Candidate], executor: cf.Executor | None) -> list[tuple[Any, str | None, float]]:
        objective = self.objective_function
        assert objective is not None
        if executor is None:
            return [_call_objective(objective, c.params) for c in batch]
        futures = [executor.submit(_call_objective, objective, c.params) for c in batch]
        outcomes = []
        for future in futures:
            try:
                outcomes.append(future.result())
            except Exception as error:  # the executor itself failed (pickling, a dead worker process)
                outcomes.append((None, f"{type(error).__name__}: {error}", 0.0))
        return outcomes
