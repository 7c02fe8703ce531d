"""A tune --architecture whose entry widens the record's architectures says that builds for the old ones now skip it
(real CMake/nvcc tunes of tests/projects/tie, static objectives: no GPU needed)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support import REPO_ROOT

TIE = REPO_ROOT / "tests" / "projects" / "tie"

pytestmark = pytest.mark.slow


def test_an_entry_for_another_architecture_says_that_builds_for_the_record_s_own_now_skip_it(tmp_path: Path) -> None:
    source = tmp_path / "src"
    shutil.copytree(TIE, source)

    def tune(build: str, *args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "ciq_build", "tune", "tie_kernels", "-S", str(source), "-B",
                   str(tmp_path / build), "--seed-from=-maxrregcount=64", "--max-evaluations", "2", *args]
        return subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=source)

    first = tune("build")  # CMakeLists.txt's 90a
    assert first.returncode == 0, first.stderr
    record = source / "ciq" / "tie_kernels.json"
    assert json.loads(record.read_text())["toolchain"]["architectures"] == ["90a"]
    widened = tune("build2", "--cmake-arg=-DCMAKE_CUDA_ARCHITECTURES=80;90a", "--architecture", "80")
    assert widened.returncode == 0, widened.stderr
    assert json.loads(record.read_text())["toolchain"]["architectures"] == ["80", "90a"]
    note = [line for line in widened.stderr.splitlines() if "is now for 80, 90a" in line]
    assert note == [f"ciq_build: the record {record} was for 90a and is now for 80, 90a: a build for 90a alone, "
                    "which applied it, now skips it (a pin applies only to the architectures it holds, all of them); "
                    "build for 80, 90a (CMAKE_CUDA_ARCHITECTURES \"80;90a\"), or restore the record from version "
                    "control to keep the pin for 90a"], widened.stderr
    # What it says: the first tree, for 90a alone, skips the record now.
    again = subprocess.run(["cmake", str(tmp_path / "build")], capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and "pin skipped (tuned for 80, 90a, compiling for 90a)" in again.stdout, again
