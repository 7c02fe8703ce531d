"""The processes a driver's runs started: found in the process table by their marks and trees, and killed.

Each run (ciq_build.measure.proc) marks its process with ``CIQ_BUILD_RUN``, which every process it starts
inherits: that is how processes in sessions of their own (ninja's children, daemons, re-parented orphans)
are found. The runs in flight are registered here, so that an interrupt can kill them all
(`kill_all_running`).
"""

from __future__ import annotations

import ctypes
import functools
import itertools
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeGuard, TypeVar

from ciq_build.measure.stopping import raise_if_stopped, stop_starting

# How long killing a tree may take before we give up on processes that do not die (stuck in the kernel).
KILL_PATIENCE = 5.0

ENV_MARK = "CIQ_BUILD_RUN"  # ':'-separated marks of every ciq_build run a process descends from
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


def die_with_parent() -> Callable[[], None] | None:
    """A `preexec_fn` that gives the child PR_SET_PDEATHSIG = SIGKILL (Linux; None elsewhere)."""
    return functools.partial(_die_with_parent, os.getpid()) if _PRCTL is not None else None


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
class ProcInfo:
    pid: int
    ppid: int
    pgid: int
    state: str
    start: int  # clock ticks after boot: (pid, start) names one process, whatever reuses the pid


def read_stat(pid: int) -> ProcInfo | None:
    try:
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY)
        try:
            data = os.read(fd, 4096)
        finally:
            os.close(fd)
        fields = data.rsplit(b")", 1)[1].split()
        return ProcInfo(pid, int(fields[1]), int(fields[2]), fields[0].decode(), int(fields[19]))
    except (OSError, IndexError, ValueError):
        return None


def process_table() -> dict[int, ProcInfo]:
    """Every process (Linux /proc; empty elsewhere)."""
    found: dict[int, ProcInfo] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for entry in entries:
        if entry.isdigit():
            info = read_stat(int(entry))
            if info is not None:
                found[info.pid] = info
    return found


def marks_of(pid: int) -> tuple[str, ...]:
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


def descendants(table: dict[int, ProcInfo], roots: Iterable[int]) -> set[int]:
    """Every process below `roots` in `table` (children, their children, ...), the roots not included."""
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


def alive(info: ProcInfo | None) -> TypeGuard[ProcInfo]:
    return info is not None and info.state not in ("Z", "X")


def marked_with(table: dict[int, ProcInfo], wanted: Callable[[str], bool], since: int = 0) -> set[int]:
    """Live processes with a mark that `wanted` accepts, among those started at or after `since`."""
    return {pid for pid, info in table.items()
            if info.start >= since and alive(info) and any(wanted(m) for m in marks_of(pid))}


def kill_until_gone(select: Callable[[dict[int, ProcInfo]], set[int]], patience: float = KILL_PATIENCE
                     ) -> list[ProcInfo]:
    """SIGKILL what `select` picks from the process table, again and again, until it picks nothing.

    Rescanning catches what the victims forked between a scan and their kill.
    Returns the processes killed.
    """
    killed: dict[tuple[int, int], ProcInfo] = {}
    protected = {os.getpid(), *spared()}
    end = time.monotonic() + patience
    pause = 0.0
    while True:
        table = process_table()
        victims = {pid for pid in select(table) if alive(table.get(pid)) and pid not in protected}
        # Whatever a victim started goes with it, mark or no mark.
        victims |= {pid for pid in descendants(table, victims) if alive(table.get(pid)) and pid not in protected}
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


_spared: dict[int, frozenset[int]] = {}  # a driver's pid -> the processes it never kills (its watchdog)


def spare(pids: Iterable[int]) -> None:
    """Never kill `pids` from this process (a driver's watchdog, ciq_build.measure.guard)."""
    _spared[os.getpid()] = frozenset(pids)


def spared() -> set[int]:
    """The processes this process never kills (none in a forked child: its parent's watchdog is not its own)."""
    return set(_spared.get(os.getpid(), ()))


