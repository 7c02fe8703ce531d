"""bench/search_quality/held_out_17.py: each problem is what its description says (optima on target and needing each
of their parameters, the decoys' depths, the saw and the tilt, the slab, the ridge with nothing failing near its
best, the noisy knobs' interactions and size, the ACF-like spaces' flags needing choices' and ranges' values, their
pairs, triple and failures)."""

from __future__ import annotations

import pytest

from bench.search_quality import held_out_17 as h17
from ciq_build import INVALID_SCORE
from ciq_build.core.space import as_space
from support import assert_optimum_needs_each_parameter


def test_each_optimum_is_on_target_and_needs_each_of_its_parameters() -> None:
    for problem, best, optimum, within in ((h17.PRIDGE_17V, h17.PRIDGE_17V_BEST, h17.PRIDGE_17V_OPTIMUM, 1.005),
                                           (h17.ACF_53, h17.ACF53_BEST, h17.ACF53_OPTIMUM, 1.01),
                                           (h17.ACF_64, h17.ACF64_BEST, h17.ACF64_OPTIMUM, 1.01)):
        assert problem.target == pytest.approx(optimum * within)
        assert_optimum_needs_each_parameter(problem, best, optimum)


def test_decoy5z_is_5_percent_deep_on_a_saw_toothed_plateau_and_its_basin_needs_the_packed_layout() -> None:
    d5 = h17.DECOY_5Z.objective

    def at(point: list[int], layout: str = "tiled") -> dict[str, object]:
        return {f"z{i}": v for i, v in enumerate(point)} | {"layout": layout}

    assert d5(at(h17.DECOY_5Z_POINT)) == pytest.approx(95.0)
    assert d5(at(h17.DECOY_5Z_OPT, "packed")) == 0.0 < d5(at(h17.DECOY_5Z_OPT)) == 5.0 < h17.DECOY_5Z.target
    assert d5(at([0, 0, 0, 0])) == 100.0 and d5(at([0, 3, 2, 0])) == pytest.approx(100.5)
    assert d5(at([0, 4, 2, 0])) == pytest.approx(100.2)  # the saw drops back at each fourth value


def test_decoy9l_is_9_percent_deep_its_basin_a_thin_slab_on_a_plateau_tilted_away_from_it() -> None:
    d9 = h17.DECOY_9L.objective
    slab = {f"l{i}": v for i, v in enumerate(h17.DECOY_9L_OPT)}
    assert d9(slab | {"vec_epilogue": "-DVEC_EPILOGUE"}) == 0.0 and d9(slab) == 4.0
    assert d9(slab | {"l4": 11}) == 7.0 and d9(slab | {"l0": 13}) > 99  # 3 off on l4 is in it, 2 off on l0 is not
    assert d9({f"l{i}": v for i, v in enumerate(h17.DECOY_9L_POINT)}) == pytest.approx(91.0)
    assert d9({"l0": 15, "l1": 0, "l2": 15, "l3": 0, "l4": 15}) == pytest.approx(100.8)  # high towards the basin's l0
    assert d9({"l0": 8, "l1": 0, "l2": 15, "l3": 0, "l4": 15}) < 100.8


def test_pridge17v_keeps_its_work_along_the_product_and_nothing_fails_near_the_best() -> None:
    p17, best = h17.PRIDGE_17V.objective, h17.PRIDGE_17V_BEST
    assert p17(best | {"unroll": 8}) == pytest.approx(0.993 * 1.08 * 1.008)  # off the product by a doubling
    assert p17(best | {"warps": 6, "vec": 8}) == pytest.approx(0.993 * (1 + 0.012 * 2))  # on it: the shape only
    near = [best | {"warps": w, "vec": v, "unroll": u} for w in range(6, 19) for v in (2, 4, 8) for u in range(1, 9)]
    assert INVALID_SCORE not in [p17(p) for p in near]
    assert p17({"warps": 24, "vec": 8, "unroll": 9, "cache": "cg"}) == INVALID_SCORE  # only far off the ridge


def test_noisy17_optimum_needs_the_swizzle_with_the_widest_tile_and_has_more_configurations_than_the_budget() -> None:
    t = h17.noisy_knobs_17_time
    best = {"tile": 128, "swizzle": "-DSWIZZLE", "block": 256, "pad_smem": "-DPAD_SMEM", "sched": "greedy",
            "ldg": "-DREAD_ONLY_LDG"}
    assert t({}) == 1.0 and t(best) == pytest.approx(h17.NOISY_KNOBS_17_OPTIMUM) == pytest.approx(0.9683, abs=1e-4)
    assert t({"swizzle": "-DSWIZZLE", "tile": 64}) > t({"tile": 64}) > t(best | {"tile": 64})  # swizzle needs 128
    assert t({"pad_smem": "-DPAD_SMEM"}) > 1.0 > t({"pad_smem": "-DPAD_SMEM", "block": 512})  # padding needs >= 256
    assert t(best | {"bounds_check": "-DBOUNDS_CHECK"}) > h17.NOISY_KNOBS_17.target
    assert h17.NOISY_KNOBS_17.noise == 0.017
    assert as_space(h17.NOISY_KNOBS_17.space).cardinality == 1600  # more than the budget of 640


def test_the_acf_like_spaces_pair_flags_with_choices_and_ranges_and_fail_where_described() -> None:
    a53, b53 = h17.ACF_53.objective, h17.ACF53_BEST
    assert a53({"e4": "--acf17a-4"}) > 1.0 > a53({"e4": "--acf17a-4", "c9": "lo"})  # e4 needs c9 = "lo"
    assert a53({"e19": "--acf17a-19", "r2": 9}) > 1.0 > a53({"e19": "--acf17a-19", "r2": 10})  # r2 high
    assert a53({"e8": "--acf17a-8"}) > 1.0 > a53({"e8": "--acf17a-8", "e30": "--acf17a-30"})  # a pair
    two = {"e2": "--acf17a-2", "e13": "--acf17a-13"}
    assert a53(two) == 1.0 > a53(two | {"e25": "--acf17a-25"})  # a triple that helps only whole
    assert a53(b53 | {"c0": "hi"}) == INVALID_SCORE and a53(b53 | {"e16": "--acf17a-16"}) == INVALID_SCORE
    a64, b64 = h17.ACF_64.objective, h17.ACF64_BEST
    assert a64({"h11": "--acf17b-11"}) > 1.0 > a64({"h11": "--acf17b-11", "n3": 8})  # h11 needs n3 = 8
    assert a64({"h5": "--acf17b-5"}) > 1.0 > a64({"h5": "--acf17b-5", "h20": "--acf17b-20"})  # pairs sharing h20
    assert a64({"h37": "--acf17b-37"}) > 1.0 > a64({"h37": "--acf17b-37", "h20": "--acf17b-20"})
    without_h29 = {k: v for k, v in b64.items() if k != "h29"}
    assert a64(without_h29 | {"v6": 6}) < a64(without_h29) and a64(without_h29 | {"v6": 6}) < a64(b64 | {"v6": 6})
    assert a64(b64 | {"v2": 16}) == INVALID_SCORE and a64(b64 | {"h1": "--acf17b-1"}) == INVALID_SCORE
    assert a64(b64 | {"v0": 20, "v8": 21}) == INVALID_SCORE  # two ranges summing too high
