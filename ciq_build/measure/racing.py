"""Racing: stop benchmarking a candidate as soon as it is clearly behind, spend the full repeats on contenders.

Most candidates of a search are far behind the best one (20-160% slower on a
GEMM's random ACFs), yet each used to get every ``--repeats`` run. Here a
candidate is run once, then again, and after each run the rule below may drop
it; only a candidate it never drops gets all its repeats.

The rule (one-sided, sequential). The incumbent is the best fully measured
candidate so far, the baseline at first: its median ``m`` and spread ``s``
(its interquartile range, at least ``FLOOR`` = 1% of ``m``, because an IQR of a
few runs can be ~0). After each run of a candidate, with ``b`` its best run so
far (the fastest, for a ``min`` objective), it is dropped when

    b > m + K * s        (K = 3; mirrored for ``max``)

Why this is safe: a candidate is only worth more runs if its median may beat
``m``. Its best run is an optimistic estimate of its median (each run is below
its median with probability 1/2, so the best of r is below with 1 - 2^-r), and
slow outliers (a preempted GPU, a clock dip) only make other runs slower, never
the best one. So a candidate whose median really is at or below ``m`` is dropped
only when *every* one of its runs lands more than K spreads above ``m``: for
Gaussian noise (IQR = 1.35 sigma) that is 4 sigma, p < 4e-5 for one run, and
less after more. The floor keeps a lucky, tight incumbent from making ordinary
noise look like a loss. What it costs: a candidate whose median is within
``K * s`` of the incumbent gets all its repeats (it may win); one clearly
behind gets 1.

A benchmark that streams its repetitions' samples (CIQ_SAMPLES, ciq_build.measure.protocol) is raced
sample by sample, as its stdout comes: after each new sample the same rule looks at the candidate's
samples so far (its earlier runs' and this run's), and a candidate that is behind is killed there, in
the middle of its process, not after it. The rule's best value is then its best sample; a run's first
samples are often a cold start (caches, clocks ramping up), which only makes them slower, but one cold
sample alone must not decide: a run is stopped only once it has given MIN_STREAMED samples, unless
earlier runs gave samples too. The samples of every run count in the candidate's statistics.

The mirror rule, for a candidate clearly ahead: a measurement of ``repeats`` runs is there to place a
candidate against the others, and one far ahead of the incumbent is placed already. After a run, a
candidate is placed (measured enough, not raced: it may win and becomes the incumbent) when it has
given at least ``repeats`` samples, more than its runs (a benchmark that streams), and its upper
quartile is ahead of the incumbent's median by the same margin:

    q75 < m - K * s        (mirrored for ``max``)

The upper quartile is a pessimistic estimate of its median, and a cold first repetition or an outlier
moves it no more than one sample. A benchmark that prints one number a run never has more samples
than runs, so every candidate it measures gets all its repeats, as before: this needs the samples a
streaming run gives within one process. The baseline, the first incumbent, is always measured in full.

Nothing raced out is pinned over a fully measured candidate
(ciq_build.tune.winner), and the winner is re-measured against the baseline,
interleaved, before a pin (ciq_build.tune.confirm) whatever racing decided.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from ciq_build.measure.bench import BenchRun, BenchSpec, run_once
from ciq_build.measure.stats import Measurement

K = 3.0  # spreads behind the incumbent's median that drop a candidate
FLOOR = 0.01  # the least spread, as a fraction of the incumbent's median
MIN_STREAMED = 3  # samples a candidate's first streaming run gives before it may be stopped mid-run


@dataclass(frozen=True)
class Incumbent:
    """What a candidate races against: a fully measured candidate's median and spread on the raced metric."""

    median: float
    spread: float  # interquartile range of its runs

    @classmethod
    def from_samples(cls, samples: Sequence[float]) -> Incumbent:
        import numpy as np  # deferred, as in measure/stats.py

        values = np.asarray(samples, dtype=float)
        q25, q75 = np.percentile(values, [25, 75])
        return cls(float(np.median(values)), float(q75 - q25))

    def margin(self, k: float = K, floor: float = FLOOR) -> float:
        """How far behind the median a candidate's best run may be and still go on."""
        return k * max(self.spread, floor * abs(self.median))


