"""Search strategies: which engine proposes the candidates, chosen apart from the space it searches.

A strategy (``tune --strategy NAME``, or an object from Python) turns a
:class:`SearchRequest` -- the parameters to search, the compiler's ACF space
if any, the budget and the objectives -- into a candidate source
(:class:`ciq_build.search.base.CandidateSource`). The space says *what* may
be searched; the strategy *how*. Each strategy says which kinds of space it
can search (``spaces``), and a tune that asks for another is refused with the
strategies that can.

The registry maps each name to the module that implements it, imported only
when that strategy is used (Kernel Tuner's lazy strategy map): naming
``ga`` must not import compileiq and the ~1 s of Ray it brings. Adding a
strategy is one module with a class that has ``name``, ``spaces`` and
``make``, and one line here; its own options (``tune --strategy-option
KEY=VALUE``) are a dataclass it names as ``options``
(ciq_build.search.strategy_options).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ciq_build.core.space import Param
from ciq_build.errors import ConfigError
from ciq_build.search.base import CandidateSource
from ciq_build.search.configuration import SearchConfiguration
from ciq_build.search.strategy_options import describe, merged, options_of

if TYPE_CHECKING:
    from ciq_build.compiler.toolchain import Toolchain
    from ciq_build.search.seeds import Seed

# The kinds of space a strategy may support.
GRID = "grid"  # knobs, params and ACF pools: finite grids of values (ciq_build.core.space)
COMPILER_ACF = "compiler-acf"  # a compiler search space (ptxas-acf, nvcc-acf, a .bin): opaque, ACFs come from compileiq

_STRATEGY_IMPORTS: dict[str, str] = {
    "portfolio": "ciq_build.search.portfolio:PortfolioStrategy",
    "ga": "ciq_build.search.genetic:GeneticStrategy",
    "compileiq": "ciq_build.search.compileiq:CompileIqStrategy",
    "random": "ciq_build.search.random_search:RandomStrategy",
    "exhaustive": "ciq_build.search.exhaustive:ExhaustiveStrategy",
    "tpe": "ciq_build.search.optuna_search:TpeStrategy",  # the [optuna] extra
    "nsga2": "ciq_build.search.optuna_search:Nsga2Strategy",  # the [optuna] extra
}


@dataclass(frozen=True)
class SearchRequest:
    """What a strategy is asked to search, and with which budget."""

    space: Mapping[str, Param]  # knob.*, param.* (and an ACF pool's choice): may be empty with a compiler ACF space
    config: SearchConfiguration  # budget, directions, seed
    objective_names: tuple[str, ...]
    acf_space: str | None = None  # a compiler search space (ptxas-acf[:VER[:VARIANT]], nvcc-acf..., a .bin)
    acf_dir: Path | None = None  # where a strategy that writes ACFs puts them
    toolchain: Toolchain | None = None  # the compiler the ACFs must suit (None: not checked)
    architectures: str = ""  # the target's CUDA_ARCHITECTURES, for the checks an nvcc ACF needs
    # The target's CONSTRAINTS (ciq_build.core.constraints): a configuration it refuses is never proposed.
    allows: Callable[[Mapping[str, Any]], bool] | None = None
    # Configurations to evaluate first, entering the first generation (tune --seed-from, SEEDS;
    # ciq_build.search.seeds); only a strategy whose `takes_seeds` is true is given any. Over a grid a seed's
    # ACF is already a value of the space (an ACF pool's choice), so only a compiler ACF space sees `acf`.
    seeds: tuple[Seed, ...] = ()
    # tune --strategy-option KEY=VALUE, as given: the strategy's own options over `config`'s same-named fields.
    strategy_options: Mapping[str, str] = field(default_factory=dict)
    # The strategy's options, merged (make_source sets them): an instance of its `options` dataclass.
    options: Any = None

    @property
    def space_kind(self) -> str:
        return GRID if self.acf_space is None else COMPILER_ACF

    @property
    def seed_params(self) -> tuple[Mapping[str, Any], ...]:
        """The seeds as values of `space`, for a strategy over a grid."""
        return tuple(seed.params for seed in self.seeds)


@runtime_checkable
class Strategy(Protocol):
    """A way of searching: a name for the journal, the kinds of space it can search, and its candidate source."""

    name: str
    spaces: frozenset[str]  # GRID and/or COMPILER_ACF

    def make(self, request: SearchRequest) -> CandidateSource: ...


def strategy_names() -> tuple[str, ...]:
    """The registered strategies, as `tune --strategy` accepts them."""
    return tuple(_STRATEGY_IMPORTS)


def default_strategy(request: SearchRequest) -> str:
    """What a space is searched with when no strategy is named: compileiq where only it can, else the GA (which
    `make_source` turns into a listing of the grid where the grid, after CONSTRAINTS, fits the GA's budget:
    ciq_build.search.exhaustive.listed_instead).

    Not the portfolio: on bench/search_quality's held-out decoys it is still behind random search (p < 0.05), and
    on the tuning set behind the GA alone on NK and the plain plateau (docs/RESULTS.md), so it is offered by name
    until it loses to neither."""
    return "compileiq" if request.space_kind == COMPILER_ACF else "ga"


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


def configured(request: SearchRequest) -> SearchConfiguration:
    """`request.config` with the strategy's options of the same name (generations, pool_size, ...) in place."""
    if request.options is None:
        return request.config
    names = {f.name for f in fields(request.config)}
    return replace(request.config, **{f.name: getattr(request.options, f.name) for f in fields(request.options)
                                      if f.name in names})


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
    if strategy is None and chosen.name == "ga":
        # A grid the GA's budget covers is listed instead, each configuration once (imported as the registry
        # imports a strategy: by name, when used).
        exhaustive = importlib.import_module(_STRATEGY_IMPORTS["exhaustive"].partition(":")[0])
        listed: CandidateSource | None = exhaustive.listed_instead(
            "ga", request, configured(replace(request, options=options)))
        if listed is not None:
            return listed
    return chosen.make(replace(request, options=options))
