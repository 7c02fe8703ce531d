"""Confirm a pinned record's gain on fresh builds, side by side.

Builds a CMake project twice from scratch, with `-DCIQ_DISABLE=ON` (the
compiler's defaults) and with its pins, then runs the two benchmark binaries
interleaved (A B, B A, ...) and prints medians, spreads, the ratio and the
verdict of ciq_build's noise test. Also runs `python -m ciq_build verify`.

    python bench/sample_kernels/confirm_pin.py --source sample_extension --target gemm_kernels \
        --benchmark gemm_bench --rounds 30 -- --m 2048 --n 2048 --k 2048 --repeats 20
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout's ciq_build (and bench/), run from anywhere
from ciq_build.testing import BenchSpec, beats_baseline, build_tool, cmake_dir, interleaved  # noqa: E402


def build(source: Path, build_dir: Path, nvcc: str | None, disable: bool, target: str) -> None:
    args = [build_tool("cmake"), "-S", str(source), "-B", str(build_dir), "-G", "Ninja",
            f"-Dciq_build_DIR={cmake_dir()}", f"-DCIQ_DISABLE={'ON' if disable else 'OFF'}",
            "-DSAMPLE_EXTENSION_PYTHON=OFF"]
    if nvcc:
        args.append(f"-DCMAKE_CUDA_COMPILER={nvcc}")
    configured = subprocess.run(args, capture_output=True, text=True)
    status = [line for line in configured.stdout.splitlines() if "ciq_build:" in line]
    print(f"[{build_dir.name}]", *status, sep="\n  ")
    if configured.returncode != 0:
        sys.exit(configured.stdout + configured.stderr)
    subprocess.run([build_tool("cmake"), "--build", str(build_dir), "--target", target], check=True,
                   capture_output=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, required=True)
    parser.add_argument("--target", required=True, help="the tuned target whose pin is confirmed")
    parser.add_argument("--benchmark", required=True, help="the benchmark executable target")
    parser.add_argument("--nvcc", default=None)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--work", type=Path, default=Path("/tmp/ciq-confirm"))
    parser.add_argument("bench_args", nargs="*")
    options = parser.parse_args()

    default_dir, pinned_dir = options.work / "defaults", options.work / "pinned"
    build(options.source, default_dir, options.nvcc, True, options.benchmark)
    build(options.source, pinned_dir, options.nvcc, False, options.benchmark)
    verify = subprocess.run([sys.executable, "-m", "ciq_build", "verify", options.target, "-B", str(pinned_dir)],
                            capture_output=True, text=True)
    print(verify.stdout.strip() or verify.stderr.strip())

    specs = [BenchSpec(d / options.benchmark, tuple(options.bench_args), timeout=120, required=("time_ms",))
             for d in (default_dir, pinned_dir)]
    defaults, pinned = interleaved(specs[0], specs[1], options.rounds)
    for name, m in (("defaults", defaults), ("pinned", pinned)):
        if m.failure is not None:
            sys.exit(f"{name} failed: {m.failure.cause}: {m.failure.message}")
    a, b = defaults.samples["time_ms"], pinned.samples["time_ms"]
    verdict = beats_baseline(a, b, "min")
    print(f"{'build':<10}{'median ms':>12}{'IQR ms':>10}{'min':>10}{'max':>10}{'runs':>6}")
    for name, m in (("defaults", defaults), ("pinned", pinned)):
        s = m.spread["time_ms"]
        print(f"{name:<10}{m.metrics['time_ms']:>12.6f}{s.iqr:>10.6f}{s.min:>10.6f}{s.max:>10.6f}{len(m.runs):>6}")
    print(f"ratio pinned/defaults = {verdict.ratio:.4f}  ({(1 - verdict.ratio) * 100:+.2f}% faster)")
    print(f"verdict: {verdict.explanation}")
    return 0 if verify.returncode == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
