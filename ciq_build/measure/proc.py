"""Running one subprocess safely, and making sure nothing it started outlives it.

`run` takes an argument list (never a shell) and a timeout, and:

* streams stdout and stderr as they come, keeping at most the first
  ``HEAD_BYTES`` and the last `max_output` bytes of each (the result says how
  many bytes were dropped): endless output costs time, never memory;
* hands each complete line of stdout, as it arrives, to the caller's `watch`
  (a benchmark's streamed samples), which may end the run early: the process
  and all it started are killed then, as after a timeout, and the result says
  ``stopped``;
* bounds every wait: the timeout covers the whole run, and once the main
  process has exited, output is read for ``EXIT_GRACE`` seconds more at most,
  even when a child it left behind keeps the pipe open;
* kills what the process started when it ends (timeout or not): its process
  group, its descendants, and every process that carries its mark, the
  ``CIQ_BUILD_RUN`` environment variable each run sets for its children. The
  mark is how processes in sessions of their own (ninja's children,
  daemons, re-parented orphans) are found;
* gives the direct child ``PR_SET_PDEATHSIG`` = SIGKILL (Linux): it dies
  with the thread that started it, even when the driver is SIGKILLed.

An interrupt stops runs, not only the ones in flight: after `stop_starting`
(what the CLI's signal handlers call) or inside a `cancellable` scope whose
event is set, `run` starts nothing and raises `Stopped`, and `wait_or_stop`
gives up a wait, so worker threads that were about to start a compile, a
benchmark's next repeat or a GPU slot's benchmark end at once instead of
running it to completion while the interrupted driver joins them. Waiting
on a run (and `wait_or_stop`) comes back to Python every ``STOP_POLL`` at
least: the kernel may hand a signal to any thread of the process, and
Python runs its handler in the main thread only, once that thread runs
Python code again.

A driver (the CLI) calls `guard_driver` once: it becomes a child subreaper
(orphans of its runs are re-parented to it, not to init, and reaped), kills
every process it started at exit, and starts a watchdog process that does the
same when the driver dies without running any exit code (SIGKILL, the OOM
killer). `claim_tree`, called before a scratch tree is reused, kills what a
driver that died before its watchdog could act left running in the tree, and
refuses a tree that a process of unknown origin still uses.
"""

from __future__ import annotations

import atexit
import ctypes
import functools
import itertools
import json
import os
import secrets
import selectors
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeGuard

import ciq_build
from ciq_build.errors import BusyError
from ciq_build.state.durable import atomic_write

# Kept per stream: the first HEAD_BYTES (the first compiler error) and the last
# MAX_OUTPUT_BYTES (a benchmark prints its result last). The rest is dropped as
# it arrives, so a run holds about HEAD_BYTES + 2 * the cap at most.
MAX_OUTPUT_BYTES = 4 * 1024 * 1024
MAX_OUTPUT_CHARS = MAX_OUTPUT_BYTES  # the old name
HEAD_BYTES = 64 * 1024
# After the main process exits, output is read this long at most: a child that
# inherited the pipe and lives on (a daemon) must not hold the run open.
EXIT_GRACE = 0.5
# How long killing a tree may take before we give up on processes that do not die
# (stuck in the kernel); and how long the output is still drained after a kill.
KILL_PATIENCE = 5.0
DRAIN_AFTER_KILL = 0.5

ENV_MARK = "CIQ_BUILD_RUN"  # ':'-separated marks of every ciq_build run a process descends from
OWNER_FILE = ".ciq-owner.json"  # who uses a scratch tree (claim_tree)

_READ_CHUNK = 64 * 1024
_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36


# -- Linux process controls ----------------------------------------------------------------


def _load_libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


_LIBC = _load_libc()
_PRCTL = getattr(_LIBC, "prctl", None)


def _die_with_parent(parent: int) -> None:
    """In the child, between fork and exec: SIGKILL when the thread that started us dies."""
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the driver died before the guard was set
        os._exit(127)


