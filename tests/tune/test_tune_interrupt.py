"""An interrupted `tune` (SIGINT, SIGTERM) ends within seconds in every phase, and keeps what finished.

Real nvcc, CMake, Ninja and processes. The long steps are TEST DOUBLES that take
(sleeping) far longer than a tune may take to stop (the tests/projects/faulty
benchmark, and busy.py as a configure step or a compile launcher): each test
waits until one has started (the file it writes), signals the driver, and asserts
that the driver ended well before the step would have, leaving nothing running,
its journal intact.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

import pytest

from support import REPO_ROOT

FAULTY = REPO_ROOT / "tests" / "projects" / "faulty"
_LIBC = ctypes.CDLL(None, use_errno=True)  # tgkill: a signal to one thread of a process (glibc 2.30+)

pytestmark = pytest.mark.slow

BUSY_SECONDS = 120  # how long each busy step would run: the tune must end long before
ENDED_WITHIN = 20  # seconds from the signal to the driver's exit, on a loaded two-core machine
DUMPED_WITHIN = 10  # a driver not gone by then prints every thread's stack (what it waits on) in this time
# The driver, with faulthandler on SIGUSR1 (all threads' stacks to its stderr), for that dump. SIGUSR1
# ignored beneath it: one that comes as the driver exits, after faulthandler let go, must not kill it.
DRIVER = ("import faulthandler, runpy, signal; signal.signal(signal.SIGUSR1, signal.SIG_IGN); "
          "faulthandler.register(signal.SIGUSR1, all_threads=True); "
          "runpy.run_module('ciq_build', run_name='__main__', alter_sys=True)")
REACHED_WITHIN = 900  # a phase must be reached in this time (compiles on a loaded machine)
STEPS = ("bench", "compile", "configure")  # what can be made busy: busy_flag(tmp_path, step) is its switch


def busy_flag(tmp_path: Path, step: str) -> Path:
    """The file whose presence makes `step` busy in a tune of `tmp_path` (set before the tune starts, or while)."""
    return tmp_path / f"busy-{step}"


class Tune:
    """A `tune` of tests/projects/faulty in a process of its own, its output read as it comes."""

    def __init__(self, tmp_path: Path, *args: str, busy_compiles: bool = False) -> None:
        self.tmp_path = tmp_path
        self.source = tmp_path / "faulty src"  # a space in every path on purpose
        if not self.source.exists():
            shutil.copytree(FAULTY, self.source)
        self.build = tmp_path / "build"
        # The switches of the busy steps: a step is busy while its file exists.
        self.bench_flag, self.compile_flag, self.configure_flag = (busy_flag(tmp_path, step) for step in STEPS)
        env = {**os.environ, "FAULTY_BUSY": str(self.bench_flag), "FAULTY_BUSY_CONFIGURE": str(self.configure_flag),
               "FAULTY_PYTHON": sys.executable}
        # busy_compiles: each compile through busy.py, as a launcher (set when the build tree is configured,
        # so by the first Tune of a tree). Without it, the scratch trees' ptxas-only path: faster.
        launcher = f"{sys.executable};{self.source / 'busy.py'};{self.compile_flag}"
        command = [sys.executable, "-c", DRIVER, "tune", "fake_bench", "-S", str(self.source), "-B",
                   str(self.build), *([f"--cmake-arg=-DCMAKE_CUDA_COMPILER_LAUNCHER={launcher}"] if busy_compiles
                                      else []), *args]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                        cwd=self.source, env=env, start_new_session=True)
        self.stdout: list[str] = []
        self.stderr: list[str] = []
        self.signalled: float | None = None  # when stop() sent its signal: the stderr lines say how long after
        self._readers = [threading.Thread(target=self._read, args=(stream, lines), daemon=True)
                         for stream, lines in ((self.process.stdout, self.stdout), (self.process.stderr, self.stderr))]
        for reader in self._readers:
            reader.start()

    def _read(self, stream: IO[str], lines: list[str]) -> None:
        for line in stream:
            if self.signalled is not None and stream is self.process.stderr:
                line = f"[+{time.monotonic() - self.signalled:.1f} s] {line}"  # when each line came, after the signal
            lines.append(line)

    def said(self, text: str) -> bool:
        return any(text in line for line in self.stderr)

    def output(self) -> str:
        return "".join(self.stdout) + "".join(self.stderr)

    def wait_until(self, reached: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + REACHED_WITHIN
        while not reached():
            assert self.process.poll() is None, f"the tune ended before {what}:\n{self.output()}"
            assert time.monotonic() < deadline, f"the tune did not reach {what}:\n{self.output()}"
            time.sleep(0.2)

    def started(self, flag: Path) -> list[Path]:
        return sorted(flag.parent.glob(flag.name + ".started-*"))

    def benchmarking(self, flag: Path) -> set[str]:
        """The scratch trees (worker-N) whose busy benchmark runs now, from the processes `started` names."""
        trees = set()
        for note in self.started(flag):
            try:
                program = Path(os.readlink(f"/proc/{note.name.rsplit('-', 1)[1]}/exe"))
            except OSError:
                continue  # ended (or not a process of this tune's)
            trees |= {part for part in program.parts if part.startswith("worker-")}
        return trees

    def stop(self, signum: int, *, to_a_thread: bool = False) -> float:
        """Signal the driver alone (its children run in sessions of their own); the seconds it took to end.

        `to_a_thread`: to one of its threads other than the main one. The kernel may deliver a signal sent
        to a process to any of its threads (a thread that forks as it comes takes it), and Python runs the
        handler in the main thread only, when that thread next runs Python: a main thread blocked in one
        long wait hears of it only when the wait ends.
        """
        thread = self._other_thread() if to_a_thread else None
        self.signalled = signalled = time.monotonic()
        if thread is None:
            self.process.send_signal(signum)
        elif _LIBC.tgkill(self.process.pid, thread, signum) != 0:
            raise OSError(ctypes.get_errno(), f"tgkill of thread {thread} of the driver failed")
        try:
            self.process.wait(timeout=ENDED_WITHIN)
            ended = time.monotonic() - signalled
        except subprocess.TimeoutExpired:
            ended = time.monotonic() - signalled  # too late: the assertion on the time fails
            self.process.send_signal(signal.SIGUSR1)  # every thread's stack, in the output the failure shows
            try:
                self.process.wait(timeout=DUMPED_WITHIN)
            except subprocess.TimeoutExpired:
                pass
        self.kill()
        self._close()
        where = f" to thread {thread}" if thread is not None else ""
        print(f"ended {ended:.1f} s after {signal.Signals(signum).name}{where}")  # the figure, with pytest -s
        return ended

    def _other_thread(self) -> int:
        """The id of one of the driver's threads other than its main one (the newest: a worker's, if any)."""
        def others() -> list[int]:
            try:
                return sorted(int(t) for t in os.listdir(f"/proc/{self.process.pid}/task") if int(t) != self.process.pid)
            except OSError:
                return []
        self.wait_until(lambda: bool(others()), "a thread beside the main one")
        return others()[-1]

    def finish(self) -> int:
        self.process.wait(timeout=REACHED_WITHIN)
        self._close()
        return self.process.returncode

    def _close(self) -> None:
        for reader in self._readers:
            reader.join(timeout=10)
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()

    def kill(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        self._close()


def _live_processes_mentioning(directory: Path) -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if str(directory) in cmdline and state not in ("Z", "X"):
            found.append(cmdline)
    return found


def _journal(tune: Tune) -> list[dict]:
    """Every line of the journal, each of which must be whole JSON."""
    journal = tune.build / "ciq" / "journal" / "fake_bench.jsonl"
    if not journal.exists():
        return []
    return [json.loads(line) for line in journal.read_text().splitlines() if line.strip()]


def _evaluations(tune: Tune) -> list[dict]:
    return [r for r in _journal(tune) if r.get("kind") == "evaluation"]


def _assert_stopped(tune: Tune, signum: int, seconds: float) -> None:
    output = tune.output()
    assert seconds < ENDED_WITHIN, f"the tune took {seconds:.1f} s to end after {signum!r}:\n{output}"
    assert tune.process.returncode == 128 + signum, output
    assert "run the same command to resume" in output and "Traceback" not in output, output
    deadline = time.monotonic() + 10  # SIGKILLed children may take a moment to be gone from /proc
    while _live_processes_mentioning(tune.tmp_path) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _live_processes_mentioning(tune.tmp_path) == []
    _journal(tune)  # whole: every line parses


def _named(value: object) -> str:
    if isinstance(value, signal.Signals):
        return value.name
    return f"{value}-gpus" if isinstance(value, int) else str(value)


def _ids(value: object) -> str:
    if isinstance(value, bool):
        return "to-a-thread" if value else "to-the-process"
    return _named(value)


def _switch_on(flag: Path, candidates_only: bool = False) -> None:
    flag.write_text(f"{BUSY_SECONDS}{' candidates' if candidates_only else ''}\n")


# --timeout: no benchmark run is cut short by its timeout, only by the stop.
SEARCH = ["--generations", "1", "--pool-size", "6", "--no-pin", "--seed", "3", "--timeout", "600",
          "--cmake-arg=-DFAULTY_PARAMS=X=range(0,40)"]


@pytest.mark.parametrize(("gpus", "step", "signum", "to_a_thread"), [
    # The case seen: --jobs 2 --repeats 2 and long benchmarks. Each GPU runs a benchmark, and
    # the other workers (one more per GPU than --jobs) build their candidates, then wait for a GPU. The
    # signal to another thread than the main one: the main thread, waiting for the candidates, is not woken.
    (1, "bench", signal.SIGINT, True),
    (2, "bench", signal.SIGTERM, False),
    # --jobs 2 compiles at once, the third worker waiting for its turn to compile.
    (1, "compile", signal.SIGTERM, False),
], ids=_ids)
def test_a_search_with_several_candidates_in_flight_stops_at_once_and_resumes(tmp_path: Path, gpus: int, step: str,
                                                                               signum: int, to_a_thread: bool) -> None:
    jobs = 2
    args = [*SEARCH, "--jobs", str(jobs), "--repeats", "2", "--gpus", ",".join(str(g) for g in range(gpus))]
    if step == "compile":
        # Candidates' compiles busy from the start (the baseline's not): switched on after the baseline's end,
        # on a loaded machine most of the 6 had compiled before the switch, and one busy compile at a time
        # held the test for its whole 120 s.
        _switch_on(busy_flag(tmp_path, "compile"), candidates_only=True)
    tune = Tune(tmp_path, *args, busy_compiles=step == "compile")
    flag = tune.bench_flag if step == "bench" else tune.compile_flag
    try:
        tune.wait_until(lambda: any(not e["controls"]["defines"] for e in _evaluations(tune)), "the baseline's end")
        since = time.time()  # the candidates are built after this
        if step == "bench":
            _switch_on(flag)

        def every_worker_busy() -> bool:
            if step == "compile":  # --jobs compiles at once
                return len(tune.started(flag)) >= jobs
            # Each GPU's benchmark runs, each other worker waits for a GPU with a candidate built. A candidate
            # built beside the baseline's runs (ahead of the search, before `since`) counts once its benchmark
            # runs: counted by build time alone, it held the test for whole busy runs (157 s for 2 GPUs).
            scratch = tune.build / "ciq" / "scratch" / "fake_bench"
            built = {b.relative_to(scratch).parts[0] for b in scratch.glob("worker-*/**/fake_bench")
                     if b.is_file() and b.stat().st_mtime > since}
            running = tune.benchmarking(flag)
            return len(running) >= gpus and len(built | running) >= jobs + gpus

        tune.wait_until(every_worker_busy, f"every worker busy ({step})")
        seconds = tune.stop(signum, to_a_thread=to_a_thread)
    finally:
        tune.kill()
    _assert_stopped(tune, signum, seconds)
    finished = len(_evaluations(tune))
    assert finished >= 1  # the baseline at least

    flag.unlink()
    # Resumed with a budget of one evaluation (the journal's header names the budget: "another search",
    # whose measurements are reused): the search's one candidate is taken from the journal where the stop
    # journaled it, else evaluated (which, depends on which in-flight candidates finished before the stop: an
    # assertion of "one more" failed where the first had), nothing is evaluated twice, and the tune ends well.
    # (The same command ran the rest of the search, up to 6 candidates more, which showed nothing more: a
    # killed tune resumed to its end with the same command is tests/tune/test_tune_faults.py's.)
    resumed = Tune(tmp_path, *args, "--max-evaluations", "1", busy_compiles=step == "compile")
    assert resumed.finish() == 0, resumed.output()
    assert resumed.said(f"resuming: {finished} finished evaluation(s)"), resumed.output()
    journaled = [json.dumps(e["controls"], sort_keys=True) for e in _evaluations(resumed)]
    assert len(set(journaled)) == len(journaled), resumed.output()  # nothing journaled twice
    taken = re.search(r"evaluations: 1 \((\d) run, (\d) from the journal\)", resumed.output())
    assert taken is not None and len(journaled) == finished + int(taken.group(1)), resumed.output()


@pytest.mark.parametrize(("step", "signum", "to_a_thread"), [
    ("configure", signal.SIGTERM, False),
    # To another thread than the main one, which runs the baseline's build (and a PARAMS probe builds beside it).
    ("compile", signal.SIGINT, True),
    ("bench", signal.SIGTERM, False),
], ids=_ids)
def test_a_tune_stops_at_once_before_its_search(tmp_path: Path, step: str, signum: int, to_a_thread: bool) -> None:
    # Busy from the start: the first configure, the baseline's build, the baseline's runs.
    flag = tmp_path / f"busy-{step}"
    _switch_on(flag)
    tune = Tune(tmp_path, *SEARCH, "--repeats", "2", busy_compiles=step == "compile")
    try:
        tune.wait_until(lambda: bool(tune.started(flag)), f"the first busy {step} step")
        seconds = tune.stop(signum, to_a_thread=to_a_thread)
    finally:
        tune.kill()
    _assert_stopped(tune, signum, seconds)


def test_a_tune_stops_at_once_while_it_confirms_its_winner(tmp_path: Path) -> None:
    # A first tune measures everything; each later one finds it all in the journal and goes on to confirm
    # the winner (X=1, better beyond the noise): drop its no-op controls (each a rebuild, beside the
    # winner's and the baseline's rebuilds), re-measure it against the baseline, then pin it. One build
    # tree for both phases (a first tune of its own for each took ~100 s more on two loaded cores): a
    # stop keeps the journal as it was, so the second stopped tune confirms the same winner again.
    args = ["--generations", "1", "--pool-size", "4", "--repeats", "2", "--seed", "3", "--timeout", "600",
            "--cmake-arg=-DFAULTY_PARAMS=X=range(0,3)"]
    first = Tune(tmp_path, *args, "--no-pin", busy_compiles=True)  # busy.py only runs the compile till switched on
    assert first.finish() == 0, first.output()
    measured = len(_evaluations(first))

    _switch_on(first.bench_flag)
    tune = Tune(tmp_path, *args)
    try:
        tune.wait_until(lambda: bool(tune.started(tune.bench_flag)), "the re-measure")
        assert tune.said("re-measuring the winner")
        seconds = tune.stop(signal.SIGINT)
    finally:
        tune.kill()
    _assert_stopped(tune, signal.SIGINT, seconds)
    assert len(_evaluations(tune)) == measured  # nothing lost, nothing half-written
    assert not (tune.source / "ciq" / "fake_bench.json").exists()

    tune.bench_flag.unlink()
    tune = Tune(tmp_path, *args)
    try:
        tune.wait_until(lambda: tune.said("minimizing the pin"), "the minimal pin")
        _switch_on(tune.compile_flag)  # the next compiles are its rebuilds, the winner's and the baseline's
        tune.wait_until(lambda: bool(tune.started(tune.compile_flag)), "the minimal pin's rebuilds")
        assert not tune.said("re-measuring the winner")
        seconds = tune.stop(signal.SIGTERM)
    finally:
        tune.kill()
    _assert_stopped(tune, signal.SIGTERM, seconds)
    assert len(_evaluations(tune)) == measured
    assert not (tune.source / "ciq" / "fake_bench.json").exists()


def test_a_stopped_fresh_tune_says_to_resume_without_fresh(tmp_path: Path) -> None:
    # "Run the same command to resume" was said to a `tune --fresh` too, whose same command starts over.
    flag = tmp_path / "busy-configure"
    _switch_on(flag)
    tune = Tune(tmp_path, *SEARCH, "--fresh")
    try:
        tune.wait_until(lambda: bool(tune.started(flag)), "the first busy configure step")
        tune.stop(signal.SIGINT)
    finally:
        tune.kill()
    output = tune.output()
    assert tune.process.returncode == 128 + signal.SIGINT, output
    assert "run the same command without --fresh to resume" in output and "Traceback" not in output, output
