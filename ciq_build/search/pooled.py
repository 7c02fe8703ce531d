"""Noisy scores pooled across configurations: what each measured configuration's true score likely is.

A configuration's own mean over a few measurements is a poor guide where the
noise is as large as the differences sought (1.5% noise, configurations 0.3%
apart: eight measurements of each still leave a standard error of 0.5%). But
every measurement also says something about the values it was measured with:
a knob's value that helps, helps in most configurations that carry it. So
each configuration's score is estimated in two parts (empirical Bayes, as a
linear mixed model would):

* an additive model of the parameters' values (each value of each parameter,
  or its absence, one effect), fitted by ridge regression to every
  measurement -- hundreds of measurements per effect, not a handful;
* the configuration's own departure from that model (an interaction the model
  cannot hold), shrunk toward zero by how much its own measurements can be
  trusted: by tau^2 / (tau^2 + s^2 / n), where s is the noise of one
  measurement, n its measurements and tau the spread of the departures that
  the noise does not explain.

Where the landscape is additive, configurations are judged by the model (tau
near 0); where it is not, by their own means, as before. The fit's sums are
kept as measurements come (a value's columns only, a measurement at a time), so
a fit costs the solve of one small system per batch, not a pass over the
history. Read by the portfolio (ciq_build.search.portfolio) only once scores
are known to be noisy.
"""

from __future__ import annotations

from typing import Any

from ciq_build.core.space import Genome

# The ridge's weight, in measurements: each effect starts as if measured once at the mean (no effect). It keeps a
# value seen in one or two configurations from explaining their luck, and the fit defined while there are fewer
# configurations than effects.
PRIOR_MEASUREMENTS = 1.0


class PooledScores:
    """Measurements of one objective (minimised), each configuration's estimate pooled across all of them."""

    def __init__(self) -> None:
        import numpy as np  # only a noisy search needs it

        self._np = np
        self._columns: dict[tuple[int, int | None], int] = {}  # a parameter's value (or absence): its effect
        self._gram: Any = np.zeros((0, 0))  # the measurements' design, X^T X, over the columns seen
        self._sums: Any = np.zeros(0)  # X^T y
        self._rows: dict[Genome, int] = {}  # each configuration's row below
        self._genomes: list[Genome] = []
        self._cells: Any = np.zeros((0, 0), dtype=np.intp)  # each configuration's columns, rows to spare
        self._count: list[int] = []
        self._total: list[float] = []
        self._squares: list[float] = []

    def add(self, genome: Genome, value: float) -> None:
        """One measurement of `genome`."""
        np = self._np
        row = self._rows.get(genome)
        if row is None:
            row = self._rows[genome] = len(self._genomes)
            self._genomes.append(genome)
            if row >= len(self._cells):
                grown = np.zeros((max(64, 2 * row), len(genome)), dtype=np.intp)
                if row:
                    grown[:row] = self._cells[:row]
                self._cells = grown
            self._cells[row] = [self._column(key) for key in enumerate(genome)]
            self._count.append(0)
            self._total.append(0.0)
            self._squares.append(0.0)
        self._count[row] += 1
        self._total[row] += value
        self._squares[row] += value * value
        cells = self._cells[row]
        self._gram[np.ix_(cells, cells)] += 1.0
        self._sums[cells] += value

    def _column(self, key: tuple[int, int | None]) -> int:
        column = self._columns.get(key)
        if column is None:
            column = self._columns[key] = len(self._columns)
            if column >= len(self._sums):  # room for twice as many
                np = self._np
                size = max(16, 2 * column)
                gram, sums = np.zeros((size, size)), np.zeros(size)
                gram[:column, :column] = self._gram[:column, :column]
                sums[:column] = self._sums[:column]
                self._gram, self._sums = gram, sums
        return column

    def lowest(self, k: int) -> list[Genome]:
        """The `k` measured configurations judged best, best first: by their estimated true score plus its standard
        error (a pessimistic bound: one lucky run is not enough to lead)."""
        np = self._np
        if not self._genomes:
            return []
        judged = self._judged()
        k = min(k, len(judged))
        first = np.argpartition(judged, k - 1)[:k]
        return [self._genomes[r] for r in first[np.argsort(judged[first], kind="stable")]]

    def judged(self, genome: Genome) -> float:
        """`genome`'s estimated true score plus its standard error, as lowest() judges it (measured before)."""
        return float(self._judged()[self._rows[genome]])

    def _judged(self) -> Any:
        np = self._np
        p = len(self._columns)
        counts, totals = np.array(self._count, dtype=float), np.array(self._total)
        means = totals / counts
        # The noise of one measurement: the pooled standard deviation of the repeats (as results.noise_bound)
        freedom = counts.sum() - len(counts)
        squares = np.maximum(np.array(self._squares) - totals * means, 0.0).sum()
        noise = float(np.sqrt(squares / freedom)) if freedom > 0 else 0.0
        level = totals.sum() / counts.sum()
        gram = self._gram[:p, :p]
        # Centred on the mean level: X^T (y - level), the column's measurements (its diagonal) times the level.
        effects = np.linalg.solve(gram + PRIOR_MEASUREMENTS * np.eye(p), self._sums[:p] - level * np.diag(gram))
        predicted = level + effects[self._cells[:len(self._genomes)]].sum(axis=1)
        departure = means - predicted
        own_variance = noise**2 / counts  # of each configuration's mean
        tau2 = max(0.0, float(np.mean(departure**2 - own_variance)))
        trust = tau2 / (tau2 + own_variance) if tau2 > 0 else np.zeros_like(counts)
        estimate = predicted + trust * departure
        return estimate + np.sqrt(trust * own_variance)  # tau^2 s^2/n / (tau^2 + s^2/n): the model's error left out
