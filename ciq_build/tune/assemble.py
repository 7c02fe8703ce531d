"""The pinned record of a confirmed winner: what was searched, measured and chosen, assembled in one place."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from typing import Any

from ciq_build.compiler.architectures import architecture_list
from ciq_build.compiler.fingerprint import object_fingerprints
from ciq_build.compiler.toolchain import Toolchain
from ciq_build.core.metric_unit import RATE_UNIT
from ciq_build.core.objectives import Objective, metric_key
from ciq_build.pin.record import PinnedRecord, RecordObjective, RecordToolchain, ScoreSummary
from ciq_build.project.manifest import Manifest, benchmark_sizes
from ciq_build.project.worker import WorkerTree
from ciq_build.search.evaluation import Evaluation
from ciq_build.tune.confirm import Confirmation
from ciq_build.tune.scores import failure_counts, jsonable
from ciq_build.version import __version__


def scored_record(manifest: Manifest, toolchain: Toolchain, objectives: Sequence[Objective],
                  confirmation: Confirmation) -> PinnedRecord:
    """The record of `confirmation.winner` before its provenance and objects: what it is compared by with a pin
    already there (ciq_build.tune.old_pin) — its controls, toolkit, architectures, objectives and scores."""
    baseline, winner, spreads = confirmation.baseline, confirmation.winner, confirmation.spreads

    def summary(scores: tuple[float, ...], spread: Mapping[str, float]) -> ScoreSummary:
        return ScoreSummary(tuple(scores), tuple(float(spread.get(metric_key(o), 0.0)) for o in objectives))

    return PinnedRecord(
        target=manifest.target,
        controls=winner.controls,
        toolchain=RecordToolchain(cuda=toolchain.major_minor, nvcc_version=toolchain.version,
                                  ptxas_version=toolchain.ptxas_version,
                                  architectures=tuple(architecture_list(manifest.toolchain.architectures))),
        objectives=tuple(RecordObjective(o.name, o.direction) for o in objectives),
        baseline=summary(confirmation.baseline_scores, spreads.get("baseline", baseline.spread)),
        winner=summary(confirmation.winner_scores, spreads.get("winner", winner.spread)),
    )


def assemble_record(manifest: Manifest, toolchain: Toolchain, objectives: Sequence[Objective],
                    confirmation: Confirmation, tree: WorkerTree, search: Mapping[str, Any],
                    evaluations: Sequence[Evaluation], extra: Mapping[str, Any] | None = None) -> PinnedRecord:
    """The record that pins `confirmation.winner`; `tree` is where its objects were rebuilt, `search` the
    candidate source's description (its provenance); `extra`: more provenance (how it stood against the pin it
    replaces, whether its check ran)."""
    baseline, winner, spreads = confirmation.baseline, confirmation.winner, confirmation.spreads
    return dataclasses.replace(
        scored_record(manifest, toolchain, objectives, confirmation),
        provenance={**search, "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                    "ciq_build_version": __version__, "evaluations": len(evaluations),
                    "failures": failure_counts(evaluations), "winner_params": jsonable(winner.proposal.params),
                    "baseline_metrics": baseline.metrics, "winner_metrics": winner.metrics,
                    "remeasured": spreads.get("samples", {}),
                    **({"sizes": sizes} if (sizes := benchmark_sizes(manifest)) else {}),
                    # `time` read from a rate: `show` displays its scores as the rate the benchmark printed.
                    **({RATE_UNIT: rate} if (rate := next((o.rate_unit for o in objectives if o.rate_unit), ""))
                       else {}),
                    **({"dropped_controls": list(confirmation.dropped)} if confirmation.dropped else {}),
                    **(extra or {})},
        objects=object_fingerprints(confirmation.winner_objects, tree.object_dir, toolchain),
    )
