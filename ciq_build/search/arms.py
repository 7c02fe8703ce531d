"""The portfolio's arms: the techniques the bandit hands evaluations to (ciq_build.search.portfolio).

Each arm proposes one untried configuration at a time (None: it has none
to offer now) and learns every evaluation of the shared history, whichever
arm proposed it:

* :class:`GeneticArm`: the genetic search (ciq_build.search.evolution), fed
  the other arms' evaluations as immigrants of its next generation;
* :class:`SpaceFillingArm`: draws without replacement over the whole
  space -- what finds a needle, or a basin behind a decoy; uniform, but on a
  plateau the draw of a few farthest from every configuration measured: a
  basin is a compact region, and draws that fill the gaps between those
  measured reach one more often than as many uniform draws;
* :class:`LocalArm`: moves around the best configuration found -- every
  move that improved on the last best merged into one, pattern steps along
  its last move, coordinate steps, pairs of ordered parameters (ranges, log
  sampling, and choices of numbers listed ascending: :func:`in_order`)
  moved together both ways, pairs of ordered numbers moved so that their
  product stays (the nearest along the ridge first), two of three a step
  each with the third keeping the three's product, every single change,
  triples of ordered parameters moved together, then pairs of any two parameters' one-step
  changes: what walks a ridge or a valley that no single change climbs;
  last, once all of these are out (a small space), pairs of ordered
  parameters with one of them two steps, the nearest first: a pair that pays
  only where one goes further than a step (held-out-24's walled24: a block's
  next value with two more stages, each alone a loss);
  and, taking turns with its moves, walks from its changes of one choice or
  flag along every ordered parameter, from those whose change interacts with
  the others, the most first (ciq_build.search.walks): a pair of which one
  moves far across a plateau, that no single change and no step of two makes;
  and on a flag space, once the best has stalled, before all of these, each
  absent flag added and, where that lost, paired with each value of each
  small choice (ciq_build.search.flag_pairs): a flag that pays only with one
  value of a choice;
* :class:`~ciq_build.search.diverse.DiverseArm` (its own module): a population
  search that converges slowly on purpose -- what makes the move of two or
  three flags that is a loss flag by flag.

Every arm but the space-filling one proposes only what the portfolio finds
promising: untried, without a value known to fail alone
(ciq_build.search.failing_values) and, in a flag space, without a pair of values
known to fail (ciq_build.search.failing_pairs). Draws from the whole space are
exempt: both are known by inference, and only a configuration proposed without
them can refute them.
"""

from __future__ import annotations

import bisect
import itertools
import random
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import TYPE_CHECKING, Protocol

from ciq_build.core.causes import Cause
from ciq_build.core.pareto import minimised
from ciq_build.core.space import Genome, Param, SearchSpace
from ciq_build.errors import SearchError
from ciq_build.search.batch import Candidate
from ciq_build.search.configuration import SearchConfiguration
from ciq_build.search.evolution import GeneticSearch
from ciq_build.search.flag_pairs import FlagPairs
from ciq_build.search.operators import Changes, one_step_neighbours, single_changes
from ciq_build.search.walks import History, Walks

if TYPE_CHECKING:
    import numpy as np

_DRAWS = 40  # draws per proposal before the space-filling arm gives up (the portfolio then enumerates)
_PATTERN_TIMES = (1, 2, 3)  # the pattern steps along the best's last move: once, twice, three times its length
_POLL_CHOICES = 4  # a choice of at most this many values counts each other value as one step (as the GA's poll)
# Triples of ordered parameters moved together, every sign (8 moves each): every triple of up to 8 ordered parameters,
# the first 56 of more (a move list linear in the space, not cubic, on a 48-parameter space).
_MAX_TRIPLES = 56
# Product moves for at most this many ordered numeric parameters (every ordered pair of them, each value of one).
_MAX_PRODUCT_PARAMS = 8
# On a plateau, each draw is the farthest of this many uniform ones from every configuration measured (Mitchell's
# best candidate): points that fill the space's gaps, so a compact basin is reached by fewer draws.
_CANDIDATE_DRAWS = 10
# Past this many configurations measured, draws are uniform again: the farthest of several costs a comparison with
# each one measured (2.7 ms a candidate on a plateau at 6,400 evaluations with no limit), and a long run's uniform
# draws leave few gaps anyway.
_MAX_COMPARED = 1024


