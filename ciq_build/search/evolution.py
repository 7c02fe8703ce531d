"""The genetic search: configuration, operators, the ask/tell loop, NSGA-II, progress.

Two ways to drive it:

* ``Search(objective, space, config).start(num_workers=4)`` evaluates
  candidates itself (in a ``concurrent.futures`` executor) and returns
  :class:`~ciq_build.search.results.Results`.
* ``ask()`` / ``tell()`` for a caller that evaluates candidates itself.
  ``ask()`` returns the current generation's candidates that have no score
  yet (asking again before telling returns the same ones); once every
  candidate of the generation has been told, the next ``ask()`` breeds the
  next generation. The batch is a pure function of the seed and of the scores
  told so far (never of timing or tell order), so a resumed run that answers
  each asked candidate from a journal -- keyed by :func:`canonical_key` --
  re-creates the same state and carries on where the first one stopped.

A configuration is never issued twice (knockout included). Generation 0 holds
the caller's seed configurations first, then random ones. The first bred
generation starts with untried one-step neighbours of generation 0's best
(at most ``POLL_SHARE`` of the pool). While the best configurations found
stay the same, a generation starts with local moves around them (at most
``STALL_SHARE`` of the pool): repairs of candidates that failed one change
away from them, then, unless the landscape is flat, the best's untried single
changes. Each later generation breeds
``pool_size`` new candidates from the survivors (tournament selection,
uniform crossover, grid mutation) and keeps the best ``cull_size`` of
survivors + newcomers (elitism; NSGA-II ranking and crowding distance when
there are several objectives; equal fitness is broken by a seeded random draw
made afresh each generation, so a plateau does not keep the same survivors).
Every operator is a small replaceable class.
"""

from __future__ import annotations

import concurrent.futures as cf
import itertools
import math
import numbers
import random
import secrets
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TextIO

from ciq_build.compiler.controls import Controls
from ciq_build.core import pace
from ciq_build.core.causes import Cause
from ciq_build.core.pareto import Direction, crowding_distance, minimised, non_dominated_sort
from ciq_build.core.space import Gene, Genome, Param, SearchSpace, as_space, canonical_key
from ciq_build.errors import ConfigError, SearchError
from ciq_build.search.base import Proposal
from ciq_build.search.evaluation import Evaluation
from ciq_build.search.results import Results

__all__ = [
    "INVALID_SCORE",
    "SearchConfiguration",
    "Candidate",
    "Individual",
    "Search",
    "canonical_key",
    "RandomSampler",
    "TournamentSelection",
    "UniformCrossover",
    "GridMutation",
    "ElitistSurvival",
    "NSGA2Survival",
    "ProgressReporter",
]

# What an objective returns for "this candidate is not valid" (kept equal to compileiq's).
INVALID_SCORE = "*"

