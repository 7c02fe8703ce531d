"""The genetic search: it finds optima, survives bad candidates, is reproducible, resumes."""

from __future__ import annotations

import io
import math
import random
import statistics
import zlib
from concurrent.futures import ThreadPoolExecutor

import pytest

import ciq_build.core.space as ss
from ciq_build.core.causes import Cause
from ciq_build.core.pareto import hypervolume_2d
from ciq_build.errors import ConfigError, SearchError
from ciq_build.search import evolution
from ciq_build.search.evolution import (
    INVALID_SCORE,
    GeneticSearch,
    GridMutation,
    ProgressReporter,
    SearchConfiguration,
    canonical_key,
)

SEEDS_SPACE = {
    "x": ss.range(1.0, 20.0, 0.5),
    "y": ss.choice([1, 2, 3]),
    "z": ss.literal("this is a constant", knockout_prob=0.5),
}


def seeds_objective(params):
    return params["x"] ** 2 + params["y"]


# A flat landscape (50 almost everywhere) hiding a basin of 0.3% of the space, with a decoy: a shallow slope
# (at most 0.5% below the flat level) over 15% of the space, far from the basin. Not one of
# bench/search_quality/run.py's problems, on which the rule was measured: this one was written to check it.
_BASIN = [3, 12, 5, 10, 1]
_DECOY = [13, 2, 14, 1, 12]
DECOY_SPACE = {**{f"x{i}": ss.range(0, 15) for i in range(5)}, "mode": ss.choice(["a", "b"])}


def decoy_objective(params):
    x = [params[f"x{i}"] for i in range(5)]
    if all(abs(v - o) <= 2 for v, o in zip(x, _BASIN, strict=True)):
        return float(sum(abs(v - o) for v, o in zip(x, _BASIN, strict=True)))  # below 11
    if all(abs(v - d) <= 5 for v, d in zip(x, _DECOY, strict=True)):
        return 50.0 - 0.01 * (25 - sum(abs(v - d) for v, d in zip(x, _DECOY, strict=True)))
    return 50.0


def test_on_a_flat_landscape_a_decoy_does_not_stop_the_search_from_sampling_the_whole_space() -> None:
    """Where most of the space scores alike, selection has nothing to learn from; a decoy point a hair better
    than the flat level must not turn the search into a walk around it. Over 100 seeds and 240 evaluations
    each, the search must find the basin at least half as often as random search does with the same budget
    (measured: 35 and 40 runs of 100; 18 when only a tie of every survivor widened the search)."""
    budget, runs = 240, 100
    found_by_search = sum(
        GeneticSearch(decoy_objective, DECOY_SPACE, SearchConfiguration(generations=15, pool_size=16, seed=seed),
               progress=False).start().get_best_result().scores[0] < 11
        for seed in range(runs))
    draws = random.Random(0)
    found_by_random = sum(
        any(decoy_objective({**{f"x{i}": draws.randint(0, 15) for i in range(5)}, "mode": "a"}) < 11
            for _ in range(budget))
        for _ in range(runs))
    assert found_by_search >= found_by_random / 2, (found_by_search, found_by_random)


@pytest.mark.slow
def test_seeds_example_finds_the_optimum_for_19_of_20_seeds():
    found = 0
    for seed in range(20):
        config = SearchConfiguration(generations=15, seed=seed)
        best = GeneticSearch(seeds_objective, SEEDS_SPACE, config, progress=False).start().get_best_result()
        found += best.params["x"] == 1.0 and best.params["y"] == 1 and best.scores == (2.0,)
    assert found >= 19


ZDT_N, ZDT_STEP = 8, 0.05


def zdt1(params):
    x = [params[f"x{i}"] for i in range(ZDT_N)]
    g = 1 + 9 * sum(x[1:]) / (ZDT_N - 1)
    return x[0], g * (1 - math.sqrt(x[0] / g))


@pytest.mark.slow
def test_nsga2_reaches_95_percent_of_the_zdt1_front_hypervolume():
    space = {f"x{i}": ss.range(0.0, 1.0, ZDT_STEP) for i in range(ZDT_N)}
    true_front = [(x, 1 - math.sqrt(x)) for x in ss.range(0.0, 1.0, ZDT_STEP).values()]
    reference = (1.1, 1.1)
    ratios = []
    for seed in range(10):
        config = SearchConfiguration(generations=62, pool_size=32, num_objectives=2, seed=seed)
        results = GeneticSearch(zdt1, space, config, progress=False).start()
        assert len(results) <= 2000
        front = [e.scores for e in results.pareto_front()]
        ratios.append(hypervolume_2d(front, reference) / hypervolume_2d(true_front, reference))
    assert statistics.median(ratios) >= 0.95


