"""The table of evaluations a search made: best and Pareto front.

It holds the one evaluation record (ciq_build.search.evaluation); what a tune
keeps on disk is its journal (ciq_build.state.journal).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace

from ciq_build.core.causes import Cause
from ciq_build.core.pareto import Direction, minimised, non_dominated
from ciq_build.errors import ConfigError
from ciq_build.search.evaluation import Evaluation

__all__ = [
    "Direction",
    "Evaluation",
    "Results",
]


class Results:
    """Every evaluation of a search, in the order they were told."""

    def __init__(
        self,
        directions: Sequence[Direction] = ("min",),
        evaluations: Iterable[Evaluation] = (),
        objective_names: Sequence[str] | None = None,
    ):
        directions = tuple(directions)
        if not directions or any(d not in ("min", "max") for d in directions):
            raise ConfigError(f'directions must be a non-empty list of "min"/"max", got {directions!r}')
        self.directions: tuple[Direction, ...] = directions
        names = tuple(objective_names) if objective_names else tuple(
            f"score_{i + 1}" for i in range(len(directions))
        )
        if len(names) != len(directions):
            raise ConfigError(f"{len(names)} objective names for {len(directions)} objectives")
        self.objective_names = names
        self._evaluations: list[Evaluation] = []
        self._failures = 0  # counted as they come: a progress line reads it every batch
        self._confirmed: tuple[str, int] | None = None  # the search's pick and where its fresh measurements start
        for evaluation in evaluations:
            self.add(evaluation)

    @property
    def num_objectives(self) -> int:
        return len(self.directions)

    def add(self, evaluation: Evaluation) -> None:
        if evaluation.ok and (evaluation.scores is None or len(evaluation.scores) != self.num_objectives):
            raise ConfigError(
                f"evaluation {evaluation.id} is ok but has scores {evaluation.scores!r}; "
                f"expected {self.num_objectives} numbers"
            )
        self._evaluations.append(evaluation)
        self._failures += not evaluation.ok

    def __len__(self) -> int:
        return len(self._evaluations)

    def __iter__(self) -> Iterator[Evaluation]:
        return iter(self._evaluations)

    def get_results(self, cause: Cause | None = None) -> list[Evaluation]:
        """All evaluations (or those that failed for `cause`), in the order they were told."""
        return [e for e in self._evaluations if cause is None or e.cause == cause]

    @property
    def failures(self) -> int:
        return self._failures

    def get_best_result(self) -> Evaluation | None:
        """The best ok evaluation; None if there is none.

        With several objectives "best" is lexicographic in objective order (the
        first objective decides, the next breaks ties); use :meth:`pareto_front`
        for the trade-offs. Ties keep the earliest evaluation.

        With one objective and a configuration measured more than once (the
        portfolio search does where scores are noisy), configurations are
        judged by the mean of their measurements plus its standard error, and
        the best is its first evaluation carrying that mean as its score: one
        lucky measurement does not lead, and the score reported is the
        re-measured one. Where the search confirmed its pick (:meth:`confirm`),
        the best is that pick and its score the mean of the measurements taken
        after it was chosen: the measurements it was chosen by favour it
        (the winner's curse), fresh ones do not.
        """
        if self._confirmed is not None:
            key, since = self._confirmed
            fresh = [e.scores[0] for e in self._evaluations[since:] if e.ok and e.scores is not None and e.key == key]
            if fresh:
                first = next(e for e in self._evaluations if e.ok and e.key == key)
                return replace(first, scores=(sum(fresh) / len(fresh),))
        if len(self.directions) == 1:
            repeated = self._by_configuration()
            if any(len(scores) > 1 for _, scores in repeated.values()):
                return self._best_of_repeats(repeated)
        best: Evaluation | None = None
        best_scores: tuple[float, ...] = ()
        for e in self._evaluations:
            if e.scores is None or not e.ok:
                continue
            if best is None or minimised(e.scores, self.directions) < minimised(best_scores, self.directions):
                best, best_scores = e, e.scores
        return best

    def confirm(self, key: str) -> None:
        """The configuration `key` is the search's pick (one objective): from now on it is the best, scored by the
        mean of the measurements told after this call (until there are some, the best is chosen as usual)."""
        self._confirmed = (key, len(self._evaluations))

    def pareto_front(self) -> list[Evaluation]:
        """The ok evaluations that no other ok evaluation dominates, under each objective's direction: each
        configuration once (its first such evaluation), however often it was measured."""
        ok = [(e, e.scores) for e in self._evaluations if e.ok and e.scores is not None]
        keep = non_dominated([scores for _, scores in ok], self.directions)
        front: dict[str, Evaluation] = {}
        for i in keep:
            front.setdefault(ok[i][0].key, ok[i][0])
        return list(front.values())

    def _by_configuration(self) -> dict[str, tuple[Evaluation, list[float]]]:
        out: dict[str, tuple[Evaluation, list[float]]] = {}
        for e in self._evaluations:
            if e.ok and e.scores is not None:
                out.setdefault(e.key, (e, []))[1].append(e.scores[0])
        return out

    def _best_of_repeats(self, repeated: dict[str, tuple[Evaluation, list[float]]]) -> Evaluation:
        sign = 1.0 if self.directions[0] == "min" else -1.0
        spread = noise_bound([[sign * s for s in scores] for _, scores in repeated.values()])

        def bound(scores: list[float]) -> float:
            return sign * sum(scores) / len(scores) + spread / math.sqrt(len(scores))

        first, scores = min(repeated.values(), key=lambda item: bound(item[1]))
        return replace(first, scores=(sum(scores) / len(scores),))


def noise_bound(samples: Iterable[Sequence[float]]) -> float:
    """The pooled standard deviation of repeated measurements (0 where nothing was measured twice)."""
    squares, freedom = 0.0, 0
    for values in samples:
        if len(values) > 1:
            mean = sum(values) / len(values)
            squares += sum((v - mean) ** 2 for v in values)
            freedom += len(values) - 1
    return math.sqrt(squares / freedom) if freedom else 0.0
