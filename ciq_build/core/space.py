"""The search-space language: what each parameter of a search may take.

Used as ``import ciq_build.core.space as ss``::

    space = {
        "x": ss.range(1.0, 20.0, 0.5),
        "y": ss.choice([1, 2, 3]),
        "z": ss.literal("this is a constant", knockout_prob=0.5),
    }

Every parameter is a finite, ordered grid of values. The engine works on
*genes*: the index of a value in that grid, or ``None`` when the parameter is
knocked out (absent from the candidate; for a compiler knob, "leave the
compiler's default"). A parameter can be knocked out only when it was declared
with a ``knockout_prob`` (the probability that a freshly sampled candidate
lacks it); the search then evolves presence as well as value.

Definitions are checked when written, so a bad space fails at the line that
declares it, with :class:`ciq_build.errors.ConfigError`.
"""

from __future__ import annotations

import builtins
import functools
import json
import math
import numbers
import random
from collections.abc import Callable, ItemsView, Iterator, KeysView, Mapping, Sequence, ValuesView
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from ciq_build.errors import ConfigError

__all__ = [
    "Param",
    "Range",
    "Choice",
    "Literal",
    "SearchSpace",
    "range",
    "choice",
    "literal",
    "log_sampling",
    "canonical_key",
]

Gene = int | None
Genome = tuple[Gene, ...]

# A constrained space is drawn from by rejection: this many times the draws a search makes for one
# new configuration. Measured: BX*BY <= 1024 over two range(1,1024) allows 0.7% of the space,
# ~140 draws a hit (40 unconstrained draws found none); 1000x keeps a slot under ~0.3 s when a
# constraint allows almost nothing.
CONSTRAINED_DRAWS = 1000

# A mutation moves a range value this many grid steps with probability 1/2, 1/4, ...
# (geometric), capped here: a "nearby" move, as opposed to a random jump.
_MAX_LOCAL_STEPS = 8


def _check_number(what: str, value: Any) -> int | float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ConfigError(f"{what} must be a number, got {value!r}")
    number = int(value) if isinstance(value, numbers.Integral) else float(value)
    if isinstance(number, float) and not math.isfinite(number):
        raise ConfigError(f"{what} must be finite, got {value!r}")
    return number


def _check_knockout(knockout_prob: Any) -> float | None:
    if knockout_prob is None:
        return None
    prob = _check_number("knockout_prob", knockout_prob)
    if not 0.0 <= prob <= 1.0:
        raise ConfigError(f"knockout_prob must be between 0 and 1, got {knockout_prob!r}")
    return float(prob)


