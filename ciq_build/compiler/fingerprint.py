"""What a pin leaves in the compiled objects, so `verify` can check it took effect.

Per object file and architecture: the kernels' resource usage (most registers
of any kernel, largest stack frame) and a hash of the cubin's code sections.
Not a hash of the whole file: the ACF's path is embedded in the cubin's
`.note.nv.tkinfo`, and nvcc names what has internal linkage (an anonymous
namespace, `static`) after the source's absolute path, so identical code built
from two places (another clone, CI) would differ; see metrics.code_hash.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ciq_build.compiler import metrics
from ciq_build.compiler.toolchain import Toolchain


@dataclass(frozen=True)
class ObjectInfo:
    """Static facts about one object file's code for one architecture (drift detection)."""

    registers: int
    stack: int
    code_sha256: str


Fingerprints = dict[str, dict[str, ObjectInfo]]


def object_fingerprints(objects: tuple[Path, ...] | list[Path], object_dir: Path, toolchain: Toolchain) -> Fingerprints:
    """{object path relative to object_dir: {arch: ObjectInfo}} for objects that hold device code."""
    result: Fingerprints = {}
    for obj in sorted(objects):
        relative = Path(obj).relative_to(object_dir).as_posix()
        usage = metrics.resource_usage(obj, toolchain)
        hashes = metrics.code_hash(obj, toolchain)
        per_arch: dict[str, ObjectInfo] = {}
        for arch, digest in sorted(hashes.items()):
            kernels = [values for (_, kernel_arch), values in usage.items() if kernel_arch == arch]
            per_arch[arch] = ObjectInfo(
                registers=max((k["registers"] for k in kernels), default=0),
                stack=max((k["stack"] for k in kernels), default=0),
                code_sha256=digest,
            )
        if per_arch:
            result[relative] = per_arch
    return result


def compare(pinned: Fingerprints, built: Fingerprints) -> list[str]:
    """Differences between a record's fingerprints and a fresh build's, one line each."""
    if not pinned and built:
        # A record written by hand (or with its "objects" removed): "built but not in the record (sources changed
        # since tuning?)" for each object sent its author looking for a change that was never made.
        return [f"the record holds no fingerprint of any object's code ({', '.join(sorted(built))} built), as a "
                "record written by hand, or with its \"objects\" removed, has none: nothing says the build is a "
                "tuned winner; tune the target to record them, or restore the record from version control"]
    problems = []
    for obj, archs in sorted(pinned.items()):
        if obj not in built:
            problems.append(f"{obj}: not built (is it still a source of the target?)")
            continue
        for arch, expected in sorted(archs.items()):
            actual = built[obj].get(arch)
            if actual is None:
                has = ", ".join(f"sm_{a}" for a in sorted(built[obj])) or "none"
                problems.append(f"{obj} [sm_{arch}]: no code for this architecture in the build, which compiles it for "
                                f"{has} (the architectures changed since tuning? tune again for them)")
                continue
            if expected.code_sha256 != actual.code_sha256:
                # Which of the two changed is not known here: say both, and the ways either does.
                problems.append(f"{obj} [sm_{arch}]: machine code differs from the tuned winner's (recorded "
                                f"{expected.code_sha256[:12]}, built {actual.code_sha256[:12]}: the source, its "
                                "headers, the flags or the toolkit changed since the tune, or the record was edited; "
                                "tune again, or restore the record from version control)")
            if (expected.registers, expected.stack) != (actual.registers, actual.stack):
                problems.append(f"{obj} [sm_{arch}]: {actual.registers} registers / {actual.stack} B stack, "
                                f"pinned {expected.registers} / {expected.stack}")
    for obj in sorted(set(built) - set(pinned)):
        problems.append(f"{obj}: built but not in the record (sources changed since tuning? retune)")
    return problems
