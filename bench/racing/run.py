"""Benchmark runs a runtime tune needs, with racing and dedupe against without, side by side in one run.

Every arm is a real tune (CMake, Ninja, nvcc, processes) of the same search (seed, space, budget,
repeats) in a build tree of its own, one after the other; the "plain" arm has racing
(ciq_build.measure.racing) and dedupe (ciq_build.tune.dedupe) switched off, as the tune was before them.

Without --gpu, on this machine: tests/projects/transient's `timer`, a TEST DOUBLE for a GPU benchmark:
its "time" is 1 ms + STEP per step of -D X away from 1, times Gaussian noise (a GPU's run-to-run
scatter), and it appends a line to a log each run, so the runs are counted by the benchmark itself. Y is
a parameter the source never reads (like a knob that changes no code): its values build the same code.
Two more arms have one of racing and dedupe each, to show what each saves. Prints per arm the benchmark
runs of the search (baseline included; the final interleaved re-measure before the pin is the same in
all arms and shown apart), evaluations, candidates raced out and sharing code, the winner. Wall time is
shown but is not the point here: compiles dominate this test double.

With --gpu, on a GPU: the sample's `gemm_kernels` tuned for `time` over a pool of ptxas ACFs sampled
ahead (`python -m ciq_build sample-acfs`), plain against racing + dedupe. Nothing is pinned (--no-pin):
each arm's winning ACF and the tune's verdict on it (its re-measure against the defaults) are printed,
with the GPU-seconds spent benchmarking.

    python bench/racing/run.py [--noise 0.015] [--step 0.05] [--repeats 5] [--generations 5] [--pool-size 12]
    python bench/racing/run.py --gpu --pool DIR [--nvcc PATH] [--generations 2] [--pool-size 16] [--jobs 8]

Both print the ratio of benchmark runs against the plain arm (goal: >= 3x fewer for the same winner) and
exit 1 when an arm's winner differs from the plain arm's.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout's ciq_build, run from anywhere
from ciq_build.testing import TuneOptions, configure_tree, print_table, tune_arm  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
PROJECT = ROOT / "tests" / "projects" / "transient"  # the CPU test double's project
SAMPLE = ROOT / "sample_extension"  # the GPU arms' project
TARGET = "gemm_kernels"
# Defaults that differ between the two: a GPU tune's evaluations cost seconds of nvcc each.
DEFAULTS = {False: {"generations": 5, "pool_size": 12, "seed": 0},
            True: {"generations": 2, "pool_size": 16, "seed": 1}}
ARMS = (("plain", False, False), ("dedupe only", False, True), ("racing only", True, False),
        ("racing+dedupe", True, True))
GPU_ARMS = (ARMS[0], ARMS[-1])


@dataclass
class Arm:
    """One tune's counts."""

    name: str
    search_runs: int  # benchmark runs of the baseline and the candidates
    confirm_runs: int  # of the interleaved re-measure before the pin (both sides; the CPU test double's log)
    evaluations: int
    raced: int
    same_code: int
    benchmark_s: float  # seconds the search spent in benchmark processes
    winner: str | None  # the CPU double's winning X; on the GPU, the winning ACF's file name or "defaults"
    pinned: bool
    verdict: str  # the tune's verdict on its winner (the GPU arms, which pin nothing)
    seconds: float


def run_arm(name: str, work: Path, options: argparse.Namespace, *, racing: bool, dedupe: bool) -> Arm:
    """One tune of the test double (or, with --gpu, of the sample's GEMM) with racing and dedupe as asked."""
    source, build, log = work / name / "src", work / name / "build", work / name / "runs.log"
    common = {"build_dir": build, "generations": options.generations, "pool_size": options.pool_size,
              "repeats": options.repeats, "seed": options.seed, "objectives": ["time"], "quiet": True}
    if options.gpu:
        shutil.copytree(SAMPLE, source, ignore=shutil.ignore_patterns("ciq"))  # no committed pin in the way
        cmake_args = ["-DSAMPLE_EXTENSION_PYTHON=OFF"] + ([f"-DCMAKE_CUDA_COMPILER={options.nvcc}"] if options.nvcc else [])
        configure_tree(source, build, cmake_args, Path(options.nvcc) if options.nvcc else None)
        tune = TuneOptions(target=TARGET, controls=[f"acf-pool:{options.pool}"], jobs=options.jobs, pin=False,
                           cmake_args=cmake_args, **common)
    else:
        shutil.copytree(PROJECT, source)
        params = f"X=range(0,{options.x_values});Y=range(0,{options.y_values})"
        configure_tree(source, build, [f"-DTIMER_PARAMS={params}"])
        os.environ.update({"TIMER_RUN_LOG": str(log), "TIMER_NOISE": str(options.noise),
                           "TIMER_STEP": str(options.step), "TIMER_SLEEP_MS": str(options.sleep_ms)})
        tune = TuneOptions(target="timer", **common)
    arm = tune_arm(tune, racing=racing, dedupe=dedupe)
    winner: str | None
    if options.gpu:
        winner = "defaults"
        if arm.outcome.winner is not None and arm.outcome.winner.controls.acf is not None:
            winner = Path(arm.outcome.winner.controls.acf.path).name
        confirm_runs = 0  # not counted: the sample's benchmark keeps no run log
    else:
        defines = arm.outcome.winner.controls.defines if arm.outcome.winner is not None else ()
        winner = dict(defines).get("X")
        confirm_runs = len(log.read_text().splitlines()) - arm.search_runs
    message = arm.outcome.message
    verdict = next((line.strip() for line in message.splitlines() if "verdict" in line), message)
    return Arm(name, arm.search_runs, confirm_runs, len(arm.evaluations), arm.raced, arm.same_code, arm.benchmark_s,
               winner, arm.outcome.pinned is not None, verdict, arm.seconds)


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpu", action="store_true", help="the sample's GEMM over ptxas ACFs on a real GPU")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--generations", type=int, help="5; with --gpu 2")
    parser.add_argument("--pool-size", type=int, help="12; with --gpu 16")
    parser.add_argument("--seed", type=int, help="0; with --gpu 1")
    cpu = parser.add_argument_group("the CPU test double")
    cpu.add_argument("--noise", type=float, default=0.015, help="relative noise of a run (sigma)")
    cpu.add_argument("--step", type=float, default=0.05, help="ms slower per step of X away from the best")
    cpu.add_argument("--x-values", type=int, default=12)
    cpu.add_argument("--y-values", type=int, default=4, help="values of the parameter that changes no code")
    cpu.add_argument("--sleep-ms", type=int, default=20, help="how long one benchmark run takes")
    gpu = parser.add_argument_group("--gpu")
    gpu.add_argument("--pool", type=Path, help="a folder of ACFs (sample-acfs); needed with --gpu")
    gpu.add_argument("--nvcc", default=None, help="the CUDA compiler (default: as tune finds it)")
    gpu.add_argument("--jobs", type=int, default=8)
    return parser


