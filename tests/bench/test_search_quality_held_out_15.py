"""bench/search_quality/held_out_15.py: each problem is what its description says (optima on target and needing each
of their parameters, the decoys' depths, the terraces, the failing region beside a basin, the ridge with nothing
failing near its best, the noisy knobs' interactions, the ACF-like spaces' flags needing choices' values, their pairs
and their failures)."""

from __future__ import annotations

import pytest

from bench.search_quality import held_out_15 as h15
from ciq_build import INVALID_SCORE
from support import assert_optimum_needs_each_parameter


def test_each_optimum_is_on_target_and_needs_each_of_its_parameters() -> None:
    for problem, best, optimum, within in ((h15.PRIDGE_15S, h15.PRIDGE_15S_BEST, h15.PRIDGE_15S_OPTIMUM, 1.005),
                                           (h15.ACF_45, h15.ACF45_BEST, h15.ACF45_OPTIMUM, 1.01),
                                           (h15.ACF_59, h15.ACF59_BEST, h15.ACF59_OPTIMUM, 1.01)):
        assert problem.target == pytest.approx(optimum * within)
        assert_optimum_needs_each_parameter(problem, best, optimum)


def test_decoy4k_is_4_percent_deep_on_flat_terraces_falling_towards_it_and_its_basin_needs_the_swizzle() -> None:
    d4 = h15.DECOY_4K.objective

    def at(point: list[int], swizzle: str = "none") -> dict[str, object]:
        return {f"k{i}": v for i, v in enumerate(point)} | {"swizzle": swizzle}

    assert d4(at(h15.DECOY_4K_POINT)) == pytest.approx(96.0)
    assert d4(at(h15.DECOY_4K_OPT, "xor")) == 0.0 < d4(at(h15.DECOY_4K_OPT)) == 4.0 < h15.DECOY_4K.target
    step = [d4(at([v, 0, 17, 0, 0])) for v in range(12)]
    assert step[:6] == [100.6] * 6 and step[6:] == [pytest.approx(100.4)] * 6  # flat within a terrace, then a step
    assert d4(at([17, 0, 17, 17, 0])) == pytest.approx(99.8)  # the lowest terrace lies towards the decoy


def test_decoy7w_is_7_percent_deep_and_its_basin_touches_the_failing_region() -> None:
    d7 = h15.DECOY_7W.objective
    basin = {f"w{i}": v for i, v in enumerate(h15.DECOY_7W_OPT)}
    assert d7(basin | {"wide": "-DWIDE_STORES"}) == 0.0 and d7(basin) == 3.0
    assert d7(basin | {"w0": 20}) == 5.0 and d7(basin | {"w0": 21}) == INVALID_SCORE  # one step past the edge
    assert d7(basin | {"w3": 22}) == 5.0 and d7(basin | {"w3": 23}) == INVALID_SCORE
    assert d7({f"w{i}": v for i, v in enumerate(h15.DECOY_7W_POINT)}) == pytest.approx(93.0)
    assert d7({"w0": 0, "w1": 0, "w2": 23, "w3": 22}) == 100.0


def test_pridge15s_keeps_its_work_along_the_product_and_nothing_fails_near_the_best() -> None:
    p15, best = h15.PRIDGE_15S.objective, h15.PRIDGE_15S_BEST
    assert p15(best | {"cols": 6}) == pytest.approx(0.992 * 1.09 * 1.014)  # off the product by a doubling
    assert p15(best | {"rows": 12, "cols": 24}) == pytest.approx(0.992 * (1 + 0.014 * 2))  # on it: the shape only
    assert p15(best | {"stages": 6, "rows": 24, "cols": 6}) == pytest.approx(0.992 * 1.014 * 1.03)  # 1% a stage
    near = [best | {"rows": r, "cols": c, "stages": s} for r in range(16, 33) for c in range(6, 19) for s in range(1, 7)]
    assert INVALID_SCORE not in [p15(p) for p in near]
    assert p15({"rows": 32, "cols": 32, "stages": 6, "unroll": 1}) == INVALID_SCORE  # only far off the ridge


def test_noisy15_optimum_is_3_6_percent_better_and_its_flags_depend_on_the_vector_and_the_schedule() -> None:
    t = h15.noisy_knobs_15_time
    best = {"vec": 4, "sched": "dynamic", "fast_math": "-DFAST_MATH", "prefetch": "-DSOFTWARE_PREFETCH"}
    assert t({}) == 1.0 and t(best) == pytest.approx(h15.NOISY_KNOBS_15_OPTIMUM) == pytest.approx(0.9635, abs=1e-4)
    assert t({"fast_math": "-DFAST_MATH"}) > 1.0 > t({"fast_math": "-DFAST_MATH", "vec": 8})  # needs a wide vector
    without_prefetch = {k: v for k, v in best.items() if k != "prefetch"}
    assert t(best | {"sched": "guided"}) > t(without_prefetch | {"sched": "guided"})  # prefetch costs with "guided"
    assert t(best | {"asserts": "-DDEVICE_ASSERTS"}) > t(best)
    assert h15.NOISY_KNOBS_15.noise == 0.023


def test_the_acf_like_spaces_pair_flags_with_choices_values_and_fail_where_described() -> None:
    a45, b45 = h15.ACF_45.objective, h15.ACF45_BEST
    assert a45({"g3": "--acf15a-3"}) > 1.0 > a45({"g3": "--acf15a-3", "s4": "r"})  # g3 needs s4 = "r"
    assert a45({"g16": "--acf15a-16"}) > 1.0 > a45({"g16": "--acf15a-16", "s1": "p"})  # g16 needs s1 = "p"
    assert a45({"g7": "--acf15a-7"}) > 1.0 > a45({"g7": "--acf15a-7", "g21": "--acf15a-21"})  # a pair
    assert a45({"g11": "--acf15a-11"}) == 1.0 > a45({"g11": "--acf15a-11", "g25": "--acf15a-25"})  # another
    assert a45(b45 | {"s6": "q"}) == INVALID_SCORE and a45(b45 | {"g0": "--acf15a-0"}) == INVALID_SCORE
    a59, b59 = h15.ACF_59.objective, h15.ACF59_BEST
    assert a59({"f14": "--acf15b-14"}) > 1.0 > a59({"f14": "--acf15b-14", "m1": 8})  # f14 needs m1 = 8
    assert a59({"f25": "--acf15b-25", "k5": "full"}) > 1.0 > a59({"f25": "--acf15b-25"})  # unless k5 = "full"
    without_f2 = {k: v for k, v in b59.items() if k != "f2"}
    assert a59(without_f2 | {"y4": 5}) < a59(without_f2) and a59(without_f2 | {"y4": 5}) < a59(b59 | {"y4": 5})
    assert a59(b59 | {"k0": "full"}) == INVALID_SCORE and a59(b59 | {"f19": "--acf15b-19"}) == INVALID_SCORE
    assert a59(b59 | {"y0": 17, "y7": 18}) == INVALID_SCORE  # two ranges summing too high
