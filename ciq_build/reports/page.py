"""`report`: what a tune did, as one self-contained HTML page or as Markdown for CI logs.

The page opens offline: plots are PNGs embedded as data: URIs, the style is
inline, there is no script, and a Content-Security-Policy forbids loading
anything else. Plots need matplotlib (``pip install "ciq-build[report]"``);
without it the page has every table and says how to get the plots. The data
comes from ciq_build.reports.history; every string from the journal or the
record is escaped (both are files anyone could have edited).
"""

from __future__ import annotations

import base64
import html
import io
import math
import re
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ciq_build.core.pace import clock
from ciq_build.errors import ManifestError
from ciq_build.pin.display import ratio_text
from ciq_build.project.worker import safe_name
from ciq_build.reports.export import write_text
from ciq_build.reports.history import MIN_PER_CELL, JournalEntry, TuneHistory, load_history
from ciq_build.reports.show import chosen_journal
from ciq_build.search.evaluation import TIMING_NAMES
from ciq_build.state.journal import TargetLock, tune_lock_path
from ciq_build.state.live import live_status_path, read_live_status

PLOTS_HINT = 'plots need matplotlib: pip install "ciq-build[report]"'
_TIMING_LABELS = {"compile_s": "compiling", "benchmark_s": "benchmarking", "wait_s": "waiting for a GPU"}


def report(target: str, build_dir: Path, source_dir: Path | None, fmt: str = "html",
           output: str | None = None, search: int | None = None, refresh_s: int | None = None,
           live: dict[str, Any] | None = None, architecture: str | None = None) -> str:
    """Write `target`'s report; returns the page itself for stdout ("-"), else a line saying where it is.

    `search`: which of the journal's searches (None: the latest); `refresh_s`: the page reloads itself that often;
    `live`: what the running tune last said of itself (ciq_build.state.live), for the page's running line;
    `architecture`: the tune --architecture ARCH's journal ("all": every architecture's; None: the latest written).
    """
    history = load_history(target, build_dir, source_dir, search=search, architecture=architecture)
    if fmt == "markdown":
        return write_text(render_markdown(history, refresh_s, live), output or "-", f"the report of {target}")
    destination = output or str(history.journal_path.parent.parent / "report" / f"{history.journal_path.stem}.html")
    done = write_text(render_html(history, refresh_s, live), destination, f"the report of {target}")
    if destination != "-" and _pyplot() is None:
        done += f"ciq_build: the page has tables only; {PLOTS_HINT}\n"
    return done


WATCH_SECONDS = 3  # how often --watch looks at the journal, and how often the page it writes reloads itself


def watch(target: str, build_dir: Path, source_dir: Path | None, say: Callable[[str], None], fmt: str = "html",
          output: str | None = None, search: int | None = None, architecture: str | None = None) -> str:
    """`report --watch`: write the report again each time the journal grows, while a tune of `target` runs.

    The page reloads itself meanwhile (a meta refresh: no script); once no tune holds the target's lock,
    the report is written a last time, without the reload, and this returns. Ctrl-C stops watching.
    """
    lock = TargetLock(tune_lock_path(Path(build_dir) / "ciq", safe_name(target)), wait=False)
    status = live_status_path(lock.path)
    seen: tuple[tuple[int, int] | None, tuple[int, int] | None] | None = None
    waiting_said = ""
    try:
        while True:
            running = lock.held()
            journal = chosen_journal(build_dir, target, architecture)  # the running tune's: it journals its start
            stamp = (_file_stamp(journal), _file_stamp(status))  # an evaluation journaled, or a phase entered
            if stamp != seen or not running:
                seen = stamp
                live = read_live_status(status) if running else None
                try:
                    say(report(target, build_dir, source_dir, fmt, output, search,
                               WATCH_SECONDS if running else None, live, architecture))
                except ManifestError:
                    if not running:
                        raise
                    phase = str((live or {}).get("phase") or "")
                    if phase != waiting_said:
                        say(f"ciq_build: waiting for the first evaluation of {target} in {journal}"
                            + (f" (the tune is in its {phase} phase)" if phase else "") + "\n")
                        waiting_said = phase or "said"
            if not running:
                return f"ciq_build: no tune of {target} is running (any more): the report above is final\n"
            time.sleep(WATCH_SECONDS)  # polling a file: the tune may run in another process, on another host
    except KeyboardInterrupt:
        return "ciq_build: stopped watching; the report holds what the journal held then\n"


def _file_stamp(path: Path) -> tuple[int, int] | None:
    """(mtime in ns, size) of `path`, or None when it is not there: what changes when a line is appended."""
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_mtime_ns, info.st_size


# -- numbers in words -------------------------------------------------------------


