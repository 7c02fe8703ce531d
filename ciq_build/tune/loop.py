"""The search loop: ask the candidate source, evaluate each proposal (journaled ones from the cache), tell.

Every finished evaluation is journaled before the source hears of it, so a
stopped tune resumes by replaying the journal into a source with the same
seed; proposals are told in the order they were asked, whatever order they
finish in, so the next batch depends only on the seed and the scores told.
The budgets are counted here and only here (Optuna's ``optimize(n_trials=,
timeout=)``): the search's plan, for a source that never ends by itself
(random search, an Optuna sampler: ``ended_by_the_loop``): its strategy's
generations of its pool, at most ``--max-evaluations`` (`planned_budget`),
journaled evaluations counted, so a resumed search plans as many as one run
through; the evaluation budget
(``--max-evaluations``: evaluations run by this process count, journaled ones
are free) and the wall-clock one (``--time-limit``: a deadline on the
clock, after which no candidate starts; those running finish, within their
timeouts, and are journaled and told).
With builds ahead (ciq_build.tune.ahead), trees the batch leaves free build
the next batch as a copy of the source guesses it, and each candidate goes
to the tree that holds its build; the tree holding the best candidate's
build is kept while other workers are busy, so the winner is re-measured as
built. The source itself is asked and told exactly as without.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any, Generic, Protocol, TypeVar, cast

from ciq_build.compiler.controls import Controls
from ciq_build.core import pace
from ciq_build.core.causes import Cause
from ciq_build.core.objectives import Objective
from ciq_build.core.pareto import Direction, dominates
from ciq_build.core.settings import SearchSettings, duration_text
from ciq_build.errors import ConfigError
from ciq_build.measure import processes, stopping
from ciq_build.search.base import CandidateSource, Proposal
from ciq_build.search.configuration import planned_batches, planned_evaluations
from ciq_build.search.evaluation import Evaluation
from ciq_build.search.exhaustive import ENGINE_NAME as EXHAUSTIVE_ENGINE
from ciq_build.search.strategies import GRID_DEFAULT
from ciq_build.tune.ahead import BuildsAhead, guess_next
from ciq_build.tune.cache import EvaluationCache
from ciq_build.tune.runner import Runner
from ciq_build.tune.winner import beats_defaults, pick_pinned

W = TypeVar("W")


class Progress(Protocol):
    """Where the loop reports each finished evaluation (ciq_build.tune.progress.TuneProgress).

    `evaluations` counts the evaluations finished so far, `best` is the scores of the point the tune would pin from
    the Pareto front of them (`front` points; one where a single objective is tuned), and `pinnable` whether it would
    pin that point as it stands (RunningBest.pinnable).
    """

    def update(self, generation: int, *, evaluations: int = 0, failures: int = 0,
               best: tuple[float, ...] | None = None, front: int = 0, last: Evaluation | None = None,
               pinnable: bool = True) -> None: ...

    def close(self) -> None: ...


class SearchLoop(Generic[W]):
    """Ask, evaluate on the free workers in parallel, journal, tell; until the source or the budget is spent.

    `key_of` gives each candidate's cache key; `stop_for` may turn a finished
    evaluation into an exception that ends the run (a full disk), after it is journaled if it can be.
    """

    def __init__(self, source: CandidateSource, runner: Runner[W], workers: Sequence[W], cache: EvaluationCache,
                 key_of: Callable[[Controls], str], objectives: Sequence[Objective], *,
                 planned: int | None = None, budget: int | None = None, deadline: float | None = None,
                 clock: Callable[[], float] = time.monotonic, progress: Progress | None = None,
                 stop_for: Callable[[Evaluation], BaseException | None] | None = None,
                 ahead: BuildsAhead | None = None, pick: str = SearchSettings.pick,
                 baseline: tuple[float, ...] | None = None) -> None:
        if not workers:
            raise ValueError("the search loop needs at least one worker")
        self.source = source
        self.runner = runner
        self.workers = list(workers)
        self.cache = cache
        self.key_of = key_of
        self.objectives = list(objectives)
        # Proposals in all, journaled ones included: the search's plan, which ends a source that does not end by
        # itself (CandidateSource.ended_by_the_loop); one that does ends at its own.
        self.planned = planned if getattr(source, "ended_by_the_loop", False) else None
        self.budget = budget
        self.deadline = deadline  # on `clock`: no candidate starts after it
        self.clock = clock
        self.progress = progress
        self.stop_for = stop_for
        # Builds of the next batch's guessed candidates, in trees the batch leaves free (workers are trees then).
        self.ahead = ahead
        self.evaluations: list[Evaluation] = []  # told, in order
        self.asked = 0  # ask() calls that returned proposals
        self.proposed = 0  # proposals evaluated or taken from the journal: what the plan counts
        self.spent = 0  # evaluations this process made (not from the journal): what the budget counts
        self.stopped_by: str | None = None  # the budget that ended the search; None: the source ended it
        self._cancelled = threading.Event()  # set when the loop ends early: its workers start nothing more
        # What progress is told, per finished evaluation (in the order they finish, not the order told).
        self._finished = 0
        self._failed = 0
        self._best = RunningBest(objectives, pick, baseline)  # `baseline`: the defaults' scores, as the pin's rule reads them

    @property
    def budget_left(self) -> bool:
        return self.budget is None or self.spent < self.budget

    @property
    def plan_left(self) -> bool:
        """Whether the search's plan has proposals to come: when it has none, the search has run its course."""
        return self.planned is None or self.proposed < self.planned

    def _spent(self) -> str | None:
        """The budget spent now, if any ("max_evaluations", "time_limit"), remembered as what stopped the search."""
        if not self.budget_left:
            self.stopped_by = "max_evaluations"
        elif self.deadline is not None and self.clock() >= self.deadline:
            self.stopped_by = "time_limit"
        return self.stopped_by

    def run(self) -> list[Evaluation]:
        with ThreadPoolExecutor(max_workers=len(self.workers), thread_name_prefix="ciq-candidate") as pool:
            try:
                while not self._spent() and self.plan_left:
                    proposals = self.source.ask()
                    if not proposals:
                        break
                    self.asked += 1
                    outcomes = self._evaluate_batch(proposals, pool)
                    self._tell(proposals, outcomes)
            except BaseException:
                # Ctrl-C / SIGTERM, a full disk: the workers must return now, and the pool's exit joins
                # them. Killing what runs is not enough: a worker whose benchmark is killed would start
                # its next repeat, one waiting for the GPU would take the freed slot and run a full
                # benchmark (an interrupted tune ran on for two 25 s runs), so nothing more starts in
                # their scope. What finished is already in the journal.
                self._cancelled.set()
                processes.kill_all_running()
                cancel = getattr(self.runner, "cancel_running", None)  # a runner whose work runs elsewhere (Ray)
                if cancel is not None:
                    cancel()
                pool.shutdown(wait=False, cancel_futures=True)
                raise
            finally:
                if self.progress is not None:  # the bar stays as it ended, and messages go to the stream again
                    self.progress.close()
        return self.evaluations

    def _evaluate_batch(self, proposals: list[Proposal], pool: ThreadPoolExecutor) -> dict[int, Evaluation]:
        """Each proposal's outcome by id; a proposal a budget cut has none."""
        free = list(self.workers)
        pending: dict[Future[Evaluation], W] = {}
        outcomes: dict[int, Evaluation] = {}
        queue = list(proposals)
        while queue or pending:
            while queue and free:
                if not self.plan_left:  # the plan ends inside this batch: the rest are never evaluated
                    queue.clear()
                    break
                proposal = queue.pop(0)
                self.proposed += 1
                try:
                    controls = proposal.controls()
                except ConfigError as error:
                    outcomes[proposal.id] = Evaluation("", proposal, Controls(), False, Cause.INVALID_CONTROLS,
                                                       str(error), {}, {}, None, 0.0)
                    self.spent += 1
                    self._finished_one(outcomes[proposal.id])
                    continue
                key = self.key_of(controls)
                cached = self.cache.lookup(proposal, controls, key)
                if cached is not None:
                    outcomes[proposal.id] = cached
                    self._finished_one(cached)
                    continue
                if self._spent():
                    queue.clear()
                    self.proposed -= 1  # cut by a budget: never evaluated
                    break
                worker = self._worker_for(free, controls, others_busy=bool(pending))
                if worker is None:  # only the best candidate's tree is free: wait for another
                    queue.insert(0, proposal)
                    self.proposed -= 1
                    break
                self.spent += 1
                pending[pool.submit(self._evaluate, worker, proposal, controls, key)] = worker
            if not pending:
                break
            if self.ahead is not None and free and not queue:  # idle trees while the GPU works: build ahead
                self._build_ahead(proposals, outcomes, free)
            for future in _first_done(pending):
                free.append(pending.pop(future))
                evaluated = future.result()
                stop = self.stop_for(evaluated) if self.stop_for is not None else None
                if stop is not None:
                    self.cache.record_environmental(evaluated)
                    raise stop
                self.cache.record(evaluated)  # before the source hears of it: nothing lost on a kill
                outcomes[evaluated.proposal.id] = evaluated
                self._finished_one(evaluated)
        return outcomes

    def _worker_for(self, free: list[W], controls: Controls, others_busy: bool) -> W | None:
        """A free worker for a candidate: the tree built ahead for it, else one that holds no build ahead, else
        one not building ahead (handing one that is waits for that build). The tree that holds the best
        candidate's build is kept while other workers are busy (None: wait for one of them), so the winner is
        re-measured there without a rebuild; with nothing else running it is handed out."""
        ahead = self.ahead
        if ahead is not None:
            trees: list[Any] = list(free)
            kept = self._kept(free)
            if kept is not None and ahead.holds(controls) != id(kept):
                trees.remove(kept)
                if not trees:
                    if others_busy:
                        return None
                    trees = [kept]
            held = ahead.holds(controls)
            choice = (next((t for t in trees if id(t) == held), None)
                      or next((t for t in reversed(trees) if ahead.held(t) is None), None)
                      or next((t for t in reversed(trees) if not ahead.busy(t)), None) or trees[-1])
            free.remove(choice)
            return cast(W, choice)
        return free.pop()

    def _build_ahead(self, proposals: list[Proposal], outcomes: dict[int, Evaluation], free: list[W]) -> None:
        """Build the next batch as a copy of the source guesses it, in the free trees (ciq_build.tune.ahead)."""
        assert self.ahead is not None
        if not (self.budget_left and self.plan_left) or (self.deadline is not None and self.clock() >= self.deadline):
            return
        guess = guess_next(self.source, [(p, outcomes.get(p.id)) for p in proposals])
        if self.planned is not None:  # what the plan will evaluate of it, no more
            guess = guess[:self.planned - self.proposed]
        kept = self._kept(free)
        trees = [t for t in cast(list[Any], free) if t is not kept]
        if guess and trees:
            self.ahead.start(guess, trees, lambda c: not self.cache.has(self.key_of(c)))

    def _kept(self, free: list[W]) -> W | None:
        """The free tree that holds the best candidate's build so far (the runner knows), or None."""
        holding = getattr(self.runner, "holding", None)
        best = self._best.point
        if holding is None or best is None:
            return None
        return next((t for t in free if holding(t, best.controls) is not None), None)

    def _finished_one(self, evaluated: Evaluation) -> None:
        """Progress hears of each evaluation as it finishes: a generation of slow builds is minutes of them."""
        self._finished += 1
        self._failed += 0 if evaluated.ok else 1
        self._best.add(evaluated)
        if self.progress is not None:
            self.progress.update(evaluated.proposal.generation, evaluations=self._finished, failures=self._failed,
                                 best=self._best.scores, front=len(self._best.front), last=evaluated,
                                 pinnable=self._best.pinnable)

    def _evaluate(self, worker: W, proposal: Proposal, controls: Controls, key: str) -> Evaluation:
        """In a worker thread: the runner's evaluation, in the loop's scope (it ends when the loop does)."""
        with stopping.cancellable(self._cancelled):
            return self.runner.evaluate(worker, proposal, controls, key)

    def _tell(self, proposals: list[Proposal], outcomes: dict[int, Evaluation]) -> None:
        for proposal in proposals:
            evaluated = outcomes.get(proposal.id)
            if evaluated is None:  # cut by a budget
                continue
            self.evaluations.append(evaluated)
            self.source.tell(proposal, evaluated.scores, None if evaluated.ok else f"{evaluated.cause}: {evaluated.message}")


