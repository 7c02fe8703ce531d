"""Real tunes (CMake, Ninja, nvcc, processes) that measure each machine code once and race runtime candidates.

tests/projects/transient: `kern` (static, stack_bytes) and `timer`, a TEST
DOUBLE for a GPU benchmark whose "time" depends on -D X (best at X == 1) and
which appends a line to $TIMER_RUN_LOG each run, so the benchmark runs a tune
made are counted from outside. Y is a parameter neither source reads: its
values build the same code, which dedupe must measure once.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ciq_build.measure.stats import interim_look
from support import REPO_ROOT

PROJECT = REPO_ROOT / "tests" / "projects" / "transient"

pytestmark = pytest.mark.slow


def _tune(target: str, source: Path, build: Path, *args: str, env: dict[str, str] | None = None,
          python: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, *python, "-m", "ciq_build", "tune", target, "-S", str(source), "-B", str(build), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=source,
                          env={**os.environ, **(env or {})})


def _evaluations(build: Path, target: str) -> list[dict]:
    journal = build / "ciq" / "journal" / f"{target}.jsonl"
    records = [json.loads(line) for line in journal.read_text().splitlines() if line.strip()]
    return [r for r in records if r.get("kind") == "evaluation"]


def _x(record: dict) -> str:
    return str(record["controls"]["defines"].get("X", "default"))


def test_a_runtime_tune_benchmarks_each_code_once_races_the_slow_ones_and_pins_the_best(tmp_path: Path) -> None:
    source = tmp_path / "transient src"
    shutil.copytree(PROJECT, source)
    build = tmp_path / "build"
    runs_log = tmp_path / "runs.log"
    repeats = 5
    # 12 configurations (ranges are inclusive), all tried in 2 generations of 6 (a space this small is
    # enumerated once breeding finds nothing new): each X twice, so dedupe must find copies, and the
    # fastest X=1 among them (24 candidates of 28 configurations took 80-94 s in CI).
    tuned = _tune("timer", source, build, "--generations", "2", "--pool-size", "6", "--repeats", str(repeats),
                  "--cmake-arg=-DTIMER_PARAMS=X=range(0,5);Y=range(0,1)",
                  env={"TIMER_RUN_LOG": str(runs_log), "TIMER_SLEEP_MS": "10", "TIMER_NOISE": "0.01"})
    assert tuned.returncode == 0, tuned.stdout + tuned.stderr
    evaluations = _evaluations(build, "timer")
    by_key = {r["key"]: r for r in evaluations}
    baseline = evaluations[0]
    measured = [r for r in evaluations if r["ok"] and r["same_code_as"] is None]
    copies = [r for r in evaluations if r["same_code_as"] is not None]

    # Dedupe: Y changes no code, so each X is benchmarked once; the rest point at it.
    assert copies, "Y=0..1 builds the same code for each X: some candidates must share"
    assert len({_x(r) for r in measured}) == len(measured)
    for copy in copies:
        earlier = by_key[copy["same_code_as"]]
        assert _x(earlier) == _x(copy) or {_x(earlier), _x(copy)} == {"default", "3"}
        assert copy["metrics"] == earlier["metrics"] and copy["runs"] == 0

    # Racing: the baseline (X=3, 1.5 ms) is fully measured; candidates far behind the best get one run.
    assert baseline["runs"] == repeats and not baseline["raced"]
    raced = [r for r in measured if r["raced"]]
    assert raced and all(1 <= r["runs"] < repeats for r in raced)
    full = [r for r in measured if not r["raced"]]
    assert all(r["runs"] == repeats for r in full)

    # What the benchmark itself counted: the runs the journal says, fewer than without racing and dedupe.
    logged = runs_log.read_text().splitlines()
    record = json.loads((source / "ciq" / "timer.json").read_text())
    # tune/confirm.py's interleaved re-measure: max(5, 2 * repeats) rounds each side, or as many as its look
    # (half-way here) where the winner (1.0 against the baseline's 1.1 ms, 1.5% noise) is already clear, as here.
    remeasured = record["provenance"]["remeasured"]
    assert remeasured["of"] == max(5, 2 * repeats) and remeasured["rounds"] == interim_look(remeasured["of"]) \
        == remeasured["of"] // 2, remeasured
    search_runs = sum(r["runs"] for r in evaluations)
    assert len(logged) == search_runs + 2 * remeasured["rounds"]
    assert search_runs * 2 <= len(evaluations) * repeats, (search_runs, len(evaluations))
    summary = re.search(r"benchmark runs: (\d+) run, (\d+) saved", tuned.stdout)
    assert summary is not None, tuned.stdout
    candidates = evaluations[1:]  # the summary counts the search's evaluations, not the baseline's
    assert int(summary.group(1)) == search_runs - repeats
    assert int(summary.group(2)) == len(candidates) * repeats - (search_runs - repeats)

    # The winner is the fastest X, fully measured, and it is pinned.
    assert record["controls"]["defines"]["X"] == "1", record["controls"]


def test_a_static_tune_takes_the_metrics_of_the_same_code_and_imports_no_engine(tmp_path: Path) -> None:
    source = tmp_path / "transient src"
    shutil.copytree(PROJECT, source)
    build = tmp_path / "build"
    # sass_instructions: a static objective that costs a cuobjdump run, which sharing saves. Y is in no code:
    # 8 configurations of 4 values of X hold at least 4 that have another's code (one generation is enough).
    tuned = _tune("kern", source, build, "--generations", "1", "--pool-size", "8", "--no-pin",
                  "--objective", "sass_instructions", "--objective", "stack_bytes",
                  "--cmake-arg=-DKERN_PARAMS=X=range(0,4);Y=range(0,4)", python=("-X", "importtime"))
    assert tuned.returncode == 0, tuned.stdout + tuned.stderr
    imported = {line.split("|")[-1].strip() for line in tuned.stderr.splitlines() if line.startswith("import time:")}
    assert imported and not {m for m in imported if m.split(".")[0] in ("compileiq", "ray")}  # params need no engine
    evaluations = _evaluations(build, "kern")
    by_key = {r["key"]: r for r in evaluations}
    copies = [r for r in evaluations if r["same_code_as"] is not None]
    assert copies
    for copy in copies:
        earlier = by_key[copy["same_code_as"]]
        assert copy["metrics"]["sass_instructions"] == earlier["metrics"]["sass_instructions"]
        assert copy["metrics"] == earlier["metrics"]  # compile_seconds too: every objective's value is taken
    assert f"same machine code as an earlier candidate: {len(copies)}" in tuned.stdout
    assert "benchmark runs" not in tuned.stdout
    # Y is read by no source: every pair of candidates that differ in Y alone built the same code.
    assert "PARAMS Y changed no candidate's code: is it used in the sources?" in tuned.stdout
    assert "PARAMS X changed" not in tuned.stdout


def test_a_static_tune_never_links_the_benchmark(tmp_path: Path) -> None:
    source = tmp_path / "transient src"
    shutil.copytree(PROJECT, source)
    # A library with a benchmark of its own, a separate executable linking it.
    (source / "twin.cu").write_text(
        "#ifndef X\n#define X 0\n#endif\n__global__ void twin(float* p) { p[threadIdx.x] *= X + 1.0f; }\n")
    (source / "twin_bench.cpp").write_text('#include <cstdio>\nint main() { std::puts("CIQ_METRIC time_ms=1"); }\n')
    with (source / "CMakeLists.txt").open("a") as cmake:
        cmake.write('add_library(twin STATIC twin.cu)\nadd_executable(twin_bench twin_bench.cpp)\n'
                    'target_link_libraries(twin_bench twin)\n'
                    'ciq_tune_target(twin BENCHMARK twin_bench OBJECTIVES registers PARAMS "X=range(0,3)" '
                    'SEARCH_SPACE params)\n')
    build = tmp_path / "build"
    # --no-pin: a winner about to be pinned runs its benchmark once for its check (test_tune_winner_check.py).
    tuned = _tune("twin", source, build, "--generations", "1", "--pool-size", "3", "--objective", "registers",
                  "--no-pin")
    assert tuned.returncode == 0, tuned.stdout + tuned.stderr
    scratch = build / "ciq" / "scratch" / "twin"
    # Each value of X compiled (its own front end: a static candidate goes through ptxas alone, and a winner
    # that is not pinned is not rebuilt), and nowhere the benchmark linked.
    assert len(list(scratch.glob("front-ends/*/*_twin.ptx"))) >= 2, "the candidates are compiled in the scratch"
    assert not list(scratch.rglob("twin_bench")), "registers need no benchmark: never linked"
