"""bench/search_quality/held_out_22.py: each problem is what its description says (optima on target and needing each
of their parameters, the decoys' depths, the sloping plateau and the cliff, the ridge with nothing failing near its
best, the noisy knobs' interactions and size, the ACF-like spaces' flags needing a choice's and a range's values, their
pairs, triple, overlap and failures), and nothing else is on target: the two small spaces counted whole, the others
sampled."""

from __future__ import annotations

import pytest

from bench.search_quality import held_out_22 as h22
from ciq_build import INVALID_SCORE
from ciq_build.core.space import as_space
from support import assert_optimum_needs_each_parameter, draws_on_target, whole_space_on_target


def test_each_optimum_is_on_target_and_needs_each_of_its_parameters() -> None:
    for problem, best, optimum, within in ((h22.PRIDGE_22V, h22.PRIDGE_22V_BEST, h22.PRIDGE_22V_OPTIMUM, 1.005),
                                           (h22.NOISY_KNOBS_22, h22.NOISY_KNOBS_22_BEST, h22.NOISY_KNOBS_22_OPTIMUM,
                                            1.005),
                                           (h22.ACF_46X, h22.ACF46X_BEST, h22.ACF46X_OPTIMUM, 1.01),
                                           (h22.ACF_57Y, h22.ACF57Y_BEST, h22.ACF57Y_OPTIMUM, 1.01)):
        assert problem.target == pytest.approx(optimum * within)
        assert_optimum_needs_each_parameter(problem, best, optimum)


def test_the_small_spaces_have_their_optimum_alone_on_target() -> None:
    for problem, best, size in ((h22.PRIDGE_22V, h22.PRIDGE_22V_BEST, 1152),
                                (h22.NOISY_KNOBS_22, h22.NOISY_KNOBS_22_BEST, 6400)):
        assert as_space(problem.space).cardinality == size > 640  # more configurations than the budget
        assert whole_space_on_target(problem)[0] == [best], problem.short


def test_decoy5q_is_5_percent_deep_on_a_noisy_plateau_sloping_towards_it() -> None:
    d5 = h22.DECOY_5Q.objective

    def at(point: list[int], layout: str = "row") -> dict[str, object]:
        return {f"r{i}": v for i, v in enumerate(point)} | {"layout": layout}

    assert d5(at(h22.DECOY_5Q_POINT)) == pytest.approx(95.0)
    assert d5(at(h22.DECOY_5Q_OPT, "tile")) == 0.0 < d5(at(h22.DECOY_5Q_OPT)) == 4.0 < h22.DECOY_5Q.target
    far, nearer = [25, 0, 25, 25], [14, 0, 25, 25]  # the plateau falls towards the decoy's point
    assert 100.0 < d5(at(nearer)) < d5(at(far)) <= 100.3 and d5(at(far)) == d5(at(far, "tile"))
    assert h22.DECOY_5Q.noise == 0.007
    on, failed = draws_on_target(h22.DECOY_5Q, 20_000, seed=22)  # the basin only: (5/26)**4 = 0.14%
    assert 10 <= on <= 50 and failed == 0


def test_decoy9k_is_9_percent_deep_on_a_plateau_with_a_cliff_on_its_side() -> None:
    d9 = h22.DECOY_9K.objective

    def at(point: list[int], order: str = "linear") -> dict[str, object]:
        return {f"k{i}": v for i, v in enumerate(point)} | {"order": order}

    assert d9(at(h22.DECOY_9K_POINT)) == pytest.approx(91.0)
    assert d9(at(h22.DECOY_9K_OPT, "zigzag")) == 0.0 < d9(at(h22.DECOY_9K_OPT)) == 3.0 < h22.DECOY_9K.target
    assert d9(at([0, 0, 17, 17, 0])) == 99.6 and d9(at([17, 0, 17, 17, 0])) == 100.0  # the cliff, lower by the decoy
    assert h22.DECOY_9K.noise == 0.004
    on, failed = draws_on_target(h22.DECOY_9K, 20_000, seed=22)  # the basin only: (5/18)**5 = 0.16%
    assert 12 <= on <= 55 and failed == 0