def _value(value: float | None) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.6g}"


def _change(base: float | None, value: float | None) -> str:
    """How `value` differs from `base`: "same", a percentage, or a difference when the base is 0."""
    if base is None or value is None or math.isnan(base) or math.isnan(value):
        return "-"
    if value == base:
        return "same"
    if base == 0:
        return f"{value - base:+.6g}"
    return f"{(value - base) / base * 100:+.1f}%"


def _controls_text(evaluation: JournalEntry) -> str:
    parts = [*evaluation.flags, *(f"-D{k}={v}" for k, v in sorted(evaluation.defines.items()))]
    if evaluation.acf:
        parts.append(f"ACF {evaluation.acf}")
    return " ".join(parts) or "(the compiler's defaults)"


def _seconds(value: float) -> str:
    return f"{value:.1f} s"


# -- the tables both formats share ------------------------------------------------


def _summary_rows(history: TuneHistory) -> list[list[str]]:
    base, win = history.baseline, history.winner
    rows = []
    for i, objective in enumerate(history.objectives):
        best_so_far = history.best_so_far(i)
        best = best_so_far[-1][1] if best_so_far else None
        b = base.scores[i] if base and base.scores else None
        w = win.scores[i] if win and win.scores else None
        rows.append([objective.spec, objective.direction, _value(b), _value(best), _change(b, best),
                     _value(w), _change(b, w)])
    return rows


_SUMMARY_HEAD = ["objective", "better", "baseline", "best seen", "change", "pinned winner", "change"]


def _generation_rows(history: TuneHistory) -> list[list[str]]:
    """Per generation: evaluations, failures, best-so-far on each objective at its end, when it ended, how long
    it took, and what its evaluations spent compiling, benchmarking and waiting for a GPU."""
    rows = []
    several_runs = len(history.runs) > 1
    for generation in history.generations:
        members = [e for e in history.evaluations if e.generation == generation]
        last = max(e.index for e in members)
        row = [str(generation), str(len(members)), str(sum(1 for e in members if not e.ok))]
        for i in range(len(history.objectives)):
            upto = [best for e, best in history.best_so_far(i) if e.index <= last]
            row.append(_value(upto[-1]) if upto else "-")
        run = max(e.run for e in members)  # a generation a resume finished: its time in the run that did
        timed = [e for e in members if e.run == run and not math.isnan(e.elapsed_s)]
        ended = max((e.elapsed_s for e in timed), default=math.nan)
        began = min((e.elapsed_s - e.seconds for e in timed), default=math.nan)
        row.append("-" if math.isnan(ended) else (f"run {run}, " if several_runs else "") + _seconds(ended))
        row.append("-" if math.isnan(ended) else _seconds(max(0.0, ended - began)))
        row += [_seconds(sum(e.timings.get(name, 0.0) for e in members)) for name in TIMING_NAMES]
        rows.append(row)
    return rows


def _generation_head(history: TuneHistory) -> list[str]:
    return ["generation", "evaluations", "failed", *(f"best {o.spec}" for o in history.objectives), "ended at",
            "its wall time", *(_TIMING_LABELS[name] for name in TIMING_NAMES)]


GENERATION_NOTE = ("Ended at: seconds from the start of its run's first evaluation (the baseline's) to the end of "
                   "its last (a resumed tune is a run of its own, counted from 0 again). Its wall time: from the "
                   "start of its first evaluation to the end of its last. Compiling, benchmarking and waiting for "
                   "a GPU: summed over its evaluations, so candidates built or run side by side (--jobs, several "
                   "GPUs) can add up to more than its wall time; what they leave of it went to neither: the "
                   "search choosing candidates, the journal, and workers idle while the slowest candidate of the "
                   "generation finished.")


def _front_rows(history: TuneHistory) -> list[list[str]]:
    winner, base = history.winner, history.baseline
    rows = []
    for e in history.pareto_front():
        controls = _controls_text(e)
        if winner is not None and e.key == winner.key:
            mark, pinned = "pinned", _pinned_text(history)
            if pinned != controls:  # a minimal pin: the controls that changed nothing were dropped
                mark, controls = "pinned (minimized)", f"{pinned} (searched: {controls})"
        else:
            mark = "baseline" if base and e.key == base.key else ""
        rows.append([str(e.index), *(_value(s) for s in e.scores or ()), mark, controls])
    return rows


def _pinned_text(history: TuneHistory) -> str:
    """The record's controls, as the build applies them."""
    c = history.pinned_controls
    assert c is not None
    parts = [*c.flags, *(f"-D{k}={v}" for k, v in c.defines)]
    if c.acf is not None:
        parts.append(f"ACF {c.acf.path.name}")
    return " ".join(parts) or "(the compiler's defaults)"


