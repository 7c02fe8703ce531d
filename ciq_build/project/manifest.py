"""The manifest the CMake module writes for each tuned target.

``ciq_tune_target(<target> ...)`` makes CMake write
``<build dir>/ciq/targets/<target>.json`` (file(GENERATE)), which tells the
driver everything it needs to know about the target without parsing CMake
itself: sources, object directory, benchmark, objectives, pin location. This
module reads it and validates every field, so that a stale or hand-edited
manifest fails here with a message, not deep inside a tune.

Each field is declared once, on the dataclasses below (`in_json`: its JSON form and what
it is): the reader, the document the setuptools backend writes
(`manifest_document`) and the published JSON Schema
(ciq_build.project.manifest_schema) are derived from that declaration. What a
schema cannot say stays with the reader (`_check_relations`): that the target
names its file, that every object lies under object_dir, that METRIC compiles
with a group, that the objectives parse and that a benchmark objective has a
benchmark. Beside it, the target's own nvcc flags (`read_cuda_flags`).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from glob import escape as glob_escape
from pathlib import Path
from typing import Any

from ciq_build.compiler.architectures import arch_name, flag_architectures, split_architectures
from ciq_build.core.objectives import Objective, parse_objectives
from ciq_build.core.rules import is_target_name, load_rules, nearest
from ciq_build.core.settings import TIMEOUT_RULE, timeout_seconds
from ciq_build.errors import CiqError, ConfigError, ManifestError
from ciq_build.project.json_model import (
    ABSOLUTE,
    ABSOLUTES,
    BOOL,
    NONEMPTY,
    TEXT,
    TEXTS,
    Fail,
    Form,
    as_object,
    document,
    in_json,
    nullable,
    object_form,
    read_object,
    read_text,
    read_texts,
)
from ciq_build.project.param_defines import guarded_defaults
from ciq_build.project.per_block import DYNAMIC_SHARED, THREADS, Declared, read_declared
from ciq_build.state.durable import read_json_object

MANIFEST_SCHEMA = 2  # 2: "objects", the target's object files as CMake names them
_UNKNOWN = "is not a manifest field"


# -- the forms of the manifest's own fields ---------------------------------------------------


def _read_schema(fail: Fail, where: str, value: Any) -> int:
    if type(value) is not int or value != MANIFEST_SCHEMA:
        raise fail(where, f"is {value!r}; this ciq_build reads schema {MANIFEST_SCHEMA}: use the ciq_build "
                          "whose CMake package configured the project")
    return value


def _name_schema(rule: str) -> dict[str, Any]:
    """A string that the rule book's pattern `rule` takes."""
    pattern = load_rules().patterns[rule]
    return {"type": "string", "pattern": f"^(?:{pattern.regex.pattern})$", "minLength": pattern.min_length,
            "maxLength": pattern.max_length}


def _read_target(fail: Fail, where: str, value: Any) -> str:
    return check_target_name(read_text(fail, where, value, empty=False))


def _read_metric_unit(fail: Fail, where: str, value: Any) -> str:
    unit = read_text(fail, where, value)
    if not load_rules().matches("metric_unit", unit):  # ciq_build.core.metric_unit: a time or a rate
        raise fail(where, f"is {unit!r}: {load_rules().message('unknown_metric_unit', value=unit)}; fix UNIT in "
                          "ciq_tune_target()")
    return unit


def _read_timeout(fail: Fail, where: str, value: Any) -> float:
    seconds = timeout_seconds(value)
    if seconds is None:
        raise fail(where, f"must be {TIMEOUT_RULE}, not {value!r}")
    return seconds


def _read_args_sets(fail: Fail, where: str, value: Any) -> tuple[tuple[str, tuple[str, ...]], ...]:
    if not isinstance(value, list):
        raise fail(where, "is not a list")
    sets: list[tuple[str, tuple[str, ...]]] = []
    for i, item in enumerate(value):
        entry = as_object(fail, f"{where}[{i}]", item)
        for key in ("name", "args"):
            if key not in entry:
                raise fail(f"{where}[{i}].{key}", "is missing")
        name = read_text(fail, f"{where}[{i}].name", entry["name"], empty=False)
        problem = args_set_problem(name, [known for known, _ in sets])
        if problem:
            raise fail(f"{where}[{i}].name", problem)
        sets.append((name, read_texts(fail, f"{where}[{i}].args", entry["args"])))
    return tuple(sets)


