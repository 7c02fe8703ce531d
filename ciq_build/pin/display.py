"""A pinned record for people: ``show``'s summary, and the one spelling of a change and a size ratio
that the tune's summary and the report share.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ciq_build.core.metric_unit import RATE_UNIT, change_text, rate_text, relative_change, shown_rate
from ciq_build.core.objectives import metric_key, parse_objective
from ciq_build.errors import CiqError
from ciq_build.measure.sizes import size_ratios, sizes_of
from ciq_build.pin.record import PinnedRecord, ScoreSummary
from ciq_build.project.per_block import COUNTED_DYNAMIC_METRIC, DYNAMIC_SHARED, DYNAMIC_SHARED_METRIC


def _printable(text: str) -> str:
    """`text` with control, format and surrogate characters shown as escapes: a record is
    untrusted, and an ANSI escape in it must not repaint the terminal that shows it."""
    return "".join(
        ch if ch.isprintable() else ch.encode("unicode_escape", "backslashreplace").decode("ascii")
        for ch in text
    )


def rate_unit_of(record: PinnedRecord, objective: str) -> str:
    """The rate `objective` was read from, checked (a record is untrusted), or "" where it was read as printed."""
    return shown_rate(record.provenance.get(RATE_UNIT)) if objective == "time" else ""


def _measured(summary: ScoreSummary | None, i: int, rate_unit: str = "") -> str:
    if summary is None:
        return "-"
    spread = summary.spread[i] if i < len(summary.spread) else 0.0
    value = summary.scores[i]
    if rate_unit and value > 0:  # the rate the benchmark printed; the spread as a share of it
        return score_text(value, rate_unit) + (f" ± {spread / value:.1%}" if spread else "")
    # A static metric has no spread: "± 0" would suggest a measurement that was not made.
    return score_text(value) + (f" ± {spread:.2g}" if spread else "")


def score_text(value: float, rate_unit: str = "") -> str:
    """A record's score: the rate the benchmark printed for a time read from a rate in `rate_unit`, else the number."""
    return rate_text(value, rate_unit) if rate_unit and value > 0 else f"{value:.6g}"


def pinned_scores(record: PinnedRecord) -> list[str]:
    """Each objective's defaults -> pinned figure and its change, as `record` holds them ("time 1.2 ms -> 1 ms
    (-16.7%)"); none where it holds no scores."""
    if record.baseline is None or record.winner is None:
        return []
    said = []
    for objective, base, best in zip(record.objectives, record.baseline.scores, record.winner.scores):
        rate = rate_unit_of(record, objective.name)
        change = "same" if base == best else change_text(base, best, rate)
        said.append(f"{objective.name} {score_text(base, rate)} -> {score_text(best, rate)} ({change})")
    return said


def size_ratios_text(ratios: Mapping[str, float]) -> str:
    """Each problem size's ratio, winner over defaults (ARGS_SETS), one spelling everywhere:
    "small 0.5x (-50.0%), large 1.2x (+20.0%)"."""
    return ", ".join(f"{size} {ratio_text(ratio)}" for size, ratio in ratios.items())


def ratio_text(ratio: float) -> str:
    """A ratio to the defaults with its change: "0.5x (-50.0%)"."""
    return f"{ratio:.4g}x ({relative_change(1.0, ratio)})"


def record_size_ratios(record: PinnedRecord) -> dict[str, dict[str, float]]:
    """Per objective measured on several sizes, each size's ratio winner / defaults, from the metrics the
    record keeps (provenance baseline_metrics, winner_metrics); empty for one size."""
    base, win = record.provenance.get("baseline_metrics"), record.provenance.get("winner_metrics")
    if not isinstance(base, dict) or not isinstance(win, dict):
        return {}
    out = {}
    for objective in record.objectives:
        try:
            metric = metric_key(parse_objective(objective.name))
        except CiqError:
            continue
        order = record.provenance.get("sizes")
        ratios = size_ratios(win, base, metric, sizes_of(win, metric, order if isinstance(order, list) else ()))
        if ratios:
            out[objective.name] = ratios
    return out


def _counted_dynamic_shared(record: PinnedRecord, keyword: str) -> str | None:
    """Where an occupancy objective's figures depend on dynamic shared memory (some kernels use it), the size a block
    they counted, at the defaults and the winner (`keyword`: how the declaration is named), from the metrics the
    record keeps; None elsewhere. `show` said nothing of it, so an occupancy counted at 0 bytes, or at another
    DYNAMIC_SHARED_MEMORY than the launch's, read as the kernels' own."""
    def scores_occupancy(name: str) -> bool:
        try:
            kind = parse_objective(name).kind
        except CiqError:
            return False
        return kind is not None and kind.name == "occupancy"

    def figure(metrics: object, name: str) -> int | None:
        value = metrics.get(name) if isinstance(metrics, dict) else None
        return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0 else None

    if not any(scores_occupancy(o.name) for o in record.objectives):
        return None
    base, win = record.provenance.get("baseline_metrics"), record.provenance.get("winner_metrics")
    using = figure(win, DYNAMIC_SHARED_METRIC) or figure(base, DYNAMIC_SHARED_METRIC)
    if not using:
        return None
    kernels = f"the {using} kernel{'s' if using > 1 else ''} that use{'' if using > 1 else 's'} it"
    counted = {at: figure(metrics, COUNTED_DYNAMIC_METRIC) or 0 for at, metrics in (("defaults", base), ("winner", win))
               if figure(metrics, DYNAMIC_SHARED_METRIC)}
    if not any(counted.values()):
        return (f"the occupancy counts no dynamic shared memory (0 bytes a block: no {keyword} declared) for {kernels}, "
                "so it can be higher than at launch")
    sizes = set(counted.values())
    shown = (f"{sizes.pop()} bytes" if len(sizes) == 1 else
             ", ".join(f"{size} bytes at the {at}" for at, size in counted.items()))
    return f"the occupancy counts {shown} of dynamic shared memory a block ({keyword}) for {kernels}"


