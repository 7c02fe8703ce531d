"""bench/search_quality/: compileiq is driven fairly (as its own loop drives it), and the bench runs."""

from __future__ import annotations

import math
import os
import statistics
import sys
from dataclasses import dataclass
from typing import Any

import pytest

import ciq_build.core.space as ss
from bench.search_quality import held_out as ho
from bench.search_quality import problems as pr  # the repository root is on sys.path (pyproject.toml)
from bench.search_quality import run as sq
from bench.search_quality.stats import fisher_exact, mann_whitney
from ciq_build.search.evolution import INVALID_SCORE, GeneticSearch, SearchConfiguration


@dataclass
class _Candidate:
    param_id: int
    params: dict[str, Any]


class FakeEngine:
    """compileiq's manual ask/tell contract as its own Search.start() loop relies on it.

    A plain ask() gives the pool at the start of a generation and, after failures,
    a refill batch of as many candidates as failed; the generation advances once
    ``pool`` candidates have succeeded. ask(num_samples=k) always gives k (the
    unfair driver: it never lets a generation complete while candidates fail).
    """

    def __init__(self, pool: int) -> None:
        self.pool, self.current_generation = pool, 0
        self.asks: list[int | None] = []
        self.told: list[list[Any]] = []
        self._pending: list[_Candidate] = []
        self._ok_in_generation, self._next = 0, 0
        self._refill = 0

    @property
    def pending_candidates(self) -> tuple[_Candidate, ...]:
        return tuple(self._pending)

    def ask(self, num_samples: int | None = None) -> list[_Candidate]:
        assert not self._pending, "asked again before telling"
        self.asks.append(num_samples)
        count = num_samples if num_samples is not None else (self._refill or self.pool)
        self._pending = [_Candidate(self._next + i, {"x": self._next + i}) for i in range(count)]
        self._next += count
        return list(self._pending)

    def tell(self, scores: list[Any]) -> None:
        assert {s.param_id for s in scores} == {c.param_id for c in self._pending}
        self.told.append(scores)
        self._pending = []
        ok = sum(s.score != INVALID_SCORE for s in scores)
        self._ok_in_generation += ok
        self._refill = self.pool - self._ok_in_generation
        if self._refill <= 0:
            self.current_generation += 1
            self._ok_in_generation, self._refill = 0, 0


@dataclass
class _Score:
    score: Any
    param_id: int
    num_objectives: int


def _every_third_fails(p: dict[str, Any]) -> Any:
    return INVALID_SCORE if p["x"] % 3 == 0 else float(p["x"])


FAKE_PROBLEM = pr.Problem("fake", {"x": ss.range(0, 10_000)}, _every_third_fails, 0.0)


def test_the_bench_asks_compileiq_with_no_size_so_refills_move_it_through_generations() -> None:
    engine = FakeEngine(pool=8)
    out = sq.drive_compileiq(engine, FAKE_PROBLEM, generations=5, budget=200, make_score=_Score)
    assert engine.asks and all(n is None for n in engine.asks)  # never a forced size
    assert any(len(batch) < 8 for batch in engine.told)  # refill batches were evaluated
    assert engine.current_generation == 5  # it bred, generation after generation
    assert len(out) == sum(len(batch) for batch in engine.told) < 200  # stopped at its generation count
    assert [s.score for s in engine.told[0]][:4] == [INVALID_SCORE, 1.0, 2.0, INVALID_SCORE]
    assert out[:4] == [None, (1.0,), (2.0,), None]


def test_the_bench_driver_stops_at_the_budget_and_evaluates_pending_candidates_first() -> None:
    engine = FakeEngine(pool=8)
    engine.ask()  # a batch already out: the driver evaluates it instead of asking again
    out = sq.drive_compileiq(engine, FAKE_PROBLEM, generations=100, budget=20, make_score=_Score)
    assert len(out) == 20
    assert engine.asks[1:] and all(n is None for n in engine.asks)
    assert sum(len(batch) for batch in engine.told) <= 20


compileiq_missing = sq.compileiq_available()


@pytest.mark.skipif(compileiq_missing is not None, reason=f"needs compileiq: {compileiq_missing}")
def test_real_compileiq_leaves_generation_0_on_the_half_invalid_problem() -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search = sq.compileiq_search(pr.HALF_INVALID, 0, 4, 8)
        out = sq.drive_compileiq(search, pr.HALF_INVALID, 4, 32)
    assert len(out) == 32 and any(s is None for s in out)
    assert search.current_generation >= 2  # with a forced ask(num_samples=8) it stayed at 0


