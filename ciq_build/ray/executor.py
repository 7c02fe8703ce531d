"""Evaluations on a Ray cluster (`tune --executor ray`): one actor per evaluation slot, each with its own build tree.

The driver keeps everything that decides the result: the search (ask/tell),
the journal, the target's lock, the baseline, the confirmation and the pin
(ciq_build.tune.driver). This module only supplies the search loop's workers
(`RaySlot`) and a `Runner` (`RayRunner`) that sends each candidate to its
slot's actor. An actor configures its scratch tree once, when it starts, so a
candidate costs on a worker what it costs locally: one incremental rebuild.
For a runtime objective the actor holds CPUs only and runs each benchmark as
a Ray task holding a GPU (`GpuTaskRunner`), so no GPU idles through compiles.

Sources reach the actors through a shared filesystem (an actor reads the
user's sources and build tree at the driver's own paths: NFS, Lustre, or one
machine), or with `--ray-sources upload` through Ray's runtime_env
working_dir: the source tree is shipped, each actor configures its scratch
tree from its node's copy and proves the copy is the fingerprinted sources
first (ciq_build.ray.sources). The toolchain is at the driver's paths
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
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, Self

from ciq_build.compiler.controls import Controls
from ciq_build.compiler.gpu_arch import read_gpu_arch
from ciq_build.compiler.toolchain import Toolchain
from ciq_build.core.objectives import Objective, needs_benchmark
from ciq_build.errors import BuildError, CiqError, ConfigError, MissingExtraError
from ciq_build.measure import claim, guard, processes, stopping
from ciq_build.measure.bench import BenchSpec
from ciq_build.measure.gpu_slots import GpuSlots
from ciq_build.measure.racing import Incumbent, RaceBoard
from ciq_build.measure.stats import Measurement
from ciq_build.project.backend import BuildBackend
from ciq_build.project.manifest import Manifest
from ciq_build.project.worker import safe_name, scratch_root
from ciq_build.ray.gpu_share import ShareClient
from ciq_build.ray.sources import SourceUpload, check_copy, file_hashes, remapped_cache, worker_manifest
from ciq_build.search.base import Proposal
from ciq_build.search.evaluation import Evaluation
from ciq_build.tune.runner import Benchmarked, BuildRunner, run_benchmark
from ciq_build.tune.timeouts import Timeouts

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


def actor_resources(objectives: Sequence[Objective], gpu_resource: str | None, compile_resource: str | None = None,
                    *, split: bool = True) -> dict[str, Any]:
    """What one evaluation slot's actor asks Ray for: a CPU (and a unit of `compile_resource`, the nodes meant
    for compiles), plus a GPU only where the actor also runs the benchmark (`split=False`).

    Split (the default), a runtime objective's benchmark is a task of its own (`benchmark_resources`), so
    no GPU idles while its actor compiles.
    """
    benchmark = needs_benchmark(objectives)
    if not benchmark and gpu_resource:
        raise ConfigError("--ray-gpu-resource asks for a GPU kind, but no objective runs a benchmark "
                          "(static objectives use CPUs only); leave it out")
    if benchmark and not split:
        if compile_resource:
            raise ConfigError("--ray-compile-resource puts compiles on nodes of their own, but with --ray-sources "
                              "upload a runtime objective's actor compiles and benchmarks on one GPU node (the "
                              "benchmark it builds is on that node's disk); use --ray-sources shared, or leave it out")
        return {"num_cpus": 1, **benchmark_resources(gpu_resource, num_cpus=1)}
    request: dict[str, Any] = {"num_cpus": 1, "num_gpus": 0}
    if compile_resource:
        request["resources"] = {compile_resource: 1}
    return request


def _amounts(request: dict[str, Any]) -> dict[str, float]:
    """A Ray request's amounts by resource name, as ray.cluster_resources() names them."""
    return {name: float(amount) for name, amount in (("CPU", request.get("num_cpus", 0)),
                                                     ("GPU", request.get("num_gpus", 0)),
                                                     *request.get("resources", {}).items())}


def benchmark_resources(gpu_resource: str | None, *, num_cpus: int = 0) -> dict[str, Any]:
    """What one benchmark asks Ray for: a GPU, of the named kind if one is given; one benchmark per GPU at a time.

    No CPU for a benchmark task of its own: its host process runs on the GPU node's CPUs regardless, and a
    task that asked for one could wait forever behind compile actors holding every CPU, each waiting on it.
    """
    request: dict[str, Any] = {"num_cpus": num_cpus, "num_gpus": 1}
    if gpu_resource:
        # A custom resource the GPU nodes advertise (ray start --resources='{"H200": 8}'), one per GPU:
        # the tune then measures on the architecture it pins for.
        request["resources"] = {gpu_resource: 1}
    return request


