"""Benchmark runs of a real GPU tune with racing and dedupe against without, side by side in one run.

The GPU counterpart of bench/racing/run.py (which uses a CPU test double): the
sample's `gemm_kernels` tuned for `time` over a pool of ptxas ACFs sampled
ahead (`python -m ciq_build sample-acfs`), on a real GPU. Both arms run the
same search (seed, pool, budget, repeats) in their own build trees, one after
the other; the "plain" arm has racing (ciq_build.measure.racing) and dedupe
(ciq_build.tune.dedupe) switched off, as the tune was before them. Nothing is
pinned (--no-pin): the winner of each arm and its interleaved re-measure against
the defaults are printed instead.

    python bench/racing/gpu.py --pool DIR [--nvcc PATH] [--generations 2] [--pool-size 16] [--repeats 5]

Prints per arm the benchmark runs of the search (baseline included), the
evaluations, candidates raced out and sharing code, the winner's ACF and the
tune's verdict on it (its re-measure against the defaults), GPU-seconds spent benchmarking, and the ratio of
benchmark runs against the plain arm (goal: >= 3x fewer for the same winner).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ciq_build.compiler.toolchain import find_toolchain
from ciq_build.core.settings import USER_CONFIGURE_TIMEOUT
from ciq_build.project.cmake_trees import configure_user_tree
from ciq_build.tune.tune_options import TuneOptions

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bench/racing/arms.py, run as a script from anywhere
from bench.racing.arms import print_table  # noqa: E402
from bench.racing.arms import run_arm as run_tune_arm  # noqa: E402

SAMPLE = Path(__file__).resolve().parents[2] / "sample_extension"
TARGET = "gemm_kernels"


@dataclass
class Arm:
    name: str
    search_runs: int  # benchmark runs of the baseline and the candidates
    evaluations: int
    raced: int
    same_code: int
    benchmark_s: float  # seconds the search spent in benchmark processes
    winner: str  # the winning ACF's file name, or "defaults"
    verdict: str  # the tune's verdict on its winner: the interleaved re-measure against the defaults
    seconds: float


def run_arm(name: str, work: Path, options: argparse.Namespace, *, racing: bool, dedupe: bool) -> Arm:
    source, build = work / name / "src", work / name / "build"
    shutil.copytree(SAMPLE, source, ignore=shutil.ignore_patterns("ciq"))  # no committed pin in the way
    cmake_args = ["-DSAMPLE_EXTENSION_PYTHON=OFF"] + ([f"-DCMAKE_CUDA_COMPILER={options.nvcc}"] if options.nvcc else [])
    configure_user_tree(source, build, find_toolchain(Path(options.nvcc) if options.nvcc else None), None,
                        cmake_args, USER_CONFIGURE_TIMEOUT)
    arm = run_tune_arm(TuneOptions(target=TARGET, build_dir=build, generations=options.generations,
                                   pool_size=options.pool_size, repeats=options.repeats, seed=options.seed,
                                   objectives=["time"], controls=[f"acf-pool:{options.pool}"], jobs=options.jobs,
                                   pin=False, quiet=True, cmake_args=cmake_args), racing=racing, dedupe=dedupe)
    winner = "defaults"
    if arm.outcome.winner is not None and arm.outcome.winner.controls.acf is not None:
        winner = Path(arm.outcome.winner.controls.acf.path).name
    message = arm.outcome.message
    verdict = next((line.strip() for line in message.splitlines() if "verdict" in line), message)
    return Arm(name, arm.search_runs, len(arm.evaluations), arm.raced, arm.same_code, arm.benchmark_s, winner,
               verdict, arm.seconds)

def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pool", type=Path, required=True, help="a folder of ACFs (sample-acfs)")
    parser.add_argument("--nvcc", default=None, help="the CUDA compiler (default: as tune finds it)")
    parser.add_argument("--generations", type=int, default=2)
    parser.add_argument("--pool-size", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1)
    options = parser.parse_args()
    options.pool = options.pool.resolve()
    with tempfile.TemporaryDirectory(prefix="ciq-bench-racing-gpu-") as tmp:
        arms = []
        for name, racing, dedupe in (("plain", False, False), ("racing+dedupe", True, True)):
            arms.append(run_arm(name, Path(tmp), options, racing=racing, dedupe=dedupe))
            print(f"{name}: done in {arms[-1].seconds:.0f} s", flush=True)
    print(f"{TARGET} on the GPU, ptxas ACFs from {options.pool.name} ({len(list(options.pool.glob('*.acf')))} files), "
          f"--repeats {options.repeats}, {options.generations} generations x {options.pool_size}, seed {options.seed}")
    header = ("arm", "benchmark runs", "evaluations", "raced", "same code", "benchmark s", "winner", "wall s")
    rows = [(a.name, str(a.search_runs), str(a.evaluations), str(a.raced), str(a.same_code),
                        f"{a.benchmark_s:.1f}", a.winner[:16], f"{a.seconds:.0f}") for a in arms]
    print_table(header, rows)
    for arm in arms:
        print(f"{arm.name}: {arm.verdict}")
    plain, raced = arms
    same = plain.winner == raced.winner
    print(f"benchmark runs, plain / racing+dedupe: {plain.search_runs / max(1, raced.search_runs):.2f}x fewer, "
          f"benchmark seconds {plain.benchmark_s / max(1e-9, raced.benchmark_s):.2f}x fewer "
          f"({'same' if same else 'DIFFERENT'} winner)")
    print("goal: >= 3x fewer benchmark runs for the same winner")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
