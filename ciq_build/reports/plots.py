"""The report's plots: each a matplotlib figure drawn from a TuneHistory, embedded in the page as a base64 PNG.

matplotlib is optional (``pip install "ciq-build[report]"``): `load_pyplot` says None without it, and the page
then has its tables alone. Figures are drawn on the file-only Agg backend and closed once encoded, a failed
plot's too.

Every score is drawn on its objective's `Scale`: a time read from a rate (METRIC UNIT TFLOPS, GB/s; the journal
header's `time_rate_unit`) as the rate the benchmark printed, higher is better, as the report's tables show it;
any other score as it is, in its unit.
"""

from __future__ import annotations

import base64
import io
import math
import warnings
from dataclasses import dataclass
from typing import Any

from ciq_build.core.metric_unit import per_unit_ms
from ciq_build.core.objectives import Objective, unit_of
from ciq_build.reports.history import TuneHistory
from ciq_build.search.evaluation import TIMING_NAMES

TIMING_LABELS = {"compile_s": "compiling", "benchmark_s": "benchmarking", "wait_s": "waiting for a GPU"}


@dataclass(frozen=True)
class Scale:
    """How one objective's scores are drawn: a time read from a rate (`rate_unit`) as that rate, the way round
    reversed (a lower time is a higher rate); any other score as it is."""

    objective: Objective

    @property
    def rate_unit(self) -> str:
        return self.objective.rate_unit

    def value(self, score: float) -> float:
        """A score as drawn: the rate the benchmark printed (nan where no rate gives the time), else the score."""
        if not self.rate_unit:
            return score
        return per_unit_ms(score) if math.isfinite(score) and score > 0 else math.nan

    def ratio(self, ratio: float) -> float:
        """A score's ratio to another's as the drawn values' ratio (a time 0.8x is its rate 1.25x)."""
        return 1 / ratio if self.rate_unit and ratio else ratio

    @property
    def better(self) -> str:
        """Which way the drawn values are better: "min" or "max"."""
        if not self.rate_unit:
            return self.objective.direction
        return "max" if self.objective.direction == "min" else "min"

    @property
    def better_text(self) -> str:
        return "higher is better" if self.better == "max" else "lower is better"

    @property
    def name(self) -> str:
        """What is drawn, in words: "time as TFLOPS", "time", "registers"."""
        return f"{self.objective.spec} as {self.rate_unit}" if self.rate_unit else self.objective.spec

    @property
    def label(self) -> str:
        """An axis of the values: "time as TFLOPS (higher is better)", "time (ms; lower is better)"."""
        unit = "" if self.rate_unit else unit_of(self.objective)
        return f"{self.name} ({unit + '; ' if unit else ''}{self.better_text})"


