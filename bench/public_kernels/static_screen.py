"""Static screen of compiler controls on one CUDA source, no GPU needed (issue 13).

Compiles the source once per control (one knob value or one -D parameter at a
time, over the defaults) for one architecture and prints, per variant, what
`cuobjdump` reads from the cubin: registers, spill stores/loads, stack frame,
shared memory, SASS instruction counts (all, global loads/stores, shared
loads, barriers), and whether the SASS is identical to the defaults'. A control
whose SASS is identical cannot change the time; one that changes nothing a
measurement can see still needs the GPU to say.

  python bench/public_kernels/static_screen.py SOURCE -I DIR ... [--arch sm_90a] [--param NAME=V1,V2]
      [--acf-pool DIR] [--no-knobs] [--json OUT]

--acf-pool adds one variant per ptxas ACF of a pool (`python -m ciq_build
sample-acfs --out DIR`), applied as -Xptxas=--apply-controls=FILE.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout's ciq_build (and bench/), run from anywhere
from ciq_build.testing import KNOBS  # noqa: E402


def knob_variants() -> list[tuple[str, list[str]]]:
    variants = []
    for knob in KNOBS:
        if knob.numerics:
            continue
        if knob.is_switch:
            variants.append((knob.template, [knob.template]))
            continue
        values: list[object] = list(knob.choices)
        if knob.grid is not None:
            start, end, step = knob.grid
            values = list(range(start, end + 1, step))
        for value in values:
            variants.append((knob.template.format(value), [knob.template.format(value)]))
    return variants


def screen(nvcc: str, cuobjdump: str, source: Path, includes: list[str], arch: str, flags: list[str], work: Path) -> dict:
    cubin = work / "v.cubin"
    cmd = [nvcc, "-cubin", f"-arch={arch}", "-O3", "-DNDEBUG", "-std=c++17", *[f"-I{i}" for i in includes],
           *flags, "-Xptxas=-v", str(source), "-o", str(cubin)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "failed"}
    return describe_cubin(cuobjdump, cubin, done.stderr)


def describe_cubin(cuobjdump: str, cubin: Path, ptxas_log: str) -> dict:
    """What a cubin is: registers, shared memory, stack, spills (from ptxas -v's log), SASS counts, code hash."""
    res = subprocess.run([cuobjdump, "-res-usage", str(cubin)], capture_output=True, text=True).stdout
    sass = subprocess.run([cuobjdump, "-sass", str(cubin)], capture_output=True, text=True).stdout
    regs = [int(m) for m in re.findall(r"REG:(\d+)", res)]
    shared = [int(m) for m in re.findall(r"SHARED:(\d+)", res)]
    stack = [int(m) for m in re.findall(r"STACK:(\d+)", res)]
    spill_st = sum(int(m) for m in re.findall(r"(\d+) bytes spill stores", ptxas_log))
    spill_ld = sum(int(m) for m in re.findall(r"(\d+) bytes spill loads", ptxas_log))
    lines = [re.sub(r"/\*[0-9a-f]{4,}\*/", "", line).strip()
             for line in sass.splitlines() if re.search(r"/\*[0-9a-f]{4}\*/", line)]
    ops = [(text.split()[1] if text.startswith("@") else text.split()[0]).split(".")[0] for text in lines if text]

    def count(name: str) -> int:
        return sum(1 for o in ops if o == name)
    return {
        "regs": max(regs) if regs else None, "shared": max(shared) if shared else None,
        "stack": max(stack) if stack else None, "spill_stores": spill_st, "spill_loads": spill_ld,
        "sass": len(ops), "ldg": count("LDG"), "stg": count("STG"), "lds": count("LDS"), "bar": count("BAR"),
        "sass_sha": hashlib.sha256("\n".join(lines).encode()).hexdigest()[:12],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("source", type=Path)
    ap.add_argument("-I", dest="includes", action="append", default=[])
    ap.add_argument("--arch", default="sm_90a")
    ap.add_argument("--nvcc", default="nvcc")
    ap.add_argument("--cuobjdump", default="cuobjdump")
    ap.add_argument("--param", action="append", default=[], help="NAME=V1,V2,... (one -D at a time)")
    ap.add_argument("--acf-pool", type=Path, help="also one variant per .acf file of this folder")
    ap.add_argument("--no-knobs", action="store_true", help="leave out the catalogue knobs")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    variants: list[tuple[str, list[str]]] = [("defaults", [])]
    for spec in args.param:
        name, values = spec.split("=", 1)
        variants += [(f"-D{name}={v}", [f"-D{name}={v}"]) for v in values.split(",")]
    if not args.no_knobs:
        variants += knob_variants()
    if args.acf_pool:
        variants += [(f"acf:{f.name[:8]}", [f"-Xptxas=--apply-controls={f.resolve()}"])
                     for f in sorted(args.acf_pool.glob("*.acf"))]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for label, flags in variants:
            row = {"variant": label, **screen(args.nvcc, args.cuobjdump, args.source, args.includes, args.arch, flags, Path(tmp))}
            rows.append(row)
    base = rows[0]
    print(f"{'variant':46} regs spill(st/ld) stack smem  sass  ldg stg lds bar  same-SASS")
    for row in rows:
        if "error" in row:
            print(f"{row['variant']:46} error: {row['error']}")
            continue
        same = "yes" if row["sass_sha"] == base["sass_sha"] else "no"
        print(f"{row['variant']:46} {row['regs']:4} {row['spill_stores']:5}/{row['spill_loads']:<5} {row['stack']:5} "
              f"{row['shared']:5} {row['sass']:5} {row['ldg']:4} {row['stg']:3} {row['lds']:3} {row['bar']:3}  {same}")
    distinct = len({r["sass_sha"] for r in rows if "sass_sha" in r})
    print(f"{len(rows)} variants, {distinct} distinct SASS")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