def _read_score(fail: Fail, where: str, value: Any) -> str:
    words = load_rules().words["score"]
    if value not in words:
        raise fail(where, f"is {value!r}, not one of {', '.join(words)}")
    return str(value)


SCHEMA = Form(lambda: {"const": MANIFEST_SCHEMA}, _read_schema)
TARGET = Form(lambda: _name_schema("target_name"), _read_target)
METRIC_UNIT = Form(lambda: _name_schema("metric_unit"), _read_metric_unit)
TIMEOUT = Form(lambda: {"type": "number", "exclusiveMinimum": 0}, _read_timeout)
ARGS_SETS = Form(lambda: {"type": "array", "items": {
                     "type": "object", "properties": {"name": _name_schema("args_set_name"), "args": TEXTS.schema()},
                     "required": ["name", "args"], "additionalProperties": False}},
                 _read_args_sets, lambda sets: [{"name": name, "args": list(args)} for name, args in sets])
SCORE = Form(lambda: {"enum": list(load_rules().words["score"])}, _read_score)


# -- the declaration ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Benchmark:
    """The executable that measures a candidate."""

    target: str = field(metadata=in_json(NONEMPTY, "BENCHMARK: the benchmark's CMake target"))
    path: Path = field(metadata=in_json(ABSOLUTE, "the benchmark's executable ($<TARGET_FILE>)"))
    args: tuple[str, ...] = field(default=(), metadata=in_json(TEXTS, "ARGS: its arguments"))
    args_sets: tuple[tuple[str, tuple[str, ...]], ...] = field(default=(), metadata=in_json(
        ARGS_SETS, "ARGS_SETS: the problem sizes scored together, each (name, its arguments), run once per "
        "repeat (ciq_build.measure.sizes); left out or empty: one size, `args`", optional=True))
    score: str = field(default="geomean", metadata=in_json(
        SCORE, "SCORE: how the sizes' ratios to the defaults make one score", optional=True))
    sources: tuple[Path, ...] = field(default=(), metadata=in_json(
        ABSOLUTES, "the benchmark target's own C, C++ and CUDA sources (not the tuned target's CUDA sources, where "
        "the benchmark is the tuned target): a candidate's -D reaches none of them (ciq_build.tune.param_probe, "
        "warn_host_reads); empty: none, or not known", optional=True))


@dataclass(frozen=True)
class ManifestToolchain:
    """The CUDA compiler CMake configured the project with."""

    cuda_compiler: Path = field(metadata=in_json(ABSOLUTE, "CMAKE_CUDA_COMPILER"))
    cuda_compiler_version: str = field(metadata=in_json(TEXT, "CMAKE_CUDA_COMPILER_VERSION"))
    architectures: str = field(metadata=in_json(
        TEXT, 'CMAKE_CUDA_ARCHITECTURES as CMake holds it, e.g. "90a" or "80;90a"'))
    architectures_default: bool = field(default=False, metadata=in_json(
        BOOL, "the architectures are CMake's default for the nvcc (75 with CUDA 13): the project set no "
        "CMAKE_CUDA_ARCHITECTURES (ciq_build.compiler.gpu_arch.default_note)", optional=True))
    architectures_unread: str = field(default="", metadata=in_json(
        TEXT, "why configure could not read the architectures the target builds (a generator expression), or "
        "empty; `architectures` is then empty, and a tune is refused (ciq_build.project.preflight)", optional=True))


# Manifest.generator of a setuptools CudaExtension described as a target (ciq_build.project.setuptools_backend):
# no CMake tree.
SETUPTOOLS_GENERATOR = "setuptools"
# What makes a target tunable, as the commands' help says it: the manifest is written for it.
REGISTERED = "registered with ciq_tune_target() (in a setuptools project: a CudaExtension's ciq_target=)"


