"""bench/search_quality/held_out_8.py: each problem is what its description says (interactions, optima, failures)."""

from __future__ import annotations

import math

import pytest

from bench.search_quality import held_out_8 as h8
from ciq_build import INVALID_SCORE
from ciq_build.core.space import as_space
from ciq_build.search.portfolio import flag_space


def _without(best: dict[str, object], name: str) -> dict[str, object]:
    return {k: v for k, v in best.items() if k != name}


def test_each_space_needs_every_parameter_of_its_optimum_and_is_a_flag_space() -> None:
    for problem, best, optimum, size in ((h8.ACF_48T, h8.ACF48T_BEST, h8.ACF48T_OPTIMUM, 48),
                                         (h8.ACF_44R, h8.ACF44R_BEST, h8.ACF44R_OPTIMUM, 44),
                                         (h8.ACF_62Q, h8.ACF62Q_BEST, h8.ACF62Q_OPTIMUM, 62)):
        assert len(problem.space) == size and flag_space(as_space(problem.space))
        assert problem.objective(best) == pytest.approx(optimum) and optimum <= problem.target
        assert all(problem.objective(_without(best, name)) > problem.target for name in best)


def test_acf48t_fails_by_triples_whose_every_pair_works() -> None:
    a48 = h8.ACF_48T.objective
    best = h8.ACF48T_BEST
    assert a48(best | {"f25": "x"}) == INVALID_SCORE
    assert all(a48({k: "x" for k in pair}) != INVALID_SCORE for pair in (("f3", "f17"), ("f3", "f25"), ("f17", "f25")))
    assert a48({"f11": "x", "g1": 2, "k9": 9}) == INVALID_SCORE
    assert a48({"f11": "x", "g1": 2}) != INVALID_SCORE and a48({"g1": 2, "k9": 9}) != INVALID_SCORE
    assert a48({"f8": "x"}) > a48({}) and a48({"f27": "x"}) > a48({}) > a48({"f8": "x", "f27": "x"})


def test_acf44r_gains_in_ranges_with_interior_optima_and_a_sum_ridge() -> None:
    def a44(p: dict[str, object]) -> float:  # a scattered failure scores no better than any value
        score = h8.ACF_44R.objective(p)
        return math.inf if score == INVALID_SCORE else score

    for name, best in (("k1", 5), ("k6", 10), ("k9", 12)):
        assert min(range(16), key=lambda v: a44({name: v})) == best
    ridge = {a44({"k3": k, "k12": 15 - k}) for k in range(16)} - {math.inf}  # the whole ridge alike
    assert len(ridge) == 1 and min(ridge) < a44({"k3": 7, "k12": 7}) < a44({})
    assert a44({"f5": "x"}) > a44({}) > a44({"f5": "x", "f19": "x"})
    assert a44({"f5": "x", "k9": 14}) == math.inf and a44({"k9": 14}) < math.inf


def test_acf62q_needs_its_quadruple_whole_and_fails_where_described() -> None:
    a62 = h8.ACF_62Q.objective
    quad = ("f2", "f13", "f31", "f40")
    for k in range(1, 4):
        assert a62({name: "x" for name in quad[:k]}) > a62({})
    assert a62({name: "x" for name in quad}) < a62({})
    assert a62({"f7": "x"}) > a62({}) and a62({"f22": "x"}) > a62({}) > a62({"f7": "x", "f22": "x"})
    assert min(range(10), key=lambda v: a62({"g5": 3, "k4": v})) == 2 and min(range(10), key=lambda v: a62({"k4": v})) == 7
    assert a62({"f7": "x", "f29": "x"}) == INVALID_SCORE
    assert a62({"f13": "x", "f18": "x", "f36": "x"}) == INVALID_SCORE and a62({"f13": "x", "f36": "x"}) != INVALID_SCORE