def load_pyplot() -> Any | None:
    """matplotlib's pyplot on the file-only Agg backend, or None when matplotlib is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg", force=True)
        import matplotlib.pyplot as pyplot
    except ImportError:
        return None
    return pyplot


def _png(pyplot: Any, figure: Any) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=96, bbox_inches="tight")
    pyplot.close(figure)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _generation_starts(history: TuneHistory) -> list[tuple[int, float]]:
    """(evaluation index, elapsed seconds) where each generation after the first begins."""
    starts = []
    for generation in history.generations[1:]:
        first = min((e for e in history.evaluations if e.generation == generation), key=lambda e: e.index)
        starts.append((first.index, first.elapsed_s - first.seconds))
    return starts


def plot_convergence(pyplot: Any, history: TuneHistory) -> Any:
    """Best so far per objective against the evaluations (all runs, in order) and against wall time, where each
    run of tune (a resume is one) is a series of its own from its own start: never one axis across days."""
    n = len(history.objectives)
    figure, axes = pyplot.subplots(n, 2, layout="constrained", figsize=(10, 3 * n), squeeze=False)
    base = history.baseline
    runs = history.runs
    colors = ("tab:blue", "tab:green", "tab:purple", "tab:brown", "tab:olive", "tab:cyan")
    for i, objective in enumerate(history.objectives):
        series, scale = history.best_so_far(i), Scale(objective)
        for column in (0, 1):
            ax = axes[i][column]
            for k, run in enumerate(runs if column == 1 else [None]):
                part = [(e, best) for e, best in series if run is None or e.run == run]
                xs = [e.index if column == 0 else e.elapsed_s for e, _ in part]
                named = f"run {run}" if run is not None and len(runs) > 1 else ""
                ax.scatter(xs, [scale.value(e.scores[i]) for e, _ in part], s=12, alpha=0.35,  # type: ignore[index]
                           color=colors[k % len(colors)] if named else "tab:gray",
                           label=f"candidates, {named}" if named else "candidates")
                ax.step(xs, [scale.value(best) for _, best in part], where="post", color=colors[k % len(colors)],
                        label=f"best so far, {named}" if named else "best so far")
            if base is not None and base.scores is not None:
                ax.axhline(scale.value(base.scores[i]), color="tab:red", linestyle="--", linewidth=1, label="baseline")
            if column == 0 or len(runs) == 1:  # a generation's start is a time in one run only
                for index, start in _generation_starts(history):
                    ax.axvline(index if column == 0 else start, color="black", linestyle=":", linewidth=0.7)
            label = "evaluation" if column == 0 else ("wall time (s)" if len(runs) == 1 else
                                                      "wall time from each run's start (s)")
            ax.set_xlabel(label + ("; dotted: a new generation" if i == n - 1 else ""))
            ax.set_ylabel(scale.label)
            if i == 0 and (column == 0 or len(runs) > 1):
                ax.legend(fontsize="small")
    figure.suptitle("Convergence: best so far per objective")
    return figure


def plot_candidates(pyplot: Any, history: TuneHistory) -> Any:
    """A strip plot per objective: each candidate's change against the baseline; failures counted beside it."""
    n = len(history.objectives)
    figure, axes = pyplot.subplots(1, n, layout="constrained", figsize=(4 * n + 1, 4), squeeze=False)
    base, winner = history.baseline, history.winner
    for i, objective in enumerate(history.objectives):
        ax, scale = axes[0][i], Scale(objective)
        relative = [(e, history.relative(e, i)) for e in history.scored]
        as_percent = all(r is not None for _, r in relative)
        ys = []
        for e, r in relative:
            if as_percent:
                ys.append((scale.ratio(r) - 1) * 100)  # type: ignore[arg-type]
            else:
                reference = base.scores[i] if base is not None and base.scores else 0.0
                ys.append(scale.value(e.scores[i]) - scale.value(reference))  # type: ignore[index]
        # x: the generation it was proposed in (deterministic jitter within it), so a search that
        # improves shows its candidates moving towards "better" from left to right.
        xs = [e.generation + ((e.index * 0.618) % 1 - 0.5) * 0.5 for e, _ in relative]
        ax.scatter(xs, ys, s=18, alpha=0.6, color="tab:blue", label="candidate")
        if winner is not None:
            at = [k for k, (e, _) in enumerate(relative) if e.key == winner.key]
            ax.scatter([xs[k] for k in at], [ys[k] for k in at], s=160, marker="*", color="tab:orange",
                       label="pinned", zorder=3)
        ax.axhline(0, color="tab:red", linestyle="--", linewidth=1, label="baseline")
        generations = history.generations
        ax.set_xlim(min(generations, default=0) - 0.6, max(generations, default=0) + 0.6)
        ax.set_xticks(generations)
        ax.set_xlabel("generation")
        ax.set_ylabel(("change vs baseline (%)" if as_percent else "difference from baseline")
                      + f"; {scale.better_text}")
        ax.set_title(scale.name)
        if i == 0:
            ax.legend(fontsize="small")
    failures = ", ".join(f"{cause} {count}" for cause, count in history.failures.items()) or "none"
    figure.suptitle(f"Every candidate against the baseline ({len(history.scored)} scored; failed: {failures})")
    return figure


