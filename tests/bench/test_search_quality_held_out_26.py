"""bench/search_quality/held_out_26.py: each problem is what its description says (optima on target and needing each
of their parameters, the decoys' depths and their square-ring and parity plateaus, the ridge with nothing failing near
its best, the noisy knobs' block, prefetch parabola, load flag needing double buffering and clashing flags, the
ACF-like space's flags needing a choice's and a range's values, its pair, triple and failures, the walled basin behind
its diagonal wall), and nothing else is on target: the small spaces counted whole, the others sampled."""

from __future__ import annotations

import pytest

from bench.search_quality import held_out_26 as h26
from bench.search_quality.run import SETS
from ciq_build import INVALID_SCORE
from ciq_build.core.space import as_space
from support import assert_optimum_needs_each_parameter, draws_on_target, whole_space_on_target


def test_the_set_is_registered_and_its_short_names_are_new() -> None:
    assert SETS["held-out-26"] == h26.HELD_OUT_26
    names = [p.short for p in SETS["all"]]
    assert len(names) == len(set(names)), sorted(n for n in set(names) if names.count(n) > 1)


def test_each_optimum_is_on_target_and_needs_each_of_its_parameters() -> None:
    for problem, best, optimum, within in ((h26.NOISY_KNOBS_26, h26.NOISY_KNOBS_26_BEST, h26.NOISY_KNOBS_26_OPTIMUM,
                                            1.005),
                                           (h26.PRIDGE_26, h26.PRIDGE_26_BEST, h26.PRIDGE_26_OPTIMUM, 1.005),
                                           (h26.ACF_48, h26.ACF48_BEST, h26.ACF48_OPTIMUM, 1.01),
                                           (h26.WALLED_26, h26.WALLED_26_BEST, h26.WALLED_26_OPTIMUM, 1.01)):
        assert problem.target == pytest.approx(optimum * within)
        assert_optimum_needs_each_parameter(problem, best, optimum)


def test_the_small_spaces_have_their_optimum_alone_on_target() -> None:
    for problem, best, size in ((h26.NOISY_KNOBS_26, h26.NOISY_KNOBS_26_BEST, 2016),
                                (h26.PRIDGE_26, h26.PRIDGE_26_BEST, 960)):
        assert as_space(problem.space).cardinality == size > 640  # more configurations than the budget
        assert whole_space_on_target(problem)[0] == [best], problem.short


def _at(prefix: str, point: list[int], **rest: object) -> dict[str, object]:
    return {f"{prefix}{i}": v for i, v in enumerate(point)} | rest


def test_decoy8q_is_8_percent_deep_on_square_rings_and_its_basin_needs_a_tile_of_64() -> None:
    d8 = h26.DECOY_8Q.objective
    assert d8(_at("s", h26.DECOY_8Q_POINT, tile=16)) == pytest.approx(92.0)
    assert d8(_at("s", h26.DECOY_8Q_OPT, tile=64)) == 0.0 < d8(_at("s", h26.DECOY_8Q_OPT, tile=32)) == 4.0
    centre = h26.DECOY_8Q_CENTRE
    crest = d8(_at("s", [centre[0] + 4, *centre[1:]], tile=16))  # the largest distance 4: a period
    trough = d8(_at("s", [centre[0] + 2, centre[1] - 2, *centre[2:]], tile=16))  # 2: half a period
    assert crest == pytest.approx(100.2) and trough == pytest.approx(100.0)
    assert h26.DECOY_8Q.noise == 0.0
    on, failed = draws_on_target(h26.DECOY_8Q, 20_000, seed=26)  # (5/30)**4 = 0.077%
    assert 5 <= on <= 35 and failed == 0


def test_decoy3v_is_3_percent_deep_on_a_noisy_parity_plateau_and_its_basin_needs_the_load_flag() -> None:
    d3 = h26.DECOY_3V.objective
    assert d3(_at("v", h26.DECOY_3V_POINT)) == pytest.approx(97.0)
    assert d3(_at("v", h26.DECOY_3V_OPT, ldg="-DUSE_LDG")) == 0.0 < d3(_at("v", h26.DECOY_3V_OPT)) == 4.0
    assert d3(_at("v", [10, 10, 20, 20, 14])) == pytest.approx(100.3)  # every range even
    assert d3(_at("v", [11, 9, 21, 21, 13])) == 100.0  # every range odd
    assert h26.DECOY_3V.noise == 0.007
    on, failed = draws_on_target(h26.DECOY_3V, 20_000, seed=26)  # (5/22)**5 = 0.060%
    assert 3 <= on <= 30 and failed == 0


