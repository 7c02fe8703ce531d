"""bench/search_quality/held_out_21.py: each problem is what its description says (optima on target and needing each
of their parameters, the decoys' depths, the tilt and the egg crate, the diamond basin, the ridge with nothing failing
near its best, the noisy knobs' interactions and size, the ACF-like spaces' flags needing choices' and ranges' values,
their pair, triple, overlap and failures)."""

from __future__ import annotations

import pytest

from bench.search_quality import held_out_21 as h21
from ciq_build import INVALID_SCORE
from ciq_build.core.space import as_space
from support import assert_optimum_needs_each_parameter


def test_each_optimum_is_on_target_and_needs_each_of_its_parameters() -> None:
    for problem, best, optimum, within in ((h21.PRIDGE_21T, h21.PRIDGE_21T_BEST, h21.PRIDGE_21T_OPTIMUM, 1.005),
                                           (h21.ACF_52, h21.ACF52_BEST, h21.ACF52_OPTIMUM, 1.01),
                                           (h21.ACF_58, h21.ACF58_BEST, h21.ACF58_OPTIMUM, 1.01)):
        assert problem.target == pytest.approx(optimum * within)
        assert_optimum_needs_each_parameter(problem, best, optimum)


def test_decoy2t_is_2_percent_deep_on_a_noisy_plateau_tilted_towards_it_and_its_basin_needs_the_wide_fetch() -> None:
    d2 = h21.DECOY_2T.objective

    def at(point: list[int], fetch: str = "narrow") -> dict[str, object]:
        return {f"t{i}": v for i, v in enumerate(point)} | {"fetch": fetch}

    assert d2(at(h21.DECOY_2T_POINT)) == pytest.approx(98.0)
    assert d2(at(h21.DECOY_2T_OPT, "wide")) == 0.0 < d2(at(h21.DECOY_2T_OPT)) == 4.0 < h21.DECOY_2T.target
    far, near = at([0, 14, 0, 0, 14, 14]), at([0, 14, 0, 14, 14, 14])  # t3 far from the decoy's 10, then nearer
    assert 100.0 < d2(near) < d2(far) <= 100.3  # the tilt falls towards the decoy
    assert h21.DECOY_2T.noise == 0.006


def test_decoy9d_is_9_percent_deep_on_an_egg_crate_and_its_basin_is_a_diamond() -> None:
    d9 = h21.DECOY_9D.objective
    basin = {f"e{i}": v for i, v in enumerate(h21.DECOY_9D_OPT)}
    assert d9(basin | {"stream": "-DSTREAM_K"}) == 0.0 and d9(basin) == 3.0
    assert d9(basin | {"e0": 19}) == 9.0  # 6 off along one range is in it
    assert d9(basin | {"e0": 17, "e1": 9}) > 99  # 4 + 3 off, summed, is not
    assert d9({f"e{i}": v for i, v in enumerate(h21.DECOY_9D_POINT)}) == pytest.approx(91.0)
    crate = [d9({"e0": 0, "e1": e1, "e2": 19, "e3": e3, "e4": 0}) for e1 in range(20) for e3 in range(20)]
    assert 100.0 <= min(crate) < 100.01 and 100.19 < max(crate) <= 100.2


def test_pridge21t_keeps_its_work_along_the_product_and_nothing_fails_near_the_best() -> None:
    p21, best = h21.PRIDGE_21T.objective, h21.PRIDGE_21T_BEST
    assert p21(best | {"split_k": 4}) == pytest.approx(0.995 * 1.05 * 1.006)  # off the product by a doubling
    assert p21(best | {"rows": 128, "col_blocks": 4}) == pytest.approx(0.995 * 1.024)  # on it: the shape only
    assert p21(best | {"rows": 128, "col_blocks": 4}) > h21.PRIDGE_21T.target
    near = [best | {"rows": r, "col_blocks": c, "split_k": s} for r in (16, 32, 64, 128, 256) for c in range(4, 13)
            for s in range(1, 5)]
    assert INVALID_SCORE not in [p21(p) for p in near]
    assert p21({"rows": 256, "col_blocks": 20, "split_k": 4, "swizzle": "x2"}) == INVALID_SCORE  # only far off it
    assert as_space(h21.PRIDGE_21T.space).cardinality == 3600


