"""Repeated runs of a benchmark and their statistics: medians, spreads, interleaving, better beyond the noise.

Deciding that a candidate beats the baseline (`beats_baseline`) takes two
things at once: its median is better by more than the larger of the two
interquartile ranges, AND a one-sided Mann-Whitney U test (exact distribution,
ties included) gives p <= 0.05. With 3 runs a side the exact test can just reach
0.05, so 3 repeats is the least that can ever show an improvement.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ciq_build.core.metric_unit import rate_change, rate_text
from ciq_build.errors import ConfigError
from ciq_build.measure.bench import BenchRun, BenchSpec, run_once
from ciq_build.measure.gpu_slots import GpuSlots

# numpy is imported in the functions that use it: ~0.13 s of CPU at start-up that a command comparing
# no samples (--help, list, show, a static tune) need not pay.
if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class Spread:
    """How far one metric's samples scatter."""

    iqr: float  # interquartile range (75th - 25th percentile, linear interpolation)
    min: float
    max: float


@dataclass(frozen=True)
class Measurement:
    """Repeated runs of one benchmark: medians, spreads, and the first failure if any.

    A candidate fails when any repeat fails; then `metrics` and `spread` are empty
    so a failed candidate's numbers cannot be mistaken for a score.
    """

    metrics: dict[str, float]  # median per metric
    spread: dict[str, Spread]
    runs: tuple[BenchRun, ...]
    failure: BenchRun | None

    @property
    def ok(self) -> bool:
        return self.failure is None and bool(self.runs)

    @property
    def samples(self) -> dict[str, list[float]]:
        """Every run's samples of each metric, in run order (for beats_baseline and the record): a streaming
        run's samples, one value of a run that prints one."""
        return _pooled([run for run in self.runs if run.ok])  # a failed run's numbers are not samples

    @property
    def iqr(self) -> dict[str, float]:
        """The interquartile range of each metric (the pinned record's "spread")."""
        return {name: spread.iqr for name, spread in self.spread.items()}

    @classmethod
    def from_runs(cls, runs: Sequence[BenchRun]) -> Measurement:
        runs = tuple(runs)
        failure = next((run for run in runs if not run.ok), None)
        if failure is not None or not runs:
            return cls({}, {}, runs, failure)
        import numpy as np

        medians: dict[str, float] = {}
        spread: dict[str, Spread] = {}
        for name, pooled in _pooled(runs).items():
            values = np.array(pooled, dtype=float)
            q25, q75 = np.percentile(values, [25, 75])
            medians[name] = float(np.median(values))
            spread[name] = Spread(float(q75 - q25), float(values.min()), float(values.max()))
        return cls(medians, spread, runs, None)


def _pooled(runs: Sequence[BenchRun]) -> dict[str, list[float]]:
    """Each metric's samples over `runs`, in order: the statistics of a measurement use the samples, not one
    number per process, when the benchmark streams them."""
    names = sorted({name for run in runs for name in run.metrics})
    return {name: [value for run in runs for value in run.values(name)] for name in names}


def measure(spec: BenchSpec, repeats: int, *, slots: GpuSlots | None = None) -> Measurement:
    """Run the benchmark `repeats` times; stop at the first failed run (the candidate failed)."""
    if repeats < 1:
        raise ConfigError(f"the number of benchmark repeats must be at least 1, not {repeats}")
    runs: list[BenchRun] = []
    for _ in range(repeats):
        run = run_once(spec, slots=slots)
        runs.append(run)
        if not run.ok:
            break
    return Measurement.from_runs(runs)


def interleaved(
    spec_a: BenchSpec, spec_b: BenchSpec, rounds: int, *, slots: GpuSlots | None = None,
    look: tuple[int, Callable[[Measurement, Measurement], bool]] | None = None,
) -> tuple[Measurement, Measurement]:
    """Measure A and B alternately, so clock and thermal drift hits both alike.

    Rounds alternate which goes first (A B, B A, A B, ...): with plain A B A B a
    steady drift would always favour A by one run. A side that fails stops being
    run; the other goes on. `look` = (k, decided): after k rounds, the rounds end
    there when `decided` says the measurements so far settle the question.
    """
    if rounds < 1:
        raise ConfigError(f"the number of interleaved rounds must be at least 1, not {rounds}")
    runs: dict[str, list[BenchRun]] = {"a": [], "b": []}
    specs = {"a": spec_a, "b": spec_b}
    for index in range(rounds):
        for side in ("a", "b") if index % 2 == 0 else ("b", "a"):
            done = runs[side]
            if done and not done[-1].ok:
                continue
            done.append(run_once(specs[side], slots=slots))
        if look is not None and index + 1 == look[0] < rounds and look[1](
                Measurement.from_runs(runs["a"]), Measurement.from_runs(runs["b"])):
            break
    return Measurement.from_runs(runs["a"]), Measurement.from_runs(runs["b"])