def _first_done(pending: Mapping[Future[Evaluation], object]) -> set[Future[Evaluation]]:
    """Wait for the first of `pending` to finish, in steps of stopping.STOP_POLL.

    Not one blocking wait: the kernel may hand a SIGINT or SIGTERM to any thread of the process (a worker
    that is forking a benchmark as it comes takes it), and then nothing wakes the main thread, the only
    one that runs Python's signal handlers, until a candidate finishes: a tune said nothing for a whole
    120 s benchmark after its SIGINT. Between the steps the handler runs, and the stop unwinds the loop.
    """
    done: set[Future[Evaluation]] = set()

    def attempt(timeout: float) -> bool:
        done.update(wait(pending, timeout=timeout, return_when=FIRST_COMPLETED).done)
        return bool(done)

    stopping.wait_or_stop(attempt, "waiting for the candidates")
    return done


class RunningBest:
    """The progress line's best, kept as evaluations finish: the point the pin's rule takes from the Pareto front
    so far (ciq_build.tune.winner.pick_pinned: `pick`, among the points that beat `baseline` on every objective if
    any do, fully measured points before raced-out ones), so that with several objectives the line shows what the
    tune would pin, not the best on the first objective alone (stdgpu: 40 registers with 72 bytes of spills was
    said, 44 with none pinned); with one objective, or `first`, the first objective's best with ties broken by the
    next (0 spills at 56 registers before 0 at 127)."""

    def __init__(self, objectives: Sequence[Objective], pick: str = SearchSettings.pick,
                 baseline: tuple[float, ...] | None = None) -> None:
        self.objectives = list(objectives)
        self.directions = [o.direction for o in objectives]
        self.pick = pick
        self.baseline = baseline  # the defaults' scores (None: not known)
        self.measured: list[Evaluation] = []  # the Pareto front of the fully measured evaluations added
        self.raced: list[Evaluation] = []  # that of the raced-out ones: the winner's only while none is measured
        self.point: Evaluation | None = None  # the point of it the pin's rule takes

    def add(self, evaluated: Evaluation) -> None:
        if evaluated.ok and evaluated.scores is not None:
            if evaluated.raced:
                self.raced = on_front(self.raced, evaluated, self.directions)
            else:
                self.measured = on_front(self.measured, evaluated, self.directions)
            self.point = pick_pinned(self.front, self.baseline, self.objectives, self.pick)

    @property
    def pinnable(self) -> bool:
        """Whether the tune would pin the point as it stands: with several objectives it pins only a point that beats
        the defaults on every objective (miniBUDE: the lines said "would pin spill_bytes 256 bytes, registers 120",
        the knee of a front of which no point did, and the tune pinned nothing); True where the defaults' scores are
        not known."""
        return (self.point is None or self.baseline is None or self.point.scores is None
                or beats_defaults(self.point.scores, self.baseline, self.objectives))

    @property
    def front(self) -> list[Evaluation]:
        """The front the pin is taken from (as pick_winner's)."""
        return self.measured or self.raced

    @property
    def scores(self) -> tuple[float, ...] | None:
        return None if self.point is None else self.point.scores


