"""Scratch trees: nothing left over from an earlier driver writes them.

`claim_tree`, called before a scratch tree is reused, kills what a driver that died before its watchdog
(ciq_build.measure.guard) could act left running in the tree, and refuses a tree that a process of unknown
origin still uses.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import time
from pathlib import Path

from ciq_build.errors import BusyError
from ciq_build.measure import processes
from ciq_build.state.durable import atomic_write

OWNER_FILE = ".ciq-owner.json"  # who uses a scratch tree (claim_tree)


def _proc_start(pid: int) -> int | None:
    info = processes.read_stat(pid)
    return info.start if processes.alive(info) else None


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
    for pid, info in processes.process_table().items():
        if not processes.alive(info):
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
    me, token = os.getpid(), processes.driver_token()
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
            killed = processes.kill_until_gone(lambda table: processes.marked_with(table, processes.of_driver(old)))
            if killed:
                done.append(f"killed {len(killed)} process(es) an earlier, stopped tune left running in {root} "
                            f"(pid {', '.join(str(p.pid) for p in killed[:5])}{', ...' if len(killed) > 5 else ''})")
    ours = processes.of_driver(token)

    def strangers() -> dict[int, str]:
        return {pid: what for pid, what in _users_of(root).items()
                if pid != me and pid not in processes.spared() and not any(ours(m) for m in processes.marks_of(pid))}

    # A process killed a moment ago (by the kill above, or the watchdog of a worker lost with its node) can
    # still hold the tree while it exits, its mark already unreadable: give such processes time to go.
    deadline = time.monotonic() + processes.KILL_PATIENCE
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
