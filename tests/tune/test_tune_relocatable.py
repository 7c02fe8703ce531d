"""A static tune of a relocatable target (CUDA_SEPARABLE_COMPILATION) scores its kernels as the device link leaves
them, and fails a candidate the link refuses (ciq_build.tune.runner.BuildRunner.relocatable).

Real CMake, Ninja, nvcc and nvlink 13.3; static objectives (no GPU needed).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from ciq_build.compiler.metrics import resource_usage
from ciq_build.compiler.toolchain import load_toolchain
from ciq_build.measure.proc import run
from support import REPO_ROOT, build_tool, ensure_ok

pytestmark = pytest.mark.slow

# As robertmaynard/code-samples' particles: the work in a library's device function, the kernel in the executable
# that links it, both relocatable.
CMAKELISTS = """\
cmake_minimum_required(VERSION 3.24)
set(CMAKE_CUDA_ARCHITECTURES 90a)
include("$ENV{CIQ_TEST_COMPILERS}/seed_compilers.cmake" OPTIONAL)  # unset or empty: no seed
project(reloc LANGUAGES CXX CUDA)
find_package(ciq_build CONFIG REQUIRED)
set(CMAKE_CUDA_SEPARABLE_COMPILATION ON)
add_library(heavy STATIC heavy.cu)
add_executable(reloc_bench bench.cu)
target_link_libraries(reloc_bench PRIVATE heavy)
ciq_tune_target(reloc_bench BENCHMARK reloc_bench OBJECTIVES registers SEARCH_SPACE knobs)
"""

HEAVY_CU = r"""
// 64 live values: far more registers than the kernel that calls it.
__device__ __noinline__ float heavy(const float* in) {
    float v[64];
#pragma unroll
    for (int i = 0; i < 64; ++i) v[i] = in[threadIdx.x + i * blockDim.x];
    float s = 0.0f;
#pragma unroll
    for (int r = 0; r < 4; ++r)
#pragma unroll
        for (int i = 0; i < 64; ++i) s = fmaf(s, v[i], v[(i * 7 + r) % 64]);
    return s;
}
"""

BENCH_CU = r"""
#include <cstdio>
__device__ float heavy(const float* in);
__global__ void light(const float* in, float* out) { out[threadIdx.x] = heavy(in); }
int main() { std::printf("CIQ_ERROR no-gpu\n"); return 2; }
"""


def test_a_relocatable_targets_kernels_are_scored_as_linked_and_a_cap_the_link_refuses_fails(
        tmp_path: Path, cuda133_bin: Path) -> None:
    # A new user's static tune of code-samples' particle_test scored ptxas's 24 registers for a kernel the device
    # link gives 52 (and a 32-byte stack); -maxrregcount below the callee's passed ptxas alone, and nvlink refuses it.
    source = tmp_path / "reloc"
    source.mkdir()
    for name, text in (("CMakeLists.txt", CMAKELISTS), ("heavy.cu", HEAVY_CU), ("bench.cu", BENCH_CU)):
        (source / name).write_text(text)
    build = tmp_path / "build"
    nvcc = cuda133_bin / "nvcc"
    ensure_ok(run([build_tool("cmake"), "-S", source, "-B", build, "-G", "Ninja",
                   f"-DCMAKE_MAKE_PROGRAM={build_tool('ninja')}", f"-DCMAKE_CUDA_COMPILER={nvcc}",
                   f"-Dciq_build_DIR={REPO_ROOT / 'cmake'}"], timeout=300))
    ensure_ok(run([build_tool("cmake"), "--build", build], timeout=300))
    usage = resource_usage(build / "reloc_bench", load_toolchain(nvcc))
    linked = usage[("_Z5lightPKfPf", "90a")]["registers"]
    assert linked >= 48, usage  # the link gives the kernel its callee's registers ...
    tune = subprocess.run([sys.executable, "-m", "ciq_build", "tune", "reloc_bench", "-B", str(build), "--no-pin",
                           "--seed-from=-maxrregcount=32", "--max-evaluations", "2"],
                          capture_output=True, text=True, cwd=source, timeout=600)
    assert tune.returncode == 0, tune.stdout + tune.stderr
    said = tune.stdout + tune.stderr
    baseline = re.search(r"baseline: registers (\d+)", said)
    assert baseline is not None and int(baseline.group(1)) == linked, said
    assert "so each candidate links reloc_bench and its kernels' registers and stack are read from it" in said
    # ... which the cap below them breaks: nvlink refuses it, and the candidate fails instead of scoring 32.
    assert "failures: compile_failed 1" in said, said
