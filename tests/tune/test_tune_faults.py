"""`python -m ciq_build tune` against real faults: real nvcc, CMake, Ninja and processes.

The project under tests/projects/faulty has a benchmark (a TEST DOUBLE for a
GPU benchmark: its "time" is computed on the host) that hangs, segfaults,
prints garbage, fails its check... on demand, and candidates that fail to
compile or hang the compiler. Every fault must be recorded with its cause and
the search must go on; a killed tune must resume without repeating work.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ciq_build.measure import proc
from support import REPO_ROOT, ensure_ok

pytestmark = pytest.mark.slow

FAULTY = REPO_ROOT / "tests" / "projects" / "faulty"

# MODE -> the cause the journal must record (see fake_bench.cu).
EXPECTED_CAUSES = {
    1: "bench_timeout",
    2: "bench_signal",
    3: "bad_metric",
    4: "check_failed",
    5: "bench_exit",
    6: "no_metric",
    7: "compile_failed",
    8: "compile_timeout",
    9: "bad_metric",
}


def _project(tmp_path: Path) -> Path:
    source = tmp_path / "faulty src"  # a space in every path on purpose
    shutil.copytree(FAULTY, source)
    return source


def _tune(source: Path, build: Path, *args: str, timeout: float = 600, **popen) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "ciq_build", "tune", "fake_bench", "-S", str(source), "-B", str(build), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=source, **popen)


def _evaluations(build: Path) -> list[dict]:
    journal = build / "ciq" / "journal" / "fake_bench.jsonl"
    records = [json.loads(line) for line in journal.read_text().splitlines() if line.strip()]
    return [r for r in records if r.get("kind") == "evaluation"]


def _processes_mentioning(directory: Path) -> list[str]:
    """Live processes whose command line names `directory` (a hung nvcc, a benchmark and its child)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if str(directory) in cmdline:
            found.append(cmdline)
    return found


def test_every_fault_is_recorded_with_its_cause_and_the_search_goes_on(tmp_path: Path) -> None:
    source = _project(tmp_path)
    os.mkfifo(source / "hang.fifo")  # MODE 8 includes it: the compiler blocks reading it
    build = tmp_path / "build"
    result = _tune(
        source, build, "--generations", "1", "--pool-size", "10", "--repeats", "2",
        "--cmake-arg=-DFAULTY_PARAMS=MODE=choice(0,1,2,3,4,5,6,7,8,9)", "--cmake-arg=-DFAULTY_TIMEOUT=4",
    )
    assert result.returncode == 0, result.stderr
    by_mode = {int(r["controls"]["defines"]["MODE"]): r for r in _evaluations(build) if r["controls"]["defines"]}
    assert sorted(by_mode) == list(range(10)), "every mode must have been evaluated exactly once"
    assert by_mode[0]["ok"] and by_mode[0]["scores"][0] == pytest.approx(1.5, abs=0.01)
    for mode, cause in EXPECTED_CAUSES.items():
        assert not by_mode[mode]["ok"], mode
        assert by_mode[mode]["cause"] == cause, (mode, by_mode[mode]["message"])
        assert by_mode[mode]["message"], "a failure must say why"
    # The summary counts failures by cause.
    assert "bad_metric 2" in result.stdout and "compile_timeout 1" in result.stdout
    assert "bench_signal 1" in result.stdout and "check_failed 1" in result.stdout
    # MODE 0 measures what the defaults measure: nothing to pin, and the command says so.
    assert "nothing pinned" in result.stdout
    assert not (source / "ciq" / "fake_bench.json").exists()
    # The hanging benchmark and the child it forked, and the hung compiler (which
    # ninja starts in a process group of its own), were all killed.
    assert _processes_mentioning(tmp_path) == []
    # The arguments with shell metacharacters reached the benchmark intact, through no shell.
    assert not list(build.rglob("pwned")) and not list(source.rglob("pwned"))


