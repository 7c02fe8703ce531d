"""Helpers of bench/compileiq_side_by_side/run.sh (issue 23 item 4): CompileIQ's own flow against ciq_build.

    derive SRC DST          CompileIQ's examples/compilers/nvcc_example/optimize_reduction.py (from a
                            CompileIQ checkout, never committed here) written to DST with its search space
                            changed, and nothing else: see CHANGES
    timed JSON -- CMD...    run CMD (output passed through), then write its wall time and the CPU time of
                            its process tree (getrusage of the children) to JSON
    budget PROBE_JSON       `GENERATIONS POOL` that fit ARM_S seconds of CompileIQ's flow, from a probe
                            compile and one run (POOL shrunk where 2 do not fit; both arms get the same)
    remeasure ...           the defaults and both winners built the one way CompileIQ's script builds, run
                            in interleaved rounds; each run's time from its throughput line
    report DIR              the side-by-side figures, as ratios
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench.public_kernels.confirm import bootstrap_ratio  # noqa: E402

# Each change made to CompileIQ's script, as (what it says, what arm A runs instead, why). Every one must
# match exactly once, so a changed upstream script stops the benchmark instead of being run half-changed.
CHANGES = (
    ("from compileiq.search_spaces.compilers import NvccSearchSpace",
     "from compileiq.search_spaces.compilers import PtxasSearchSpace",
     "the PTXAS space: NVCC ACFs need sm_100, the H200 is sm_90"),
    ("NvccSearchSpace(version=cuda_version)", "PtxasSearchSpace(version=cuda_version)", "the same"),
    ('flags += ["--apply-controls", str(config_file)]', 'flags += ["-Xptxas", f"--apply-controls={config_file}"]',
     "a PTXAS ACF reaches ptxas through -Xptxas, as CompileIQ's nvbench_example applies it"),
    ('["nvcc", "--version"]', '["ptxas", "--version"]',
     "the version the search space is chosen by is the ACF reader's: ptxas 13.3 beside the machine's nvcc 13.0"),
)

# CompileIQ's benchmark line: "Reduction, Throughput = %.4f GB/s, Time = %.5f s, Size = %d Elements".
# Its Time has 5 decimals of a second (10 us steps on a ~60 us kernel); the throughput has 8+ digits.
THROUGHPUT = re.compile(r"Throughput = ([0-9.]+) GB/s, Time = ([0-9.eE+-]+) s, Size = ([0-9]+) Elements")


def derive(source: Path, dest: Path) -> None:
    text = (source / "optimize_reduction.py").read_text(encoding="utf-8")
    for old, new, _ in CHANGES:
        count = text.count(old)
        if count != 1:
            sys.exit(f"CompileIQ's script says {old!r} {count} times (expected once): it changed upstream; "
                     "review CHANGES in bench/compileiq_side_by_side/steps.py against it")
        text = text.replace(old, new)
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "optimize_reduction.py").write_text(text, encoding="utf-8")
    for old, new, why in CHANGES:
        print(f"arm A: {old}  ->  {new}  ({why})")


def timed(out: Path, command: list[str]) -> int:
    started = time.monotonic()
    code = subprocess.call(command)
    wall = time.monotonic() - started
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    out.write_text(json.dumps({"command": command, "returncode": code, "wall_s": wall,
                               "cpu_s": usage.ru_utime + usage.ru_stime}), encoding="utf-8")
    print(f"timed: {wall:.1f} s wall, {usage.ru_utime + usage.ru_stime:.1f} s CPU (children), exit {code}")
    return code


def budget(probe: Path, arm_s: float, pool: int, runs: int, most: int) -> None:
    """Prints `GENERATIONS POOL`: generations of `pool` candidates, each a compile and `runs` runs, that fit
    `arm_s` seconds. Two generations at least (one is no search); where two of `pool` do not fit, the pool
    shrinks to what does, down to compileiq's least (6): on the H200 two generations of 12 took 1.6x the
    budget and left ciq_build's arm 13 s (docs/results/compileiq-side-by-side-h200-overrun.txt)."""
    data = json.loads(probe.read_text(encoding="utf-8"))
    per_candidate = data["compile_s"] + runs * data["run_s"]
    generations = max(2, min(most, int(arm_s // (pool * per_candidate))))
    fitted_pool = pool if generations > 2 else max(LEAST_POOL, min(pool, int(arm_s // (2 * per_candidate))))
    print(generations, fitted_pool)
    print(f"budget: a candidate ~{per_candidate:.1f} s (compile {data['compile_s']:.1f} s + {runs} x "
          f"{data['run_s']:.2f} s run): {generations} generations x {fitted_pool} in {arm_s:.0f} s"
          + (f" (the pool shrunk from {pool}: two generations of it do not fit)" if fitted_pool < pool else ""),
          file=sys.stderr)


LEAST_POOL = 6  # compileiq's SearchConfiguration refuses a pool of 5 or fewer


# ------------------------------------------------------------------ the re-measure


def cuda_includes(nvcc: Path) -> list[str]:
    """The -I flags CompileIQ's script gives (its get_include_flags), for the same compile line."""
    root = nvcc.parent.parent  # as the script finds it: the nvcc on PATH, not resolved
    found = [root / "include", root / "include" / "cccl", root.parent / "include", root.parent / "include" / "cccl"]
    return [f"-I{p}" for p in found if p.exists()]


def build(nvcc: Path, arch: str, source: Path, exe: Path, acf: Path | None, flags: list[str]) -> None:
    """CompileIQ's script's compile line (build_and_run), with an ACF through -Xptxas."""
    command = [str(nvcc), f"-arch={arch}", *cuda_includes(nvcc), "-O3", "-std=c++17", "-DNDEBUG", *flags]
    if acf is not None:
        command += ["-Xptxas", f"--apply-controls={acf}"]
    done = subprocess.run([*command, str(source), "-o", str(exe)], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"building {exe.name} failed:\n{' '.join(command)}\n{done.stderr[-3000:]}")


def run_once(exe: Path, n: int) -> float:
    """One run's kernel time in ms, from its throughput line (n int32s read per launch)."""
    done = subprocess.run([str(exe), f"-n={n}"], capture_output=True, text=True, timeout=120)
    out = done.stdout + done.stderr
    match = THROUGHPUT.search(out)
    if done.returncode != 0 or "Test passed" not in out or match is None:
        sys.exit(f"{exe} failed ({done.returncode}):\n{out[-2000:]}")
    return 1e3 * int(match.group(3)) * 4 / (float(match.group(1)) * 1e9)


def pinned_controls(pin: Path) -> tuple[Path | None, list[str]]:
    """The ACF and flags a ciq_build record pins (none: the defaults)."""
    if not pin.is_file():
        return None, []
    controls = json.loads(pin.read_text(encoding="utf-8"))["controls"]
    acf = controls.get("acf")
    return (pin.parent / acf["file"] if acf else None), list(controls.get("flags", []))


def remeasure(args: argparse.Namespace) -> None:
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    arms: dict[str, tuple[Path | None, list[str]]] = {"defaults": (None, [])}
    a_acf = Path(args.compileiq_acf)
    arms["compileiq"] = (a_acf if a_acf.is_file() else None, [])
    arms["ciq_build"] = pinned_controls(Path(args.ciq_pin))
    exes = {}
    for name, (acf, flags) in arms.items():
        exes[name] = work / f"reduction-{name}"
        build(Path(args.nvcc), args.arch, Path(args.source), exes[name], acf, flags)
    samples: dict[str, list[float]] = {name: [] for name in arms}
    order = list(arms)
    for round_index in range(args.rounds):
        for name in order[round_index % len(order):] + order[:round_index % len(order)]:  # rotated each round
            samples[name].append(run_once(exes[name], args.n))
    base = np.array(samples["defaults"])
    result: dict[str, object] = {"rounds": args.rounds, "n": args.n, "samples_ms": samples,
                                 "controls": {k: [str(v[0]) if v[0] else None, v[1]] for k, v in arms.items()}}
    for name in ("compileiq", "ciq_build"):
        arm = np.array(samples[name])
        lo, hi = bootstrap_ratio(base, arm)
        result[name] = {"median_ms": float(np.median(arm)), "ratio": float(np.median(arm) / np.median(base)),
                        "ci95": [lo, hi], "pinned": arms[name][0] is not None or bool(arms[name][1])}
    result["defaults"] = {"median_ms": float(np.median(base))}
    Path(args.json).write_text(json.dumps(result, indent=1), encoding="utf-8")
    print(f"re-measure: {args.rounds} interleaved rounds; defaults {np.median(base):.5f} ms")
    for name in ("compileiq", "ciq_build"):
        r = result[name]
        assert isinstance(r, dict)
        print(f"re-measure: {name} winner {r['median_ms']:.5f} ms = {r['ratio']:.4f}x the defaults "
              f"(95% CI {r['ci95'][0]:.4f}-{r['ci95'][1]:.4f}){'' if r['pinned'] else ' (nothing pinned: the defaults)'}")


# ------------------------------------------------------------------ the report


def compileiq_candidates(results_csv: Path) -> int:
    if not results_csv.is_file():
        return 0
    with results_csv.open(newline="", encoding="utf-8") as handle:
        return sum(1 for _ in csv.DictReader(handle))


def ciq_build_journal(build_dir: Path) -> list[dict]:
    """The evaluations ciq_build journaled (the defaults' baseline first, then each candidate)."""
    records = []
    for journal in sorted(build_dir.glob("ciq/journal/*.jsonl")):
        for line in journal.read_text(encoding="utf-8").splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and record.get("kind") == "evaluation":
                records.append(record)
    return records


def report(res: Path) -> None:
    a = json.loads((res / "arm-a.time.json").read_text(encoding="utf-8"))
    b = json.loads((res / "arm-b.time.json").read_text(encoding="utf-8"))
    a_n = compileiq_candidates(res / "arm-a" / "optimization_results.csv")
    b_log = (res / "arm-b.log").read_text(encoding="utf-8", errors="replace") if (res / "arm-b.log").is_file() else ""
    progress = re.findall(r"evaluation ([0-9]+)/[0-9]+", b_log)  # one line per candidate evaluated
    journal = ciq_build_journal(res / "arm-b" / "build")
    b_n = int(progress[-1]) if progress else max(len(journal) - 1, 0)
    runs = sum(int(r.get("runs") or 0) for r in journal)
    bench_s = sum(float((r.get("timings") or {}).get("benchmark_s") or 0) for r in journal)
    busy = re.findall(r"^\s*GPU: ([^\n]*)", b_log, re.M)  # ciq_build's summary: where the GPU's time went
    print("== side by side (one device call; wall: each arm's whole command, first line to its end)")
    print(f"CompileIQ's flow (arm A): {a['wall_s']:.1f} s wall, {a['cpu_s']:.1f} s CPU, {a_n} candidates, exit "
          f"{a['returncode']}")
    print(f"ciq_build        (arm B): {b['wall_s']:.1f} s wall, {b['cpu_s']:.1f} s CPU, {b_n} candidates, exit "
          f"{b['returncode']}; {runs} benchmark runs journaled, {bench_s:.1f} s of them "
          f"({bench_s / b['wall_s']:.2f} of the wall)")
    print(f"ciq_build's GPU: {busy[-1] if busy else 'not printed (a tune that pinned nothing, or an older ciq_build)'}")
    print(f"wall B/A: {b['wall_s'] / a['wall_s']:.3f}x (a cost: lower is better; goal <= 0.5x); "
          f"CPU B/A: {b['cpu_s'] / max(a['cpu_s'], 1e-9):.3f}x")
    remeasured = res / "remeasure.json"
    if remeasured.is_file():
        r = json.loads(remeasured.read_text(encoding="utf-8"))
        for name in ("compileiq", "ciq_build"):
            arm = r[name]
            print(f"winner {name}: {arm['ratio']:.4f}x the defaults' time (95% CI {arm['ci95'][0]:.4f}-"
                  f"{arm['ci95'][1]:.4f}; lower is better; {r['rounds']} interleaved rounds)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("derive")
    p.add_argument("source", type=Path)
    p.add_argument("dest", type=Path)
    p = sub.add_parser("timed")
    p.add_argument("json", type=Path)
    p.add_argument("cmd", nargs=argparse.REMAINDER)
    p = sub.add_parser("probe")
    p.add_argument("--nvcc", required=True)
    p.add_argument("--arch", required=True)
    p.add_argument("--source", required=True)
    p.add_argument("--n", type=int, required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--json", required=True)
    p = sub.add_parser("budget")
    p.add_argument("probe", type=Path)
    p.add_argument("--arm-s", type=float, required=True)
    p.add_argument("--pool", type=int, required=True)
    p.add_argument("--runs", type=int, required=True)
    p.add_argument("--most", type=int, default=10)
    p = sub.add_parser("remeasure")
    for name in ("nvcc", "arch", "source", "work", "json", "compileiq_acf", "ciq_pin"):
        p.add_argument(f"--{name.replace('_', '-')}", required=True)
    p.add_argument("--n", type=int, required=True)
    p.add_argument("--rounds", type=int, required=True)
    p = sub.add_parser("report")
    p.add_argument("res", type=Path)
    args = parser.parse_args()
    if args.command == "derive":
        derive(args.source, args.dest)
    elif args.command == "timed":
        return timed(args.json, args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd)
    elif args.command == "probe":
        work = Path(args.work)
        work.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        build(Path(args.nvcc), args.arch, Path(args.source), work / "reduction-probe", None, [])
        compiled = time.monotonic()
        run_once(work / "reduction-probe", args.n)
        Path(args.json).write_text(json.dumps({"compile_s": compiled - started,
                                               "run_s": time.monotonic() - compiled}), encoding="utf-8")
    elif args.command == "budget":
        budget(args.probe, args.arm_s, args.pool, args.runs, args.most)
    elif args.command == "remeasure":
        remeasure(args)
    else:
        report(args.res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