def test_hypervolume_outcome_counts_the_evaluation_that_reaches_the_target() -> None:
    problem = pr.Problem("two", {"x": ss.range(0, 3)}, lambda p: (p["x"], 3 - p["x"]), 0.5,
                         num_objectives=2, reference=(4.0, 4.0))
    true = sq.true_hypervolume(problem)  # front (0,3) (1,2) (2,1) (3,0): area 10
    assert true == 10.0
    best, hit = sq._run_outcome(problem, [None, (3.0, 0.0), (0.0, 3.0), (1.0, 2.0)], budget=4, horizon=4)
    assert hit == 3 and best == pytest.approx(9 / 10)  # 4 + 4 - 1 = 7, then 9 with (1, 2)
    best, hit = sq._run_outcome(problem, [None, (3.0, 0.0)], budget=4, horizon=4)
    assert hit == 5 and best == pytest.approx(0.4)


@pytest.mark.slow
def test_the_bench_prints_the_table_for_every_problem(capsys: pytest.CaptureFixture[str]) -> None:
    # CI-sized: 2 seeds, 3 generations of 8; the 100-seed run is for bench/ by hand.
    # The tuning and first held-out sets (held_out_2.py's problems are checked one by one in their own tests: the
    # suite's time is the limit).
    problems = ",".join(problem.short for problem in pr.TUNING + ho.HELD_OUT)
    assert sq.main(["--seeds", "2", "--generations", "3", "--pool", "8", "--no-compileiq", "--problems", problems]) == 0
    out = capsys.readouterr().out
    for problem in pr.TUNING + ho.HELD_OUT:
        # ciq_build, random, tpe and nsga2 rows, the ratio row, the row against Optuna's samplers and the tests' row
        assert out.count(problem.name) == 7
    assert "true regret" in out  # the noisy problem's gains
    assert "ours/random" in out and "evals [p25-p75]" in out
    assert "ours/tpe evals" in out and "ours/nsga2 best" in out


def test_issue_23_problems_are_what_their_targets_say() -> None:
    # decoy: the basin's optimum is on target, the decoy point (better than the plateau) is not
    basin = {f"r{i}": v for i, v in enumerate(pr._DECOY_OPT)} | {"mode": "a"}
    assert pr._decoy(basin) == 0.0 <= pr.DECOY.target
    decoy = {f"r{i}": v for i, v in enumerate(pr._DECOY_POINT)} | {"mode": "a"}
    assert pr._decoy(decoy) == 99.5 > pr.DECOY.target
    assert pr._decoy({f"r{i}": 0 for i in range(6)} | {"mode": "a"}) == 100.0
    # knobs: the best configuration is on target; one more register per thread fails to launch; the
    # local optimum the GA stalls at (unroll 4, no register cap) is not on target
    best = {"block": 1024, "unroll": 8, "maxrreg": 64, "fast_math": "--use_fast_math", "cache": "cg"}
    assert pr._stable_fraction(best) >= 0.08  # not one of the scattered "compiler bug" failures
    assert pr._knobs(best) == pytest.approx(0.672912, abs=1e-6) and pr._knobs(best) <= pr.KNOBS.target
    assert pr._knobs(best | {"maxrreg": 72}) == INVALID_SCORE
    assert pr._knobs({k: v for k, v in best.items() if k != "maxrreg"}) == INVALID_SCORE
    stalled = {"block": 1024, "unroll": 4, "fast_math": "--use_fast_math", "cache": "cg"}
    assert pr._knobs(stalled) == pytest.approx(0.689236, abs=1e-6) and pr._knobs(stalled) > pr.KNOBS.target
    # NK: a gap to the enumerated optimum, zero only there
    assert pr._nk({f"b{i}": 0 for i in range(16)}) > 0
    assert pr._NK_BEST == pytest.approx(max(pr._nk_fitness([(n >> i) & 1 for i in range(16)])
                                            for n in range(0, 2**16, 1)))
    # held out: each optimum scores 0
    assert pr._trap({f"b{i}": 1 for i in range(20)}) == 0.0 and pr._trap({f"b{i}": 0 for i in range(20)}) == 5.0
    assert pr._rastrigin({f"x{i}": 0.0 for i in range(6)}) == 0.0
    assert pr._rosenbrock({f"x{i}": 1.0 for i in range(5)}) == 0.0


