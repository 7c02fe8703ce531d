"""The pinned record: ``<pin dir>/<target>.json`` (+ ``<target>.<sha12>.acf``) written, read, validated.

The record is what a tune leaves behind for version control, and every later
build applies it. It is therefore read as untrusted input: every field is
type-checked, flags and defines go through the allow-list, the ACF must be a
file inside the pin directory whose sha256 matches, and anything unexpected
is a RecordError that says what to do. Writes are atomic (temp file in the same
directory, fsync, os.replace): the ACF first, under a name of its content, then
the record, then the old ACF goes, so a kill at any moment leaves a record whose
ACF is there and matches; a record whose ACF was replaced underneath it is
caught by the sha256.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ciq_build.compiler.controls import AcfRef, Controls, controls_to_json
from ciq_build.compiler.fingerprint import ObjectInfo
from ciq_build.compiler.toolchain import arch_name, major_minor
from ciq_build.core.allowlist import check_flag
from ciq_build.core.objectives import metric_key, parse_objective
from ciq_build.core.rules import (
    RuleBook,
    declared_params,
    field_problem,
    is_target_name,
    load_rules,
    parse_strict,
    read_regular_file,
    value_in_domain,
)
from ciq_build.errors import CiqError, RecordError, UnsafeFlagError
from ciq_build.measure.sizes import size_ratios, sizes_of
from ciq_build.state.durable import atomic_write, fsync_dir

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


# --------------------------------------------------------------------------- paths


def record_path(pin_dir: Path, target: str) -> Path:
    return Path(pin_dir) / f"{_target_name(target)}.json"


def acf_path(pin_dir: Path, target: str, digest: str, arch: str = "") -> Path:
    """Where an ACF is pinned: ``<target>.<sha12>.acf`` (an entry's ``<target>.<arch>.<sha12>.acf``), a name
    of its content, so that a new pin never replaces the file a committed record names: the record is
    written after its ACF and the old ACF deleted after the record, and a kill between leaves a pin
    whose record and ACF agree (issue 21)."""
    return Path(pin_dir) / ".".join([_target_name(target), *([arch] if arch else []), digest[:12], "acf"])


# What git must not convert in a pin dir: a record's line ends are read alike by both readers, but
# an ACF's bytes are checked by their sha256 (core.autocrlf would change them).
GITATTRIBUTES = "*.json -text\n*.acf binary\n"


def is_targets_acf(name: str, target: str) -> bool:
    """Whether `name` (a bare file name, the rule book's acf_file) names one of `target`'s ACFs:
    ``<target>.acf``, ``<target>.<...>.acf`` (acf_path's names) or ``<target>-<...>.acf`` (earlier
    writers'). The CMake module's _ciq_read_controls checks the same."""
    return name.endswith(".acf") and (name == f"{target}.acf" or name.startswith((f"{target}.", f"{target}-")))


def check_pin_dir(pin_dir: Path) -> None:
    """Refuse a pin directory that is a symbolic link (a committed ``ciq -> elsewhere``): the pins
    would be read from, and a tune would write them to, wherever it points. The CMake module's
    _ciq_resolve_pin refuses it too."""
    if os.path.islink(pin_dir):
        raise RecordError(
            f"the pin directory {pin_dir} is a symbolic link (to {os.readlink(pin_dir)}); pins must live in a "
            "real directory of the source tree. Replace the link with a directory holding the pins."
        )


def _target_name(target: object) -> str:
    if not is_target_name(target):
        raise RecordError(
            f"target name {target!r} cannot name a pinned record: use a plain CMake target name "
            "(letters, digits, _ . + -, starting with a letter, digit or _)."
        )
    return target


# --------------------------------------------------------------------------- writing


def _atomic_write(path: Path, data: bytes) -> None:
    """atomic_write, first deleting what an earlier write of `path` killed mid-way left behind."""
    _remove_stale_temporaries(path.parent, path.name)
    atomic_write(path, data)


def record_to_json(record: PinnedRecord, pin_dir: Path) -> dict[str, Any]:
    """The record as the JSON object written to ``<pin_dir>/<target>.json``."""

    def summary(s: ScoreSummary | None) -> Any:
        return None if s is None else {"scores": list(s.scores), "spread": list(s.spread)}

    out: dict[str, Any] = {
        "schema": record.schema,
        "target": record.target,
        "controls": controls_to_json(record.controls, pin_dir),
        "toolchain": {
            "cuda": record.toolchain.cuda,
            "nvcc_version": record.toolchain.nvcc_version,
            "ptxas_version": record.toolchain.ptxas_version,
        },
        "provenance": record.provenance,
        "objectives": [{"name": o.name, "direction": o.direction} for o in record.objectives],
        "baseline": summary(record.baseline),
        "winner": summary(record.winner),
        "objects": {
            obj: {
                arch: {"registers": info.registers, "stack": info.stack, "code_sha256": info.code_sha256}
                for arch, info in archs.items()
            }
            for obj, archs in record.objects.items()
        },
    }
    if record.toolchain.architectures:
        # Absent for nvcc's default architecture: the readers refuse an empty list (issue 21).
        out["toolchain"]["architectures"] = list(record.toolchain.architectures)
    if record.per_architecture:  # absent otherwise: a single-winner record is written as before
        out["per_architecture"] = {
            arch: {
                "controls": controls_to_json(entry.controls, pin_dir),
                "provenance": entry.provenance,
                "baseline": summary(entry.baseline),
                "winner": summary(entry.winner),
            }
            for arch, entry in sorted(record.per_architecture.items())
        }
    return out


def _named_acfs(record_file: Path) -> set[str]:
    """The ACF files a record names (its own and its entries'), read leniently: nothing when it is
    missing or unreadable, since it then names nothing anyone could apply."""
    rules = load_rules()
    try:
        data = parse_strict(read_regular_file(record_file, rules.limit("record_bytes"), "record"), rules)
        named = [data.get("controls", {}).get("acf", {}).get("file")]
        named += [(e.get("controls", {}).get("acf") or {}).get("file")
                  for e in (data.get("per_architecture") or {}).values()]
    except (OSError, ValueError, RecursionError, AttributeError):
        return set()
    return {name for name in named if isinstance(name, str)}


def _acf_users(pin_dir: Path, acf_name: str, target: str) -> list[str]:
    """The other records in `pin_dir` whose ACFs include `acf_name`."""
    return [other.name for other in (sorted(Path(pin_dir).glob("*.json")) if Path(pin_dir).is_dir() else [])
            if other.stem != target and acf_name in _named_acfs(other)]


def _make_pin_dir(pin_dir: Path) -> None:
    """Create `pin_dir` if need be; a new one gets a .gitattributes (GITATTRIBUTES), never replacing one."""
    if pin_dir.is_dir():
        return
    pin_dir.mkdir(parents=True, exist_ok=True)
    attributes = pin_dir / ".gitattributes"
    if not os.path.lexists(attributes):
        atomic_write(attributes, GITATTRIBUTES.encode())


def _place_acf(pinned_acf: Path, data: bytes, target: str) -> None:
    """Write an ACF under its content name, unless that file is there already (then it is this ACF)."""
    if pinned_acf.is_file() and not pinned_acf.is_symlink() and pinned_acf.read_bytes() == data:
        return
    users = _acf_users(pinned_acf.parent, pinned_acf.name, target)
    if users:
        raise RecordError(
            f"{pinned_acf} is named by {', '.join(users)} but holds other bytes than its name says; "
            "move that record's ACF aside (or retune it), then pin again."
        )
    _atomic_write(pinned_acf, data)  # os.replace swaps a symlink itself, not its target


def _remove_unpinned_acfs(pin_dir: Path, target: str, keep: set[str], previous: set[str]) -> None:
    """After the record is written: delete the ACFs the previous record named and those earlier,
    killed writes left under `target`'s content names, unless this record or another one names them."""
    content_name = re.compile(re.escape(target) + r"([.][1-9][0-9]*[a-z]?)?[.][0-9a-f]{12}[.]acf")
    left = {name for name in os.listdir(pin_dir) if content_name.fullmatch(name)}
    for name in os.listdir(pin_dir):  # and what a write killed mid-way left (atomic_write's temporaries)
        if (m := re.fullmatch(r"[.](.+)[.][^.]+[.]tmp", name)) and content_name.fullmatch(m.group(1)):
            _remove_stale_temporaries(pin_dir, m.group(1))
    removed = False
    for name in sorted((previous | left) - keep):
        stale = pin_dir / name
        if "/" in name or not (stale.is_file() or stale.is_symlink()) or _acf_users(pin_dir, name, target):
            continue
        stale.unlink()
        removed = True
    if removed:
        fsync_dir(pin_dir)


def _remove_stale_temporaries(directory: Path, name: str) -> None:
    """Delete what an interrupted atomic_write of `name` left behind (a kill mid-write)."""
    for stale in directory.glob(f".{name}.*.tmp"):
        try:
            if stale.is_file() and not stale.is_symlink():
                stale.unlink()
        except OSError:
            pass


def _writable(value: Any) -> Any:
    """`value` with every string safe for both readers: a NUL, a surrogate or a character
    beyond U+FFFF (which JSON would spell as a surrogate pair) becomes U+FFFD."""
    if isinstance(value, str):
        return re.sub("[\x00\ud800-\udfff\U00010000-\U0010ffff]", "\ufffd", value)
    if isinstance(value, dict):
        return {_writable(k): _writable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_writable(v) for v in value]
    return value


def write_record(pin_dir: Path, record: PinnedRecord, acf_source: Path | None = None) -> PinnedRecord:
    """Pin `record` as ``<pin_dir>/<target>.json`` (+ ``<target>.<sha12>.acf``); return what was written.

    ``pin_dir`` may also be the record's own path, ``<pin_dir>/<target>.json``.

    The ACF (``acf_source``, or else ``record.controls.acf.path``) is copied first,
    atomically, under its content name (acf_path), and its sha256 recorded; the
    ACF the previous record named goes only after the new record is in place; when the record's
    AcfRef already carries a sha256 the copy must match it (the file changed since
    it was measured otherwise). The record is validated exactly as read_record
    would, before anything is written, so an unreadable pin is never left behind.
    """
    target = _target_name(record.target)
    pin_dir = Path(pin_dir)
    if pin_dir.name == f"{target}.json":
        pin_dir = pin_dir.parent  # the record's own path names its pin dir just as well
    check_pin_dir(pin_dir)
    acf = record.controls.acf
    source = Path(acf_source) if acf_source is not None else (Path(acf.path) if acf is not None else None)
    if source is not None and acf is None:
        raise RecordError(
            f"an ACF ({source}) was given for target {target!r} but its controls name no ACF "
            "compiler; set controls.acf (compiler 'ptxas' or 'nvcc')."
        )
    acf_bytes: bytes | None = None
    pinned_acf: Path | None = None
    if source is not None and acf is not None:
        try:
            acf_bytes = source.read_bytes()
        except OSError as exc:
            raise RecordError(f"cannot read the ACF {source} to pin it for {target!r}: {exc}.") from exc
        digest = hashlib.sha256(acf_bytes).hexdigest()
        if acf.sha256 and acf.sha256 != digest:
            raise RecordError(
                f"the ACF {source} has sha256 {digest}, but the candidate measured an ACF with "
                f"{acf.sha256}: the file changed after it was measured. Retune the target."
            )
        pinned_acf = acf_path(pin_dir, target, digest)
        pinned_ref = AcfRef(path=pinned_acf.absolute(), compiler=acf.compiler, sha256=digest)
        record = replace(record, controls=replace(record.controls, acf=pinned_ref))

    # Serialise, then validate the very bytes through the reader's path (rule book
    # layers 2 and 3), before touching the pin dir: an unreadable pin is never written.
    document = _checked_document(record, pin_dir)
    path = record_path(pin_dir, target)
    try:
        _make_pin_dir(pin_dir)
        previous = _named_acfs(path)
        # The ACF, then the record, then the old ACF: at every moment the record names an ACF that is there.
        if pinned_acf is not None and acf_bytes is not None:
            _place_acf(pinned_acf, acf_bytes, target)
        _atomic_write(path, (document + "\n").encode("utf-8"))
        keep = {Path(c.acf.path).name for c in record.all_controls() if c.acf is not None}
        _remove_unpinned_acfs(pin_dir, target, keep, previous)
    except OSError as exc:
        raise RecordError(
            f"cannot write the pinned record for {target!r} in {pin_dir}: {exc}. "
            "Check that the pin directory (PIN_DIR of ciq_tune_target) is writable."
        ) from exc
    return record


def merge_architecture(path: Path, tuned: PinnedRecord, arch: str) -> PinnedRecord:
    """Pin `tuned` (the record of a tune --architecture `arch`: built for `arch` alone) as `arch`'s
    entry of the record at `path`, leaving the other architectures' entries as they are.

    The caller holds the target's lock. An existing record's architectures without an entry of
    their own keep the record's top-level controls (its winner for all of them); a new record has
    compiler defaults there, and `arch` alone until the others are tuned. The entry's ACF is
    written as ``<target>.<arch>.<sha12>.acf`` (before the record, as write_record does).
    """
    path = Path(path)
    arch = arch_name(arch)
    pin_dir = path.parent
    check_pin_dir(pin_dir)
    target = _target_name(tuned.target)
    existing = read_record(path) if os.path.lexists(path) else None
    if existing is not None:
        if existing.toolchain.cuda != tuned.toolchain.cuda or \
                major_minor(existing.toolchain.ptxas_version) != major_minor(tuned.toolchain.ptxas_version):
            raise RecordError(
                f"cannot add the sm_{arch} winner to {path}: the record was tuned with CUDA {existing.toolchain.cuda} "
                f"(ptxas {existing.toolchain.ptxas_version or '?'}), this tune used CUDA {tuned.toolchain.cuda} "
                f"(ptxas {tuned.toolchain.ptxas_version or '?'}), and one record holds one toolkit's winners. "
                f"Retune its other architectures with this toolkit, or remove {path.name} to start over.")
        if [o.name for o in existing.objectives] != [o.name for o in tuned.objectives]:
            raise RecordError(
                f"cannot add the sm_{arch} winner to {path}: the record's objectives are "
                f"{[o.name for o in existing.objectives]}, this tune's {[o.name for o in tuned.objectives]}, and "
                "each entry's scores follow the record's objectives. Tune with --objective as the record has "
                f"them, or remove {path.name} to start over.")
    acf = tuned.controls.acf
    entry_acf = None
    acf_bytes = None
    if acf is not None:
        try:
            acf_bytes = Path(acf.path).read_bytes()
        except OSError as exc:
            raise RecordError(f"cannot read the ACF {acf.path} to pin it for {target!r}: {exc}.") from exc
        digest = hashlib.sha256(acf_bytes).hexdigest()
        if acf.sha256 and acf.sha256 != digest:
            raise RecordError(f"the ACF {acf.path} has sha256 {digest}, but the candidate measured an ACF with "
                              f"{acf.sha256}: the file changed after it was measured. Retune the target.")
        entry_acf = AcfRef(path=acf_path(pin_dir, target, digest, arch).absolute(), compiler=acf.compiler,
                           sha256=digest)
    entry = ArchitectureEntry(controls=replace(tuned.controls, acf=entry_acf), provenance=tuned.provenance,
                              baseline=tuned.baseline, winner=tuned.winner)
    base = existing or replace(tuned, controls=Controls(), provenance={}, baseline=None, winner=None, objects={},
                               toolchain=replace(tuned.toolchain, architectures=()))
    objects = {obj: {a: info for a, info in archs.items() if arch_name(a) != arch}
               for obj, archs in base.objects.items()}
    for obj, archs in tuned.objects.items():
        objects.setdefault(obj, {}).update(archs)
    merged = replace(
        base,
        toolchain=replace(base.toolchain, architectures=architecture_set([*base.toolchain.architectures, arch])),
        objects={obj: archs for obj, archs in objects.items() if archs},
        per_architecture={**base.per_architecture, arch: entry},
    )
    # Checked as a build would read it (equal -D across the architectures above all), before anything is written.
    document = _checked_document(merged, pin_dir)
    try:
        _make_pin_dir(pin_dir)
        previous = _named_acfs(path)
        if acf_bytes is not None and entry_acf is not None:
            _place_acf(Path(entry_acf.path), acf_bytes, target)
        _atomic_write(path, (document + "\n").encode("utf-8"))
        keep = {Path(c.acf.path).name for c in merged.all_controls() if c.acf is not None}
        _remove_unpinned_acfs(pin_dir, target, keep, previous)
    except OSError as exc:
        raise RecordError(
            f"cannot write the pinned record for {target!r} in {pin_dir}: {exc}. "
            "Check that the pin directory (PIN_DIR of ciq_tune_target) is writable."
        ) from exc
    return merged


def _checked_document(record: PinnedRecord, pin_dir: Path) -> str:
    """`record` serialised, after validating those very bytes as read_record would (without the ACF files)."""
    target = record.target
    try:
        document = json.dumps(_writable(record_to_json(record, pin_dir)), indent=2, allow_nan=False,
                              ensure_ascii=True)
    except (TypeError, ValueError, RecursionError) as exc:
        raise RecordError(
            f"the record for {target!r} holds a value a record cannot hold ({exc}); scores must be "
            "finite numbers, and provenance only JSON values (no NaN, sets or objects)."
        ) from exc
    rules = load_rules()
    where = Path(pin_dir) / f"{target}.json"
    _validate_document(parse_record_bytes(document.encode("ascii"), where, rules), where, pin_dir,
                       check_acf_file=False, rules=rules)
    return document


# --------------------------------------------------------------------------- reading


def _fail(path: Path, where: str, problem: str) -> RecordError:
    return RecordError(
        f"pinned record {path}: {where} {problem}. Retune the target "
        f"(python -m ciq_build tune {path.stem}) to write a fresh record, or fix the file by hand."
    )


def read_record_bytes(path: Path, rules: RuleBook) -> bytes:
    """The record's bytes: a regular file within the size limit (rule book layer 1)."""
    try:
        return read_regular_file(path, rules.limit("record_bytes"), "the pinned record")
    except FileNotFoundError as exc:
        raise RecordError(
            f"no pinned record at {path}; tune the target first (python -m ciq_build tune {path.stem})."
        ) from exc
    except OSError as exc:
        raise RecordError(
            f"cannot read pinned record {path}: {exc.strerror or exc}. Restore it from version control "
            f"or retune (python -m ciq_build tune {path.stem})."
        ) from exc


def parse_record_bytes(raw: bytes, path: Path, rules: RuleBook | None = None) -> Any:
    """JSON syntax only (rule book layer 2): bytes -> Python value, or RecordError."""
    rules = rules or load_rules()
    try:
        return parse_strict(raw, rules)
    except (ValueError, RecursionError) as exc:
        raise RecordError(
            f"pinned record {path} {exc}; restore it from version control or retune "
            f"(python -m ciq_build tune {path.stem})."
        ) from exc


def read_record(path: Path) -> PinnedRecord:
    """Read and validate a pinned record; the ACF it names must exist and match its sha256."""
    path = Path(path)
    check_pin_dir(path.parent)
    rules = load_rules()
    data = parse_record_bytes(read_record_bytes(path, rules), path, rules)
    return _validate_document(data, path, path.parent, check_acf_file=True, rules=rules)


def _validate_document(data: Any, path: Path, pin_dir: Path, check_acf_file: bool,
                       rules: RuleBook | None = None) -> PinnedRecord:
    rules = rules or load_rules()
    if isinstance(data, dict) and type(data.get("schema")) is int and data["schema"] != rules.schema:
        schema = data["schema"]
        raise RecordError(
            f"pinned record {path} has schema {schema}, but this ciq_build reads schema {rules.schema}"
            + (
                ": it was written by a newer ciq_build. Upgrade ciq_build (pip install -U ciq-build), "
                if schema > rules.schema else ". "
            )
            + f"or retune the target (python -m ciq_build tune {path.stem}) to rewrite it."
        )
    problem = field_problem(rules, data)
    if problem is not None:
        where, why = problem
        if where.startswith("controls.flags[") and "allow-list" in why:
            raise UnsafeFlagError(f"pinned record {path}: {where}: {_flag_refusal(data, where)}")
        if where.startswith(("controls.flags", "controls.defines")):
            # What reaches the compiler's command line: the unsafe-flag error, named as such.
            raise UnsafeFlagError(str(_fail(path, where, why)))
        raise _fail(path, where, why)

    target = data["target"]
    if target != path.stem:
        raise _fail(path, "target", f"is {target!r}, but the file is named {path.name} (it must be {target}.json)")
    controls = _read_controls(path, data["controls"], pin_dir, check_acf_file, rules)
    tc = data["toolchain"]
    if "architectures" in tc:
        _check_named_architectures(path, tc["architectures"], rules)
    toolchain = RecordToolchain(
        cuda=tc["cuda"],
        nvcc_version=tc.get("nvcc_version", ""),
        ptxas_version=tc.get("ptxas_version", ""),
        architectures=tuple(tc.get("architectures", [])),
    )
    objectives = tuple(RecordObjective(o["name"], o["direction"]) for o in data.get("objectives", []))
    names = [o.name for o in objectives]
    if len(set(names)) != len(names):
        raise _fail(path, "objectives", f"name an objective twice: {names}")
    baseline = _read_summary(path, data.get("baseline"), "baseline", len(objectives))
    winner = _read_summary(path, data.get("winner"), "winner", len(objectives))
    objects = {
        obj: {arch: ObjectInfo(i["registers"], i["stack"], i["code_sha256"]) for arch, i in archs.items()}
        for obj, archs in data.get("objects", {}).items()
    }
    tuned = architecture_set(toolchain.architectures)
    entries: dict[str, ArchitectureEntry] = {}
    for arch, e in data.get("per_architecture", {}).items():
        here = f"per_architecture.{arch}"
        if arch not in tuned:
            raise _fail(path, here, f"is an entry for {arch}, which toolchain.architectures does not name "
                                    f"({', '.join(tuned) or 'none'}); add {arch} there, or remove the entry")
        entries[arch] = ArchitectureEntry(
            controls=_read_controls(path, e["controls"], pin_dir, check_acf_file, rules, f"{here}.controls"),
            provenance=e.get("provenance", {}),
            baseline=_read_summary(path, e.get("baseline"), f"{here}.baseline", len(objectives)),
            winner=_read_summary(path, e.get("winner"), f"{here}.winner", len(objectives)),
        )
    record = PinnedRecord(
        schema=data["schema"],
        target=target,
        controls=controls,
        toolchain=toolchain,
        provenance=data.get("provenance", {}),
        objectives=objectives,
        baseline=baseline,
        winner=winner,
        objects=objects,
        per_architecture=entries,
    )
    shared_defines_problem(record, path)
    return record


def _check_named_architectures(path: Path, architectures: list[str], rules: RuleBook) -> None:
    """Refuse a toolchain.architectures list that names no architecture (the CMake module's _ciq_read_pin
    checks the same): reduced to nothing, it would switch the architecture guard off."""
    if not architectures:
        raise _fail(path, "toolchain.architectures", "is empty; list the architectures the record was tuned for "
                                                     "(e.g. [\"90a\"]), or leave the field out for nvcc's default")
    for i, arch in enumerate(architectures):
        if not rules.matches("tuned_arch", arch_name(arch)):
            raise _fail(path, f"toolchain.architectures[{i}]", f"is {arch!r}, which names no CUDA architecture "
                                                               "(e.g. 90a, sm_100a, 120, native)")


def _where(record: PinnedRecord, arch: str) -> str:
    return f"per_architecture.{arch}.controls" if arch in record.per_architecture else "controls"


def shared_defines_problem(record: PinnedRecord, path: Path) -> None:
    """Refuse a record whose architectures would get different -D parameters.

    A -D reaches the host compile, which nvcc runs once for all the
    architectures of a compile: no architecture can have a value of its own.
    The CMake module's _ciq_read_pin makes the same check.
    """
    applied = record.applied_controls()
    first_arch, first = applied[0]
    for arch, controls in applied[1:]:
        if controls.defines != first.defines:
            raise _fail(
                path, f"{_where(record, arch)}.defines",
                f"differ from {_where(record, first_arch)}.defines ({_shown_defines(controls)} against "
                f"{_shown_defines(first)}): a -D parameter reaches the host compile, which nvcc runs once "
                "for every architecture. Give every architecture the same PARAMS values (tune each with "
                "--architecture and the same values), or tune all architectures together",
            )


def _shown_defines(controls: Controls) -> str:
    return " ".join(f"-D{n}={v}" for n, v in controls.defines) or "none"


def _flag_refusal(data: dict[str, Any], where: str) -> str:
    index = int(where[len("controls.flags["):-1])
    try:
        check_flag(data["controls"]["flags"][index])
    except UnsafeFlagError as exc:
        return str(exc)
    return "the flag is not on the allow-list"  # unreachable: the rule book refused it


def _read_controls(path: Path, c: dict[str, Any], pin_dir: Path, check_acf_file: bool,
                   rules: RuleBook, where: str = "controls") -> Controls:
    flags = c.get("flags", [])
    defines = tuple(sorted((c.get("defines") or {}).items()))
    acf_obj = c.get("acf")
    acf = None if acf_obj is None else _read_acf(path, acf_obj, pin_dir, check_acf_file, rules, f"{where}.acf")
    try:
        # Controls refuses flags that set one option twice, and pairs ptxas refuses.
        return Controls(flags=tuple(flags), defines=defines, acf=acf)
    except UnsafeFlagError:
        raise
    except CiqError as exc:
        raise _fail(path, where, f"is inconsistent: {exc}") from exc


def _read_acf(path: Path, a: dict[str, Any], pin_dir: Path, check_file: bool, rules: RuleBook,
              where: str = "controls.acf") -> AcfRef:
    name, sha, compiler = a["file"], a["sha256"], a["compiler"]
    if not is_targets_acf(name, path.stem):
        raise _fail(path, f"{where}.file", f"is {name!r}, which is not an ACF of this target: its name must be "
                                           f"{path.stem}.acf or {path.stem}.<...>.acf (as tune pins it)")
    candidate = Path(pin_dir) / name
    if check_file:
        try:
            data = read_regular_file(candidate, rules.limit("acf_bytes"), "the ACF")
        except FileNotFoundError:
            raise _fail(
                path, f"{where}.file",
                f"names {candidate}, which does not exist; restore it from version control (commit the "
                ".acf beside the .json)",
            ) from None
        except OSError as exc:
            raise _fail(path, f"{where}.file", f"cannot be used: {exc.strerror or exc}") from None
        if not data:
            raise _fail(path, f"{where}.file", f"names {candidate}, which is empty")
        actual = hashlib.sha256(data).hexdigest()
        if actual != sha:
            raise RecordError(
                f"pinned record {path}: the ACF {candidate} has sha256 {actual}, but the record "
                f"expects {sha}: the ACF was changed or replaced after it was pinned. Restore the "
                f"matching file from version control, or retune (python -m ciq_build tune {path.stem})."
            )
    return AcfRef(path=Path(os.path.abspath(candidate)), compiler=compiler, sha256=sha)


def _read_summary(path: Path, value: Any, where: str, n: int) -> ScoreSummary | None:
    if value is None:
        return None
    scores, spread = tuple(float(x) for x in value["scores"]), tuple(float(x) for x in value["spread"])
    if len(scores) != n or len(spread) != n:
        raise _fail(path, where, f"needs one score and one spread per objective ({n}), has {len(scores)} and {len(spread)}")
    return ScoreSummary(scores, spread)


# --------------------------------------------------------------------------- what a build applies


def check_defines(record: PinnedRecord, params: Sequence[str], path: Path) -> None:
    """Refuse a define that is not a declared PARAMS name, or whose value is outside its domain."""
    declared = declared_params(params)
    defines = sorted({d for controls in record.all_controls() for d in controls.defines})
    for name, value in defines:
        if name not in declared:
            names = ", ".join(sorted(declared)) or "none"
            raise UnsafeFlagError(
                f"pinned record {path}: controls.defines.{name} is refused: only the PARAMS of "
                f"ciq_tune_target({record.target}) may be defined (declared: {names}). Add {name} to PARAMS "
                "and retune, or remove it from the record."
            )
        if not value_in_domain(declared[name], value):
            raise UnsafeFlagError(
                f"pinned record {path}: controls.defines.{name}={value!r} is outside its declared domain "
                f"{declared[name]!r}. Retune, or set a value that PARAMS allows."
            )


def check_numerics(record: PinnedRecord, allow_numerics: bool, path: Path, rules: RuleBook | None = None) -> None:
    rules = rules or load_rules()
    for flag in [f for controls in record.all_controls() for f in controls.flags]:
        if rules.is_numerics(flag) and not allow_numerics:
            raise UnsafeFlagError(
                f"pinned record {path}: flag {flag!r} changes floating-point results, and "
                f"the target {record.target!r} does not allow numerics flags (ALLOW_NUMERICS in "
                "ciq_tune_target, allow_numerics=True in CudaExtension). Allow them, or retune without."
            )


def pin_arguments(record: PinnedRecord, path: Path, *, params: Sequence[str], allow_numerics: bool,
                  copy_dir: Path) -> list[str]:
    """The nvcc arguments a build applies for `record`'s top-level controls, after every build-time rule.

    The same rules, in the same order, as the CMake module's _ciq_read_pin: the
    defines must be declared PARAMS with values in their domain, numerics flags
    need the target's consent, and an ACF whose path a shell would not read
    literally is used through a copy ``<copy_dir>/<target>.acf``.
    """
    rules = load_rules()
    check_numerics(record, allow_numerics, path, rules)
    check_defines(record, params, path)
    return controls_arguments(record.controls, path, copy_dir / f"{record.target}.acf", rules)


def device_arguments(controls: Controls, path: Path, copy: Path, rules: RuleBook) -> list[str]:
    """The arguments of `controls` that reach only the device steps (cicc, ptxas): the flags and a
    ptxas ACF. Measured with nvcc 13.3's --dryrun: every allow-listed flag changes only each
    architecture's cicc and ptxas steps (and fatbinary's note of them); a -D also reaches the host."""
    args = list(controls.flags)
    acf = controls.acf
    if acf is not None:
        acf_file = Path(acf.path)
        if not rules.matches("nvcc_path", str(acf_file)):
            if not rules.matches("nvcc_path", str(copy)):
                raise RecordError(
                    f"pinned record {path}: neither {acf_file} nor the build tree ({copy.parent}) has a path "
                    "nvcc can pass to ptxas (only letters, digits and _ . / + : @ % = -). Use a build "
                    "directory with a plain path."
                )
            data = read_regular_file(acf_file, rules.limit("acf_bytes"), "the ACF")
            if hashlib.sha256(data).hexdigest() != acf.sha256:
                raise RecordError(f"pinned record {path}: the ACF {acf_file} changed while it was read; rebuild.")
            copy.parent.mkdir(parents=True, exist_ok=True)
            if not (copy.is_file() and not copy.is_symlink() and copy.read_bytes() == data):
                _atomic_write(copy, data)
            acf_file = copy
        args.append(f"-Xptxas=--apply-controls={acf_file}" if acf.compiler == "ptxas"
                    else f"--apply-controls={acf_file}")
    return args


def define_arguments(controls: Controls) -> list[str]:
    return [f"-D{name}={value}" for name, value in controls.defines]


def controls_arguments(controls: Controls, path: Path, copy: Path, rules: RuleBook) -> list[str]:
    """Flags, then -D parameters, then the ACF: one compile's nvcc arguments for `controls`."""
    return _with_defines(device_arguments(controls, path, copy, rules), controls)


def _with_defines(device: Sequence[str], controls: Controls) -> list[str]:
    """`device` arguments with the -D parameters between the flags and the ACF (the options file's order)."""
    split = len(device) - (1 if controls.acf is not None else 0)
    return [*device[:split], *define_arguments(controls), *device[split:]]


def gencode_options_file(options_file: Path, arch: str) -> Path:
    """Where a build keeps `arch`'s own arguments of a pin applied per -gencode: beside the target's
    options file (the CMake module's _ciq_gencode_launcher names them alike)."""
    options_file = Path(options_file)
    return options_file.with_name(options_file.name.removesuffix(".nvcc-options") + f".sm_{arch}.nvcc-options")


@dataclass(frozen=True)
class BuildPin:
    """What a build applies to one target's CUDA compiles, and why (one line for the log)."""

    status: str  # "applied", "none", "disabled" or "skipped"
    arguments: tuple[str, ...]  # the nvcc arguments, one options-file line each
    depends: tuple[Path, ...]  # files whose change must rebuild the target's objects
    message: str
    record: PinnedRecord | None = None
    warning: str = ""  # why a pin was skipped, for the build's log
    # Per -gencode: (arch, device arguments) for each architecture when the record's entries give
    # the build's architectures different controls; `arguments` then holds only what they share
    # (the -D parameters), and the build runs each architecture's cicc and ptxas with its own.
    per_architecture: tuple[tuple[str, tuple[str, ...]], ...] = ()


def resolve_build_pin(target: str, pin_dir: Path, *, params: Sequence[str], allow_numerics: bool,
                      cuda: str, strict: bool, disabled: bool, copy_dir: Path, ptxas: str = "",
                      architectures: Sequence[str] | None = None) -> BuildPin:
    """The pin a build applies, decided exactly as the CMake module's _ciq_resolve_pin.

    RecordError (or UnsafeFlagError) for a record the rule book refuses, and for
    a toolkit mismatch under `strict`; a plain mismatch skips the pin with a warning.
    `ptxas` is the building ptxas's version ("" when unknown): a ptxas ACF is
    only applied by the ptxas major.minor it was measured with. `architectures`
    are the ones the build compiles for (None: not known, not checked): a pin
    is only applied to the architectures it was tuned for.
    """
    path = record_path(pin_dir, target)
    if disabled:
        return BuildPin("disabled", (), (), "pins disabled (CIQ_DISABLE)")
    check_pin_dir(Path(pin_dir))
    if not os.path.lexists(path):
        return BuildPin("none", (), (), f"no pinned controls ({path})")
    record = read_record(path)
    check_numerics(record, allow_numerics, path)
    check_defines(record, params, path)
    depends = (path,) + tuple(Path(c.acf.path) for c in record.all_controls() if c.acf is not None)
    warning = check_toolchain(record, cuda, strict=strict, ptxas=ptxas)
    if warning is not None:
        return BuildPin("skipped", (), depends,
                        f"pin skipped (tuned with CUDA {record.toolchain.cuda}, compiling with {cuda}): {path}",
                        record, warning)
    if architectures is not None:
        warning = check_architectures(record, architectures, strict=strict)
        if warning is not None:
            return BuildPin("skipped", (), depends,
                            f"pin skipped (tuned for {_shown_architectures(record.toolchain.architectures)}, "
                            f"compiling for {_shown_architectures(architectures)}): {path}", record, warning)
    rules = load_rules()
    applied = record.applied_controls()
    if architectures is not None:
        check_nvcc_acf(applied, architectures, path, rules)
    per_arch: list[tuple[str, tuple[str, ...]]] = []
    for arch, controls in applied:
        # An entry's ACF copy is named for its architecture: two entries may hold different ACFs.
        copy = Path(copy_dir) / (f"{target}.{arch}.acf" if arch in record.per_architecture else f"{target}.acf")
        per_arch.append((arch, tuple(device_arguments(controls, path, copy, rules))))
        if controls.acf is not None and per_arch[-1][1][-1].endswith("=" + str(copy)):
            depends += (copy,)
    depends = tuple(dict.fromkeys(depends))
    if len({args for _, args in per_arch}) == 1:
        # One set of controls for every architecture: plain nvcc with the options file, as before.
        arguments = _with_defines(per_arch[0][1], applied[0][1])
        shown = " ".join(arguments) or "compiler defaults"
        return BuildPin("applied", tuple(arguments), depends, f"pinned controls from {path}: {shown}", record)
    shared = define_arguments(applied[0][1])  # equal across the entries (shared_defines_problem)
    shown = "; ".join(f"sm_{arch}: {' '.join(args) or 'compiler defaults'}" for arch, args in per_arch)
    return BuildPin("applied", tuple(shared), depends,
                    f"pinned controls per architecture from {path}: {shown}"
                    + (f"; all: {' '.join(shared)}" if shared else ""), record, per_architecture=tuple(per_arch))


# --------------------------------------------------------------------------- toolchain


def check_toolchain(record: PinnedRecord, toolchain_major_minor: str, strict: bool, ptxas: str = "") -> str | None:
    """None when the record fits the compiler; else a warning (not strict) or RecordError (strict).

    The caller skips the pin on a warning, as the CMake module does: controls
    measured with one toolkit are not known to help (or even be accepted by)
    another. A ptxas ACF must also meet the ptxas major.minor it was measured with
    (a toolkit may carry a newer ptxas than its nvcc), when both are known.
    """
    have = major_minor(toolchain_major_minor)
    if not have:
        raise RecordError(f"cannot read the CUDA version {toolchain_major_minor!r}; expected major.minor such as 13.3.")
    want = record.toolchain.cuda
    message = None
    if have != want:
        message = (
            f"the pinned record for {record.target!r} was tuned with CUDA {want}, but the compiler is CUDA "
            f"{have}: retune the target with this toolkit (python -m ciq_build tune {record.target}), or "
            f"build with a CUDA {want} toolkit."
        )
    ptxas_acf = any(c.acf is not None and c.acf.compiler == "ptxas" for _, c in record.applied_controls())
    want_ptxas, have_ptxas = major_minor(record.toolchain.ptxas_version), major_minor(ptxas)
    if message is None and ptxas_acf and want_ptxas and have_ptxas and want_ptxas != have_ptxas:
        message = (
            f"the pinned record for {record.target!r} carries a ptxas ACF measured with ptxas {want_ptxas}, but "
            f"this toolkit's ptxas is {have_ptxas}, which cannot read it: build with a ptxas {want_ptxas} "
            f"toolkit, or retune (python -m ciq_build tune {record.target})."
        )
    if message is None:
        return None
    if strict:
        raise RecordError(message)
    return message + " The pin is skipped for now."


def check_nvcc_acf(applied: Sequence[tuple[str, Controls]], architectures: Sequence[str], path: Path,
                   rules: RuleBook) -> None:
    """Refuse to apply an nvcc ACF to a build for an architecture below sm_100 (nvcc's default, "all"
    and "native" included), which nvcc would refuse mid-build (the rule book's nvcc_acf_arch)."""
    if not any(c.acf is not None and c.acf.compiler == "nvcc" for _, c in applied):
        return
    too_old = [a for a in architectures if not rules.matches("nvcc_acf_arch", arch_name(a))] or \
        ([] if architectures else ["nvcc's default architecture"])
    if too_old:
        raise RecordError(
            f"pinned record {path} carries an nvcc ACF, which nvcc applies only for sm_100 and newer, but this "
            f"build compiles for {', '.join(too_old)}. Build for sm_100 and newer only, or retune and use the ptxas "
            "search space (a ptxas ACF works for every architecture)."
        )


def architecture_set(architectures: Iterable[str]) -> tuple[str, ...]:
    """Architectures in one spelling (compiler.toolchain.arch_name), sorted and unique."""
    return tuple(sorted({name for name in map(arch_name, architectures) if name}))


def _shown_architectures(architectures: Iterable[str]) -> str:
    return ", ".join(architecture_set(architectures)) or "nvcc's default architecture"


def check_architectures(record: PinnedRecord, architectures: Iterable[str], strict: bool) -> str | None:
    """None when the build compiles for the architectures the record was tuned for (or the record
    names none); else a warning (not strict) or RecordError (strict), as check_toolchain.

    The best controls for one architecture need not help another (registers,
    scheduling and the ACF's decisions are per architecture): a pin tuned for
    sm_75 is not applied to an sm_90a build.
    """
    tuned = architecture_set(record.toolchain.architectures)
    building = architecture_set(architectures)
    if not tuned or tuned == building:
        return None
    message = (
        f"the pinned record for {record.target!r} was tuned for {_shown_architectures(tuned)}, but this build "
        f"compiles for {_shown_architectures(building)}: retune for these architectures (python -m ciq_build "
        f"tune {record.target}), or build for {', '.join(tuned)}."
    )
    if strict:
        raise RecordError(message)
    return message + " The pin is skipped for now."


# --------------------------------------------------------------------------- display


def _printable(text: str) -> str:
    """`text` with control, format and surrogate characters shown as escapes: a record is
    untrusted, and an ANSI escape in it must not repaint the terminal that shows it."""
    return "".join(
        ch if ch.isprintable() else ch.encode("unicode_escape", "backslashreplace").decode("ascii")
        for ch in text
    )


def _measured(summary: ScoreSummary | None, i: int) -> str:
    if summary is None:
        return "-"
    spread = summary.spread[i] if i < len(summary.spread) else 0.0
    # A static metric has no spread: "± 0" would suggest a measurement that was not made.
    return f"{summary.scores[i]:.6g}" + (f" ± {spread:.2g}" if spread else "")


def relative_change(before: float, after: float) -> str:
    """`after` against `before` as a signed percentage, one spelling everywhere ("-2.2%", "+0.0%")."""
    if before == 0:
        return "-"
    return f"{(after / before - 1) * 100:+.1f}%"


def size_ratios_text(ratios: Mapping[str, float]) -> str:
    """Each problem size's ratio, winner over defaults (ARGS_SETS), one spelling everywhere:
    "small 0.5x (-50.0%), large 1.2x (+20.0%)"."""
    return ", ".join(f"{size} {ratio_text(ratio)}" for size, ratio in ratios.items())


def ratio_text(ratio: float) -> str:
    """A ratio to the defaults with its change: "0.5x (-50.0%)"."""
    return f"{ratio:.4g}x ({relative_change(1.0, ratio)})"


def record_size_ratios(record: PinnedRecord) -> dict[str, dict[str, float]]:
    """Per objective measured on several sizes, each size's ratio winner / defaults, from the metrics the
    record keeps (provenance baseline_metrics, winner_metrics); empty for one size."""
    base, win = record.provenance.get("baseline_metrics"), record.provenance.get("winner_metrics")
    if not isinstance(base, dict) or not isinstance(win, dict):
        return {}
    out = {}
    for objective in record.objectives:
        try:
            metric = metric_key(parse_objective(objective.name))
        except CiqError:
            continue
        order = record.provenance.get("sizes")
        ratios = size_ratios(win, base, metric, sizes_of(win, metric, order if isinstance(order, list) else ()))
        if ratios:
            out[objective.name] = ratios
    return out


def _objective_table(record: PinnedRecord) -> list[str]:
    """One aligned row per objective: direction and name, baseline, winner, change."""
    rows = [("", "baseline", "winner", "change")]
    for i, objective in enumerate(record.objectives):
        base = record.baseline.scores[i] if record.baseline else None
        best = record.winner.scores[i] if record.winner else None
        change = relative_change(base, best) if base is not None and best is not None else "-"
        rows.append((f"{objective.direction} {objective.name}", _measured(record.baseline, i),
                     _measured(record.winner, i), change))
    widths = [max(len(row[column]) for row in rows) for column in range(4)]
    return ["   ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]


def format_record(record: PinnedRecord) -> str:
    """Human-readable summary for ``python -m ciq_build show <target>``."""
    lines = [f"target      {record.target}  (schema {record.schema})"]
    if record.per_architecture:
        lines.append("per arch    " + ", ".join(f"sm_{a}" for a in sorted(record.per_architecture))
                     + " have winners of their own (below); the others take the controls here")
    c = record.controls
    lines.append("flags       " + (" ".join(c.flags) if c.flags else "(none)"))
    lines.append(
        "defines     " + (" ".join(f"-D{n}={v}" for n, v in c.defines) if c.defines else "(none)")
    )
    if c.acf is not None:
        lines.append(f"acf         {Path(c.acf.path).name} ({c.acf.compiler}, sha256 {c.acf.sha256[:16]}...)")
    else:
        lines.append("acf         (none)")
    t = record.toolchain
    arches = ", ".join(t.architectures) or "?"
    lines.append(
        f"toolchain   CUDA {t.cuda} (nvcc {t.nvcc_version or '?'}, ptxas {t.ptxas_version or '?'}), arch {arches}"
    )
    p = record.provenance
    bits = [f"engine {p['engine']}" if "engine" in p else None, f"seed {p['seed']}" if "seed" in p else None]
    budget = p.get("budget")
    if isinstance(budget, dict) and budget:
        bits.append("budget " + ", ".join(f"{k}={v}" for k, v in budget.items()))
    if "created" in p:
        bits.append(f"created {p['created']}")
    if "ciq_build_version" in p:
        bits.append(f"ciq_build {p['ciq_build_version']}")
    lines.append("provenance  " + ("; ".join(b for b in bits if b) or "(none)"))
    if record.objectives:
        lines.append("objectives")
        lines.extend("  " + row for row in _objective_table(record))
        lines.extend(f"  {name} per size (winner / defaults): {size_ratios_text(ratios)}"
                     for name, ratios in record_size_ratios(record).items())
    for arch, entry in sorted(record.per_architecture.items()):
        # Each architecture's own winner (tune --architecture), applied to its own -gencode.
        e = entry.controls
        shown = [*e.flags, *(f"-D{n}={v}" for n, v in e.defines)]
        if e.acf is not None:
            shown.append(f"acf {Path(e.acf.path).name} ({e.acf.compiler}, sha256 {e.acf.sha256[:16]}...)")
        lines.append(f"sm_{arch:<8} " + (" ".join(shown) or "(compiler defaults)"))
        for i, objective in enumerate(record.objectives):
            base = entry.baseline.scores[i] if entry.baseline else None
            best = entry.winner.scores[i] if entry.winner else None
            if base is not None and best is not None:
                lines.append(f"  {objective.direction} {objective.name}: {_measured(entry.baseline, i)} -> "
                             f"{_measured(entry.winner, i)} ({relative_change(base, best)})")
    if record.objects:
        lines.append("objects")
        for obj, archs in sorted(record.objects.items()):
            for arch, info in sorted(archs.items()):
                lines.append(
                    f"  {obj} [{arch}]  registers {info.registers}, stack {info.stack}, "
                    f"code {info.code_sha256[:12]}"
                )
    return "\n".join(_printable(line) for line in lines)