def on_front(front: list[Evaluation], evaluated: Evaluation, directions: Sequence[Direction]) -> list[Evaluation]:
    """`front` with `evaluated` on it, if no point there dominates or equals it (a tie stays with the first)."""
    scores = evaluated.scores
    if not evaluated.ok or scores is None:
        return front
    if any(f.scores == scores or dominates(cast(tuple[float, ...], f.scores), scores, directions) for f in front):
        return front
    return [f for f in front if not dominates(scores, cast(tuple[float, ...], f.scores), directions)] + [evaluated]


def stop_on_disk_full(disk_full: Callable[[str], BaseException]) -> Callable[[Evaluation], BaseException | None]:
    """A `stop_for` that ends the run when an evaluation found the disk full (nothing else can go on)."""
    def stop(evaluated: Evaluation) -> BaseException | None:
        if evaluated.cause == Cause.DISK_FULL:
            return disk_full(f"building or measuring candidate {evaluated.proposal.id}")
        return None
    return stop


def time_limit_text(search: SearchSettings) -> str:
    """The --time-limit as the user would write it again ("" without one)."""
    return "" if search.time_limit is None else f"--time-limit {duration_text(search.time_limit)}"


def end_reserve_line(search: SearchSettings, left_s: float, reserve_s: float, benchmarked: bool) -> str:
    """What a tune says when its --time-limit keeps `reserve_s` for what follows the search."""
    return (f"{time_limit_text(search)} covers the whole tune: no candidate starts after {pace.clock(left_s)} "
            f"from now, leaving about {reserve_s:.0f} s for the winner's rebuild"
            + (" and re-measure" if benchmarked else "") + " (estimated from the baseline's); candidates running then finish")


