"""Durable files (state/durable): atomic writes, a file's sha256, a JSON object read back."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from ciq_build.state.durable import atomic_write, read_json_object, sha256_file


def test_atomic_write_replaces_the_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "record.json"
    atomic_write(path, b"old")
    atomic_write(path, "new \u00e9\n")
    assert path.read_bytes() == "new \u00e9\n".encode()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["record.json"]
    assert path.stat().st_mode & 0o777 == 0o644  # readable by others, unlike mkstemp's 0600


def test_a_failed_write_keeps_the_old_file(tmp_path: Path) -> None:
    path = tmp_path / "record.json"
    atomic_write(path, b"old")
    with pytest.raises(TypeError):
        atomic_write(path, 42)  # type: ignore[arg-type]  # not bytes: fails while writing the temporary
    assert path.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["record.json"]


def test_newer_mtime_is_strictly_later_even_within_one_clock_tick(tmp_path: Path) -> None:
    path = tmp_path / "t.nvcc-options"
    atomic_write(path, b"a")
    future = path.stat().st_mtime_ns + 10_000_000_000
    os.utime(path, ns=(future, future))  # as if the last write was "now" on a coarse clock
    atomic_write(path, b"b", newer_mtime=True)
    assert path.stat().st_mtime_ns > future


def test_sha256_file_is_the_digest_of_the_bytes(tmp_path: Path) -> None:
    data = os.urandom(3 << 20)  # more than one read chunk
    (tmp_path / "x.acf").write_bytes(data)
    assert sha256_file(tmp_path / "x.acf") == hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize(("content", "reason"), [
    (b'{"a": NaN}', "NaN is not a JSON number"),
    (b"[1, 2]", "not an object"),
    (b'{"a": "\xff"}', "utf-8"),
    (b"{not json", "Expecting"),
    (b"[" * 100_000 + b"]" * 100_000, "deeply"),
])
def test_read_json_object_says_why_a_file_is_not_one_object(tmp_path: Path, content: bytes, reason: str) -> None:
    path = tmp_path / "x.json"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=reason):
        read_json_object(path)


def test_read_json_object_reads_an_object(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text('{"schema": 1, "acfs": []}', encoding="utf-8")
    assert read_json_object(tmp_path / "x.json") == {"schema": 1, "acfs": []}
    with pytest.raises(OSError):
        read_json_object(tmp_path / "missing.json")
