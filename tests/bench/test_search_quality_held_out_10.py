"""bench/search_quality/held_out_10.py: each problem is what its description says (a pair whose choice alone loses
more than the walks' 2%, a range moved far across a neutral plateau; decoy near-best changes; failures below)."""

from __future__ import annotations

import pytest

from bench.search_quality import held_out_10 as h10
from ciq_build import INVALID_SCORE
from support import assert_optimum_needs_each_parameter


def _missed(score: object, target: float) -> bool:
    return score == INVALID_SCORE or float(score) > target  # type: ignore[arg-type]


def test_each_optimum_is_on_target_and_needs_each_of_its_parameters() -> None:
    for problem, best, optimum in ((h10.COARSEN_10, h10.COARSEN_10_BEST, h10.COARSEN_10_OPTIMUM),
                                   (h10.ALGO_10, h10.ALGO_10_BEST, h10.ALGO_10_OPTIMUM),
                                   (h10.KNOBS_15, h10.KNOBS_15_BEST, h10.KNOBS_15_OPTIMUM)):
        assert problem.target == pytest.approx(optimum * 1.01)
        assert_optimum_needs_each_parameter(problem, best, optimum)


def test_coarsen10_factor_alone_loses_4_percent_and_the_rows_are_a_plateau_far_from_the_window() -> None:
    c10 = h10.COARSEN_10.objective
    base = {"swizzle": 2, "prefetch": 3}
    rows = h10.COARSEN_10.space["block_rows"].values()
    assert {c10(base | {"coarsen": 1, "block_rows": r}) for r in rows if r >= 64} == {1.0}
    assert all(c10(base | {"coarsen": 1, "block_rows": r}) > 1.0 for r in rows if r < 64)
    paying = [r for r in rows if c10(base | {"coarsen": 6, "block_rows": r}) < 1.0]
    assert paying == [496, 504, 512] and (paying[0] - 64) // 8 >= 8  # 54 grid steps from the plateau's start
    assert all(c10(base | {"coarsen": 6, "block_rows": r}) >= 1.04 for r in rows if r not in paying)
    for other in (2, 3, 4, 8):  # no other factor interacts with the rows
        assert c10(base | {"coarsen": other, "block_rows": 504}) == c10(base | {"coarsen": other, "block_rows": 128})
    assert c10(base | {"coarsen": 6, "block_rows": 504}) <= 0.945 < c10(base | {"coarsen": 1, "block_rows": 504})


def test_algo10_winograd_pays_only_at_widths_60_to_64_and_its_decoys_lose_little_and_interact_with_nothing() -> None:
    a10 = h10.ALGO_10.objective
    base = {"algo": "direct", "tile_w": 100, "layout": "nchw", "threads": 256, "depth": 5}
    widths = h10.ALGO_10.space["tile_w"].values()
    assert a10(base) == 1.0 and a10(base | {"algo": "winograd"}) == pytest.approx(1.045)
    assert [w for w in widths if a10(base | {"algo": "winograd", "tile_w": w}) < 1.0] == [60, 62, 64]
    assert (100 - 64) // 2 >= 8  # the plateau's best in the far half is 18+ steps from the window
    decoys = [base | {"algo": "gemm"}, base | {"algo": "implicit"}, base | {"layout": "nhwc"}]
    decoys += [base | {flag: "x"} for flag in ("ldg", "pad_smem", "no_unroll", "fast_exp")]
    for decoy in decoys:  # each loses 0.2-1% alone, and no range moved from it changes its score
        assert 1.002 <= a10(decoy) <= 1.01
        walked = {a10(decoy | {"tile_w": w, "depth": d, "halo": h}) for w in widths if w >= 16
                  for d in (1, 8, 16) for h in (0, 28, 60)}
        assert walked == {a10(decoy)}


def test_knobs15_packed_layout_wins_only_at_8_to_12_lanes_and_fails_below() -> None:
    k15 = h10.KNOBS_15.objective
    base = {"m_a": 5, "m_b": 1, "z_5": 0, "z_7": 1, "z_9": "u"}
    lanes = h10.KNOBS_15.space["lanes"].values()
    assert len(h10.KNOBS_15.space) == 15
    assert {k15(base | {"layout": "aos", "lanes": n}) for n in lanes if n >= 32} == {1.0}
    assert all(k15(base | {"layout": "aos", "lanes": n}) > 1.0 for n in lanes if n < 32)
    packed = {n: k15(base | {"layout": "aosoa", "lanes": n}) for n in lanes}
    assert [n for n, v in packed.items() if v == INVALID_SCORE] == [2, 4, 6]  # failures on one side only
    assert [n for n, v in packed.items() if v != INVALID_SCORE and v < 1.0] == [8, 10, 12]
    assert all(v == pytest.approx(1.04) for n, v in packed.items() if n >= 32)
    assert all(v > 1.04 for n, v in packed.items() if 12 < n < 32)
    assert (32 - 12) // 2 >= 8  # the far move down from the plateau's edge: 10 grid steps
    assert k15(base | {"layout": "aos", "lanes": 64, "z_1": "x", "z_4": "q", "z_6": 7}) == 1.0  # neutral knobs