_MAX_LOCAL_STEPS = 8
_RETRIES = 40  # breeding attempts per slot before falling back to random / enumeration
PLATEAU_IMMIGRANTS = 0.75  # the share of children drawn at random while every survivor has the same fitness
# A landscape is flat where most of it scores exactly alike (bench/search_quality/run.py's plateaus: 97.6% of
# random draws score 100). Selection learns nothing there, so while the best found is not clearly off that
# level, children are drawn from the whole space in the share the landscape is flat. Measured (seeds 0-99,
# 640 evaluations): the decoy plateau's basin found in 60/100 runs (was 32; random search 68/100; on seeds
# 100-299 126/200 against random's 128), the plateau's target in 50/100 (was 47); no other problem changes,
# as no score is shared by most random draws there.
FLAT_SHARE = 0.5  # more than this share of the random draws tied at one score: the landscape is flat
# A best within this fraction of the flat score is no evidence of a basin yet: the decoy's slope spans 0.5%
# of it, a plateau basin's points score 66% or more below it.
FLAT_MARGIN = 0.01
# The first generation bred after the random initial draw starts with untried one-step neighbours of the
# draw's best (each ordered value one grid step up or down, each other value of a choice of at most
# _POLL_CHOICES), in a seeded random order, up to this share of the pool: the draw's best is the one point
# the search knows is good, and its neighbours are the cheapest test of it. Measured (bench/search_quality/run.py,
# 100 seeds, 640 evaluations): the seeds' example in a median 34 evaluations (was 36; seeds 100-299: 34, was
# 37), every other problem within its noise (the plateaus, knobs, NK, Rastrigin: -4 to +8 points either way
# on seeds 0-99 and 100-199). Polled after every new best instead, it cost knobs 8 points and Rastrigin 18:
# local steps around each new best trap a rugged search.
POLL_SHARE = 0.125
_POLL_CHOICES = 4
# While the best configurations found stay the same from one generation to the next, the next starts with
# local moves around them, up to this share of the pool, before any bred child:
# * repairs: a candidate that failed one change away from a best configuration is often one more change from
#   working (an unroll that needs more registers than a large block allows works under a register cap; a block
#   too large for a kernel's registers works with another unroll), so the failed candidate with one other
#   parameter set to another of its values (knocked out or back included), the newest failures first;
# * then, unless the landscape is flat (where a best says nothing of its neighbours), the best's untried single
#   changes: every other value of one parameter.
# Each group in a seeded order. Measured (bench/search_quality/run.py, 640 evaluations, 100 seeds on each of seeds
# 0-99, 100-199 and 200-299, against the search before): the knobs problem, whose best needs an unroll that fails
# to launch unless the register cap sits at the edge of a neutral range, reached in 61, 58 and 67 runs (was 28,
# 26, 34); the held-out Rastrigin in 93, 89, 88 (was 84, 66, 62); NK 84, 78, 81 (was 78, 74, 82); every other
# problem within its noise (12 mixed 71, 56, 69, was 74, 61, 70; the plateaus unchanged: flat). Alone, repairs
# gave the knobs 57 and 59 (seeds 0-199) and left the rest as before; single changes alone gave the knobs 39 and
# 45. Single changes after every new best instead of after a generation without one cost Rastrigin 18 points.
STALL_SHARE = 0.5
_ENUMERATE_LIMIT = 200_000  # spaces this small are enumerated once breeding stops finding new configurations


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


@dataclass(frozen=True)
class Candidate:
    """A configuration to evaluate: ``params`` is what the objective receives."""

    id: int
    generation: int
    params: dict[str, Any]
    key: str
    genome: Genome = field(repr=False)


@dataclass
class Individual:
    """An evaluated candidate in the breeding population. ``fitness`` is in smaller-is-better form."""

    candidate: Candidate
    fitness: tuple[float, ...]
    rank: int = 0
    crowding: float = 0.0
    tie: float = 0.0  # a seeded random draw, renewed every generation: breaks ties in survival

    @property
    def genome(self) -> Genome:
        return self.candidate.genome

    def order(self) -> tuple[int, float, float, int]:
        """Better first: lower rank, then larger crowding distance, then the lower tie draw (then id)."""
        return (self.rank, -self.crowding, self.tie, self.candidate.id)


# -- operators --------------------------------------------------------------------
# Each is a callable; pass your own to Search(...) to replace one.


class Sampler(Protocol):
    def __call__(self, rng: random.Random, space: SearchSpace, seeded_fraction: float) -> Genome: ...


class Selection(Protocol):
    def __call__(self, rng: random.Random, population: Sequence[Individual]) -> Individual: ...


class Crossover(Protocol):
    def __call__(self, rng: random.Random, a: Genome, b: Genome, space: SearchSpace) -> Genome: ...


class Mutation(Protocol):
    def __call__(self, rng: random.Random, genome: Genome, space: SearchSpace, rate: float) -> Genome: ...


class Survival(Protocol):
    def __call__(self, population: Sequence[Individual], size: int) -> list[Individual]: ...


@dataclass(frozen=True)
class RandomSampler:
    """Uniform over each parameter's grid; knockout_prob and seed bounds honoured."""

    def __call__(self, rng: random.Random, space: SearchSpace, seeded_fraction: float) -> Genome:
        return space.sample(rng, seeded_fraction)


@dataclass(frozen=True)
class TournamentSelection:
    """The best of ``size`` distinct individuals drawn at random."""

    size: int = 2

    def __call__(self, rng: random.Random, population: Sequence[Individual]) -> Individual:
        drawn = rng.sample(list(population), min(self.size, len(population)))
        return min(drawn, key=Individual.order)


