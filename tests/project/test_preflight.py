"""Every tool a tune needs is checked before the baseline (issue 8, defect 4).

A real toolkit with pieces taken away: a copy of the pip CUDA 13.3 toolkit's
layout (symlinks to its folders and tools) whose nvcc is a real file of its own,
so that nothing is found beside it that the copy leaves out. Real CMake, Ninja
and nvcc. What such a toolkit lacks is borrowed from another installed one
(ciq_build.compiler.toolchain.borrow_tool): here, a folder of symlinks to the
pip toolkit's cuobjdump and nvdisasm; elsewhere in this module nothing is
(CIQ_CUDA_TOOLS_PATH set empty), since the venv's own toolkit has both.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from ciq_build.compiler.metrics import sass_instruction_counts
from ciq_build.compiler.toolchain import PROJECT_COMPILER, TOOLS_PATH_VARIABLE, find_toolchain, load_toolchain
from ciq_build.core.objectives import parse_objectives
from ciq_build.errors import ConfigError, ToolchainError
from ciq_build.measure.proc import run
from ciq_build.project.manifest import Benchmark, load_manifest
from ciq_build.project.preflight import check_tune, check_verify, missing_tools
from support import REPO_ROOT, build_tool, ensure_ok

pytestmark = pytest.mark.slow


CMAKELISTS = """\
cmake_minimum_required(VERSION 3.24)
project(pre LANGUAGES CXX CUDA)
set(CMAKE_CUDA_ARCHITECTURES 90a)
find_package(ciq_build CONFIG REQUIRED)
add_library(kern STATIC kern.cu)
ciq_tune_target(kern OBJECTIVES registers PARAMS "X=choice(1,2)" SEARCH_SPACE params)
"""

# Every candidate defines X, which needs fewer registers than the defaults: a tune that got that far would pin.
KERN_CU = r"""
__global__ void kern(const float* in, float* out) {
#ifdef X
    out[threadIdx.x] = in[threadIdx.x] * X;
#else
    float v[32];
#pragma unroll
    for (int i = 0; i < 32; ++i) v[i] = in[threadIdx.x + i * blockDim.x];
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < 32; ++i) s = fmaf(s, v[i], v[(i * 7) % 32]);
    out[threadIdx.x] = s;
#endif
}
"""


def toolkit_without(root: Path, real_bin: Path, missing: set[str], copies: frozenset[str] | set[str] = frozenset()) -> Path:
    """bin/nvcc of a toolkit laid out like `real_bin`'s, less the tools in `missing`.

    nvcc (and the tools in `copies`) are files of their own, so that nvcc's
    own directory, which it and toolchain discovery look in, is this one.
    """
    top = root / "cuda"
    (top / "bin").mkdir(parents=True)
    for entry in real_bin.parent.iterdir():
        if entry.name != "bin":
            (top / entry.name).symlink_to(entry)
    for entry in real_bin.iterdir():
        if entry.name in missing:
            continue
        if entry.name in {"nvcc", *copies}:
            try:
                os.link(entry, top / "bin" / entry.name)
            except OSError:
                shutil.copy2(entry, top / "bin" / entry.name)
        else:
            (top / "bin" / entry.name).symlink_to(entry)
    return top / "bin" / "nvcc"


@pytest.fixture(scope="module", autouse=True)
def nothing_to_borrow() -> Iterator[None]:
    """No toolkit to borrow cuobjdump/nvdisasm from (the venv's pip toolkit has both): what is taken away stays away."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(TOOLS_PATH_VARIABLE, "")
        yield


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory, cuda133_bin: Path) -> dict:
    """A project configured with a toolkit that has no cuobjdump and no nvdisasm."""
    root = tmp_path_factory.mktemp("bare")
    nvcc = toolkit_without(root, cuda133_bin, {"cuobjdump", "nvdisasm"})
    source, build = root / "pre", root / "build"
    source.mkdir()
    (source / "CMakeLists.txt").write_text(CMAKELISTS)
    (source / "kern.cu").write_text(KERN_CU)
    ensure_ok(run([build_tool("cmake"), "-S", source, "-B", build, "-G", "Ninja",
                   f"-DCMAKE_MAKE_PROGRAM={build_tool('ninja')}", f"-DCMAKE_CUDA_COMPILER={nvcc}",
                   f"-Dciq_build_DIR={REPO_ROOT / 'cmake'}"], timeout=300))
    return {"root": root, "nvcc": nvcc, "source": source, "build": build}


