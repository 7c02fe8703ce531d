"""Benchmark-seconds of a runtime tune whose benchmark streams its samples against whole-process racing,
side by side in one run.

Both arms are real tunes (CMake, Ninja, nvcc, processes) with racing and dedupe on, the same search
(seed, space, budget, repeats), each in its own build tree, one after the other, of the same benchmark
program: it times REPS repetitions of its "kernel" per process. In the "whole-process" arm it prints
one number per process (their mean), as a benchmark that does not stream; racing can only stop a
candidate between processes. In the "streaming" arm it prints CIQ_SAMPLES and each repetition's time as
it goes; racing stops a losing candidate in the middle of its first process (ciq_build.measure.racing).

    python bench/streaming/run.py [--gpu] [--reps 40] [--base-ms 5] [--x-values 24] [--repeats 3] [--generations 3]

Without --gpu: tests/projects/stream's `stream`, a TEST DOUBLE for a GPU benchmark, a CPU stand-in: each
repetition sleeps as long as its "kernel" would take, BASE_MS x (1 + STEP x |X - 1|) with Gaussian
noise, so its seconds are real seconds. With --gpu: bench/streaming/stream_gpu's `stream_gpu`, a real CUDA kernel
timed with CUDA events, whose work grows by STEP per step of X away from 1 (the same landscape, on a
GPU). X takes the values 1..X_VALUES (best at the edge: no two values tie).

Prints per arm the benchmark-seconds of the search (the driver's timings of the benchmark processes,
baseline included; the final interleaved re-measure before the pin runs whole processes in both arms and
is counted apart, from the benchmark's own log), the repetitions it ran (its log), candidates raced out,
the winner, wall time and the CPU time of the arm's child processes (getrusage: compiles dominate), and
the ratio whole-process / streaming of the search's benchmark-seconds (goal: >= 2x for the same winner).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout's ciq_build, run from anywhere
from ciq_build.testing import MeasureSettings, TuneOptions, configure_tree, print_table, tune_arm  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
PROJECTS = {False: (ROOT / "tests" / "projects" / "stream", "stream"),
            True: (ROOT / "bench" / "streaming" / "stream_gpu", "stream_gpu")}


@dataclass
class Arm:
    """One tune's costs."""

    name: str
    benchmark_s: float  # the search's benchmark processes, wall seconds (baseline included)
    search_reps: int  # repetitions the benchmark ran in the search (its log)
    confirm_reps: int  # ... in the interleaved re-measure before the pin (its log)
    evaluations: int
    raced: int
    winner_x: str | None
    pinned: bool
    seconds: float  # the arm's wall time
    cpu_s: float  # CPU time of the arm's child processes (compiles, benchmarks)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_arm(name: str, work: Path, options: argparse.Namespace, *, stream: bool) -> Arm:
    project, target = PROJECTS[options.gpu]
    source, build, log = work / name / "src", work / name / "build", work / name / "reps.log"
    shutil.copytree(project, source)
    cmake_args = [f"-DSTREAM_PARAMS=X=range(1,{options.x_values + 1})"]
    if options.nvcc:
        cmake_args.append(f"-DCMAKE_CUDA_COMPILER={options.nvcc}")
    configure_tree(source, build, cmake_args, Path(options.nvcc) if options.nvcc else None)
    os.environ.update({"STREAM_LOG": str(log), "STREAM_SAMPLES": "1" if stream else "0",
                       "STREAM_REPS": str(options.reps), "STREAM_BASE_MS": str(options.base_ms),
                       "STREAM_STEP": str(options.step), "STREAM_NOISE": str(options.noise)})
    cpu = _children_cpu()
    started = time.monotonic()
    arm = tune_arm(TuneOptions(target=target, build_dir=build, generations=options.generations,
                               pool_size=options.pool_size, repeats=options.repeats, seed=options.seed,
                               objectives=["time"], quiet=True, cmake_args=cmake_args,
                               **({"jobs": options.jobs} if options.jobs else {})))
    seconds, cpu = time.monotonic() - started, _children_cpu() - cpu
    logged = len(log.read_text().splitlines()) if log.exists() else 0
    # The re-measure before the pin: whole processes, its rounds a side (ciq_build.tune.confirm), in both arms
    # alike; the rest of the log is the search's (a killed process's repetitions as it counted them).
    # A pin records how many rounds ran (half of them where the winner was clear half-way); none: all of them.
    rounds = MeasureSettings(repeats=options.repeats).confirm_rounds
    if arm.outcome.pinned is not None:
        rounds = json.loads(arm.outcome.pinned.read_text())["provenance"]["remeasured"].get("rounds", rounds)
    confirm = 2 * rounds * options.reps
    winner = arm.outcome.winner.controls.defines if arm.outcome.winner is not None else ()
    return Arm(name, arm.benchmark_s, logged - confirm, confirm, len(arm.evaluations), arm.raced,
               dict(winner).get("X"), arm.outcome.pinned is not None, seconds, cpu)


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpu", action="store_true", help="bench/streaming/stream_gpu's real CUDA kernel (on a GPU)")
    parser.add_argument("--nvcc", default=None, help="the CUDA compiler (default: as tune finds it)")
    parser.add_argument("--reps", type=int, default=40, help="repetitions per benchmark process")
    parser.add_argument("--base-ms", type=float, default=5.0, help="the best X's time per repetition")
    parser.add_argument("--step", type=float, default=0.2, help="fraction slower per step of X away from 1")
    parser.add_argument("--noise", type=float, default=0.01, help="relative noise of a repetition (CPU double)")
    parser.add_argument("--x-values", type=int, default=24)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--generations", type=int, default=3)
    parser.add_argument("--pool-size", type=int, default=8)
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    return parser