# -- better beyond the noise -----------------------------------------------------------


# The re-measure before a pin looks at its samples twice: half-way (or, with 6 to 9 rounds, after 5: see
# interim_look), where it ends if the winner is already better at a strict level, and at the end. The levels
# are O'Brien-Fleming-type boundaries for two equally spaced looks (Lan-DeMets spending, one-sided): together
# they keep the chance of pinning a candidate no better than the defaults at about the 5% of a single look
# (a later look is spent at no more than this), while a clear winner (0.41x and 0.87x of the defaults' time
# on the H200) is settled in half the runs. 5 against 5 samples can reach p = 1/252 = 0.004.
# bench/interim_look/run.py, 2,000 trials a row, 2% noise: no better than the defaults, pinned 2.9% (6 rounds,
# a look after 5) and 1.1% (10 rounds) against 2.7% and 0.9% for one look at the end; a 10% gain ends at
# the look in 99.5-99.7%, so 0.83x and 0.50x of the runs.
INTERIM_ALPHA = 0.005
FINAL_ALPHA = 0.048


@dataclass(frozen=True)
class Verdict:
    """Whether a candidate beats the baseline, and why."""

    better: bool
    ratio: float  # candidate median / baseline median
    noise: float  # the larger IQR, as a fraction of the baseline median
    explanation: str
    p_value: float = 1.0  # one-sided Mann-Whitney U


def beats_baseline(
    baseline_samples: Sequence[float],
    candidate_samples: Sequence[float],
    direction: Literal["min", "max"],
    *,
    alpha: float = 0.05,
    rate_unit: str = "",
) -> Verdict:
    """Is the candidate better than the baseline beyond the measured noise?

    Better means both: (1) its median beats the baseline's median, in `direction`,
    by more than the larger of the two interquartile ranges, and (2) a one-sided
    Mann-Whitney U test says the candidate's samples are better with p <= alpha
    (exact null distribution with mid-ranks for ties). Non-finite samples are
    dropped first. With `rate_unit` (the samples are a rate's milliseconds per unit of work:
    ciq_build.core.metric_unit), the explanation shows the medians as the rates the benchmark printed.
    """
    if direction not in ("min", "max"):
        raise ConfigError(f"an objective's direction is 'min' or 'max', not {direction!r}")
    import numpy as np

    base = np.array([x for x in baseline_samples if _finite(x)], dtype=float)
    cand = np.array([x for x in candidate_samples if _finite(x)], dtype=float)
    if base.size == 0 or cand.size == 0:
        return Verdict(False, math.nan, math.nan, "no finite samples to compare")
    base_median, cand_median = float(np.median(base)), float(np.median(cand))
    noise = max(_iqr(base), _iqr(cand))
    gain = base_median - cand_median if direction == "min" else cand_median - base_median
    ratio = _ratio(cand_median, base_median)
    relative_noise = _ratio(noise, abs(base_median)) if noise else 0.0
    sign = -1.0 if direction == "min" else 1.0  # the test asks "are candidate values larger"
    p_value = _mann_whitney_greater(sign * cand, sign * base)
    beyond_noise = gain > noise
    significant = p_value <= alpha * (1 + 1e-9)  # exact p can equal alpha (3 vs 3: 1/20)
    better = beyond_noise and significant
    if rate_unit and base_median > 0 and cand_median > 0:
        summary = (f"median {rate_text(cand_median, rate_unit)} vs baseline {rate_text(base_median, rate_unit)} "
                   f"(time ratio {ratio:.4g}, i.e. {rate_change(base_median, cand_median, rate_unit)}), "
                   f"noise (larger IQR) {relative_noise:.1%} of the baseline")
    else:
        summary = (f"median {cand_median:.6g} vs baseline {base_median:.6g} (ratio {ratio:.4g}, {direction} is better), "
                   f"noise (larger IQR) {noise:.3g}")
    summary += f", p={p_value:.3g} with {cand.size} vs {base.size} samples"
    if better:
        reason = "better beyond the noise"
    elif gain <= 0:
        reason = "not better"
    elif not beyond_noise:
        reason = "the gain is within the noise"
    else:
        reason = f"not significant at {1 - alpha:.0%}" + (
            " (too few samples for the test to ever pass)" if min_p(cand.size, base.size) > alpha else ""
        )
    return Verdict(better, ratio, relative_noise, f"{reason}: {summary}", p_value)