def _remeasure_rows(history: TuneHistory) -> list[list[str]]:
    measured = history.remeasure()
    if measured is None:
        return []
    return [
        ["baseline", str(len(measured.baseline)), _value(measured.baseline_median), _value(measured.baseline_iqr),
         _value(min(measured.baseline)), _value(max(measured.baseline))],
        ["winner", str(len(measured.winner)), _value(measured.winner_median), _value(measured.winner_iqr),
         _value(min(measured.winner)), _value(max(measured.winner))],
    ]


_REMEASURE_HEAD = ["side", "samples", "median", "IQR", "min", "max"]


def _controls_rows(history: TuneHistory) -> list[list[str]]:
    c = history.pinned_controls  # an architecture's own entry where the search tuned one (tune --architecture)
    if c is None:
        return []
    rows = [["flag", flag] for flag in c.flags] + [["define", f"-D{n}={v}"] for n, v in c.defines]
    if c.acf is not None:
        rows.append(["ACF", f"{c.acf.path.name} ({c.acf.compiler}, sha256 {c.acf.sha256[:16]}...)"])
    params = history.pinned_provenance.get("winner_params")
    if isinstance(params, dict):
        rows += [["parameter", f"{k} = {v}"] for k, v in sorted(params.items())]
    return rows or [["(none)", "the compiler's defaults"]]


def _importance_rows(history: TuneHistory) -> list[list[str]]:
    """Per objective and search parameter, the share of the objective's variance it explains, most first."""
    rows = []
    for i, objective in enumerate(history.objectives):
        rows += [[objective.spec, r.parameter, f"{r.explained * 100:.0f}%", str(r.values), str(r.evaluations)]
                 for r in history.importance(i)]
    return rows


_IMPORTANCE_HEAD = ["objective", "parameter", "variance explained", "values it took", "scored evaluations"]
IMPORTANCE_NOTE = ("The share of an objective's variance a parameter explains on its own (eta squared: the "
                   "variance of the mean score per value of the parameter, over the total variance). 100%: its "
                   "value alone fixes the score; 0%: the score does not move with it. It sees no interaction "
                   "between parameters (the pairs below do), and with few evaluations per value it overstates.")


def _interaction_rows(history: TuneHistory) -> list[list[str]]:
    """Per objective, the pairs of search parameters that explain most beyond each one alone."""
    rows = []
    for i, objective in enumerate(history.objectives):
        rows += [[objective.spec, f"{r.first} x {r.second}", f"{r.explained * 100:.0f}%", str(r.cells),
                  f"{r.per_cell:.1f}"] for r in history.interactions(i)]
    return rows


_INTERACTION_HEAD = ["objective", "pair", "variance explained together, beyond each alone", "value pairs it took",
                     "evaluations per value pair"]
INTERACTION_NOTE = ("A pair's share beyond its parameters' own (a two-way ANOVA's interaction: eta squared of the "
                    "evaluations grouped by both values, minus each parameter's): a pair where the best value of "
                    "one depends on the other. With few evaluations per value pair, each pair's mean is one or two "
                    f"scores and the share overstates, so pairs with fewer than {MIN_PER_CELL:g} are left out; a "
                    "search samples unevenly, too: read it as where to look, not as a measurement.")
NO_INTERACTION_NOTE = (f"No pair of search parameters has {MIN_PER_CELL:g} or more evaluations per value pair: too few "
                       "to tell how they move the objectives together (more evaluations, or fewer values, would).")


def _interaction_text(history: TuneHistory) -> tuple[list[list[str]], str]:
    """The pairs' rows and the note under them; no rows and a note saying why where no pair stands on enough."""
    rows = _interaction_rows(history)
    return rows, INTERACTION_NOTE if rows else NO_INTERACTION_NOTE


def _size_head(history: TuneHistory) -> list[str]:
    return ["#", "", *(f"{spec} @{size}" for spec, sizes in history.sizes().items() for size in sizes), "controls"]


def _size_rows(history: TuneHistory) -> list[list[str]]:
    """Each size's ratio to the defaults for the winner and the Pareto front (or the best few): a pin that
    wins on one size and loses on another shows it here."""
    sizes = history.sizes()
    rows = []
    for e, role in history.size_candidates():
        ratios = history.size_ratios(e)
        cells = [ratio_text(r) if (r := ratios.get(spec, {}).get(size)) is not None else "-"
                 for spec, names in sizes.items() for size in names]
        rows.append([str(e.index), role, *cells, _controls_text(e)])
    return rows


SIZES_NOTE = ("Each problem size's figure over the defaults' on the same size (1x: the same; below 1x is faster "
              "for a time). The search scored the sizes together (SCORE: the geometric mean of these ratios, or "
              "the worst).")


