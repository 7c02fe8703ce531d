"""What a tune's report says, as rows of text: the tables and facts both formats of `report` (ciq_build.reports.page)
lay out, and how a score, a change and a duration read in them. Nothing here is HTML or Markdown: the page escapes
and lays out what these return.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from ciq_build.core.metric_unit import change_text
from ciq_build.pin.display import ratio_text, score_text
from ciq_build.reports.history import JournalEntry, TuneHistory
from ciq_build.reports.importance import MIN_PER_CELL
from ciq_build.reports.plots import TIMING_LABELS
from ciq_build.search.evaluation import TIMING_NAMES

# -- numbers in words -------------------------------------------------------------


def score_cell(value: float | None, rate_unit: str = "") -> str:
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


def summary_rows(history: TuneHistory) -> list[list[str]]:
    base, win = history.baseline, history.winner
    rows = []
    for i, objective in enumerate(history.objectives):
        best_so_far = history.best_so_far(i)
        best = best_so_far[-1][1] if best_so_far else None
        b = base.scores[i] if base and base.scores else None
        w = win.scores[i] if win and win.scores else None
        rate = objective.rate_unit
        rows.append([objective.spec, objective.direction, score_cell(b, rate), score_cell(best, rate), _change(b, best, rate),
                     score_cell(w, rate), _change(b, w, rate)])
    return rows


SUMMARY_HEAD = ["objective", "better", "baseline", "best seen", "change", "pinned winner", "change"]


def _scores(history: TuneHistory, evaluation: JournalEntry) -> list[str]:
    """An evaluation's scores, each as its objective shows it."""
    rates = [o.rate_unit for o in history.objectives_of(evaluation)]
    return [score_cell(s, rates[i] if i < len(rates) else "") for i, s in enumerate(evaluation.scores or ())]


def generation_rows(history: TuneHistory) -> list[list[str]]:
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
            row.append(score_cell(upto[-1], objective.rate_unit) if upto else "-")
        run = max(e.run for e in members)  # a generation a resume finished: its time in the run that did
        timed = [e for e in members if e.run == run and not math.isnan(e.elapsed_s)]
        ended = max((e.elapsed_s for e in timed), default=math.nan)
        began = min((e.elapsed_s - e.seconds for e in timed), default=math.nan)
        row.append("-" if math.isnan(ended) else (f"run {run}, " if several_runs else "") + _seconds(ended))
        row.append("-" if math.isnan(ended) else _seconds(max(0.0, ended - began)))
        row += [_seconds(sum(e.timings.get(name, 0.0) for e in members)) for name in TIMING_NAMES]
        rows.append(row)
    return rows


def generation_head(history: TuneHistory) -> list[str]:
    return ["generation", "evaluations", "failed", *(f"best {o.spec}" for o in history.objectives), "ended at",
            "its wall time", *(TIMING_LABELS[name] for name in TIMING_NAMES)]


GENERATION_NOTE = ("Ended at: seconds from the start of its run's first evaluation (the baseline's) to the end of "
                   "its last (a resumed tune is a run of its own, counted from 0 again). Its wall time: from the "
                   "start of its first evaluation to the end of its last. Compiling, benchmarking and waiting for "
                   "a GPU: summed over its evaluations, so candidates built or run side by side (--jobs, several "
                   "GPUs) can add up to more than its wall time; what they leave of it went to neither: the "
                   "search choosing candidates, the journal, and workers idle while the slowest candidate of the "
                   "generation finished.")


def front_rows(history: TuneHistory) -> list[list[str]]:
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


def remeasure_rows(history: TuneHistory) -> list[list[str]]:
    measured = history.remeasure()
    if measured is None:
        return []
    rate = measured.objective.rate_unit if measured.objective is not None else ""
    rows = []
    for side, samples, median, iqr in (("baseline", measured.baseline, measured.baseline_median, measured.baseline_iqr),
                                       ("winner", measured.winner, measured.winner_median, measured.winner_iqr)):
        if rate and median > 0:  # the rates the benchmark printed: the IQR as a share, the lowest rate the longest time
            rows.append([side, str(len(samples)), score_cell(median, rate), f"{iqr / median:.1%}",
                         score_cell(max(samples), rate), score_cell(min(samples), rate)])
        else:
            rows.append([side, str(len(samples)), score_cell(median), score_cell(iqr), score_cell(min(samples)),
                         score_cell(max(samples))])
    return rows