def test_pridge26_keeps_its_work_along_the_product_and_nothing_fails_near_the_best() -> None:
    p26, best = h26.PRIDGE_26.objective, h26.PRIDGE_26_BEST
    assert p26(best | {"cluster": 4}) == pytest.approx(0.994 * 1.04 * 1.005)  # off the product by a doubling
    assert p26(best | {"vector": 8, "unroll": 4}) == pytest.approx(0.994 * 1.016)  # on it: the shape only
    near = [best | {"vector": v, "unroll": u, "cluster": c} for v in (1, 2, 4, 8, 16) for u in range(1, 17)
            for c in (1, 2, 4, 8) if v * u * c <= 16 * 64]
    assert INVALID_SCORE not in [p26(p) for p in near]
    assert p26({"vector": 16, "unroll": 16, "cluster": 8, "swizzle": "none"}) == INVALID_SCORE  # only far off
    assert whole_space_on_target(h26.PRIDGE_26)[1] == 24  # 2.5% fail, all far off the ridge


def test_noisy26_has_a_block_best_at_192_a_prefetch_parabola_a_flag_needing_another_and_flags_that_clash() -> None:
    t, best = h26.noisy_knobs_26_time, h26.NOISY_KNOBS_26_BEST
    assert t({}) == 1.0 and t(best) == pytest.approx(h26.NOISY_KNOBS_26_OPTIMUM) == pytest.approx(0.9567, abs=1e-3)
    assert min(t({"block": b}) for b in (64, 128, 192, 256, 384, 512)) == t({"block": 192})
    prefetch = [t({"prefetch": d}) for d in range(8)]
    assert min(prefetch) == prefetch[3] and prefetch[2] == pytest.approx(prefetch[4])  # a parabola round 3
    assert t({"ldg": "-DLDG_CACHE"}) > 1.0 > t({"ldg": "-DLDG_CACHE", "dbuf": "-DDOUBLE_BUFFER"})
    tma, cpasync = {"tma": "-DUSE_TMA"}, {"cpasync": "-DCP_ASYNC"}
    assert t(tma) < 1.0 and t(cpasync) < 1.0 < t(tma | cpasync)  # each helps alone, together they cost
    assert t(best | {"fastmath": "--use_fast_math"}) > h26.NOISY_KNOBS_26.target
    assert h26.NOISY_KNOBS_26.noise == 0.012


def test_acf48_pairs_flags_with_a_choice_and_a_range_and_fails_where_described() -> None:
    a48, b48 = h26.ACF_48.objective, h26.ACF48_BEST
    assert a48({"f3": "--acf26-3"}) > 1.0 > a48({"f3": "--acf26-3", "c5": "b"})  # f3 needs c5 = "b"
    assert a48({"f21": "--acf26-21"}) > 1.0 > a48({"f8": "--acf26-8", "f21": "--acf26-21"})  # a pair
    triple = {"f0": "--acf26-0", "f14": "--acf26-14", "f27": "--acf26-27"}
    assert a48(triple) < 1.0 < a48({k: v for k, v in triple.items() if k != "f0"})  # whole only
    assert a48({"r2": 7}) < a48({"r2": 3}) < 1.0  # r2 best at 7
    assert a48({"f17": "--acf26-17", "r6": 7}) > 1.0 > a48({"f17": "--acf26-17", "r6": 8})  # r6 at 8 or more
    assert a48(b48 | {"c2": "a"}) == INVALID_SCORE and a48(b48 | {"r4": 1}) == INVALID_SCORE
    assert a48(b48 | {"c2": "b", "r4": 2}) != INVALID_SCORE
    on, failed = draws_on_target(h26.ACF_48, 4_000, seed=26)  # 0.007% on target, 13% fail
    assert on <= 2 and 350 <= failed <= 700


def test_walled26_hides_its_basin_behind_a_diagonal_wall_of_failures() -> None:
    w26, best = h26.WALLED_26.objective, h26.WALLED_26_BEST
    for rows, cols in ((72, 72), (64, 112), (120, 56), (96, 80)):  # rows + cols 144-176 fail whatever the rest
        assert w26(best | {"rows": rows, "cols": cols}) == INVALID_SCORE
    slope = [w26({"rows": 8, "cols": c, "stages": 2, "swizzle": "none"}) for c in range(8, 136, 8)]
    assert slope == sorted(slope, reverse=True)  # below the wall the time falls towards it
    behind = [w26({"rows": 128, "cols": c, "stages": 2, "swizzle": "none"}) for c in range(56, 136, 8)]
    assert behind == sorted(behind)  # behind it the time rises away from it
    assert max(slope) - min(slope) == pytest.approx(0.01125) and behind[0] == pytest.approx(min(slope))
    on, failed = whole_space_on_target(h26.WALLED_26)
    assert best in on and len(on) == 8 and all(p["swizzle"] == "xor" and "ldg" in p for p in on)
    assert as_space(h26.WALLED_26.space).cardinality == 9216 and failed == 2340
