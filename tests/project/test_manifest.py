"""Target manifests (written by the CMake module)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from ciq_build.errors import CiqError, ManifestError
from ciq_build.project.manifest import (
    Benchmark,
    Manifest,
    ManifestToolchain,
    for_architecture,
    list_manifests,
    load_manifest,
    read_manifest,
)


def valid_manifest(build_dir: Path, target: str = "gemm") -> dict[str, Any]:
    """A manifest as ciq_tune_target() writes it, rooted in `build_dir`."""
    src = build_dir.parent / "src"
    return {
        "schema": 2,
        "target": target,
        "source_dir": str(src),
        "binary_dir": str(build_dir),
        "target_source_dir": str(src / "kernels"),
        "target_binary_dir": str(build_dir / "kernels"),
        "cuda_sources": [str(src / "kernels" / "gemm.cu"), str(src / "kernels" / "util.cu")],
        "object_dir": str(build_dir / "kernels" / "CMakeFiles" / f"{target}.dir"),
        "objects": [str(build_dir / "kernels" / "CMakeFiles" / f"{target}.dir" / name) for name in ("gemm.cu.o", "util.cu.o")],
        "benchmark": {"target": f"{target}_bench", "path": str(build_dir / f"{target}_bench"),
                      "args": ["--n", "1024"]},
        "metric_regex": "",
        "metric_unit": "ms",
        "objectives": ["time", "max:metric:gflops"],
        "params": ["TILE=choice(32,64)"],
        "search_space": ["knobs"],
        "pin_dir": str(src / "ciq"),
        "pin_file": str(src / "ciq" / f"{target}.json"),
        "timeout": 60,
        "options_file": str(build_dir / "kernels" / "ciq" / f"{target}.nvcc-options"),
        "generator": "Ninja",
        "allow_numerics": False,
        "toolchain": {"cuda_compiler": "/opt/cuda/bin/nvcc", "cuda_compiler_version": "13.3.73",
                      "architectures": "90a"},
    }


def write_manifest(build_dir: Path, data: Any, target: str = "gemm") -> Path:
    path = build_dir / "ciq" / "targets" / f"{target}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data) if not isinstance(data, str) else data, encoding="utf-8")
    return path


# ------------------------------------------------------------------ manifests


def test_valid_manifest_loads_every_field(tmp_path):
    build = tmp_path / "build"
    data = valid_manifest(build)
    path = write_manifest(build, data)
    m = load_manifest(build, "gemm")
    assert m.path == path
    assert m.target == "gemm" and m.schema == 2
    assert m.objects == tuple(build / "kernels" / "CMakeFiles" / "gemm.dir" / name for name in ("gemm.cu.o", "util.cu.o"))
    assert m.source_dir == tmp_path / "src" and m.binary_dir == build
    assert m.cuda_sources == (tmp_path / "src/kernels/gemm.cu", tmp_path / "src/kernels/util.cu")
    assert m.benchmark == Benchmark("gemm_bench", build / "gemm_bench", ("--n", "1024"))
    assert m.objectives == ("time", "max:metric:gflops")
    assert [o.direction for o in m.parsed_objectives] == ["min", "max"]
    assert m.params == ("TILE=choice(32,64)",) and m.search_space == ("knobs",)
    assert m.pin_file == tmp_path / "src/ciq/gemm.json"
    assert m.timeout == 60.0 and m.allow_numerics is False and m.generator == "Ninja"
    assert m.toolchain.cuda_compiler == Path("/opt/cuda/bin/nvcc")
    assert m.toolchain.cuda_compiler_version == "13.3.73" and m.toolchain.architectures == "90a"


def test_static_only_target_needs_no_benchmark(tmp_path):
    data = valid_manifest(tmp_path)
    data.update(benchmark=None, objectives=["registers", "spills"])
    write_manifest(tmp_path, data)
    m = load_manifest(tmp_path, "gemm")
    assert m.benchmark is None and m.objectives == ("registers", "spills")


def test_no_objectives_leaves_the_choice_to_the_driver(tmp_path):
    data = valid_manifest(tmp_path)
    data.update(objectives=[], benchmark=None)
    write_manifest(tmp_path, data)
    m = load_manifest(tmp_path, "gemm")
    assert m.objectives == () and m.parsed_objectives == []


def test_runtime_objective_without_benchmark_says_add_one(tmp_path):
    data = valid_manifest(tmp_path)
    data.update(benchmark=None, objectives=["time"])
    write_manifest(tmp_path, data)
    with pytest.raises(ManifestError, match="BENCHMARK"):
        load_manifest(tmp_path, "gemm")


def test_args_sets_and_score_load_and_an_older_manifest_without_them_is_one_size(tmp_path):
    data = valid_manifest(tmp_path)
    data["benchmark"].update(args=[], args_sets=[{"name": "small", "args": ["-n", "1"]},
                                                 {"name": "large", "args": ["-n", "2"]}], score="worst")
    write_manifest(tmp_path, data)
    bench = load_manifest(tmp_path, "gemm").benchmark
    assert bench is not None and bench.score == "worst"
    assert bench.args_sets == (("small", ("-n", "1")), ("large", ("-n", "2")))
    write_manifest(tmp_path, valid_manifest(tmp_path))
    bench = load_manifest(tmp_path, "gemm").benchmark
    assert bench is not None and bench.args_sets == () and bench.score == "geomean"


def test_host_and_benchmark_sources_load_and_an_older_manifest_without_them_has_none(tmp_path):
    data = valid_manifest(tmp_path)
    data.update(host_sources=[str(tmp_path / "grid.cpp")])
    data["benchmark"].update(sources=[str(tmp_path / "bench.cpp")])
    write_manifest(tmp_path, data)
    manifest = load_manifest(tmp_path, "gemm")
    assert manifest.host_sources == (tmp_path / "grid.cpp",)
    assert manifest.benchmark is not None and manifest.benchmark.sources == (tmp_path / "bench.cpp",)
    write_manifest(tmp_path, valid_manifest(tmp_path))
    manifest = load_manifest(tmp_path, "gemm")
    assert manifest.host_sources == () and manifest.benchmark is not None and manifest.benchmark.sources == ()


@pytest.mark.parametrize(
    ("sets", "score", "message"),
    [([{"name": "a", "args": []}, {"name": "a", "args": ["-n"]}], "geomean", "the size 'a' is given more than once"),
     ([{"name": "-a", "args": []}], "geomean", "'-a' is not a size name"),
     ([{"name": "a", "args": []}], "mean", "benchmark.score"),
     ([{"name": "a"}], "geomean", "benchmark.args_sets"),
     ({"name": "a"}, "geomean", "benchmark.args_sets")],
)
def test_bad_args_sets_or_score_are_refused_naming_the_field(tmp_path, sets, score, message):
    data = valid_manifest(tmp_path)
    data["benchmark"].update(args_sets=sets, score=score)
    write_manifest(tmp_path, data)
    with pytest.raises(ManifestError, match=re.escape(message)):
        load_manifest(tmp_path, "gemm")


def test_missing_manifest_says_how_to_tune_it_and_lists_tuned_targets(tmp_path):
    write_manifest(tmp_path, valid_manifest(tmp_path, "conv"), "conv")
    write_manifest(tmp_path, valid_manifest(tmp_path, "attn"), "attn")
    with pytest.raises(ManifestError) as info:
        load_manifest(tmp_path, "gemm")
    text = str(info.value)
    assert f"'gemm' is not a tuned target of {tmp_path}" in text
    assert "add ciq_tune_target(gemm ...) to its CMakeLists.txt and configure again" in text
    assert "its tuned targets: attn, conv" in text


def test_missing_manifest_in_unconfigured_tree(tmp_path):
    with pytest.raises(ManifestError, match="is not a configured CMake build tree .* -B <build dir>"):
        load_manifest(tmp_path, "gemm")


@pytest.mark.parametrize("target", ["../gemm", "a/b", "", ".hidden", "-rf", "ns::gemm", "gemm\x00"])
def test_target_names_cannot_escape_the_manifest_dir(tmp_path, target):
    with pytest.raises(ManifestError, match="target name"):
        load_manifest(tmp_path, target)


def test_list_manifests_sorted(tmp_path):
    for name in ("zeta", "alpha", "mid"):
        write_manifest(tmp_path, valid_manifest(tmp_path, name), name)
    assert [m.target for m in list_manifests(tmp_path)] == ["alpha", "mid", "zeta"]
    assert list_manifests(tmp_path / "nowhere") == []


def _mutated(tmp_path: Path, **changes: Any) -> Path:
    data = valid_manifest(tmp_path)
    for key, value in changes.items():
        if value is _DELETE:
            del data[key]
        else:
            data[key] = value
    return write_manifest(tmp_path, data)


_DELETE = object()


def test_metric_unit_is_read_and_defaults_to_milliseconds(tmp_path):
    # Times and rates (the rule book's metric_unit, which the protocol's reader and CMake check too); BabelStream
    # prints MBytes/sec and mini-nbody Ginteractions/sec, refused while only <word>/s was taken.
    for unit in ("s", "ms", "us", "ns", "TFLOPS", "GFLOP/s", "GB/s", "items/s", "MBytes/sec"):
        assert read_manifest(_mutated(tmp_path, metric_regex="Time= ([0-9.]+)", metric_unit=unit)).metric_unit == unit
    # A manifest from a module before UNIT: its METRIC was milliseconds.
    assert read_manifest(_mutated(tmp_path, metric_unit=_DELETE)).metric_unit == "ms"


def test_a_description_is_read_and_a_manifest_from_before_it_has_none(tmp_path):
    assert read_manifest(_mutated(tmp_path, description="GEMM, tiled")).description == "GEMM, tiled"
    assert read_manifest(_mutated(tmp_path)).description == ""  # written before DESCRIPTION
    with pytest.raises(ManifestError, match="field 'description' must be a string"):
        read_manifest(_mutated(tmp_path, description=["GEMM"]))


@pytest.mark.parametrize(
    "changes,field",
    [
        ({"objects": ["relative.o"]}, "objects[0]"),
        ({"objects": "kern.cu.o"}, "objects"),
        # Object names in a pin are relative to object_dir: one outside it failed deep in a tune (ValueError).
        ({"objects": ["/elsewhere/CMakeFiles/gemm.dir/gemm.cu.o"]}, "objects[0]"),
        ({"schema": 1}, "schema"),  # an older CMake module
        ({"schema": 3}, "schema"),
        ({"schema": "2"}, "schema"),
        ({"schema": True}, "schema"),
        ({"target": "other"}, "target"),
        ({"target": 5}, "target"),
        ({"source_dir": "relative/src"}, "source_dir"),
        ({"binary_dir": ""}, "binary_dir"),
        ({"cuda_sources": "/a.cu"}, "cuda_sources"),
        ({"cuda_sources": ["/a.cu", 3]}, "cuda_sources[1]"),
        ({"cuda_sources": ["a.cu"]}, "cuda_sources[0]"),
        ({"object_dir": None}, "object_dir"),
        ({"benchmark": "gemm_bench"}, "benchmark"),
        ({"benchmark": {"target": "b", "path": "rel/b", "args": []}}, "benchmark.path"),
        ({"benchmark": {"target": "b", "path": "/b", "args": "--n 3"}}, "benchmark.args"),
        ({"benchmark": {"target": "b", "path": "/b", "args": [], "env": {}}}, "benchmark.env"),
        ({"metric_regex": "time=([0-9."}, "metric_regex"),
        ({"metric_regex": "time=[0-9.]+"}, "metric_regex"),
        ({"metric_unit": "min"}, "metric_unit"),
        ({"metric_unit": "MS"}, "metric_unit"),
        ({"metric_unit": "GFLOP"}, "metric_unit"),
        ({"metric_unit": 1000}, "metric_unit"),
        ({"objectives": ["latency"]}, "objectives"),
        ({"objectives": "time"}, "objectives"),
        ({"params": [1]}, "params[0]"),
        ({"timeout": 0}, "timeout"),
        ({"timeout": -5}, "timeout"),
        ({"timeout": "60"}, "timeout"),
        ({"timeout": True}, "timeout"),
        ({"timeout": 10**400}, "timeout"),
        ({"allow_numerics": "OFF"}, "allow_numerics"),
        ({"allow_numerics": 0}, "allow_numerics"),
        ({"generator": ""}, "generator"),
        ({"toolchain": {"cuda_compiler": "nvcc", "cuda_compiler_version": "13.3", "architectures": "90"}},
         "toolchain.cuda_compiler"),
        ({"toolchain": []}, "toolchain"),
        ({"pin_dir": _DELETE}, "pin_dir"),
        ({"toolchain": _DELETE}, "toolchain"),
        ({"surprise": 1}, "surprise"),
    ],
)
def test_invalid_fields_are_named(tmp_path, changes, field):
    path = _mutated(tmp_path, **changes)
    with pytest.raises(ManifestError) as info:
        read_manifest(path)
    text = str(info.value)
    assert f"field {field!r}" in text
    assert str(path) in text
    assert "reconfigure" in text or "METRIC_REGEX" in text or "OBJECTIVES" in text


@pytest.mark.parametrize("content", ["", "{", '{"schema": 1,', "[]", "null", "\xff\xfe", '{"schema": NaN}',
                                     "[" * 100000])
def test_broken_json_is_a_manifest_error(tmp_path, content):
    path = tmp_path / "ciq" / "targets" / "gemm.json"
    path.parent.mkdir(parents=True)
    path.write_bytes(content.encode("latin-1"))
    with pytest.raises(ManifestError, match="reconfigure|JSON"):
        load_manifest(tmp_path, "gemm")


def test_manifest_errors_are_ciq_errors():
    assert issubclass(ManifestError, CiqError)


def test_tuning_an_architecture_the_targets_own_flags_build_says_where_it_comes_from() -> None:
    # cuda-api-wrappers' examples build sm_75 (CMake's default) and, by -gencode flags of their own, sm_80 and sm_86:
    # "--architecture 80: jacobiCudaGraphs is built for 75, not 80" denied the code the tune had just shown.
    where = Path("/src")
    manifest = Manifest(
        target="jacobi", source_dir=where, binary_dir=where, target_source_dir=where, target_binary_dir=where,
        cuda_sources=(), object_dir=where, benchmark=None, metric_regex="", objectives=(), params=(),
        search_space=(), pin_dir=where, pin_file=where / "jacobi.json", timeout=60.0,
        options_file=where / "jacobi.nvcc-options", generator="Ninja", allow_numerics=False,
        toolchain=ManifestToolchain(Path("/usr/bin/nvcc"), "13.3.1", "75"),
        cuda_flags=("-gencode", "arch=compute_80,code=sm_80", "-Wno-deprecated-gpu-targets"))
    with pytest.raises(ManifestError) as refused:
        for_architecture(manifest, "80")
    assert str(refused.value) == (
        "--architecture 80: jacobi's sm_80 code is built by its own nvcc flags (-gencode arch=compute_80,code=sm_80), "
        "beside its CUDA_ARCHITECTURES (75), which --architecture names one of and a pin is checked against. To tune "
        "sm_80 on its own, list 80 in CMAKE_CUDA_ARCHITECTURES in place of that flag; or tune them all at once (no "
        "--architecture).")
    with pytest.raises(ManifestError, match="is built for 75, not 90"):
        for_architecture(manifest, "90")  # built by nothing: as before