def become_subreaper() -> bool:
    """Make this process a child subreaper (Linux): orphans below it are re-parented to it."""
    if _PRCTL is None:
        return False
    return bool(_PRCTL(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)


# -- the process table -----------------------------------------------------------------


@dataclass(frozen=True)
class _Proc:
    pid: int
    ppid: int
    pgid: int
    state: str
    start: int  # clock ticks after boot: (pid, start) names one process, whatever reuses the pid


def _read_stat(pid: int) -> _Proc | None:
    try:
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY)
        try:
            data = os.read(fd, 4096)
        finally:
            os.close(fd)
        fields = data.rsplit(b")", 1)[1].split()
        return _Proc(pid, int(fields[1]), int(fields[2]), fields[0].decode(), int(fields[19]))
    except (OSError, IndexError, ValueError):
        return None


def _table() -> dict[int, _Proc]:
    """Every process (Linux /proc; empty elsewhere)."""
    found: dict[int, _Proc] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for entry in entries:
        if entry.isdigit():
            info = _read_stat(int(entry))
            if info is not None:
                found[info.pid] = info
    return found


def _marks(pid: int) -> tuple[str, ...]:
    """The ciq_build run marks in a process's environment (as it was exec'd)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            environ = handle.read(4 * 1024 * 1024)
    except OSError:
        return ()
    key = ENV_MARK.encode() + b"="
    for entry in environ.split(b"\0"):
        if entry.startswith(key):
            return tuple(m for m in entry[len(key):].decode("ascii", "replace").split(":") if m)
    return ()


def _descendants(table: dict[int, _Proc], roots: Iterable[int]) -> set[int]:
    children: dict[int, list[int]] = {}
    for info in table.values():
        children.setdefault(info.ppid, []).append(info.pid)
    found: set[int] = set()
    stack = list(roots)
    while stack:
        for child in children.get(stack.pop(), []):
            if child not in found:
                found.add(child)
                stack.append(child)
    return found


def _alive(info: _Proc | None) -> TypeGuard[_Proc]:
    return info is not None and info.state not in ("Z", "X")


def _marked_with(table: dict[int, _Proc], wanted: Callable[[str], bool], since: int = 0) -> set[int]:
    """Live processes with a mark that `wanted` accepts, among those started at or after `since`."""
    return {pid for pid, info in table.items()
            if info.start >= since and _alive(info) and any(wanted(m) for m in _marks(pid))}


def _kill_until_gone(select: Callable[[dict[int, _Proc]], set[int]], patience: float = KILL_PATIENCE
                     ) -> list[_Proc]:
    """SIGKILL what `select` picks from the process table, again and again, until it picks nothing.

    Rescanning catches what the victims forked between a scan and their kill.
    Returns the processes killed.
    """
    killed: dict[tuple[int, int], _Proc] = {}
    protected = {os.getpid(), *_watchdog_pids()}
    end = time.monotonic() + patience
    pause = 0.0
    while True:
        table = _table()
        victims = {pid for pid in select(table) if _alive(table.get(pid)) and pid not in protected}
        # Whatever a victim started goes with it, mark or no mark.
        victims |= {pid for pid in _descendants(table, victims) if _alive(table.get(pid)) and pid not in protected}
        if not victims or time.monotonic() > end:
            break
        for pid in victims:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                continue
            killed[(pid, table[pid].start)] = table[pid]
        time.sleep(pause)
        pause = min(0.05, pause + 0.005)
    _reap_orphans(killed.values())
    return list(killed.values())


# -- processes re-parented to us (as a subreaper) --------------------------------------------

_leaders: set[int] = set()  # the pids of our own Popen children: never reaped here
_leaders_lock = threading.Lock()


def _reap_orphans(killed: Iterable[_Proc]) -> None:
    """Reap killed orphans that were re-parented to this process (a subreaper must)."""
    me = os.getpid()
    pending = list(killed)
    end = time.monotonic() + 1.0
    while pending and time.monotonic() < end:
        left = []
        for info in pending:
            now = _read_stat(info.pid)
            if now is None or now.start != info.start or now.ppid != me:
                continue  # gone, reaped by another, or not ours to reap
            with _leaders_lock:
                if info.pid in _leaders:  # run()'s own children are reaped by their Popen
                    continue
                if now.state in ("Z", "X"):
                    try:
                        os.waitpid(info.pid, os.WNOHANG)
                    except ChildProcessError:
                        pass
                    continue
            left.append(info)
        pending = left
        if pending:
            time.sleep(0.01)


# -- one run ---------------------------------------------------------------------------


_driver_lock = threading.Lock()
_driver: tuple[int, str] | None = None  # (pid, token) of this process as a driver
_run_numbers = itertools.count(1)


def driver_token() -> str:
    """This process's mark prefix: every run it starts is marked '<token>.<n>'."""
    global _driver
    pid = os.getpid()
    with _driver_lock:
        if _driver is None or _driver[0] != pid:  # a forked child is a driver of its own
            _driver = (pid, f"{pid}-{secrets.token_hex(6)}")
        return _driver[1]


