"""Several targets tuned at once on one Ray cluster: `tune --all --executor ray`, `tune A B --executor ray`.

The parent `tune` connects to (or starts) the cluster once, creates the GPU
share (ciq_build.ray.gpu_share) and runs each target's tune as a `tune
<target> ... --ray-address <the cluster>` process of its own, with the same
options, at most `--ray-targets` at once. Processes, not threads of one
driver, because a tune is a driver through and through: its target's lock,
its journal, its signal handling (SIGTERM stops it as Ctrl-C does), its
process guard (what it started dies with it, ciq_build.measure.guard), its
progress and its logger are each one per process. As a child, each target's
tune is exactly `tune <target>`: it stops, resumes from its journal and pins
its record exactly as one does. What it costs: one Ray connection and one
Python start per target, seconds against a tune's minutes.

Each child's output is relayed line by line, prefixed with its target.
SIGINT or SIGTERM to the parent sends SIGTERM to every child (they run in
sessions of their own, so a terminal's Ctrl-C reaches them once, through the
parent) and waits for them: each kills its compiles and benchmarks and keeps
its journal, and the same command resumes them all. A child SIGKILLed with
the parent dies too (its environment carries the parent's run mark).

Compile slots: each compile actor asks Ray for a CPU, and a pool waits for
all of its actors, so targets whose --jobs together exceed the cluster's CPUs
would wait on each other's actors until the first target ends. The CPUs are
split instead (`plan_slots`): each target gets an equal part, at least one
slot, said in one line; fewer targets tune at once where even that does not
fit. Splitting beats refusing: the user asked for all targets, and the
slots only bound how many candidates compile at once.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from ciq_build.errors import ConfigError
from ciq_build.measure import proc
from ciq_build.measure.gpu_slots import GPU_LOCK_DIR
from ciq_build.project.worker import safe_name
from ciq_build.ray.executor import STOP_TIMEOUT, _ray, connected
from ciq_build.ray.gpu_share import NAMESPACE, SHARE_NAME, GpuShare, TargetShare, share_table
from ciq_build.ray.options import ray_options
from ciq_build.tune.progress import LOG
from ciq_build.tune.target_result import TargetResult, not_run, read_result, stops_the_rest
from ciq_build.tune.tune_options import TuneOptions

POLL_INTERVAL = 0.2  # seconds between looks at the children
# How long a stopped child may take beyond its actors' STOP_TIMEOUT before it is killed.
CHILD_STOP_GRACE = 30.0


@dataclass(frozen=True)
class SlotPlan:
    """How many targets tune at once, and each one's --jobs; `note`: what was cut, and why."""

    together: int
    jobs: int
    note: str | None = None


