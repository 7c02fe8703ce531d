#!/usr/bin/env python3
"""A benchmark that misbehaves on purpose: `fault_bench.py <mode> [args...]`.

Each mode is one way a real benchmark goes wrong (or right); the tests run it
as a real process through ciq_build.measure.bench and check the verdict.
"""

from __future__ import annotations

import os
import random
import signal
import sys
import time
from collections.abc import Callable
from typing import Any


def good(time_ms: str = "1.25", *extra: str) -> int:
    print("warming up ...")
    for line in extra:
        print(line)
    print(f"CIQ_METRIC time_ms={time_ms}")
    print("CIQ_CHECK PASS")
    return 0


def hang() -> int:
    print("starting, then hanging", flush=True)
    while True:
        time.sleep(60)


def hang_child(pid_file: str) -> int:
    """Fork a child that hangs, then hang too: the timeout must kill both."""
    child = os.fork()
    if child == 0:
        with open(pid_file + ".tmp", "w") as handle:
            handle.write(str(os.getpid()))
        os.rename(pid_file + ".tmp", pid_file)
        while True:
            time.sleep(60)
    while True:
        time.sleep(60)


def daemon_child(pid_file: str) -> int:
    """Leave a hanging child detached from our pipes and exit successfully."""
    child = os.fork()
    if child == 0:
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        with open(pid_file + ".tmp", "w") as handle:
            handle.write(str(os.getpid()))
        os.rename(pid_file + ".tmp", pid_file)
        while True:
            time.sleep(60)
    while not os.path.exists(pid_file):
        time.sleep(0.01)
    return good("2.5")


def segv() -> int:
    print("CIQ_METRIC time_ms=1.0", flush=True)  # a metric printed before the crash does not count
    os.kill(os.getpid(), signal.SIGSEGV)
    return 0


def garbage(with_metric: str = "yes") -> int:
    rng = random.Random(1234)
    out = sys.stdout.buffer
    for _ in range(200):
        out.write(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200))))
        out.write(b"\n")
    # Near misses of the protocol, which must be ignored.
    out.write(b"CIQ_METRICS time_ms=9\nciq_metric time_ms=9\nCIQ_CHECKED FAIL\n\xff\xfeCIQ_METRIC time_ms=9\n")
    if with_metric == "yes":
        out.write(b"CIQ_METRIC time_ms=3.5\n")
    out.flush()
    return 0


def huge(where: str) -> int:
    """About 6 MB of output, more than ciq_build keeps; the metric first or last."""
    if where == "first":
        print("CIQ_METRIC time_ms=4.0")
    line = "x" * 99 + "\n"
    sys.stdout.write(line * 60_000)
    if where == "last":
        print("CIQ_METRIC time_ms=4.0")
    return 0


def metric(value: str) -> int:
    print(f"CIQ_METRIC time_ms={value}")
    return 0


def check_fail() -> int:
    print("CIQ_METRIC time_ms=0.5")
    print("CIQ_CHECK FAIL")
    print("max abs error 3.2e+01 at index 17", file=sys.stderr)
    return 1


def exit_code(code: str) -> int:
    print("CIQ_METRIC time_ms=0.5")
    print("out of memory", file=sys.stderr)
    return int(code)


def no_metric() -> int:
    print("kernel done in 1.75 ms")
    return 0


def no_gpu() -> int:
    print("CIQ_ERROR no-gpu")
    return 1


def cuda_text() -> int:
    # The words the CUDA runtime prints on a machine without a driver (measured here).
    print("cudaGetDeviceCount: cudaErrorInsufficientDriver: "
          "CUDA driver version is insufficient for CUDA runtime version", file=sys.stderr)
    return 1


def kernel_fault(error: str = "an illegal memory access was encountered") -> int:
    # A CUDA_CHECK that prints and goes on (simpleGEMM's gpuAssert): the kernel failed, the time is printed anyway.
    print(f"GPUassert: {error} gemm.cuh 120")
    print("Time elapse: 0.5ms")
    return 0


def stderr_metric() -> int:
    print("CIQ_METRIC time_ms=6.0", file=sys.stderr)
    return 0


def record(log: str, label: str, time_ms: str) -> int:
    """Append `label` to `log` (run order), then report `time_ms`."""
    with open(log, "a") as handle:
        handle.write(label + "\n")
    return metric(time_ms)


def exclusive(lock_dir: str, seconds: str) -> int:
    """Fail the check if another run holds the same GPU at the same time."""
    device = os.environ.get("CUDA_VISIBLE_DEVICES", "default")
    marker = os.path.join(lock_dir, f"busy-{device}")
    try:
        os.mkdir(marker)  # atomic: exists means another benchmark is on this GPU now
    except FileExistsError:
        print(f"overlap on GPU {device}")
        print("CIQ_CHECK FAIL")
        return 0
    try:
        time.sleep(float(seconds))
    finally:
        os.rmdir(marker)
    with open(os.path.join(lock_dir, "log"), "a") as handle:
        handle.write(device + "\n")
    print(f"CIQ_METRIC device={0 if device == 'default' else int(device)}")
    print("CIQ_METRIC time_ms=1")
    print("CIQ_CHECK PASS")
    return 0


MODES: dict[str, Callable[..., Any]] = {
    "good": good, "hang": hang, "hang_child": hang_child, "daemon_child": daemon_child,
    "segv": segv, "garbage": garbage, "huge": huge, "metric": metric, "check_fail": check_fail,
    "exit": exit_code, "no_metric": no_metric, "no_gpu": no_gpu, "cuda_text": cuda_text,
    "kernel_fault": kernel_fault,    "stderr_metric": stderr_metric, "record": record, "exclusive": exclusive,
}

if __name__ == "__main__":
    sys.exit(MODES[sys.argv[1]](*sys.argv[2:]))
