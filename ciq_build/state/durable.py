"""Files that must survive a crash and be recognised afterwards: atomic writes with fsync, a file's
sha256, a JSON object read back.

Every file ciq_build writes for later (records, ACFs, options files, caches,
claims, pools) goes through :func:`atomic_write`: a reader sees the old file
or the new one, never a mix, and once it returns the new file is on disk.
JSON files that hold one object (manifests, pools, caches, lock notes) are read
with :func:`read_json_object`; pinned records, which CMake reads too, have
their own stricter reader (core/rules.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any


def sha256_file(path: Path) -> str:
    """Lowercase hex sha256 of a file's bytes (read in 1 MiB chunks)."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def read_json_object(path: Path) -> dict[str, Any]:
    """The JSON object in the UTF-8 file `path`.

    OSError when the file cannot be read; ValueError saying why when it is not
    one JSON object (not UTF-8, not JSON, absurdly nested, another kind of
    value, or NaN/Infinity, which JSON does not have).
    """
    raw = Path(path).read_bytes()
    try:
        value = json.loads(raw.decode("utf-8"), parse_constant=_refuse_constant)
    except RecursionError:
        raise ValueError("nests objects and arrays too deeply") from None
    # json's errors (and UnicodeDecodeError) are ValueErrors already, and say where.
    if not isinstance(value, dict):
        raise ValueError(f"holds a JSON {type(value).__name__}, not an object")
    return value


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")


def atomic_write(path: Path, data: bytes | str, *, mode: int = 0o644, newer_mtime: bool = False) -> None:
    """Write `data` to `path` so that readers see the old file or the new one, never a mix, durably.

    A temporary file in the same directory (``.<name>.*.tmp``, so concurrent
    writers never share one) is written, fsynced and renamed over `path`, then
    the directory entry is fsynced. `str` data is written as UTF-8 with ``\\n``
    line ends. `mode` replaces mkstemp's 0600, which would hide a committed
    file from other users. With `newer_mtime`, the new file's mtime is made
    strictly later than the replaced file's even on coarse clocks (a build that
    watches the file's mtime then always sees the change).
    """
    path = Path(path)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    previous = None
    if newer_mtime:
        try:
            previous = path.stat().st_mtime_ns
        except OSError:
            previous = None
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(raw)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        if previous is not None and os.stat(tmp).st_mtime_ns <= previous:
            later = previous + 1_000_000  # 1 ms: beyond any file system's timestamp granularity here
            os.utime(tmp, ns=(later, later))
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    fsync_dir(path.parent)


def fsync_dir(directory: Path) -> None:
    """Flush a directory's entries: a create or rename is durable only once its entry is on disk."""
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return  # some file systems cannot open directories; the data itself is synced
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
