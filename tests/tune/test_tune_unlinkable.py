"""A static tune builds the tuned target's objects, never its link: an executable (or shared library) that links a
library only the machine that runs it has (the driver's `-lcuda`, absent from a build machine without a GPU) is
tuned and pinned as one that links (ciq_build.project.cmake_trees.CMakeTree.build).

Real CMake, Ninja and nvcc 13.3; a static objective (no GPU needed).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ciq_build.measure.proc import run
from support import REPO_ROOT, build_tool, ensure_ok

pytestmark = pytest.mark.slow

CMAKELISTS = """\
cmake_minimum_required(VERSION 3.24)
set(CMAKE_CUDA_ARCHITECTURES 90a)
include("$ENV{CIQ_TEST_COMPILERS}/seed_compilers.cmake" OPTIONAL)  # unset or empty: no seed
project(unlinkable LANGUAGES CXX CUDA)
find_package(ciq_build CONFIG REQUIRED)
add_executable(kern kern.cu)
# As moderngpu's tests link `cuda`: here, as on a build machine without the driver, no such library exists.
target_link_libraries(kern PRIVATE ciq_test_library_nowhere)
ciq_tune_target(kern BENCHMARK kern OBJECTIVES {objective} SEARCH_SPACE knobs)
"""

KERN_CU = r"""
__global__ void heavy(const float* in, float* out) {
    float v[48];
#pragma unroll
    for (int i = 0; i < 48; ++i) v[i] = in[threadIdx.x + i * blockDim.x];
    float s = 0.0f;
#pragma unroll
    for (int r = 0; r < 3; ++r)
#pragma unroll
        for (int i = 0; i < 48; ++i) s = fmaf(s, v[i], v[(i * 7 + r) % 48]);
    out[threadIdx.x] = s;
}
int main() { return 0; }
"""


def _configured(tmp_path: Path, cuda133_bin: Path, objective: str) -> tuple[Path, Path]:
    source = tmp_path / "unlinkable"
    source.mkdir()
    (source / "CMakeLists.txt").write_text(CMAKELISTS.replace("{objective}", objective))
    (source / "kern.cu").write_text(KERN_CU)
    build = tmp_path / "build"
    ensure_ok(run([build_tool("cmake"), "-S", source, "-B", build, "-G", "Ninja",
                   f"-DCMAKE_MAKE_PROGRAM={build_tool('ninja')}", f"-DCMAKE_CUDA_COMPILER={cuda133_bin / 'nvcc'}",
                   f"-Dciq_build_DIR={REPO_ROOT / 'cmake'}"], timeout=300))
    return source, build


def test_a_static_tune_of_a_target_whose_link_fails_pins_from_its_objects(tmp_path: Path, cuda133_bin: Path) -> None:
    # moderngpu's test_segsort (linking `cuda`, no libcuda.so on the machine) searched all its candidates from
    # ptxas's report, then failed at the winner's rebuild, which linked: "the winning candidate no longer builds:
    # compile exited with code 1", ld's "cannot find -lcuda" under 40 lines of ptxas's report.
    source, build = _configured(tmp_path, cuda133_bin, "registers")
    tune = subprocess.run([sys.executable, "-m", "ciq_build", "tune", "kern", "-B", str(build),
                           "--seed-from=-maxrregcount=32", "--max-evaluations", "2"],
                          capture_output=True, text=True, cwd=source, timeout=600)
    said = tune.stdout + tune.stderr
    assert tune.returncode == 0, said
    assert "pinned:" in said, said
    record = json.loads((source / "ciq" / "kern.json").read_text())
    assert "-maxrregcount=32" in json.dumps(record), record


def test_a_target_that_is_its_own_benchmark_and_fails_to_link_is_said_to_fail_its_benchmark_build(
        tmp_path: Path, cuda133_bin: Path) -> None:
    # A timed tune must link it: its compile succeeded, and the baseline's failure said "compile_failed: compile
    # exited with code 1", sending the user to the kernels, where a separate benchmark's link says "benchmark build".
    source, build = _configured(tmp_path, cuda133_bin, "time")
    tune = subprocess.run([sys.executable, "-m", "ciq_build", "tune", "kern", "-B", str(build), "--max-evaluations", "1"],
                          capture_output=True, text=True, cwd=source, timeout=600)
    said = tune.stdout + tune.stderr
    assert tune.returncode == 2, said
    assert "benchmark build exited with code 1" in said and "compile exited" not in said, said
    assert "cannot find -lciq_test_library_nowhere" in said, said
