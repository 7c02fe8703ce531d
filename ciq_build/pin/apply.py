"""What a build applies of a pinned record (resolve_build_pin), decided exactly as the CMake module's
_ciq_resolve_pin: the toolkit and architecture checks that skip a pin, the build-time rules (declared
PARAMS, numerics consent, an nvcc ACF's architectures), and the nvcc arguments, per -gencode when the
record's entries differ.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ciq_build.compiler.architectures import arch_name, architecture_list
from ciq_build.compiler.controls import Controls
from ciq_build.compiler.toolchain import Toolchain, major_minor
from ciq_build.core.rules import RuleBook, declared_params, load_rules, read_regular_file, value_in_domain
from ciq_build.errors import RecordError, UnsafeFlagError
from ciq_build.pin.read import read_record
from ciq_build.pin.record import PinnedRecord, architecture_set, check_pin_dir, record_path
from ciq_build.pin.write import replace_file
from ciq_build.project.manifest import Manifest
from ciq_build.project.tree_cache import cache_value


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
                      architectures: Sequence[str] | None = None, top: Path | None = None) -> BuildPin:
    """The pin a build applies, decided exactly as the CMake module's _ciq_resolve_pin.

    RecordError (or UnsafeFlagError) for a record the rule book refuses, and for
    a toolkit mismatch under `strict`; a plain mismatch skips the pin with a warning.
    `ptxas` is the building ptxas's version ("" when unknown): a ptxas ACF is
    only applied by the ptxas major.minor it was measured with. `architectures`
    are the ones the build compiles for (None: not known, not checked): a pin
    is only applied to the architectures it was tuned for. `top` is the project's top folder: no folder
    from it down to the pin dir may be a link (check_pin_dir).
    """
    path = record_path(pin_dir, target)
    if disabled:
        return BuildPin("disabled", (), (), "pins disabled (CIQ_DISABLE)")
    check_pin_dir(Path(pin_dir), top)
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
        anywhere = "" if record.toolchain.architectures else f" ({rules.message('any_architecture')})"
        return BuildPin("applied", tuple(arguments), depends, f"pinned controls from {path}: {shown}{anywhere}",
                        record)
    shared = define_arguments(applied[0][1])  # equal across the entries (shared_defines_problem)
    shown = "; ".join(f"sm_{arch}: {' '.join(args) or 'compiler defaults'}" for arch, args in per_arch)
    return BuildPin("applied", tuple(shared), depends,
                    f"pinned controls per architecture from {path}: {shown}"
                    + (f"; all: {' '.join(shared)}" if shared else ""), record, per_architecture=tuple(per_arch))


def build_decision(manifest: Manifest, toolchain: Toolchain) -> tuple[bool, str]:
    """What the target's build does with its pinned record, in the build's words (`show`, `verify`): (True,
    what it applies or why it skips it), or (False, why it refuses the record, as the configure stops).

    Decided by resolve_build_pin, as the build decides it (CIQ_STRICT and CIQ_DISABLE as the build has them:
    wangzyon's SGEMM's build with -DCIQ_DISABLE=ON was shown as applying its pin); an ACF it would copy goes to a
    temporary folder, not the build tree.
    """
    strict, disabled = build_switches(manifest)
    with tempfile.TemporaryDirectory(prefix="ciq-decision-") as copies:
        try:
            pin = resolve_build_pin(manifest.target, manifest.pin_dir, params=manifest.params,
                                    allow_numerics=manifest.allow_numerics, cuda=toolchain.major_minor,
                                    strict=strict, disabled=disabled, copy_dir=Path(copies),
                                    ptxas=toolchain.ptxas_version,
                                    architectures=architecture_list(manifest.toolchain.architectures) or None,
                                    top=manifest.source_dir)
        except RecordError as error:  # UnsafeFlagError is one
            return False, f"ciq_tune_target({manifest.target}) refuses the record, and the configure stops: {error}"
    if pin.status == "skipped":
        return True, f"{pin.message}; {pin.warning}"
    return True, pin.message


_TRUE = frozenset({"1", "on", "yes", "true", "y"})


def build_switches(manifest: Manifest) -> tuple[bool, bool]:
    """(CIQ_STRICT, CIQ_DISABLE) as the target's build has them: a CMake tree's cache, or, for a setuptools
    CudaExtension, this environment (what its build_ext reads)."""
    if manifest.setuptools:
        said = {name: os.environ.get(name, "") for name in ("CIQ_STRICT", "CIQ_DISABLE")}
    else:
        cache = manifest.binary_dir / "CMakeCache.txt"
        said = {name: cache_value(cache, name) or "" for name in ("CIQ_STRICT", "CIQ_DISABLE")}
    return (said["CIQ_STRICT"].strip().lower() in _TRUE, said["CIQ_DISABLE"].strip().lower() in _TRUE)


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


def _shown_architectures(architectures: Iterable[str]) -> str:
    return ", ".join(architecture_set(architectures)) or "nvcc's default architecture"


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


def check_defines(record: PinnedRecord, params: Sequence[str], path: Path) -> None:
    """Refuse a define that is not a declared PARAMS name, or whose value is outside its domain."""
    declared = declared_params(params)
    defines = sorted({d for controls in record.all_controls() for d in controls.defines})
    for name, value in defines:
        if name not in declared:
            names = ", ".join(sorted(declared)) or "none"
            raise UnsafeFlagError(
                f"pinned record {path}: controls.defines.{name} is refused: only the PARAMS of "
                f"ciq_tune_target({record.target}) (params= of its CudaExtension) may be defined (declared: {names}). "
                f"Add {name} to PARAMS (params=) and retune, or remove it from the record."
            )
        if not value_in_domain(declared[name], value):
            raise UnsafeFlagError(
                f"pinned record {path}: controls.defines.{name}={value!r} is outside its declared domain "
                f"{declared[name]!r}. Retune, or set a value that PARAMS (params=) allows."
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
                replace_file(copy, data)
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
