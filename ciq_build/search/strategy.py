"""What a search strategy is: the contract every strategy implements and the registry hands them.

A strategy (``tune --strategy NAME``, or an object from Python) turns a
:class:`SearchRequest` -- the parameters to search, the compiler's ACF space
if any, the budget and the objectives -- into a candidate source
(:class:`ciq_build.search.base.CandidateSource`). The space says *what* may
be searched; the strategy *how*. Each strategy says which kinds of space it
can search (``spaces``). A strategy's module imports this one, never the
registry that names it (ciq_build.search.strategies).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ciq_build.core.space import Param
from ciq_build.search.base import CandidateSource
from ciq_build.search.configuration import SearchConfiguration

if TYPE_CHECKING:
    from ciq_build.compiler.toolchain import Toolchain
    from ciq_build.search.seeds import Seed

# The kinds of space a strategy may support.
GRID = "grid"  # knobs, params and ACF pools: finite grids of values (ciq_build.core.space)
COMPILER_ACF = "compiler-acf"  # a compiler search space (ptxas-acf, nvcc-acf, a .bin): opaque, ACFs come from compileiq


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
    # Whether the user chose `config.pool_size` (tune --pool-size; a configuration from Python is chosen): where not,
    # a strategy whose engine needs a larger pool (compileiq's, with several objectives) may take it.
    pool_size_explicit: bool = True
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


def configured(request: SearchRequest) -> SearchConfiguration:
    """`request.config` with the strategy's options of the same name (generations, pool_size, ...) in place."""
    if request.options is None:
        return request.config
    names = {f.name for f in fields(request.config)}
    return replace(request.config, **{f.name: getattr(request.options, f.name) for f in fields(request.options)
                                      if f.name in names})
