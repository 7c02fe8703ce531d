"""The manifest the CMake module writes for each tuned target.

``ciq_tune_target(<target> ...)`` makes CMake write
``<build dir>/ciq/targets/<target>.json`` (file(GENERATE)), which tells the
driver everything it needs to know about the target without parsing CMake
itself: sources, object directory, benchmark, objectives, pin location. This
module reads it and validates every field, so that a stale or hand-edited
manifest fails here with a message, not deep inside a tune. Its fields are
declared once, with its JSON Schema, in ciq_build.project.manifest_schema.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ciq_build.compiler.toolchain import arch_name, split_architectures
from ciq_build.core.objectives import Objective, parse_objectives
from ciq_build.core.rules import is_target_name, load_rules, nearest
from ciq_build.core.settings import TIMEOUT_RULE, timeout_seconds
from ciq_build.errors import ConfigError, ManifestError
from ciq_build.project.manifest_schema import MANIFEST_SCHEMA as MANIFEST_SCHEMA  # declared with the schema
from ciq_build.project.manifest_schema import METRIC_UNITS as METRIC_UNITS
from ciq_build.project.manifest_schema import manifest_fields
from ciq_build.state.durable import read_json_object


@dataclass(frozen=True)
class Benchmark:
    """The executable that measures a candidate."""

    target: str
    path: Path
    args: tuple[str, ...] = ()
    # ARGS_SETS: several problem sizes, each (name, its arguments), scored together by `score`
    # (ciq_build.measure.sizes); empty: the one size `args`.
    args_sets: tuple[tuple[str, tuple[str, ...]], ...] = ()
    score: str = "geomean"


@dataclass(frozen=True)
class ManifestToolchain:
    """The CUDA compiler CMake configured the project with."""

    cuda_compiler: Path
    cuda_compiler_version: str
    architectures: str  # CMAKE_CUDA_ARCHITECTURES as CMake holds it, e.g. "90a" or "80;90a"


# Manifest.generator of a setuptools CudaExtension described as a target (ciq_build.setuptools_tune): no CMake tree.
SETUPTOOLS_GENERATOR = "setuptools"


@dataclass(frozen=True)
class Manifest:
    """Everything the driver knows about one tuned target (mirrors the JSON file)."""

    target: str
    source_dir: Path
    binary_dir: Path
    target_source_dir: Path
    target_binary_dir: Path
    cuda_sources: tuple[Path, ...]
    object_dir: Path
    benchmark: Benchmark | None
    metric_regex: str
    objectives: tuple[str, ...]
    params: tuple[str, ...]
    search_space: tuple[str, ...]
    pin_dir: Path
    pin_file: Path
    timeout: float
    options_file: Path
    generator: str
    allow_numerics: bool
    toolchain: ManifestToolchain
    metric_unit: str = "ms"  # UNIT of ciq_tune_target(): what METRIC's number is in (s, ms, us, ns)
    objects: tuple[Path, ...] = ()  # $<TARGET_OBJECTS:target>: every object file the target links
    schema: int = MANIFEST_SCHEMA
    path: Path | None = None  # the manifest file it was read from
    # tune --architecture: the one architecture (arch_name spelling) this tune builds and pins an
    # entry for; toolchain.architectures is then that architecture's entry alone. "" for all.
    tune_architecture: str = ""
    constraints: tuple[str, ...] = ()  # CONSTRAINTS: expressions over the PARAMS names (ciq_build.core.constraints)
    # SEEDS: configurations evaluated first (ciq_build.search.seeds); a path relative to source_dir
    # (CMake writes them absolute, from the call's folder).
    seeds: tuple[str, ...] = ()

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
                "-Dciq_build_DIR=$(python -m ciq_build --cmake-dir))")
    guess = nearest(target, others)
    hint = f" (did you mean {guess}?)" if guess else ""
    tuned = f"its tuned targets: {', '.join(others)}" if others else "it has no tuned targets"
    return (f"{target!r} is not a tuned target of {build_dir}{hint}; {tuned}. To tune it, add "
            f"ciq_tune_target({target} ...) to its CMakeLists.txt and configure again (cmake {build_dir})")


def list_manifests(build_dir: Path) -> list[Manifest]:
    """Every tuned target's manifest in a build tree, sorted by target name."""
    return [read_manifest(manifest_dir(Path(build_dir)) / f"{name}.json") for name in tuned_targets(Path(build_dir))]