def _is_drivers(token: str) -> Callable[[str], bool]:
    return lambda mark: mark == token or mark.startswith(token + ".")


@dataclass
class _Run:
    """A process run() is waiting on, for kill_all_running."""

    pid: int
    mark: str
    since: int = 0  # the leader's start: what carries its mark started later
    lock: threading.Lock = field(default_factory=threading.Lock)
    reaped: bool = False  # after this, the pid (and its group) may belong to someone else

    def kill(self) -> list[_Proc]:
        with self.lock:
            group = None if self.reaped else self.pid
            tree = () if self.reaped else (self.pid,)

            def select(table: dict[int, _Proc]) -> set[int]:
                found = _marked_with(table, lambda m: m == self.mark, self.since)
                found |= {pid for pid, info in table.items() if group is not None and info.pgid == group}
                return found | set(tree) | _descendants(table, tree)

            if group is not None:
                try:
                    os.killpg(group, signal.SIGKILL)  # also where /proc cannot be read
                except (ProcessLookupError, PermissionError):
                    pass
            return _kill_until_gone(select)


_running: dict[int, _Run] = {}
_running_lock = threading.Lock()


def kill_all_running() -> None:
    """Kill every process tree run() is currently waiting on (interrupt handling)."""
    with _running_lock:
        runs = list(_running.values())
    for one in runs:
        one.kill()


# -- stopping: after an interrupt, nothing new starts ---------------------------------------


class Stopped(KeyboardInterrupt):
    """Raised by `run` (and `wait_or_stop`) instead of starting or waiting once runs were stopped.

    A KeyboardInterrupt: whatever a Ctrl-C unwinds, this unwinds too, in a worker thread as in the main one.
    """


_stopping = False  # set by stop_starting, for the rest of this process: a plain flag, safe in a signal handler
_scope = threading.local()  # .cancelled: the Event of the `cancellable` scope this thread runs in, if any
# How often a wait that `wait_or_stop` bounds looks at the stop: a stopped tune ends this much later at most.
STOP_POLL = 0.1


def stop_starting() -> None:
    """From now on, in this process, `run` starts nothing and raises Stopped (an interrupted driver).

    Only sets a flag: safe in a signal handler, which may interrupt the main thread while it holds a lock.
    """
    global _stopping
    _stopping = True


# Set by `interrupt`: the driver's killer thread (started by `guard_driver`) then kills what runs.
_interrupt_requested = threading.Event()


def interrupt() -> None:
    """What a signal handler that stops the driver calls: nothing more starts (`stop_starting`), and in a
    driver (`guard_driver`) its killer thread kills what runs at once, before the main thread unwinds.

    Not the kill itself: the handler may run while the main thread holds the lock the kill takes. And not
    left to the unwinding: it joins threads (a build beside the baseline's, the search's workers) whose
    runs nobody would kill until it is done (a stopped tune waited for a 120 s compile beside its baseline).
    """
    stop_starting()
    _interrupt_requested.set()


def _killer() -> None:
    _interrupt_requested.wait()
    kill_all_running()


def stop_all() -> None:
    """An interrupt: nothing more starts in this process (`stop_starting`), and what runs is killed."""
    stop_starting()
    kill_all_running()


def resume_starting() -> None:
    """Undo `stop_starting`, for a process that goes on after an interrupt (a test, a notebook)."""
    global _stopping
    _stopping = False


@contextmanager
def cancellable(cancelled: threading.Event) -> Iterator[None]:
    """Runs started in this thread inside the block raise Stopped once `cancelled` is set (a search loop
    ending: its worker threads must not start their candidates' next steps)."""
    outer = getattr(_scope, "cancelled", None)
    _scope.cancelled = cancelled
    try:
        yield
    finally:
        _scope.cancelled = outer


