"""The sample project (sample_extension/) built for real with CMake, Ninja and nvcc 13.3.

The project is copied into a temporary directory for every build, so the
repository is never written. One unpinned build is shared by the read-only
tests; the pin tests and the wheel build have their own copies.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ciq_build.measure.proc import ProcResult, run
from ciq_build.project.manifest import list_manifests, load_manifest
from support import REPO_ROOT, build_tool, ensure_ok, said

pytestmark = pytest.mark.slow

SAMPLE = REPO_ROOT / "sample_extension"
CMAKE_PACKAGE_DIR = REPO_ROOT / "cmake"


def copy_sample(destination: Path) -> Path:
    """The sample's sources without any pins or build output."""
    def ignore(directory: str, names: list[str]) -> set[str]:
        skipped = {n for n in names if n in ("build", "dist", "__pycache__")}
        if Path(directory).name == "ciq":
            skipped |= {n for n in names if n.endswith((".json", ".acf"))}
        return skipped

    shutil.copytree(SAMPLE, destination, ignore=ignore)
    return destination


def gemm_record(flags: list[str], defines: dict[str, str]) -> str:
    """A pinned record for gemm_kernels, written by hand (contract schema 1)."""
    return json.dumps({
        "schema": 1,
        "target": "gemm_kernels",
        "controls": {"flags": flags, "defines": defines},
        "toolchain": {"cuda": "13.3", "nvcc_version": "13.3.73", "ptxas_version": "13.3.73",
                      "architectures": ["90a"]},
        "provenance": {"engine": "hand-written for a test", "seed": 1},
        "objectives": [{"name": "spill_bytes", "direction": "min"}],
        "baseline": {"scores": [0], "spread": [0]},
        "winner": {"scores": [0], "spread": [0]},
        "objects": {},
    }, indent=2)


@dataclass
class SampleBuild:
    source: Path
    build: Path
    cmake: str
    ninja: str
    cuda_bin: Path

    def configure(self) -> ProcResult:
        return run([
            self.cmake, "-S", self.source, "-B", self.build, "-G", "Ninja",
            f"-DCMAKE_MAKE_PROGRAM={self.ninja}",
            f"-DCMAKE_CUDA_COMPILER={self.cuda_bin / 'nvcc'}",
            f"-Dciq_build_DIR={CMAKE_PACKAGE_DIR}",
            f"-DPython_EXECUTABLE={sys.executable}",
        ], timeout=300)

    def build_targets(self, *targets: str) -> ProcResult:
        return ensure_ok(run([self.cmake, "--build", self.build, "--target", *targets], timeout=600))

    def compile_commands(self) -> dict[str, str]:
        """Object file -> its compile command, for everything in the build."""
        result = ensure_ok(run([self.ninja, "-C", self.build, "-t", "commands"], timeout=60))
        found = {}
        for line in result.stdout.splitlines():
            if " -c " in line and (m := re.search(r" -o (\S+\.o)(?:\s|$)", line)):
                found[m.group(1)] = line
        return found

    def options_file(self, target: str) -> Path:
        return self.build / "ciq" / f"{target}.nvcc-options"

    def python(self, code: str) -> ProcResult:
        """Run `code` with the built extension module importable as sample_extension._core."""
        package = self.build / "pkg" / "sample_extension"
        if not package.exists():
            package.mkdir(parents=True)
            shutil.copy(self.source / "python" / "sample_extension" / "__init__.py", package)
            for module in self.build.glob("_core*.so"):
                shutil.copy(module, package)
        return run([sys.executable, "-c", code], timeout=120, env={"PYTHONPATH": str(package.parent)})


GEMM_OBJECT = "CMakeFiles/gemm_kernels.dir/src/gemm.cu.o"
REDUCE_OBJECTS = {"CMakeFiles/reduce_kernels.dir/src/reduce.cu.o", "CMakeFiles/reduce_kernels.dir/src/reduce_block.cu.o"}


def max_registers(cuobjdump: Path, obj: Path) -> int:
    out = ensure_ok(run([cuobjdump, "--dump-resource-usage", obj], timeout=60)).stdout
    counts = [int(n) for n in re.findall(r"REG:(\d+)", out)]
    assert counts, out
    return max(counts)


@pytest.fixture(scope="module")
def unpinned(tmp_path_factory: pytest.TempPathFactory, cuda133_bin: Path) -> Iterator[SampleBuild]:
    """The sample, without pins, configured and fully built once (read-only for tests)."""
    root = tmp_path_factory.mktemp("sample")
    sample = SampleBuild(copy_sample(root / "src"), root / "build", build_tool("cmake"), build_tool("ninja"), cuda133_bin)
    result = ensure_ok(sample.configure())
    assert "ciq_build: gemm_kernels: no pinned controls" in said(result)
    sample.build_targets("all")
    yield sample


