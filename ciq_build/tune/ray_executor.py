"""Evaluations on a Ray cluster (`tune --executor ray`): one actor per evaluation slot, each with its own build tree.

The driver keeps everything that decides the result: the search (ask/tell),
the journal, the target's lock, the baseline, the confirmation and the pin
(ciq_build.tune.driver). This module only supplies the search loop's workers
(`RaySlot`) and a `Runner` (`RayRunner`) that sends each candidate to its
slot's actor. An actor configures its scratch tree once, when it starts, so a
candidate costs on a worker what it costs locally: one incremental rebuild.

Sources reach the actors through a shared filesystem (an actor reads the
user's sources and build tree at the driver's own paths: NFS, Lustre, or one
machine), or with `--ray-sources upload` through Ray's runtime_env
working_dir: the source tree is shipped, each actor configures its scratch
tree from its node's copy and proves the copy is the fingerprinted sources
first (ciq_build.tune.ray_sources). The toolchain is at the driver's paths
either way.

Faults: actors are created with max_restarts=0 and their calls run with
max_task_retries=0, so Ray never runs an evaluation again behind the
driver's back (nothing is counted twice). When an actor dies mid-evaluation
(killed, its process SIGKILLed, its node lost), its slot starts a replacement
on the same scratch tree and the same candidate is evaluated there: the loss
is counted in `RayPool.losses` and said, never journaled as the candidate's
failure. Finished evaluations are journaled by the driver as they arrive.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from ciq_build.build.cmake import ScratchTree, safe_name, scratch_root
from ciq_build.build.manifest import Manifest, Objective
from ciq_build.compiler.controls import Controls
from ciq_build.compiler.toolchain import Toolchain
from ciq_build.core.settings import CONFIGURE_TIMEOUT_FACTOR, MeasureSettings
from ciq_build.errors import BuildError, CiqError, ConfigError, MissingExtraError
from ciq_build.measure import proc
from ciq_build.measure.bench import GpuSlots
from ciq_build.search.base import Proposal
from ciq_build.search.evaluation import Evaluation
from ciq_build.tune.evaluator import BuildRunner
from ciq_build.tune.ray_sources import SourceUpload, check_copy, file_hashes, remapped_cache, worker_manifest

# A candidate whose worker dies this many times in a row ends the tune: the
# cluster, not the candidate, is failing (its finished evaluations are journaled).
MAX_LOSSES_PER_CANDIDATE = 3
# Seconds a stopping tune waits for its actors to kill their compiles and benchmarks.
STOP_TIMEOUT = 30.0


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise MissingExtraError("--executor ray needs Ray on the driver and on every worker: "
                                "pip install 'ciq-build[ray]'") from None
    return ray


def actor_resources(objectives: Sequence[Objective], gpu_resource: str | None) -> dict[str, Any]:
    """What one evaluation slot asks Ray for: a CPU, and a GPU (of a named kind) when a benchmark is scored."""
    if not any(o.source == "benchmark" for o in objectives):
        if gpu_resource:
            raise ConfigError("--ray-gpu-resource asks for a GPU kind, but no objective runs a benchmark "
                              "(static objectives use CPUs only); leave it out")
        return {"num_cpus": 1, "num_gpus": 0}
    request: dict[str, Any] = {"num_cpus": 1, "num_gpus": 1}
    if gpu_resource:
        # A custom resource the GPU nodes advertise (ray start --resources='{"H200": 8}'), one per GPU:
        # the tune then measures on the architecture it pins for.
        request["resources"] = {gpu_resource: 1}
    return request


@contextmanager
def connected(address: str | None, say: Callable[[str], None]) -> Iterator[None]:
    """Connected to Ray for what runs inside: ray.init, then shutdown; a connection made before is used and kept.

    `tune --all` holds one around all its targets' pools, so that the driver joins (or starts) the cluster
    once, not once per target.
    """
    ray = _ray()
    if ray.is_initialized():
        yield
        return
    # No address: RAY_ADDRESS, else the cluster `ray start` left here, else a new one on this machine.
    # ray.init replaces the SIGTERM handler; the CLI's (stop like Ctrl-C, resume later) is kept.
    on_sigterm = signal.getsignal(signal.SIGTERM)
    ray.init(address=address, log_to_driver=False, include_dashboard=False)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, on_sigterm)
    say(f"ray: connected to the cluster at {ray.get_runtime_context().gcs_address}")
    try:
        yield
    finally:
        ray.shutdown()


class EvaluationWorker:
    """The body of one Ray actor: a scratch tree of its own, configured once, and the real runner."""

    def __init__(self, manifest: Manifest, toolchain: Toolchain, objectives: Sequence[Objective], repeats: int,
                 timeout: float, root: str, upload: SourceUpload | None = None) -> None:
        proc.guard_driver()  # the compiles and benchmarks this actor starts die with it, even on SIGKILL
        self.upload = upload
        replayed = None
        if upload is not None:
            # Ray started this actor in its node's copy of the sources (the working_dir). The scratch tree
            # goes beside the copy, on the node's disk, named after it: Ray names a copy by its content, so
            # other sources get a tree of their own, never one configured from a copy Ray has since deleted.
            self.copy = Path.cwd()
            manifest = worker_manifest(manifest, self.copy)
            root = str(self.copy.parent / f"ciq-scratch-{self.copy.name}" / safe_name(manifest.target) / root)
            replayed = remapped_cache(upload, self.copy, Path(root) / "build")
        # Without the ptxas-only launcher: a Ray worker's environment is not the driver's shell.
        self.tree = ScratchTree(manifest, Path(root), toolchain, False, replayed_cache=replayed)
        # Ray's num_gpus sets CUDA_VISIBLE_DEVICES for this actor: the default slot is its GPU.
        self.runner = BuildRunner(manifest, toolchain, objectives, repeats, timeout, GpuSlots())
        self.timeout = timeout

    def source_hashes(self) -> tuple[str, dict[str, str]]:
        """Where this actor's copy of the sources is, and the hashes of the driver's fingerprinted files in it."""
        assert self.upload is not None
        return str(self.copy), file_hashes(self.copy, list(self.upload.files))

    def configure(self) -> str:
        """Take the tree over from a dead predecessor, configure it if needed; where this worker runs."""
        proc.claim_tree(self.tree.root)
        self.tree.configure(self.timeout * CONFIGURE_TIMEOUT_FACTOR)
        return f"{socket.gethostname()}:{os.getpid()}"

    def evaluate(self, proposal: Proposal, controls: Controls, key: str) -> Evaluation:
        return self.runner.evaluate(self.tree, proposal, controls, key)

    def stop(self) -> None:
        """Kill the compile or benchmark running now (called beside evaluate: the actor runs two calls at once)."""
        proc.kill_all_running()


@dataclass
class RaySlot:
    """One evaluation slot: its scratch tree and the actor that holds it now (replaced when it dies)."""

    index: int
    root: Path
    actor: Any = None
    where: str = ""  # host:pid of the actor
    copy: str = ""  # with --ray-sources upload: the actor's copy of the sources, on its node


@dataclass(frozen=True)
class WorkerLoss:
    """An actor that died while evaluating a candidate; the candidate ran again on its replacement."""

    slot: int
    where: str
    proposal: int
    error: str


class WorkerLostError(BuildError):
    """The Ray workers keep dying: the cluster is failing, not the candidates."""


@dataclass
class RayPool:
    """The tune's actors on a Ray cluster, one per slot; a context manager that starts and stops them.

    A pool serves one target: `tune --all` starts one per target, over one connection (`connected`).
    Actors are not shared across targets because what makes an actor worth keeping is the target's:
    its scratch tree is a configure of that target (its options file, its objects; configuring is
    most of an actor's start), its runner scores that target's objectives, and what it asks Ray for
    follows them (a static target's slot holds a CPU, a runtime target's a GPU, which a shared pool
    would hold idle while static targets compile). Targets are tuned one after another, so a pool
    per target never holds more than one pool's resources.
    """

    manifest: Manifest
    toolchain: Toolchain
    objectives: Sequence[Objective]
    measure: MeasureSettings
    count: int
    address: str | None = None
    gpu_resource: str | None = None
    say: Callable[[str], None] = print
    upload: SourceUpload | None = None  # --ray-sources upload: what to ship, what each copy must hold
    slots: list[RaySlot] = field(default_factory=list, init=False)
    losses: list[WorkerLoss] = field(default_factory=list, init=False)
    closing: bool = field(default=False, init=False)
    _connection: ExitStack = field(default_factory=ExitStack, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)
    _runtime_env: dict[str, Any] | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.request = actor_resources(self.objectives, self.gpu_resource)
        self.runner = RayRunner(self)

    @property
    def trees(self) -> Path:
        """The folder of the actors' scratch trees (beside the driver's, on the shared filesystem)."""
        return scratch_root(self.manifest)

    # -- start and stop ------------------------------------------------------

    def __enter__(self) -> Self:
        ray = _ray()
        self._connection.enter_context(connected(self.address, self.say))
        try:
            self._check_cluster(ray.cluster_resources())
            self.slots = [RaySlot(i, self.trees / f"ray-{i}") for i in range(self.count)]
            # One configure after another (see make_scratch_trees: projects write into their
            # sources at configure time); a restarted tune finds the trees configured.
            for slot in self.slots:
                self._start(slot)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        hosts = sorted({slot.where.split(":")[0] for slot in self.slots})
        trees = (f"sources uploaded (Ray working_dir), checked on each worker; scratch trees beside each copy "
                 f"(first: {self.slots[0].copy})" if self.upload else f"scratch trees in {self.trees}/ray-*")
        self.say(f"ray: {self.count} worker(s) on {', '.join(hosts)}, each asking for "
                 f"{_describe(self.request)}; {trees}")
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.stop_all()
        self._connection.close()
        if self.losses:
            self.say(f"ray: {len(self.losses)} worker(s) lost mid-evaluation; their candidates ran again "
                     "on replacements (not counted as candidate failures)")

    def stop_all(self) -> None:
        """Kill every actor's running compile or benchmark, then the actor; no replacement is started."""
        self.closing = True
        ray = _ray()
        actors = [slot.actor for slot in self.slots if slot.actor is not None]
        try:
            # Before the tune exits, not later: a stopped tune leaves nothing writing its scratch trees.
            ray.get([actor.stop.remote() for actor in actors], timeout=STOP_TIMEOUT)
        except ray.exceptions.RayError:
            pass  # an actor already dead: its watchdog kills what it started
        for actor in actors:
            ray.kill(actor, no_restart=True)

    def _check_cluster(self, resources: dict[str, float]) -> None:
        """Refuse a request no node can meet (Ray would wait for it forever)."""
        wanted = {"CPU": 1.0, "GPU": float(self.request["num_gpus"]), **self.request.get("resources", {})}
        for name, amount in wanted.items():
            if amount and resources.get(name, 0.0) < amount:
                hint = (f"start GPU nodes with ray start --resources='{{\"{name}\": <GPUs>}}'"
                        if name not in ("CPU", "GPU") else "add nodes, or point --ray-address at a cluster that has them")
                raise ConfigError(f"the Ray cluster has {resources.get(name, 0.0):g} {name}, and each evaluation "
                                  f"slot asks for {amount:g}: {hint}")

    def _start(self, slot: RaySlot) -> None:
        ray = _ray()
        options: dict[str, Any] = dict(self.request)
        if self.upload is not None:
            if self._runtime_env is None:  # uploaded once per pool; a replacement actor reuses it
                self._runtime_env = self.upload.runtime_env()
            options["runtime_env"] = self._runtime_env
        # max_concurrency 2: stop() can run while evaluate() does.
        actor_class = ray.remote(EvaluationWorker).options(max_restarts=0, max_task_retries=0, max_concurrency=2,
                                                            **options)
        # Uploading, the actor places its tree beside its copy of the sources: it gets the tree's name only.
        root = slot.root.name if self.upload is not None else str(slot.root)
        slot.actor = actor_class.remote(self.manifest, self.toolchain, self.objectives, self.measure.repeats,
                                        self.measure.timeout, root, self.upload)
        if self.upload is not None:
            # Before the configure: nothing is built from a copy that is not the fingerprinted sources.
            copy, hashes = _result(slot.actor.source_hashes.remote())
            check_copy(self.upload, hashes, f"ray-{slot.index}", copy)
            slot.copy = copy
        slot.where = _result(slot.actor.configure.remote())

    # -- faults ----------------------------------------------------------------

    def replace(self, slot: RaySlot, proposal: Proposal, error: BaseException) -> None:
        """Count the loss of `slot`'s actor during `proposal` and start its replacement on the same tree."""
        if self.closing:  # stop_all killed it: not a loss
            raise WorkerLostError("the tune is stopping") from error
        with self._lock:
            self.losses.append(WorkerLoss(slot.index, slot.where, proposal.id, f"{type(error).__name__}: {error}"))
            lost = sum(1 for loss in self.losses if loss.proposal == proposal.id)
        if lost >= MAX_LOSSES_PER_CANDIDATE:
            raise WorkerLostError(
                f"Ray workers died {lost} times while evaluating candidate {proposal.id} "
                f"(last: {type(error).__name__}); the cluster is failing, not the candidate. Finished "
                "evaluations are in the journal: fix the cluster and run the same command to resume.") from error
        self.say(f"ray: worker {slot.index} ({slot.where}) was lost while evaluating candidate {proposal.id} "
                 f"({type(error).__name__}); evaluating it again on a new worker")
        _ray().kill(slot.actor, no_restart=True)
        self._start(slot)


