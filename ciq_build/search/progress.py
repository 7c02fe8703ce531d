"""A self-rewriting status line for a search run in a terminal."""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable
from typing import TextIO

from ciq_build.core import pace


class ProgressReporter:
    """One self-rewriting status line on a terminal: step k/n, evaluations, failures, best, times.

    Silent when ``enabled`` is False, or when it is None and the stream is not
    a terminal (logs and CI stay clean). Reusable by any loop with steps.
    """

    def __init__(
        self,
        total: int | None,
        *,
        unit: str = "generation",
        stream: TextIO | None = None,
        enabled: bool | None = None,
        time_limit: float | None = None,
        min_interval: float = 0.2,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.total, self.unit, self.time_limit = total, unit, time_limit
        self.stream = stream if stream is not None else sys.stderr
        if enabled is None:
            isatty = getattr(self.stream, "isatty", None)
            enabled = bool(isatty and isatty())
        self.enabled = enabled
        self._clock, self._min_interval = clock, min_interval
        self._started = clock()
        self._last_write = -math.inf
        self._width = 0

    def line(self, done: int, *, evaluations: int = 0, failures: int = 0, best: str | None = None) -> str:
        elapsed = self._clock() - self._started
        parts = [f"{self.unit} {done}/{self.total}" if self.total else f"{self.unit} {done}"]
        parts += [f"{evaluations} evaluations", f"{failures} failed"]
        if best is not None:
            parts.append(f"best {best}")
        parts.append(f"{pace.clock(elapsed)} elapsed")
        remaining = pace.time_left(elapsed, done, done, self.total or None)
        if self.time_limit is not None:
            left = max(0.0, self.time_limit - elapsed)
            remaining = left if remaining is None else min(remaining, left)
        if remaining is not None:
            parts.append(f"~{pace.clock(remaining)} left")
        return " | ".join(parts)

    def update(
        self,
        done: int,
        *,
        evaluations: int = 0,
        failures: int = 0,
        best: str | Callable[[], str | None] | None = None,
        force: bool = False,
    ) -> None:
        """Redraw the line (at most every ``min_interval`` s unless ``force``); ``best`` may be a callable, called only when drawn."""
        if not self.enabled:
            return
        now = self._clock()
        if not force and now - self._last_write < self._min_interval:
            return
        self._last_write = now
        if callable(best):
            best = best()
        text = self.line(done, evaluations=evaluations, failures=failures, best=best)
        self.stream.write("\r" + text.ljust(self._width))
        self.stream.flush()
        self._width = len(text)

    def close(self) -> None:
        if self.enabled and self._width:
            self.stream.write("\n")
            self.stream.flush()
            self._width = 0
