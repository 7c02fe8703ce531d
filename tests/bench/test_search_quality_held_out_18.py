"""bench/search_quality/held_out_18.py: each problem is what its description says (optima on target and needing each
of their parameters, the decoy's depth and furrows, the ridge with nothing failing near its best, the noisy knobs'
interactions and size, the ACF-like space's flags, pair, triple, clash and failures, the value that never compiles
and the pair still to find, the tile that fits only the top carveouts)."""

from __future__ import annotations

import pytest

from bench.search_quality import held_out_18 as h18
from ciq_build import INVALID_SCORE
from ciq_build.core.space import as_space
from support import assert_optimum_needs_each_parameter


def test_each_optimum_is_on_target_and_needs_each_of_its_parameters() -> None:
    for problem, best, optimum, within in ((h18.PRIDGE_18C, h18.PRIDGE_18C_BEST, h18.PRIDGE_18C_OPTIMUM, 1.005),
                                           (h18.ACF_57, h18.ACF57_BEST, h18.ACF57_OPTIMUM, 1.01),
                                           (h18.CARVE_18, h18.CARVE_18_BEST, h18.CARVE_18_OPTIMUM, 1.005)):
        assert problem.target == pytest.approx(optimum * within)
        assert_optimum_needs_each_parameter(problem, best, optimum)
    # stages18's swizzle and packed KV pay 0.4% and 0.3%, within its target: the rest decide a hit
    s18, best = h18.STAGES_18.objective, h18.STAGES_18_BEST
    assert h18.STAGES_18.target == pytest.approx(h18.STAGES_18_OPTIMUM * 1.005)
    decisive = {k: v for k, v in best.items() if k not in ("swizzle", "pack_kv")}
    small = h18.Problem("", h18.STAGES_18.space, lambda p: s18(p | {"swizzle": "xor2", "pack_kv": "-DPACK_KV"}),
                        h18.STAGES_18.target)
    assert_optimum_needs_each_parameter(small, decisive, h18.STAGES_18_OPTIMUM)
    assert h18.STAGES_18_OPTIMUM < s18({k: v for k, v in best.items() if k != "pack_kv"} | {"swizzle": "none"})


def test_decoy6h_is_6_percent_deep_on_a_furrowed_plateau_and_its_basin_needs_the_kmajor_order() -> None:
    d6 = h18.DECOY_6H.objective

    def at(point: list[int], order: str = "mmajor") -> dict[str, object]:
        return {f"h{i}": v for i, v in enumerate(point)} | {"order": order}

    assert d6(at(h18.DECOY_6H_POINT)) == pytest.approx(94.0)
    assert d6(at(h18.DECOY_6H_OPT, "kmajor")) == 0.0 < d6(at(h18.DECOY_6H_OPT)) == 6.0 < h18.DECOY_6H.target
    assert d6(at([0, 7, 0, 0])) == 100.0 < d6(at([0, 8, 0, 0])) == pytest.approx(100.3)  # a furrow where h1 - h2 = 7
    assert (17 - 3) % 7 == 0 != (5 - 11) % 7  # a furrow runs through the decoy, none through the basin


def test_pridge18c_keeps_its_work_along_the_product_and_nothing_fails_near_the_best() -> None:
    p18, best = h18.PRIDGE_18C.objective, h18.PRIDGE_18C_BEST
    assert p18(best | {"chunks": 10}) == pytest.approx(0.994 * 1.07)  # off the product by a doubling
    assert p18(best | {"rows": 32, "chunks": 10}) == pytest.approx(0.994 * 1.01)  # on it: the shape only
    near = [best | {"rows": r, "chunks": c, "stages": s}
            for r in (32, 64, 128) for c in range(1, 11) for s in range(1, 7)]
    assert INVALID_SCORE not in [p18(p) for p in near]
    assert p18({"rows": 256, "chunks": 6, "stages": 6, "layout": "zig"}) == INVALID_SCORE  # only far off the ridge


