"""What a pin leaves in the compiled objects, so `verify` can check it took effect.

Per object file and architecture: the resource usage of each kernel and a hash
of the cubin's code sections. Not a hash of the whole file: the ACF's path is
embedded in the cubin's `.note.nv.tkinfo`, so identical code built from two
places would differ.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ciq_build import metrics
from ciq_build.toolchain import Toolchain


def object_fingerprints(objects: tuple[Path, ...] | list[Path], object_dir: Path,
                        toolchain: Toolchain) -> dict[str, dict[str, dict[str, Any]]]:
    """{object path relative to object_dir: {arch: {"kernels": {...}, "code_sha256": hex}}}."""
    result: dict[str, dict[str, dict[str, Any]]] = {}
    for obj in sorted(objects):
        relative = Path(obj).relative_to(object_dir).as_posix()
        usage = metrics.resource_usage(obj, toolchain)
        hashes = metrics.code_hash(obj, toolchain)
        per_arch: dict[str, dict[str, Any]] = {}
        for (function, arch), values in sorted(usage.items()):
            per_arch.setdefault(arch, {"kernels": {}})["kernels"][function] = dict(values)
        for arch, digest in hashes.items():
            per_arch.setdefault(arch, {"kernels": {}})["code_sha256"] = digest
        if per_arch:
            result[relative] = per_arch
    return result


def compare(pinned: dict[str, Any], built: dict[str, Any]) -> list[str]:
    """Differences between a record's fingerprints and a fresh build's, one line each."""
    problems = []
    for obj, archs in sorted(pinned.items()):
        if obj not in built:
            problems.append(f"{obj}: not built (is it still a source of the target?)")
            continue
        for arch, expected in sorted(archs.items()):
            actual = built[obj].get(arch)
            if actual is None:
                problems.append(f"{obj} [{arch}]: no code for this architecture in the build")
                continue
            if expected.get("code_sha256") != actual.get("code_sha256"):
                problems.append(f"{obj} [{arch}]: machine code differs from the tuned winner's")
            for function, usage in sorted(expected.get("kernels", {}).items()):
                got = actual.get("kernels", {}).get(function)
                if got != usage:
                    problems.append(f"{obj} [{arch}] {function}: resource usage {got} != pinned {usage}")
    for obj in sorted(set(built) - set(pinned)):
        problems.append(f"{obj}: built but not in the record (sources changed since tuning? retune)")
    return problems
