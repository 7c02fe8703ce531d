"""bench/search_quality/held_out_9.py: each problem is what its description says (a pair moved together, one of it
far along an ordinal range, across a neutral or slightly losing plateau)."""

from __future__ import annotations

from bench.search_quality import held_out_9 as h9
from ciq_build import INVALID_SCORE
from support import assert_optimum_needs_each_parameter


def _missed(score: object, target: float) -> bool:
    return score == INVALID_SCORE or float(score) > target  # type: ignore[arg-type]


def test_each_optimum_is_on_target_and_needs_each_of_its_parameters() -> None:
    for problem, best, optimum in ((h9.BOUNDS_9, h9.BOUNDS_9_BEST, h9.BOUNDS_9_OPTIMUM),
                                   (h9.CARVE_9, h9.CARVE_9_BEST, h9.CARVE_9_OPTIMUM),
                                   (h9.KNOBS_14, h9.KNOBS_14_BEST, h9.KNOBS_14_OPTIMUM),
                                   (h9.GRAIN_9, h9.GRAIN_9_BEST, h9.GRAIN_9_OPTIMUM)):
        assert_optimum_needs_each_parameter(problem, best, optimum)


def test_bounds9_minimum_blocks_is_a_plateau_up_to_the_far_step_and_needs_the_unroll_lowered() -> None:
    b9 = h9.BOUNDS_9.objective
    base = {"unroll": 8, "vector": 4, "tile_n": 96}
    plateau = {b9(base | {"min_blocks": m}) for m in range(1, 9)}
    assert plateau == {0.99} and b9(base | {"min_blocks": 9}) > 1.2  # unroll 8 spills from 9 blocks up
    assert b9(base | {"unroll": 2, "min_blocks": 1}) > b9(base | {"min_blocks": 1})  # unroll 2 alone loses
    assert b9(base | {"unroll": 2, "min_blocks": 16}) <= h9.BOUNDS_9.target < 0.99
    assert b9(base | {"unroll": 2, "min_blocks": 17}) > 1.2  # one step further spills
    four = {b9(base | {"unroll": 4, "min_blocks": m}) for m in range(1, 13)}
    assert four == {1.0}  # unroll 4 up to 12 blocks: no occupancy gain before it spills


def test_carve9_fails_on_one_side_of_the_ridge_and_charges_a_little_beyond_it() -> None:
    c9 = h9.CARVE_9.objective
    base = {"stages": 3, "warps": 4, "swizzle": 4}
    assert c9(base | {"tile": 256, "carveout": 84}) == INVALID_SCORE  # 192 KB do not fit in 84% of 228 KB
    assert c9(base | {"tile": 256}) == INVALID_SCORE  # nor in the default carveout
    assert c9(base | {"tile": 256, "carveout": 88}) <= h9.CARVE_9.target
    assert c9(base | {"tile": 128}) < c9(base | {"tile": 128, "carveout": 88}) < c9(base | {"tile": 128}) * 1.01
    assert {c9(base | {"tile": t}) for t in (128,)} == {1.0}
    assert c9(base | {"tile": 160}) == INVALID_SCORE and c9(base | {"tile": 160, "carveout": 56}) < 1.002


def test_knobs14_tiled_wins_only_at_the_smallest_chunks_and_rows_are_flat_above_32() -> None:
    k14 = h9.KNOBS_14.objective
    base = {"k_a": 6, "k_b": 2, "g_c": 1, "n_6": 0, "n_8": 1}
    rows = {k14(base | {"layout": "row", "chunk": c}) for c in range(32, 257, 4)}
    assert rows == {1.0} and k14(base | {"layout": "row", "chunk": 28}) > 1.0
    assert all(k14(base | {"layout": "tiled", "chunk": c}) > 1.0 for c in range(20, 257, 4))
    assert all(k14(base | {"layout": "tiled", "chunk": c}) < 0.96 for c in (4, 8, 12, 16))
    assert k14(base | {"layout": "row", "chunk": 64, "n_1": "x", "n_5": "c", "n_7": 3}) == 1.0  # neutral knobs


def test_grain9_vector_loads_win_only_at_grains_2_and_4() -> None:
    g9 = h9.GRAIN_9.objective
    base = {"threads": 256, "block_x": 2, "tail": "peel", "unroll": 4}
    grains = h9.GRAIN_9.space["grain"].values()
    assert {g9(base | {"grain": g}) for g in grains if g >= 64} == {1.0}
    assert all(g9(base | {"grain": g}) > 1.0 for g in grains if g < 64)
    flagged = {g: g9(base | {"grain": g, "vec_loads": "x"}) for g in grains}
    assert [g for g, v in flagged.items() if v < 1.0] == [2.0, 4.0] and flagged[64.0] > 1.0