REMEASURE_HEAD = ["side", "samples", "median", "IQR", "min", "max"]


def controls_rows(history: TuneHistory) -> list[list[str]]:
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


def importance_rows(history: TuneHistory) -> list[list[str]]:
    """Per objective and search parameter, the share of the objective's variance it explains, most first."""
    rows = []
    for i, objective in enumerate(history.objectives):
        rows += [[objective.spec, r.parameter, f"{r.explained * 100:.0f}%", str(r.values), str(r.evaluations)]
                 for r in history.importance(i)]
    return rows


IMPORTANCE_HEAD = ["objective", "parameter", "variance explained", "values it took", "scored evaluations"]
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


INTERACTION_HEAD = ["objective", "pair", "variance explained together, beyond each alone", "value pairs it took",
                     "evaluations per value pair"]
INTERACTION_NOTE = ("A pair's share beyond its parameters' own (a two-way ANOVA's interaction: eta squared of the "
                    "evaluations grouped by both values, minus each parameter's): a pair where the best value of "
                    "one depends on the other. With few evaluations per value pair, each pair's mean is one or two "
                    f"scores and the share overstates, so pairs with fewer than {MIN_PER_CELL:g} are left out; a "
                    "search samples unevenly, too: read it as where to look, not as a measurement.")
NO_INTERACTION_NOTE = (f"No pair of search parameters has {MIN_PER_CELL:g} or more evaluations per value pair: too few "
                       "to tell how they move the objectives together (more evaluations, or fewer values, would).")


def interaction_text(history: TuneHistory) -> tuple[list[list[str]], str]:
    """The pairs' rows and the note under them; no rows and a note saying why where no pair stands on enough."""
    rows = _interaction_rows(history)
    return rows, INTERACTION_NOTE if rows else NO_INTERACTION_NOTE


def size_head(history: TuneHistory) -> list[str]:
    return ["#", "", *(f"{spec} @{size}" for spec, sizes in history.sizes().items() for size in sizes), "controls"]


def size_rows(history: TuneHistory) -> list[list[str]]:
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


def time_rows(history: TuneHistory) -> list[list[str]]:
    spent = history.time_spent()
    total = sum(spent.values())
    wall = sum(e.seconds for e in history.evaluations)
    rows = [[TIMING_LABELS[name], _seconds(spent[name]), f"{spent[name] / total * 100:.0f}%" if total else "-"]
            for name in TIMING_NAMES]
    rows.append(["evaluations' wall time (all parts, candidates in parallel counted each)", _seconds(wall), ""])
    return rows


def failure_rows(history: TuneHistory) -> list[list[str]]:
    rows = []
    for cause, count in history.failures.items():
        example = next(e for e in history.evaluations if not e.ok and (e.cause or "error") == cause)
        environmental = " (environmental: run again on resume)" if example.environmental else ""
        rows.append([cause + environmental, str(count), telling_line(example.message)])
    return rows


def telling_line(message: str) -> str:
    """The line of a failure's message that says why, at most 200 characters: its first that names an error
    (nvcc's 'error: identifier "HGEMV_UNROLL" is undefined', which ninja's 'build stopped: subcommand failed.'
    follows at the end), else its last."""
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()]
    said = next((line for line in lines if _ERROR_LINE.search(line)), lines[-1] if lines else "")
    return said[:200]


# A compiler's, linker's or loader's error line: 'error:', 'error while loading', 'error #20', 'fatal error'.
_ERROR_LINE = re.compile(r"\berror\b(?!s? detected)", re.IGNORECASE)


def evaluation_rows(history: TuneHistory) -> list[list[str]]:
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


def evaluation_head(history: TuneHistory) -> list[str]:
    return ["#", "gen", "outcome", *(o.spec for o in history.objectives), "compile", "benchmark", "wait", "worker",
            "controls"]


def fact_rows(history: TuneHistory) -> list[tuple[str, str]]:
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
