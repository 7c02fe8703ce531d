"""`python -m ciq_build tune` with a benchmark that prints its own format (METRIC, UNIT).

tests/projects/own_format's benchmark (a TEST DOUBLE for a GPU benchmark: its
"time" is computed on the host from -DX) prints ``Time= 0.0015000 sec`` (or a
rate, ``TFLOPS: 100.0000000``) and no CIQ_ lines. METRIC alone must feed the
``time`` objective, in the UNIT given, and a printed precision too coarse to
compare candidates must be warned about.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ciq_build.measure import proc
from ciq_build.reports.history import load_history
from ciq_build.reports.page import render_markdown
from support import REPO_ROOT, ensure_ok

pytestmark = pytest.mark.slow

OWN_FORMAT = REPO_ROOT / "tests" / "projects" / "own_format"


def _tune(tmp_path: Path, *args: str, env: dict[str, str] | None = None
          ) -> tuple[subprocess.CompletedProcess[str], Path, Path]:
    source, build = tmp_path / "own format src", tmp_path / "build"
    shutil.copytree(OWN_FORMAT, source)
    command = [sys.executable, "-m", "ciq_build", "tune", "own_bench", "-S", str(source), "-B", str(build),
               "--generations", "1", "--pool-size", "3", "--repeats", "3", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=source,
                          env={**os.environ, **(env or {})}), source, build


def _evaluations(build: Path) -> list[dict]:
    lines = (build / "ciq" / "journal" / "own_bench.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, filter(str.strip, lines)) if r.get("kind") == "evaluation"]


def test_a_benchmark_in_its_own_format_tunes_time_through_metric_alone_a_rate_higher_is_better(tmp_path: Path) -> None:
    # A rate, as simpleGEMM prints "TFLOPS: ...", through UNIT from CMake to the tune, its summary and the pin. Seconds
    # through UNIT from CMake are the coarse tune's below; no UNIT meaning milliseconds is the manifest's default
    # (tests/project/test_manifest.py) and each unit's conversion the protocol's (tests/measure/test_bench.py): a
    # second whole tune here would check nothing more.
    result, source, build = _tune(tmp_path, "--cmake-arg=-DOWN_UNIT=TFLOPS", "--cmake-arg=-DOWN_DIGITS=7")
    assert result.returncode == 0, result.stderr
    manifest = json.loads((build / "ciq" / "targets" / "own_bench.json").read_text())
    assert manifest["metric_unit"] == "TFLOPS"
    baseline = next(r for r in _evaluations(build) if not r["controls"]["defines"])
    assert baseline["ok"], baseline["message"]
    assert baseline["metrics"]["time_ms"] == pytest.approx(10.0)  # 1000 / 100 TFLOPS: ms per Tflop
    assert "objectives: time (METRIC's TFLOPS, higher is better: read as 1000 / rate ms a unit of work)" in result.stderr
    # The verdict before the pin, and the report of the journal, say the rates too.
    assert "better beyond the noise: median 150 TFLOPS vs baseline 100 TFLOPS (time ratio 0.6667, i.e. +50.0% TFLOPS)" \
        in result.stdout, result.stdout
    assert "| time | min | 100 TFLOPS | 150 TFLOPS | -33.3% (+50.0% TFLOPS) | 150 TFLOPS |" in render_markdown(
        load_history("own_bench", build, source))
    record = json.loads((source / "ciq" / "own_bench.json").read_text())
    assert record["controls"]["defines"] == {"X": "1"}  # the highest rate: 150 TFLOPS
    assert record["baseline"]["scores"] == pytest.approx([10.0])
    assert record["winner"]["scores"] == pytest.approx([1e3 / 150])
    assert record["provenance"]["time_rate_unit"] == "TFLOPS"
    # The summary says what the program printed, and the time's change with the rate's, the right way round.
    row = next(line for line in result.stdout.splitlines() if line.split()[:1] == ["time"])
    assert row.split() == ["time", "100", "TFLOPS", "150", "TFLOPS", "-33.3%", "(+50.0%", "TFLOPS)"], result.stdout
    assert "too coarse" not in result.stderr  # 10 significant digits
    assert "source tree changed" not in result.stderr  # nothing wrote there
    # The plain build ships the pin: the benchmark now prints the winner's rate.
    ensure_ok(proc.run(["cmake", str(build)], 600))
    ensure_ok(proc.run(["cmake", "--build", str(build)], 600))
    run = subprocess.run([str(build / "own_bench"), "TFLOPS", "7"], capture_output=True, text=True)
    assert "TFLOPS: 150.0000000" in run.stdout and "CIQ_" not in run.stdout


@pytest.fixture(scope="module")
def coarse_tune_writing_into_its_sources(tmp_path_factory: pytest.TempPathFactory,
                                         ) -> tuple[subprocess.CompletedProcess[str], Path]:
    """One --no-pin --quiet tune that two tests assert on (a tune here is ~1 min on two loaded cores): its
    benchmark prints a time too coarse to tell candidates apart ("0.00150 sec"), and appends each of its
    runs to a file of the source tree (OWN_BENCH_WRITES). Neither warning depends on the other."""
    tmp_path = tmp_path_factory.mktemp("coarse-writing")
    written = tmp_path / "own format src" / "bench-runs.txt"
    result, _, _ = _tune(tmp_path, "--cmake-arg=-DOWN_UNIT=s", "--cmake-arg=-DOWN_DIGITS=5", "--no-pin", "--quiet",
                         env={"OWN_BENCH_WRITES": str(written)})
    return result, written


def test_a_printed_time_too_coarse_to_tell_candidates_apart_is_warned_about_once(
        coarse_tune_writing_into_its_sources: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    # "0.00150 sec": the last digit is 1/150 = 0.67% of the value; a 1% gain is barely one step.
    result, _ = coarse_tune_writing_into_its_sources
    assert result.returncode == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if "too coarse" in line]
    assert len(warnings) == 1, result.stderr  # once per tune, not once per run
    (warning,) = warnings
    assert "warning" in warning and "own_bench" in warning and "'0.00150' s" in warning and "0.67%" in warning
    assert "more significant digits" in warning and "CIQ_METRIC time_ms=" in warning


def test_a_candidate_whose_time_drops_to_zero_is_a_bad_metric_and_never_pinned(tmp_path: Path) -> None:
    # X=1 skips its work and prints 0: once pinned as the best ("-100%"); X=2 (1.25 ms) really beats X=3 (1.5).
    # Through METRIC ("Time= 0.0000000 sec"); a zero through CIQ_METRIC lines, and its coarse-time warning, are
    # the protocol's rules (tests/measure/test_bench.py), and the energy test below tunes through those lines:
    # a second tune here (~15 s of CPU) checked nothing more.
    result, source, build = _tune(tmp_path, "--cmake-arg=-DOWN_PROTOCOL=metric", "--cmake-arg=-DOWN_SKIP_X=1",
                                  "--cmake-arg=-DOWN_DIGITS=7", "--generations", "2", "--pool-size", "4")
    assert result.returncode == 0, result.stderr
    by_x = {r["controls"]["defines"].get("X"): r for r in _evaluations(build)}
    skipped = by_x["1"]
    assert not skipped["ok"] and skipped["cause"] == "bad_metric", skipped
    assert "below 1 ns" in skipped["message"]
    assert by_x["2"]["ok"] and by_x["2"]["scores"] == pytest.approx([1.25])
    record = json.loads((source / "ciq" / "own_bench.json").read_text())
    assert record["controls"]["defines"] == {"X": "2"}
    assert not [line for line in result.stderr.splitlines() if "too coarse" in line], result.stderr


def test_a_candidate_whose_energy_reads_zero_is_a_bad_metric_and_never_pinned(tmp_path: Path) -> None:
    # X=1's energy counter reads 0 ("energy 6 -> 0 (-100.0%)" was pinned); X=2 (5 mJ) really beats X=3 (6 mJ).
    result, source, build = _tune(tmp_path, "--cmake-arg=-DOWN_PROTOCOL=ciq", "--cmake-arg=-DOWN_ZERO_ENERGY_X=1",
                                  "--cmake-arg=-DOWN_DIGITS=4", "--objective", "energy", "--generations", "2",
                                  "--pool-size", "4")
    assert result.returncode == 0, result.stderr
    by_x = {r["controls"]["defines"].get("X"): r for r in _evaluations(build)}
    assert not by_x["1"]["ok"] and by_x["1"]["cause"] == "bad_metric", by_x["1"]
    assert "energy_j=0 measures nothing for an objective to minimize" in by_x["1"]["message"]
    record = json.loads((source / "ciq" / "own_bench.json").read_text())
    assert record["controls"]["defines"] == {"X": "2"}
    assert record["winner"]["scores"] == pytest.approx([0.005])


def test_a_benchmark_that_writes_into_the_source_tree_is_warned_about_once_naming_the_file(
        coarse_tune_writing_into_its_sources: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    # Each candidate's run appended to a file of the source tree, unnoticed: what it writes there can change
    # what the next candidate builds. The baseline's run makes the file; the candidates' runs change it.
    result, written = coarse_tune_writing_into_its_sources
    assert result.returncode == 0, result.stderr
    assert written.read_text().count("X=") >= 3 * 2  # the baseline's runs, then at least one candidate's
    warnings = [line for line in result.stderr.splitlines() if "source tree changed" in line]
    assert len(warnings) == 1, result.stderr  # once per tune, said even with --quiet
    assert str(written) in warnings[0] and "can change what the next candidate builds" in warnings[0]


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="nvidia-smi is on PATH: this is of a machine without one")
def test_a_baseline_time_of_zero_where_no_gpu_was_seen_says_that_is_likely_why(tmp_path: Path) -> None:
    # GPUSorting's OneSweep benchmark checks no CUDA call: on a machine without a GPU it printed "Total time elapsed:
    # 0.000000", and the tune said only "the benchmark skipped its work or its timer is too coarse ... Fix the build
    # or benchmark first". Here the defaults' X (3) prints a time of 0 the same way.
    result, _, _ = _tune(tmp_path, "--cmake-arg=-DOWN_PROTOCOL=metric", "--cmake-arg=-DOWN_SKIP_X=3", "--no-pin")
    assert result.returncode == 2, result.stderr
    assert "failed: bad_metric:" in result.stderr and "below 1 ns" in result.stderr, result.stderr
    assert "no GPU was seen (there is no nvidia-smi on PATH" in result.stderr, result.stderr
    assert "which is likely why it failed: runtime objectives need one" in result.stderr
    assert "Fix the build or benchmark first" not in result.stderr