@dataclass(frozen=True)
class UniformCrossover:
    """Each gene from either parent with equal chance.

    For a range (or log_sampling) present in both parents, with probability
    ``blend_prob`` the child instead takes a grid point on the segment between
    them, stretched by ``stretch`` beyond each end (BLX-alpha on the grid
    index): on smooth numeric knobs this finds the region between two good
    values, and slightly past them, much faster than copying either.
    """

    blend_prob: float = 0.5
    stretch: float = 0.25

    def __call__(self, rng: random.Random, a: Genome, b: Genome, space: SearchSpace) -> Genome:
        child: list[Gene] = []
        for param, x, y in zip(space.values(), a, b, strict=True):
            if x is not None and y is not None and x != y and param.ordered and rng.random() < self.blend_prob:
                low, high = min(x, y), max(x, y)
                span = (high - low) * self.stretch
                pick = round(rng.uniform(low - span, high + span))
                child.append(min(max(pick, 0), param.size - 1))
            else:
                child.append(x if rng.random() < 0.5 else y)
        return tuple(child)


@dataclass(frozen=True)
class GridMutation:
    """Each gene mutates with probability ``rate``.

    A present range (or log_sampling) value moves to a nearby grid point with
    probability ``local_prob`` (1 step with probability 1/2, 2 with 1/4, ...),
    otherwise jumps anywhere; a choice jumps to another value. A parameter
    with a knockout_prob is knocked out with probability ``knockout_flip_prob``,
    and an absent one comes back with a random value.
    """

    local_prob: float = 0.7
    knockout_flip_prob: float = 0.2

    def gene(self, rng: random.Random, param: Param, gene: int | None) -> int | None:
        if gene is None:
            return rng.randrange(param.size)
        if param.can_knockout and (param.size == 1 or rng.random() < self.knockout_flip_prob):
            return None
        if param.size == 1:
            return gene
        if param.ordered and rng.random() < self.local_prob:
            steps = 1
            while steps < _MAX_LOCAL_STEPS and rng.random() < 0.5:
                steps += 1
            direction = rng.choice((-1, 1))
            moved = gene + direction * steps
            if not 0 <= moved < param.size:  # bounce off the end of the grid
                moved = gene - direction * steps
            return min(max(moved, 0), param.size - 1)
        other = rng.randrange(param.size - 1)
        return other + (other >= gene)

    def __call__(self, rng: random.Random, genome: Genome, space: SearchSpace, rate: float) -> Genome:
        params = list(space.values())
        return tuple(
            self.gene(rng, param, g) if rng.random() < rate else g for param, g in zip(params, genome, strict=True)
        )


def single_changes(genome: Genome, space: SearchSpace) -> list[tuple[int, Genome]]:
    """Every configuration that differs from `genome` in one parameter, as (that parameter's index, genome):
    each other value of each parameter, knocked out or brought back where it can be."""
    out = []
    for i, param in enumerate(space.values()):
        values: list[int | None] = list(range(param.size)) + ([None] if param.can_knockout else [])
        out += [(i, genome[:i] + (value,) + genome[i + 1:]) for value in values if value != genome[i]]
    return out


def one_step_neighbours(genome: Genome, space: SearchSpace) -> list[Genome]:
    """The single changes of `genome` that are one step: one ordered value a grid step up or down, or one value
    of a choice of at most _POLL_CHOICES another of its values (a knocked-out parameter stays out, a present one
    stays in)."""
    params = list(space.values())

    def one_step(i: int, value: int | None) -> bool:
        gene = genome[i]
        if gene is None or value is None:
            return False
        return abs(value - gene) == 1 if params[i].ordered else params[i].size <= _POLL_CHOICES

    return [changed for i, changed in single_changes(genome, space) if one_step(i, changed[i])]


@dataclass(frozen=True)
class ElitistSurvival:
    """Keep the ``size`` best (lexicographic over objectives).

    Equal fitness is decided by each individual's ``tie`` draw (seeded, new every
    generation), not by id: on a plateau the survivors then change from one
    generation to the next instead of the oldest few staying forever.
    """

    def __call__(self, population: Sequence[Individual], size: int) -> list[Individual]:
        kept = sorted(population, key=lambda ind: (ind.fitness, ind.tie, ind.candidate.id))[:size]
        for rank, ind in enumerate(kept):
            ind.rank, ind.crowding = rank, 0.0
        return kept


@dataclass(frozen=True)
class NSGA2Survival:
    """NSGA-II: fill by non-dominated fronts, cut the last by crowding distance (then the tie draw)."""

    def __call__(self, population: Sequence[Individual], size: int) -> list[Individual]:
        population = sorted(population, key=lambda ind: ind.candidate.id)
        fitness = [ind.fitness for ind in population]
        kept: list[Individual] = []
        for rank, front in enumerate(non_dominated_sort(fitness)):
            distance = crowding_distance(fitness, front)
            for i in front:
                population[i].rank, population[i].crowding = rank, distance[i]
            members = sorted((population[i] for i in front), key=Individual.order)
            kept += members[: size - len(kept)]
            if len(kept) >= size:
                break
        return kept


