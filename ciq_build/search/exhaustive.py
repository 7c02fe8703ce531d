"""Exhaustive search (`--strategy exhaustive`, Kernel Tuner's brute force): every configuration once.

For a small grid (a few PARAMS, a CONSTRAINTS-narrowed space) a search that samples wastes evaluations on
configurations it has seen and may miss one it has not; this lists the grid in an order fixed by the seed (a
stride through it: which part a budget smaller than the grid sees is the seed's), the seeds (tune --seed-from)
first, and proposes each configuration the CONSTRAINTS allow exactly once, ``pool_size``
at a time, until the grid or the budget (--max-evaluations, generations x pool size, --time-limit) ends.
Where no strategy is named and the grid, after CONSTRAINTS, fits the GA's budget, the default lists it
instead of the GA (`listed_instead`), and says so.
"""

from __future__ import annotations

import math
import random
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ciq_build.core.space import Genome, SearchSpace, as_space
from ciq_build.errors import ConfigError, SearchError
from ciq_build.search.base import FirstBatchCheck, Proposal
from ciq_build.search.configuration import SearchConfiguration
from ciq_build.search.strategy import GRID, SearchRequest, configured
from ciq_build.search.strategy_options import strategy_option

ENGINE_NAME = "ciq_build.exhaustive"
LIMIT = 1_000_000  # a grid larger than this is refused: listing it is no search


class ExhaustiveSource:
    """Every allowed configuration of a grid, once, in a fixed order (the seeds first)."""

    def __init__(self, space: SearchSpace, config: SearchConfiguration, objective_names: list[str],
                 seeds: Sequence[Mapping[str, Any]] = (), instead_of: tuple[str, int] | None = None):
        """`instead_of`: (the strategy it stands in for, the grid's allowed configurations) where the default
        strategy chose it, the grid fitting the budget (ciq_build.search.strategies.make_source)."""
        if space.cardinality > LIMIT:
            raise ConfigError(f"--strategy exhaustive lists every configuration, and this space has "
                              f"{space.cardinality:,} (more than {LIMIT:,}): narrow PARAMS or CONSTRAINTS, search "
                              "params alone (--controls params), or use ga or random")
        self.space = space
        self.config = config
        self.objective_names = list(objective_names)
        self.instead_of = instead_of
        self._seeds = [space.to_genome(s) for s in seeds]  # listed first, then the grid in its fixed order
        self._ordinal = 0  # how far through the grid (state a copy keeps: ciq_build.tune.ahead)
        self.seed = config.seed if config.seed is not None else secrets.randbits(63)
        # The grid's i-th configuration in this search's order: (stride * i + offset) mod its size, stride
        # coprime with the size, both from the seed: every configuration once, in an order the seed decides.
        size = max(1, space.cardinality)
        rng = random.Random(f"ciq_build.search.exhaustive:{self.seed}")
        self._offset = rng.randrange(size)
        self._stride = 1
        if size > 2:
            self._stride = rng.randrange(1, size)
            while math.gcd(self._stride, size) != 1:
                self._stride = rng.randrange(1, size)
        self._seen: set[Genome] = set()
        self._pending: dict[int, Proposal] = {}
        self._issued = 0
        self._batch = 0
        self._first_batch = FirstBatchCheck("exhaustive")

    proposes_ahead = True  # its batches are fixed: a copy can guess the next (ciq_build.tune.ahead)

    def _next(self) -> Genome | None:
        """The next configuration not listed before that the CONSTRAINTS allow; None at the grid's end."""
        while self._seeds or self._ordinal < self.space.cardinality:
            if self._seeds:
                genome = self._seeds.pop(0)
            else:
                genome = self.space.genome_at((self._stride * self._ordinal + self._offset) % self.space.cardinality)
                self._ordinal += 1
            if genome not in self._seen and self.space.allows(genome):
                self._seen.add(genome)
                return genome
        return None

    def ask(self) -> list[Proposal]:
        """The current batch's proposals not told yet; the next batch once all are told; [] when over."""
        if self._pending:
            return list(self._pending.values())
        room = min(self.config.pool_size, self.config.evaluations - self._issued)
        batch = [genome for genome in (self._next() for _ in range(max(0, room))) if genome is not None]
        if not batch and self._issued == 0 and self.space.constrained:
            raise self.space.nothing_allowed()
        for genome in batch:
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
        return {"engine": ENGINE_NAME, "search_space": self.space.describe(), "seed": self.config.seed,
                "budget": {"generations": self.config.generations, "pool_size": self.config.pool_size,
                           "max_evaluations": self.config.max_evaluations},
                **({"instead_of": {"strategy": self.instead_of[0], "configurations": self.instead_of[1]}}
                   if self.instead_of is not None else {})}


@dataclass(frozen=True)
class ExhaustiveOptions:
    """Exhaustive search's own options (tune --strategy-option KEY=VALUE); its budget is the loop's."""

    pool_size: int = strategy_option(8, "configurations proposed at once, one batch")


class ExhaustiveStrategy:
    """`--strategy exhaustive`."""

    name = "exhaustive"
    spaces = frozenset({GRID})
    takes_seeds = True
    options = ExhaustiveOptions

    def make(self, request: SearchRequest) -> ExhaustiveSource:
        return ExhaustiveSource(as_space(request.space, request.allows), configured(request),
                                list(request.objective_names), request.seed_params)


ENUMERATION_LIMIT = 200_000  # a grid larger than this is never counted (after CONSTRAINTS) to be listed instead


def listed_instead(strategy: str, request: SearchRequest, budget: SearchConfiguration) -> ExhaustiveSource | None:
    """The listing of `request`'s grid in place of `strategy` (the default, which would sample it), where the
    grid, after CONSTRAINTS, holds no more configurations than `budget` evaluates: sampling would propose some
    twice and might miss one. None where it holds more, or is no grid."""
    count = fits_the_budget(request, budget.evaluations)
    if count is None:
        return None
    return ExhaustiveSource(as_space(request.space, request.allows), budget, list(request.objective_names),
                            request.seed_params, instead_of=(strategy, count))


def fits_the_budget(request: SearchRequest, budget: int) -> int | None:
    """How many configurations of `request`'s grid its CONSTRAINTS allow, where no more than `budget`; None where
    more, or not a grid."""
    if request.space_kind != GRID or not request.space:
        return None
    grid = as_space(request.space, request.allows)
    if grid.cardinality > ENUMERATION_LIMIT:
        return None
    if not grid.constrained:
        return grid.cardinality if grid.cardinality <= budget else None
    count = 0
    for ordinal in range(grid.cardinality):
        if grid.allows(grid.genome_at(ordinal)):
            count += 1
            if count > budget:
                return None
    return count
