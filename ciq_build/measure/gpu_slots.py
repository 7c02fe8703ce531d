"""Sharing GPUs between parallel jobs: at most one benchmark per GPU at a time, in this process and in
the other tunes sharing GPU_LOCK_DIR's locks."""

from __future__ import annotations

import os
import queue
import re
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ciq_build.errors import ConfigError
from ciq_build.measure import stopping


@dataclass
class GpuSlots:
    """At most one benchmark per GPU at a time, shared by the driver's worker threads.

    ``devices``: the GPUs to spread benchmarks over (CUDA_VISIBLE_DEVICES values,
    e.g. ``["0", "1"]``); each run holding a slot sees only its GPU. Empty: one
    slot, the default GPU, environment untouched. Builds need no slot, so with
    ``--jobs 4`` and one GPU, compiles overlap while benchmarks queue.
    """

    devices: Sequence[str | int] = ()
    _free: queue.Queue[str | None] = field(default_factory=queue.Queue, init=False, repr=False)

    def __post_init__(self) -> None:
        names = tuple(str(device).strip() for device in self.devices)
        if any(not name for name in names):
            raise ConfigError(f"a GPU in {list(self.devices)!r} is empty; give CUDA device numbers or UUIDs")
        if len(set(names)) != len(names):
            raise ConfigError(f"a GPU is listed twice in {list(names)!r}; two benchmarks would share it")
        self.devices = names
        for name in names or (None,):
            self._free.put(name)

    @property
    def count(self) -> int:
        return max(1, len(self.devices))

    @contextmanager
    def query(self) -> Iterator[dict[str, str]]:
        """A slot for a question to the GPU (which architecture it is), not a benchmark: held as `slot` holds
        one, and never counted by a subclass that meters the benchmarks' holds (ciq_build.tune.gpu_time)."""
        with GpuSlots.slot(self) as env:
            yield env

    @contextmanager
    def slot(self) -> Iterator[dict[str, str]]:
        """Block until a GPU is free (in this process, and in the others sharing GPU_LOCK_DIR's locks);
        yield the environment that pins a run to it."""
        # Waited for in steps, not blocked on: a worker thread waiting here when the tune is interrupted
        # must give up, not take the slot its killed holder frees and start a full benchmark.
        taken: list[str | None] = []

        def take(timeout: float) -> bool:
            try:
                taken.append(self._free.get(timeout=timeout))
            except queue.Empty:
                return False
            return True

        stopping.wait_or_stop(take, "waiting for a GPU")
        device = taken[0]
        try:
            with _held_across_processes(device):
                yield {} if device is None else {"CUDA_VISIBLE_DEVICES": device}
        finally:
            self._free.put(device)


# Set (to a folder) by a parent that runs several tunes on this machine at once (tune A B --executor ray):
# each GPU slot is then also an exclusive lock on a file there, so that the tunes' own measurements on
# this machine (the baselines, the re-measures before the pins) never share a GPU with one another.
GPU_LOCK_DIR = "CIQ_GPU_LOCK_DIR"


@contextmanager
def _held_across_processes(device: str | None) -> Iterator[None]:
    folder = os.environ.get(GPU_LOCK_DIR)
    if not folder:
        yield
        return
    import fcntl

    Path(folder).mkdir(parents=True, exist_ok=True)
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", device) if device is not None else "default"
    with open(Path(folder) / f"gpu-{name}.lock", "a") as lock:
        def take(timeout: float) -> bool:  # released when the file closes, or when its holder dies
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                time.sleep(timeout)  # flock has no timeout of its own; and a stopped tune must not wait on
                return False
            return True

        stopping.wait_or_stop(take, "waiting for a GPU another tune holds")
        yield
