"""Writing a pinned record (write_record) or one architecture's entry of it (merge_architecture).

Both go through one write sequence, atomic at each step (temp file in the same directory,
fsync, os.replace): the ACF first, under a name of its content, then the record, then the
old ACF goes, so a kill at any moment leaves a record whose ACF is there and matches; a
record whose ACF was replaced underneath it is caught by the sha256. The record is validated
exactly as pin.read would read it before anything is written.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from ciq_build.compiler.architectures import arch_name
from ciq_build.compiler.controls import AcfRef, Controls, controls_to_json
from ciq_build.compiler.toolchain import major_minor
from ciq_build.core.rules import load_rules, parse_strict, read_regular_file
from ciq_build.errors import RecordError
from ciq_build.pin.read import parse_record_bytes, read_record, validate_document
from ciq_build.pin.record import (
    ArchitectureEntry,
    PinnedRecord,
    ScoreSummary,
    acf_path,
    architecture_set,
    check_pin_dir,
    checked_target,
    objective_specs,
    record_path,
    same_objectives,
)
from ciq_build.state.durable import atomic_write, fsync_dir

# What git must not convert in a pin dir: a record's line ends are read alike by both readers, but
# an ACF's bytes are checked by their sha256 (core.autocrlf would change them).
GITATTRIBUTES = "*.json -text\n*.acf binary\n"


def replace_file(path: Path, data: bytes) -> None:
    """atomic_write, first deleting what an earlier write of `path` killed mid-way left behind."""
    _remove_stale_temporaries(path.parent, path.name)
    atomic_write(path, data)


def _remove_stale_temporaries(directory: Path, name: str) -> None:
    """Delete what an interrupted atomic_write of `name` left behind (a kill mid-write)."""
    for stale in directory.glob(f".{name}.*.tmp"):
        try:
            if stale.is_file() and not stale.is_symlink():
                stale.unlink()
        except OSError:
            pass


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
    validate_document(parse_record_bytes(document.encode("ascii"), where, rules), where, pin_dir,
                       check_acf_file=False, rules=rules)
    return document


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
    target = checked_target(record.target)
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
    new_acf = None
    if source is not None and acf is not None:
        acf_bytes, digest = _acf_to_pin(source, acf, target)
        pinned_ref = AcfRef(path=acf_path(pin_dir, target, digest).absolute(), compiler=acf.compiler, sha256=digest)
        record = replace(record, controls=replace(record.controls, acf=pinned_ref))
        new_acf = (pinned_ref, acf_bytes)
    _write_pin(record_path(pin_dir, target), record, new_acf)
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
    target = checked_target(tuned.target)
    existing = read_record(path) if os.path.lexists(path) else None
    if existing is not None:
        _check_mergeable(path, existing, tuned, arch)
    acf = tuned.controls.acf
    entry_acf = new_acf = None
    if acf is not None:
        acf_bytes, digest = _acf_to_pin(Path(acf.path), acf, target)
        entry_acf = AcfRef(path=acf_path(pin_dir, target, digest, arch).absolute(), compiler=acf.compiler,
                           sha256=digest)
        new_acf = (entry_acf, acf_bytes)
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
    _write_pin(path, merged, new_acf)
    return merged


def toolkit_cannot_join(path: Path, existing: PinnedRecord, cuda: str, ptxas_version: str) -> str | None:
    """Why a winner of toolkit `cuda` (ptxas `ptxas_version`) cannot be an architecture's entry of the record
    `existing` at `path`, and what to do; None when it can. A tune --architecture checks it before its search too."""
    if existing.toolchain.cuda == cuda and \
            major_minor(existing.toolchain.ptxas_version) == major_minor(ptxas_version):
        return None
    return (f"the record was tuned with CUDA {existing.toolchain.cuda} (ptxas {existing.toolchain.ptxas_version or '?'}), "
            f"this tune uses CUDA {cuda} (ptxas {ptxas_version or '?'}), and one record holds one toolkit's winners. "
            f"Tune with the record's toolkit, retune its other architectures with this one, or remove {path.name} "
            "to start over")


def _check_mergeable(path: Path, existing: PinnedRecord, tuned: PinnedRecord, arch: str) -> None:
    """Refuse to add `tuned` as an entry of `existing` when they differ in toolkit or objectives."""
    if other_toolkit := toolkit_cannot_join(path, existing, tuned.toolchain.cuda, tuned.toolchain.ptxas_version):
        raise RecordError(f"cannot add the sm_{arch} winner to {path}: {other_toolkit}")
    if not same_objectives(existing.objectives, tuned.objectives):  # a tune refuses it before its search (old_pin)
        raise RecordError(
            f"cannot add the sm_{arch} winner to {path}: the record's objectives are "
            f"{objective_specs(existing.objectives)}, this tune's {objective_specs(tuned.objectives)}, and "
            "each entry's scores follow the record's objectives. Tune with --objective as the record has "
            f"them, or remove {path.name} to start over.")


def _acf_to_pin(source: Path, acf: AcfRef, target: str) -> tuple[bytes, str]:
    """The bytes of the ACF a candidate was measured with, and their sha256; it must still be that file."""
    try:
        data = source.read_bytes()
    except OSError as exc:
        raise RecordError(f"cannot read the ACF {source} to pin it for {target!r}: {exc}.") from exc
    digest = hashlib.sha256(data).hexdigest()
    if acf.sha256 and acf.sha256 != digest:
        raise RecordError(
            f"the ACF {source} has sha256 {digest}, but the candidate measured an ACF with "
            f"{acf.sha256}: the file changed after it was measured. Retune the target."
        )
    return data, digest


def _write_pin(path: Path, record: PinnedRecord, new_acf: tuple[AcfRef, bytes] | None) -> None:
    """The one write sequence: validate the document, then the new ACF, then the record, then the old ACFs go.

    At every moment the record at `path` names an ACF that is there and matches.
    """
    pin_dir, target = path.parent, record.target
    # Serialise, then validate the very bytes through the reader's path (rule book
    # layers 2 and 3), before touching the pin dir: an unreadable pin is never written.
    document = _checked_document(record, pin_dir)
    try:
        _make_pin_dir(pin_dir)
        previous = _named_acfs(path)
        if new_acf is not None:
            _place_acf(Path(new_acf[0].path), new_acf[1], target)
        replace_file(path, (document + "\n").encode("utf-8"))
        keep = {Path(c.acf.path).name for c in record.all_controls() if c.acf is not None}
        _remove_unpinned_acfs(pin_dir, target, keep, previous)
    except OSError as exc:
        raise RecordError(
            f"cannot write the pinned record for {target!r} in {pin_dir}: {exc}. "
            "Check that the pin directory (PIN_DIR of ciq_tune_target) is writable."
        ) from exc


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
    replace_file(pinned_acf, data)  # os.replace swaps a symlink itself, not its target


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
