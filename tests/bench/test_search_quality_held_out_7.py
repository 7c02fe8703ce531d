"""bench/search_quality/held_out_7.py: each problem is what its description says (interactions, optima, depths)."""

from __future__ import annotations

import itertools

import landscapes
import pytest

from bench.search_quality import held_out_7 as h7
from ciq_build import INVALID_SCORE


def _without(best: dict[str, object], name: str) -> dict[str, object]:
    return {k: v for k, v in best.items() if k != name}


def test_the_acf_like_spaces_need_their_interacting_flags_and_fail_where_described() -> None:
    for problem, best, optimum, size in ((h7.ACF_41, h7.ACF41_BEST, h7.ACF41_OPTIMUM, 41),
                                         (h7.ACF_57, h7.ACF57_BEST, h7.ACF57_OPTIMUM, 57),
                                         (h7.ACF_67, h7.ACF67_BEST, h7.ACF67_OPTIMUM, 67)):
        assert len(problem.space) == size
        assert problem.objective(best) == pytest.approx(optimum) and optimum <= problem.target
        # every parameter that matters is needed: without any one of them the target is missed
        assert all(problem.objective(_without(best, name)) > problem.target for name in best)
    a41, a57, a67 = h7.ACF_41.objective, h7.ACF_57.objective, h7.ACF_67.objective
    # a pair that helps only together: either alone is worse than neither
    assert a41({"f6": "x"}) > a41({}) and a57({"f30": "x"}) > a57({}) and a67({"f38": "x"}) > a67({})
    # a flag that hurts unless another is set
    assert a41({"f14": "x"}) > a41({}) > a41({"f14": "x", "f2": "x"})
    assert a57({"f12": "x"}) > a57({}) > a57({"f12": "x", "f26": "x"})
    assert a67({"f9": "x"}) > a67({}) > a67({"f9": "x", "f47": "x"})
    # triples: one of acf57's alone costs; each of acf67's helps a little, all three much more
    assert a57({"f8": "x"}) > a57({}) and a67({}) > a67({"f5": "x"}) > a67({"f5": "x", "f21": "x"})
    # a range whose best value a flag sets
    for problem, flag, name, with_flag, without in ((h7.ACF_41, "f29", "k1", 3, 12), (h7.ACF_57, "f33", "k2", 8, 2),
                                                    (h7.ACF_67, "f30", "k3", 11, 4)):
        values = list(problem.space[name].values())
        assert min(values, key=lambda v: problem.objective({flag: "x", name: v})) == with_flag
        assert min(values, key=lambda v: problem.objective({name: v})) == without
    assert a41(h7.ACF41_BEST | {"g0": 2}) == INVALID_SCORE
    assert a57(h7.ACF57_BEST | {"f40": "x"}) == INVALID_SCORE and a57(h7.ACF57_BEST | {"k5": 0}) == INVALID_SCORE
    assert a67(h7.ACF67_BEST | {"g2": 0}) == INVALID_SCORE and a67(h7.ACF67_BEST | {"f44": "x"}) == INVALID_SCORE


