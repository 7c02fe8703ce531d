"""What the draws' main effects say of the best: whether it lies in a pit that only its values together make.

A plateau with a pit (a decoy, a basin) is a landscape where the portfolio's draws
should have most of the budget (ciq_build.search.portfolio): what the best has
found may be a decoy, and only draws find the basin. Without noise the draws
show it by scoring alike. Under noise they do not: noise spreads the draws
from a plateau as widely as a noisy knob space's own shape spreads its draws.
What still tells them apart is why the best is good. On knobs the best is
where good values of each parameter meet, so the parameters' main effects,
estimated from uniform draws, predict most of its depth below the draws'
mean; in a pit the values are good only together, which no main effect
holds, so they predict little of it.

The model: an additive one fitted to the draws alone (the arms that crowd the
best would make the best's own values look good wherever it lies), smooth
along a range or another ordered grid of more than two values (a straight
line and a parabola in its position: a pit's few values close together are
not a trend, a knob's trend is, and 24 values' effects from two draws each
are too uncertain to tell either) and one effect per value elsewhere (a
choice's values, or a parameter's absence), ridge-weighted like
ciq_build.search.pooled's. The depth it explains is uncertain by how well the
draws pin the effects down, which the fit gives: a pit is claimed only where
even the explained depth's one-sided 95% upper bound is under half the depth.
Chosen on read sets (docs/results/search-quality-drawn-effects-choosing.txt,
50 seeds): held-out-20's decoy3l (a 3% decoy under 0.8% noise) found 34 ->
68% (random search 76%), the other noisy decoys +0 to +6 seeds, eighteen
noisy knob spaces -4 seeds in all (none more than 2).
"""

from __future__ import annotations

import math

from ciq_build.core.space import Genome

# The ridge's weight, in draws: as ciq_build.search.pooled's PRIOR_MEASUREMENTS.
PRIOR_DRAWS = 1.0
UPPER_Z = 1.645  # the one-sided 95% bound of the explained depth


class DrawnEffects:
    """The draws of one objective (minimised), for the main effects they show."""

    def __init__(self, ordered: list[int]) -> None:
        """`ordered`: each parameter's last grid index where it is ordered with more than two values (its effect
        smooth along it), else 0 (one effect per value)."""
        self._ordered = ordered
        self._genomes: list[Genome] = []
        self._values: list[float] = []

    def __len__(self) -> int:
        return len(self._genomes)

    def add(self, genome: Genome, value: float) -> None:
        """One draw's measurement."""
        self._genomes.append(genome)
        self._values.append(value)

    def _features(self, genome: Genome) -> dict[tuple[int, object], float]:
        out: dict[tuple[int, object], float] = {}
        for index, (gene, last) in enumerate(zip(genome, self._ordered, strict=True)):
            if last and gene is not None:
                position = 2 * gene / last - 1
                out[index, "line"], out[index, "parabola"] = position, position * position - 1 / 3
            else:
                out[index, gene] = 1.0
        return out

    def explained(self, genome: Genome) -> tuple[float, float, float]:
        """(the draws' mean, how far below it their main effects put `genome`, that depth's standard error), fitted
        without `genome`'s own draw, whose luck would otherwise count as its values' effect."""
        import numpy as np  # only a noisy search asks

        rows = [(self._features(g), v) for g, v in zip(self._genomes, self._values, strict=True) if g != genome]
        columns: dict[tuple[int, object], int] = {}
        for features, _ in rows:
            for key in features:
                columns.setdefault(key, len(columns))
        design = np.zeros((len(rows), len(columns)))
        for row, (features, _) in enumerate(rows):
            for key, x in features.items():
                design[row, columns[key]] = x
        y = np.array([v for _, v in rows])
        level = float(y.mean())
        gram = design.T @ design
        inverse = np.linalg.inv(gram + PRIOR_DRAWS * np.eye(len(columns)))
        effects = inverse @ design.T @ (y - level)
        residual = y - level - design @ effects
        freedom = len(y) - float(np.trace(inverse @ gram)) - 1  # the fit's effective parameters and the mean
        variance = float(residual @ residual) / max(freedom, 1.0)
        at = np.zeros(len(columns))
        for key, x in self._features(genome).items():
            if key in columns:
                at[columns[key]] = x
        weights = inverse @ at  # the prediction at `genome` is weights . X^T (y - level)
        return level, -float(at @ effects), math.sqrt(variance * float(weights @ gram @ weights))

    def pit(self, genome: Genome, judged: float) -> bool:
        """Whether `genome`, judged at `judged`, lies in a pit: below the draws' mean, and their main effects'
        explained depth, even at its upper bound (UPPER_Z standard errors), under half of that depth."""
        level, explained, error = self.explained(genome)
        depth = level - judged
        return depth > 0 and explained + UPPER_Z * error < depth / 2
