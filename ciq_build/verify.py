"""`python -m ciq_build verify <target>`: rebuild the target and check that its pin took effect.

Three checks, each of which a user could otherwise get wrong silently: the
record is valid for this toolchain (and its ACF unedited), the build tree's
options file carries exactly the record's controls (the CMake module did not
skip the pin), and the rebuilt objects show the pinned code and resource usage.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ciq_build import proc
from ciq_build.controls import nvcc_arguments
from ciq_build.errors import BuildError, RecordError
from ciq_build.fingerprint import compare, object_fingerprints
from ciq_build.lock import check_toolchain, read_record
from ciq_build.target import load_manifest
from ciq_build.toolchain import find_toolchain

BUILD_TIMEOUT = 1800.0


@dataclass(frozen=True)
class VerifyReport:
    ok: bool
    text: str


def verify(target: str, build_dir: Path) -> VerifyReport:
    manifest = load_manifest(build_dir, target)
    toolchain = find_toolchain(manifest.toolchain.cuda_compiler)
    if not manifest.pin_file.is_file():
        raise RecordError(f"{target} has no pinned record at {manifest.pin_file}; run `python -m ciq_build tune {target}` first")
    record = read_record(manifest.pin_file)
    check_toolchain(record, toolchain.major_minor, strict=True)
    result = proc.run(["cmake", "--build", str(build_dir), "--target", target], BUILD_TIMEOUT)
    if not result.ok:
        raise BuildError(f"building {target} failed ({result.describe()}):\n{result.output_tail()}")
    problems: list[str] = []
    expected_args = nvcc_arguments(record.controls)
    applied = _options_file_arguments(manifest.options_file)
    if applied != expected_args:
        problems.append(
            f"the build's options file {manifest.options_file} holds {applied or 'nothing'}, not the pinned "
            f"{expected_args}: reconfigure (cmake -S ... -B {build_dir}) and check for a warning from ciq_tune_target")
    objects = sorted(p for p in manifest.object_dir.rglob("*") if p.suffix in (".o", ".obj") and p.is_file())
    built = object_fingerprints(objects, manifest.object_dir, toolchain)
    problems += compare(record.objects, built)
    lines = [f"ciq_build verify {target}: {len(objects)} object(s), record {manifest.pin_file}"]
    if problems:
        lines += ["  FAILED:"] + [f"    {p}" for p in problems]
    else:
        lines.append("  ok: the pinned controls are applied and the objects match the tuned winner")
    return VerifyReport(not problems, "\n".join(lines))


def _options_file_arguments(path: Path) -> list[str]:
    """The arguments of an options file as written by controls.write_options_file."""
    import shlex

    if not path.is_file():
        return []
    return shlex.split(path.read_text(encoding="utf-8"))