def _time_rows(history: TuneHistory) -> list[list[str]]:
    spent = history.time_spent()
    total = sum(spent.values())
    wall = sum(e.seconds for e in history.evaluations)
    rows = [[_TIMING_LABELS[name], _seconds(spent[name]), f"{spent[name] / total * 100:.0f}%" if total else "-"]
            for name in TIMING_NAMES]
    rows.append(["evaluations' wall time (all parts, candidates in parallel counted each)", _seconds(wall), ""])
    return rows


def _failure_rows(history: TuneHistory) -> list[list[str]]:
    rows = []
    for cause, count in history.failures.items():
        example = next(e for e in history.evaluations if not e.ok and (e.cause or "error") == cause)
        environmental = " (environmental: run again on resume)" if example.environmental else ""
        rows.append([cause + environmental, str(count), example.message.strip().splitlines()[-1][:200]
                     if example.message.strip() else ""])
    return rows


def _evaluation_rows(history: TuneHistory) -> list[list[str]]:
    rows = []
    for e in history.evaluations:
        scores = [_value(s) for s in e.scores] if e.scores else ["-"] * len(history.objectives)
        state = "ok" if e.ok else f"failed: {e.cause}"
        if e.is_baseline:
            state += " (baseline)"
        if e.raced:
            state += f" (raced out after {e.runs} run(s))"
        if e.same_code_as:
            state += f" (same code as {e.same_code_as[:12]})"
        rows.append([str(e.index), str(e.generation), state, *scores,
                     *(_seconds(e.timings[name]) if name in e.timings else "-" for name in TIMING_NAMES),
                     e.worker or "here", _controls_text(e)])
    return rows


def _evaluation_head(history: TuneHistory) -> list[str]:
    return ["#", "gen", "outcome", *(o.spec for o in history.objectives), "compile", "benchmark", "wait", "worker",
            "controls"]


def _facts(history: TuneHistory) -> list[tuple[str, str]]:
    record = history.record
    if record is None:
        pinned = "none (nothing pinned yet)"
    elif history.winner is None:
        # A record pinned by another search (other objectives, an older journal, another machine).
        pinned = (f"{history.record_path} (its controls are not among this journal's evaluations: "
                  "another tune pinned it)")
    else:
        pinned = str(history.record_path)
    journal = str(history.journal_path) + (" (gone: this is what the pinned record holds, its baseline and "
                                           "winner)" if history.from_record else "")
    if history.other_journals:
        journal += (f" (the latest written; this target's other tunes: "
                    f"{', '.join(_journal_choice(p) for p in history.other_journals)})")
    facts = [("journal", journal),
             ("pinned record", pinned),
             ("evaluations", f"{len(history.evaluations)} ({len(history.scored)} scored, "
                             f"{len(history.evaluations) - len(history.scored)} failed)"),
             ("failures", ", ".join(f"{cause} {n}" for cause, n in history.failures.items()) or "none")]
    if len(history.runs) > 1:
        started = [f"run {r}" + (f" began {history.run_starts[r]}" if history.run_starts.get(r) else "")
                   for r in history.runs]
        facts.append(("runs", f"{len(history.runs)} runs of tune journaled these evaluations ({', '.join(started)}); "
                              "wall times count from each run's own first evaluation, and the convergence plot "
                              "draws each run apart"))
    if len(history.searches) > 1:
        reused = sum(1 for e in history.evaluations if e.search != history.search)
        facts.append(("search", f"{history.search} of {len(history.searches)} in this journal (--search N shows "
                                f"another); objectives {', '.join(o.spec for o in history.objectives)}; "
                                f"{reused} evaluation(s) of earlier searches, scored in these objectives from "
                                "their metrics"))
    if record is not None:
        t = record.toolchain
        facts.append(("toolchain", f"CUDA {t.cuda} (nvcc {t.nvcc_version or '?'}), arch "
                                   f"{', '.join(t.architectures) or '?'}"))
        created = record.provenance.get("created")
        if created:
            facts.append(("pinned on", str(created)))
    if history.skipped_lines:
        facts.append(("journal lines skipped", ", ".join(f"{n} ({why})" for n, why in history.skipped_lines)))
    return facts


def _journal_choice(path: Path) -> str:
    """Another journal of the target, and the --architecture that reports it."""
    architecture = path.name.removesuffix(".jsonl").rpartition(".sm_")[2] if ".sm_" in path.name else "all"
    return f"{path.name}: --architecture {architecture}"


# -- plots --------------------------------------------------------------------------


