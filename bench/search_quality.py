"""Search quality: ciq_build's genetic engine against random search and NVIDIA compileiq.

    python bench/search_quality.py [--seeds 10] [--generations 20] [--pool 32] [--quick]

For each problem, every engine gets the same evaluation budget (generations x
pool) and the same seeds. Printed per engine: the median best score at the end
of the budget, and the median number of evaluations until a score at least as
good as the problem's target was first seen (evaluations are counted in the
order each engine asks for them; a run that never reaches the target counts
as budget + 1 and the median is then shown as ">budget"). Random search is
cheap, so it is run for 20 budgets to locate its evaluations-to-target (its
best score is still taken within the equal budget). The ratio columns
compare ciq_build with the others on evaluations-to-target (lower is better;
"<=" marks a ratio against a censored median, i.e. an upper bound).

compileiq is optional (`pip install "ciq-build[acf]"`): it is imported lazily
and driven in-process through ask()/tell() (its MANUAL worker: no Ray, no
subprocesses). Its engine never repeats a configuration and stops when the
space is exhausted; the remaining budget is then simply not spent.
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import ciq_build.core.space as ss  # noqa: E402
from ciq_build.search.ga import INVALID_SCORE, Search, SearchConfiguration, interpret  # noqa: E402


@dataclass(frozen=True)
class Problem:
    name: str
    space: dict[str, ss.Param]
    objective: Callable[[dict[str, Any]], Any]
    target: float  # minimisation: reaching a score <= target counts


# -- problems ----------------------------------------------------------------------------


def _seeds_example(p: dict[str, Any]) -> float:
    return p["x"] ** 2 + p["y"]


SEEDS_EXAMPLE = Problem(
    "seeds' example (x**2+y, 234 configs)",
    {"x": ss.range(1.0, 20.0, 0.5), "y": ss.choice([1, 2, 3]), "z": ss.literal("this is a constant", knockout_prob=0.5)},
    _seeds_example,
    2.0,
)

_OPT = [5, 27, 13, 20, 8, 3, 30, 17]
_C1_WEIGHT = {1: 3.0, 2: 2.0, 4: 1.5, 8: 1.0, 16: 1.25}


def _mixed12(p: dict[str, Any]) -> float:
    # c0 moves the optimum of r0..r3 (a deceptive local optimum); c1 scales every
    # range term; pairs (r0,r1), (r2,r3)... interact through their difference.
    shift = 0 if p["c0"] == "b" else 4
    targets = [t + (shift if i < 4 else 0) for i, t in enumerate(_OPT)]
    r = [p[f"r{i}"] for i in range(8)]
    cost = sum((r[i] - targets[i]) ** 2 for i in range(8))
    cost += sum(2 * ((r[2 * k] - r[2 * k + 1]) - (_OPT[2 * k] - _OPT[2 * k + 1])) ** 2 for k in range(4))
    cost *= _C1_WEIGHT[p["c1"]]
    cost += 15 * (p["c2"] != "fast") + 10 * abs(p["c3"] - 2) + (0 if p["c0"] == "b" else 5)
    return float(cost)


MIXED12 = Problem(
    "12 params mixed, narrow optimum",
    {
        **{f"r{i}": ss.range(0, 31) for i in range(8)},
        "c0": ss.choice(["a", "b", "c", "d"]),
        "c1": ss.choice([1, 2, 4, 8, 16]),
        "c2": ss.choice(["slow", "fast", "safe"]),
        "c3": ss.choice([1, 2, 3, 4, 5]),
    },
    _mixed12,
    20.0,  # optimum 0; random search's median best at 640 evaluations is ~800
)


def _half_invalid(p: dict[str, Any]) -> Any:
    a, b = p["a"], p["b"]
    if a + b > 40:  # about half of the (a, b) square: the compiler "fails"
        return INVALID_SCORE
    if p.get("unroll") == 8 and a % 3 == 0:
        raise RuntimeError("candidate crashed")  # a further slice that raises
    cost = (a - 24) ** 2 + (b - 15) ** 2 + 3 * abs(p["c"] - 0.35) * 10
    cost += 0 if p.get("flag") is None else 4
    cost += {2: 3, 4: 0, 8: 1}.get(p.get("unroll", 0), 6)
    return float(cost)


HALF_INVALID = Problem(
    "half invalid (optimum at the edge)",
    {
        "a": ss.range(0, 40),
        "b": ss.range(0, 40),
        "c": ss.range(0.0, 1.0, 0.05),
        "unroll": ss.choice([2, 4, 8], knockout_prob=0.25),
        "flag": ss.literal("-fast", knockout_prob=0.5),
    },
    _half_invalid,
    2.0,
)

PROBLEMS = [SEEDS_EXAMPLE, MIXED12, HALF_INVALID]


# -- engines: each returns the list of scores (None = invalid) in evaluation order ---------


def _score(problem: Problem, params: dict[str, Any]) -> float | None:
    try:
        value = problem.objective(params)
    except Exception:
        return None
    scores, status, _ = interpret(value, 1)
    return scores[0] if scores else None


def run_ours(problem: Problem, seed: int, generations: int, pool: int) -> list[float | None]:
    config = SearchConfiguration(generations=generations, pool_size=pool, seed=seed)
    search = Search(problem.objective, problem.space, config, progress=False)
    results = search.start()
    return [e.scores[0] if e.ok and e.scores is not None else None for e in results.get_results()]


RANDOM_HORIZON = 20  # random search runs this many budgets, only to locate its evaluations-to-target


def run_random(problem: Problem, seed: int, generations: int, pool: int) -> list[float | None]:
    space = ss.SearchSpace(problem.space)
    rng = random.Random(seed)
    seen: set = set()
    out: list[float | None] = []
    limit = generations * pool * RANDOM_HORIZON
    for _ in range(limit * 50):
        if len(out) >= limit or len(seen) >= space.cardinality:
            break
        genome = space.sample(rng, 0.0)
        if genome in seen:  # without replacement, like the engines
            continue
        seen.add(genome)
        out.append(_score(problem, space.to_params(genome)))
    return out


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


def run_compileiq(problem: Problem, seed: int, generations: int, pool: int) -> list[float | None]:
    from compileiq.backends import EngineConfig
    from compileiq.ciq import Search as CqSearch
    from compileiq.types import SearchConfiguration as CqConfig
    from compileiq.types import WorkerTypes
    from compileiq.utils.validation import Score

    search = CqSearch(
        objective_function=problem.objective,
        search_space=_compileiq_space(problem.space),
        search_config=CqConfig(generations=generations, pool_size=pool),
        worker_type=WorkerTypes.MANUAL,
        disable_progress_bar=True,
        exit_on_failure=False,
        engine=EngineConfig(name="amber", options={"seed": seed}),
    )
    out: list[float | None] = []
    budget = generations * pool
    while len(out) < budget:
        try:
            candidates = search.ask(num_samples=min(pool, budget - len(out)))
        except Exception as error:  # exhausted (it never repeats) or the search completed
            if "unique candidates" in str(error) or "completed" in str(error) or "exhaust" in str(error).lower():
                break
            raise
        if not candidates:
            break
        told = []
        for c in candidates:
            value = _score(problem, dict(c.params))
            out.append(value)
            told.append(Score(score=INVALID_SCORE if value is None else value, param_id=c.param_id, num_objectives=1))
        search.tell(told)
    return out


def compileiq_available() -> str | None:
    try:
        import compileiq.ciq  # noqa: F401
    except Exception as error:  # ImportError, or a broken native runtime
        return f"{type(error).__name__}: {error}"
    return None


# -- summary ----------------------------------------------------------------------------


def summarise(
    runs: list[list[float | None]], target: float, budget: int, horizon: int | None = None
) -> tuple[float, float, bool, int]:
    """(median best within budget, median evaluations-to-target, censored?, horizon searched)."""
    horizon = horizon or budget
    bests, hits = [], []
    for scores in runs:
        ok = [s for s in scores[:budget] if s is not None]
        bests.append(min(ok) if ok else math.inf)
        hit = next((i + 1 for i, s in enumerate(scores[:horizon]) if s is not None and s <= target), horizon + 1)
        hits.append(hit)
    median_hit = statistics.median(hits)
    return statistics.median(bests), median_hit, median_hit > horizon, horizon


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--generations", type=int, default=20)
    parser.add_argument("--pool", type=int, default=32)
    parser.add_argument("--no-compileiq", action="store_true")
    args = parser.parse_args(argv)
    budget = args.generations * args.pool

    engines: dict[str, Callable[..., list[float | None]]] = {"ciq_build": run_ours, "random": run_random}
    missing = None if not args.no_compileiq else "skipped (--no-compileiq)"
    if missing is None:
        missing = compileiq_available()
    if missing is None:
        engines["compileiq"] = run_compileiq
    else:
        print(f"NOTE: compileiq is not available ({missing}); its columns are empty.", file=sys.stderr)

    print(f"budget {budget} evaluations ({args.generations} generations x {args.pool}), {args.seeds} seeds each; "
          "medians over seeds; 'evals' = evaluations to reach the target")
    header = f"{'problem':38} {'target':>6} | {'engine':9} {'best':>8} {'evals':>6} {'time':>6}"
    rows = []
    for problem in PROBLEMS:
        stats: dict[str, tuple[float, float, bool, int]] = {}
        print("\n" + header)
        for name, engine in engines.items():
            started = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                runs = [engine(problem, seed, args.generations, args.pool) for seed in range(args.seeds)]
            elapsed = time.perf_counter() - started
            horizon = budget * RANDOM_HORIZON if name == "random" else budget
            stats[name] = summarise(runs, problem.target, budget, horizon)
            best, hit, censored, _ = stats[name]
            shown = f">{horizon}" if censored else f"{hit:g}"
            print(f"{problem.name:38} {problem.target:6g} | {name:9} {best:8.4g} {shown:>6} {elapsed:5.1f}s", flush=True)
        rows.append((problem, stats))

    print("\nratios of evaluations-to-target (goal: ours/random <= 0.5 and ours/compileiq <= 1)")
    print(f"{'problem':38} | {'ours':>6} {'random':>7} {'cq':>6} | {'ours/random':>12} {'ours/cq':>9} | verdict")
    all_met = True
    for problem, stats in rows:
        ours = stats["ciq_build"]
        cells, verdict = [], []
        for other, limit in (("random", 0.5), ("compileiq", 1.0)):
            if other not in stats:
                cells.append("n/a")
                verdict.append(f"{other} n/a")
                continue
            theirs = stats[other]
            ours_hit = min(ours[1], budget + 1)
            ratio = ours_hit / min(theirs[1], theirs[3] + 1)
            prefix = "<=" if theirs[2] and not ours[2] else ""
            met = ratio <= limit and not ours[2]
            all_met &= met
            cells.append(f"{prefix}{ratio:.2f}")
            verdict.append(f"{'ok' if met else 'MISSED'} vs {other}")
        fmt = lambda s: (f">{s[3]}" if s[2] else f"{s[1]:g}") if s else "n/a"  # noqa: E731
        print(f"{problem.name:38} | {fmt(ours):>6} {fmt(stats.get('random')):>7} {fmt(stats.get('compileiq')):>6} | "
              f"{cells[0]:>12} {cells[1]:>9} | {', '.join(verdict)}")
    print("\ngoal met on every problem" if all_met else "\ngoal NOT met on every problem (see verdicts)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