# -- progress ---------------------------------------------------------------------


class ProgressReporter:
    """One self-rewriting status line on a terminal: step k/n, evaluations, failures, best, times.

    Silent when ``enabled`` is False, or when it is None and the stream is not
    a terminal (logs and CI stay clean). Reusable by any loop with steps.
    """

    def __init__(
        self,
        total: int | None,
        *,
        unit: str = "generation",
        stream: TextIO | None = None,
        enabled: bool | None = None,
        time_limit: float | None = None,
        min_interval: float = 0.2,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.total, self.unit, self.time_limit = total, unit, time_limit
        self.stream = stream if stream is not None else sys.stderr
        if enabled is None:
            isatty = getattr(self.stream, "isatty", None)
            enabled = bool(isatty and isatty())
        self.enabled = enabled
        self._clock, self._min_interval = clock, min_interval
        self._started = clock()
        self._last_write = -math.inf
        self._width = 0

    def line(self, done: int, *, evaluations: int = 0, failures: int = 0, best: str | None = None) -> str:
        elapsed = self._clock() - self._started
        parts = [f"{self.unit} {done}/{self.total}" if self.total else f"{self.unit} {done}"]
        parts += [f"{evaluations} evaluations", f"{failures} failed"]
        if best is not None:
            parts.append(f"best {best}")
        parts.append(f"{pace.clock(elapsed)} elapsed")
        remaining = pace.time_left(elapsed, done, done, self.total or None)
        if self.time_limit is not None:
            left = max(0.0, self.time_limit - elapsed)
            remaining = left if remaining is None else min(remaining, left)
        if remaining is not None:
            parts.append(f"~{pace.clock(remaining)} left")
        return " | ".join(parts)

    def update(
        self,
        done: int,
        *,
        evaluations: int = 0,
        failures: int = 0,
        best: str | Callable[[], str | None] | None = None,
        force: bool = False,
    ) -> None:
        """Redraw the line (at most every ``min_interval`` s unless ``force``); ``best`` may be a callable, called only when drawn."""
        if not self.enabled:
            return
        now = self._clock()
        if not force and now - self._last_write < self._min_interval:
            return
        self._last_write = now
        if callable(best):
            best = best()
        text = self.line(done, evaluations=evaluations, failures=failures, best=best)
        self.stream.write("\r" + text.ljust(self._width))
        self.stream.flush()
        self._width = len(text)

    def close(self) -> None:
        if self.enabled and self._width:
            self.stream.write("\n")
            self.stream.flush()
            self._width = 0


# -- evaluation helpers ---------------------------------------------------------------


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


# -- the search -------------------------------------------------------------------------


class Search:
    """A genetic search over ``search_space`` for ``objective_function``.

    ``seeds``: configurations (params dicts, absent keys = knocked out) placed
    first in generation 0, e.g. the compiler's defaults. The operators default
    to tournament selection, uniform crossover, grid mutation, and elitist
    survival (one objective) or NSGA-II survival (several).
    ``progress``: True/False forces the stderr status line on/off; None shows it
    only on a terminal.
    """

    def __init__(
        self,
        objective_function: Callable[[dict[str, Any]], Any] | None,
        search_space: Mapping[str, Param] | SearchSpace,
        search_config: SearchConfiguration,
        *,
        seeds: Sequence[Mapping[str, Any]] = (),
        sampler: Sampler | None = None,
        selection: Selection | None = None,
        crossover: Crossover | None = None,
        mutation: Mutation | None = None,
        survival: Survival | None = None,
        objective_names: Sequence[str] | None = None,
        progress: bool | None = None,
    ):
        if objective_function is not None and not callable(objective_function):
            raise ConfigError(f"objective_function must be callable, got {objective_function!r}")
        if not isinstance(search_config, SearchConfiguration):
            raise ConfigError(f"search_config must be a SearchConfiguration, got {search_config!r}")
        self.objective_function = objective_function
        self.space = as_space(search_space)
        self.config = search_config
        self.seed: int = search_config.seed if search_config.seed is not None else secrets.randbits(63)
        self.directions = search_config.directions
        self._seed_genomes: list[Genome] = []
        for i, params in enumerate(seeds):
            try:
                genome = self.space.to_genome(params)
            except ConfigError as error:
                raise ConfigError(f"seed configuration {i} ({params!r}) does not fit the search space: {error}") from None
            if genome not in self._seed_genomes:
                self._seed_genomes.append(genome)
        self.sampler: Sampler = sampler or RandomSampler()
        self.selection: Selection = selection or TournamentSelection()
        self.crossover: Crossover = crossover or UniformCrossover()
        self.mutation: Mutation = mutation or GridMutation()
        self.survival: Survival = survival or (NSGA2Survival() if len(self.directions) > 1 else ElitistSurvival())
        self.progress = progress
        self.results = Results(self.directions, objective_names=objective_names)

        self._generation = 0
        self._batch: list[Candidate] | None = None
        self._told: dict[int, Evaluation] = {}
        self._seen: set[Genome] = set()
        self._population: list[Individual] = []
        # Candidates drawn from the whole space (not bred), and how often each fitness came up among them:
        # the measure of how flat the landscape is.
        self._drawn_ids: set[int] = set()
        self._drawn_fitness: Counter[tuple[float, ...]] = Counter()
        # What local moves need: each configuration evaluated without failure and its fitness, the failed ones
        # in the order they were issued, the best fitnesses (the survivors' first front), and whether the last
        # generation left them as they were.
        self._fitness_of: dict[Genome, tuple[float, ...]] = {}
        self._failed: list[Genome] = []
        self._best_fitnesses: frozenset[tuple[float, ...]] = frozenset()
        self._stalled = False
        self._next_id = 0
        self._issued = 0
        self._started: float | None = None
        self._stop_reason: str | None = None

    # -- state ----------------------------------------------------------------------

    @property
    def generation(self) -> int:
        """The generation ask() works on (0-based)."""
        return self._generation

    @property
    def finished(self) -> bool:
        return self._stop_reason is not None

    @property
    def stop_reason(self) -> str | None:
        """Why the search ended: generations, max_evaluations, time_limit, exhausted, all_invalid."""
        return self._stop_reason

    @property
    def population(self) -> list[Individual]:
        """The current survivors (the parents of the next generation)."""
        return list(self._population)

    @property
    def pending(self) -> list[Candidate]:
        """Candidates asked but not told yet."""
        return [c for c in self._batch or () if c.id not in self._told]

    # -- ask / tell -------------------------------------------------------------------

    def ask(self) -> list[Candidate]:
        """The current generation's candidates that still need a score ([] once finished)."""
        if self._started is None:
            self._started = time.monotonic()
        if self._stop_reason is not None:
            return []
        if self._batch is None:
            self._batch = self._breed()
            if not self._batch:
                if self._generation == 0 and self.space.constrained:
                    raise self.space.nothing_allowed()
                self._stop_reason = "exhausted"
                return []
        return self.pending

    def tell(
        self,
        candidate: Candidate | int,
        scores: Any = INVALID_SCORE,
        *,
        cause: Cause | None = None,
        message: str = "",
        seconds: float = 0.0,
    ) -> Evaluation:
        """Record one asked candidate's outcome and return its Evaluation.

        ``scores`` is what the objective returned (a number, a tuple, or
        INVALID_SCORE). A ``cause`` marks the candidate failed whatever
        ``scores`` is, with ``message`` saying why. Telling the
        last candidate of a generation breeds the survivors; it raises
        SearchError when every candidate of that generation failed.
        """
        cid = candidate.id if isinstance(candidate, Candidate) else candidate
        waiting = {c.id: c for c in self.pending}
        if cid not in waiting:
            raise SearchError(
                f"candidate {cid!r} is not waiting for a score (ask() for the current generation's "
                f"candidates; each is told once)"
            )
        asked = waiting[cid]
        if isinstance(candidate, Candidate) and candidate.key != asked.key:
            raise SearchError(f"candidate {cid} was asked with other params than the ones told")
        if cause is None:
            values, cause, why = interpret(scores, len(self.directions))
            message = message or why
        else:
            values = None
            message = message or str(cause)
        evaluation = Evaluation(
            key=asked.key,
            proposal=Proposal(id=asked.id, generation=asked.generation, params=dict(asked.params)),
            controls=Controls(),
            ok=cause is None,
            cause=cause,
            message=message,
            metrics={},
            spread={},
            scores=values,
            seconds=float(seconds),
        )
        self._told[cid] = evaluation
        self.results.add(evaluation)
        if not self.pending:
            self._close_generation()
        return evaluation

    # -- the genetic loop ----------------------------------------------------------------

    def _fitness(self, scores: Sequence[float]) -> tuple[float, ...]:
        return minimised(scores, self.directions)

    def _close_generation(self) -> None:
        assert self._batch is not None
        batch, self._batch = self._batch, None
        newcomers = [
            Individual(c, self._fitness(self._told[c.id].scores))  # type: ignore[arg-type]
            for c in batch
            if self._told[c.id].ok
        ]
        generation = self._generation
        self._generation += 1
        if not newcomers:
            self._stop_reason = "all_invalid"
            reasons = sorted({self._told[c.id].message for c in batch})
            raise SearchError(
                f"every candidate of generation {generation} ({len(batch)} of {len(batch)}) was invalid, "
                f"so the search cannot go on. Reasons: {'; '.join(reasons[:5])}. "
                "Check the objective (run it on one configuration by hand) and the search space."
            )
        self._drawn_fitness.update(n.fitness for n in newcomers if n.candidate.id in self._drawn_ids)
        self._fitness_of.update((n.genome, n.fitness) for n in newcomers)
        self._failed += [c.genome for c in batch if not self._told[c.id].ok]
        self._draw_ties(self._population + newcomers, generation)
        self._population = self.survival(self._population + newcomers, self.config.survivors)
        fitness = [ind.fitness for ind in self._population]
        best_fitnesses = frozenset(fitness[i] for i in non_dominated_sort(fitness)[0])
        self._stalled = best_fitnesses == self._best_fitnesses
        self._best_fitnesses = best_fitnesses
        if self._generation >= self.config.generations:
            self._stop_reason = "generations"
        elif self.config.max_evaluations is not None and self._issued >= self.config.max_evaluations:
            self._stop_reason = "max_evaluations"
        elif (
            self.config.time_limit is not None
            and self._started is not None
            and time.monotonic() - self._started >= self.config.time_limit
        ):
            self._stop_reason = "time_limit"

    def _draw_ties(self, population: Sequence[Individual], generation: int) -> None:
        # Survival breaks equal fitness by these draws. Seeded from (seed, generation) and
        # handed out in id order: the same seed and the same scores keep the same survivors.
        rng = random.Random(f"ciq_build.search:{self.seed}:{generation}:ties")
        for ind in sorted(population, key=lambda ind: ind.candidate.id):
            ind.tie = rng.random()

    def _new(self, genome: Genome, out: list[Genome]) -> bool:
        if genome in self._seen:
            return False
        self._seen.add(genome)
        # A configuration the constraints refuse is never proposed; seen, so it is not drawn again.
        if not self.space.allows(genome):
            return False
        out.append(genome)
        return True

    def _breed(self) -> list[Candidate]:
        # One RNG per generation, seeded from (seed, generation) only: the batch
        # depends on the scores told, never on timing or on the order of tells.
        # The string is the module's name before the sub-packages: kept, so a seed keeps its candidates.
        rng = random.Random(f"ciq_build.search:{self.seed}:{self._generation}")
        size = self.config.pool_size
        if self.config.max_evaluations is not None:
            size = min(size, self.config.max_evaluations - self._issued)
        genomes: list[Genome] = []
        fraction = self.config.init_with_true_random_threshold
        if self._generation == 0:
            for genome in self._seed_genomes[: max(size, 0)]:
                self._new(genome, genomes)
            size = max(size, len(genomes))
        explore = self._exploration()
        drawn: set[int] = set()  # which of `genomes` were drawn from the whole space, not bred
        promise: dict[int, tuple[int, int, int]] = {}  # a bred child's index -> (best parent's place, genes apart, other's)
        ranked = sorted(self._population, key=Individual.order)
        places = {ind.candidate.id: place for place, ind in enumerate(ranked)}
        if self._generation == 1 and ranked:  # the first bred generation: nothing in `genomes` yet
            self._poll(ranked[0], size, genomes)
        if self._stalled:
            self._local_moves(ranked[0], size, genomes)
        # Polled configurations and local moves are handed out before every bred child.
        promise.update({index: (-1, 1, -1) for index in range(len(genomes))})
        while len(genomes) < size:
            made = False
            immigrant = explore > 0 and rng.random() < explore
            for _attempt in range(_RETRIES):
                bred = bool(self._population) and not immigrant
                if bred:
                    child, parents = self._offspring(rng)
                else:
                    child = self.sampler(rng, self.space, fraction)
                if self._new(child, genomes):
                    if bred:
                        best, other = sorted(parents, key=lambda parent: places[parent.candidate.id])
                        apart = sum(x != y for x, y in zip(child, best.genome, strict=True))
                        promise[len(genomes) - 1] = (places[best.candidate.id], apart, places[other.candidate.id])
                    else:
                        drawn.add(len(genomes) - 1)
                    made = True
                    break
            if not made and not self._fill_from_unseen(rng, genomes):
                break  # every configuration of the space has been issued
        genomes = self._most_promising_first(genomes, promise)
        candidates = []
        for index, genome in enumerate(genomes):
            params = self.space.to_params(genome)
            candidates.append(Candidate(self._next_id, self._generation, params, canonical_key(params), genome))
            if index in drawn:
                self._drawn_ids.add(self._next_id)
            self._next_id += 1
        self._issued += len(candidates)
        return candidates

    def _poll(self, best: Individual, size: int, out: list[Genome]) -> None:
        """Adds to `out` the untried one-step neighbours of `best`, in a seeded random order, up to POLL_SHARE
        of `size` (at least 1)."""
        near = one_step_neighbours(best.genome, self.space)
        random.Random(f"ciq_build.search:{self.seed}:{self._generation}:poll").shuffle(near)
        self._add_untried(near, min(size, max(1, int(size * POLL_SHARE))), out)

    def _local_moves(self, best: Individual, size: int, out: list[Genome]) -> None:
        """Adds to `out` up to STALL_SHARE of `size` more (at least 1) untried configurations, each group in a
        seeded order: the repairs, then, unless the landscape is flat, the single changes of `best`."""
        rng = random.Random(f"ciq_build.search:{self.seed}:{self._generation}:local")
        limit = min(size, len(out) + max(1, int(size * STALL_SHARE)))
        groups: Iterable[list[Genome]] = self._repairs()
        if self._flat_share() is None:
            groups = itertools.chain(groups, [[genome for _, genome in single_changes(best.genome, self.space)]])
        for group in groups:
            rng.shuffle(group)
            if not self._add_untried(group, limit, out):
                return

    def _add_untried(self, genomes: list[Genome], limit: int, out: list[Genome]) -> bool:
        """Adds the untried ones of `genomes`, in their order, while `out` holds fewer than `limit`; False once
        it is full."""
        for genome in genomes:
            if len(out) >= limit:
                return False
            self._new(genome, out)
        return True

    def _repairs(self) -> Iterator[list[Genome]]:
        """For each failed candidate one change away from a configuration with a best fitness, the newest first:
        the failed candidate with another parameter changed (every single change but the one that made it fail)."""
        best_genomes = [genome for genome, fitness in self._fitness_of.items() if fitness in self._best_fitnesses]
        for failed in reversed(self._failed):
            cause = set()
            for genome in best_genomes:
                apart = [i for i, (x, y) in enumerate(zip(failed, genome, strict=True)) if x != y]
                if len(apart) == 1:
                    cause.add(apart[0])
            if cause:
                yield [genome for i, genome in single_changes(failed, self.space) if i not in cause]

    def _exploration(self) -> float:
        """The share of children to draw from the whole space instead of breeding them."""
        flat = self._flat_share()
        if flat is not None:
            return flat
        # On a plateau of the survivors (every one scores the same) selection has nothing to
        # go on and breeding is a random walk around a few arbitrary points: most children
        # are then drawn from the whole space instead.
        if len(self._population) > 1 and len({ind.fitness for ind in self._population}) == 1:
            return PLATEAU_IMMIGRANTS
        return 0.0

    def _flat_share(self) -> float | None:
        """The share of random draws tied at their most common fitness, if most are and no survivor is clearly below it."""
        total = self._drawn_fitness.total()
        if not total or not self._population:
            return None
        level, count = self._drawn_fitness.most_common(1)[0]
        if count / total <= FLAT_SHARE:
            return None
        for k, flat in enumerate(level):
            if flat - min(ind.fitness[k] for ind in self._population) > FLAT_MARGIN * abs(flat):
                return None
        return count / total

    @staticmethod
    def _most_promising_first(genomes: list[Genome], promise: dict[int, tuple[int, int, int]]) -> list[Genome]:
        """The bred children in the order of their parents' places (the best parents' first), each in a
        bred child's slot; a child drawn from the whole space keeps its slot.

        The generation holds the same configurations; only the order they are built and measured in
        changes. With fewer workers than children, or a budget (--max-evaluations, --time-limit) that
        ends inside a generation, the children of the best parents come first.
        """
        slots = sorted(promise)
        ordered = sorted(slots, key=lambda index: (promise[index], index))
        out = list(genomes)
        for slot, index in zip(slots, ordered, strict=True):
            out[slot] = genomes[index]
        return out

    def _offspring(self, rng: random.Random) -> tuple[Genome, tuple[Individual, Individual]]:
        a = self.selection(rng, self._population)
        b = self.selection(rng, self._population)
        child = self.crossover(rng, a.genome, b.genome, self.space)
        child = self.mutation(rng, child, self.space, self.config.mutate_rate)
        # A child identical to something already tried is nudged until it is new:
        # cheap, and it keeps the search near good parents instead of restarting.
        for _ in range(8):
            if child not in self._seen:
                break
            child = self.mutation(rng, child, self.space, 1.0 / len(self.space))
        return child, (a, b)

    def _fill_from_unseen(self, rng: random.Random, out: list[Genome]) -> bool:
        for _ in range(self.space.draws(_RETRIES)):
            if self._new(self.sampler(rng, self.space, 0.0), out):
                return True
        cardinality = self.space.cardinality
        if cardinality > _ENUMERATE_LIMIT:
            return False
        unseen = [g for g in map(self.space.genome_at, range(cardinality))
                  if g not in self._seen and self.space.allows(g)]
        if not unseen:
            return False
        return self._new(rng.choice(unseen), out)

    # -- running the objective itself -----------------------------------------------------

    def _best_text(self) -> str | None:
        if len(self.directions) > 1:
            front = self.results.pareto_front()
            return f"front of {len(front)}" if front else None
        best = self.results.get_best_result()
        return None if best is None else f"{best.scores[0]:.6g}"  # type: ignore[index]

    def start(
        self,
        num_workers: int = 1,
        *,
        executor: cf.Executor | None = None,
        processes: bool = False,
    ) -> Results:
        """Run to the end, evaluating each generation in parallel; return the Results.

        With ``num_workers`` > 1 a thread pool (or a process pool with
        ``processes=True``; the objective must then be picklable) runs the
        objective; ``executor`` uses the caller's own instead. Results and the
        sequence of candidates do not depend on the number of workers.
        """
        if self.objective_function is None:
            raise ConfigError("start() needs an objective_function; use ask()/tell() to evaluate candidates yourself")
        workers = _positive_int("num_workers", num_workers)
        own: cf.Executor | None = None
        if executor is None and workers > 1:
            pool_type = cf.ProcessPoolExecutor if processes else cf.ThreadPoolExecutor
            executor = own = pool_type(max_workers=workers)
        reporter = ProgressReporter(
            self.config.generations, enabled=self.progress if self.progress is not None else None,
            time_limit=self.config.time_limit,
        )
        try:
            while batch := self.ask():
                reporter.update(self._generation, evaluations=len(self.results),
                                failures=self.results.failures, best=self._best_text)
                for candidate, (value, error, wall) in zip(batch, self._evaluate(batch, executor)):
                    if error is not None:
                        self.tell(candidate, None, cause=Cause.ERROR, message=error, seconds=wall)
                    else:
                        self.tell(candidate, value, seconds=wall)
            reporter.update(self._generation, evaluations=len(self.results),
                            failures=self.results.failures, best=self._best_text, force=True)
        finally:
            reporter.close()
            if own is not None:
                own.shutdown(wait=True, cancel_futures=True)
        return self.results

    def _evaluate(self, batch: list[Candidate], executor: cf.Executor | None) -> list[tuple[Any, str | None, float]]:
        objective = self.objective_function
        assert objective is not None
        if executor is None:
            return [_call_objective(objective, c.params) for c in batch]
        futures = [executor.submit(_call_objective, objective, c.params) for c in batch]
        outcomes = []
        for future in futures:
            try:
                outcomes.append(future.result())
            except Exception as error:  # the executor itself failed (pickling, a dead worker process)
                outcomes.append((None, f"{type(error).__name__}: {error}", 0.0))
        return outcomes