def _scalar(value: Any, what: str) -> str | int | float | bool:
    """A value a parameter may take: a str, bool, int or finite float (numpy scalars become Python ones)."""
    if isinstance(value, (str, bool)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        number = float(value)
        if not math.isfinite(number):
            raise ConfigError(f"{what} must be finite, got {value!r}")
        return number
    # numpy.bool_ is neither numbers.Integral nor bool.
    if type(value).__name__ == "bool_":
        return bool(value)
    raise ConfigError(
        f"{what} must be a str, bool, int or float (hashable, JSON-safe), got {type(value).__name__} {value!r}"
    )


def _kind(value: str | int | float | bool) -> str:
    if isinstance(value, str):
        return "str"
    if isinstance(value, bool):
        return "bool"
    return "number"


@dataclass(frozen=True)
class Param:
    """One parameter: a finite ordered grid of values, maybe knocked out."""

    knockout_prob: float | None = field(default=None, kw_only=True)

    @property
    def can_knockout(self) -> bool:
        return self.knockout_prob is not None

    @property
    def size(self) -> int:
        """Number of grid values (presence/absence not counted)."""
        raise NotImplementedError

    @property
    def ordered(self) -> bool:
        """Whether neighbouring grid indices are neighbouring values (local moves make sense)."""
        return False

    def value(self, index: int) -> Any:
        raise NotImplementedError

    def index(self, value: Any) -> int:
        """Grid index of ``value``; ConfigError when it is not a value of this parameter."""
        raise NotImplementedError

    def values(self) -> list[Any]:
        return [self.value(i) for i in builtins.range(self.size)]

    def sample(self, rng: random.Random, seeded_fraction: float) -> Gene:
        """A gene for a fresh random candidate (honours knockout_prob and seed bounds)."""
        if self.knockout_prob is not None and rng.random() < self.knockout_prob:
            return None
        return rng.randrange(self.size)

    def describe(self) -> dict[str, Any]:
        """A JSON-safe description (for provenance records)."""
        raise NotImplementedError


@dataclass(frozen=True)
class Range(Param):
    """``start, start+step, ...`` up to and including ``end`` (``end`` need not be on the grid)."""

    start: int | float
    end: int | float
    step: int | float = 1
    seed_low: int | float | None = None
    seed_high: int | float | None = None

    @property
    def _integral(self) -> bool:
        return isinstance(self.start, int) and isinstance(self.step, int)

    @property
    def size(self) -> int:
        return self._size

    @functools.cached_property
    def _size(self) -> int:
        # Decimal arithmetic is slow, and a search reads the size for every draw and mutation: computed once.
        if self._integral:
            return int((Decimal(self.end) - Decimal(self.start)) // Decimal(self.step)) + 1
        # Decimal arithmetic on the shortest repr keeps 0.1-steps exact.
        span = (Decimal(repr(float(self.end))) - Decimal(repr(float(self.start)))) / Decimal(
            repr(float(self.step))
        )
        return int(span) + 1

    @property
    def ordered(self) -> bool:
        return True

    def value(self, index: int) -> int | float:
        if self._integral:
            return self.start + index * self.step
        grid = self._float_grid
        if grid is not None:
            return grid[index]
        return self._exact(index)

    def _exact(self, index: int) -> float:
        return float(Decimal(repr(float(self.start))) + index * Decimal(repr(float(self.step))))

    @functools.cached_property
    def _float_grid(self) -> tuple[float, ...] | None:
        # Decimal arithmetic is slow; small float grids are computed once.
        size = self.size
        return tuple(self._exact(i) for i in builtins.range(size)) if size <= 100_000 else None

    def index(self, value: Any) -> int:
        number = _check_number("a range value", value)
        position = (number - self.start) / self.step
        nearest = round(position)
        if 0 <= nearest < self.size and math.isclose(self.value(nearest), number, rel_tol=1e-12, abs_tol=1e-12):
            return nearest
        raise ConfigError(f"{value!r} is not on the grid of {self.describe()}")

    def _seed_indices(self) -> tuple[int, int]:
        low = 0 if self.seed_low is None else math.ceil((self.seed_low - self.start) / self.step - 1e-9)
        high = (
            self.size - 1
            if self.seed_high is None
            else math.floor((self.seed_high - self.start) / self.step + 1e-9)
        )
        low, high = max(0, low), min(self.size - 1, high)
        return (low, high) if low <= high else (0, self.size - 1)

    def sample(self, rng: random.Random, seeded_fraction: float) -> Gene:
        if self.knockout_prob is not None and rng.random() < self.knockout_prob:
            return None
        if (self.seed_low is not None or self.seed_high is not None) and rng.random() < seeded_fraction:
            low, high = self._seed_indices()
            return rng.randint(low, high)
        return rng.randrange(self.size)

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "range", "start": self.start, "end": self.end, "step": self.step}
        for name in ("seed_low", "seed_high", "knockout_prob"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        return out


@dataclass(frozen=True)
class Choice(Param):
    """One of a list of values. ``is_ordered`` (log_sampling) lets mutation move to neighbours."""

    options: tuple[Any, ...]
    is_ordered: bool = False

    @property
    def size(self) -> int:
        return len(self.options)

    @property
    def ordered(self) -> bool:
        return self.is_ordered

    def value(self, index: int) -> Any:
        return self.options[index]

    def index(self, value: Any) -> int:
        for i, option in enumerate(self.options):
            if option == value and _kind(option) == _kind(_scalar(value, "a choice value")):
                return i
        raise ConfigError(f"{value!r} is not one of the choices {list(self.options)!r}")

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "choice", "values": list(self.options)}
        if self.knockout_prob is not None:
            out["knockout_prob"] = self.knockout_prob
        return out


@dataclass(frozen=True)
class Literal(Param):
    """A constant; interesting only with a knockout_prob (an on/off flag)."""

    constant: Any

    @property
    def size(self) -> int:
        return 1

    def value(self, index: int) -> Any:
        return self.constant

    def index(self, value: Any) -> int:
        if value == self.constant and _kind(_scalar(value, "a literal value")) == _kind(self.constant):
            return 0
        raise ConfigError(f"{value!r} is not the literal {self.constant!r}")

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "literal", "value": self.constant}
        if self.knockout_prob is not None:
            out["knockout_prob"] = self.knockout_prob
        return out


