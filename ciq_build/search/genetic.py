"""ciq_build's own searches (ciq_build.search.batch) as sources of candidates for the driver: the GA's strategy."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ciq_build.core.causes import Cause
from ciq_build.core.space import Param, SearchSpace, as_space
from ciq_build.errors import ConfigError
from ciq_build.search.base import Proposal
from ciq_build.search.batch import BatchSearch, Candidate
from ciq_build.search.evolution import GeneticSearch, SearchConfiguration
from ciq_build.search.strategy import GRID, SearchRequest, configured
from ciq_build.search.strategy_options import strategy_option

ENGINE_NAME = "ciq_build.ga"


def first_pool(space: SearchSpace, seeds: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """What a search of the driver's measures first: the compiler's defaults (every knob absent) where the space
    has them -- on well-written kernels a strong optimum the search must know -- then tune --seed-from's seeds."""
    first: list[dict[str, Any]] = []
    try:
        space.to_genome({})
        first.append({})
    except ConfigError:
        pass  # a parameter without knockout: the driver still measures the defaults as its baseline
    return first + [dict(s) for s in seeds]


class BatchSource:
    """Ask/tell over public knobs and user -D parameters, by one of ciq_build's own searches."""

    def __init__(self, search: BatchSearch, engine: str) -> None:
        self.search, self.engine = search, engine
        self.space, self.config = search.space, search.config
        self._asked: dict[int, Candidate] = {}

    # Its next batch depends only on the seed and what was told: a copy can guess it (ciq_build.tune.ahead).
    proposes_ahead = True

    def ask(self) -> list[Proposal]:
        candidates = self.search.ask()
        self._asked = {c.id: c for c in candidates}
        return [Proposal(id=c.id, generation=c.generation, params=dict(c.params)) for c in candidates]

    def tell(self, proposal: Proposal, scores: tuple[float, ...] | None, reason: str | None = None) -> None:
        candidate = self._asked[proposal.id]
        if scores is None:
            self.search.tell(candidate, cause=Cause.INVALID, message=reason or "")
        else:
            self.search.tell(candidate, scores if len(scores) > 1 else scores[0])

    def describe(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "search_space": self.space.describe(),
            "seed": self.config.seed,
            "budget": {"generations": self.config.generations, "pool_size": self.config.pool_size,
                       "mutate_rate": self.config.mutate_rate, "max_evaluations": self.config.max_evaluations},
        }


class GeneticSource(BatchSource):
    """The GA over knobs and parameters, seeded with the compiler's defaults."""

    def __init__(self, space: Mapping[str, Param], config: SearchConfiguration, objective_names: list[str],
                 seeds: Sequence[Mapping[str, Any]] = ()):
        grid = as_space(space)
        super().__init__(GeneticSearch(None, grid, config, seeds=first_pool(grid, seeds),
                                       objective_names=objective_names, progress=False), ENGINE_NAME)


@dataclass(frozen=True)
class GaOptions:
    """The GA's own options (tune --strategy-option KEY=VALUE; --generations, --pool-size, --mutate-rate too)."""

    generations: int = strategy_option(4, "generations bred")
    pool_size: int = strategy_option(8, "candidates per generation")
    mutate_rate: float = strategy_option(0.1, "each gene's chance to mutate")
    cull_size: int | None = strategy_option(
        None, "the best kept to breed the next generation; default an eighth of the pool, a quarter of it (at "
              "least 4) with several objectives")


class GeneticStrategy:
    """`--strategy ga`: ciq_build's genetic search."""

    name = "ga"
    spaces = frozenset({GRID})
    takes_seeds = True
    options = GaOptions

    def make(self, request: SearchRequest) -> GeneticSource:
        return GeneticSource(as_space(request.space, request.allows), configured(request),
                             list(request.objective_names), request.seed_params)
