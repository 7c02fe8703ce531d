"""Pairs of parameter values that make a configuration fail, learned next to the best, in linear time.

On a compiler's flag space most failures are combinations: a flag that crashes with another, a flag with a
range set too high. A search that keeps the best configuration's values re-proposes the combination over and
over (16-45% of the late evaluations on bench/search_quality's ACF-like spaces failed so). This index learns
such a pair and answers whether a genome carries one, so that the proposals can skip it.

How a pair is learned, assuming a failure is caused by one pair of values: a configuration F that fails one
change away from the best B -- parameter i set to F[i] = a -- fails by (i, a) together with one value B[j]
that F shares with B (a "suspect", its partners J: every j but i to start with). A configuration X that works
and has X[i] = a cannot carry the culprit, so every j where X[j] = B[j] leaves J. Once at most MAX_PARTNERS
partners are left, each pair (i = a, j = B[j]) is known to fail; a configuration that works with both values
refutes a pair, and J running empty drops the suspect (F failed by more than a pair, or by itself). A pair
known to fail is never proposed, so only configurations proposed without this index (draws from the whole
space) can refute it.

Linear: a failure is compared with the best alone (and a new best with the last _EVIDENCE failures), a result
that works is read against the suspects and pairs of its own values (one dictionary look-up a parameter), and
a new suspect against the last _EVIDENCE configurations that worked.
"""

from __future__ import annotations

from collections import deque

from ciq_build.core.space import Gene, Genome

MAX_PARTNERS = 2  # a suspect names its pairs once this few partners are left
_EVIDENCE = 512  # failures, and configurations that work, kept to be read against a new best or a new suspect
_SUSPECTS = 8  # suspects kept per value, the newest: a value that fails with many needs no more

Value = tuple[int, Gene]  # (parameter, value)


class _Suspect:
    """A failure one change from the best: the value changed, the best, and the partners left."""

    __slots__ = ("value", "best", "partners")

    def __init__(self, value: Value, best: Genome, partners: list[int]) -> None:
        self.value, self.best, self.partners = value, best, partners

    def pairs(self) -> list[tuple[Value, Value]]:
        return [(self.value, (j, self.best[j])) for j in self.partners]

    def narrow(self, works: Genome) -> None:
        """`works` has the suspect's value and works: no value it shares with the best is the culprit."""
        best = self.best
        self.partners = [j for j in self.partners if works[j] != best[j]]


class FailingPairs:
    """The pairs of values known to fail, learned from every result told and the best."""

    def __init__(self) -> None:
        self._best: Genome | None = None
        self._failed: deque[Genome] = deque(maxlen=_EVIDENCE)
        self._worked: deque[Genome] = deque(maxlen=_EVIDENCE)
        self._suspects: dict[Value, list[_Suspect]] = {}
        self._failing: dict[Value, set[Value]] = {}  # both ways: a value -> the values it fails with

    def carries(self, genome: Genome) -> bool:
        """Whether `genome` holds both values of a pair known to fail."""
        failing = self._failing
        return any(genome[j] == b for value in enumerate(genome) if (partners := failing.get(value))
                   for j, b in partners)

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
        failing, suspects = self._failing, self._suspects
        for value in [v for v in enumerate(genome) if v in failing or v in suspects]:
            for refuted in [(j, b) for j, b in failing.get(value, ()) if genome[j] == b]:  # it works with both
                self._unmark(value, refuted)
            if value in suspects:
                left = [s for s in suspects[value] if self._narrowed(s, genome)]
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
        if len(apart) != 1:
            return
        i = apart[0]
        value = (i, failed[i])
        suspect = _Suspect(value, best, [j for j in range(len(best)) if j != i])
        for works in reversed(self._worked):
            if works[i] == value[1]:
                suspect.narrow(works)
                if not suspect.partners:
                    return  # more than a pair, or a failure of its own: nothing to learn
        if len(suspect.partners) <= MAX_PARTNERS:
            for a, b in suspect.pairs():
                self._mark(a, b)
        suspects = self._suspects.setdefault(value, [])
        suspects.append(suspect)
        del suspects[:-_SUSPECTS]

    def _narrowed(self, suspect: _Suspect, works: Genome) -> bool:
        """Narrows `suspect` by `works` (which has its value, works, and whose pairs are already unmarked): names
        the suspect's pairs once few partners are left; False once none is."""
        before = len(suspect.partners)
        suspect.narrow(works)
        if len(suspect.partners) <= MAX_PARTNERS < before:
            for a, b in suspect.pairs():
                self._mark(a, b)
        return bool(suspect.partners)

    def _mark(self, a: Value, b: Value) -> None:
        self._failing.setdefault(a, set()).add(b)
        self._failing.setdefault(b, set()).add(a)

    def _unmark(self, a: Value, b: Value) -> None:
        self._failing[a].discard(b)
        self._failing[b].discard(a)
        for value in (a, b):
            if not self._failing[value]:
                del self._failing[value]
