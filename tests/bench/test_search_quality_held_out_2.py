"""bench/search_quality/held_out_2.py: each problem is what its description says (depths, optima, failures)."""

from __future__ import annotations

import landscapes
import pytest

from bench.search_quality import held_out_2 as h2
from bench.search_quality.problems import _stable_fraction
from ciq_build import INVALID_SCORE


def test_the_decoys_are_3_6_and_9_percent_deep_and_their_basins_on_target() -> None:
    for problem, optimum, decoy, depth, basin in ((h2.DECOY_3, h2.DECOY_3_OPT, h2.DECOY_3_POINT, 0.03, 3),
                                                  (h2.DECOY_6, h2.DECOY_6_OPT, h2.DECOY_6_POINT, 0.06, 3),
                                                  (h2.DECOY_9, h2.DECOY_9_OPT, h2.DECOY_9_POINT, 0.09, 4)):
        point = {f"r{i}": v for i, v in enumerate(decoy)} | {"kind": "a"}
        assert problem.objective(point) == pytest.approx(100 * (1 - depth)) and problem.objective(point) > 90
        # the basin's farthest reach along r1 is on target, one step beyond is not
        edge = {f"r{i}": v for i, v in enumerate(optimum)} | {"kind": "a"}
        side = 18 if problem is h2.DECOY_6 else 20 if problem is h2.DECOY_3 else 25
        step = basin if optimum[1] + basin < side else -basin
        assert problem.objective(edge | {"r1": optimum[1] + step}) <= problem.target
        assert problem.objective(edge | {"r1": optimum[1] + step + (1 if step > 0 else -1)}) >= 100.0
    rippled = [h2.DECOY_9.objective({f"r{i}": v for i, v in enumerate([12] * 6)} | {"kind": k}) for k in "abc"]
    assert len(set(rippled)) == 3 and all(100.0 <= v <= 100.05 for v in rippled)  # no two plateau draws tie


def test_ridge3_optimum_is_off_single_changes_with_no_failure_next_to_it() -> None:
    ranked = landscapes.ranked(h2.RIDGE_3)
    best_value, best = ranked[0]
    assert best_value <= h2.RIDGE_3.target < ranked[1][0]
    assert (best["tile_x"], best["tile_y"], best["tile_z"]) == (16.0, 8.0, 4.0)
    for name, param in h2.RIDGE_3.space.items():
        for value in list(param.values()) + ([None] if param.can_knockout else []):
            if value != best.get(name):
                changed = {k: v for k, v in best.items() if k != name} | ({} if value is None else {name: value})
                assert h2.RIDGE_3.target < h2.RIDGE_3.objective(changed) != INVALID_SCORE
    # along the ridge: x up and z down keeps the work; only the shape costs
    assert h2.RIDGE_3.objective(best | {"tile_x": 32.0, "tile_z": 2.0}) == pytest.approx(best_value * 1.012)


def test_noisy2_optimum_interaction_and_noise() -> None:
    ranked = landscapes.ranked(h2.NOISY_KNOBS_2)
    assert h2.NOISY_KNOBS_2.objective({}) == 1.0 and 1 - ranked[0][0] == pytest.approx(0.0452, abs=1e-4)
    assert h2.NOISY_KNOBS_2.target == pytest.approx(ranked[0][0] * 1.005) and h2.NOISY_KNOBS_2.noise == 0.012
    assert h2.NOISY_KNOBS_2.objective({"unroll": 4, "maxrreg": 100}) > 1.0 > h2.NOISY_KNOBS_2.objective({"unroll": 4})


def test_acf58_has_58_parameters_and_its_optimum_on_target() -> None:
    assert len(h2.ACF_58.space) == 58 and _stable_fraction(h2.ACF58_BEST) >= 0.04
    assert h2.ACF_58.objective(h2.ACF58_BEST) == pytest.approx(h2.ACF58_OPTIMUM)
    assert h2.ACF_58.objective(h2.ACF58_BEST) <= h2.ACF_58.target
    assert h2.ACF_58.objective(h2.ACF58_BEST | {"h2": "--opt-2", "h27": "--opt-27"}) == INVALID_SCORE
    alone = {k: v for k, v in h2.ACF58_BEST.items() if k != "h30"}  # the deceptive pair
    neither = {k: v for k, v in alone.items() if k != "h9"}
    assert h2.ACF_58.objective(alone) > h2.ACF_58.objective(neither) > h2.ACF_58.objective(h2.ACF58_BEST)


def test_the_needle_sits_on_a_wall_of_failures() -> None:
    best = {f"r{i}": v for i, v in enumerate(h2.NEEDLE_OPT)} | {"algo": "c", "vec": 1, "flag": "-fast"}
    assert h2.NEEDLE.objective(best) == pytest.approx(0.8)
    assert h2.NEEDLE.objective(best | {"r0": 25}) == INVALID_SCORE  # one step up either of r0, r1 fails
    assert h2.NEEDLE.objective(best | {"r1": 21}) == INVALID_SCORE
    assert h2.NEEDLE.objective(best | {"r2": 11}) in (1.0, INVALID_SCORE)  # outside the needle: the plateau


def test_algo_most_of_the_gain_is_one_choice_whose_ranges_deceive() -> None:
    ranges = {f"r{i}": 3 for i in range(5)}
    best = {"algo": "tensor", "fa": "-fa", "fb": "-fb"} | ranges
    assert h2.ALGO.objective(best) <= h2.ALGO.target < h2.ALGO.objective(best | {"r0": 8})
    tuned = {f"r{i}": 12 for i in range(5)}
    smem = h2.ALGO.objective({"algo": "smem", "fa": "-fa", "fb": "-fb", "fc": "-fc"} | tuned)
    # the first tensor candidate a search tuned under smem makes scores worse than smem's best
    assert h2.ALGO.objective({"algo": "tensor", "fa": "-fa", "fb": "-fb", "fc": "-fc"} | tuned) > smem