@dataclass(frozen=True, kw_only=True)
class Manifest:
    """Everything the driver knows about one tuned target: the JSON file's fields, in its order (a field
    marked optional may be left out by an older writer: its default is what that writer meant), then what
    the driver adds."""

    schema: int = field(default=MANIFEST_SCHEMA, metadata=in_json(SCHEMA, "the manifest's format"))
    target: str = field(metadata=in_json(TARGET, "the tuned target; the file is <target>.json"))
    description: str = field(default="", metadata=in_json(
        TEXT, "DESCRIPTION: what the target is, in one line", optional=True, shown="description"))
    source_dir: Path = field(metadata=in_json(ABSOLUTE, "CMAKE_SOURCE_DIR"))
    binary_dir: Path = field(metadata=in_json(ABSOLUTE, "CMAKE_BINARY_DIR"))
    target_source_dir: Path = field(metadata=in_json(ABSOLUTE, "the target's SOURCE_DIR"))
    target_binary_dir: Path = field(metadata=in_json(ABSOLUTE, "the target's BINARY_DIR"))
    cuda_sources: tuple[Path, ...] = field(metadata=in_json(ABSOLUTES, "the target's CUDA sources"))
    host_sources: tuple[Path, ...] = field(default=(), metadata=in_json(
        ABSOLUTES, "the target's other C and C++ sources, which its host compiler builds without a candidate's -D "
        "(ciq_build.tune.param_probe, warn_host_reads); empty: none, or not known", optional=True))
    object_dir: Path = field(metadata=in_json(ABSOLUTE, "what object names in a pin's fingerprints are relative to"))
    objects: tuple[Path, ...] = field(default=(), metadata=in_json(
        ABSOLUTES, "$<TARGET_OBJECTS:target>: every object file the target links"))
    target_file: Path | None = field(default=None, metadata=in_json(
        nullable(ABSOLUTE), "$<TARGET_FILE:target>: what building the target itself writes (an executable or library; "
        "null for an object library)", optional=True))
    benchmark: Benchmark | None = field(metadata=in_json(
        nullable(object_form(Benchmark, _UNKNOWN)), "BENCHMARK and its arguments; null: static objectives only"))
    metric_regex: str = field(metadata=in_json(TEXT, "METRIC: the regex whose first group is the time"))
    metric_unit: str = field(default="ms", metadata=in_json(
        METRIC_UNIT, "UNIT: what METRIC's number is in: a time (s, ms, us, ns) or a rate (TFLOPS, GB/s, items/s)", optional=True))
    objectives: tuple[str, ...] = field(metadata=in_json(TEXTS, "OBJECTIVES; empty: the driver picks"))
    params: tuple[str, ...] = field(metadata=in_json(TEXTS, "PARAMS: source parameters and their domains"))
    constraints: tuple[str, ...] = field(default=(), metadata=in_json(
        TEXTS, "CONSTRAINTS: expressions over the PARAMS names (ciq_build.core.constraints)", optional=True))
    seeds: tuple[str, ...] = field(default=(), metadata=in_json(
        TEXTS, "SEEDS: configurations evaluated first (ciq_build.search.seeds): records, ACFs, folders of them "
        "(a path relative to source_dir; CMake writes them absolute) or controls lists", optional=True))
    search_space: tuple[str, ...] = field(metadata=in_json(TEXTS, "SEARCH_SPACE"))
    pin_dir: Path = field(metadata=in_json(ABSOLUTE, "PIN_DIR"))
    pin_file: Path = field(metadata=in_json(ABSOLUTE, "the pinned record's file in PIN_DIR"))
    timeout: float = field(metadata=in_json(TIMEOUT, "TIMEOUT, in seconds"))
    threads_per_block: tuple[str, ...] = field(default=(), metadata=in_json(
        TEXTS, "THREADS_PER_BLOCK: the kernels' threads a block, a number or a PARAMS name [and the defaults' "
        "number] (ciq_build.project.per_block); empty: not declared", optional=True))
    dynamic_shared_memory: tuple[str, ...] = field(default=(), metadata=in_json(
        TEXTS, "DYNAMIC_SHARED_MEMORY: the bytes of dynamic shared memory a block takes at launch, as "
        "THREADS_PER_BLOCK (ciq_build.project.per_block); empty: not declared", optional=True))
    options_file: Path = field(metadata=in_json(ABSOLUTE, "the nvcc options file the build reads"))
    generator: str = field(metadata=in_json(NONEMPTY, "CMAKE_GENERATOR (or setuptools)"))
    allow_numerics: bool = field(metadata=in_json(
        BOOL, "ALLOW_NUMERICS: the search may change floating-point results"))
    separable_compilation: bool = field(default=False, metadata=in_json(
        BOOL, "CUDA_SEPARABLE_COMPILATION: relocatable device code (-rdc=true), whose kernels' registers and stack "
        "the device link finishes, after ptxas reported them", optional=True))
    toolchain: ManifestToolchain = field(metadata=in_json(
        object_form(ManifestToolchain, _UNKNOWN), "the CUDA compiler"))
    path: Path | None = None  # the manifest file it was read from
    # The target's own nvcc flags (CMAKE_CUDA_FLAGS, its COMPILE_OPTIONS for CUDA; a CudaExtension's nvcc_flags): a
    # file beside the manifest (`read_cuda_flags`), not a field of it, as JSON written at generate time cannot
    # escape them. The numerics knobs they already fix are left out of a tune (ciq_build.compiler.controls).
    cuda_flags: tuple[str, ...] = ()
    # tune --architecture: the one architecture (arch_name spelling) this tune builds and pins an
    # entry for; toolchain.architectures is then that architecture's entry alone. "" for all.
    tune_architecture: str = ""

    @property
    def setuptools(self) -> bool:
        """The target is a setuptools CudaExtension's (its declarations are CudaExtension's arguments), not a
        ciq_tune_target() call's."""
        return self.generator == SETUPTOOLS_GENERATOR

    @property
    def parsed_objectives(self) -> list[Objective]:
        """OBJECTIVES of ciq_tune_target(), parsed; empty when none were given (the driver picks)."""
        return parse_objectives(list(self.objectives)) if self.objectives else []