def test_the_baseline_engine_runs_the_genetic_search_of_a_git_revision() -> None:
    # HEAD's evolution.py, loaded beside the imported one: where the two are the same code, the same
    # evaluations (a working copy with local edits to the GA compares only the count).
    import subprocess

    baseline = sq.load_baseline("HEAD")
    theirs = baseline(pr.SEEDS_EXAMPLE, 3, 3, 8).scores
    config = SearchConfiguration(generations=3, pool_size=8, seed=3)
    ours = [e.scores if e.ok else None
            for e in GeneticSearch(pr.SEEDS_EXAMPLE.objective, pr.SEEDS_EXAMPLE.space, config).start().get_results()]
    assert len(theirs) == len(ours) == 24
    unchanged = subprocess.run(["git", "-C", str(sq.Path(sq.__file__).resolve().parents[2]), "diff", "--quiet",
                                "HEAD", "--", "ciq_build/search/evolution.py"]).returncode == 0
    if unchanged:
        assert theirs == ours


def _enumerated(problem: pr.Problem) -> list[tuple[float, dict[str, Any]]]:
    space = ss.SearchSpace(problem.space)
    out = []
    for i in range(space.cardinality):
        params = space.to_params(space.genome_at(i))
        value = problem.objective(params)
        if value != INVALID_SCORE:
            out.append((value, params))
    return sorted(out, key=lambda item: item[0])


def test_held_out_decoys_are_2_and_10_percent_deep_and_the_basin_is_on_target() -> None:
    for problem, optimum, decoy, depth in ((ho.DECOY_2, ho.DECOY_2_OPT, ho.DECOY_2_POINT, 0.02),
                                           (ho.DECOY_10, ho.DECOY_10_OPT, ho.DECOY_10_POINT, 0.10)):
        point = {f"r{i}": v for i, v in enumerate(decoy)} | {"mode": "a"}
        assert problem.objective(point) == pytest.approx(100 * (1 - depth)) and problem.objective(point) > problem.target
        edge = {f"r{i}": v for i, v in enumerate(optimum)} | {"mode": "a", "flag": "-O3"}
        edge["r0"] = optimum[0] + 4 if optimum[0] + 4 < 26 else optimum[0] - 4  # the basin's farthest reach
        assert problem.objective(edge) <= problem.target
        edge["r0"] = optimum[0] + 5 if optimum[0] + 5 < 26 else optimum[0] - 5
        assert problem.objective(edge) == 100.0


def test_held_out_ridge_has_its_optimum_off_single_changes_and_no_failure_next_to_it() -> None:
    ranked = _enumerated(ho.RIDGE)
    best_value, best = ranked[0]
    assert best_value <= ho.RIDGE.target < ranked[2][0]  # two tie (-O3 given or left to the default)
    assert (best["tile_x"], best["tile_y"]) == (32.0, 8.0)
    # every single change from the best is valid (no failure next to it) and worse
    for name, param in ho.RIDGE.space.items():
        values: list[Any] = list(param.values()) + ([None] if param.can_knockout else [])
        for value in values:
            if value == best.get(name):
                continue
            changed = {k: v for k, v in best.items() if k != name} | ({} if value is None else {name: value})
            score = ho.RIDGE.objective(changed)
            assert score != INVALID_SCORE and (score > ho.RIDGE.target or (name == "O" and value in (None, 3)))
    # on the ridge one pair move from the best shape: both tiles change, the work stays 256
    assert ho.RIDGE.objective(best | {"tile_x": 64.0, "tile_y": 4.0}) == pytest.approx(best_value * 1.01 / 1.0)


def test_held_out_noisy_knobs_optimum_and_noise() -> None:
    ranked = _enumerated(ho.NOISY_KNOBS)
    optimum = ranked[0][0]
    assert ho.NOISY_KNOBS.objective({}) == 1.0 and 1 - optimum == pytest.approx(0.0413, abs=1e-4)
    assert ho.NOISY_KNOBS.target == pytest.approx(optimum * 1.005)
    measured = sq.Measured(ho.NOISY_KNOBS, seed=7)
    again = sq.Measured(ho.NOISY_KNOBS, seed=7)
    samples = [measured({}) for _ in range(2000)]
    assert samples[:5] == [again({}) for _ in range(5)]  # seeded
    logs = [math.log(s) for s in samples]
    assert abs(statistics.fmean(logs)) < 0.002 and statistics.stdev(logs) == pytest.approx(0.015, rel=0.1)
    assert len(measured.calls) == 2000 and measured.calls[0] == ({}, (samples[0],))