def behind(incumbent: Incumbent, samples: Sequence[float], direction: Literal["min", "max"], *,
           k: float = K, floor: float = FLOOR) -> bool:
    """Whether a candidate with these runs so far is out of the race (see the module docstring)."""
    if not samples:
        return False
    if direction == "min":
        return min(samples) > incumbent.median + incumbent.margin(k, floor)
    return max(samples) < incumbent.median - incumbent.margin(k, floor)


def ahead(incumbent: Incumbent, samples: Sequence[float], direction: Literal["min", "max"], *,
          k: float = K, floor: float = FLOOR) -> bool:
    """Whether a candidate with these samples so far is placed already, far ahead of the incumbent (see the
    module docstring): its pessimistic quartile beats the incumbent's median by the margin."""
    if not samples:
        return False
    import numpy as np

    if direction == "min":
        return float(np.percentile(samples, 75)) < incumbent.median - incumbent.margin(k, floor)
    return float(np.percentile(samples, 25)) > incumbent.median + incumbent.margin(k, floor)


class RaceBoard:
    """The incumbent of one tune's race on one metric, shared by the worker threads."""

    def __init__(self, metric: str, direction: Literal["min", "max"]) -> None:
        self.metric = metric
        self.direction = direction
        self._incumbent: Incumbent | None = None
        self._lock = threading.Lock()

    @property
    def incumbent(self) -> Incumbent | None:
        with self._lock:
            return self._incumbent

    def offer(self, offered: Incumbent) -> None:
        """A fully measured candidate: it becomes the incumbent when its median is better."""
        with self._lock:
            current = self._incumbent
            better = current is None or (offered.median < current.median if self.direction == "min"
                                         else offered.median > current.median)
            if better:
                self._incumbent = offered


@dataclass(frozen=True)
class Race:
    """A candidate's measurement under racing, and whether it was stopped early."""

    measurement: Measurement
    raced: bool  # stopped before `repeats` runs: behind the incumbent
    placed: bool = False  # stopped before `repeats` runs: its streamed samples put it far ahead of the incumbent


def race(spec: BenchSpec, repeats: int, board: RaceBoard) -> Race:
    """Run the benchmark up to `repeats` times, stopping at a failed run or when the candidate is behind,
    after a run or, for a benchmark that streams samples, in the middle of one.

    A full measurement is offered to the board (it may become the incumbent);
    a raced-out one is not.
    """
    runs: list[BenchRun] = []
    raced = placed = False
    for _ in range(repeats):
        earlier = [value for r in runs for value in r.values(board.metric)]

        def stop_when(streamed: Mapping[str, Sequence[float]], earlier: list[float] = earlier) -> bool:
            now = streamed.get(board.metric, ())
            if len(earlier) + len(now) < MIN_STREAMED:
                return False
            incumbent = board.incumbent
            return incumbent is not None and behind(incumbent, [*earlier, *now], board.direction)

        run = run_once(spec, stop_when=stop_when)
        runs.append(run)
        if not run.ok:
            break
        if run.stopped:
            raced = True
            break
        incumbent = board.incumbent
        samples = [value for r in runs for value in r.values(board.metric)]
        if len(runs) == repeats or incumbent is None:
            continue
        if behind(incumbent, samples, board.direction):
            raced = True
            break
        if len(samples) >= repeats and len(samples) > len(runs) and ahead(incumbent, samples, board.direction):
            placed = True
            break
    measurement = Measurement.from_runs(runs)
    samples = measurement.samples.get(board.metric, [])
    if measurement.ok and not raced and samples:
        board.offer(Incumbent.from_samples(samples))
    return Race(measurement, raced, placed)
