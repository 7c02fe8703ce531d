"""`show` and `list`: what is pinned, in words, for any kind of project (its `BuildBackend`)."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from ciq_build.core.objectives import DEFAULT_OBJECTIVES
from ciq_build.errors import CiqError, ManifestError
from ciq_build.pin.apply import build_decision
from ciq_build.pin.display import format_record
from ciq_build.pin.read import read_record
from ciq_build.project.backend import BuildBackend, setuptools_project_of
from ciq_build.project.cmake_backend import CMakeBackend
from ciq_build.project.json_model import json_fields
from ciq_build.project.manifest import Manifest
from ciq_build.project.worker import safe_name
from ciq_build.state.journal import Journal


def pin_file_for(target: str, build_dir: Path, source_dir: Path | None) -> Path:
    """Where `target`'s record is: in a setuptools project (`-B <project>/build`, `-S <project>`), its
    CudaExtension's pin_dir; in a CMake project, <source>/ciq/ while the build tree is not configured, else the
    manifest's. (`report kern -B build` of a setuptools project asked CMake, found no cache, and said "nothing
    pinned yet" beside its ciq/kern.json.)"""
    project = setuptools_project_of(build_dir, source_dir)
    if project is not None:
        from ciq_build.project.setuptools_backend import SetuptoolsBackend

        return SetuptoolsBackend(project).pin_file(target)
    return CMakeBackend(build_dir, source_dir).pin_file(target)


def show(target: str, backend: BuildBackend, pin_file: Path | None) -> tuple[str, bool]:
    """The record, in words, and what the target's build does with it (not for a --pin-file, which no build
    reads); False where the build refuses it."""
    text = format_record(read_record(require_pin(target, backend, pin_file)), setuptools=backend.kind == "setuptools")
    if pin_file is not None:
        return text, True
    try:
        manifest = backend.manifest(target)
        text = _with_shown_fields(text, manifest)
        applies, said = build_decision(manifest, backend.toolchain(manifest))
    except CiqError as error:  # no configured tree to ask, or its compiler gone: the record alone is shown
        return f"{text}\nbuild       not checked: {error}", True
    return f"{text}\nbuild       {said}", applies


def _with_shown_fields(text: str, manifest: Manifest) -> str:
    """`text` with the manifest's fields declared to be shown (ciq_build.project.json_model: `shown`) that have
    a value, one line each under the target's line."""
    target_line, *rest = text.split("\n")
    shown = [f"{declared.shown:<11} {value}" for name, declared in json_fields(Manifest).items()
             if declared.shown and (value := getattr(manifest, name))]
    return "\n".join([target_line, *shown, *rest])


def require_pin(target: str, backend: BuildBackend, pin_file: Path | None = None) -> Path:
    """`target`'s pinned record file; else ManifestError saying why there is none (`show` and `verify`):
    a tune that ran and pinned nothing, or no tune yet."""
    build_dir = backend.build_dir
    if pin_file is None:
        pin_file = backend.pin_file(target)
    if not pin_file.is_file():
        journal = chosen_journal(build_dir, target, None)  # the latest tune's, --architecture ARCH's too
        tried = _evaluations(journal)
        if tried:
            raise ManifestError(
                f"{target} has no pinned record at {pin_file}, though a tune ran ({tried} evaluation(s) in "
                f"{journal}): it pinned nothing (no candidate beat the defaults beyond "
                f"the noise, or --no-pin), so the build uses the compiler's defaults. `python -m ciq_build report "
                f"{shlex.quote(target)} -B {shlex.quote(str(build_dir))}` shows what it measured.")
        # The project's own tune command: a setuptools project's names its project, not a CMake build folder.
        raise ManifestError(f"{target} has no pinned record at {pin_file}; run `{backend.command('tune', target)}` "
                            "first")
    return pin_file


def journal_path(build_dir: Path, target: str, architecture: str | None = None) -> Path:
    """Where `tune` journals a target's evaluations: the build tree's own ciq/, beside its manifests; a tune
    --architecture ARCH its own (cmake_trees.tune_name), "all" naming the tune of every CUDA_ARCHITECTURES.

    Never through the manifest's absolute binary_dir: in a copy of a build tree that still names the
    original, whose journal report and export would then read (and whose folder the page went into).
    """
    suffix = f".sm_{architecture.removeprefix('sm_')}" if architecture not in (None, "all") else ""
    return Path(build_dir) / "ciq" / "journal" / f"{safe_name(target)}{suffix}.jsonl"


def target_journals(build_dir: Path, target: str) -> list[Path]:
    """The journals of `target`'s tunes in `build_dir` (every architecture's own, and all architectures'),
    the most recently written first."""
    folder = Path(build_dir) / "ciq" / "journal"
    name = safe_name(target)
    found = [p for p in folder.glob(f"{name}*.jsonl")
             if p.name == f"{name}.jsonl" or re.fullmatch(rf"{re.escape(name)}\.sm_\w+\.jsonl", p.name)]
    return sorted(found, key=lambda p: (-p.stat().st_mtime_ns, p.name))


