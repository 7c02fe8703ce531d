"""bench/search_quality/held_out_25.py: each problem is what its description says (optima on target and needing each
of their parameters, the decoys' depths and their hyperbolic and mesa plateaus, the ridge with nothing failing near its
best, the noisy knobs' unroll parabola, tile-bound split and clashing flags, the ACF-like space's flags needing a
choice's and a range's values, its pair, triple and failures), and nothing else is on target: the two small spaces
counted whole, the others sampled."""

from __future__ import annotations

import pytest

from bench.search_quality import held_out_25 as h25
from bench.search_quality.run import SETS
from ciq_build import INVALID_SCORE
from ciq_build.core.space import as_space
from support import assert_optimum_needs_each_parameter, draws_on_target, whole_space_on_target


def test_the_set_is_registered_and_its_short_names_are_new() -> None:
    assert SETS["held-out-25"] == h25.HELD_OUT_25
    names = [p.short for p in SETS["all"]]
    assert len(names) == len(set(names)), sorted(n for n in set(names) if names.count(n) > 1)


def test_each_optimum_is_on_target_and_needs_each_of_its_parameters() -> None:
    for problem, best, optimum, within in ((h25.NOISY_KNOBS_25, h25.NOISY_KNOBS_25_BEST, h25.NOISY_KNOBS_25_OPTIMUM,
                                            1.005),
                                           (h25.PRIDGE_25, h25.PRIDGE_25_BEST, h25.PRIDGE_25_OPTIMUM, 1.005),
                                           (h25.ACF_56, h25.ACF56_BEST, h25.ACF56_OPTIMUM, 1.01)):
        assert problem.target == pytest.approx(optimum * within)
        assert_optimum_needs_each_parameter(problem, best, optimum)


def test_the_small_spaces_have_their_optimum_alone_on_target() -> None:
    for problem, best, size in ((h25.NOISY_KNOBS_25, h25.NOISY_KNOBS_25_BEST, 2304),
                                (h25.PRIDGE_25, h25.PRIDGE_25_BEST, 1728)):
        assert as_space(problem.space).cardinality == size > 640  # more configurations than the budget
        assert whole_space_on_target(problem)[0] == [best], problem.short


def _at(prefix: str, point: list[int], **rest: object) -> dict[str, object]:
    return {f"{prefix}{i}": v for i, v in enumerate(point)} | rest


def test_decoy6y_is_6_percent_deep_on_hyperbolic_ripples_and_its_basin_needs_the_kmn_order() -> None:
    d6 = h25.DECOY_6Y.objective
    assert d6(_at("y", h25.DECOY_6Y_POINT, order="mnk")) == pytest.approx(94.0)
    assert d6(_at("y", h25.DECOY_6Y_OPT, order="kmn")) == 0.0 < d6(_at("y", h25.DECOY_6Y_OPT, order="nmk")) == 3.0
    crest, trough = d6(_at("y", [0, 0, 10, 10, 10], order="mnk")), d6(_at("y", [4, 5, 10, 10, 10], order="mnk"))
    assert crest == pytest.approx(100.2) and trough == pytest.approx(100.0)  # y0 * y1: 0 and 20 of a period of 40
    assert d6(_at("y", [2, 10, 0, 0, 0], order="mnk")) == pytest.approx(d6(_at("y", [10, 2, 21, 21, 21], order="mnk")))
    assert h25.DECOY_6Y.noise == 0.0
    on, failed = draws_on_target(h25.DECOY_6Y, 20_000, seed=25)  # (5/22)**5 = 0.060%
    assert 4 <= on <= 30 and failed == 0


def test_decoy3m_is_3_percent_deep_on_a_noisy_mesa_and_its_basin_needs_the_cache_flag() -> None:
    d3 = h25.DECOY_3M.objective
    assert d3(_at("m", h25.DECOY_3M_POINT)) == pytest.approx(97.0)
    assert d3(_at("m", h25.DECOY_3M_OPT, cache="-DCACHE_GLOBAL")) == 0.0 < d3(_at("m", h25.DECOY_3M_OPT)) == 4.0
    assert d3(_at("m", [20, 20, 0, 0])) == pytest.approx(100.15) and d3(_at("m", [12, 12, 0, 0])) == 100.0
    assert sum(h25.DECOY_3M_OPT[:2]) > 24 >= sum(h25.DECOY_3M_POINT[:2])  # the basin on the mesa, the decoy below it
    assert h25.DECOY_3M.noise == 0.006
    on, failed = draws_on_target(h25.DECOY_3M, 20_000, seed=25)  # (5/24)**4 = 0.19%, half with the flag
    assert 15 <= on <= 70 and failed == 0