def test_benchmarks_build_and_report_no_gpu_here(unpinned: SampleBuild) -> None:
    # This machine has no GPU: the CUDA runtime answers cudaErrorInsufficientDriver.
    for bench in ("gemm_bench", "reduce_bench"):
        result = run([unpinned.build / bench], timeout=60)
        assert result.returncode == 2, result.describe()
        assert result.stdout.splitlines() == ["CIQ_ERROR no-gpu"]


def test_benchmark_refuses_unknown_options(unpinned: SampleBuild) -> None:
    result = run([unpinned.build / "gemm_bench", "--size", "10"], timeout=60)
    assert result.returncode == 64 and "unknown option --size" in result.stderr


def test_manifests_describe_both_kernel_libraries(unpinned: SampleBuild) -> None:
    gemm = load_manifest(unpinned.build, "gemm_kernels")
    assert gemm.benchmark is not None
    assert gemm.benchmark.path == unpinned.build / "gemm_bench" and gemm.benchmark.path.is_file()
    assert "--m" in gemm.benchmark.args
    assert [Path(s) for s in gemm.cuda_sources] == [unpinned.source / "src" / "gemm.cu"]
    assert any(p.startswith("CIQ_GEMM_TM=") for p in gemm.params)
    assert [o.name for o in gemm.parsed_objectives] == ["time"]
    assert Path(gemm.pin_dir) == unpinned.source / "ciq"
    assert gemm.toolchain.architectures == "90a"  # the sample's default (H200)

    reduce = load_manifest(unpinned.build, "reduce_kernels")
    assert reduce.benchmark is not None and reduce.benchmark.path == unpinned.build / "reduce_bench"
    assert sorted(Path(s).name for s in reduce.cuda_sources) == ["reduce.cu", "reduce_block.cu"]


def test_each_library_compiles_with_its_own_options_file(unpinned: SampleBuild) -> None:
    commands = unpinned.compile_commands()
    assert f"--options-file={unpinned.options_file('gemm_kernels')}" in commands[GEMM_OBJECT]
    for obj in REDUCE_OBJECTS:
        assert f"--options-file={unpinned.options_file('reduce_kernels')}" in commands[obj]
    tuned: set[str] = set()
    for manifest in list_manifests(unpinned.build):  # every tuned target: its CUDA objects, its options file
        for object_file in manifest.objects:
            name = object_file.relative_to(unpinned.build).as_posix()
            tuned.add(name)
            if name.endswith(".cu.o"):
                assert f"--options-file={unpinned.options_file(manifest.target)}" in commands[name], name
    assert {GEMM_OBJECT, *REDUCE_OBJECTS} <= tuned
    others = [c for o, c in commands.items() if o not in tuned]
    assert others and not any("--options-file" in c for c in others)  # benchmarks, Python module
    assert unpinned.options_file("gemm_kernels").read_text() == ""


def test_default_gemm_is_register_heavy(unpinned: SampleBuild) -> None:
    # The point of the sample: a register budget the search can trade.
    assert max_registers(unpinned.cuda_bin / "cuobjdump", unpinned.build / GEMM_OBJECT) > 64


def test_python_module_reports_its_build_and_checks_arguments(unpinned: SampleBuild) -> None:
    code = """
import json, sample_extension as se
info = se.build_info()
out = {"info": info}
try:
    se.gemm([1.0] * 3, [1.0] * 4, 2, 2, 2)
except ValueError as e:
    out["size_error"] = str(e)
try:
    se.gemm([1.0] * 4, [1.0] * 4, 2, 2, 2)
except RuntimeError as e:
    out["gpu_error"] = str(e)
print(json.dumps(out))
"""
    result = ensure_ok(unpinned.python(code))
    out = json.loads(result.stdout)
    gemm = out["info"]["gemm_kernels"]
    assert gemm["status"] == "none" and gemm["nvcc_arguments"] == []
    assert gemm["params"]["CIQ_GEMM_TM"] == 8
    assert out["info"]["reduce_kernels"]["params"] == {"CIQ_REDUCE_BLOCK": 256, "CIQ_REDUCE_ITEMS": 8}
    assert "must hold m*k = 4" in out["size_error"]
    # No GPU here: the runtime error reaches Python as a RuntimeError, not a crash.
    assert "cudaErrorInsufficientDriver" in out["gpu_error"] or "cudaErrorNoDevice" in out["gpu_error"]


