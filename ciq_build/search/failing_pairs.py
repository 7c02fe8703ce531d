"""Pairs of parameter values that make a configuration fail, learned near the best, in linear time.

On a compiler's flag space most failures are combinations: a flag that crashes with another, a flag with a
range set too high. A search that keeps the best configuration's values re-proposes the combination over and
over (16-45% of the late evaluations on bench/search_quality's ACF-like spaces failed so). This index learns
such a pair and answers whether a genome carries one, so that the proposals can skip it.

How a pair is learned, assuming a failure is caused by one pair of values: a configuration F that fails a
few changes away from the best B (parameters D, at most MAX_APART) fails by a pair of its values of which at
least one is a change -- (i, F[i]) with i in D, and (j, F[j]) any other (a "suspect", its partners: every j
but i, for each i in D to start with), since every pair of B's values works. A configuration X that works
cannot carry the culprit, so each pair of F's values that X carries leaves the partners. Once at most
MAX_PARTNERS are left, each is named, and known to fail once SUPPORT failures have named it; a configuration
that works with both values refutes a pair, and the partners running out drop the suspect (F failed by more
than a pair, or by itself). A pair known to fail is never proposed, so only configurations proposed without
this index (draws from the whole space) can refute it.

Linear: a failure is compared with the best alone (and a new best with the last _EVIDENCE failures), a result
that works is read against the suspects and pairs of its own values (one dictionary look-up a parameter), and
a new suspect against the last _EVIDENCE configurations that worked.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from ciq_build.core.space import Gene, Genome

MAX_PARTNERS = 2  # a suspect names its pairs once this few are left
MAX_APART = 3  # failures this many changes from the best, at most, are read
# A pair is known to fail once this many failures have named it: a failure of its own (a configuration that
# crashes the compiler whatever the pairs) narrows to a pair by chance on its way to none, and once known to fail
# a pair is not proposed again to be refuted; a pair that fails is re-proposed, and named again.
SUPPORT = 2
_EVIDENCE = 512  # failures, and configurations that work, kept to be read against a new best or a new suspect
_SUSPECTS = 8  # suspects kept per value, the newest: a value that fails with many needs no more

Value = tuple[int, Gene]  # (parameter, value)


class _Suspect:
    """A failure a few changes from the best, and for each value changed, the partners left."""

    __slots__ = ("failed", "partners", "size")

    def __init__(self, failed: Genome, apart: list[int]) -> None:
        self.failed = failed
        self.partners = {i: [j for j in range(len(failed)) if j != i] for i in apart}
        self.size = len(apart) * (len(failed) - 1)  # the partners left (two changed values' pair counted twice)

    def pairs(self) -> set[tuple[Value, Value]]:
        failed = self.failed
        return {_pair((i, failed[i]), (j, failed[j])) for i, partners in self.partners.items() for j in partners}

    def narrow(self, worked: Iterable[Genome]) -> None:
        """Each of `worked` works: no pair of the failure's values that one carries is the culprit. Stops once no
        partner is left (one call for many: a new suspect is read against up to _EVIDENCE of them)."""
        failed, partners_of = self.failed, self.partners
        for works in worked:
            for i, partners in partners_of.items():
                if works[i] == failed[i]:
                    left = [j for j in partners if works[j] != failed[j]]
                    self.size -= len(partners) - len(left)
                    partners_of[i] = left
            if not self.size:
                return


class FailingPairs:
    """The pairs of values known to fail, learned from every result told and the best."""

    def __init__(self) -> None:
        self._best: Genome | None = None
        self._failed: deque[Genome] = deque(maxlen=_EVIDENCE)
        self._worked: deque[Genome] = deque(maxlen=_EVIDENCE)
        self._suspects: dict[Value, list[_Suspect]] = {}
        self._named: dict[Value, dict[Value, int]] = {}  # both ways: a value -> the values named with it, how often
        self._failing: dict[Value, set[Value]] = {}  # both ways: a value -> the values it fails with
        # The values some of whose suspects have no partner left: those suspects are dropped from the value's list the
        # next time a configuration that works carries it, as before; the lists of the other values it carries, which
        # hold none, are no longer rebuilt every time.
        self._stale: set[Value] = set()

    def carries(self, genome: Genome) -> bool:
        """Whether `genome` holds both values of a pair known to fail."""
        failing = self._failing
        if len(failing) < len(genome):  # the fewer look-ups: the values known to fail with some other, or the genome's
            return any(genome[i] == a and any(genome[j] == b for j, b in partners) for (i, a), partners in failing.items())
        return any(genome[j] == b for value in enumerate(genome) if (partners := failing.get(value))
                   for j, b in partners)

    def to_change(self, genome: Genome) -> frozenset[int] | None:
        """The parameters of which a single change of `genome` must change one to carry no pair known to fail:
        None where `genome` carries none (any change may do), else those that every pair it carries names."""
        failing = self._failing
        carried = [frozenset((i, j)) for i, a in enumerate(genome) if (partners := failing.get((i, a)))
                   for j, b in partners if genome[j] == b]
        return frozenset.intersection(*carried) if carried else None

    def pairs(self) -> set[tuple[Value, Value]]:
        """The pairs known to fail, each once (the lower value first)."""
        return {(a, b) for a, partners in self._failing.items() for b in partners if a < b}

    def best(self, genome: Genome) -> None:
        """The best configuration found (it works): the failures next to it are read from now on."""
        if genome == self._best:
            return
        self._best = genome
        for failed in self._failed:
            self._read(failed)

    def add(self, genome: Genome, ok: bool) -> None:
        """A configuration measured: `ok` unless it failed."""
        if not ok:
            self._failed.append(genome)
            self._read(genome)
            return
        self._worked.append(genome)
        named, suspects = self._named, self._suspects
        values = [v for v in enumerate(genome) if v in named or v in suspects]
        hit: dict[int, _Suspect] = {}  # a suspect of several of the genome's values is narrowed once
        for value in values:
            for refuted in [(j, b) for j, b in named.get(value, ()) if genome[j] == b]:  # it works with both
                self._unmark(value, refuted)
            for suspect in suspects.get(value, ()):
                hit[id(suspect)] = suspect
        stale = self._stale
        for suspect in hit.values():
            self._narrow(suspect, genome)
            if not suspect.size:
                stale.update((i, suspect.failed[i]) for i in suspect.partners)
        for value in values:
            if value in stale:  # drop its suspects that have no partner left
                stale.discard(value)
                if value in suspects:
                    left = [s for s in suspects[value] if s.size]
                    if left:
                        suspects[value] = left
                    else:
                        del suspects[value]

    def _read(self, failed: Genome) -> None:
        """A suspect, where `failed` is one change from the best."""
        best = self._best
        if best is None:
            return
        apart = [i for i, (x, y) in enumerate(zip(failed, best, strict=True)) if x != y]
        if not 0 < len(apart) <= MAX_APART:
            return
        suspect = _Suspect(failed, apart)
        suspect.narrow(reversed(self._worked))
        if not suspect.size:
            return  # more than a pair, or a failure of its own: nothing to learn
        if suspect.size <= MAX_PARTNERS:
            for a, b in suspect.pairs():
                self._mark(a, b)
        for i in apart:
            suspects = self._suspects.setdefault((i, failed[i]), [])
            suspects.append(suspect)
            del suspects[:-_SUSPECTS]

    def _narrow(self, suspect: _Suspect, works: Genome) -> None:
        """Narrows `suspect` by `works` (which works, and whose pairs are already unmarked), and names the suspect's
        pairs once few are left."""
        before = suspect.size
        suspect.narrow((works,))
        if 0 < suspect.size <= MAX_PARTNERS < before:
            for a, b in suspect.pairs():
                self._mark(a, b)

    def _mark(self, a: Value, b: Value) -> None:
        """One more failure named the pair: known to fail once SUPPORT have."""
        named = self._named.setdefault(a, {})
        named[b] = named.get(b, 0) + 1
        self._named.setdefault(b, {})[a] = named[b]
        if named[b] >= SUPPORT:
            self._failing.setdefault(a, set()).add(b)
            self._failing.setdefault(b, set()).add(a)

    def _unmark(self, a: Value, b: Value) -> None:
        for x, y in ((a, b), (b, a)):
            del self._named[x][y]
            if not self._named[x]:
                del self._named[x]
            failing = self._failing.get(x)
            if failing is not None:
                failing.discard(y)
                if not failing:
                    del self._failing[x]


def _pair(a: Value, b: Value) -> tuple[Value, Value]:
    return (a, b) if a[0] < b[0] else (b, a)