class RayRunner:
    """The `Runner` for the search loop: evaluates a candidate on its slot's actor, again on a replacement if it dies."""

    def __init__(self, pool: RayPool) -> None:
        self.pool = pool

    @property
    def needs_benchmark(self) -> bool:
        return any(o.source == "benchmark" for o in self.pool.objectives)

    def evaluate(self, worker: RaySlot, proposal: Proposal, controls: Controls, key: str) -> Evaluation:
        ray = _ray()
        while True:
            try:
                evaluated: Evaluation = _result(worker.actor.evaluate.remote(proposal, controls, key))
                evaluated.worker = f"ray-{worker.index}@{worker.where}"
                return evaluated
            except ray.exceptions.RayActorError as error:  # the actor (or its node) died: not the candidate's doing
                self.pool.replace(worker, proposal, error)

    def cancel_running(self) -> None:
        """The tune is stopping (Ctrl-C, SIGTERM): kill the actors so the loop's threads return now."""
        self.pool.stop_all()


def _result(ref: Any) -> Any:
    """An actor call's result; an error ciq_build reports to users (a busy tree, a failed configure) as itself."""
    ray = _ray()
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as error:
        if isinstance(error.cause, CiqError):
            raise error.cause from None  # its message says what to do; Ray's wrapper adds a remote traceback
        raise


def _describe(request: dict[str, Any]) -> str:
    parts = [f"{request['num_cpus']} CPU"]
    if request["num_gpus"]:
        parts.append(f"{request['num_gpus']} GPU")
    parts += [f"{amount} {name}" for name, amount in request.get("resources", {}).items()]
    return " + ".join(parts)
