"""The genetic search's operators: sampling, selection, crossover, mutation, survival, and single changes.

Each is a small callable; pass your own to the genetic search to replace one.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from ciq_build.core.pareto import crowding_distance, non_dominated_sort
from ciq_build.core.space import Gene, Genome, Param, SearchSpace
from ciq_build.search.batch import Candidate

_MAX_LOCAL_STEPS = 8
_POLL_CHOICES = 4


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


class Changes:
    """Single changes of one genome, each made only when read: a group of local moves is shuffled whole but
    often read only in part. `shuffle` draws from the generator exactly as shuffling the list of genomes would."""

    def __init__(self, genome: Genome, moves: list[tuple[int, Gene]]) -> None:
        self.genome, self.moves = genome, moves
        self.only: frozenset[int] | None = None  # where set, only the changes of these parameters are read

    @classmethod
    def of(cls, genome: Genome, space: SearchSpace, skip: frozenset[int] | set[int] = frozenset()) -> Changes:
        """single_changes(genome, space), but for the parameters in `skip`."""
        moves: list[tuple[int, Gene]] = []
        for i, genes in enumerate(space.genes):
            if i not in skip:
                gene = genome[i]
                moves += [(i, value) for value in genes if value != gene]
        return cls(genome, moves)

    def shuffle(self, rng: random.Random) -> None:
        rng.shuffle(self.moves)

    def __len__(self) -> int:
        return len(self.moves)

    def __iter__(self) -> Iterator[Genome]:
        genome, only = self.genome, self.only
        for i, value in self.moves:
            if only is None or i in only:
                yield genome[:i] + (value,) + genome[i + 1:]


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