class Shared(History, Protocol):
    """What an arm reads of the portfolio: the space, the budget and seed, the shared history (walks.History), the
    best."""

    space: SearchSpace
    config: SearchConfiguration
    seed: int
    flags: bool  # a compiler's flag space (ciq_build.search.portfolio.flag_space)

    def untried(self, genome: Genome) -> bool: ...

    def known_to_fail(self, genome: Genome) -> bool: ...

    def to_change(self, genome: Genome) -> frozenset[int] | None: ...

    def centre(self) -> Genome | None: ...

    def floor(self, arm: str, size: int) -> int: ...

    def stalled(self) -> bool:
        """Whether the best has not improved for a while: the moves around it have found nothing."""
        ...

    def plateau(self) -> bool:
        """Whether most draws from the whole space score alike: what the best found may be a decoy."""
        ...


class Arm(Protocol):
    """What the portfolio asks of an arm."""

    name: str

    def propose(self) -> Genome | None:
        """An untried configuration (PortfolioSearch.untried), or None: nothing to offer now."""
        ...

    def learn(self, genome: Genome, scores: tuple[float, ...] | None, drawn: bool) -> None:
        """A result of the shared history (scores None: it failed); `drawn`: it was drawn from the whole space."""
        ...


class GeneticArm:
    """The GA as an arm: its generations handed out a slot at a time, every other arm's result an immigrant."""

    name = "ga"

    def __init__(self, portfolio: Shared) -> None:
        self.portfolio = portfolio
        # Its own stream of generations: the budget is the portfolio's to keep.
        # A generation is the GA's floor of a batch: handed out, told and bred from within one batch.
        pool = max(2, portfolio.floor(self.name, portfolio.config.pool_size))
        config = replace(portfolio.config, generations=2**31, max_evaluations=None, time_limit=None,
                         seed=portfolio.seed, pool_size=pool)
        # No seeds of its own: generation 0 of the portfolio comes to it as immigrants, its first parents.
        self.ga = _ArmGeneticSearch(None, portfolio.space, config)
        self.ga.refuses, self.ga.to_change = portfolio.known_to_fail, portfolio.to_change
        self._queue: list[Candidate] = []
        self._mine: dict[Genome, Candidate] = {}  # handed out, waiting for the portfolio's result
        self._dead = False

    def propose(self) -> Genome | None:
        while not self._dead:
            if not self._queue:
                if self.ga.pending:
                    return None  # its generation is out: it breeds once every candidate of it is told
                try:
                    self._queue = list(self.ga.ask())
                except SearchError:
                    self._dead = True
                if not self._queue:
                    self._dead = True
                    return None
            candidate = self._queue.pop(0)
            measured = self.portfolio.measured
            if candidate.genome in measured:  # another arm measured it: the GA learns it without a new evaluation
                self._tell(candidate, measured[candidate.genome])
                continue
            self._mine[candidate.genome] = candidate  # told when the portfolio learns its result
            if self.portfolio.untried(candidate.genome):
                return candidate.genome
            # Else another arm proposed it in this batch: its result comes with theirs.
        return None

    def learn(self, genome: Genome, scores: tuple[float, ...] | None, drawn: bool) -> None:
        candidate = self._mine.pop(genome, None)
        if candidate is not None:
            self._tell(candidate, scores)
        else:
            self.ga.immigrate(genome, scores, drawn)

    def _tell(self, candidate: Candidate, scores: tuple[float, ...] | None) -> None:
        if self._dead:
            return
        try:
            if scores is None:
                self.ga.tell(candidate, cause=Cause.INVALID, message="failed")
            else:
                self.ga.tell(candidate, scores if len(scores) > 1 else scores[0])
        except SearchError:  # a generation of its own that all failed: the other arms go on
            self._dead = True