def time_limit_ended(search: SearchSettings, evaluations: int) -> str:
    """What a tune says when its --time-limit ended the search."""
    then = "; the best so far is re-measured and pinned" if evaluations else ""
    return f"the time limit ({time_limit_text(search)}) ended the search after {evaluations} evaluation(s){then}"


# Why a search never began (no SearchLoop ran): the baseline is at every objective's bound (Objective.at_bound).
AT_BOUND = "at_bound"


def at_every_bound(objectives: Sequence[Objective], baseline: Sequence[float] | None) -> bool:
    """Whether the baseline scores the best any candidate could on every objective (Objective.at_bound), so that
    no search begins: every candidate could only tie, and a tie pins nothing. No spills at the defaults under the
    default objective, spill_bytes, is the usual case, where the budget (minutes of builds) would buy nothing."""
    return (baseline is not None and len(baseline) == len(objectives)
            and all(o.at_bound(value) for o, value in zip(objectives, baseline, strict=True)))


def stopped_text(stopped_by: str | None, search: SearchSettings, evaluations: int) -> str:
    """The summary's word on a budget that ended the search early (SearchLoop.stopped_by); "" when none did."""
    if stopped_by == "time_limit":
        return f"by the time limit ({time_limit_text(search)}), after {evaluations} evaluation(s)"
    if stopped_by == "max_evaluations":
        return f"by --max-evaluations {search.max_evaluations}"
    if stopped_by == AT_BOUND:
        return ("before it began: the compiler's defaults already score the best any candidate could on every "
                "objective, which none can beat")
    return ""


