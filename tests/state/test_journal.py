"""ciq_build.state.journal: durable appends, corrupt-line tolerance, headers, --fresh, the tune lock."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ciq_build.errors import BusyError, JournalError
from ciq_build.state.journal import KEPT_BACKUPS, Journal, TargetLock
from support import PROGRAMS

SETTINGS = {"target": "gemm", "toolchain": {"cuda": "13.3"}, "space": ["knob.maxrregcount=range(32,255)"]}


# -- appending and reading ------------------------------------------------------------------


def test_append_and_read_back_in_order(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "sub" / "gemm.jsonl")  # parent directory created on demand
    for index in range(5):
        journal.append({"i": index, "score": [1.5 * index], "ok": True})
    assert [r["i"] for r in journal.records()] == [0, 1, 2, 3, 4]
    assert journal.skipped == []
    assert journal.path.read_bytes().count(b"\n") == 5


def test_non_finite_scores_survive(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j.jsonl")
    journal.append({"score": float("nan"), "other": float("inf")})
    (record,) = journal.records()
    assert record["score"] != record["score"] and record["other"] == float("inf")


def test_unserialisable_record_is_a_journal_error(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j.jsonl")
    with pytest.raises(JournalError, match="cannot write"):
        journal.append({"path": object()})
    assert journal.records() == []  # nothing half-written


def test_missing_journal_reads_as_empty(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "none.jsonl")
    assert journal.records() == [] and journal.header() is None and journal.skipped == []


def test_corrupt_lines_in_the_middle_are_skipped_and_reported(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    journal = Journal(path)
    journal.append({"i": 0})
    with open(path, "ab") as handle:
        handle.write(b'{"i": 1, "trunc\n')  # line 2: cut JSON
        handle.write(b"\xff\xfe not utf-8\n")  # line 3
        handle.write(b"[1, 2, 3]\n")  # line 4: JSON, but not a record
        handle.write(b"\n")  # line 5: blank, harmless, not reported
        handle.write(b"garbage garbage\n")  # line 6
    journal.append({"i": 2})
    assert [r["i"] for r in journal.records()] == [0, 2]
    assert [number for number, _ in journal.skipped] == [2, 3, 4, 6]
    reasons = dict(journal.skipped)
    assert "not valid JSON" in reasons[2] and "UTF-8" in reasons[3] and "not an object" in reasons[4]


def test_torn_last_line_does_not_swallow_the_next_record(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    journal = Journal(path)
    for index in range(3):
        journal.append({"i": index, "payload": "p" * 50})
    whole = path.read_bytes()
    rng = random.Random(7)
    for _ in range(20):
        # Cut the file anywhere, as a kill inside a write would.
        cut = rng.randrange(1, len(whole))
        path.write_bytes(whole[:cut])
        complete = whole[:cut].count(b"\n")
        records = Journal(path).records()
        assert [r["i"] for r in records] == list(range(complete))
        resumed = Journal(path)
        resumed.append({"i": "new"})
        after = resumed.records()
        assert [r["i"] for r in after] == [*range(complete), "new"]
        torn = whole[:cut].endswith(b"\n") is False
        assert len(resumed.skipped) == (1 if torn else 0)
        if torn:
            assert "killed mid-write" not in resumed.skipped[0][1]  # no longer the last line
            assert Journal(path).records()[-1] == {"i": "new"}


def test_concurrent_appends_from_threads_stay_whole_lines(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j.jsonl")

    def worker(thread: int) -> None:
        for index in range(25):
            journal.append({"thread": thread, "i": index, "pad": "z" * 3000})

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    records = journal.records()
    assert journal.skipped == [] and len(records) == 100
    for number in range(4):
        assert [r["i"] for r in records if r["thread"] == number] == list(range(25))


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_sigkill_mid_stream_keeps_every_complete_line(tmp_path: Path, seed: int) -> None:
    path = tmp_path / "j.jsonl"
    writer = subprocess.Popen([sys.executable, str(PROGRAMS / "journal_writer.py"), str(path), str(seed)])
    try:
        deadline = time.monotonic() + 10
        while not path.exists() and time.monotonic() < deadline:
            time.sleep(0.005)
        time.sleep(random.Random(seed).uniform(0.0, 0.4))  # a random kill point
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait()
    assert writer.returncode == -signal.SIGKILL
    data = path.read_bytes()
    complete = data.count(b"\n")
    journal = Journal(path)
    records = journal.records()
    assert complete >= 1
    # Every complete line is a record, in order, with nothing lost before it.
    assert [r["i"] for r in records] == list(range(complete))
    assert journal.skipped == ([] if data.endswith(b"\n") else [(complete + 1, journal.skipped[0][1])])
    # A resumed run appends after the damage.
    journal.append({"i": complete})
    assert [r["i"] for r in journal.records()] == list(range(complete + 1))


# -- headers and --fresh ---------------------------------------------------------------------


def test_a_resumed_search_writes_no_second_header_and_keeps_its_records(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j.jsonl")
    start = journal.begin(SETTINGS)  # new journal: header written
    assert start.records == [] and not start.another_search
    assert journal.header() == {"kind": "header", **SETTINGS}
    journal.append({"kind": "evaluation", "i": 1})
    again = Journal(journal.path).begin(SETTINGS)
    assert not again.another_search
    assert [r.get("i") for r in again.records] == [None, 1]
    assert [r["kind"] for r in journal.records()] == ["header", "evaluation"]  # no second header


def test_another_search_appends_its_header_and_keeps_the_old_records(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j.jsonl")
    journal.begin(SETTINGS)
    journal.append({"kind": "evaluation", "i": 1})
    other = {**SETTINGS, "toolchain": {"cuda": "13.0"}, "seed": 2}
    start = journal.begin(other)
    # Records are keyed by what determines them, so the older search's stay readable.
    assert start.another_search and [r.get("i") for r in start.records] == [None, 1]
    assert [r["kind"] for r in journal.records()] == ["header", "evaluation", "header"]
    assert not journal.begin(other).another_search  # the latest header is the one compared


def test_begin_fresh_moves_the_old_journal_aside(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "gemm.jsonl")
    journal.begin(SETTINGS)
    journal.append({"kind": "evaluation", "i": 1})
    start = journal.begin(SETTINGS, fresh=True)
    assert start.records == [] and not start.another_search
    assert [r["kind"] for r in journal.records()] == ["header"]
    backups = list(tmp_path.glob("gemm.jsonl.*.bak"))
    assert len(backups) == 1 and len(Journal(backups[0]).records()) == 2


def test_reset_keeps_the_old_journal_as_backup(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "gemm.jsonl")
    assert journal.reset() is None  # nothing to move
    journal.begin(SETTINGS)
    journal.append({"i": 1})
    first = journal.reset()
    assert first is not None and first.name.startswith("gemm.jsonl.") and first.name.endswith(".bak")
    assert len(Journal(first).records()) == 2
    assert journal.records() == [] and not journal.path.exists()
    journal.append({"i": 2})
    second = journal.reset()  # within the same second: both backups survive
    assert second is not None and second != first and first.exists() and second.exists()


def test_only_the_newest_backups_are_kept_and_the_pruned_ones_are_named(tmp_path: Path) -> None:
    # Each tune --fresh left one more <name>.<time>.bak that nothing pruned.
    journal = Journal(tmp_path / "gemm.jsonl")
    planted = ["20240101T000000Z", "20250101T000000Z", "20250101T000000Z-1", "20250101T000000Z-10",
               "20250101T000000Z-2"]
    for stamp in planted:
        (tmp_path / f"gemm.jsonl.{stamp}.bak").write_text("{}\n")
    (tmp_path / "gemm.jsonl.notes.bak").write_text("mine\n")  # not a backup's name: never touched
    (tmp_path / "other.jsonl.20200101T000000Z.bak").write_text("{}\n")  # another target's
    journal.begin(SETTINGS)
    start = journal.begin(SETTINGS, fresh=True)
    assert start.backup is not None and start.backup.exists()
    kept = sorted(p.name for p in tmp_path.glob("gemm.jsonl.*Z*.bak"))
    assert len(kept) == KEPT_BACKUPS == 3
    # Oldest first by time, then by counter (-2 before -10): the two 2025 ones with the highest counters stay.
    assert set(kept) == {start.backup.name, "gemm.jsonl.20250101T000000Z-2.bak", "gemm.jsonl.20250101T000000Z-10.bak"}
    assert sorted(p.name for p in start.pruned) == ["gemm.jsonl.20240101T000000Z.bak",
                                                     "gemm.jsonl.20250101T000000Z-1.bak",
                                                     "gemm.jsonl.20250101T000000Z.bak"]
    assert (tmp_path / "gemm.jsonl.notes.bak").exists() and (tmp_path / "other.jsonl.20200101T000000Z.bak").exists()
    newest = start.backup
    for round_ in range(4):  # many fresh starts, most within one second: the newest 3 always, this one among them
        journal.append({"i": round_})
        start = journal.begin(SETTINGS, fresh=True)
        assert start.backup is not None and start.backup.exists() and start.backup != newest
        assert len(list(tmp_path.glob("gemm.jsonl.*Z*.bak"))) == KEPT_BACKUPS
        assert Journal(start.backup).records()[-1] == {"i": round_}
        newest = start.backup


# -- the tune lock ---------------------------------------------------------------------------


def start_holder(lock: Path, seconds: float) -> subprocess.Popen[str]:
    holder = subprocess.Popen(
        [sys.executable, str(PROGRAMS / "lock_holder.py"), str(lock), str(seconds)],
        stdout=subprocess.PIPE, text=True,
    )
    assert holder.stdout is not None
    assert holder.stdout.readline().strip() == "locked"
    return holder


def stop(holder: subprocess.Popen[str]) -> None:
    if holder.poll() is None:
        holder.kill()
    holder.wait()
    assert holder.stdout is not None
    holder.stdout.close()


def test_second_tune_of_a_target_is_busy(tmp_path: Path) -> None:
    lock = tmp_path / "gemm.lock"
    holder = start_holder(lock, 30)
    try:
        with pytest.raises(BusyError) as info:
            with TargetLock(lock, wait=False):
                pytest.fail("took a lock another process holds")
        message = str(info.value)
        assert f"pid {holder.pid}" in message and "--wait" in message and "since " in message
    finally:
        stop(holder)


def test_wait_acquires_after_release(tmp_path: Path) -> None:
    lock = tmp_path / "gemm.lock"
    holder = start_holder(lock, 0.6)
    try:
        started = time.monotonic()
        with TargetLock(lock, wait=True) as held:
            waited = time.monotonic() - started
            assert held.holder() is not None and held.holder()["pid"] == os.getpid()
        assert waited >= 0.3
        assert holder.wait(timeout=10) == 0
    finally:
        stop(holder)


def test_wait_with_timeout_gives_up(tmp_path: Path) -> None:
    lock = tmp_path / "gemm.lock"
    holder = start_holder(lock, 30)
    try:
        started = time.monotonic()
        with pytest.raises(BusyError, match="gave up waiting"):
            TargetLock(lock, wait=True, timeout=0.3).acquire()
        assert 0.25 <= time.monotonic() - started < 5
    finally:
        stop(holder)


def test_killed_holder_leaves_no_stale_lock(tmp_path: Path) -> None:
    lock = tmp_path / "gemm.lock"
    holder = start_holder(lock, 30)
    holder.send_signal(signal.SIGKILL)
    stop(holder)
    with TargetLock(lock, wait=False):
        pass  # the kernel dropped the dead holder's lock


def test_different_targets_proceed_side_by_side(tmp_path: Path) -> None:
    holder = start_holder(tmp_path / "gemm.lock", 30)
    try:
        with TargetLock(tmp_path / "conv.lock", wait=False) as held:
            assert held.is_locked
    finally:
        stop(holder)
