"""bench/search_quality/held_out_5.py: each problem is what its description says (depths, optima, failures)."""

from __future__ import annotations

import landscapes
import pytest

from bench.search_quality import held_out_5 as h5
from ciq_build import INVALID_SCORE


def test_the_decoys_are_3_5_7_and_9_percent_deep_and_their_plateaus_shaped() -> None:
    for problem, optimum, decoy, depth in ((h5.DECOY_3R, h5.DECOY_3R_OPT, h5.DECOY_3R_POINT, 0.03),
                                           (h5.DECOY_5P, h5.DECOY_5P_OPT, h5.DECOY_5P_POINT, 0.05),
                                           (h5.DECOY_7T, h5.DECOY_7T_OPT, h5.DECOY_7T_POINT, 0.07),
                                           (h5.DECOY_9C, h5.DECOY_9C_OPT, h5.DECOY_9C_POINT, 0.09)):
        point = {f"r{i}": v for i, v in enumerate(decoy)} | {"kind": "a"}
        assert problem.objective(point) == pytest.approx(100 * (1 - depth))
        assert problem.objective({f"r{i}": v for i, v in enumerate(optimum)} | {"kind": "a"}) <= problem.target
    ripple = {h5.DECOY_3R.objective({f"r{i}": 5 for i in range(8)} | {"kind": "a", "r0": r}) for r in range(11)}
    assert len(ripple) > 5 and all(100.0 <= v < 100.3 for v in ripple)
    steps = [h5.DECOY_5P.objective({f"r{i}": 10 for i in range(6)} | {"kind": "a", "r0": r}) for r in (9, 10, 11)]
    assert sorted(steps) == [100.0, 100.15, 100.3]
    far, near = ({f"r{i}": v for i, v in enumerate(at)} | {"kind": "a"} for at in ([14, 0, 14, 0, 0, 14],
                                                                                     [9, 0, 8, 0, 5, 14]))
    assert h5.DECOY_7T.objective(far) > h5.DECOY_7T.objective(near) > 100.0
    on, off = ({f"r{i}": 8 for i in range(5)} | {"r3": r3} | {"kind": "a"} for r3 in (8, 16))
    assert (h5.DECOY_9C.objective(on), h5.DECOY_9C.objective(off), h5.DECOY_9C.noise) == (100.0, 100.25, 0.006)


def test_ridge5_needs_two_ordinals_moved_together_and_walled5_best_is_among_failures() -> None:
    ridge = {"tm": 4, "tn": 8, "split": 3, "swizzle": "xor", "prefetch": "-prefetch"}
    assert landscapes.ranked(h5.RIDGE_5)[0] == (pytest.approx(h5.RIDGE_5_OPTIMUM), ridge)
    changes = landscapes.single_changes(h5.RIDGE_5, ridge)
    assert min(v for v in changes if v != INVALID_SCORE) > h5.RIDGE_5.target
    assert h5.RIDGE_5.objective(ridge | {"tm": 8, "tn": 4}) < h5.RIDGE_5.objective(ridge | {"tm": 8})
    walled = landscapes.ranked(h5.WALLED_5)
    assert walled[0] == (pytest.approx(h5.WALLED_5_OPTIMUM), h5.WALLED_5_BEST)
    changes = landscapes.single_changes(h5.WALLED_5, h5.WALLED_5_BEST)
    assert sum(v == INVALID_SCORE for v in changes) == 26 and len(changes) == 42


def test_acf54_needs_its_interacting_flags_and_noisy5_has_few_picks_in_target() -> None:
    best = dict(h5.ACF54_BEST)
    assert h5.ACF_54.objective(best) == pytest.approx(h5.ACF54_OPTIMUM)
    for worse in ({k: v for k, v in best.items() if k != drop} for drop in ("f3", "f27", "f6", "g2")):
        assert h5.ACF_54.objective(worse) > h5.ACF54_OPTIMUM * 1.01
    assert h5.ACF_54.objective(best | {"f33": "--acf5-33"}) > h5.ACF54_OPTIMUM * 1.01  # all three of the triple
    assert h5.ACF_54.objective(best | {"f30": "--acf5-30"}) == INVALID_SCORE
    values = [v for v, _ in landscapes.ranked(h5.NOISY_KNOBS_5)]
    assert h5.NOISY_KNOBS_5.target == pytest.approx(values[0] * 1.005)
    assert sum(v <= h5.NOISY_KNOBS_5.target for v in values) == 7 and h5.NOISY_KNOBS_5.noise == 0.010