def test_a_tune_without_cuobjdump_stops_before_the_baseline_naming_the_tool_and_the_fix(bare: dict) -> None:
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "ciq_build", "tune", "kern", "-B", str(bare["build"]),
                             "--generations", "1", "--pool-size", "2"], capture_output=True, text=True,
                            cwd=bare["source"], timeout=300)
    seconds = time.monotonic() - started
    assert result.returncode == 2, result.stdout + result.stderr
    message = " ".join(result.stderr.split())
    assert "Traceback" not in result.stderr
    assert "tuning kern needs cuobjdump, not found; nothing was built" in message
    assert "fingerprints the pinned winner's objects" in message
    assert f"The CUDA toolkit of {bare['nvcc']}" in message
    assert "nor does another installed toolkit of CUDA 13 or newer (looked in $CIQ_CUDA_TOOLS_PATH when set" in message
    assert 'pip install "cuda-toolkit[nvcc,cccl,cuobjdump,nvdisasm]==13.3.*"' in message
    assert "-DCMAKE_CUDA_COMPILER=" in message and "--no-pin" in message
    # Nothing was configured, compiled or journaled: no scratch tree, no journal.
    state = bare["build"] / "ciq"
    assert not (state / "scratch").exists()
    journal = state / "journal" / "kern.jsonl"
    assert not journal.exists() or not [
        line for line in journal.read_text().splitlines() if json.loads(line).get("kind") == "evaluation"]
    assert seconds < 60, f"{seconds:.0f} s: something was built"


def test_what_is_needed_depends_on_pinning_and_the_objectives(bare: dict, cuda133_bin: Path, tmp_path: Path) -> None:
    manifest = load_manifest(bare["build"], "kern")
    toolchain = load_toolchain(bare["nvcc"])
    assert toolchain.cuobjdump is None and toolchain.nvdisasm is None
    registers, sass = parse_objectives(["registers"]), parse_objectives(["sass_instructions"])
    # --no-pin with a ptxas-reported objective runs no CUDA tool beyond nvcc and ptxas.
    assert missing_tools(manifest, toolchain, pin=False, objectives=registers) == []
    assert [m.tool for m in missing_tools(manifest, toolchain, pin=True, objectives=registers)] == ["cuobjdump"]
    assert [m.tool for m in missing_tools(manifest, toolchain, pin=False, objectives=sass)] == ["cuobjdump", "nvdisasm"]
    with pytest.raises(ToolchainError) as error:
        check_tune(manifest, toolchain, pin=True, objectives=sass, needs_benchmark=False)
    assert "needs cuobjdump, nvdisasm" in str(error.value) and "--no-pin" not in str(error.value)
    with pytest.raises(ToolchainError, match="verifying kern needs cuobjdump"):
        check_verify(toolchain, "kern", bare["build"])
    # The PyPI toolkit is told the pip command that completes it.
    pip = replace(load_toolchain(cuda133_bin / "nvcc"), cuobjdump=None, nvdisasm=None)
    with pytest.raises(ToolchainError) as error:
        check_tune(manifest, pip, pin=True, objectives=sass, needs_benchmark=False)
    assert 'Add them to this PyPI toolkit: pip install "cuda-toolkit[cuobjdump,nvdisasm]==13.3.*"' in str(error.value)

    # A toolkit with cuobjdump but no nvdisasm: only SASS counting needs it.
    no_disasm = load_toolchain(toolkit_without(tmp_path, cuda133_bin, {"nvdisasm"}, copies={"cuobjdump"}))
    assert no_disasm.cuobjdump is not None and no_disasm.nvdisasm is None
    assert missing_tools(manifest, no_disasm, pin=True, objectives=registers) == []
    assert [m.tool for m in missing_tools(manifest, no_disasm, pin=True, objectives=sass)] == ["nvdisasm"]

    # A build tool that has gone away since the build dir was configured.
    cache = bare["build"] / "CMakeCache.txt"
    gone = replace(manifest, binary_dir=tmp_path / "tree")
    (tmp_path / "tree").mkdir()
    text = cache.read_text()
    assert f"={build_tool('ninja')}\n" in text
    (tmp_path / "tree" / "CMakeCache.txt").write_text(
        text.replace(f"={build_tool('ninja')}\n", f"={tmp_path / 'no' / 'ninja'}\n"))
    assert [m.tool for m in missing_tools(gone, no_disasm, pin=True, objectives=registers)] == [
        str(tmp_path / "no" / "ninja")]


