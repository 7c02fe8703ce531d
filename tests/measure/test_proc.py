"""ciq_build.measure.proc, .processes, .stopping, .guard and .claim with real unruly processes
(tests/programs/unruly.py).

Each test runs the driver itself as a child process (`unruly.py drive`, which
calls proc.run and reports its own peak memory and the time the run took), so
that a runner that buffers without bound, waits without bound, or leaves
processes behind fails the test instead of hanging or exhausting pytest.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ciq_build.errors import BusyError
from ciq_build.measure import bench, claim, gpu_slots, proc, processes, protocol, stopping
from ciq_build.measure.bench import BenchSpec, run_once
from support import PROGRAMS, REPO_ROOT

UNRULY = PROGRAMS / "unruly.py"
PY = sys.executable


def unruly(*args: str) -> list[str]:
    return [PY, str(UNRULY), *args]


def drive(*args: str, timeout: float = 60) -> dict[str, str]:
    """Run `unruly.py drive ARGS` (proc.run in a fresh process); its report as a dict."""
    done = subprocess.run(unruly("drive", *args), capture_output=True, text=True, timeout=timeout, cwd=REPO_ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    report: dict[str, str] = {}
    for line in done.stdout.splitlines():
        if line.startswith("seconds="):
            report.update({key: value for key, value in (item.split("=", 1) for item in line.split())})
        elif "=" in line:
            key, value = line.split("=", 1)
            report[key] = value
    return report


def gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


def wait_gone(pid: int, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if gone(pid):
            return True
        time.sleep(0.02)
    return gone(pid)


def wait_for(path: Path, seconds: float = 20.0) -> int:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)
    return int(path.read_text())


def children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(entry.name))
            except (OSError, IndexError):
                pass
    return found


def kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


MIB = 1024  # the peak resident set (VmHWM) is in KiB


# -- output: streamed, capped, and said so ---------------------------------------------------


def test_endless_output_ends_at_the_timeout_in_bounded_memory() -> None:
    # Before: 3.4 GB resident, then MemoryError (here capped at 1 GiB of address space).
    report = drive("--rlimit-as", "1024", "3", *unruly("endless"))
    assert report["timed_out"] == "True" and report["describe"].startswith("timed out")
    assert float(report["seconds"]) < 3 + 2
    assert int(report["maxrss_kib"]) < 150 * MIB, report
    assert int(report["stdout_chars"]) <= proc.HEAD_BYTES + proc.MAX_OUTPUT_BYTES
    assert "output truncated" in report["notes"] and "bytes of stdout dropped" in report["notes"]


@pytest.mark.slow
def test_huge_output_keeps_its_end_in_bounded_memory() -> None:
    # 200 MiB of output, then the metric line (before: ~640 MB resident for this).
    report = drive("60", *unruly("big", "200"))
    assert report["timed_out"] == "False" and report["returncode"] == "0"
    assert int(report["maxrss_kib"]) < 150 * MIB, report
    assert report["last_line"] == "CIQ_METRIC time_ms=2.5"
    dropped = 200 * 1024 * 1024 + len("CIQ_METRIC time_ms=2.5\n") - int(report["stdout_chars"])
    assert f"output truncated: {dropped} bytes of stdout dropped" in report["notes"]


def test_an_endless_benchmark_is_a_timeout_that_says_its_output_was_cut() -> None:
    run = run_once(BenchSpec(Path(PY), (str(UNRULY), "endless", "stderr"), 1.0))
    assert run.cause == bench.BENCH_TIMEOUT
    assert "output truncated" in run.message and "bytes of stderr dropped" in run.message
    assert len(run.output_tail) < 20_000


def test_small_output_is_whole_and_stdin_reaches_the_process() -> None:
    result = proc.run([PY, "-c", "import sys; data = sys.stdin.read(); print(len(data)); print('é\\rb')"], 30,
                      stdin_text="x" * 300_000)
    assert result.ok and result.stdout == "300000\né\nb\n" and not result.truncated and not result.notes


# -- waits: bounded even when a child keeps the pipe open --------------------------------------


@pytest.mark.parametrize("new_session", ["no", "yes"])
def test_a_daemon_holding_the_output_does_not_hold_the_run(tmp_path: Path, new_session: str) -> None:
    # Before: "timed out" after the full timeout (same group), or hung for ever (setsid).
    pid_file = tmp_path / "daemon.pid"
    try:
        report = drive("20", *unruly("daemon_pipe", str(pid_file), new_session), timeout=60)
        assert report["timed_out"] == "False" and report["returncode"] == "0", report
        assert float(report["seconds"]) < proc.EXIT_GRACE + 2.5, report
        assert report["last_line"] == "CIQ_METRIC time_ms=1.5"
        assert "kept its output open" in report["notes"]
        assert wait_gone(int(pid_file.read_text())), "the daemon outlived the run"
    finally:
        if pid_file.exists():
            kill(int(pid_file.read_text()))


# -- nothing the driver started outlives it -----------------------------------------------------


@pytest.mark.parametrize("guarded", [True, False], ids=["guarded-driver", "plain-caller"])
def test_a_sigkilled_driver_leaves_no_process_behind(tmp_path: Path, guarded: bool) -> None:
    pid_file = tmp_path / "grandchild.pid"
    options = ["--guard"] if guarded else []
    driver = subprocess.Popen(unruly("drive", *options, "600", *unruly("setsid_grandchild", str(pid_file))),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=REPO_ROOT,
                              start_new_session=True)
    grandchild = benchmark = None
    try:
        grandchild = wait_for(pid_file)
        benchmark = next(pid for pid in children(driver.pid)
                         if b"setsid_grandchild" in Path(f"/proc/{pid}/cmdline").read_bytes() and pid != grandchild)
        driver.kill()  # SIGKILL: no exit handler of the driver runs
        driver.wait()
        # PR_SET_PDEATHSIG: the benchmark dies with the driver, guarded or not.
        assert wait_gone(benchmark), "the benchmark outlived its SIGKILLed driver"
        if guarded:
            # The watchdog finds the grandchild, in a session of its own, by its mark.
            assert wait_gone(grandchild), "a setsid grandchild outlived the SIGKILLed driver"
    finally:
        if driver.poll() is None:
            driver.kill()
        for pid in (benchmark, grandchild):
            if pid is not None:
                kill(pid)


def test_a_guarded_driver_reaps_and_kills_at_exit(tmp_path: Path) -> None:
    pid_file = tmp_path / "daemon.pid"
    # A daemon with its own session and no pipes: found by its mark, killed at the run's end.
    script = (
        "import sys; from ciq_build.measure import guard, proc; guard.guard_driver(); "
        f"r = proc.run({unruly('daemon_pipe', str(pid_file), 'yes')!r}, 20); "
        "print(r.returncode, r.lingered)"
    )
    done = subprocess.run([PY, "-c", script], capture_output=True, text=True, timeout=60, cwd=REPO_ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0", "True"]
    assert wait_gone(int(pid_file.read_text()))


# -- scratch trees: what a dead driver left running is killed before reuse --------------------------


def test_claim_tree_kills_what_a_dead_driver_left_in_the_tree(tmp_path: Path) -> None:
    root = tmp_path / "scratch"
    pid_file = tmp_path / "grandchild.pid"
    # No guard: as if the watchdog had died with the driver (a container kill, the OOM killer).
    driver = subprocess.Popen(unruly("drive", "--claim", str(root), "600", *unruly("setsid_grandchild", str(pid_file))),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=REPO_ROOT,
                              start_new_session=True)
    grandchild = None
    try:
        grandchild = wait_for(pid_file)
        owner = json.loads((root / claim.OWNER_FILE).read_text())
        assert owner["pid"] == driver.pid
        driver.kill()
        driver.wait()
        time.sleep(0.3)
        assert not gone(grandchild), "the scenario needs a leftover still working in the tree"
        done = claim.claim_tree(root)
        assert wait_gone(grandchild, 1.0)
        assert done and "killed 1 process" in done[0] and str(grandchild) in done[0]
        assert json.loads((root / claim.OWNER_FILE).read_text())["pid"] == os.getpid()
        assert claim.claim_tree(root) == []  # ours now: nothing to do
    finally:
        if driver.poll() is None:
            driver.kill()
        if grandchild is not None:
            kill(grandchild)


def test_claim_tree_refuses_a_tree_that_a_live_driver_or_a_stranger_uses(tmp_path: Path) -> None:
    root = tmp_path / "scratch"
    pid_file = tmp_path / "grandchild.pid"
    driver = subprocess.Popen(unruly("drive", "--claim", str(root), "600", *unruly("setsid_grandchild", str(pid_file))),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=REPO_ROOT,
                              start_new_session=True)
    stranger = None
    try:
        grandchild = wait_for(pid_file)
        with pytest.raises(BusyError, match=f"ciq_build process {driver.pid}, which is still running"):
            claim.claim_tree(root)
        assert not gone(grandchild)
        os.killpg(driver.pid, signal.SIGKILL)
        driver.wait()
        kill(grandchild)
        assert wait_gone(grandchild)
        # A process this tool did not start (no mark) working in the tree: named, not killed.
        stranger = subprocess.Popen(["sleep", "60"], cwd=root)
        with pytest.raises(BusyError, match=rf"pid {stranger.pid} \(sleep 60\) works in it"):
            claim.claim_tree(root)
        assert stranger.poll() is None
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
        if stranger is not None:
            stranger.kill()
            stranger.wait()


def test_claim_tree_waits_for_a_process_that_leaves_the_tree_within_moments(tmp_path: Path) -> None:
    # As a compile killed with its lost Ray worker's node: still in the tree, its mark unreadable, for a moment.
    root = tmp_path / "scratch"
    root.mkdir()
    leaving = subprocess.Popen(["sleep", "1"], cwd=root)
    try:
        assert claim.claim_tree(root) == []
        assert leaving.poll() is not None, "claimed while the process still worked in the tree"
    finally:
        leaving.kill()
        leaving.wait()


# -- the METRIC regex runs under a time limit --------------------------------------------------------


@pytest.mark.slow
def test_a_backtracking_metric_regex_fails_the_run_in_bounded_time() -> None:
    # In a child: before the limit, '(a+)+$' on a 30,000-character line never returns.
    script = (
        "import json, sys, time; from pathlib import Path; from ciq_build.measure.bench import BenchSpec, run_once; "
        "t = time.monotonic(); "
        f"r = run_once(BenchSpec(Path(sys.executable), ({str(UNRULY)!r}, 'catastrophic', '30000'), 20, "
        "metric_regex=r'(a+)+$')); "
        "print(json.dumps({'cause': r.cause, 'message': r.message, 'seconds': time.monotonic() - t}))"
    )
    done = subprocess.run([PY, "-c", script], capture_output=True, text=True, timeout=60, cwd=REPO_ROOT)
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout)
    assert outcome["cause"] == bench.BAD_METRIC
    assert "time limit" in outcome["message"] and "30001-character line" in outcome["message"]
    # Bounded, where it never returned: well under the 60 s this child is given, but not a few times the
    # regex's limit, which a busy machine overran (9.9 s against 6 s with a load of 12 on two cores).
    assert outcome["seconds"] < 40


def test_the_metric_regex_has_a_time_limit_for_the_whole_output_too(monkeypatch: pytest.MonkeyPatch) -> None:
    # 1 ms for 50,000 searches (20 ns each) runs out on any machine, however fast (they took 2.4 s on a
    # busy one here); with more time than a fast machine needs, no limit would be reached.
    monkeypatch.setattr(protocol, "METRIC_REGEX_TOTAL_SECONDS", 0.001)
    # From iteration 1: a time of 0 is a problem of its own, listed first when the first search ends in time.
    lines = "\n".join(f"iteration {i}: {i / 10:.1f} ms" for i in range(1, 50_001))
    parsed = protocol.parse_output(lines, r"iteration \d+: ([0-9.]+) ms")
    assert [p for p in parsed.problems if "0.001 s time limit for one output" in p], parsed.problems


def test_a_sane_metric_regex_still_reads_every_line() -> None:
    lines = "\n".join(f"iteration {i}: {i / 10:.1f} ms" for i in range(50_000))
    parsed = protocol.parse_output(lines, r"iteration \d+: ([0-9.]+) ms")
    assert parsed.metrics["time"] == pytest.approx(4999.9) and not parsed.problems


# -- stopping: an interrupted driver starts nothing more, in any thread ---------------------------

_BUSY = "import sys, time\nopen(sys.argv[1], 'a').close()\nend = time.monotonic() + 120\nwhile time.monotonic() < end: pass"


def _repeats(flag: Path, outcome: list[object]) -> None:
    """A worker thread's benchmark: two long CPU-busy runs, one after the other."""
    try:
        for repeat in range(2):
            proc.run([PY, "-c", _BUSY, f"{flag}-{repeat}"], 300)
        outcome.append("ran both")
    except stopping.Stopped as stopped:
        outcome.append(stopped)


