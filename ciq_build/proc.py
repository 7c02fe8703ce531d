"""Running one subprocess safely: an argument list, a timeout, its own process group.

Compilers and benchmarks hang and fork children; on timeout the whole process
group is killed so nothing is left behind holding the GPU or a build lock.
Nothing here ever goes through a shell.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

# Output beyond this is cut (tail kept): a runaway benchmark must not exhaust memory.
MAX_OUTPUT_CHARS = 4_000_000

# The processes run() is waiting on, in any thread: on Ctrl-C or SIGTERM the
# main thread kills them all, so worker threads return at once instead of
# waiting for a compile or benchmark to finish (or time out).
_running: set[int] = set()
_running_lock = threading.Lock()


def kill_all_running() -> None:
    """Kill every process tree run() is currently waiting on (interrupt handling)."""
    with _running_lock:
        pids = list(_running)
    for pid in pids:
        _kill_tree(pid)


@dataclass(frozen=True)
class ProcResult:
    """What one finished (or killed) process did."""

    args: tuple[str, ...]
    returncode: int | None  # None when killed for the timeout
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False

    @property
    def signal(self) -> int | None:
        """The signal that ended the process, if one did (and not our timeout kill)."""
        if self.returncode is not None and self.returncode < 0:
            return -self.returncode
        return None

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    def describe(self) -> str:
        """One line saying how the process ended, for error messages and journals."""
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
        """The last lines of stdout and stderr, indented, for error messages."""
        text = (self.stdout + ("\n" if self.stdout and self.stderr else "") + self.stderr).strip()
        tail = text.splitlines()[-lines:]
        return "\n".join("    " + line for line in tail)


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _descendants(pid: int) -> list[int]:
    """Every live descendant of `pid` (Linux /proc; empty elsewhere).

    Needed beyond the process group: ninja starts each command in a process
    group of its own, so a hung nvcc under `cmake --build` escapes killpg.
    """
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
    found, stack = [], [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def _kill_tree(pid: int) -> None:
    """SIGKILL the process, its group, and every descendant with their groups."""
    tree = _descendants(pid)
    _kill_group(pid)
    for child in tree:
        try:
            os.kill(child, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            _kill_group(os.getpgid(child))
        except (ProcessLookupError, PermissionError):
            pass


def run(
    args: Sequence[str | os.PathLike[str]],
    timeout: float,
    *,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    stdin_text: str | None = None,
) -> ProcResult:
    """Run `args` (no shell) in a new process group; kill the group after `timeout` seconds."""
    argv = tuple(str(a) for a in args)
    started = time.monotonic()
    try:
        process = subprocess.Popen(
            argv,
            cwd=Path(cwd) if cwd is not None else None,
            env=dict(env) if env is not None else None,
            stdin=subprocess.PIPE if stdin_text is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            start_new_session=True,  # own process group: killpg reaches its children too
        )
    except OSError as exc:
        return ProcResult(argv, 127, "", f"cannot start {argv[0]}: {exc}", time.monotonic() - started)
    with _running_lock:
        _running.add(process.pid)
    try:
        stdout, stderr = process.communicate(stdin_text, timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        _kill_tree(process.pid)
        stdout, stderr = process.communicate()
        timed_out = True
    except BaseException:
        # KeyboardInterrupt and friends: never leave the tree running behind us.
        _kill_tree(process.pid)
        process.wait()
        raise
    finally:
        with _running_lock:
            _running.discard(process.pid)
    # Children that outlived a finished leader (daemonised helpers) go too.
    _kill_group(process.pid)
    return ProcResult(
        argv,
        None if timed_out else process.returncode,
        (stdout or "")[-MAX_OUTPUT_CHARS:],
        (stderr or "")[-MAX_OUTPUT_CHARS:],
        time.monotonic() - started,
        timed_out,
    )
