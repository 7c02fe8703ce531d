"""bench/search_quality/held_out_11.py: each problem is what its description says (optima on target and needing
each of their parameters, the pairs that must move together, failures away from the best, the decoys' depths)."""

from __future__ import annotations

import pytest

from bench.search_quality import held_out_11 as h11
from ciq_build import INVALID_SCORE
from support import assert_optimum_needs_each_parameter


def _missed(score: object, target: float) -> bool:
    return score == INVALID_SCORE or float(score) > target  # type: ignore[arg-type]


def test_each_optimum_is_on_target_and_needs_each_of_its_parameters() -> None:
    for problem, best, optimum in ((h11.PRIDGE_11, h11.PRIDGE_11_BEST, h11.PRIDGE_11_OPTIMUM),
                                   (h11.BOUNDS_11, h11.BOUNDS_11_BEST, h11.BOUNDS_11_OPTIMUM),
                                   (h11.SPLITK_11, h11.SPLITK_11_BEST, h11.SPLITK_11_OPTIMUM),
                                   (h11.ACF_47, h11.ACF47_BEST, h11.ACF47_OPTIMUM),
                                   (h11.ACF_58, h11.ACF58_BEST, h11.ACF58_OPTIMUM)):
        assert problem.target == pytest.approx(optimum * 1.01)
        assert_optimum_needs_each_parameter(problem, best, optimum)


def test_bounds11_two_stages_lose_alone_and_pay_only_with_the_cap_far_down() -> None:
    b11 = h11.BOUNDS_11.objective
    base = {"tile_k": 64, "swizzle": 2}
    caps = h11.BOUNDS_11.space["maxrreg"].values()
    assert b11(base | {"stages": 2}) == pytest.approx(1.03) and b11(base) == 1.0
    assert [c for c in caps if b11(base | {"stages": 2, "maxrreg": c}) < 1.0] == list(range(72, 86))
    assert {b11(base | {"maxrreg": c}) for c in caps if c >= 96} == {1.0}  # three stages: a neutral plateau
    assert all(b11(base | {"maxrreg": c}) > 1.1 for c in caps if c < 96)  # below what they need: spills


def test_splitk11_split_alone_loses_and_the_tile_is_a_plateau_elsewhere() -> None:
    s11 = h11.SPLITK_11.objective
    base = {"stages": 4, "epilogue": "fused"}
    tiles = h11.SPLITK_11.space["k_tile"].values()
    assert [t for t in tiles if s11(base | {"split": 5, "k_tile": t}) < 1.0] == [864, 880, 896]
    assert {s11(base | {"split": 1, "k_tile": t}) for t in tiles if t >= 192} == {1.0}
    assert all(s11(base | {"split": 5, "k_tile": t}) >= 1.042 for t in tiles if t not in (864, 880, 896))


def test_pridge11_moves_along_the_ridge_keep_the_work_and_no_failure_is_next_to_the_best() -> None:
    p11, best = h11.PRIDGE_11.objective, h11.PRIDGE_11_BEST
    ordinals = ("warps", "items", "chunks")
    for name in ordinals:  # a single step off the best changes the work: 3.5% and more
        values = list(h11.PRIDGE_11.space[name].values())
        i = values.index(best[name])
        for j in (i - 1, i + 1):
            assert p11(best | {name: values[j]}) != INVALID_SCORE
            assert p11(best | {name: values[j]}) >= 0.988 * 1.035 * 1.012 - 1e-9
    assert p11(best | {"warps": 8, "items": 8}) == pytest.approx(0.988 * 1.024)  # on the ridge: shape only
    assert p11(best | {"warps": 16, "items": 32}) == INVALID_SCORE  # registers, far from the best


def test_the_decoys_are_as_deep_as_named_and_the_basins_below_the_target() -> None:
    for problem, opt, point, depth in ((h11.DECOY_3C, h11.DECOY_3C_OPT, h11.DECOY_3C_POINT, 0.03),
                                       (h11.DECOY_8F, h11.DECOY_8F_OPT, h11.DECOY_8F_POINT, 0.08)):
        kind = {"decoy3c": "b", "decoy8v": "c"}[problem.short]
        ranges = {f"r{i}": v for i, v in enumerate(point)}
        assert problem.objective(ranges | {"kind": "a"}) == pytest.approx(100 * (1 - depth))
        basin = {f"r{i}": v for i, v in enumerate(opt)}
        assert problem.objective(basin | {"kind": kind, "flag": "-funsafe"}) == 0.0 < problem.target


def test_noisy11_optimum_is_3_percent_better_than_the_defaults_with_one_interaction() -> None:
    t = h11.noisy_knobs_11_time
    best = {"threads": 256, "unroll": 8, "cache": "cg", "restrict": "-DRESTRICT", "fast_div": "-DFAST_DIV"}
    assert t({}) == 1.0 and t(best) == pytest.approx(h11.NOISY_KNOBS_11_OPTIMUM) == pytest.approx(0.9703, abs=1e-4)
    assert t(best | {"threads": 512}) > t(best | {"threads": 512, "unroll": 4})  # the interaction
    assert h11.NOISY_KNOBS_11.noise == 0.015


def test_each_problems_short_name_is_unique_across_the_sets() -> None:
    # run.py --problems and --ours-at pick a problem by its first word: two of one name in the sets (`all`) is an error
    import importlib

    from bench.search_quality.problems import TUNING

    names = [p.short for p in TUNING]
    for module in ["held_out"] + [f"held_out_{n}" for n in range(2, 13)]:
        held = importlib.import_module(f"bench.search_quality.{module}")
        names += [p.short for p in getattr(held, "HELD_OUT" if module == "held_out" else f"HELD_OUT_{module[9:]}")]
    assert len(names) == len(set(names)), sorted(n for n in set(names) if names.count(n) > 1)
