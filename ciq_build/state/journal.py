"""The append-only evaluation journal of one tuned target, and the lock around a tune.

One JSON object per line, appended as each evaluation finishes (Kernel Tuner's
cache file in spirit), so a tune that is stopped - Ctrl-C, SIGKILL, a power
cut - resumes without measuring anything twice. Durability rules:

* every record is one ``os.write`` of one complete line on an ``O_APPEND``
  descriptor, followed by ``fsync``: a kill at any moment leaves at most a torn
  last line, never a hole in the middle;
* a torn or corrupt line is skipped and reported (``Journal.skipped``), never
  fatal: losing one evaluation is better than refusing to resume;
* before appending after a torn line, a newline is written first, so the torn
  fragment cannot swallow the next record;
* records are never deleted in place: ``reset()`` (``--fresh``) renames the
  old journal to ``<name>.<UTC timestamp>.bak``; ``begin(fresh=True)`` then
  keeps the newest ``KEPT_BACKUPS`` (3) such backups and removes older ones
  (each --fresh left one more, and nothing pruned them);
* the journal is only ever a regular file of its own: a symlink (or a FIFO, a
  device) planted at its path is refused, never followed (``O_NOFOLLOW``), so
  appends cannot be redirected into another file;
* a full disk is a `DiskFullError` (the tune stops and resumes later), not a
  corrupt journal.

A run opens the journal with ``begin(header)``: a header record,
``{"kind": "header", ...}``, names the settings of the search that writes the
records after it (target, toolchain, objectives, search space, ...). A run
whose settings match the latest header appends none; another search appends
its own header and keeps the records before it, which stay valid where their
content-hashed keys match (what a record may be reused for is the reader's
policy: ``ciq_build.tune.cache``).

Values are written with Python's ``json`` (NaN and infinities as ``NaN`` and
``Infinity``, which ``json.loads`` reads back), so a failed evaluation's score
survives the round trip.
"""

from __future__ import annotations

import errno
import json
import os
import re
import socket
import stat
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any

import filelock

from ciq_build.errors import BusyError, DiskFullError, JournalError
from ciq_build.state.durable import atomic_write, fsync_dir, read_json_object

HEADER_KIND = "header"
RUN_KIND = "run"  # a record each `tune` run appends when it opens the journal: where one run's evaluations begin
KEPT_BACKUPS = 3  # journals moved aside by --fresh that are kept: the newest ones
# What follows the journal's name in a backup's: the UTC time it was moved aside, and a counter
# for a second one within that second.
_BACKUP_SUFFIX = re.compile(r"\.(\d{8}T\d{6}Z)(?:-(\d+))?\.bak", re.ASCII)