def test_noisy18_optimum_needs_async_copies_with_8_warps_and_has_more_configurations_than_the_budget() -> None:
    t = h18.noisy_knobs_18_time
    best = {"tile": 128, "warps": 8, "async_copy": "-DASYNC_COPY", "raster": "swz4", "l2_hint": "-DL2_HINT",
            "fast_div": "-DFAST_DIV"}
    assert t({}) == 1.0 and t(best) == pytest.approx(h18.NOISY_KNOBS_18_OPTIMUM) == pytest.approx(0.9674, abs=1e-4)
    assert t({"async_copy": "-DASYNC_COPY"}) > 1.0 > t({"async_copy": "-DASYNC_COPY", "warps": 8})  # needs 8 warps
    assert t({"raster": "swz2"}) < t({"raster": "swz4"})  # the widest swizzle loses alone ...
    assert t({"raster": "swz4", "l2_hint": "-DL2_HINT"}) < t({"raster": "swz2"})  # ... and wins with the L2 hint
    assert t(best | {"nan_check": "-DNAN_CHECK"}) > h18.NOISY_KNOBS_18.target
    assert h18.NOISY_KNOBS_18.noise == 0.022
    assert as_space(h18.NOISY_KNOBS_18.space).cardinality == 1920  # more than the budget of 640


def test_acf57_pairs_flags_with_a_numeric_choice_and_a_range_clashes_two_and_fails_where_described() -> None:
    a57, b57 = h18.ACF_57.objective, h18.ACF57_BEST
    assert a57({"f7": "--acf18-7"}) > 1.0 > a57({"f7": "--acf18-7", "w2": 1})  # f7 needs w2 = 1
    assert a57({"f12": "--acf18-12"}) > 1.0 > a57({"f12": "--acf18-12", "f27": "--acf18-27"})  # a pair
    two = {"f3": "--acf18-3", "f18": "--acf18-18"}
    assert a57(two) == 1.0 > a57(two | {"f33": "--acf18-33"})  # a triple that helps only whole
    assert a57({"f9": "--acf18-9"}) < 1.0 < a57({"f9": "--acf18-9", "f22": "--acf18-22"})  # a clash
    without_f30 = {k: v for k, v in b57.items() if k != "f30"}
    assert a57(without_f30 | {"s3": 4}) < a57(without_f30) and a57(without_f30 | {"s3": 4}) < a57(b57 | {"s3": 4})
    assert a57(b57 | {"s1": 2}) == INVALID_SCORE and a57(b57 | {"f5": "--acf18-5"}) == INVALID_SCORE


def test_stages18_one_stage_never_compiles_and_the_best_needs_warps_and_kv_tile_moved_together() -> None:
    s18, best = h18.STAGES_18.objective, h18.STAGES_18_BEST
    space = h18.STAGES_18.space
    one_stage = [best | {name: v, "stages": 1} for name in space for v in space[name].values()]
    assert {s18(p) for p in one_stage} == {INVALID_SCORE}  # whatever the rest
    first = best | {"warps": 4, "kvtile": 64}  # the best before the pair move
    assert s18(first | {"warps": 8}) > s18(first) and s18(first | {"kvtile": 128}) > s18(first)  # each alone loses
    assert s18(best) == pytest.approx(s18(first) * 0.976) and s18(first) > h18.STAGES_18.target
    assert s18(best | {"qtile": 128}) == INVALID_SCORE


def test_carve18_the_tile_of_256_fails_below_the_top_two_carveouts_only_and_is_the_best() -> None:
    c18, best = h18.CARVE_18.objective, h18.CARVE_18_BEST
    carveouts = h18.CARVE_18.space["carve"].values()
    assert len(carveouts) == 11
    assert [c18(best | {"carve": c}) != INVALID_SCORE for c in carveouts] == [False] * 9 + [True] * 2
    assert c18(best | {"carve": 100}) <= h18.CARVE_18.target  # a value that looks like failing alone but is not
    without = min(c18(best | {"tile": t, "carve": c}) for t in (32, 64, 96, 128, 192) for c in carveouts
                  if c18(best | {"tile": t, "carve": c}) != INVALID_SCORE)
    assert without == pytest.approx(c18(best | {"tile": 128, "carve": 30}))
    assert 1 - c18(best) / without == pytest.approx(0.033, abs=0.001)  # 3.3% faster than the best without it
