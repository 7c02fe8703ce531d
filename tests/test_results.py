"""The evaluation table: best, Pareto front, CSV/JSON round trips, extension by subclassing."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from ciq_build.errors import ConfigError
from ciq_build.core.results import Evaluation, Results, hypervolume_2d


def _ev(i, scores, status="ok", reason=""):
    return Evaluation(id=i, generation=i // 2, params={"x": i, "f": "-O3"}, scores=scores, status=status,
                      reason=reason, wall_time=0.5 * i)


def test_best_follows_the_direction_and_skips_failures():
    rows = [_ev(0, (3.0,)), _ev(1, None, "error", "boom"), _ev(2, (1.0,)), _ev(3, (5.0,)), _ev(4, None, "invalid", "nan")]
    assert Results(["min"], rows).get_best_result().id == 2
    assert Results(["max"], rows).get_best_result().id == 3
    assert Results(["min"], rows[1:2]).get_best_result() is None
    assert [e.id for e in Results(["min"], rows).get_results("error")] == [1]
    assert Results(["min"], rows).failures == 2


def test_pareto_front_under_mixed_directions():
    # objective 1 minimised, objective 2 maximised
    rows = [_ev(0, (1.0, 1.0)), _ev(1, (2.0, 3.0)), _ev(2, (2.0, 2.0)), _ev(3, (3.0, 3.0)), _ev(4, (1.0, 1.0)),
            _ev(5, None, "invalid")]
    front = Results(["min", "max"], rows).pareto_front()
    assert sorted(e.id for e in front) == [0, 1, 4]
    front = Results(["max", "max"], rows).pareto_front()
    assert sorted(e.id for e in front) == [3]


def test_ok_rows_must_have_one_score_per_objective():
    with pytest.raises(ConfigError, match="expected 2"):
        Results(["min", "min"], [_ev(0, (1.0,))])


@dataclass(kw_only=True)
class DriverEvaluation(Evaluation):
    """What the build driver adds to each record."""

    metrics: dict = field(default_factory=dict)
    cause: str = ""
    key: str = ""


@pytest.mark.parametrize("suffix", [".csv", ".json"])
def test_save_and_load_round_trip_with_extra_fields(tmp_path, suffix):
    rows = [
        DriverEvaluation(id=0, generation=0, params={"knob.maxrregcount": 64}, scores=(1.5, -2.0),
                         wall_time=0.25, metrics={"registers": 64}, cause="", key='{"a":1}'),
        DriverEvaluation(id=1, generation=0, params={}, scores=None, status="error",
                         reason="compile failed: ptxas, said \"no\"", metrics={}, cause="compile_failed"),
    ]
    results = Results(["min", "max"], rows, objective_names=["time", "occupancy"])
    path = tmp_path / f"results{suffix}"
    results.save(path)
    loaded = Results.load(path, record_type=DriverEvaluation)
    assert loaded.directions == ("min", "max")
    assert loaded.objective_names == ("time", "occupancy")
    assert [e.to_dict() for e in loaded] == [e.to_dict() for e in rows]


def test_loading_garbage_is_a_clear_error(tmp_path):
    bad = tmp_path / "r.json"
    bad.write_text("{not json")
    with pytest.raises(ConfigError, match="cannot read results"):
        Results.load(bad)
    with pytest.raises(ConfigError, match=".json or .csv"):
        Results.load(tmp_path / "r.txt")


def test_hypervolume_2d():
    # Two points against reference (4, 4): union of [1,4]x[3,4] and [3,4]x[1,4] = 3 + 3 - 1
    assert hypervolume_2d([(1, 3), (3, 1)], (4, 4)) == 5.0
    assert hypervolume_2d([(1, 3), (3, 1), (3, 3), (5, 0)], (4, 4)) == 5.0  # dominated / outside ignored
    assert hypervolume_2d([(-1, 3)], (-4, 4), ("max", "min")) == 3.0
