"""bench/search_quality/held_out_23.py: each problem is what its description says (optima on target and needing each
of their parameters, the decoys' depths and their saddle, hashed and grooved plateaus, the noisy knobs' register cap
step and stage-bound prefetch, the ridge with nothing failing near its best, the ACF-like space's flags needing a
choice's and a range's values, its pair, triple and failures), and nothing else is on target: the two small spaces
counted whole, the others sampled."""

from __future__ import annotations

import pytest

from bench.search_quality import held_out_23 as h23
from ciq_build import INVALID_SCORE
from ciq_build.core.space import as_space
from support import assert_optimum_needs_each_parameter, draws_on_target, whole_space_on_target


def test_each_optimum_is_on_target_and_needs_each_of_its_parameters() -> None:
    for problem, best, optimum, within in ((h23.NOISY_KNOBS_23, h23.NOISY_KNOBS_23_BEST, h23.NOISY_KNOBS_23_OPTIMUM,
                                            1.005),
                                           (h23.PRIDGE_23, h23.PRIDGE_23_BEST, h23.PRIDGE_23_OPTIMUM, 1.005),
                                           (h23.ACF_50, h23.ACF50_BEST, h23.ACF50_OPTIMUM, 1.01)):
        assert problem.target == pytest.approx(optimum * within)
        assert_optimum_needs_each_parameter(problem, best, optimum)


def test_the_small_spaces_have_their_optimum_alone_on_target() -> None:
    for problem, best, size in ((h23.NOISY_KNOBS_23, h23.NOISY_KNOBS_23_BEST, 2240),
                                (h23.PRIDGE_23, h23.PRIDGE_23_BEST, 1440)):
        assert as_space(problem.space).cardinality == size > 640  # more configurations than the budget
        assert whole_space_on_target(problem)[0] == [best], problem.short


def _at(prefix: str, point: list[int], **rest: object) -> dict[str, object]:
    return {f"{prefix}{i}": v for i, v in enumerate(point)} | rest


def test_decoy5s_is_5_percent_deep_on_a_noisy_saddle_and_its_basin_needs_the_tiled_layout() -> None:
    d5 = h23.DECOY_5S.objective
    assert d5(_at("s", h23.DECOY_5S_POINT, layout="rowmajor")) == pytest.approx(95.0)
    assert d5(_at("s", h23.DECOY_5S_OPT, layout="tiled")) == 0.0 < d5(_at("s", h23.DECOY_5S_OPT, layout="colmajor")) \
        == 3.0 < h23.DECOY_5S.target
    far = [0, 19, 10, 10, 19]  # s0 far from its middle (up), s1 too (down): a saddle, not a bowl
    assert d5(_at("s", far, layout="tiled")) == pytest.approx(100.0)
    assert d5(_at("s", [0, 10, 10, 10, 19], layout="tiled")) == pytest.approx(100.2, abs=0.001)
    assert d5(_at("s", [10, 0, 10, 10, 19], layout="tiled")) == pytest.approx(99.8, abs=0.001)
    assert h23.DECOY_5S.noise == 0.007
    on, failed = draws_on_target(h23.DECOY_5S, 20_000, seed=23)  # the basin only: (5/20)**5 = 0.098%
    assert 5 <= on <= 40 and failed == 0


def test_decoy2h_is_2_percent_deep_on_hashed_bumps_and_its_basin_needs_the_vector_flag() -> None:
    d2 = h23.DECOY_2H.objective
    assert d2(_at("h", h23.DECOY_2H_POINT)) == pytest.approx(98.0)
    assert d2(_at("h", h23.DECOY_2H_OPT, vec="-DVEC4")) == 0.0 < d2(_at("h", h23.DECOY_2H_OPT)) == 4.0
    bumps = [d2(_at("h", [a, b, 0, 25])) for a in range(0, 26, 5) for b in range(0, 26, 5)]
    assert all(100.0 <= v < 100.25 for v in bumps) and max(bumps) - min(bumps) > 0.1  # uneven, at random
    assert d2(_at("h", [0, 0, 0, 25])) == d2(_at("h", [0, 0, 0, 25], vec="-DVEC4"))  # the flag: the basin's alone
    assert h23.DECOY_2H.noise == 0.005
    on, failed = draws_on_target(h23.DECOY_2H, 20_000, seed=23)  # (5/26)**4 = 0.14%, half with the flag
    assert 10 <= on <= 50 and failed == 0