def test_held_out_acf_like_space_has_52_parameters_and_its_optimum_on_target() -> None:
    assert len(ho.ACF_LIKE.space) == 52
    best = {"f3": "--flag-3", "f11": "--flag-11", "c2": "b", "c7": 2, "r1": 11, "r5": 4, "f5": "--flag-5",
            "f17": "--flag-17", "c4": "y", "r3": 12, "f20": "--flag-20", "c9": 2}
    assert pr._stable_fraction(best) >= 0.03
    assert ho.ACF_LIKE.objective(best) == pytest.approx(ho.ACF_LIKE_OPTIMUM)
    assert ho.ACF_LIKE.objective(best) <= ho.ACF_LIKE.target
    assert ho.ACF_LIKE.objective(best | {"f14": "--flag-14", "f8": "--flag-8"}) == INVALID_SCORE
    alone = {k: v for k, v in best.items() if k != "f17"}  # the deceptive pair: one flag alone is worse than none
    neither = {k: v for k, v in alone.items() if k != "f5"}
    assert ho.ACF_LIKE.objective(alone) > ho.ACF_LIKE.objective(neither) > ho.ACF_LIKE.objective(best)


def test_every_problem_of_every_set_has_a_short_name_of_its_own() -> None:
    # --problems and row ours@REV's subprocess (--set all --problems NAME) find a problem by its short name alone:
    # held-out-21's first acf52 and acf58 shared theirs with earlier sets' and its before run stopped there.
    names = [problem.short.lower() for problem in sq.SETS["all"]]
    assert sorted({name for name in names if names.count(name) > 1}) == []
    assert sum(len(problems) for name, problems in sq.SETS.items() if name != "all") == len(names)


def test_a_noisy_run_is_judged_by_the_true_score_of_its_pick() -> None:
    problem = pr.Problem("noisy", {"x": ss.range(0, 3, knockout_prob=0.5)},
                         lambda p: 1.0 - 0.01 * p.get("x", 0), 0.98 * 1.005, noise=0.015)
    measured = sq.Measured(problem, 0)
    measured.calls[:] = [({}, (1.0,)), ({"x": 1}, (0.95,)), ({"x": 3}, (0.975,))]
    lowest = sq.summarise_noisy(problem, [(sq.Run([(1.0,), (0.95,), (0.975,)]), measured)], budget=3)
    assert lowest.bests == [0.99] and lowest.picks_on_target == [False]  # the lucky measurement of x=1
    assert lowest.reported_gains == [pytest.approx(0.05)] and lowest.true_gains == [pytest.approx(0.01)]
    assert lowest.hits == [3]  # x=3 (true 0.97, on target) was measured third
    picked = sq.summarise_noisy(problem, [(sq.Run([], pick=({"x": 3}, 0.972)), measured)], budget=3)
    assert picked.bests == [0.97] and picked.picks_on_target == [True] and picked.hit_count == 1


def test_the_tests_p_values() -> None:
    assert fisher_exact(33, 100, 53, 100) == pytest.approx(0.0065, abs=1e-4)  # issue 38's decoy figures
    assert fisher_exact(86, 100, 40, 40) == pytest.approx(0.011, abs=1e-3)
    assert fisher_exact(5, 10, 5, 10) == 1.0
    assert mann_whitney([1.0] * 5, [1.0] * 5) == 1.0
    assert mann_whitney(list(range(20)), [x + 100 for x in range(20)]) < 1e-6