def compare(options: argparse.Namespace, arms: Sequence[tuple[str, bool]] = (("whole-process", False),
                                                                             ("streaming", True))) -> bool:
    """Run the arms (the first is the reference), print their table and the ratio; True when the winners agree."""
    with tempfile.TemporaryDirectory(prefix="ciq-bench-streaming-") as tmp:
        done = [run_arm(name, Path(tmp), options, stream=stream) for name, stream in arms]
    what = ("bench/streaming/stream_gpu: a CUDA kernel timed with CUDA events" if options.gpu else
            "tests/projects/stream: TEST DOUBLE, a CPU stand-in for the GPU (each repetition sleeps its time)")
    print(f"{what}; time per repetition = {options.base_ms} ms x (1 + {options.step} x |X-1|), X in "
          f"1..{options.x_values}, {options.reps} repetitions a process, --repeats {options.repeats}, "
          f"{options.generations} generations x {options.pool_size}, seed {options.seed}, racing and dedupe on")
    header = ("arm", "benchmark s", "repetitions", "confirm reps", "evaluations", "raced", "winner X", "pinned",
              "wall s", "children CPU s")
    rows = [(a.name, f"{a.benchmark_s:.2f}", str(a.search_reps), str(a.confirm_reps), str(a.evaluations),
             str(a.raced), str(a.winner_x), str(a.pinned), f"{a.seconds:.1f}", f"{a.cpu_s:.1f}") for a in done]
    print_table(header, rows)
    reference = done[0]
    for arm in done[1:]:
        same = arm.winner_x == reference.winner_x
        print(f"benchmark-seconds of the search, {reference.name} / {arm.name}: "
              f"{reference.benchmark_s / max(arm.benchmark_s, 1e-9):.2f}x fewer "
              f"({'same' if same else 'DIFFERENT'} winner); repetitions {reference.search_reps / max(1, arm.search_reps):.2f}x "
              f"fewer; wall {reference.seconds / max(arm.seconds, 1e-9):.2f}x, children CPU "
              f"{reference.cpu_s / max(arm.cpu_s, 1e-9):.2f}x (compiles and the same re-measure in both)")
    print("goal: >= 2x fewer benchmark-seconds than whole-process racing for the same winner")
    return all(arm.winner_x == reference.winner_x for arm in done)


def main() -> int:
    return 0 if compare(parser().parse_args()) else 1


if __name__ == "__main__":
    sys.exit(main())
