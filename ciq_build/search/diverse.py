"""The portfolio's diverse arm: a population search that converges slowly on purpose.

On a compiler's flag space the best is often one move of two or three flags away that is a loss flag by flag
(a triple that helps only whole, a flag that hurts unless another is set). A search that converges in a few
generations -- the GA's tournament and its few survivors, the local arm's moves around the best -- stalls
beside it. NVIDIA's compileiq reaches such targets more often (bench/search_quality's ACF-like spaces) with the
opposite design: a whole pool surviving, parents drawn at random, uniform crossover and about one change a
child, so its candidates stay far from the best and recombination makes the multi-flag moves late in the run
(docs/results/LOG.md, "Compileiq is a slow, diverse search").

This arm is that design beside the GA: its population is the best POPULATION of its own children and of the
draws from the whole space (never the other arms' moves near the best, which would make it converge as they
do); a child is two parents drawn at random, each parameter from either (uniform crossover), then one
parameter changed (the GA's grid mutation of one gene). A child the portfolio refuses (tried, or carrying a
pair of values known to fail) is bred again, at most _TRIES times a proposal. One objective only: with
several, it offers nothing.
"""

from __future__ import annotations

import bisect
import random

from ciq_build.core.pareto import minimised
from ciq_build.core.space import Genome
from ciq_build.search.arms import Shared
from ciq_build.search.operators import GridMutation

# Survivors. With a quarter of each batch (8 of 32) the arm breeds ~150 children in 640 evaluations: a population
# of 16 turns over about ten times, as compileiq's 32 does over its 640 children. The mean share on target over the
# seven ACF-like spaces of the tuning set and held-out-1..6 (40 seeds each): 32 survivors 64% (before the arm: 63%;
# held-out-1's acf52, whose gain is in ranges with interior optima, 25% -> 2%), 16: 75%, 8: 74%.
POPULATION = 16
_TRIES = 20  # children bred per proposal before the arm offers nothing
_MUTATION = GridMutation()


class DiverseArm:
    """Random parents from the best POPULATION of its own children and the draws, uniform crossover, one change."""

    name = "diverse"

    def __init__(self, portfolio: Shared) -> None:
        self.portfolio = portfolio
        self._rng = random.Random(f"ciq_build.search.portfolio:{portfolio.seed}:diverse")
        self._params = list(portfolio.space.values())
        self._population: list[tuple[tuple[float, ...], int, Genome]] = []  # best first; ties: the older first
        self._joined = 0
        self._mine: set[Genome] = set()  # proposed, waiting for the result

    @property
    def population(self) -> list[Genome]:
        return [genome for _, _, genome in self._population]

    def propose(self) -> Genome | None:
        if len(self._population) < 2 or len(self.portfolio.directions) > 1:
            return None
        for _ in range(_TRIES):
            child = self.child(*(g for _, _, g in self._rng.sample(self._population, 2)))
            if self.portfolio.promising(child):
                self._mine.add(child)
                return child
        return None

    def child(self, a: Genome, b: Genome) -> Genome:
        """Each parameter from `a` or `b` at random, then one parameter changed."""
        rng = self._rng
        child = [x if rng.random() < 0.5 else y for x, y in zip(a, b, strict=True)]
        i = rng.randrange(len(child))
        child[i] = _MUTATION.gene(rng, self._params[i], child[i])
        return tuple(child)

    def learn(self, genome: Genome, scores: tuple[float, ...] | None, drawn: bool) -> None:
        mine = genome in self._mine
        self._mine.discard(genome)
        if scores is None or not (mine or drawn) or len(self.portfolio.directions) > 1:
            return
        entry = (minimised(scores, self.portfolio.directions), self._joined, genome)
        self._joined += 1
        bisect.insort(self._population, entry)
        del self._population[POPULATION:]
