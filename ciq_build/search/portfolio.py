"""The portfolio search (`--strategy portfolio`): several techniques, one history, a bandit.

No single search wins on every landscape: a genetic search climbs rugged
ones, random draws find a basin behind a decoy, local moves walk a ridge, a
slowly converging population search (ciq_build.search.diverse) makes the
move of two or three flags that is a loss flag by flag.
The portfolio runs them side by side as arms (ciq_build.search.arms) over
one shared history -- what one measures every other knows, and no
configuration is measured twice -- and hands each batch's slots to the arms:
first each arm's floor (most of a batch to the GA; in a flag space half, and
a quarter to the diverse arm), then, slot by slot, to
whichever OpenTuner's AUC bandit (ciq_build.search.bandit) ranks first --
the arm that has recently been finding improvements -- among those with an
untried configuration to offer. No arm but the draws proposes a pair of
values known to fail (ciq_build.search.failing_pairs).

A plateau (most draws from the whole space score alike next to how far
the best of them lie below: ripples, noise, a wave or a tilt are alike)
changes the shares: what the best has found may be a decoy -- a slope that
leads nowhere while a basin lies elsewhere -- and only draws find the basin,
so the space-filling arm keeps at least three quarters of each batch. Local
moves, not the GA, descend what the best found meanwhile: they merge every
move that improved on the last best, and extrapolate the best's last move, so
a slope is walked in a few batches. They are paid by depth: a slot for each
plateau spread the last batch took the best down by (a draw from the
plateau gains its spread anyway), from a sliver of the batch up to a quarter,
so a gentle slope to a decoy costs the draws little and a basin's steep one
keeps the quarter.

Generation 0 is the caller's seeds, then uniform draws. A slot handed out
counts as a use of its arm for the rest of the batch. Everything is seeded
and told in batch order, so the same seed and scores give the same
candidates and a run resumed from its journal replays.

Noise. A search that picks the lowest single measurement picks a lucky one.
Where measuring one configuration again gives another score (checked once on
the best, the first time there is one), the portfolio measures the
configurations nearest the best again -- a share of each batch, and more of
the last two -- gives draws a quarter of each batch (noise hides a plateau:
its draws spread as widely as noisy knobs', so only a draw that lands far
below it, or a best whose depth the draws' main effects do not explain,
shows one: ciq_build.search.drawn_effects), and judges configurations by an
estimate pooled across every measurement (ciq_build.search.pooled: an
additive model of the parameters' values, plus each configuration's own
departure from it shrunk by how far its own measurements can be trusted)
plus that estimate's standard error (a pessimistic bound: one lucky run is
not enough to lead). Even so the measurements a pick was chosen by favour it
(the winner's curse), so the pick is chosen before the last batch, which
measures it afresh, and
:meth:`Results.get_best_result` reports the mean of those fresh
measurements alone (Results.confirm). A space small enough for the budget to
measure every configuration does not end the search there: the batches left
measure again the configurations judged best, and the last confirms the pick
as usual (the last batch is the plan's last generation, or its last
evaluations). Without it the search stopped with most of its budget unspent
and reported the mean of whichever configuration's few measurements were
luckiest: held-out-14's noisy14 (160 configurations, 2% noise) stopped at
~200 of 640 evaluations, its pick on target in 28% of seeds, its reported
gain 2.6-3.3 points above the true one.
"""

from __future__ import annotations

import bisect
import math
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Unpack

from ciq_build.core.pareto import minimised
from ciq_build.core.space import Genome, Param, SearchSpace, as_space, canonical_key
from ciq_build.search.arms import Arm, GeneticArm, LocalArm, SpaceFillingArm
from ciq_build.search.bandit import AucBandit
from ciq_build.search.batch import BatchSearch, Candidate, SearchOptions
from ciq_build.search.configuration import SearchConfiguration
from ciq_build.search.diverse import DiverseArm
from ciq_build.search.drawn_effects import DrawnEffects
from ciq_build.search.failing_pairs import FailingPairs
from ciq_build.search.failing_values import FailingValues
from ciq_build.search.genetic import BatchSource, first_pool
from ciq_build.search.pooled import PooledScores
from ciq_build.search.strategy import GRID, SearchRequest, configured
from ciq_build.search.strategy_options import strategy_option

