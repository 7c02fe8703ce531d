"""Several problem sizes scored as one (ciq_tune_target's ARGS_SETS and SCORE).

One run of a benchmark with sizes runs it once per size, in the order given.
Each metric a size prints is kept as ``<metric>@<size>`` (``time_ms@small``:
the journal's per-size figures), and every metric all sizes print gets one
combined value under its own name, which the objectives read:

* ``geomean`` (the default): the geometric mean of the sizes' ratios to the
  defaults. Written as geomean(ref) * geomean(v/ref) = geomean(v), so it needs
  no reference at all, and a candidate's ratio to the baseline's combined value
  is exactly the geometric mean of its per-size ratios.
* ``worst``: the worst per-size ratio to the defaults (the largest for a metric
  where less is better, the smallest for a maximized one), times geomean(ref):
  the defaults themselves score geomean(ref), so the ratio of two combined
  values is again the ratio of their worst sizes. A pin chosen this way never
  loses on any size beyond the noise.

The reference is the baseline's per-size medians (the driver hands them over
once the defaults are measured); before that, ``worst`` combines like
``geomean`` (the baseline's own runs, whose ratios to themselves are 1).
Values of 0 or below have no ratio: such a metric gets no combined value.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

SIZE_SEPARATOR = "@"  # time_ms@small
SCORES = ("geomean", "worst")  # the rule book's "words score" (tests/core keep them equal)


def size_metric(metric: str, size: str) -> str:
    """The name of `metric` as measured on `size`."""
    return f"{metric}{SIZE_SEPARATOR}{size}"


def combine(per_size: Mapping[str, Mapping[str, float]], score: str, reference: Mapping[str, float],
            maximized: Sequence[str] = ()) -> dict[str, float]:
    """One run's metrics from its sizes' metrics ({size: {metric: value}}): every per-size value under
    size_metric, and the combined value of each metric every size printed."""
    if score not in SCORES:
        raise ValueError(f"SCORE is one of {', '.join(SCORES)}, not {score!r}")
    values = {size_metric(name, size): value for size, metrics in per_size.items() for name, value in metrics.items()}
    sizes = list(per_size)
    common = set.intersection(*(set(m) for m in per_size.values())) if per_size else set()
    for name in sorted(common):
        measured = [per_size[size][name] for size in sizes]
        if any(v <= 0 for v in measured):
            continue
        refs = [reference.get(size_metric(name, size), math.nan) for size in sizes]
        if score == "geomean" or not all(math.isfinite(r) and r > 0 for r in refs):
            values[name] = _geomean(measured)
            continue
        ratios = [v / r for v, r in zip(measured, refs, strict=True)]
        worst = min(ratios) if name in maximized else max(ratios)
        values[name] = worst * _geomean(refs)
    return values


def size_ratios(candidate: Mapping[str, float], baseline: Mapping[str, float], metric: str,
                sizes: Sequence[str]) -> dict[str, float]:
    """Each size's ratio of `metric`, candidate over baseline (the summary's per-size line); sizes
    either lacks are left out."""
    ratios: dict[str, float] = {}
    for size in sizes:
        key = size_metric(metric, size)
        if key in candidate and baseline.get(key):
            ratios[size] = candidate[key] / baseline[key]
    return ratios


def sizes_of(metrics: Mapping[str, float], metric: str, order: Sequence[str] = ()) -> list[str]:
    """The sizes `metrics` holds `metric` for (``time_ms@small`` gives small): in `order` (ARGS_SETS', as a
    journal header or a record keeps it; the metrics themselves are written with sorted keys), the rest after."""
    prefix = metric + SIZE_SEPARATOR
    found = [name[len(prefix):] for name in metrics if name.startswith(prefix)]
    return sorted(found, key=lambda size: (list(order).index(size) if size in order else len(order), size))


def _geomean(values: Sequence[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))