def plot_pareto(pyplot: Any, history: TuneHistory) -> Any:
    first, second = Scale(history.objectives[0]), Scale(history.objectives[1])

    def points(evaluations: list[Any]) -> tuple[list[float], list[float]]:
        return [first.value(e.scores[0]) for e in evaluations], [second.value(e.scores[1]) for e in evaluations]

    figure, ax = pyplot.subplots(layout="constrained", figsize=(6, 4.5))
    ax.scatter(*points(history.scored), s=16, alpha=0.4, color="tab:gray", label="candidates")
    # along the front (by the first objective), so each step's corner lies in what the front dominates
    ax.step(*points(history.pareto_front()), where="post", color="tab:blue", marker="o", label="Pareto front")
    for e, marker, color, label in ((history.baseline, "X", "tab:red", "baseline"),
                                    (history.winner, "*", "tab:orange", "pinned")):
        if e is not None and e.scores is not None:
            ax.scatter(*points([e]), s=180, marker=marker, color=color, label=label, zorder=3)
    ax.set_xlabel(first.label)
    ax.set_ylabel(second.label)
    ax.legend(fontsize="small")
    ax.set_title("Pareto front of the first two objectives")
    return figure


def plot_importance(pyplot: Any, history: TuneHistory) -> Any:
    """Per objective, the share of its variance each search parameter explains (TuneHistory.importance)."""
    n = len(history.objectives)
    figure, axes = pyplot.subplots(1, n, layout="constrained", figsize=(4 * n + 1, 0.35 * len(history.parameters())
                                                                         + 1.8), squeeze=False)
    for i, objective in enumerate(history.objectives):
        ax = axes[0][i]
        ranked = history.importance(i)[::-1]  # barh draws bottom-up: the most important on top
        ax.barh([r.parameter for r in ranked], [r.explained for r in ranked], color="tab:blue")
        ax.set_xlim(0, 1)
        ax.set_xlabel("share of the variance explained (eta squared)")
        ax.set_title(Scale(objective).name)
    figure.suptitle("Which controls moved the objective")
    return figure


def plot_parallel(pyplot: Any, history: TuneHistory) -> Any:
    """Parallel coordinates: one line per scored candidate across its search parameters, coloured by objective 1.

    Each axis spans what the parameter took: numbers from their least to their greatest value, other values
    (and unset) in sorted order; the last axis is the first objective, better at the top.
    """
    parameters = history.parameters()
    objective = history.objectives[0]
    scale = Scale(objective)
    scored = [e for e in history.scored if math.isfinite(scale.value(e.scores[0]))]  # type: ignore[index]
    if not scored:
        figure, ax = pyplot.subplots(layout="constrained", figsize=(6, 1.5))
        ax.set_axis_off()
        ax.set_title(f"No candidate has a finite {scale.name}: nothing to draw across the controls")
        return figure
    columns = []
    ticks = []
    for name in parameters:
        values = [e.params.get(name) for e in scored]
        numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
        if numeric:
            low, high = min(values), max(values)  # type: ignore[type-var]
            columns.append([(v - low) / (high - low) if high > low else 0.5 for v in values])  # type: ignore[operator]
            ticks.append(f"{name}\n{low:g}..{high:g}")
        else:
            levels = sorted({repr(v) for v in values})
            columns.append([levels.index(repr(v)) / max(len(levels) - 1, 1) for v in values])
            ticks.append(f"{name}\n{len(levels)} values")
    scores = [scale.value(e.scores[0]) for e in scored]  # type: ignore[index]
    low, high = min(scores, default=0.0), max(scores, default=0.0)
    better_up = [(high - v) / (high - low) if high > low else 0.5 for v in scores]
    if scale.better == "max":
        better_up = [1 - v for v in better_up]
    columns.append(better_up)
    ticks.append(f"{scale.name}\n{'higher' if scale.better == 'max' else 'lower'} is up")
    figure, ax = pyplot.subplots(layout="constrained", figsize=(max(6, 1.4 * len(columns)), 4.5))
    colors = pyplot.get_cmap("viridis")
    for k in sorted(range(len(scored)), key=lambda k: better_up[k]):  # the best drawn last, on top
        ax.plot(range(len(columns)), [column[k] for column in columns], color=colors(better_up[k]), alpha=0.6,
                linewidth=1)
    # Side by side, labels wider than an axis's share overlap (long knob names, many axes): then each stands
    # upright on one line, as wide as a line is high.
    if len(columns) > 8 or max(len(line) for tick in ticks for line in tick.split("\n")) > 16:
        ax.set_xticks(range(len(columns)), [tick.replace("\n", ": ") for tick in ticks], fontsize="small",
                      rotation=90)
    else:
        ax.set_xticks(range(len(columns)), ticks, fontsize="small")
    ax.set_yticks([0, 1], ["least", "greatest"])
    ax.set_title(f"Every candidate across the controls, coloured by {scale.name} (yellow: better)")
    return figure


