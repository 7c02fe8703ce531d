"""What a running tune says: plain lines in logs and CI, a bar on a terminal, levels through logging."""

from __future__ import annotations

import argparse
import io
import json
import logging
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ciq_build.compiler.controls import Controls
from ciq_build.compiler.toolchain import find_toolchain, other_toolkits
from ciq_build.core.causes import Cause
from ciq_build.core.objectives import parse_objectives
from ciq_build.core.pace import time_left
from ciq_build.core.settings import USER_CONFIGURE_TIMEOUT
from ciq_build.project.cmake_trees import configure_user_tree
from ciq_build.search.base import Proposal
from ciq_build.search.evaluation import Evaluation
from ciq_build.state.live import LiveStatus, read_live_status
from ciq_build.tune.gpu_time import GpuMeter
from ciq_build.tune.progress import REPLAY_INTERVAL, TuneProgress, configure_logging, reset_logging
from support import REPO_ROOT

REPO = REPO_ROOT


def evaluated(i: int, ok: bool = True, cached: bool = False, scores: tuple[float, ...] | None = None) -> Evaluation:
    return Evaluation(f"k{i}", Proposal(i, 1, {}), Controls(flags=("-Xptxas=-O2",), defines=(("TILE", "32"),)), ok,
                      None if ok else Cause.COMPILE_FAILED, "", {"registers": 40.0 + i}, {},
                      (scores or (40.0 + i,)) if ok else None, 1.0, cached=cached)


@pytest.fixture
def log() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    configure_logging(0, stream)
    yield stream
    reset_logging()


def test_without_a_terminal_each_evaluation_is_one_plain_line(log: io.StringIO) -> None:
    # `ok 0/127` said neither what the numbers are nor how long the rest would take.
    now = [0.0]
    progress = TuneProgress(8, 2, parse_objectives(["time", "registers"]), stream=io.StringIO(), terminal=False,
                            clock=lambda: now[0])
    # The search counts generations from 0; a person reads the first as 1 of 2.
    now[0] = 10.0
    progress.update(0, evaluations=1, failures=0, best=(4.25, 41.0), front=1, last=evaluated(1, scores=(4.25, 41.0)))
    now[0] = 65.0
    progress.update(0, evaluations=2, failures=1, best=(4.25, 41.0), front=1, last=evaluated(2, ok=False))
    lines = log.getvalue().splitlines()
    assert lines == [
        # two objectives: the point the tune would pin from the front so far, not a "best" of either alone
        "ciq_build: evaluation 1/8 (12%), generation 1/2: ok, time 4.25 ms, registers 41 | front: 1 point; would pin "
        "time 4.25 ms, registers 41 | 0 failed | 0:10 elapsed, about 1:10 left",
        # 65 s for 2 measured evaluations: 6 more take about 3:15
        "ciq_build: evaluation 2/8 (25%), generation 1/2: failed (compile_failed) | front: 1 point; would pin "
        "time 4.25 ms, registers 41 | 1 failed | 1:05 elapsed, about 3:15 left",
    ]
    assert "\r" not in log.getvalue()