def flaky_objective(params):
    x = params["x"]
    if x == 3:
        raise RuntimeError("compiler crashed")
    if x == 5:
        return float("nan")
    if x == 7:
        return (1.0, 2.0)
    if x == 9:
        return INVALID_SCORE
    return float((x - 12) ** 2)


def test_invalid_candidates_are_recorded_and_do_not_end_the_search():
    config = SearchConfiguration(generations=10, pool_size=8, seed=1)
    results = GeneticSearch(flaky_objective, {"x": ss.range(0, 20)}, config, progress=False).start()
    by_x = {e.params["x"]: e for e in results}
    assert len(by_x) == 21  # the whole space, each configuration once
    assert by_x[3].cause == Cause.ERROR and "RuntimeError: compiler crashed" in by_x[3].message
    assert by_x[5].cause == Cause.INVALID and "non-finite" in by_x[5].message
    assert by_x[7].cause == Cause.INVALID and "2 score(s); expected 1" in by_x[7].message
    assert by_x[9].cause == Cause.INVALID and "INVALID_SCORE" in by_x[9].message
    assert all(e.scores is None for e in results if not e.ok)
    assert results.get_best_result().params == {"x": 12}


def test_a_generation_with_only_invalid_candidates_stops_with_a_clear_error():
    def broken(params):
        raise ValueError("no GPU")

    search = GeneticSearch(broken, {"x": ss.range(0, 100)}, SearchConfiguration(generations=5, pool_size=4, seed=0),
                    progress=False)
    with pytest.raises(SearchError, match=r"every candidate of generation 0 \(4 of 4\).*ValueError: no GPU"):
        search.start()
    assert search.stop_reason == "all_invalid" and len(search.results) == 4


def module_objective(params):
    return (params["a"] - 7) ** 2 + (params["b"] - 0.3) ** 2 + (0 if "f" in params else 1)


REPRO_SPACE = {"a": ss.range(0, 30), "b": ss.range(0.0, 1.0, 0.1), "f": ss.literal("-O3", knockout_prob=0.5)}


def _sequence(num_workers, seed=5, **kwargs):
    config = SearchConfiguration(generations=6, pool_size=8, seed=seed)
    results = GeneticSearch(module_objective, REPRO_SPACE, config, progress=False).start(num_workers, **kwargs)
    return [(e.id, e.generation, canonical_key(e.params), e.scores) for e in results]


def test_same_seed_same_candidates_whatever_the_number_of_workers():
    one = _sequence(1)
    assert _sequence(1) == one
    assert _sequence(4) == one
    assert _sequence(2, processes=True) == one
    with ThreadPoolExecutor(3) as executor:
        assert _sequence(1, executor=executor) == one
    assert _sequence(1, seed=6) != one


def test_no_configuration_is_evaluated_twice_and_small_spaces_are_exhausted():
    config = SearchConfiguration(generations=50, pool_size=8, seed=0)
    search = GeneticSearch(seeds_objective, SEEDS_SPACE, config, progress=False)
    results = search.start()
    keys = [canonical_key(e.params) for e in results]
    assert len(keys) == len(set(keys)) == 234
    assert search.stop_reason == "exhausted"


def test_seed_configurations_come_first():
    space = {"knob.maxrregcount": ss.range(32, 255, knockout_prob=0.5),
             "knob.O": ss.choice(["-O1", "-O2", "-O3"], knockout_prob=0.5)}
    search = GeneticSearch(None, space, SearchConfiguration(generations=2, pool_size=6, seed=0),
                    seeds=[{}, {"knob.O": "-O2"}, {}])
    batch = search.ask()
    assert [c.params for c in batch[:2]] == [{}, {"knob.O": "-O2"}]
    assert len(batch) == 6 and batch[0].id == 0 and batch[0].generation == 0
    with pytest.raises(ConfigError, match="seed configuration 0"):
        GeneticSearch(None, space, SearchConfiguration(generations=2), seeds=[{"knob.O": "-O9"}])