def test_decoy7g_is_7_percent_deep_on_a_plateau_grooved_along_a_diagonal() -> None:
    d7 = h23.DECOY_7G.objective
    assert d7(_at("g", h23.DECOY_7G_POINT, swizzle=1)) == pytest.approx(93.0)
    assert d7(_at("g", h23.DECOY_7G_OPT, swizzle=2)) == 0.0 < d7(_at("g", h23.DECOY_7G_OPT, swizzle=4)) == 3.0
    crest, trough = d7(_at("g", [0, 0, 9, 0, 0], swizzle=1)), d7(_at("g", [4, 0, 0, 0, 0], swizzle=1))
    assert crest == pytest.approx(100.24) and 100.0 < trough < 100.01  # along g0 + g1 + g2, period 9
    assert d7(_at("g", [1, 2, 6, 0, 17], swizzle=1)) == crest  # the same sum: the same groove
    assert h23.DECOY_7G.noise == 0.0
    on, failed = draws_on_target(h23.DECOY_7G, 20_000, seed=23)  # (5/18)**5 = 0.16%
    assert 15 <= on <= 60 and failed == 0


def test_noisy23_spills_below_a_register_cap_of_64_and_prefetches_only_with_3_stages() -> None:
    t, best = h23.noisy_knobs_23_time, h23.NOISY_KNOBS_23_BEST
    assert t({}) == 1.0 and t(best) == pytest.approx(h23.NOISY_KNOBS_23_OPTIMUM) == pytest.approx(0.9462, abs=1e-3)
    caps = [t({"maxrreg": cap}) for cap in range(32, 129, 8)]
    assert caps[:4] == [1.03] * 4 and min(caps) == caps[5] == t({"maxrreg": 72})  # a step at 64, best at 72
    assert caps[4] < 1.0 < caps[3]
    assert t({"prefetch": "-DPREFETCH", "stages": 2}) > t({"stages": 2})
    assert t({"prefetch": "-DPREFETCH", "stages": 3}) < t({"stages": 3})
    assert t({"prefetch": "-DPREFETCH"}) > 1.0  # no stages given: one
    assert t(best | {"checks": "-DBOUNDS_CHECKS"}) > h23.NOISY_KNOBS_23.target
    assert h23.NOISY_KNOBS_23.noise == 0.014


def test_pridge23_keeps_its_work_along_the_product_and_nothing_fails_near_the_best() -> None:
    p23, best = h23.PRIDGE_23.objective, h23.PRIDGE_23_BEST
    assert p23(best | {"unroll": 16}) == pytest.approx(0.994 * 1.05 * 1.005)  # off the product by a doubling
    assert p23(best | {"warps": 8, "ilp": 2}) == pytest.approx(0.994 * 1.016)  # on it: the shape only
    near = [best | {"warps": w, "ilp": i, "unroll": u} for w in (1, 2, 4, 8, 16) for i in range(1, 17)
            for u in (1, 2, 4, 8, 16) if w * i * u <= 32 * 128]
    assert INVALID_SCORE not in [p23(p) for p in near]
    assert p23({"warps": 32, "ilp": 16, "unroll": 16, "swizzle": "none"}) == INVALID_SCORE  # only far off
    assert whole_space_on_target(h23.PRIDGE_23)[1] == 24  # 1.7% fail, all far off the ridge


def test_acf50_pairs_flags_with_a_choice_and_a_range_and_fails_where_described() -> None:
    a50, b50 = h23.ACF_50.objective, h23.ACF50_BEST
    assert a50({"f3": "--acf23-3"}) > 1.0 > a50({"f3": "--acf23-3", "c2": "b"})  # f3 needs c2 = "b"
    assert a50({"f8": "--acf23-8"}) == INVALID_SCORE  # the scattered 2% (a hash of the configuration)
    assert a50({"f21": "--acf23-21"}) > 1.0 > a50({"f8": "--acf23-8", "f21": "--acf23-21"})  # a pair
    triple = {"f15": "--acf23-15", "f16": "--acf23-16", "f27": "--acf23-27"}
    assert a50(triple) < 1.0 < a50({k: v for k, v in triple.items() if k != "f16"})  # whole only
    assert a50({"r4": 8}) < a50({"r4": 3}) < 1.0 < a50({"r4": 0})  # r4 best at 8
    assert a50({"f12": "--acf23-12", "r7": 8}) > 1.0 > a50({"f12": "--acf23-12", "r7": 9})  # r7 at 9 or more
    assert a50(b50 | {"c0": "a"}) == INVALID_SCORE and a50(b50 | {"r2": 2}) == INVALID_SCORE
    assert a50(b50 | {"c0": "b", "r2": 3}) != INVALID_SCORE
    on, failed = draws_on_target(h23.ACF_50, 4_000, seed=23)  # 0.0045% on target, 14% fail
    assert on <= 2 and 400 <= failed <= 700