def _finite(value: Any) -> bool:
    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def _iqr(values: np.ndarray) -> float:
    import numpy as np

    q25, q75 = np.percentile(values, [25, 75])
    return float(q75 - q25)


def _ratio(numerator: float, denominator: float) -> float:
    if denominator == 0:
        return 1.0 if numerator == 0 else math.copysign(math.inf, numerator)
    return numerator / denominator


def min_p(m: int, n: int) -> float:
    """The smallest p the exact test can give with m and n samples: 1 / C(m+n, m)."""
    return 1.0 / math.comb(m + n, m)


def interim_look(rounds: int) -> int | None:
    """After how many of `rounds` interleaved rounds the re-measure looks: half-way, or the first round after
    it at which one sample a side a round can pass INTERIM_ALPHA at all (5 a side: p = 1/252), so that the
    common 6 to 9 rounds (`--repeats` 3 and 4) get a look too; None where no round before the last can.
    A later look spends no more than one half-way: the same two levels bound the chance of a false pin."""
    for looked in range(max(1, rounds // 2), rounds):
        if min_p(looked, looked) <= INTERIM_ALPHA:
            return looked
    return None


# The most pooled samples the exact test counts: its table grows as the cube of them (100 took 1.5 s and 400
# 17 s per call here, once streaming benchmarks gave each side hundreds of samples), and from about 20 a
# side the normal approximation is within a few percent of the exact p.
EXACT_POOLED = 60


def _mann_whitney_greater(x: np.ndarray, y: np.ndarray) -> float:
    """One-sided p-value that `x` tends to be larger than `y` (Mann-Whitney U, mid-ranks).

    Exact: the null distribution of x's rank sum over every way to pick len(x) of
    the pooled mid-ranks, counted with a 0/1 knapsack on doubled (integer) ranks.
    Beyond EXACT_POOLED samples, the normal approximation with tie correction.
    """
    import numpy as np

    m, n = x.size, y.size
    pooled = np.concatenate([x, y])
    total = m + n
    ranks2 = _doubled_midranks(pooled)  # integers: 2 * mid-rank
    observed = int(ranks2[:m].sum())
    if total > EXACT_POOLED:
        mean = m * (total + 1) / 2
        _, counts = np.unique(pooled, return_counts=True)
        ties = float(np.sum(counts.astype(float) ** 3 - counts))
        variance = m * n / 12 * ((total + 1) - ties / (total * (total - 1)))
        if variance <= 0:
            return 1.0
        z = (observed / 2 - mean - 0.5) / math.sqrt(variance)  # continuity correction
        return 0.5 * math.erfc(z / math.sqrt(2))
    size = int(ranks2.sum()) + 1
    ways = np.zeros((m + 1, size), dtype=float)  # ways[k, s]: picks of k ranks summing to s
    ways[0, 0] = 1.0
    for value in ranks2.tolist():
        for k in range(m, 0, -1):  # downwards: each rank is used at most once
            ways[k, value:] += ways[k - 1, : size - value]
    distribution = ways[m]
    return float(min(1.0, distribution[observed:].sum() / distribution.sum()))


def _doubled_midranks(values: np.ndarray) -> np.ndarray:
    import numpy as np

    order = np.argsort(values, kind="mergesort")
    sorted_values = values[order]
    ranks2 = np.empty(values.size, dtype=np.int64)
    start = 0
    while start < values.size:
        end = start
        while end + 1 < values.size and sorted_values[end + 1] == sorted_values[start]:
            end += 1
        # Positions start..end (0-based) share the mean of ranks start+1..end+1.
        ranks2[order[start : end + 1]] = start + end + 2
        start = end + 1
    return ranks2