def _pyplot() -> Any | None:
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
        series = history.best_so_far(i)
        for column in (0, 1):
            ax = axes[i][column]
            for k, run in enumerate(runs if column == 1 else [None]):
                part = [(e, best) for e, best in series if run is None or e.run == run]
                xs = [e.index if column == 0 else e.elapsed_s for e, _ in part]
                named = f"run {run}" if run is not None and len(runs) > 1 else ""
                ax.scatter(xs, [e.scores[i] for e, _ in part], s=12, alpha=0.35,  # type: ignore[index]
                           color=colors[k % len(colors)] if named else "tab:gray",
                           label=f"candidates, {named}" if named else "candidates")
                ax.step(xs, [best for _, best in part], where="post", color=colors[k % len(colors)],
                        label=f"best so far, {named}" if named else "best so far")
            if base is not None and base.scores is not None:
                ax.axhline(base.scores[i], color="tab:red", linestyle="--", linewidth=1, label="baseline")
            if column == 0 or len(runs) == 1:  # a generation's start is a time in one run only
                for index, start in _generation_starts(history):
                    ax.axvline(index if column == 0 else start, color="black", linestyle=":", linewidth=0.7)
            label = "evaluation" if column == 0 else ("wall time (s)" if len(runs) == 1 else
                                                      "wall time from each run's start (s)")
            ax.set_xlabel(label + ("; dotted: a new generation" if i == n - 1 else ""))
            ax.set_ylabel(f"{objective.spec} ({objective.direction})")
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
        ax = axes[0][i]
        relative = [(e, history.relative(e, i)) for e in history.scored]
        as_percent = all(r is not None for _, r in relative)
        ys = []
        for e, r in relative:
            if as_percent:
                ys.append((r - 1) * 100)  # type: ignore[operator]
            else:
                reference = base.scores[i] if base is not None and base.scores else 0.0
                ys.append(e.scores[i] - reference)  # type: ignore[index]
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
                      + f"; {objective.direction} is better")
        ax.set_title(objective.spec)
        if i == 0:
            ax.legend(fontsize="small")
    failures = ", ".join(f"{cause} {count}" for cause, count in history.failures.items()) or "none"
    figure.suptitle(f"Every candidate against the baseline ({len(history.scored)} scored; failed: {failures})")
    return figure


def plot_pareto(pyplot: Any, history: TuneHistory) -> Any:
    first, second = history.objectives[0], history.objectives[1]
    figure, ax = pyplot.subplots(layout="constrained", figsize=(6, 4.5))
    scored = history.scored
    ax.scatter([e.scores[0] for e in scored], [e.scores[1] for e in scored], s=16, alpha=0.4,  # type: ignore[index]
               color="tab:gray", label="candidates")
    front = history.pareto_front()
    ax.step([e.scores[0] for e in front], [e.scores[1] for e in front], where="post",  # type: ignore[index]
            color="tab:blue", marker="o", label="Pareto front")
    for e, marker, color, label in ((history.baseline, "X", "tab:red", "baseline"),
                                    (history.winner, "*", "tab:orange", "pinned")):
        if e is not None and e.scores is not None:
            ax.scatter([e.scores[0]], [e.scores[1]], s=180, marker=marker, color=color, label=label, zorder=3)
    ax.set_xlabel(f"{first.spec} ({first.direction})")
    ax.set_ylabel(f"{second.spec} ({second.direction})")
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
        ax.set_title(objective.spec)
    figure.suptitle("Which controls moved the objective")
    return figure


def plot_parallel(pyplot: Any, history: TuneHistory) -> Any:
    """Parallel coordinates: one line per scored candidate across its search parameters, coloured by objective 1.

    Each axis spans what the parameter took: numbers from their least to their greatest value, other values
    (and unset) in sorted order; the last axis is the first objective, better at the top.
    """
    parameters = history.parameters()
    objective = history.objectives[0]
    scored = [e for e in history.scored if math.isfinite(e.scores[0])]  # type: ignore[index]
    if not scored:
        figure, ax = pyplot.subplots(layout="constrained", figsize=(6, 1.5))
        ax.set_axis_off()
        ax.set_title(f"No candidate has a finite {objective.spec}: nothing to draw across the controls")
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
    scores = [e.scores[0] for e in scored]  # type: ignore[index]
    low, high = min(scores, default=0.0), max(scores, default=0.0)
    better_up = [(high - v) / (high - low) if high > low else 0.5 for v in scores]
    if objective.direction == "max":
        better_up = [1 - v for v in better_up]
    columns.append(better_up)
    ticks.append(f"{objective.spec}\n{objective.direction} is up")
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
    ax.set_title(f"Every candidate across the controls, coloured by {objective.spec} (yellow: better)")
    return figure


