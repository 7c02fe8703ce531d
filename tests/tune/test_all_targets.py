"""`tune --all`: every tuned target of a build tree, one after another, with the same options.

Real CMake, Ninja, nvcc and processes on tests/projects/transient: `kern`
(static, no benchmark) and `timer`, a TEST DOUBLE for a GPU benchmark. Tuned
for `time`, kern fails up front (it registers no benchmark) and timer still
runs; the summary says both, the exit code is kern's.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ciq_build.cli import main
from support import REPO_ROOT

PROJECT = REPO_ROOT / "tests" / "projects" / "transient"
QUICK = ["--generations", "1", "--pool-size", "2", "--repeats", "1", "--cmake-arg=-DTIMER_SLEEP_MS=10",
         "--cmake-arg=-DTIMER_PARAMS=X=range(0,3)"]


@pytest.mark.parametrize("args", [["tune"], ["tune", "kern", "--all"]])
def test_tune_needs_a_target_or_all_and_says_how_to_give_either(args: list[str], tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*args, "-B", str(tmp_path)]) == 2
    said = capsys.readouterr().err
    assert "tune needs a target or --all" in said and "tune --all -B <build>" in said and "list -B" in said, said


def test_all_on_a_tree_without_tuned_targets_says_to_register_one(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "CMakeLists.txt").write_text("cmake_minimum_required(VERSION 3.24)\nproject(none LANGUAGES NONE)\n")
    assert main(["tune", "--all", "-S", str(tmp_path), "-B", str(tmp_path / "build")]) == 2
    assert "has no tuned targets" in capsys.readouterr().err


@pytest.mark.slow
def test_all_tunes_every_target_says_a_failure_and_goes_on_and_resumes_each_from_its_journal(tmp_path: Path) -> None:
    source = tmp_path / "transient src"
    shutil.copytree(PROJECT, source)
    command = [sys.executable, "-m", "ciq_build", "tune", "--all", "-S", str(source), "-B", str(tmp_path / "build"),
               "--objective", "time", *QUICK]
    first = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=source)
    assert first.returncode == 2, first.stdout + first.stderr  # kern's ConfigError
    assert "error: kern failed (exit code 2): objective(s) time need a benchmark" in first.stderr
    assert "tune --all: timer (2 of 2)" in first.stderr  # after kern's failure
    summary = first.stdout[first.stdout.index("tune --all:"):].splitlines()
    assert summary[0] == "tune --all: 2 target(s), 1 failed"
    assert summary[1].split()[:5] == ["kern", "failed", "(exit", "code", "2):"], summary
    assert summary[2].split()[:2] == ["timer", "pinned:"] and (source / "ciq" / "timer.json").is_file(), summary

    # The same command again: each target resumes from its own journal (timer measures no candidate again).
    again = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=source)
    assert again.returncode == 2, again.stdout + again.stderr
    assert "evaluations: 2 (0 run, 2 from the journal)" in again.stdout, again.stdout

    # Another --cmake-arg on the tree configured already is refused before anything runs: it would be dropped,
    # and the tune would search the cached configuration instead of the one asked for, unsaid.
    journal = (tmp_path / "build" / "ciq" / "journal" / "timer.jsonl").read_bytes()
    other = subprocess.run([*command, "--cmake-arg=-DTIMER_SLEEP_MS=20"], capture_output=True, text=True,
                           timeout=600, cwd=source)
    assert other.returncode == 2, other.stdout + other.stderr
    assert (f"{tmp_path / 'build'} is configured already, and --cmake-arg only configures a new build dir: "
            "-DTIMER_SLEEP_MS=20 (the cache has TIMER_SLEEP_MS=10)") in other.stderr, other.stderr
    assert "tune --all: timer" not in other.stderr and "baseline" not in other.stderr, other.stderr
    assert (tmp_path / "build" / "ciq" / "journal" / "timer.jsonl").read_bytes() == journal


@pytest.mark.slow
def test_targets_named_are_each_checked_before_any_is_tuned(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    # wangzyon's SGEMM's trial: `tune sgemm fake_bench` tuned sgemm, then said fake_bench was no tuned target.
    source = tmp_path / "transient src"
    shutil.copytree(PROJECT, source)
    build = tmp_path / "build"
    assert main(["tune", "timer", "kernn", "-S", str(source), "-B", str(build), "--objective", "time", *QUICK]) == 2
    said = capsys.readouterr().err
    assert "'kernn' is not a tuned target of" in said and "(did you mean kern?)" in said, said
    assert not (build / "ciq" / "journal" / "timer.jsonl").exists()  # nothing tuned
