"""bench/search_quality/held_out_3.py: each problem is what its description says (depths, optima, failures)."""

from __future__ import annotations

import landscapes
import pytest

from bench.search_quality import held_out_3 as h3
from bench.search_quality.problems import _stable_fraction
from ciq_build import INVALID_SCORE


def test_the_decoys_are_2_6_and_10_percent_deep_on_plateaus_that_are_not_flat() -> None:
    for problem, optimum, decoy, depth, basin in ((h3.DECOY_2W, h3.DECOY_2W_OPT, h3.DECOY_2W_POINT, 0.02, 3),
                                                  (h3.DECOY_6N, h3.DECOY_6N_OPT, h3.DECOY_6N_POINT, 0.06, 2),
                                                  (h3.DECOY_10T, h3.DECOY_10T_OPT, h3.DECOY_10T_POINT, 0.10, 2)):
        point = {f"r{i}": v for i, v in enumerate(decoy)} | {"kind": "a"}
        assert problem.objective(point) == pytest.approx(100 * (1 - depth))
        edge = {f"r{i}": v for i, v in enumerate(optimum)} | {"kind": "a"}  # the basin's reach along r0
        step = basin if optimum[0] + basin <= 12 else -basin
        assert problem.objective(edge | {"r0": optimum[0] + step}) <= problem.target
        assert problem.objective(edge | {"r0": optimum[0] + step + (1 if step > 0 else -1)}) >= 100.0
    # the wave: plateau neighbours differ by more than held_out_2's ripple, within 0.4%
    far = {f"r{i}": 10 for i in range(6)} | {"kind": "a"}
    wave = [h3.DECOY_2W.objective(far | {"r0": r}) for r in range(8, 12)]
    assert len(set(wave)) == 4 and all(100.0 <= v <= 100.4 for v in wave) and max(wave) - min(wave) > 0.05
    # the tilt: 1% from the lowest corner to the highest, the noise on every measurement
    lowest, highest = ({f"r{i}": v for i in range(7)} | {"kind": "a"} for v in (0, 12))
    assert (h3.DECOY_10T.objective(lowest), h3.DECOY_10T.objective(highest)) == (100.0, 101.0)
    assert h3.DECOY_6N.noise == 0.004


def test_regcap_optimum_is_off_single_changes_with_no_failure_next_to_it() -> None:
    ranked = landscapes.ranked(h3.REGCAP)
    best_value, best = ranked[0]
    assert best_value == pytest.approx(h3.REGCAP_OPTIMUM) and best_value <= h3.REGCAP.target < ranked[1][0]
    assert (best["unroll"], best["maxrreg"]) == (10, 104) == (10, h3.regs_needed(10))
    assert all(h3.REGCAP.target < v != INVALID_SCORE for v in landscapes.single_changes(h3.REGCAP, best))
    # a step down the ridge: unroll and cap together gain 2%, either alone loses
    ridge = best | {"unroll": 6, "maxrreg": h3.regs_needed(6)}
    both = h3.REGCAP.objective(ridge | {"unroll": 7, "maxrreg": h3.regs_needed(7)})
    assert both < h3.REGCAP.objective(ridge) < min(h3.REGCAP.objective(ridge | {"unroll": 7}),
                                                   h3.REGCAP.objective(ridge | {"maxrreg": h3.regs_needed(7)}))
    assert h3.REGCAP.objective(best | {"block": 512, "maxrreg": 136}) == INVALID_SCORE


def test_noisy3_optimum_interactions_and_noise() -> None:
    ranked = landscapes.ranked(h3.NOISY_KNOBS_3)
    assert h3.NOISY_KNOBS_3.objective({}) == 1.0 and 1 - ranked[0][0] == pytest.approx(0.0403, abs=1e-4)
    assert h3.NOISY_KNOBS_3.target == pytest.approx(ranked[0][0] * 1.005) and h3.NOISY_KNOBS_3.noise == 0.015
    assert h3.NOISY_KNOBS_3.objective({"vector": 4}) > 1.0 > h3.NOISY_KNOBS_3.objective({"vector": 4,
                                                                                         "prefetch": "l2"})
    assert h3.NOISY_KNOBS_3.objective({"O": 0, "fast_math": "-f"}) > h3.NOISY_KNOBS_3.objective({"O": 0})


def test_acf46_has_46_parameters_a_triple_and_its_optimum_on_target() -> None:
    assert len(h3.ACF_46.space) == 46 and _stable_fraction(h3.ACF46_BEST) >= 0.05
    assert h3.ACF_46.objective(h3.ACF46_BEST) == pytest.approx(h3.ACF46_OPTIMUM)
    assert h3.ACF_46.objective(h3.ACF46_BEST) <= h3.ACF_46.target
    assert h3.ACF_46.objective(h3.ACF46_BEST | {"a14": "-", "a22": "-"}) == INVALID_SCORE
    two = {k: v for k, v in h3.ACF46_BEST.items() if k != "a25"}  # the triple: one or two alone worse than none
    one = {k: v for k, v in two.items() if k != "a17"}
    none = {k: v for k, v in one.items() if k != "a1"}
    assert h3.ACF_46.objective(two) > h3.ACF_46.objective(one) > h3.ACF_46.objective(none)


def test_the_valley_moves_only_with_three_ordinals_together() -> None:
    best = {"r0": 17, "r1": 20, "r2": 15, "r3": 5, "mode": "a", "flag": "-fvalley"}
    assert h3.VALLEY.objective(best) == pytest.approx(h3.VALLEY_OPTIMUM)
    on = best | {"r0": 10, "r1": 13, "r2": 8}  # on the valley, 7 steps from its end
    down = h3.VALLEY.objective(on | {"r0": 11, "r1": 14, "r2": 9})
    assert down == pytest.approx(h3.VALLEY.objective(on) - 0.02)
    for moved in ({"r0": 11}, {"r1": 14}, {"r2": 9}, {"r0": 11, "r1": 14}, {"r0": 11, "r2": 9}):
        assert h3.VALLEY.objective(on | moved) > h3.VALLEY.objective(on)
    # the target: the valley's last two steps, nothing off it
    assert h3.VALLEY.objective(best | {"r0": 15, "r1": 18, "r2": 13}) <= h3.VALLEY.target
    assert h3.VALLEY.objective(best | {"r0": 14, "r1": 17, "r2": 12}) > h3.VALLEY.target
    assert h3.VALLEY.objective(best | {"r1": 21}) > h3.VALLEY.target


def test_walled_best_is_surrounded_by_failures() -> None:
    ranked = landscapes.ranked(h3.WALLED)
    assert ranked[0][0] == pytest.approx(h3.WALLED_OPTIMUM) and len(ranked) / 32768 < 0.3
    best = {"m": 6, "n": 4, "stages": 6, "vector": 4, "split": 2}
    assert h3.WALLED.objective(best) == pytest.approx(h3.WALLED_OPTIMUM)
    changes = landscapes.single_changes(h3.WALLED, best)
    assert sum(v == INVALID_SCORE for v in changes) >= len(changes) // 2
    assert sum(v <= h3.WALLED.target for v, _ in ranked) == 8  # of 32,768: the best, its transpose, 6 near them