def test_a_watcher_reads_the_phase_the_evaluations_the_best_and_the_time_left_even_when_quiet(
        log: io.StringIO, tmp_path: Path) -> None:
    # report --watch said a tune was running, never which phase, how far, or how long it had left.
    status = tmp_path / "locks" / "kern.lock.live"
    wall = [1000.0]
    live = LiveStatus(status, "kern", clock=lambda: wall[0])
    meter = GpuMeter()
    meter.listeners.append(live.phase)
    assert read_live_status(status)["phase"] == "preparing"
    meter.enter("baseline")
    meter.enter("search")
    now = [0.0]
    progress = TuneProgress(8, 2, parse_objectives(["time"]), stream=io.StringIO(), terminal=False,
                            clock=lambda: now[0], live=live, quiet=True)
    assert (read_live_status(status)["evaluations"], read_live_status(status)["expected"]) == (0, 8)  # planned
    now[0], wall[0] = 10.0, 1010.0
    progress.update(0, evaluations=2, failures=0, best=(4.25,), last=evaluated(1, scores=(4.25,)))
    said = read_live_status(status)
    assert {k: said[k] for k in ("target", "phase", "evaluations", "expected", "best", "left_s", "updated")} == {
        "target": "kern", "phase": "search", "evaluations": 2, "expected": 8, "best": "best time 4.25 ms",
        "left_s": 60.0, "updated": 1010.0}  # 6 more at the pace of the one measured in 10 s
    assert log.getvalue() == ""  # quiet: the watcher is told, the log is not
    now[0], wall[0] = 10.5, 1010.5
    progress.update(0, evaluations=3, failures=0, best=(4.0,), last=evaluated(2, scores=(4.0,)))
    assert read_live_status(status)["evaluations"] == 2  # within WRITE_EVERY_S of the last write: not yet
    meter.enter("re-measure")
    assert (read_live_status(status)["evaluations"], read_live_status(status)["best"]) == (3, "best time 4 ms")  # now
    live.end()
    said = read_live_status(status)
    assert [name for name, _ in said["phases"]] == ["preparing", "baseline", "search", "re-measure", "ended"]
    assert said["left_s"] is None  # the search's time left means nothing after it



def test_a_watcher_of_a_tune_of_several_objectives_reads_the_front_and_what_would_be_pinned(tmp_path: Path) -> None:
    # report --watch said "best so far time 1.1 ms, registers 8" of a two-objective tune: a reader takes "best" for
    # what the tune pins, which is the pin's rule's point of the front; the progress line says so, the watcher too.
    status, wall = tmp_path / "kern.lock.live", [1000.0]
    progress = TuneProgress(8, 2, parse_objectives(["time", "registers"]), stream=io.StringIO(), terminal=False,
                            live=LiveStatus(status, "kern", clock=lambda: wall[0]), quiet=True)
    wall[0] += 5.0  # past WRITE_EVERY_S: written at once
    progress.update(0, evaluations=3, best=(4.25, 41.0), front=2, last=evaluated(3, scores=(4.25, 41.0)))
    assert read_live_status(status)["best"] == "front: 2 points; would pin time 4.25 ms, registers 41"

def test_the_time_left_is_paced_by_the_evaluations_this_run_measured() -> None:
    assert time_left(30.0, 3, 3, 10) == 70.0
    assert time_left(30.0, 3, 103, 110) == 70.0  # 100 read back from the journal cost nothing
    assert time_left(5.0, 0, 100, 110) is None  # only journaled ones so far: no pace yet
    assert time_left(30.0, 3, 3, None) is None and time_left(30.0, 3, 12, 10) == 0.0


def test_a_resume_reading_the_journal_back_does_not_flood_the_log(log: io.StringIO) -> None:
    now = [0.0]
    progress = TuneProgress(500, 10, stream=io.StringIO(), terminal=False, clock=lambda: now[0])
    for i in range(400):
        now[0] = i * 0.01
        progress.update(1, evaluations=i + 1, best=(40.0,), last=evaluated(i, cached=True))
    now[0] = REPLAY_INTERVAL + 5
    progress.update(1, evaluations=401, best=(40.0,), last=evaluated(400, cached=True))
    progress.update(2, evaluations=402, best=(40.0,), last=evaluated(401))  # a fresh one is always said
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
    # As a command line one can paste (shlex), not a Python repr of tuples.
    assert "controls: -Xptxas=-O2 -DTILE=32; metrics: registers=43" in stream.getvalue()
    reset_logging()


