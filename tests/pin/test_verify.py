"""A pin tuned in one checkout verifies in a copy of it at another path (issue 8, defect 3).

nvcc names kernels and device functions of an anonymous namespace after a hash
of the source's absolute path (``_GLOBAL__N__<hash>_...``), so the cubin's
section names differ between checkouts of the same code. Real CMake, Ninja
and nvcc 13.3; a static objective (no GPU needed).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ciq_build.compiler.fingerprint import ObjectInfo, compare
from ciq_build.measure.proc import run
from support import REPO_ROOT, build_tool, ensure_ok

pytestmark = pytest.mark.slow


CMAKELISTS = """\
cmake_minimum_required(VERSION 3.24)
set(CMAKE_CUDA_ARCHITECTURES 90a)
# The tests' shortcut past CMake's compiler identification (tests/projects/seed_compilers.cmake).
include("$ENV{CIQ_TEST_COMPILERS}/seed_compilers.cmake" OPTIONAL)  # unset or empty: no seed
project(anon LANGUAGES CXX CUDA)
find_package(ciq_build CONFIG REQUIRED)
add_library(anon_kernels STATIC anon.cu)
# Relocatable device code: the helper keeps its own code section, and the
# kernel reaches it through a relocation (tests/compiler/test_metrics.py covers whole-program code).
set_target_properties(anon_kernels PROPERTIES CUDA_SEPARABLE_COMPILATION ON)
# Every candidate defines LIGHT, which needs fewer registers than the defaults:
# the tune always pins.
ciq_tune_target(anon_kernels OBJECTIVES registers PARAMS "LIGHT=choice(1,2)" SEARCH_SPACE params)
"""

ANON_CU = r"""
#ifndef SCALE
#define SCALE 3.0f
#endif
namespace {
// A function of its own in the cubin, called from the kernel: both names carry the path hash.
__device__ __noinline__ float helper(float x) { return x * SCALE + 1.0f; }

__global__ void anon_kernel(const float* in, float* out) {
#ifdef LIGHT
    out[threadIdx.x] = helper(in[threadIdx.x]);
#else
    float v[48];
#pragma unroll
    for (int i = 0; i < 48; ++i) v[i] = in[threadIdx.x + i * blockDim.x];
    float s = 0.0f;
#pragma unroll
    for (int r = 0; r < 4; ++r)
#pragma unroll
        for (int i = 0; i < 48; ++i) s = fmaf(s, v[i], v[(i * 7 + r) % 48]);
    out[threadIdx.x] = helper(s);
#endif
}
}  // namespace