class _ArmGeneticSearch(GeneticSearch):
    """The GA inside the portfolio: its candidates are the portfolio's to name, so it makes neither their
    params nor their journal keys (half a candidate's cost at 6,400 evaluations); and it breeds, repairs and
    polls only what the portfolio finds promising (a child carrying a failing pair is bred again)."""

    refuses: Callable[[Genome], bool] = staticmethod(lambda genome: False)  # the portfolio's known_to_fail
    to_change: Callable[[Genome], frozenset[int] | None] = staticmethod(lambda genome: None)  # and its to_change

    def _new(self, genome: Genome, out: list[Genome]) -> bool:
        if genome not in self._seen and self.refuses(genome):
            return False  # not marked seen: a pair found to work after all lets it be bred later
        return super()._new(genome, out)

    def _repairs(self) -> Iterator[Changes]:
        # A failure that carries a pair known to fail is repaired only by a change of the pair: the others are
        # refused one by one anyway (same candidates; at 6,400 evaluations on a flag space they were most of
        # the search's time).
        for group in super()._repairs():
            group.only = self.to_change(group.genome)
            yield group

    def _candidate(self, genome: Genome) -> Candidate:
        candidate = Candidate(self._next_id, self._generation, {}, str(self._next_id), genome)
        self._next_id += 1
        self._issued += 1
        return candidate


class SpaceFillingArm:
    """Draws over the whole space, never one proposed before: uniform, or on a plateau (for its first _MAX_COMPARED
    configurations) the farthest of _CANDIDATE_DRAWS from every configuration measured along the ordered
    parameters."""

    name = "fill"

    def __init__(self, portfolio: Shared) -> None:
        self.portfolio = portfolio
        self._rng = random.Random(f"ciq_build.search.portfolio:{portfolio.seed}:fill")
        params = list(portfolio.space.values())
        # each ordered parameter's index and its grid's last index: a configuration's point in the unit cube
        self._axes = [(i, p.size - 1) for i, p in enumerate(params) if in_order(p) and p.size > 1]
        self._measured: list[Genome] = []  # every configuration measured, in order
        self._points: np.ndarray | None = None  # the first _count of them as points, made once on a plateau
        self._count = 0

    def propose(self) -> Genome | None:
        space = self.portfolio.space
        filling = self._axes and 0 < len(self._measured) <= _MAX_COMPARED and self.portfolio.plateau()
        wanted = _CANDIDATE_DRAWS if filling else 1
        candidates: list[Genome] = []
        for _ in range(space.draws(_DRAWS)):
            genome = space.sample(self._rng, 0.0)
            if self.portfolio.untried(genome) and genome not in candidates:
                candidates.append(genome)
                if len(candidates) == wanted:
                    break
        if len(candidates) <= 1:
            return candidates[0] if candidates else None
        import numpy as np  # deferred: `import ciq_build` and the Search API load no numpy until a plateau needs it

        points = np.array([self._point(genome) for genome in candidates])
        measured = self._measured_points()
        apart = np.abs(points[:, None, :] - measured[None, :, :])
        # distances on a torus: on the cube itself the farthest draws crowd its faces and corners, and the middle,
        # where most basins lie, gets fewer than uniform draws (30 read decoys at 30 seeds: 4d 80 -> 33%)
        apart = np.minimum(apart, 1.0 - apart)
        nearest = (apart**2).sum(axis=2).min(axis=1)
        return candidates[int(nearest.argmax())]

    def learn(self, genome: Genome, scores: tuple[float, ...] | None, drawn: bool) -> None:
        self._measured.append(genome)

    def _measured_points(self) -> np.ndarray:
        """Every configuration measured as a point, those new since the last call added (off a plateau, never)."""
        import numpy as np

        if self._points is None:
            self._points = np.zeros((64, len(self._axes)))
        while len(self._points) < len(self._measured):
            self._points = np.concatenate([self._points, np.zeros_like(self._points)])
        for genome in self._measured[self._count:]:
            self._points[self._count] = self._point(genome)
            self._count += 1
        return self._points[:self._count]

    def _point(self, genome: Genome) -> list[float]:
        """Where `genome` lies in the unit cube of the ordered parameters (knocked out: at the low end)."""
        return [0.0 if (gene := genome[i]) is None else gene / last for i, last in self._axes]