def plot_sizes(pyplot: Any, history: TuneHistory) -> Any:
    """Per objective measured on several sizes: every scored candidate's ratio to the defaults on each size
    (a dot), the pinned winner's and the other listed candidates' (TuneHistory.size_candidates) joined."""
    sizes = history.sizes()
    figure, axes = pyplot.subplots(1, len(sizes), layout="constrained", figsize=(5 * len(sizes) + 1, 4.2),
                                   squeeze=False)
    listed = history.size_candidates()
    for column, (spec, names) in enumerate(sizes.items()):
        ax = axes[0][column]
        for e in history.scored:
            ratios = history.size_ratios(e).get(spec, {})
            xs = [k + ((e.index * 0.618) % 1 - 0.5) * 0.3 for k, size in enumerate(names) if size in ratios]
            ax.scatter(xs, [ratios[size] for size in names if size in ratios], s=12, alpha=0.35, color="tab:gray")
        for e, role in reversed(listed):  # the pinned winner drawn last, on top
            ratios = history.size_ratios(e).get(spec, {})
            at = [k for k, size in enumerate(names) if size in ratios]
            pinned = role == "pinned"
            ax.plot(at, [ratios[names[k]] for k in at], marker="*" if pinned else "o",
                    markersize=14 if pinned else 5, linewidth=2 if pinned else 1, alpha=1 if pinned else 0.7,
                    color="tab:orange" if pinned else None, label=f"#{e.index} ({role})", zorder=3 if pinned else 2)
        ax.axhline(1, color="tab:red", linestyle="--", linewidth=1, label="defaults")
        ax.set_xticks(range(len(names)), names)
        ax.set_xlim(-0.5, len(names) - 0.5)
        ax.set_xlabel("problem size (ARGS_SETS)")
        ax.set_ylabel(f"{spec}: ratio to the defaults on the same size")
        ax.set_title(spec)
        ax.legend(fontsize="x-small")
    figure.suptitle("Each problem size: grey, every candidate; joined, the pinned winner and the best")
    return figure


def plot_remeasure(pyplot: Any, history: TuneHistory) -> Any | None:
    measured = history.remeasure()
    if measured is None:
        return None
    figure, ax = pyplot.subplots(layout="constrained", figsize=(6, 4))
    ax.boxplot([measured.baseline, measured.winner], widths=0.4)
    ax.set_xticks([1, 2], ["baseline", "winner"])
    for position, samples in ((1, measured.baseline), (2, measured.winner)):
        ax.scatter([position + ((k * 0.618) % 1 - 0.5) * 0.2 for k in range(len(samples))], samples, s=14,
                   alpha=0.7, color="tab:blue", zorder=3)
    ax.set_ylabel(measured.metric)
    ax.set_title(f"Re-measured, interleaved: p = {measured.p_value:.3g} (one-sided Mann-Whitney U)")
    return figure


def plot_time(pyplot: Any, history: TuneHistory) -> Any:
    generations = history.generations
    figure, ax = pyplot.subplots(layout="constrained", figsize=(7, 0.5 * len(generations) + 1.5))
    left = [0.0] * len(generations)
    for name, color in zip(TIMING_NAMES, ("tab:blue", "tab:green", "tab:gray")):
        widths = [sum(e.timings.get(name, 0.0) for e in history.evaluations if e.generation == g)
                  for g in generations]
        ax.barh([str(g) for g in generations], widths, left=left, color=color, label=_TIMING_LABELS[name])
        left = [a + b for a, b in zip(left, widths)]
    ax.set_xlabel("seconds (summed over the generation's evaluations)")
    ax.set_ylabel("generation")
    ax.legend(fontsize="small")
    ax.set_title("Where the time went")
    return figure


def _plots(history: TuneHistory) -> dict[str, tuple[str, str]] | None:
    """section -> (alt text, base64 PNG); None without matplotlib."""
    pyplot = _pyplot()
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


