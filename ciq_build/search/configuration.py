"""What every search over a grid shares: its configuration, what an objective may return, and how it is called."""

from __future__ import annotations

import math
import numbers
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ciq_build.core.causes import Cause
from ciq_build.core.pareto import Direction
from ciq_build.errors import ConfigError

# What an objective returns for "this candidate is not valid" (kept equal to compileiq's).
INVALID_SCORE = "*"


def _positive_int(name: str, value: Any, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ConfigError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _probability(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0.0 <= float(value) <= 1.0:
        raise ConfigError(f"{name} must be a number between 0 and 1, got {value!r}")
    return float(value)



def planned_evaluations(generations: int, pool_size: int, max_evaluations: int | None) -> int:
    """Evaluations a search of `generations` x `pool_size` makes, at most `max_evaluations` (the loop's budget)."""
    planned = generations * pool_size
    return planned if max_evaluations is None else min(planned, max_evaluations)


def planned_batches(described: Mapping[str, Any], generations: int, pool_size: int) -> tuple[int, int]:
    """(generations, pool size) a candidate source plans, as its describe()'s budget says (its strategy's own
    options; compileiq's pool raised to its engine's least), else the tune's `generations` and `pool_size`."""
    planned = described.get("budget") or {}
    return planned.get("generations", generations), planned.get("pool_size", pool_size)


@dataclass(frozen=True)
class SearchConfiguration:
    """How long and how widely to search. Validated on creation (ConfigError).

    ``cull_size`` is how many of the best evaluated candidates survive each
    generation to breed the next (elitism); by default an eighth of the pool
    with one objective and a quarter of it (at least 4) with several (NSGA-II
    ranking and crowding choose them): strong elitism measured best for budgets
    of a few hundred evaluations (bench/search_quality/run.py; issue 10 measured a
    quarter against the whole pool with two objectives). ``mutate_rate`` is
    each gene's chance to mutate (0.1 measured better than 0.25 there).
    ``init_with_true_random_threshold`` is the fraction of the first random
    candidates drawn inside a range's seed bounds (the rest use the full range).
    ``max_evaluations`` and ``time_limit`` (seconds) end a search early.
    """

    generations: int
    pool_size: int = 32
    cull_size: int | None = None
    mutate_rate: float = 0.1
    problem_type: str | Sequence[str] = "min"
    num_objectives: int = 1
    seed: int | None = None
    init_with_true_random_threshold: float = 0.9
    max_evaluations: int | None = None
    time_limit: float | None = None

    def __post_init__(self) -> None:
        _positive_int("generations", self.generations)
        _positive_int("pool_size", self.pool_size, 2)
        if self.cull_size is not None:
            _positive_int("cull_size", self.cull_size, 1)
        _probability("mutate_rate", self.mutate_rate)
        _positive_int("num_objectives", self.num_objectives)
        if self.seed is not None:
            _positive_int("seed", self.seed, 0)
        _probability("init_with_true_random_threshold", self.init_with_true_random_threshold)
        if self.max_evaluations is not None:
            _positive_int("max_evaluations", self.max_evaluations)
        if self.time_limit is not None and (
            isinstance(self.time_limit, bool)
            or not isinstance(self.time_limit, numbers.Real)
            or not self.time_limit > 0
        ):
            raise ConfigError(f"time_limit must be a number of seconds > 0, got {self.time_limit!r}")
        self.directions  # noqa: B018 - validates problem_type

    @property
    def directions(self) -> tuple[Direction, ...]:
        """One "min"/"max" per objective."""
        kind = self.problem_type
        if isinstance(kind, str):
            if kind not in ("min", "max"):
                raise ConfigError(f'problem_type must be "min" or "max", got {kind!r}')
            return (kind,) * self.num_objectives  # type: ignore[return-value]
        kinds = tuple(kind)
        if len(kinds) != self.num_objectives or any(k not in ("min", "max") for k in kinds):
            raise ConfigError(
                f'problem_type must be "min", "max" or one of those per objective '
                f"({self.num_objectives}), got {kind!r}"
            )
        return kinds  # type: ignore[return-value]

    @property
    def evaluations(self) -> int:
        """Candidates this search proposes at most: its generations' worth, fewer with max_evaluations."""
        return planned_evaluations(self.generations, self.pool_size, self.max_evaluations)

    @property
    def survivors(self) -> int:
        if self.cull_size is not None:
            return self.cull_size
        if self.num_objectives > 1:
            return max(min(self.pool_size, 4), self.pool_size // 4)
        return max(2, self.pool_size // 8)


def _call_objective(objective: Callable[[dict[str, Any]], Any], params: dict[str, Any]) -> tuple[Any, str | None, float]:
    """Run the objective once: (its value, exception text or None, wall seconds). Module level so processes can run it."""
    started = time.perf_counter()
    try:
        value = objective(dict(params))
    except Exception as error:  # an objective failure only invalidates its candidate
        return None, f"{type(error).__name__}: {error}", time.perf_counter() - started
    return value, None, time.perf_counter() - started


def interpret(value: Any, num_objectives: int) -> tuple[tuple[float, ...] | None, Cause | None, str]:
    """An objective's return value as (scores, failure cause or None, why it failed)."""
    if type(value) is float and num_objectives == 1 and math.isfinite(value):  # most answers: no ABC checks
        return (value,), None, ""
    if isinstance(value, str) and value == INVALID_SCORE:
        return None, Cause.INVALID, "objective returned INVALID_SCORE"
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        items: list[Any] = [value]
    elif isinstance(value, (tuple, list)) or (hasattr(value, "__len__") and hasattr(value, "tolist")):
        items = list(value.tolist() if hasattr(value, "tolist") else value)
    else:
        return None, Cause.INVALID, f"objective returned {type(value).__name__} {value!r}; expected a number or a tuple of numbers"
    if len(items) != num_objectives:
        return None, Cause.INVALID, f"objective returned {len(items)} score(s); expected {num_objectives}"
    scores = []
    for item in items:
        if isinstance(item, str) and item == INVALID_SCORE:
            return None, Cause.INVALID, "objective returned INVALID_SCORE"
        if isinstance(item, bool) or not isinstance(item, numbers.Real):
            return None, Cause.INVALID, f"objective returned a non-number score {item!r}"
        if not math.isfinite(item):
            return None, Cause.INVALID, f"objective returned a non-finite score {item!r}"
        scores.append(float(item))
    return tuple(scores), None, ""
