"""Reproduce a pin from a clean tree: build defaults and pinned, verify, time interleaved.

Like bench/sample_kernels/confirm_pin.py, but through the command line only (cmake and
`python -m ciq_build verify`), with the raw samples written out and a 95%
bootstrap confidence interval for the ratio of medians (pinned / defaults).
Times are read as `tune` reads them: the target's METRIC and UNIT when it has
them, else `CIQ_METRIC time_ms`; a run that fails or says CIQ_CHECK FAIL stops it.

    python bench/public_kernels/confirm.py --source sample_extension --target stencil_kernels \
        --benchmark stencil_bench --nvcc /tmp/hybrid/bin/nvcc --rounds 30 \
        --json out.json -- --nx 512 --ny 512 --nz 128 --repeats 20
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout's ciq_build (and bench/), run from anywhere
from ciq_build.testing import load_manifest, parse_output  # noqa: E402


def configure_and_build(source: Path, build: Path, nvcc: str | None, disable: bool, benchmark: str,
                        extra: tuple[str, ...] = ()) -> str:
    cmake_dir = subprocess.run([sys.executable, "-m", "ciq_build", "--cmake-dir"], check=True,
                               capture_output=True, text=True).stdout.strip()
    args = ["cmake", "-S", str(source), "-B", str(build), "-G", "Ninja", f"-Dciq_build_DIR={cmake_dir}",
            f"-DCIQ_DISABLE={'ON' if disable else 'OFF'}", "-DSAMPLE_EXTENSION_PYTHON=OFF"]
    if nvcc:
        args.append(f"-DCMAKE_CUDA_COMPILER={nvcc}")
    args.extend(extra)
    configured = subprocess.run(args, capture_output=True, text=True)
    if configured.returncode != 0:
        sys.exit(configured.stdout + configured.stderr)
    built = subprocess.run(["cmake", "--build", str(build), "--target", benchmark], capture_output=True, text=True)
    if built.returncode != 0:
        sys.exit(built.stdout + built.stderr)
    return "\n".join(line for line in configured.stdout.splitlines() if "ciq_build:" in line)


def run(exe: Path, args: list[str], metric_regex: str | None, metric_unit: str) -> float:
    """One benchmark run's time in ms, read as tune reads it (CIQ_METRIC time_ms, or the target's METRIC in UNIT)."""
    done = subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=120)
    parsed = parse_output(done.stdout, metric_regex, metric_unit)
    if done.returncode != 0 or parsed.check == "FAIL" or "time_ms" not in parsed.metrics:
        sys.exit(f"{exe} failed ({done.returncode}, check {parsed.check}, no time read: "
                 f"{'time_ms' not in parsed.metrics}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return parsed.metrics["time_ms"]


def bootstrap_ratio(a: np.ndarray, b: np.ndarray, n: int = 20000, seed: int = 1) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    ma = np.median(rng.choice(a, (n, a.size)), axis=1)
    mb = np.median(rng.choice(b, (n, b.size)), axis=1)
    lo, hi = np.percentile(mb / ma, [2.5, 97.5])
    return float(lo), float(hi)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, required=True)
    parser.add_argument("--target", required=True)
    parser.add_argument("--benchmark", required=True)
    parser.add_argument("--nvcc")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--time-limit", type=float, metavar="S",
                        help="stop before a round that would end past S seconds from the start, builds included "
                             "(said): a call's budget then ends with the rounds that fit, not with nothing")
    parser.add_argument("--work", type=Path, default=Path("/tmp/ciq-confirm-ci"))
    parser.add_argument("--json", type=Path)
    parser.add_argument("--arm", action="append", default=[], metavar="NAME=CMAKE_ARG",
                        help="a third build with the defaults plus one CMake argument (pins disabled), "
                             "e.g. the winner's -D params alone; timed in the same rotation")
    parser.add_argument("bench_args", nargs="*")
    o = parser.parse_args()
    deadline = None if o.time_limit is None else time.monotonic() + o.time_limit

    dirs = {"defaults": o.work / f"{o.target}-defaults", "pinned": o.work / f"{o.target}-pinned"}
    extra = {}
    for arm in o.arm:
        name, _, argument = arm.partition("=")
        dirs[name] = o.work / f"{o.target}-{name}"
        extra[name] = (argument,)
    for name, build in dirs.items():
        print(f"[{name}]", configure_and_build(o.source, build, o.nvcc, name != "pinned", o.benchmark,
                                               extra.get(name, ())))
    verify = subprocess.run([sys.executable, "-m", "ciq_build", "verify", o.target, "-B", str(dirs["pinned"])],
                            capture_output=True, text=True)
    print(f"verify exit {verify.returncode}:", (verify.stdout + verify.stderr).strip()[-1500:])

    manifest = load_manifest(dirs["pinned"], o.target)
    metric_regex, metric_unit = manifest.metric_regex or None, manifest.metric_unit
    exes = {name: build / o.benchmark for name, build in dirs.items()}
    samples: dict[str, list[float]] = {name: [] for name in dirs}
    names = list(dirs)
    for index in range(o.rounds):  # A B, B A, ... (with more arms: each order reversed in turn)
        started = time.monotonic()
        order = names if index % 2 == 0 else names[::-1]
        for name in order:
            samples[name].append(run(exes[name], o.bench_args, metric_regex, metric_unit))
        # Another round as long as this one would end past the limit: stop with the whole rounds done.
        if deadline is not None and index + 1 < o.rounds and 2 * time.monotonic() - started > deadline:
            print(f"stopped after {index + 1} of {o.rounds} rounds: another would end past --time-limit "
                  f"{o.time_limit:.0f} s")
            break
    a, b = np.array(samples["defaults"]), np.array(samples["pinned"])
    ratio = float(np.median(b) / np.median(a))
    lo, hi = bootstrap_ratio(a, b)
    try:
        from scipy.stats import mannwhitneyu
        p = float(mannwhitneyu(b, a, alternative="less").pvalue)
    except ImportError:
        p = float("nan")
    print(f"{'build':<10}{'median ms':>12}{'IQR ms':>10}{'min':>10}{'max':>10}{'runs':>6}")
    for name, x in (("defaults", a), ("pinned", b)):
        q1, q3 = np.percentile(x, [25, 75])
        print(f"{name:<10}{np.median(x):>12.6f}{q3 - q1:>10.6f}{x.min():>10.6f}{x.max():>10.6f}{x.size:>6}")
    for name in names[2:]:
        x = np.array(samples[name])
        q1, q3 = np.percentile(x, [25, 75])
        print(f"{name:<10}{np.median(x):>12.6f}{q3 - q1:>10.6f}{x.min():>10.6f}{x.max():>10.6f}{x.size:>6}")
    print(f"{o.target}: ratio pinned/defaults = {ratio:.4f}, 95% CI [{lo:.4f}, {hi:.4f}], "
          f"Mann-Whitney p(pinned faster) = {p:.3g}, verify exit {verify.returncode}")
    arms = {}
    for name in names[2:]:
        x = np.array(samples[name])
        r = float(np.median(x) / np.median(a))
        arms[name] = {"ratio": r, "ci95": bootstrap_ratio(a, x), "pinned_over_arm": float(np.median(b) / np.median(x)),
                      "pinned_over_arm_ci95": bootstrap_ratio(x, b), "argument": extra[name][0]}
        print(f"{o.target}: {name}/defaults = {r:.4f}, 95% CI [{arms[name]['ci95'][0]:.4f}, "
              f"{arms[name]['ci95'][1]:.4f}]; pinned/{name} = {arms[name]['pinned_over_arm']:.4f}, 95% CI "
              f"[{arms[name]['pinned_over_arm_ci95'][0]:.4f}, {arms[name]['pinned_over_arm_ci95'][1]:.4f}]")
    if o.json:
        o.json.write_text(json.dumps({"target": o.target, "samples": samples, "ratio": ratio, "ci95": [lo, hi],
                                      "p": p, "arms": arms, "verify_exit": verify.returncode,
                                      "verify": (verify.stdout + verify.stderr)[-4000:]}, indent=1))
    return 0 if verify.returncode == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
