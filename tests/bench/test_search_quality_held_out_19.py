"""bench/search_quality/held_out_19.py: each problem is what its description says (optima on target and needing each
of their parameters, the decoys' depths, the wave and the stairs, the thin basin, the ridge with nothing failing near
its best, the noisy knobs' interactions and size, the ACF-like spaces' flags needing choices' and ranges' values, their
pair, triple, overlap and failures)."""

from __future__ import annotations

import pytest

from bench.search_quality import held_out_19 as h19
from ciq_build import INVALID_SCORE
from ciq_build.core.space import as_space
from support import assert_optimum_needs_each_parameter


def test_each_optimum_is_on_target_and_needs_each_of_its_parameters() -> None:
    for problem, best, optimum, within in ((h19.PRIDGE_19W, h19.PRIDGE_19W_BEST, h19.PRIDGE_19W_OPTIMUM, 1.005),
                                           (h19.ACF_48, h19.ACF48_BEST, h19.ACF48_OPTIMUM, 1.01),
                                           (h19.ACF_59, h19.ACF59_BEST, h19.ACF59_OPTIMUM, 1.01)):
        assert problem.target == pytest.approx(optimum * within)
        assert_optimum_needs_each_parameter(problem, best, optimum)


def test_decoy4w_is_4_percent_deep_on_a_noisy_wavy_plateau_and_its_basin_needs_the_tile_order() -> None:
    d4 = h19.DECOY_4W.objective

    def at(point: list[int], order: str = "row") -> dict[str, object]:
        return {f"w{i}": v for i, v in enumerate(point)} | {"order": order}

    assert d4(at(h19.DECOY_4W_POINT)) == pytest.approx(96.0)
    assert d4(at(h19.DECOY_4W_OPT, "tile")) == 0.0 < d4(at(h19.DECOY_4W_OPT)) == 4.0 < h19.DECOY_4W.target
    plateau = [d4(at([0, 0, w2, 17, 0])) for w2 in range(18)]
    assert 100.0 <= min(plateau) < 100.02 and 100.18 < max(plateau) <= 100.2  # the wave along w2
    assert h19.DECOY_4W.noise == 0.005


def test_decoy8s_is_8_percent_deep_on_stairs_and_its_basin_is_thin_along_s0() -> None:
    d8 = h19.DECOY_8S.objective
    basin = {f"s{i}": v for i, v in enumerate(h19.DECOY_8S_OPT)}
    assert d8(basin | {"fast_epi": "-DFAST_EPILOGUE"}) == 0.0 and d8(basin) == 3.0
    assert d8(basin | {"s5": 12}) == 5.0 and d8(basin | {"s0": 4}) > 99  # 2 off on s5 is in it, 2 off on s0 is not
    assert d8({f"s{i}": v for i, v in enumerate(h19.DECOY_8S_POINT)}) == pytest.approx(92.0)
    stairs = {"s0": 13, "s1": 13, "s2": 0, "s3": 0, "s4": 13, "s5": 13}
    assert d8(stairs) == pytest.approx(100.9) and d8(stairs | {"s1": 0, "s4": 0}) == pytest.approx(100.0)


def test_pridge19w_keeps_its_work_along_the_product_and_nothing_fails_near_the_best() -> None:
    p19, best = h19.PRIDGE_19W.objective, h19.PRIDGE_19W_BEST
    assert p19(best | {"depth": 6}) == pytest.approx(0.994 * 1.06 * 1.007)  # off the product by a doubling
    assert p19(best | {"ctas": 4, "warps": 4}) == pytest.approx(0.994 * 1.02)  # on it: the shape only (a ratio 4x off)
    assert p19(best | {"ctas": 4, "warps": 4}) > h19.PRIDGE_19W.target  # no single change from there reaches it
    near = [best | {"ctas": c, "warps": w, "depth": d} for c in range(1, 5) for w in (2, 4, 8, 16) for d in range(1, 7)]
    assert INVALID_SCORE not in [p19(p) for p in near]
    assert p19({"ctas": 16, "warps": 16, "depth": 4, "layout": "tn"}) == INVALID_SCORE  # only far off the ridge
    assert as_space(h19.PRIDGE_19W.space).cardinality == 5760


def test_noisy19_optimum_needs_prefetch_with_a_wide_tile_and_has_more_configurations_than_the_budget() -> None:
    t = h19.noisy_knobs_19_time
    best = {"tile": 128, "prefetch": "-DPREFETCH", "threads": 256, "vec4": "-DVEC4", "unroll": 4,
            "fastmath": "--use_fast_math"}
    assert t({}) == 1.0 and t(best) == pytest.approx(h19.NOISY_KNOBS_19_OPTIMUM) == pytest.approx(0.9500, abs=1e-3)
    assert t({"prefetch": "-DPREFETCH", "tile": 64}) > t({"tile": 64}) > t(best | {"tile": 64})  # needs >= 128
    assert t({"vec4": "-DVEC4", "threads": 512}) > t({"threads": 512})  # vec4 needs 256 threads
    assert t(best | {"nocache": "-DBYPASS_L1"}) > h19.NOISY_KNOBS_19.target
    assert h19.NOISY_KNOBS_19.noise == 0.014
    assert as_space(h19.NOISY_KNOBS_19.space).cardinality == 3200  # more than the budget of 640


def test_the_acf_like_spaces_pair_flags_with_choices_and_ranges_and_fail_where_described() -> None:
    a48, b48 = h19.ACF_48.objective, h19.ACF48_BEST
    assert a48({"g3": "--acf19a-3"}) > 1.0 > a48({"g3": "--acf19a-3", "k2": "b"})  # g3 needs k2 = "b"
    assert a48({"g7": "--acf19a-7"}) > 1.0 > a48({"g7": "--acf19a-7", "g21": "--acf19a-21"})  # a pair
    two = {"g11": "--acf19a-11", "g16": "--acf19a-16"}
    assert a48(two) == 1.0 > a48(two | {"g27": "--acf19a-27"})  # a triple that helps only whole
    assert a48({"r4": 12}) < a48({"r4": 6}) < 1.0  # r4 best at 12
    assert a48(b48 | {"k5": "a"}) == INVALID_SCORE and a48(b48 | {"r1": 13}) == INVALID_SCORE
    a59, b59 = h19.ACF_59.objective, h19.ACF59_BEST
    assert a59({"f5": "--acf19b-5"}) > 1.0 > a59({"f5": "--acf19b-5", "n1": 8})  # f5 needs n1 >= 4
    assert a59({"f12": "--acf19b-12", "v3": 14}) > 1.0 > a59({"f12": "--acf19b-12", "v3": 15})  # v3 high
    assert a59({"f20": "--acf19b-20"}) == a59({"f31": "--acf19b-31"}) < 1.0  # either helps alone
    assert a59({"f20": "--acf19b-20", "f31": "--acf19b-31"}) > 1.0  # both cost
    assert a59({"f8": "--acf19b-8"}) > 1.0 > a59({"f8": "--acf19b-8", "f26": "--acf19b-26"})  # a pair
    assert a59(b59 | {"c1": "w"}) == INVALID_SCORE and a59(b59 | {"f2": "--acf19b-2"}) == INVALID_SCORE
    assert a59(b59 | {"v0": 17, "v5": 18}) == INVALID_SCORE  # two ranges summing too high