def test_ask_tell_resume_from_a_journal_recreates_the_run():
    config = SearchConfiguration(generations=6, pool_size=8, seed=11)
    # Uninterrupted reference run, driven by hand.
    reference = GeneticSearch(None, REPRO_SPACE, config)
    journal: dict[str, float] = {}
    while batch := reference.ask():
        for c in reversed(batch):  # tell order does not matter
            journal[c.key] = module_objective(c.params)
            reference.tell(c, journal[c.key], seconds=0.1)
    expected = sorted((e.id, canonical_key(e.params)) for e in reference.results)

    # An interrupted run: it stops half-way through generation 3.
    first = GeneticSearch(None, REPRO_SPACE, config)
    partial: dict[str, float] = {}
    while (batch := first.ask()) and first.generation < 3:
        for c in batch:
            partial[c.key] = module_objective(c.params)
            first.tell(c, partial[c.key])
    for c in first.ask()[:4]:
        partial[c.key] = module_objective(c.params)
        first.tell(c, partial[c.key])

    # Resume: same seed, answer from the journal, evaluate the rest.
    resumed = GeneticSearch(None, REPRO_SPACE, config)
    evaluated_again = 0
    while batch := resumed.ask():
        for c in batch:
            if c.key in partial:
                resumed.tell(c, partial[c.key])
            else:
                evaluated_again += 1
                resumed.tell(c, module_objective(c.params))
    assert sorted((e.id, canonical_key(e.params)) for e in resumed.results) == expected
    assert evaluated_again == len(expected) - len(partial)


def test_tell_refuses_candidates_that_are_not_waiting():
    search = GeneticSearch(None, REPRO_SPACE, SearchConfiguration(generations=2, pool_size=4, seed=0))
    batch = search.ask()
    assert search.ask() == batch  # asking again hands out the same candidates
    search.tell(batch[0], 1.0)
    with pytest.raises(SearchError, match="not waiting"):
        search.tell(batch[0], 1.0)
    with pytest.raises(SearchError, match="not waiting"):
        search.tell(999, 1.0)
    invalid = search.tell(batch[1], None, cause=Cause.COMPILE_FAILED, message="error: too many registers")
    assert not invalid.ok and invalid.cause == Cause.COMPILE_FAILED and invalid.scores is None
    assert invalid.message == "error: too many registers"


def test_max_evaluations_and_maximisation():
    config = SearchConfiguration(generations=100, pool_size=8, seed=3, problem_type="max", max_evaluations=20)
    results = GeneticSearch(lambda p: -abs(p["a"] - 7), REPRO_SPACE, config, progress=False).start()
    assert len(results) == 20
    assert results.get_best_result().scores[0] == max(e.scores[0] for e in results)


def test_operators_are_replaceable():
    calls = []

    class CountingMutation(GridMutation):
        def __call__(self, rng, genome, space, rate):
            calls.append(genome)
            return super().__call__(rng, genome, space, rate)

    config = SearchConfiguration(generations=3, pool_size=8, seed=0)
    GeneticSearch(module_objective, REPRO_SPACE, config, mutation=CountingMutation(), progress=False).start()
    assert len(calls) >= 16


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"generations": 0}, "generations"),
        ({"generations": 2, "pool_size": 1}, "pool_size"),
        ({"generations": 2, "cull_size": 0}, "cull_size"),
        ({"generations": 2, "mutate_rate": 1.5}, "mutate_rate"),
        ({"generations": 2, "problem_type": "minimize"}, "problem_type"),
        ({"generations": 2, "num_objectives": 2, "problem_type": ["min"]}, "problem_type"),
        ({"generations": 2, "num_objectives": 0}, "num_objectives"),
        ({"generations": 2, "seed": -1}, "seed"),
        ({"generations": 2, "init_with_true_random_threshold": 2}, "init_with_true_random_threshold"),
        ({"generations": 2, "max_evaluations": 0}, "max_evaluations"),
        ({"generations": 2, "time_limit": 0}, "time_limit"),
        ({"generations": 2.5}, "generations"),
    ],
)
def test_configuration_errors(kwargs, words):
    with pytest.raises(ConfigError, match=words):
        SearchConfiguration(**kwargs)


def test_one_direction_per_objective():
    config = SearchConfiguration(generations=1, num_objectives=2, problem_type=("min", "max"))
    assert config.directions == ("min", "max")
    with pytest.raises(ConfigError, match="objective_function"):
        GeneticSearch(None, REPRO_SPACE, config).start()


