"""The evaluation table: best, Pareto front, one score per objective."""

from __future__ import annotations

import pytest

from ciq_build.compiler.controls import Controls
from ciq_build.core.causes import Cause
from ciq_build.errors import ConfigError
from ciq_build.search.base import Proposal
from ciq_build.search.evaluation import Evaluation
from ciq_build.search.results import Results


def _ev(i, scores, cause=None, message=""):
    return Evaluation(key=f"k{i}", proposal=Proposal(id=i, generation=i // 2, params={"x": i, "f": "-O3"}),
                      controls=Controls(), ok=cause is None, cause=cause, message=message, metrics={}, spread={},
                      scores=scores, seconds=0.5 * i)


def test_best_follows_the_direction_and_skips_failures():
    rows = [_ev(0, (3.0,)), _ev(1, None, Cause.ERROR, "boom"), _ev(2, (1.0,)), _ev(3, (5.0,)), _ev(4, None, Cause.INVALID, "nan")]
    assert Results(["min"], rows).get_best_result().id == 2
    assert Results(["max"], rows).get_best_result().id == 3
    assert Results(["min"], rows[1:2]).get_best_result() is None
    assert [e.id for e in Results(["min"], rows).get_results(Cause.ERROR)] == [1]
    assert Results(["min"], rows).failures == 2


def test_a_confirmed_pick_is_the_best_scored_by_its_measurements_after_the_pick():
    rows = [_ev(0, (3.0,)), _ev(1, (1.0,)), _ev(2, (2.0,))]
    results = Results(["min"], rows)
    results.confirm("k2")
    assert results.get_best_result().id == 1  # nothing measured since: chosen as usual
    for score in (2.5, 3.5):
        results.add(_ev(2, (score,)))
    best = results.get_best_result()
    assert best.id == 2 and best.scores == (3.0,)  # the mean of 2.5 and 3.5; the 2.0 it was picked by left out


def test_pareto_front_under_mixed_directions():
    # objective 1 minimised, objective 2 maximised
    rows = [_ev(0, (1.0, 1.0)), _ev(1, (2.0, 3.0)), _ev(2, (2.0, 2.0)), _ev(3, (3.0, 3.0)), _ev(4, (1.0, 1.0)),
            _ev(5, None, Cause.INVALID)]
    front = Results(["min", "max"], rows).pareto_front()
    assert sorted(e.id for e in front) == [0, 1, 4]
    front = Results(["max", "max"], rows).pareto_front()
    assert sorted(e.id for e in front) == [3]


def test_a_configuration_measured_twice_is_on_the_front_once():
    again = _ev(6, (2.0, 3.0))
    again = Evaluation(**{**again.__dict__, "key": "k1"})  # k1 measured a second time, alike
    front = Results(["min", "max"], [_ev(0, (1.0, 1.0)), _ev(1, (2.0, 3.0)), again]).pareto_front()
    assert [e.key for e in front] == ["k0", "k1"]


def test_ok_rows_must_have_one_score_per_objective():
    with pytest.raises(ConfigError, match="expected 2"):
        Results(["min", "min"], [_ev(0, (1.0,))])
