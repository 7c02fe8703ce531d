"""Benchmark runs of a real GPU tune with racing and dedupe against without, side by side in one run.

The GPU counterpart of bench/racing.py (which uses a CPU test double): the
sample's `gemm_kernels` tuned for `time` over a pool of ptxas ACFs sampled
ahead (`python -m ciq_build sample-acfs`), on a real GPU. Both arms run the
same search (seed, pool, budget, repeats) in their own build trees, one after
the other; the "plain" arm has racing (ciq_build.measure.racing) and dedupe
(ciq_build.tune.dedupe) switched off, as the tune was before them. Nothing is
pinned (--no-pin): the winner of each arm and its interleaved re-measure against
the defaults are printed instead.

    python bench/racing_gpu.py --pool DIR [--nvcc PATH] [--generations 2] [--pool-size 16] [--repeats 5]

Prints per arm the benchmark runs of the search (baseline included), the
evaluations, candidates raced out and sharing code, the winner's ACF and the
tune's verdict on it (its re-measure against the defaults), GPU-seconds spent benchmarking, and the ratio of
benchmark runs against the plain arm (goal: >= 3x fewer for the same winner).
"""

from __future__ import annotations

import argparse
import io
import json
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ciq_build.build.cmake import configure_user_tree
from ciq_build.build.manifest import load_manifest
from ciq_build.compiler.toolchain import find_toolchain
from ciq_build.core.settings import USER_CONFIGURE_TIMEOUT
from ciq_build.tune.driver import TuneRun
from ciq_build.tune.settings import TuneOptions, resolve_settings

SAMPLE = Path(__file__).resolve().parent.parent / "sample_extension"
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
    tune_options = TuneOptions(target=TARGET, build_dir=build, generations=options.generations,
                               pool_size=options.pool_size, repeats=options.repeats, seed=options.seed,
                               objectives=["time"], controls=[f"acf-pool:{options.pool}"], jobs=options.jobs,
                               pin=False, quiet=True, cmake_args=cmake_args)
    manifest = load_manifest(build, TARGET)
    tune = TuneRun(resolve_settings(tune_options, manifest), manifest,
                   find_toolchain(manifest.toolchain.cuda_compiler), out=io.StringIO())
    if not racing:
        tune.runner.racing = None
    if not dedupe:
        tune.runner.dedupe = None
    started = time.monotonic()
    outcome = tune.run()
    seconds = time.monotonic() - started
    journal = [json.loads(line) for line in tune.cache.path.read_text().splitlines() if line.strip()]
    evaluations = [r for r in journal if r.get("kind") == "evaluation"]
    winner = "defaults"
    if outcome.winner is not None and outcome.winner.controls.acf is not None:
        winner = Path(outcome.winner.controls.acf.path).name
    verdict = next((line.strip() for line in outcome.message.splitlines() if "verdict" in line), outcome.message)
    return Arm(name, sum(int(r.get("runs", 0)) for r in evaluations), len(evaluations),
               sum(1 for r in evaluations if r.get("raced") and not r.get("same_code_as")),
               sum(1 for r in evaluations if r.get("same_code_as")),
               sum(float((r.get("timings") or {}).get("benchmark_s", 0.0)) for r in evaluations),
               winner, verdict, seconds)


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
    rows = [header] + [(a.name, str(a.search_runs), str(a.evaluations), str(a.raced), str(a.same_code),
                        f"{a.benchmark_s:.1f}", a.winner[:16], f"{a.seconds:.0f}") for a in arms]
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths)))
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
