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



def mean_interval(values: Sequence[float], z: float = 1.96) -> tuple[float, float]:
    """The normal-approximation 95% confidence interval of the mean of `values` (at least two)."""
    n = len(values)
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    return mean - z * sd / math.sqrt(n), mean + z * sd / math.sqrt(n)
