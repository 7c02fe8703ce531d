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

A run is registered while it runs (ciq_build.measure.processes: an interrupt kills it), starts nothing once
runs are stopped (ciq_build.measure.stopping: it raises `Stopped`), and a driver's runs die with it
(ciq_build.measure.guard).
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ciq_build.measure import processes, stopping

# Kept per stream: the first HEAD_BYTES (the first compiler error) and the last
# MAX_OUTPUT_BYTES (a benchmark prints its result last). The rest is dropped as
# it arrives, so a run holds about HEAD_BYTES + 2 * the cap at most.
MAX_OUTPUT_BYTES = 4 * 1024 * 1024
HEAD_BYTES = 64 * 1024
# After the main process exits, output is read this long at most: a child that
# inherited the pipe and lives on (a daemon) must not hold the run open.
EXIT_GRACE = 0.5
# How long the output is still drained after a kill.
DRAIN_AFTER_KILL = 0.5

_READ_CHUNK = 64 * 1024


@contextmanager
def started(popen: Callable[[], subprocess.Popen[str]]) -> Iterator[subprocess.Popen[str]]:
    """A process that code outside `run` starts with `popen`, in a session of its own (the ptxas-only path's
    steps: ciq_build.compiler.ptxas_path cannot import this module), held while it runs as `run` holds its
    own: an interrupt kills its session and what it started (`kill_all_running`), and none starts after one
    (Stopped). Not swept for leftovers when it ends, as `run` is (~35 ms a process): for processes that
    leave nothing behind."""
    # As in run(): a process the kill does not see has not started. No mark: its session.
    process, one = processes.register(popen, "", "starting a process")
    try:
        with process:  # its exit closes the pipes and waits for it
            yield process
    finally:
        processes.unregister(one)


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


def _reap(process: subprocess.Popen[bytes]) -> None:
    try:
        process.wait(timeout=processes.KILL_PATIENCE)
    except subprocess.TimeoutExpired:
        pass  # stuck in the kernel after SIGKILL; subprocess reaps it later


def _exited(pid: int) -> bool:
    """Whether the child has exited, without reaping it (its pid and group stay ours)."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _child_env(env: Mapping[str, str] | None, mark: str) -> dict[str, str]:
    child = dict(os.environ if env is None else env)
    marks = [m for m in (os.environ.get(processes.ENV_MARK, "") + ":" + child.get(processes.ENV_MARK, "")).split(":") if m]
    child[processes.ENV_MARK] = ":".join(dict.fromkeys([*marks, mark]))
    return child


def marked_env(what: str) -> dict[str, str]:
    """The environment for a long-lived child this driver starts itself (not through `run`), marked as one of
    its runs: the child, and all it starts, die with this driver (at exit, and by the watchdog on SIGKILL)."""
    return _child_env(None, f"{processes.driver_token()}.{what}")


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
    mark = processes.new_mark()

    def popen() -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            argv,
            cwd=Path(cwd) if cwd is not None else None,
            env=_child_env(env, mark),
            stdin=subprocess.PIPE if stdin_text is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # own process group: killpg reaches its children too
            preexec_fn=processes.die_with_parent(),
        )

    try:
        process, one = processes.register(popen, mark, f"running {Path(argv[0]).name}")
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
        processes.unregister(one, lambda: _reap(process))
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
        pump = _Pump(process, selector, captures, _stdin_bytes(process, selector, stdin_text), lines)
        pidfd = None
        try:
            pidfd = os.pidfd_open(process.pid)
            selector.register(pidfd, selectors.EVENT_READ, "exit")
        except (AttributeError, OSError):
            pass  # no pidfd (old kernel): poll for the exit instead
        try:
            return pump.loop(deadline, stopping.STOP_POLL if pidfd is not None else 0.05)
        finally:
            if pidfd is not None:
                os.close(pidfd)
    finally:
        selector.close()


def _stdin_bytes(process: subprocess.Popen[bytes], selector: selectors.BaseSelector, stdin_text: str | None
                 ) -> bytes:
    """What is to be written to the process's stdin (registered for writing when there is any)."""
    if process.stdin is None:
        return b""
    pending = (stdin_text or "").encode()
    os.set_blocking(process.stdin.fileno(), False)
    if pending:
        selector.register(process.stdin.fileno(), selectors.EVENT_WRITE, "stdin")
    else:
        process.stdin.close()
    return pending


@dataclass
class _Pump:
    """One run's pipes, read (and its stdin written) until it is done: `_pump`'s state."""

    process: subprocess.Popen[bytes]
    selector: selectors.BaseSelector
    captures: dict[str, _Capture]
    pending: bytes  # still to be written to stdin
    lines: _Lines | None
    open_streams: set[str] = field(default_factory=lambda: {"stdout", "stderr"})
    exited_at: float | None = None

    def loop(self, deadline: float, poll: float) -> tuple[bool, bool, bool]:
        while True:
            now = time.monotonic()
            if self.exited_at is None and _exited(self.process.pid):
                self.exited_at = now
            if self.exited_at is not None:  # it finished in time: no timeout, only the grace
                if not self.open_streams:
                    return False, False, False
                if now >= self.exited_at + EXIT_GRACE:
                    return False, True, False
                wait = self.exited_at + EXIT_GRACE - now
            elif now >= deadline:
                return True, False, False
            else:
                # Back in Python every STOP_POLL at least: a signal the kernel gave another thread of
                # this process runs its handler (the stop) only when the main thread runs Python again.
                wait = min(deadline - now, poll)
            for key, _ in self.selector.select(max(wait, 0.0)):
                if self._handle(key):
                    return False, False, True

    def _handle(self, key: selectors.SelectorKey) -> bool:
        """One ready pipe (or the exit); True when the watch asked to stop."""
        if key.data == "exit":
            self.selector.unregister(key.fd)
        elif key.data == "stdin":
            self._write(key)
        else:
            chunk = os.read(key.fd, _READ_CHUNK)
            if not chunk:
                self.selector.unregister(key.fd)
                self.open_streams.discard(key.data)
                return False
            self.captures[key.data].add(chunk)
            return self.lines is not None and key.data == "stdout" and self.lines.add(chunk)
        return False

    def _write(self, key: selectors.SelectorKey) -> None:
        try:
            written = os.write(key.fd, self.pending[:_READ_CHUNK])
        except BlockingIOError:
            return
        except OSError:  # it stopped reading (EPIPE)
            written = len(self.pending)
        self.pending = self.pending[written:]
        if not self.pending:
            self.selector.unregister(key.fd)
            assert self.process.stdin is not None
            self.process.stdin.close()


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
