"""What the held-out sets' tests ask of a problem's landscape (bench/search_quality): its configurations ranked, and
the scores one parameter away from a point."""

from __future__ import annotations

from typing import Any

import ciq_build.core.space as ss
from ciq_build import INVALID_SCORE


def ranked(problem: Any) -> list[tuple[float, dict[str, Any]]]:
    """Every valid configuration of the problem's space with its score, best (lowest) first."""
    space = ss.SearchSpace(problem.space)
    scored = ((problem.objective(params), params)
              for params in (space.to_params(space.genome_at(i)) for i in range(space.cardinality)))
    return sorted(((v, p) for v, p in scored if v != INVALID_SCORE), key=lambda item: item[0])


def single_changes(problem: Any, best: dict[str, Any]) -> list[Any]:
    """The scores of every configuration one parameter away from ``best``."""
    out = []
    for name, param in problem.space.items():
        for value in list(param.values()) + ([None] if param.can_knockout else []):
            if value != best.get(name):
                out.append(problem.objective({k: v for k, v in best.items() if k != name}
                                             | ({} if value is None else {name: value})))
    return out
