"""The local arm's flag pairs (ciq_build.search.arms.LocalArm): a flag that costs unless a choice takes one value.

On a compiler's flag space a flag often pays only with one value of another option (a fast-math flag with one
rounding mode, an unroll pragma with one scheduling level) and costs alone. Added to the best it loses, and the
choice's value alone changes nothing, so no single change reaches the pair; the local arm's pair moves (ordered
parameters) and its walks (along ordered parameters) never make it, and its moves of any two parameters come after
hundreds of others. The GA finds it only by chance recombination (held-out-12's acf55p: the GA 59% within 1% of the
optimum, the portfolio 44%; 14 of 18 misses of 30 lacked exactly this pair).

So once the best has stalled (PortfolioSearch.stalled: its moves around the best found nothing for a batch), the
local arm first adds each flag absent at the best, one at a time, and where one loses without failing, tries that
flag with each other value of each small choice (at most _CHOICE_VALUES values, knocked out or not) -- the pair
moves of that flag, before the next flag is added. A flag that helps alone needs none of this (it improves the best);
one that fails is a failing pair's business (ciq_build.search.failing_pairs). Not where scores are noisy: a loss
cannot be told from noise (as the walks).
"""

from __future__ import annotations

import random

from ciq_build.core.pareto import minimised
from ciq_build.core.space import Genome, SearchSpace
from ciq_build.search.walks import History

_CHOICE_VALUES = 4  # a choice of at most this many values is paired value by value (the local arm's poll of choices)


class FlagPairs:
    """Around one centre: its absent flags added one at a time, and each that lost paired with every value of every
    small choice. Plain lists and sets (a tune deep-copies its source)."""

    def __init__(self, portfolio: History, space: SearchSpace, seed: int) -> None:
        self.portfolio = portfolio
        self.seed = seed
        params = list(space.values())
        self._flags = [i for i, p in enumerate(params) if p.size == 1 and p.can_knockout]
        self._choices = [(i, p.size) for i, p in enumerate(params) if not p.ordered and 1 < p.size <= _CHOICE_VALUES]
        self._centre: Genome | None = None
        self._added: list[Genome] = []  # the centre with one absent flag added, to propose (popped from the end)
        self._pairs: list[Genome] = []  # the pair moves of the flags that lost (popped from the end)
        self._waiting: set[Genome] = set()  # flags added and proposed, their results not known yet
        self._centres = 0

    def reset(self, centre: Genome) -> None:
        self._centre = centre
        self._centres += 1
        self._added = [centre[:i] + (0,) + centre[i + 1:] for i in self._flags if centre[i] is None]
        random.Random(f"ciq_build.search.flag_pairs:{self.seed}:{self._centres}").shuffle(self._added)
        self._pairs = []
        self._waiting.clear()

    def propose(self) -> Genome | None:
        """The next pair move of a flag that lost, else the centre with the next flag added, untried (None: none
        now, or the scores are noisy)."""
        if self.portfolio.noisy or len(self.portfolio.directions) > 1:
            return None
        while self._pairs or self._added:
            if self._pairs:
                genome = self._pairs.pop()
                if self.portfolio.promising(genome):
                    return genome
                continue
            genome = self._added.pop()
            if self.portfolio.promising(genome):
                self._waiting.add(genome)
                return genome
            if genome in self.portfolio.measured:  # another arm added it: paired from its result
                self._judge(genome, self.portfolio.measured[genome])
        return None

    def learned(self, genome: Genome, scores: tuple[float, ...] | None) -> None:
        """A result of a move around the centre: where it was a flag added, its pairs if it lost."""
        if genome in self._waiting:
            self._waiting.discard(genome)
            self._judge(genome, scores)

    def _judge(self, added: Genome, scores: tuple[float, ...] | None) -> None:
        """The centre with a flag added measured: where it lost without failing, that flag's pair moves next."""
        before = None if self._centre is None else self.portfolio.measured.get(self._centre)
        if scores is None or before is None:
            return
        directions = self.portfolio.directions
        if minimised(scores, directions) <= minimised(before, directions):
            return
        pairs = [added[:j] + (v,) + added[j + 1:] for j, size in self._choices for v in range(size) if v != added[j]]
        random.Random(f"ciq_build.search.flag_pairs:{self.seed}:{self._centres}:{added}").shuffle(pairs)
        self._pairs = pairs + self._pairs  # popped from the end: this flag's pairs first