@contextmanager
def connected(address: str | None, say: Callable[[str], None]) -> Iterator[None]:
    """Connected to Ray for what runs inside: ray.init, then shutdown; a connection made before is used and kept.

    `tune --all` holds one around all its targets' tunes, so that it joins (or starts) the cluster once and
    gives its address to each target's tune.
    """
    ray = _ray()
    if ray.is_initialized():
        yield
        return
    # No address: RAY_ADDRESS, else the cluster `ray start` left here, else a new one on this machine.
    # ray.init replaces the SIGTERM handler; the CLI's (stop, nothing new starts, resume later) are kept,
    # for each signal that stops a tune.
    handlers = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    ray.init(address=address, log_to_driver=False, include_dashboard=False)
    if threading.current_thread() is threading.main_thread():
        for signum, handler in handlers.items():
            if handler is not None:  # None: set outside Python, cannot be set back from here
                signal.signal(signum, handler)
    say(f"ray: connected to the cluster at {ray.get_runtime_context().gcs_address}")
    try:
        yield
    finally:
        ray.shutdown()


RacingState = tuple[str, Literal["min", "max"], Incumbent | None]  # a RaceBoard's metric, direction, incumbent


def benchmark_on_gpu(spec: BenchSpec, repeats: int,
                     racing: RacingState | None) -> tuple[Measurement, bool, Incumbent | None, float, int | None]:
    """The body of one benchmark task, on a worker holding a GPU (Ray set its CUDA_VISIBLE_DEVICES).

    The built benchmark is read at its path in the compile worker's scratch tree: a shared filesystem.
    Raced against the incumbent the compile worker knew; returns the board's incumbent after, for it to keep,
    and the seconds the task ran (the rest of the caller's wait was Ray's scheduling and the GPU's queue),
    and the architecture of the GPU it ran on (read here, on the worker: ciq_build.compiler.gpu_arch).
    """
    started = time.monotonic()
    guard.guard_driver()  # the benchmark dies with this worker, even on SIGKILL (a cancelled task)
    board = None
    if racing is not None:
        board = RaceBoard(racing[0], racing[1])
        if racing[2] is not None:
            board.offer(racing[2])
    measurement, raced = run_benchmark(spec, repeats, board)
    return (measurement, raced, board.incumbent if board is not None else None, time.monotonic() - started,
            read_gpu_arch({**os.environ, **spec.env} if spec.env else None))


class BenchmarkLostError(CiqError):
    """The worker running a candidate's benchmark task died (killed, its node lost): not the candidate's doing."""


