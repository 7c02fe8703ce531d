"""A fair share of the cluster's GPUs between targets tuned at once (`tune --all --executor ray`).

Why a share of our own: Ray hands a free GPU to the benchmark task that has
waited longest, whoever's it is. Two targets tuned together on one cluster
then get GPU time in proportion to how long their benchmarks are: a target
whose benchmarks take 3x longer holds the GPUs 3x longer per candidate, and
the other's short benchmarks queue behind them. So, before a compile actor
submits a benchmark task, it asks the share for a grant, and gives the grant
back when the task has ended, however it ended. A free GPU goes to the
waiting target that has used the fewest GPU-seconds so far (its finished
grants, plus the running ones up to now); among a target's own requests,
and between targets that have used the same, to the one waiting longest.
There are never more grants out than the cluster has GPUs of the kind
benchmarks ask for, so a granted task finds its GPU free in Ray.

Grants are bound to their holder, the compile actor that asked: the share
pings the holders of outstanding requests every `RECLAIM_INTERVAL` seconds,
and a holder that is gone (its actor killed, its tune stopped or SIGKILLed:
Ray ends a driver's actors with it) has its grants and requests dropped, so
a dead tune leaks no GPU. A lease with a timeout would reclaim too, but no
timeout fits every benchmark.

`FairShare` is the rule, plain Python with the clock passed in (unit-tested
without Ray); `GpuShare` is the Ray actor around it, created by the parent
`tune` (ciq_build.ray.targets) under `SHARE_NAME` and found by name by
every compile actor (`ShareClient.find`). A tune that finds no share (a
single `tune <target>`) asks for no grant: Ray schedules its benchmarks as
before.

The share is ended by the `tune` that created it (its `creator` token says
which), when that tune ends, stopped or not: Ray would end it with its
owner too, but only a moment after the owner's process is gone, and a
`tune` started again at once (a resume) would find the dying share by name,
join it, and report the stopped run's reclaimed grants as its own. A `tune`
that joined another's share reports the grants asked since it joined.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any

SHARE_NAME = "ciq_build_gpu_share"
NAMESPACE = "ciq_build"
RECLAIM_INTERVAL = 1.0  # seconds between pings of the holders of outstanding requests
PING_TIMEOUT = 10.0  # a holder that answers nothing for this long, but is not known dead, keeps its grants


@dataclass
class Grant:
    """One request for a GPU: who asked, when, when it was granted and given back (None: not yet)."""

    id: int
    target: str
    holder: str  # the asking compile actor (its Ray actor id)
    worker: str  # which worker that is, as the journal names it: "ray-<slot>@<host>:<pid>"
    asked: float
    granted: float | None = None
    released: float | None = None
    reclaimed: bool = False  # dropped because its holder died

    @property
    def seconds(self) -> float:
        """GPU-seconds this grant held (0 for a request dropped before it was granted)."""
        if self.granted is None or self.released is None:
            return 0.0
        return self.released - self.granted


@dataclass(frozen=True)
class TargetShare:
    """What one target had of the GPUs: its benchmarks, their GPU-seconds, its longest wait for a grant."""

    target: str
    benchmarks: int
    gpu_seconds: float
    longest_wait: float


class FairShare:
    """The rule: `capacity` GPUs, granted to waiting requests, least-used target first (ties: waiting longest).

    Every call that changes the requests returns the ids granted by it, for the caller to wake.
    """

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError("a GPU share needs at least one GPU")
        self.capacity = capacity
        self.log: list[Grant] = []  # every request, in the order asked
        self._open: dict[int, Grant] = {}  # requests waiting or held
        self._finished: dict[str, float] = {}  # GPU-seconds of each target's given-back grants

    def ask(self, target: str, holder: str, worker: str, now: float) -> tuple[int, list[int]]:
        """A new request; its id, and the ids granted now (it among them when a GPU is free)."""
        grant = Grant(len(self.log), target, holder, worker, now)
        self.log.append(grant)
        self._open[grant.id] = grant
        return grant.id, self._assign(now)

    def release(self, grant_id: int, now: float) -> list[int]:
        """The request is done with (its task ended, or it is withdrawn unanswered); the ids granted now."""
        grant = self._open.pop(grant_id, None)
        if grant is not None:
            self._close(grant, now)
        return self._assign(now)

    def drop_holder(self, holder: str, now: float) -> list[int]:
        """`holder` is dead: its grants and requests end now (reclaimed); the ids granted in their place."""
        for grant in [g for g in self._open.values() if g.holder == holder]:
            del self._open[grant.id]
            grant.reclaimed = True
            self._close(grant, now)
        return self._assign(now)

    def used(self, target: str, now: float) -> float:
        """GPU-seconds `target` has used up to `now`: given-back grants, and held ones so far."""
        running = sum(now - g.granted for g in self._open.values() if g.target == target and g.granted is not None)
        return self._finished.get(target, 0.0) + running

    def holders(self) -> set[str]:
        """The holders of outstanding requests (the ones worth pinging)."""
        return {g.holder for g in self._open.values()}

    def is_granted(self, grant_id: int) -> bool:
        grant = self.log[grant_id]
        return grant.granted is not None

    def shares(self, since: float = 0.0) -> list[TargetShare]:
        """Each target's benchmarks (granted requests asked at `since` or later), GPU-seconds and longest wait,
        in the order they first asked."""
        found: dict[str, TargetShare] = {}
        for grant in (g for g in self.log if g.asked >= since):
            share = found.get(grant.target, TargetShare(grant.target, 0, 0.0, 0.0))
            waited = (grant.granted if grant.granted is not None else grant.released or grant.asked) - grant.asked
            found[grant.target] = TargetShare(
                grant.target, share.benchmarks + (grant.granted is not None),
                share.gpu_seconds + grant.seconds, max(share.longest_wait, waited))
        return list(found.values())

    def _close(self, grant: Grant, now: float) -> None:
        grant.released = now
        self._finished[grant.target] = self._finished.get(grant.target, 0.0) + grant.seconds

    def _assign(self, now: float) -> list[int]:
        held = sum(1 for g in self._open.values() if g.granted is not None)
        waiting = [g for g in self._open.values() if g.granted is None]
        used = {target: self.used(target, now) for target in {g.target for g in waiting}}
        # Least-used target first; within it and on a tie, the request asked first (ids grow with time).
        waiting.sort(key=lambda g: (used[g.target], g.asked, g.id))
        granted = []
        for grant in waiting[:max(0, self.capacity - held)]:
            grant.granted = now
            granted.append(grant.id)
        return granted


def share_table(shares: list[TargetShare], capacity: int) -> str:
    """The end of a `tune --all --executor ray`: each target's benchmarks, GPU-seconds, % of all, longest wait."""
    total = sum(s.gpu_seconds for s in shares)
    lines = [f"GPU share ({capacity} GPU(s); a free GPU went to the waiting target with the fewest GPU-seconds):"]
    if not shares:
        return lines[0] + " no benchmark ran"
    width = max(len(s.target) for s in shares)
    for share in shares:
        percent = 100.0 * share.gpu_seconds / total if total else 0.0
        lines.append(f"  {share.target.ljust(width)}  {share.benchmarks} benchmark(s), {share.gpu_seconds:.1f} "
                     f"GPU-s ({percent:.0f}%), longest wait for a GPU {share.longest_wait:.1f} s")
    return "\n".join(lines)