void launch_anon(const float* in, float* out) { anon_kernel<<<1, 32>>>(in, out); }
"""


def _ciq(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ciq_build", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=600)


def _configure(source: Path, build: Path, nvcc: Path) -> None:
    ensure_ok(run([build_tool("cmake"), "-S", source, "-B", build, "-G", "Ninja",
                   f"-DCMAKE_MAKE_PROGRAM={build_tool('ninja')}", f"-DCMAKE_CUDA_COMPILER={nvcc}",
                   f"-Dciq_build_DIR={REPO_ROOT / 'cmake'}"], timeout=300))


def _section_names(build: Path, cuobjdump: Path) -> set[str]:
    (obj,) = (build / "CMakeFiles" / "anon_kernels.dir").rglob("*.o")
    listing = ensure_ok(run([cuobjdump, "-elf", obj], timeout=60)).stdout
    return {word for word in listing.split() if word.startswith(".text.")}


def test_a_pin_tuned_in_one_checkout_verifies_in_a_copy_at_another_path(tmp_path: Path, cuda133_bin: Path) -> None:
    tuned = tmp_path / "tuned" / "anon"
    tuned.mkdir(parents=True)
    (tuned / "CMakeLists.txt").write_text(CMAKELISTS)
    (tuned / "anon.cu").write_text(ANON_CU)
    (tuned / "ciq").mkdir()  # so that the pin written by tune reconfigures this build (see issue 8, defect 1)
    tuned_build = tmp_path / "tuned" / "build"
    _configure(tuned, tuned_build, cuda133_bin / "nvcc")
    tune = _ciq("tune", "anon_kernels", "-B", str(tuned_build), "--generations", "1", "--pool-size", "2",
                "--quiet", cwd=tuned)
    assert tune.returncode == 0, tune.stdout + tune.stderr
    pin = json.loads((tuned / "ciq" / "anon_kernels.json").read_text())
    assert pin["controls"]["defines"].get("LIGHT") in ("1", "2")
    verify = _ciq("verify", "anon_kernels", "-B", str(tuned_build), cwd=tuned)
    assert verify.returncode == 0, verify.stdout + verify.stderr

    # A colleague's clone (or CI) of the same sources and pin, somewhere else.
    clone = tmp_path / "elsewhere" / "a clone" / "anon"
    shutil.copytree(tuned, clone)
    clone_build = tmp_path / "elsewhere" / "build"
    # -S configures a build folder that is not one yet, as `--help` says (verify refused it: "not a configured
    # CMake build tree").
    verify = _ciq("verify", "anon_kernels", "-S", str(clone), "-B", str(clone_build), cwd=clone)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert "ok: the pinned controls are applied" in verify.stdout
    # The test means something: the kernel's and the helper's names do differ between the checkouts.
    names = _section_names(clone_build, cuda133_bin / "cuobjdump")
    assert any("_GLOBAL__N__" in n and "anon_kernel" in n for n in names)
    assert any("_GLOBAL__N__" in n and "helper" in n for n in names)
    assert names != _section_names(tuned_build, cuda133_bin / "cuobjdump")

    # A real change to the code still fails verify, in the clone.
    (clone / "anon.cu").write_text(ANON_CU.replace("#define SCALE 3.0f", "#define SCALE 5.0f"))
    verify = _ciq("verify", "anon_kernels", "-B", str(clone_build), cwd=clone)
    assert verify.returncode == 1, verify.stdout + verify.stderr
    assert "machine code differs from the tuned winner's (recorded " in verify.stdout
    assert "tune again, or restore the record from version control" in verify.stdout

    # The whole folder copied, old build tree included: every command that builds there says so in one line,
    # at once (before: verify re-ran CMake ~100 times against the original sources, then exited 1, "mismatch").
    copied = tmp_path / "copied"
    shutil.copytree(tmp_path / "tuned", copied, symlinks=True)
    # show and list too: they showed the other tree's pin, as if it were this checkout's (wangzyon's SGEMM's trial).
    for command in (("verify", "anon_kernels"), ("tune", "anon_kernels", "--generations", "1", "--pool-size", "2"),
                    ("show", "anon_kernels"), ("list",)):
        refused = _ciq(*command, "-B", str(copied / "build"), cwd=copied / "anon")
        assert refused.returncode == 2, refused.stdout + refused.stderr
        assert f"is a copy of the build tree made in {tuned_build}" in refused.stderr, refused.stderr
        assert "Re-running CMake" not in refused.stdout + refused.stderr
    # A build folder that does not exist: list says what -B wants, and fails.
    listed = _ciq("list", "-B", str(tmp_path / "no such build"), cwd=tmp_path)
    assert listed.returncode == 2 and "-B <build dir>" in listed.stderr, listed.stdout + listed.stderr


def test_a_code_mismatch_names_both_fingerprints_and_what_changes_either() -> None:
    # cuda_hgemv's trial: a record whose code_sha256 was edited by hand got "machine code differs from the tuned
    # winner's", the same words as a changed source, and nothing on which was which or what to do.
    recorded = {"src/thread/thread_naive.cu.o": {"86": ObjectInfo(15, 0, "38abc36ae00c" + "5" * 52)}}
    built = {"src/thread/thread_naive.cu.o": {"86": ObjectInfo(15, 0, "38abc36ae00d" + "5" * 52)}}
    assert compare(recorded, built) == [
        "src/thread/thread_naive.cu.o [sm_86]: machine code differs from the tuned winner's (recorded 38abc36ae00c, "
        "built 38abc36ae00d: the source, its headers, the flags or the toolkit changed since the tune, or the record "
        "was edited; tune again, or restore the record from version control)"]
    assert compare(recorded, recorded) == []


def test_a_record_without_fingerprints_is_said_to_have_none_not_that_sources_changed() -> None:
    # py-faster-rcnn's trial: a record written by hand (schema, target, controls, toolchain) got "nms/nms_kernel.cu.o:
    # built but not in the record (sources changed since tuning? retune)", though no source had changed.
    built = {"nms/nms_kernel.cu.o": {"90a": ObjectInfo(28, 0, "ab" * 32)}}
    (said,) = compare({}, built)
    assert said.startswith("the record holds no fingerprint of any object's code (nms/nms_kernel.cu.o built), as a "
                           "record written by hand")
    assert "sources changed" not in said
