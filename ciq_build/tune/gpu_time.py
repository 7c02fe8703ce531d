"""Where the GPU's time went: how long a benchmark held a GPU slot, and which phase of the tune ran meanwhile.

A runtime tune is paid for in GPU time, so the figure that matters is the share
of the wall time, from the first benchmark (the baseline's) to the pin, during
which a benchmark held the GPU. The rest is where the GPU waited: for the
baseline's build, for candidates to compile (inside the search), for the
re-measure's and the minimal pin's builds, for the pin to be written. `GpuMeter`
records both as they happen (the slots' holds, the driver's phase marks, each
mark ending the phase before it) and `GpuTime` is what it comes to, for the
summary line and the journal's `gpu_time` record.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ciq_build.measure.gpu_slots import GpuSlots

# The driver's phases, in the order a tune goes through them (the summary lists the idle time in this order).
PHASES = ("baseline", "search", "rebuild", "re-measure", "minimize", "pin")
# What the GPU waited for in each phase while no benchmark held it, as the summary says it.
WAITED_FOR = {"baseline": "the baseline's build", "search": "candidates to compile",
              "rebuild": "the winner's rebuild", "re-measure": "the re-measure's builds",
              "minimize": "the minimal pin's rebuilds", "pin": "the pin to be written"}


class GpuMeter:
    """The intervals benchmarks held a GPU, and the driver's phase marks; thread-safe."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._lock = threading.Lock()
        self.holds: list[tuple[float, float]] = []  # (start, end) of each slot held
        self.marks: list[tuple[str, float]] = []  # (phase, start): each phase ends where the next starts
        self.listeners: list[Callable[[str], None]] = []  # told each phase entered (the watched status file)

    def enter(self, phase: str) -> None:
        """From now on the tune is in `phase` (one of PHASES)."""
        if phase not in PHASES:
            raise ValueError(f"unknown phase {phase!r}")
        with self._lock:
            self.marks.append((phase, self.clock()))
        for listener in self.listeners:
            listener(phase)

    @contextmanager
    def holding(self) -> Iterator[None]:
        """A benchmark holds a GPU slot for the duration."""
        start = self.clock()
        try:
            yield
        finally:
            end = self.clock()
            with self._lock:
                self.holds.append((start, end))

    def result(self, gpus: int = 1) -> GpuTime | None:
        """What the holds came to from the first benchmark until now; None when no benchmark ran."""
        end = self.clock()
        with self._lock:
            holds, marks = list(self.holds), list(self.marks)
        if not holds:
            return None
        start = min(s for s, _ in holds)
        wall = max(end - start, 1e-9)
        phases: dict[str, tuple[float, float]] = {}  # name -> (wall seconds, GPU-seconds held)
        bounds = [(name, begin, marks[i + 1][1] if i + 1 < len(marks) else end) for i, (name, begin) in enumerate(marks)]
        for name, begin, stop in bounds:
            begin, stop = max(begin, start), min(stop, end)
            if stop <= begin:
                continue
            held = sum(max(0.0, min(e, stop) - max(s, begin)) for s, e in holds)
            seconds, busy = phases.get(name, (0.0, 0.0))
            phases[name] = (seconds + stop - begin, busy + held)
        busy = sum(max(0.0, min(e, end) - max(s, start)) for s, e in holds)
        return GpuTime(wall, busy, max(1, gpus), phases)


@dataclass(frozen=True)
class GpuTime:
    """From the first benchmark to the pin: the wall time, the GPU-seconds a benchmark held, per phase."""

    wall_s: float
    busy_s: float  # GPU-seconds held (with several GPUs, summed over them)
    gpus: int
    phases: dict[str, tuple[float, float]] = field(default_factory=dict)  # name -> (wall s, GPU-s held)

    @property
    def fraction(self) -> float:
        """The share of the GPUs' time a benchmark held one, from the first benchmark to the pin."""
        return min(1.0, self.busy_s / (self.wall_s * self.gpus))

    def idle(self, phase: str) -> float:
        """GPU-seconds no benchmark held a GPU during `phase`."""
        seconds, busy = self.phases.get(phase, (0.0, 0.0))
        return max(0.0, seconds * self.gpus - busy)

    def describe(self) -> str:
        """The summary's line: the busy share, then what the GPU waited for, phase by phase."""
        waits = [f"{WAITED_FOR[name]} {self.idle(name):.1f} s" for name in PHASES if self.idle(name) >= 0.05]
        text = (f"a benchmark held the GPU{'s' if self.gpus > 1 else ''} {100 * self.fraction:.0f}% of the "
                f"{self.wall_s:.1f} s from the first benchmark to the pin")
        return text + (f"; idle, waiting for {', '.join(waits)}" if waits else "")

    def to_journal(self) -> dict[str, Any]:
        """The journal's `gpu_time` record (without its kind and time)."""
        return {"wall_s": round(self.wall_s, 3), "busy_s": round(self.busy_s, 3), "gpus": self.gpus,
                "busy_fraction": round(self.fraction, 4),
                "phases": {name: {"wall_s": round(seconds, 3), "busy_s": round(busy, 3)}
                           for name, (seconds, busy) in self.phases.items()}}


@dataclass
class MeteredSlots(GpuSlots):
    """GPU slots whose every hold the meter records: what the GPU-busy figure counts."""

    meter: GpuMeter = field(default_factory=GpuMeter)

    @contextmanager
    def slot(self) -> Iterator[dict[str, str]]:
        with super().slot() as env, self.meter.holding():
            yield env