def test_pin_applies_to_gemm_only_and_a_change_rebuilds_only_gemm(tmp_path: Path, cuda133_bin: Path) -> None:
    sample = SampleBuild(copy_sample(tmp_path / "src"), tmp_path / "build", build_tool("cmake"), build_tool("ninja"),
                         cuda133_bin)
    pin = sample.source / "ciq" / "gemm_kernels.json"
    pin.write_text(gemm_record(["-maxrregcount=32"], {"CIQ_GEMM_TM": "4"}))
    result = ensure_ok(sample.configure())
    assert "ciq_build: gemm_kernels: pinned controls from" in said(result)
    assert "ciq_build: reduce_kernels: no pinned controls" in said(result)
    assert sample.options_file("gemm_kernels").read_text() == "-maxrregcount=32\n-DCIQ_GEMM_TM=4\n"
    assert sample.options_file("reduce_kernels").read_text() == ""

    # The Python module is what pip builds: the kernels obey the pin, and it says so.
    sample.build_targets("_core")
    assert max_registers(cuda133_bin / "cuobjdump", sample.build / GEMM_OBJECT) <= 32
    info = json.loads(ensure_ok(sample.python(
        "import json, sample_extension as se; print(json.dumps(se.build_info()))")).stdout)
    assert info["gemm_kernels"]["status"] == "applied"
    assert info["gemm_kernels"]["pin_file"] == str(pin)
    assert info["gemm_kernels"]["nvcc_arguments"] == ["-maxrregcount=32", "-DCIQ_GEMM_TM=4"]
    assert info["gemm_kernels"]["params"]["CIQ_GEMM_TM"] == 4  # compiled in, not just recorded
    assert info["reduce_kernels"]["status"] == "none"

    # A new pin: the next build re-runs CMake and recompiles gemm's object only.
    pin.write_text(gemm_record(["-maxrregcount=64"], {"CIQ_GEMM_TM": "4"}))
    ensure_ok(sample.configure())
    dry = ensure_ok(run([sample.ninja, "-C", sample.build, "-n", "_core"], timeout=60)).stdout
    compiled = set(re.findall(r"Building \w+ object (\S+\.o)", dry))
    # gemm's object, and the module's C file whose generated header reports the
    # pin; nothing of reduce_kernels.
    assert compiled == {GEMM_OBJECT, "CMakeFiles/_core.dir/python/_core.c.o"}


def test_a_project_requiring_ciq_build_builds_in_isolation_from_a_local_wheel(tmp_path: Path,
                                                                               cuda133_bin: Path) -> None:
    """The README's route for a clone: ciq-build is not on the package index, so build its wheel
    and let pip find it (`--find-links`); the sample's `requires = [..., "ciq-build"]` then
    resolves in pip's isolated build environment, as a user's project would, and the build finds
    ciq_build through its cmake.root entry point and applies the pinned record. (A second wheel of
    the sample, built without isolation against this environment's ciq_build, found it the same
    way: a whole build of the sample more, for nothing this one does not check.)"""
    repo = REPO_ROOT
    wheels = tmp_path / "wheels"
    ensure_ok(run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", wheels, repo], timeout=600))
    [ciq_wheel] = wheels.glob("ciq_build-*.whl")
    with zipfile.ZipFile(ciq_wheel) as wheel:  # every sub-package and the CMake package are in it
        names = set(wheel.namelist())
    packages = sorted(p.parent.name for p in (repo / "ciq_build").glob("*/__init__.py"))
    assert len(packages) >= 10  # core ... reports, ray: the folders, not a list that a rename leaves behind
    for package in packages:
        assert f"ciq_build/{package}/__init__.py" in names, package
    shipped = {f"ciq_build/cmake/{p.name}" for p in (repo / "cmake").iterdir() if p.suffix in (".cmake", ".txt")}
    assert "ciq_build/cmake/ciq_build-config.cmake" in shipped and shipped <= names  # every part of the module

    source = copy_sample(tmp_path / "src")
    (source / "ciq" / "gemm_kernels.json").write_text(gemm_record(["-maxrregcount=48"], {"CIQ_GEMM_TN": "4"}))
    result = run([
        sys.executable, "-m", "pip", "wheel", "--no-deps", "--find-links", wheels, "-w", tmp_path / "dist", source,
        "-C", f"cmake.define.CMAKE_CUDA_COMPILER={cuda133_bin / 'nvcc'}",
        "-C", f"build-dir={tmp_path / 'wheel-build'}",
    ], timeout=900)
    ensure_ok(result)
    [sample_wheel] = (tmp_path / "dist").glob("ciq_sample_extension-*.whl")
    with zipfile.ZipFile(sample_wheel) as wheel:
        names = set(wheel.namelist())
        assert "sample_extension/__init__.py" in names
        assert any(re.fullmatch(r"sample_extension/_core\..*\.so", n) for n in names)
        wheel.extractall(tmp_path / "site")
    code = "import json, sample_extension as se; print(json.dumps(se.build_info()))"
    info = json.loads(ensure_ok(run([sys.executable, "-c", code], timeout=60,
                                    env={"PYTHONPATH": str(tmp_path / "site")})).stdout)
    assert info["gemm_kernels"]["status"] == "applied"
    assert info["gemm_kernels"]["nvcc_arguments"] == ["-maxrregcount=48", "-DCIQ_GEMM_TN=4"]
    assert info["gemm_kernels"]["params"]["CIQ_GEMM_TN"] == 4
    assert info["cuda_compiler_version"].startswith("13.3.")
