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

from ciq_build.core.pace import clock
from ciq_build.errors import ManifestError
from ciq_build.project.worker import safe_name
from ciq_build.reports.export import write_text
from ciq_build.reports.history import TuneHistory, load_history
from ciq_build.reports.plots import embedded_plots, load_pyplot
from ciq_build.reports.show import chosen_journal
from ciq_build.reports.tables import (
    GENERATION_NOTE,
    IMPORTANCE_HEAD,
    IMPORTANCE_NOTE,
    INTERACTION_HEAD,
    REMEASURE_HEAD,
    SIZES_NOTE,
    SUMMARY_HEAD,
    controls_rows,
    evaluation_head,
    evaluation_rows,
    fact_rows,
    failure_rows,
    front_rows,
    generation_head,
    generation_rows,
    importance_rows,
    interaction_text,
    remeasure_rows,
    score_cell,
    size_head,
    size_rows,
    summary_rows,
    time_rows,
)
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
        text += f"; so far, {live['best']}"  # the progress line's words: "best ..." or "front: N points; would pin ..."
    elif best and math.isfinite(best[-1][1]):
        text += f"; best {history.objectives[0].spec} so far {score_cell(best[-1][1], history.objectives[0].rate_unit)}"
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
                                     for k, v in fact_rows(history)) + "</table>")
    parts += ["<h2>Result</h2>", _html_table(SUMMARY_HEAD, summary_rows(history))]
    parts += ["<h2>Convergence</h2>", plot("convergence"),
              _html_table(generation_head(history), generation_rows(history)),
              f"<p>{html.escape(GENERATION_NOTE)}</p>"]
    parts += ["<h2>Every candidate against the baseline</h2>", plot("candidates")]
    failures = failure_rows(history)
    parts.append(_html_table(["failed because", "count", "the first one's error line (else its last)"], failures)
                 if failures else "<p>No candidate failed.</p>")
    if len(history.objectives) >= 2:
        parts += [f"<h2>Pareto front: {html.escape(history.objectives[0].spec)} and "
                  f"{html.escape(history.objectives[1].spec)}</h2>", plot("pareto"),
                  _html_table(["#", history.objectives[0].spec, history.objectives[1].spec, "", "controls"],
                              [row[:3] + row[-2:] for row in front_rows(history)])]
    if history.sizes():
        parts += ["<h2>Each problem size</h2>", plot("sizes"), _html_table(size_head(history), size_rows(history)),
                  f"<p>{html.escape(SIZES_NOTE)}</p>"]
    importance = importance_rows(history)
    if importance:
        parts += ["<h2>Which controls moved the objectives</h2>", plot("importance"),
                  _html_table(IMPORTANCE_HEAD, importance), f"<p>{html.escape(IMPORTANCE_NOTE)}</p>"]
        if len(history.parameters()) >= 2:
            interactions, note = interaction_text(history)
            parts += ["<h3>Pairs that moved them together</h3>", _html_table(INTERACTION_HEAD, interactions),
                      f"<p>{html.escape(note)}</p>"]
        parts.append(plot("parallel"))
    parts.append("<h2>The winner re-measured against the baseline</h2>")
    measured = history.remeasure()
    if measured is None:
        parts.append("<p>" + ("No re-measure: static objectives are deterministic, the winner's scores are exact."
                              if history.record is not None else "Nothing pinned, so nothing was re-measured.")
                     + "</p>")
    else:
        parts += [plot("remeasure"), _html_table(REMEASURE_HEAD, remeasure_rows(history)),
                  f"<p>p = {measured.p_value:.3g} (one-sided Mann-Whitney U). Verdict: "
                  f"{html.escape(measured.verdict)}</p>"]
    parts += ["<h2>The winner's controls</h2>",
              _html_table(["kind", "value"], controls_rows(history)) if history.record is not None
              else "<p>Nothing pinned.</p>"]
    parts += ["<h2>Where the time went</h2>", plot("time"), _html_table(["", "seconds", "share"], time_rows(history))]
    parts += ["<h2>Every evaluation</h2>", "<details><summary>show the table</summary>",
              _html_table(evaluation_head(history), evaluation_rows(history)), "</details>"]
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
    parts += [f"- {_md_cell(k)}: {_md_cell(v)}" for k, v in fact_rows(history)]
    parts += ["", "## Result", "", _md_table(SUMMARY_HEAD, summary_rows(history))]
    parts += ["", "## Convergence", "", _md_table(generation_head(history), generation_rows(history)), "",
              GENERATION_NOTE]
    failures = failure_rows(history)
    parts += ["", "## Failures", "",
              _md_table(["failed because", "count", "the first one's error line (else its last)"], failures)
              if failures else "No candidate failed."]
    if len(history.objectives) >= 2:
        parts += ["", f"## Pareto front: {history.objectives[0].spec} and {history.objectives[1].spec}", "",
                  _md_table(["#", history.objectives[0].spec, history.objectives[1].spec, "", "controls"],
                            [row[:3] + row[-2:] for row in front_rows(history)])]
    if history.sizes():
        parts += ["", "## Each problem size", "", _md_table(size_head(history), size_rows(history)), "",
                  SIZES_NOTE]
    importance = importance_rows(history)
    if importance:
        parts += ["", "## Which controls moved the objectives", "", _md_table(IMPORTANCE_HEAD, importance), "",
                  IMPORTANCE_NOTE]
        if len(history.parameters()) >= 2:
            interactions, note = interaction_text(history)
            parts += ["", "### Pairs that moved them together", "", _md_table(INTERACTION_HEAD, interactions), "",
                      note]
    measured = history.remeasure()
    if measured is not None:
        parts += ["", "## The winner re-measured against the baseline", "",
                  _md_table(REMEASURE_HEAD, remeasure_rows(history)), "",
                  f"p = {measured.p_value:.3g} (one-sided Mann-Whitney U). Verdict: {measured.verdict}"]
    if history.record is not None:
        parts += ["", "## The winner's controls", "", _md_table(["kind", "value"], controls_rows(history))]
    parts += ["", "## Where the time went", "", _md_table(["", "seconds", "share"], time_rows(history))]
    return "\n".join(parts) + "\n"
