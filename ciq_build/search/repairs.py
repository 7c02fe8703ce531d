"""Which failed configurations sit one change away from a best one: the GA's repairs, found in linear time.

A failed candidate one change from a best configuration is often one more change from working (an unroll
that needs more registers than a large block allows works under a register cap). Comparing every failure
with every configuration tied at the best, every stalled generation, cost 1-6 ms a candidate at 6,400
evaluations. Here each genome is hashed once (Zobrist: the sum of one number per (parameter, value)), so
"equal but for parameter i" is one dictionary look-up of the hash less parameter i's number; a look-up's
hits are checked gene by gene. Each configuration is hashed and looked up once: a failure when it comes,
among the configurations at the best fitnesses (indexed so), and a configuration at a best fitness among
every failure (indexed so as they came). The pairs found are kept while the best fitnesses stay the same;
when they change, only the new best configurations are looked up. (Re-reading and re-hashing every failure
whenever the best fitnesses changed was most of the GA's time at 6,400 evaluations on a flag space.)
"""

from __future__ import annotations

from ciq_build.core.space import Gene, Genome

_MASK = (1 << 64) - 1
Fitness = tuple[float, ...]
# A masked hash -> the genome with it, or a list of them where several have it. Most have one, and a list made
# for each of a failure's 48 hashes was half the index's cost.
_Index = dict[int, Genome | list[Genome]]


class _Numbers(dict[Gene, int]):
    """One parameter's number for each of its values, made when first asked for."""

    def __init__(self, parameter: int) -> None:
        super().__init__()
        self.parameter = parameter

    def __missing__(self, gene: Gene) -> int:
        number = self[gene] = hash(((self.parameter, gene), "ciq_build.repairs")) & _MASK
        return number


_TABLES: list[_Numbers] = []  # each parameter's numbers, made once for every search


def _masked(genome: Genome) -> list[int]:
    """For each parameter i: the genome's hash without parameter i."""
    while len(_TABLES) < len(genome):
        _TABLES.append(_Numbers(len(_TABLES)))
    numbers = list(map(dict.__getitem__, _TABLES, genome))
    total = sum(numbers)
    return [(total - n) & _MASK for n in numbers]


def _put(index: _Index, masked: int, had: Genome | list[Genome], genome: Genome) -> None:
    """Adds `genome` at `masked`, where `had` is already (index.setdefault(masked, genome) is not `genome`)."""
    if isinstance(had, list):
        had.append(genome)
    else:
        index[masked] = [had, genome]


def _apart_only_at(a: Genome, b: Genome, i: int) -> bool:
    # also what tells a hit at parameter i from one whose hash less another parameter's number is the same (hashes
    # that collide: the genomes hold different (parameter, value)s)
    return a[i] != b[i] and a[:i] == b[:i] and a[i + 1:] == b[i + 1:]


class RepairIndex:
    """Configurations measured (their fitness) and failed, and the failures one change from a best one."""

    def __init__(self) -> None:
        self._by_fitness: dict[Fitness, list[Genome]] = {}
        self._failed: list[tuple[Genome, list[int]]] = []  # each failure, and its masked hashes
        self._failed_at: _Index = {}
        self._order: dict[Genome, int] = {}
        # For the current best fitnesses: their configurations' masked hashes, what has been looked up, and
        # for each failure one change away, the parameters that made it fail.
        self._best: frozenset[Fitness] | None = None
        self._best_at: _Index = {}
        self._best_done: dict[Fitness, int] = {}
        self._failed_done = 0
        self._causes: dict[Genome, set[int]] = {}
        self._listed: list[tuple[Genome, set[int]]] | None = None  # the causes, newest first, until they change

    def add(self, genome: Genome, fitness: Fitness | None) -> None:
        """A measured configuration: its fitness, or None where it failed."""
        if fitness is not None:
            self._by_fitness.setdefault(fitness, []).append(genome)
            return
        self._order[genome] = len(self._failed)
        masks = _masked(genome)
        self._failed.append((genome, masks))
        failed_at = self._failed_at
        for masked in masks:  # _put() but where the hash is new (most): 48 times a failure, no call
            had = failed_at.setdefault(masked, genome)
            if had is not genome:
                _put(failed_at, masked, had, genome)

    def repairable(self, best: frozenset[Fitness]) -> list[tuple[Genome, set[int]]]:
        """The failures one change from a configuration with a fitness in `best`, the newest first, each with
        the parameters whose change made it fail."""
        if best != self._best:  # every failure is looked up below by the new best configurations
            self._best, self._best_at, self._best_done = best, {}, {}
            self._causes, self._listed = {}, None
        best_at, failed_at = self._best_at, self._failed_at
        if best_at:
            for failed, masks in self._failed[self._failed_done:]:  # failures new since: against the best ones
                for i, masked in enumerate(masks):
                    hit = best_at.get(masked)
                    if hit is not None:
                        for genome in hit if isinstance(hit, list) else (hit,):
                            if _apart_only_at(failed, genome, i):
                                self._cause(failed, i)
        self._failed_done = len(self._failed)
        for fitness in best:  # configurations new at a best fitness: against every failure
            genomes = self._by_fitness.get(fitness, [])
            for genome in genomes[self._best_done.get(fitness, 0):]:
                for i, masked in enumerate(_masked(genome)):
                    had = best_at.setdefault(masked, genome)
                    if had is not genome:
                        _put(best_at, masked, had, genome)
                    hit = failed_at.get(masked)
                    if hit is not None:
                        for failed in hit if isinstance(hit, list) else (hit,):
                            if _apart_only_at(failed, genome, i):
                                self._cause(failed, i)
            self._best_done[fitness] = len(genomes)
        if self._listed is None:
            self._listed = sorted(self._causes.items(), key=lambda item: -self._order[item[0]])
        return self._listed

    def _cause(self, failed: Genome, i: int) -> None:
        causes = self._causes.get(failed)
        if causes is None:
            causes = self._causes[failed] = set()
            self._listed = None  # a failure newly repairable: listed again
        causes.add(i)