def stopped() -> bool:
    """Whether runs in this thread must not start: the process is stopping, or this thread's scope is."""
    cancelled: threading.Event | None = getattr(_scope, "cancelled", None)
    return _stopping or (cancelled is not None and cancelled.is_set())


def raise_if_stopped(what: str = "starting a process") -> None:
    if stopped():
        raise Stopped(f"stopped before {what}")


def wait_or_stop(attempt: Callable[[float], bool], what: str) -> None:
    """Call `attempt(timeout)` until it returns True (what was waited for came), raising Stopped when runs
    stop meanwhile: a blocking wait (a GPU slot, a lock) cannot be woken by an interrupt otherwise."""
    while True:
        raise_if_stopped(what)
        if attempt(STOP_POLL):
            return


@contextmanager
def started(popen: Callable[[], subprocess.Popen[str]]) -> Iterator[subprocess.Popen[str]]:
    """A process that code outside `run` starts with `popen`, in a session of its own (the ptxas-only path's
    steps: ciq_build.compiler.ptxas_path cannot import this module), held while it runs as `run` holds its
    own: an interrupt kills its session and what it started (`kill_all_running`), and none starts after one
    (Stopped). Not swept for leftovers when it ends, as `run` is (~35 ms a process): for processes that
    leave nothing behind."""
    with _leaders_lock, _running_lock:  # as in run(): a process the kill does not see has not started
        raise_if_stopped("starting a process")
        process = popen()
        _leaders.add(process.pid)
        leader = _read_stat(process.pid)
        one = _Run(process.pid, "", leader.start if leader is not None else 0)  # no mark: its session
        _running[process.pid] = one
    try:
        with process:  # its exit closes the pipes and waits for it
            yield process
    finally:
        with one.lock:
            one.reaped = True
        with _leaders_lock:
            _leaders.discard(process.pid)
        with _running_lock:
            _running.pop(process.pid, None)


@dataclass(frozen=True)
class ProcResult:
    """What one finished (or killed) process did."""

    args: tuple[str, ...]
    returncode: int | None  # None when killed for the timeout
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False
    stdout_dropped: int = 0  # bytes of stdout not kept (beyond the head and tail)
    stderr_dropped: int = 0
    lingered: bool = False  # a process it started kept its output open after it exited, and was killed
    head_kept: int = HEAD_BYTES  # how much of the start of each stream was kept, when one was truncated
    stopped: bool = False  # killed because the caller's `watch` asked for it (not a timeout, not a crash)

    @property
    def signal(self) -> int | None:
        """The signal that ended the process, if one did (and not our timeout kill)."""
        if self.returncode is not None and self.returncode < 0:
            return -self.returncode
        return None

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    @property
    def truncated(self) -> bool:
        return bool(self.stdout_dropped or self.stderr_dropped)

    @property
    def truncation(self) -> str:
        """'output truncated: N bytes dropped ...', or '' when everything was kept."""
        parts = [f"{count} bytes of {name}" for name, count in
                 (("stdout", self.stdout_dropped), ("stderr", self.stderr_dropped)) if count]
        if not parts:
            return ""
        kept = f"the first {self.head_kept // 1024} KiB and the end" if self.head_kept else "only the end"
        return f"output truncated: {' and '.join(parts)} dropped (kept {kept})"

    @property
    def notes(self) -> list[str]:
        """What the run's output cannot show: truncation, a process that held the output open."""
        notes = [self.truncation] if self.truncated else []
        if self.lingered:
            notes.append(f"a process it started kept its output open after it exited; it was killed after "
                         f"{EXIT_GRACE:g} s")
        return notes

    def describe(self) -> str:
        """One line saying how the process ended, for error messages and journals."""
        if self.stopped:
            return f"stopped by its caller after {self.seconds:.1f} s"
        if self.timed_out:
            return f"timed out after {self.seconds:.1f} s"
        if self.signal is not None:
            try:
                name = signal.Signals(self.signal).name
            except ValueError:
                name = f"signal {self.signal}"
            return f"killed by {name}"
        return f"exited with code {self.returncode}"

    def output_tail(self, lines: int = 30) -> str:
        """The last lines of stdout and stderr, indented, for error messages (and what was cut)."""
        text = (self.stdout + ("\n" if self.stdout and self.stderr else "") + self.stderr).strip()
        tail = text.splitlines()[-lines:] + [f"[{note}]" for note in self.notes]
        return "\n".join("    " + line for line in tail)