class LocalArm:
    """Moves around the portfolio's best configuration, rebuilt whenever the best changes.

    Plain lists and positions, no generator: a tune copies its source to guess the next batch
    (ciq_build.tune.ahead), and a generator cannot be copied.
    """

    name = "local"

    def __init__(self, portfolio: Shared) -> None:
        self.portfolio = portfolio
        self._centre: Genome | None = None
        self._rebuilt = 0
        self._moves: list[Genome] = []  # the next moves, in order
        self._next = 0
        self._pairs: list[tuple[int, int]] = []  # then any two parameters' one-step changes, a pair at a time
        self._steps: list[list[int | None]] = []
        self._around: dict[Genome, Genome] = {}  # the moves proposed around the current centre: the centre
        self._better: list[tuple[tuple[float, ...], Genome, Genome]] = []  # those that improved on it, and it
        self._params = list(portfolio.space.values())
        self._numeric = _numeric(self._params)  # the parameters product moves move
        self.walks = Walks(portfolio, portfolio.space)  # from the centre's changes of a choice or flag
        # on a flag space, once the best has stalled and before its other moves: a flag with a choice's value
        self.flag_pairs = FlagPairs(portfolio, portfolio.space, portfolio.seed) if portfolio.flags else None
        # Walks take turns with the centre's moves once its one-step moves and its choices' other values (the walks'
        # origins) are out, or from the first once an origin is known to interact (Walks.urgent).
        self._walks_from = 0  # where in the centre's moves that is
        self._walks_open = False
        self._walk_turn = True
        self._ordered: list[int] = []  # the centre's ordered parameters
        self._widened = False  # whether this centre's wide pairs (_wide_pairs()) have been queued

    def propose(self) -> Genome | None:
        centre = self.portfolio.centre()
        if centre is None:
            return None
        if centre != self._centre:
            self._rebuild(centre)
        if self.flag_pairs is not None and self.portfolio.stalled():
            genome = self.flag_pairs.propose()
            if genome is not None:
                self._around[genome] = centre
                return genome
        while True:
            self._walks_open = self._walks_open or self._next >= self._walks_from
            if (self._walks_open or self.walks.urgent) and (self._walk_turn or self._next >= len(self._moves)):
                genome = self.walks.propose()
                if genome is not None:
                    self._around[genome] = centre
                    self._walk_turn = False
                    return genome
            while self._next < len(self._moves):
                genome = self._moves[self._next]
                self._next += 1
                if self.portfolio.promising(genome):
                    self._around[genome] = centre
                    self._walk_turn = True
                    return genome
                measured = self.portfolio.measured.get(genome)
                if measured is not None and centre == self._centre:  # another arm measured it: walked from
                    self.walks.admit(genome, measured)
            if self.walks.pending:
                continue  # the centre's moves are out: the walks' turn
            if not self._pairs:
                if self._widened:
                    return None
                self._widened = True
                self._moves, self._next = self._wide_pairs(centre), 0
                continue
            i, j = self._pairs.pop()
            self._moves, self._next = [], 0
            for a, b in itertools.product(self._steps[i], self._steps[j]):
                moved = list(centre)
                moved[i], moved[j] = a, b
                self._moves.append(tuple(moved))

    def learn(self, genome: Genome, scores: tuple[float, ...] | None, drawn: bool) -> None:
        self.walks.heard()
        centre = self._around.pop(genome, None)
        directions = self.portfolio.directions
        if centre is None or len(directions) > 1:
            return
        walk = centre == self._centre and self.walks.learned(genome, scores)
        if self.flag_pairs is not None and centre == self._centre:
            self.flag_pairs.learned(genome, scores)
        before = self.portfolio.measured.get(centre)
        if scores is None or before is None:
            return
        if minimised(scores, directions) < minimised(before, directions):
            self._better.append((minimised(scores, directions), genome, centre))
        elif not walk and centre == self._centre:
            self.walks.admit(genome, scores)

    def _merged(self, centre: Genome) -> Genome | None:
        """Every change that improved on the last centre, applied to the new one at once (the best's first where
        two change one parameter): a batch proposes its moves around one centre, so where several improve, on a
        slope of separate parameters, their sum is the next step -- a batch's worth of single steps in one."""
        merged = list(centre)
        changed: set[int] = set()
        for _, genome, old in sorted(self._better, key=lambda better: better[0]):  # ties: in the order measured
            for i, (a, b) in enumerate(zip(genome, old, strict=True)):
                if a != b and centre[i] == b and i not in changed:
                    merged[i] = a
                    changed.add(i)
        self._better.clear()
        self._around.clear()
        return tuple(merged) if changed else None

    def _rebuild(self, centre: Genome) -> None:
        merged = self._merged(centre)
        previous, self._centre = self._centre, centre
        self.walks.reset(centre)
        if self.flag_pairs is not None:
            self.flag_pairs.reset(centre)
        self._rebuilt += 1
        rng = random.Random(f"ciq_build.search.portfolio:{self.portfolio.seed}:local:{self._rebuilt}")
        space = self.portfolio.space
        params = list(space.values())
        ordered = [i for i, p in enumerate(params) if in_order(p) and centre[i] is not None]
        moves: list[Genome] = [] if merged is None else [merged]
        if previous is not None:  # pattern steps: the best's last move once, twice and three times more
            for times in _PATTERN_TIMES:
                step = list(centre)
                for i in ordered:
                    if previous[i] is not None:
                        moved = centre[i] + times * (centre[i] - previous[i])  # type: ignore[operator]
                        step[i] = min(max(moved, 0), params[i].size - 1)
                if tuple(step) != centre and tuple(step) not in moves:
                    moves.append(tuple(step))
        near = one_step_neighbours(centre, space)
        rng.shuffle(near)
        moves += near
        # every other value of each choice (and the choice knocked out or brought back) next: a walk's origins,
        # measured before the pairs and product moves of the ordered parameters
        changes, early = single_changes(centre, space), set(near)
        choices = [genome for i, genome in changes
                   if not params[i].ordered and params[i].size > 1 and genome not in early]
        rng.shuffle(choices)
        moves += choices
        walks_from = len(moves)
        pairs = list(itertools.combinations(ordered, 2))
        rng.shuffle(pairs)
        for i, j in pairs:  # two ordered parameters a step each, both ways: along and across a ridge
            for di, dj in ((1, -1), (-1, 1), (1, 1), (-1, -1)):
                a, b = centre[i] + di, centre[j] + dj  # type: ignore[operator]
                if 0 <= a < params[i].size and 0 <= b < params[j].size:
                    moved = list(centre)
                    moved[i], moved[j] = a, b
                    moves.append(tuple(moved))
        for products in _product_moves(centre, self._numeric):
            rng.shuffle(products)
            # The nearest along the ridge first: where the ridge is smooth, its next point improves most often, and
            # shuffled among a few hundred product moves of a 32-value range it came after the local arm's share
            # of the budget (held-out-15's pridge15s: 8 of 100 seeds stalled one such move off the ridge's best,
            # where TPE, which samples near its good points, stalled in 1 of 40). The far moves follow.
            products.sort(key=lambda moved: _steps_apart(moved, centre))
            moves += products
        self._walks_from, self._walks_open, self._walk_turn = walks_from, False, True
        singles = [genome for _, genome in changes]
        rng.shuffle(singles)
        moves += singles
        triples = list(itertools.islice(itertools.combinations(ordered, 3), _MAX_TRIPLES))
        rng.shuffle(triples)
        for triple in triples:  # three ordered parameters a step each, every sign: down a valley no pair walks
            for signs in itertools.product((1, -1), repeat=3):
                moved = list(centre)
                for i, sign in zip(triple, signs, strict=True):
                    moved[i] = centre[i] + sign  # type: ignore[operator]
                if all(0 <= moved[i] < params[i].size for i in triple):
                    moves.append(tuple(moved))
        self._moves, self._next = moves, 0
        self._ordered, self._widened = ordered, False
        self._steps = [_one_steps(p, centre[i]) for i, p in enumerate(params)]
        self._pairs = [(i, j) for i, j in itertools.combinations(range(len(params)), 2)
                       if self._steps[i] and self._steps[j]]
        rng.shuffle(self._pairs)  # taken from the end: any two parameters, flags that only help together

    def _wide_pairs(self, centre: Genome) -> list[Genome]:
        """Once every other move around the centre is out: two ordered parameters moved together with one of them
        two steps (or both), the nearest first -- a pair that pays only where one goes further than a step (a
        block's next value with two more stages), which no one-step pair or triple reaches."""
        params = self._params
        moves: list[tuple[int, Genome]] = []
        for i, j in itertools.combinations(self._ordered, 2):
            for di, dj in itertools.product((-2, -1, 1, 2), repeat=2):
                a, b = centre[i] + di, centre[j] + dj  # type: ignore[operator]
                if max(abs(di), abs(dj)) == 2 and 0 <= a < params[i].size and 0 <= b < params[j].size:
                    moved = list(centre)
                    moved[i], moved[j] = a, b
                    moves.append((abs(di) + abs(dj), tuple(moved)))
        rng = random.Random(f"ciq_build.search.portfolio:{self.portfolio.seed}:wide:{self._rebuilt}")
        rng.shuffle(moves)
        moves.sort(key=lambda move: move[0])
        return [genome for _, genome in moves]


