#!/usr/bin/env python3
"""How `tune --executor ray` scales: evaluations per minute with 1, 2 and 4 Ray workers, the driver's own
time per evaluation, a model from those to 8, 64 and 512 GPUs, and how busy one GPU is kept with compiles
apart from benchmarks (compile actors on CPUs, benchmarks as GPU tasks) against an actor that holds the GPU
through its compiles. One run, everything side by side.

The workload is a TEST DOUBLE (`SleepWorker`): each evaluation sleeps for a compile and a benchmark of
realistic length, scaled down by --scale so the run takes about a minute, and returns a deterministic
"time" from the candidate's -D values. Everything else is real: ciq_build's search loop, the genetic
search, the journal (one fsync per evaluation), RayPool/RayRunner and a local Ray cluster.

    .venv/bin/python bench/ray_scaling/run.py [--compile 6] [--benchmark 2] [--scale 20]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import ray
from ciq_build import SearchConfiguration
from ciq_build.testing import (
    Controls,
    Evaluation,
    EvaluationCache,
    GeneticSource,
    Journal,
    MeasureSettings,
    Proposal,
    RayPool,
    RaySlot,
    SearchLoop,
    SearchSettings,
    Timeouts,
    controls_id,
    parse_objectives,
    parse_params,
)

TIME = parse_objectives(["time"])
LIMITS = Timeouts(MeasureSettings().timeout, MeasureSettings().timeout)  # never reached: the workers sleep
ONE_GPU = "ONE_GPU"  # a custom resource of one unit: the busy-fraction part's single GPU
SPACE = parse_params([f"P{i}=range(0,16)" for i in range(6)])  # 16^6 candidates: the search never repeats one


def stand_in(proposal: Proposal, controls: Controls, key: str, seconds: float) -> Evaluation:
    """TEST DOUBLE for a measurement: a deterministic time from the -D values."""
    time_ms = 1.0 + sum(abs(int(value) - 5) for _, value in controls.defines) / 10
    return Evaluation(key, proposal, controls, True, None, "", {"time_ms": time_ms}, {}, (time_ms,), seconds)


class SleepWorker:
    """TEST DOUBLE for an EvaluationWorker: sleeps for the compile, then for the benchmark."""

    def __init__(self, compile_s: float, benchmark_s: float) -> None:
        self.compile_s, self.benchmark_s = compile_s, benchmark_s

    def configure(self) -> str:
        return "local"

    def evaluate(self, proposal: Proposal, controls: Controls, key: str, *told: object) -> Evaluation:
        time.sleep(self.compile_s)  # (what EvaluationWorker.evaluate is told for racing and dedupe is ignored)
        time.sleep(self.benchmark_s)
        return stand_in(proposal, controls, key, self.compile_s + self.benchmark_s)

    def stop(self) -> None:
        pass


class SleepPool(RayPool):
    """The real RayPool and RayRunner, with SleepWorker actors instead of scratch trees."""

    compile_s = 0.0
    benchmark_s = 0.0

    @property
    def trees(self) -> Path:
        return Path(tempfile.gettempdir())  # no scratch trees: nothing is built

    def _start(self, slot: RaySlot) -> None:
        slot.actor = ray.remote(SleepWorker).options(max_restarts=0, max_task_retries=0, max_concurrency=2,
                                                     **self.request).remote(self.compile_s, self.benchmark_s)
        slot.where = ray.get(slot.actor.configure.remote())


def gpu_sleep(seconds: float) -> float:
    """TEST DOUBLE for a benchmark task: holds its GPU for `seconds`."""
    time.sleep(seconds)
    return seconds


class SplitSleepWorker(SleepWorker):
    """TEST DOUBLE for a compile actor of the split layout: sleeps for the compile on its CPU, then runs the
    benchmark as a Ray task holding one unit of ONE_GPU (the cluster's only one), as GpuTaskRunner does."""

    def __init__(self, compile_s: float, benchmark_s: float) -> None:
        super().__init__(compile_s, benchmark_s)
        self.task = ray.remote(gpu_sleep).options(max_retries=0, num_cpus=0, num_gpus=1,
                                                  resources={ONE_GPU: 1})

    def evaluate(self, proposal: Proposal, controls: Controls, key: str, *told: object) -> Evaluation:
        time.sleep(self.compile_s)
        ray.get(self.task.remote(self.benchmark_s))
        return stand_in(proposal, controls, key, self.compile_s + self.benchmark_s)


class OneGpuPool(SleepPool):
    """One GPU: `split` compile actors on CPUs sharing it through benchmark tasks, or one actor holding it
    (compile and benchmark in turn, the layout before compiles were split from benchmarks)."""

    split = True

    def _start(self, slot: RaySlot) -> None:
        actor: Any
        if self.split:
            actor = ray.remote(SplitSleepWorker).options(max_restarts=0, max_task_retries=0, max_concurrency=2,
                                                         num_cpus=1, num_gpus=0)
        else:
            actor = ray.remote(SleepWorker).options(max_restarts=0, max_task_retries=0, max_concurrency=2,
                                                    num_cpus=1, num_gpus=1, resources={ONE_GPU: 1})
        slot.actor = actor.remote(self.compile_s, self.benchmark_s)
        slot.where = ray.get(slot.actor.configure.remote())


def one_gpu_busy(split: int, compile_s: float, benchmark_s: float, folder: Path, generations: int
                 ) -> tuple[float, float]:
    """(evaluations per minute, the GPU's busy fraction) on one GPU; `split` compile actors, or 0: one actor
    holding the GPU."""
    OneGpuPool.compile_s, OneGpuPool.benchmark_s, OneGpuPool.split = compile_s, benchmark_s, bool(split)
    with OneGpuPool(None, None, None, TIME, MeasureSettings().repeats, LIMITS, LIMITS.compile, max(split, 1),
                    say=lambda text: None) as pool:
        # Generations of 32: a generation's end drains the GPU's queue (one generation is in flight), and 32
        # candidates keep that a small part of the run, as a real tune's pool does.
        seconds, done = loop_seconds(pool.runner, pool.slots, folder, f"one-gpu-{split}", 32, generations)
    return 60 * done / seconds, done * benchmark_s / seconds


class InstantRunner:
    """No work at all: what is left of an evaluation is the driver's own time."""

    def evaluate(self, worker: object, proposal: Proposal, controls: Controls, key: str) -> Evaluation:
        return stand_in(proposal, controls, key, 0.0)


def search(pool_size: int, generations: int, seed: int) -> GeneticSource:
    config = SearchConfiguration(generations=generations, pool_size=pool_size, seed=seed, problem_type=["min"],
                                 num_objectives=1)
    return GeneticSource(SPACE, config, [o.spec for o in TIME])


def cache(folder: Path, name: str) -> EvaluationCache:
    opened = EvaluationCache(Journal(folder / f"{name}.jsonl"), TIME, lambda text: None)
    opened.open({"target": name, "objectives": ["time"]})
    return opened


def loop_seconds(runner: Any, workers: list[Any], folder: Path, name: str, pool_size: int,
                 generations: int) -> tuple[float, int]:
    loop = SearchLoop(search(pool_size, generations, 1), runner, workers, cache(folder, name), controls_id, TIME)
    started = time.perf_counter()
    done = len(loop.run())
    return time.perf_counter() - started, done


def ray_rate(workers: int, compile_s: float, benchmark_s: float, folder: Path, pool_size: int,
             generations: int) -> tuple[float, int]:
    SleepPool.compile_s, SleepPool.benchmark_s = compile_s, benchmark_s
    with SleepPool(None, None, None, TIME, MeasureSettings().repeats, LIMITS, LIMITS.compile, workers,
                   say=lambda text: None) as pool:
        return loop_seconds(pool.runner, pool.slots, folder, f"ray-{workers}-{compile_s}", pool_size, generations)


def fsync_seconds(folder: Path, count: int) -> float:
    journal = cache(folder, "fsync")
    proposal = Proposal(id=0, generation=0, params={})
    started = time.perf_counter()
    for i in range(count):
        journal.record(stand_in(proposal, Controls(defines=(("P0", str(i)),)), f"k{i}", 0.0))
    return (time.perf_counter() - started) / count


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--compile", type=float, default=6.0, help="seconds one candidate's compile takes (6)")
    parser.add_argument("--benchmark", type=float, default=2.0, help="seconds its benchmark runs take (2)")
    parser.add_argument("--scale", type=float, default=20.0, help="divide both by this to keep the run short (20)")
    parser.add_argument("--generations", type=int, default=3)
    args = parser.parse_args()
    real_eval = args.compile + args.benchmark
    compile_s, benchmark_s = args.compile / args.scale, args.benchmark / args.scale
    scaled_eval = compile_s + benchmark_s
    pool_size = 8  # a multiple of every worker count measured: no slot waits at a generation's end

    ray.init(address="local", num_cpus=4, num_gpus=4, resources={ONE_GPU: 1}, include_dashboard=False, log_to_driver=False)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        # The driver's own time: the same loop and journal with evaluations that take no time.
        driver = statistics.median(
            seconds / done for seconds, done in (loop_seconds(InstantRunner(), ["w"], folder, f"driver-{i}", 32, 8)
                                                 for i in range(3)))
        fsync = statistics.median(fsync_seconds(folder, 100) for _ in range(3))
        # Ray's cost per evaluation, with actors that do nothing: one (the round trip adds to each
        # evaluation) and four (as fast as the driver can feed them: its serial ceiling).
        seconds, done = ray_rate(1, 0.0, 0.0, folder, 32, 8)
        one_actor = seconds / done
        seconds, done = ray_rate(4, 0.0, 0.0, folder, 32, 8)
        ray_call = seconds / done
        measured: dict[int, float] = {}
        for workers in (1, 2, 4):
            seconds, done = ray_rate(workers, compile_s, benchmark_s, folder, pool_size, args.generations)
            measured[workers] = 60 * done / seconds
        # One GPU's busy fraction: an actor holding it through compiles, against compile actors on CPUs
        # sending it benchmark tasks (as many as keep it fed: (compile + benchmark) / benchmark).
        feeders = max(2, math.ceil(real_eval / args.benchmark))
        held = one_gpu_busy(0, compile_s, benchmark_s, folder, args.generations)
        fed = one_gpu_busy(feeders, compile_s, benchmark_s, folder, args.generations)
    ray.shutdown()

    # The model: N workers each finish an evaluation every (eval + per-call latency); the driver handles
    # evaluations one at a time (loop, journal fsync, Ray submit/get), which caps the rate at 1 / serial.
    latency = max(one_actor - driver, 0.0)  # what Ray adds to each call beyond the driver's loop
    serial = max(driver, ray_call)

    def model(workers: int, eval_s: float) -> float:
        return 60 * min(workers / (eval_s + latency + serial), 1 / serial)

    print(f"workload (TEST DOUBLE, sleeps): compile {args.compile:g} s + benchmark {args.benchmark:g} s per "
          f"evaluation, run at 1/{args.scale:g} ({scaled_eval:.2f} s); generations of {pool_size}")
    print(f"driver's own time per evaluation (loop + ask/tell + journal): {driver * 1e3:.2f} ms, "
          f"of which the journal's fsync {fsync * 1e3:.2f} ms")
    print(f"Ray per evaluation, actors doing nothing: 1 actor {one_actor * 1e3:.2f} ms (round trip), "
          f"4 actors {ray_call * 1e3:.2f} ms (the driver's serial ceiling)")
    print("\nmeasured (scaled workload)     evals/min   vs 1 worker   model   model/measured")
    for workers, rate in measured.items():
        predicted = model(workers, scaled_eval)
        print(f"  {workers} worker(s)                {rate:9.1f}   {rate / measured[1]:10.2f}x   {predicted:6.1f}"
              f"   {predicted / rate:8.2f}")
    print("\none GPU (scaled workload, generations of 32)      evals/min   GPU busy")
    print(f"  1 actor holding the GPU (compile, then benchmark)  {held[0]:9.1f}   {held[1]:7.0%}"
          f"   (ideal {args.benchmark / real_eval:.0%})")
    print(f"  {feeders} compile actors on CPUs, benchmarks as GPU tasks  {fed[0]:9.1f}   {fed[1]:7.0%}"
          f"   ({fed[0] / held[0]:.2f}x the evaluations per GPU)")
    ceiling = 60 / serial
    print(f"\nmodel at real times ({real_eval:g} s per evaluation); the driver's ceiling is {ceiling:,.0f} evals/min")
    default_pool = SearchSettings().pool_size
    print(f"  GPUs    evals/min   efficiency   limit                               with --pool-size {default_pool}")
    for gpus in (1, 8, 64, 512):
        rate = model(gpus, real_eval)
        ideal = 60 * gpus / real_eval
        limit = "the driver (serial per-evaluation work)" if rate < 0.9 * ideal else "the workers (compile+benchmark)"
        print(f"  {gpus:4d}   {rate:10.1f}   {rate / ideal:9.0%}   {limit:36s}{model(min(gpus, default_pool), real_eval):7.1f}")
    saturate = math.ceil((real_eval + latency + serial) / serial)
    print(f"\nthe driver saturates at about {saturate:,} workers; a generation must hold at least as many "
          "candidates as workers (--pool-size >= --jobs), or the extra workers wait at each generation's end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