def test_pridge25_keeps_its_work_along_the_product_and_nothing_fails_near_the_best() -> None:
    p25, best = h25.PRIDGE_25.objective, h25.PRIDGE_25_BEST
    assert p25(best | {"blocks": 4}) == pytest.approx(0.995 * 1.04 * 1.004)  # off the product by a doubling
    assert p25(best | {"threads": 512, "items": 2}) == pytest.approx(0.995 * 1.014)  # on it: the shape only
    near = [best | {"threads": t, "items": i, "blocks": b} for t in (32, 64, 128, 256, 512, 1024) for i in range(1, 13)
            for b in (1, 2, 3, 4, 6, 8) if t * i * b <= 32 * 2048]
    assert INVALID_SCORE not in [p25(p) for p in near]
    assert p25({"threads": 1024, "items": 12, "blocks": 8, "layout": "row"}) == INVALID_SCORE  # only far off
    assert whole_space_on_target(h25.PRIDGE_25)[1] == 24  # 1.4% fail, all far off the ridge


def test_noisy25_unrolls_best_at_4_splits_only_with_a_tile_of_256_and_its_cache_flags_clash() -> None:
    t, best = h25.noisy_knobs_25_time, h25.NOISY_KNOBS_25_BEST
    assert t({}) == 1.0 and t(best) == pytest.approx(h25.NOISY_KNOBS_25_OPTIMUM) == pytest.approx(0.9547, abs=1e-3)
    unrolls = [t({"unroll": u}) for u in range(1, 9)]
    assert min(unrolls) == unrolls[3] and unrolls[2] == pytest.approx(unrolls[4])  # a parabola round 4
    assert t({"split": "-DSPLIT_K", "tile": 128}) > t({"tile": 128})
    assert t({"split": "-DSPLIT_K", "tile": 256}) < t({"tile": 256})
    promote, evict = {"l2promo": "-DL2_PROMOTE"}, {"evict": "-DEVICT_FIRST"}
    assert t(promote) < 1.0 and t(evict) < 1.0 < t(promote | evict)  # each helps alone, together they cost
    assert t(best | {"ftz": "-ftz=true"}) > h25.NOISY_KNOBS_25.target
    assert h25.NOISY_KNOBS_25.noise == 0.015


def test_acf56_pairs_flags_with_a_choice_and_a_range_and_fails_where_described() -> None:
    a56, b56 = h25.ACF_56.objective, h25.ACF56_BEST
    assert a56({"f5": "--acf25-5"}) > 1.0 > a56({"f5": "--acf25-5", "c7": "c"})  # f5 needs c7 = "c"
    assert a56({"f29": "--acf25-29"}) > 1.0 > a56({"f11": "--acf25-11", "f29": "--acf25-29"})  # a pair
    triple = {"f2": "--acf25-2", "f19": "--acf25-19", "f33": "--acf25-33"}
    assert a56(triple) < 1.0 < a56({k: v for k, v in triple.items() if k != "f19"})  # whole only
    assert a56({"r3": 5}) < a56({"r3": 9}) < 1.0 < a56({"r3": 13})  # r3 best at 5
    assert a56({"f24": "--acf25-24", "r9": 5}) > 1.0 > a56({"f24": "--acf25-24", "r9": 4})  # r9 at 4 or less
    assert a56(b56 | {"c1": "d"}) == INVALID_SCORE and a56(b56 | {"f17": "--acf25-17", "r6": 12}) == INVALID_SCORE
    assert a56(b56 | {"c1": "b", "f17": "--acf25-17", "r6": 11}) != INVALID_SCORE
    on, failed = draws_on_target(h25.ACF_56, 4_000, seed=25)  # 0.004% on target, 12% fail
    assert on <= 2 and 350 <= failed <= 650
