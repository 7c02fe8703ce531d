"""Failures of the machine, not of a candidate: full disks, foreign kills, hung build tools.

A candidate's result is cached in the journal and never measured again, so it
must be the candidate's own doing: a compile error, a crash, a hang in the
compiler, a failed check. What the environment does to a run is not:

``disk_full``
    "No space left on device" (or a quota) in a compile's or a benchmark's
    output, an ``OSError`` with ENOSPC/EDQUOT while writing, or a failed
    compile while the scratch tree's or the compiler's temporary file system
    is (nearly) full. nvcc says only "Failed to preprocess host compiler
    properties" when its TMPDIR is full, so the free space is checked too. A
    full disk ends the tune (`DiskFullError`).
``compile_killed`` / ``bench_killed``
    A compile or benchmark killed by a signal that ciq_build did not send for
    its timeout, and that a program does not raise for itself when it crashes:
    SIGKILL (the OOM killer's), SIGTERM, SIGINT, SIGHUP, SIGXFSZ. A crash
    (SIGSEGV, SIGABRT, ...) stays the candidate's result.
``build_tool_timeout``
    The build step ran past its timeout while no compile of the candidate was
    running (cmake re-configuring, ninja, a custom command): nothing of the
    candidate's controls was being compiled, so the hang is not its result.
``compile_starved``
    The candidate's compile ran past its timeout after waiting for a CPU, in
    all, for more than half the limit (the kernel's run-queue delay of its
    processes, /proc/<pid>/schedstat, read at a quarter, half and three
    quarters of the limit and just before the kill, each process's latest
    reading counted, so one that starved and ended before the kill counts
    too; the processes naming its options file, and those ciq_build started
    for it itself, the ptxas-only path's steps, and what they started): a
    loaded machine gave it less than half the time it was allowed, so the
    timeout says nothing of the candidate. Waiting for a CPU is what load does to a
    process that is ready to run; a compile that hangs of its own runs (a
    slow optimisation) or sleeps (a blocking read), and waits for no CPU.

These are journaled with ``"environmental": true`` (the summary counts them)
and never reused from the journal: a resumed tune runs those candidates again.
"""

from __future__ import annotations

import errno
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ciq_build.compiler.ptxas_path import Start
from ciq_build.core.causes import ENVIRONMENTAL, Cause
from ciq_build.errors import DiskFullError
from ciq_build.measure.processes import descendants, process_table

DISK_FULL = Cause.DISK_FULL
COMPILE_KILLED = Cause.COMPILE_KILLED
BENCH_KILLED = Cause.BENCH_KILLED
BUILD_TOOL_TIMEOUT = Cause.BUILD_TOOL_TIMEOUT
COMPILE_STARVED = Cause.COMPILE_STARVED

# When a CompileWitness reads the compile's waits for a CPU, as shares of the step's timeout (and once more just
# before the kill): a few looks, so that no one instant decides whether the machine starved it.
LOOKS = (0.25, 0.5, 0.75)
ENVIRONMENTAL_CAUSES = ENVIRONMENTAL

DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})

# What compilers, assemblers, linkers and libc say when a write finds the disk full.
_DISK_FULL_TEXT = re.compile(r"No space left on device|Disk quota exceeded|\bENOSPC\b|\bEDQUOT\b", re.IGNORECASE)

# Signals a crashing program does not send itself: someone else killed it.
FOREIGN_SIGNALS = frozenset({signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGXFSZ})
_FOREIGN_NAMES = "|".join(sorted(s.name for s in FOREIGN_SIGNALS))
_FOREIGN_NUMBERS = "|".join(str(int(s)) for s in sorted(FOREIGN_SIGNALS))
# How a killed child shows in a compile's output:
#   nvcc:  "nvcc error   : 'cicc' died due to signal 9 (Kill signal)"
#   gcc:   "g++: fatal error: Killed signal terminated program cc1plus"
#          "c++: internal compiler error: Killed (program cc1plus)"
#   ninja: "ninja: build stopped: interrupted by user." (a step got SIGINT/SIGTERM/SIGHUP)
#   ciq_build's own ProcResult.describe(): "killed by SIGKILL"
_FOREIGN_KILL_TEXT = re.compile(
    rf"died due to signal (?:{_FOREIGN_NUMBERS})\b"
    r"|Killed signal terminated program"
    r"|internal compiler error: Killed"
    r"|ninja: build stopped: interrupted"
    rf"|killed by (?:{_FOREIGN_NAMES})\b"
)

