"""A driver whose runs cannot outlive it.

A driver (the CLI) calls `guard_driver` once: it becomes a child subreaper
(orphans of its runs are re-parented to it, not to init, and reaped), kills
every process it started at exit, and starts a watchdog process that does the
same when the driver dies without running any exit code (SIGKILL, the OOM
killer), and a thread that kills what runs as soon as it is `interrupt`ed
(ciq_build.measure.stopping).
"""

from __future__ import annotations

import atexit
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

from ciq_build.measure import processes
from ciq_build.measure.stopping import INTERRUPT_REQUESTED

WATCHDOG_REAP_S = 1.0  # how long a driver's exit waits for its watchdog's last sweep
_guard_lock = threading.Lock()
_guard: dict[str, object] = {}  # pid -> this process, watchdog -> its Popen, pipe -> the write end of its stdin


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
        processes.become_subreaper()
        token = processes.driver_token()
        read_end, write_end = os.pipe()  # the write end is ours alone (not inherited)
        package_parent = str(Path(__file__).resolve().parents[2])  # where `import ciq_build` finds it
        try:
            watchdog = subprocess.Popen(
                [sys.executable, "-S", "-c",
                 "import sys; sys.path.insert(0, sys.argv[1]); from ciq_build.measure.guard import run_watchdog; "
                 "run_watchdog(sys.argv[2])", package_parent, token],
                stdin=read_end, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd="/",
                start_new_session=True,  # Ctrl-C's SIGINT to our group must not stop it
                env={k: v for k, v in os.environ.items() if k != processes.ENV_MARK},
            )
            _guard["watchdog"] = watchdog  # held while it runs (a Popen collected running warns)
            processes.spare([watchdog.pid])
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
        processes.kill_all_running()
        return
    token = processes.driver_token()
    me = os.getpid()
    processes.kill_all_running()
    # Marked processes anywhere, and anything re-parented to us (a subreaper) with its tree.
    processes.kill_until_gone(lambda table: processes.marked_with(table, processes.of_driver(token))
                              | {pid for pid, info in table.items() if info.ppid == me and pid not in processes.spared()})
    pipe = _guard.pop("pipe", None)
    if isinstance(pipe, int):
        try:
            os.close(pipe)  # the watchdog sweeps once more and exits
        except OSError:
            pass
    # Reap it: everything is killed already, so its sweep takes moments. A Popen collected while its process still
    # runs warns ("subprocess N is still running": the clean-clone CI printed it at a test worker's exit).
    watchdog = _guard.pop("watchdog", None)
    if isinstance(watchdog, subprocess.Popen):
        try:
            watchdog.wait(timeout=WATCHDOG_REAP_S)
        except subprocess.TimeoutExpired:
            pass  # it sweeps on alone, as after a SIGKILL of this driver


def run_watchdog(token: str) -> None:
    """The watchdog process: wait for the driver to go (stdin closes), then kill what carries its mark."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        while sys.stdin.buffer.read(4096):
            pass
    except OSError:
        pass
    processes.kill_until_gone(lambda table: processes.marked_with(table, processes.of_driver(token)))


def _killer() -> None:
    """The driver's killer thread: once it is `interrupt`ed, kill what runs."""
    INTERRUPT_REQUESTED.wait()
    processes.kill_all_running()