class _Reader:
    """Typed field access with error messages that name the file and the field."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, field: str, problem: str) -> ManifestError:
        return ManifestError(
            f"manifest {self.path}: field {field!r} {problem}. The CMake module writes this file; "
            "reconfigure the project with CMake (and the same ciq_build version) to regenerate it."
        )

    def obj(self, data: Any, field: str) -> dict[str, Any]:
        if not isinstance(data, dict):
            raise self.fail(field, f"must be a JSON object, not {type(data).__name__}")
        return data

    def get(self, data: dict[str, Any], key: str, prefix: str = "") -> Any:
        if key not in data:
            raise self.fail(prefix + key, "is missing")
        return data[key]

    def str_(self, data: dict[str, Any], key: str, prefix: str = "", empty: bool = True) -> str:
        value = self.get(data, key, prefix)
        if not isinstance(value, str):
            raise self.fail(prefix + key, f"must be a string, not {type(value).__name__}")
        if not empty and not value:
            raise self.fail(prefix + key, "must not be empty")
        if "\x00" in value:
            raise self.fail(prefix + key, "contains a NUL character")
        return value

    def abspath(self, data: dict[str, Any], key: str, prefix: str = "") -> Path:
        value = self.str_(data, key, prefix, empty=False)
        path = Path(value)
        if not path.is_absolute():
            raise self.fail(prefix + key, f"must be an absolute path, not {value!r}")
        return path

    def str_list(self, data: dict[str, Any], key: str, prefix: str = "") -> tuple[str, ...]:
        value = self.get(data, key, prefix)
        if not isinstance(value, list):
            raise self.fail(prefix + key, f"must be a list of strings, not {type(value).__name__}")
        for i, item in enumerate(value):
            if not isinstance(item, str):
                raise self.fail(f"{prefix}{key}[{i}]", f"must be a string, not {type(item).__name__}")
            if "\x00" in item:
                raise self.fail(f"{prefix}{key}[{i}]", "contains a NUL character")
        return tuple(value)


_KEYS = manifest_fields()


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
    """Read and validate one manifest file."""
    path = Path(path)
    r = _Reader(path)
    data = r.obj(_load_json(path), "(top level)")
    unknown = sorted(set(data) - _KEYS)
    if unknown:
        raise r.fail(unknown[0], "is not a manifest field (written by a different ciq_build version?)")
    schema = r.get(data, "schema")
    if type(schema) is not int or schema != MANIFEST_SCHEMA:
        raise r.fail(
            "schema",
            f"is {schema!r}; this ciq_build reads schema {MANIFEST_SCHEMA}: use the ciq_build "
            "whose CMake package configured the project",
        )
    target = r.str_(data, "target", empty=False)
    check_target_name(target)
    if target != path.stem:
        raise r.fail("target", f"is {target!r} but the file is named {path.name}")

    cuda_sources = r.str_list(data, "cuda_sources")
    for i, source in enumerate(cuda_sources):
        if not Path(source).is_absolute():
            raise r.fail(f"cuda_sources[{i}]", f"must be an absolute path, not {source!r}")

    benchmark = _read_benchmark(r, r.get(data, "benchmark"))

    metric_regex = r.str_(data, "metric_regex")
    if metric_regex:
        try:
            compiled = re.compile(metric_regex)
        except (re.error, RecursionError, OverflowError) as exc:
            raise r.fail("metric_regex",
                         f"is not a valid regular expression ({exc}); fix METRIC in ciq_tune_target()") from exc
        if compiled.groups < 1:
            raise r.fail("metric_regex", "needs a capture group around the number; fix METRIC in ciq_tune_target()")
    # Written by every module that knows UNIT; a manifest from before it meant milliseconds.
    metric_unit = r.str_(data, "metric_unit") if "metric_unit" in data else "ms"
    if metric_unit not in METRIC_UNITS:
        raise r.fail("metric_unit",
                     f"is {metric_unit!r}, not one of {', '.join(METRIC_UNITS)}; fix UNIT in ciq_tune_target()")

    objectives = r.str_list(data, "objectives")  # empty: no OBJECTIVES given, the driver's default
    try:
        parsed = parse_objectives(list(objectives)) if objectives else []
    except ConfigError as exc:
        raise r.fail("objectives", f"is invalid: {exc} Fix OBJECTIVES in ciq_tune_target()") from exc
    if benchmark is None:
        needs = [o.name for o in parsed if o.source == "benchmark"]
        if needs:
            raise r.fail(
                "benchmark",
                f"is null but objective(s) {', '.join(needs)} are read from a benchmark: give "
                "ciq_tune_target() a BENCHMARK, or use static objectives such as registers",
            )

    timeout = r.get(data, "timeout")
    seconds = timeout_seconds(timeout)
    if seconds is None:
        raise r.fail("timeout", f"must be {TIMEOUT_RULE}, not {timeout!r}")

    allow_numerics = r.get(data, "allow_numerics")
    if not isinstance(allow_numerics, bool):
        raise r.fail("allow_numerics", f"must be true or false, not {allow_numerics!r}")

    tc = r.obj(r.get(data, "toolchain"), "toolchain")
    tc_unknown = sorted(set(tc) - {"cuda_compiler", "cuda_compiler_version", "architectures"})
    if tc_unknown:
        raise r.fail("toolchain." + tc_unknown[0], "is not a manifest field")
    toolchain = ManifestToolchain(
        cuda_compiler=r.abspath(tc, "cuda_compiler", "toolchain."),
        cuda_compiler_version=r.str_(tc, "cuda_compiler_version", "toolchain."),
        architectures=r.str_(tc, "architectures", "toolchain."),
    )

    return Manifest(
        schema=schema,
        target=target,
        source_dir=r.abspath(data, "source_dir"),
        binary_dir=r.abspath(data, "binary_dir"),
        target_source_dir=r.abspath(data, "target_source_dir"),
        target_binary_dir=r.abspath(data, "target_binary_dir"),
        cuda_sources=tuple(Path(s) for s in cuda_sources),
        object_dir=r.abspath(data, "object_dir"),
        objects=_read_objects(r, data, r.abspath(data, "object_dir")),
        benchmark=benchmark,
        metric_regex=metric_regex,
        metric_unit=metric_unit,
        objectives=objectives,
        params=r.str_list(data, "params"),
        constraints=r.str_list(data, "constraints") if "constraints" in data else (),  # none before CONSTRAINTS
        seeds=r.str_list(data, "seeds") if "seeds" in data else (),  # none before SEEDS
        search_space=r.str_list(data, "search_space"),
        pin_dir=r.abspath(data, "pin_dir"),
        pin_file=r.abspath(data, "pin_file"),
        timeout=seconds,
        options_file=r.abspath(data, "options_file"),
        generator=r.str_(data, "generator", empty=False),
        allow_numerics=allow_numerics,
        toolchain=toolchain,
        path=path,
    )


def manifest_document(manifest: Manifest) -> dict[str, Any]:
    """`manifest` as the JSON document the CMake module writes (what read_manifest reads back)."""
    benchmark = manifest.benchmark
    return {
        "schema": manifest.schema, "target": manifest.target,
        "source_dir": str(manifest.source_dir), "binary_dir": str(manifest.binary_dir),
        "target_source_dir": str(manifest.target_source_dir), "target_binary_dir": str(manifest.target_binary_dir),
        "cuda_sources": [str(s) for s in manifest.cuda_sources], "object_dir": str(manifest.object_dir),
        "objects": [str(o) for o in manifest.objects],
        "benchmark": None if benchmark is None else {"target": benchmark.target, "path": str(benchmark.path),
                                                     "args": list(benchmark.args),
                                                     "args_sets": [{"name": name, "args": list(args)}
                                                                   for name, args in benchmark.args_sets],
                                                     "score": benchmark.score},
        "metric_regex": manifest.metric_regex, "metric_unit": manifest.metric_unit,
        "objectives": list(manifest.objectives), "params": list(manifest.params),
        "constraints": list(manifest.constraints), "seeds": list(manifest.seeds),
        "search_space": list(manifest.search_space), "pin_dir": str(manifest.pin_dir),
        "pin_file": str(manifest.pin_file), "timeout": manifest.timeout, "options_file": str(manifest.options_file),
        "generator": manifest.generator, "allow_numerics": manifest.allow_numerics,
        "toolchain": {"cuda_compiler": str(manifest.toolchain.cuda_compiler),
                      "cuda_compiler_version": manifest.toolchain.cuda_compiler_version,
                      "architectures": manifest.toolchain.architectures},
    }


def _read_objects(r: _Reader, data: dict[str, Any], object_dir: Path) -> tuple[Path, ...]:
    """$<TARGET_OBJECTS>, each under object_dir: a pin names its objects relative to it (compiler/fingerprint.py),
    so one outside it would fail mid-tune, not here. (A schema cannot relate two fields: the reader's check.)"""
    objects = r.str_list(data, "objects")
    for i, item in enumerate(objects):
        if not Path(item).is_absolute():
            raise r.fail(f"objects[{i}]", f"is {item!r}, not an absolute path")
        if not Path(item).is_relative_to(object_dir):
            raise r.fail(f"objects[{i}]", f"is {item!r}, which is not under object_dir {str(object_dir)!r}")
    return tuple(Path(item) for item in objects)


def _read_benchmark(r: _Reader, value: Any) -> Benchmark | None:
    if value is None:
        return None
    data = r.obj(value, "benchmark")
    unknown = sorted(set(data) - {"target", "path", "args", "args_sets", "score"})
    if unknown:
        raise r.fail("benchmark." + unknown[0], "is not a manifest field")
    sets: list[tuple[str, tuple[str, ...]]] = []
    raw_sets = data.get("args_sets", [])
    if not isinstance(raw_sets, list):
        raise r.fail("benchmark.args_sets", "is not a list")
    for i, item in enumerate(raw_sets):
        entry = r.obj(item, f"benchmark.args_sets[{i}]")
        name = r.str_(entry, "name", f"benchmark.args_sets[{i}].", empty=False)
        problem = args_set_problem(name, [known for known, _ in sets])
        if problem:
            raise r.fail(f"benchmark.args_sets[{i}].name", problem)
        sets.append((name, r.str_list(entry, "args", f"benchmark.args_sets[{i}].")))
    score = data.get("score", "geomean")
    if score not in load_rules().words["score"]:
        raise r.fail("benchmark.score", f"is {score!r}, not one of {', '.join(load_rules().words['score'])}")
    return Benchmark(
        target=r.str_(data, "target", "benchmark.", empty=False),
        path=r.abspath(data, "path", "benchmark."),
        args=r.str_list(data, "args", "benchmark."),
        args_sets=tuple(sets),
        score=score,
    )


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


def for_architecture(manifest: Manifest, architecture: str) -> Manifest:
    """`manifest` narrowed to one of its architectures (tune --architecture): the scratch trees build
    only that one, and the winner is pinned as its entry of a per-architecture record."""
    wanted = arch_name(architecture)
    entries = split_architectures(manifest.toolchain.architectures)
    matching = [entry for entry in entries if arch_name(entry) == wanted]
    if not wanted or not matching:
        have = ", ".join(arch_name(e) for e in entries) or "none (nvcc's default)"
        raise ManifestError(
            f"--architecture {architecture}: {manifest.target} is built for {have}, not {architecture}. Name one "
            f"of its CUDA_ARCHITECTURES (e.g. --architecture {arch_name(entries[0]) if entries else '90a'}), or set "
            "CUDA_ARCHITECTURES to the architectures to tune for.")
    toolchain = dataclasses.replace(manifest.toolchain, architectures=matching[0])
    return dataclasses.replace(manifest, toolchain=toolchain, tune_architecture=wanted)