class _Capture:
    """One output stream, bounded: the first `head` bytes and the last `tail` bytes."""

    def __init__(self, head: int, tail: int) -> None:
        self.head_limit, self.tail_limit = head, tail
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, data: bytes) -> None:
        self.total += len(data)
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data
            if len(self.tail) > self.tail_limit + 4 * _READ_CHUNK:  # trim now and then, not per chunk
                del self.tail[: len(self.tail) - self.tail_limit]

    def text(self) -> tuple[str, int]:
        """The kept text and the number of bytes dropped. Cut lines at the gap are dropped whole."""
        if len(self.tail) > self.tail_limit:
            del self.tail[: len(self.tail) - self.tail_limit]
        if self.total == len(self.head) + len(self.tail):
            return _decode(bytes(self.head) + bytes(self.tail)), 0
        head = bytes(self.head[: self.head.rfind(b"\n") + 1])
        tail = bytes(self.tail[self.tail.find(b"\n") + 1:])
        return _decode(head + tail), self.total - len(head) - len(tail)


def _decode(data: bytes) -> str:
    """UTF-8 (bad bytes become U+FFFD) with universal newlines, as text-mode pipes read it."""
    return data.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")


def _exited(pid: int) -> bool:
    """Whether the child has exited, without reaping it (its pid and group stay ours)."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _child_env(env: Mapping[str, str] | None, mark: str) -> dict[str, str]:
    child = dict(os.environ if env is None else env)
    marks = [m for m in (os.environ.get(ENV_MARK, "") + ":" + child.get(ENV_MARK, "")).split(":") if m]
    child[ENV_MARK] = ":".join(dict.fromkeys([*marks, mark]))
    return child


def marked_env(what: str) -> dict[str, str]:
    """The environment for a long-lived child this driver starts itself (not through `run`), marked as one of
    its runs: the child, and all it starts, die with this driver (at exit, and by the watchdog on SIGKILL)."""
    return _child_env(None, f"{driver_token()}.{what}")


def run(
    args: Sequence[str | os.PathLike[str]],
    timeout: float,
    *,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    stdin_text: str | None = None,
    max_output: int = MAX_OUTPUT_BYTES,
    head_bytes: int = HEAD_BYTES,
    watch: Callable[[str], bool] | None = None,
) -> ProcResult:
    """Run `args` (no shell) in a session of its own; kill all it started when it ends or after `timeout` s.

    At most `max_output` bytes of the end of each of stdout and stderr are kept,
    plus their first `head_bytes` (0: the tail only). The run takes at most
    about `timeout` + EXIT_GRACE + the time to kill. `watch` is given each
    line of stdout as it comes (decoded, without its newline); when it returns
    True the run is killed there (``stopped`` in the result).
    """
    argv = tuple(str(a) for a in args)
    started = time.monotonic()
    deadline = started + timeout
    mark = f"{driver_token()}.{next(_run_numbers)}"
    try:
        # Checked and registered under the lock that kill_all_running takes: a run that an interrupt's
        # kill does not see has not started, and then it sees the stop.
        with _leaders_lock, _running_lock:  # registered before a reaper could see it exit
            raise_if_stopped(f"running {Path(argv[0]).name}")
            process = subprocess.Popen(
                argv,
                cwd=Path(cwd) if cwd is not None else None,
                env=_child_env(env, mark),
                stdin=subprocess.PIPE if stdin_text is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,  # own process group: killpg reaches its children too
                preexec_fn=functools.partial(_die_with_parent, os.getpid()) if _PRCTL is not None else None,
            )
            _leaders.add(process.pid)
            leader = _read_stat(process.pid)
            one = _Run(process.pid, mark, leader.start if leader is not None else 0)
            _running[process.pid] = one
    except OSError as exc:
        return ProcResult(argv, 127, "", f"cannot start {argv[0]}: {exc}", time.monotonic() - started)
    captures = {"stdout": _Capture(head_bytes, max_output), "stderr": _Capture(head_bytes, max_output)}
    timed_out = lingered = halted = False
    lines = _Lines(watch) if watch is not None else None
    try:
        timed_out, lingered, halted = _pump(process, captures, stdin_text, deadline, lines)
        one.kill()  # what it left behind goes too, whether it finished or not
        _drain(process, captures, time.monotonic() + DRAIN_AFTER_KILL)
    except BaseException:
        # KeyboardInterrupt and friends: never leave the tree running behind us.
        one.kill()
        raise
    finally:
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass
        with one.lock:
            try:
                process.wait(timeout=KILL_PATIENCE)
            except subprocess.TimeoutExpired:
                pass  # stuck in the kernel after SIGKILL; subprocess reaps it later
            one.reaped = True
        with _leaders_lock:
            _leaders.discard(process.pid)
        with _running_lock:
            _running.pop(process.pid, None)
    stdout, stdout_dropped = captures["stdout"].text()
    stderr, stderr_dropped = captures["stderr"].text()
    return ProcResult(
        argv,
        None if timed_out else process.returncode,
        stdout,
        stderr,
        time.monotonic() - started,
        timed_out,
        stdout_dropped,
        stderr_dropped,
        lingered,
        head_bytes,
        halted,
    )


class _Lines:
    """Splits a stream's chunks into lines for a `watch`, remembering whether it asked to stop."""

    def __init__(self, watch: Callable[[str], bool]) -> None:
        self.watch = watch
        self.partial = bytearray()
        self.stop = False

    def add(self, chunk: bytes) -> bool:
        """Feed a chunk; True once the watch asked to stop (the rest is not looked at)."""
        if self.stop:
            return True
        self.partial += chunk
        *complete, rest = self.partial.split(b"\n")
        # A line longer than the kept tail is no protocol line: drop it rather than hold it.
        self.partial = rest if len(rest) <= HEAD_BYTES else bytearray()
        for line in complete:
            if self.watch(_decode(bytes(line)).rstrip("\n")):
                self.stop = True
                return True
        return False


