"""Pins that say only what matters, and PARAMS that do nothing said early (real CMake/nvcc tunes).

tests/projects/noop: `heavy` keeps 4 * (X + 1) values in registers; UNROLL is
#defined again in kern.cu without #ifndef, so every -DUNROLL is overridden.
Tuned for registers over knobs and params: most knobs the search hands the
winner change nothing on these small kernels.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ciq_build.measure import proc
from support import REPO_ROOT, ensure_ok

NOOP = REPO_ROOT / "tests" / "projects" / "noop"

pytestmark = pytest.mark.slow


def _tune(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], Path, Path]:
    source, build = tmp_path / "src", tmp_path / "build"
    shutil.copytree(NOOP, source)
    command = [sys.executable, "-m", "ciq_build", "tune", "noop_kernels", "-S", str(source), "-B", str(build),
               "--generations", "2", "--pool-size", "4", "--strategy", "ga", *args]  # 8 evaluations: the search
    # whose default seed finds X = 0 (the pin's assertions are about minimizing it, not about the search)
    return subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=source), source, build


def _journal_winner_controls(build: Path, defines: dict[str, str]) -> list[dict[str, Any]]:
    lines = (build / "ciq" / "journal" / "noop_kernels.jsonl").read_text().splitlines()
    records = [r for r in map(json.loads, filter(str.strip, lines)) if r.get("kind") == "evaluation"]
    return [r["controls"] for r in records if r["ok"] and r["controls"]["defines"].get("X") == defines["X"]]


def test_the_pin_drops_every_control_that_leaves_the_code_the_same_and_verify_passes(tmp_path: Path) -> None:
    result, source, build = _tune(tmp_path, "--controls", "knobs", "--controls", "params")
    assert result.returncode == 0, result.stderr
    # Before the baseline, a PARAMS name the source #defines again unguarded is warned about, once, with the
    # fix (UNROLL only: X is guarded with #ifndef). Asserted on this tune: a tune of its own cost 7.5 s of CPU.
    lines = result.stderr.splitlines()
    warnings = [line for line in lines if "does nothing" in line]
    assert len(warnings) == 1, result.stderr
    assert "PARAMS UNROLL of noop_kernels" in warnings[0] and "(kern.cu:6, outside any #ifndef UNROLL)" in warnings[0]
    baseline = next(i for i, line in enumerate(lines) if line.startswith("ciq_build: baseline:"))
    assert lines.index(warnings[0]) < baseline
    # The register cap's values lie below the baseline's registers: none below heavy's 30, so the knob is left
    # out, said once the baseline is measured, before the space's size.
    cap = next(i for i, line in enumerate(lines) if line.startswith("ciq_build: register cap:"))
    assert "left out of the search: the defaults' kernels use at most 30 registers" in lines[cap]
    assert baseline < cap < next(i for i, line in enumerate(lines) if line.startswith("ciq_build: search space:"))
    record = json.loads((source / "ciq" / "noop_kernels.json").read_text())
    # X matters (fewer registers at 0); UNROLL is overridden by the source, so -DUNROLL is dropped.
    assert record["controls"]["defines"] == {"X": "0"}
    dropped_line = next(line for line in result.stderr.splitlines() if "dropped from the pin" in line)
    # The pin's controls, built whole for its record, are the winner's code: said so.
    assert "-DUNROLL=" in dropped_line and "the machine code is the same without them" in dropped_line
    # Each rebuild of the minimization is said as it ends, numbered against the controls it tries.
    steps = [line for line in result.stderr.splitlines() if line.startswith("ciq_build: minimizing the pin, ")]
    assert steps and [int(line.split(", ")[1].split("/")[0]) for line in steps] == list(range(1, len(steps) + 1))
    # Built as the search's candidates were, ptxas alone (a -D runs its front end, never the host compile): whole
    # builds, one a control, took about 50 s each on stdgpu's Thrust-heavy example, a candidate 3-6 s.
    assert any("-DUNROLL=" in line and line.endswith(
        "the same figures of this tune's objectives without it (scored as the search's candidates were): dropped")
        for line in steps), steps
    assert all(line.endswith(": kept") or line.endswith(": dropped") for line in steps)
    # What was pinned is what the search measured, less what was dropped.
    flags = set(record["controls"].get("flags", []))
    assert any(flags <= set(c.get("flags", [])) for c in _journal_winner_controls(build, {"X": "0"}))
    for flag in flags:
        assert flag not in dropped_line
    # The journal says what its evaluations were made with, file by file (CMakeLists.txt too: a keyword added there
    # is named when a later tune reuses none of them), once: the baseline's build wrote nothing into the sources.
    journaled = [json.loads(line) for line in (build / "ciq" / "journal" / "noop_kernels.jsonl").read_text().splitlines()]
    made_with = [r for r in journaled if r.get("kind") == "made_with"]
    assert len(made_with) == 1 and {"CMakeLists.txt", "kern.cu"} <= set(made_with[0]["sources"]), made_with
    assert set(made_with[0]["parts"]) == {"toolchain", "architectures", "nvcc flags", "per-block declarations",
                                          "benchmark"}
    # The record says what it left out, and the report still finds the winner's evaluation.
    assert any(c.startswith("-DUNROLL=") for c in record["provenance"]["dropped_controls"])
    report = subprocess.run([sys.executable, "-m", "ciq_build", "report", "noop_kernels", "-B", str(build),
                             "--format", "markdown"], capture_output=True, text=True, timeout=300, cwd=source)
    assert report.returncode == 0, report.stderr
    # The pin takes effect in a plain build: the objects match the (minimal) winner's.
    ensure_ok(proc.run(["cmake", str(build)], 600))
    ensure_ok(proc.run(["cmake", "--build", str(build)], 600))
    verify = subprocess.run([sys.executable, "-m", "ciq_build", "verify", "noop_kernels", "-B", str(build), "-v"],
                            capture_output=True, text=True, timeout=300, cwd=source)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert "ok: the pinned controls are applied" in verify.stdout + verify.stderr
    # -v: the pinned controls as the command line nvcc is given, not a Python repr
    applied = next(line for line in verify.stderr.splitlines() if line.startswith("ciq_build: pinned controls"))
    assert "-DX=0" in applied.split(": ", 2)[2].split() and "(" not in applied.split(": ", 2)[2]


def test_objectives_that_name_kernels_score_only_those_kernels_and_their_pin_applies(tmp_path: Path) -> None:
    result, source, build = _tune(tmp_path, "--objective", "registers:heavy", "--objective", "registers:tin(y)?")
    assert result.returncode == 0, result.stderr
    record = json.loads((source / "ciq" / "noop_kernels.json").read_text())
    assert [o["name"] for o in record["objectives"]] == ["registers:heavy", "registers:tin(y)?"]
    # heavy holds 16 values at the default X=3 (30 registers), 4 at X=0 (18); tiny's 10 never change.
    assert record["baseline"]["scores"] == [30, 10] and record["winner"]["scores"] == [18, 10]
    assert record["controls"]["defines"] == {"X": "0"}
    # CMake reads the record (the rule book's objective pattern) and applies it; verify agrees.
    configure = subprocess.run(["cmake", str(build)], capture_output=True, text=True)
    assert configure.returncode == 0 and "noop_kernels" in configure.stdout + configure.stderr, configure.stderr
    ensure_ok(proc.run(["cmake", "--build", str(build)], 600))
    verify = subprocess.run([sys.executable, "-m", "ciq_build", "verify", "noop_kernels", "-B", str(build)],
                            capture_output=True, text=True, timeout=300, cwd=source)
    assert verify.returncode == 0, verify.stdout + verify.stderr
