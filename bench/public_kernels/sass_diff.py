"""What a pin changed in the machine code: two builds of a target, kernel by kernel (issue 24).

For each kernel in both object files (or static libraries): registers, stack, shared and local
memory (`cuobjdump -res-usage`), the SASS instruction count, local-memory traffic (LDL/STL: spills
and stack arrays) and the opcodes whose counts differ, most changed first (`cuobjdump -sass`).
Kernels whose SASS is identical are said to be so. Prints a text report; --json writes the numbers.

A templated kernel's mangled name carries its template arguments, so a pin that changes a tile
(-DBM=64) renames it: kernels are paired by name, then those left over by their demangled name
without template arguments (cu++filt, else c++filt), when that pairs exactly one with one. --kernel
matches the mangled or the demangled name.

    python bench/public_kernels/sass_diff.py DEFAULTS.a PINNED.a [--cuobjdump cuobjdump] [--kernel REGEX] [--json OUT]
"""
from __future__ import annotations

import argparse
import collections
import hashlib
import json
import re
import shutil
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


def demangle(names: list[str]) -> dict[str, str]:
    """{mangled: demangled} through cu++filt (CUDA's) or c++filt; a name no tool reads stays as it is."""
    for tool in ("cu++filt", "c++filt"):
        path = shutil.which(tool)
        if path is None or not names:
            continue
        out = subprocess.run([path], input="\n".join(names) + "\n", capture_output=True, text=True, timeout=60)
        lines = out.stdout.splitlines()
        if out.returncode == 0 and len(lines) == len(names):
            return dict(zip(names, lines))
    return {name: name for name in names}


def base_name(demangled: str) -> str:
    """A demangled kernel's qualified name without template arguments or parameters:
    "void ns::gemm<128, 64>(float*, int)" -> "ns::gemm"."""
    head = demangled.split("(", 1)[0]
    depth, kept = 0, []
    for char in head:
        depth += char == "<"
        if depth == 0:
            kept.append(char)
        depth -= char == ">"
    return "".join(kept).split()[-1] if "".join(kept).split() else demangled


def pair_kernels(defaults: list[str], pinned: list[str], names: dict[str, str]) -> list[tuple[str, str]]:
    """(defaults' name, pinned's name) for each kernel of both builds: the same mangled name, else, among
    those left, the one kernel of each side with the same name without template arguments."""
    pairs = [(name, name) for name in sorted(set(defaults) & set(pinned))]
    left = {side: [n for n in names_ if n not in {a for a, _ in pairs}]
            for side, names_ in (("defaults", defaults), ("pinned", pinned))}
    by_base: dict[str, dict[str, list[str]]] = collections.defaultdict(lambda: {"defaults": [], "pinned": []})
    for side, side_names in left.items():
        for name in side_names:
            by_base[base_name(names.get(name, name))][side].append(name)
    for base in sorted(by_base):
        a, b = by_base[base]["defaults"], by_base[base]["pinned"]
        if len(a) == 1 and len(b) == 1:
            pairs.append((a[0], b[0]))
    return pairs


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
    ap.add_argument("--kernel", default="", help="only kernels whose mangled or demangled name matches this regex")
    ap.add_argument("--top", type=int, default=12, help="opcodes shown per kernel")
    ap.add_argument("--json", type=Path)
    o = ap.parse_args()
    for path in (o.defaults, o.pinned):
        if not path.is_file():
            sys.exit(f"{path} does not exist: give two object files or static libraries built from the same source")
    sides = {}
    for side, path in (("defaults", o.defaults), ("pinned", o.pinned)):
        usage, code = resources(o.cuobjdump, path), sass(o.cuobjdump, path)
        sides[side] = {k: describe(usage.get(k, {}), code[k]) for k in code}
    names = demangle(sorted(set(sides["defaults"]) | set(sides["pinned"])))
    wanted = {side: [k for k in kernels if re.search(o.kernel, k) or re.search(o.kernel, names.get(k, k))]
              for side, kernels in sides.items()}
    report = {}
    pairs = pair_kernels(wanted["defaults"], wanted["pinned"], names)
    if not pairs:
        sys.exit(f"no kernel{' matching ' + o.kernel if o.kernel else ''} in both {o.defaults} and {o.pinned}")
    same = 0
    for name_a, name_b in pairs:
        a, b = sides["defaults"][name_a], sides["pinned"][name_b]
        name = name_a if name_a == name_b else f"{names.get(name_a, name_a)} -> {names.get(name_b, name_b)}"
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
    print(f"{len(pairs)} kernel(s) in both; {same} with identical SASS and resources")
    if o.json:
        o.json.write_text(json.dumps({"kernels": report, "identical": same, "compared": len(pairs)}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
