"""Search quality: ciq_build's genetic engine against random search, NVIDIA compileiq and Optuna's samplers.

    python bench/search_quality/run.py [--seeds 100] [--first-seed 0] [--generations 20] [--pool 32] [--no-compileiq]
                                   [--problems NAME,...] [--baseline REV] [--random-horizon K]

For each problem, every engine gets the same evaluation budget (generations x
pool; the two-objective problem gets ``--mo-generations`` instead) and the
same seeds. Printed per engine, as the median over seeds with its
interquartile range [p25-p75]: the best result at the end of the budget (the
lowest score; for two objectives the hypervolume of the front found, as a
fraction of the true front's, from ciq_build.core.pareto), and the number of
evaluations until the target was first reached (a score <= target; a
hypervolume fraction >= target). Evaluations are counted in the order each
engine asks for them, failed ones included; a run that never reaches the target
counts as horizon + 1 and a median (or quartile) beyond the horizon is shown
as ">horizon". ``hit`` is the share of seeds that reached the target within
the budget. Random search is cheap, so it is run for 20 budgets to locate its
evaluations-to-target (its best is still taken within the equal budget);
``--compileiq-horizon K`` does the same for compileiq with K budgets. The
ratio columns compare ciq_build's median evaluations-to-target with the
others' (lower is better; "<=" marks a ratio against a censored median, i.e.
an upper bound). Goals (issue 10): ours/random <= 0.5 and ours/compileiq <= 0.8.

Problems: the tuning set (problems.py: a change may be chosen on them) and
the held-out sets (held_out.py, held_out_2.py ... held_out_26.py: each written before a change,
a claim about the search is made on them only); ``--set`` picks one. ``--baseline REV`` adds
the genetic search of a git revision (its ``ciq_build/search/evolution.py``)
as row ``ga@REV``: before and after in one run, same seeds.

compileiq is optional (`pip install "ciq-build[acf]"`): it is imported lazily
and driven in-process through ask()/tell() (its MANUAL worker: no Ray, no
subprocesses) the way its own ``Search.start()`` loop drives it: ``ask()``
with no size, so that after failed candidates it answers with refill batches
of the current generation and moves on to breed (asking for a fixed size
instead kept it in generation 0 wherever candidates fail). Its engine never
repeats a configuration and stops when the space is exhausted; the remaining
budget is then simply not spent.

Optuna's samplers (`--strategy tpe`, `nsga2`: the `[optuna]` extra) are run
through the strategy registry when Optuna is installed (`--no-optuna` leaves
them out), with the same budget and seeds; a last table gives ours against
each as ratios, with no goal.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.search_quality.held_out import HELD_OUT  # noqa: E402
from bench.search_quality.held_out_2 import HELD_OUT_2  # noqa: E402
from bench.search_quality.held_out_3 import HELD_OUT_3  # noqa: E402
from bench.search_quality.held_out_4 import HELD_OUT_4  # noqa: E402
from bench.search_quality.held_out_5 import HELD_OUT_5  # noqa: E402
from bench.search_quality.held_out_6 import HELD_OUT_6  # noqa: E402
from bench.search_quality.held_out_7 import HELD_OUT_7  # noqa: E402
from bench.search_quality.held_out_8 import HELD_OUT_8  # noqa: E402
from bench.search_quality.held_out_9 import HELD_OUT_9  # noqa: E402
from bench.search_quality.held_out_10 import HELD_OUT_10  # noqa: E402
from bench.search_quality.held_out_11 import HELD_OUT_11  # noqa: E402
from bench.search_quality.held_out_12 import HELD_OUT_12  # noqa: E402
from bench.search_quality.held_out_13 import HELD_OUT_13  # noqa: E402
from bench.search_quality.held_out_14 import HELD_OUT_14  # noqa: E402
from bench.search_quality.held_out_15 import HELD_OUT_15  # noqa: E402
from bench.search_quality.held_out_16 import HELD_OUT_16  # noqa: E402
from bench.search_quality.held_out_17 import HELD_OUT_17  # noqa: E402
from bench.search_quality.held_out_18 import HELD_OUT_18  # noqa: E402
from bench.search_quality.held_out_19 import HELD_OUT_19  # noqa: E402
from bench.search_quality.held_out_20 import HELD_OUT_20  # noqa: E402
from bench.search_quality.held_out_21 import HELD_OUT_21  # noqa: E402
from bench.search_quality.held_out_22 import HELD_OUT_22  # noqa: E402
from bench.search_quality.held_out_23 import HELD_OUT_23  # noqa: E402
from bench.search_quality.held_out_24 import HELD_OUT_24  # noqa: E402
from bench.search_quality.held_out_25 import HELD_OUT_25  # noqa: E402
from bench.search_quality.held_out_26 import HELD_OUT_26  # noqa: E402
from bench.search_quality.problems import TUNING, Problem  # noqa: E402
from bench.search_quality.stats import fisher_exact, mann_whitney, mean_interval  # noqa: E402
from ciq_build import INVALID_SCORE, Search, SearchConfiguration  # noqa: E402
from ciq_build import space as ss  # noqa: E402
from ciq_build.testing import (  # noqa: E402
    CiqError,
    SearchRequest,
    hypervolume_2d,
    interpret,
    make_source,
    non_dominated,
)

Scores = tuple[float, ...] | None  # one evaluation: its scores, or None when it failed


@dataclass
class Run:
    """One engine's run on one seed: every evaluation's scores in the order it asked for them, and its pick.

    ``pick`` is the configuration the engine reports as its best, with the score it reports for it; None
    where that is simply the lowest score measured (every engine but ciq_build's own). It matters only
    on a noisy problem, where a search is judged by the true score of its pick.
    """

    scores: list[Scores]
    pick: tuple[dict[str, Any], float] | None = None


class Measured:
    """A noisy problem's objective for one run: the true score times a seeded lognormal factor, recorded.

    Every engine's evaluations go through it, in the order the engine asks for them, so the bench
    knows each measured configuration and its true score.
    """

    def __init__(self, problem: Problem, seed: int) -> None:
        self.problem = problem
        self._rng = random.Random(f"search_quality:noise:{problem.name}:{seed}")
        self.calls: list[tuple[dict[str, Any], Scores]] = []

    def __call__(self, params: dict[str, Any]) -> Any:
        value = self.problem.objective(params)
        scores, _status, _ = interpret(value, 1)
        if scores is None:
            self.calls.append((dict(params), None))
            return value
        measured = scores[0] * math.exp(self._rng.gauss(0.0, self.problem.noise))
        self.calls.append((dict(params), (measured,)))
        return measured

    def __getstate__(self) -> dict[str, Any]:
        # What a forked worker sends back is what was measured: a problem's objective may be a closure (held_out_3's
        # noisy decoy), which does not pickle.
        return {"calls": self.calls}


_TRUE_HV: dict[str, float] = {}


def true_hypervolume(problem: Problem) -> float:
    """The hypervolume of the problem's true front (every configuration enumerated once, cached)."""
    assert problem.reference is not None
    if problem.name in _TRUE_HV:
        return _TRUE_HV[problem.name]
    space = ss.SearchSpace(problem.space)
    points = [s for s in (_score(problem, space.to_params(space.genome_at(i))) for i in range(space.cardinality))
              if s is not None]
    front = [points[i] for i in non_dominated(points)]
    _TRUE_HV[problem.name] = hypervolume_2d(front, problem.reference)
    return _TRUE_HV[problem.name]


# -- engines: each returns the list of scores (None = failed) in evaluation order --------


def _score(problem: Problem, params: dict[str, Any]) -> Scores:
    try:
        value = problem.objective(params)
    except Exception:
        return None
    scores, _status, _ = interpret(value, problem.num_objectives)
    return scores


def _budget(problem: Problem, generations: int, pool: int, mo_generations: int) -> tuple[int, int]:
    """(generations, evaluation budget) for this problem."""
    gens = mo_generations if problem.num_objectives > 1 else generations
    return gens, gens * pool


def _our_run(results: Any) -> Run:
    best = results.get_best_result()
    return Run([e.scores if e.ok else None for e in results.get_results()],
               None if best is None else (dict(best.params), best.scores[0]))


OURS: list[str | None] = [None]  # the strategy row ciq_build asks the Search API for (None: its default), --ours


def run_ours(problem: Problem, seed: int, generations: int, pool: int) -> Run:
    config = SearchConfiguration(generations=generations, pool_size=pool, seed=seed,
                                 num_objectives=problem.num_objectives)
    search = Search(problem.objective, problem.space, config, strategy=OURS[0], progress=False)
    return _our_run(search.start())


def baseline_module(rev: str) -> Any:
    """ciq_build's genetic search as it was at git revision ``rev``: its ``ciq_build/search/evolution.py``, loaded
    from ``git show`` beside today's package (sharing the rest of it), for a before/after comparison in one run."""
    import importlib.util
    import subprocess
    import tempfile

    root = Path(__file__).resolve().parents[2]
    text = subprocess.run(["git", "-C", str(root), "show", f"{rev}:ciq_build/search/evolution.py"],
                          check=True, capture_output=True, text=True).stdout
    with tempfile.TemporaryDirectory(prefix="ciq-baseline-") as folder:  # needed only while it loads
        path = Path(folder) / "evolution.py"
        path.write_text(text)
        spec = importlib.util.spec_from_file_location(f"ciq_build_baseline_evolution_{len(text)}", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # dataclasses look their module up there
        spec.loader.exec_module(module)
    if not hasattr(module, "Search"):  # since the portfolio, the genetic search's own name
        setattr(module, "Search", module.GeneticSearch)  # noqa: B010 - a module attribute mypy cannot see
    return module


def load_baseline(rev: str) -> Callable[..., Run]:
    """The genetic search of git revision ``rev`` (:func:`baseline_module`) as an engine (row ``ga@REV``)."""
    module = baseline_module(rev)

    def run(problem: Problem, seed: int, generations: int, pool: int) -> Run:
        config = module.SearchConfiguration(generations=generations, pool_size=pool, seed=seed,
                                            num_objectives=problem.num_objectives)
        return _our_run(module.Search(problem.objective, problem.space, config, progress=False).start())
    return run


class OursAt:
    """Row ``ciq_build`` as it was at git revision ``rev`` (row ``ours@REV``): that revision's ``ciq_build`` package
    and ``cmake/`` (``git archive``) with today's bench beside it, run in a subprocess per problem -- the search as a whole,
    portfolio included, where ``--baseline`` swaps in the GA's module alone -- for before and after in one run."""

    def __init__(self, rev: str, strategy: str | None) -> None:
        import shutil
        import subprocess
        import tempfile

        self.rev, self.strategy = rev, strategy
        root = Path(__file__).resolve().parents[2]
        self.folder = Path(tempfile.mkdtemp(prefix="ciq-ours-at-"))
        # cmake/ too: the package reads its rule book from the checkout's cmake/ beside it, and without one from the
        # installed ciq_build's -- another revision's, whose rules REV's parser may refuse (held-out-22's before run
        # stopped there when main's rule book changed mid-run).
        archive = subprocess.run(["git", "-C", str(root), "archive", rev, "ciq_build", "cmake"], check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(self.folder)], input=archive, check=True)
        shutil.copytree(Path(__file__).resolve().parent, self.folder / "bench" / "search_quality",
                        ignore=shutil.ignore_patterns("__pycache__"))

    def run_seeds(self, problem: Problem, seeds: range, generations: int, pool: int, jobs: int) -> list[Any]:
        import os
        import pickle
        import subprocess

        out = self.folder / "runs.pickle"
        command = [sys.executable, str(self.folder / "bench" / "search_quality" / "run.py"), "--set", "all",
                   "--problems", problem.short, "--seeds", str(len(seeds)), "--first-seed", str(seeds.start),
                   "--generations", str(generations), "--pool", str(pool), "--jobs", str(jobs),
                   "--runs-to", str(out)] + (["--ours", self.strategy] if self.strategy else [])
        env = dict(os.environ, PYTHONPATH=str(self.folder))
        subprocess.run(command, check=True, env=env, cwd=self.folder)
        runs = []
        for seed, (scores, pick, calls) in zip(seeds, pickle.loads(out.read_bytes()), strict=True):
            measured = None
            if calls is not None:
                measured = Measured(problem, seed)
                measured.calls = calls
            runs.append((Run(scores, pick), measured))
        return runs


# The problem sets by --set name. A problem is named by its short name (its first word) across all of them: OursAt's
# subprocess finds it in "all" by that name alone.
_HELD_OUT_SETS = [HELD_OUT, HELD_OUT_2, HELD_OUT_3, HELD_OUT_4, HELD_OUT_5, HELD_OUT_6, HELD_OUT_7, HELD_OUT_8,
                  HELD_OUT_9, HELD_OUT_10, HELD_OUT_11, HELD_OUT_12, HELD_OUT_13, HELD_OUT_14, HELD_OUT_15, HELD_OUT_16,
                  HELD_OUT_17, HELD_OUT_18, HELD_OUT_19, HELD_OUT_20, HELD_OUT_21,
                  HELD_OUT_22, HELD_OUT_23, HELD_OUT_24, HELD_OUT_25, HELD_OUT_26]
SETS: dict[str, list[Problem]] = {"tuning": TUNING, "held-out": HELD_OUT}
SETS |= {f"held-out-{n}": problems for n, problems in enumerate(_HELD_OUT_SETS[1:], start=2)}
SETS["all"] = TUNING + [problem for problems in _HELD_OUT_SETS for problem in problems]


RANDOM_HORIZON = 20  # random search runs this many budgets, only to locate its evaluations-to-target


def run_random(problem: Problem, seed: int, generations: int, pool: int, horizon: int = RANDOM_HORIZON) -> Run:
    """The registered random strategy (`tune --strategy random`), for ``horizon`` budgets."""
    config = SearchConfiguration(generations=generations * horizon, pool_size=pool, seed=seed,
                                 num_objectives=problem.num_objectives)
    names = tuple(f"score_{i + 1}" for i in range(problem.num_objectives))
    source = make_source("random", SearchRequest(problem.space, config, names))
    return _until(source, problem, generations * horizon * pool)


OPTUNA_STRATEGIES = ("tpe", "nsga2")  # the [optuna] extra's strategies, measured against ours when installed


def run_strategy(name: str) -> Callable[..., Run]:
    """A registered strategy (`tune --strategy NAME`) driven by ask/tell, as the search loop drives it."""
    def run(problem: Problem, seed: int, generations: int, pool: int) -> Run:
        config = SearchConfiguration(generations=generations, pool_size=pool, seed=seed,
                                     num_objectives=problem.num_objectives)
        names = tuple(f"score_{i + 1}" for i in range(problem.num_objectives))
        return _until(make_source(name, SearchRequest(problem.space, config, names)), problem, generations * pool)
    return run


def _until(source: Any, problem: Problem, budget: int) -> Run:
    """Ask and tell as the search loop does, until the source ends or `budget` evaluations are made (the loop's
    plan: random search and Optuna's samplers end only there). A search that gives up -- the GA, where every
    candidate of a generation failed (held_out_4's walled4: 82% of its space fails) -- ends its run there, as a
    tune would stop: the rest of its budget is not spent."""
    out: list[Scores] = []
    while len(out) < budget and (batch := source.ask()):
        for proposal in batch[:budget - len(out)]:
            scores = _score(problem, proposal.params)
            out.append(scores)
            try:
                source.tell(proposal, scores, None if scores is not None else "invalid")
            except CiqError:  # the GA's SearchError
                return Run(out)
    return Run(out)


def _compileiq_space(space: dict[str, ss.Param]) -> dict[str, Any]:
    from compileiq.search_spaces import base as cq

    out = {}
    for name, p in space.items():
        if isinstance(p, ss.Range):
            out[name] = cq.range(p.start, p.end, p.step, p.knockout_prob, p.seed_low, p.seed_high)
        elif isinstance(p, ss.Choice):
            out[name] = cq.choice(list(p.options), p.knockout_prob)
        else:
            assert isinstance(p, ss.Literal)
            out[name] = cq.literal(p.constant, p.knockout_prob)
    return out


def compileiq_search(problem: Problem, seed: int, generations: int, pool: int) -> Any:
    """A compileiq search (MANUAL worker, seeded amber engine) for the problem."""
    from compileiq.backends import EngineConfig
    from compileiq.ciq import Search as CqSearch
    from compileiq.types import SearchConfiguration as CqConfig
    from compileiq.types import WorkerTypes

    return CqSearch(
        objective_function=problem.objective,
        search_space=_compileiq_space(problem.space),
        search_config=CqConfig(generations=generations, pool_size=pool, num_objectives=problem.num_objectives),
        worker_type=WorkerTypes.MANUAL,
        disable_progress_bar=True,
        exit_on_failure=False,
        engine=EngineConfig(name="amber", options={"seed": seed}),
    )


def _ended(error: Exception) -> bool:
    text = str(error)
    return "unique candidates" in text or "completed" in text or "exhaust" in text.lower()


def drive_compileiq(search: Any, problem: Problem, generations: int, budget: int,
                    make_score: Callable[..., Any] | None = None) -> list[Scores]:
    """Run a compileiq search the way its own ``Search.start()`` does, up to ``budget`` evaluations.

    Each step evaluates the pending candidates if there are any, else the
    batch of a plain ``ask()`` -- no size: after failures compileiq answers
    with a refill batch of the same generation, and breeds once the
    generation is complete -- and tells every score back. It stops at the
    configured generation count (as ``start()`` does), at the budget (the last
    batch is cut to fit), or when the engine has no untried candidate left.
    """
    if make_score is None:
        from compileiq.utils.validation import Score

        make_score = Score
    n = problem.num_objectives
    failed: Any = INVALID_SCORE if n == 1 else [INVALID_SCORE] * n
    out: list[Scores] = []
    while len(out) < budget and search.current_generation < generations:
        pending = list(search.pending_candidates)
        try:
            candidates = pending or list(search.ask())
        except Exception as error:  # exhausted (it never repeats) or the search completed
            if _ended(error):
                break
            raise
        if not candidates:
            break
        candidates = candidates[: budget - len(out)]
        told = []
        for c in candidates:
            value = _score(problem, dict(c.params))
            out.append(value)
            score = failed if value is None else (value[0] if n == 1 else list(value))
            told.append(make_score(score=score, param_id=c.param_id, num_objectives=n))
        if len(out) >= budget:
            break  # the budget is spent: the cut batch is not told
        search.tell(told)
    return out


def run_compileiq(problem: Problem, seed: int, generations: int, pool: int) -> Run:
    search = compileiq_search(problem, seed, generations, pool)
    return Run(drive_compileiq(search, problem, generations, generations * pool))


def compileiq_available() -> str | None:
    try:
        import compileiq.ciq  # noqa: F401
    except Exception as error:  # ImportError, or a broken native runtime
        return f"{type(error).__name__}: {error}"
    return None


# -- summary ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Summary:
    bests: list[float]  # per seed: best score (one objective) or hypervolume fraction (two), within the budget
    hits: list[int]  # per seed: evaluations to the target (horizon + 1 if never)
    budget: int
    horizon: int
    # A noisy problem, per seed: whether the pick's true score is on target (the hit share counts these),
    # and the gain over the defaults (every parameter knocked out) the engine reports and the pick's true one.
    picks_on_target: list[bool] | None = None
    reported_gains: list[float] = field(default_factory=list)
    true_gains: list[float] = field(default_factory=list)

    def best(self) -> tuple[float, float, float]:
        return _quartiles(self.bests)

    def evals(self) -> tuple[float, float, float]:
        return _quartiles([float(h) for h in self.hits])

    @property
    def censored(self) -> bool:
        return self.evals()[1] > self.horizon

    @property
    def hit_share(self) -> float:
        return self.hit_count / len(self.hits)

    @property
    def hit_count(self) -> int:
        if self.picks_on_target is not None:
            return sum(self.picks_on_target)
        return sum(h <= self.budget for h in self.hits)


def _quartiles(values: list[float]) -> tuple[float, float, float]:
    """(p25, median, p75); with one value, that value three times."""
    if len(values) == 1:
        return values[0], values[0], values[0]
    q1, q2, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q1, q2, q3


def _run_outcome(problem: Problem, scores: list[Scores], budget: int, horizon: int) -> tuple[float, int]:
    """(best within the budget, evaluations to the target within the horizon or horizon + 1)."""
    if problem.num_objectives == 1:
        ok = [s[0] for s in scores[:budget] if s is not None]
        hit = next((i + 1 for i, s in enumerate(scores[:horizon]) if s is not None and s[0] <= problem.target),
                   horizon + 1)
        return (min(ok) if ok else math.inf), hit
    assert problem.reference is not None
    true = true_hypervolume(problem)
    front: list[tuple[float, ...]] = []
    fraction, best, hit = 0.0, 0.0, horizon + 1
    for i, s in enumerate(scores[:horizon]):
        if s is not None and not any(all(a <= b for a, b in zip(f, s, strict=True)) for f in front):
            front = [f for f in front if not all(a <= b for a, b in zip(s, f, strict=True))] + [s]
            fraction = hypervolume_2d(front, problem.reference) / true
        if i + 1 == budget:
            best = fraction
        if hit > horizon and fraction >= problem.target:
            hit = i + 1
        if hit <= horizon and i + 1 >= budget:
            break
    if len(scores) < budget:
        best = fraction
    return best, hit


def summarise(problem: Problem, runs: list[list[Scores]], budget: int, horizon: int | None = None) -> Summary:
    horizon = horizon or budget
    outcomes = [_run_outcome(problem, scores, budget, horizon) for scores in runs]
    return Summary([b for b, _ in outcomes], [h for _, h in outcomes], budget, horizon)


def _true_score(problem: Problem, params: dict[str, Any]) -> float:
    scores = _score(problem, params)
    return math.inf if scores is None else scores[0]


def summarise_noisy(problem: Problem, runs: list[tuple[Run, Measured]], budget: int,
                    horizon: int | None = None) -> Summary:
    """A noisy problem's summary: each run judged by the true score of its pick.

    The best is the pick's true score; evaluations-to-target count until a configuration whose true score
    is on target was first measured (the search had it); the hit share is the share of picks on target.
    """
    horizon = horizon or budget
    default = _true_score(problem, {})
    bests, hits, on_target, reported, true = [], [], [], [], []
    for run, measured in runs:
        calls = measured.calls
        hits.append(next((i + 1 for i, (params, s) in enumerate(calls[:horizon])
                          if s is not None and _true_score(problem, params) <= problem.target), horizon + 1))
        pick = run.pick
        if pick is None:
            ok = [(s[0], params) for params, s in calls[:budget] if s is not None]
            pick = (min(ok, key=lambda item: item[0])[1], min(ok, key=lambda item: item[0])[0]) if ok else None
        value = math.inf if pick is None else _true_score(problem, pick[0])
        bests.append(value)
        on_target.append(value <= problem.target)
        reported.append(0.0 if pick is None else 1 - pick[1] / default)
        true.append(1 - value / default if math.isfinite(value) else 0.0)
    return Summary(bests, hits, budget, horizon, on_target, reported, true)


def _fmt_evals(value: float, horizon: int) -> str:
    return f">{horizon}" if value > horizon else f"{value:g}"


def _fmt_best(problem: Problem, value: float) -> str:
    return f"{value:.3f}" if problem.num_objectives > 1 else f"{value:.4g}"


GOALS = {"random": 0.5, "compileiq": 0.8}


def ratio_cell(ours: Summary, theirs: Summary) -> tuple[str, float, bool]:
    """(text, ratio of median evaluations-to-target, goal-comparable?) ours against theirs."""
    ours_hit = min(ours.evals()[1], ours.budget + 1)
    their_hit = min(theirs.evals()[1], theirs.horizon + 1)
    ratio = ours_hit / their_hit
    prefix = "<=" if theirs.censored and not ours.censored else (">=" if ours.censored and not theirs.censored else "")
    if ours.censored and theirs.censored:
        return "n/a", math.nan, False
    return f"{prefix}{ratio:.2f}", ratio, not ours.censored


def _run_one(engine: Callable[..., Run], problem: Problem, seed: int, generations: int, pool: int,
             times: int) -> tuple[Run, Measured | None]:
    """One seed's run, through a Measured objective on a noisy problem."""
    measured = Measured(problem, seed) if problem.noise else None
    if measured is not None:
        problem = replace(problem, objective=measured)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if engine is run_random:
            run = run_random(problem, seed, generations, pool, times)
        else:
            run = engine(problem, seed, generations * times, pool)
    return run, measured


_WORK: list[Any] = []  # what forked workers run: (engine, problem, generations, pool, times), set before forking


def _run_seed(seed: int) -> tuple[Run, Measured | None]:
    engine, problem, generations, pool, times = _WORK[0]
    return _run_one(engine, problem, seed, generations, pool, times)


def _run_seeds(engine: Callable[..., Run], problem: Problem, seeds: range, generations: int, pool: int,
               times: int, jobs: int) -> list[Any]:
    """Every seed's run, in seed order; with jobs > 1 in forked worker processes (the same runs, sooner)."""
    if isinstance(engine, OursAt):
        return engine.run_seeds(problem, seeds, generations, pool, jobs)
    if jobs <= 1:
        return [_run_one(engine, problem, seed, generations, pool, times) for seed in seeds]
    import multiprocessing

    _WORK[:] = [(engine, problem, generations, pool, times)]
    with multiprocessing.get_context("fork").Pool(jobs) as workers:
        return workers.map(_run_seed, seeds, chunksize=1)


def _print_gains(problem: Problem, stats: dict[str, Summary]) -> None:
    print(f"{'':42} {'':6} | gain over the defaults, median [p25-p75]: reported by the engine, true of its pick")
    for name, s in stats.items():
        reported, true = (_quartiles([100 * g for g in gains]) for gains in (s.reported_gains, s.true_gains))
        over = _quartiles([100 * (r - g) for r, g in zip(s.reported_gains, s.true_gains, strict=True)])
        print(f"{'':42} {'':6} | {name:9} reported {reported[1]:5.2f}% [{reported[0]:.2f}-{reported[2]:.2f}]  "
              f"true {true[1]:5.2f}% [{true[0]:.2f}-{true[2]:.2f}]  overclaim {over[1]:5.2f}% "
              f"[{over[0]:.2f}-{over[2]:.2f}]  true regret {100 * (s.best()[1] / problem.target * 1.005 - 1):.2f}%")
        if len(s.true_gains) > 1:  # the reported gain within the true gain's CI: the overclaim's CI holds zero
            low, high = mean_interval([100 * (r - g) for r, g in zip(s.reported_gains, s.true_gains, strict=True)])
            verdict = "yes" if low <= 0 <= high else "NO"
            print(f"{'':42} {'':6} | {'':9} mean overclaim, 95% CI [{low:.2f}, {high:.2f}]%: the reported gain "
                  f"within the true gain's CI: {verdict}")


def _print_tests(rows: list[tuple[Problem, int, dict[str, Summary]]]) -> None:
    """ciq_build against every other engine: hit shares (Fisher's exact test), bests (Mann-Whitney), two-sided."""
    print("\nciq_build against each engine, same seeds: hits (ours-theirs, Fisher's exact p) and best "
          "(Mann-Whitney p; + where ours is better, - where worse)")
    for problem, _budget, stats in rows:
        ours = stats["ciq_build"]
        cells = []
        for name, theirs in stats.items():
            if name == "ciq_build":
                continue
            n = len(ours.hits)
            p_hits = fisher_exact(ours.hit_count, n, theirs.hit_count, len(theirs.hits))
            sign = 1 if problem.num_objectives > 1 else -1  # hypervolume: higher is better
            wins = sum((a < b) - (a > b) for a in ours.bests for b in theirs.bests)  # pairs ours scores lower
            ours_better = -sign * wins > 0
            same = ours.bests == theirs.bests
            p_best = 1.0 if same else mann_whitney(ours.bests, theirs.bests)
            mark = "=" if same or p_best >= 0.05 else ("+" if ours_better else "-")
            cells.append(f"{name} {ours.hit_count - theirs.hit_count:+d} p={p_hits:.3g} best{mark} p={p_best:.3g}")
        print(f"{problem.name:42} | " + "; ".join(cells))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--first-seed", type=int, default=0,
                        help="seeds FIRST..FIRST+SEEDS-1: others than those a change was chosen on, to check it")
    parser.add_argument("--generations", type=int, default=20)
    parser.add_argument("--mo-generations", type=int, default=None,
                        help="generations for the two-objective problem (default: --generations)")
    parser.add_argument("--pool", type=int, default=32)
    parser.add_argument("--no-compileiq", action="store_true")
    parser.add_argument("--compileiq-horizon", type=int, default=1,
                        help="run compileiq for this many budgets (its best still within one) to locate an "
                             "evaluations-to-target beyond the budget, as random search's 20 (default 1)")
    parser.add_argument("--no-optuna", action="store_true",
                        help="leave out Optuna's strategies (tpe, nsga2), measured when Optuna is installed")
    parser.add_argument("--set", choices=tuple(SETS),
                        default="all",
                        help=f"the tuning set (problems.py), the first held-out set (held-out: held_out.py), the "
                             f"Nth (held-out-N: held_out_N.py, N from 2 to {len(_HELD_OUT_SETS)}) or all "
                             f"{len(SETS) - 1} (default)")
    parser.add_argument("--problems", default="",
                        help="comma-separated first words of the problems to run (default: all of the set)")
    parser.add_argument("--strategies", default="",
                        help="registered strategies (tune --strategy) to run as rows of their own beside the "
                             "Search API's default (row ciq_build), e.g. ga")
    parser.add_argument("--ours", default=None, metavar="STRATEGY",
                        help="the strategy of row ciq_build, through the Search API (default: the API's default)")
    parser.add_argument("--jobs", type=int, default=1,
                        help="seeds run at once in worker processes (default 1: the machine may be shared)")
    parser.add_argument("--random-horizon", type=int, default=RANDOM_HORIZON,
                        help=f"budgets random search runs to locate its evaluations-to-target (default "
                             f"{RANDOM_HORIZON}; 1 when only its best and hit share within the budget matter)")
    parser.add_argument("--baseline", metavar="REV", default=None,
                        help="also run the genetic search as it was at git revision REV (row ga@REV): "
                             "before and after in one run")
    parser.add_argument("--ours-at", metavar="REV", default=None,
                        help="also run row ciq_build as it was at git revision REV (row ours@REV: that revision's "
                             "ciq_build package, the same --ours strategy): before and after in one run")
    parser.add_argument("--runs-to", metavar="FILE", default=None, help=argparse.SUPPRESS)  # OursAt's subprocess
    args = parser.parse_args(argv)
    OURS[0] = args.ours
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    mo_generations = args.mo_generations or args.generations
    wanted = {w.strip().lower() for w in args.problems.split(",") if w.strip()}
    chosen = SETS[args.set]
    problems = [p for p in chosen if not wanted or p.short.lower() in wanted]
    if args.runs_to:  # row ciq_build's runs of the one problem asked, for OursAt
        import pickle

        (problem,) = problems
        runs = _run_seeds(run_ours, problem, seeds, args.generations, args.pool, 1, args.jobs)
        plain = [(run.scores, run.pick, None if measured is None else measured.calls) for run, measured in runs]
        Path(args.runs_to).write_bytes(pickle.dumps(plain))
        return 0

    engines: dict[str, Callable[..., Run]] = {"ciq_build": run_ours}
    if args.ours_at:
        engines[f"ours@{args.ours_at}"[:9]] = OursAt(args.ours_at, args.ours)  # type: ignore[assignment]
    if args.baseline:
        engines[f"ga@{args.baseline}"[:9]] = load_baseline(args.baseline)
    for name in filter(None, (s.strip() for s in args.strategies.split(","))):
        engines[name[:9]] = run_strategy(name)
    engines["random"] = run_random
    missing = None if not args.no_compileiq else "skipped (--no-compileiq)"
    if missing is None:
        missing = compileiq_available()
    if missing is None:
        engines["compileiq"] = run_compileiq
    else:
        print(f"NOTE: compileiq is not available ({missing}); its columns are empty.", file=sys.stderr)

    if not args.no_optuna:
        try:
            import optuna  # noqa: F401
        except ImportError:
            print("NOTE: Optuna is not installed (pip install \"ciq-build[optuna]\"); tpe and nsga2 are left out.",
                  file=sys.stderr)
        else:
            engines.update({name: run_strategy(name) for name in OPTUNA_STRATEGIES})

    print(f"budget: {args.generations} generations x {args.pool} = {args.generations * args.pool} evaluations "
          f"(two objectives: {mo_generations} x {args.pool}), {args.seeds} seeds each; "
          "median [p25-p75] over seeds; best = lowest score, or hypervolume / true front's for two objectives; "
          "evals = evaluations to reach the target; hit = seeds reaching it within the budget; failed = the share of "
          "the budget's evaluations that failed, over all seeds")
    header = (f"{'problem':42} {'target':>6} | {'engine':9} {'best [p25-p75]':>26} "
              f"{'evals [p25-p75]':>26} {'hit':>5} {'failed':>6} {'time':>6}")
    rows = []
    for problem in problems:
        gens, budget = _budget(problem, args.generations, args.pool, mo_generations)
        stats: dict[str, Summary] = {}
        print("\n" + header)
        for name, engine in engines.items():
            started = time.perf_counter()
            # compileiq's first evaluations do not depend on its configured generation count
            # (measured: the first 640 of 20 and of 80 generations are the same), so a longer
            # run only adds evaluations after the budget, like random search's horizon.
            times = {"random": args.random_horizon, "compileiq": args.compileiq_horizon}.get(name, 1)
            runs = _run_seeds(engine, problem, seeds, gens, args.pool, times, args.jobs)
            horizon = budget * times
            if problem.noise:
                stats[name] = s = summarise_noisy(problem, runs, budget, horizon)
            else:
                stats[name] = s = summarise(problem, [run.scores for run, _ in runs], budget, horizon)
            elapsed = time.perf_counter() - started
            b1, b2, b3 = (_fmt_best(problem, v) for v in s.best())
            e1, e2, e3 = (_fmt_evals(v, horizon) for v in s.evals())
            within = [run.scores[:budget] for run, _ in runs]
            failed = sum(scores.count(None) for scores in within) / max(1, sum(map(len, within)))
            print(f"{problem.name:42} {problem.target:6g} | {name:9} {b2 + ' [' + b1 + '-' + b3 + ']':>26} "
                  f"{e2 + ' [' + e1 + '-' + e3 + ']':>26} {s.hit_share:5.0%} {failed:6.1%} {elapsed:5.1f}s", flush=True)
        if problem.noise:
            _print_gains(problem, stats)
        rows.append((problem, budget, stats))

    print("\nratios of median evaluations-to-target (goals: ours/random <= 0.5, ours/compileiq <= 0.8)")
    print(f"{'problem':42} | {'ours':>6} {'random':>7} {'cq':>6} | {'ours/random':>12} {'ours/cq':>9} | verdict")
    all_met = True
    for problem, _budget_spent, stats in rows:
        ours = stats["ciq_build"]
        cells, verdict = [], []
        for other, limit in GOALS.items():
            if other not in stats:
                cells.append("n/a")
                verdict.append(f"{other} n/a")
                continue
            text, ratio, comparable = ratio_cell(ours, stats[other])
            met = comparable and ratio <= limit
            all_met &= met
            cells.append(text)
            verdict.append(f"{'ok' if met else 'MISSED'} vs {other}")

        def fmt(s: Summary | None) -> str:
            return "n/a" if s is None else _fmt_evals(s.evals()[1], s.horizon)

        print(f"{problem.name:42} | {fmt(ours):>6} {fmt(stats.get('random')):>7} {fmt(stats.get('compileiq')):>6} | "
              f"{cells[0]:>12} {cells[1]:>9} | {', '.join(verdict)}")
    optuna_names = [name for name in OPTUNA_STRATEGIES if name in engines]
    if optuna_names:  # no goal: how the GA compares with a well-kept library's samplers, in the same run
        print("\nours against Optuna's samplers: ratios of median evaluations-to-target (< 1: ours reaches the "
              "target sooner), and of median best (ours / theirs; lower score is better, for two objectives "
              "higher hypervolume is)")
        print(f"{'problem':42} | " + " ".join(f"{'ours/' + n + ' evals':>17} {'ours/' + n + ' best':>16}"
                                             for n in optuna_names))
        for problem, _budget_spent, stats in rows:
            ours = stats["ciq_build"]
            cells = []
            for name in optuna_names:
                text, _ratio, _comparable = ratio_cell(ours, stats[name])
                theirs_best = stats[name].best()[1]
                best = "n/a" if theirs_best == 0 else f"{ours.best()[1] / theirs_best:.2f}"
                cells.append(f"{text:>17} {best:>16}")
            print(f"{problem.name:42} | " + " ".join(cells))
    _print_tests(rows)
    print("\ngoal met on every problem" if all_met else "\ngoal NOT met on every problem (see verdicts)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
