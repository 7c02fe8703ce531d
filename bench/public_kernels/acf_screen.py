"""Screen an ACF pool on one kernel source without a GPU; keep one ACF per distinct machine code (issue 24).

compileiq cannot be installed on the GPU machine, so ACF pools are sampled on a CPU machine
(`python -m ciq_build sample-acfs`). Most ACFs of a random pool give a kernel the same SASS as
another ACF (or as the defaults); measuring those again is wasted GPU time. This compiles the
source to PTX once, runs ptxas on it once per ACF (ptxas on the PTX nvcc keeps gives the same
machine code as the full nvcc build: docs/ARCHITECTURE.md), and writes a smaller pool with the
first ACF of each distinct SASS that differs from the defaults' and spills no more than they do
(a spilling variant of a kernel that spills nothing is not worth a benchmark run). The written
pool is a valid `acf-pool:` folder (pool.json with its own pool_sha256) that names the pool it
was screened from. Where the GPU machine's nvcc front end differs from this one (13.0 there, 13.3
here), its PTX differs too: the screen then says which ACFs change this PTX's code, a proxy for
that one's, and the tune there still dedupes by the machine code it builds.

    python bench/public_kernels/acf_screen.py --source K.cu -I DIR ... [-D NAME=V ...] --pool RAW --out SCREENED
        [--nvcc NVCC] [--cuobjdump CUOBJDUMP] [--arch sm_90a] [--jobs 2] [--first N] [--keep N] [--json REPORT]
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout's ciq_build (and bench/), run from anywhere
from bench.public_kernels.static_screen import describe_cubin  # noqa: E402
from ciq_build.testing import POOL_FILE, atomic_write, load_pool, pool_sha256  # noqa: E402


def ptxas_variant(ptxas: str, cuobjdump: str, ptx: Path, arch: str, acf: Path | None, work: Path) -> dict:
    cubin = work / ((acf.stem if acf else "defaults") + ".cubin")
    cmd = [ptxas, f"-arch={arch}", "-O3", "-v", str(ptx), "-o", str(cubin)]
    if acf is not None:
        cmd.insert(1, f"--apply-controls={acf}")
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["ptxas failed"])[-1]}
    described = describe_cubin(cuobjdump, cubin, done.stderr)
    cubin.unlink()
    return described


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", type=Path, required=True)
    ap.add_argument("-I", dest="includes", action="append", default=[])
    ap.add_argument("-D", dest="defines", action="append", default=[])
    ap.add_argument("--pool", type=Path, required=True, help="the sampled pool (sample-acfs --out)")
    ap.add_argument("--out", type=Path, required=True, help="the screened pool folder to write")
    ap.add_argument("--nvcc", default="nvcc")
    ap.add_argument("--cuobjdump", default="cuobjdump")
    ap.add_argument("--arch", default="sm_90a")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--first", type=int, default=0, help="screen only the pool's first N ACFs (0: all)")
    ap.add_argument("--keep", type=int, default=0, help="keep at most this many (0: all distinct)")
    ap.add_argument("--json", type=Path, help="per-ACF report")
    args = ap.parse_args()

    pool = load_pool(args.pool)
    ptxas = str(Path(args.nvcc).with_name("ptxas"))
    start = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        ptx = work / "k.ptx"
        cmd = [args.nvcc, "-ptx", f"-arch={args.arch}", "-O3", "-DNDEBUG", "-std=c++17",
               *[f"-I{i}" for i in args.includes], *[f"-D{d}" for d in args.defines], str(args.source), "-o", str(ptx)]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"nvcc -ptx failed:\n{done.stderr}")
        defaults = ptxas_variant(ptxas, args.cuobjdump, ptx, args.arch, None, work)
        if "error" in defaults:
            sys.exit(f"ptxas on the defaults failed: {defaults['error']}")
        entries = pool["acfs"][: args.first] if args.first else pool["acfs"]
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as executor:
            results = list(executor.map(
                lambda e: ptxas_variant(ptxas, args.cuobjdump, ptx, args.arch, args.pool / e["file"], work), entries))
    seen = {defaults["sass_sha"]}
    kept: list[dict] = []
    spills = defaults["spill_stores"] + defaults["spill_loads"]
    report = []
    for entry, result in zip(entries, results):
        why = "kept"
        if "error" in result:
            why = "ptxas failed"
        elif result["sass_sha"] == defaults["sass_sha"]:
            why = "same SASS as the defaults"
        elif result["sass_sha"] in seen:
            why = "same SASS as an earlier ACF"
        elif result["spill_stores"] + result["spill_loads"] > spills:
            why = "spills more than the defaults"
        elif args.keep and len(kept) >= args.keep:
            why = "beyond --keep"
        if why == "kept":
            kept.append(entry)
        if "sass_sha" in result:
            seen.add(result["sass_sha"])
        report.append({"file": entry["file"], "verdict": why, **result})
    if not kept:
        sys.exit("no ACF of the pool changes this kernel's machine code: nothing to search")
    if args.out.exists():
        shutil.rmtree(args.out)
    args.out.mkdir(parents=True)
    for entry in kept:
        shutil.copy2(args.pool / entry["file"], args.out / entry["file"])
    screened = {k: v for k, v in pool.items() if k not in ("acfs", "pool_sha256", "count")}
    screened.update({
        "count": len(kept), "acfs": kept, "pool_sha256": pool_sha256(kept),
        "screened_from": {"pool_sha256": pool["pool_sha256"], "count": len(entries), "source": args.source.name,
                          "defines": args.defines, "arch": args.arch,
                          "rule": "first ACF of each distinct SASS, not the defaults', no more spills"},
    })
    atomic_write(args.out / POOL_FILE, json.dumps(screened, indent=2) + "\n")
    distinct = len({r["sass_sha"] for r in report if "sass_sha" in r})
    summary = {"source": str(args.source), "defaults": defaults, "acfs": len(entries), "distinct_sass": distinct,
               "kept": len(kept), "seconds": round(time.monotonic() - start, 1),
               "verdicts": {v: sum(1 for r in report if r["verdict"] == v) for v in sorted({r["verdict"] for r in report})}}
    regs = sorted(r["regs"] for r in report if r.get("regs") is not None)
    if regs:
        summary["regs_range"] = [regs[0], regs[-1]]
    print(json.dumps(summary, indent=1))
    if args.json:
        args.json.write_text(json.dumps({"summary": summary, "acfs": report}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
