"""Values that make every configuration carrying them fail, whatever the other values: learned in any space.

A user's source parameter often has a value the code cannot build (FlashInfer's KV tile of 1 with a query tile of
64 or 128 hits a static_assert: "a configuration upstream never launches"). The GA's repairs assume a failure one
change from the best is one more change from working, and try the failure with each other parameter changed: where
the changed value fails alone every repair fails, and so do the bred children that carry it. On the GPU (the
FlashInfer hd64 tune of docs/results/tensor-cores-attention-hd64-h100-on-params-summaries.txt) 62 of 193
evaluations of one search, 32%, were that one value; a CPU model of that space (the same parameters, the value
failing alone) reproduced 30%, 72% of it from the repairs.

The rule, on the assumption FailingPairs makes (a failure is caused by one value or by a pair): a value that has
never been in a configuration that worked fails alone once its failures carry two values of every other parameter
(a pair with another value would have been carried by every one of them) and so many failures in a row would come
by chance less often than CHANCE, at the rate the configurations without it fail. The second condition is for the
limits a kernel meets (a tile too large for the shared memory its carveout gives: a value that fails with every
value of an ordered parameter below a threshold, which the first condition takes for failing alone): where much of
the space fails, many failures in a row are needed. Without it, on the read problems of bench/search_quality whose
best is walled by such limits, values of the best were banned before they first worked (walled4 95 -> 82% on
target, walled6 and carve9 behind). With it, on carve9 a tile of 256 that works only with the carveout in the top
sixth of its range was still banned in 1 seed of 20 after 17 failures in a row (a risk kept: requiring each ordered
parameter's both ends among the failures kept 24% of the 30% failures of the GPU's space, see LOG.md). Such a value
is known to fail: no arm but the draws from the whole space proposes it, and a draw that works with it refutes it.

Linear: a failure reads only its values never seen working (once a value has worked it is never read again), each
against the first failure that carried it.
"""

from __future__ import annotations

import itertools

from ciq_build.core.space import Gene, Genome, SearchSpace

Value = tuple[int, Gene]  # (parameter, value)
# A value is known to fail alone only where its failures in a row would come by chance less often than this, at the
# rate the other configurations fail: 6 in a row where 1 in 14 fail, 20 where half do. 1e-3 and 1e-6 banned carve9's
# tile of 256 as often (1 seed in 20); the GPU space's failures were 3.4% and 4.1% of 1,910 evaluations (30% before).
CHANCE = 1e-6


class _Evidence:
    """A value never seen working: the first failure that carried it, how many have, and the other parameters they
    carried two values of."""

    __slots__ = ("differed", "failures", "first")

    def __init__(self, first: Genome) -> None:
        self.first = first
        self.failures = 0
        self.differed: set[int] = set()


class FailingValues:
    """The values known to fail alone, learned from every result told."""

    def __init__(self, space: SearchSpace) -> None:
        # the parameters with a choice to make: two values or more (a knocked-out one counts as a value); a value's
        # failures differ only in those, never in its own parameter
        self._varied = frozenset(i for i, p in enumerate(space.values()) if p.size + int(p.can_knockout) > 1)
        self._told = self._failed = 0
        self._worked: set[Value] = set()
        self._unproven: dict[Value, _Evidence] = {}  # each value that has failed and never worked
        self.alone: dict[int, set[Gene]] = {}  # parameter -> its values known to fail alone

    def add(self, genome: Genome, ok: bool) -> None:
        """A configuration measured: `ok` unless it failed."""
        self._told += 1
        if ok:
            # once every value has worked (early in a long run) there is nothing to read: one set operation, not a
            # look-up a parameter (every result that works comes here)
            for value in set(enumerate(genome)).difference(self._worked):
                self._worked.add(value)
                self._unproven.pop(value, None)
                self.alone.get(value[0], set()).discard(value[1])  # a draw that works refutes it
            return
        self._failed += 1
        for value in itertools.filterfalse(self._worked.__contains__, enumerate(genome)):
            if value[1] in self.alone.get(value[0], ()):
                continue
            evidence = self._unproven.setdefault(value, _Evidence(genome))
            evidence.failures += 1
            evidence.differed.update(j for j, gene in enumerate(genome) if gene != evidence.first[j])
            others = len(self._varied) - (value[0] in self._varied)
            if len(evidence.differed) == others and self._by_chance(evidence.failures) < CHANCE:
                self.alone.setdefault(value[0], set()).add(value[1])
                del self._unproven[value]

    def _by_chance(self, failures: int) -> float:
        """How likely `failures` failures in a row are for a value that does not fail alone, at the rate the
        configurations without it fail (add-one smoothed)."""
        rate = (self._failed - failures + 1) / (self._told - failures + 2)
        return rate**failures

    def carries(self, genome: Genome) -> bool:
        """Whether `genome` holds a value known to fail alone."""
        return bool(self.alone) and any(genome[i] in values for i, values in self.alone.items())

    def to_change(self, genome: Genome) -> frozenset[int] | None:
        """The parameters of which a single change of `genome` must change one to carry no value known to fail alone:
        None where it carries none; the one parameter where it carries one; none at all where it carries more."""
        carried = frozenset(i for i, values in self.alone.items() if genome[i] in values)
        return (carried if len(carried) == 1 else frozenset()) if carried else None