class GpuTaskRunner(BuildRunner):
    """A compile worker's runner: builds here, on CPUs, and runs each benchmark as a task holding a GPU."""

    def __init__(self, *args: Any, benchmark: dict[str, Any], worker: str = "", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # max_retries 0: a benchmark is never run again behind the driver's back (see the module's Faults).
        self._task = _ray().remote(benchmark_on_gpu).options(max_retries=0, **benchmark)
        self._running: set[Any] = set()
        self._lock = threading.Lock()
        # Targets tuned together share the GPUs fairly (ciq_build.ray.gpu_share); a tune alone asks no grant.
        self._share = ShareClient.find(self.manifest.target, worker)

    def run_benchmark(self, spec: BenchSpec) -> Benchmarked:
        ray = _ray()
        board = self.racing
        racing = (board.metric, board.direction, board.incumbent) if board is not None else None
        asked = time.monotonic()
        with self._share.granted() if self._share is not None else nullcontext():
            ref = self._task.remote(spec, self.repeats, racing)
            with self._lock:
                self._running.add(ref)
            try:
                measurement, raced, best, ran, gpu = ray.get(ref)
            except ray.exceptions.RayTaskError:
                raise  # an error of ciq_build's in the task: said as it is
            except ray.exceptions.RayError as error:
                raise BenchmarkLostError(f"{type(error).__name__}: {error}") from None
            finally:
                with self._lock:
                    self._running.discard(ref)
        if board is not None and best is not None:
            board.offer(best)
        return Benchmarked(measurement, raced, max(0.0, time.monotonic() - asked - ran), gpu)

    def cancel(self) -> None:
        """Kill the benchmark tasks running now (their worker processes, and so their benchmarks)."""
        with self._lock:
            running = list(self._running)
        for ref in running:
            _ray().cancel(ref, force=True)


class EvaluationWorker:
    """The body of one Ray actor: a tree of its own (the backend's `make_tree`), configured once, and the real
    runner."""

    def __init__(self, backend: BuildBackend, manifest: Manifest, toolchain: Toolchain, objectives: Sequence[Objective],
                 repeats: int,
                 timeouts: Timeouts, configure_timeout: float, root: str, upload: SourceUpload | None = None,
                 benchmark: dict[str, Any] | None = None, writes_sources: bool = False,
                 scored_architecture: str | None = None) -> None:
        guard.guard_driver()  # the compiles and benchmarks this actor starts die with it, even on SIGKILL
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
        # The project's own kind of tree, asked of its backend; without the ptxas-only launcher: a Ray
        # worker's environment is not the driver's shell.
        self.tree = backend.make_tree(manifest, Path(root), toolchain, fast_path=False, replayed_cache=replayed)
        self.tree.writes_sources = writes_sources
        # `benchmark`: what a benchmark task asks Ray for; each runs as a task of its own, on a GPU, while this
        # actor holds CPUs only. None: this actor holds a GPU (Ray set its CUDA_VISIBLE_DEVICES, so the
        # default slot is it) and runs its benchmarks itself.
        # The worker as the journal names it (RayRunner.evaluate): its slot's tree, its host:pid.
        worker = f"{Path(root).name}@{socket.gethostname()}:{os.getpid()}"
        # `timeouts`: the driver's, derived from its baseline (ciq_build.tune.timeouts).
        self.runner = (GpuTaskRunner(manifest, toolchain, objectives, repeats, timeouts, GpuSlots(),
                                     benchmark=benchmark, worker=worker)
                       if benchmark is not None else BuildRunner(manifest, toolchain, objectives, repeats,
                                                                 timeouts, GpuSlots()))
        self.runner.scored_architecture = scored_architecture  # the driver's choice (ciq_build.compiler.gpu_arch)
        self.configure_timeout = configure_timeout

    def source_hashes(self) -> tuple[str, dict[str, str]]:
        """Where this actor's copy of the sources is, and the hashes of the driver's fingerprinted files in it."""
        assert self.upload is not None
        return str(self.copy), file_hashes(self.copy, list(self.upload.files))

    def configure(self) -> tuple[str, str]:
        """Take the tree over from a dead predecessor, configure it if needed; where this worker runs
        (host:pid, and its Ray node)."""
        claim.claim_tree(self.tree.root)
        self.tree.configure(self.configure_timeout)
        return f"{socket.gethostname()}:{os.getpid()}", _ray().get_runtime_context().get_node_id()

    def evaluate(self, proposal: Proposal, controls: Controls, key: str, incumbent: Incumbent | None = None,
                 measured: Sequence[Evaluation] = (), code_context: str | None = None) -> Evaluation:
        """A candidate, told what the driver knows: raced against `incumbent` (the best any worker has measured)
        if it is better than what this actor has seen itself, and taking the measurement of one of `measured`
        (other workers', the journal's) whose machine code it has. `code_context`: the driver's, so that code
        keys mean the same here as there."""
        if code_context is not None:
            self.runner.code_context = code_context
        if incumbent is not None and self.runner.racing is not None:
            self.runner.racing.offer(incumbent)
        for earlier in measured:
            self.runner.remember(earlier)
        return self.runner.evaluate(self.tree, proposal, controls, key)

    def alive(self) -> bool:
        """The GPU share's ping (a dead actor's grants are reclaimed; answered beside evaluate and stop)."""
        return True

    def stop(self) -> None:
        """Kill the compile or benchmark running now, and start nothing after it (called beside evaluate: the
        actor runs two calls at once; the pool kills the actor next, stop_all)."""
        # Nothing starts first: evaluate, seeing its build killed, would go on to its next step (a new
        # `cmake --build`), whose ninja and compiles the actor's kill would leave running a moment (seen:
        # a stopped tune's scratch tree still compiling once the driver had exited).
        stopping.stop_starting()
        if isinstance(self.runner, GpuTaskRunner):
            self.runner.cancel()
        processes.kill_all_running()


@dataclass
class RaySlot:
    """One evaluation slot: its scratch tree and the actor that holds it now (replaced when it dies)."""

    index: int
    root: Path
    actor: Any = None
    where: str = ""  # host:pid of the actor
    copy: str = ""  # with --ray-sources upload: the actor's copy of the sources, on its node
    node: str = ""  # the Ray node id of the actor
    told: set[str] = field(default_factory=set)  # the codes whose measurements its actor has (RayRunner.evaluate)


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

    A pool serves one target: `tune --all` runs each target's tune, and so its pool, in a process of its
    own (ciq_build.ray.targets), the pools side by side on one cluster, their compile slots split
    so that they fit its CPUs and their benchmarks granted GPUs by a fair share (ciq_build.ray.gpu_share).
    Actors are not shared across targets because what makes an actor worth keeping is the target's:
    its scratch tree is a configure of that target (its options file, its objects; configuring is
    most of an actor's start), its runner scores that target's objectives, and what it asks Ray for
    follows them (a runtime target's benchmarks ask for GPUs of its kind, a static target's for none).
    """

    backend: BuildBackend  # the project's: each actor asks it for its tree
    manifest: Manifest
    toolchain: Toolchain
    objectives: Sequence[Objective]
    repeats: int
    timeouts: Timeouts  # each candidate's compile and benchmark run, as the driver derived them from its baseline
    configure_timeout: float  # each actor's scratch tree configure
    count: int
    address: str | None = None
    gpu_resource: str | None = None
    say: Callable[[str], None] = print
    upload: SourceUpload | None = None  # --ray-sources upload: what to ship, what each copy must hold
    compile_resource: str | None = None  # a custom resource of the nodes meant for compiles (CPU-only ones)
    # The driver's runner: what the tune knows so far (the race's incumbent: the baseline, then every full
    # measurement from any worker), which each candidate's actor is told, as a local worker thread knows it.
    known: BuildRunner | None = None
    writes_sources: bool = False  # the project writes into its source tree: each tree's first build takes turns
    slots: list[RaySlot] = field(default_factory=list, init=False)
    losses: list[WorkerLoss] = field(default_factory=list, init=False)
    closing: bool = field(default=False, init=False)
    _connection: ExitStack = field(default_factory=ExitStack, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)
    _runtime_env: dict[str, Any] | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        # Benchmarks on GPUs apart from compiles, except where the built benchmark is on its compile node's disk
        # alone (uploaded sources): there the actor holds a GPU and runs it (ciq_build.ray.sources has no shipping of it).
        split = self.upload is None
        self.request = actor_resources(self.objectives, self.gpu_resource, self.compile_resource, split=split)
        self.benchmark = benchmark_resources(self.gpu_resource) if split and needs_benchmark(self.objectives) else None
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
            # One configure after another (configures of one source tree take turns:
            # cmake_trees.source_tree_turn); a restarted tune finds the trees configured.
            for slot in self.slots:
                self._start(slot)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        hosts = sorted({slot.where.split(":")[0] for slot in self.slots})
        trees = (f"sources uploaded (Ray working_dir), checked on each worker; scratch trees beside each copy "
                 f"(first: {self.slots[0].copy})" if self.upload else f"scratch trees in {self.trees}/ray-*")
        benchmarks = (f"; benchmarks as tasks asking for {_describe(self.benchmark)}, one per GPU at a time"
                      if self.benchmark else "")
        self.say(f"ray: {self.count} worker(s) on {', '.join(hosts)} (node(s) "
                 f"{', '.join(sorted({slot.node[:12] for slot in self.slots}))}), each asking for "
                 f"{_describe(self.request)}{benchmarks}; {trees}")
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
        """Refuse a request the cluster cannot meet (Ray would wait for it forever): a benchmark task's, or the
        slots' together, since every actor holds its request for the whole tune and the pool waits for all."""
        per_slot = _amounts(self.request)
        wanted = {name: amount * self.count for name, amount in per_slot.items()}
        for name, amount in _amounts(self.benchmark or {}).items():
            wanted[name] = max(wanted.get(name, 0.0), amount)
        for name, amount in wanted.items():
            have = resources.get(name, 0.0)
            if amount and have < amount:
                hint = (f"start the nodes with ray start --resources='{{\"{name}\": <count>}}'"
                        if name not in ("CPU", "GPU") else "add nodes, or point --ray-address at a cluster that has them")
                if per_slot.get(name) and have >= per_slot[name]:  # one slot fits, --jobs of them do not
                    hint = f"lower --jobs to {int(have // per_slot[name])}, or {hint}"
                raise ConfigError(f"the Ray cluster has {have:g} {name}, and the {self.count} evaluation slot(s) "
                                  f"(--jobs) ask for {amount:g}, each holding its share for the whole tune: {hint}")

    def _start(self, slot: RaySlot) -> None:
        ray = _ray()
        slot.told = set()  # a new actor knows no measurement yet
        options: dict[str, Any] = dict(self.request)
        if self.upload is not None:
            if self._runtime_env is None:  # uploaded once per pool; a replacement actor reuses it
                self._runtime_env = self.upload.runtime_env()
            options["runtime_env"] = self._runtime_env
        # max_concurrency 3: stop() and the GPU share's alive() can run while evaluate() does.
        actor_class = ray.remote(EvaluationWorker).options(max_restarts=0, max_task_retries=0, max_concurrency=3,
                                                            **options)
        # Uploading, the actor places its tree beside its copy of the sources: it gets the tree's name only.
        root = slot.root.name if self.upload is not None else str(slot.root)
        slot.actor = actor_class.remote(self.backend, self.manifest, self.toolchain, self.objectives, self.repeats,
                                        self.timeouts, self.configure_timeout, root, self.upload, self.benchmark,
                                        self.writes_sources,
                                        self.known.scored_architecture if self.known is not None else None)
        if self.upload is not None:
            # Before the configure: nothing is built from a copy that is not the fingerprinted sources.
            copy, hashes = _result(slot.actor.source_hashes.remote())
            check_copy(self.upload, hashes, f"ray-{slot.index}", copy)
            slot.copy = copy
        slot.where, slot.node = _result(slot.actor.configure.remote())

    # -- faults ----------------------------------------------------------------

    def replace(self, slot: RaySlot, proposal: Proposal, error: BaseException) -> None:
        """Count the loss of `slot`'s actor during `proposal` and start its replacement on the same tree."""
        self.count_loss(slot, proposal, error, "worker")
        _ray().kill(slot.actor, no_restart=True)
        self._start(slot)

    def count_loss(self, slot: RaySlot, proposal: Proposal, error: BaseException, what: str) -> None:
        """Count a worker lost during `proposal` (`slot`'s actor, or the task running its benchmark), and say it;
        raise when the tune is stopping, or when this candidate has lost too many."""
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
        again = "on a new worker" if what == "worker" else "on the same worker"
        self.say(f"ray: {what} {slot.index} ({slot.where}) was lost while evaluating candidate {proposal.id} "
                 f"({type(error).__name__}); evaluating it again {again}")


class RayRunner:
    """The `Runner` for the search loop: evaluates a candidate on its slot's actor, again on a replacement if it dies."""

    def __init__(self, pool: RayPool) -> None:
        self.pool = pool

    @property
    def needs_benchmark(self) -> bool:
        return needs_benchmark(self.pool.objectives)

    def evaluate(self, worker: RaySlot, proposal: Proposal, controls: Controls, key: str) -> Evaluation:
        ray = _ray()
        known = self.pool.known
        while True:
            incumbent, measured, context = self._news(worker)
            try:
                evaluated: Evaluation = _result(
                    worker.actor.evaluate.remote(proposal, controls, key, incumbent, measured, context))
                evaluated.worker = f"ray-{worker.index}@{worker.where}"
                worker.told.update(e.code for e in measured if e.code is not None)
                if evaluated.code is not None:
                    worker.told.add(evaluated.code)
                if known is not None:
                    known.remember(evaluated, incumbent=True)  # the next candidates, on any worker, race it or share it
                return evaluated
            except ray.exceptions.RayActorError as error:  # the actor (or its node) died: not the candidate's doing
                self.pool.replace(worker, proposal, error)
            except BenchmarkLostError as error:  # its benchmark task's worker died: the compile actor is fine
                self.pool.count_loss(worker, proposal, error, "the benchmark of worker")

    def _news(self, worker: RaySlot) -> tuple[Incumbent | None, list[Evaluation], str | None]:
        """What `worker`'s actor is told with its next candidate: the driver's race incumbent, the measurements
        it has not been told of yet (a replacement actor: all of them), and the driver's code context.
        Code measured on two workers at once is still measured twice: each learns of the other's afterwards."""
        known = self.pool.known
        if known is None:
            return None, [], None
        incumbent = known.racing.incumbent if known.racing is not None else None
        measured = [e for e in known.dedupe.known() if e.code not in worker.told] if known.dedupe is not None else []
        return incumbent, measured, known.code_context

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