def test_progress_line_on_a_terminal_and_silence_elsewhere(capsys):
    stream = io.StringIO()
    now = [100.0]
    reporter = ProgressReporter(4, stream=stream, enabled=True, clock=lambda: now[0])
    now[0] = 110.0
    reporter.update(2, evaluations=64, failures=3, best=lambda: "2.5")
    reporter.close()
    text = stream.getvalue()
    for part in ("generation 2/4", "64 evaluations", "3 failed", "best 2.5", "0:10 elapsed", "~0:10 left"):
        assert part in text
    quiet = io.StringIO()  # not a terminal
    ProgressReporter(4, stream=quiet).update(1, evaluations=1)
    assert quiet.getvalue() == ""
    GeneticSearch(module_objective, REPRO_SPACE, SearchConfiguration(generations=2, pool_size=4, seed=0)).start()
    assert capsys.readouterr().err == ""  # pytest's stderr is not a terminal


def _flat(params):
    return 1.0


def test_on_a_plateau_survivors_change_and_the_same_seed_keeps_the_same_candidates():
    space = {f"r{i}": ss.range(0, 31) for i in range(4)}
    config = SearchConfiguration(generations=6, pool_size=16, seed=3)
    search = GeneticSearch(_flat, space, config, progress=False)
    survivors = []
    while batch := search.ask():
        for candidate in batch:
            search.tell(candidate, 1.0)
        survivors.append({ind.candidate.id for ind in search.population})
    # Ties are broken by a seeded draw, not by id: the survivors are not the first ids forever.
    assert survivors[0] != set(range(len(survivors[0])))
    assert len({frozenset(s) for s in survivors}) > 3
    again = GeneticSearch(_flat, space, config, progress=False).start()
    assert [canonical_key(e.params) for e in again] == [canonical_key(e.params) for e in search.results]


def test_the_children_of_the_best_parents_are_built_and_measured_first():
    """A generation is handed out best parents' children first (a child drawn from the whole space keeps its
    place), so fewer workers than children, or a budget that ends inside a generation, try those first.
    Over 60 seeds: in the second generation the first half of the children lies nearer the first
    generation's best than the second half does (measured: 58 of 60; in the order bred: 35)."""
    space = {f"g{i}": ss.range(0, 9) for i in range(6)}

    def score(params):
        return sum((params[f"g{i}"] - i) ** 2 for i in range(6))

    nearer = 0
    for seed in range(60):
        search = GeneticSearch(None, space, SearchConfiguration(generations=2, pool_size=16, seed=seed))
        first = search.ask()
        for candidate in first:
            search.tell(candidate, score(candidate.params))
        best = min(first, key=lambda c: score(c.params)).genome
        second = search.ask()
        apart = [sum(x != y for x, y in zip(c.genome, best, strict=True)) for c in second]
        half = len(apart) // 2
        nearer += statistics.mean(apart[:half]) < statistics.mean(apart[half:])
    assert nearer >= 50, nearer


def test_the_first_bred_generation_starts_with_untried_one_step_neighbours_of_the_first_best():
    """After the random first generation, the next starts with up to an eighth of the pool of the first's best
    with one parameter a step away (an ordered value one grid step up or down, another value of a small
    choice), none tried before, in a seeded order; the rest is bred as before."""
    space = {"a": ss.range(0, 9), "b": ss.range(0, 9), "mode": ss.choice(["p", "q", "r"]),
             "flag": ss.literal("on", knockout_prob=0.5)}

    def score(params):
        return abs(params["a"] - 7) + abs(params["b"] - 2) + (params["mode"] != "q")

    for seed in range(20):
        search = GeneticSearch(None, space, SearchConfiguration(generations=3, pool_size=16, seed=seed))
        first = search.ask()
        for candidate in first:
            search.tell(candidate, score(candidate.params))
        best = min(search.population, key=lambda ind: ind.order())
        second = search.ask()
        tried = {c.genome for c in first}
        for polled in second[:2]:  # 16 / 8
            apart = [i for i, (x, y) in enumerate(zip(polled.genome, best.genome, strict=True)) if x != y]
            assert len(apart) == 1 and polled.genome not in tried, (seed, polled.params, best.candidate.params)
            name = list(space)[apart[0]]
            if name in ("a", "b"):
                assert abs(polled.params[name] - best.candidate.params[name]) == 1
            assert name != "flag"  # a knocked-out or present flag is no step: it stays as it is


