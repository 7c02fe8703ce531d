"""ciq_build.measure.sizes: how several problem sizes combine into one value per metric."""

from __future__ import annotations

import math

import pytest

from ciq_build.measure.sizes import combine, size_ratios

BASE = {"time_ms@small": 1.0, "time_ms@large": 4.0}


def test_geomean_is_the_geometric_mean_of_the_ratios_scaled_by_the_defaults() -> None:
    values = combine({"small": {"time_ms": 0.5}, "large": {"time_ms": 4.8}}, "geomean", BASE)
    assert values["time_ms@small"] == 0.5 and values["time_ms@large"] == 4.8
    # Its ratio to the defaults' combined value (geomean(1, 4) = 2) is the geometric mean of the ratios.
    assert values["time_ms"] / 2.0 == pytest.approx(math.sqrt(0.5 * 1.2))


def test_worst_takes_the_worst_ratio_in_each_metrics_direction() -> None:
    per_size = {"small": {"time_ms": 0.5, "gflops": 30.0}, "large": {"time_ms": 4.8, "gflops": 10.0}}
    reference = {**BASE, "gflops@small": 20.0, "gflops@large": 20.0}
    values = combine(per_size, "worst", reference, maximized=("gflops",))
    assert values["time_ms"] / 2.0 == pytest.approx(1.2)  # the large size's loss
    assert values["gflops"] / 20.0 == pytest.approx(0.5)  # more is better: the smallest ratio


def test_worst_without_a_reference_is_the_defaults_own_geomean_and_a_metric_not_every_size_prints_is_not_combined(
        ) -> None:
    values = combine({"small": {"time_ms": 1.0, "extra_ms": 1.0}, "large": {"time_ms": 4.0}}, "worst", {})
    assert values["time_ms"] == pytest.approx(2.0)
    assert "extra_ms" not in values and values["extra_ms@small"] == 1.0


def test_a_value_of_zero_has_no_ratio_and_no_combined_value() -> None:
    assert "x" not in combine({"a": {"x": 0.0}, "b": {"x": 1.0}}, "geomean", {})


def test_an_unknown_score_is_refused() -> None:
    with pytest.raises(ValueError, match="geomean, worst"):
        combine({"a": {"x": 1.0}}, "mean", {})


def test_size_ratios_are_candidate_over_defaults_per_size() -> None:
    assert size_ratios({"time_ms@small": 0.5, "time_ms@large": 4.8}, BASE, "time_ms", ["small", "large"]) == \
        pytest.approx({"small": 0.5, "large": 1.2})
