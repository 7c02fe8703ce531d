"""find_package(CUDAToolkit) against the PyPI toolkit (issue 11): what scripts/bootstrap gives it.

The PyPI toolkit ships its libraries by soname only (libcudart.so.13); CMake's
FindCUDAToolkit looks for libcudart.so and fails without it. Real CMake, Ninja
and nvcc on tests/projects/find_cudatoolkit, configured with the venv's nvcc.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ciq_build.measure.proc import run
from support import PROJECTS, build_tool, ensure_ok

pytestmark = pytest.mark.slow

PROJECT = PROJECTS / "find_cudatoolkit"


def test_find_package_cudatoolkit_finds_the_pip_toolkit_and_its_cudart_links_and_runs(
        cuda133_bin: Path, tmp_path: Path) -> None:
    lib = cuda133_bin.parent / "lib"
    assert (lib / "libcudart.so").is_file(), f"no {lib / 'libcudart.so'}: run scripts/bootstrap, which links it"
    build = tmp_path / "build"
    configured = run([build_tool("cmake"), "-S", PROJECT, "-B", build, "-G", "Ninja",
                      f"-DCMAKE_MAKE_PROGRAM={build_tool('ninja')}", f"-DCMAKE_CUDA_COMPILER={cuda133_bin / 'nvcc'}"],
                     timeout=300)
    ensure_ok(configured)
    assert "Found CUDAToolkit" in configured.stdout and '(found version "13.3.' in configured.stdout
    ensure_ok(run([build_tool("cmake"), "--build", build], timeout=300))
    # The static runtime needs nothing at run time; the shared one is found where the toolkit is
    # (CMake writes no RPATH to a directory nvcc links from by default).
    assert ensure_ok(run([build / "static_cudart"], timeout=60)).stdout.startswith("cudart 13")
    shared = run([build / "shared_cudart"], timeout=60, env={**os.environ, "LD_LIBRARY_PATH": str(lib)})
    assert ensure_ok(shared).stdout.startswith("cudart 13")
