"""The pinned record: ``<pin dir>/<target>.json`` (+ ``<target>.acf``) written, read, validated.

The record is what a tune leaves behind for version control, and every later
build applies it. It is therefore read as untrusted input: every field is
type-checked, flags and defines go through the allow-list, the ACF must be a
file inside the pin directory whose sha256 matches, and anything unexpected
is a RecordError that says what to do. Writes are atomic (temp file in the same
directory, fsync, os.replace), the ACF first, so a crash never leaves a record
that names a half-written ACF; a record whose ACF was replaced underneath it is
caught by the sha256.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ciq_build.allowlist import check_define, check_flag, load_patterns
from ciq_build.controls import AcfRef, Controls, controls_to_json
from ciq_build.errors import CiqError, ConfigError, RecordError, UnsafeFlagError
from ciq_build.target import TARGET_NAME, parse_objective
from ciq_build.durable import fsync_dir

SCHEMA = 1

_HEX64 = re.compile(r"[0-9a-f]{64}")
_CUDA_MAJOR_MINOR = re.compile(r"([0-9]+)\.([0-9]+)")
# The same rule as the CMake module: no separators, no leading '.' or '-', no "..".
_BARE_NAME = re.compile(r"(?!.*\.\.)[A-Za-z0-9_][A-Za-z0-9_.+-]*")
_ARCH = re.compile(r"[A-Za-z0-9_-]+")
_ACF_COMPILERS = ("ptxas", "nvcc")

# Records are small; anything bigger is not a record (and is not worth reading).
MAX_RECORD_BYTES = 16 * 1024 * 1024


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
class ObjectInfo:
    """Static facts about one object file's code for one architecture (drift detection)."""

    registers: int
    stack: int
    code_sha256: str


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


# --------------------------------------------------------------------------- paths


def record_path(pin_dir: Path, target: str) -> Path:
    return Path(pin_dir) / f"{_target_name(target)}.json"


def acf_path(pin_dir: Path, target: str) -> Path:
    return Path(pin_dir) / f"{_target_name(target)}.acf"


def _target_name(target: object) -> str:
    if not isinstance(target, str) or TARGET_NAME.fullmatch(target) is None:
        raise RecordError(
            f"target name {target!r} cannot name a pinned record: use a plain CMake target name "
            "(letters, digits, _ . + -, starting with a letter, digit or _)."
        )
    return target


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


# --------------------------------------------------------------------------- writing


