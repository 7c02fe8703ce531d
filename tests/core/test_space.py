"""The search-space language: grids, knockout, canonical keys, and definition errors."""

from __future__ import annotations

import random

import pytest

import ciq_build.core.space as ss
from ciq_build.errors import ConfigError


def test_range_is_an_inclusive_grid_and_integers_stay_integers():
    ints = ss.range(0, 8, 2)
    assert ints.values() == [0, 2, 4, 6, 8]
    assert all(type(v) is int for v in ints.values())
    floats = ss.range(1.0, 20.0, 0.5)
    assert floats.size == 39 and floats.values()[0] == 1.0 and floats.values()[-1] == 20.0
    # Decimal steps do not drift (0.1 * 3 != 0.3 in binary floating point).
    assert ss.range(0.0, 0.3, 0.1).values() == [0.0, 0.1, 0.2, 0.3]
    # An end off the grid is not exceeded.
    assert ss.range(0, 10, 3).values() == [0, 3, 6, 9]


def test_log_sampling_is_ordered_and_clean():
    p = ss.log_sampling(1, 1000, total=4)
    assert p.values() == [1.0, 10.0, 100.0, 1000.0]
    assert p.ordered


@pytest.mark.parametrize(
    "make, words",
    [
        (lambda: ss.range(0, 10, 0), "step"),
        (lambda: ss.range(0, 10, -1), "step"),
        (lambda: ss.range(5, 5), "end"),
        (lambda: ss.range(5, 1), "end"),
        (lambda: ss.range(0, 10, seed_low=-1), "seed_low"),
        (lambda: ss.range(0, 10, seed_high=11), "seed_high"),
        (lambda: ss.range(0, 10, seed_low=6, seed_high=4), "seed_high"),
        (lambda: ss.range(0, 10, knockout_prob=1.5), "knockout_prob"),
        (lambda: ss.range(0, 10, knockout_prob=-0.1), "knockout_prob"),
        (lambda: ss.range(True, 10), "number"),
        (lambda: ss.range(0, float("nan")), "finite"),
        (lambda: ss.choice([]), "at least one"),
        (lambda: ss.choice([[1], [2]]), "str, bool, int or float"),
        (lambda: ss.choice(["a", 1]), "one kind"),
        (lambda: ss.choice([1, 1.0]), "distinct"),
        (lambda: ss.choice("abc"), "list"),
        (lambda: ss.choice([1, 2], knockout_prob=2), "knockout_prob"),
        (lambda: ss.literal({"a": 1}), "str, bool, int or float"),
        (lambda: ss.log_sampling(0, 10), "start"),
        (lambda: ss.log_sampling(1, 10, total=1), "total"),
    ],
)
def test_bad_definitions_fail_when_written(make, words):
    with pytest.raises(ConfigError, match=words):
        make()


def test_search_space_rejects_bad_shapes():
    with pytest.raises(ConfigError, match="empty"):
        ss.SearchSpace({})
    with pytest.raises(ConfigError, match="ss.range"):
        ss.SearchSpace({"x": [1, 2, 3]})


def test_params_round_trip_and_knockout_is_absence():
    space = ss.SearchSpace(
        {"x": ss.range(1.0, 20.0, 0.5), "y": ss.choice([1, 2, 3]), "z": ss.literal("c", knockout_prob=0.5)}
    )
    genome = space.to_genome({"x": 2.5, "y": 3})
    assert genome == (3, 2, None)
    assert space.to_params(genome) == {"x": 2.5, "y": 3}
    assert space.to_params(space.to_genome({"x": 1.0, "y": 1, "z": "c"})) == {"x": 1.0, "y": 1, "z": "c"}
    assert space.cardinality == 39 * 3 * 2
    with pytest.raises(ConfigError, match="cannot be absent"):
        space.to_genome({"x": 2.5})
    with pytest.raises(ConfigError, match="not in the search space"):
        space.to_genome({"x": 2.5, "y": 1, "w": 0})
    with pytest.raises(ConfigError, match="not on the grid"):
        space.to_genome({"x": 2.25, "y": 1})


def test_sampling_honours_knockout_prob_and_seed_bounds():
    space = ss.SearchSpace({"a": ss.range(0, 100, seed_low=40, seed_high=50), "f": ss.literal(1, knockout_prob=0.25)})
    rng = random.Random(0)
    samples = [space.to_params(space.sample(rng, seeded_fraction=1.0)) for _ in range(2000)]
    assert all(40 <= s["a"] <= 50 for s in samples)
    absent = sum("f" not in s for s in samples) / len(samples)
    assert 0.2 < absent < 0.3
    wide = [space.to_params(space.sample(rng, seeded_fraction=0.0))["a"] for _ in range(500)]
    assert min(wide) < 40 and max(wide) > 50


def test_canonical_key_identifies_configurations():
    assert ss.canonical_key({"a": 1, "b": "x"}) == ss.canonical_key({"b": "x", "a": 1})
    assert len({ss.canonical_key({"a": v}) for v in (1, 1.0, True, "1")}) == 4
    assert ss.canonical_key({"a": 1}) != ss.canonical_key({"a": 1, "b": None})
    assert ss.canonical_key({}) == "{}"