def plot_sizes(pyplot: Any, history: TuneHistory) -> Any:
    """Per objective measured on several sizes: every scored candidate's ratio to the defaults on each size
    (a dot), the pinned winner's and the other listed candidates' (TuneHistory.size_candidates) joined."""
    sizes = history.sizes()
    figure, axes = pyplot.subplots(1, len(sizes), layout="constrained", figsize=(5 * len(sizes) + 1, 4.2),
                                   squeeze=False)
    listed = history.size_candidates()
    scales = {o.spec: Scale(o) for o in history.objectives}
    for column, (spec, names) in enumerate(sizes.items()):
        ax, scale = axes[0][column], scales[spec]
        for e in history.scored:
            ratios = _size_ratios(history, e, scale)
            xs = [k + ((e.index * 0.618) % 1 - 0.5) * 0.3 for k, size in enumerate(names) if size in ratios]
            ax.scatter(xs, [ratios[size] for size in names if size in ratios], s=12, alpha=0.35, color="tab:gray")
        for e, role in reversed(listed):  # the pinned winner drawn last, on top
            ratios = _size_ratios(history, e, scale)
            at = [k for k, size in enumerate(names) if size in ratios]
            pinned = role == "pinned"
            ax.plot(at, [ratios[names[k]] for k in at], marker="*" if pinned else "o",
                    markersize=14 if pinned else 5, linewidth=2 if pinned else 1, alpha=1 if pinned else 0.7,
                    color="tab:orange" if pinned else None, label=f"#{e.index} ({role})", zorder=3 if pinned else 2)
        ax.axhline(1, color="tab:red", linestyle="--", linewidth=1, label="defaults")
        ax.set_xticks(range(len(names)), names)
        ax.set_xlim(-0.5, len(names) - 0.5)
        ax.set_xlabel("problem size (ARGS_SETS)")
        ax.set_ylabel(f"{scale.name}: ratio to the defaults on the same size; {scale.better_text}")
        ax.set_title(scale.name)
        ax.legend(fontsize="x-small")
    figure.suptitle("Each problem size: grey, every candidate; joined, the pinned winner and the best")
    return figure


def _size_ratios(history: TuneHistory, evaluation: Any, scale: Scale) -> dict[str, float]:
    """Each size's ratio of `evaluation`'s drawn value to the defaults' (a rate's ratio, for a time read from one)."""
    ratios = history.size_ratios(evaluation).get(scale.objective.spec, {})
    return {size: scale.ratio(ratio) for size, ratio in ratios.items()}


