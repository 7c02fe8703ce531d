"""The portfolio's diverse arm (ciq_build.search.diverse): random parents, uniform crossover, one change a child."""

from __future__ import annotations

import random
from typing import Any

import ciq_build.core.space as ss
from ciq_build.search.configuration import SearchConfiguration
from ciq_build.search.diverse import POPULATION, DiverseArm
from ciq_build.search.portfolio import _FILL, _SEEDED, PortfolioSearch, flag_space

SPACE: dict[str, ss.Param] = {f"f{i}": ss.literal(f"--f{i}", knockout_prob=0.5) for i in range(20)}
SPACE.update({f"r{i}": ss.range(0, 15, knockout_prob=0.5) for i in range(4)})


def flags(p: dict[str, Any]) -> float:
    ranges = sum(v for k, v in p.items() if k.startswith("r"))
    return 1.0 - 0.01 * sum(1 for k in p if k.startswith("f")) - 0.001 * ranges


def test_a_child_takes_every_parameter_but_one_from_a_parent_and_the_same_seed_breeds_the_same() -> None:
    def children(seed: int) -> list[tuple[Any, ...]]:
        search = PortfolioSearch(flags, SPACE, SearchConfiguration(generations=1, pool_size=8, seed=seed),
                                 progress=False)
        arm = DiverseArm(search)
        rng = random.Random(0)
        a, b = search.space.sample(rng, 0.0), search.space.sample(rng, 0.0)
        out = []
        for _ in range(200):
            child = arm.child(a, b)
            assert sum(1 for x, y, c in zip(a, b, child, strict=True) if c not in (x, y)) <= 1
            out.append(child)
        assert len(set(out)) > 20  # mixed, not copies of a parent
        return out

    assert children(3) == children(3) and children(3) != children(4)


def test_its_population_is_the_best_of_its_own_children_and_of_the_draws_never_the_other_arms_moves() -> None:
    search = PortfolioSearch(None, SPACE, SearchConfiguration(generations=12, pool_size=16, seed=1), progress=False,
                             remeasure=False)
    arm = next(a for a in search.arms if isinstance(a, DiverseArm))
    mine = search.arms.index(arm)
    own_or_drawn: dict[Any, float] = {}
    others = 0
    while batch := search.ask():
        for candidate in batch:
            score = flags(candidate.params)
            if search._arm_of[candidate.id] in (mine, _FILL, _SEEDED):
                own_or_drawn[candidate.genome] = score
            else:
                others += 1
            search.tell(candidate, score)
    assert search.uses[mine] > 0 and others > 0
    best = sorted(own_or_drawn, key=lambda g: own_or_drawn[g])[:POPULATION]
    assert sorted(arm.population, key=lambda g: own_or_drawn[g]) == best


def test_a_flag_space_gives_the_diverse_arm_a_quarter_and_any_other_space_is_searched_without_it() -> None:
    config = SearchConfiguration(generations=2, pool_size=32, seed=0)
    numeric = {"x": ss.range(0, 63), "y": ss.range(0, 63), "fast": ss.literal("-fast", knockout_prob=0.5)}
    assert flag_space(ss.SearchSpace(SPACE)) and not flag_space(ss.SearchSpace(numeric))
    flags_search = PortfolioSearch(flags, SPACE, config, progress=False)
    numeric_search = PortfolioSearch(lambda p: float(p["x"]), numeric, config, progress=False)
    assert (flags_search.floor("diverse", 32), flags_search.floor("ga", 32)) == (8, 16)
    assert [a.name for a in numeric_search.arms] == ["ga", "fill", "local"] and numeric_search.floor("ga", 32) == 24
