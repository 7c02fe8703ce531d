"""One candidate's outcome (`Evaluated`) and how an objective reads its score from the metrics."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ciq_build.build.manifest import Objective
from ciq_build.compiler.controls import Controls
from ciq_build.core.causes import Cause
from ciq_build.search.base import Proposal


@dataclass
class Evaluated:
    """One candidate's outcome, as journaled."""

    key: str
    proposal: Proposal
    controls: Controls
    ok: bool
    cause: Cause | None  # None when ok
    message: str
    metrics: dict[str, float]
    spread: dict[str, float]
    scores: tuple[float, ...] | None
    seconds: float  # wall time of the whole evaluation, waiting for a GPU included
    cached: bool = False
    # Where the time went: compile_s (the target and the benchmark's link), benchmark_s
    # (the runs), wait_s (queued for a GPU slot). Empty for journals written before 0.2.
    timings: dict[str, float] = field(default_factory=dict)
    runs: int = 0  # benchmark runs this evaluation made (none for static objectives, a dedupe or the journal)
    raced: bool = False  # stopped early by racing (ciq_build.measure.racing): never pinned over a full measurement
    same_code_as: str | None = None  # the key of the earlier evaluation whose machine code, so measurement, it took
    code: str | None = None  # its machine-code key (ciq_build.tune.dedupe), when computed
    worker: str = ""  # where it ran when not on this machine: a Ray slot and its host:pid (journaled when set)

    @property
    def environmental(self) -> bool:
        """Failed because of the machine (full disk, foreign kill, hung build tool): never cached."""
        return not self.ok and self.cause is not None and self.cause.environmental


# Where each objective's value is found among a candidate's metrics.
_METRIC_KEYS = {"time": "time_ms", "energy": "energy_j", "compile_time": "compile_seconds"}


def metric_key(objective: Objective) -> str:
    """The metric an objective reads: time -> time_ms (benchmark protocol), metric:X -> X, static names as is."""
    if objective.name.startswith("metric:"):
        return objective.name[len("metric:"):]
    return _METRIC_KEYS.get(objective.name, objective.name)


def objective_values(objectives: Sequence[Objective], values: dict[str, float]) -> tuple[float, ...] | None:
    """The score tuple of a candidate, or None when a metric an objective needs is missing."""
    scores = []
    for objective in objectives:
        value = values.get(metric_key(objective))
        if value is None:
            return None
        scores.append(float(value))
    return tuple(scores)


def jsonable(params: dict[str, Any]) -> dict[str, Any]:
    """Search parameters as JSON values (an odd type becomes its string)."""
    return {k: v if isinstance(v, (str, int, float, bool)) or v is None else str(v) for k, v in params.items()}


def failure_counts(evaluations: Sequence[Evaluated]) -> dict[str, int]:
    """How many evaluations failed, by cause."""
    counts: dict[str, int] = {}
    for e in evaluations:
        if not e.ok:
            cause = str(e.cause or Cause.ERROR)
            counts[cause] = counts.get(cause, 0) + 1
    return counts


def failure_summary(evaluations: Sequence[Evaluated]) -> str:
    """`cause n, ...` for a report line; environmental failures said apart."""
    counts = failure_counts(evaluations)
    text = ", ".join(f"{cause} {n}" for cause, n in sorted(counts.items())) or "none"
    environmental = sum(1 for e in evaluations if e.environmental)
    if environmental:
        text += f" ({environmental} environmental: not cached, run again on resume)"
    return text