def test_runtime_winner_is_remeasured_pinned_and_applied_by_the_plain_build(tmp_path: Path) -> None:
    source = _project(tmp_path)
    build = tmp_path / "build"
    # X=0..2 (range's end included), all three in the one generation of 3 (a configuration is never
    # issued twice): each is faster than the defaults' X=3, X=1 the fastest, so a winner other than X=1,
    # or none, is the defect. Each candidate is a compile: the 8 of X=0..7 took most of the test's 33 s.
    result = _tune(source, build, "--generations", "1", "--pool-size", "3", "--repeats", "3",
                   "--cmake-arg=-DFAULTY_PARAMS=X=range(0,2)")
    assert result.returncode == 0, result.stderr
    assert "better beyond the noise" in result.stdout
    record = json.loads((source / "ciq" / "fake_bench.json").read_text())
    assert record["controls"]["defines"] == {"X": "1"}  # the unique optimum of the 3 configurations
    assert record["winner"]["scores"][0] < record["baseline"]["scores"][0]

    # The ordinary build picks the pin up: reconfigure, build, run.
    ensure_ok(proc.run(["cmake", str(build)], 600))
    ensure_ok(proc.run(["cmake", "--build", str(build)], 600))
    options = (build / "ciq" / "fake_bench.nvcc-options").read_text()
    assert "-DX=1" in options.split()
    commands = ensure_ok(proc.run(["ninja", "-C", str(build), "-t", "commands", "fake_bench"], 600)).stdout
    compile_line = next(line for line in commands.splitlines() if "fake_bench.cu" in line and " -c " in line)
    assert "--options-file=" in compile_line
    run = subprocess.run([str(build / "fake_bench"), "an argument with spaces", "$(touch pwned)", "|&<>"],
                         capture_output=True, text=True)
    assert "time_ms=1.0" in run.stdout

    verify = subprocess.run([sys.executable, "-m", "ciq_build", "verify", "fake_bench", "-B", str(build)],
                            capture_output=True, text=True)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    # -DCIQ_DISABLE=ON builds without the pin.
    ensure_ok(proc.run(["cmake", "-DCIQ_DISABLE=ON", str(build)], 600))
    assert "-DX=1" not in (build / "ciq" / "fake_bench.nvcc-options").read_text()


def test_a_killed_tune_resumes_without_repeating_any_finished_evaluation(tmp_path: Path) -> None:
    source = _project(tmp_path)
    # Two generations of 2 (each candidate a compile): the kill comes after the baseline and the first
    # generation, with the second's compiles in flight, so the resume replays a whole generation and
    # must carry on within one; each candidate more a generation costs 3 compiles more (generations of 3
    # cost ~3 s of CPU more and showed nothing more).
    args = ["--generations", "2", "--pool-size", "2", "--repeats", "1", "--no-pin", "--seed", "7",
            "--cmake-arg=-DFAULTY_PARAMS=X=range(0,40)"]

    reference_build = tmp_path / "reference"
    reference = _tune(source, reference_build, *args)
    assert reference.returncode == 0, reference.stderr
    uninterrupted = [json.dumps(r["controls"], sort_keys=True) for r in _evaluations(reference_build)]

    build = tmp_path / "build"
    command = [sys.executable, "-m", "ciq_build", "tune", "fake_bench", "-S", str(source), "-B", str(build), *args]
    victim = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    journal = build / "ciq" / "journal" / "fake_bench.jsonl"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if journal.is_file() and len(_evaluations(build)) >= 3:
            break
        time.sleep(0.2)
    os.killpg(victim.pid, signal.SIGKILL)  # the baseline and the first generation done: the second's compiles in flight
    victim.wait()
    before = [r["key"] for r in _evaluations(build)]
    assert 3 <= len(before) < len(uninterrupted)

    resumed = _tune(source, build, *args)
    assert resumed.returncode == 0, resumed.stderr
    assert f"resuming: {len(before)} finished evaluation(s)" in resumed.stderr
    after = [r["key"] for r in _evaluations(build)]
    assert after[: len(before)] == before
    assert len(after) == len(set(after)), "an evaluation finished before the kill was run again"
    # The resumed search continued exactly where the uninterrupted one went
    # (compared by controls: cache keys also name the build tree's benchmark).
    assert {json.dumps(r["controls"], sort_keys=True) for r in _evaluations(build)} == set(uninterrupted)