def range(  # noqa: A001 - the spec's name, used as ss.range
    start: int | float,
    end: int | float,
    step: int | float = 1,
    knockout_prob: float | None = None,
    seed_low: int | float | None = None,
    seed_high: int | float | None = None,
) -> Range:
    """Inclusive grid ``start, start+step, ... <= end``; ints stay ints when start and step are ints.

    ``seed_low``/``seed_high`` narrow only the initial sampling (see
    ``SearchConfiguration.init_with_true_random_threshold``).
    """
    start = _check_number("range start", start)
    end = _check_number("range end", end)
    step = _check_number("range step", step)
    if step <= 0:
        raise ConfigError(f"range step must be > 0, got {step!r}")
    if end <= start:
        raise ConfigError(f"range end must be greater than start, got start={start!r}, end={end!r}")
    for name, bound in (("seed_low", seed_low), ("seed_high", seed_high)):
        if bound is not None:
            bound = _check_number(name, bound)
            if not start <= bound <= end:
                raise ConfigError(f"{name}={bound!r} is outside the range [{start!r}, {end!r}]")
    if seed_low is not None and seed_high is not None and seed_high < seed_low:
        raise ConfigError(f"seed_high={seed_high!r} must not be below seed_low={seed_low!r}")
    return Range(
        start=start,
        end=end,
        step=step,
        seed_low=seed_low,
        seed_high=seed_high,
        knockout_prob=_check_knockout(knockout_prob),
    )


