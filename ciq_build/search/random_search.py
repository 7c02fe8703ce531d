"""Random search (`--strategy random`): the baseline every claim about a search is measured against.

Each batch is ``pool_size`` configurations drawn from the whole grid (every
value of a parameter equally likely, absent with its ``knockout_prob``),
never one drawn before, until the grid is drawn to its end: how many it draws
is the search loop's budget, not its own (ciq_build.tune.loop: the planned
evaluations, ``--max-evaluations``, ``--time-limit``; Optuna's
``optimize(n_trials=, timeout=)``). Nothing told changes what is drawn: a
batch comes from an RNG seeded by (seed, batch) alone, so the same seed gives
the same candidates, and a resume that replays its journal gets them again.
A space smaller than the budget is enumerated to its end rather than
redrawn.
"""

from __future__ import annotations

import random
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ciq_build.core.space import Genome, Param, as_space
from ciq_build.errors import SearchError
from ciq_build.search.base import FirstBatchCheck, Proposal
from ciq_build.search.evolution import SearchConfiguration
from ciq_build.search.strategy import GRID, SearchRequest, configured
from ciq_build.search.strategy_options import strategy_option

ENGINE_NAME = "ciq_build.random"
_DRAWS = 40  # draws per slot before the unseen configurations are enumerated instead
_ENUMERATE_LIMIT = 200_000  # spaces this small are enumerated when draws stop finding new configurations


class RandomSource:
    """Uniform draws without replacement over knobs, params and ACF pools."""

    def __init__(self, space: Mapping[str, Param], config: SearchConfiguration, objective_names: list[str],
                 seeds: Sequence[Mapping[str, Any]] = ()):
        self.space = as_space(space)
        # tune --seed-from: drawn first, in order (then counted as drawn)
        self._seeds: list[Genome] = list(dict.fromkeys(self.space.to_genome(s) for s in seeds))
        self.config = config
        self.objective_names = list(objective_names)
        self.seed = config.seed if config.seed is not None else secrets.randbits(63)
        self._seen: set[Genome] = set()
        self._unseen: list[Genome] | None = None  # once draws stop finding new ones: the rest, drawn from here
        self._pending: dict[int, Proposal] = {}
        self._batch = 0
        self._issued = 0
        self._exhausted = False
        self._first_batch = FirstBatchCheck("random")

    # Its next batch depends only on the seed and what was told: a copy can guess it (ciq_build.tune.ahead).
    proposes_ahead = True
    ended_by_the_loop = True  # how many it draws is the loop's plan (CandidateSource)

    def ask(self) -> list[Proposal]:
        """The current batch's proposals not told yet; a new batch once all are told; [] once the grid is drawn
        to its end (the loop stops asking when its budget is spent)."""
        if self._pending:
            return list(self._pending.values())
        if self._exhausted:
            return []
        rng = random.Random(f"ciq_build.search.random:{self.seed}:{self._batch}")
        genomes = [g for g in (self._draw(rng) for _ in range(self.config.pool_size)) if g is not None]
        self._exhausted = not genomes
        if self._exhausted and self._issued == 0 and self.space.constrained:
            raise self.space.nothing_allowed()
        for genome in genomes:
            proposal = Proposal(id=self._issued, generation=self._batch, params=self.space.to_params(genome))
            self._pending[proposal.id] = proposal
            self._issued += 1
        self._batch += 1
        return list(self._pending.values())

    def tell(self, proposal: Proposal, scores: tuple[float, ...] | None, reason: str | None = None) -> None:
        if self._pending.pop(proposal.id, None) is None:
            raise SearchError(f"candidate {proposal.id} was not asked, or was told already")
        self._first_batch.told(proposal, scores is not None, reason, self._batch == 1 and not self._pending)

    def describe(self) -> dict[str, Any]:
        return {
            "engine": ENGINE_NAME,
            "search_space": self.space.describe(),
            "seed": self.config.seed,
            "budget": {"generations": self.config.generations, "pool_size": self.config.pool_size,
                       "max_evaluations": self.config.max_evaluations},
        }

    def _draw(self, rng: random.Random) -> Genome | None:
        """A configuration not drawn before, or None when the space has none left."""
        while self._seeds:
            seeded = self._seeds.pop(0)
            if seeded not in self._seen and self.space.allows(seeded):  # as the GA: CONSTRAINTS refuse a seed too
                self._seen.add(seeded)
                return seeded
        if self._unseen is None:
            for _ in range(self.space.draws(_DRAWS)):
                genome = self.space.sample(rng, 0.0)  # the whole range: seed bounds are a GA's head start
                if genome not in self._seen:
                    self._seen.add(genome)
                    if self.space.allows(genome):  # one the constraints refuse is never proposed
                        return genome
            if self.space.cardinality > _ENUMERATE_LIMIT:
                return None
            # Listed once: enumerating the space for each draw made a 234-configuration search
            # run to its end 10x slower than drawing (bench/search_quality/run.py, 100 seeds: 38 s against 3.6).
            self._unseen = [g for g in map(self.space.genome_at, range(self.space.cardinality))
                            if g not in self._seen and self.space.allows(g)]
        if not self._unseen:
            return None
        genome = self._unseen.pop(rng.randrange(len(self._unseen)))
        self._seen.add(genome)
        return genome


@dataclass(frozen=True)
class RandomOptions:
    """Random search's own options (tune --strategy-option KEY=VALUE); its budget is the loop's."""

    pool_size: int = strategy_option(8, "candidates drawn at once, one batch")


class RandomStrategy:
    """`--strategy random`."""

    name = "random"
    spaces = frozenset({GRID})
    takes_seeds = True
    options = RandomOptions

    def make(self, request: SearchRequest) -> RandomSource:
        return RandomSource(as_space(request.space, request.allows), configured(request), list(request.objective_names),
                            request.seed_params)
