"""A candidate's scores from an evaluation's metrics, and failures counted by cause.

The evaluation record itself is ciq_build.search.evaluation's (the search's table holds it too).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ciq_build.core.causes import Cause
from ciq_build.core.objectives import Objective, metric_key
from ciq_build.search.evaluation import Evaluation


def objective_values(objectives: Sequence[Objective], values: dict[str, float]) -> tuple[float, ...] | None:
    """The score tuple of a candidate, or None when a metric an objective needs is missing."""
    scores = []
    for objective in objectives:
        value = values.get(metric_key(objective))
        if value is None:
            return None
        scores.append(float(value))
    return tuple(scores)


def with_spills(scores: tuple[float, ...], metrics: dict[str, float]) -> tuple[float, ...]:
    """`scores` and the spill bytes of `metrics` (0 where not read): what a static tune's minimal pin compares, so that
    a control whose removal spills more at the same scores stays (GPUSorting's occupancy winner held its 64 cap's
    spills at 848 B with -Xptxas=--register-usage-level=0, which the minimal pin dropped: 936 B pinned)."""
    return (*scores, float(metrics.get("spill_bytes", 0.0)))


def jsonable(params: dict[str, Any]) -> dict[str, Any]:
    """Search parameters as JSON values (an odd type becomes its string)."""
    return {k: v if isinstance(v, (str, int, float, bool)) or v is None else str(v) for k, v in params.items()}


def failure_counts(evaluations: Sequence[Evaluation]) -> dict[str, int]:
    """How many evaluations failed, by cause."""
    counts: dict[str, int] = {}
    for e in evaluations:
        if not e.ok:
            cause = str(e.cause or Cause.ERROR)
            counts[cause] = counts.get(cause, 0) + 1
    return counts


def failure_summary(evaluations: Sequence[Evaluation]) -> str:
    """`cause n, ...` for a report line; environmental failures said apart."""
    counts = failure_counts(evaluations)
    text = ", ".join(f"{cause} {n}" for cause, n in sorted(counts.items())) or "none"
    environmental = sum(1 for e in evaluations if e.environmental)
    if environmental:
        text += f" ({environmental} environmental: not cached, run again on resume)"
    return text
