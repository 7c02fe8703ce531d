"""Which search parameters moved an objective: each one's share of its variance (eta squared), and pairs'.

The statistics behind the report's importance table and plot and its interaction table; `points` are the
scored evaluations' (search parameters, score), as TuneHistory gives them per objective.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

Points = list[tuple[dict[str, Any], float]]


@dataclass(frozen=True)
class Importance:
    """One search parameter's share of an objective's variance (TuneHistory.importance)."""

    parameter: str
    explained: float  # eta^2, 0..1
    values: int  # distinct values it took among the scored evaluations
    evaluations: int  # scored evaluations it stands on


# An interaction share stands on at least this many evaluations per value pair: with one, each pair's mean is a
# single score and the share is mostly noise (a GA's 13 evaluations over 7 knobs gave pairs "58%" on 1.3 each).
MIN_PER_CELL = 2.0


@dataclass(frozen=True)
class Interaction:
    """Two search parameters' joint share of an objective's variance beyond each one's own (TuneHistory.interactions)."""

    first: str
    second: str
    explained: float  # eta^2 of the pair's cells minus both parameters' own eta^2, at least 0
    cells: int  # distinct value pairs among the scored evaluations
    evaluations: int  # scored evaluations it stands on

    @property
    def per_cell(self) -> float:
        """Evaluations per cell: with about one, every cell's mean is its one score and the share overstates."""
        return self.evaluations / self.cells if self.cells else 0.0


def parameter_importance(points: Points, parameters: Sequence[str]) -> list[Importance]:
    """How much of the scores' variance each search parameter explains on its own, most first.

    The estimator is the correlation ratio eta^2 over the scored evaluations: group them by the
    parameter's value (unset is a value of its own), and divide the variance of the group means
    (weighted by group size) by the total variance. 1: the parameter's value alone fixes the
    score; 0: the score does not move with it. A one-parameter view (`parameter_interactions` sees pairs), and
    with few evaluations per value it overstates: `values` and `evaluations` say what it stands on.
    """
    result = []
    for name in parameters:
        explained, groups = eta_squared(points, (name,))
        result.append(Importance(name, explained, groups, len(points)))
    return sorted(result, key=lambda i: (-i.explained, i.parameter))


def parameter_interactions(points: Points, parameters: Sequence[str], top: int = 5,
                           min_per_cell: float = MIN_PER_CELL) -> list[Interaction]:
    """The `top` pairs of search parameters whose values together explain most of the scores' variance
    beyond what each explains alone (a two-way ANOVA's interaction share), most first; none above 0 left out.

    Per pair: eta^2 of its cells (the evaluations grouped by both values) minus each parameter's own
    eta^2, at least 0. A pair whose best value of one depends on the other (a tile size that pays only
    with a wide unroll) shows here while each alone explains little. The cells are many and the
    evaluations few: with about one evaluation per cell, each cell's mean is its score and the share
    overstates (`per_cell` says what it stands on), so a pair with fewer than `min_per_cell` evaluations
    per value pair is left out. Unbalanced cells (a search samples unevenly) blur it further: a hint where
    to look, not a measurement.
    """
    own = {name: eta_squared(points, (name,))[0] for name in parameters}
    found = []
    for i, first in enumerate(parameters):
        for second in parameters[i + 1:]:
            together, cells = eta_squared(points, (first, second))
            beyond = together - own[first] - own[second]
            if beyond > 1e-9 and len(points) >= min_per_cell * cells:
                found.append(Interaction(first, second, beyond, cells, len(points)))
    return sorted(found, key=lambda i: (-i.explained, i.first, i.second))[:top]


def eta_squared(points: Points, names: tuple[str, ...]) -> tuple[float, int]:
    """(eta^2, groups): the share of the scores' variance the group means explain, the evaluations grouped by
    the values of `names` (unset is a value of its own); 0 where the scores do not vary."""
    scores = np.array([score for _, score in points], dtype=float)
    groups: dict[tuple[str, ...], list[float]] = {}
    for params, score in points:
        groups.setdefault(tuple(repr(params.get(name)) for name in names), []).append(score)
    if not len(points):
        return 0.0, 0
    mean = float(scores.mean())
    total = float(((scores - mean) ** 2).sum())
    between = sum(len(g) * (float(np.mean(g)) - mean) ** 2 for g in groups.values())
    return (between / total if total > 0 else 0.0), len(groups)
