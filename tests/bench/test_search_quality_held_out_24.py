"""bench/search_quality/held_out_24.py: each problem is what its description says (optima on target and needing each
of their parameters, the decoys' depths, the slope ending in one and the tilt away from the other's basin, the noisy
knobs' block x unroll interaction and failing cache values, the ridge whose best needs a range and two powers of two,
the ACF-like space's pair, flags needing a choice's and a range's values and failures, the basin behind a wall), and
nothing else is on target: the small spaces counted whole, the others sampled."""

from __future__ import annotations

import pytest

from bench.search_quality import held_out_24 as h24
from bench.search_quality.run import SETS
from ciq_build import INVALID_SCORE
from ciq_build.core.space import as_space
from support import assert_optimum_needs_each_parameter, draws_on_target, whole_space_on_target


def test_the_set_is_registered_and_its_short_names_are_new() -> None:
    assert SETS["held-out-24"] == h24.HELD_OUT_24
    names = [p.short for p in SETS["all"]]
    assert len(names) == len(set(names)), sorted(n for n in set(names) if names.count(n) > 1)


def test_each_optimum_is_on_target_and_needs_each_of_its_parameters() -> None:
    for problem, best, optimum, within in ((h24.NOISY_KNOBS_24, h24.NOISY_KNOBS_24_BEST, h24.NOISY_KNOBS_24_OPTIMUM,
                                            1.005),
                                           (h24.PRIDGE_24, h24.PRIDGE_24_BEST, h24.PRIDGE_24_OPTIMUM, 1.005),
                                           (h24.ACF_54, h24.ACF54_BEST, h24.ACF54_OPTIMUM, 1.01),
                                           (h24.WALLED_24, h24.WALLED_24_BEST, h24.WALLED_24_OPTIMUM, 1.01)):
        assert problem.target == pytest.approx(optimum * within)
        assert_optimum_needs_each_parameter(problem, best, optimum)


def test_the_small_spaces_are_larger_than_the_budget_with_few_configurations_on_target() -> None:
    for problem, size, on_target in ((h24.NOISY_KNOBS_24, 2000, 4), (h24.PRIDGE_24, 1296, 1),
                                     (h24.WALLED_24, 2688, 4)):
        assert as_space(problem.space).cardinality == size > 640
        assert len(whole_space_on_target(problem)[0]) == on_target, problem.short
    assert whole_space_on_target(h24.PRIDGE_24)[0] == [h24.PRIDGE_24_BEST]


def _at(prefix: str, point: list[int], **rest: object) -> dict[str, object]:
    return {f"{prefix}{i}": v for i, v in enumerate(point)} | rest


def test_decoy5e_ends_a_long_gentle_slope_5_percent_deep_and_its_basin_needs_the_zorder() -> None:
    d5 = h24.DECOY_5E.objective
    assert d5(_at("e", h24.DECOY_5E_POINT, order="linear")) == pytest.approx(95.0)
    assert d5(_at("e", h24.DECOY_5E_OPT, order="zorder")) == 0.0 < d5(_at("e", h24.DECOY_5E_OPT, order="hilbert")) \
        == 4.0 < h24.DECOY_5E.target
    far, nearer = [19, 0, 19, 19, 0], [10, 8, 10, 10, 10]  # the slope falls towards the decoy over the whole plateau
    assert 100.0 < d5(_at("e", nearer, order="linear")) < d5(_at("e", far, order="linear")) <= 100.6
    assert h24.DECOY_5E.noise == 0.0
    on, failed = draws_on_target(h24.DECOY_5E, 20_000, seed=24)  # (5/20)**5 = 0.098%
    assert 5 <= on <= 40 and failed == 0


def test_decoy3j_is_3_percent_deep_on_a_plateau_tilted_away_from_its_basin() -> None:
    d3 = h24.DECOY_3J.objective
    assert d3(_at("j", h24.DECOY_3J_POINT)) == pytest.approx(97.0)
    assert d3(_at("j", h24.DECOY_3J_OPT, prefetch="-DPREFETCH_L2")) == 0.0 < d3(_at("j", h24.DECOY_3J_OPT)) == 4.0
    next_to_basin, away = [18, 7, 20, 8], [0, 24, 0, 24]
    assert d3(_at("j", away)) < d3(_at("j", next_to_basin)) < 100.3  # highest next to the basin
    assert h24.DECOY_3J.noise == 0.008
    on, failed = draws_on_target(h24.DECOY_3J, 20_000, seed=24)  # (5/25)**4 = 0.16%
    assert 15 <= on <= 60 and failed == 0


