"""bench/search_quality/held_out_6.py: each problem is what its description says (depths, optima, failures)."""

from __future__ import annotations

import landscapes
import pytest

from bench.search_quality import held_out_6 as h6
from ciq_build import INVALID_SCORE


def _ranges(values: list[int], kind: str = "a") -> dict[str, object]:
    return {f"r{i}": v for i, v in enumerate(values)} | {"kind": kind}


def test_the_decoys_are_2_4_and_8_percent_deep_and_their_plateaus_textured() -> None:
    for problem, optimum, decoy, depth in ((h6.DECOY_2P, h6.DECOY_2P_OPT, h6.DECOY_2P_POINT, 0.02),
                                           (h6.DECOY_4B, h6.DECOY_4B_OPT, h6.DECOY_4B_POINT, 0.04),
                                           (h6.DECOY_8N, h6.DECOY_8N_OPT, h6.DECOY_8N_POINT, 0.08)):
        assert problem.objective(_ranges(decoy)) == pytest.approx(100 * (1 - depth))
        assert problem.objective(_ranges(optimum)) <= problem.target
    # the patchwork: one level across a block of 4 x 4, others beside it, up to 0.5%
    patches = [h6.DECOY_2P.objective(_ranges([r0, 10, 10, r3, 10, 10])) for r0 in range(8) for r3 in range(8)]
    assert len(set(patches[:4] + patches[8:12])) == 1 and len(set(patches)) == 4
    assert all(100.0 <= v < 100.5 for v in patches)
    # the bumps: every value of a range its own level, the same wherever the other ranges are
    bumps = [h6.DECOY_4B.objective(_ranges([6, 5, 6, 5, 6, 5, r6])) for r6 in range(12)]
    assert len(set(bumps)) == 12 and all(100.0 <= v < 100.56 for v in bumps)
    shift = h6.DECOY_4B.objective(_ranges([6, 5, 6, 5, 6, 11, 3])) - h6.DECOY_4B.objective(_ranges([6, 5, 6, 5, 6,
                                                                                                   11, 4]))
    assert shift == pytest.approx(bumps[3] - bumps[4])
    # the noisy plateau rises towards the basin
    near, far = (h6.DECOY_8N.objective(_ranges(at)) for at in ([15, 4, 11, 9, 14], [0, 18, 18, 18, 0]))
    assert 100.0 < far < near < 100.3 and h6.DECOY_8N.noise == 0.008


def test_ridge6_needs_two_ordinals_moved_together_and_walled6_best_is_among_failures() -> None:
    ridge = {"rows": 6, "cols": 4, "kslice": 3, "order": "snake", "ldmatrix": "-ldmatrix"}
    assert landscapes.ranked(h6.RIDGE_6)[0] == (pytest.approx(h6.RIDGE_6_OPTIMUM), ridge)
    changes = landscapes.single_changes(h6.RIDGE_6, ridge)
    assert INVALID_SCORE not in changes and min(changes) > h6.RIDGE_6.target
    assert h6.RIDGE_6.objective(ridge | {"rows": 8, "cols": 3}) < h6.RIDGE_6.objective(ridge | {"rows": 8})
    walled = landscapes.ranked(h6.WALLED_6)
    assert walled[0] == (pytest.approx(h6.WALLED_6_OPTIMUM), h6.WALLED_6_BEST)
    changes = landscapes.single_changes(h6.WALLED_6, h6.WALLED_6_BEST)
    assert sum(v == INVALID_SCORE for v in changes) == 26 and len(changes) == 42


def test_acf60_needs_its_interacting_flags_noisy6_its_interactions_and_occupancy6_its_optimum() -> None:
    best = dict(h6.ACF60_BEST)
    assert h6.ACF_60.objective(best) == pytest.approx(h6.ACF60_OPTIMUM)
    for worse in ({k: v for k, v in best.items() if k != drop} for drop in ("f4", "f31", "f18", "f7", "k3")):
        assert h6.ACF_60.objective(worse) > h6.ACF60_OPTIMUM * 1.01
    assert h6.ACF_60.objective(best | {"f25": "--acf6-25"}) > h6.ACF60_OPTIMUM * 1.01  # the overlapping flag
    assert h6.ACF_60.objective(best | {"k3": 8}) > h6.ACF60_OPTIMUM * 1.01  # the flag's range low
    assert h6.ACF_60.objective(best | {"g9": 2}) == INVALID_SCORE
    ranked = landscapes.ranked(h6.NOISY_KNOBS_6)
    assert ranked[0][0] == pytest.approx(h6.NOISY_KNOBS_6_OPTIMUM)
    knobs = {"block": 256, "O": 3, "unroll": 8, "prec_div": False, "ftz": "-ftz=true", "restrict": "-restrict"}
    assert h6.noisy_knobs_6_time(knobs) == pytest.approx(h6.NOISY_KNOBS_6_OPTIMUM)
    assert h6.noisy_knobs_6_time(knobs | {"block": 512}) > h6.NOISY_KNOBS_6.target  # unroll 8 needs <= 256
    assert h6.NOISY_KNOBS_6.noise == 0.008
    best = {"regcap": 124, "block": 256, "unroll": 14, "vector": 4, "dlcm": "-dlcm=cg"}
    assert h6.OCCUPANCY_6.objective(best) == pytest.approx(h6.OCCUPANCY_6_OPTIMUM)
    others = [h6.OCCUPANCY_6.objective(best | {"regcap": cap, "block": block, "unroll": unroll})
              for cap in range(32, 256, 4) for block in range(64, 1025, 32) for unroll in range(1, 17)]
    assert min(others) == pytest.approx(h6.OCCUPANCY_6_OPTIMUM)
    # the best cap and unroll under 192-thread blocks are not those under 256
    at_192 = min((h6.OCCUPANCY_6.objective(best | {"block": 192, "regcap": cap, "unroll": unroll}), cap, unroll)
                 for cap in range(32, 256) for unroll in range(1, 17))
    assert at_192[1:] == (112, 12)
