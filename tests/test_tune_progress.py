"""What a running tune says: plain lines in logs and CI, a bar on a terminal, levels through logging."""

from __future__ import annotations

import io
import json
import logging
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ciq_build.compiler.controls import Controls
from ciq_build.core.causes import Cause
from ciq_build.search.base import Proposal
from ciq_build.search.evaluation import Evaluation
from ciq_build.tune.progress import REPLAY_INTERVAL, TuneProgress, configure_logging, reset_logging

REPO = Path(__file__).resolve().parent.parent


def evaluated(i: int, ok: bool = True, cached: bool = False) -> Evaluation:
    return Evaluation(f"k{i}", Proposal(i, 1, {}), Controls(flags=("-Xptxas=-O2",)), ok,
                      None if ok else Cause.COMPILE_FAILED, "", {"registers": 40.0 + i}, {},
                      (40.0 + i,) if ok else None, 1.0, cached=cached)


@pytest.fixture
def log() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    configure_logging(0, stream)
    yield stream
    reset_logging()


def test_without_a_terminal_each_evaluation_is_one_plain_line(log: io.StringIO) -> None:
    now = [0.0]
    progress = TuneProgress(8, 2, stream=io.StringIO(), terminal=False, clock=lambda: now[0])
    progress.update(1, evaluations=1, failures=0, best="41", last=evaluated(1))
    now[0] = 65.0
    progress.update(1, evaluations=2, failures=1, best="41", last=evaluated(2, ok=False))
    lines = log.getvalue().splitlines()
    assert lines == [
        "ciq_build: evaluation 1/8, generation 1/2: ok 41 | best 41 | 0 failed | 0:00 elapsed",
        "ciq_build: evaluation 2/8, generation 1/2: failed (compile_failed) | best 41 | 1 failed | 1:05 elapsed",
    ]
    assert "\r" not in log.getvalue()


def test_a_resume_reading_the_journal_back_does_not_flood_the_log(log: io.StringIO) -> None:
    now = [0.0]
    progress = TuneProgress(500, 10, stream=io.StringIO(), terminal=False, clock=lambda: now[0])
    for i in range(400):
        now[0] = i * 0.01
        progress.update(1, evaluations=i + 1, best="40", last=evaluated(i, cached=True))
    now[0] = REPLAY_INTERVAL + 5
    progress.update(1, evaluations=401, best="40", last=evaluated(400, cached=True))
    progress.update(2, evaluations=402, best="40", last=evaluated(401))  # a fresh one is always said
    lines = log.getvalue().splitlines()
    assert len(lines) == 3 and "(from the journal)" in lines[0] and "evaluation 402/500" in lines[2]


def test_quiet_keeps_warnings_and_verbose_adds_the_controls() -> None:
    stream = io.StringIO()
    configure_logging(-1, stream)
    logging.getLogger("ciq_build").info("progress")
    logging.getLogger("ciq_build").warning("a warning")
    assert stream.getvalue() == "ciq_build: a warning\n"
    configure_logging(1, stream)
    TuneProgress(4, 1, stream=io.StringIO(), terminal=False).update(1, evaluations=1, last=evaluated(3))
    assert "controls" in stream.getvalue() and "-Xptxas=-O2" in stream.getvalue()
    reset_logging()


def test_on_a_terminal_it_is_a_bar_not_lines(log: io.StringIO) -> None:
    terminal = io.StringIO()
    progress = TuneProgress(4, 2, stream=terminal, terminal=True)
    for i in range(4):
        progress.update(1 + i // 2, evaluations=i + 1, best="40", last=evaluated(i))
    assert progress.bar is not None and progress.bar.n == 4 and "generation 2/2" in str(progress.bar)
    progress.close()
    assert log.getvalue() == ""  # nothing logged line by line
    assert "/4 [" in terminal.getvalue()  # tqdm drew its bar on the terminal


@pytest.mark.slow
def test_a_tune_in_a_ci_log_says_each_evaluation(tmp_path: Path) -> None:
    import shutil

    source = tmp_path / "src"
    shutil.copytree(REPO / "tests" / "projects" / "transient", source)
    done = subprocess.run([sys.executable, "-m", "ciq_build", "tune", "kern", "-S", str(source), "-B",
                           str(tmp_path / "build"), "--generations", "2", "--pool-size", "3", "--no-pin"],
                          capture_output=True, text=True, timeout=600)  # a pipe, as in CI: no terminal
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("ciq_build: evaluation ")]
    journal = tmp_path / "build" / "ciq" / "journal" / "kern.jsonl"
    evaluations = [r for r in map(json.loads, journal.read_text().splitlines()) if r.get("kind") == "evaluation"]
    assert len(lines) >= len(evaluations) - 1  # one per evaluation of the search (the baseline is said apart)
    assert all("generation " in line and "elapsed" in line for line in lines)
    quiet = subprocess.run([sys.executable, "-m", "ciq_build", "tune", "kern", "-B", str(tmp_path / "build"),
                            "--generations", "2", "--pool-size", "3", "--no-pin", "-q"],
                           capture_output=True, text=True, timeout=600, cwd=source)
    assert quiet.returncode == 0 and "evaluation " not in quiet.stderr


def test_the_cli_handler_writes_to_the_stderr_of_the_moment(monkeypatch: pytest.MonkeyPatch) -> None:
    # A handler bound to the stderr it was made with says later messages into a stream replaced since
    # (a redirect, a test's capture): every message of a later tune in that process went missing.
    configure_logging(0)
    try:
        replaced = io.StringIO()
        monkeypatch.setattr(sys, "stderr", replaced)
        logging.getLogger("ciq_build").info("said after stderr was replaced")
        assert replaced.getvalue() == "ciq_build: said after stderr was replaced\n"
    finally:
        reset_logging()


def test_a_candidate_measured_earlier_in_this_run_is_not_said_to_come_from_the_journal(log: io.StringIO) -> None:
    # The first candidate often has the baseline's controls: a cache hit on a key this run
    # measured is a repeat, and the line must not claim a resume on a first run.
    progress = TuneProgress(4, 1, stream=io.StringIO(), terminal=False, measured_this_run={"k1"})
    progress.update(0, evaluations=1, last=evaluated(1, cached=True))
    progress.update(0, evaluations=2, last=evaluated(2, cached=True))
    lines = log.getvalue().splitlines()
    assert "(measured earlier in this run)" in lines[0] and "journal" not in lines[0]
    assert "(from the journal)" in lines[1]