_SEEDED = -1  # the arm of generation 0 and of repeated measurements: no arm's credit
_GA = 0  # GeneticArm's index in the arms
_FILL = 1  # SpaceFillingArm's index in the arms
_LOCAL = 2  # LocalArm's
# The share of each batch every arm is given first, before the bandit orders the rest (GA, space-filling, local,
# diverse):
# the bandit follows recent improvements, and an arm whose improvements come late must not starve before them.
# Chosen on the tuning set (bench/search_quality/problems.py, seeds 0-39, 640 evaluations, pool 32): with the GA
# at 5/8 and the others at 1/8 the GA's generations were too small and too diluted -- NK 52% against the GA
# alone's 82%, 12 mixed 60/72%, Rastrigin 72/88% -- at 3/4 NK 60%, 12 mixed 78%, Rastrigin 82%; at 7/8 NK 68%,
# 12 mixed 75%, Rastrigin 98%, trap 38/35%, knobs 70/52%, acf44 82/82%. With the GA at 7/8 the floors filled a batch
# of 32 and the bandit had nothing to give: the local arm's 2 slots a batch never reached its triples of ordinals
# (held-out-3's three-ordinal valley 18/30 seeds); at 3/4, the bandit giving the last 1/8 to whichever arm is
# finding improvements: the valley 30/30, the tuning set's 12 mixed 17/20 (13/20), NK, knobs and held-out-2's
# rippled decoy unchanged, acf46 14/20 (13/20), the failure-walled best 26/40. (Trying a failed local move next with
# one other parameter a step as well cost the walled best 17/30 and the tuning set's knobs 20/40 against 25/40.)
FLOORS = {"ga": 0.75, "fill": 0.0625, "local": 0.0625}
# A compiler's flag space (flag_space(), below): the diverse arm joins, with a quarter taken from the GA's 3/4. Its
# improvements come late (after generation ~6 on the ACF-like spaces), later than the bandit's credit keeps an arm
# alive, so it needs a floor of its own. Chosen on the tuning set and held-out-1..6 (640 evaluations, pool 32; LOG.md,
# "The diverse arm and the failing pairs"): the mean share on target over their seven ACF-like spaces, 40 seeds each:
# before 63%, the diverse arm with no floor 64%, GA 3/4 and diverse 1/8 (nothing left to the bandit) 70%, GA 5/8 and
# diverse 1/8 71%, GA 1/2 and diverse 1/4 75% (with 16 survivors: ciq_build.search.diverse.POPULATION). Not on
# other spaces: with its quarter everywhere the tuning set's numeric landscapes lost what the GA's selection finds
# (30 seeds, against before: 12 mixed 63/90%, knobs 23/60%, NK 47/73%, Rastrigin 60/97%), with an eighth (GA 3/4)
# still 12 mixed 73%, Rastrigin 83%, Rosenbrock 7/17%, and with no floor, offered the bandit's share alone, it took
# slots from the local arm's ridge moves (held-out-4's valley 83/100%, held-out-5's ridge 87/100%, its walled best
# 43/53%). Elsewhere the portfolio is as it was.
FLAG_FLOORS = {"ga": 0.5, "fill": 0.0625, "local": 0.0625, "diverse": 0.25}
# A flag space: at least this share of the parameters are flags (one value, or absent). The ACF-like spaces of the
# tuning and held-out sets have 59-67% flags, every other problem at most one flag (a third of a 3-parameter space).
FLAG_SHARE = 0.5
# On a plateau (plateau(), below), the best may be a decoy -- a slope that leads nowhere while the basin lies
# elsewhere -- and only draws find the basin, so the space-filling arm keeps most of each batch whatever the best
# does: a basin behind a decoy is found by as many draws as random search makes, or nearly (the second held-out
# set's rippled decoy was lost to random search, 33% against 58%, while the draws had 9/16 of each batch as long as
# the decoy's slope kept improving). Local moves, which merge every improvement, descend what was found meanwhile,
# a slope in a few batches, where the GA's generations would take many: up to a quarter of a batch, a slot for each
# plateau spread (plateau_spread()) the last batch gained, at least PLATEAU_SLIVER (paid_descent()); the draws get
# the rest, the GA nothing. The quarter and the sliver were chosen on the tuning set and the two read held-out sets
# (seeds 0-59, 640 evaluations, basin found or on target): local moves at 1/4 while improving: held-out-2's decoy9
# 42%, the tuning set's plateau (a basin to descend) 40%; at 3/8: 38%, 50%; at 3/16: 42%, 32%; before this change
# (9/16 draws while improving, a fixed 0.1% tolerance): decoy9 35%, plateau 52% (seeds 0-39); then the quarter was
# kept while each improvement exceeded the plateau's spread, the sliver after a batch without one. Paid by depth since
# (LOG.md, round 25): on held-out-20's decoy7c (0.28 a step down a 7% decoy, a spread of 0.12-0.15) that kept the
# quarter a batch in two while the decoy was walked, ~70 of 640 evaluations to local moves where random search draws.
PLATEAU_FLOORS = {"ga": 0.0, "fill": 0.75, "local": 0.25, "diverse": 0.0}
PLATEAU_SLIVER = 0.0625
# While a walk from a change that interacts (ciq_build.search.walks) has a step to make, the local arm's floor: a walk
# steps once its last step is known, so it needs a slot every batch, and several walk at once (each origin both ways
# along each ordered parameter). With its floor of 1/16 (2 slots of 32, shared with the centre's own moves) the
# walks made a step every few batches and reached the value that pays after the budget: held-out-9's bounds9
# (unroll 2 with min blocks 16) 9/40 seeds; with a quarter while they walk 32/40 (held-out-7's hgemm7 37 -> 39/40,
# held-out-10's three problems as before: the walks there are from changes that do not interact). Chosen on held-out-7..10.
# The same quarter once the best has not improved for more than STALL_BATCHES batches (off a plateau): the GA's
# generations have stopped finding better, and the moves around the best -- the pairs and products that walk a ridge,
# which at 2 slots a batch came after the budget -- are what is left to try; where they run out, the slots go to the
# other arms. Chosen on the tuning set and held-out-1..11 (LOG.md, held-out-12's round; seeds 100-129, 640
# evaluations): with numeric choices stepped in order (ciq_build.search.arms.in_order) 26 ridge, valley and
# failure-walled problems 2306 -> 2333 points of hits (walled5 47 -> 63%, bounds11 70 -> 77%); both changes against
# neither: those 26 2265 -> 2333, 15 ACF-like spaces 1209 -> 1221, the tuning set 918 -> 961 (knobs 57 -> 80%,
# Rastrigin 87 -> 77%; at seeds 200-259 knobs 55 -> 73%, Rastrigin 90 -> 85%, 12 mixed 75 -> 70%).
WALKING_FLOOR = 0.25
# batches without a new best before a plateau counts as stalled, or the local arm gets its quarter (and, on a flag
# space, tries flags with choices' values first: ciq_build.search.flag_pairs)
STALL_BATCHES = 1
# A plateau: the middle half of the draws from the whole space spans at most this share of the distance from their
# median down to the lowest draw. Draws from a landscape with no plateau spread as widely as a normal or uniform
# distribution (1/2 to 1 of that distance at a few dozen draws); a plateau's cluster -- exact ties, a ripple, noise,
# a wave or a gentle tilt -- is narrow next to a decoy's slope or a basin below it.
# Under noise the distance is down to the lowest of the draws and the best judged (pooled, ciq_build.search.pooled),
# whichever arm found it: noise spreads the draws' middle half (about 1.35 noise sigmas) as wide as their lowest lies
# below it, so a plateau was known only once a draw landed in its decoy, while a decoy found by the GA or the local
# moves, measured again, said nothing (decoy8n, 0.8% noise, 40 seeds: 12 never knew the plateau, the draws a fifth of
# the budget there, 1 of the 12 found the basin; random search 53%). The read sets' noisy knobs' best judged lies
# 0.4-1.7 middle halves below the draws' median, a decoy's 3-8 (LOG.md, held-out-19's round).
PLATEAU_SPREAD = 0.25
PLATEAU_DRAWS = 16  # draws before the shape of the landscape is judged
# More than half of the draws within this share of their median are flat whatever lies below (a ripple far below
# any noise worth tuning for: the rule before the draws' shape was judged, kept, since a plateau tilted by 1% with no
# draw on its decoy yet has draws as spread as a sloped landscape's); an improvement or a best counts only beyond it.
MIN_SPREAD = 1e-3
# A plateau too: the middle half of the draws within this share of their median, terraces or a bowl of a few tenths
# of a percent that no draw's slope clause sees (held-out-4's terraced decoy, 0.2% steps: the middle half spans 0.2-0.4%
# of the median, the lowest draw a step or two below it, so the GA, 3/4 of each batch, walked down the terraces into
# the decoy: 42% of basins found against random search's 56%). No landscape of the tuning or held-out sets that is not
# a plateau has its middle half within 0.9% (the interquartile range of 32 draws over their median, 5 samples of each: noisy4's
# knobs 0.9-1.4%, jittery knobs 1.7-2.9%, ACF-like spaces 3.5-11%; the decoys' plateaus 0-0.4%).
FLAT_SPREAD = 5e-3
# Under noise, off a plateau, the draws keep this share of each batch (the GA's floor gives way to it, so that the
# batch's measurements again and the other floors leave it whole). Noise spreads the draws from a plateau as widely as
# a noisy landscape's own shape spreads them (the draws' interquartile range over the noise's, 8 seeds: 0.5-1.2 on the
# read sets' noisy decoys, 0.6-1.5 on their noisy knobs), so no spread tells a noisy plateau from noisy knobs, and one
# is known only once a draw lands far below it: with a sixteenth of each batch that came late or never (decoy8n,
# 0.8% noise: 9 and 17 batches in, the GA chasing lucky measurements on the plateau meanwhile). Chosen on read sets
# (LOG.md, held-out-18's round; 100 seeds): the three noisy decoys 27/53/44 -> 36/70/50% (random 53/72/50%), the
# fifteen noisy knobs net -3 points, none at p < 0.05 (noisy3 69 -> 56%, p = 0.08; noisy13 86 -> 98%, p = 0.003).
NOISY_FILL = 0.25
# Noise: chosen on the tuning set's jittery knobs (2% noise, seeds 0-39): the pick's true regret 1.07% with these
# (GA alone 1.43%, the portfolio with 1/8, 1/2, 4 and 5: 1.53%); 12 candidates, 12 repeats, 3/8: 1.04%.
REPEAT_SHARE = 0.25  # at most this share of a batch measures configurations again, once scores are noisy
FINAL_REPEAT_SHARE = 0.75  # and of the last two batches
CONFIRM_SHARE = 0.25  # of the last batch: fresh measurements of the pick, the score reported for it
MAX_REPEATS = 8  # measurements of one configuration at most
_REPEAT_CANDIDATES = 8  # the configurations nearest the best that are measured again


