"""bench/search_quality/held_out_4.py: each problem is what its description says (depths, optima, failures)."""

from __future__ import annotations

import landscapes
import pytest

import ciq_build.core.space as ss
from bench.search_quality import held_out_4 as h4
from ciq_build import INVALID_SCORE


def test_the_decoys_are_3_4_and_8_percent_deep_on_a_bowl_terraces_and_failures() -> None:
    for problem, optimum, decoy, depth in ((h4.DECOY_3B, h4.DECOY_3B_OPT, h4.DECOY_3B_POINT, 0.03),
                                           (h4.DECOY_4S, h4.DECOY_4S_OPT, h4.DECOY_4S_POINT, 0.04),
                                           (h4.DECOY_8F, h4.DECOY_8F_OPT, h4.DECOY_8F_POINT, 0.08)):
        point = {f"r{i}": v for i, v in enumerate(decoy)} | {"kind": "a"}
        assert problem.objective(point) == pytest.approx(100 * (1 - depth))
        assert problem.objective({f"r{i}": v for i, v in enumerate(optimum)} | {"kind": "a"}) <= problem.target
    middle, corner = ({f"r{i}": v for i in range(7)} | {"kind": "a"} for v in (8, 16))
    assert (h4.DECOY_3B.objective(middle), h4.DECOY_3B.objective(corner)) == (100.0, 100.6)
    low, high = ({f"r{i}": v for i in range(6)} | {"kind": "a"} for v in (0, 19))
    assert (h4.DECOY_4S.objective(low), h4.DECOY_4S.objective(high)) == (100.0, pytest.approx(101.2))
    plateau = [h4.DECOY_8F.objective({f"r{i}": v for i in range(5)} | {"kind": k, "r0": r})
               for v in (7, 8) for k in "abcd" for r in range(0, 17, 2)]
    assert INVALID_SCORE in plateau and set(plateau) == {100.0, INVALID_SCORE}


def test_walled4_best_has_most_single_changes_failing() -> None:
    best = {"bx": 5, "by": 4, "items": 6, "regs": 96, "order": "tile"}
    assert h4.WALLED_4.objective(best) == pytest.approx(h4.WALLED_4_OPTIMUM)
    changes = landscapes.single_changes(h4.WALLED_4, best)
    assert sum(v == INVALID_SCORE for v in changes) == 26 and len(changes) == 38
    assert all(v >= h4.WALLED_4_OPTIMUM for v in changes if v != INVALID_SCORE)


def test_valley4_and_ridge4_optima_are_off_every_single_change() -> None:
    valley = {"r0": 14, "r1": 16, "r2": 5, "r3": 2, "sched": "static", "flag": "-fvalley4"}
    assert h4.VALLEY_4.objective(valley) == pytest.approx(h4.VALLEY_4_OPTIMUM)
    up = valley | {"r0": 10, "r1": 12, "r2": 9}  # four steps up the valley: the three moved together
    assert h4.VALLEY_4.objective(up) == pytest.approx(h4.VALLEY_4_OPTIMUM + 0.1)
    assert all(h4.VALLEY_4.objective(up | moved) > h4.VALLEY_4.objective(up) for moved in
               ({"r0": 11}, {"r0": 11, "r1": 13}, {"r0": 11, "r2": 8}, {"r1": 13, "r2": 8}))
    ridge = {"warps": 8, "items": 6, "layout": "aosoa", "cache": "cg", "fast_math": "--use_fast_math"}
    assert h4.RIDGE_4.objective(ridge) == pytest.approx(h4.RIDGE_4_OPTIMUM)
    changes = landscapes.single_changes(h4.RIDGE_4, ridge)
    assert INVALID_SCORE not in changes and min(changes) > h4.RIDGE_4.target
    assert h4.RIDGE_4.objective(ridge | {"warps": 6, "items": 8}) < h4.RIDGE_4.objective(ridge | {"items": 8})


def test_acf50_needs_its_triple_and_pair_together_and_noisy4_has_few_picks_in_target() -> None:
    best = dict(h4.ACF50_BEST)
    assert h4.ACF_50.objective(best) == pytest.approx(h4.ACF50_OPTIMUM)
    for drop in ("f8", "f13", "f29", "f2", "f24"):
        assert h4.ACF_50.objective({k: v for k, v in best.items() if k != drop}) > h4.ACF50_OPTIMUM * 1.01
    space = ss.SearchSpace(h4.NOISY_KNOBS_4.space)
    values = sorted(h4.NOISY_KNOBS_4.objective(space.to_params(space.genome_at(i))) for i in range(space.cardinality))
    assert h4.NOISY_KNOBS_4.target == pytest.approx(values[0] * 1.005)
    assert sum(v <= h4.NOISY_KNOBS_4.target for v in values) == 7 and h4.NOISY_KNOBS_4.noise == 0.013