def _pump(process: subprocess.Popen[bytes], captures: dict[str, _Capture], stdin_text: str | None,
          deadline: float, lines: _Lines | None = None) -> tuple[bool, bool, bool]:
    """Read the output until the process exits and its pipes close, or `lines`' watch stops it;
    (timed out, lingered, stopped)."""
    selector = selectors.DefaultSelector()
    try:
        assert process.stdout is not None and process.stderr is not None
        selector.register(process.stdout.fileno(), selectors.EVENT_READ, "stdout")
        selector.register(process.stderr.fileno(), selectors.EVENT_READ, "stderr")
        pending = b""
        if process.stdin is not None:
            pending = (stdin_text or "").encode()
            os.set_blocking(process.stdin.fileno(), False)
            if pending:
                selector.register(process.stdin.fileno(), selectors.EVENT_WRITE, "stdin")
            else:
                process.stdin.close()
        pidfd = None
        try:
            pidfd = os.pidfd_open(process.pid)
            selector.register(pidfd, selectors.EVENT_READ, "exit")
        except (AttributeError, OSError):
            pass  # no pidfd (old kernel): poll for the exit instead
        open_streams = {"stdout", "stderr"}
        exited_at: float | None = None
        try:
            while True:
                now = time.monotonic()
                if exited_at is None and _exited(process.pid):
                    exited_at = now
                if exited_at is not None:  # it finished in time: no timeout, only the grace
                    if not open_streams:
                        return False, False, False
                    if now >= exited_at + EXIT_GRACE:
                        return False, True, False
                    wait = exited_at + EXIT_GRACE - now
                elif now >= deadline:
                    return True, False, False
                else:
                    # Back in Python every STOP_POLL at least: a signal the kernel gave another thread of
                    # this process runs its handler (the stop) only when the main thread runs Python again.
                    wait = min(deadline - now, STOP_POLL if pidfd is not None else 0.05)
                for key, _ in selector.select(max(wait, 0.0)):
                    if key.data == "exit":
                        selector.unregister(key.fd)
                    elif key.data == "stdin":
                        try:
                            written = os.write(key.fd, pending[:_READ_CHUNK])
                        except BlockingIOError:
                            continue
                        except OSError:  # it stopped reading (EPIPE)
                            written = len(pending)
                        pending = pending[written:]
                        if not pending:
                            selector.unregister(key.fd)
                            assert process.stdin is not None
                            process.stdin.close()
                    else:
                        chunk = os.read(key.fd, _READ_CHUNK)
                        if chunk:
                            captures[key.data].add(chunk)
                            if lines is not None and key.data == "stdout" and lines.add(chunk):
                                return False, False, True
                        else:
                            selector.unregister(key.fd)
                            open_streams.discard(key.data)
        finally:
            if pidfd is not None:
                os.close(pidfd)
    finally:
        selector.close()