def test_a_benchmark_built_outside_the_build_tree_is_refused_before_anything_is_built(bare: dict,
                                                                                     cuda133_bin: Path) -> None:
    manifest = replace(load_manifest(bare["build"], "kern"), benchmark=Benchmark("bench", Path("/opt/elsewhere/bench")))
    toolchain = load_toolchain(cuda133_bin / "nvcc")
    with pytest.raises(ConfigError, match="outside the build tree"):
        check_tune(manifest, toolchain, pin=True, objectives=parse_objectives(["time"]), needs_benchmark=True)


def test_sass_counting_finds_nvdisasm_when_cuobjdump_is_not_beside_it(cuda133_bin: Path, tmp_path: Path) -> None:
    # cuobjdump looks for nvdisasm beside itself and on PATH only; the toolchain tells it where.
    toolkit = load_toolchain(toolkit_without(tmp_path, cuda133_bin, {"nvdisasm"}, copies={"cuobjdump"}))
    toolkit = replace(toolkit, nvdisasm=cuda133_bin / "nvdisasm")
    (tmp_path / "k.cu").write_text("__global__ void k(float* p) { p[threadIdx.x] *= 3.0f; }\n")
    ensure_ok(run([toolkit.nvcc, "-c", "-arch=sm_90a", tmp_path / "k.cu", "-o", tmp_path / "k.o"], timeout=300))
    counts = sass_instruction_counts(tmp_path / "k.o", toolkit)
    assert counts and all(n > 0 for n in counts.values())


def _tools_of(root: Path, real_bin: Path, tools: tuple[str, ...]) -> Path:
    """The bin folder of another 'installed toolkit': symlinks to `real_bin`'s `tools`."""
    folder = root / "bin"
    folder.mkdir(parents=True)
    for tool in tools:
        (folder / tool).symlink_to(real_bin / tool)
    return folder


def test_cuobjdump_and_nvdisasm_the_toolkit_lacks_are_borrowed_from_another_installed_one_and_said(
        bare: dict, cuda133_bin: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    other = _tools_of(tmp_path / "other", cuda133_bin, ("cuobjdump", "nvdisasm"))
    # The usual places: $CUDA_HOME/bin comes first, before PATH, /usr/local/cuda* and the pip toolkit.
    monkeypatch.delenv(TOOLS_PATH_VARIABLE)
    toolchain = find_toolchain(bare["nvcc"], env={"CUDA_HOME": str(other.parent), "PATH": ""},
                               explicit_from=PROJECT_COMPILER)
    assert toolchain.nvcc == bare["nvcc"] and toolchain.cuobjdump == other / "cuobjdump"
    assert toolchain.nvdisasm == other / "nvdisasm"
    assert f"cuobjdump and nvdisasm from {other} (CUDA 13.3." in toolchain.describe()  # `tune` starts with this
    # Nothing is missing now, and they read what this nvcc compiles.
    manifest = load_manifest(bare["build"], "kern")
    check_tune(manifest, toolchain, pin=True, objectives=parse_objectives(["sass_instructions"]),
               needs_benchmark=False)
    (tmp_path / "k.cu").write_text("__global__ void k(float* p) { p[threadIdx.x] *= 3.0f; }\n")
    ensure_ok(run([toolchain.nvcc, "-c", "-arch=sm_90a", tmp_path / "k.cu", "-o", tmp_path / "k.o"], timeout=300))
    counts = sass_instruction_counts(tmp_path / "k.o", toolchain)
    assert counts and all(n > 0 for n in counts.values())


def test_only_the_missing_tool_is_borrowed_and_CIQ_CUDA_TOOLS_PATH_says_where_to_look(
        cuda133_bin: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nvcc = toolkit_without(tmp_path, cuda133_bin, {"nvdisasm"}, copies={"cuobjdump"})
    other = _tools_of(tmp_path / "other", cuda133_bin, ("cuobjdump", "nvdisasm"))
    monkeypatch.setenv(TOOLS_PATH_VARIABLE, os.pathsep.join([str(tmp_path / "nowhere"), str(nvcc.parent), str(other)]))
    toolchain = load_toolchain(nvcc)
    assert toolchain.cuobjdump == nvcc.parent / "cuobjdump" and toolchain.nvdisasm == other / "nvdisasm"
    assert toolchain.borrowed.startswith(f"nvdisasm from {other} (CUDA 13.3.")
    monkeypatch.setenv(TOOLS_PATH_VARIABLE, str(nvcc.parent))  # no folder with an nvdisasm: none, as before
    assert load_toolchain(nvcc).nvdisasm is None and load_toolchain(nvcc).borrowed == ""