def plan_slots(targets: int, jobs: int, limit: int | None, cpus: float) -> SlotPlan:
    """Fit the targets' compile slots into the cluster's CPUs (see the module's Compile slots)."""
    slots = int(cpus)
    if slots < 1:
        raise ConfigError(f"the Ray cluster has {cpus:g} CPU for compile workers, and each asks for 1: add nodes, "
                          "or point --ray-address at a cluster that has CPUs")
    wanted = min(targets, limit or targets)
    together = min(wanted, slots)
    each = min(jobs, slots // together)
    if together == wanted and each == jobs:
        return SlotPlan(together, jobs)
    fewer = f"{together} of them at once (the rest as these end), " if together < wanted else ""
    return SlotPlan(together, each, f"ray: {wanted} target(s) at once with --jobs {jobs} each need {wanted * jobs} "
                                    f"CPUs for compile workers and the cluster has {slots}: {fewer}each with --jobs "
                                    f"{each} (--ray-targets N tunes fewer at once, each with more)")


def compile_cpus(resources: dict[str, float], compile_resource: str | None) -> float:
    """What the compile actors can get: the CPUs, and the compile nodes' resource where one is named."""
    cpus = resources.get("CPU", 0.0)
    return min(cpus, resources.get(compile_resource, 0.0)) if compile_resource else cpus


def gpu_capacity(resources: dict[str, float], gpu_resource: str | None) -> int:
    """The GPUs benchmarks can get (each asks one GPU, of the named kind if any): the share's capacity."""
    gpus = resources.get("GPU", 0.0)
    return int(min(gpus, resources.get(gpu_resource, 0.0)) if gpu_resource else gpus)


def tune_together(options: TuneOptions, targets: list[str]) -> list[TargetResult]:
    """Tune `targets` at once, each in a `tune` process of its own, sharing one cluster; what each came to."""
    ray = _ray()
    own = ray_options(options.executor_options)
    say = (lambda text: None) if options.quiet else (lambda text: LOG.info("%s", text))
    with connected(own.ray_address, say):
        resources = ray.cluster_resources()
        plan = plan_slots(len(targets), options.jobs, own.ray_targets,
                          compile_cpus(resources, own.ray_compile_resource))
        if plan.note:
            LOG.warning("%s", plan.note)
        capacity = gpu_capacity(resources, own.ray_gpu_resource)
        # A share for the targets' benchmarks (a static target never asks). get_if_exists: another tune of
        # several on this cluster already has one, and its targets and ours share the GPUs.
        token = uuid.uuid4().hex
        share = (ray.remote(GpuShare).options(name=SHARE_NAME, namespace=NAMESPACE, num_cpus=0, max_restarts=0,
                                              get_if_exists=True).remote(capacity, token) if capacity else None)
        creator, since = ray.get(share.joined.remote()) if share is not None else ("", 0.0)  # up before any child looks
        # The address given (a ray:// client address is reachable from here; the cluster's own may not be),
        # else the one of the cluster found or started here.
        address = own.ray_address or ray.get_runtime_context().gcs_address
        child_options = dataclasses.replace(options, jobs=plan.jobs, targets=(), executor_options=dataclasses.replace(
            own, ray_targets=None, ray_address=address))
        try:
            with tempfile.TemporaryDirectory(prefix="ciq-targets-") as results:
                return _Children(child_options, targets, plan.together, Path(results), say).run()
        finally:
            if share is not None:
                _report_share(share, capacity, since, options.build_dir / "ciq" / "gpu-share.jsonl")
                if creator == token:  # ours: end it now, not when Ray notices we are gone (ciq_build.ray.gpu_share)
                    with contextlib.suppress(ray.exceptions.RayError):
                        ray.kill(share, no_restart=True)


def _report_share(share: Any, capacity: int, since: float, log_file: Path) -> None:
    """Each target's GPU share on stdout; every grant asked from `since` on (who, which worker, when) in
    `log_file`, a JSON line each."""
    ray = _ray()
    try:
        grants: list[dict[str, Any]] = ray.get(share.log.remote(since))
        shares: list[TargetShare] = ray.get(share.shares.remote(since))
    except ray.exceptions.RayError as error:
        LOG.warning("the GPU share could not be read (%s): no GPU share to report", type(error).__name__)
        return
    log_file.parent.mkdir(parents=True, exist_ok=True)
    log_file.write_text("".join(json.dumps(g) + "\n" for g in grants), encoding="utf-8")
    print(share_table(shares, capacity) + f"\n  every grant, by target and worker: {log_file}", file=sys.stdout)


@dataclass
class _Child:
    target: str
    process: subprocess.Popen[str]
    result_file: Path
    relays: list[threading.Thread]


class _Children:
    """The targets' `tune` processes: started up to `together` at once, relayed, waited for, stopped."""

    def __init__(self, options: TuneOptions, targets: list[str], together: int, results: Path,
                 say: Any) -> None:
        self.options = options
        self.targets = targets
        self.together = together
        self.results = results
        # Where the children's GPU slots lock (ciq_build.measure.gpu_slots.GPU_LOCK_DIR): the user's, if set
        # (tunes started apart then share it too), else one for this run.
        self.gpu_locks = Path(os.environ.get(GPU_LOCK_DIR) or results / "gpu-locks")
        self.say = say
        self.width = max(len(t) for t in targets)
        self._write = threading.Lock()

    def run(self) -> list[TargetResult]:
        pending = list(self.targets)
        running: list[_Child] = []
        done: dict[str, TargetResult] = {}
        try:
            while pending or running:
                while pending and len(running) < self.together and not stops_the_rest(list(done.values())):
                    running.append(self._start(pending.pop(0), len(done) + len(running) + 1))
                if pending and stops_the_rest(list(done.values())):
                    done.update((t, not_run(t)) for t in pending)
                    pending.clear()
                for child in [c for c in running if c.process.poll() is not None]:
                    running.remove(child)
                    done[child.target] = self._result(child)
                time.sleep(POLL_INTERVAL)
        except KeyboardInterrupt:
            self._stop(running)
            raise
        return [done[t] for t in self.targets]

    def _start(self, target: str, number: int) -> _Child:
        result_file = self.results / f"{safe_name(target)}.json"
        command = [sys.executable, "-m", "ciq_build", "tune",
                   *dataclasses.replace(self.options, target=target).argv(),
                   *(["--verbose"] if LOG.isEnabledFor(logging.DEBUG) else []),
                   f"--result-file={result_file}"]
        env = {**proc.marked_env(f"tune-{safe_name(target)}"), "PYTHONUNBUFFERED": "1",  # lines as they come
               # The targets' own measurements on this machine (baselines, re-measures): one per GPU at a time.
               GPU_LOCK_DIR: str(self.gpu_locks)}
        # A session of its own: a terminal's Ctrl-C reaches it only through this parent (_stop).
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True, errors="replace", bufsize=1, env=env, start_new_session=True)
        prefix = f"[{target.ljust(self.width)}] "
        relays = [threading.Thread(target=self._relay, args=(stream, name, prefix), daemon=True)
                  for stream, name in ((process.stdout, "stdout"), (process.stderr, "stderr"))]
        for relay in relays:
            relay.start()
        self.say(f"tune --all: {target} started ({number} of {len(self.targets)}, process {process.pid})")
        return _Child(target, process, result_file, relays)

    def _relay(self, stream: IO[str], name: str, prefix: str) -> None:
        for line in stream:
            with self._write:
                out = getattr(sys, name)  # the current one (a capture, a redirect)
                out.write(prefix + line if line.endswith("\n") else prefix + line + "\n")
                out.flush()

    def _result(self, child: _Child) -> TargetResult:
        for relay in child.relays:
            relay.join(timeout=5)
        try:
            return read_result(child.result_file)
        except (OSError, ValueError, TypeError):
            code = child.process.returncode
            return TargetResult(child.target, "failed", f"its tune process ended with exit code {code} before "
                                f"saying what it came to (its output is above)", code if code > 0 else 1)

    def _stop(self, running: list[_Child]) -> None:
        """SIGTERM to each running child (stop as on Ctrl-C, journals kept); SIGKILL to any that will not end."""
        for child in running:
            if child.process.poll() is None:
                child.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT + CHILD_STOP_GRACE
        for child in running:
            try:
                child.process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                LOG.warning("tune --all: %s did not stop in time; killing it (pid %d)", child.target,
                            child.process.pid)
                os.kill(child.process.pid, signal.SIGKILL)
                child.process.wait()
            for relay in child.relays:
                relay.join(timeout=5)