def planned_budget(described: Mapping[str, Any], search: SearchSettings,
                   space_total: int | None = None) -> tuple[int, int]:
    """(evaluations, generations) a search plans, as its strategy's own options set them (its describe()'s
    budget), at most --max-evaluations; a listing of the grid (exhaustive) at most the grid's `space_total`."""
    generations, pool_size = planned_batches(described, search.generations, search.pool_size)
    evaluations = planned_evaluations(generations, pool_size, search.max_evaluations)
    if described.get("engine") == EXHAUSTIVE_ENGINE and space_total is not None:
        evaluations = min(evaluations, space_total)
    return evaluations, generations


def space_line(text: str, total: int | None, budget: int, strategy: object,
               described: Mapping[str, Any] | None = None) -> str:
    """The tune's line on its grid's size against the budget: where the whole grid fits the budget, that each
    configuration is evaluated once (the default strategy chose so), or that --strategy exhaustive would."""
    line = f"search space: {text}; budget {budget:,} evaluations"
    chosen = (described or {}).get("instead_of")
    if isinstance(chosen, dict):
        name = chosen.get("strategy", GRID_DEFAULT)
        return line + (f": the space fits the budget, so each of its {chosen.get('configurations', total):,} "
                       f"configurations is evaluated once (exhaustive) instead of sampled by the {name} "
                       f"(--strategy {name} samples it anyway)")
    if total is not None and total <= budget and strategy in ("ga", "portfolio"):
        line += f" (the space is smaller: --strategy exhaustive evaluates each of its {total:,} configurations once)"
    return line