def plot_remeasure(pyplot: Any, history: TuneHistory) -> Any | None:
    measured = history.remeasure()
    if measured is None:
        return None
    scale = Scale(measured.objective) if measured.objective is not None else None
    # the samples as the benchmark printed them: a rate's, where the time was read from one
    baseline, winner = ([scale.value(v) for v in side] if scale is not None else list(side)
                        for side in (measured.baseline, measured.winner))
    figure, ax = pyplot.subplots(layout="constrained", figsize=(6, 4))
    ax.boxplot([baseline, winner], widths=0.4)
    ax.set_xticks([1, 2], ["baseline", "winner"])
    for position, samples in ((1, baseline), (2, winner)):
        ax.scatter([position + ((k * 0.618) % 1 - 0.5) * 0.2 for k in range(len(samples))], samples, s=14,
                   alpha=0.7, color="tab:blue", zorder=3)
    ax.set_ylabel(scale.label if scale is not None else measured.metric)
    ax.set_title(f"Re-measured, interleaved: p = {measured.p_value:.3g} (one-sided Mann-Whitney U)")
    return figure


def plot_time(pyplot: Any, history: TuneHistory) -> Any:
    generations = history.generations
    figure, ax = pyplot.subplots(layout="constrained", figsize=(7, 0.5 * len(generations) + 1.5))
    left = [0.0] * len(generations)
    for name, color in zip(TIMING_NAMES, ("tab:blue", "tab:green", "tab:gray")):
        widths = [sum(e.timings.get(name, 0.0) for e in history.evaluations if e.generation == g)
                  for g in generations]
        ax.barh([str(g) for g in generations], widths, left=left, color=color, label=TIMING_LABELS[name])
        left = [a + b for a, b in zip(left, widths)]
    ax.set_xlabel("seconds (summed over the generation's evaluations)")
    ax.set_ylabel("generation")
    ax.legend(fontsize="small")
    ax.set_title("Where the time went")
    return figure


def embedded_plots(history: TuneHistory) -> dict[str, tuple[str, str]] | None:
    """section -> (alt text, base64 PNG); None without matplotlib."""
    pyplot = load_pyplot()
    if pyplot is None:
        return None
    before = set(pyplot.get_fignums())
    try:
        with warnings.catch_warnings():
            # matplotlib's remarks on odd data (identical axis limits, a layout it could not fit) say
            # nothing to the reader of a report, and must not stop it being drawn.
            warnings.simplefilter("ignore")
            return _draw_plots(pyplot, history)
    finally:
        # A figure left open by a plot that failed would stay for the life of the process (pyplot keeps
        # every figure until it is closed): a library caller drawing many reports would pile them up.
        for number in set(pyplot.get_fignums()) - before:
            pyplot.close(number)


def _draw_plots(pyplot: Any, history: TuneHistory) -> dict[str, tuple[str, str]]:
    plots = {}
    if history.scored and history.objectives:  # scores are drawn per objective: none named, none drawn
        plots["convergence"] = ("convergence: best so far against evaluations and wall time",
                                _png(pyplot, plot_convergence(pyplot, history)))
        plots["candidates"] = ("every candidate's score relative to the baseline",
                               _png(pyplot, plot_candidates(pyplot, history)))
        if len(history.objectives) >= 2:
            plots["pareto"] = ("Pareto front", _png(pyplot, plot_pareto(pyplot, history)))
        if history.sizes():
            plots["sizes"] = ("each problem size: every candidate's ratio to the defaults on it",
                              _png(pyplot, plot_sizes(pyplot, history)))
        if history.parameters():
            plots["importance"] = ("which controls moved each objective: the share of its variance each explains",
                                   _png(pyplot, plot_importance(pyplot, history)))
            plots["parallel"] = ("parallel coordinates: every candidate across its controls",
                                 _png(pyplot, plot_parallel(pyplot, history)))
    remeasure = plot_remeasure(pyplot, history)
    if remeasure is not None:
        plots["remeasure"] = ("the winner re-measured against the baseline", _png(pyplot, remeasure))
    plots["time"] = ("time spent compiling, benchmarking and waiting", _png(pyplot, plot_time(pyplot, history)))
    return plots