def test_the_overhead_bench_prints_a_figure_per_strategy(capsys: pytest.CaptureFixture[str]) -> None:
    from bench.search_quality import overhead

    assert overhead.main(["--evaluations", "64", "--seeds", "1", "--strategies", "portfolio,ga"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("search overhead per candidate on acf52") and len(lines) == 3
    assert lines[1].startswith("portfolio") and lines[2].startswith("ga") and "ms a candidate" in lines[2]


def test_issue_38_tuning_variants_are_what_their_targets_say() -> None:
    # the 5%-deep decoy: its point scores 95, off target; the basin's farthest reach is on target
    point = {f"r{i}": v for i, v in enumerate(pr._DEEP_POINT)} | {"mode": "a"}
    assert pr.DEEP_DECOY.objective(point) == pytest.approx(95.0) and pr.DEEP_DECOY.objective(point) > 40.0
    edge = {f"r{i}": v for i, v in enumerate(pr._DEEP_OPT)} | {"mode": "a", "r0": pr._DEEP_OPT[0] + 4}
    assert pr.DEEP_DECOY.objective(edge) <= pr.DEEP_DECOY.target
    assert pr.DEEP_DECOY.objective(edge | {"r0": pr._DEEP_OPT[0] + 5}) == 100.0
    # the jittery knobs: defaults 1.0, the optimum 3.45% better (enumerated), the target 0.5% above it
    ranked = _enumerated(pr.JITTERY_KNOBS)
    assert pr.JITTERY_KNOBS.objective({}) == 1.0 and 1 - ranked[0][0] == pytest.approx(0.0345, abs=1e-4)
    assert pr.JITTERY_KNOBS.target == pytest.approx(ranked[0][0] * 1.005) and pr.JITTERY_KNOBS.noise == 0.02
    # the 44-parameter ACF-like space: its optimum on target, the deceptive pair worse one flag at a time
    assert len(pr.ACF44.space) == 44
    best = {"g7": "--opt-7", "k5": "q", "s0": 9, "g11": "--opt-11", "g23": "--opt-23", "k8": 1, "s4": 4,
            "g0": "--opt-0", "s3": 5}
    assert pr._stable_fraction(best) >= 0.04 and pr.ACF44.objective(best) == pytest.approx(pr.ACF44_OPTIMUM)
    assert pr.ACF44.objective(best | {"g2": "--opt-2", "g19": "--opt-19"}) == INVALID_SCORE
    alone = {k: v for k, v in best.items() if k != "g23"}
    neither = {k: v for k, v in alone.items() if k != "g11"}
    assert pr.ACF44.objective(alone) > pr.ACF44.objective(neither) > pr.ACF44.objective(best)


def test_row_ciq_build_runs_the_strategy_ours_names(monkeypatch: pytest.MonkeyPatch) -> None:
    from ciq_build.search.portfolio import PortfolioSearch

    config = SearchConfiguration(generations=3, pool_size=8, seed=3)
    problem = pr.SEEDS_EXAMPLE

    def scores(search: Any) -> list[Any]:
        return [e.scores if e.ok else None for e in search.start().get_results()]

    portfolio = scores(PortfolioSearch(problem.objective, problem.space, config, progress=False))
    assert sq.run_ours(problem, 3, 3, 8).scores == portfolio  # the Search API's default
    monkeypatch.setattr(sq, "OURS", ["ga"])
    ga = scores(GeneticSearch(problem.objective, problem.space, config))
    assert sq.run_ours(problem, 3, 3, 8).scores == ga != portfolio


def test_row_ours_at_a_revision_reads_that_revision_s_rule_book() -> None:
    # Not the installed ciq_build's (the lead's checkout, at another revision): its rules may not parse at REV.
    import subprocess

    folder = sq.OursAt("HEAD", None).folder
    probe = "from ciq_build.core.rules import rules_path; print(rules_path())"
    where = subprocess.run([sys.executable, "-c", probe], env=dict(os.environ, PYTHONPATH=str(folder)), cwd=folder,
                           check=True, capture_output=True, text=True).stdout.strip()  # as run_seeds runs it
    assert sq.Path(where) == folder / "cmake" / "ciq_build_rules.txt"


def test_row_ours_at_a_revision_runs_that_revision_s_package_beside_today_s_bench() -> None:
    # HEAD's ciq_build in a subprocess: where the working copy's search is HEAD's, the same evaluations.
    import subprocess

    theirs = sq.OursAt("HEAD", None).run_seeds(pr.SEEDS_EXAMPLE, range(3, 5), 2, 4, 1)
    ours = [sq.run_ours(pr.SEEDS_EXAMPLE, seed, 2, 4) for seed in (3, 4)]
    assert [len(run.scores) for run, _ in theirs] == [8, 8]
    unchanged = subprocess.run(["git", "-C", str(sq.Path(sq.__file__).resolve().parents[2]), "diff", "--quiet",
                                "HEAD", "--", "ciq_build"]).returncode == 0
    if unchanged:
        assert [run.scores for run, _ in theirs] == [run.scores for run in ours]