def test_noisy24_couples_block_and_unroll_and_its_cache_choice_fails_on_two_values() -> None:
    t, best = h24.noisy_knobs_24_time, h24.NOISY_KNOBS_24_BEST
    assert t({}) == pytest.approx(1.021) and t(best) == pytest.approx(h24.NOISY_KNOBS_24_OPTIMUM)
    assert t({"block": 256, "unroll": 4}) < t({"block": 256, "unroll": 8})
    assert t({"block": 128, "unroll": 8}) < t({"block": 128, "unroll": 4})  # the unroll's best depends on the block
    assert t({"block": 512, "unroll": 8}) > 1.03
    assert t({"cache": "cs", "block": 512}) == INVALID_SCORE != t({"cache": "cs", "block": 256})
    assert t({"cache": "lu", "vec": "-DVEC_LOADS"}) == INVALID_SCORE != t({"cache": "lu"})
    assert h24.NOISY_KNOBS_24.noise == 0.012


def test_pridge24_is_a_product_ridge_whose_best_needs_all_three_to_move() -> None:
    p24, best = h24.PRIDGE_24.objective, h24.PRIDGE_24_BEST
    assert p24(best | {"stages": 4}) > h24.PRIDGE_24.target  # a step of the range leaves the ridge
    for stages, tile, split in ((6, 16, 16), (12, 32, 4), (6, 64, 4)):  # on the ridge, every one of the three off
        assert stages * tile * split == 1536
        assert h24.PRIDGE_24.target < p24({"stages": stages, "tile": tile, "split": split, "epilogue": "wide"}) < 1.1
    assert p24({"stages": 12, "tile": 256, "split": 32, "epilogue": "wide"}) == INVALID_SCORE  # only far off
    assert whole_space_on_target(h24.PRIDGE_24)[1] == 63


def test_acf54_pairs_flags_with_a_choice_and_a_range_and_fails_where_described() -> None:
    a54, b54 = h24.ACF_54.objective, h24.ACF54_BEST
    assert a54({"f5": "--acf24-5"}) > 1.0 > a54({"f5": "--acf24-5", "f19": "--acf24-19"})  # a pair
    assert a54({"f11": "--acf24-11"}) > 1.0 > a54({"f11": "--acf24-11", "c4": "c"})
    assert a54({"r3": 6}) < a54({"r3": 3}) < a54({"r3": 1}) < 1.0  # r3 best at 6
    assert a54({"f27": "--acf24-27", "r9": 6}) > 1.0 > a54({"f27": "--acf24-27", "r9": 7})
    assert a54(b54 | {"c1": "d"}) == INVALID_SCORE and a54(b54 | {"r0": 1}) == INVALID_SCORE
    assert a54(b54 | {"c1": "a", "r0": 2}) != INVALID_SCORE
    on, failed = draws_on_target(h24.ACF_54, 4_000, seed=24)  # 0.039% on target, 13% fail
    assert on <= 6 and 350 <= failed <= 700


def test_walled24_hides_its_basin_behind_a_wall_of_failures() -> None:
    w = h24.WALLED_24.objective
    plateau = [w({"maxrreg": cap, "block": 256, "stages": 6}) for cap in range(32, 161, 8)]
    assert plateau == sorted(plateau, reverse=True) and plateau[0] - plateau[-1] < 0.011  # gently down to the wall
    assert all(w({"maxrreg": cap, "block": 256, "stages": 6}) == INVALID_SCORE for cap in range(168, 193, 8))
    assert w({"maxrreg": 176, "block": 64, "stages": 6}) != INVALID_SCORE  # a small block passes the wall
    assert w(h24.WALLED_24_BEST) == 0.95 and w(h24.WALLED_24_BEST | {"block": 128}) > 0.99
