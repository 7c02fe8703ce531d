"""bench/search_quality/held_out_20.py: each problem is what its description says (optima on target and needing each
of their parameters, the decoys' depths, the ledge and the concentric ripples, the ridge with nothing failing near its
best, the noisy knobs' interactions and size, the ACF-like space's flags needing a choice's and a range's values, its
pair and failures, the cluster knobs' failures next to the best), and nothing else is on target: the three small spaces
counted whole, the others sampled."""

from __future__ import annotations

import math

import pytest

from bench.search_quality import held_out_20 as h20
from ciq_build import INVALID_SCORE
from ciq_build.core.space import as_space
from support import assert_optimum_needs_each_parameter, draws_on_target, whole_space_on_target


def test_each_optimum_is_on_target_and_needs_each_of_its_parameters() -> None:
    for problem, best, optimum, within in ((h20.PRIDGE_20K, h20.PRIDGE_20K_BEST, h20.PRIDGE_20K_OPTIMUM, 1.005),
                                           (h20.NOISY_KNOBS_20, h20.NOISY_KNOBS_20_BEST, h20.NOISY_KNOBS_20_OPTIMUM,
                                            1.005),
                                           (h20.ACF_42, h20.ACF42_BEST, h20.ACF42_OPTIMUM, 1.01),
                                           (h20.CLUSTER_20, h20.CLUSTER_20_BEST, h20.CLUSTER_20_OPTIMUM, 1.005)):
        assert problem.target == pytest.approx(optimum * within)
        assert_optimum_needs_each_parameter(problem, best, optimum)


def test_the_small_spaces_have_their_optimum_alone_on_target() -> None:
    for problem, best, size in ((h20.PRIDGE_20K, h20.PRIDGE_20K_BEST, 5600),
                                (h20.NOISY_KNOBS_20, h20.NOISY_KNOBS_20_BEST, 3840),
                                (h20.CLUSTER_20, h20.CLUSTER_20_BEST, 4032)):
        assert as_space(problem.space).cardinality == size > 640  # more configurations than the budget
        assert whole_space_on_target(problem)[0] == [best], problem.short


def test_decoy3l_is_3_percent_deep_on_a_noisy_ledge_leading_away_from_the_basin() -> None:
    d3 = h20.DECOY_3L.objective

    def at(point: list[int], kernel: str = "split") -> dict[str, object]:
        return {f"l{i}": v for i, v in enumerate(point)} | {"kernel": kernel}

    assert d3(at(h20.DECOY_3L_POINT)) == pytest.approx(97.0)
    assert d3(at(h20.DECOY_3L_OPT, "fused")) == 0.0 < d3(at(h20.DECOY_3L_OPT)) == 4.0 < h20.DECOY_3L.target
    far = [0, 0, 23, 0]
    assert d3(at(far, "fused")) == pytest.approx(100.3) and d3(at(far)) == d3(at(far, "naive")) == 100.0  # the ledge
    assert h20.DECOY_3L.noise == 0.008
    on, failed = draws_on_target(h20.DECOY_3L, 20_000, seed=20)  # the basin only: (5/24)**4 = 0.19%
    assert 15 <= on <= 60 and failed == 0


def test_decoy7c_is_7_percent_deep_on_concentric_ripples_and_its_basin_needs_a_swizzle_of_4() -> None:
    d7 = h20.DECOY_7C.objective

    def at(point: list[int], swizzle: int = 1) -> dict[str, int]:
        return {f"q{i}": v for i, v in enumerate(point)} | {"swizzle": swizzle}

    assert d7(at(h20.DECOY_7C_POINT)) == pytest.approx(93.0)
    assert d7(at(h20.DECOY_7C_OPT, 4)) == 0.0 < d7(at(h20.DECOY_7C_OPT)) == 3.0 < h20.DECOY_7C.target
    centre = h20.DECOY_7C_CENTRE
    assert d7(at(centre)) == pytest.approx(100.2)
    ring = [[*centre[:i], centre[i] + sign * 5, *centre[i + 1:]] for i in range(5) for sign in (1, -1)]
    assert all(d7(at(p)) == pytest.approx(100.2) for p in ring)  # the same in every direction, period 5
    trough = [c + (3 if i == 0 else 4 if i == 1 else 0) for i, c in enumerate(centre)]  # 5 from the centre
    assert math.dist(trough, centre) == 5 and d7(at(trough)) == pytest.approx(100.2)
    assert d7(at([c + 2 if i == 0 else c for i, c in enumerate(centre)])) < 100.04  # half a period out: a trough
    on, failed = draws_on_target(h20.DECOY_7C, 20_000, seed=20)  # the basin only: (5/20)**5 = 0.098%
    assert 5 <= on <= 40 and failed == 0


