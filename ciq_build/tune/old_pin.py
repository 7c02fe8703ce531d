"""The pin already there against the new winner: a better pin is never replaced by a worse one unasked.

Two pins can be compared only when they answer the same question: the same objectives (in the same order), the
same toolkit and the same architectures. Static figures (registers, spills, instructions) are deterministic, so
the old record's own figures are compared, as long as the defaults still measure what they measured then (else
the sources changed, and so did what the figures mean). Runtimes are never taken from a record: the old pin is
built and re-measured beside the new winner, interleaved, and is better only beyond the noise.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ciq_build.compiler.controls import Controls
from ciq_build.core.metric_unit import change_text
from ciq_build.core.objectives import Objective, metric_key, with_unit
from ciq_build.errors import CiqError, ConfigError
from ciq_build.measure.stats import FINAL_ALPHA, beats_baseline
from ciq_build.pin.display import pinned_scores
from ciq_build.pin.read import read_record
from ciq_build.pin.record import PinnedRecord, architecture_set, objective_specs, record_path, same_objectives
from ciq_build.pin.write import toolkit_cannot_join

if TYPE_CHECKING:
    from ciq_build.compiler.toolchain import Toolchain
    from ciq_build.project.manifest import Manifest
    from ciq_build.tune.tune_options import TuneSettings

# What re-measures the old pin beside the new winner: (old's samples, new's samples) per benchmark metric key,
# or a sentence saying why it could not (the old pin no longer builds, or its benchmark failed).
Remeasure = Callable[[Controls], "tuple[dict[str, list[float]], dict[str, list[float]]] | str"]


@dataclass(frozen=True)
class Standing:
    """The old pin against the new winner."""

    comparable: bool
    old_better: bool  # the old pin is better: kept unless --force
    text: str  # old against new, in numbers; or why they cannot be compared
    new_better: bool = False  # the new winner is better (a tie is neither): what a staged tune's later stage needs

    def keeps_old(self, tie_keeps: bool) -> bool:
        """Whether the old pin stays: it is better, or (`tie_keeps`) the winner is no better than it."""
        return self.old_better or (tie_keeps and self.comparable and not self.new_better)


def pinned_before(path: Path) -> PinnedRecord | None:
    """The record a new pin at `path` replaces, or None: none there, or one that cannot be read (said by write)."""
    if not path.is_file():
        return None
    try:
        return read_record(path)
    except CiqError:
        return None


def widened_note(path: Path, before: PinnedRecord, merged: PinnedRecord) -> str | None:
    """What a tune --architecture says where its entry widened the record's architectures, or None: a build applies a
    record only where it compiles for exactly its architectures, so a build for the old ones alone, which applied it,
    now skips it (GPUSorting: a record for 90, then an entry for 80 from a tree built for 80;90)."""
    old, new = before.toolchain.architectures, merged.toolchain.architectures
    if set(old) >= set(new):
        return None
    was, now = ", ".join(old), ", ".join(new)
    return (f"the record {path} was for {was} and is now for {now}: a build for {was} alone, which applied it, now "
            f"skips it (a pin applies only to the architectures it holds, all of them); build for {now} "
            f"(CMAKE_CUDA_ARCHITECTURES \"{';'.join(new)}\"), or restore the record from version control to keep "
            f"the pin for {was}")


def refuse_what_cannot_be_pinned(manifest: Manifest, settings: TuneSettings, toolchain: Toolchain) -> None:
    """Refuse, before its search, a tune whose winner would replace or join the target's pin tuned for other
    objectives (where one can be read). Such a pin cannot be compared with the winner (`not_comparable`), so it was
    replaced unasked: a user's pin validated for time was lost to a tune for registers. --force replaces it; --no-pin
    writes none. A tune --architecture adds its winner as an entry of the record, which merge_architecture refuses for
    other objectives or another toolkit even with --force: refused here too, not after a search whose winner could
    not be pinned."""
    architecture = manifest.tune_architecture
    if not settings.pin or (settings.force and not architecture):
        return
    objectives = settings.objectives
    path = record_path(manifest.pin_dir, manifest.target)
    old = pinned_before(path)
    if old is None:
        return
    if architecture and (other := toolkit_cannot_join(path, old, toolchain.major_minor, toolchain.ptxas_version)):
        raise ConfigError(f"{path} cannot take this tune's sm_{architecture} winner: {other} (or tune with "
                          "--no-pin to search and report without pinning)")
    if same_objectives(old.objectives, objectives):
        return
    tuned = objective_specs(old.objectives)
    figures = "; ".join(pinned_scores(old))
    tuned_for = f"tuned for {', '.join(tuned) or 'no objectives'}{f' ({figures})' if figures else ''}"
    wanted = ", ".join(o.spec for o in objectives)
    retune = f"with {' '.join(f'--objective {spec}' for spec in tuned) or 'its objectives'}"
    if architecture:
        held = ", ".join(f"sm_{a}" for a in architecture_set(old.toolchain.architectures)) or "nvcc's default"
        raise ConfigError(
            f"{path} pins winners for {held}, {tuned_for}, and this tune's sm_{architecture} winner, for {wanted}, "
            f"cannot join them: each architecture's entry follows the record's objectives. Run {retune} to tune "
            f"sm_{architecture} for them, or with --no-pin to search and report without pinning; to replace the "
            "record, tune without --architecture, with --force (one winner for all the build's architectures)")
    raise ConfigError(
        f"{path} pins a winner {tuned_for}, and this tune's winner, for {wanted}, would replace it: run with --force "
        f"to replace it, with --no-pin to search and report without pinning, or {retune} to tune for what it was tuned for")


def pins_the_same(old: PinnedRecord, new: PinnedRecord) -> bool:
    """Whether `new` pins what `old` does: the same objectives, toolkit and architectures, the same controls (an ACF
    by its contents) and per-architecture entries, and objects of the same machine code. Writing it over `old`
    changes only the provenance: a second static tune of llm.c's softmax_forward "replaced" its pin with an equal
    one, a change to commit for nothing."""
    def pinned(controls: Controls) -> tuple[object, ...]:
        return controls.flags, controls.defines, None if controls.acf is None else controls.acf.sha256

    return (not_comparable(old, new) is None and pinned(old.controls) == pinned(new.controls)
            and old.objects == new.objects and not old.per_architecture and not new.per_architecture)


def not_comparable(old: PinnedRecord, new: PinnedRecord) -> str | None:
    """Why `old`'s figures cannot be compared with `new`'s, or None when they can."""
    if not same_objectives(old.objectives, new.objectives):
        return f"the old pin was tuned for other objectives ({', '.join(o.name for o in old.objectives) or 'none'})"
    if (old.toolchain.cuda, old.toolchain.nvcc_version) != (new.toolchain.cuda, new.toolchain.nvcc_version):
        return f"the old pin was measured with another toolkit (CUDA {old.toolchain.nvcc_version or old.toolchain.cuda})"
    if architecture_set(old.toolchain.architectures) != architecture_set(new.toolchain.architectures):
        shown = ", ".join(architecture_set(old.toolchain.architectures)) or "nvcc's default"
        return f"the old pin was tuned for other architectures ({shown})"
    if old.winner is None or old.baseline is None or new.baseline is None:
        return "the old pin holds no scores"
    return None


def compare(old: PinnedRecord, new: PinnedRecord, objectives: Sequence[Objective],
            remeasure: Remeasure | None = None) -> Standing:
    """Where the old pin stands against the new winner (`new`, its record as assembled).

    Static objectives compare the records' figures; benchmark ones re-measure the old pin beside the winner
    (`remeasure`; without it, or where it fails, they cannot be compared). The old pin is better when it is no
    worse on every objective and better on one (a timed objective: beyond the noise).
    """
    problem = not_comparable(old, new)
    if problem is not None:
        return Standing(False, False, f"not compared: {problem}")
    assert old.baseline is not None and old.winner is not None and new.baseline is not None
    assert new.winner is not None
    static = [i for i, o in enumerate(objectives) if o.source == "static"]
    moved = [objectives[i].name for i in static if old.baseline.scores[i] != new.baseline.scores[i]]
    if moved:
        return Standing(False, False, f"not compared: the compiler's defaults measure other {', '.join(moved)} now "
                                      "than when the old pin was made (the sources changed)")
    timed = [i for i, o in enumerate(objectives) if o.source != "static"]
    samples: tuple[dict[str, list[float]], dict[str, list[float]]] = ({}, {})
    if timed:
        if remeasure is None or any(objectives[i].source != "benchmark" for i in timed):
            return Standing(False, False, "not compared: "
                            + ", ".join(objectives[i].name for i in timed) + " cannot be taken from the old record")
        measured = remeasure(old.controls)
        if isinstance(measured, str):
            return Standing(False, False, f"not compared: {measured}")
        samples = measured
    parts: list[str] = []
    old_wins = new_wins = False
    for i, objective in enumerate(objectives):
        if i in static:
            before, after = old.winner.scores[i], new.winner.scores[i]
            sign = 1.0 if objective.direction == "min" else -1.0
            old_wins |= sign * before < sign * after
            new_wins |= sign * after < sign * before
            parts.append(f"{objective.name} old {with_unit(objective, before)} against new "
                         f"{with_unit(objective, after)} ({change_text(before, after, objective.rate_unit)})")
            continue
        key = metric_key(objective)
        old_samples, new_samples = samples[0].get(key, []), samples[1].get(key, [])
        if not old_samples or not new_samples:
            return Standing(False, False, f"not compared: re-measuring the old pin gave no {objective.name}")
        old_verdict = beats_baseline(new_samples, old_samples, objective.direction, alpha=FINAL_ALPHA)
        new_verdict = beats_baseline(old_samples, new_samples, objective.direction, alpha=FINAL_ALPHA)
        old_wins |= old_verdict.better
        new_wins |= new_verdict.better
        before, after = statistics.median(old_samples), statistics.median(new_samples)
        parts.append(f"{objective.name} old {with_unit(objective, before)} against new {with_unit(objective, after)} "
                     f"({change_text(before, after, objective.rate_unit)}; re-measured side by side, {len(new_samples)} runs each: "
                     + ("the old pin is faster beyond the noise" if old_verdict.better else
                        "the new winner is faster beyond the noise" if new_verdict.better else "within the noise")
                     + ")")
    return Standing(True, old_wins and not new_wins, "; ".join(parts), new_better=new_wins and not old_wins)
