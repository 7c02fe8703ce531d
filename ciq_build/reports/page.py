"""`report`: what a tune did, as one self-contained HTML page or as Markdown for CI logs.

The page opens offline: plots are PNGs embedded as data: URIs, the style is
inline, there is no script, and a Content-Security-Policy forbids loading
anything else. Plots need matplotlib (``pip install "ciq-build[report]"``);
without it the page has every table and says how to get the plots. The data
comes from ciq_build.reports.history; every string from the journal or the
record is escaped (both are files anyone could have edited).
"""

from __future__ import annotations

import html
import math
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ciq_build.core.metric_unit import change_text
from ciq_build.core.objectives import metric_key
from ciq_build.core.pace import clock
from ciq_build.errors import ManifestError
from ciq_build.pin.display import ratio_text, score_text
from ciq_build.project.worker import safe_name
from ciq_build.reports.export import write_text
from ciq_build.reports.history import JournalEntry, TuneHistory, load_history
from ciq_build.reports.importance import MIN_PER_CELL
from ciq_build.reports.plots import TIMING_LABELS, embedded_plots, load_pyplot
from ciq_build.reports.show import chosen_journal
from ciq_build.search.evaluation import TIMING_NAMES
from ciq_build.state.journal import TargetLock, tune_lock_path
from ciq_build.state.live import live_status_path, read_live_status

PLOTS_HINT = 'plots need matplotlib: pip install "ciq-build[report]"'


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
    if destination != "-" and load_pyplot() is None:
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


def _value(value: float | None, rate_unit: str = "") -> str:
    """A score; a time read from a rate in `rate_unit` as the rate the benchmark printed ("150 TFLOPS")."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return score_text(value, rate_unit)


def _change(base: float | None, value: float | None, rate_unit: str = "") -> str:
    """How `value` differs from `base`: "same", a percentage (with the rate's, for a time read from a rate in
    `rate_unit`), or a difference when the base is 0."""
    if base is None or value is None or math.isnan(base) or math.isnan(value):
        return "-"
    if value == base:
        return "same"
    if base == 0:
        return f"{value - base:+.6g}"
    return change_text(base, value, rate_unit)


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
        rate = objective.rate_unit
        rows.append([objective.spec, objective.direction, _value(b, rate), _value(best, rate), _change(b, best, rate),
                     _value(w, rate), _change(b, w, rate)])
    return rows


_SUMMARY_HEAD = ["objective", "better", "baseline", "best seen", "change", "pinned winner", "change"]


def _scores(history: TuneHistory, evaluation: JournalEntry) -> list[str]:
    """An evaluation's scores, each as its objective shows it."""
    rates = [o.rate_unit for o in history.objectives_of(evaluation)]
    return [_value(s, rates[i] if i < len(rates) else "") for i, s in enumerate(evaluation.scores or ())]


def _generation_rows(history: TuneHistory) -> list[list[str]]:
    """Per generation: evaluations, failures, best-so-far on each objective at its end, when it ended, how long
    it took, and what its evaluations spent compiling, benchmarking and waiting for a GPU."""
    rows = []
    several_runs = len(history.runs) > 1
    for generation in history.generations:
        members = [e for e in history.evaluations if e.generation == generation]
        last = max(e.index for e in members)
        row = [str(generation), str(len(members)), str(sum(1 for e in members if not e.ok))]
        for i, objective in enumerate(history.objectives):
            upto = [best for e, best in history.best_so_far(i) if e.index <= last]
            row.append(_value(upto[-1], objective.rate_unit) if upto else "-")
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
            "its wall time", *(TIMING_LABELS[name] for name in TIMING_NAMES)]


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
        rows.append([str(e.index), *_scores(history, e), mark, controls])
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
    rate = next((o.rate_unit for o in history.objectives if metric_key(o) == measured.metric), "")
    rows = []
    for side, samples, median, iqr in (("baseline", measured.baseline, measured.baseline_median, measured.baseline_iqr),
                                       ("winner", measured.winner, measured.winner_median, measured.winner_iqr)):
        if rate and median > 0:  # the rates the benchmark printed: the IQR as a share, the lowest rate the longest time
            rows.append([side, str(len(samples)), _value(median, rate), f"{iqr / median:.1%}",
                         _value(max(samples), rate), _value(min(samples), rate)])
        else:
            rows.append([side, str(len(samples)), _value(median), _value(iqr), _value(min(samples)),
                         _value(max(samples))])
    return rows


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
    rows = [[TIMING_LABELS[name], _seconds(spent[name]), f"{spent[name] / total * 100:.0f}%" if total else "-"]
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
        scores = _scores(history, e) if e.scores else ["-"] * len(history.objectives)
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
        text += f"; best {history.objectives[0].spec} so far {_value(best[-1][1], history.objectives[0].rate_unit)}"
    left, updated = live.get("left_s"), live.get("updated")
    if phase == "search" and isinstance(left, (int, float)) and isinstance(updated, (int, float)):
        text += f"; about {clock(max(0.0, left - (now() - updated)))} of the search left"
    text += (f". This page reloads every {refresh_s} s; the pinned record it shows is the one before this tune, "
             "until the tune pins its winner.")
    return text


def render_html(history: TuneHistory, refresh_s: int | None = None, live: dict[str, Any] | None = None) -> str:
    """The page; `refresh_s`: it reloads itself that often (report --watch, while the tune runs), saying what the
    running tune last said of itself (`live`)."""
    plots = embedded_plots(history)

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