def _drain(process: subprocess.Popen[bytes], captures: dict[str, _Capture], until: float) -> None:
    """After the kill: read what is still in the pipes, for a bounded time."""
    selector = selectors.DefaultSelector()
    try:
        for name, stream in (("stdout", process.stdout), ("stderr", process.stderr)):
            if stream is not None and not stream.closed:
                selector.register(stream.fileno(), selectors.EVENT_READ, name)
        while selector.get_map() and time.monotonic() < until:
            for key, _ in selector.select(max(until - time.monotonic(), 0.0)):
                chunk = os.read(key.fd, _READ_CHUNK)
                if chunk:
                    captures[key.data].add(chunk)
                else:
                    selector.unregister(key.fd)
    finally:
        selector.close()


# -- the driver: nothing it started survives it ---------------------------------------------

_guard_lock = threading.Lock()
_guard: dict[str, object] = {}  # pid -> this process, watchdog -> Popen, pipe -> write end


def _watchdog_pids() -> set[int]:
    watchdog = _guard.get("watchdog")
    if _guard.get("pid") == os.getpid() and isinstance(watchdog, subprocess.Popen):
        return {watchdog.pid}
    return set()


def guard_driver() -> None:
    """Make this process a driver whose runs cannot outlive it (idempotent; the CLI calls it).

    It becomes a child subreaper, kills everything it started at exit, and
    starts a watchdog that does the same if it dies without exiting (SIGKILL),
    and a thread that kills what runs as soon as it is `interrupt`ed.
    """
    with _guard_lock:
        if _guard.get("pid") == os.getpid():
            return
        _guard.clear()
        _guard["pid"] = os.getpid()
        become_subreaper()
        token = driver_token()
        read_end, write_end = os.pipe()  # the write end is ours alone (not inherited)
        package_parent = str(Path(ciq_build.__file__).resolve().parent.parent)  # where `import ciq_build` finds it
        try:
            watchdog = subprocess.Popen(
                [sys.executable, "-S", "-c",
                 "import sys; sys.path.insert(0, sys.argv[1]); from ciq_build.measure.proc import _watchdog; "
                 "_watchdog(sys.argv[2])", package_parent, token],
                stdin=read_end, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd="/",
                start_new_session=True,  # Ctrl-C's SIGINT to our group must not stop it
                env={k: v for k, v in os.environ.items() if k != ENV_MARK},
            )
            _guard["watchdog"] = watchdog
            _guard["pipe"] = write_end
        except OSError:
            os.close(write_end)
        finally:
            os.close(read_end)
        atexit.register(shutdown)
        threading.Thread(target=_killer, name="ciq-killer", daemon=True).start()


def shutdown() -> None:
    """Kill every process this driver started, wherever it is now (at exit; idempotent)."""
    if _guard.get("pid") != os.getpid():
        kill_all_running()
        return
    token = driver_token()
    me = os.getpid()
    kill_all_running()
    # Marked processes anywhere, and anything re-parented to us (a subreaper) with its tree.
    _kill_until_gone(lambda table: _marked_with(table, _is_drivers(token))
                     | {pid for pid, info in table.items() if info.ppid == me and pid not in _watchdog_pids()})
    pipe = _guard.pop("pipe", None)
    if isinstance(pipe, int):
        try:
            os.close(pipe)  # the watchdog sweeps once more and exits
        except OSError:
            pass