def _atomic_write(path: Path, data: bytes) -> None:
    """Write `data` to `path` so that readers see the old file or the new one, never a mix."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would hide a committed file from other users
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    fsync_dir(path.parent)


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
            "architectures": list(record.toolchain.architectures),
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
    return out


def write_record(pin_dir: Path, record: PinnedRecord, acf_source: Path | None = None) -> PinnedRecord:
    """Pin `record` as ``<pin_dir>/<target>.json`` (+ ``<target>.acf``); return what was written.

    ``pin_dir`` may also be the record's own path, ``<pin_dir>/<target>.json``.

    The ACF (``acf_source``, or else ``record.controls.acf.path``) is copied first,
    atomically, as ``<target>.acf``, and its sha256 recorded; when the record's
    AcfRef already carries a sha256 the copy must match it (the file changed since
    it was measured otherwise). The record is validated exactly as read_record
    would, before anything is written, so an unreadable pin is never left behind.
    """
    target = _target_name(record.target)
    pin_dir = Path(pin_dir)
    if pin_dir.name == f"{target}.json":
        pin_dir = pin_dir.parent  # the record's own path names its pin dir just as well
    acf = record.controls.acf
    source = Path(acf_source) if acf_source is not None else (Path(acf.path) if acf is not None else None)
    if source is not None and acf is None:
        raise RecordError(
            f"an ACF ({source}) was given for target {target!r} but its controls name no ACF "
            "compiler; set controls.acf (compiler 'ptxas' or 'nvcc')."
        )
    pinned_acf = acf_path(pin_dir, target)

    acf_bytes: bytes | None = None
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
        pinned_ref = AcfRef(path=pinned_acf.resolve(), compiler=acf.compiler, sha256=digest)
        record = replace(record, controls=replace(record.controls, acf=pinned_ref))

    # Validate before touching the pin dir, through the same code path as a reader.
    document_obj = record_to_json(record, pin_dir)
    _validate_document(document_obj, Path(f"{target}.json"), pin_dir, check_acf_file=False)
    try:
        # ASCII with \u escapes: any string a reader accepted (even a lone surrogate) can be written back.
        document = json.dumps(document_obj, indent=2, allow_nan=False, ensure_ascii=True)
    except (TypeError, ValueError, RecursionError) as exc:
        raise RecordError(
            f"the record for {target!r} holds a value JSON cannot represent ({exc}); "
            "provenance must hold only JSON values (no NaN, sets or objects)."
        ) from exc

    try:
        pin_dir.mkdir(parents=True, exist_ok=True)
        if acf_bytes is not None:
            same = pinned_acf.is_file() and not pinned_acf.is_symlink() and pinned_acf.read_bytes() == acf_bytes
            if not same:
                _atomic_write(pinned_acf, acf_bytes)  # os.replace swaps a symlink itself, not its target
        _atomic_write(record_path(pin_dir, target), (document + "\n").encode("utf-8"))
        if acf_bytes is None and (pinned_acf.is_file() or pinned_acf.is_symlink()):
            # A stale ACF from an earlier pin would only confuse a reader of the pin dir.
            pinned_acf.unlink()
            fsync_dir(pin_dir)
    except OSError as exc:
        raise RecordError(
            f"cannot write the pinned record for {target!r} in {pin_dir}: {exc}. "
            "Check that the pin directory (PIN_DIR of ciq_tune_target) is writable."
        ) from exc
    return record


# --------------------------------------------------------------------------- reading


class _Fields:
    """Typed access to the record's JSON with messages naming the file and field."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, where: str, problem: str) -> RecordError:
        return RecordError(
            f"pinned record {self.path}: {where} {problem}. Retune the target "
            f"(python -m ciq_build tune {self.path.stem}) to write a fresh record, or fix the file by hand."
        )

    def obj(self, value: Any, where: str, keys: set[str], required: set[str]) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(where, f"must be a JSON object, not {_kind(value)}")
        unknown = sorted(set(value) - keys)
        if unknown:
            raise self.fail(f"{where}.{unknown[0]}", "is not a field of a schema 1 record")
        missing = sorted(required - set(value))
        if missing:
            raise self.fail(f"{where}.{missing[0]}", "is missing")
        return value

    def str_(self, value: Any, where: str, pattern: re.Pattern[str] | None = None, hint: str = "") -> str:
        if not isinstance(value, str):
            raise self.fail(where, f"must be a string, not {_kind(value)}")
        if pattern is not None and pattern.fullmatch(value) is None:
            raise self.fail(where, f"is {value!r}{hint}")
        return value

    def list_(self, value: Any, where: str) -> list[Any]:
        if not isinstance(value, list):
            raise self.fail(where, f"must be a list, not {_kind(value)}")
        return value

    def count(self, value: Any, where: str) -> int:
        if type(value) is not int or value < 0:
            raise self.fail(where, f"must be a non-negative integer, not {value!r}")
        return value

    def number(self, value: Any, where: str) -> float:
        if type(value) not in (int, float):
            raise self.fail(where, f"must be a number, not {_kind(value)}")
        try:
            number = float(value)
        except OverflowError:
            number = math.inf
        if not math.isfinite(number):
            raise self.fail(where, f"must be a finite number, not {value!r}")
        return number


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), type(value).__name__
    )


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # CMake's string(JSON) and Python could pick different copies of a repeated
    # key, so the two builds would apply different controls: refuse it outright.
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"key {key!r} appears twice in one object")
        out[key] = value
    return out


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")


def parse_record_bytes(raw: bytes, path: Path) -> Any:
    """JSON syntax only: bytes -> Python value, or RecordError (truncation named as such)."""
    target = path.stem
    if len(raw) > MAX_RECORD_BYTES:
        raise RecordError(f"pinned record {path} is {len(raw)} bytes, too large to be a record; retune {target}.")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RecordError(
            f"pinned record {path} is not UTF-8 text ({exc}); restore it from version control or retune {target}."
        ) from exc
    if not text.strip():
        raise RecordError(
            f"pinned record {path} is empty; restore it from version control or retune "
            f"(python -m ciq_build tune {target})."
        )
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        truncated = exc.pos >= len(text.rstrip())
        what = "is truncated (it ends in the middle of the JSON)" if truncated else "is not valid JSON"
        raise RecordError(
            f"pinned record {path} {what}: {exc.msg} at line {exc.lineno} column {exc.colno}; "
            f"restore it from version control or retune (python -m ciq_build tune {target})."
        ) from exc
    except (ValueError, RecursionError) as exc:
        raise RecordError(
            f"pinned record {path} is not a valid record ({exc}); restore it from version control "
            f"or retune (python -m ciq_build tune {target})."
        ) from exc


