"""`python -m ciq_build tune` with several problem sizes (ARGS_SETS) scored together (SCORE), issue 22 item 10.

tests/projects/sizes's benchmark (a TEST DOUBLE for a GPU benchmark: its "time"
is computed on the host from -DX and the size it runs) takes 1.0 ms on both
sizes with the defaults (X=3). X=1 wins big on the small size and loses on the
large one (0.5 and 1.2 ms), X=2 wins a little on both (0.9 and 0.9 ms): the
geometric mean of the ratios picks X=1 (0.775 against 0.9), the worst ratio
picks X=2 (0.9 against 1.2), and a pin chosen by the worst ratio never loses on
any size.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support import REPO_ROOT

pytestmark = pytest.mark.slow

SIZES = REPO_ROOT / "tests" / "projects" / "sizes"
# What size_bench prints, per X and size (its source's table).
TIMES = {"1": {"small": 0.5, "large": 1.2}, "2": {"small": 0.9, "large": 0.9}, "3": {"small": 1.0, "large": 1.0}}


def _tune(tmp_path: Path, score: str) -> tuple[subprocess.CompletedProcess[str], Path, Path]:
    source, build = tmp_path / "src", tmp_path / "build"
    shutil.copytree(SIZES, source)
    command = [sys.executable, "-m", "ciq_build", "tune", "size_bench", "-S", str(source), "-B", str(build),
               "--generations", "2", "--pool-size", "4", "--repeats", "3", f"--cmake-arg=-DSIZES_SCORE={score}"]
    return subprocess.run(command, capture_output=True, text=True, timeout=900, cwd=source,
                          env=dict(os.environ)), source, build


def _evaluations(build: Path) -> list[dict]:
    lines = (build / "ciq" / "journal" / "size_bench.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, filter(str.strip, lines)) if r.get("kind") == "evaluation"]


@pytest.mark.parametrize(
    ("score", "pinned", "winner_score"),
    [("", "1", math.sqrt(0.5 * 1.2)),  # no SCORE: the geometric mean of the ratios, 0.775
     ("worst", "2", 0.9)],  # the worst ratio: X=1's is 1.2 (it loses on the large size), X=2's 0.9
)
def test_sizes_are_scored_together_and_the_pin_is_the_scores_choice(
        tmp_path: Path, score: str, pinned: str, winner_score: float) -> None:
    result, source, build = _tune(tmp_path, score)
    assert result.returncode == 0, result.stderr
    by_x = {r["controls"]["defines"].get("X", "3"): r for r in _evaluations(build) if r["ok"]}
    # Each size is run and journaled under its own name; the candidates' scores are the combined ratio.
    for x, evaluated in by_x.items():
        for size, ms in TIMES[x].items():
            assert evaluated["metrics"][f"time_ms@{size}"] == pytest.approx(ms)
    assert {"1", "2", "3"} <= set(by_x), sorted(by_x)
    record = json.loads((source / "ciq" / "size_bench.json").read_text())
    assert record["controls"]["defines"] == {"X": pinned}
    assert record["baseline"]["scores"] == pytest.approx([1.0])
    assert record["winner"]["scores"] == pytest.approx([winner_score])
    # The summary shows each size's ratio for the winner.
    small, large = TIMES[pinned]["small"], TIMES[pinned]["large"]
    line = next(line for line in result.stdout.splitlines() if "per size" in line)
    assert f"small {small:.4g}x" in line and f"large {large:.4g}x" in line, line
    if score == "worst":  # the pin never loses on any size
        assert all(by_x[pinned]["metrics"][f"time_ms@{size}"] <= TIMES["3"][size] for size in TIMES["3"])