class GpuShare:
    """The Ray actor (async: a waiting `acquire` blocks no other call): FairShare, waking, reclaiming."""

    def __init__(self, capacity: int, creator: str = "") -> None:
        self.rule = FairShare(capacity)
        self.creator = creator  # the token of the `tune` that created the share, the one to end it
        self._start = time.monotonic()
        self._granted: dict[int, asyncio.Event] = {}
        self._handles: dict[str, Any] = {}  # holder -> its actor handle, to ping
        self._reclaiming: asyncio.Task[None] | None = None

    def _now(self) -> float:
        return time.monotonic() - self._start

    def _wake(self, granted: list[int]) -> None:
        for grant_id in granted:
            event = self._granted.get(grant_id)
            if event is not None:
                event.set()

    async def acquire(self, target: str, worker: str, holder: Any) -> int:
        """Wait for a GPU; the grant's id, to give back with `release`."""
        if self._reclaiming is None:
            self._reclaiming = asyncio.get_running_loop().create_task(self._reclaim())
        key = holder._actor_id.hex()
        self._handles[key] = holder
        grant_id, granted = self.rule.ask(target, key, worker, self._now())
        event = self._granted[grant_id] = asyncio.Event()
        self._wake(granted)
        try:
            await event.wait()
        finally:
            del self._granted[grant_id]
        return grant_id

    def release(self, grant_id: int) -> None:
        self._wake(self.rule.release(grant_id, self._now()))

    def joined(self) -> tuple[str, float]:
        """The creator's token, and the share's clock now: a `tune` that joins reports the grants asked after it."""
        return self.creator, self._now()

    def log(self, since: float = 0.0) -> list[dict[str, Any]]:
        return [asdict(g) for g in self.rule.log if g.asked >= since]

    def shares(self, since: float = 0.0) -> list[TargetShare]:
        return self.rule.shares(since)

    async def _reclaim(self) -> None:
        import ray

        while True:
            await asyncio.sleep(RECLAIM_INTERVAL)
            for key in self.rule.holders():
                try:
                    await asyncio.wait_for(self._handles[key].alive.remote(), PING_TIMEOUT)
                except ray.exceptions.RayActorError:
                    dropped = self.rule.drop_holder(key, self._now())
                    self._handles.pop(key, None)
                    self._wake(dropped)
                    for grant in self.rule.log:  # its own waiting acquire calls return: nobody is there
                        if grant.holder == key and grant.id in self._granted:
                            self._granted[grant.id].set()
                except (TimeoutError, ray.exceptions.RayError):
                    pass  # busy, or not known dead: it keeps its grants


class ShareClient:
    """A compile actor's side of the share: a grant around each benchmark task."""

    def __init__(self, actor: Any, target: str, worker: str) -> None:
        self.actor = actor
        self.target = target
        self.worker = worker

    @classmethod
    def find(cls, target: str, worker: str) -> ShareClient | None:
        """The share of the `tune` that started this tune, or None (a tune of its own: no grant step)."""
        import ray

        try:
            actor = ray.get_actor(SHARE_NAME, namespace=NAMESPACE)
        except ValueError:
            return None
        return cls(actor, target, worker)

    @contextmanager
    def granted(self) -> Iterator[None]:
        """Hold a grant for what runs inside; given back however it ends."""
        import ray

        if self.actor is None:  # the share's tune has ended
            yield
            return
        me = ray.get_runtime_context().current_actor
        try:
            grant_id = ray.get(self.actor.acquire.remote(self.target, self.worker, me))
        except ray.exceptions.RayActorError:
            # The share's `tune` ended (it owned the share): go on as a tune of its own does.
            self.actor = None
            yield
            return
        try:
            yield
        finally:
            try:
                self.actor.release.remote(grant_id)
            except ray.exceptions.RayError:
                pass  # the share is gone with its tune: nothing to give back to