def choice(values: Sequence[Any], knockout_prob: float | None = None) -> Choice:
    """One of ``values``: all str, all bool, or all numbers; no duplicates."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise ConfigError(f"choice needs a list of values, got {values!r}")
    options = tuple(_scalar(v, "a choice value") for v in values)
    if not options:
        raise ConfigError("choice needs at least one value, got an empty list")
    kinds = {_kind(v) for v in options}
    if len(kinds) > 1:
        raise ConfigError(
            f"choice values must all be of one kind (all str, all bool or all numbers), got {list(options)!r}"
        )
    if len(set(options)) != len(options):
        raise ConfigError(f"choice values must be distinct, got {list(options)!r}")
    return Choice(options=options, knockout_prob=_check_knockout(knockout_prob))


def literal(value: Any, knockout_prob: float | None = None) -> Literal:
    """A constant value (a flag when given a knockout_prob)."""
    return Literal(constant=_scalar(value, "a literal value"), knockout_prob=_check_knockout(knockout_prob))


def log_sampling(
    start: int | float, end: int | float, total: int = 10, knockout_prob: float | None = None
) -> Choice:
    """``total`` values spaced evenly on a log scale from ``start`` to ``end`` (both > 0), ordered."""
    start = _check_number("log_sampling start", start)
    end = _check_number("log_sampling end", end)
    if start <= 0:
        raise ConfigError(f"log_sampling start must be > 0, got {start!r}")
    if end <= start:
        raise ConfigError(f"log_sampling end must be greater than start, got start={start!r}, end={end!r}")
    if isinstance(total, bool) or not isinstance(total, numbers.Integral) or total < 2:
        raise ConfigError(f"log_sampling total must be an integer >= 2, got {total!r}")
    ratio = math.log(end / start)
    # 12 significant digits hides floating-point noise (10.000000000000002 -> 10.0).
    options: list[float] = []
    for i in builtins.range(int(total)):
        v = float(f"{start * math.exp(ratio * i / (total - 1)):.12g}")
        if not options or v != options[-1]:
            options.append(v)
    return Choice(options=tuple(options), is_ordered=True, knockout_prob=_check_knockout(knockout_prob))


def canonical_key(params: Mapping[str, Any]) -> str:
    """The identity of a configuration: JSON with sorted keys (absent parameters simply absent).

    1, 1.0 and True give different keys (JSON keeps them apart); key order does not matter.
    """
    return json.dumps(params, sort_keys=True, separators=(",", ":"), default=repr, allow_nan=True)


class SearchSpace(Mapping[str, Param]):
    """An ordered mapping of parameter names to parameters, with genome <-> params conversion.

    ``allows``: whether a configuration may be searched at all (the target's CONSTRAINTS,
    ciq_build.core.constraints); a search never proposes one it refuses.
    """

    _allows: Callable[[Mapping[str, Any]], bool] | None

    def __init__(self, params: Mapping[str, Param] | SearchSpace,
                 allows: Callable[[Mapping[str, Any]], bool] | None = None):
        if isinstance(params, SearchSpace):
            allows = allows if allows is not None else params._allows
            params = params._params
        if not isinstance(params, Mapping):
            raise ConfigError(f"a search space is a dict of name -> ss.range/choice/literal, got {params!r}")
        if not params:
            raise ConfigError("the search space is empty: give at least one parameter")
        for name, param in params.items():
            if not isinstance(name, str) or not name:
                raise ConfigError(f"parameter names must be non-empty strings, got {name!r}")
            if not isinstance(param, Param):
                raise ConfigError(
                    f"parameter {name!r} must be defined with ss.range/choice/literal/log_sampling, got {param!r}"
                )
        self._params: dict[str, Param] = dict(params)
        self._names = tuple(self._params)
        self._allows = allows

    @property
    def constrained(self) -> bool:
        return self._allows is not None

    def draws(self, unconstrained: int) -> int:
        """How many random draws to try for one new configuration: more where constraints reject draws."""
        return unconstrained * (CONSTRAINED_DRAWS if self._allows is not None else 1)

    def nothing_allowed(self) -> ConfigError:
        """The error of a search whose constraints refused every configuration it could draw or list."""
        return ConfigError(
            "CONSTRAINTS allow none of the configurations the search drew or listed from PARAMS "
            f"({self.cardinality} in all); loosen CONSTRAINTS or widen PARAMS in ciq_tune_target()")

    def allows(self, genome: Genome) -> bool:
        """Whether the configuration of `genome` may be searched (every constraint holds)."""
        return self._allows is None or bool(self._allows(self.to_params(genome)))

    def __getitem__(self, name: str) -> Param:
        return self._params[name]

    # The dict's own views: Mapping's are Python generators over __getitem__, and a search reads every parameter for
    # each child it breeds, mutates or changes.
    def keys(self) -> KeysView[str]:
        return self._params.keys()

    def values(self) -> ValuesView[Param]:
        return self._params.values()

    def items(self) -> ItemsView[str, Param]:
        return self._params.items()

    def __iter__(self) -> Iterator[str]:
        return iter(self._params)

    def __len__(self) -> int:
        return len(self._params)

    def __repr__(self) -> str:
        return f"SearchSpace({self.describe()!r})"

    @property
    def names(self) -> tuple[str, ...]:
        return self._names

    @property
    def cardinality(self) -> int:
        """Number of distinct configurations (absence counts as one more value)."""
        total = 1
        for param in self._params.values():
            total *= param.size + (1 if param.can_knockout else 0)
        return total

    def describe(self) -> dict[str, Any]:
        return {name: param.describe() for name, param in self._params.items()}

    def to_params(self, genome: Genome) -> dict[str, Any]:
        """The dict an objective receives: absent (knocked-out) parameters are left out."""
        return {name: values[gene] for name, values, gene in zip(self._names, self._values, genome, strict=True)
                if gene is not None}

    def key_of(self, genome: Genome) -> str:
        """canonical_key(self.to_params(genome)), written from each value's part made once."""
        parts = self._key_parts
        return "{" + ",".join([parts[i][gene] for i in self._key_order if (gene := genome[i]) is not None]) + "}"

    @property
    def genes(self) -> list[tuple[Gene, ...]]:
        """Each parameter's genes: its grid indices in order, then None where it can be knocked out."""
        return self._genes

    # A search converts a genome to its params and its key for every candidate, and draws thousands: each parameter's
    # values, and each one's part of canonical_key, are made once (when first asked for), not by Param.value and json
    # every time; its genes and its draws' bound methods are listed once.
    @functools.cached_property
    def _values(self) -> list[_Made]:
        return [_Made(param.value) for param in self._params.values()]

    @functools.cached_property
    def _key_parts(self) -> list[_Made]:
        return [_Made(functools.partial(_key_part, name, param)) for name, param in self._params.items()]

    @functools.cached_property
    def _key_order(self) -> list[int]:
        """The parameters' indices in the order canonical_key writes them (sorted by name)."""
        return sorted(builtins.range(len(self._names)), key=self._names.__getitem__)

    @functools.cached_property
    def _samplers(self) -> list[Callable[[random.Random, float], Gene]]:
        return [param.sample for param in self._params.values()]

    @functools.cached_property
    def _genes(self) -> list[tuple[Gene, ...]]:
        return [tuple(builtins.range(p.size)) + ((None,) if p.can_knockout else ()) for p in self._params.values()]

    def to_genome(self, params: Mapping[str, Any]) -> Genome:
        """The genome of a configuration; ConfigError if it does not belong to this space."""
        if not isinstance(params, Mapping):
            raise ConfigError(f"a configuration is a dict of parameter values, got {params!r}")
        unknown = sorted(set(params) - set(self._params))
        if unknown:
            raise ConfigError(f"configuration has parameters that are not in the search space: {unknown}")
        genes: list[Gene] = []
        for name, param in self._params.items():
            if name not in params:
                if not param.can_knockout:
                    raise ConfigError(
                        f"configuration lacks {name!r}, which has no knockout_prob and so cannot be absent"
                    )
                genes.append(None)
            else:
                try:
                    genes.append(param.index(params[name]))
                except ConfigError as error:
                    raise ConfigError(f"parameter {name!r}: {error}") from None
        return tuple(genes)

    def sample(self, rng: random.Random, seeded_fraction: float = 0.9) -> Genome:
        return tuple([sample(rng, seeded_fraction) for sample in self._samplers])

    def genome_at(self, ordinal: int) -> Genome:
        """The ``ordinal``-th configuration in a fixed enumeration (for exhausting small spaces)."""
        genes: list[Gene] = []
        for param in self._params.values():
            width = param.size + (1 if param.can_knockout else 0)
            ordinal, digit = divmod(ordinal, width)
            genes.append(None if digit == param.size else digit)
        return tuple(genes)


class _Made(dict[int, Any]):
    """A function of a parameter's grid index, made for each index when first asked for."""

    def __init__(self, make: Callable[[int], Any]) -> None:
        super().__init__()
        self.make = make

    def __missing__(self, index: int) -> Any:
        made = self[index] = self.make(index)
        return made


def _key_part(name: str, param: Param, index: int) -> str:
    """`"name":value` as canonical_key writes it in a configuration's key."""
    return canonical_key({name: param.value(index)})[1:-1]


def as_space(space: Mapping[str, Param] | SearchSpace,
             allows: Callable[[Mapping[str, Any]], bool] | None = None) -> SearchSpace:
    """`space` as a SearchSpace; with `allows`, one that searches only the configurations it allows."""
    if isinstance(space, SearchSpace) and allows is None:
        return space
    return SearchSpace(space, allows)
