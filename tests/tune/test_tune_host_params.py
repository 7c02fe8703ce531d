"""PARAMS that host code reads, said before the baseline (a real CMake/nvcc tune, static objective: no GPU).

tests/projects/hostparams: a candidate's -D reaches hp_kernels' CUDA compiles alone, yet its grid.cpp reads TILE
(tile.h's #ifndef default, which kern.cu includes too) and its BENCHMARK's bench.cpp reads UNROLL: both build with
the default whatever the candidate. BLOCK is named there in a comment and a string only; hp_quiet's host source
reads none of its PARAMS.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ciq_build.project.manifest import load_manifest
from ciq_build.tune.param_probe import warn_before_building
from support import PROJECTS

pytestmark = pytest.mark.slow


def test_params_the_host_code_or_the_benchmark_reads_are_warned_about_before_the_baseline(tmp_path: Path) -> None:
    source, build = tmp_path / "src", tmp_path / "build"
    shutil.copytree(PROJECTS / "hostparams", source)
    command = [sys.executable, "-m", "ciq_build", "tune", "hp_kernels", "-S", str(source), "-B", str(build),
               "--max-evaluations", "1"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=source)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stderr.splitlines()
    warnings = [line for line in lines if "reaches the CUDA compiles of hp_kernels alone" in line]
    assert len(warnings) == 2, result.stderr  # TILE and UNROLL, once each; not BLOCK
    assert warnings[0].startswith("ciq_build: PARAMS TILE of hp_kernels: grid.cpp (a host source of hp_kernels) "
                                  "reads TILE (grid.cpp:4)"), warnings[0]
    assert "builds with the default TILE" in warnings[0] and "Move the use into the .cu sources" in warnings[0]
    assert "LANGUAGE CUDA" in warnings[0]
    assert warnings[1].startswith("ciq_build: PARAMS UNROLL of hp_kernels: bench.cpp (a source of its BENCHMARK "
                                  "hp_bench) reads UNROLL (bench.cpp:3)"), warnings[1]
    baseline = next(i for i, line in enumerate(lines) if line.startswith("ciq_build: baseline:"))
    assert all(lines.index(warning) < baseline for warning in warnings)
    # What CMake recorded: compiled host sources only (tile.h, listed, is no source), the benchmark's own.
    document = json.loads((build / "ciq" / "targets" / "hp_kernels.json").read_text())
    assert document["host_sources"] == [str(source / "grid.cpp")]
    assert document["benchmark"]["sources"] == [str(source / "bench.cpp")]
    # Host code that names its PARAMS in comments, strings and longer names only says nothing (the same configure).
    quiet = load_manifest(build, "hp_quiet")
    assert quiet.host_sources == (source / "quiet.cpp",)
    said: list[str] = []
    assert warn_before_building(quiet, said.append) == [] and said == []