# A kernel whose threads each load `vector` tiles of 24 KB of shared memory: a launch fails above 96 KB unless
# `carveout` (KB; the default when left out) limits what is kept there, at the cost of spilling the rest. The
# best is vector 8 under a carveout of 96 KB or a little less; from vector 4, whose carveouts of 96 KB and more
# (or none) all score alike, vector 8 alone fails to launch. Not one of bench/search_quality/run.py's problems, on
# which repairs were measured: this one was written to check them.
TILES_SPACE = {"vector": ss.choice([1, 2, 4, 8]), "carveout": ss.range(16, 240, 16, knockout_prob=0.5),
               "stages": ss.range(1, 6), "swizzle": ss.choice(["none", "xor", "rot"], knockout_prob=0.5),
               "prefetch": ss.literal("--prefetch", knockout_prob=0.5)}
_TILE_TIME = {1: 1.0, 2: 0.8, 4: 0.7, 8: 0.55}


def tiles_objective(params):
    need = 24 * params["vector"]
    used = min(need, params["carveout"]) if "carveout" in params else need
    if used > 96:
        return INVALID_SCORE  # too much shared memory requested for launch
    if zlib.crc32(canonical_key(params).encode()) % 20 == 0:
        return INVALID_SCORE  # a scattered 5% of "compiler bugs"
    seconds = _TILE_TIME[params["vector"]] * (1 + 0.05 * (need - used) / 24) * (1 + 0.02 * abs(params["stages"] - 3))
    return seconds * (0.97 if params.get("swizzle") == "xor" else 1.0) * (0.99 if "prefetch" in params else 1.0)


def test_while_the_best_stays_the_same_failures_next_to_it_are_repaired_then_its_neighbours_tried():
    """After a generation that leaves the best configurations as they were, the next starts with candidates
    that failed one change from a best configuration, with one other parameter changed, none tried before:
    as many as there are, up to half the pool; then single changes of a best configuration."""
    space = ss.as_space(TILES_SPACE)

    def apart(a, b):
        return [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]

    checked = polled = 0
    for seed in range(20):
        search = GeneticSearch(None, TILES_SPACE, SearchConfiguration(generations=12, pool_size=16, seed=seed))
        fitness, failed, best = {}, set(), [math.inf]
        while batch := search.ask():
            if len(best) >= 3 and best[-1] == best[-2]:
                best_genomes = {g for g, f in fitness.items() if f == best[-1]}
                repairs = set()
                for f in failed:
                    cause = {i for b in best_genomes if len(apart(f, b)) == 1 for i in apart(f, b)}
                    if cause:
                        repairs |= {g for i, g in evolution.single_changes(f, space) if i not in cause}
                repairs -= fitness.keys() | failed
                expected = min(len(repairs), len(batch) // 2)
                assert all(c.genome in repairs for c in batch[:expected]), (seed, search.generation)
                checked += expected > 0
                if expected < len(batch) // 2:
                    next_one = batch[expected].genome
                    assert any(len(apart(next_one, b)) == 1 for b in best_genomes), (seed, search.generation)
                    polled += 1
            for candidate in batch:
                value = tiles_objective(candidate.params)
                if value == INVALID_SCORE:
                    failed.add(candidate.genome)
                else:
                    fitness[candidate.genome] = value
                search.tell(candidate, value)
            best.append(min(fitness.values()))
    assert checked >= 20 and polled >= 20, (checked, polled)  # stalled generations checked


def test_repairs_reach_a_best_that_a_single_change_cannot(monkeypatch):
    """Over 100 seeds and 224 evaluations each, the search must reach the tiles problem's best in at least 20
    more runs with repairs than without them, and in most (measured: 74 with, 40 without)."""
    space = ss.as_space(TILES_SPACE)
    optimum = min(value for value in (tiles_objective(space.to_params(space.genome_at(i)))
                                      for i in range(space.cardinality)) if value != INVALID_SCORE)

    def reached() -> int:
        return sum(
            GeneticSearch(tiles_objective, TILES_SPACE, SearchConfiguration(generations=14, pool_size=16, seed=seed),
                   progress=False).start().get_best_result().scores[0] <= optimum
            for seed in range(100))

    with_repairs = reached()
    monkeypatch.setattr(GeneticSearch, "_repairs", lambda self: iter(()))
    without = reached()
    assert with_repairs > 60 and with_repairs >= without + 20, (with_repairs, without)