def _watchdog(token: str) -> None:
    """The watchdog process: wait for the driver to go (stdin closes), then kill what carries its mark."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        while sys.stdin.buffer.read(4096):
            pass
    except OSError:
        pass
    _kill_until_gone(lambda table: _marked_with(table, _is_drivers(token)))


# -- scratch trees: nothing left over from an earlier driver writes them -------------------


def _proc_start(pid: int) -> int | None:
    info = _read_stat(pid)
    return info.start if _alive(info) else None


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def _read_owner(path: Path) -> dict[str, object] | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, 65536)
    finally:
        os.close(fd)
    try:
        value = json.loads(data)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _users_of(root: Path) -> dict[int, str]:
    """Processes whose working directory, executable or an open file lies under `root`: pid -> what."""
    base = os.path.realpath(root)
    prefix = base.rstrip("/") + "/"

    def inside(link: str) -> bool:
        try:
            target = os.readlink(link)
        except OSError:
            return False
        return target == base or target.startswith(prefix)

    found: dict[int, str] = {}
    for pid, info in _table().items():
        if not _alive(info):
            continue
        where = f"/proc/{pid}"
        if inside(f"{where}/cwd"):
            found[pid] = "works in it"
        elif inside(f"{where}/exe"):
            found[pid] = "runs a program from it"
        else:
            try:
                fds = os.listdir(f"{where}/fd")
            except OSError:
                continue
            if any(inside(f"{where}/fd/{fd}") for fd in fds):
                found[pid] = "has a file in it open"
    return found


def _command(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()[:200]
    except OSError:
        return "?"
    return raw.replace(b"\0", b" ").decode("utf-8", "replace").strip() or "?"


def claim_tree(root: Path) -> list[str]:
    """Make the scratch tree `root` this driver's before reusing it; returns what was done, in words.

    Call it holding the target's lock. Processes that an earlier driver of this
    tree left running (found by its mark, recorded in the tree) are killed.
    A process of unknown origin still working in the tree is refused with
    BusyError: it may be writing the files this run is about to build.
    """
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    record = root / OWNER_FILE
    me, token = os.getpid(), driver_token()
    done: list[str] = []
    previous = _read_owner(record)
    if previous is not None and previous.get("token") != token:
        same_boot = previous.get("boot") == _boot_id() and previous.get("host") == socket.gethostname()
        pid, start = previous.get("pid"), previous.get("start")
        if same_boot and isinstance(pid, int) and pid != me and start is not None and _proc_start(pid) == start:
            raise BusyError(
                f"the scratch tree {root} belongs to ciq_build process {pid}, which is still running; "
                "wait for it to finish, or stop it, then run the same command again")
        old = previous.get("token")
        if same_boot and isinstance(old, str) and old:
            killed = _kill_until_gone(lambda table: _marked_with(table, _is_drivers(old)))
            if killed:
                done.append(f"killed {len(killed)} process(es) an earlier, stopped tune left running in {root} "
                            f"(pid {', '.join(str(p.pid) for p in killed[:5])}{', ...' if len(killed) > 5 else ''})")
    ours = _is_drivers(token)

    def strangers() -> dict[int, str]:
        return {pid: what for pid, what in _users_of(root).items()
                if pid != me and pid not in _watchdog_pids() and not any(ours(m) for m in _marks(pid))}

    # A process killed a moment ago (by the kill above, or the watchdog of a worker lost with its node) can
    # still hold the tree while it exits, its mark already unreadable: give such processes time to go.
    deadline = time.monotonic() + KILL_PATIENCE
    users = strangers()
    while users and time.monotonic() < deadline:
        time.sleep(0.1)
        users = strangers()
    if users:
        shown = "; ".join(f"pid {pid} ({_command(pid)[:80]}) {what}" for pid, what in list(users.items())[:3])
        raise BusyError(
            f"the scratch tree {root} is still in use by a process this tune did not start: {shown}. "
            f"Stop it (kill {' '.join(str(p) for p in users)}), or delete {root}, then run the same command again")
    atomic_write(record, json.dumps({"pid": me, "start": _proc_start(me), "token": token,
                                     "host": socket.gethostname(), "boot": _boot_id()}))
    return done