@pytest.fixture
def stoppable():
    yield
    stopping.resume_starting()  # this test process goes on after its "interrupt"


def test_a_stop_kills_every_threads_run_and_starts_no_next_one(tmp_path: Path, stoppable: None) -> None:
    # What an interrupted tune did: kill_all_running killed the runs in flight, and each worker thread
    # started its next repeat, which the driver then waited for in full.
    outcomes: list[list[object]] = [[], []]
    threads = [threading.Thread(target=_repeats, args=(tmp_path / f"thread{i}", outcomes[i])) for i in range(2)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 120
    while not all((tmp_path / f"thread{i}-0").exists() for i in range(2)) and time.monotonic() < deadline:
        time.sleep(0.05)
    stopped = time.monotonic()
    processes.stop_all()
    for thread in threads:
        thread.join(timeout=60)
    assert time.monotonic() - stopped < 15  # the runs take 120 s each
    assert all(isinstance(outcome[0], stopping.Stopped) for outcome in outcomes), outcomes
    assert not any((tmp_path / f"thread{i}-1").exists() for i in range(2)), "a second run was started"
    with pytest.raises(stopping.Stopped):
        proc.run([PY, "-c", "pass"], 60)


def test_a_cancelled_scope_stops_its_threads_runs_and_gpu_waits_and_no_others(tmp_path: Path) -> None:
    slots = gpu_slots.GpuSlots()
    cancelled = threading.Event()
    outcome: list[object] = []

    def wait_for_the_gpu() -> None:
        with stopping.cancellable(cancelled):
            try:
                with slots.slot():
                    outcome.append("got the slot")
            except stopping.Stopped as stopped:
                outcome.append(stopped)

    with slots.slot():  # held: the thread waits
        waiter = threading.Thread(target=wait_for_the_gpu)
        waiter.start()
        time.sleep(0.3)
        cancelled.set()
        waiter.join(timeout=30)
        assert not waiter.is_alive(), "a waiter for the GPU was not woken by the cancel"
    assert len(outcome) == 1 and isinstance(outcome[0], stopping.Stopped)
    with stopping.cancellable(cancelled), pytest.raises(stopping.Stopped):
        proc.run([PY, "-c", "pass"], 60)
    assert proc.run([PY, "-c", "pass"], 60).ok  # outside the scope, runs go on
