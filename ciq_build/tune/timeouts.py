"""Timeouts that fit the project: a generous one for the baseline, then the candidates' from its measurement.

TIMEOUT (60 s by default) is one limit for a whole target rebuild and for one
benchmark run; a large project's baseline can need more (a 9-architecture
sample took 162 s), and failing there says nothing about the candidates. So
the baseline's own build and runs get at least BASELINE_TIMEOUT, and the
candidates then get TIMEOUT or CANDIDATE_FACTOR times what the baseline took,
whichever is more: a candidate four times slower to build than the defaults is
still measured, one that hangs is still stopped. `tune --timeout S` is a
promise from the user and is used as given, for the baseline too.
"""

from __future__ import annotations

from dataclasses import dataclass

from ciq_build.core.settings import MeasureSettings
from ciq_build.search.evaluation import KEPT_FRONT_END, Evaluation

BASELINE_TIMEOUT = 600.0  # seconds, at least, for the baseline's build and each of its runs
CANDIDATE_FACTOR = 4.0  # a candidate may take this many times the baseline's compile (or run)


@dataclass(frozen=True)
class Timeouts:
    """Seconds before one compile (the target's whole rebuild) or one benchmark run is killed."""

    compile: float
    benchmark: float

    def describe(self, measure: MeasureSettings) -> str:
        """One line saying where the limits come from."""
        return (f"timeouts from the baseline: compile {self.compile:g} s, benchmark run {self.benchmark:g} s "
                f"(TIMEOUT {measure.timeout:g} s or {CANDIDATE_FACTOR:g}x the baseline's, whichever is more; "
                "tune --timeout S sets both exactly)")


def baseline_limits(timeouts: Timeouts, benchmarked: bool) -> str:
    """When the baseline's build (and, where one runs, each benchmark run) is stopped, for the line that starts it:
    nothing else is said until then, and a benchmark that hung left a tune of TIMEOUT 5 silent for 10 minutes."""
    if not benchmarked:
        stopped = f"its build is stopped after {timeouts.compile:g} s"
    elif timeouts.compile == timeouts.benchmark:
        stopped = f"its build and each benchmark run are stopped after {timeouts.compile:g} s"
    else:
        stopped = f"its build is stopped after {timeouts.compile:g} s, each benchmark run after {timeouts.benchmark:g} s"
    return f"{stopped}; tune --timeout S sets the limit"


def for_baseline(measure: MeasureSettings) -> Timeouts:
    """The baseline's limits: --timeout as given, else TIMEOUT but at least BASELINE_TIMEOUT."""
    seconds = measure.timeout if measure.timeout_explicit else max(measure.timeout, BASELINE_TIMEOUT)
    return Timeouts(seconds, seconds)


def for_configure(measure: MeasureSettings, factor: float) -> float:
    """A scratch tree's configure limit: `factor` x --timeout as given, else x TIMEOUT but at least BASELINE_TIMEOUT."""
    seconds = measure.timeout * factor
    return seconds if measure.timeout_explicit else max(seconds, BASELINE_TIMEOUT)


def for_candidates(measure: MeasureSettings, baseline: Evaluation) -> Timeouts:
    """The candidates' limits: --timeout as given, else TIMEOUT or CANDIDATE_FACTOR x the baseline's."""
    if measure.timeout_explicit:
        return Timeouts(measure.timeout, measure.timeout)
    # nvcc whole: a baseline built from front ends kept by an earlier tune ran ptxas only (0.8 s of simpleGEMM's
    # 20), and a candidate whose options reach the front end (cicc) runs it again, so their seconds count too.
    compile_s = (baseline.metrics.get("compile_seconds", baseline.timings.get("compile_s", 0.0))
                 + baseline.timings.get(KEPT_FRONT_END, 0.0))
    runs = max(1, measure.repeats)
    run_s = baseline.timings.get("benchmark_s", 0.0) / runs
    return Timeouts(round(max(measure.timeout, CANDIDATE_FACTOR * compile_s), 1),
                    round(max(measure.timeout, CANDIDATE_FACTOR * run_s), 1))


def end_reserve(measure: MeasureSettings, baseline: Evaluation, benchmarked: bool) -> float:
    """Seconds a --time-limit keeps for what follows the search (the winner's rebuild, and with a benchmark its
    interleaved re-measure), estimated from the baseline's."""
    reserve = baseline.timings.get("compile_s", 0.0)
    if benchmarked:
        per_run = baseline.timings.get("benchmark_s", 0.0) / max(1, baseline.runs or measure.repeats)
        reserve += 2 * measure.confirm_rounds * per_run
    return reserve
