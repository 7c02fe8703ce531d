"""Real tunes (CMake, Ninja, nvcc, the benchmark process) of a static objective whose winner sets PARAMS.

tests/projects/checked: `checked_bench` is tuned for shared_bytes (TILE floats: TILE=8 best) and is its own
BENCHMARK, a TEST DOUBLE whose check fails for TILE < 16, which says "no GPU" when CHECKED_NO_GPU is set and
fails for any TILE when CHECKED_BROKEN is.
Each tune evaluates one seeded candidate (--seed-from, --max-evaluations 1), so the winner is fixed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support import PROJECTS

pytestmark = pytest.mark.slow


def _tune(source: Path, build: Path, seed: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "ciq_build", "tune", "checked_bench", "-S", str(source), "-B", str(build),
               f"--seed-from={seed}", "--max-evaluations", "1"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=source,
                          env={**os.environ, **(env or {})})
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def test_a_static_winner_that_fails_its_benchmarks_check_is_not_pinned_and_one_never_run_says_so(
        tmp_path: Path) -> None:
    source, build = tmp_path / "src", tmp_path / "build"
    shutil.copytree(PROJECTS / "checked", source)
    record = source / "ciq" / "checked_bench.json"
    # TILE=8 has the least shared memory, and a wrong result: its check runs before a pin, and fails.
    failed = _tune(source, build, "-DTILE=8")
    assert not record.exists() and "pinned:" not in failed.stdout
    assert ("its benchmark: ran once with -DTILE=8 and failed: the benchmark's own check failed: it printed "
            "CIQ_CHECK FAIL: tile 8 is too small for the data; nothing pinned") in failed.stdout, failed.stdout
    assert "next: keep the values that fail the benchmark's check out of the search" in failed.stdout
    # The table agrees with the verdict: what the build keeps, the defaults' figure, not the unpinned TILE=8's.
    header, row = (line.split() for line in failed.stdout.splitlines() if line.split()[:1] in (["objective"],
                                                                                              ["shared_bytes"]))
    assert header == ["objective", "baseline", "kept", "change"], failed.stdout
    assert row[1:3] == row[3:5] and row[5:] == ["none", "(the", "defaults)"], failed.stdout
    # TILE=16 passes its check: pinned, and the record says the check ran.
    passed = _tune(source, build, "-DTILE=16")
    assert "its benchmark: ran once with -DTILE=16: CIQ_CHECK PASS, exit 0" in passed.stdout, passed.stdout
    pinned = json.loads(record.read_text())
    assert pinned["controls"]["defines"] == {"TILE": "16"}
    assert pinned["provenance"]["winner_check"] == {"ran": True, "failed": False,
                                                    "says": "ran once with -DTILE=16: CIQ_CHECK PASS, exit 0"}
    # Where the benchmark finds no GPU, the pin is written, and it and the tune say it was never run.
    shutil.rmtree(source / "ciq")
    unrun = _tune(source, build, "-DTILE=16", env={"CHECKED_NO_GPU": "1"})
    check = json.loads(record.read_text())["provenance"]["winner_check"]
    assert check["ran"] is False and check["failed"] is False and check["says"].startswith("not run: no GPU here")
    assert "its benchmark: not run: no GPU here" in unrun.stdout and "pinned:" in unrun.stdout
    assert "the pin records that it was not run" in unrun.stderr
    shown = subprocess.run([sys.executable, "-m", "ciq_build", "show", "checked_bench", "-B", str(build)],
                           capture_output=True, text=True, timeout=300, cwd=source)
    assert "benchmark   not run: no GPU here" in shown.stdout, shown.stdout + shown.stderr
    # A benchmark that fails with the defaults too (cuda_hgemv's, whose cuBLAS the loader did not find) says nothing
    # of the PARAMS: the tune blamed -DHGEMV_UNROLL=1 and said to keep it out of the search. Pinned, as not run.
    shutil.rmtree(source / "ciq")
    broken = _tune(source, build, "-DTILE=16", env={"CHECKED_BROKEN": "1"})
    check = json.loads(record.read_text())["provenance"]["winner_check"]
    assert check["ran"] is False and check["failed"] is False, broken.stdout
    assert check["says"].startswith("not run: the benchmark fails with the compiler's defaults too (the benchmark "
                                    "exited with code 127") and "libcublas.so.13" in check["says"]
    assert "says nothing of them" in check["says"] and "keep the values" not in broken.stdout
    # The record is committed: the loader's line names the scratch tree's benchmark, kept out of it.
    assert "<scratch tree>/" in check["says"] and str(build) not in check["says"], check["says"]


def test_a_benchmark_built_into_the_source_tree_is_never_rebuilt_over_the_users_and_its_check_says_why_not(
        tmp_path: Path) -> None:
    """wangzyon's SGEMM sets EXECUTABLE_OUTPUT_PATH to its source folder, and its executable is its own benchmark: a
    static tune with PARAMS searched for minutes, then stopped at the winner's check with "... is outside the build
    tree; ciq_build can only rebuild benchmarks that the same CMake project builds", its scratch build having linked
    the winner's executable over the user's own. The check is not run (a scratch tree cannot build it where the
    user's is not written), the pin is written and says so, and the user's executable is left as it was."""
    source, build = tmp_path / "src", tmp_path / "build"
    shutil.copytree(PROJECTS / "checked", source)
    cmakelists = source / "CMakeLists.txt"
    cmakelists.write_text(cmakelists.read_text().replace(
        "add_executable(checked_bench", "set(EXECUTABLE_OUTPUT_PATH ${PROJECT_SOURCE_DIR})\nadd_executable(checked_bench"))
    users = source / "checked_bench"
    users.write_bytes(b"the user's own build")
    done = _tune(source, build, "-DTILE=16")
    assert users.read_bytes() == b"the user's own build"
    check = json.loads((source / "ciq" / "checked_bench.json").read_text())["provenance"]["winner_check"]
    assert check["ran"] is False and check["failed"] is False, done.stdout
    assert check["says"].startswith(f"not run: the benchmark checked_bench of checked_bench is built at {users}, "
                                    "outside the build tree"), check["says"]
    assert "drop the EXECUTABLE_OUTPUT_PATH or RUNTIME_OUTPUT_DIRECTORY" in done.stdout, done.stdout
    # ... and the tune says so before its search, not only after it.
    assert "So a winner that sets PARAMS cannot be run for its check before it is pinned" in done.stderr, done.stderr


def test_a_benchmark_that_does_not_link_with_the_defaults_either_says_nothing_of_the_params_and_the_pin_is_written(
        tmp_path: Path) -> None:
    """BabelStream's benchmark links libnvidia-ml, which a machine without a driver lacks: its static tune (objects
    only, never linked) found -DUNROLL_FACTOR=1, then blamed the benchmark's link failure on it, pinned nothing and
    said to keep the value out of the search. The defaults' benchmark does not link either: pinned, as not run."""
    source, build = tmp_path / "src", tmp_path / "build"
    shutil.copytree(PROJECTS / "checked", source)
    cmakelists = source / "CMakeLists.txt"
    cmakelists.write_text(cmakelists.read_text() + "\ntarget_link_libraries(checked_bench PRIVATE ciq_no_such_lib)\n")
    done = _tune(source, build, "-DTILE=16")
    record = source / "ciq" / "checked_bench.json"
    assert record.exists() and "keep the values" not in done.stdout, done.stdout
    check = json.loads(record.read_text())["provenance"]["winner_check"]
    assert check["ran"] is False and check["failed"] is False, check
    assert check["says"].startswith("not run: the benchmark does not build with the compiler's defaults either ("), check
    assert "ciq_no_such_lib" in check["says"] and "says nothing of them" in check["says"], check["says"]


def test_a_failed_links_reason_is_the_linkers_line_not_a_function_named_error() -> None:
    """BabelStream's link failure was quoted by its first line holding "error", the name of the function
    `nvml_error` that held the undefined references, rather than the reference itself."""
    from ciq_build.tune.winner_check import _first_error
    log = ("[1/1] Linking CXX executable cuda-stream\nFAILED: [code=1] cuda-stream\n"
           "/usr/bin/ld: CUDAStream.cu.o: in function `nvml_error(char const*, int)':\n"
           "CUDAStream.cudafe1.cpp:(.text+0x18): undefined reference to `nvmlErrorString'\n"
           "collect2: error: ld returned 1 exit status\nninja: build stopped: subcommand failed.")
    assert _first_error(log) == "CUDAStream.cudafe1.cpp:(.text+0x18): undefined reference to `nvmlErrorString'"
    assert _first_error("x.cu(3): error: identifier \"T\" is undefined\n") == "x.cu(3): error: identifier \"T\" is undefined"
