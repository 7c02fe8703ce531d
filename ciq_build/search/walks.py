"""The local arm's walks (ciq_build.search.arms.LocalArm): from a change of one choice or flag of the best, along an
ordered parameter, to the pair move that pays only when the two move together -- from the changes that interact
with the other parameters, the most first.

A pair move that pays only together (-O lowered with the register cap far down at the occupancy step, a smaller
unroll with launch bounds' minimum blocks far up) is a change that loses alone at the best (the origin) and an
ordered parameter moved far from the origin, often across a plateau. Which origin to walk from is told by how much
its change interacts: how much better the change does with another parameter moved than at the best itself. Read
from the shared history, on the best's own lines: for an ordered parameter `i` at a value `u` where both the best
with `i` at `u` and the origin with `i` at `u` are measured, the first's loss against the best less the second's
against the origin, in shares of the best's score (a value where the best's line fails and the origin's does not:
infinite). Without an interaction the two lines are the same, shifted (exactly where scores add, by a little less
than nothing where they multiply): a walk from that origin is the best's own line, worse all along, and cannot pay.
So no loss threshold admits origins; the order decides, and a change that does not interact is not walked.

Each origin -- every change of one choice or flag of the best measured without failing and worse than it, whatever
it lost -- is probed once along each ordered parameter, at the value where the best's line is worst so far (a cap
that spills, a range that fails; of equals, the nearest the best's value): where its change interacts with the
parameter it shows most there. The walks' turns (which the local arm gives them from its first move once an
origin interacts, else once the centre's steps and its choices' other values are out; and while an origin
interacts, a quarter of each batch: ciq_build.search.portfolio.WALKING_FLOOR) go by turns to:

* the walks of the origins that interact, each in turn (the one walked least first; of equals, the most
  interacting, along the parameter it interacts with most first), each step measured adding to the evidence where
  the best's line is known at its value: an origin whose change interacts need not pay (a smaller unroll avoids a
  spill, as the one that pays does), so one walk must not hold every turn to its end;
* the probes, those of the origins that lost least first (a probe waits, three results at most, for a value of
  the best's line that loses): one between two walks' steps, so that every origin is probed while some walk.

A walk (Walks._walk) goes along one ordered parameter both ways (knocked out: from its middle value) by 1, 2, 4,
8... grid steps, then to the end of its grid, each step proposed once the last is known to have stayed near -- no
worse than the origin, or within NEAR_LOSS of the best -- and where one did not, halves the distance back until
the two are a step apart: a pattern search's line across a plateau to the value that pays, often the last before a
cliff, in log-many moves however far it lies. None where scores are noisy: a loss cannot be told from noise.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field
from typing import Protocol

from ciq_build.core.pareto import Direction, minimised
from ciq_build.core.space import Genome, SearchSpace

# How far a walk's step may lose against the best and still count as near it, where the origin lost less (a
# plateau that loses a little, before the value that pays). It no longer admits origins (it did until 41e6aa6:
# changes that lost at most 2%, walked the least loss first). Kept from the walks' first round (held-out-7's HGEMM
# knobs: at 0.5% no walk went on, at 1% and 2% the same hits).
NEAR_LOSS = 0.02
_ROUNDING = 1e-9  # an interaction smaller than this share of the best's score is the arithmetic's rounding: none

# A walk: its origin, its parameter, its direction (0: to the middle value), the furthest distance known to stay
# near, the nearest known not to (0: none yet).
Walk = tuple[Genome, int, int, int, int]


class History(Protocol):
    """What the walks read of the portfolio (ciq_build.search.arms.Shared): the shared history."""

    directions: tuple[Direction, ...]
    measured: dict[Genome, tuple[float, ...] | None]  # each configuration's first result (None: it failed)
    noisy: bool | None  # whether measuring a configuration again gives another score (None: not known yet)

    def promising(self, genome: Genome) -> bool: ...


@dataclass
class Origin:
    """A change of one choice or flag of the best: what it lost, how much it interacts, its walks' next steps."""

    genome: Genome
    score: float  # minimised
    loss: float  # against the best, in shares of its score
    order: int
    interaction: dict[int, float] = field(default_factory=dict)  # by ordered parameter: the most seen
    steps: list[tuple[int, Genome, Walk]] = field(default_factory=list)  # (order found, move, walk)
    walked: int = 0  # its walks' steps taken

    def interacts(self) -> float:
        most = max(self.interaction.values(), default=0.0)
        return most if most > _ROUNDING else 0.0