# -- processes re-parented to us (as a subreaper) --------------------------------------------

_leaders: set[int] = set()  # the pids of our own Popen children: never reaped here
_leaders_lock = threading.Lock()


def _reap_orphans(killed: Iterable[ProcInfo]) -> None:
    """Reap killed orphans that were re-parented to this process (a subreaper must)."""
    me = os.getpid()
    pending = list(killed)
    end = time.monotonic() + 1.0
    while pending and time.monotonic() < end:
        left = []
        for info in pending:
            now = read_stat(info.pid)
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


# -- the runs in flight ---------------------------------------------------------------------


_driver_lock = threading.Lock()
_driver: tuple[int, str] | None = None  # (pid, token) of this process as a driver
_run_numbers = itertools.count(1)


def new_mark() -> str:
    """The mark of a new run of this driver: '<token>.<n>'."""
    return f"{driver_token()}.{next(_run_numbers)}"


def driver_token() -> str:
    """This process's mark prefix: every run it starts is marked '<token>.<n>'."""
    global _driver
    pid = os.getpid()
    with _driver_lock:
        if _driver is None or _driver[0] != pid:  # a forked child is a driver of its own
            _driver = (pid, f"{pid}-{secrets.token_hex(6)}")
        return _driver[1]


def of_driver(token: str) -> Callable[[str], bool]:
    """Whether a mark is of the driver whose token is `token` (its own, or one of its runs')."""
    return lambda mark: mark == token or mark.startswith(token + ".")


@dataclass
class Running:
    """A process run() (or started()) is waiting on, for kill_all_running."""

    pid: int
    mark: str
    since: int = 0  # the leader's start: what carries its mark started later
    lock: threading.Lock = field(default_factory=threading.Lock)
    reaped: bool = False  # after this, the pid (and its group) may belong to someone else

    def kill(self) -> list[ProcInfo]:
        with self.lock:
            group = None if self.reaped else self.pid
            tree = () if self.reaped else (self.pid,)

            def select(table: dict[int, ProcInfo]) -> set[int]:
                found = marked_with(table, lambda m: m == self.mark, self.since)
                found |= {pid for pid, info in table.items() if group is not None and info.pgid == group}
                return found | set(tree) | descendants(table, tree)

            if group is not None:
                try:
                    os.killpg(group, signal.SIGKILL)  # also where /proc cannot be read
                except (ProcessLookupError, PermissionError):
                    pass
            return kill_until_gone(select)


_running: dict[int, Running] = {}
_running_lock = threading.Lock()


def kill_all_running() -> None:
    """Kill every process tree run() is currently waiting on (interrupt handling)."""
    with _running_lock:
        runs = list(_running.values())
    for one in runs:
        one.kill()


def stop_all() -> None:
    """An interrupt: nothing more starts in this process (`stop_starting`), and what runs is killed."""
    stop_starting()
    kill_all_running()


Popen = TypeVar("Popen", bound="subprocess.Popen[Any]")


def register(popen: Callable[[], Popen], mark: str, what: str) -> tuple[Popen, Running]:
    """Start a process with `popen` and register it as running, so that `kill_all_running` kills it.

    Checked and registered under the lock that kill_all_running takes: a run that an interrupt's kill does
    not see has not started, and then it sees the stop (Stopped, naming `what`). `popen`'s OSError passes.
    """
    with _leaders_lock, _running_lock:  # registered before a reaper could see it exit
        raise_if_stopped(what)
        process = popen()
        _leaders.add(process.pid)
        leader = read_stat(process.pid)
        one = Running(process.pid, mark, leader.start if leader is not None else 0)
        _running[process.pid] = one
    return process, one


def unregister(one: Running, wait: Callable[[], None] = lambda: None) -> None:
    """`one` has ended: `wait` reaps it (under its lock), and from then on its pid may be someone else's."""
    with one.lock:
        wait()
        one.reaped = True
    with _leaders_lock:
        _leaders.discard(one.pid)
    with _running_lock:
        _running.pop(one.pid, None)