def _now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass
class Journal:
    """The JSON-lines journal at `path` (created on the first append)."""

    path: Path
    # (1-based line number, reason) for each line the last records() call skipped.
    skipped: list[tuple[int, str]] = field(default_factory=list, init=False)
    # The driver appends from several worker threads; the torn-line check and the
    # write must not interleave between them.
    _write_lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def __post_init__(self) -> None:
        self.path = Path(self.path)

    # -- writing ---------------------------------------------------------------

    def append(self, record: Mapping[str, Any]) -> None:
        """Append `record` as one line, durably (written and fsynced before returning)."""
        if not isinstance(record, Mapping):
            raise TypeError(f"a journal record is a dict, not {type(record).__name__}")
        try:
            # No indent: json.dumps never puts a raw newline inside a line.
            line = (json.dumps(dict(record), sort_keys=True) + "\n").encode("utf-8")
        except (TypeError, ValueError) as exc:
            raise JournalError(f"cannot write an evaluation to the journal {self.path}: {exc}") from exc
        with self._write_lock:
            try:
                self._append_bytes(line)
            except OSError as exc:
                if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                    raise DiskFullError(
                        f"no space left on device for the journal {self.path}: free space on its file system, "
                        "then run the same command to resume"
                    ) from exc
                raise JournalError(
                    f"cannot append to the journal {self.path}: {exc}; "
                    "check that the build directory is writable and the disk is not full"
                ) from exc

    def _append_bytes(self, line: bytes) -> None:
        created = not os.path.lexists(self.path)
        if created:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = _open_own_file(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                # A previous writer died mid-line: end its fragment so it stays one
                # skipped line instead of corrupting this record too.
                line = b"\n" + line
            written = os.write(fd, line)
            # A regular file takes the whole line in one write; only a full disk or
            # a signal makes it short, and then the rest must still follow.
            while written < len(line):
                written += os.write(fd, line[written:])
            os.fsync(fd)
        finally:
            os.close(fd)
        if created:
            fsync_dir(self.path.parent)  # the new directory entry must survive a crash too

    def reset(self) -> Path | None:
        """Start over (``--fresh``): move the journal aside to ``<name>.<timestamp>.bak``.

        Returns the backup's path, or None when there was no journal. Nothing is deleted.
        """
        with self._write_lock:
            if not self.path.exists():
                return None
            stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
            # Two resets within one second keep both backups: the later one counts on from the highest
            # counter of that second (never a lower one that pruning freed, or it would sort as older).
            counters = [counter for when, counter, _ in self._backups() if when == stamp]
            suffix = f"-{max(counters) + 1}" if counters else ""
            backup = self.path.with_name(f"{self.path.name}.{stamp}{suffix}.bak")
            try:
                os.rename(self.path, backup)
            except OSError as exc:
                raise JournalError(f"cannot move the journal {self.path} aside to {backup}: {exc}") from exc
            fsync_dir(self.path.parent)
            return backup

    def prune_backups(self, keep: int = KEPT_BACKUPS) -> list[Path]:
        """Remove all but the newest `keep` backups reset() made; returns those removed.

        Only names reset() gives (``<name>.<YYYYmmddTHHMMSSZ>[-N].bak``) are backups; nothing else is touched.
        """
        removed = []
        with self._write_lock:
            backups = self._backups()
            for _, _, path in backups[: max(0, len(backups) - keep)]:
                try:
                    path.unlink()
                except FileNotFoundError:
                    continue  # another process pruned it first
                except OSError as exc:
                    raise JournalError(f"cannot remove the old journal backup {path}: {exc}; remove it by hand "
                                       "or free the folder") from exc
                removed.append(path)
        return removed

    def _backups(self) -> list[tuple[str, int, Path]]:
        """reset()'s backups of this journal, oldest first: by time, then by counter."""
        prefix = self.path.name
        try:
            names = os.listdir(self.path.parent)
        except FileNotFoundError:
            return []
        found = []
        for name in names:
            match = _BACKUP_SUFFIX.fullmatch(name, len(prefix)) if name.startswith(prefix) else None
            if match is not None:
                found.append((match.group(1), int(match.group(2) or 0), self.path.with_name(name)))
        return sorted(found)

    # -- reading ---------------------------------------------------------------

    def records(self) -> list[dict[str, Any]]:
        """Every valid record, in order; headers included. Bad lines go to `skipped`."""
        self.skipped = []
        try:
            fd = _open_own_file(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise JournalError(f"cannot read the journal {self.path}: {exc}") from exc
        try:
            with os.fdopen(fd, "rb") as handle:
                data = handle.read()
        except OSError as exc:
            raise JournalError(f"cannot read the journal {self.path}: {exc}") from exc
        lines = data.split(b"\n")
        # The last element is what follows the final newline: empty for a clean file,
        # a torn fragment after a kill mid-write.
        last_index = len(lines) - 1
        records: list[dict[str, Any]] = []
        for index, raw in enumerate(lines):
            if index == last_index and not raw:
                break
            number = index + 1
            torn = index == last_index
            parsed = _parse_line(raw)
            if isinstance(parsed, dict):
                records.append(parsed)
            elif raw.strip() or torn:
                suffix = " (last line, not ended: the writer was probably killed mid-write)" if torn else ""
                self.skipped.append((number, parsed + suffix))
            # Blank lines (e.g. the newline written after a torn fragment) are harmless.
        return records

    def evaluations(self) -> list[dict[str, Any]]:
        """The records that are not headers."""
        return [record for record in self.records() if record.get("kind") != HEADER_KIND]

    def header(self) -> dict[str, Any] | None:
        """The first header record, or None when the journal has none."""
        for record in self.records():
            if record.get("kind") == HEADER_KIND:
                return record
        return None

    def begin(self, header: Mapping[str, Any], *, fresh: bool = False) -> JournalStart:
        """Open the journal for the search described by `header` (``--fresh``: the old one moved aside first).

        Appends `header` as a header record unless the latest header already says the same;
        returns every record read before that, and whether they were written by another search.
        """
        backup, pruned = (self.reset(), tuple(self.prune_backups())) if fresh else (None, ())
        records = self.records()
        wanted = {"kind": HEADER_KIND, **dict(header)}
        latest = next((r for r in reversed(records) if r.get("kind") == HEADER_KIND), None)
        same = latest is not None and {k: latest.get(k) for k in wanted} == wanted
        if not same:
            self.append(wanted)
        return JournalStart(records, another_search=latest is not None and not same, backup=backup, pruned=pruned)


@dataclass(frozen=True)
class JournalStart:
    """What `Journal.begin` found: the records so far, and whether another search wrote them."""

    records: list[dict[str, Any]]
    another_search: bool
    backup: Path | None = None  # where --fresh moved the old journal
    pruned: tuple[Path, ...] = ()  # older backups --fresh removed (only the newest KEPT_BACKUPS are kept)


def _parse_line(raw: bytes) -> dict[str, Any] | str:
    """The record on line `raw`, or a one-line reason why it is not one."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return "not UTF-8"
    if not text.strip():
        return "empty line"
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:  # RecursionError: absurdly nested garbage
        return f"not valid JSON ({str(exc)[:80]})"
    if not isinstance(value, dict):
        return f"a JSON {type(value).__name__}, not an object"
    return value


def _open_own_file(path: Path, flags: int, mode: int = 0o644) -> int:
    """Open the journal itself: never through a symlink, and only a regular file.

    O_NOFOLLOW makes a symlink at `path` fail (ELOOP) instead of redirecting
    the write; O_NONBLOCK keeps a FIFO planted there from hanging the open.
    """
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP or (exc.errno == errno.ENXIO and os.path.islink(path)):
            raise JournalError(
                f"the journal {path} is a symbolic link; ciq_build never follows one there (it could redirect "
                "the journal into any file). Remove it, then run again."
            ) from None
        if exc.errno == errno.ENXIO:  # a FIFO without a reader, opened for writing
            raise JournalError(f"the journal {path} is not a regular file; remove it, then run again.") from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise JournalError(
                f"the journal {path} is not a regular file ({_file_kind(info.st_mode)}); remove it, then run again.")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _file_kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a device"),
                       (stat.S_ISBLK, "a device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symbolic link")):
        if test(mode):
            return name
    return "not a plain file"


# -- the per-target tune lock ---------------------------------------------------


def tune_lock_path(state_dir: Path, safe_target: str) -> Path:
    """Where a tune of a target (named as a file: build.cmake.safe_name) locks, in a build tree's ciq/ folder."""
    return Path(state_dir) / "locks" / f"{safe_target}.lock"


class TargetLock:
    """Serialises tune runs of one target: ``with TargetLock(path, wait=False): ...``.

    Built on an OS file lock (filelock), which the kernel drops when the holder
    dies, so a killed tune never leaves a stale lock. While held, a sidecar
    ``<lock>.info`` file says who holds it (pid, host, start time, command) for
    the message another run prints. Different targets use different lock files.

    wait=False: a held lock raises BusyError at once. wait=True: block until it
    is free, or `timeout` seconds (None: forever), then BusyError.
    """

    def __init__(self, lock_path: str | os.PathLike[str], wait: bool, timeout: float | None = None) -> None:
        self.path = Path(lock_path)
        self.info_path = self.path.with_name(self.path.name + ".info")
        self.wait = wait
        self.timeout = timeout
        self._lock = filelock.FileLock(str(self.path))

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if not self.wait:
            limit = 0.0
        elif self.timeout is None:
            limit = -1.0  # filelock: negative waits forever
        else:
            limit = max(float(self.timeout), 0.0)
        try:
            self._lock.acquire(timeout=limit)
        except filelock.Timeout:
            raise BusyError(self._busy_message()) from None
        try:
            self._write_info()
        except OSError:
            pass  # the info file is a courtesy for the message; the lock itself holds

    def release(self) -> None:
        if not self._lock.is_locked:
            return  # never held: the info file, if any, is another holder's
        # Remove the info first: once the lock is free, the file belongs to the next holder.
        try:
            self.info_path.unlink()
        except OSError:
            pass
        self._lock.release()

    @property
    def is_locked(self) -> bool:
        return bool(self._lock.is_locked)

    def __enter__(self) -> TargetLock:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()

    def _write_info(self) -> None:
        info = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started": _now_iso(),
            "command": " ".join(sys.argv)[:300],
        }
        atomic_write(self.info_path, json.dumps(info) + "\n")

    def holder(self) -> dict[str, Any] | None:
        """What the current holder wrote about itself, if it could be read."""
        try:
            return read_json_object(self.info_path)
        except (OSError, ValueError):
            return None

    def held(self) -> bool:
        """Whether a tune holds the lock now, as its info file says; never takes the lock (that could refuse a tune).

        The info file of a tune that was SIGKILLed stays behind: on this host its pid must still be alive.
        """
        holder = self.holder()
        if holder is None:
            return False
        pid = holder.get("pid")
        if holder.get("host") != socket.gethostname() or not isinstance(pid, int) or isinstance(pid, bool):
            return True  # another host's (a shared file system) or unreadable: cannot tell, so running
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True  # alive, another user's
        return True

    def _busy_message(self) -> str:
        who = ""
        holder = self.holder()
        if holder is not None:
            parts = [f"pid {holder.get('pid', '?')}", f"on {holder.get('host', '?')}"]
            if holder.get("started"):
                parts.append(f"since {holder['started']}")
            who = " (" + ", ".join(parts) + ")"
            if holder.get("command"):
                who += f": {holder['command']}"
        if self.wait:
            return (
                f"another tune of this target is still running{who}; gave up waiting for its lock "
                f"{self.path} after {self.timeout:g} s. Wait for it to finish or stop it, then run again."
            )
        return (
            f"another tune of this target is running{who}; it holds the lock {self.path}. "
            "Wait for it to finish, stop it, or run again with --wait to queue behind it."
        )


__all__ = ["HEADER_KIND", "Journal", "JournalStart", "TargetLock", "tune_lock_path"]