def test_sigterm_stops_a_tune_at_once_and_leaves_nothing_running(tmp_path: Path) -> None:
    source = _project(tmp_path)
    os.mkfifo(source / "hang.fifo")
    build = tmp_path / "build"
    # Every candidate hangs its compiler (MODE 8) for up to 60 s: SIGTERM must not wait for that.
    args = ["--generations", "3", "--pool-size", "4", "--jobs", "2", "--no-pin",
            "--cmake-arg=-DFAULTY_PARAMS=MODE=8;X=range(0,40)", "--cmake-arg=-DFAULTY_TIMEOUT=60"]
    tune = subprocess.Popen(
        [sys.executable, "-m", "ciq_build", "tune", "fake_bench", "-S", str(source), "-B", str(build), *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not any(
                "cc1plus" in p or "cudafe" in p or "gcc" in p for p in _processes_mentioning(source)):
            time.sleep(0.2)  # until candidates' compiles are hanging on the FIFO
        time.sleep(1)
        stopped = time.monotonic()
        tune.send_signal(signal.SIGTERM)
        _, stderr = tune.communicate(timeout=60)
        # Well under the compilers' 60 s hang (a busy machine can take seconds to stop a process tree).
        assert time.monotonic() - stopped < 40
        assert tune.returncode == 128 + signal.SIGTERM, stderr
        assert "resume" in stderr and "Traceback" not in stderr
        assert _processes_mentioning(tmp_path) == []
    finally:
        if tune.poll() is None:
            os.killpg(tune.pid, signal.SIGKILL)


@pytest.mark.parametrize("stopped", [True, False])
def test_a_stop_that_lands_in_an_at_fork_callback_prints_no_traceback(stopped: bool) -> None:
    # A signal's KeyboardInterrupt raised inside an at-fork callback (logging's, while a Popen with a
    # preexec_fn forks) cannot propagate: Python reports it as "Exception ignored" with a traceback.
    # Once the tune is stopping, that report is noise (the next run or wait raises Stopped); before, it
    # is kept.
    script = (
        "import os, sys\n"
        "from ciq_build import cli\n"
        "sys.unraisablehook = cli._quiet_when_stopped\n"
        f"if {stopped}: cli._stopped_by.append(15)\n"
        "def after():\n"
        "    raise KeyboardInterrupt\n"
        "os.register_at_fork(after_in_parent=after)\n"
        "pid = os.fork()\n"
        "if pid == 0: os._exit(0)\n"
        "os.waitpid(pid, 0)\n")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert ("Traceback" in result.stderr) is not stopped, result.stderr


def _pids_mentioning(directory: Path) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                cmdline = (entry / "cmdline").read_bytes()
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except (OSError, IndexError):
                continue
            if str(directory).encode() in cmdline and state not in ("Z", "X"):
                found.append(int(entry.name))
    return found


def test_a_sigkilled_tune_leaves_no_benchmark_running(tmp_path: Path) -> None:
    # MODE 1: the benchmark forks a child and both hang. Only the driver is
    # SIGKILLed (not its group): no exit code of it runs, yet nothing it started
    # may live on (before: the benchmark and its child ran for ever).
    source = _project(tmp_path)
    build = tmp_path / "build"
    args = ["--generations", "1", "--pool-size", "2", "--repeats", "1", "--no-pin",
            "--cmake-arg=-DFAULTY_PARAMS=MODE=choice(1)", "--cmake-arg=-DFAULTY_TIMEOUT=600"]
    tune = subprocess.Popen(
        [sys.executable, "-m", "ciq_build", "tune", "fake_bench", "-S", str(source), "-B", str(build), *args],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and len(
                [p for p in _processes_mentioning(tmp_path) if "an argument with spaces" in p]) < 2:
            time.sleep(0.2)  # until the hanging benchmark and its child run
        assert len([p for p in _processes_mentioning(tmp_path) if "an argument with spaces" in p]) >= 2
        tune.kill()
        tune.wait()
        deadline = time.monotonic() + 10
        while _pids_mentioning(tmp_path) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _processes_mentioning(tmp_path) == []
    finally:
        if tune.poll() is None:
            tune.kill()
        for pid in _pids_mentioning(tmp_path):
            os.kill(pid, signal.SIGKILL)


def test_a_second_tune_of_the_same_target_is_refused_while_the_first_runs(tmp_path: Path) -> None:
    source = _project(tmp_path)
    build = tmp_path / "build"
    args = ["--generations", "5", "--pool-size", "8", "--no-pin", "--cmake-arg=-DFAULTY_PARAMS=X=range(0,40)"]
    first = subprocess.Popen(
        [sys.executable, "-m", "ciq_build", "tune", "fake_bench", "-S", str(source), "-B", str(build), *args],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        # Held: the lock's file saying who holds it is written as the lock is taken, before the baseline's build
        # (waiting for the journal's first record left the first tune compiling while the second started).
        held = build / "ciq" / "locks" / "fake_bench.lock.info"
        deadline = time.monotonic() + 300
        while not held.is_file() and time.monotonic() < deadline:
            time.sleep(0.2)
        second = _tune(source, build, *args, timeout=120)
        assert second.returncode != 0
        assert "--wait" in second.stderr and "Traceback" not in second.stderr
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
