"""One evaluated candidate: the record the search, the driver, the journal and the reports share, and its journal line.

An `Evaluation` is what became of one `Proposal`: scores (when ok) or a
failure `Cause`, and, when the driver built and measured it, its controls,
metrics and where the time went. The genetic search's table
(ciq_build.search.results) holds the same records; the fields only the driver
fills stay at their defaults there.

Its journal line (`to_journal` / `from_journal`) is the one persisted form:
old journals must keep resuming, so its field names and their meaning never
change; a new field is optional when read.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ciq_build.compiler.controls import AcfRef, Controls, controls_to_json
from ciq_build.core.causes import Cause
from ciq_build.errors import CiqError
from ciq_build.search.base import Proposal

# The journal record kind of an evaluation (others: the header, source_outputs, made_with, ...).
EVALUATION_KIND = "evaluation"
# The parts of an evaluation's time the driver journals (Evaluation.timings).
TIMING_NAMES = ("compile_s", "benchmark_s", "wait_s")
# Journaled beside them, no part of the evaluation's time: the seconds the front ends its build took as kept
# (ciq_build.compiler.ptxas_path) took when they ran, which a candidate's compile may spend again.
KEPT_FRONT_END = "kept_front_end_s"
# The proposal id of an evaluation read from the journal: the line does not keep it (nor the proposal's ACF,
# which is in its controls).
JOURNALED_ID = -2
# The tail of a failure's message the journal keeps (a compiler's output can be long).
_MESSAGE_LIMIT = 4000


@dataclass
class Evaluation:
    """One candidate's outcome. ``scores`` is None unless ``ok``; ``cause`` is None when ``ok``."""

    key: str  # the driver's cache key (ciq_build.tune.cache); the canonical key of its params in the search alone
    proposal: Proposal
    controls: Controls
    ok: bool
    cause: Cause | None
    message: str  # what went wrong, when it failed
    metrics: dict[str, float]
    spread: dict[str, float]
    scores: tuple[float, ...] | None
    seconds: float  # wall time of the whole evaluation, waiting for a GPU included
    cached: bool = False  # read from the journal, not evaluated by this process
    # Where the time went: compile_s (the target and the benchmark's link), benchmark_s
    # (the runs), wait_s (queued for a GPU slot); and KEPT_FRONT_END. Empty for journals written before 0.2.
    timings: dict[str, float] = field(default_factory=dict)
    runs: int = 0  # benchmark runs this evaluation made (none for static objectives, a dedupe or the journal)
    raced: bool = False  # stopped early by racing (ciq_build.measure.racing): never pinned over a full measurement
    same_code_as: str | None = None  # the key of the earlier evaluation whose machine code, so measurement, it took
    code: str | None = None  # its machine-code key (ciq_build.tune.dedupe), when computed
    worker: str = ""  # where it ran when not on this machine: a Ray slot and its host:pid (journaled when set)
    # The benchmark's samples of each objective's metric, in the order measured: one per run, or each
    # repetition's of a benchmark that streams them (CIQ_SAMPLES). Journaled when there are any.
    samples: dict[str, list[float]] = field(default_factory=dict)

    @property
    def id(self) -> int:
        return self.proposal.id

    @property
    def generation(self) -> int:
        return self.proposal.generation

    @property
    def params(self) -> dict[str, Any]:
        return self.proposal.params

    @property
    def environmental(self) -> bool:
        """Failed because of the machine (full disk, foreign kill, hung build tool): never cached."""
        return not self.ok and self.cause is not None and self.cause.environmental

    # -- the journal line ----------------------------------------------------------------

    def to_journal(self) -> dict[str, Any]:
        """The journal line of this evaluation (the format old journals share: resumes read both)."""
        return {
            "kind": EVALUATION_KIND, "key": self.key, "generation": self.generation,
            "params": self.params, "controls": controls_to_json(self.controls, None),
            "ok": self.ok, "cause": self.cause, "message": self.message[-_MESSAGE_LIMIT:],
            "metrics": self.metrics, "spread": self.spread,
            "scores": list(self.scores) if self.scores is not None else None,
            "seconds": round(self.seconds, 3), "timings": self.timings,
            "environmental": self.environmental, "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "runs": self.runs, "raced": self.raced, "same_code_as": self.same_code_as,
            "code": self.code,
            **({"worker": self.worker} if self.worker else {}),
            **({"samples": self.samples} if self.samples else {}),
        }

    @classmethod
    def from_journal(cls, line: dict[str, Any]) -> Evaluation | None:
        """The evaluation a journal line records (``cached``), or None when it cannot be read as one.

        A journal is a file anyone could have edited: a field of the wrong type
        reads as absent, and a line without a boolean ``ok`` or with controls
        no compiler would take is unreadable. The scores are the journaled ones;
        a reader with today's objectives computes its own from the metrics.
        """
        ok = line.get("ok")
        if not isinstance(ok, bool):
            return None
        controls = _controls(line.get("controls"))
        if controls is None:
            return None
        key, generation, params = line.get("key"), line.get("generation"), line.get("params")
        same, code, worker = line.get("same_code_as"), line.get("code"), line.get("worker")
        return cls(
            key if isinstance(key, str) else "",
            Proposal(id=JOURNALED_ID, generation=journaled_count(generation),
                     params=dict(params) if isinstance(params, dict) else {}),
            controls, ok, None if ok else Cause.read(line.get("cause")),
            str(line.get("message") or ""), journaled_numbers(line.get("metrics")),
            journaled_numbers(line.get("spread")),
            _scores(line.get("scores")) if ok else None, _number(line.get("seconds")),
            cached=True, timings=journaled_timings(line), runs=journaled_count(line.get("runs")),
            raced=line.get("raced") is True, same_code_as=same if isinstance(same, str) else None,
            code=code if isinstance(code, str) else None, worker=worker if isinstance(worker, str) else "",
            samples=_samples(line.get("samples")))