def manifest_dir(build_dir: Path) -> Path:
    return Path(build_dir) / "ciq" / "targets"


def check_target_name(target: object, what: type[Exception] = ManifestError) -> str:
    """A target name that is safe to use as a file name."""
    if not is_target_name(target):
        raise what(
            f"target name {target!r} is not usable: ciq_build needs a plain CMake target name "
            "(letters, digits, _ . + -, starting with a letter, digit or _; no paths or :: aliases)."
        )
    return target


def tuned_targets(build_dir: Path) -> list[str]:
    """The names of the targets a build tree has manifests for (ciq_tune_target), sorted; none: empty."""
    folder = manifest_dir(build_dir)
    try:
        return sorted(p.stem for p in folder.glob("*.json") if p.is_file())
    except OSError:
        return []


def load_manifest(build_dir: Path, target: str) -> Manifest:
    """Read and validate ``<build_dir>/ciq/targets/<target>.json``."""
    build_dir = Path(build_dir)
    check_target_name(target)
    path = manifest_dir(build_dir) / f"{target}.json"
    if not path.is_file():
        raise ManifestError(_not_tuned_here(build_dir, target))
    return read_manifest(path)


def _not_tuned_here(build_dir: Path, target: str) -> str:
    """Why `target` has no manifest in `build_dir`, in the user's words (the manifest is ours, not theirs)."""
    others = tuned_targets(build_dir)
    if not others and not (build_dir / "CMakeCache.txt").is_file():
        return (f"{build_dir} is not a configured CMake build tree (no CMakeCache.txt): pass your project's build "
                f"folder with -B <build dir>, or configure it first (cmake -S <src> -B {build_dir} "
                "-Dciq_build_DIR=\"$(python -m ciq_build --cmake-dir)\")")
    # BabelStream's trial: `tune cuda-stream`, the executable that runs the tuned library's kernels, was told to
    # add ciq_tune_target(cuda-stream ...), which configure refuses (no CUDA sources of its own).
    runs = [name for name in others if _benchmark_of(build_dir, name) == target]
    if runs:
        return (f"{target!r} is not a tuned target of {build_dir}: it is the BENCHMARK of {', '.join(runs)}, the "
                f"tuned target whose kernels it runs and whose pin they build with: name {runs[0]} instead")
    guess = nearest(target, others)
    hint = f" (did you mean {guess}?)" if guess else ""
    tuned = f"its tuned targets: {', '.join(others)}" if others else "it has no tuned targets"
    return (f"{target!r} is not a tuned target of {build_dir}{hint}; {tuned}. To tune it, add "
            f"ciq_tune_target({target} ...) to its CMakeLists.txt and configure again (cmake {build_dir})")


def _benchmark_of(build_dir: Path, target: str) -> str | None:
    """The BENCHMARK target of a tuned target, or None (none, or a manifest that does not read)."""
    try:
        manifest = read_manifest(manifest_dir(build_dir) / f"{target}.json")
    except (CiqError, OSError, ValueError):
        return None
    return manifest.benchmark.target if manifest.benchmark is not None else None


