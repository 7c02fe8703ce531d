"""A wall-clock budget (`tune --time-limit`), on a real CMake/nvcc tune of tests/projects/noop.

The loop's counting of the deadline is tested without a clock in
tests/tune/test_loop.py; here the whole command: a limit the baseline's
configure and build always overrun ends the search before any candidate, and
the tune still ends cleanly, saying which budget ended it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support import REPO_ROOT

NOOP = REPO_ROOT / "tests" / "projects" / "noop"


def _tune(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    source = tmp_path / "src"
    if not source.exists():
        shutil.copytree(NOOP, source)
    command = [sys.executable, "-m", "ciq_build", "tune", "noop_kernels", "-S", str(source),
               "-B", str(tmp_path / "build"), "--generations", "2", "--pool-size", "4", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=source)


@pytest.mark.slow
def test_a_spent_time_limit_starts_no_candidate_and_the_summary_says_it_ended_the_search(tmp_path: Path) -> None:
    # A millisecond: no configure and baseline build of a CMake project is that fast, on any machine.
    result = _tune(tmp_path, "--time-limit", "0.001s")
    assert result.returncode == 0, result.stderr
    assert "search ended early: by the time limit (--time-limit 0.001s), after 0 evaluation(s)" in result.stdout
    assert "the time limit (--time-limit 0.001s) ended the search after 0 evaluation(s)" in result.stderr
    assert "--time-limit 0.001s" in result.stdout  # the next: hint names this tune's budget
    assert not (tmp_path / "src" / "ciq").exists()  # nothing pinned


@pytest.mark.parametrize("given", ["30x", "0", "-5m", "m"])
@pytest.mark.slow
def test_a_time_limit_that_is_no_duration_is_one_line_before_anything_is_built(tmp_path: Path, given: str) -> None:
    result = _tune(tmp_path, f"--time-limit={given}")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"ciq_build: error: --time-limit must be a duration such as 30m, 1h30m, 90s or a number of seconds "
        f"(more than zero), not {given!r}"]
    assert not (tmp_path / "build").exists()


@pytest.mark.slow
def test_a_time_limit_covers_the_whole_tune_and_caps_the_time_left_it_shows(tmp_path: Path) -> None:
    # A budget of 80 evaluations that 25 s cannot hold: at the pace of the first ones, more than 25 s is left.
    result = _tune(tmp_path, "--time-limit", "25s", "--generations", "20", "--controls", "knobs", "--no-pin")
    assert result.returncode == 0, result.stderr
    said = next(line for line in result.stderr.splitlines() if "covers the whole tune" in line)
    assert said.startswith("ciq_build: --time-limit 25s covers the whole tune: no candidate starts after ")
    assert "for the winner's rebuild (estimated from the baseline's)" in said
    lines = [line for line in result.stderr.splitlines() if line.startswith("ciq_build: evaluation ")]
    assert lines, result.stderr
    for line in lines:  # what the search has left is never more than the limit leaves it
        elapsed, left = line.rsplit("| ", 1)[1].split(" elapsed")
        assert "left" in left, line
        seconds = [int(m) * 60 + int(s) for m, s in (elapsed.split(":"), left.split("about ")[1].split()[0].split(":"))]
        assert sum(seconds) <= 25, line


@pytest.mark.slow
def test_a_baseline_at_the_bound_of_every_objective_ends_the_tune_before_any_candidate(tmp_path: Path) -> None:
    # noop's kernels spill nothing at the defaults; spill_bytes (tune's default objective) cannot go below 0, so
    # every candidate could only tie, and a tie pins nothing. The cudamat trial's cudalearn spent its whole budget
    # (4 builds here, 24 by default) on such a search; the tune now ends after the baseline, saying why.
    result = _tune(tmp_path, "--objective", "spill_bytes")
    assert result.returncode == 0, result.stderr
    assert "search ended early: before it began: the compiler's defaults already score the best any candidate " \
           "could on every objective" in result.stdout, result.stdout
    assert "next: spill_bytes is 0 at the compiler's defaults, nothing to lower; try other objectives" in result.stdout
    journal = (tmp_path / "build" / "ciq" / "journal" / "noop_kernels.jsonl").read_text()
    assert journal.count('"kind": "evaluation"') == 1, journal  # the baseline's alone
    assert not (tmp_path / "src" / "ciq").exists()  # nothing pinned