# A file system counts as full below this much free space (or 2% of its size, if less).
_NEARLY_FULL_BYTES = 16 * 1024 * 1024


def is_disk_full_error(error: BaseException) -> bool:
    """Whether `error` (or what it was raised from) is a write that found the disk full."""
    seen = 0
    while error is not None and seen < 8:
        if isinstance(error, DiskFullError):
            return True
        if isinstance(error, OSError) and error.errno in DISK_FULL_ERRNOS:
            return True
        error = error.__cause__ or error.__context__  # type: ignore[assignment]
        seen += 1
    return False


def says_disk_full(text: str) -> bool:
    return _DISK_FULL_TEXT.search(text) is not None


def says_killed(text: str) -> bool:
    """Whether a failed step's output (or its description) shows a foreign kill."""
    return _FOREIGN_KILL_TEXT.search(text) is not None


def foreign_signal(signum: int | None) -> bool:
    return signum is not None and signum in {int(s) for s in FOREIGN_SIGNALS}


def compiler_temp_dir() -> Path:
    """Where nvcc, gcc and the assembler write their temporary files."""
    return Path(os.environ.get("TMPDIR") or "/tmp")


@dataclass(frozen=True)
class Space:
    path: Path
    free: int  # bytes a write may still use
    total: int
    inodes_free: int | None

    @property
    def full(self) -> bool:
        if self.inodes_free == 0:
            return True
        return self.free < min(_NEARLY_FULL_BYTES, max(self.total // 50, 4096))


def space(path: Path) -> Space | None:
    """Free space on the file system holding `path` (its nearest existing parent)."""
    probe = Path(path)
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        stats = os.statvfs(probe)
    except OSError:
        return None
    blocks = stats.f_bfree if os.geteuid() == 0 else stats.f_bavail  # root may use the reserved blocks
    inodes = (stats.f_ffree if os.geteuid() == 0 else stats.f_favail) if stats.f_files else None
    return Space(Path(path), blocks * stats.f_frsize, stats.f_blocks * stats.f_frsize, inodes)


def full_file_systems(paths: Iterable[Path]) -> list[Space]:
    """The (nearly) full file systems among those holding `paths`, one per file system."""
    found: list[Space] = []
    devices: set[int] = set()
    for path in paths:
        info = space(path)
        if info is None or not info.full:
            continue
        try:
            device = _existing(path).stat().st_dev
        except OSError:
            device = -len(found) - 1
        if device not in devices:
            devices.add(device)
            found.append(info)
    return found


def _existing(path: Path) -> Path:
    probe = Path(path)
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    return probe


def _size(count: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if count < 1024 or unit == "GiB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024  # type: ignore[assignment]
    return f"{count} B"


def disk_full_error(what: str, scratch: Path, journal: Path, done: int) -> DiskFullError:
    """The one-line error that ends a tune on a full disk: what is full and what to free."""
    temp = compiler_temp_dir()
    places = {scratch: f"the scratch trees ({scratch}; safe to delete, rebuilt on the next run)",
              journal.parent: f"the journal's folder ({journal.parent})",
              temp: f"the compilers' temporary folder (TMPDIR={temp})"}
    full = full_file_systems(places)
    if full:
        named = "; ".join(f"{places[s.path]} has {_size(s.free)} free" for s in full)
    else:
        named = "; ".join(f"{text} has {_size(info.free)} free" for path, text in places.items()
                          if (info := space(path)) is not None)
    return DiskFullError(
        f"no space left on device while {what}: {named}. Free space there (or point TMPDIR at a larger disk), "
        f"then run the same command to resume; the {done} evaluation(s) in {journal} are kept.",
        advised=True,
    )


# -- who is running inside a scratch tree -----------------------------------------------


def processes_naming(needle: str) -> list[int]:
    """Live processes whose command line contains `needle` (Linux /proc; empty elsewhere)."""
    found = []
    target = needle.encode()
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                cmdline = handle.read()
        except OSError:
            continue
        if target in cmdline.replace(b"\0", b" "):
            found.append(int(entry))
    return found


def waited_for_cpu(pids: Iterable[int]) -> dict[int, float]:
    """Seconds each of `pids` and every process below them has waited for a CPU while ready to run (each live
    one's run-queue delay, /proc/<pid>/schedstat's second field; none where the kernel does not say)."""
    roots = set(pids)
    waited = {}
    for pid in roots | descendants(process_table(), roots):
        try:
            with open(f"/proc/{pid}/schedstat", encoding="ascii") as handle:
                waited[pid] = int(handle.read().split()[1]) / 1e9
        except (OSError, IndexError, ValueError):
            continue
    return waited


@dataclass
class CompileWitness:
    """Looks, across a build step's timeout, whether the candidate's compile is what runs and how long it waited.

    The candidate's controls reach nvcc only through its options file, which is
    on the command line of every compile that reads them. If the step times
    out and no such process was alive at the last look, shortly before the kill,
    the hang was the build tool's (a re-configure, ninja, a custom command), not
    the candidate's; if those processes had waited for a CPU for more than half
    the timeout, the machine starved the compile (``compile_starved``, the
    module docstring). The waits are read at every look (`LOOKS`), not at the
    last alone: a compile is several processes in turn (cicc, then ptxas), and
    one that starved and ended before the last look is counted all the same.
    Compile steps ciq_build runs itself (the ptxas-only path's) are started
    through `watching`, so their processes are looked at too.
    """

    options_file: Path
    timeout: float
    compiling: bool = field(default=False, init=False)
    looked: bool = field(default=False, init=False)
    waited: float = field(default=0.0, init=False)  # seconds the compile had waited for a CPU, as of the last look
    _waits: dict[int, float] = field(default_factory=dict, init=False, repr=False)  # each process's, as last read
    _done: threading.Event = field(default_factory=threading.Event, init=False, repr=False)
    _started: set[int] = field(default_factory=set, init=False, repr=False)  # live processes `watching` started
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def __enter__(self) -> CompileWitness:
        # The last look late enough that whatever hangs is hanging, early enough to be before the kill.
        last = max(self.timeout - min(1.0, self.timeout * 0.1), self.timeout * 0.8)
        at = sorted({*(self.timeout * share for share in LOOKS if self.timeout * share < last), last})
        threading.Thread(target=self._watch, args=(time.monotonic(), at), daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()

    def _watch(self, started: float, at: list[float]) -> None:
        for seconds in at:
            if self._done.wait(max(0.0, started + seconds - time.monotonic())):
                return  # the step ended
            self._look()

    def watching(self, start: Start) -> Start:
        """`start` with each process it starts looked at as the candidate's compile while it runs: for compile
        steps whose command lines need not name the options file (the ptxas-only path's)."""
        @contextmanager
        def watched(popen: Callable[[], subprocess.Popen[str]]) -> Iterator[subprocess.Popen[str]]:
            with start(popen) as process:
                with self._lock:
                    self._started.add(process.pid)
                try:
                    yield process
                finally:
                    with self._lock:
                        self._started.discard(process.pid)
        return watched

    def _look(self) -> None:
        needles = {str(self.options_file)}
        try:
            needles.add(str(Path(self.options_file).resolve()))
        except OSError:
            pass
        with self._lock:
            compiles = set(self._started)
        compiles |= {pid for needle in needles for pid in processes_naming(needle)}
        self.compiling = bool(compiles)  # the last look's word is the one that stands: what runs at the kill
        # A process's run-queue delay only grows: its latest reading is its wait, kept once it has ended.
        self._waits.update(waited_for_cpu(compiles))
        self.waited = sum(self._waits.values())
        self.looked = True

    def hang_was_the_candidates(self) -> bool:
        """After a timeout: True unless the look found no compile of the candidate running."""
        return self.compiling or not self.looked

    def starved(self) -> bool:
        """After a timeout: whether the candidate's compile had waited for a CPU for more than half the limit."""
        return self.waited > self.timeout / 2


__all__ = [
    "BENCH_KILLED", "BUILD_TOOL_TIMEOUT", "COMPILE_KILLED", "COMPILE_STARVED", "DISK_FULL", "ENVIRONMENTAL_CAUSES",
    "CompileWitness", "waited_for_cpu", "disk_full_error", "foreign_signal", "full_file_systems", "is_disk_full_error",
    "says_disk_full", "says_killed",
]
