"""The CompileIQ-shaped Search API: ``Search(objective_function, search_space, search_config).start()``."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ciq_build.core.space import Param, SearchSpace
from ciq_build.errors import ConfigError
from ciq_build.search.batch import BatchSearch, SearchOptions
from ciq_build.search.configuration import SearchConfiguration
from ciq_build.search.evolution import GeneticSearch
from ciq_build.search.portfolio import PortfolioSearch
from ciq_build.search.strategies import GRID_DEFAULT

STRATEGIES = ("portfolio", "ga")


def Search(  # noqa: N802 - CompileIQ's name for it
    objective_function: Callable[[dict[str, Any]], Any] | None,
    search_space: Mapping[str, Param] | SearchSpace,
    search_config: SearchConfiguration,
    *,
    strategy: str | None = None,
    seeds: Sequence[Mapping[str, Any]] = (),
    objective_names: Sequence[str] | None = None,
    progress: bool | None = None,
    **operators: Any,
) -> BatchSearch:
    """A search of `search_space` for `objective_function`, by `strategy`: "portfolio" (the default, as in tune:
    several techniques sharing one history under a bandit, ciq_build.search.portfolio;
    ciq_build.search.strategies.default_strategy says why) or "ga" (the genetic search, ciq_build.search.evolution).
    The GA's operators (sampler, selection, crossover, mutation, survival) may be given by keyword, with
    strategy="ga"."""
    chosen = strategy if strategy is not None else GRID_DEFAULT
    common: SearchOptions = {"seeds": seeds, "objective_names": objective_names, "progress": progress}
    if chosen == "ga":
        return GeneticSearch(objective_function, search_space, search_config, **common, **operators)
    if chosen == "portfolio" and not operators:
        return PortfolioSearch(objective_function, search_space, search_config, **common)
    if chosen == "portfolio":
        raise ConfigError(f"the portfolio takes no operators ({', '.join(sorted(operators))}): they are the GA's "
                          "(strategy=\"ga\")")
    raise ConfigError(f"unknown strategy {strategy!r} for Search: use one of {', '.join(STRATEGIES)} (the other "
                      "strategies run through tune --strategy)")