def test_pridge22v_keeps_its_work_along_the_product_and_nothing_fails_near_the_best() -> None:
    p22, best = h22.PRIDGE_22V.objective, h22.PRIDGE_22V_BEST
    assert p22(best | {"items": 8}) == pytest.approx(0.994 * 1.05)  # off the product by a doubling
    assert p22(best | {"block": 128, "items": 8}) == pytest.approx(0.994 * 1.008)  # on it: the shape only
    near = [best | {"block": b, "items": i, "vector": v} for b in (64, 128, 256, 512, 1024) for i in range(1, 17)
            for v in (1, 2, 4, 8) if b * i * v <= 16 * 4096]  # up to 16 times the best product
    assert INVALID_SCORE not in [p22(p) for p in near]
    assert p22({"block": 1024, "items": 16, "vector": 8, "sched": "dynamic"}) == INVALID_SCORE  # only far off
    assert whole_space_on_target(h22.PRIDGE_22V)[1] == 24  # 2% fail, all far off the ridge


def test_noisy22_needs_the_vector_flag_with_an_unroll_of_4_and_one_copy_flag_not_both() -> None:
    t, best = h22.noisy_knobs_22_time, h22.NOISY_KNOBS_22_BEST
    assert t({}) == 1.0 and t(best) == pytest.approx(h22.NOISY_KNOBS_22_OPTIMUM) == pytest.approx(0.951, abs=1e-3)
    assert t({"vec": "-DVECTORISE", "unroll": 2}) > t({"unroll": 2}) > t(best | {"unroll": 2})  # needs >= 4
    assert t({"vec": "-DVECTORISE", "unroll": 8}) < t({"unroll": 8})
    tma, copy = {"tma": "-DUSE_TMA"}, {"async": "-DASYNC_COPY"}
    assert t(tma) < t(copy) < 1.0 < t(tma | copy)  # each helps alone, both cost
    assert t(best | {"prefetch": "-DPREFETCH_L2"}) > h22.NOISY_KNOBS_22.target
    assert h22.NOISY_KNOBS_22.noise == 0.013


def test_acf46x_pairs_flags_with_a_choice_and_a_range_and_fails_where_described() -> None:
    a46, b46 = h22.ACF_46X.objective, h22.ACF46X_BEST
    assert len(h22.ACF_46X.space) == 46
    assert a46({"e3": "--acf22x-3"}) > 1.0 > a46({"e3": "--acf22x-3", "c2": "w"})  # e3 needs c2 = "w"
    assert a46({"e7": "--acf22x-7"}) > 1.0 > a46({"e7": "--acf22x-7", "e19": "--acf22x-19"})  # a pair
    two = {"e10": "--acf22x-10", "e14": "--acf22x-14"}
    assert a46(two) > 1.0 > a46(two | {"e22": "--acf22x-22"})  # a triple, helping only whole
    assert a46({"n4": 9}) < a46({"n4": 6}) < 1.0 < a46({"n4": 19})  # n4 best in the middle
    assert a46({"e16": "--acf22x-16", "n1": 13}) > 1.0 > a46({"e16": "--acf22x-16", "n1": 14})  # n1 at 14 or more
    assert a46(b46 | {"c5": "x"}) == INVALID_SCORE and a46(b46 | {"n8": 17}) == INVALID_SCORE
    assert a46(b46 | {"c5": "w", "n8": 16}) != INVALID_SCORE
    on, failed = draws_on_target(h22.ACF_46X, 4_000, seed=22)  # 0.006% on target, 12% fail
    assert on <= 2 and 380 <= failed <= 620


def test_acf57y_pairs_flags_with_a_numeric_choice_and_ranges_and_overlaps_two() -> None:
    a57, b57 = h22.ACF_57Y.objective, h22.ACF57Y_BEST
    assert len(h22.ACF_57Y.space) == 57
    assert a57({"g5": "--acf22y-5", "v1": 4}) > 1.0 > a57({"g5": "--acf22y-5", "v1": 2})  # v1 at 2 or less
    g12, g30 = {"g12": "--acf22y-12"}, {"g30": "--acf22y-30"}
    assert a57(g12) < a57(g12 | g30) < a57(g30) < 1.0  # overlapping: both less than the better alone
    g8 = {"g8": "--acf22y-8", "w0": 1}  # (w0 does not matter: without it the pair falls in the scattered 4%)
    assert a57(g8) > 1.0 > a57(g8 | {"g21": "--acf22y-21"})  # a pair
    assert a57({"w6": 17}) < a57({"w6": 14}) < 1.0 < a57({"w6": 0})  # w6 best high
    assert a57({"g26": "--acf22y-26", "w2": 4}) > 1.0 > a57({"g26": "--acf22y-26", "w2": 3})  # w2 at 3 or less
    assert a57(b57 | {"v4": 8}) == INVALID_SCORE and a57(b57 | {"v4": 4}) != INVALID_SCORE
    on, failed = draws_on_target(h22.ACF_57Y, 4_000, seed=22)  # 0.024% on target, 10% fail
    assert on <= 5 and 300 <= failed <= 520
