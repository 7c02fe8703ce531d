"""bench/search_quality/held_out_13.py: each problem is what its description says (optima on target and needing
each of their parameters, the decoys' depths and the plateaus' tilts, the ridge's moves, the noisy knobs'
interaction, the ACF-like spaces' failures)."""

from __future__ import annotations

import pytest

from bench.search_quality import held_out_13 as h13
from ciq_build import INVALID_SCORE
from support import assert_optimum_needs_each_parameter


def test_each_optimum_is_on_target_and_needs_each_of_its_parameters() -> None:
    for problem, best, optimum, within in ((h13.PRIDGE_13W, h13.PRIDGE_13W_BEST, h13.PRIDGE_13W_OPTIMUM, 1.005),
                                           (h13.ACF_47, h13.ACF47_BEST, h13.ACF47_OPTIMUM, 1.01),
                                           (h13.ACF_58, h13.ACF58_BEST, h13.ACF58_OPTIMUM, 1.01)):
        assert problem.target == pytest.approx(optimum * within)
        assert_optimum_needs_each_parameter(problem, best, optimum)


def test_the_decoys_are_as_deep_as_named_and_the_basins_below_the_target() -> None:
    for problem, names, opt, point, depth, best in (
            (h13.DECOY_2U, "u", h13.DECOY_2U_OPT, h13.DECOY_2U_POINT, 98.0, {"swap": "rows"}),
            (h13.DECOY_6X, "k", h13.DECOY_6X_OPT, h13.DECOY_6X_POINT, 94.0, {"fuse": "-DFUSE_EPILOGUE"}),
            (h13.DECOY_10C, "c", h13.DECOY_10C_OPT, h13.DECOY_10C_POINT, 90.0, {"pipe": 3})):
        at = {f"{names}{i}": v for i, v in enumerate(point)}
        other = {k: v for k, v in (("swap", "none"), ("pipe", 1)) if k in problem.space}
        assert problem.objective(at | other) == pytest.approx(depth), problem.short
        basin = {f"{names}{i}": v for i, v in enumerate(opt)} | best
        assert problem.objective(basin) == 0.0 < problem.target
        step_out = basin | {f"{names}0": opt[0] + (3 if opt[0] + 3 < 14 else -3)}
        assert problem.objective(step_out) > problem.target  # the basin is within 2 of the optimum


def test_the_plateaus_lead_where_their_descriptions_say() -> None:
    # decoy2u: farther from the decoy is higher (the plateau leads toward the decoy, away from the basin).
    far = {"u0": 12, "u1": 3, "u2": 12, "u3": 13, "u4": 2, "u5": 14, "swap": "rows"}
    nearer_basin = far | {"u0": 8}  # u0 toward the basin's 11 would be nearer the decoy's 1: lower
    assert 100 < h13.DECOY_2U.objective(nearer_basin) < h13.DECOY_2U.objective(far) <= 100.6
    # decoy6x: the plateau falls toward the decoy along k0 and toward the basin along k2.
    plateau = {"k0": 17, "k1": 3, "k2": 10, "k3": 10, "k4": 9, "k5": 7}
    toward_decoy, toward_basin = plateau | {"k0": 12}, plateau | {"k2": 6}
    assert h13.DECOY_6X.objective(toward_decoy) < h13.DECOY_6X.objective(plateau)
    assert h13.DECOY_6X.objective(toward_basin) < h13.DECOY_6X.objective(plateau)
    assert h13.DECOY_6X.objective(plateau | {"k4": 0}) == h13.DECOY_6X.objective(plateau)  # k4 flat
    # decoy10c: four terraces, so a step on the slope often changes nothing.
    diagonal = [{f"c{i}": v - d for i, v in enumerate(h13.DECOY_10C_POINT)} | {"pipe": 1} for d in range(7)]
    levels = [h13.DECOY_10C.objective(p) for p in diagonal]
    assert levels == sorted(levels) and set(levels) == {90.0, 92.5, 95.0, 97.5, 100.0}


def test_pridge13w_a_step_off_the_product_loses_moving_along_it_keeps_the_work_and_far_ones_fail() -> None:
    p13, best = h13.PRIDGE_13W.objective, h13.PRIDGE_13W_BEST
    assert p13(best | {"unroll": 5}) > h13.PRIDGE_13W.target * 1.02  # off the product: 12% a doubling
    on_ridge = p13(best | {"warps": 12, "unroll": 2})  # 96 still: the shape only, 1.5% a doubling of warps
    assert on_ridge == pytest.approx(0.989 * 1.015)
    assert p13(best | {"warps": 16, "vec": 16, "unroll": 2}) == INVALID_SCORE


def test_noisy13_optimum_is_3_7_percent_better_and_prefetch_moves_the_best_stages() -> None:
    t = h13.noisy_knobs_13_time
    best = {"threads": 256, "stages": 3, "swizzle": "xor", "fast_div": "-DFAST_DIVMOD"}
    assert t({}) == 1.0 and t(best) == pytest.approx(h13.NOISY_KNOBS_13_OPTIMUM) == pytest.approx(0.9673, abs=1e-4)
    with_prefetch = best | {"prefetch": "-DPREFETCH_NEXT"}
    assert t(with_prefetch | {"stages": 2}) < t(with_prefetch)  # with prefetch, 2 stages beat 3
    assert t({"prefetch": "-DPREFETCH_NEXT"}) < 1.0  # prefetch alone helps: a trap for a greedy search
    assert h13.NOISY_KNOBS_13.noise == 0.016


def test_the_acf_like_spaces_fail_where_described_and_their_groups_help_only_whole() -> None:
    a47, b47 = h13.ACF_47.objective, h13.ACF47_BEST
    assert a47(b47 | {"f19": "--acf13a-19"}) == INVALID_SCORE  # f11 with f19
    part = {k: v for k, v in b47.items() if k != "f26"}
    assert a47(part) > a47({k: v for k, v in part.items() if k not in ("f4", "f15")})  # a part of the triple costs
    a58, b58 = h13.ACF_58.objective, h13.ACF58_BEST
    assert a58(b58 | {"a30": "--acf13b-30"}) == INVALID_SCORE  # a2, a9, a30
    assert a58(b58 | {"h0": "narrow"}) == INVALID_SCORE  # a17 with h0 narrow
    assert a58(b58 | {"s1": 20, "s6": 4}) == pytest.approx(h13.ACF58_OPTIMUM)  # the sum ridge: any split of 24
    assert a58({"a25": "--acf13b-25", "s3": 13}) > 1.0 > a58({"a25": "--acf13b-25", "s3": 14})