# -- HTML ---------------------------------------------------------------------------

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 72em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; font-variant-numeric: tabular-nums; }
th { background: #f3f3f3; }
img { max-width: 100%; display: block; margin: 0.5em 0; }
.note { background: #fff6d6; padding: 0.5em 1em; border-left: 4px solid #e0b000; }
code { background: #f3f3f3; padding: 0 0.2em; }
"""


def _html_table(head: list[str], rows: list[list[str]]) -> str:
    if not rows:
        return ""
    header = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{header}</tr></thead><tbody>{body}</tbody></table>"


PHASE_WORDS = {"preparing": "preparing (configuring its scratch trees)", "baseline": "baseline (the defaults)",
               "search": "search", "rebuild": "rebuild (the winner's build)",
               "re-measure": "re-measure (the winner against the baseline, interleaved)",
               "minimize": "minimize (dropping the controls that change nothing)", "pin": "pin",
               "ended": "ended (its lock about to be released)"}


def running_text(history: TuneHistory, refresh_s: int, live: dict[str, Any] | None = None,
                 now: Callable[[], float] = time.time) -> str:
    """What a watched page says of the tune that is running: its phase, how far it is, its best so far, the
    time left (`live`: what the tune last said of itself, ciq_build.state.live; else the journal alone)."""
    last_run = max(history.runs, default=1)
    this_run = [e for e in history.evaluations if e.run == last_run and not e.is_baseline]
    text = f"A tune of {history.target} is running (search {history.search} of its journal"
    text += f", run {last_run})" if len(history.runs) > 1 else ")"
    live = live or {}
    phase = live.get("phase")
    if isinstance(phase, str) and phase:
        text += f"; phase: {PHASE_WORDS.get(phase, phase)}"
    evaluations, expected = live.get("evaluations"), live.get("expected")
    if isinstance(evaluations, int) and isinstance(expected, int) and expected > 0:
        text += f"; {evaluations} of {expected} evaluations"
    else:
        text += f"; {len(this_run)} evaluation(s) so far in this run"
    if this_run and math.isfinite(this_run[-1].elapsed_s):
        text += f", the last {this_run[-1].elapsed_s:.0f} s after the run's first"
    best = history.best_so_far(0)
    if isinstance(live.get("best"), str) and live["best"] not in ("", "-"):
        text += f"; best so far {live['best']}"
    elif best and math.isfinite(best[-1][1]):
        text += f"; best {history.objectives[0].spec} so far {_value(best[-1][1])}"
    left, updated = live.get("left_s"), live.get("updated")
    if phase == "search" and isinstance(left, (int, float)) and isinstance(updated, (int, float)):
        text += f"; about {clock(max(0.0, left - (now() - updated)))} of the search left"
    text += (f". This page reloads every {refresh_s} s; the pinned record it shows is the one before this tune, "
             "until the tune pins its winner.")
    return text


def render_html(history: TuneHistory, refresh_s: int | None = None, live: dict[str, Any] | None = None) -> str:
    """The page; `refresh_s`: it reloads itself that often (report --watch, while the tune runs), saying what the
    running tune last said of itself (`live`)."""
    plots = _plots(history)

    def plot(section: str) -> str:
        if plots is None or section not in plots:
            return ""
        alt, data = plots[section]
        return f'<img class="plot" id="plot-{section}" alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'

    title = f"ciq_build: how {history.target} was tuned"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        # Nothing but this file and its data: URIs may load, so the page is the same offline.
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data:; "
        "style-src 'unsafe-inline'\">",
        *([f'<meta http-equiv="refresh" content="{int(refresh_s)}">'] if refresh_s else []),
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
    ]
    if refresh_s:  # report --watch while a tune runs: say so, and what the page holds of it so far
        parts.append(f'<p class="note" id="running">{html.escape(running_text(history, refresh_s, live))}</p>')
    if plots is None:
        parts.append(f'<p class="note" id="no-plots">No plots: {html.escape(PLOTS_HINT)}, '
                     "then run the same <code>report</code> command again.</p>")
    parts.append("<table>" + "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>"
                                     for k, v in _facts(history)) + "</table>")
    parts += ["<h2>Result</h2>", _html_table(_SUMMARY_HEAD, _summary_rows(history))]
    parts += ["<h2>Convergence</h2>", plot("convergence"),
              _html_table(_generation_head(history), _generation_rows(history)),
              f"<p>{html.escape(GENERATION_NOTE)}</p>"]
    parts += ["<h2>Every candidate against the baseline</h2>", plot("candidates")]
    failures = _failure_rows(history)
    parts.append(_html_table(["failed because", "count", "last line of the first one's message"], failures)
                 if failures else "<p>No candidate failed.</p>")
    if len(history.objectives) >= 2:
        parts += [f"<h2>Pareto front: {html.escape(history.objectives[0].spec)} and "
                  f"{html.escape(history.objectives[1].spec)}</h2>", plot("pareto"),
                  _html_table(["#", history.objectives[0].spec, history.objectives[1].spec, "", "controls"],
                              [row[:3] + row[-2:] for row in _front_rows(history)])]
    if history.sizes():
        parts += ["<h2>Each problem size</h2>", plot("sizes"), _html_table(_size_head(history), _size_rows(history)),
                  f"<p>{html.escape(SIZES_NOTE)}</p>"]
    importance = _importance_rows(history)
    if importance:
        parts += ["<h2>Which controls moved the objectives</h2>", plot("importance"),
                  _html_table(_IMPORTANCE_HEAD, importance), f"<p>{html.escape(IMPORTANCE_NOTE)}</p>"]
        if len(history.parameters()) >= 2:
            interactions, note = _interaction_text(history)
            parts += ["<h3>Pairs that moved them together</h3>", _html_table(_INTERACTION_HEAD, interactions),
                      f"<p>{html.escape(note)}</p>"]
        parts.append(plot("parallel"))
    parts.append("<h2>The winner re-measured against the baseline</h2>")
    measured = history.remeasure()
    if measured is None:
        parts.append("<p>" + ("No re-measure: static objectives are deterministic, the winner's scores are exact."
                              if history.record is not None else "Nothing pinned, so nothing was re-measured.")
                     + "</p>")
    else:
        parts += [plot("remeasure"), _html_table(_REMEASURE_HEAD, _remeasure_rows(history)),
                  f"<p>p = {measured.p_value:.3g} (one-sided Mann-Whitney U). Verdict: "
                  f"{html.escape(measured.verdict)}</p>"]
    parts += ["<h2>The winner's controls</h2>",
              _html_table(["kind", "value"], _controls_rows(history)) if history.record is not None
              else "<p>Nothing pinned.</p>"]
    parts += ["<h2>Where the time went</h2>", plot("time"), _html_table(["", "seconds", "share"], _time_rows(history))]
    parts += ["<h2>Every evaluation</h2>", "<details><summary>show the table</summary>",
              _html_table(_evaluation_head(history), _evaluation_rows(history)), "</details>"]
    parts.append("</body></html>")
    return "\n".join(p for p in parts if p) + "\n"


# -- Markdown ------------------------------------------------------------------------


def _md_cell(text: str) -> str:
    """`text` (a journal's or a record's: untrusted) as a Markdown table cell that shows it and nothing more:
    HTML's & < > as entities (a job summary renders HTML), and what would make code, a link or an image, or
    end the cell (\\ ` [ ] |), escaped; one line."""
    text = html.escape(text, quote=False)
    return re.sub(r"([\\`\[\]|])", r"\\\1", text).replace("\r", " ").replace("\n", " ")


def _md_table(head: list[str], rows: list[list[str]]) -> str:
    if not rows:
        return ""
    lines = ["| " + " | ".join(_md_cell(h) for h in head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def render_markdown(history: TuneHistory, refresh_s: int | None = None, live: dict[str, Any] | None = None) -> str:
    """The report's tables as Markdown (no plots), for a CI log or a job summary; with `refresh_s` (report
    --watch while a tune runs), what the running tune last said of itself (`live`) first."""
    parts = [f"# ciq_build: how {history.target} was tuned", ""]
    if refresh_s:
        parts += [f"> {_md_cell(running_text(history, refresh_s, live))}", ""]
    parts += [f"- {_md_cell(k)}: {_md_cell(v)}" for k, v in _facts(history)]
    parts += ["", "## Result", "", _md_table(_SUMMARY_HEAD, _summary_rows(history))]
    parts += ["", "## Convergence", "", _md_table(_generation_head(history), _generation_rows(history)), "",
              GENERATION_NOTE]
    failures = _failure_rows(history)
    parts += ["", "## Failures", "",
              _md_table(["failed because", "count", "last line of the first one's message"], failures)
              if failures else "No candidate failed."]
    if len(history.objectives) >= 2:
        parts += ["", f"## Pareto front: {history.objectives[0].spec} and {history.objectives[1].spec}", "",
                  _md_table(["#", history.objectives[0].spec, history.objectives[1].spec, "", "controls"],
                            [row[:3] + row[-2:] for row in _front_rows(history)])]
    if history.sizes():
        parts += ["", "## Each problem size", "", _md_table(_size_head(history), _size_rows(history)), "",
                  SIZES_NOTE]
    importance = _importance_rows(history)
    if importance:
        parts += ["", "## Which controls moved the objectives", "", _md_table(_IMPORTANCE_HEAD, importance), "",
                  IMPORTANCE_NOTE]
        if len(history.parameters()) >= 2:
            interactions, note = _interaction_text(history)
            parts += ["", "### Pairs that moved them together", "", _md_table(_INTERACTION_HEAD, interactions), "",
                      note]
    measured = history.remeasure()
    if measured is not None:
        parts += ["", "## The winner re-measured against the baseline", "",
                  _md_table(_REMEASURE_HEAD, _remeasure_rows(history)), "",
                  f"p = {measured.p_value:.3g} (one-sided Mann-Whitney U). Verdict: {measured.verdict}"]
    if history.record is not None:
        parts += ["", "## The winner's controls", "", _md_table(["kind", "value"], _controls_rows(history))]
    parts += ["", "## Where the time went", "", _md_table(["", "seconds", "share"], _time_rows(history))]
    return "\n".join(parts) + "\n"