def chosen_journal(build_dir: Path, target: str, architecture: str | None) -> Path:
    """The journal `report` and `export` read: --architecture's, else the one a tune wrote last (the one a
    running tune writes: it journals its start at once)."""
    if architecture is not None:
        return journal_path(build_dir, target, architecture)
    journals = target_journals(build_dir, target)
    return journals[0] if journals else journal_path(build_dir, target)


def _evaluations(path: Path) -> int:
    if not path.is_file():
        return 0
    try:
        return sum(1 for record in Journal(path).evaluations() if record.get("kind") == "evaluation")
    except CiqError:
        return 0  # an unreadable journal says nothing either way


OBJECTIVES_COLUMN = "objectives (the pin's; no pin: the target's)"


def _skipped_by_build(manifest: Manifest, backend: BuildBackend) -> str | None:
    """Why the target's build skips its pin ("tuned for 90, compiling for 80"), as `show`'s build line says it, or
    None where it applies it (a build for sm_80 of a pin tuned for sm_90 was listed beside the pin as if it applied)."""
    try:
        _applies, said = build_decision(manifest, backend.toolchain(manifest))
    except CiqError:
        return None  # no compiler to ask: the record alone is listed
    if said.startswith("pins disabled"):
        return said
    skipped = re.match(r"pin skipped \((.*?)\): ", said)
    return skipped.group(1) if skipped else None


def _refusal(exc: CiqError, pin_file: Path) -> str:
    """Why a pin is refused, for `list`'s pin column: the reason alone, after the path the column already shows
    (its first 60 characters, the path's, left "pinned record /.../sgemm.json is not o" of a truncated record)."""
    said = str(exc).splitlines()[0]
    for prefix in (f"pinned record {pin_file}: ", f"pinned record {pin_file} ", f"{pin_file}: "):
        if said.startswith(prefix):
            said = said[len(prefix):]
            break
    said = said.split("; ")[0].rstrip(".")
    return said if len(said) <= 100 else said[:97] + "..."


def list_targets(backend: BuildBackend) -> str:
    manifests = [backend.manifest(target) for target in backend.targets()]
    if not manifests:
        return backend.no_targets()
    # The objectives column: what the pin was tuned for, where there is one; else what the target registers, or
    # the default a tune scores where it registers none (it said "(tune picks)", which a setuptools user with a
    # ciq_benchmark read as time). Its header says so: under a bare "objectives" a pin's read as the target's
    # OBJECTIVES (the llm.c trial's).
    rows = [("target", "benchmark", OBJECTIVES_COLUMN, "pin")]
    for manifest in manifests:
        bench = manifest.benchmark.target if manifest.benchmark else "(static only)"
        objectives = ",".join(manifest.objectives) or f"{','.join(DEFAULT_OBJECTIVES)} (the default)"
        pin = "(none)"
        if manifest.pin_file.is_file():
            pin = str(manifest.pin_file)
            try:
                record = read_record(manifest.pin_file)
                objectives = ",".join(f"{o.direction}:{o.name}" if o.direction == "max" else o.name
                                      for o in record.objectives) or objectives
                if record.per_architecture:
                    pin += " (per architecture: " + ", ".join(f"sm_{a}" for a in sorted(record.per_architecture)) + ")"
                if (why := _skipped_by_build(manifest, backend)) is not None:
                    pin += f" (skipped by this build: {why})"
            except CiqError as exc:
                pin += f" (refused: {_refusal(exc, manifest.pin_file)}; `show {manifest.target}` says what to do)"
        rows.append((manifest.target, bench, objectives, pin))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    table = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    return "\n".join(table + [_unowned_line(path, target) for path, target in _unowned_pins(manifests)])


def _unowned_pins(manifests: list[Manifest]) -> list[tuple[Path, str]]:
    """The pinned records in the tuned targets' pin dirs that no target of this tree owns, with the target each
    names: BabelStream's ciq/cuda-stream.json, left when its ciq_tune_target() moved to the kernels' library, was
    applied by nothing and said nowhere. Only files that read as a record's JSON (a pin dir may hold others)."""
    owned = {m.pin_file.resolve() for m in manifests}
    found: list[tuple[Path, str]] = []
    for folder in dict.fromkeys(m.pin_file.parent for m in manifests):
        for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
            if path.resolve() in owned:
                continue
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if isinstance(data, dict) and isinstance(data.get("target"), str) and "controls" in data:
                found.append((path, data["target"]))
    return found


def _unowned_line(path: Path, target: str) -> str:
    return (f"not applied: {path}: no target of this build tree is tuned as {target} (its ciq_tune_target() call "
            f"removed or renamed?): call ciq_tune_target({target} ...) again, or delete the record")