def test_noisy21_optimum_needs_async_copies_with_3_stages_and_has_more_configurations_than_the_budget() -> None:
    t = h21.noisy_knobs_21_time
    best = {"block": 256, "wide": "-DWIDE_STORES", "stages": 3, "async": "-DASYNC_COPY", "unroll": 2,
            "fastmath": "--use_fast_math"}
    assert t({}) == 1.0 and t(best) == pytest.approx(h21.NOISY_KNOBS_21_OPTIMUM) == pytest.approx(0.9548, abs=1e-3)
    assert t({"async": "-DASYNC_COPY", "stages": 2}) > t({"stages": 2}) > t(best | {"stages": 2})  # needs >= 3
    assert t({"wide": "-DWIDE_STORES", "block": 128}) > t({"block": 128})  # wide stores need a block of 256
    assert t(best | {"nocache": "-DBYPASS_L1"}) > h21.NOISY_KNOBS_21.target
    assert h21.NOISY_KNOBS_21.noise == 0.016
    assert as_space(h21.NOISY_KNOBS_21.space).cardinality == 2560  # more than the budget of 640


def test_the_acf_like_spaces_pair_flags_with_choices_and_ranges_and_fail_where_described() -> None:
    a52, b52 = h21.ACF_52.objective, h21.ACF52_BEST
    assert a52({"h4": "--acf21a-4"}) > 1.0 > a52({"h4": "--acf21a-4", "k3": "y"})  # h4 needs k3 = "y"
    assert a52({"h9": "--acf21a-9"}) > 1.0 > a52({"h9": "--acf21a-9", "h22": "--acf21a-22"})  # a pair
    two = {"h12": "--acf21a-12", "h18": "--acf21a-18"}
    assert a52(two) == 1.0 > a52(two | {"h29": "--acf21a-29"})  # a triple that helps only whole
    assert a52({"r2": 5}) < a52({"r2": 12}) < 1.0  # r2 best low, at 5
    assert a52({"h1": "--acf21a-1", "r6": 5}) > 1.0 > a52({"h1": "--acf21a-1", "r6": 4})  # h1 needs r6 low
    assert a52(b52 | {"k0": "x"}) == INVALID_SCORE and a52(b52 | {"r9": 14}) == INVALID_SCORE
    assert a52(b52 | {"h3": "--acf21a-3", "r4": 2}) == INVALID_SCORE  # a flag with a range low
    a58, b58 = h21.ACF_58.objective, h21.ACF58_BEST
    assert a58({"e6": "--acf21b-6"}) > 1.0 > a58({"e6": "--acf21b-6", "n2": 1})  # e6 needs n2 <= 2
    assert a58({"e6": "--acf21b-6", "n2": 4}) > 1.0
    assert a58({"e14": "--acf21b-14", "v7": 17}) > 1.0 > a58({"e14": "--acf21b-14", "v7": 18})  # v7 high
    assert a58({"e19": "--acf21b-19"}) == a58({"e25": "--acf21b-25"}) < 1.0  # either helps alone
    assert a58({"e19": "--acf21b-19", "e25": "--acf21b-25"}) > 1.0  # both cost
    assert a58({"e2": "--acf21b-2"}) > 1.0 > a58({"e2": "--acf21b-2", "e33": "--acf21b-33"})  # a pair
    assert a58(b58 | {"c2": "r"}) == INVALID_SCORE and a58(b58 | {"e11": "--acf21b-11"}) == INVALID_SCORE
    assert a58(b58 | {"v3": 20, "v8": 21}) == INVALID_SCORE  # two ranges summing too high
