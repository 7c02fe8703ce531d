"""`python -m ciq_build tune` with several problem sizes (ARGS_SETS) scored together (SCORE), issue 22 item 10.

tests/projects/sizes's benchmark (a TEST DOUBLE for a GPU benchmark: its "time"
is computed on the host from -DX and the size it runs) takes 1.0 ms on both
sizes with the defaults (X=3). X=1 wins big on the small size and loses on the
large one (0.5 and 1.2 ms), X=2 wins a little on both (0.9 and 0.9 ms): the
geometric mean of the ratios picks X=1 (0.775 against 0.9). The worst ratio
(which would pick X=2) is SCORE's other rule, tested where it is decided
(tests/measure/test_sizes.py), and SCORE worst's way from ciq_tune_target to the
benchmark in tests/cmake/test_cmake_module.py: a tune of its own here cost ~12 s
of CPU.
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
from test_reports import _chromium

from ciq_build.reports.history import load_history
from support import REPO_ROOT

pytestmark = pytest.mark.slow

SIZES = REPO_ROOT / "tests" / "projects" / "sizes"
# What size_bench prints, per X and size (its source's table).
TIMES = {"1": {"small": 0.5, "large": 1.2}, "2": {"small": 0.9, "large": 0.9}, "3": {"small": 1.0, "large": 1.0}}


def _tune(tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], Path, Path]:
    source, build = tmp_path / "src", tmp_path / "build"
    shutil.copytree(SIZES, source)
    command = [sys.executable, "-m", "ciq_build", "tune", "size_bench", "-S", str(source), "-B", str(build),
               "--generations", "2", "--pool-size", "4", "--repeats", "3"]
    return subprocess.run(command, capture_output=True, text=True, timeout=900, cwd=source,
                          env=dict(os.environ)), source, build


@pytest.fixture(scope="module")
def tuned(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], Path, Path]:
    """The tune, run once for the tests that read it (the report page's test: a tune of its own cost 8 s of CPU).
    Nothing here writes into the trees but reports."""
    return _tune(tmp_path_factory.mktemp("sizes"))


def _evaluations(build: Path) -> list[dict]:
    lines = (build / "ciq" / "journal" / "size_bench.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, filter(str.strip, lines)) if r.get("kind") == "evaluation"]


def test_sizes_are_scored_together_and_the_pin_is_the_scores_choice(
        tuned: tuple[subprocess.CompletedProcess[str], Path, Path]) -> None:
    result, source, build = tuned
    pinned, winner_score = "1", math.sqrt(0.5 * 1.2)  # no SCORE: the geometric mean of the ratios, 0.775
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
    # show says the same per-size line, from the record alone
    shown = _ciq("show", "size_bench", "-B", str(build), cwd=source)
    assert shown.returncode == 0, shown.stderr
    assert f"time per size (winner / defaults): small {small:.4g}x" in shown.stdout, shown.stdout
    # the report's per-size view: the winner and the best candidates, each size's ratio to the defaults
    history = load_history("size_bench", build, source)
    assert history.sizes() == {"time": ["small", "large"]}
    listed = history.size_candidates()
    assert listed[0][1] == "pinned" and listed[0][0].defines == {"X": pinned}
    for evaluation, _ in listed:
        x = evaluation.defines.get("X", "3")
        assert history.size_ratios(evaluation)["time"] == pytest.approx({s: TIMES[x][s] for s in ("small", "large")})
    markdown = _ciq("report", "size_bench", "-B", str(build), "--format", "markdown", "-o", "-", cwd=source)
    assert markdown.returncode == 0, markdown.stderr
    row = next(line for line in markdown.stdout.splitlines() if "| pinned |" in line)
    assert f"| {small:.4g}x (" in row and f"| {large:.4g}x (" in row and f"-DX={pinned}" in row, row


def _ciq(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ciq_build", *args], capture_output=True, text=True, timeout=600,
                          cwd=cwd)


def test_the_report_page_shows_each_size_in_a_real_browser(
        tmp_path: Path, tuned: tuple[subprocess.CompletedProcess[str], Path, Path]) -> None:
    sync_api = pytest.importorskip("playwright.sync_api", reason="needs playwright (the [test] extra)")
    result, source, build = tuned
    assert result.returncode == 0, result.stderr
    page_file = tmp_path / "report.html"
    done = _ciq("report", "size_bench", "-B", str(build), "-o", str(page_file), cwd=source)
    assert done.returncode == 0, done.stderr
    with sync_api.sync_playwright() as playwright:
        browser = _chromium(playwright)
        try:
            page = browser.new_page()
            problems: list[str] = []
            page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
            page.goto(page_file.as_uri(), wait_until="load")
            plot = page.evaluate("""(() => { const image = document.getElementById('plot-sizes');
                return image && {complete: image.complete, width: image.naturalWidth}; })()""")
            headings = page.evaluate("[...document.querySelectorAll('h2')].map(h => h.textContent)")
            rows = page.evaluate("""[...document.querySelectorAll('tr')].map(
                tr => [...tr.children].map(cell => cell.textContent))""")
        finally:
            browser.close()
    assert problems == [] and plot is not None and plot["complete"] and plot["width"] > 300, plot
    assert "Each problem size" in headings
    head = next(r for r in rows if "time @small" in r)
    assert head[:4] == ["#", "", "time @small", "time @large"]
    pinned = next(r for r in rows if len(r) == len(head) and r[1] == "pinned")
    assert pinned[2:4] == ["0.5x (-50.0%)", "1.2x (+20.0%)"] and pinned[4] == "-DX=1"
