"""Values that fail whatever the others (ciq_build.search.failing_values) and the portfolio's proposals that skip them."""

from __future__ import annotations

import random
from typing import Any

import ciq_build.core.space as ss
from bench.search_quality.problems import KV_TILE
from ciq_build.search.configuration import INVALID_SCORE, SearchConfiguration
from ciq_build.search.failing_values import FailingValues
from ciq_build.search.portfolio import _FILL, _SEEDED, PortfolioSearch


def test_a_value_is_known_to_fail_alone_once_its_failures_vary_every_other_parameter_and_chance_cannot_explain_them(
) -> None:
    space = ss.SearchSpace({"a": ss.choice([0, 1, 2]), "b": ss.choice([0, 1, 2]), "c": ss.literal(1)})
    index = FailingValues(space)

    def told(ok: bool, **params: Any) -> None:
        index.add(space.to_genome({"c": 1, **params}), ok)

    for a in (1, 2, 1, 2):  # 12 that work: the other configurations fail at a rate of 1 in 14 (add-one smoothed)
        for b in (0, 1, 2):
            told(True, a=a, b=b)
    for _ in range(5):
        told(False, a=0, b=0)  # the same values again and again: a pair (a=0, b=0) still explains them
    assert not index.alone
    told(False, a=0, b=1)  # two values of b (c has one, nothing to vary), and (1/14)^6 < CHANCE: a=0 fails alone
    assert index.alone == {0: {0}}
    assert index.carries(space.to_genome({"a": 0, "b": 2, "c": 1}))
    assert index.to_change(space.to_genome({"a": 0, "b": 2, "c": 1})) == frozenset({0})  # only a's change helps
    assert index.to_change(space.to_genome({"a": 1, "b": 2, "c": 1})) is None
    told(True, a=0, b=2)  # a draw with a=0 works: refuted, and never known to fail alone again
    told(False, a=0, b=0)
    told(False, a=0, b=1)
    assert not index.carries(space.to_genome({"a": 0, "b": 1, "c": 1}))


def test_where_most_of_the_space_fails_a_few_failures_in_a_row_are_not_enough() -> None:
    # A best walled by limits (bench/search_quality's walled problems): half of the configurations fail, so a value
    # that fails ten times in a row with every other parameter varied may still work (0.5^10 by chance).
    space = ss.SearchSpace({"a": ss.choice([0, 1, 2]), "b": ss.range(0, 9)})
    index = FailingValues(space)
    for b in range(10):
        index.add(space.to_genome({"a": 1, "b": b}), b % 2 == 0)
        index.add(space.to_genome({"a": 2, "b": b}), b % 2 == 1)
    for n in range(19):
        index.add(space.to_genome({"a": 0, "b": n % 10}), False)
    assert not index.alone
    index.add(space.to_genome({"a": 0, "b": 9}), False)  # twenty in a row: 0.5^20 < CHANCE
    assert index.alone == {0: {0}}


def test_a_value_that_fails_only_with_a_partner_is_never_known_to_fail_alone() -> None:
    # Failures of a pair (a=0 with b=0) or of a range's corner (a=0 with b >= 3): every failure carrying a=0 carries
    # the partner, so the other parameter's values in them never vary beyond it, however many failures there are.
    space = ss.SearchSpace({"a": ss.choice([0, 1]), "b": ss.range(0, 5), "c": ss.range(0, 9)})
    pair, corner = FailingValues(space), FailingValues(space)
    rng = random.Random(3)
    for _ in range(300):
        genome = tuple(rng.randrange(p.size) for p in space.values())
        pair.add(genome, not (genome[0] == 0 and genome[1] == 0))
        corner.add(genome, not (genome[0] == 0 and genome[1] >= 3))
    assert not pair.alone
    assert not corner.alone  # a=0 worked with b < 3


def test_no_arm_but_the_draws_proposes_a_value_known_to_fail_alone_and_the_failures_fall() -> None:
    # The stage-1 space of the FlashInfer hd64 tune on an H100 (the tuning set's kvtile): 62 of 193 evaluations of its
    # search were a KV tile of 1, which never compiles; the GA's repairs tried the failure with each other parameter
    # changed. Known to fail alone, the value is proposed only by draws from the whole space.
    failed = proposed = 0
    for seed in range(3):
        search = PortfolioSearch(None, KV_TILE.space, SearchConfiguration(generations=16, pool_size=12, seed=seed),
                                 progress=False, remeasure=False)
        while batch := search.ask():
            for candidate in batch:
                if search._arm_of[candidate.id] not in (_FILL, _SEEDED):
                    assert not search.failing_alone.carries(candidate.genome)
                result = KV_TILE.objective(candidate.params)
                failed += result == INVALID_SCORE
                proposed += 1
                search.tell(candidate, result)
        assert search.failing_alone.alone == {8: {0}}  # KV's first value, and nothing else
    assert failed < 0.08 * proposed  # 30% before, as on the GPU