def list_manifests(build_dir: Path) -> list[Manifest]:
    """Every tuned target's manifest in a build tree, sorted by target name."""
    return [read_manifest(manifest_dir(Path(build_dir)) / f"{name}.json") for name in tuned_targets(Path(build_dir))]


def _failure(path: Path) -> Fail:
    """A refusal naming the manifest file and the field, and what regenerates the file."""
    def fail(field: str, problem: str) -> ManifestError:
        return ManifestError(
            f"manifest {path}: field {field!r} {problem}. The CMake module writes this file; "
            "reconfigure the project with CMake (and the same ciq_build version) to regenerate it."
        )
    return fail


def _load_json(path: Path) -> dict[str, Any]:
    try:
        return read_json_object(path)
    except OSError as exc:
        raise ManifestError(f"cannot read manifest {path}: {exc}; reconfigure the project with CMake.") from exc
    except ValueError as exc:
        raise ManifestError(
            f"manifest {path} is not valid JSON ({exc}); reconfigure the project with CMake to regenerate it."
        ) from exc


def read_manifest(path: Path) -> Manifest:
    """Read and validate one manifest file: each field by its declaration, then what relates fields."""
    path = Path(path)
    fail = _failure(path)
    data = as_object(fail, "(top level)", _load_json(path))
    manifest = Manifest(**read_object(Manifest, fail, "", data,
                                      f"{_UNKNOWN} (written by a different ciq_build version?)"), path=path,
                        cuda_flags=read_cuda_flags(path))
    _check_relations(manifest, fail)
    return manifest


# <target>.cuda-flags-<config>, one a configuration this tree builds (<config> noconfig in a single-configuration tree
# without CMAKE_BUILD_TYPE; cmake/ciq_build_manifest.cmake)
CUDA_FLAGS_SUFFIX = ".cuda-flags-"


def read_cuda_flags(manifest: Path) -> tuple[str, ...]:
    """The target's own nvcc flags, one a line in the files the CMake module writes beside its `manifest`, one a
    configuration: those every configuration's build passes (a multi-config tree's), in the first one's order; ()
    where there is none (a tree configured by an older ciq_build) or one cannot be read."""
    files = sorted(manifest.parent.glob(glob_escape(manifest.stem + CUDA_FLAGS_SUFFIX) + "*"))
    try:
        each = [[line for line in file.read_text().splitlines() if line] for file in files]
    except (OSError, UnicodeDecodeError):
        return ()
    if not each:
        return ()
    return tuple(flag for flag in each[0] if all(flag in flags for flags in each[1:]))


def _check_relations(manifest: Manifest, fail: Fail) -> None:
    """What the schema cannot say: the target names its file, its objects lie under object_dir (a pin names
    them relative to it, compiler/fingerprint.py: one outside would fail mid-tune), METRIC has a group, the
    objectives parse and a benchmark objective has a benchmark."""
    assert manifest.path is not None
    if manifest.target != manifest.path.stem:
        raise fail("target", f"is {manifest.target!r} but the file is named {manifest.path.name}")
    for i, item in enumerate(manifest.objects):
        if not item.is_relative_to(manifest.object_dir):
            raise fail(f"objects[{i}]", f"is {str(item)!r}, which is not under object_dir {str(manifest.object_dir)!r}")
    if manifest.metric_regex:
        try:
            compiled = re.compile(manifest.metric_regex)
        except (re.error, RecursionError, OverflowError) as exc:
            raise fail("metric_regex",
                       f"is not a valid regular expression ({exc}); fix METRIC in ciq_tune_target()") from exc
        if compiled.groups < 1:
            raise fail("metric_regex", "needs a capture group around the number; fix METRIC in ciq_tune_target()")
    try:
        parsed = manifest.parsed_objectives
    except ConfigError as exc:
        raise fail("objectives", f"is invalid: {exc} Fix OBJECTIVES in ciq_tune_target()") from exc
    for setting, items in ((THREADS, manifest.threads_per_block), (DYNAMIC_SHARED, manifest.dynamic_shared_memory)):
        try:
            read_declared(setting, items, manifest.params)
        except ConfigError as exc:
            raise fail(setting.keyword.lower(),
                       f"is invalid: {exc}. Fix {setting.keyword} in ciq_tune_target()") from exc
    needs = [o.name for o in parsed if o.source == "benchmark"]
    if manifest.benchmark is None and needs:
        raise fail("benchmark", f"is null but objective(s) {', '.join(needs)} are read from a benchmark: give "
                                "ciq_tune_target() a BENCHMARK, or use static objectives such as registers")


