"""Which failed configurations sit one change away from a best one: the GA's repairs, found in linear time.

A failed candidate one change from a best configuration is often one more change from working (an unroll
that needs more registers than a large block allows works under a register cap). Comparing every failure
with every configuration tied at the best, every stalled generation, cost 1-6 ms a candidate at 6,400
evaluations. Here each genome is hashed once (Zobrist: the sum of one number per (parameter, value)), so
"equal but for parameter i" is one dictionary look-up of the hash less parameter i's number; a look-up's
hits are checked gene by gene. The pairs found are kept while the best fitnesses stay the same, and only
configurations new since the last call are looked up.
"""

from __future__ import annotations

from ciq_build.core.space import Gene, Genome

_MASK = (1 << 64) - 1
Fitness = tuple[float, ...]


_NUMBERS: dict[tuple[int, Gene], int] = {}  # (parameter, value) -> its number, made once


def _number(key: tuple[int, Gene]) -> int:
    number = _NUMBERS.get(key)
    if number is None:
        number = _NUMBERS[key] = hash((key, "ciq_build.repairs")) & _MASK
    return number


def _masked(genome: Genome) -> list[int]:
    """For each parameter i: the genome's hash without parameter i."""
    numbers = [_number(key) for key in enumerate(genome)]
    total = sum(numbers) & _MASK
    return [(total - n) & _MASK for n in numbers]


def _apart_only_at(a: Genome, b: Genome, i: int) -> bool:
    return a[i] != b[i] and a[:i] == b[:i] and a[i + 1:] == b[i + 1:]


class RepairIndex:
    """Configurations measured (their fitness) and failed, and the failures one change from a best one."""

    def __init__(self) -> None:
        self._by_fitness: dict[Fitness, list[Genome]] = {}
        self._failed: list[Genome] = []
        self._failed_at: dict[int, list[tuple[Genome, int]]] = {}  # masked hash -> (failed genome, parameter)
        # For the current best fitnesses: their configurations' masked hashes, what has been looked up, and
        # for each failure one change away, the parameters that made it fail.
        self._best: frozenset[Fitness] | None = None
        self._best_at: dict[int, list[tuple[Genome, int]]] = {}
        self._best_done: dict[Fitness, int] = {}
        self._failed_done = 0
        self._causes: dict[Genome, set[int]] = {}
        self._order: dict[Genome, int] = {}

    def add(self, genome: Genome, fitness: Fitness | None) -> None:
        """A measured configuration: its fitness, or None where it failed."""
        if fitness is not None:
            self._by_fitness.setdefault(fitness, []).append(genome)
            return
        self._order[genome] = len(self._failed)
        self._failed.append(genome)
        for i, masked in enumerate(_masked(genome)):
            self._failed_at.setdefault(masked, []).append((genome, i))

    def repairable(self, best: frozenset[Fitness]) -> list[tuple[Genome, set[int]]]:
        """The failures one change from a configuration with a fitness in `best`, the newest first, each with
        the parameters whose change made it fail."""
        if best != self._best:
            self._best, self._best_at, self._best_done = best, {}, {}
            self._failed_done, self._causes = 0, {}
        for fitness in best:  # configurations new at a best fitness: against every failure
            genomes = self._by_fitness.get(fitness, [])
            for genome in genomes[self._best_done.get(fitness, 0):]:
                for i, masked in enumerate(_masked(genome)):
                    self._best_at.setdefault(masked, []).append((genome, i))
                    for failed, j in self._failed_at.get(masked, ()):
                        if j == i and _apart_only_at(failed, genome, i):
                            self._causes.setdefault(failed, set()).add(i)
            self._best_done[fitness] = len(genomes)
        for failed in self._failed[self._failed_done:]:  # failures new since: against every best configuration
            for i, masked in enumerate(_masked(failed)):
                for genome, j in self._best_at.get(masked, ()):
                    if j == i and _apart_only_at(failed, genome, i):
                        self._causes.setdefault(failed, set()).add(i)
        self._failed_done = len(self._failed)
        return sorted(self._causes.items(), key=lambda item: -self._order[item[0]])
