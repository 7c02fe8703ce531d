"""Reading a pinned record: the rule book's three layers (a regular file within its size limit, strict
JSON, each field checked), then the checks across fields, into a PinnedRecord.

A record is untrusted input: every field is type-checked, flags and defines go through the
allow-list, the ACF must be a file inside the pin directory whose sha256 matches, and anything
unexpected is a RecordError that says what to do. The CMake module's _ciq_read_pin reads alike.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from ciq_build.compiler.architectures import arch_name
from ciq_build.compiler.controls import AcfRef, Controls
from ciq_build.compiler.fingerprint import ObjectInfo
from ciq_build.core.allowlist import check_flag
from ciq_build.core.rules import RuleBook, field_problem, load_rules, parse_strict, read_regular_file
from ciq_build.errors import CiqError, RecordError, UnsafeFlagError
from ciq_build.pin.record import (
    ArchitectureEntry,
    PinnedRecord,
    RecordObjective,
    RecordToolchain,
    ScoreSummary,
    architecture_set,
    check_pin_dir,
    is_targets_acf,
)


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


def read_record(path: Path, *, named_for_target: bool = True) -> PinnedRecord:
    """Read and validate a pinned record; the ACF it names must exist and match its sha256.

    named_for_target=False reads a record under any file name (a seed: only its controls are wanted, and a
    record copied out of a pin folder is often renamed); a build finds its pin by the name, so it is checked
    everywhere else."""
    path = Path(path)
    check_pin_dir(path.parent)
    rules = load_rules()
    data = parse_record_bytes(read_record_bytes(path, rules), path, rules)
    return validate_document(data, path, path.parent, check_acf_file=True, rules=rules,
                             named_for_target=named_for_target)


def validate_document(data: Any, path: Path, pin_dir: Path, check_acf_file: bool,
                       rules: RuleBook | None = None, named_for_target: bool = True) -> PinnedRecord:
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
    if named_for_target and target != path.stem:
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
