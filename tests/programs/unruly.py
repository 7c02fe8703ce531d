#!/usr/bin/env python3
"""Processes that abuse their runner: `unruly.py <mode> [args...]`.

Used by tests/measure/test_proc.py as real processes: endless or huge output, a child
that keeps the output pipe open after the main process exits, a grandchild in
a session of its own, a driver (ciq_build.measure.proc.run inside) to be killed.
"""

from __future__ import annotations

import os
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def peak_resident_kib() -> int:
    """This process's own peak resident set (VmHWM), in KiB.

    Not getrusage's ru_maxrss: Linux carries that across exec from the forking
    parent, so a child of a big pytest process would report pytest's size.
    """
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise RuntimeError("no VmHWM in /proc/self/status")


def _write_pid(pid_file: str, pid: int | None = None) -> None:
    with open(pid_file + ".tmp", "w") as handle:
        handle.write(str(os.getpid() if pid is None else pid))
    os.rename(pid_file + ".tmp", pid_file)


def _wait_for(path: str) -> None:
    while not os.path.exists(path):
        time.sleep(0.01)


def endless(stream: str = "stdout") -> int:
    """Print forever, as fast as the pipe takes it."""
    out = (sys.stdout if stream == "stdout" else sys.stderr).buffer
    block = (b"y" * 1023 + b"\n") * 1024
    while True:
        out.write(block)


def big(megabytes: str, metric: str = "yes") -> int:
    """`megabytes` MB of output on stdout, then a metric line."""
    block = (b"z" * 1023 + b"\n") * 1024
    out = sys.stdout.buffer
    for _ in range(int(megabytes)):
        out.write(block)
    if metric == "yes":
        out.write(b"CIQ_METRIC time_ms=2.5\n")
    out.flush()
    return 0


def daemon_pipe(pid_file: str, new_session: str = "no") -> int:
    """Fork a child that keeps our stdout and stderr open and lives on; exit at once, successfully."""
    child = os.fork()
    if child == 0:
        if new_session == "yes":
            os.setsid()  # out of our process group: killpg of the benchmark misses it
        _write_pid(pid_file)
        while True:
            time.sleep(60)
    _wait_for(pid_file)
    print("CIQ_METRIC time_ms=1.5", flush=True)
    return 0


def setsid_grandchild(pid_file: str) -> int:
    """Start a grandchild in a session of its own (as ninja or a daemon does), then hang."""
    child = os.fork()
    if child == 0:
        os.setsid()
        grandchild = os.fork()
        if grandchild == 0:
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            _write_pid(pid_file)
            while True:
                time.sleep(60)
        os._exit(0)  # the grandchild is an orphan now, in its own session
    os.waitpid(child, 0)
    _wait_for(pid_file)
    print("started", flush=True)
    while True:
        time.sleep(60)


def drive(timeout: str, *argv: str) -> int:
    """Act as a ciq_build driver: run `argv` through ciq_build.measure.proc.run; report what it saw.

    `drive --guard ...` guards the process tree as the CLI does; `--claim DIR` claims DIR
    as a scratch tree first (and works in it); `--rlimit-as MIB` caps its address space.
    """
    from ciq_build.measure import claim, guard, proc

    args = [timeout, *argv]
    while args[0].startswith("--"):
        option = args.pop(0)
        if option == "--guard":
            guard.guard_driver()
        elif option == "--rlimit-as":  # MiB of address space: a runaway buffer fails fast
            limit = int(args.pop(0)) * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        elif option == "--claim":
            root = args.pop(0)
            claim.claim_tree(Path(root))
            os.chdir(root)
    timeout, argv = args[0], tuple(args[1:])
    started = time.monotonic()
    result = proc.run(list(argv), float(timeout))
    seconds = time.monotonic() - started
    maxrss_kib = peak_resident_kib()
    print(f"seconds={seconds:.3f} maxrss_kib={maxrss_kib} timed_out={result.timed_out} "
          f"returncode={result.returncode} stdout_chars={len(result.stdout)} stderr_chars={len(result.stderr)}")
    print(f"describe={result.describe()}")
    print(f"last_line={result.stdout.rstrip().rsplit(chr(10), 1)[-1][:80]}")
    print(f"notes={getattr(result, 'notes', '')}")
    return 0


def catastrophic(length: str) -> int:
    """One long line that makes '(a+)+$' backtrack for ever, then a metric the regex cannot match."""
    print("a" * int(length) + "!")
    print("CIQ_METRIC time_ms=1.0")
    return 0


MODES: dict[str, Callable[..., Any]] = {
    "endless": endless, "big": big, "daemon_pipe": daemon_pipe, "setsid_grandchild": setsid_grandchild,
    "drive": drive, "catastrophic": catastrophic,
}

if __name__ == "__main__":
    sys.exit(MODES[sys.argv[1]](*sys.argv[2:]))
