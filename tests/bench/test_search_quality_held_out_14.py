"""bench/search_quality/held_out_14.py: each problem is what its description says (optima on target and needing each
of their parameters, the decoys' depths, the failing rim, the ridge with nothing failing, the noisy knobs'
interactions, the ACF-like spaces' pairs of a flag and a choice's value and their failures)."""

from __future__ import annotations

import pytest

from bench.search_quality import held_out_14 as h14
from ciq_build import INVALID_SCORE
from support import assert_optimum_needs_each_parameter


def test_each_optimum_is_on_target_and_needs_each_of_its_parameters() -> None:
    for problem, best, optimum, within in ((h14.PRIDGE_14T, h14.PRIDGE_14T_BEST, h14.PRIDGE_14T_OPTIMUM, 1.005),
                                           (h14.ACF_49, h14.ACF49_BEST, h14.ACF49_OPTIMUM, 1.01),
                                           (h14.ACF_56, h14.ACF56_BEST, h14.ACF56_OPTIMUM, 1.01)):
        assert problem.target == pytest.approx(optimum * within)
        assert_optimum_needs_each_parameter(problem, best, optimum)


def test_decoy5d_has_two_decoys_3_and_5_percent_deep_and_a_basin_below_the_target() -> None:
    d5 = h14.DECOY_5D.objective

    def at(point: list[int], order: str = "row") -> dict[str, object]:
        return {f"d{i}": v for i, v in enumerate(point)} | {"order": order}

    assert d5(at(h14.DECOY_5D_SHALLOW)) == pytest.approx(97.0)
    assert d5(at(h14.DECOY_5D_DEEP)) == pytest.approx(95.0)
    assert d5(at(h14.DECOY_5D_OPT, "tile")) == 0.0 < h14.DECOY_5D.target
    plateau = [d5(at([7, 7, 7, 7, 7, v])) for v in range(6, 9)]
    assert all(100 <= level <= 100.2 for level in plateau) and len(set(plateau)) > 1  # rippled


def test_decoy8r_is_8_percent_deep_its_basin_ringed_by_failures_and_the_flag_helps_only_on_the_plateau() -> None:
    d8 = h14.DECOY_8R.objective
    basin = {f"r{i}": v for i, v in enumerate(h14.DECOY_8R_OPT)}
    assert d8(basin) == 0.0 and d8(basin | {"vec": "-DVECTORIZE_LOADS"}) == 2.0
    assert d8(basin | {"r0": h14.DECOY_8R_OPT[0] + 3}) == INVALID_SCORE  # the rim
    assert d8({f"r{i}": v for i, v in enumerate(h14.DECOY_8R_POINT)}) == pytest.approx(92.0)
    plateau = {"r0": 0, "r1": 0, "r2": 0, "r3": 0, "r4": 0}
    assert d8(plateau | {"vec": "-DVECTORIZE_LOADS"}) == 100.0 < d8(plateau) == pytest.approx(100.3)


def test_pridge14t_keeps_its_work_along_the_product_and_nothing_fails() -> None:
    p14, best = h14.PRIDGE_14T.objective, h14.PRIDGE_14T_BEST
    assert p14(best | {"blocks": 4}) == pytest.approx(0.99 * 1.1)  # off the product by a doubling: 10%
    assert p14(best | {"threads": 512, "blocks": 4}) == pytest.approx(0.99 * 1.012)  # on it: the shape only
    assert all(p14({"threads": t, "blocks": b, "regs": 128}) != INVALID_SCORE for t in (32, 1024) for b in (1, 16))


def test_noisy14_optimum_is_3_4_percent_better_and_its_flags_depend_on_the_tile_and_the_layout() -> None:
    t = h14.noisy_knobs_14_time
    best = {"tile": 64, "layout": "nt", "split_k": "-DSPLIT_K", "ldmatrix": "-DUSE_LDMATRIX"}
    assert t({}) == 1.0 and t(best) == pytest.approx(h14.NOISY_KNOBS_14_OPTIMUM) == pytest.approx(0.9665, abs=1e-4)
    assert t({"split_k": "-DSPLIT_K"}) > 1.0 > t({"split_k": "-DSPLIT_K", "tile": 128})  # split-K needs a large tile
    without_ldmatrix = {k: v for k, v in best.items() if k != "ldmatrix"}
    assert t(best | {"layout": "tn"}) > t(without_ldmatrix | {"layout": "tn"})  # ldmatrix costs with "tn"
    assert h14.NOISY_KNOBS_14.noise == 0.02


def test_the_acf_like_spaces_pair_flags_with_choices_values_and_fail_where_described() -> None:
    a49, b49 = h14.ACF_49.objective, h14.ACF49_BEST
    assert a49({"b5": "--acf14a-5"}) > 1.0 > a49({"b5": "--acf14a-5", "e3": "z"})  # b5 needs e3 = "z"
    assert a49({"b17": "--acf14a-17"}) > 1.0 > a49({"b17": "--acf14a-17", "e7": "x"})  # b17 needs e7 = "x"
    assert a49(b49 | {"e9": "x"}) == INVALID_SCORE and a49(b49 | {"b13": "--acf14a-13"}) == INVALID_SCORE
    a56, b56 = h14.ACF_56.objective, h14.ACF56_BEST
    assert a56({"c11": "--acf14b-11"}) > 1.0 > a56({"c11": "--acf14b-11", "n2": 4})  # c11 needs n2 = 4
    assert a56({"c20": "--acf14b-20", "d4": "max"}) > 1.0 > a56({"c20": "--acf14b-20"})  # unless d4 = "max"
    assert a56(b56 | {"z5": 11}) > h14.ACF_56.target  # c3 needs d6 = "lo" and z5 at 12 or more together
    assert a56(b56 | {"z1": 12, "z2": 4}) == pytest.approx(h14.ACF56_OPTIMUM)  # the product ridge: any split of 48
    assert a56(b56 | {"d0": "max"}) == INVALID_SCORE and a56(b56 | {"c15": "--acf14b-15"}) == INVALID_SCORE
    assert a56(b56 | {"z1": 15, "z2": 14}) == INVALID_SCORE  # the product too large
