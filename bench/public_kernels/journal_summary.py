"""Summarise a tune journal (<build>/ciq/journal/<target>.jsonl) for docs/RESULTS.md.

    python bench/public_kernels/journal_summary.py JOURNAL [--top 8]

Prints the candidate count, failures by cause, the distribution of time over
the baseline (the first evaluation with no controls), the best candidate of
each kind (params only, knobs only, with an ACF, ...) and the top candidates.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path


def kind(e: dict) -> str:
    c = e.get("controls", {})
    parts = []
    if c.get("defines"):
        parts.append("params")
    if c.get("flags"):
        parts.append("knobs")
    if c.get("acf"):
        parts.append("acf")
    return "+".join(parts) or "defaults"


def describe(e: dict) -> str:
    c = e.get("controls", {})
    bits = [f"{k.replace('CIQ_', '')}={v}" for k, v in sorted(c.get("defines", {}).items())]
    bits += [f.replace("-Xptxas=", "ptxas:") for f in c.get("flags", [])]
    if c.get("acf"):
        bits.append("acf:" + c["acf"]["sha256"][:8])
    regs = e.get("metrics", {}).get("registers")
    spill = e.get("metrics", {}).get("spill_bytes")
    return " ".join(bits) + (f"  [regs {regs:.0f}, spill {spill:.0f} B]" if regs is not None else "")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("journal", type=Path)
    parser.add_argument("--top", type=int, default=8)
    o = parser.parse_args()
    evals = [json.loads(line) for line in o.journal.read_text().splitlines() if line.strip()]
    evals = [e for e in evals if e.get("kind") == "evaluation"]
    base = next(e for e in evals if kind(e) == "defaults" and e.get("ok"))
    b = base["scores"][0]
    ok = [e for e in evals if e.get("ok")]
    failed = [e for e in evals if not e.get("ok")]
    causes: dict[str, int] = {}
    for e in failed:
        causes[str(e.get("cause"))] = causes.get(str(e.get("cause")), 0) + 1
    ratios = sorted(e["scores"][0] / b for e in ok if e is not base)
    print(f"{o.journal.name}: {len(evals)} evaluations ({len(ok)} ok, {len(failed)} failed {causes}); "
          f"baseline {b:.6f} ms, regs {base.get('metrics', {}).get('registers')}")
    if ratios:
        print(f"  ratio to baseline: best {ratios[0]:.3f}, median {statistics.median(ratios):.3f}, "
              f"worst {ratios[-1]:.3f}; faster by >1%: {sum(r < 0.99 for r in ratios)}, "
              f"by >5%: {sum(r < 0.95 for r in ratios)}")
    seconds = sum(e.get("seconds", 0) for e in evals)
    print(f"  summed evaluation wall time {seconds:.0f} s")
    groups: dict[str, list[dict]] = {}
    for e in ok:
        groups.setdefault(kind(e), []).append(e)
    for name, members in sorted(groups.items()):
        best = min(members, key=lambda e: e["scores"][0])
        rs = [e["scores"][0] / b for e in members]
        print(f"  {name:<18} n={len(members):<4} best {best['scores'][0] / b:.3f} median {statistics.median(rs):.3f}"
              f"  {describe(best)}")
    print("  top:")
    for e in sorted(ok, key=lambda e: e["scores"][0])[: o.top]:
        print(f"    {e['scores'][0] / b:.3f}  {describe(e)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
