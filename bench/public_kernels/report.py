"""The summary of a public-kernels campaign (bench/public_kernels/campaign.sh), and two questions the script asks.

    python bench/public_kernels/report.py RESULTS               Markdown: per kernel, each arm's search and pin,
                                                     the confirmation (ratios, 95% CIs), the defaults
                                                     against the H200's limits, the SASS diff
    python bench/public_kernels/report.py --winner KERNEL_DIR   the arm whose pin was fastest in its own tune's
                                                     interleaved re-measure (nothing when none pinned)
    python bench/public_kernels/report.py --cmake-flags ARM_DIR
                                                     that arm's pin as one CMake argument
                                                     (-DCMAKE_CUDA_FLAGS=...), to time it beside the winner

RESULTS holds <kernel>/<arm>/{arm.json, journal.jsonl, pin.json, summary.txt} and
<kernel>/{confirm.json, winner.txt, sass_diff.txt}.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ARMS = ("knobs", "acf", "both")
ARM_WORDS = {"knobs": "knobs + params", "acf": "ptxas ACFs alone", "both": "knobs + params + ACFs"}
# The H200's limits (docs/RESULTS.md): FP32 FMA peak by the datasheet (no tensor cores), HBM3e by the
# datasheet, and the device-to-device copy measured there (bench/public_kernels/copy_bw.cu, issue 13).
FP32_TFLOPS, HBM_TBPS, COPY_TBPS = 67.0, 4.8, 4.261
# Work of one timed unit at the campaign's registered ARGS: (FLOP, compulsory DRAM bytes).
WORK = {
    # 4096^3 GEMM, C = alpha A B + beta C: A, B read once, C read and written.
    "sgemm": (2.0 * 4096**3, 4 * 4096**2 * 4),
    # B=16, nh=16, N=512, d=64: Q K^T and P V (4 B nh N^2 d); Q, K, V read, O written, l and m written.
    "attn": (4.0 * 16 * 16 * 512**2 * 64, 4 * 16 * 16 * 512 * 64 * 4 + 2 * 16 * 16 * 512 * 4),
    # 2^26 floats summed: each read once.
    "reduction": (float(2**26), 2**26 * 4),
}


def pin_ratio(pin: dict) -> float | None:
    """The pin's own re-measure: median(winner) / median(baseline), or None when it has none."""
    again = pin.get("provenance", {}).get("remeasured") or {}
    if again.get("baseline") and again.get("winner"):
        return statistics.median(again["winner"]) / statistics.median(again["baseline"])
    return None


def winner(kernel_dir: Path) -> str:
    best = None
    for arm in ARMS:
        path = kernel_dir / arm / "pin.json"
        if path.is_file():
            ratio = pin_ratio(json.loads(path.read_text()))
            if ratio is not None and (best is None or ratio < best[0]):
                best = (ratio, arm)
    return best[1] if best else ""


def cmake_flags(arm_dir: Path) -> str:
    """The pin's controls as CMAKE_CUDA_FLAGS (they then reach the benchmark's compile too: it has no kernel)."""
    controls = json.loads((arm_dir / "pin.json").read_text())["controls"]
    words = list(controls.get("flags", []))
    words += [f"-D{name}={value}" for name, value in sorted(controls.get("defines", {}).items())]
    if controls.get("acf"):
        acf = (arm_dir / controls["acf"]["file"]).resolve()  # beside the record, as the tune wrote it
        words.append(f"--apply-controls={acf}" if controls["acf"].get("compiler") == "nvcc"
                     else f"-Xptxas=--apply-controls={acf}")
    return "-DCMAKE_CUDA_FLAGS=" + " ".join(words)


def journal_counts(path: Path) -> dict:
    if not path.is_file():
        return {}
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    evals = [e for e in rows if e.get("kind") == "evaluation"]
    ok = [e for e in evals if e.get("ok")]
    base = next((e for e in ok if not any(e.get("controls", {}).get(k) for k in ("flags", "defines", "acf"))), None)
    counts = {"evaluations": len(evals), "failed": len(evals) - len(ok),
              "raced": sum(1 for e in evals if e.get("raced")),
              "same_code": sum(1 for e in evals if e.get("same_code_as")),
              "eval_seconds": round(sum(e.get("seconds", 0) for e in evals), 1)}
    if base and base.get("scores"):
        counts["baseline_ms"] = base["scores"][0]
        ratios = [e["scores"][0] / base["scores"][0] for e in ok if e is not base and e.get("scores")]
        if ratios:
            counts.update(best=min(ratios), median=statistics.median(ratios))
    return counts


