"""What a tune was asked to do, resolved once: nested frozen settings and their defaults.

Each value comes from the command line, else the target's ``ciq_tune_target()``
(its manifest), else the default written here; ``ciq_build.tune.tune_options``
does that resolution, once, with `merged` (each field by its name from the
first source that gives it), and every layer below reads these objects
instead of choosing between sources itself. They live in ``core`` so the
search layer can take its part (``SearchSettings``) without knowing the driver.
"""

from __future__ import annotations

import dataclasses
import math
import re
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from ciq_build.errors import ConfigError

# Seconds before one compile or benchmark run is killed, when neither --timeout nor
# the target's TIMEOUT says. The CMake module's TIMEOUT default (cmake/ciq_build.cmake)
# is the same number: a test holds them together.
DEFAULT_TIMEOUT = 60.0

# Seconds allowed for configuring a build tree: the user's (tune --source-dir) and the
# scratch trees (DEFAULT_TIMEOUT and the target's TIMEOUT times this factor).
CONFIGURE_TIMEOUT_FACTOR = 5
# Configuring the user's tree happens before its TIMEOUT is known.
USER_CONFIGURE_TIMEOUT = 600.0



def timeout_seconds(value: object) -> float | None:
    """`value` as a timeout in seconds, or None when it is not one: only a finite, positive int or float.

    A bool is not a number of seconds (``True`` once passed as 1 s), nor a string; an infinite or huge
    one overflowed where a deadline was computed (an OverflowError traceback mid-tune).
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        seconds = float(value)
    except OverflowError:  # an int too large for a float
        return None
    return seconds if math.isfinite(seconds) and seconds > 0 else None


TIMEOUT_RULE = "a positive, finite number of seconds"  # what timeout_seconds takes, for the messages


def timeout_advice(seconds: float) -> str:
    """What every timeout message says: the limit, and the two knobs that set it."""
    return (f"the limit was {seconds:g} s; if it is just slow, raise TIMEOUT in ciq_tune_target() "
            "or pass tune --timeout S")


_DURATION_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0}
_DURATION = re.compile(r"(?:(\d+(?:\.\d*)?)h)?(?:(\d+(?:\.\d*)?)m)?(?:(\d+(?:\.\d*)?)s?)?")
DURATION_RULE = "a duration such as 30m, 1h30m, 90s or a number of seconds"


def duration_seconds(value: object, flag: str = "--time-limit") -> float:
    """`value` (30m, 1h30m, 90s, 45, or a number) in seconds; a ConfigError naming `flag` when it is none."""
    seconds: float | None = None
    if isinstance(value, str):
        match = _DURATION.fullmatch(value.strip().lower())
        if match and any(match.groups()):
            seconds = sum(float(part) * unit for part, unit in zip(match.groups(), _DURATION_UNITS.values())
                          if part is not None)
    else:
        seconds = timeout_seconds(value)
    if seconds is None or not math.isfinite(seconds) or seconds <= 0:
        raise ConfigError(f"{flag} must be {DURATION_RULE} (more than zero), not {value!r}")
    return seconds


def duration_text(seconds: float) -> str:
    """`seconds` as a person writes a duration (1h30m, 30m, 90s): how the summary repeats a --time-limit."""
    if seconds < 60 or seconds % 60:
        return f"{seconds:g}s" if seconds < 3600 else f"{seconds / 60:g}m"
    hours, minutes = divmod(int(seconds) // 60, 60)
    return (f"{hours}h" if hours else "") + (f"{minutes}m" if minutes or not hours else "")


PLAIN_KINDS = ("knobs", "params")  # what is searched when neither --controls nor SEARCH_SPACE says


@dataclass(frozen=True)
class SearchSettings:
    """How the candidate source searches."""

    generations: int = 4
    pool_size: int = 8
    # Given as tune --pool-size (or pool_size= from Python): used as given. Else compileiq, whose engine refuses a
    # pool this small with 3 or more objectives, raises it to the smallest it takes (CompileIqStrategy).
    pool_size_explicit: bool = False
    mutate_rate: float = 0.1  # the GA's default (search/evolution.py SearchConfiguration)
    seed: int = 0
    max_evaluations: int | None = None  # fresh evaluations at most; journaled ones are free
    # Seconds of wall clock from the tune's start (after its lock) before the search starts no more
    # candidates; the winner is then re-measured and pinned as usual. None: no limit.
    time_limit: float | None = None
    # tune --seed-from: pinned records, folders of them, or controls lists (ciq_build.search.seeds),
    # evaluated first and entering the search's first generation.
    seed_from: tuple[str, ...] = ()
    seeds_said_as: str = "--seed-from"  # what messages call them: the target's SEEDS where the command line gave none
    controls: tuple[str, ...] = PLAIN_KINDS  # what is searched: knobs, params, an ACF space, acf-pool:<dir>
    allow_numerics: bool = False  # also search flags that change floating-point results
    pick: str = "knee"  # which Pareto point to pin: knee or first
    # A registered strategy's name (ciq_build.search.strategies) or, from Python, a Strategy object;
    # None: the space's default (compileiq for a compiler ACF space, else the portfolio: search.strategies).
    strategy: object = None
    strategy_options: tuple[str, ...] = ()  # tune --strategy-option KEY=VALUE, as given (the strategy's own)


@dataclass(frozen=True)
class MeasureSettings:
    """How each candidate is measured."""

    repeats: int = 5  # benchmark runs per candidate; the median is scored
    timeout: float = DEFAULT_TIMEOUT  # per compile or benchmark run
    timeout_explicit: bool = False  # given as tune --timeout: used as given (else the baseline's time scales it)
    gpus: tuple[str, ...] = ()  # CUDA devices to spread benchmarks over; empty: the default GPU

    @property
    def confirm_rounds(self) -> int:
        """Interleaved runs of baseline and winner each when re-measuring before a pin."""
        return max(5, self.repeats * 2)


@dataclass(frozen=True)
class BuildSettings:
    """How candidates are built."""

    jobs: int = 1  # candidates built in parallel (one scratch tree each)
    cmake_args: tuple[str, ...] = ()  # for configuring a new build tree (tune --source-dir)


S = TypeVar("S")


def _gives(value: Any) -> bool:
    """Whether a source's value counts: None and an empty list or tuple say nothing (the next source decides)."""
    return value is not None and not (isinstance(value, (list, tuple)) and not value)


def first_given(name: str, *sources: Mapping[str, Any], default: Any = None) -> Any:
    """What the first of `sources` that gives `name` gives (None and an empty list or tuple give nothing), else
    `default`."""
    return next((source[name] for source in sources if _gives(source.get(name))), default)


def merged(cls: type[S], *sources: Mapping[str, Any]) -> S:
    """Settings `cls` (a dataclass), each field from the first of `sources` that gives it, by the field's name,
    else its default; a field that is itself a settings dataclass is merged the same way, from the same sources
    (scikit-build-core's SourceChain). Lists become tuples (the settings are frozen)."""
    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        kind = hints[f.name]
        if isinstance(kind, type) and dataclasses.is_dataclass(kind):
            values[f.name] = merged(kind, *sources)
            continue
        value = first_given(f.name, *sources)
        if value is not None:
            values[f.name] = tuple(value) if isinstance(value, list) else value
    return cls(**values)
