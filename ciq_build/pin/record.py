"""The pinned record as a value: ``<pin dir>/<target>.json`` (+ ``<target>.<sha12>.acf``), its fields and names.

The record is what a tune leaves behind for version control, and every later build
applies it. This module holds its model (PinnedRecord and its parts), where its files
are named, and the checks of those names; pin.read reads and validates a record,
pin.write writes one, pin.apply decides what a build applies, pin.display shows it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from ciq_build.compiler.architectures import arch_name, architecture_order
from ciq_build.compiler.controls import Controls
from ciq_build.compiler.fingerprint import ObjectInfo
from ciq_build.core.objectives import Objective
from ciq_build.core.pareto import Direction
from ciq_build.core.rules import is_target_name
from ciq_build.errors import RecordError

SCHEMA = 1


@dataclass(frozen=True)
class RecordToolchain:
    """The toolkit the winner was measured with."""

    cuda: str  # "major.minor", compared with the building compiler
    nvcc_version: str = ""
    ptxas_version: str = ""
    architectures: tuple[str, ...] = ()


@dataclass(frozen=True)
class RecordObjective:
    name: str
    direction: str = "min"  # "min" or "max"


def same_objectives(old: Sequence[RecordObjective], new: Sequence[RecordObjective | Objective]) -> bool:
    """Whether a pin tuned for `old` answers what a tune for `new` asks: the same objectives and directions, in the
    same order (the order picks the Pareto point pinned, and each architecture's entry scores them in it)."""
    return [(o.name, o.direction) for o in old] == [(o.name, o.direction) for o in new]


def objective_specs(objectives: Sequence[RecordObjective]) -> list[str]:
    """A record's objectives as --objective reads them back ("registers", "max:metric:gflops")."""
    return [Objective(o.name, cast(Direction, o.direction)).spec for o in objectives]


@dataclass(frozen=True)
class ScoreSummary:
    """Scores per objective (same order as the record's objectives) and their spread."""

    scores: tuple[float, ...]
    spread: tuple[float, ...]


@dataclass(frozen=True)
class ArchitectureEntry:
    """One architecture's own winner in a per-architecture record (``per_architecture.<arch>``)."""

    controls: Controls
    provenance: dict[str, Any] = field(default_factory=dict)
    baseline: ScoreSummary | None = None
    winner: ScoreSummary | None = None


@dataclass(frozen=True)
class PinnedRecord:
    """One pinned record (mirrors the JSON schema in docs/ARCHITECTURE.md)."""

    target: str
    controls: Controls
    toolchain: RecordToolchain
    provenance: dict[str, Any] = field(default_factory=dict)  # free-form JSON: engine, seed, budget, ...
    objectives: tuple[RecordObjective, ...] = ()
    baseline: ScoreSummary | None = None
    winner: ScoreSummary | None = None
    # object path (relative to the target's dir) -> arch -> facts
    objects: dict[str, dict[str, ObjectInfo]] = field(default_factory=dict)
    schema: int = SCHEMA
    # arch (one spelling, arch_name) -> its own winner; the top-level controls serve the
    # architectures of toolchain.architectures without an entry.
    per_architecture: dict[str, ArchitectureEntry] = field(default_factory=dict)

    def controls_for(self, arch: str) -> Controls:
        """The controls a build applies to `arch`: its entry's, else the record's."""
        entry = self.per_architecture.get(arch_name(arch))
        return entry.controls if entry is not None else self.controls

    def applied_controls(self) -> list[tuple[str, Controls]]:
        """(arch, controls) for each architecture the record was tuned for, in one spelling;
        [("", controls)] for a record that names no architecture."""
        archs = architecture_set(self.toolchain.architectures)
        return [(a, self.controls_for(a)) for a in archs] if archs else [("", self.controls)]

    def all_controls(self) -> list[Controls]:
        """The top-level controls and every entry's: what the rules check."""
        return [self.controls, *(e.controls for _, e in sorted(self.per_architecture.items()))]


def record_path(pin_dir: Path, target: str) -> Path:
    return Path(pin_dir) / f"{checked_target(target)}.json"


def acf_path(pin_dir: Path, target: str, digest: str, arch: str = "") -> Path:
    """Where an ACF is pinned: ``<target>.<sha12>.acf`` (an entry's ``<target>.<arch>.<sha12>.acf``), a name
    of its content, so that a new pin never replaces the file a committed record names: the record is
    written after its ACF and the old ACF deleted after the record, and a kill between leaves a pin
    whose record and ACF agree (issue 21)."""
    return Path(pin_dir) / ".".join([checked_target(target), *([arch] if arch else []), digest[:12], "acf"])


def is_targets_acf(name: str, target: str) -> bool:
    """Whether `name` (a bare file name, the rule book's acf_file) names one of `target`'s ACFs:
    ``<target>.acf``, ``<target>.<...>.acf`` (acf_path's names) or ``<target>-<...>.acf`` (earlier
    writers'). The CMake module's _ciq_read_controls checks the same."""
    return name.endswith(".acf") and (name == f"{target}.acf" or name.startswith((f"{target}.", f"{target}-")))


def check_pin_dir(pin_dir: Path, top: Path | None = None) -> None:
    """Refuse a pin directory that is a symbolic link (a committed ``ciq -> elsewhere``), or lies in one
    below the project's top folder `top` (``pins -> elsewhere`` with PIN_DIR pins/ciq): the pins would be
    read from, and a tune would write them to, wherever it points. Without `top` (or for a pin dir outside
    it) the pin dir itself is checked. The CMake module's _ciq_resolve_pin refuses the same."""
    pin_dir = Path(os.path.abspath(pin_dir))
    folders = [pin_dir]
    if top is not None and Path(os.path.abspath(top)) in pin_dir.parents:
        folders += list(pin_dir.parents)[:list(pin_dir.parents).index(Path(os.path.abspath(top)))]
    for folder in folders:
        if os.path.islink(folder):
            where = "is a symbolic link" if folder == pin_dir else f"lies in {folder}, a symbolic link"
            raise RecordError(
                f"the pin directory {pin_dir} {where} (to {os.readlink(folder)}); pins must live in a real "
                "directory of the source tree. Replace the link with a directory holding the pins."
            )


def checked_target(target: object) -> str:
    if not is_target_name(target):
        raise RecordError(
            f"target name {target!r} cannot name a pinned record: use a plain CMake target name "
            "(letters, digits, _ . + -, starting with a letter, digit or _)."
        )
    return target


def architecture_set(architectures: Iterable[str]) -> tuple[str, ...]:
    """Architectures in one spelling (compiler.architectures.arch_name), unique, sorted by number as a person
    reads them (75 before 100; the CMake module's _ciq_architecture_set sorts the same)."""
    return tuple(sorted({name for name in map(arch_name, architectures) if name}, key=architecture_order))