def _objective_table(record: PinnedRecord) -> list[str]:
    """One aligned row per objective: direction and name, baseline, winner, change."""
    rows = [("", "baseline", "winner", "change")]
    for i, objective in enumerate(record.objectives):
        base = record.baseline.scores[i] if record.baseline else None
        best = record.winner.scores[i] if record.winner else None
        rate = rate_unit_of(record, objective.name)
        change = change_text(base, best, rate) if base is not None and best is not None else "-"
        rows.append((f"{objective.direction} {objective.name}", _measured(record.baseline, i, rate),
                     _measured(record.winner, i, rate), change))
    widths = [max(len(row[column]) for row in rows) for column in range(4)]
    return ["   ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]


def format_record(record: PinnedRecord, *, setuptools: bool = False) -> str:
    """Human-readable summary for ``python -m ciq_build show <target>`` (`setuptools`: the target is a
    CudaExtension's, which names its declarations as arguments)."""
    lines = [f"target      {record.target}  (schema {record.schema})"]
    if record.per_architecture:
        lines.append("per arch    " + ", ".join(f"sm_{a}" for a in sorted(record.per_architecture))
                     + " have winners of their own (below); the others take the controls here")
    c = record.controls
    lines.append("flags       " + (" ".join(c.flags) if c.flags else "(none)"))
    lines.append(
        "defines     " + (" ".join(f"-D{n}={v}" for n, v in c.defines) if c.defines else "(none)")
    )
    if c.acf is not None:
        lines.append(f"acf         {Path(c.acf.path).name} ({c.acf.compiler}, sha256 {c.acf.sha256[:16]}...)")
    else:
        lines.append("acf         (none)")
    t = record.toolchain
    # None named: tuned for nvcc's default, which a build applies to any (the rule book's any_architecture).
    arches = ", ".join(t.architectures) or "nvcc's default (the record names none: applied to any)"
    lines.append(
        f"toolchain   CUDA {t.cuda} (nvcc {t.nvcc_version or '?'}, ptxas {t.ptxas_version or '?'}), arch {arches}"
    )
    p = record.provenance
    bits = [f"engine {p['engine']}" if "engine" in p else None, f"seed {p['seed']}" if "seed" in p else None]
    budget = p.get("budget")
    if isinstance(budget, dict) and budget:
        bits.append("budget " + ", ".join(f"{k}={v}" for k, v in budget.items()))
    if "created" in p:
        bits.append(f"created {p['created']}")
    if "ciq_build_version" in p:
        bits.append(f"ciq_build {p['ciq_build_version']}")
    lines.append("provenance  " + ("; ".join(b for b in bits if b) or "(none)"))
    check = p.get("winner_check")
    if isinstance(check, dict) and isinstance(check.get("says"), str):  # a static tune's PARAMS, run once or not
        lines.append(f"benchmark   {_printable(check['says'])}")
    if isinstance(p.get("against_old_pin"), str):
        lines.append(f"replaced    the pin before it: {_printable(p['against_old_pin'])}")
    if record.objectives:
        lines.append("objectives")
        lines.extend("  " + row for row in _objective_table(record))
        lines.extend(f"  {name} per size (winner / defaults): {size_ratios_text(ratios)}"
                     for name, ratios in record_size_ratios(record).items())
        keyword = DYNAMIC_SHARED.argument if setuptools else DYNAMIC_SHARED.keyword
        if (dynamic := _counted_dynamic_shared(record, keyword)) is not None:
            lines.append(f"  {dynamic}")
    for arch, entry in sorted(record.per_architecture.items()):
        # Each architecture's own winner (tune --architecture), applied to its own -gencode.
        e = entry.controls
        shown = [*e.flags, *(f"-D{n}={v}" for n, v in e.defines)]
        if e.acf is not None:
            shown.append(f"acf {Path(e.acf.path).name} ({e.acf.compiler}, sha256 {e.acf.sha256[:16]}...)")
        lines.append(f"sm_{arch:<8} " + (" ".join(shown) or "(compiler defaults)"))
        for i, objective in enumerate(record.objectives):
            base = entry.baseline.scores[i] if entry.baseline else None
            best = entry.winner.scores[i] if entry.winner else None
            if base is not None and best is not None:
                rate = rate_unit_of(record, objective.name)
                lines.append(f"  {objective.direction} {objective.name}: {_measured(entry.baseline, i, rate)} -> "
                             f"{_measured(entry.winner, i, rate)} ({change_text(base, best, rate)})")
    if record.objects:
        lines.append("objects")
        for obj, archs in sorted(record.objects.items()):
            for arch, info in sorted(archs.items()):
                lines.append(
                    f"  {obj} [{arch}]  registers {info.registers}, stack {info.stack}, "
                    f"code {info.code_sha256[:12]}"
                )
    return "\n".join(_printable(line) for line in lines)
