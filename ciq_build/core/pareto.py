"""Pareto dominance for several objectives, each minimised or maximised: the one implementation.

Used by the GA (NSGA-II survival: :func:`non_dominated_sort`,
:func:`crowding_distance`), the tuning driver (the front, the winner against
the defaults: :func:`dominates`, :func:`non_dominated`) and the search-quality
tests (:func:`hypervolume_2d`). Every function takes the objectives'
directions; ``None`` means every objective is minimised (points already in
smaller-is-better form, as the GA keeps its fitness).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Literal

from ciq_build.errors import ConfigError

__all__ = [
    "Direction",
    "minimised",
    "dominates",
    "non_dominated",
    "non_dominated_sort",
    "crowding_distance",
    "hypervolume_2d",
]

Direction = Literal["min", "max"]


def minimised(scores: Sequence[float], directions: Sequence[Direction] | None) -> tuple[float, ...]:
    """Scores turned into smaller-is-better form (a maximised score is negated)."""
    if directions is None:
        return tuple(scores)
    if len(directions) == 1 == len(scores):  # one objective, most searches: every result told goes through here
        return (scores[0],) if directions[0] == "min" else (-scores[0],)
    return tuple(s if d == "min" else -s for s, d in zip(scores, directions, strict=True))


def _dominates_minimised(a: Sequence[float], b: Sequence[float]) -> bool:
    # A plain loop: this is the hot spot of NSGA-II (a few times faster than all()/any()).
    better = False
    for x, y in zip(a, b, strict=True):
        if x > y:
            return False
        if x < y:
            better = True
    return better


def dominates(a: Sequence[float], b: Sequence[float], directions: Sequence[Direction] | None = None) -> bool:
    """Whether scores ``a`` are at least as good as ``b`` everywhere and better somewhere."""
    return _dominates_minimised(minimised(a, directions), minimised(b, directions))


def non_dominated(points: Sequence[Sequence[float]], directions: Sequence[Direction] | None = None) -> list[int]:
    """Indices (ascending) of the points no other point dominates (duplicates all kept)."""
    keys = [minimised(p, directions) for p in points]
    front: list[int] = []
    # In lexicographic order a point can only be dominated by an earlier one, and
    # whatever dominates it is dominated by (or is) a member of the front so far.
    for i in sorted(range(len(keys)), key=lambda i: keys[i]):
        if not any(_dominates_minimised(keys[j], keys[i]) for j in front):
            front.append(i)
    return sorted(front)


def non_dominated_sort(points: Sequence[Sequence[float]], directions: Sequence[Direction] | None = None
                       ) -> list[list[int]]:
    """Indices grouped into fronts (front 0 is non-dominated; each front ascending), as NSGA-II ranks."""
    keys = [minimised(p, directions) for p in points]
    n = len(keys)
    dominated_by: list[list[int]] = [[] for _ in range(n)]
    count = [0] * n
    for i in range(n):
        for j in range(i + 1, n):
            if _dominates_minimised(keys[i], keys[j]):
                dominated_by[i].append(j)
                count[j] += 1
            elif _dominates_minimised(keys[j], keys[i]):
                dominated_by[j].append(i)
                count[i] += 1
    fronts: list[list[int]] = []
    current = [i for i in range(n) if count[i] == 0]
    while current:
        fronts.append(current)
        following = []
        for i in current:
            for j in dominated_by[i]:
                count[j] -= 1
                if count[j] == 0:
                    following.append(j)
        current = sorted(following)
    return fronts


def crowding_distance(points: Sequence[Sequence[float]], front: Sequence[int],
                      directions: Sequence[Direction] | None = None) -> dict[int, float]:
    """NSGA-II crowding distance of each member of one front (the ends of each objective get infinity)."""
    if len(front) <= 2:
        return {i: math.inf for i in front}
    keys = {i: minimised(points[i], directions) for i in front}
    distance = {i: 0.0 for i in front}
    for m in range(len(keys[front[0]])):
        ordered = sorted(front, key=lambda i: (keys[i][m], i))
        low, high = keys[ordered[0]][m], keys[ordered[-1]][m]
        distance[ordered[0]] = distance[ordered[-1]] = math.inf
        if high == low:
            continue
        for k in range(1, len(ordered) - 1):
            distance[ordered[k]] += (keys[ordered[k + 1]][m] - keys[ordered[k - 1]][m]) / (high - low)
    return distance


def hypervolume_2d(
    points: Iterable[Sequence[float]], reference: Sequence[float], directions: Sequence[Direction] = ("min", "min")
) -> float:
    """Area dominated by ``points`` and bounded by ``reference`` (two objectives)."""
    if len(directions) != 2 or len(reference) != 2:
        raise ConfigError("hypervolume_2d needs exactly two objectives")
    ref = minimised(reference, directions)
    keyed = (minimised(p, directions) for p in points)
    pts = sorted({k for k in keyed if all(a < r for a, r in zip(k, ref, strict=True))})
    area, best_y = 0.0, ref[1]
    for x, y in pts:  # sweep by the first objective; keep only steps down in the second
        if y < best_y:
            area += (ref[0] - x) * (best_y - y)
            best_y = y
    return area
