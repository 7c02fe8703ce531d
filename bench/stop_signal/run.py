"""How often a signal sent to a process is not heard by its main thread at once (issue 21 item 11).

Python runs a signal's handler in the main thread only, when that thread next
runs Python. The kernel may hand a signal sent to the process to another
thread: then a main thread blocked in one long wait (the search loop's wait
for its candidates, before the fix) hears of it only when the wait ends.
This starts a victim process per case, side by side in one run: three worker
threads that start processes back to back (proc.run, as a tune's workers
start compiles and benchmarks) or only spin in Python, and a main thread that
waits in one blocking wait or in proc.wait_or_stop's STOP_POLL steps (the
loop's wait now). It sends each victim SIGUSR1 `--signals` times and counts
the signals whose handler did not run within `--late` seconds.

    python bench/stop_signal/run.py [--signals 200] [--late 1.0]
"""

from __future__ import annotations

import argparse
import os
import resource
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout's ciq_build, run from anywhere
WORKERS = 3


def victim(work: str, wait: str) -> None:
    """The process signalled: WORKERS threads doing `work`, the main thread waiting as `wait` says."""
    from ciq_build.testing import run_process, wait_or_stop

    def heard(signum: int, frame: object) -> None:
        os.write(1, b"heard\n")
        raise KeyboardInterrupt

    signal.signal(signal.SIGUSR1, heard)

    def worker() -> None:
        while True:
            if work == "processes":
                run_process(["/bin/true"], 60)
            else:
                sum(range(10000))

    for _ in range(WORKERS):
        threading.Thread(target=worker, daemon=True).start()
    os.write(1, b"ready\n")
    forever = threading.Event()
    while True:
        try:
            while True:
                try:
                    if wait == "blocking":
                        forever.wait()
                    else:
                        wait_or_stop(forever.wait, "the bench")
                except KeyboardInterrupt:
                    pass
        except KeyboardInterrupt:  # a second signal as the first unwinds
            pass


def count_late(work: str, wait: str, signals: int, late: float) -> int:
    """Signals of `signals` whose handler did not run within `late` seconds."""
    process = subprocess.Popen([sys.executable, __file__, "--victim", work, wait], stdout=subprocess.PIPE)
    assert process.stdout is not None
    assert process.stdout.readline() == b"ready\n"
    heard: list[float] = []

    def read() -> None:
        assert process.stdout is not None
        for _ in process.stdout:
            heard.append(time.monotonic())

    threading.Thread(target=read, daemon=True).start()
    time.sleep(0.5)  # the victim in its wait
    missed = 0
    try:
        for _ in range(signals):
            before = len(heard)
            sent = time.monotonic()
            process.send_signal(signal.SIGUSR1)
            while len(heard) == before and time.monotonic() - sent < late:
                time.sleep(0.001)
            if len(heard) == before:
                missed += 1
                # Pending, unheard: more signals until one reaches the main thread, so the next counts alone.
                while len(heard) == before and process.poll() is None:
                    process.send_signal(signal.SIGUSR1)
                    time.sleep(0.05)
            time.sleep(0.01)
    finally:
        process.kill()
        process.wait()
    return missed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--signals", type=int, default=200)
    parser.add_argument("--late", type=float, default=1.0, help="seconds after which a signal counts as unheard")
    parser.add_argument("--victim", nargs=2, metavar=("WORK", "WAIT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.victim:
        victim(*args.victim)
        return 0
    print(f"{WORKERS} worker threads; {args.signals} SIGUSR1 per case; unheard: no handler within {args.late} s")
    print(f"{'workers':<10} {'main thread waits':<18} {'unheard':>8} {'share':>7} {'wall s':>7} {'child CPU s':>12}")
    for work in ("processes", "spin"):
        for wait in ("blocking", "stepped"):
            started = time.monotonic()
            cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
            missed = count_late(work, wait, args.signals, args.late)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            used = after.ru_utime + after.ru_stime - cpu.ru_utime - cpu.ru_stime
            print(f"{work:<10} {wait:<18} {missed:>8} {missed / args.signals:>7.1%} "
                  f"{time.monotonic() - started:>7.1f} {used:>12.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
