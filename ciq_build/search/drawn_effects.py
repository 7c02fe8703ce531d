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
from typing import Any

from ciq_build.core.space import Genome

# The ridge's weight, in draws: as ciq_build.search.pooled's PRIOR_MEASUREMENTS.
PRIOR_DRAWS = 1.0
UPPER_Z = 1.645  # the one-sided 95% bound of the explained depth


class DrawnEffects:
    """The draws of one objective (minimised), for the main effects they show. The fit's sums are kept as draws come
    (as ciq_build.search.pooled's), so a fit costs the solve of one small system, not a pass over every draw: at 6,400
    evaluations under noise a fit of every draw each batch was 1.8 ms a candidate (decoy3l), most of the search's time.
    A draw is summed in when a fit first needs it, in the order the draws came (the same sums): only under noise is
    there a fit to make, and summing each draw as it came was 9% of the portfolio's time at 6,400 evaluations without.
    """

    def __init__(self, ordered: list[int]) -> None:
        """`ordered`: each parameter's last grid index where it is ordered with more than two values (its effect
        smooth along it), else 0 (one effect per value)."""
        # numpy imported where used, never kept on the object: a search is deep-copied and pickled (a replay, a
        # resumed tune), and a module is neither; deferred, so `import ciq_build` loads no numpy until a fit needs it.
        self._ordered = ordered
        self._columns: dict[tuple[int, object], int] = {}  # a feature: its column in the sums below
        self._gram: Any = None  # X^T X over the columns seen (None: no draw summed yet)
        self._sums: Any = None  # X^T y
        self._counts: Any = None  # X^T 1
        # each draw's columns, features and value (None until summed in), and the draws not summed in yet, in order
        self._drawn: dict[Genome, tuple[Any, Any, float] | None] = {}
        self._waiting: list[tuple[Genome, float]] = []
        self._total = self._squares = 0.0  # the values' sum and sum of squares

    def __len__(self) -> int:
        return len(self._drawn)

    def add(self, genome: Genome, value: float) -> None:
        """One draw's measurement (a draw is never of a configuration measured before)."""
        self._drawn[genome] = None
        self._waiting.append((genome, value))

    def _sum_in(self) -> None:
        """The draws waiting, summed in in the order they came."""
        import numpy as np

        if self._gram is None:
            self._gram, self._sums, self._counts = np.zeros((0, 0)), np.zeros(0), np.zeros(0)
        waiting, self._waiting = self._waiting, []
        for genome, value in waiting:
            self._sum(genome, value)

    def _sum(self, genome: Genome, value: float) -> None:
        import numpy as np

        features = self._features(genome)
        cells = np.array([self._column(key) for key in features], dtype=np.intp)
        x = np.array(list(features.values()))
        self._gram[np.ix_(cells, cells)] += np.outer(x, x)
        self._sums[cells] += x * value
        self._counts[cells] += x
        self._drawn[genome] = (cells, x, value)
        self._total += value
        self._squares += value * value

    def _column(self, key: tuple[int, object]) -> int:
        column = self._columns.get(key)
        if column is None:
            column = self._columns[key] = len(self._columns)
            if column >= len(self._sums):  # room for twice as many
                import numpy as np

                size = max(16, 2 * column)
                gram, sums, counts = np.zeros((size, size)), np.zeros(size), np.zeros(size)
                gram[:column, :column] = self._gram[:column, :column]
                sums[:column], counts[:column] = self._sums[:column], self._counts[:column]
                self._gram, self._sums, self._counts = gram, sums, counts
        return column

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
        import numpy as np

        self._sum_in()
        p = len(self._columns)
        gram, sums, counts = self._gram[:p, :p].copy(), self._sums[:p].copy(), self._counts[:p].copy()
        n, total, squares = len(self._drawn), self._total, self._squares
        own = self._drawn.get(genome)
        if own is not None:
            cells, x, value = own
            gram[np.ix_(cells, cells)] -= np.outer(x, x)
            sums[cells] -= x * value
            counts[cells] -= x
            n, total, squares = n - 1, total - value, squares - value * value
        level = total / n
        centred = sums - level * counts  # X^T (y - level)
        inverse = np.linalg.inv(gram + PRIOR_DRAWS * np.eye(p))
        effects = inverse @ centred
        # the residuals' sum of squares, from the sums: |y - level|^2 - 2 b.X^T(y - level) + b.X^T X b
        residual = max(squares - n * level * level - 2 * float(effects @ centred) + float(effects @ gram @ effects), 0.0)
        freedom = n - float(np.trace(inverse @ gram)) - 1  # the fit's effective parameters and the mean
        variance = residual / max(freedom, 1.0)
        at = np.zeros(p)
        for key, x in self._features(genome).items():
            if key in self._columns:
                at[self._columns[key]] = x
        weights = inverse @ at  # the prediction at `genome` is weights . X^T (y - level)
        return level, -float(at @ effects), math.sqrt(variance * float(weights @ gram @ weights))

    def pit(self, genome: Genome, judged: float) -> bool:
        """Whether `genome`, judged at `judged`, lies in a pit: below the draws' mean, and their main effects'
        explained depth, even at its upper bound (UPPER_Z standard errors), under half of that depth."""
        level, explained, error = self.explained(genome)
        depth = level - judged
        return depth > 0 and explained + UPPER_Z * error < depth / 2
