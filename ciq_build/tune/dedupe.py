"""Dedupe by machine code: a candidate that builds the same code as an earlier one takes its measurement.

Different controls often give the same code (a knob the kernel does not
exercise, a -D parameter it never reads: 7 of 96 knob candidates on a GEMM).
Such a candidate is built, its code key computed, and, when an earlier
candidate of this tune (the baseline included) had the same key, it takes that
evaluation's metrics and scores, static ones included, with ``same_code_as``
pointing at the earlier key (journaled); the benchmark does not run.

The code key of a build is, for every object of the target: the device code
(ciq_build.compiler.metrics.code_hash: each cubin's code sections, bytes and
relocations) and each kernel's resource usage (registers, stack, shared and
local memory, which the launch sees but the code bytes may not), and, when a
benchmark runs, the host sections the program loads (metrics.host_code_hash): a
-D parameter may change only host code or a constant in .rodata, a launch size
or the benchmark's own arithmetic, and leave every cubin as it was.

The key costs ~50 ms of cuobjdump per object, so it is computed only where
measuring costs more (ciq_build.tune.runner): with a benchmark, or for the
sass_instructions objective; the other static metrics are read from the
compile log for free.

Candidates evaluated side by side (``--jobs``) with the same code: the first
to finish its build measures, the others wait for it. A shared failure is
shared too (same code, same crash), except one the machine caused
(environmental, or no GPU): then the waiting candidate measures for itself.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import threading
from collections.abc import Callable
from pathlib import Path

from ciq_build.compiler import metrics
from ciq_build.compiler.toolchain import Toolchain
from ciq_build.core.causes import Cause
from ciq_build.errors import ToolchainError
from ciq_build.search.evaluation import Evaluation


def code_key(objects: tuple[Path, ...], object_dir: Path, toolchain: Toolchain, *, host: bool,
             context: str = "") -> str | None:
    """The machine-code key of a build's objects; None when it has none to compare (then nothing is shared).

    `context`: what else the measurement depends on (the sources, the benchmark), hashed in.
    """
    if not objects:
        return None
    try:
        return _code_key(objects, object_dir, toolchain, host=host, context=context)
    except ToolchainError:
        return None  # cuobjdump could not read them: measure, as without dedupe


def _code_key(objects: tuple[Path, ...], object_dir: Path, toolchain: Toolchain, *, host: bool, context: str) -> str:
    parts: dict[str, object] = {"context": context}
    for obj in sorted(objects):
        try:
            name = obj.relative_to(object_dir).as_posix()
        except ValueError:
            name = obj.name
        usage = metrics.resource_usage(obj, toolchain)
        parts[name] = {
            "device": metrics.code_hash(obj, toolchain),
            "usage": sorted([metrics.normalise_symbol(function), arch, sorted(values.items())]
                            for (function, arch), values in usage.items()),
            "host": metrics.host_code_hash(obj) if host else None,
        }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def _shareable(evaluated: Evaluation) -> bool:
    """Whether another build of the same code may take this outcome as its own."""
    return not evaluated.environmental and evaluated.cause != Cause.NO_GPU


class CodeDedupe:
    """The evaluations of one tune by code key; thread-safe."""

    def __init__(self) -> None:
        self._done: dict[str, Evaluation] = {}
        self._running: dict[str, threading.Event] = {}
        self._lock = threading.Lock()
        self.shared = 0  # evaluations that took an earlier one's measurement

    def remember(self, evaluated: Evaluation) -> None:
        """An evaluation made without this dedupe (journaled): later builds of its code may take it."""
        if evaluated.code is not None and evaluated.ok and evaluated.same_code_as is None:
            with self._lock:
                self._done.setdefault(evaluated.code, evaluated)

    def known(self) -> list[Evaluation]:
        """The measured evaluations it holds, one per code (what Ray actors are told: RayRunner)."""
        with self._lock:
            return list(self._done.values())

    def evaluate(self, code: str | None, measure: Callable[[], Evaluation],
                 copy: Callable[[Evaluation], Evaluation]) -> Evaluation:
        """`copy(earlier)` when an earlier evaluation had this code, else `measure()` (and remember it)."""
        if code is None:
            return measure()
        while True:
            with self._lock:
                earlier = self._done.get(code)
                if earlier is not None:
                    self.shared += 1
                    return copy(earlier)
                running = self._running.get(code)
                if running is None:
                    self._running[code] = threading.Event()
                    break
            running.wait()  # the same code is being measured by another worker
            with self._lock:
                if code not in self._done and code not in self._running:
                    self._running[code] = threading.Event()  # its measurement cannot be shared: measure here
                    break
        evaluated: Evaluation | None = None
        try:
            evaluated = measure()
            return evaluated
        finally:
            with self._lock:
                if evaluated is not None and _shareable(evaluated):
                    self._done[code] = evaluated
                self._running.pop(code).set()


def taken_from(earlier: Evaluation, mine: Evaluation) -> Evaluation:
    """`mine` (its key, proposal, controls, time) with the measurement of `earlier`, which built the same code."""
    return dataclasses.replace(
        mine, ok=earlier.ok, cause=earlier.cause, message=earlier.message, metrics=dict(earlier.metrics),
        spread=dict(earlier.spread), scores=earlier.scores, raced=earlier.raced, runs=0,
        same_code_as=earlier.key, code=earlier.code)