def options(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line read, with the defaults of its mode (bench/throughput/run.py takes the CPU one's)."""
    read = parser().parse_args(argv)
    for name, value in DEFAULTS[read.gpu].items():
        if getattr(read, name) is None:
            setattr(read, name, value)
    if read.gpu:
        if read.pool is None:
            parser().error("--gpu needs --pool DIR (an ACF pool: python -m ciq_build sample-acfs)")
        read.pool = read.pool.resolve()
    return read


def compare(options: argparse.Namespace, arms: Sequence[tuple[str, bool, bool]] = ARMS) -> bool:
    """Run `arms` (name, racing, dedupe; the first is the reference) and print their table and ratios;
    True when every arm's winner is the reference's."""
    with tempfile.TemporaryDirectory(prefix="ciq-bench-racing-") as tmp:
        done = []
        for name, racing, dedupe in arms:
            done.append(run_arm(name, Path(tmp), options, racing=racing, dedupe=dedupe))
            print(f"{name}: done in {done[-1].seconds:.0f} s", flush=True)
    header: tuple[str, ...]
    rows: list[tuple[str, ...]]
    if options.gpu:
        print(f"{TARGET} on the GPU, ptxas ACFs from {options.pool.name} ({len(list(options.pool.glob('*.acf')))} "
              f"files), --repeats {options.repeats}, {options.generations} generations x {options.pool_size}, "
              f"seed {options.seed}")
        header = ("arm", "benchmark runs", "evaluations", "raced", "same code", "benchmark s", "winner", "wall s")
        rows = [(a.name, str(a.search_runs), str(a.evaluations), str(a.raced), str(a.same_code),
                 f"{a.benchmark_s:.1f}", (a.winner or "")[:16], f"{a.seconds:.0f}") for a in done]
    else:
        print(f"timer test double: time = 1 ms + {options.step} ms x |X-1|, noise {options.noise:.1%}, "
              f"X in 0..{options.x_values - 1}, Y (no code change) in 0..{options.y_values - 1}, "
              f"--repeats {options.repeats}, {options.generations} generations x {options.pool_size}, "
              f"seed {options.seed}")
        header = ("arm", "benchmark runs", "confirm runs", "evaluations", "raced", "same code", "winner X", "pinned",
                  "wall s")
        rows = [(a.name, str(a.search_runs), str(a.confirm_runs), str(a.evaluations), str(a.raced),
                 str(a.same_code), str(a.winner), str(a.pinned), f"{a.seconds:.1f}") for a in done]
    print_table(header, rows)
    plain = done[0]
    for arm in done[1:]:
        same = "same" if arm.winner == plain.winner else "DIFFERENT"
        ratio = plain.search_runs / max(1, arm.search_runs)
        if options.gpu:
            print(f"benchmark runs, plain / {arm.name}: {ratio:.2f}x fewer, benchmark seconds "
                  f"{plain.benchmark_s / max(1e-9, arm.benchmark_s):.2f}x fewer ({same} winner)")
        else:
            with_confirm = (plain.search_runs + plain.confirm_runs) / max(1, arm.search_runs + arm.confirm_runs)
            print(f"benchmark runs, plain / {arm.name}: {ratio:.2f}x fewer ({same} winner), "
                  f"{with_confirm:.2f}x counting the confirm re-measure")
    if options.gpu:
        for arm in done:
            print(f"{arm.name}: {arm.verdict}")
    print("goal: >= 3x fewer benchmark runs for the same winner (racing+dedupe)")
    return all(arm.winner == plain.winner for arm in done)


def main() -> int:
    read = options()
    return 0 if compare(read, GPU_ARMS if read.gpu else ARMS) else 1


if __name__ == "__main__":
    sys.exit(main())