def test_hgemm7_spills_below_the_floor_but_the_cap_at_the_occupancy_step_pays_with_O_lowered() -> None:
    hgemm = h7.HGEMM_7.objective
    defaults = {"stages": 3, "block_stride": 16}
    assert hgemm(defaults) == 1.0 and h7.hgemm_7_blocks(defaults) == 1
    # every cap below the -O3 kernel's 168 registers spills: 1.2x slower 8 short, up to 40x (more blocks an SM then)
    spilled = [hgemm(defaults | {"maxrregcount": cap}) for cap in range(32, 168, 8)]
    assert spilled == sorted(spilled, reverse=True)
    assert spilled[-1] == pytest.approx(1.2) and spilled[0] == pytest.approx(40 * 0.955, rel=0.01)
    # the cap of 128 alone spills, -O2 alone is slower; together two blocks share an SM and the kernel is faster
    pair = defaults | {"maxrregcount": 128, "O": 2}
    assert hgemm(defaults | {"maxrregcount": 128}) > 2 and hgemm(defaults | {"O": 2}) > 1
    assert h7.hgemm_7_blocks(pair) == 2 and 0.95 < hgemm(pair) < 0.97
    assert h7.hgemm_7_blocks(pair | {"stages": 5}) == 1  # five stages do not fit twice in shared memory
    # the optimum, over every cap, level and tile (the cache modifiers and -lineinfo change nothing)
    scored = []
    for cap, level, stages, stride in itertools.product([None, *range(32, 249, 8)], [None, 0, 1, 2, 3], range(2, 6),
                                                        [1, 2, 4, 8, 16]):
        knobs = ({} if cap is None else {"maxrregcount": cap}) | ({} if level is None else {"O": level})
        scored.append((hgemm(knobs | {"stages": stages, "block_stride": stride}), cap, level, stages, stride))
    scored.sort(key=lambda scored_at: scored_at[0])
    assert scored[0] == (pytest.approx(h7.HGEMM_7_OPTIMUM), 128, 2, 4, 8)
    assert all(value > h7.HGEMM_7.target for value, cap, level, *_ in scored if (cap, level) != (128, 2))
    best = h7.HGEMM_7_BEST | {"dlcm": "cg", "dscm": "cs", "lineinfo": "-lineinfo"}
    assert hgemm(best) == pytest.approx(h7.HGEMM_7_OPTIMUM)
    assert min(landscapes.single_changes(h7.HGEMM_7, best)) == pytest.approx(h7.HGEMM_7_OPTIMUM)  # neutral knobs


def _ranges(values: list[int], kind: str) -> dict[str, object]:
    return {f"r{i}": v for i, v in enumerate(values)} | {"kind": kind}


def test_the_decoys_are_4_and_6_percent_deep_on_a_dimpled_and_a_pitted_plateau() -> None:
    for problem, optimum, decoy, depth, kind in ((h7.DECOY_4D, h7.DECOY_4D_OPT, h7.DECOY_4D_POINT, 0.04, "c"),
                                                 (h7.DECOY_6S, h7.DECOY_6S_OPT, h7.DECOY_6S_POINT, 0.06, "e")):
        assert problem.objective(_ranges(decoy, "a")) == pytest.approx(100 * (1 - depth))
        assert problem.objective(_ranges(optimum, kind) | {"flag": "-funsafe"}) == 0
    # the dimple: 100 at its point, rising to 100.4 twelve steps away
    dimple = h7.DECOY_4D_DIMPLE
    assert h7.DECOY_4D.objective(_ranges(dimple, "a")) == 100.0
    assert h7.DECOY_4D.objective(_ranges([d - 1 for d in dimple[:3]] + dimple[3:], "a")) == pytest.approx(100.1)
    assert h7.DECOY_4D.objective(_ranges([6, 6, 6, 6, 6, 6], "a")) == pytest.approx(100.4)
    # the pits: about 2% of the plateau at 100, the rest at 100.5, none beside another along r0
    line = [h7.DECOY_6S.objective(_ranges([v, 0, 12, 5, 6, 0, 12], "a")) for v in range(13)]
    plateau = [h7.DECOY_6S.objective(_ranges([a, b, 12, 5, 6, 0, 12], "a")) for a in range(13) for b in range(13)]
    assert set(plateau) == {100.0, 100.5} and 0 < plateau.count(100.0) <= 10 and set(line) <= {100.0, 100.5}


def test_noisy7_optimum_its_interaction_and_noise() -> None:
    ranked = landscapes.ranked(h7.NOISY_KNOBS_7)
    assert ranked[0][0] == pytest.approx(h7.NOISY_KNOBS_7_OPTIMUM)
    knobs = {"block": 256, "O": 3, "vector": 4, "prec_sqrt": False, "fmad": "-fmad=true", "ftz": "-ftz=true"}
    assert h7.noisy_knobs_7_time(knobs) == pytest.approx(h7.NOISY_KNOBS_7_OPTIMUM)
    assert h7.noisy_knobs_7_time(knobs | {"block": 512}) > h7.NOISY_KNOBS_7.target  # the widest vector, biggest block
    assert h7.NOISY_KNOBS_7.noise == 0.010 and 1 - h7.NOISY_KNOBS_7_OPTIMUM > 0.03
