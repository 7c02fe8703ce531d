"""Two-sided tests for comparing two engines over the same seeds: hit shares (Fisher) and results (Mann-Whitney)."""

from __future__ import annotations

import math
from collections.abc import Sequence


def fisher_exact(hits_a: int, n_a: int, hits_b: int, n_b: int) -> float:
    """The two-sided p-value of Fisher's exact test on a 2x2 table (hits and misses of two engines)."""
    total, hits = n_a + n_b, hits_a + hits_b

    def probability(k: int) -> float:  # k of the hits fall to engine a
        return math.comb(hits, k) * math.comb(total - hits, n_a - k) / math.comb(total, n_a)

    observed = probability(hits_a)
    low, high = max(0, hits - n_b), min(hits, n_a)
    return min(1.0, sum(p for k in range(low, high + 1) if (p := probability(k)) <= observed * (1 + 1e-9)))


def mann_whitney(a: Sequence[float], b: Sequence[float]) -> float:
    """The two-sided p-value of the Mann-Whitney U test (normal approximation, corrected for ties)."""
    pooled = sorted((value, side) for side, values in enumerate((a, b)) for value in values)
    ranks: list[float] = [0.0] * len(pooled)
    ties = 0.0
    i = 0
    while i < len(pooled):
        j = i
        while j + 1 < len(pooled) and pooled[j + 1][0] == pooled[i][0]:
            j += 1
        for k in range(i, j + 1):
            ranks[k] = (i + j) / 2 + 1
        t = j - i + 1
        ties += t**3 - t
        i = j + 1
    n_a, n_b = len(a), len(b)
    n = n_a + n_b
    u = sum(r for r, (_, side) in zip(ranks, pooled, strict=True) if side == 0) - n_a * (n_a + 1) / 2
    variance = n_a * n_b / 12 * ((n + 1) - ties / (n * (n - 1)))
    if variance <= 0:
        return 1.0
    z = (abs(u - n_a * n_b / 2) - 0.5) / math.sqrt(variance)
    return min(1.0, math.erfc(max(z, 0.0) / math.sqrt(2)))


def median_interval(values: Sequence[float], level: float = 0.95) -> tuple[float, float]:
    """A distribution-free confidence interval for the median: the order statistics the binomial(n, 1/2) bounds."""
    ordered = sorted(values)
    n = len(ordered)
    cumulative = [sum(math.comb(n, i) for i in range(k + 1)) / 2**n for k in range(n + 1)]
    low = max([k for k in range(n) if cumulative[k] <= (1 - level) / 2] or [0])  # P(B <= low) <= (1 - level)/2
    return ordered[min(low, n - 1)], ordered[max(0, n - 1 - low)]