def read_record(path: Path) -> PinnedRecord:
    """Read and validate a pinned record; the ACF it names must exist and match its sha256."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError as exc:
        raise RecordError(
            f"no pinned record at {path}; tune the target first (python -m ciq_build tune {path.stem})."
        ) from exc
    except OSError as exc:
        raise RecordError(f"cannot read pinned record {path}: {exc}.") from exc
    return _validate_document(parse_record_bytes(raw, path), path, path.parent, check_acf_file=True)


_TOP_KEYS = {
    "schema", "target", "controls", "toolchain", "provenance", "objectives", "baseline", "winner", "objects",
}


def _validate_document(data: Any, path: Path, pin_dir: Path, check_acf_file: bool) -> PinnedRecord:
    f = _Fields(path)
    if not isinstance(data, dict):
        raise f.fail("the top level", f"must be a JSON object, not {_kind(data)}")
    if "schema" not in data:
        raise f.fail("field 'schema'", "is missing (this is not a ciq_build pinned record)")
    schema = data["schema"]
    if type(schema) is not int:
        raise f.fail("field 'schema'", f"must be an integer, not {_kind(schema)}")
    if schema != SCHEMA:
        newer = schema > SCHEMA
        raise RecordError(
            f"pinned record {path} has schema {schema}, but this ciq_build reads schema {SCHEMA}"
            + (
                ": it was written by a newer ciq_build. Upgrade ciq_build (pip install -U ciq-build), "
                if newer else ". "
            )
            + f"or retune the target (python -m ciq_build tune {path.stem}) to rewrite it."
        )
    f.obj(data, "the record", _TOP_KEYS, {"schema", "target", "controls", "toolchain"})

    target = f.str_(data["target"], "target", TARGET_NAME, " (not a plain CMake target name)")
    if target != path.stem:
        raise f.fail("target", f"is {target!r}, but the file is named {path.name} (it must be {target}.json)")

    controls = _read_controls(f, data["controls"], pin_dir, check_acf_file)

    tc = f.obj(data["toolchain"], "toolchain", {"cuda", "nvcc_version", "ptxas_version", "architectures"}, {"cuda"})
    toolchain = RecordToolchain(
        cuda=f.str_(tc["cuda"], "toolchain.cuda", _CUDA_MAJOR_MINOR, " (expected major.minor such as 13.3)"),
        nvcc_version=f.str_(tc.get("nvcc_version", ""), "toolchain.nvcc_version"),
        ptxas_version=f.str_(tc.get("ptxas_version", ""), "toolchain.ptxas_version"),
        architectures=tuple(
            f.str_(a, f"toolchain.architectures[{i}]", _ARCH, " (not an architecture such as 90a)")
            for i, a in enumerate(f.list_(tc.get("architectures", []), "toolchain.architectures"))
        ),
    )

    provenance = data.get("provenance", {})
    if not isinstance(provenance, dict):
        raise f.fail("provenance", f"must be a JSON object, not {_kind(provenance)}")
    for key, kind in (("engine", str), ("created", str), ("ciq_build_version", str), ("budget", dict)):
        if key in provenance and not isinstance(provenance[key], kind):
            raise f.fail(f"provenance.{key}", f"must be {_kind(kind())}, not {_kind(provenance[key])}")
    if "seed" in provenance and provenance["seed"] is not None and type(provenance["seed"]) is not int:
        raise f.fail("provenance.seed", f"must be an integer or null, not {_kind(provenance['seed'])}")

    objectives: list[RecordObjective] = []
    for i, item in enumerate(f.list_(data.get("objectives", []), "objectives")):
        where = f"objectives[{i}]"
        o = f.obj(item, where, {"name", "direction"}, {"name", "direction"})
        name = f.str_(o["name"], f"{where}.name")
        try:
            parsed = parse_objective(name)
        except ConfigError as exc:
            raise f.fail(f"{where}.name", f"is not an objective: {exc}") from exc
        if parsed.name != name:
            raise f.fail(f"{where}.name", f"must be the canonical name {parsed.name!r}, not {name!r}")
        direction = o["direction"]
        if direction not in ("min", "max") or not isinstance(direction, str):
            raise f.fail(f"{where}.direction", f"must be \"min\" or \"max\", not {direction!r}")
        objectives.append(RecordObjective(name, direction))
    names = [o.name for o in objectives]
    if len(set(names)) != len(names):
        raise f.fail("objectives", f"name an objective twice: {names}")

    baseline = _read_summary(f, data.get("baseline"), "baseline", len(objectives))
    winner = _read_summary(f, data.get("winner"), "winner", len(objectives))
    objects = _read_objects(f, data.get("objects", {}))

    return PinnedRecord(
        schema=schema,
        target=target,
        controls=controls,
        toolchain=toolchain,
        provenance=provenance,
        objectives=tuple(objectives),
        baseline=baseline,
        winner=winner,
        objects=objects,
    )


def _read_controls(f: _Fields, value: Any, pin_dir: Path, check_acf_file: bool) -> Controls:
    c = f.obj(value, "controls", {"flags", "defines", "acf"}, set())
    flags: list[str] = []
    raw_flags = f.list_(c.get("flags", []), "controls.flags")
    patterns = load_patterns() if raw_flags else ()
    for i, flag in enumerate(raw_flags):
        try:
            check_flag(flag, patterns)
        except UnsafeFlagError as exc:
            raise UnsafeFlagError(f"pinned record {f.path}: controls.flags[{i}]: {exc}") from exc
        flags.append(flag)
    defines_obj = c.get("defines", {})
    if defines_obj is None:
        defines_obj = {}
    if not isinstance(defines_obj, dict):
        raise f.fail("controls.defines", f"must be a JSON object of NAME: VALUE strings, not {_kind(defines_obj)}")
    for name, define in defines_obj.items():
        try:
            check_define(name, define)
        except UnsafeFlagError as exc:
            raise UnsafeFlagError(f"pinned record {f.path}: controls.defines: {exc}") from exc
    defines = tuple(sorted(defines_obj.items()))
    acf_obj = c.get("acf")
    acf = None if acf_obj is None else _read_acf(f, acf_obj, pin_dir, check_acf_file)
    try:
        # Controls normalises (sorted, deduplicated) and refuses flags that set one option twice.
        return Controls(flags=tuple(flags), defines=defines, acf=acf)
    except UnsafeFlagError:
        raise
    except CiqError as exc:
        raise f.fail("controls", f"is inconsistent: {exc}") from exc


def _read_acf(f: _Fields, value: Any, pin_dir: Path, check_file: bool) -> AcfRef:
    a = f.obj(value, "controls.acf", {"file", "sha256", "compiler"}, {"file", "sha256", "compiler"})
    name = a["file"]
    if not isinstance(name, str) or _BARE_NAME.fullmatch(name) is None:
        raise f.fail(
            "controls.acf.file",
            f"is {name!r}: it must be the bare name of a file inside the pin directory "
            "(no '/', no '..', not absolute), such as <target>.acf",
        )
    sha = f.str_(a["sha256"], "controls.acf.sha256", _HEX64, " (not a lowercase hex sha256)")
    compiler = a["compiler"]
    if compiler not in _ACF_COMPILERS or not isinstance(compiler, str):
        raise f.fail("controls.acf.compiler", f"must be \"ptxas\" or \"nvcc\", not {compiler!r}")
    base = Path(os.path.realpath(pin_dir))
    candidate = Path(pin_dir) / name
    resolved = Path(os.path.realpath(candidate))
    if check_file:
        if resolved.parent != base and base not in resolved.parents:
            raise f.fail(
                "controls.acf.file",
                f"{name!r} is a link that leads outside the pin directory (to {resolved}); "
                "an ACF must be a file inside the pin directory",
            )
        if not resolved.is_file():
            raise f.fail(
                "controls.acf.file",
                f"names {candidate}, which does not exist; restore it from version control (commit the "
                ".acf beside the .json)",
            )
        actual = sha256_file(resolved)
        if actual != sha:
            raise RecordError(
                f"pinned record {f.path}: the ACF {candidate} has sha256 {actual}, but the record "
                f"expects {sha}: the ACF was changed or replaced after it was pinned. Restore the "
                f"matching file from version control, or retune (python -m ciq_build tune {f.path.stem})."
            )
    return AcfRef(path=resolved if check_file else base / name, compiler=compiler, sha256=sha)


def _read_summary(f: _Fields, value: Any, where: str, n: int) -> ScoreSummary | None:
    if value is None:
        return None
    s = f.obj(value, where, {"scores", "spread"}, {"scores", "spread"})
    scores = tuple(f.number(x, f"{where}.scores[{i}]") for i, x in enumerate(f.list_(s["scores"], f"{where}.scores")))
    spread = tuple(f.number(x, f"{where}.spread[{i}]") for i, x in enumerate(f.list_(s["spread"], f"{where}.spread")))
    if len(scores) != n or len(spread) != n:
        raise f.fail(where, f"needs one score and one spread per objective ({n}), has {len(scores)} and {len(spread)}")
    return ScoreSummary(scores, spread)


def _read_objects(f: _Fields, value: Any) -> dict[str, dict[str, ObjectInfo]]:
    if not isinstance(value, dict):
        raise f.fail("objects", f"must be a JSON object, not {_kind(value)}")
    out: dict[str, dict[str, ObjectInfo]] = {}
    for obj, archs in value.items():
        parts = obj.replace("\\", "/").split("/")
        if not obj or "\x00" in obj or obj.startswith("/") or ".." in parts or (len(obj) > 1 and obj[1] == ":"):
            raise f.fail("objects", f"key {obj!r} must be an object path relative to the target's directory")
        if not isinstance(archs, dict):
            raise f.fail(f"objects[{obj!r}]", f"must be a JSON object of architectures, not {_kind(archs)}")
        per_arch: dict[str, ObjectInfo] = {}
        for arch, info in archs.items():
            where = f"objects[{obj!r}][{arch!r}]"
            if _ARCH.fullmatch(arch) is None:
                raise f.fail(where, "is not keyed by an architecture such as 90a")
            i = f.obj(info, where, {"registers", "stack", "code_sha256"}, {"registers", "stack", "code_sha256"})
            per_arch[arch] = ObjectInfo(
                registers=f.count(i["registers"], f"{where}.registers"),
                stack=f.count(i["stack"], f"{where}.stack"),
                code_sha256=f.str_(i["code_sha256"], f"{where}.code_sha256", _HEX64, " (not a lowercase hex sha256)"),
            )
        out[obj] = per_arch
    return out


# --------------------------------------------------------------------------- toolchain


def check_toolchain(record: PinnedRecord, toolchain_major_minor: str, strict: bool) -> str | None:
    """None when the record fits the compiler; else a warning (not strict) or RecordError (strict).

    The caller skips the pin on a warning, as the CMake module does: controls
    measured with one toolkit are not known to help (or even be accepted by) another.
    """
    match = _CUDA_MAJOR_MINOR.match(str(toolchain_major_minor))
    if match is None:
        raise RecordError(f"cannot read the CUDA version {toolchain_major_minor!r}; expected major.minor such as 13.3.")
    have = f"{int(match.group(1))}.{int(match.group(2))}"
    want_match = _CUDA_MAJOR_MINOR.fullmatch(record.toolchain.cuda)
    want = f"{int(want_match.group(1))}.{int(want_match.group(2))}" if want_match else record.toolchain.cuda
    if have == want:
        return None
    message = (
        f"the pinned record for {record.target!r} was tuned with CUDA {want}, but the compiler is CUDA "
        f"{have}: retune the target with this toolkit (python -m ciq_build tune {record.target}), or "
        f"build with a CUDA {want} toolkit."
    )
    if strict:
        raise RecordError(message)
    return message + " The pin is skipped for now."


# --------------------------------------------------------------------------- display


def format_record(record: PinnedRecord) -> str:
    """Human-readable summary for ``python -m ciq_build show <target>``."""
    lines = [f"target      {record.target}  (schema {record.schema})"]
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
        for i, o in enumerate(record.objectives):
            row = f"  {o.direction} {o.name}"
            base = record.baseline.scores[i] if record.baseline else None
            best = record.winner.scores[i] if record.winner else None
            if base is not None:
                row += f"   baseline {base:.6g} ± {record.baseline.spread[i]:.2g}"  # type: ignore[union-attr]
            if best is not None:
                row += f"   winner {best:.6g} ± {record.winner.spread[i]:.2g}"  # type: ignore[union-attr]
            if base not in (None, 0) and best is not None:
                row += f"   ({best / base:.3f}x)"
            lines.append(row)
    if record.objects:
        lines.append("objects")
        for obj, archs in sorted(record.objects.items()):
            for arch, info in sorted(archs.items()):
                lines.append(
                    f"  {obj} [{arch}]  registers {info.registers}, stack {info.stack}, "
                    f"code {info.code_sha256[:12]}"
                )
    return "\n".join(lines)