def roofline(kernel: str, ms: float) -> str:
    """The defaults' time against the H200's limits, for the kernel's registered size."""
    flop, byte = WORK[kernel]
    tflops = flop / (ms * 1e-3) / 1e12
    tbps = byte / (ms * 1e-3) / 1e12
    return (f"{ms:.6f} ms = {tflops:.2f} TFLOP/s ({100 * tflops / FP32_TFLOPS:.1f}% of {FP32_TFLOPS:.0f} FP32), "
            f"{tbps * 1000:.0f} GB/s compulsory traffic ({100 * tbps / HBM_TBPS:.1f}% of {HBM_TBPS} TB/s HBM3e, "
            f"{100 * tbps / COPY_TBPS:.1f}% of the measured {COPY_TBPS * 1000:.0f} GB/s copy)")


def describe_controls(controls: dict) -> str:
    bits = [f"{k}={v}" for k, v in sorted(controls.get("defines", {}).items())]
    bits += list(controls.get("flags", []))
    if controls.get("acf"):
        bits.append(f"ACF {controls['acf']['sha256'][:12]}")
    return " ".join(bits) or "(defaults)"


def report(results: Path) -> str:
    lines = [f"# Public kernels campaign: {results.name}", ""]
    dry = (results / "DRY").is_file()  # bench/public_kernels/campaign.sh --dry-run: the TEST DOUBLE's times, no kernel's
    if dry:
        lines += ["DRY RUN: every time below is the TEST DOUBLE's (bench/multi_gpu/dry), no GPU claim; no roofline.", ""]
    for name in ("gpu.txt", "nvcc.txt"):
        if (results / name).is_file():
            lines += ["```", (results / name).read_text().strip(), "```", ""]
    for kernel in sorted(p.name for p in results.iterdir() if p.is_dir()):
        kdir = results / kernel
        lines += [f"## {kernel}", "", "| arm | search limit s | wall s | evaluations | raced | same code | failed "
                  "| best / defaults (tune) | pinned: re-measured ratio | pin |", "|---|---|---|---|---|---|---|---|---|---|"]
        baselines = []
        for arm in ARMS:
            adir = kdir / arm
            if not adir.is_dir():
                continue
            meta = json.loads((adir / "arm.json").read_text()) if (adir / "arm.json").is_file() else {}
            c = journal_counts(adir / "journal.jsonl")
            pin = json.loads((adir / "pin.json").read_text()) if (adir / "pin.json").is_file() else None
            ratio = pin_ratio(pin) if pin else None
            best = f"{c['best']:.4f}" if "best" in c else "-"
            if "baseline_ms" in c:
                baselines.append(c["baseline_ms"])
            lines.append(f"| {ARM_WORDS[arm]} | {meta.get('limit_s', '-')} | {meta.get('wall_s', '-')} | "
                         f"{c.get('evaluations', 0)} | {c.get('raced', 0)} | {c.get('same_code', 0)} | "
                         f"{c.get('failed', 0)} | {best} | {f'{ratio:.4f}' if ratio else 'nothing pinned'} | "
                         f"{describe_controls(pin['controls']) if pin else '-'} |")
        if baselines and kernel in WORK and not dry:
            lines += ["", f"Defaults in the tunes' baselines (median of each tune's runs; {len(baselines)} tunes): "
                      f"{roofline(kernel, statistics.median(baselines))}"]
        confirm = kdir / "confirm.json"
        if confirm.is_file():
            data = json.loads(confirm.read_text())
            won = (kdir / "winner.txt").read_text().strip() if (kdir / "winner.txt").is_file() else "?"
            lo, hi = data["ci95"]
            lines += ["", f"Confirmed from a copy at another path (verify exit {data['verify_exit']}), "
                      f"{len(data['samples']['defaults'])} interleaved rounds: **{ARM_WORDS.get(won, won)} pin / "
                      f"defaults = {data['ratio']:.4f}, 95% CI [{lo:.4f}, {hi:.4f}]**, p = {data['p']:.2g}."]
            for arm, other in data.get("arms", {}).items():
                olo, ohi = other["ci95"]
                lines.append(f"- {ARM_WORDS.get(arm, arm)} pin (as CMAKE_CUDA_FLAGS) / defaults = {other['ratio']:.4f}, "
                             f"95% CI [{olo:.4f}, {ohi:.4f}]; winner / it = {other['pinned_over_arm']:.4f}")
            if kernel in WORK and not dry:
                lines.append(f"- defaults, {len(data['samples']['defaults'])} interleaved runs: "
                             f"{roofline(kernel, statistics.median(data['samples']['defaults']))}")
                lines.append(f"- winner: {roofline(kernel, statistics.median(data['samples']['pinned']))}")
        diff = kdir / "sass_diff.txt"
        if diff.is_file():
            lines += ["", "```", diff.read_text().strip()[-3000:], "```"]
        lines.append("")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", type=Path)
    ap.add_argument("--winner", action="store_true")
    ap.add_argument("--cmake-flags", action="store_true")
    o = ap.parse_args()
    if o.winner:
        print(winner(o.path))
    elif o.cmake_flags:
        print(cmake_flags(o.path))
    else:
        print(report(o.path))
    return 0


if __name__ == "__main__":
    sys.exit(main())
