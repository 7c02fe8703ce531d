"""The strategy registry: which engine proposes the candidates, chosen by name apart from the space it searches.

What a strategy is (`SearchRequest`, `Strategy`) is ciq_build.search.strategy's;
here, which strategies there are, the default for a space, and the candidate
source of the one chosen: a tune that asks a strategy for a space it cannot
search is refused with the strategies that can.

The registry maps each name to the module that implements it, imported only
when that strategy is used (Kernel Tuner's lazy strategy map): naming
``ga`` must not import compileiq and the ~1 s of Ray it brings. Adding a
strategy is one module with a class that has ``name``, ``spaces`` and
``make`` (importing ciq_build.search.strategy, never this registry), and one
line here; its own options (``tune --strategy-option
KEY=VALUE``) are a dataclass it names as ``options``
(ciq_build.search.strategy_options).
"""

from __future__ import annotations

import importlib
from dataclasses import replace

from ciq_build.errors import ConfigError
from ciq_build.search.base import CandidateSource
from ciq_build.search.strategy import COMPILER_ACF, SearchRequest, Strategy, configured
from ciq_build.search.strategy_options import describe, merged, options_of

_STRATEGY_IMPORTS: dict[str, str] = {
    "portfolio": "ciq_build.search.portfolio:PortfolioStrategy",
    "ga": "ciq_build.search.genetic:GeneticStrategy",
    "compileiq": "ciq_build.search.compileiq:CompileIqStrategy",
    "random": "ciq_build.search.random_search:RandomStrategy",
    "exhaustive": "ciq_build.search.exhaustive:ExhaustiveStrategy",
    "tpe": "ciq_build.search.optuna_search:TpeStrategy",  # the [optuna] extra
    "nsga2": "ciq_build.search.optuna_search:Nsga2Strategy",  # the [optuna] extra
}


def strategy_names() -> tuple[str, ...]:
    """The registered strategies, as `tune --strategy` accepts them."""
    return tuple(_STRATEGY_IMPORTS)


GRID_DEFAULT = "portfolio"  # what searches a grid (knobs, params, ACF pools) when no strategy is named


def default_strategy(request: SearchRequest) -> str:
    """What a space is searched with when no strategy is named: compileiq where only it can, else the portfolio
    (which `make_source` turns into a listing of the grid where the grid, after CONSTRAINTS, fits the budget:
    ciq_build.search.exhaustive.listed_instead). The public `Search` API takes the same default.

    The portfolio, not the GA, by the rule written before bench/search_quality's seventh held-out set was run
    (docs/RESULTS.md section 6): on none of its seven problems behind random search at p < 0.05, its median best at
    least the GA's on all seven (better on five at p < 0.05) and its hits at least the GA's on all seven (ACF-like
    spaces 97/97%, 87/75%, 86/79%, the decoys 70/43% and 53/41%, noisy knobs 67/26%). The GA stays `--strategy ga`."""
    return "compileiq" if request.space_kind == COMPILER_ACF else GRID_DEFAULT


def resolve_strategy(strategy: object) -> Strategy:
    """A registered strategy by name, or the caller's own Strategy object as it is."""
    if not isinstance(strategy, str):
        if not isinstance(strategy, Strategy):
            raise ConfigError(f"a strategy is a registered name ({', '.join(strategy_names())}) or an object "
                              f"with name, spaces and make(request), got {strategy!r}")
        return strategy
    target = _STRATEGY_IMPORTS.get(strategy)
    if target is None:
        raise ConfigError(f"unknown strategy {strategy!r}: use one of {', '.join(strategy_names())} "
                          "(or, from Python, an object with name, spaces and make(request))")
    module, _, attribute = target.partition(":")
    made: Strategy = getattr(importlib.import_module(module), attribute)()
    return made


def strategy_options_help() -> str:
    """Every registered strategy's options, one line each, from their declarations (tune --help)."""
    return " | ".join(describe(name, options_of(resolve_strategy(name))) for name in strategy_names())


def make_source(strategy: object, request: SearchRequest) -> CandidateSource:
    """The candidate source of `strategy` (None: the space's default) for `request`, if it can search that space."""
    chosen = resolve_strategy(strategy if strategy is not None else default_strategy(request))
    if request.space_kind not in chosen.spaces:
        able = [name for name in strategy_names() if request.space_kind in resolve_strategy(name).spaces]
        what = f"the compiler search space {request.acf_space}" if request.acf_space else "knobs, params and ACF pools"
        raise ConfigError(f"strategy {chosen.name!r} cannot search {what}; strategies that can: {', '.join(able)}")
    if request.seeds and not getattr(chosen, "takes_seeds", False):
        seeded = [name for name in strategy_names() if getattr(resolve_strategy(name), "takes_seeds", False)]
        raise ConfigError(f"strategy {chosen.name!r} takes no seeds (--seed-from, SEEDS); strategies that do: "
                          f"{', '.join(seeded)}")
    options = merged(chosen.name, options_of(chosen), request.config, request.strategy_options)
    if strategy is None and chosen.name == GRID_DEFAULT:
        # A grid the default's budget covers is listed instead, each configuration once (imported as the registry
        # imports a strategy: by name, when used).
        exhaustive = importlib.import_module(_STRATEGY_IMPORTS["exhaustive"].partition(":")[0])
        listed: CandidateSource | None = exhaustive.listed_instead(
            GRID_DEFAULT, request, configured(replace(request, options=options)))
        if listed is not None:
            return listed
    return chosen.make(replace(request, options=options))
