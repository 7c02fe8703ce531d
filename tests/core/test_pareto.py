"""Pareto dominance, fronts, crowding and hypervolume, under each objective's direction (core/pareto)."""

from __future__ import annotations

import math
import random

import pytest

from ciq_build.core.pareto import (
    crowding_distance,
    dominates,
    hypervolume_2d,
    minimised,
    non_dominated,
    non_dominated_sort,
)
from ciq_build.errors import ConfigError


def test_dominance_follows_each_objectives_direction():
    assert dominates((1.0, 5.0), (2.0, 5.0))  # both minimised by default
    assert not dominates((1.0, 5.0), (1.0, 5.0))  # equal is not better
    assert not dominates((1.0, 6.0), (2.0, 5.0))  # a trade-off
    assert dominates((1.0, 6.0), (2.0, 5.0), ("min", "max"))
    assert not dominates((2.0, 5.0), (1.0, 6.0), ("min", "max"))
    assert minimised((1.0, 6.0), ("min", "max")) == (1.0, -6.0)


def test_the_front_keeps_duplicates_and_drops_dominated_points():
    points = [(1.0, 1.0), (2.0, 3.0), (2.0, 2.0), (3.0, 3.0), (1.0, 1.0)]
    assert non_dominated(points, ("min", "max")) == [0, 1, 4]
    assert non_dominated(points, ("max", "max")) == [3]
    assert non_dominated(points) == [0, 4]


def test_non_dominated_sort_ranks_fronts_in_order():
    points = [(1.0, 4.0), (2.0, 2.0), (4.0, 1.0), (3.0, 3.0), (5.0, 5.0), (2.0, 2.0)]
    assert non_dominated_sort(points) == [[0, 1, 2, 5], [3], [4]]
    # Maximising both turns the ranking upside down.
    assert non_dominated_sort(points, ("max", "max"))[0] == [4]


def test_the_fronts_agree_with_the_front_on_random_points():
    rng = random.Random(3)
    for _ in range(50):
        points = [(rng.randint(0, 5), rng.randint(0, 5), rng.randint(0, 5)) for _ in range(12)]
        directions = tuple(rng.choice(["min", "max"]) for _ in range(3))
        fronts = non_dominated_sort(points, directions)
        assert fronts[0] == non_dominated(points, directions)
        assert sorted(i for front in fronts for i in front) == list(range(len(points)))
        for better, worse in zip(fronts, fronts[1:]):  # each point of a later front is dominated by an earlier one
            assert all(any(dominates(points[i], points[j], directions) for i in better) for j in worse)


def test_crowding_distance_gives_the_ends_infinity_and_the_middle_its_spread():
    points = [(0.0, 4.0), (1.0, 2.0), (2.0, 1.0), (4.0, 0.0)]
    distance = crowding_distance(points, [0, 1, 2, 3])
    assert distance[0] == distance[3] == math.inf
    assert distance[1] == pytest.approx(2 / 4 + 3 / 4)
    assert distance[2] == pytest.approx(3 / 4 + 2 / 4)
    assert crowding_distance(points, [1, 2]) == {1: math.inf, 2: math.inf}


def test_hypervolume_2d():
    # Two points against reference (4, 4): union of [1,4]x[3,4] and [3,4]x[1,4] = 3 + 3 - 1
    assert hypervolume_2d([(1, 3), (3, 1)], (4, 4)) == 5.0
    assert hypervolume_2d([(1, 3), (3, 1), (3, 3), (5, 0)], (4, 4)) == 5.0  # dominated / outside ignored
    assert hypervolume_2d([(-1, 3)], (-4, 4), ("max", "min")) == 3.0
    with pytest.raises(ConfigError, match="two objectives"):
        hypervolume_2d([(1, 2, 3)], (4, 4, 4), ("min", "min", "min"))
