"""Real tunes (CMake, Ninja, nvcc, processes) of a benchmark that streams its repetitions' samples.

tests/projects/stream: `stream`, a TEST DOUBLE for a GPU benchmark (a CPU
stand-in) that runs STREAM_REPS repetitions a process, each as long as its
"kernel" takes for -D X (best at X == 1), and logs each repetition it finishes
with its X and pid, so what a process killed mid-way did is counted by the
process itself. With STREAM_SAMPLES=1 it prints CIQ_SAMPLES and each
repetition's time as it goes; without, one mean at the end (the same program
as a benchmark that does not stream).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from support import REPO_ROOT

PROJECT = REPO_ROOT / "tests" / "projects" / "stream"
REPS = 20
REPEATS = 3

pytestmark = pytest.mark.slow


def _tune(source: Path, build: Path, log: Path, *args: str, stream: bool) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "ciq_build", "tune", "stream", "-S", str(source), "-B", str(build),
               "--generations", "1", "--pool-size", "5", "--repeats", str(REPEATS), "--seed", "0",
               "--cmake-arg=-DSTREAM_PARAMS=X=range(1,6)", *args]  # best at the edge: no two X tie
    env = {**os.environ, "STREAM_LOG": str(log), "STREAM_REPS": str(REPS), "STREAM_BASE_MS": "4",
           "STREAM_STEP": "0.2", "STREAM_NOISE": "0.01", "STREAM_SAMPLES": "1" if stream else "0"}
    return subprocess.run(command, capture_output=True, text=True, timeout=900, cwd=source, env=env)


def _best_x(evaluations: list[dict]) -> str:
    """The journal's fully measured candidate with the lowest median time (what the tune would pin)."""
    full = [r for r in evaluations if r["ok"] and not r["raced"]]
    return _x(min(full, key=lambda r: r["metrics"]["time_ms"]))


def _evaluations(build: Path) -> list[dict]:
    journal = build / "ciq" / "journal" / "stream.jsonl"
    records = [json.loads(line) for line in journal.read_text().splitlines() if line.strip()]
    return [r for r in records if r.get("kind") == "evaluation"]


def _x(record: dict) -> str:
    return str(record["controls"]["defines"].get("X", "3"))  # the source's default is X=3


def _reps_by_process(log: Path) -> dict[str, Counter[str]]:
    """X -> pid -> repetitions that process finished, from the benchmark's own log."""
    found: dict[str, Counter[str]] = {}
    for line in log.read_text().splitlines():
        fields = dict(part.split("=", 1) for part in line.split())
        found.setdefault(fields["X"], Counter())[fields["pid"]] += 1
    return found


def _pinned_x(source: Path) -> str:
    return str(json.loads((source / "ciq" / "stream.json").read_text())["controls"]["defines"]["X"])


def test_racing_kills_losing_candidates_mid_process_and_pins_the_same_winner(tmp_path: Path) -> None:
    source = tmp_path / "stream src"
    shutil.copytree(PROJECT, source)
    build = tmp_path / "build"

    # Streaming: losers are stopped inside their first process.
    streamed_log = tmp_path / "streamed.log"
    tuned = _tune(source, build, streamed_log, stream=True)
    assert tuned.returncode == 0, tuned.stdout + tuned.stderr
    streamed = _evaluations(build)
    baseline = streamed[0]
    assert baseline["runs"] == REPEATS and not baseline["raced"]
    assert len(baseline["samples"]["time_ms"]) == REPEATS * REPS  # the journal keeps every repetition
    measured = [r for r in streamed if r["ok"] and r["same_code_as"] is None]
    raced = [r for r in measured if r["raced"]]
    assert raced, [(_x(r), r["runs"]) for r in measured]
    processes = _reps_by_process(streamed_log)
    for record in raced:
        samples = record["samples"]["time_ms"]
        (done,) = processes[_x(record)].values()  # one process, killed: measured once (dedupe), never confirmed
        assert record["runs"] == 1 and len(samples) <= done <= len(samples) + 1 < REPS, (_x(record), done)
    # A candidate not raced out ran whole processes: all its repeats, or fewer where its samples put it far
    # ahead of the best so far (its upper quartile 3% at least below it, so below the baseline's median).
    base_median = baseline["metrics"]["time_ms"]
    placed = []
    for record in measured[1:]:
        if not record["raced"]:
            samples = record["samples"]["time_ms"]
            assert len(samples) == record["runs"] * REPS, (_x(record), record["runs"], len(samples))
            if record["runs"] < REPEATS:
                placed.append(record)
                assert np.percentile(samples, 75) < 0.97 * base_median, (_x(record), samples)
    assert placed, [(_x(r), r["runs"]) for r in measured]  # X=1 and X=2 are 29% and 14% ahead of X=3
    assert "by a clear lead" in tuned.stdout, tuned.stdout
    winner = _pinned_x(source)
    assert winner == min({_x(r) for r in measured}, key=lambda x: abs(int(x) - 1))  # the best X it tried

    # Resumed: every evaluation comes from the journal, samples included; no candidate runs again.
    searched = Counter({x: sum(c.values()) for x, c in processes.items()})
    again = _tune(source, build, streamed_log, "--no-pin", stream=True)
    assert again.returncode == 0, again.stdout + again.stderr
    resumed = _evaluations(build)
    assert resumed[: len(streamed)] == streamed and len(resumed) == len(streamed)
    after = Counter({x: sum(c.values()) for x, c in _reps_by_process(streamed_log).items()})
    rerun = {x for x in after if after[x] != searched[x]}
    assert rerun <= {winner, "3"}, rerun  # only the re-measure of the winner against the defaults (X=3)

    # The same search, the same program printing one number a process: the same winner, each loser
    # stopped only after whole processes.
    whole_log = tmp_path / "whole.log"
    plain = _tune(source, build, whole_log, "--fresh", "--no-pin", stream=False)
    assert plain.returncode == 0, plain.stdout + plain.stderr
    whole = _evaluations(build)
    assert _best_x(whole) == _best_x(streamed) == winner
    assert not any("samples" in r and len(r["samples"]["time_ms"]) != r["runs"] for r in whole)
    # One number a process never places a candidate early: every one not raced out ran all its repeats.
    assert all(r["runs"] == REPEATS for r in whole if r["ok"] and not r["raced"] and r["same_code_as"] is None)
    whole_processes = _reps_by_process(whole_log)
    whole_raced = [r for r in whole if r["ok"] and r["raced"] and r["same_code_as"] is None]
    assert whole_raced
    for record in whole_raced:
        assert sorted(whole_processes[_x(record)].values()) == [REPS] * record["runs"]
