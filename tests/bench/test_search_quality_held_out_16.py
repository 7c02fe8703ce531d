"""bench/search_quality/held_out_16.py: each problem is what its description says (optima on target and needing each
of their parameters, the decoys' depths, the pits, the tilt and the failing corner, the ridge with nothing failing
near its best, the noisy knobs' interactions and size, the ACF-like spaces' flags needing choices' values, their
pairs, triple and failures)."""

from __future__ import annotations

import pytest

from bench.search_quality import held_out_16 as h16
from ciq_build import INVALID_SCORE
from ciq_build.core.space import as_space
from support import assert_optimum_needs_each_parameter


def test_each_optimum_is_on_target_and_needs_each_of_its_parameters() -> None:
    for problem, best, optimum, within in ((h16.PRIDGE_16M, h16.PRIDGE_16M_BEST, h16.PRIDGE_16M_OPTIMUM, 1.005),
                                           (h16.ACF_51, h16.ACF51_BEST, h16.ACF51_OPTIMUM, 1.01),
                                           (h16.ACF_62, h16.ACF62_BEST, h16.ACF62_OPTIMUM, 1.01)):
        assert problem.target == pytest.approx(optimum * within)
        assert_optimum_needs_each_parameter(problem, best, optimum)


def test_decoy3p_is_3_percent_deep_on_a_pitted_plateau_and_its_basin_needs_the_row_layout() -> None:
    d3 = h16.DECOY_3P.objective

    def at(point: list[int], layout: str = "col") -> dict[str, object]:
        return {f"q{i}": v for i, v in enumerate(point)} | {"layout": layout}

    assert d3(at(h16.DECOY_3P_POINT)) == pytest.approx(97.0)
    assert d3(at(h16.DECOY_3P_OPT, "row")) == 0.0 < d3(at(h16.DECOY_3P_OPT)) == 5.0 < h16.DECOY_3P.target
    assert d3(at([0, 1, 0, 0, 1])) == pytest.approx(100.4)
    assert d3(at([0, 3, 0, 0, 1])) == pytest.approx(100.1) and d3(at([0, 3, 0, 0, 6])) == pytest.approx(99.8)  # pits


def test_decoy6t_is_6_percent_deep_on_a_plateau_tilted_towards_it_with_a_failing_corner() -> None:
    d6 = h16.DECOY_6T.objective
    basin = {f"t{i}": v for i, v in enumerate(h16.DECOY_6T_OPT)}
    assert d6(basin | {"unroll_all": "-DUNROLL_ALL"}) == 0.0 and d6(basin) == 4.0
    assert d6({f"t{i}": v for i, v in enumerate(h16.DECOY_6T_POINT)}) == pytest.approx(94.0)
    assert d6({"t0": 10, "t1": 10, "t2": 22, "t3": 0}) == pytest.approx(100.5)
    assert d6({"t0": 10, "t1": 10, "t2": 22, "t3": 22}) == pytest.approx(100.0)  # lower towards the decoy's t3
    assert d6({"t0": 22, "t1": 17, "t2": 0, "t3": 0}) == INVALID_SCORE  # t0 + t1 above 38
    assert d6({"t0": 21, "t1": 17, "t2": 0, "t3": 0}) != INVALID_SCORE


def test_pridge16m_keeps_its_work_along_the_product_and_nothing_fails_near_the_best() -> None:
    p16, best = h16.PRIDGE_16M.objective, h16.PRIDGE_16M_BEST
    assert p16(best | {"bn": 6}) == pytest.approx(0.994 * 1.08 * 1.012)  # off the product by a doubling
    assert p16(best | {"bm": 12, "bn": 24}) == pytest.approx(0.994 * (1 + 0.012 * 2))  # on it: the shape only
    assert p16(best | {"split": 2, "bn": 24}) == pytest.approx(0.994 * 1.012 * 1.016)  # two steps of the split list
    near = [best | {"bm": m, "bn": n, "split": s} for m in range(16, 25) for n in range(6, 19) for s in (1, 2, 3, 4, 6)]
    assert INVALID_SCORE not in [p16(p) for p in near]
    assert p16({"bm": 24, "bn": 24, "split": 6, "vector": 1}) == INVALID_SCORE  # only far off the ridge


def test_noisy16_optimum_is_4_1_percent_better_and_its_flags_depend_on_the_stages_and_the_cache_policy() -> None:
    t = h16.noisy_knobs_16_time
    best = {"block": 256, "cache": "cg", "stages": 2, "async_copy": "-DASYNC_COPY", "l2_prefetch": "-DL2_PREFETCH",
            "fast_div": "-DFAST_DIV"}
    assert t({}) == 1.0 and t(best) == pytest.approx(h16.NOISY_KNOBS_16_OPTIMUM) == pytest.approx(0.9587, abs=1e-4)
    assert t({"async_copy": "-DASYNC_COPY"}) > 1.0 > t({"async_copy": "-DASYNC_COPY", "stages": 3})  # needs stages
    without_l2 = {k: v for k, v in best.items() if k != "l2_prefetch"}
    assert t(best | {"cache": "cs"}) > t(without_l2 | {"cache": "cs"})  # L2 prefetch costs with "cs"
    assert t(best | {"debug_sync": "-DDEBUG_SYNC"}) > h16.NOISY_KNOBS_16.target  # every step off the best is off target
    assert h16.NOISY_KNOBS_16.noise == 0.019
    assert as_space(h16.NOISY_KNOBS_16.space).cardinality == 1280  # more than the budget of 640


def test_the_acf_like_spaces_pair_flags_with_choices_values_and_fail_where_described() -> None:
    a51, b51 = h16.ACF_51.objective, h16.ACF51_BEST
    assert a51({"a5": "--acf16a-5"}) > 1.0 > a51({"a5": "--acf16a-5", "c2": "y"})  # a5 needs c2 = "y"
    assert a51({"a18": "--acf16a-18", "r3": 11}) > 1.0 > a51({"a18": "--acf16a-18", "r3": 10})  # unless r3 is high
    assert a51({"a9": "--acf16a-9"}) > 1.0 > a51({"a9": "--acf16a-9", "a27": "--acf16a-27"})  # a pair
    two = {"a1": "--acf16a-1", "a12": "--acf16a-12"}
    assert a51(two) == 1.0 > a51(two | {"a30": "--acf16a-30"})  # a triple that helps only whole
    assert a51(b51 | {"c7": "x"}) == INVALID_SCORE and a51(b51 | {"a3": "--acf16a-3"}) == INVALID_SCORE
    a62, b62 = h16.ACF_62.objective, h16.ACF62_BEST
    assert a62({"b20": "--acf16n-20"}) > 1.0 > a62({"b20": "--acf16n-20", "n2": 4})  # b20 needs n2 = 4
    assert a62({"b8": "--acf16n-8", "h3": "max"}) > 1.0 > a62({"b8": "--acf16n-8"})  # unless h3 = "max"
    without_b4 = {k: v for k, v in b62.items() if k != "b4"}
    assert a62(without_b4 | {"z2": 6}) < a62(without_b4) and a62(without_b4 | {"z2": 6}) < a62(b62 | {"z2": 6})
    assert a62(b62 | {"h0": "max"}) == INVALID_SCORE and a62(b62 | {"b16": "--acf16n-16"}) == INVALID_SCORE
    assert a62(b62 | {"z0": 20, "z5": 21}) == INVALID_SCORE  # two ranges summing too high