class PortfolioSearch(BatchSearch):
    """Arms sharing one history, their slots given by an AUC bandit; noise-aware choice of the best.

    ``remeasure``: whether the search may measure a configuration again to
    learn whether, and how much, its scores are noisy (a tune re-measures its
    winners itself and turns this off).
    """

    def __init__(
        self,
        objective_function: Callable[[dict[str, Any]], Any] | None,
        search_space: Mapping[str, Param] | SearchSpace,
        search_config: SearchConfiguration,
        *,
        remeasure: bool = True,
        **options: Unpack[SearchOptions],
    ):
        super().__init__(objective_function, search_space, search_config, **options)
        self.remeasure = remeasure and len(self.directions) == 1
        self.measured: dict[Genome, tuple[float, ...] | None] = {}  # each configuration's first result
        self._samples: dict[Genome, list[float]] = {}  # one objective: each measurement's fitness
        self._arm_of: dict[int, int] = {}  # a pending candidate's arm
        self._repeats: set[int] = set()  # pending candidates that measure a configuration again
        self._best: tuple[tuple[float, ...], Genome] | None = None  # one objective, without noise
        self._front: list[tuple[tuple[float, ...], Genome]] = []  # several objectives: the non-dominated
        self.noisy: bool | None = None  # unknown until the best has been measured twice
        self._noisy_centre: Genome | None = None  # with noise: the best by the statistic, after each batch
        self._pooled: PooledScores | None = None  # with noise: every measurement, pooled (ciq_build.search.pooled)
        self._ranked: list[Genome] = []  # and the configurations judged best by it, after each batch
        self._centre_judged = math.inf  # and the best's pooled score (with its standard error)
        self._gained = math.inf  # how far the last batch took the best down (one objective)
        self._best_at = 0  # the last batch that improved on the best at all
        # A flag space: the diverse arm, and proposals that skip the pairs of values known to fail
        self.flags = flag_space(self.space)
        self._base_floors = FLAG_FLOORS if self.flags else FLOORS
        self._floors = self._base_floors  # this batch's, or a plateau's (PLATEAU_FLOORS, paid_descent())
        self._drawn: list[float] = []  # one objective: the fitness of every draw from the whole space, sorted
        # and the draws themselves, for their main effects (with noise: is the best in a pit? plateau())
        self._draws = DrawnEffects([p.size - 1 if p.ordered and p.size > 2 else 0 for p in self.space.values()])
        self._pit = False  # with noise: the best judged lies in a pit the draws' main effects do not explain
        self._pick: Genome | None = None  # with noise: the best, chosen before the last batch measures it afresh
        self._exhausted = False  # every configuration of the (small) space has been proposed
        self.failing = FailingPairs()  # pairs of values known to fail: what no arm but the draws proposes
        self.failing_alone = FailingValues(self.space)  # and values that fail whatever the others, in any space
        self.ga = GeneticArm(self)
        self.local = LocalArm(self)
        self.arms: list[Arm] = [self.ga, SpaceFillingArm(self), self.local]
        if self.flags:
            self.arms.append(DiverseArm(self))
        self.bandit = AucBandit(len(self.arms))
        self.uses = [0] * len(self.arms)  # slots each arm was given, for the record

    # -- what the arms read ------------------------------------------------------------

    def floor(self, arm: str, size: int) -> int:
        """The slots of a batch of `size` that `arm` is given first, before the bandit orders the rest."""
        return int(size * self._floors[arm])

    def floors(self, size: int, repeated: int = 0) -> list[int]:
        """Each arm's floor of a batch of `size`, `repeated` of whose slots measure configurations again:
        WALKING_FLOOR to the local arm while a walk from a change that interacts has a step to make, or once the best
        has stalled (off a plateau); under noise (off a plateau) NOISY_FILL to the draws, the GA's floor what the
        others leave."""
        floors = [self.floor(arm.name, size) for arm in self.arms]
        if self._floors is PLATEAU_FLOORS:
            floors[_LOCAL] = self.paid_descent(size)
            floors[_FILL] = size - floors[_LOCAL]
        if self._floors is self._base_floors and (self.local.walks.urgent or self.stalled()):
            floors[_LOCAL] = max(floors[_LOCAL], int(size * WALKING_FLOOR))
        if self._floors is self._base_floors and self.noisy:
            floors[_FILL] = max(floors[_FILL], int(size * NOISY_FILL))
            others = sum(floors) - floors[_GA]
            floors[_GA] = max(0, min(floors[_GA], size - repeated - others))
        return floors

    def paid_descent(self, size: int) -> int:
        """On a plateau, the local arm's slots of a batch of `size`: one for each plateau spread (plateau_spread())
        the last batch took the best down by, at least PLATEAU_SLIVER and at most PLATEAU_FLOORS' quarter.
        A draw from the plateau gains its spread anyway, so a descent that gains less per evaluation than that is
        no better spent than the draws, which alone find a basin behind a decoy."""
        spread = self.plateau_spread()
        paid = self._gained / spread if spread > 0 else math.inf
        return int(min(max(paid, size * PLATEAU_SLIVER), size * PLATEAU_FLOORS["local"]))

    def stalled(self) -> bool:
        """Whether the best has not improved for more than STALL_BATCHES batches."""
        return self._generation - self._best_at > STALL_BATCHES

    def untried(self, genome: Genome) -> bool:
        """Never proposed, and allowed by the constraints."""
        return genome not in self._seen and self.space.allows(genome)

    def known_to_fail(self, genome: Genome) -> bool:
        """Whether `genome` carries a value known to fail alone, or in a flag space a pair of values known to fail."""
        return self.failing_alone.carries(genome) or (self.flags and self.failing.carries(genome))

    def to_change(self, genome: Genome) -> frozenset[int] | None:
        """The parameters a single change of `genome` must touch to carry no value or pair known to fail (None:
        any)."""
        known = [changes for changes in (self.failing_alone.to_change(genome),
                                         self.failing.to_change(genome) if self.flags else None) if changes is not None]
        return frozenset.intersection(*known) if known else None

    def promising(self, genome: Genome) -> bool:
        """Untried, and not known to fail."""
        return self.untried(genome) and not self.known_to_fail(genome)

    def centre(self) -> Genome | None:
        """The configuration local moves start from: the best (several objectives: a front member in turn); None
        where the landscape is flat (most draws score alike and the best is not clearly below them: a best says
        nothing of its neighbours there)."""
        if self._on_the_plateau():
            return None
        if len(self.directions) > 1:
            return self._front[self._generation % len(self._front)][1] if self._front else None
        if self.noisy:
            return self._noisy_centre
        return None if self._best is None else self._best[1]

    # -- batches -----------------------------------------------------------------------

    def _breed(self) -> list[Candidate]:
        size = self._batch_size()
        if size <= 0:
            return []
        genomes: list[Genome] = []
        arms: list[int] = []
        repeats = self._to_measure_again(size) if self._generation > 0 else []
        for genome in repeats:
            genomes.append(genome)
            arms.append(_SEEDED)
        if self._exhausted:  # every configuration has been measured: only measurements again are left
            return self._candidates(repeats, [_SEEDED] * len(repeats), len(repeats)) if self.noisy else []
        if self._generation == 0:
            for genome in self._seed_genomes[:size]:
                if self._new(genome, genomes):
                    arms.append(_SEEDED)
        self._floors = self._base_floors
        if len(self.directions) == 1 and self.plateau():
            self._floors = PLATEAU_FLOORS
        rng = random.Random(f"ciq_build.search.portfolio:{self.seed}:{self._generation}")
        tie = [rng.random() for _ in self.arms]
        pending = [0] * len(self.arms)
        floors = self.floors(size, len(repeats))
        while len(genomes) < size:
            below = [arm for arm in range(len(self.arms)) if pending[arm] < floors[arm]]
            if self._generation == 0:
                order = [_FILL]
            else:
                order = self.bandit.order(pending, tie)
                order = [arm for arm in order if arm in below] + [arm for arm in order if arm not in below]
            for arm in order:
                offered = self.arms[arm].propose()
                if offered is not None and self._new(offered, genomes):
                    pending[arm] += 1
                    arms.append(_SEEDED if self._generation == 0 else arm)
                    break
            else:
                unseen = self._unseen(rng)
                if unseen is None or not self._new(unseen, genomes):
                    break  # every configuration of the space has been proposed (or none was found in a huge one)
                arms.append(_SEEDED if self._generation == 0 else _FILL)
        if self._exhausted and self.noisy and self.remeasure:  # the batch's rest, as in every batch from now on
            extra = self._least_measured(size - len(genomes), [])
            genomes[len(repeats):len(repeats)] = extra
            arms[len(repeats):len(repeats)] = [_SEEDED] * len(extra)
            repeats = repeats + extra
        elif len(genomes) == len(repeats):
            return []  # nothing new to propose: only measurements again are left
        return self._candidates(genomes, arms, len(repeats))

    def _candidates(self, genomes: list[Genome], arms: list[int], repeated: int) -> list[Candidate]:
        """The batch of `genomes`, proposed by `arms` (in order); its first `repeated` measure a configuration again."""
        candidates = [self._candidate(genome) for genome in genomes]
        for index, candidate in enumerate(candidates):
            self._arm_of[candidate.id] = arms[index]
            if index < repeated:
                self._repeats.add(candidate.id)
            elif arms[index] >= 0:
                self.uses[arms[index]] += 1
        return candidates

    def _unseen(self, rng: random.Random) -> Genome | None:
        """A configuration no arm offered: drawn, or picked from those never proposed where the space is small."""
        for _ in range(self.space.draws(40)):
            genome = self.space.sample(rng, 0.0)
            if self.untried(genome):
                return genome
        if self.space.cardinality > 200_000:
            return None
        unseen = [g for g in map(self.space.genome_at, range(self.space.cardinality)) if self.untried(g)]
        self._exhausted = not unseen
        return rng.choice(unseen) if unseen else None

    def _learn(self, batch: list[Candidate], generation: int) -> None:
        start = self._best[0][0] if self._best is not None else math.inf
        for candidate in batch:
            evaluation = self._told[candidate.id]
            fitness = minimised(evaluation.scores, self.directions) if evaluation.ok else None  # type: ignore[arg-type]
            arm = self._arm_of.pop(candidate.id)
            if candidate.id in self._repeats:
                self._repeats.discard(candidate.id)
                if fitness is not None:
                    self._sample(candidate.genome, fitness)
                continue
            self.measured[candidate.genome] = evaluation.scores if evaluation.ok else None
            self.failing_alone.add(candidate.genome, evaluation.ok)
            if self.flags:
                self.failing.add(candidate.genome, evaluation.ok)
            improved = fitness is not None and self._improves(candidate.genome, fitness)
            if improved:
                self._best_at = generation
            if improved and self.flags:
                self.failing.best(candidate.genome)
            if fitness is not None and len(self.directions) == 1:
                self._sample(candidate.genome, fitness)
            if arm >= 0:
                self.bandit.record(arm, improved)
            drawn = arm in (_FILL, _SEEDED)
            if drawn and fitness is not None and len(self.directions) == 1:
                self._drew(candidate.genome, fitness[0])
            for each in self.arms:
                each.learn(candidate.genome, self.measured[candidate.genome], drawn)
        if self._best is None and not self._front:
            raise self._all_invalid(batch, generation)
        if self._best is not None:
            self._gained = start - self._best[0][0]
        self._judge()

    def _drew(self, genome: Genome, value: float) -> None:
        """A draw from the whole space measured `value` (one objective): the plateau's evidence."""
        bisect.insort(self._drawn, value)
        self._draws.add(genome, value)

    def _judge(self) -> None:
        """With noise: the configurations judged best by the pooled scores, the best and its pooled score."""
        if self._pooled is not None:
            self._ranked = self._pooled.lowest(_REPEAT_CANDIDATES)
            self._noisy_centre = self._ranked[0] if self._ranked else None
            self._centre_judged = math.inf if self._noisy_centre is None else self._pooled.judged(self._noisy_centre)
            self._pit = (self._noisy_centre is not None and len(self._draws) >= PLATEAU_DRAWS
                         and self._draws.pit(self._noisy_centre, self._centre_judged))

    def plateau(self) -> bool:
        """Whether most draws from the whole space score alike -- more than half of them within MIN_SPREAD of their
        median (flat, whatever lies below), or their middle half within PLATEAU_SPREAD of the distance down to the
        lowest draw (under noise: or the best judged) or FLAT_SPREAD of the median -- or, under noise, the best
        judged lies in a pit (ciq_build.search.drawn_effects): a landscape where only draws find what the best does
        not lead to."""
        drawn = self._drawn  # sorted
        if len(drawn) < PLATEAU_DRAWS:
            return False
        level = self._median()
        margin = MIN_SPREAD * abs(level)
        flat = bisect.bisect_right(drawn, level + margin) - bisect.bisect_left(drawn, level - margin) > len(drawn) / 2
        lowest = min(drawn[0], self._centre_judged)
        narrow = self._quartiles_apart() <= max(PLATEAU_SPREAD * (level - lowest), FLAT_SPREAD * abs(level))
        return flat or narrow or self._pit

    def _median(self) -> float:
        return self._drawn[len(self._drawn) // 2]

    def _quartiles_apart(self) -> float:
        drawn = self._drawn
        return drawn[3 * len(drawn) // 4] - drawn[len(drawn) // 4]

    def plateau_spread(self) -> float:
        """The plateau's own spread: its draws' interquartile range (at least MIN_SPREAD of their median). A best
        no further below the median, or an improvement no larger, is what draws from the plateau give anyway."""
        if len(self._drawn) < PLATEAU_DRAWS:
            return 0.0
        return max(self._quartiles_apart(), MIN_SPREAD * abs(self._median()))

    def _on_the_plateau(self) -> bool:
        """Whether the landscape is a plateau and the best is no better than it (one objective)."""
        if len(self.directions) > 1 or self._best is None or not self.plateau():
            return False
        return self._median() - self._best[0][0] <= self.plateau_spread()

    # -- the best, and noise ------------------------------------------------------------

    def _improves(self, genome: Genome, fitness: tuple[float, ...]) -> bool:
        """Whether `fitness` improves on the best found before it (and records it)."""
        if len(self.directions) > 1:
            if any(all(a <= b for a, b in zip(f, fitness, strict=True)) for f, _ in self._front):
                return False
            self._front = [(f, g) for f, g in self._front
                           if not all(a <= b for a, b in zip(fitness, f, strict=True))] + [(fitness, genome)]
            return True
        if self._best is None or fitness < self._best[0]:
            self._best = (fitness, genome)
            return True
        return False

    def _sample(self, genome: Genome, fitness: tuple[float, ...]) -> None:
        samples = self._samples.setdefault(genome, [])
        samples.append(fitness[0])
        if len(samples) == 2 and self.noisy is None:
            self.noisy = samples[0] != samples[1]
            if self.noisy:  # from now on every measurement is pooled, those before too
                self._pooled = PooledScores()
                for measured, values in self._samples.items():
                    for value in values:
                        self._pooled.add(measured, value)
        elif self._pooled is not None:
            self._pooled.add(genome, fitness[0])

    def _to_measure_again(self, size: int) -> list[Genome]:
        """What the next batch measures again: the best once (is it noisy?), then, if so, those nearest it."""
        if not self.remeasure or self._best is None or self.noisy is False:
            return []
        if self.noisy is None:
            return [self._best[1]] if len(self._samples.get(self._best[1], ())) == 1 else []
        out: list[Genome] = []
        last = self._issued + size >= self.config.evaluations or self._generation + 1 >= self.config.generations
        if self._pick is None and last and self._noisy_centre is not None:
            # The last batch: the pick is chosen now and measured afresh; the score reported is of these alone.
            self._pick = self._noisy_centre
            self.results.confirm(canonical_key(self.space.to_params(self._pick)))
            out += [self._pick] * max(1, int(size * CONFIRM_SHARE))
        if self._exhausted:
            # No new configuration competes for the budget any more: what is left to decide is which of the
            # nearest is best, so the batch's rest measures them again, with no limit on repeats.
            return out + self._least_measured(size - len(out), out)
        if self.plateau():
            # The draws need the batch there: a basin is found by them, not by the best's last fraction. But a pit
            # (plateau()) claimed on one lucky measurement would keep the draws there for good: it is measured again.
            pit = self._noisy_centre
            if self._pit and pit is not None and pit != self._pick and len(self._samples[pit]) < MAX_REPEATS:
                out.append(pit)
            return out
        late = self._issued + 2 * size >= self.config.evaluations
        slots = max(1, int(size * (FINAL_REPEAT_SHARE if late else REPEAT_SHARE))) - len(out)
        return out + self._least_measured(slots, out, MAX_REPEATS)

    def _least_measured(self, slots: int, already: list[Genome], cap: float = math.inf) -> list[Genome]:
        """Up to `slots` measurements again, each of the least measured of the configurations judged best (the best
        first among equals; the pick aside: its measurements are the last batch's confirmation), counting those in
        `already` and chosen before it, each kept under `cap` measurements."""
        chosen: list[Genome] = []
        while len(chosen) < slots:
            counted = already + chosen
            open_ = [g for g in self._ranked if g != self._pick and len(self._samples[g]) + counted.count(g) < cap]
            if not open_:
                break
            chosen.append(min(open_, key=lambda g: len(self._samples[g]) + counted.count(g)))
        return chosen

    def describe(self) -> dict[str, Any]:
        """How the slots went: per arm, the slots it was given."""
        return {arm.name: uses for arm, uses in zip(self.arms, self.uses, strict=True)}


def flag_space(space: SearchSpace) -> bool:
    """Whether at least FLAG_SHARE of the space's parameters are flags (one value, or absent): a compiler's flag
    space, where the best is often a move of several flags at once and most failures are pairs of values (a flag
    that crashes with another, a flag with a range too high). Elsewhere failures come of three or more values at once
    (registers times block size over a limit) and a pair would ban good configurations with the bad."""
    params = list(space.values())
    flags = sum(1 for p in params if p.size == 1 and p.can_knockout)
    return bool(params) and flags >= FLAG_SHARE * len(params)


ENGINE_NAME = "ciq_build.portfolio"


@dataclass(frozen=True)
class PortfolioOptions:
    """The portfolio's own options (tune --strategy-option KEY=VALUE; --generations, --pool-size, --mutate-rate
    too). Its arms' shares and the bandit's C and window are constants of ciq_build.search.portfolio and
    ciq_build.search.bandit, chosen on the tuning set."""

    generations: int = strategy_option(4, "batches (generations) of the search")
    pool_size: int = strategy_option(8, "candidates per batch, shared out among the arms")
    mutate_rate: float = strategy_option(0.1, "each gene's chance to mutate in the GA arm")


class PortfolioStrategy:
    """`--strategy portfolio`, for knobs, params and ACF pools: the default there (strategies.default_strategy says
    why)."""

    name = "portfolio"
    spaces = frozenset({GRID})
    takes_seeds = True
    options = PortfolioOptions

    def make(self, request: SearchRequest) -> BatchSource:
        space = as_space(request.space, request.allows)
        # A tune measures its winners again itself (the confirmation), and its journal answers a configuration
        # once: no measurements again inside the search.
        search = PortfolioSearch(None, space, configured(request), seeds=first_pool(space, request.seed_params),
                                 objective_names=list(request.objective_names), progress=False, remeasure=False)
        return BatchSource(search, ENGINE_NAME)
