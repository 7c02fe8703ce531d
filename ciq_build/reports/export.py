"""`export`: one row per journaled evaluation, as CSV or JSON, for pandas, a spreadsheet or a notebook.

A row holds what determined the evaluation (its search parameters and the
controls they became), what it measured (the objectives' scores and every
metric), why it failed, and where its time went. CSV columns are flat and
named: the search parameters by their own names (``knob.*``, ``param.*``),
then ``score.*``, ``metric.*`` and ``timing.*``; JSON keeps the
same row as nested objects. A journal holds one search per header (a tune
whose objectives or other settings changed): each row says which
(``search``), and its scores are named by that search's objectives, so the
columns of two searches with other objectives are apart, never mislabelled. Missing values are empty in CSV and null in JSON.

CSV is opened in spreadsheets, which run a cell starting ``=``, ``+``, ``-``
or ``@`` (tab and CR too, and their full-width forms) as a formula: every
pinned flag starts with ``-`` and showed as ``#NAME?``, and a journal anyone
edited could hold ``=HYPERLINK(...)``. So a text cell starting with one of
those, or with ``'`` itself, gets a single ``'`` in front (the OWASP
convention: a spreadsheet shows the text, and dropping one leading ``'``
from any text cell gives the value back); numbers are written as numbers.
JSON holds every value exactly, for pandas and notebooks.
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path
from typing import Any

from ciq_build.errors import ConfigError
from ciq_build.reports.history import JournalEntry, TuneHistory, load_history
from ciq_build.search.evaluation import TIMING_NAMES


def export(target: str, build_dir: Path, source_dir: Path | None, *, csv_file: str | None = None,
           json_file: str | None = None, search: int | None = None, optuna_file: str | None = None,
           kernel_tuner_file: str | None = None, architecture: str | None = None) -> str:
    """Write `target`'s evaluations to `csv_file` or `json_file` ("-": stdout), or one search's to an Optuna
    journal storage or a Kernel Tuner cache file (ciq_build.reports.interop); returns what to print after.

    Every journaled evaluation, each scored in the objectives of the search that journaled it (its
    ``search`` column); `search` keeps one search's only; `architecture`: which tune's journal (as report's).
    """
    given = [f for f in (csv_file, json_file, optuna_file, kernel_tuner_file) if f is not None]
    if len(given) != 1:
        raise ConfigError("export writes one format: give --csv FILE, --json FILE, --optuna FILE or "
                          "--kernel-tuner FILE")
    if optuna_file is not None or kernel_tuner_file is not None:
        from ciq_build.reports.interop import kernel_tuner_cache, write_optuna_journal

        shown = load_history(target, build_dir, source_dir, search=search, command="export",
                             architecture=architecture)
        if optuna_file is not None:
            count = write_optuna_journal(shown, Path(optuna_file))
            return (f"ciq_build: wrote {count} trial(s) of {target} (search {shown.search}) to {optuna_file}, "
                    f"an Optuna journal storage: optuna-dashboard {optuna_file}\n")
        assert kernel_tuner_file is not None
        return write_text(kernel_tuner_cache(shown), kernel_tuner_file, f"the Kernel Tuner cache of {target}")
    history = load_history(target, build_dir, source_dir, search=search, every_search=True, command="export",
                           architecture=architecture)
    note = ""
    if search is not None:
        history.evaluations = [e for e in history.evaluations if e.search == search]
        if not history.evaluations:  # a tune that took every evaluation from the journal adds none of its own
            seen = load_history(target, build_dir, source_dir, search=search, command="export",
                                architecture=architecture).evaluations
            earlier = sorted({e.search for e in seen if e.search != search})
            if earlier:
                note = (f": search {search} journaled none of its own: it took its {len(seen)} from earlier "
                        f"searches' entries (--search {' or '.join(map(str, earlier))}; without --search, every "
                        "search's rows)")
    text, destination = (to_csv(history), csv_file) if csv_file is not None else (to_json(history), json_file)
    assert destination is not None
    said = write_text(text, destination, f"{len(history.evaluations)} evaluation(s) of {target}")
    return said.rstrip("\n") + note + "\n" if note and destination != "-" else said  # stdout is the rows alone


def write_text(text: str, destination: str, what: str) -> str:
    """Write `text` to the file `destination`, or return it for stdout when that is "-"; else a line saying where."""
    if destination == "-":
        return text
    path = Path(destination)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror or exc}; choose another file") from exc
    return f"ciq_build: wrote {what} to {path}\n"


def evaluation_row(history: TuneHistory, evaluation: JournalEntry) -> dict[str, Any]:
    """One evaluation as the nested JSON row."""
    objectives = history.objectives_of(evaluation)
    scores = evaluation.scores or (None,) * len(objectives)
    return {
        "index": evaluation.index,
        "search": evaluation.search,
        "generation": evaluation.generation,
        "key": evaluation.key,
        "baseline": evaluation.is_baseline,
        "ok": evaluation.ok,
        "cause": evaluation.cause,
        "environmental": evaluation.environmental,
        "params": evaluation.params,
        "controls": {"flags": list(evaluation.flags), "defines": evaluation.defines, "acf": evaluation.acf},
        "scores": {o.spec: _finite_or_none(s) for o, s in zip(objectives, scores)},
        "metrics": {name: _finite_or_none(v) for name, v in sorted(evaluation.metrics.items())},
        "timings": {name: evaluation.timings.get(name) for name in TIMING_NAMES},
        "seconds": evaluation.seconds,
        "finished": evaluation.finished,
        "worker": evaluation.worker,
        "runs": evaluation.runs,
        "raced": evaluation.raced,
        "same_code_as": evaluation.same_code_as,
        "message": evaluation.message,
    }


def to_json(history: TuneHistory) -> str:
    document = {
        "target": history.target,
        "journal": str(history.journal_path),
        "objectives": [{"name": o.name, "direction": o.direction} for o in history.objectives],
        "searches": [{"search": s.number, "objectives": [{"name": o.name, "direction": o.direction}
                                                         for o in s.objectives]} for s in history.searches],
        "evaluations": [evaluation_row(history, e) for e in history.evaluations],
    }
    # Strict JSON, which every reader takes: a NaN or an infinity (a failed score, an edited journal) is null.
    return json.dumps(_strict(document), indent=2, allow_nan=False) + "\n"


def to_csv(history: TuneHistory) -> str:
    rows = [_flat(evaluation_row(history, e)) for e in history.evaluations]
    fixed = ["index", "search", "generation", "key", "baseline", "ok", "cause", "environmental", "flags", "defines", "acf"]
    tail = ["seconds", "finished", "worker", "runs", "raced", "same_code_as", "message"]
    varying = sorted({column for row in rows for column in row} - set(fixed) - set(tail), key=_column_order)
    columns = fixed + varying + tail
    out = io.StringIO()
    # The csv module's own \r\n line ends (RFC 4180): only then does it quote a field holding a lone \r.
    writer = csv.writer(out)
    writer.writerow([as_text_cell(column) for column in columns])
    for row in rows:
        writer.writerow([_cell(row.get(column, "")) for column in columns])
    return out.getvalue()


# What makes a spreadsheet read a cell as a formula (OWASP's list, with the full-width forms some
# spreadsheets also take), and the quote that marks a cell as text (quoted too, so one always comes off).
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20", "'")


def as_text_cell(text: str) -> str:
    """`text` as a CSV cell no spreadsheet runs: a leading ' where it starts like a formula (or with ')."""
    return "'" + text if text.startswith(_FORMULA_STARTS) else text


def _cell(value: Any) -> Any:
    return as_text_cell(value) if isinstance(value, str) else value


def _flat(row: dict[str, Any]) -> dict[str, Any]:
    controls = row.pop("controls")
    flat: dict[str, Any] = {key: value for key, value in row.items() if not isinstance(value, dict)}
    flat["flags"] = " ".join(controls["flags"])
    flat["defines"] = " ".join(f"{k}={v}" for k, v in sorted(controls["defines"].items()))
    flat["acf"] = controls["acf"] or ""
    # Search parameters are namespaced already (knob.*, param.*, acf.*): their own names are the columns.
    flat.update(row["params"])
    for prefix, key in (("score", "scores"), ("metric", "metrics"), ("timing", "timings")):
        for name, value in row[key].items():
            flat[f"{prefix}.{name}"] = value
    return {key: "" if value is None else value for key, value in flat.items()}


def _column_order(column: str) -> tuple[int, str]:
    """Search parameters first, then scores, metrics and timings, each sorted by name."""
    prefixes = ("score.", "metric.", "timing.")
    return next((i + 1 for i, p in enumerate(prefixes) if column.startswith(p)), 0), column


def _finite_or_none(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _strict(value: Any) -> Any:
    """`value` with every non-finite float replaced by None, at any depth."""
    if isinstance(value, float):
        return _finite_or_none(value)
    if isinstance(value, dict):
        return {key: _strict(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_strict(item) for item in value]
    return value