def _product_moves(centre: Genome, numeric: list[tuple[int, list[float]]]) \
        -> tuple[list[Genome], list[Genome], list[Genome]]:
    """Ordered numeric parameters moved together so that their products stay as they are: (1) two of them, one to
    each of its other values, the other to the value that keeps their product nearest; (2) one to each of its other
    values, every other rescaled at once to keep its product with it. Where what matters is a product (tile sides,
    warps times items), the best along the ridge is reached from anywhere on it in one move, however far: one-step
    pairs walk it only where a step of one is a step of the other; where one parameter's products with several
    others bind (warps times stages, warps times unroll: two resource limits), no pair keeps both; (3) two of three a
    step each, the third to the value that keeps the product of the three (CTAs times warps times depth)."""
    pairs: dict[Genome, None] = {}  # in order, once
    for (i, ivalues), (j, jvalues) in itertools.permutations(numeric, 2):
        a, b = centre[i], centre[j]
        if a is None or b is None:
            continue
        product = ivalues[a] * jvalues[b]
        for other, value in enumerate(jvalues):
            nearest = _nearest(ivalues, product / value)
            if other != b and nearest != a:
                moved = list(centre)
                moved[i], moved[j] = nearest, other
                pairs[tuple(moved)] = None
    rescaled: dict[Genome, None] = {}
    for i, ivalues in numeric:
        a = centre[i]
        others = [(j, jvalues, jvalues[b]) for j, jvalues in numeric if j != i and (b := centre[j]) is not None]
        if a is None or len(others) < 2:
            continue  # with one other, a pair move
        for other, value in enumerate(ivalues):
            if other != a:
                moved = list(centre)
                moved[i] = other
                for j, jvalues, jvalue in others:
                    moved[j] = _nearest(jvalues, ivalues[a] * jvalue / value)
                rescaled[tuple(moved)] = None
    # (3) two of three a grid step each, every sign, the third to the value that keeps the product of the three
    # nearest: where the product of three matters (CTAs x warps x depth), a point of the ridge that is better in the
    # shape along it (warps over CTAs) may need two of them up and the third down at once -- no pair keeps the
    # product, and the rescaled moves keep each pair's product, not the three's.
    triples: dict[Genome, None] = {}
    for trio in itertools.islice(itertools.combinations(numeric, 3), _MAX_TRIPLES):
        for k in range(3):
            (i, ivalues), (j, jvalues) = (trio[n] for n in range(3) if n != k)
            c, cvalues = trio[k]
            a, b, z = centre[i], centre[j], centre[c]
            if a is None or b is None or z is None:
                continue
            product = ivalues[a] * jvalues[b] * cvalues[z]
            for di, dj in itertools.product((1, -1), repeat=2):
                if 0 <= a + di < len(ivalues) and 0 <= b + dj < len(jvalues):
                    nearest = _nearest(cvalues, product / (ivalues[a + di] * jvalues[b + dj]))
                    if nearest != z:
                        moved = list(centre)
                        moved[i], moved[j], moved[c] = a + di, b + dj, nearest
                        triples[tuple(moved)] = None
            # (4) and one a grid step, another by the same factor, the third keeping the product: where the shape
            # along the ridge is a ratio of two of them (rows over column blocks), the move that keeps both the
            # ratio and the product -- two up and the third down by their square, which no step of one makes
            for di in (1, -1):
                if 0 <= a + di < len(ivalues):
                    scaled = _nearest(jvalues, jvalues[b] * ivalues[a + di] / ivalues[a])
                    nearest = _nearest(cvalues, product / (ivalues[a + di] * jvalues[scaled]))
                    if scaled != b and nearest != z:
                        moved = list(centre)
                        moved[i], moved[j], moved[c] = a + di, scaled, nearest
                        triples[tuple(moved)] = None
    seen = {**pairs, **rescaled}
    return list(pairs), [move for move in rescaled if move not in pairs], [move for move in triples if move not in seen]


