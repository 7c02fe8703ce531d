"""How long a search has taken and has left, as a person reads it: one rule for every progress display.

The tune's bar and lines (ciq_build.tune.progress) and the Python API's generation line
(ciq_build.search.evolution.ProgressReporter) both say the time left as the work still to come at
the pace of the work done so far, in the same clock format.
"""

from __future__ import annotations


def clock(seconds: float) -> str:
    """Seconds as a clock: 0:05, 12:34, 1:02:03."""
    seconds = max(0, int(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


def time_left(elapsed: float, measured: int, done: int, expected: int | None) -> float | None:
    """Seconds still needed: what is left of `expected` at the pace of the `measured` units of work this run made
    in `elapsed` seconds (`done` counts those too, and any that cost nothing: a tune's journaled evaluations);
    None before the first (no pace yet) or without an expected count."""
    if expected is None or measured <= 0:
        return None
    return max(0, expected - done) * elapsed / measured