# -- reading one field of a journal line ---------------------------------------------------


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _number(value: Any) -> float:
    return float(value) if _is_number(value) else 0.0


def _samples(value: Any) -> dict[str, list[float]]:
    """Journaled samples: metric -> numbers; a metric whose list holds anything else is left out."""
    if not isinstance(value, dict):
        return {}
    return {str(name): [float(v) for v in values] for name, values in value.items()
            if isinstance(values, list) and values and all(_is_number(v) for v in values)}


def _scores(value: Any) -> tuple[float, ...] | None:
    """A journaled score list (one number per objective), or None."""
    if not isinstance(value, list) or not all(_is_number(v) for v in value):
        return None
    return tuple(float(v) for v in value)


def journaled_numbers(value: Any) -> dict[str, float]:
    """The name -> finite number entries of a journaled mapping; anything else is dropped."""
    if not isinstance(value, dict):
        return {}
    return {str(k): float(v) for k, v in value.items() if _is_number(v) and abs(v) < float("inf")}


def journaled_timings(line: dict[str, Any]) -> dict[str, float]:
    """compile_s / benchmark_s / wait_s of a journaled evaluation; {} for older journals (only "seconds")."""
    return {name: value for name, value in journaled_numbers(line.get("timings")).items()
            if name in (*TIMING_NAMES, KEPT_FRONT_END)}


def journaled_count(value: Any) -> int:
    """A non-negative int field (runs, generation): anything else reads as 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _controls(value: Any) -> Controls | None:
    """The controls a journal line names (absent: the compiler's defaults); None when they are not valid controls."""
    if value is None:
        return Controls()
    if not isinstance(value, dict):
        return None
    flags, defines, acf = value.get("flags", []), value.get("defines", {}), value.get("acf")
    if not isinstance(flags, list) or not isinstance(defines, dict) or not (acf is None or isinstance(acf, dict)):
        return None
    try:
        return Controls(
            flags=tuple(str(f) for f in flags),
            defines=tuple((str(k), str(v)) for k, v in defines.items()),
            acf=None if acf is None else AcfRef(Path(str(acf.get("file"))), str(acf.get("compiler")),
                                                str(acf.get("sha256") or "")),
        )
    except (CiqError, TypeError, ValueError):
        return None