class Walks:
    """The walks and probes around one centre; plain lists, dicts and numbers (a tune deep-copies its source)."""

    def __init__(self, portfolio: History, space: SearchSpace) -> None:
        self.portfolio = portfolio
        self.space = space
        self._params = list(space.values())
        self._ordered = [i for i, p in enumerate(self._params) if p.ordered and p.size > 1]
        self._centre: Genome | None = None
        self._origins: dict[Genome, Origin] = {}
        self._probes: list[tuple[float, int, int, Genome, int]] = []  # (loss, order, tries, origin, parameter)
        self._waiting: dict[Genome, tuple[Origin, Walk | None]] = {}  # proposed, its result not known (None: a probe)
        self._deferred: list[tuple[float, int, int, Genome, int]] = []  # probes waiting for the centre's line
        self._count = 0
        self._probe_turn = False  # whether a probe goes before the next walk's step

    def heard(self) -> None:
        """A result of the shared history: the probes that waited for the centre's line are queued again."""
        for deferred in self._deferred:
            heapq.heappush(self._probes, deferred)
        self._deferred.clear()

    def reset(self, centre: Genome) -> None:
        self._centre = centre
        self._origins.clear()
        self._probes.clear()
        self._deferred.clear()
        self._waiting.clear()

    @property
    def urgent(self) -> bool:
        """Whether an origin known to interact has a walk's step to propose."""
        return any(o.steps and o.interacts() > 0 for o in self._origins.values())

    @property
    def pending(self) -> bool:
        """Whether a probe or a walk's step of an origin that interacts waits."""
        return bool(self._probes) or self.urgent

    def _best(self) -> float | None:
        before = None if self._centre is None else self.portfolio.measured.get(self._centre)
        return None if before is None else minimised(before, self.portfolio.directions)[0]

    def admit(self, genome: Genome, scores: tuple[float, ...]) -> None:
        """`genome` measured around the centre: an origin where it is a change of one choice or flag of it that lost
        (one objective, scores not noisy), to probe along every ordered parameter and walk along each."""
        best, centre = self._best(), self._centre
        if best is None or centre is None or len(self.portfolio.directions) > 1 or self.portfolio.noisy:
            return
        fitness = minimised(scores, self.portfolio.directions)[0]
        if not best < fitness or genome in self._origins:
            return
        changed = [i for i, (a, b) in enumerate(zip(genome, centre, strict=True)) if a != b]
        if len(changed) != 1 or self._params[changed[0]].ordered:
            return
        self._count += 1
        origin = Origin(genome, fitness, (fitness - best) / (abs(best) or 1.0), self._count)
        self._origins[genome] = origin
        for i in self._ordered:
            heapq.heappush(self._probes, (origin.loss, origin.order, 0, genome, i))
            self._walk(origin, genome, i)

    def propose(self) -> Genome | None:
        """The next walk's step of the origin that interacts most, else the next probe, untried (None: none now)."""
        while True:
            origin = min((o for o in self._origins.values() if o.steps and o.interacts() > 0),
                         key=lambda o: (o.walked, -o.interacts(), o.order), default=None)
            if self._probes and (origin is None or self._probe_turn):
                self._probe_turn = False
                genome = self._probe()
                if genome is not None:
                    return genome
                continue
            if origin is None:
                return None
            self._probe_turn = True
            origin.walked += 1
            step = min(origin.steps, key=lambda s: (-origin.interaction.get(s[2][1], 0.0), s[0]))
            origin.steps.remove(step)
            _, genome, walk = step
            if self.portfolio.promising(genome):
                self._waiting[genome] = (origin, walk)
                return genome
            if genome in self.portfolio.measured:  # another arm measured it: walk on from its result
                self._walked(origin, walk, genome, self.portfolio.measured[genome])

    def _probe(self) -> Genome | None:
        """The next probe: its origin with parameter `i` where the centre's line is worst so far (a failure first),
        once a value of it is measured that loses (else again once something new is known: from the second try on, at
        any value measured)."""
        loss, order, tries, genome, i = heapq.heappop(self._probes)
        centre, measured, directions = self._centre, self.portfolio.measured, self.portfolio.directions
        assert centre is not None
        worst: tuple[float, int, int] | None = None  # (its score, minus its distance from the centre's, its value)
        for u in range(self._params[i].size):
            line = centre[:i] + (u,) + centre[i + 1:]
            if u != centre[i] and line in measured:
                scores = measured[line]
                value = math.inf if scores is None else minimised(scores, directions)[0]
                here = (value, -abs(u - (self._params[i].size // 2 if centre[i] is None else centre[i] or 0)), u)
                if worst is None or here[:2] > worst[:2]:
                    worst = here
        if worst is None or (not tries and worst[0] <= self._best()):  # type: ignore[operator]
            if tries < 3:  # nothing on the line (that lost) known yet: once something new is known, after the others
                self._deferred.append((math.inf, order, tries + 1, genome, i))
            return None
        probe = genome[:i] + (worst[2],) + genome[i + 1:]
        if self.portfolio.promising(probe):
            self._waiting[probe] = (self._origins[genome], None)
            return probe
        if probe in measured:
            self._evidence(self._origins[genome], i, probe, measured[probe])
        return None

    def learned(self, genome: Genome, scores: tuple[float, ...] | None) -> bool:
        """A result: True where it was a walk's step or a probe."""
        waiting = self._waiting.pop(genome, None)
        if waiting is None:
            return False
        origin, walk = waiting
        if walk is None:
            changed = [i for i in self._ordered if genome[i] != origin.genome[i]]
            self._evidence(origin, changed[0], genome, scores)
        else:
            self._walked(origin, walk, genome, scores)
        return True

    def _evidence(self, origin: Origin, i: int, genome: Genome, scores: tuple[float, ...] | None) -> None:
        """How much better the origin's change does with parameter `i` at `genome`'s value than at the centre: the
        centre's loss there less the origin's (module docstring), where the centre's is measured."""
        best, centre = self._best(), self._centre
        assert centre is not None
        line = centre[:i] + (genome[i],) + centre[i + 1:]
        if best is None or line not in self.portfolio.measured:
            return
        at_line = self.portfolio.measured[line]
        if scores is None:
            interaction = 0.0 if at_line is None else -math.inf
        elif at_line is None:
            interaction = math.inf
        else:
            directions = self.portfolio.directions
            there = minimised(at_line, directions)[0] - best
            interaction = (there - (minimised(scores, directions)[0] - origin.score)) / (abs(best) or 1.0)
        origin.interaction[i] = max(origin.interaction.get(i, -math.inf), interaction)

    def _walk(self, origin: Origin, start: Genome, i: int) -> None:
        """Walks from `start` (the origin, or it with `i` brought back) along `i` alone, both ways (knocked out:
        to its middle value first)."""
        if start[i] is None:
            self._next_step(origin, (start, i, 0, 0, 0))
        else:
            for direction in (-1, 1):
                self._next_step(origin, (start, i, direction, 0, 0))

    def _next_step(self, origin: Origin, walk: Walk) -> None:
        move = walk_step(walk, self.space)
        if move is not None:
            self._count += 1
            origin.steps.append((self._count, move, walk))

    def _walked(self, origin: Origin, walk: Walk, genome: Genome, scores: tuple[float, ...] | None) -> None:
        """A walk's step measured: further while it stays near (no worse than the origin, or within NEAR_LOSS of
        the best), back halfway where it did not."""
        best = self._best()
        if best is None:
            return
        start, i, direction, near, far = walk
        self._evidence(origin, i, genome, scores)
        bound = max(origin.score, best + NEAR_LOSS * abs(best))
        stayed = scores is not None and minimised(scores, self.portfolio.directions)[0] <= bound
        if direction == 0:  # brought back at its middle value: on from there, both ways
            if stayed:
                self._walk(origin, genome, i)
            return
        tried = abs(genome[i] - start[i])  # type: ignore[operator]
        self._next_step(origin, (start, i, direction, tried, far) if stayed else (start, i, direction, near, tried))


def walk_step(walk: Walk, space: SearchSpace) -> Genome | None:
    """A walk's next move (None: it is over): its start with the parameter at its middle value (direction 0), or
    moved twice the distance that stayed near (at most to the grid's end), or, once a distance did not, halfway
    between the two."""
    start, i, direction, near, far = walk
    size = space[space.names[i]].size
    gene = start[i]
    if direction == 0 or gene is None:
        return start[:i] + (size // 2,) + start[i + 1:]
    room = gene if direction < 0 else size - 1 - gene  # steps to the grid's end
    if far:
        distance = (near + far) // 2 if far - near > 1 else 0
    else:
        distance = min(max(1, 2 * near), room) if near < room else 0
    if not distance:
        return None
    return start[:i] + (gene + direction * distance,) + start[i + 1:]