def test_pridge20k_keeps_its_work_along_the_product_and_nothing_fails_near_the_best() -> None:
    p20, best = h20.PRIDGE_20K.objective, h20.PRIDGE_20K_BEST
    assert p20(best | {"blocks": 4}) == pytest.approx(0.993 * 1.05 * 1.006)  # off the product by a doubling
    assert p20(best | {"ktile": 32, "stages": 8}) == pytest.approx(0.993 * 1.018)  # on it: the shape only
    near = [best | {"ktile": k, "stages": s, "blocks": b} for k in (16, 32, 64, 128, 256) for s in range(1, 13)
            for b in range(1, 6)]  # up to 30 times the best product
    assert INVALID_SCORE not in [p20(p) for p in near]
    assert p20({"ktile": 512, "stages": 20, "blocks": 2, "raster": "along_n"}) == INVALID_SCORE  # only far off
    assert whole_space_on_target(h20.PRIDGE_20K)[1] == 852  # 15% fail, all far off the ridge


def test_noisy20_needs_the_split_phase_with_4_items_and_one_reduction_not_both() -> None:
    t, best = h20.noisy_knobs_20_time, h20.NOISY_KNOBS_20_BEST
    assert t({}) == 1.0 and t(best) == pytest.approx(h20.NOISY_KNOBS_20_OPTIMUM) == pytest.approx(0.9472, abs=1e-3)
    assert t({"split": "-DSPLIT_PHASE", "items": 2}) > t({"items": 2}) > t(best | {"items": 2})  # needs >= 4 items
    assert t({"split": "-DSPLIT_PHASE", "items": 8}) < t({"items": 8})
    shuffle, smem = {"shuffle": "-DWARP_SHUFFLE_REDUCE"}, {"smem": "-DSMEM_REDUCE"}
    assert t(shuffle) < t(smem) < 1.0 < t(shuffle | smem)  # each helps alone, both cost
    assert t(best | {"nounroll": "-DNO_UNROLL"}) > h20.NOISY_KNOBS_20.target
    assert h20.NOISY_KNOBS_20.noise == 0.011


def test_acf42_pairs_flags_with_a_choice_and_a_range_and_fails_where_described() -> None:
    a42, b42 = h20.ACF_42.objective, h20.ACF42_BEST
    assert a42({"h4": "--acf20a-4"}) > 1.0 > a42({"h4": "--acf20a-4", "m1": "q"})  # h4 needs m1 = "q"
    assert a42({"h9": "--acf20a-9"}) > 1.0 > a42({"h9": "--acf20a-9", "h17": "--acf20a-17"})  # a pair
    assert a42({"t2": 5}) < a42({"t2": 12}) < 1.0 < a42({"t2": 23})  # t2 best low
    assert a42({"h13": "--acf20a-13", "t0": 13}) > 1.0 > a42({"h13": "--acf20a-13", "t0": 12})  # t0 at 12 or less
    assert a42({"h13": "--acf20a-13"}) > 1.0
    assert a42(b42 | {"m0": "p"}) == INVALID_SCORE and a42(b42 | {"t7": 3}) == INVALID_SCORE
    assert a42(b42 | {"m0": "q", "t7": 4}) != INVALID_SCORE
    on, failed = draws_on_target(h20.ACF_42, 4_000, seed=20)  # 0.0045% on target, 13% fail
    assert on <= 2 and 400 <= failed <= 650


def test_cluster20_fails_next_to_its_best_where_a_cluster_does_not_divide_the_row_of_ctas() -> None:
    c20, best = h20.CLUSTER_20.objective, h20.CLUSTER_20_BEST
    assert c20(best | {"tile": 128}) == c20(best | {"tile": 256}) == INVALID_SCORE  # 18 and 9 CTAs: not by 4
    assert c20(best | {"cluster": 8}) == INVALID_SCORE  # 12 CTAs
    assert c20(best | {"cluster": 6}) == c20(best | {"cluster": 3}) == INVALID_SCORE  # multicast needs a power of 2
    assert c20({k: v for k, v in best.items() if k != "multicast"} | {"cluster": 6}) > h20.CLUSTER_20.target
    assert c20({"multicast": "-DTMA_MULTICAST", "stages": 4}) > c20({"stages": 4})  # multicast needs a cluster
    assert c20(best | {"tile": 96, "cluster": 8}) != INVALID_SCORE  # the largest cluster divides 24 CTAs
    assert c20(best | {"persistent": "-DPERSISTENT"}) > h20.CLUSTER_20.target
    assert whole_space_on_target(h20.CLUSTER_20)[1] == 1488  # 37% of the space fails
