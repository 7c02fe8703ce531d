"""bench/search_quality/held_out_12.py: each problem is what its description says (optima on target and needing
each of their parameters, the ridges' moves, failures away from the best, the decoys' depths and the moat)."""

from __future__ import annotations

import pytest

from bench.search_quality import held_out_12 as h12
from bench.search_quality.stats import mean_interval
from ciq_build import INVALID_SCORE
from support import assert_optimum_needs_each_parameter


def test_each_optimum_is_on_target_and_needs_each_of_its_parameters() -> None:
    for problem, best, optimum in ((h12.PRIDGE_12H, h12.PRIDGE_12H_BEST, h12.PRIDGE_12H_OPTIMUM),
                                   (h12.PRIDGE_12Q, h12.PRIDGE_12Q_BEST, h12.PRIDGE_12Q_OPTIMUM),
                                   (h12.ACF_43, h12.ACF43_BEST, h12.ACF43_OPTIMUM),
                                   (h12.ACF_55, h12.ACF55_BEST, h12.ACF55_OPTIMUM)):
        assert problem.target == pytest.approx(optimum * 1.01)
        assert_optimum_needs_each_parameter(problem, best, optimum)


def test_pridge12h_a_step_off_the_best_loses_and_moving_along_the_hyperbola_keeps_the_work() -> None:
    p12, best = h12.PRIDGE_12H.objective, h12.PRIDGE_12H_BEST
    for name in ("rows", "cols"):  # a single step changes the product: at least 1.5%, and never fails
        for step in (-1, 1):
            score = p12(best | {name: int(str(best[name])) + step})
            assert score != INVALID_SCORE and score > 0.988 * 1.015
    assert p12(best | {"rows": 16, "cols": 6}) == pytest.approx(0.988 * (1 + 0.015 * 0.830), abs=1e-4)
    assert p12(best | {"rows": 20, "cols": 15}) == INVALID_SCORE  # a product of 300: far from the best


def test_pridge12q_nothing_fails_and_a_single_step_costs_the_product() -> None:
    p12, best = h12.PRIDGE_12Q.objective, h12.PRIDGE_12Q_BEST
    assert p12(best | {"lanes": 16}) == pytest.approx(0.989 * 1.04 * 1.009)
    assert p12(best | {"lanes": 16, "batch": 4}) == pytest.approx(0.989 * 1.018)  # on the ridge: shape only
    assert p12(best | {"lanes": 64, "rows": 128, "stages": 16, "batch": 32}) != INVALID_SCORE


def test_the_decoys_are_as_deep_as_named_the_basins_below_the_target_and_the_moat_above_the_plateau() -> None:
    groove = {f"x{i}": v for i, v in enumerate(h12.DECOY_4G_POINT)} | {"layout": "linear"}
    assert h12.DECOY_4G.objective(groove) == pytest.approx(96.0)
    basin = {f"x{i}": v for i, v in enumerate(h12.DECOY_4G_OPT)} | {"layout": "tiled", "prefetch": "-DPREFETCH"}
    assert h12.DECOY_4G.objective(basin) == 0.0 < h12.DECOY_4G.target
    far = {f"x{i}": 23 - v if v < 12 else 0 for i, v in enumerate(h12.DECOY_4G_POINT)} | {"layout": "linear"}
    nearer = far | {"x1": int(far["x1"]) + 5}  # the groove: the plateau falls toward the decoy's x1
    assert 100 < h12.DECOY_4G.objective(nearer) < h12.DECOY_4G.objective(far) <= 100.5

    decoy = {f"t{i}": v for i, v in enumerate(h12.DECOY_9M_POINT)} | {"order": "ijk"}
    assert h12.DECOY_9M.objective(decoy) == pytest.approx(91.0)
    basin = {f"t{i}": v for i, v in enumerate(h12.DECOY_9M_OPT)} | {"order": "kij", "unroll_all": "-DUNROLL_ALL"}
    assert h12.DECOY_9M.objective(basin) == 0.0 < h12.DECOY_9M.target
    assert h12.DECOY_9M.objective(basin | {"t0": int(basin["t0"]) + 3}) == 100.8  # the moat
    assert h12.DECOY_9M.objective(basin | {"t0": int(basin["t0"]) + 4}) == 100.0  # the plateau beyond it


def test_noisy12_optimum_is_3_4_percent_better_than_the_defaults_with_two_interactions() -> None:
    t = h12.noisy_knobs_12_time
    best = {"block_x": 256, "ilp": 3, "carve": "max", "ldg": "-DUSE_LDG", "no_bounds": "-DNO_BOUNDS_CHECK"}
    assert t({}) == 1.0 and t(best) == pytest.approx(h12.NOISY_KNOBS_12_OPTIMUM) == pytest.approx(0.9664, abs=1e-4)
    assert t(best | {"carve": "min"}) > t(best | {"carve": "min", "ilp": 2})  # the interactions
    assert t(best | {"ilp": 4}) > t(best | {"ilp": 4, "block_x": 128})  # 256 alone is 0.6% faster than 128
    assert h12.NOISY_KNOBS_12.noise == 0.018



def test_the_mean_interval_is_the_mean_plus_and_minus_two_standard_errors() -> None:
    low, high = mean_interval([1.0, 3.0] * 50)  # mean 2, standard deviation 1.005, 100 values
    assert low == pytest.approx(2 - 1.96 * 1.00504 / 10, abs=1e-4) and high == pytest.approx(2 + 0.19699, abs=1e-4)
