"""Exhaustive search (Kernel Tuner's brute force) on a real CMake/nvcc project: the default strategy lists a grid
that fits its budget after CONSTRAINTS (what --strategy exhaustive does), and says so with the space's size at the
start.

tests/projects/shared: PARAMS TILE=choice(8,16,32); CONSTRAINTS "TILE >= 16" is added to the call here.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support import PROJECTS

pytestmark = pytest.mark.slow


def test_a_space_within_the_budget_is_listed_each_allowed_configuration_once_and_the_tune_says_so(
        tmp_path: Path) -> None:
    source, build = tmp_path / "src", tmp_path / "build"
    shutil.copytree(PROJECTS / "shared", source)
    cmakelists = source / "CMakeLists.txt"
    cmakelists.write_text(cmakelists.read_text().replace('SEARCH_SPACE params', 'CONSTRAINTS "TILE >= 16"\n  '
                                                                                 'SEARCH_SPACE params'))
    done = subprocess.run([sys.executable, "-m", "ciq_build", "tune", "shared_kernels", "-S", str(source), "-B",
                           str(build), "--no-pin"],  # the default strategy (the portfolio's budget: 32)
                          capture_output=True, text=True, timeout=600, cwd=source)
    assert done.returncode == 0, done.stdout + done.stderr
    assert ("ciq_build: search space: 2 of 3 PARAMS combinations (CONSTRAINTS); budget 32 evaluations: the space "
            "fits the budget, so each of its 2 configurations is evaluated once (exhaustive) instead of sampled by "
            "the portfolio (--strategy portfolio samples it anyway)\n") in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("ciq_build: evaluation ")]
    assert [line.split()[2] for line in lines] == ["1/2", "2/2"], lines  # the grid, not the budget, is the end
    journal = (build / "ciq" / "journal" / "shared_kernels.jsonl").read_text().splitlines()
    tiles = [r["controls"]["defines"].get("TILE") for r in map(json.loads, journal)
             if r.get("kind") == "evaluation" and r["controls"]["defines"]]
    assert sorted(tiles, key=int) == ["16", "32"]
    assert "evaluations: 2 (2 run, 0 from the journal)" in done.stdout
