"""The failing-pair index (ciq_build.search.failing_pairs) and the portfolio's proposals that skip what it knows."""

from __future__ import annotations

import copy
import random
from typing import Any

import ciq_build.core.space as ss
from ciq_build.search.configuration import INVALID_SCORE, SearchConfiguration
from ciq_build.search.failing_pairs import FailingPairs
from ciq_build.search.portfolio import _FILL, _SEEDED, PortfolioSearch

FLAGS: dict[str, ss.Param] = {f"f{i}": ss.literal(f"--f{i}", knockout_prob=0.5) for i in range(12)}
FLAGS["unroll"] = ss.range(1, 8, knockout_prob=0.5)
CRASHES = {("f2", "f7"), ("f4", "f9")}  # two flags that crash together


def crashing(p: dict[str, Any]) -> Any:
    if any(a in p and b in p for a, b in CRASHES) or ("f5" in p and p.get("unroll", 1) >= 6):
        return INVALID_SCORE
    return 1.0 - 0.01 * len(p) - 0.002 * p.get("unroll", 0)


def test_the_index_learns_the_failing_pairs_and_keeps_none_that_a_working_configuration_refutes() -> None:
    space = ss.SearchSpace(FLAGS)
    rng = random.Random(1)
    index = FailingPairs()
    working: list[Any] = []
    base = space.to_genome({})
    index.best(base)
    for _ in range(600):  # configurations near one another, as a search measures them: a few changes of the best
        genome = list(base)
        for _ in range(rng.randrange(1, 4)):
            i = rng.randrange(len(genome))
            genome[i] = rng.choice([None, *range(list(space.values())[i].size)])
        ok = crashing(space.to_params(tuple(genome))) != INVALID_SCORE
        index.add(tuple(genome), ok)
        if ok:
            working.append(tuple(genome))
            if rng.random() < 0.3:
                base = tuple(genome)
                index.best(base)
    names = list(space)
    learned = {(names[a[0]], names[b[0]]) for a, b in index.pairs() if a[1] == 0 == b[1]}
    assert CRASHES <= learned  # both crashing pairs of flags, learned from the failures next to the best
    for (i, a), (j, b) in index.pairs():  # none refuted by a configuration that works
        assert not any(g[i] == a and g[j] == b for g in working)
    both = space.to_genome({"f2": "--f2", "f7": "--f7"})
    assert index.carries(both) and not index.carries(space.to_genome({"f2": "--f2"}))


def test_no_arm_but_the_draws_proposes_a_pair_known_to_fail_and_the_same_seed_replays() -> None:
    # Same seed, same tells: the same candidates (what a resume replaying its journal relies on), and a copy guesses
    # the next batch (what a tune's build-ahead does: ciq_build.tune.ahead).
    def run(seed: int) -> list[Any]:
        search = PortfolioSearch(None, FLAGS, SearchConfiguration(generations=12, pool_size=16, seed=seed),
                                 progress=False, remeasure=False)
        asked = []
        while True:
            guess = [c.genome for c in copy.deepcopy(search).ask()]
            batch = search.ask()
            assert [c.genome for c in batch] == guess
            if not batch:
                break
            known = search.failing
            for candidate in batch:
                if search._arm_of[candidate.id] not in (_FILL, _SEEDED):
                    assert not known.carries(candidate.genome)
                asked.append(candidate.genome)
            for candidate in batch:
                search.tell(candidate, crashing(candidate.params))
        assert search.failing.pairs()  # it learned some: the assertion above was put to the test
        return asked

    first = run(4)
    assert run(4) == first and run(5) != first
