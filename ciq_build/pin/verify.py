"""`python -m ciq_build verify <target>`: rebuild the target and check that its pin took effect.

Three checks, each of which a user could otherwise get wrong silently: the
record is valid for this toolchain (and its ACF unedited), the build's options
file carries exactly the record's controls (the CMake module, or setuptools'
build_ext, did not skip the pin), and the rebuilt objects show the pinned code
and resource usage. The build is the project's own (its `BuildBackend`: a plain
`cmake --build`, or setup.py's build_ext).
"""

from __future__ import annotations

import logging
import shlex
from dataclasses import dataclass, replace
from pathlib import Path

from ciq_build.compiler.controls import Controls, nvcc_arguments
from ciq_build.compiler.fingerprint import compare, object_fingerprints
from ciq_build.errors import BuildError, RecordError
from ciq_build.pin.apply import build_decision, check_toolchain, gencode_options_file
from ciq_build.pin.read import read_record
from ciq_build.project.backend import BuildBackend
from ciq_build.project.preflight import check_verify
from ciq_build.project.worker import existing_objects
from ciq_build.state.durable import sha256_file

LOG = logging.getLogger("ciq_build")  # the CLI's handler: -v shows its debug lines

BUILD_TIMEOUT = 1800.0


@dataclass(frozen=True)
class VerifyReport:
    ok: bool
    text: str


def verify(target: str, backend: BuildBackend) -> VerifyReport:
    backend.check_buildable()  # before its manifest, whose paths may be another tree's
    manifest = backend.manifest(target)
    toolchain = backend.toolchain(manifest)
    if not manifest.pin_file.is_file():
        raise RecordError(f"{target} has no pinned record at {manifest.pin_file}; run `python -m ciq_build tune {target}` first")
    record = read_record(manifest.pin_file)
    check_toolchain(record, toolchain.major_minor, strict=True, ptxas=toolchain.ptxas_version)
    applies, said = build_decision(manifest, toolchain)  # what the build would refuse, said before building
    if not applies:
        raise RecordError(said)
    if said.startswith("pins disabled"):  # nothing of the pin to check: said, not a mismatch of the code
        fix = ("unset CIQ_DISABLE" if manifest.setuptools else
               f"configure with -DCIQ_DISABLE=OFF (cmake -DCIQ_DISABLE=OFF {backend.build_dir})")
        return VerifyReport(False, f"ciq_build verify {target}: record {manifest.pin_file}\n  FAILED:\n    this build "
                                   f"applies no pin: {said}; {fix} to apply it")
    if said.startswith("pin skipped"):  # another architecture set or CUDA: nothing of the pin reaches the code
        # GPUSorting's record for 80, 90 verified in a build for 90 alone: the build rebuilt the objects for nothing and
        # said 11 lines (each options file empty, each object's code not the winner's), all of the one reason.
        return VerifyReport(False, f"ciq_build verify {target}: record {manifest.pin_file}\n  FAILED:\n    this build "
                                   f"skips the pin: {said}")
    check_verify(toolchain, target, backend.build_dir)  # before a build that could not be checked
    result = backend.build_pinned(manifest, BUILD_TIMEOUT)
    if not result.ok:
        raise BuildError(f"building {target} failed ({result.describe()}):\n"
                         f"{without_call_stacks(result.output_tail())}")
    problems: list[str] = []
    applied = record.applied_controls()
    hint = backend.rebuild_hint(manifest)
    for arch, controls in applied:  # -v: what the build must carry, as the command line nvcc is given
        LOG.debug("pinned controls%s: %s", f" for {arch}" if arch else "",
                  shlex.join(nvcc_arguments(controls)) or "(none)")
    if len({controls for _, controls in applied}) == 1:  # one set of controls: plain nvcc with the options file
        problems += _check_options_file(manifest.options_file, applied[0][1], hint)
    else:  # per -gencode: the shared -D in the options file, each architecture's own beside it
        problems += _check_options_file(manifest.options_file, Controls(defines=applied[0][1].defines), hint)
        for arch, controls in applied:
            problems += _check_options_file(gencode_options_file(manifest.options_file, arch),
                                            replace(controls, defines=()), hint)
    objects = existing_objects(manifest.objects)
    built = object_fingerprints(objects, manifest.object_dir, toolchain)
    problems += compare(record.objects, built)
    # BabelStream's executable: "2 object(s)" where its main.cpp.o holds no device code to check.
    device = f" ({len(built)} with device code)" if len(built) != len(objects) else ""
    lines = [f"ciq_build verify {target}: {len(objects)} object(s){device}, record {manifest.pin_file}"]
    if problems:
        lines += ["  FAILED:"] + [f"    {p}" for p in problems]
    else:
        lines.append("  ok: the pinned controls are applied and the objects match the tuned winner")
    return VerifyReport(not problems, "\n".join(lines))


def without_call_stacks(text: str) -> str:
    """A build's output without CMake's "Call Stack (most recent call first):" blocks: the module's own
    functions, which say nothing to the user that the error above them has not."""
    kept: list[str] = []
    stack_indent: int | None = None  # the header's indent, inside a call stack
    for line in text.splitlines():
        indent = len(line) - len(line.lstrip())
        if line.strip() == "Call Stack (most recent call first):":
            stack_indent = indent
            continue
        if stack_indent is not None and line.strip() and indent > stack_indent:
            continue
        stack_indent = None
        kept.append(line)
    return "\n".join(kept)


def _check_options_file(path: Path, controls: Controls, rebuild_hint: str) -> list[str]:
    """Does the build's options file carry exactly the record's controls?

    The ACF is compared by content: the CMake module may apply a copy of it
    (from inside the build tree, when the pin dir's path is unsafe for ptxas).
    """
    applied = shlex.split(path.read_text(encoding="utf-8")) if path.is_file() else []
    acf_args = [a for a in applied if "--apply-controls=" in a]
    plain = [a for a in applied if "--apply-controls=" not in a]
    expected = nvcc_arguments(replace(controls, acf=None))
    problems = []
    if plain != expected:
        problems.append(
            f"the build's options file {path} holds {plain or 'nothing'}, not the pinned {expected}: {rebuild_hint}")
    if controls.acf is None and acf_args:
        problems.append(f"the build applies an ACF ({acf_args[0]}) that the record does not name")
    if controls.acf is not None:
        if len(acf_args) != 1:
            problems.append(f"the build applies no ACF, but the record pins {controls.acf.path.name}")
        else:
            acf_file = Path(acf_args[0].split("--apply-controls=", 1)[1].strip('"'))
            digest = sha256_file(acf_file) if acf_file.is_file() else "missing"
            if digest != controls.acf.sha256:
                problems.append(f"the ACF the build applies ({acf_file}) has sha256 {digest}, the record "
                                f"{controls.acf.sha256}: restore the pinned ACF, or {rebuild_hint}")
    return problems
