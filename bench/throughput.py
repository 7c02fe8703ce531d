"""Evaluations per minute of ptxas ACF candidates, static objective, on the same PTX.

    python bench/throughput.py [--count 24] [--acfs POOL_DIR] [--nvcc PATH] [--keep DIR]

On the sample's gemm_kernels (sm_90a; the PTX is the one nvcc's front end
produced in a scratch tree), each of `--count` ptxas ACFs (a pool folder, or
sampled with compileiq from the CUDA 13.3 search space) is evaluated four
ways, candidate by candidate, the four side by side (so a loaded machine
slows them alike):

  (a) NVIDIA's ptxas example flow: write the ACF, run
      `ptxas -v --apply-controls <acf>` on the PTX, parse the report;
  (b) ciq_build's candidate evaluation with the ptxas-only path
      (ScratchTree.build(static_only=True) + the driver's metric parsing);
  (c) the same without it: today's full rebuild through CMake/Ninja/nvcc
      (target and benchmark, as the driver builds a candidate);
  (d) one raw ptxas run per candidate (the limit);
  (b') for reference, the ptxas-only path when objects are needed
      (ptxas, fatbinary, host compile, then Ninja's archive and relink).

Printed: evaluations/minute of each, the ratios b/a, b/d, b/c, and where (b)'s
time goes (the nvcc --dryrun that gives ptxas its exact options, ptxas itself,
the rest). Every flow must report the same registers/spills per candidate.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ciq_build.build import cmake  # noqa: E402
from ciq_build.build.manifest import load_manifest  # noqa: E402
from ciq_build.compiler import metrics, ptxas_path  # noqa: E402
from ciq_build.compiler.controls import AcfRef, Controls  # noqa: E402
from ciq_build.compiler.toolchain import load_toolchain  # noqa: E402
from ciq_build.resources import cmake_dir  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parent.parent
SAMPLE = REPO_ROOT / "sample_extension"
TARGET = "gemm_kernels"
_USED = re.compile(r"Used (\d+) registers")
_SPILLS = re.compile(r"(\d+) bytes spill stores, (\d+) bytes spill loads")


def _default_nvcc() -> Path:
    try:
        import nvidia.cu13

        for base in nvidia.cu13.__path__:
            if (Path(base) / "bin" / "nvcc").is_file():
                return Path(base) / "bin" / "nvcc"
    except ImportError:
        pass
    sys.exit('needs the CUDA 13.3 toolkit (pip install "ciq-build[cuda]") or --nvcc PATH')


def _acf_pool(args: argparse.Namespace, work: Path) -> list[Path]:
    pool = Path(args.acfs) if args.acfs else work / "acfs"
    if not args.acfs:
        sampled = subprocess.run([sys.executable, "-m", "ciq_build", "sample-acfs", "--count", str(args.count),
                                  "--seed", str(args.seed), "--out", str(pool)], capture_output=True, text=True)
        if sampled.returncode != 0:
            sys.exit(f"sampling ACFs failed (set CIQ_SEARCH_SPACES_DIR; or pass --acfs):\n{sampled.stderr}")
    found = sorted(pool.glob("*.acf"))[: args.count]
    if not found:
        sys.exit(f"no .acf files in {pool}")
    return found


def _trees(work: Path, nvcc: Path) -> tuple[cmake.ScratchTree, cmake.ScratchTree]:
    source = work / "sample_extension"
    shutil.copytree(SAMPLE, source, ignore=shutil.ignore_patterns("build", "*.json", "*.acf"))
    user = work / "user-build"
    subprocess.run(["cmake", "-S", str(source), "-B", str(user), "-G", "Ninja", f"-DCMAKE_CUDA_COMPILER={nvcc}",
                    f"-Dciq_build_DIR={cmake_dir()}", "-DSAMPLE_EXTENSION_PYTHON=OFF"], check=True,
                   capture_output=True)
    manifest, toolchain = load_manifest(user, TARGET), load_toolchain(nvcc)
    fast = cmake.ScratchTree(manifest, work / "scratch-fast", toolchain)
    full = cmake.ScratchTree(manifest, work / "scratch-full", toolchain, fast_path=False)
    for tree in (fast, full):
        tree.configure(300)
        if not tree.build(Controls(), 600).ok:  # the baseline: the fast tree keeps its front end
            sys.exit(f"the baseline build of {TARGET} failed in {tree.root}")
    return fast, full


def _ciq_static(build: cmake.CandidateBuild) -> tuple[int, int]:
    """What the driver's static metrics read from a build (registers, spill bytes)."""
    summary = metrics.summarize(metrics.parse_ptxas_verbose(build.compiler_output))
    return summary["registers"], summary["spill_bytes"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=24)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--acfs", help="a pool folder of ptxas ACFs (default: sample --count with compileiq)")
    parser.add_argument("--nvcc", help="nvcc 13.3 (default: the pip toolkit)")
    parser.add_argument("--keep", help="work folder to keep (default: a temporary one)")
    args = parser.parse_args()
    nvcc = Path(args.nvcc) if args.nvcc else _default_nvcc()
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="ciq-throughput-"))
    work.mkdir(parents=True, exist_ok=True)
    acfs = _acf_pool(args, work)
    print(f"{len(acfs)} ptxas ACFs on {TARGET} (sm_90a), {os.cpu_count()} CPUs; work folder {work}", flush=True)
    fast, full = _trees(work, nvcc)

    [argv] = fast._tuned_compiles(300)
    plan = ptxas_path.plan(argv, fast.build_dir, fast.front_end_cache)
    [ptxas_step] = plan.ptxas
    ptx = next(plan.entry.glob("*.ptx"))
    ptxas = nvcc.parent / "ptxas"
    arch = re.search(r"-arch=(sm_\w+)", ptxas_step).group(1)
    flow_dir = work / "example-flow"
    flow_dir.mkdir(exist_ok=True)

    seconds: dict[str, list[float]] = {k: [] for k in ("a", "b", "b'", "c", "d", "dryrun")}
    for index, acf in enumerate(acfs):
        results = {}
        # (a) NVIDIA's example flow: write the ACF the engine produced, ptxas -v on the PTX, parse.
        started = time.perf_counter()
        written = flow_dir / f"candidate_{index}.acf"
        written.write_bytes(acf.read_bytes())
        ran = subprocess.run([str(ptxas), f"-arch={arch}", "-m64", "-v", f"--apply-controls={written}", str(ptx),
                              "-o", str(flow_dir / "out.cubin")], capture_output=True, text=True)
        spills = _SPILLS.search(ran.stdout + ran.stderr)
        results["a"] = (int(_USED.search(ran.stdout + ran.stderr).group(1)),
                        int(spills.group(1)) + int(spills.group(2)) if spills else 0)
        seconds["a"].append(time.perf_counter() - started)
        # (d) one raw ptxas run.
        started = time.perf_counter()
        subprocess.run([str(ptxas), f"-arch={arch}", "-m64", "-v", f"--apply-controls={acf}", str(ptx),
                        "-o", str(flow_dir / "raw.cubin")], capture_output=True)
        seconds["d"].append(time.perf_counter() - started)
        # (b) ciq_build, ptxas-only path, static objective.
        started = time.perf_counter()
        controls = Controls(acf=AcfRef.from_file(acf, "ptxas"))
        built = fast.build(controls, 600, static_only=True)
        results["b"] = _ciq_static(built)
        seconds["b"].append(time.perf_counter() - started)
        if built.objects:
            sys.exit(f"candidate {acf.name}: the ptxas-only path was not taken")
        # What (b) spends on asking nvcc for ptxas's exact options (part of b).
        started = time.perf_counter()
        ptxas_path.dryrun(argv, fast.build_dir)
        seconds["dryrun"].append(time.perf_counter() - started)
        # (b') the ptxas-only path with objects and relink.
        started = time.perf_counter()
        results["b'"] = _ciq_static(fast.build(controls, 600))
        seconds["b'"].append(time.perf_counter() - started)
        # (c) today's full rebuild.
        started = time.perf_counter()
        results["c"] = _ciq_static(full.build(controls, 600))
        seconds["c"].append(time.perf_counter() - started)
        if len(set(results.values())) != 1:
            sys.exit(f"candidate {acf.name}: the flows disagree: {results}")
        print(f"  {index + 1:2d}/{len(acfs)} {acf.name[:12]} registers {results['a'][0]:3d} spills "
              f"{results['a'][1]:5d}  " + "  ".join(f"{k} {seconds[k][-1]:.3f}s" for k in ("a", "b", "b'", "c", "d")),
              flush=True)

    def per_minute(key: str) -> float:
        return 60.0 / statistics.mean(seconds[key])

    print()
    print(f"{'flow':52s} {'s/eval (median)':>16s} {'evals/min (mean)':>17s}")
    names = {"a": "(a) NVIDIA example flow (write ACF, ptxas -v, parse)",
             "b": "(b) ciq_build, ptxas-only path (static objective)",
             "b'": "(b') ciq_build, ptxas-only path, objects + relink",
             "c": "(c) ciq_build, full nvcc rebuild (today)",
             "d": "(d) one raw ptxas run (the limit)"}
    for key, name in names.items():
        print(f"{name:52s} {statistics.median(seconds[key]):16.3f} {per_minute(key):17.1f}")
    print()
    print(f"b/a = {per_minute('b') / per_minute('a'):.2f}x   (goal >= 3x; b cannot beat a, which is one ptxas run)")
    print(f"b/d = {per_minute('b') / per_minute('d'):.2f}x   (goal >= 0.5x, i.e. within 2x of the limit)")
    with_objects = per_minute("b'") / per_minute("c")
    print(f"b/c = {per_minute('b') / per_minute('c'):.2f}x   (b'/c = {with_objects:.2f}x)")
    b, d, dry = (statistics.mean(seconds[k]) for k in ("b", "d", "dryrun"))
    print(f"(b) per evaluation: {b * 1000:.0f} ms = ptxas {d * 1000:.0f} ms + nvcc --dryrun {dry * 1000:.0f} ms "
          f"+ the rest {max(b - d - dry, 0) * 1000:.0f} ms (options file, ACF hash, stat of the compile's inputs, "
          "shell, report parsing)")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
