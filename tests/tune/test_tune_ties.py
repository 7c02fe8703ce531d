"""Candidates tied on every objective: the pin is the one that spills least (a real CMake/nvcc tune).

tests/projects/tie: one kernel of 96 registers in 512-thread blocks; caps of 56 and 64 registers both give 2 blocks
an SM (50% occupancy), the lower one spilling more. Seeded in that order, the 56 cap is evaluated first, which a tie
used to pin.
"""

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


def test_of_two_caps_at_the_same_occupancy_the_one_that_spills_less_is_pinned(tmp_path: Path) -> None:
    source, build = tmp_path / "src", tmp_path / "build"
    shutil.copytree(TIE, source)
    command = [sys.executable, "-m", "ciq_build", "tune", "tie_kernels", "-S", str(source), "-B", str(build),
               "--seed-from=-maxrregcount=56", "--seed-from=-maxrregcount=64", "--max-evaluations", "3"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=source)
    assert result.returncode == 0, result.stderr
    lines = (build / "ciq" / "journal" / "tie_kernels.jsonl").read_text().splitlines()
    evaluated = [r for r in map(json.loads, filter(str.strip, lines)) if r.get("kind") == "evaluation"]
    seeded = {tuple(r["controls"].get("flags", [])): r["metrics"] for r in evaluated}
    assert {("-maxrregcount=56",), ("-maxrregcount=64",)} <= set(seeded), seeded
    low, high = seeded[("-maxrregcount=56",)], seeded[("-maxrregcount=64",)]
    assert low["occupancy"] == high["occupancy"] == 50.0, seeded  # tied on the objective
    assert low["spill_bytes"] > high["spill_bytes"] > 0, seeded
    record = json.loads((source / "ciq" / "tie_kernels.json").read_text())
    assert record["controls"]["flags"] == ["-maxrregcount=64"], result.stderr


def test_a_target_without_params_is_told_to_declare_some_not_to_widen_them(tmp_path: Path) -> None:
    # GPUSorting's kernels, tuned for registers and spills with none declared: every cap spilled, nothing was pinned,
    # and the next: line said "more values in PARAMS in ciq_tune_target()".
    source, build = tmp_path / "src", tmp_path / "build"
    shutil.copytree(TIE, source)
    command = [sys.executable, "-m", "ciq_build", "tune", "tie_kernels", "-S", str(source), "-B", str(build),
               "--objective", "registers", "--objective", "spill_bytes", "--seed-from=-maxrregcount=64",
               "--max-evaluations", "2"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=source)
    assert result.returncode == 0, result.stderr
    assert not (source / "ciq" / "tie_kernels.json").exists(), result.stdout  # 64 registers spill: no pin
    (line,) = [line for line in result.stdout.splitlines() if line.strip().startswith("next:")]
    assert "more values in PARAMS" not in line and "--controls params" not in line, line
    assert "a wider search (-D source parameters such as tile sizes, declared as PARAMS in ciq_tune_target())" in line


def test_constraints_that_allow_no_params_combination_are_refused_in_one_line(tmp_path: Path) -> None:
    # GPUSorting's trial: "search space: 0 of 2 PARAMS combinations (CONSTRAINTS) x 12,600 knob settings = 0
    # configurations; ... each of its 0 configurations is evaluated once (exhaustive)", then "CONSTRAINTS allow none of
    # the configurations the search drew or listed from PARAMS (25200 in all)", knob settings counted as PARAMS.
    source, build = tmp_path / "src", tmp_path / "build"
    shutil.copytree(TIE, source)
    command = [sys.executable, "-m", "ciq_build", "tune", "tie_kernels", "-S", str(source), "-B", str(build),
               "--cmake-arg=-DTIE_PARAMS=KPT=choice(7,15)", "--cmake-arg=-DTIE_CONSTRAINTS=KPT > 20",
               "--controls", "knobs", "--controls", "params"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=source)
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines()[-1] == (
        "ciq_build: error: CONSTRAINTS allow none of the 2 PARAMS combinations (PARAMS KPT=choice(7,15); CONSTRAINTS "
        "KPT > 20): nothing to search. Loosen CONSTRAINTS or widen PARAMS in ciq_tune_target()"), result.stderr
    assert "0 configurations" not in result.stderr


@pytest.mark.parametrize(("cap", "kept"), [(56, True), (64, False)])
def test_the_minimal_pin_keeps_a_control_only_where_the_winner_spills_less_with_it(
        tmp_path: Path, cap: int, kept: bool) -> None:
    # GPUSorting's occupancy winner, -maxrregcount=64 with -Xptxas=--register-usage-level=0 (and three knobs),
    # spilled 848 B; the minimal pin dropped the knobs, "the same figures of this tune's objectives without them",
    # and spilled 936 B. Here --register-usage-level=10 spills less than the cap alone at 56 registers (1320 against
    # 1352 B with CUDA 13.3) and more at 64 (928 against 864 B): kept at 56, dropped at 64 (the pin spills less).
    source, build = tmp_path / "src", tmp_path / "build"
    shutil.copytree(TIE, source)
    level = "-Xptxas=--register-usage-level=10"
    command = [sys.executable, "-m", "ciq_build", "tune", "tie_kernels", "-S", str(source), "-B", str(build),
               f"--seed-from=-maxrregcount={cap} {level}", "--max-evaluations", "2"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=source)
    assert result.returncode == 0, result.stderr
    lines = (build / "ciq" / "journal" / "tie_kernels.jsonl").read_text().splitlines()
    evaluated = [r for r in map(json.loads, filter(str.strip, lines)) if r.get("kind") == "evaluation"]
    (seeded,) = [r for r in evaluated if r["controls"].get("flags")]
    assert sorted(seeded["controls"]["flags"]) == [level, f"-maxrregcount={cap}"], seeded
    record = json.loads((source / "ciq" / "tie_kernels.json").read_text())
    pinned = sorted(record["controls"]["flags"])
    assert pinned == ([level, f"-maxrregcount={cap}"] if kept else [f"-maxrregcount={cap}"]), result.stderr