def test_on_a_terminal_it_is_a_bar_not_lines(log: io.StringIO) -> None:
    terminal = io.StringIO()
    progress = TuneProgress(4, 2, parse_objectives(["registers"]), stream=terminal, terminal=True)
    for i in range(4):
        progress.update(i // 2, evaluations=i + 1, best=(40.0,), last=evaluated(i))
    assert progress.bar is not None and progress.bar.n == 4 and "generation 2/2" in str(progress.bar)
    progress.close()
    assert log.getvalue() == ""  # nothing logged line by line
    drawn = terminal.getvalue()
    for i in range(1, 5):  # drawn at each evaluation
        assert f"{i}/4 evaluations" in drawn
    assert "best registers 40" in drawn and "left" in drawn


# A budget of 6 over kern's 5 configurations (X=range(0,4)): the default lists each once, so 5 are planned.
SMALL_TUNE = ["--generations", "2", "--pool-size", "3", "--no-pin"]


@pytest.fixture(scope="module")
def kern_project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """tests/projects/transient copied, and its build tree configured (its target kern: stack_bytes, no GPU)."""
    import shutil

    root = tmp_path_factory.mktemp("progress")
    source, build = root / "src", root / "build"
    shutil.copytree(REPO / "tests" / "projects" / "transient", source)
    configure_user_tree(source, build, find_toolchain(), None, [], USER_CONFIGURE_TIMEOUT)  # as tune -S does
    return source, build


def journaled(build: Path) -> list[dict]:
    journal = build / "ciq" / "journal" / "kern.jsonl"
    return [r for r in map(json.loads, journal.read_text().splitlines()) if r.get("kind") == "evaluation"]


@pytest.mark.slow
def test_a_tune_in_a_ci_log_says_each_evaluation(kern_project: tuple[Path, Path]) -> None:
    source, build = kern_project
    done = subprocess.run([sys.executable, "-m", "ciq_build", "tune", "kern", "-B", str(build), "--fresh",
                           *SMALL_TUNE], capture_output=True, text=True, cwd=source)  # a pipe, as in CI: no terminal
    assert done.returncode == 0, done.stderr
    said = done.stderr.splitlines()
    lines = [line for line in said if line.startswith("ciq_build: evaluation ")]
    # one per evaluation of the search, numbered on (the baseline is said apart)
    assert [int(line.split()[2].split("/")[0]) for line in lines] == list(range(1, len(lines) + 1))
    assert len(lines) >= len(journaled(build)) - 1
    for line in lines:  # percent done, time left, the objective named with its unit
        assert "/5 (" in line and "%), generation " in line and " elapsed, about " in line and " left" in line
        assert "best stack_bytes " in line and " bytes" in line
    assert any(": ok, stack_bytes " in line for line in lines)
    at = next(index for index, line in enumerate(said) if line.startswith("ciq_build: tuning kern with CUDA "))
    first = said[at]  # the toolkit and the rule that chose it, said once and short
    assert "chosen by this build tree's CMAKE_CUDA_COMPILER" in first and first.count("CMAKE_CUDA_COMPILER") == 1
    assert len(first) <= 200 + len(str(find_toolchain().nvcc)), first
    assert first.endswith("; objectives: stack_bytes; architectures: 90a"), first  # what each candidate builds
    others = other_toolkits(find_toolchain().nvcc)
    if others:  # how to choose another, on a second line of its own
        assert said[at + 1].startswith("ciq_build: other toolkits here: ") and "-DCMAKE_CUDA_COMPILER=" in said[at + 1]
        assert len(said[at + 1]) <= 160 + sum(len(str(nvcc)) for _, nvcc in others), said[at + 1]
    assert not any("-DCMAKE_CUDA_COMPILER=" in line for line in said[at + 2:at + 4])
    assert any(line.startswith("ciq_build: preparing ") and "scratch trees" in line for line in said)
    assert any(line.startswith("ciq_build: building and measuring the baseline (the compiler's defaults; its build "
                               "is stopped after 600 s;") for line in said)
    assert any(line.startswith("ciq_build: baseline: stack_bytes ") for line in said)
    assert any(line.startswith("ciq_build: rebuilding the winner") for line in said)  # the confirm step
    quiet = subprocess.run([sys.executable, "-m", "ciq_build", "tune", "kern", "-B", str(build), *SMALL_TUNE, "-q"],
                           capture_output=True, text=True, cwd=source)
    assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr  # -q: nothing but warnings (none here)


def screen(written: str) -> list[str]:
    """The lines a terminal shows after `written`: a carriage return goes back to the line's start, and what
    follows overwrites it (tqdm draws no other control sequence for one bar)."""
    lines: list[str] = []
    for row in written.replace("\r\n", "\n").split("\n"):
        shown = ""
        for part in row.split("\r"):
            shown = part + shown[len(part):]
        lines.append(shown.rstrip())
    return lines


@pytest.mark.slow
def test_on_a_terminal_the_bar_moves_at_each_evaluation_and_stays(kern_project: tuple[Path, Path]) -> None:
    import fcntl
    import os
    import pty
    import struct
    import termios

    source, build = kern_project
    master, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 200, 0, 0))  # 200 columns: no cut postfix
    tune = subprocess.Popen([sys.executable, "-m", "ciq_build", "tune", "kern", "-B", str(build), "--fresh",
                             *SMALL_TUNE], stdin=follower, stdout=follower, stderr=follower, cwd=source)
    os.close(follower)
    chunks = []
    while True:  # until the tune closes the terminal (EIO on Linux, b"" elsewhere)
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    assert tune.wait() == 0
    written = b"".join(chunks).decode()
    drawn = [int(n) for n in re.findall(r"\| (\d+)/5 evaluations", written)]
    finished = len(journaled(build)) - 1  # the baseline is not one of the search's
    # A draw at each evaluation as it finishes, not only at a generation's end (3 at a time).
    assert sorted(set(drawn)) == list(range(0, max(drawn) + 1)) and max(drawn) >= finished >= 3
    assert "about " in written and "best stack_bytes " in written and " bytes" in written
    # The final state stays on screen after the search (the summary follows it).
    bars = [line for line in screen(written) if " evaluations [" in line]
    assert bars and f"| {max(drawn)}/5 evaluations" in bars[-1], bars


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