def manifest_document(manifest: Manifest) -> dict[str, Any]:
    """`manifest` as the JSON document the CMake module writes (what read_manifest reads back)."""
    return document(manifest)


def benchmark_sizes(manifest: Manifest) -> list[str]:
    """The names of the benchmark's problem sizes (ARGS_SETS), in the order given; [] for one size. A journal
    header and a pinned record keep them, so that reports list the sizes in this order."""
    bench = manifest.benchmark
    return [name for name, _ in bench.args_sets] if bench is not None else []


def args_set_problem(name: str, earlier: Sequence[str]) -> str | None:
    """What is wrong with an ARGS_SETS name (the rule book's args_set_name), or None."""
    if not load_rules().matches("args_set_name", name):
        return (f"{name!r} is not a size name (1-32 letters, digits, _ . + -, not starting with . + -); "
                "write ARGS_SETS \"small:-n 1024\" \"large:-n 65536\"")
    if name in earlier:
        return f"the size {name!r} is given more than once; name each size once"
    return None


def check_architectures_read(manifest: Manifest) -> None:
    """Refuse a tune of a target whose architectures configure could not read (`architectures_unread`): it would not
    know which architectures it measures, and the pin it wrote would stop the next configure, which cannot check it
    against them (cmake/ciq_build_apply.cmake, _ciq_unread_architectures)."""
    why = manifest.toolchain.architectures_unread
    if why:
        raise ConfigError(
            f"cannot tune {manifest.target}: configure could not read which architectures it builds ({why}, which "
            "configure cannot evaluate), so a tune would not know which architectures it measures, nor could the "
            "build check its pin against them. Name the architectures in CUDA_ARCHITECTURES, without a generator "
            f"expression (set_target_properties({manifest.target} PROPERTIES CUDA_ARCHITECTURES 90), or "
            "-DCMAKE_CUDA_ARCHITECTURES=90), and configure again.")


def for_architecture(manifest: Manifest, architecture: str) -> Manifest:
    """`manifest` narrowed to one of its architectures (tune --architecture): the scratch trees build
    only that one, and the winner is pinned as its entry of a per-architecture record."""
    wanted = arch_name(architecture)
    entries = split_architectures(manifest.toolchain.architectures)
    matching = [entry for entry in entries if arch_name(entry) == wanted]
    if not wanted or not matching:
        have = ", ".join(arch_name(e) for e in entries) or "none (nvcc's default)"
        flag = flag_architectures(manifest.cuda_flags).get(wanted)
        if flag is not None and entries:  # cuda-api-wrappers' examples: 75 by CMake's default, 80 and 86 by -gencode
            raise ManifestError(
                f"--architecture {architecture}: {manifest.target}'s sm_{wanted} code is built by its own nvcc flags "
                f"({flag}), beside its CUDA_ARCHITECTURES ({have}), which --architecture names one of and a pin is "
                f"checked against. To tune sm_{wanted} on its own, list {wanted} in CMAKE_CUDA_ARCHITECTURES in "
                "place of that flag; or tune them all at once (no --architecture).")
        raise ManifestError(
            f"--architecture {architecture}: {manifest.target} is built for {have}, not {architecture}. Name one "
            f"of its CUDA_ARCHITECTURES (e.g. --architecture {arch_name(entries[0]) if entries else '90a'}), or set "
            "CUDA_ARCHITECTURES to the architectures to tune for.")
    toolchain = dataclasses.replace(manifest.toolchain, architectures=matching[0])
    return dataclasses.replace(manifest, toolchain=toolchain, tune_architecture=wanted)


def declared_per_block(manifest: Manifest) -> tuple[Declared | None, Declared | None]:
    """The target's THREADS_PER_BLOCK and DYNAMIC_SHARED_MEMORY, the defaults' values read from the sources where
    they give none (None: not declared)."""
    defaults = guarded_defaults(manifest.params, manifest.cuda_sources)
    return (read_declared(THREADS, manifest.threads_per_block, manifest.params, defaults),
            read_declared(DYNAMIC_SHARED, manifest.dynamic_shared_memory, manifest.params, defaults))