def _steps_apart(moved: Genome, centre: Genome) -> int:
    """The largest number of grid steps any parameter moved from `centre` to `moved`."""
    return max(abs(a - b) for a, b in zip(moved, centre, strict=True) if a is not None and b is not None)


def _nearest(values: list[float], wanted: float) -> int:
    """The index of the value nearest `wanted` in ascending `values`."""
    index = bisect.bisect_left(values, wanted)
    if index == len(values) or (index > 0 and wanted - values[index - 1] <= values[index] - wanted):
        return index - 1
    return index


def _numeric(params: list[Param]) -> list[tuple[int, list[float]]]:
    """The ordered parameters whose values are positive numbers, ascending (a product of two means something), with
    their values: the first _MAX_PRODUCT_PARAMS of them."""
    out: list[tuple[int, list[float]]] = []
    for i, param in enumerate(params):
        values = param.values() if in_order(param) else []
        if values and all(isinstance(v, int | float) and not isinstance(v, bool) and v > 0 for v in values) \
                and all(a < b for a, b in itertools.pairwise(values)):
            out.append((i, values))
    return out[:_MAX_PRODUCT_PARAMS]


def _one_steps(param: Param, gene: int | None) -> list[int | None]:
    """The values one step from `gene`: a grid step, another value of a small choice, knocked out, or back in
    (at its middle value when it has many)."""
    if gene is None:
        return list(range(param.size)) if param.size <= _POLL_CHOICES else [param.size // 2]
    out: list[int | None] = []
    if in_order(param):
        out += [v for v in (gene - 1, gene + 1) if 0 <= v < param.size]
    elif param.size <= _POLL_CHOICES:
        out += [v for v in range(param.size) if v != gene]
    if param.can_knockout:
        out.append(None)
    return out


def in_order(param: Param) -> bool:
    """Whether local moves step `param` to its neighbouring values: an ordered grid (a range, log sampling), or a
    choice of numbers listed ascending (unroll 1, 2, 4, 8: a step to the next is a small change, as the grid's)."""
    if param.ordered:
        return True
    values = param.values()
    return len(values) > 2 and all(isinstance(v, int | float) and not isinstance(v, bool) for v in values) \
        and all(a < b for a, b in itertools.pairwise(values))