def test_every_command_takes_quiet_and_verbose() -> None:
    from ciq_build.cli import build_parser

    parser = build_parser()
    needs = {"tune": ["kern"], "show": ["kern"], "verify": ["kern"], "report": ["kern"],
             "export": ["kern", "--csv", "-"], "sample-acfs": ["--out", "pool"], "list": []}
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    assert set(commands) == set(needs)  # a new command is added here, with -q and -v
    for name, args in needs.items():
        assert parser.parse_args([name, *args, "-q"]).quiet and not parser.parse_args([name, *args, "-q"]).verbose
        assert parser.parse_args([name, *args, "--verbose"]).verbose


def test_a_message_said_while_the_bar_is_drawn_gets_a_line_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    # A warning logged mid-search was written after the bar on the same line, and the next redraw overwrote it.
    terminal = io.StringIO()
    monkeypatch.setattr(sys, "stderr", terminal)
    configure_logging(0)  # the CLI's handler, on the stderr of the moment
    try:
        progress = TuneProgress(4, 1, parse_objectives(["registers"]), stream=sys.stderr, terminal=True)
        progress.update(1, evaluations=1, best=(41.0,), last=evaluated(1))
        logging.getLogger("ciq_build").warning("warning: said mid-search")
        progress.update(1, evaluations=2, best=(41.0,), last=evaluated(2))
        progress.close()
        logging.getLogger("ciq_build").info("said after the search")
    finally:
        reset_logging()
    shown = screen(terminal.getvalue())
    assert "ciq_build: warning: said mid-search" in shown and "ciq_build: said after the search" in shown, shown
    bars = [line for line in shown if " evaluations [" in line]
    assert len(bars) == 1 and "| 2/4 evaluations" in bars[0]  # one bar, below the message, left as it ended
    assert shown.index("ciq_build: warning: said mid-search") < shown.index(bars[0])
