"""The genetic search (`--strategy ga`): breeding, local moves around the best, survival.

Driven as any :class:`~ciq_build.search.batch.BatchSearch` (ask/tell, or
``start()``); a batch is a generation. A configuration is never issued twice
(knockout included). Generation 0 holds
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
Every operator is a small replaceable class (ciq_build.search.operators).
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Unpack

from ciq_build.core.pareto import minimised, non_dominated_sort
from ciq_build.core.space import Genome, Param, SearchSpace, canonical_key
from ciq_build.search.batch import BatchSearch, Candidate, SearchOptions
from ciq_build.search.configuration import INVALID_SCORE, SearchConfiguration, interpret
from ciq_build.search.operators import (
    Changes,
    Crossover,
    ElitistSurvival,
    GridMutation,
    Individual,
    Mutation,
    NSGA2Survival,
    RandomSampler,
    Sampler,
    Selection,
    Survival,
    TournamentSelection,
    UniformCrossover,
    one_step_neighbours,
    single_changes,
)
from ciq_build.search.progress import ProgressReporter
from ciq_build.search.repairs import RepairIndex

__all__ = [
    "INVALID_SCORE",
    "SearchConfiguration",
    "Candidate",
    "Individual",
    "GeneticSearch",
    "canonical_key",
    "single_changes",
    "interpret",
    "RandomSampler",
    "TournamentSelection",
    "UniformCrossover",
    "GridMutation",
    "ElitistSurvival",
    "NSGA2Survival",
    "ProgressReporter",
]

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


# -- the search -------------------------------------------------------------------------


class _Tally:
    """How often each fitness came up among the draws, and the most common one: the first to reach the highest count,
    as Counter.most_common(1) answers. Kept as draws come: reading it from a Counter was a pass over every distinct
    fitness drawn, twice a generation (3% of the GA's time at 6,400 evaluations)."""

    def __init__(self) -> None:
        self.counts: dict[tuple[float, ...], int] = {}
        self.first: dict[tuple[float, ...], int] = {}  # the order each fitness first came in
        self.commonest: tuple[float, ...] | None = None
        self.most = self.total = 0

    def add(self, fitness: tuple[float, ...]) -> None:
        count = self.counts[fitness] = self.counts.get(fitness, 0) + 1
        if count == 1:
            self.first[fitness] = len(self.first)
        self.total += 1
        if count > self.most or (count == self.most and self.first[fitness] < self.first[self.commonest]):  # type: ignore[index]
            self.commonest, self.most = fitness, count


class GeneticSearch(BatchSearch):
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
        sampler: Sampler | None = None,
        selection: Selection | None = None,
        crossover: Crossover | None = None,
        mutation: Mutation | None = None,
        survival: Survival | None = None,
        **options: Unpack[SearchOptions],
    ):
        super().__init__(objective_function, search_space, search_config, **options)
        self.sampler: Sampler = sampler or RandomSampler()
        self.selection: Selection = selection or TournamentSelection()
        self.crossover: Crossover = crossover or UniformCrossover()
        self.mutation: Mutation = mutation or GridMutation()
        self.survival: Survival = survival or (NSGA2Survival() if len(self.directions) > 1 else ElitistSurvival())
        self._population: list[Individual] = []
        # Candidates drawn from the whole space (not bred), and how often each fitness came up among them:
        # the measure of how flat the landscape is.
        self._drawn_ids: set[int] = set()
        self._drawn_fitness = _Tally()
        # What local moves need: each configuration evaluated without failure and its fitness, the failed ones
        # in the order they were issued, the best fitnesses (the survivors' first front), and whether the last
        # generation left them as they were.
        self._repair_index = RepairIndex()
        self._best_fitnesses: frozenset[tuple[float, ...]] = frozenset()
        self._stalled = False
        self._immigrants: list[Individual] = []  # measured by another search, waiting to join the population

    @property
    def population(self) -> list[Individual]:
        """The current survivors (the parents of the next generation)."""
        return list(self._population)

    # -- the genetic loop ----------------------------------------------------------------

    def _fitness(self, scores: Sequence[float]) -> tuple[float, ...]:
        return minimised(scores, self.directions)

    def _learn(self, batch: list[Candidate], generation: int) -> None:
        newcomers = [
            Individual(c, self._fitness(self._told[c.id].scores))  # type: ignore[arg-type]
            for c in batch
            if self._told[c.id].ok
        ]
        if not newcomers and not self._immigrants:
            raise self._all_invalid(batch, generation)
        for n in newcomers:
            if n.candidate.id in self._drawn_ids:
                self._drawn_fitness.add(n.fitness)
        for c in batch:
            self._repair_index.add(c.genome, self._fitness(self._told[c.id].scores) if self._told[c.id].ok  # type: ignore[arg-type]
                                   else None)
        self._survive(newcomers, generation)

    def immigrate(self, genome: Genome, scores: tuple[float, ...] | None, drawn: bool = False) -> None:
        """A configuration another search measured (ciq_build.search.portfolio): never proposed again, and a
        member of the population -- with the next generation's newcomers, or before breeding if none is out.
        `drawn`: it was drawn from the whole space (it tells how flat the landscape is)."""
        self._seen.add(genome)
        if scores is None:
            self._repair_index.add(genome, None)
            return
        # Measured by another search: its params and key are that search's, the GA needs only the genome.
        incomer = Individual(Candidate(self._next_id, self._generation, {}, "", genome), self._fitness(scores))
        self._next_id += 1
        if drawn:
            self._drawn_fitness.add(incomer.fitness)
        self._repair_index.add(genome, incomer.fitness)
        self._immigrants.append(incomer)

    def _survive(self, newcomers: list[Individual], generation: int) -> None:
        newcomers, self._immigrants = newcomers + self._immigrants, []
        self._draw_ties(self._population + newcomers, generation)
        self._population = self.survival(self._population + newcomers, self.config.survivors)
        fitness = [ind.fitness for ind in self._population]
        best_fitnesses = frozenset(fitness[i] for i in non_dominated_sort(fitness)[0])
        self._stalled = best_fitnesses == self._best_fitnesses
        self._best_fitnesses = best_fitnesses

    def _draw_ties(self, population: Sequence[Individual], generation: int) -> None:
        # Survival breaks equal fitness by these draws. Seeded from (seed, generation) and
        # handed out in id order: the same seed and the same scores keep the same survivors.
        rng = random.Random(f"ciq_build.search:{self.seed}:{generation}:ties")
        for ind in sorted(population, key=lambda ind: ind.candidate.id):
            ind.tie = rng.random()

    def _breed(self) -> list[Candidate]:
        if self._immigrants:  # measured by others while no generation of its own was out
            self._survive([], self._generation)
        # One RNG per generation, seeded from (seed, generation) only: the batch
        # depends on the scores told, never on timing or on the order of tells.
        # The string is the module's name before the sub-packages: kept, so a seed keeps its candidates.
        rng = random.Random(f"ciq_build.search:{self.seed}:{self._generation}")
        size = self._batch_size()
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
        candidates = [self._candidate(genome) for genome in genomes]
        self._drawn_ids.update(candidates[index].id for index in drawn)
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
        groups: Iterable[Changes] = self._repairs()
        if self.flat_share() is None:
            groups = itertools.chain(groups, [Changes.of(best.genome, self.space)])
        for group in groups:
            group.shuffle(rng)
            if not self._add_untried(group, limit, out):
                return

    def _add_untried(self, genomes: Iterable[Genome], limit: int, out: list[Genome]) -> bool:
        """Adds the untried ones of `genomes`, in their order, while `out` holds fewer than `limit`; False once
        it is full."""
        for genome in genomes:
            if len(out) >= limit:
                return False
            self._new(genome, out)
        return True

    def _repairs(self) -> Iterator[Changes]:
        """For each failed candidate one change away from a configuration with a best fitness, the newest first:
        the failed candidate with another parameter changed (every single change but the one that made it fail)."""
        for failed, cause in self._repair_index.repairable(self._best_fitnesses):
            yield Changes.of(failed, self.space, skip=cause)

    def _exploration(self) -> float:
        """The share of children to draw from the whole space instead of breeding them."""
        flat = self.flat_share()
        if flat is not None:
            return flat
        # On a plateau of the survivors (every one scores the same) selection has nothing to
        # go on and breeding is a random walk around a few arbitrary points: most children
        # are then drawn from the whole space instead.
        if len(self._population) > 1 and len({ind.fitness for ind in self._population}) == 1:
            return PLATEAU_IMMIGRANTS
        return 0.0

    def tied_share(self) -> float:
        """The share of random draws tied at their most common fitness (0 before any draw)."""
        drawn = self._drawn_fitness
        return drawn.most / drawn.total if drawn.total else 0.0

    def flat_share(self) -> float | None:
        """The share of random draws tied at their most common fitness, if most are and no survivor is clearly below it."""
        if not self._population or self.tied_share() <= FLAT_SHARE:
            return None
        level = self._drawn_fitness.commonest
        assert level is not None  # tied_share() > 0: a draw was counted
        for k, flat in enumerate(level):
            if flat - min(ind.fitness[k] for ind in self._population) > FLAT_MARGIN * abs(flat):
                return None
        return self.tied_share()

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
