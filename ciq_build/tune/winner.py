"""Which evaluated candidate to pin: a Pareto point, among those that beat the baseline everywhere if any do."""

from __future__ import annotations

from collections.abc import Sequence

from ciq_build.compiler.occupancy import allocated_registers
from ciq_build.core.objectives import Objective
from ciq_build.core.pareto import dominates, non_dominated
from ciq_build.search.evaluation import Evaluation


def pick_winner(evaluations: Sequence[Evaluation], baseline: Evaluation, objectives: Sequence[Objective],
                rule: str) -> Evaluation | None:
    """The Pareto point to pin; among the points that beat the defaults on every objective, if any do."""
    ok = [e for e in evaluations if e.ok and e.scores is not None]
    # A raced-out candidate (fewer runs, dropped as behind) never wins over a fully measured one.
    ok = [e for e in ok if not e.raced] or ok
    if not ok:
        return None
    directions = [o.direction for o in objectives]
    front = [ok[i] for i in non_dominated([_scores(e) for e in ok], directions)]
    return pick_pinned(front, baseline.scores, objectives, rule)


def pick_pinned(front: Sequence[Evaluation], baseline: Sequence[float] | None, objectives: Sequence[Objective],
                rule: str) -> Evaluation:
    """The point of a Pareto front a tune pins: the rule's among the points that beat the defaults' scores
    (`baseline`, `beats_defaults`), if any do, else among them all. The progress line's best is this point of
    the front so far (ciq_build.tune.loop.RunningBest)."""
    dominating = [e for e in front if baseline is not None and beats_defaults(_scores(e), baseline, objectives)]
    return pick_from_front(fewest_spills_first(dominating or front), [o.direction for o in objectives], rule)


def fewest_spills_first(front: Sequence[Evaluation]) -> list[Evaluation]:
    """`front` with the points that spill fewer bytes first, else in their order: of points tied on every objective,
    the pin is the first of them, so the one that spills least (GPUSorting's binning kernels at 512 threads, tuned
    for occupancy alone: caps 48, 56 and 64 all gave 2 blocks an SM, spilling 2464, 1572 and 848 bytes, and the
    first evaluated, 56, was pinned). A point without the figure (no ptxas report read) counts as 0."""
    return sorted(front, key=lambda e: e.metrics.get("spill_bytes", 0.0))


def beats_defaults(scores: Sequence[float], baseline: Sequence[float], objectives: Sequence[Objective]) -> bool:
    """Whether `scores` beat the defaults' `baseline`: no worse on every objective and better on one, registers counted
    as the SM allocates them (8 a thread at a time: llm.c's layernorm kernel went from 23 to 22, both 24, and a
    flag was pinned for a change no block size can see)."""
    return dominates(as_allocated(scores, objectives), as_allocated(baseline, objectives),
                     [o.direction for o in objectives])


def as_allocated(scores: Sequence[float], objectives: Sequence[Objective]) -> tuple[float, ...]:
    """`scores` with each registers objective's figure as the SM allocates it (ciq_build.compiler.occupancy)."""
    return tuple(float(allocated_registers(int(value))) if o.kind is not None and o.kind.name == "registers"
                 else value for o, value in zip(objectives, scores))


def pick_from_front(front: Sequence[Evaluation], directions: Sequence[str], rule: str) -> Evaluation:
    """Which Pareto point to pin: `first` = best on the first objective; `knee` = closest to the ideal point."""
    if len(front) == 1 or rule == "first":
        sign = 1.0 if directions[0] == "min" else -1.0
        return min(front, key=lambda e: tuple(sign * s for s in _scores(e)))
    columns = list(zip(*[_scores(e) for e in front]))
    normalised = []
    for e in front:
        distance = 0.0
        for i, value in enumerate(_scores(e)):
            low, high = min(columns[i]), max(columns[i])
            span = (high - low) or 1.0
            gap = (value - low) / span if directions[i] == "min" else (high - value) / span
            distance += gap * gap
        normalised.append(distance)
    return front[normalised.index(min(normalised))]


def _scores(evaluated: Evaluation) -> tuple[float, ...]:
    assert evaluated.scores is not None, "only scored evaluations are on a front"
    return evaluated.scores
