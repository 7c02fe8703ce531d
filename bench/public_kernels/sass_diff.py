"""What a pin changed in the machine code: two builds of a target, kernel by kernel (issue 24).

For each kernel in both object files (or static libraries): registers, stack, shared and local
memory (`cuobjdump -res-usage`), the SASS instruction count, local-memory traffic (LDL/STL: spills
and stack arrays) and the opcodes whose counts differ, most changed first (`cuobjdump -sass`).
Kernels whose SASS is identical are said to be so. Prints a text report; --json writes the numbers.

    python bench/public_kernels/sass_diff.py DEFAULTS.a PINNED.a [--cuobjdump cuobjdump] [--kernel REGEX] [--json OUT]
"""
from __future__ import annotations

import argparse
import collections
import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

FUNCTION = re.compile(r"^\s*Function\s*:?\s*([^\s:]+)\s*:?\s*$")  # "Function f:" (-res-usage), "Function : f" (-sass)
RESOURCE = re.compile(r"(REG|STACK|SHARED|LOCAL):(\d+)")
INSTRUCTION = re.compile(r"/\*[0-9a-f]{4,}\*/\s*(.*?)\s*;")


def resources(cuobjdump: str, path: Path) -> dict[str, dict[str, int]]:
    out = subprocess.run([cuobjdump, "-res-usage", str(path)], capture_output=True, text=True, check=True).stdout
    usage: dict[str, dict[str, int]] = {}
    name = None
    for line in out.splitlines():
        if match := FUNCTION.match(line):
            name = match.group(1)
        elif name and (found := RESOURCE.findall(line)):
            usage[name] = {key.lower(): int(value) for key, value in found}
    return usage


def sass(cuobjdump: str, path: Path) -> dict[str, list[str]]:
    out = subprocess.run([cuobjdump, "-sass", str(path)], capture_output=True, text=True, check=True).stdout
    code: dict[str, list[str]] = collections.defaultdict(list)
    name = None
    for line in out.splitlines():
        if match := FUNCTION.match(line):
            name = match.group(1)
        elif name and (found := INSTRUCTION.search(line)):
            code[name].append(found.group(1))
    return code


def opcode(instruction: str) -> str:
    words = instruction.split()
    word = words[1] if words and words[0].startswith("@") and len(words) > 1 else (words[0] if words else "")
    return word.split(".")[0]


def describe(usage: dict[str, int], code: list[str]) -> dict:
    ops = collections.Counter(opcode(i) for i in code)
    return {**usage, "sass": len(code), "ldl": ops["LDL"], "stl": ops["STL"], "opcodes": dict(ops),
            "sha": hashlib.sha256("\n".join(code).encode()).hexdigest()[:12]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("defaults", type=Path)
    ap.add_argument("pinned", type=Path)
    ap.add_argument("--cuobjdump", default="cuobjdump")
    ap.add_argument("--kernel", default="", help="only kernels whose (mangled) name matches this regex")
    ap.add_argument("--top", type=int, default=12, help="opcodes shown per kernel")
    ap.add_argument("--json", type=Path)
    o = ap.parse_args()
    for path in (o.defaults, o.pinned):
        if not path.is_file():
            sys.exit(f"{path} does not exist: give two object files or static libraries built from the same source")
    sides = {}
    for side, path in (("defaults", o.defaults), ("pinned", o.pinned)):
        usage, code = resources(o.cuobjdump, path), sass(o.cuobjdump, path)
        sides[side] = {k: describe(usage.get(k, {}), code[k]) for k in code if re.search(o.kernel, k)}
    report = {}
    names = sorted(set(sides["defaults"]) & set(sides["pinned"]))
    if not names:
        sys.exit(f"no kernel{' matching ' + o.kernel if o.kernel else ''} in both {o.defaults} and {o.pinned}")
    same = 0
    for name in names:
        a, b = sides["defaults"][name], sides["pinned"][name]
        if a["sha"] == b["sha"] and all(a.get(k) == b.get(k) for k in ("reg", "stack", "shared", "local")):
            same += 1
            continue
        ops = sorted(set(a["opcodes"]) | set(b["opcodes"]),
                     key=lambda op: (-abs(b["opcodes"].get(op, 0) - a["opcodes"].get(op, 0)), op))
        changed = [(op, a["opcodes"].get(op, 0), b["opcodes"].get(op, 0)) for op in ops
                   if a["opcodes"].get(op, 0) != b["opcodes"].get(op, 0)]
        report[name] = {"defaults": {k: v for k, v in a.items() if k != "opcodes"},
                        "pinned": {k: v for k, v in b.items() if k != "opcodes"},
                        "opcodes_changed": changed}
        print(f"{name}")
        for key in ("reg", "stack", "shared", "local", "sass", "ldl", "stl"):
            print(f"  {key:<7}{a.get(key, '-')!s:>8} -> {b.get(key, '-')!s:<8}")
        shown = ", ".join(f"{op} {x}->{y}" for op, x, y in changed[: o.top])
        print(f"  opcodes: {shown or 'same counts, other order or operands'}")
    print(f"{len(names)} kernel(s) in both; {same} with identical SASS and resources")
    if o.json:
        o.json.write_text(json.dumps({"kernels": report, "identical": same, "compared": len(names)}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
