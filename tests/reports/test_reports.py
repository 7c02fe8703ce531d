"""`report` and `export` on the journal and record of a real tune.

The tune is real (CMake, Ninja, nvcc, processes) on tests/projects/transient's
`timer`, a TEST DOUBLE for a GPU benchmark: its "time" is computed on the host
from X (best at X == 1), and MODE=1 is SIGKILLed the way the OOM killer does
it, so the journal holds failures. Objectives time and registers: a Pareto
pair, and a timed winner that is re-measured against the baseline before it
is pinned. The HTML page is opened in a real headless Chromium (Playwright),
skipped where neither Playwright nor a Chromium is installed (scripts/bootstrap
installs both where it can).
"""

from __future__ import annotations

import csv
import html
import io
import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ciq_build.compiler.controls import Controls
from ciq_build.core.pareto import dominates
from ciq_build.pin.read import read_record
from ciq_build.pin.record import PinnedRecord, RecordObjective, RecordToolchain
from ciq_build.reports import page as report_page
from ciq_build.reports import plots as report_plots
from ciq_build.reports import tables as report_tables
from ciq_build.reports.export import export, to_csv, to_json
from ciq_build.reports.history import load_history
from ciq_build.state.live import read_live_status
from support import REPO_ROOT

PROJECT = REPO_ROOT / "tests" / "projects" / "transient"


def _ciq(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ciq_build", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=600, env={**os.environ, **(env or {})})


@pytest.fixture(scope="module")
def tuned(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A finished, pinned tune of `timer`: its source and build trees, and the journal's evaluation lines."""
    root = tmp_path_factory.mktemp("report")
    source = root / "transient src"
    shutil.copytree(PROJECT, source)
    build = root / "build"
    # Two generations of 4 (each candidate a compile; 6 a generation cost 4 more): with the default seed,
    # 8 candidates, 3 of them MODE=1 (killed) and a winner X=2, so the tests below still have failures,
    # a remeasured winner and two generations to check (a search that tries no MODE=1 fails them). Runs of
    # 20 ms (TIMER_SLEEP_MS; the default 100 ms slept ~3 s of ~40 runs): the times are computed from X.
    tune = _ciq("tune", "timer", "-S", str(source), "-B", str(build), "--objective", "time",
                "--objective", "registers", "--generations", "2", "--pool-size", "4", "--repeats", "3",
                "--cmake-arg=-DTIMER_PARAMS=MODE=choice(0,1);X=range(0,6)", cwd=source,
                env={"TIMER_SLEEP_MS": "20"})
    assert tune.returncode == 0, tune.stdout + tune.stderr
    assert "pinned:" in tune.stdout, tune.stdout
    journal = build / "ciq" / "journal" / "timer.jsonl"
    lines = [json.loads(line) for line in journal.read_text().splitlines() if line.strip()]
    return {"source": source, "build": build, "root": root,
            "journal": [r for r in lines if r.get("kind") == "evaluation"],
            "record": read_record(source / "ciq" / "timer.json")}


slow = pytest.mark.slow


@slow
def test_the_history_holds_every_evaluation_the_baseline_and_the_pinned_winner(tuned: dict) -> None:
    history = load_history("timer", tuned["build"], tuned["source"])
    journal = tuned["journal"]
    assert len(history.evaluations) == len({r["key"] for r in journal})
    assert [o.spec for o in history.objectives] == ["time", "registers"]
    baseline = history.baseline
    assert baseline is not None and baseline.index == 0 and baseline.scores == (1.5, 8.0)  # X defaults to 3
    winner = history.winner
    assert winner is not None
    # The pin keeps what matters of the winner's controls (a minimal pin: ciq_build.tune.minimize).
    assert dict(tuned["record"].controls.defines).items() <= winner.defines.items()
    assert winner.scores is not None and winner.scores[0] < baseline.scores[0]
    # Failures by cause: every MODE=1 candidate was killed, and only those.
    killed = {r["key"] for r in journal if r["controls"]["defines"].get("MODE") == "1"}
    assert killed, "the search never tried MODE=1; pick another seed"
    assert history.failures == {"bench_killed": len(killed)}
    assert {e.key for e in history.evaluations if not e.ok} == killed


@slow
def test_best_so_far_and_wall_time_follow_the_order_evaluations_finished(tuned: dict) -> None:
    history = load_history("timer", tuned["build"], tuned["source"])
    series = history.best_so_far(0)
    bests = [best for _, best in series]
    assert bests == sorted(bests, reverse=True)  # time is minimised: never gets worse
    assert bests[-1] == min(e.scores[0] for e in history.scored)
    assert bests[0] == 1.5  # the baseline comes first
    elapsed = [e.elapsed_s for e in history.evaluations]
    assert all(math.isfinite(t) and t > 0 for t in elapsed)
    assert elapsed == sorted(elapsed)
    assert history.generations == [0, 1]


@slow
def test_the_pareto_front_contains_the_winner_and_nothing_on_it_is_dominated(tuned: dict) -> None:
    history = load_history("timer", tuned["build"], tuned["source"])
    front = history.pareto_front()
    assert history.winner in front
    directions = [o.direction for o in history.objectives]
    for point in front:
        assert not any(dominates(other.scores, point.scores, directions) for other in history.scored)
    for other in history.scored:
        if other not in front:
            assert any(dominates(p.scores, other.scores, directions) for p in front)


@slow
def test_time_spent_and_the_remeasure_come_from_the_journal_and_the_record(tuned: dict) -> None:
    history = load_history("timer", tuned["build"], tuned["source"])
    spent = history.time_spent()
    for name in ("compile_s", "benchmark_s", "wait_s"):
        assert spent[name] == pytest.approx(sum(r["timings"].get(name, 0.0) for r in tuned["journal"]))
    assert spent["compile_s"] > 0 and spent["benchmark_s"] >= 0.016 * len(history.scored)  # the double sleeps 20 ms
    measured = history.remeasure()
    assert measured is not None and measured.metric == "time_ms"
    samples = tuned["record"].provenance["remeasured"]
    assert list(measured.baseline) == samples["baseline"] and list(measured.winner) == samples["winner"]
    assert measured.baseline_median == 1.5 and measured.winner_median == history.winner.scores[0]
    assert measured.p_value < 0.05
    assert f"p={measured.p_value:.3g}" in samples["verdict"]  # the same test as the tune's verdict


@slow
def test_csv_export_has_one_row_per_evaluation_and_reads_back(tuned: dict) -> None:
    out = tuned["root"] / "evaluations.csv"
    done = _ciq("export", "timer", "-B", str(tuned["build"]), "--csv", str(out), cwd=tuned["root"])
    assert done.returncode == 0, done.stderr
    assert str(out) in done.stdout
    history = load_history("timer", tuned["build"])
    assert out.read_bytes().decode() == to_csv(history)
    rows = list(csv.DictReader(io.StringIO(out.read_bytes().decode(), newline="")))
    assert len(rows) == len(history.evaluations)
    for row, evaluation in zip(rows, history.evaluations):
        assert row["key"] == evaluation.key and row["ok"] == str(evaluation.ok)
        assert row["cause"] == (evaluation.cause or "")
        assert float(row["timing.compile_s"]) == evaluation.timings["compile_s"]
        assert row["defines"] == " ".join(f"{k}={v}" for k, v in sorted(evaluation.defines.items()))
        if evaluation.ok:
            assert (float(row["score.time"]), float(row["score.registers"])) == evaluation.scores
            assert float(row["metric.time_ms"]) == evaluation.metrics["time_ms"]
        else:
            assert row["score.time"] == "" and row["cause"] == "bench_killed"
        if "param.X" in evaluation.params:
            assert row["param.X"] == str(evaluation.params["param.X"])


@slow
def test_json_export_to_stdout_reads_back_as_the_journal_says(tuned: dict) -> None:
    done = _ciq("export", "timer", "-B", str(tuned["build"]), "--json", "-", cwd=tuned["root"])
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document == json.loads(to_json(load_history("timer", tuned["build"])))
    assert document["objectives"] == [{"name": "time", "direction": "min"}, {"name": "registers", "direction": "min"}]
    by_key = {r["key"]: r for r in tuned["journal"]}  # the last line of a key wins
    assert len(document["evaluations"]) == len(by_key)
    for row in document["evaluations"]:
        journaled = by_key[row["key"]]
        assert row["params"] == journaled["params"]
        assert row["controls"]["flags"] == journaled["controls"]["flags"]
        assert row["controls"]["defines"] == journaled["controls"]["defines"]
        assert row["timings"] == {k: journaled["timings"].get(k) for k in ("compile_s", "benchmark_s", "wait_s")}
        if journaled["ok"]:
            assert list(row["scores"].values()) == journaled["scores"]
        else:
            assert row["scores"] == {"time": None, "registers": None} and row["cause"] == journaled["cause"]


@slow
def test_the_markdown_report_states_the_result_failures_front_remeasure_controls_and_time(tuned: dict) -> None:
    done = _ciq("report", "timer", "-B", str(tuned["build"]), "-S", str(tuned["source"]), "--format", "markdown",
                cwd=tuned["root"])
    assert done.returncode == 0, done.stderr
    text = done.stdout
    history = load_history("timer", tuned["build"], tuned["source"])
    winner = history.winner
    assert winner is not None and winner.scores is not None
    change = f"{(winner.scores[0] - 1.5) / 1.5 * 100:+.1f}%"
    assert f"| time | min | 1.5 | {winner.scores[0]:.6g} | {change} | {winner.scores[0]:.6g} | {change} |" in text
    assert "| registers | min | 8 | 8 | same | 8 | same |" in text
    assert f"| bench_killed (environmental: run again on resume) | {history.failures['bench_killed']} |" in text
    assert "## Pareto front: time and registers" in text and "pinned" in text
    assert f"p = {history.remeasure().p_value:.3g}" in text
    for name, value in tuned["record"].controls.defines:
        assert f"| define | -D{name}={value} |" in text
    assert "| compiling |" in text and "| benchmarking |" in text and "| waiting for a GPU |" in text
    assert "<" not in text  # no HTML in the CI variant


@slow
def test_the_html_report_is_written_under_the_build_tree_with_every_plot_embedded(tuned: dict) -> None:
    done = _ciq("report", "timer", "-B", str(tuned["build"]), "-S", str(tuned["source"]), cwd=tuned["root"])
    assert done.returncode == 0, done.stderr
    page = tuned["build"] / "ciq" / "report" / "timer.html"
    assert str(page) in done.stdout
    text = page.read_text()
    for section in ("convergence", "candidates", "pareto", "importance", "parallel", "remeasure", "time"):
        assert f'id="plot-{section}"' in text
    assert "http://" not in text and "https://" not in text  # opens offline


@slow
def test_without_matplotlib_the_page_has_the_tables_and_says_how_to_get_plots(
        tuned: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` now raises ImportError
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    text = report_page.render_html(load_history("timer", tuned["build"], tuned["source"]))
    assert "<img" not in text
    assert 'pip install &quot;ciq-build[report]&quot;' in text
    assert "<h2>Result</h2>" in text and "bench_killed" in text and "Mann-Whitney" in text


def _chromium(playwright: object) -> object:
    """A launched headless Chromium: $CIQ_CHROMIUM, Playwright's own, or Debian's; skips when there is none."""
    installed = [shutil.which(name) for name in ("chromium-headless-shell", "chromium")]
    candidates = [os.environ.get("CIQ_CHROMIUM") or None, None, *(path for path in installed if path)]
    tried = []
    for executable in dict.fromkeys(candidates):  # None: the browser Playwright downloads itself
        try:
            return playwright.chromium.launch(executable_path=executable, headless=True)  # type: ignore[attr-defined]
        except Exception as error:  # Playwright raises its own Error when a browser is missing or will not start
            name = executable or "Playwright's own"
            tried.append(f"{name}: {str(error).splitlines()[0]}")
    pytest.skip("no headless Chromium to open the report in (scripts/bootstrap installs Debian's "
                "chromium-headless-shell); tried " + "; ".join(tried))


@slow
def test_the_html_report_opens_offline_in_a_real_browser_with_every_plot_and_no_console_error(tuned: dict) -> None:
    sync_api = pytest.importorskip("playwright.sync_api", reason="needs playwright (the [test] extra)")
    page_file = tuned["root"] / "report.html"
    done = _ciq("report", "timer", "-B", str(tuned["build"]), "-S", str(tuned["source"]), "-o", str(page_file),
                cwd=tuned["root"])
    assert done.returncode == 0, done.stderr
    with sync_api.sync_playwright() as playwright:
        browser = _chromium(playwright)
        try:
            page = browser.new_page()  # type: ignore[attr-defined]
            problems: list[str] = []
            page.on("console", lambda message: problems.append(f"console {message.type}: {message.text}")
                    if message.type in ("error", "warning") else None)
            page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
            requested: list[str] = []
            page.on("request", lambda request: requested.append(request.url))
            page.goto(page_file.as_uri(), wait_until="load")
            plots = page.evaluate("""[...document.querySelectorAll('img.plot')].map(
                image => ({id: image.id, complete: image.complete, width: image.naturalWidth,
                           height: image.naturalHeight}))""")
            headings = page.evaluate("[...document.querySelectorAll('h2')].map(h => h.textContent)")
            cells = page.evaluate("[...document.querySelectorAll('td')].map(td => td.textContent)")
        finally:
            browser.close()  # type: ignore[attr-defined]
    assert [p["id"] for p in plots] == ["plot-convergence", "plot-candidates", "plot-pareto", "plot-importance",
                                        "plot-parallel", "plot-remeasure", "plot-time"]
    for plot in plots:  # decoded by the browser: a broken PNG has no natural size
        assert plot["complete"] and plot["width"] > 300 and plot["height"] > 200, plot
    assert problems == []
    assert all(url.startswith(("file:", "data:")) for url in requested), requested  # nothing from the network
    assert "The winner re-measured against the baseline" in headings and "Where the time went" in headings
    assert "Which controls moved the objectives" in headings
    assert "bench_killed (environmental: run again on resume)" in cells


def test_report_and_export_before_any_tune_say_to_tune_first(tmp_path: Path) -> None:
    for command in (["report", "kern"], ["export", "kern", "--csv", "-"]):
        done = _ciq(*command, "-B", str(tmp_path / "build"), cwd=tmp_path)
        assert done.returncode != 0
        assert f"no tune of kern to {command[0]}" in done.stderr and "python -m ciq_build tune kern" in done.stderr
        assert "Traceback" not in done.stderr


@slow
def test_export_of_a_configured_target_never_tuned_says_export(tuned: dict) -> None:
    # kern is registered in the tuned tree (whose manifest names its record file) and was never tuned there:
    # each command names itself, in the reason and in what to run.
    for command in (["export", "kern", "--csv", "-"], ["export", "kern", "--json", "-"], ["report", "kern"]):
        done = _ciq(*command, "-B", str(tuned["build"]), cwd=tuned["root"])
        assert done.returncode != 0 and done.stdout == ""
        said = done.stderr.strip()
        assert "\n" not in said and "Traceback" not in said, said
        assert f"no tune of kern to {command[0]}" in said and f"(the {command[0]} reads what it journals)" in said
        words = said.replace(str(tuned["root"]), "<root>")  # the fixture's folder is named report<N>
        assert ("report" in words) == (command[0] == "report"), said


def test_text_from_an_edited_journal_is_escaped_in_the_page(tmp_path: Path) -> None:
    journal = tmp_path / "build" / "ciq" / "journal" / "kern.jsonl"
    journal.parent.mkdir(parents=True)
    lines = [
        {"kind": "header", "objectives": ["registers"]},
        {"kind": "evaluation", "key": "a", "generation": 0, "ok": True, "scores": [10.0], "controls": {},
         "timings": {"compile_s": 1.0}, "seconds": 1.0, "time": "2026-01-01T00:00:01+0000"},
        {"kind": "evaluation", "key": "b", "generation": 0, "ok": False, "cause": "<script>alert(1)</script>",
         "message": "<img src=x onerror=alert(2)> [a link](javascript:alert(3)) | `code`", "controls": {"flags": ["<b>"]},
         "timings": {}, "seconds": 1.0,
         "time": "2026-01-01T00:00:02+0000"},
    ]
    journal.write_text("".join(json.dumps(line) + "\n" for line in lines))
    history = load_history("kern", tmp_path / "build")
    page = report_page.render_html(history)
    assert "<script>" not in page and "<img src=x" not in page and "<b>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    markdown = report_page.render_markdown(history)
    # A job summary renders Markdown's HTML: a journal's text is shown, never rendered.
    assert "<script>" not in markdown and "<img src=x" not in markdown and "<b>" not in markdown
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in markdown
    assert "\\[a link\\](javascript:alert(3)) \\| \\`code\\`" in markdown


@slow
def test_a_record_pinned_by_another_tune_is_reported_as_such(tuned: dict, tmp_path: Path) -> None:
    other = tmp_path / "ciq" / "timer.json"
    other.parent.mkdir()
    text = (tuned["source"] / "ciq" / "timer.json").read_text()
    other.write_text(text.replace('"X": "', '"X": "9'))  # controls no evaluation of this journal had
    history = load_history("timer", tuned["build"], pin_file=other)
    assert history.record is not None and history.winner is None
    assert "another tune pinned it" in report_page.render_markdown(history)


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=12,
)
_FIELDS = ["key", "generation", "ok", "cause", "message", "scores", "metrics", "params", "controls", "timings",
           "seconds", "time", "environmental"]


_controls = st.dictionaries(st.sampled_from(["flags", "defines", "acf"]),
                            _json_values | st.lists(st.text(max_size=6)) | st.fixed_dictionaries({"file": _json_values}))
_record = st.dictionaries(st.sampled_from(_FIELDS), _json_values, max_size=8).flatmap(
    lambda r: st.builds(lambda c, s: {**r, "controls": c, "scores": s}, _controls,
                        st.lists(_json_values | st.floats(), max_size=3)))
_objectives = st.lists(st.sampled_from(["time", "registers", "max:metric:x", "bogus", ""]), max_size=3) | _json_values


def _edited_history(tmp_path: Path, records: list[dict], objectives: object):
    journal = tmp_path / "build" / "ciq" / "journal" / "kern.jsonl"
    journal.parent.mkdir(parents=True, exist_ok=True)
    lines = [{"kind": "header", "objectives": objectives}] + [{**r, "kind": "evaluation"} for r in records]
    journal.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return load_history("kern", tmp_path / "build")


_EDITED = settings(deadline=None, database=None,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def test_export_and_the_page_say_where_each_evaluation_ran_and_how_it_was_cut(tmp_path: Path) -> None:
    records = [
        {"key": "a", "generation": 0, "ok": True, "scores": [1.0], "controls": {}, "runs": 5},
        {"key": "b", "generation": 1, "ok": True, "scores": [1.4], "controls": {"flags": ["-Xptxas=-O1"]},
         "runs": 1, "raced": True, "worker": "ray-1@node7:4242"},
        {"key": "c", "generation": 1, "ok": True, "scores": [1.0], "controls": {"flags": ["-Xptxas=-O3"]},
         "same_code_as": "a", "worker": "ray-0@node7:4241"},
    ]
    history = _edited_history(tmp_path, records, ["time"])
    rows = {row["key"]: row for row in csv.DictReader(io.StringIO(to_csv(history), newline=""))}
    assert rows["b"]["worker"] == "ray-1@node7:4242" and rows["b"]["raced"] == "True" and rows["b"]["runs"] == "1"
    assert rows["c"]["same_code_as"] == "a" and rows["a"]["worker"] == ""
    text = report_page.render_html(history)  # its table of every evaluation
    assert "raced out after 1 run(s)" in text and "same code as a" in text and "ray-1@node7:4242" in text


def test_csv_cells_a_spreadsheet_would_run_as_formulas_are_text_behind_one_quote(tmp_path: Path) -> None:
    # Every pinned flag starts with '-': spreadsheets showed them as #NAME?, and '=HYPERLINK(...)' from an
    # edited journal would run. A text cell starting = + - @ tab CR (or ' itself, so that dropping one leading
    # ' always gives the value back) gets a ' in front; numbers stay numbers.
    hostile = {"=1+1": "=cmd|' /C calc'!A0", "+2": "+2", "@SUM(A1)": "@SUM(A1)", "\tx": "\tx", "\rx": "\rx",
               "'q": "'q", "\uff1dx": "\uff1d1+1", "ok": "plain"}
    records = [{"key": "=k", "generation": 0, "ok": True, "scores": [-3.5], "metrics": {"delta": -2},
                "controls": {"flags": ["-Xptxas=-O1", "--use_fast_math"], "defines": {"X": "-1"}},
                "params": {f"param.{name}": value for name, value in hostile.items()}, "message": "-oops"}]
    text = to_csv(_edited_history(tmp_path, records, ["time"]))
    rows = list(csv.reader(io.StringIO(text, newline="")))
    header, row = rows[0], rows[1]
    cells = dict(zip(header, row))
    assert cells["flags"] == "'-Xptxas=-O1 --use_fast_math" and cells["message"] == "'-oops"
    assert cells["key"] == "'=k" and cells["defines"] == "X=-1"
    assert cells["score.time"] == "-3.5" and cells["metric.delta"] == "-2.0"  # numbers, not text
    for name, value in hostile.items():
        column = f"param.{name}"
        shown = next(h for h in header if h.lstrip("'") == column)
        assert cells[shown] == (value if value == "plain" else "'" + value), name
    text_cells = [cell for r in rows for cell in r if cell and cell not in ("-3.5", "-2.0")]
    assert all(cell[0] not in "=+-@\t\r\uff1d\uff0b\uff0d\uff20" for cell in text_cells)


@pytest.mark.parametrize("generation", [math.nan, math.inf, -math.inf])
def test_a_journal_whose_generation_is_not_a_finite_number_still_reports(tmp_path: Path, generation: float) -> None:
    # json writes NaN and Infinity and reads them back; the report crashed on int() of them (found by the test below)
    history = _edited_history(tmp_path, [{"key": "k", "ok": True, "generation": generation, "scores": [1.0],
                                          "controls": {}}], ["time"])
    assert [e.generation for e in history.evaluations] == [0]


@settings(_EDITED, max_examples=200)
@given(records=st.lists(_record, min_size=1, max_size=4), objectives=_objectives)
@pytest.mark.slow
def test_any_journal_anyone_could_have_edited_reports_and_exports_or_says_why_not(
        tmp_path: Path, records: list[dict], objectives: object) -> None:
    history = _edited_history(tmp_path, records, objectives)
    assert 1 <= len(history.evaluations) <= len(records)  # one per key: a key journaled again replaces its line
    report_page.render_markdown(history)
    json.loads(to_json(history))  # strict JSON: no NaN even when the journal had one
    assert len(list(csv.DictReader(io.StringIO(to_csv(history), newline="")))) == len(history.evaluations)


@settings(_EDITED, max_examples=20)  # each example draws five plots: a second or so
@given(records=st.lists(_record, min_size=1, max_size=4), objectives=_objectives)
@pytest.mark.slow
def test_any_edited_journal_gives_a_page_with_plots(tmp_path: Path, records: list[dict], objectives: object) -> None:
    pytest.importorskip("matplotlib")
    page = report_page.render_html(_edited_history(tmp_path, records, objectives))
    assert 'id="plot-time"' in page


@pytest.mark.slow
def test_a_plot_that_fails_or_warns_leaves_no_figure_open(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # pyplot keeps every figure until it is closed: one left by a failed plot stayed for the life of the
    # process, and after 20 of them matplotlib's own warning failed every later report.
    pyplot = pytest.importorskip("matplotlib.pyplot")
    history = _edited_history(tmp_path, [{"key": "a", "generation": 0, "ok": True, "scores": [1.0],
                                          "controls": {}}], ["time"])
    open_before = set(pyplot.get_fignums())

    def warning_plot(pyplot_: object, history_: object) -> object:
        figure, ax = pyplot.subplots()
        ax.set_xlim(1.0, 1.0)  # matplotlib warns about identical limits: not the reader's concern
        import warnings
        warnings.warn("a remark of matplotlib's", UserWarning, stacklevel=1)
        return figure

    monkeypatch.setattr(report_plots, "plot_time", warning_plot)
    assert 'id="plot-time"' in report_page.render_html(history)
    assert set(pyplot.get_fignums()) == open_before

    def failing_plot(pyplot_: object, history_: object) -> object:
        pyplot.subplots()
        raise ValueError("a plot that failed")

    monkeypatch.setattr(report_plots, "plot_time", failing_plot)
    with pytest.raises(ValueError, match="a plot that failed"):
        report_page.render_html(history)
    assert set(pyplot.get_fignums()) == open_before


def test_a_journal_that_names_no_objective_still_gives_a_page(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    # Found by the fuzz test above: scores drawn per objective, with none named, asked for 0 rows of plots.
    history = _edited_history(tmp_path, [{"key": "a", "generation": 0, "ok": True, "scores": [], "controls": {}}], [])
    page = report_page.render_html(history)
    assert 'id="plot-time"' in page and 'id="plot-convergence"' not in page


@pytest.mark.slow
def test_report_and_export_of_a_copied_build_dir_read_the_copys_own_journal(tmp_path: Path) -> None:
    # The copy's manifest still names the original build dir (absolute paths): report and export read
    # the original's journal through it, and the report's page was written into the original.
    from test_manifest import valid_manifest, write_manifest

    original, copy = tmp_path / "build", tmp_path / "build copy"
    for build, keys in ((original, ["orig-a", "orig-b", "orig-c"]), (copy, ["copy-a"])):
        write_manifest(build, valid_manifest(original, "kern"), "kern")  # both say binary_dir = original
        journal = build / "ciq" / "journal" / "kern.jsonl"
        journal.parent.mkdir(parents=True, exist_ok=True)
        lines = [{"kind": "header", "objectives": ["time"]}] + [
            {"kind": "evaluation", "key": key, "ok": True, "scores": [1.0], "controls": {}} for key in keys]
        journal.write_text("".join(json.dumps(line) + "\n" for line in lines))
    history = load_history("kern", copy)
    assert [e.key for e in history.evaluations] == ["copy-a"] and history.journal_path.is_relative_to(copy)
    exported = json.loads(_ciq("export", "kern", "-B", str(copy), "--json", "-", cwd=tmp_path).stdout)
    assert [e["key"] for e in exported["evaluations"]] == ["copy-a"]
    done = _ciq("report", "kern", "-B", str(copy), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (copy / "ciq" / "report" / "kern.html").is_file() and not (original / "ciq" / "report").exists()


# -- two searches with other objectives, a pin replaced, the journal gone, a report watched -------------


@pytest.fixture(scope="module")
def retuned(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """`timer` tuned for (time, registers), then again, in the same build tree, for (registers, time).

    The second tune replaces the first one's pin (--force: a pin tuned for other objectives is not replaced unasked).
    Runs are short (TIMER_SLEEP_MS=5); nothing else is cut.
    """
    root = tmp_path_factory.mktemp("retune")
    source = root / "src"
    shutil.copytree(PROJECT, source)
    build = root / "build"
    env = {**os.environ, "TIMER_SLEEP_MS": "5"}
    common = ["-S", str(source), "-B", str(build), "--repeats", "3", "--pool-size", "4",
              "--cmake-arg=-DTIMER_PARAMS=X=range(0,6)"]
    tunes: list[subprocess.CompletedProcess[str]] = []
    for objectives, generations in ((["time", "registers"], "2"), (["registers", "time"], "1")):
        done = subprocess.run([sys.executable, "-m", "ciq_build", "tune", "timer", *common, "--generations",
                               generations, "--seed", str(len(tunes) + 1), *(["--force"] if tunes else []),
                               *(a for o in objectives for a in ("--objective", o))],
                              capture_output=True, text=True, cwd=source, timeout=900, env=env)
        assert done.returncode == 0 and "pinned:" in done.stdout, done.stdout + done.stderr
        tunes.append(done)
    journal = build / "ciq" / "journal" / "timer.jsonl"
    lines = [json.loads(line) for line in journal.read_text().splitlines() if line.strip()]
    return {"source": source, "build": build, "root": root, "tunes": tunes, "lines": lines}


def _searches_of(lines: list[dict]) -> list[tuple[list[str], list[dict]]]:
    """The journal's searches as the test reads them: (a header's objectives, the evaluation lines after it)."""
    searches: list[tuple[list[str], list[dict]]] = []
    for line in lines:
        if line.get("kind") == "header":
            searches.append((line["objectives"], []))
        elif line.get("kind") == "evaluation":
            searches[-1][1].append(line)
    return searches


@slow
def test_each_search_is_reported_in_its_own_objectives(retuned: dict) -> None:
    searches = _searches_of(retuned["lines"])
    assert [objectives for objectives, _ in searches] == [["time", "registers"], ["registers", "time"]]
    keys = {"time": "time_ms", "registers": "registers"}
    latest = load_history("timer", retuned["build"], retuned["source"])
    assert latest.search == 2 and [o.spec for o in latest.objectives] == ["registers", "time"]
    older = load_history("timer", retuned["build"], retuned["source"], search=1)
    assert [o.spec for o in older.objectives] == ["time", "registers"]
    for history in (latest, older):
        assert history.scored and history.baseline is not None
        for e in history.scored:  # every score is its own objective's metric, whichever search journaled it
            assert e.scores == tuple(e.metrics[keys[o.spec]] for o in history.objectives), (history.search, e)
    assert older.baseline.scores == (1.5, 8.0) and latest.baseline.scores == (8.0, 1.5)
    assert all(e.search == 1 for e in older.evaluations)  # what came later is not search 1's
    assert {e.search for e in latest.evaluations} == {1, 2} or not searches[1][1]
    assert older.winner is None and latest.winner is not None  # the record is the second search's
    markdown = report_page.render_markdown(latest)
    assert "| registers | min | 8 |" in markdown and "| time | min | 1.5 |" in markdown
    assert "search: 2 of 2 in this journal" in markdown


def test_export_of_a_search_that_journaled_none_of_its_own_says_where_its_evaluations_are(tmp_path: Path) -> None:
    # mini-nbody's trial: a second tune took its one evaluation from the journal; `export --search 2 --csv` wrote
    # "0 evaluation(s)" without a word, where `--optuna` (the latest search) wrote 3 trials.
    journal = tmp_path / "build" / "ciq" / "journal" / "kern.jsonl"
    journal.parent.mkdir(parents=True)
    lines: list[dict] = [{"kind": "header", "objectives": ["registers"]},
                         {"kind": "evaluation", "key": "base", "ok": True, "scores": [8.0], "controls": {},
                          "metrics": {"registers": 8.0}},
                         {"kind": "evaluation", "key": "x1", "ok": True, "scores": [6.0], "params": {"param.X": 1},
                          "controls": {"defines": {"X": "1"}}, "metrics": {"registers": 6.0}},
                         {"kind": "header", "objectives": ["registers"]}]
    journal.write_text("".join(json.dumps(line) + "\n" for line in lines))
    said = export("kern", tmp_path / "build", None, csv_file=str(tmp_path / "two.csv"), search=2)
    assert said.startswith("ciq_build: wrote 0 evaluation(s) of kern to "), said
    assert ("search 2 journaled none of its own: it took its 2 from earlier searches' entries (--search 1; "
            "without --search, every search's rows)") in said, said
    assert "journaled none" not in export("kern", tmp_path / "build", None, csv_file=str(tmp_path / "one.csv"),
                                          search=1)


@slow
def test_export_names_each_rows_scores_by_the_objectives_of_the_search_that_journaled_it(retuned: dict) -> None:
    done = _ciq("export", "timer", "-B", str(retuned["build"]), "--csv", "-", cwd=retuned["root"])
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader(io.StringIO(done.stdout, newline="")))
    searches = _searches_of(retuned["lines"])
    assert len(rows) == sum(len({line["key"] for line in lines}) for _, lines in searches)
    for row in rows:
        if row["ok"] == "True":
            assert float(row["score.time"]) == float(row["metric.time_ms"]), row
            assert float(row["score.registers"]) == float(row["metric.registers"]), row
    only = json.loads(_ciq("export", "timer", "-B", str(retuned["build"]), "--json", "-", "--search", "1",
                           cwd=retuned["root"]).stdout)
    assert {row["search"] for row in only["evaluations"]} == {1}
    assert all(list(row["scores"]) == ["time", "registers"] for row in only["evaluations"])
    refused = _ciq("export", "timer", "-B", str(retuned["build"]), "--json", "-", "--search", "3",
                   cwd=retuned["root"])
    assert refused.returncode == 2 and "holds 2 search(es); pick one of 1..2" in refused.stderr, refused.stderr


@slow
def test_a_tune_that_replaces_a_pin_says_what_it_replaces_old_against_new(retuned: dict) -> None:
    first, second = retuned["tunes"]
    assert "replacing" not in first.stdout  # nothing pinned before it
    said = second.stdout
    assert f"replacing the pin in {retuned['source'] / 'ciq' / 'timer.json'}" in said, said
    old = next(line for line in said.splitlines() if line.strip().startswith("old:"))
    new = next(line for line in said.splitlines() if line.strip().startswith("new:"))
    # The evaluations behind a pin are those its tune's summary counted.
    first_evaluations = re.search(r"evaluations: (\d+) \(", first.stdout)
    second_evaluations = re.search(r"evaluations: (\d+) \(", second.stdout)
    assert first_evaluations and second_evaluations, first.stdout + second.stdout
    assert f"new: {second_evaluations[1]} evaluation(s)" in new
    assert f"{first_evaluations[1]} evaluation(s)" in old and "time 1.5 ->" in old and "registers 8 ->" in old
    assert "registers 8 ->" in new


@slow
def test_report_and_export_without_the_journal_read_the_pinned_record(retuned: dict, tmp_path: Path) -> None:
    build = tmp_path / "build"
    shutil.copytree(retuned["build"], build)
    (build / "ciq" / "journal" / "timer.jsonl").unlink()
    record = read_record(retuned["source"] / "ciq" / "timer.json")
    done = _ciq("report", "timer", "-B", str(build), "-S", str(retuned["source"]), "--format", "markdown",
                cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "gone: this is what the pinned record holds" in done.stdout
    base, win = record.baseline.scores, record.winner.scores
    assert f"| registers | min | {base[0]:.6g} |" in done.stdout and f"{win[1]:.6g}" in done.stdout
    exported = json.loads(_ciq("export", "timer", "-B", str(build), "-S", str(retuned["source"]), "--json", "-",
                               cwd=tmp_path).stdout)
    assert [row["key"] for row in exported["evaluations"]] == ["baseline", "winner"]
    assert [list(row["scores"].values()) for row in exported["evaluations"]] == [list(base), list(win)]


@slow
def test_the_pareto_table_shows_the_minimized_pin(tuned: dict) -> None:
    history = load_history("timer", tuned["build"], tuned["source"])
    record = tuned["record"]
    pinned = " ".join([*record.controls.flags, *(f"-D{k}={v}" for k, v in record.controls.defines)])
    row = next(r for r in report_tables.front_rows(history) if r[-2].startswith("pinned"))
    assert row[-1].startswith(pinned or "(the compiler's defaults)"), row
    if record.provenance.get("dropped_controls"):
        assert row[-2] == "pinned (minimized)" and "(searched: " in row[-1]


@slow
def test_report_watch_writes_the_page_again_as_the_journal_grows_and_ends_with_the_tune(
        retuned: dict, tmp_path: Path) -> None:
    from ciq_build.project.worker import safe_name
    from ciq_build.state.journal import TargetLock, tune_lock_path

    build = tmp_path / "build"
    shutil.copytree(retuned["build"], build)
    page = tmp_path / "page.html"
    journal = build / "ciq" / "journal" / "timer.jsonl"
    # The test holds the real lock a tune takes, so the watch sees a tune running; it appends as a tune would.
    with TargetLock(tune_lock_path(build / "ciq", safe_name("timer")), wait=False):
        watching = subprocess.Popen([sys.executable, "-m", "ciq_build", "report", "timer", "-B", str(build),
                                     "-S", str(retuned["source"]), "--watch", "-o", str(page)],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
        try:
            assert "wrote the report of timer" in watching.stdout.readline()
            first = page.read_text()
            assert '<meta http-equiv="refresh"' in first
            count = len(load_history("timer", build).evaluations)
            line = next(r for r in retuned["lines"] if r.get("kind") == "evaluation" and r["ok"])
            with journal.open("a") as appended:
                appended.write(json.dumps({**line, "key": "appended-while-watching", "generation": 9}) + "\n")
            assert "wrote the report of timer" in watching.stdout.readline()
            assert f"evaluations: {count + 1} (" in page.read_text() or f"<td>{count + 1} (" in page.read_text()
        except BaseException:
            watching.kill()
            raise
    out, err = watching.communicate(timeout=300)
    assert watching.returncode == 0, err
    assert "no tune of timer is running (any more): the report above is final" in out
    assert '<meta http-equiv="refresh"' not in page.read_text()


@slow
@pytest.mark.parametrize("command", [["show", "timer", "--pin-file"], ["export", "timer", "--csv", "-", "-B"],
                                     ["list", "-B"], ["report", "timer", "--format", "markdown", "-B"]])
def test_a_reader_that_goes_away_ends_the_command_without_a_traceback(retuned: dict, command: list[str]) -> None:
    path = {"--pin-file": str(retuned["source"] / "ciq" / "timer.json"), "-B": str(retuned["build"])}
    argv = [*command, path[command[-1]]] if command[-1] in path else command
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the command writes a byte: `| head -0`
    try:
        done = subprocess.run([sys.executable, "-m", "ciq_build", *argv], stdout=write, stderr=subprocess.PIPE,
                              text=True, timeout=300)
    finally:
        os.close(write)
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr, done.stderr
    assert done.returncode == 141  # 128 + SIGPIPE, as a shell reports a process a closed pipe ended


def test_parameter_importance_is_the_share_of_variance_each_parameter_explains(tmp_path: Path) -> None:
    # a decides the score (1 or 5), b is noise around it: a explains nearly all, b little.
    records: list[dict] = [{"key": f"k{i}", "generation": 0, "ok": True, "controls": {}, "params": {"a": a, "b": b},
                "scores": [(1.0 if a == 0 else 5.0) + 0.1 * ((i * 7) % 3)]}
               for i, (a, b) in enumerate((a, b) for a in (0, 1) for b in (0, 1, 2) for _ in range(2))]
    history = _edited_history(tmp_path, records, ["registers"])
    ranked = history.importance(0)
    assert [r.parameter for r in ranked] == ["a", "b"]
    scores = np.array([r["scores"][0] for r in records])
    means = {a: scores[[r["params"]["a"] == a for r in records]].mean() for a in (0, 1)}
    between = sum(6 * (means[a] - scores.mean()) ** 2 for a in (0, 1))
    assert ranked[0].explained == pytest.approx(between / ((scores - scores.mean()) ** 2).sum())
    assert ranked[0].explained > 0.95 and ranked[1].explained < 0.05
    assert (ranked[0].values, ranked[0].evaluations) == (2, 12)
    assert f"| registers | a | {ranked[0].explained * 100:.0f}% | 2 | 12 |" in report_page.render_markdown(history)


def test_a_pair_whose_values_matter_only_together_shows_as_an_interaction_with_its_caution(tmp_path: Path) -> None:
    # The score is high where a and b differ (an XOR): each alone explains nothing, the pair everything;
    # c is noise. Two evaluations per value pair, so the page says 2.0 per pair.
    records: list[dict] = [{"key": f"k{i}", "generation": 0, "ok": True, "controls": {},
                            "params": {"a": a, "b": b, "c": i % 3}, "scores": [10.0 if a != b else 1.0]}
                           for i, (a, b) in enumerate((a, b) for a in (0, 1) for b in (0, 1) for _ in range(2))]
    history = _edited_history(tmp_path, records, ["registers"])
    assert all(r.explained < 1e-9 for r in history.importance(0) if r.parameter in ("a", "b"))
    (pair, *others) = history.interactions(0)
    assert (pair.first, pair.second, pair.cells, pair.evaluations, pair.per_cell) == ("a", "b", 4, 8, 2.0)
    assert pair.explained == pytest.approx(1.0)
    assert all(o.explained < pair.explained for o in others)
    markdown = report_page.render_markdown(history)
    assert "### Pairs that moved them together" in markdown
    assert "| registers | a x b | 100% | 4 | 2.0 |" in markdown
    assert "overstates" in markdown.split("### Pairs that moved them together", 1)[1]
    page = report_page.render_html(history)
    assert "<td>a x b</td><td>100%</td>" in page and html.escape(report_tables.INTERACTION_NOTE) in page
    # One evaluation per value pair: every pair's mean is one score, and no share is claimed.
    alone = _edited_history(tmp_path, records[::2], ["registers"])
    assert alone.interactions(0) == []
    assert report_tables.NO_INTERACTION_NOTE in report_page.render_markdown(alone)


def test_each_run_of_tune_keeps_its_own_wall_time_and_each_generation_says_where_its_time_went(
        tmp_path: Path) -> None:
    # One search, tuned, then resumed a day later: the resume's evaluations count from its own start,
    # not from the first run's (its generation would have "ended" 86,400 s in).
    def evaluation(key: str, generation: int, when: str, params: dict) -> dict:
        return {"kind": "evaluation", "key": key, "generation": generation, "ok": True, "controls": {},
                "params": params, "scores": [1.0 + len(key)], "seconds": 4.0, "time": when,
                "timings": {"compile_s": 3.0, "benchmark_s": 0.5, "wait_s": 0.25}}

    lines: list[dict] = [{"kind": "header", "objectives": ["registers"]},
                         {"kind": "run", "time": "2026-12-01T10:00:00+0000"},
                         evaluation("base", 0, "2026-12-01T10:00:10+0000", {}),
                         evaluation("x1", 0, "2026-12-01T10:00:14+0000", {"X": 1}),
                         {"kind": "run", "time": "2026-12-02T10:00:00+0000"},
                         evaluation("x22", 1, "2026-12-02T10:00:08+0000", {"X": 2}),
                         evaluation("x333", 1, "2026-12-02T10:00:09+0000", {"X": 3})]
    journal = tmp_path / "build" / "ciq" / "journal" / "kern.jsonl"
    journal.parent.mkdir(parents=True)
    journal.write_text("".join(json.dumps(line) + "\n" for line in lines))
    history = load_history("kern", tmp_path / "build")
    assert [(e.run, e.elapsed_s) for e in history.evaluations] == [(1, 4.0), (1, 8.0), (2, 4.0), (2, 5.0)]
    assert history.runs == [1, 2] and history.run_starts[2] == "2026-12-02T10:00:00+0000"
    rows = report_tables.generation_rows(history)
    head = report_tables.generation_head(history)
    assert head[-5:] == ["ended at", "its wall time", "compiling", "benchmarking", "waiting for a GPU"]
    assert rows[1][-5:] == ["run 2, 5.0 s", "5.0 s", "6.0 s", "1.0 s", "0.5 s"]
    markdown = report_page.render_markdown(history)
    assert "- runs: 2 runs of tune journaled these evaluations (run 1 began 2026-12-01T10:00:00+0000" in markdown
    assert report_tables.GENERATION_NOTE in markdown
    # An older journal (no run lines): each header began a run.
    old = [line for line in lines if line["kind"] != "run"]
    journal.write_text("".join(json.dumps(line) + "\n" for line in old))
    assert load_history("kern", tmp_path / "build").runs == [1]


def test_report_reads_the_journal_of_the_tune_that_ran_last_and_names_the_other_architectures(
        tmp_path: Path) -> None:
    # A newcomer tuned cuda-samples' transpose for all 9 architectures, stopped, and tuned --architecture 90:
    # report (and --watch) read the all-architecture journal, the other tune's.
    folder = tmp_path / "build" / "ciq" / "journal"
    folder.mkdir(parents=True)
    for name, registers in (("kern.jsonl", 24.0), ("kern.sm_90.jsonl", 18.0)):
        lines = [{"kind": "header", "objectives": ["registers"]},
                 {"kind": "evaluation", "key": "base", "ok": True, "scores": [registers], "controls": {}}]
        (folder / name).write_text("".join(json.dumps(line) + "\n" for line in lines))
    os.utime(folder / "kern.jsonl", (1_000_000, 1_000_000))  # the all-architecture tune ran first
    latest = load_history("kern", tmp_path / "build")
    assert latest.journal_path.name == "kern.sm_90.jsonl" and latest.evaluations[0].scores == (18.0,)
    said = dict(report_tables.fact_rows(latest))["journal"]
    assert said.endswith("(the latest written; this target's other tunes: kern.jsonl: --architecture all)"), said
    every = load_history("kern", tmp_path / "build", architecture="all")
    assert every.journal_path.name == "kern.jsonl" and every.evaluations[0].scores == (24.0,)
    assert load_history("kern", tmp_path / "build", architecture="sm_90").journal_path == latest.journal_path
    done = _ciq("export", "kern", "-B", str(tmp_path / "build"), "--architecture", "all", "--csv", "-",
                cwd=tmp_path)
    assert done.returncode == 0 and ",24.0" in done.stdout, done.stdout + done.stderr


def test_a_search_with_other_objectives_never_labels_an_older_searchs_scores_with_its_names(tmp_path: Path) -> None:
    # The cheap twin of the two real tunes above: the second search reused every evaluation of the first.
    journal = tmp_path / "build" / "ciq" / "journal" / "kern.jsonl"
    journal.parent.mkdir(parents=True)
    lines: list[dict] = [{"kind": "header", "objectives": ["time", "registers"]},
             {"kind": "evaluation", "key": "base", "ok": True, "scores": [1.5, 8.0], "controls": {},
              "metrics": {"time_ms": 1.5, "registers": 8.0}},
             {"kind": "evaluation", "key": "x1", "ok": True, "scores": [1.0, 12.0], "params": {"param.X": 1},
              "controls": {"defines": {"X": "1"}}, "metrics": {"time_ms": 1.0, "registers": 12.0}},
             {"kind": "header", "objectives": ["registers", "spill_bytes"]}]
    journal.write_text("".join(json.dumps(line) + "\n" for line in lines))
    latest = load_history("kern", tmp_path / "build")
    assert [o.spec for o in latest.objectives] == ["registers", "spill_bytes"]
    assert latest.evaluations == []  # measured for time and registers: spill_bytes was never measured
    older = load_history("kern", tmp_path / "build", search=1)
    assert [e.scores for e in older.evaluations] == [(1.5, 8.0), (1.0, 12.0)]
    lines[-1]["objectives"] = ["registers", "time"]
    journal.write_text("".join(json.dumps(line) + "\n" for line in lines))
    swapped = load_history("kern", tmp_path / "build")
    assert [e.scores for e in swapped.evaluations] == [(8.0, 1.5), (12.0, 1.0)]
    exported = list(csv.DictReader(io.StringIO(to_csv(load_history("kern", tmp_path / "build",
                                                                   every_search=True)), newline="")))
    assert [(r["search"], r["score.time"], r["score.registers"]) for r in exported] == [("1", "1.5", "8.0"),
                                                                                        ("1", "1.0", "12.0")]


@slow
def test_export_writes_an_optuna_journal_storage_optuna_reads_and_a_kernel_tuner_cache(tuned: dict,
                                                                                       tmp_path: Path) -> None:
    optuna = pytest.importorskip("optuna")
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    history = load_history("timer", tuned["build"], tuned["source"])
    journal = tmp_path / "timer.optuna.log"
    done = _ciq("export", "timer", "-B", str(tuned["build"]), "--optuna", str(journal), cwd=tuned["root"])
    assert done.returncode == 0 and f"optuna-dashboard {journal}" in done.stdout, done.stdout + done.stderr
    study = optuna.load_study(study_name="timer", storage=JournalStorage(JournalFileBackend(str(journal))))
    assert [d.name for d in study.directions] == ["MINIMIZE", "MINIMIZE"]  # time, registers
    assert len(study.trials) == len(history.evaluations)
    by_key = {t.user_attrs["key"]: t for t in study.trials}
    for entry in history.evaluations:
        trial = by_key[entry.key]
        if entry.ok:
            assert trial.state.name == "COMPLETE" and trial.values == list(entry.scores), entry
        else:
            assert trial.state.name == "FAIL" and trial.user_attrs["cause"] == entry.cause
        assert trial.params == entry.params
    assert any(t.state.name == "FAIL" for t in study.trials)  # MODE=1 candidates, killed
    cache = json.loads(_ciq("export", "timer", "-B", str(tuned["build"]), "--kernel-tuner", "-",
                            cwd=tuned["root"]).stdout)
    assert cache["kernel_name"] == "timer" and cache["objective"] == "time"
    assert cache["tune_params_keys"] == ["param.MODE", "param.X"]
    configurations = [e for e in history.evaluations if not e.is_baseline]
    assert len(cache["cache"]) == len({(e.params.get("param.MODE"), e.params.get("param.X")) for e in configurations})
    for entry in configurations:
        row = cache["cache"][f"{entry.params['param.MODE']},{entry.params['param.X']}"]
        assert row["time"] == (entry.scores[0] if entry.ok else "RuntimeFailedConfig")


@slow
def test_a_watched_page_says_what_the_tune_is_doing_how_far_its_best_so_far_and_the_time_left(tuned: dict) -> None:
    history = load_history("timer", tuned["build"], tuned["source"])
    # The fixture's tune left what it last said of itself beside its lock: every phase it went through, in order.
    said = read_live_status(tuned["build"] / "ciq" / "locks" / "timer.lock.live")
    assert said is not None and said["target"] == "timer" and said["phase"] == "ended", said
    phases = [name for name, _ in said["phases"]]
    assert phases[:3] == ["preparing", "baseline", "search"] and phases[-2:] == ["pin", "ended"], phases
    assert "re-measure" in phases  # a timed winner, re-measured before it was pinned
    assert said["evaluations"] == said["expected"] == 8  # two generations of 4
    # While it ran: the search's phase, evaluations, best and time left, as of when it was written.
    live = {"phase": "search", "evaluations": 5, "expected": 8, "best": "front: 2 points; would pin time 1.1 ms, registers 8",
            "left_s": 50.0, "updated": 1000.0}
    running = report_page.running_text(history, 5, live, now=lambda: 1010.0)
    assert running.startswith(f"A tune of timer is running (search {history.search} of its journal); phase: "
                              "search; 5 of 8 evaluations"), running
    assert "so far, front: 2 points; would pin time 1.1 ms, registers 8; about 0:40 of the search left" in running
    assert "reloads every 5 s" in running
    remeasuring = report_page.running_text(history, 5, {**live, "phase": "re-measure", "left_s": None})
    assert "phase: re-measure (the winner against the baseline, interleaved)" in remeasuring
    assert "left" not in remeasuring.split(". This page")[0]
    # Without the tune's word (an older tune), the journal alone: this run's evaluations and best so far.
    count = sum(1 for e in history.evaluations if e.run == max(history.runs) and not e.is_baseline)
    best = history.best_so_far(0)[-1][1]
    page = report_page.render_html(history, refresh_s=5)
    alone = page.split('id="running">', 1)[1].split("</p>", 1)[0]
    assert f"{count} evaluation(s) so far in this run" in alone and f"best time so far {best:.6g}" in alone
    assert 'id="running"' not in report_page.render_html(history)  # a finished tune's page says nothing of it
    assert "> A tune of timer is running" in report_page.render_markdown(history, 5, live)


def test_a_time_read_from_a_rate_is_reported_as_the_rate_the_benchmark_printed(tmp_path: Path) -> None:
    # METRIC UNIT TFLOPS: the journal's time is 1000 / TFLOPS ms per unit of work; its header names the rate.
    journal = tmp_path / "build" / "ciq" / "journal" / "kern.jsonl"
    journal.parent.mkdir(parents=True)
    rate_header: dict[str, object] = {"kind": "header", "objectives": ["time"], "time_rate_unit": "TFLOPS"}
    lines = [rate_header,
             *({"kind": "evaluation", "key": key, "generation": 0, "ok": True, "controls": controls,
                "scores": [1e3 / rate]} for key, controls, rate in (("base", {}, 100.0),
                                                                       ("x1", {"defines": {"X": "1"}}, 150.0)))]
    journal.write_text("".join(json.dumps(line) + "\n" for line in lines))
    markdown = report_page.render_markdown(load_history("kern", tmp_path / "build"))
    assert "| time | min | 100 TFLOPS | 150 TFLOPS | -33.3% (+50.0% TFLOPS) |" in markdown
    assert "| 0 | 2 | 0 | 150 TFLOPS |" in markdown  # the best so far per generation too
    # A header naming no rate, or one no rule takes, shows the time as it was read.
    for header in ({"kind": "header", "objectives": ["time"]}, {**rate_header, "time_rate_unit": "ms"},
                   {**rate_header, "time_rate_unit": "TFLOPS<b>"}):
        journal.write_text("".join(json.dumps(line) + "\n" for line in [header, *lines[1:]]))
        markdown = report_page.render_markdown(load_history("kern", tmp_path / "build"))
        assert "TFLOPS" not in markdown and "| time | min | 10 | 6.66667 | -33.3% |" in markdown


def test_every_plot_of_a_time_read_from_a_rate_shows_the_rate_higher_is_better(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("matplotlib")
    # METRIC UNIT TFLOPS on two problem sizes, with registers beside it: the journal's times are 1000 / TFLOPS.
    journal = tmp_path / "build" / "ciq" / "journal" / "kern.jsonl"
    journal.parent.mkdir(parents=True)
    rates = {"base": (100.0, 100.0, 100.0, 40), "x1": (150.0, 160.0, 140.0, 48), "x2": (120.0, 90.0, 160.0, 32)}
    lines: list[dict[str, object]] = [{"kind": "header", "objectives": ["time", "registers"],
                                       "time_rate_unit": "TFLOPS", "sizes": ["small", "large"]}]
    for number, (key, (rate, small, large, registers)) in enumerate(rates.items()):
        lines.append({"kind": "evaluation", "key": key, "generation": number // 2, "ok": True,
                      "controls": {"defines": {"X": str(number)}} if number else {},
                      "params": {"param.X": number}, "scores": [1e3 / rate, registers],
                      "metrics": {"time_ms": 1e3 / rate, "time_ms@small": 1e3 / small, "time_ms@large": 1e3 / large,
                                  "registers": registers}})
    journal.write_text("".join(json.dumps(line) + "\n" for line in lines))
    history = load_history("kern", tmp_path / "build")
    history.record = PinnedRecord(
        target="kern", controls=Controls(defines=(("X", "1"),)), toolchain=RecordToolchain("13.3"),
        provenance={"time_rate_unit": "TFLOPS", "remeasured": {"metric": "time_ms", "baseline": [1e3 / r for r in
                    (99.0, 100.0, 101.0)], "winner": [1e3 / r for r in (149.0, 150.0, 151.0)]}},
        objectives=(RecordObjective("time"), RecordObjective("registers")))
    figures: list[object] = []

    def kept(pyplot: object, figure: object) -> str:  # the report's figure, kept to look at instead of encoded
        figures.append(figure)
        return str(len(figures) - 1)

    monkeypatch.setattr(report_plots, "_png", kept)
    page = report_page.render_html(history)
    drawn = {section: figures[int(index)]
             for section, index in re.findall(r'id="plot-([a-z]+)" alt="[^"]*" src="data:image/png;base64,([0-9]+)"', page)}
    assert set(drawn) >= {"convergence", "candidates", "pareto", "sizes", "importance", "parallel", "remeasure"}

    def texts(section: str) -> list[str]:
        return [text for ax in drawn[section].axes for text in (ax.get_xlabel(), ax.get_ylabel(), ax.get_title(),  # type: ignore[attr-defined]
                                                                   *(t.get_text() for t in ax.get_xticklabels()))]

    for section in drawn:  # the time is never drawn as its milliseconds, nor "min" where higher is better
        assert not [t for t in texts(section) if "ms" in t.split() or "(ms" in t or "time (min" in t], texts(section)
    convergence = drawn["convergence"].axes[0]  # type: ignore[attr-defined]
    assert convergence.get_ylabel() == "time as TFLOPS (higher is better)"
    assert list(convergence.collections[0].get_offsets()[:, 1]) == pytest.approx([100, 150, 120])
    assert list(convergence.lines[0].get_ydata()) == pytest.approx([100, 150, 150])  # best so far: the highest
    assert convergence.lines[1].get_ydata()[0] == pytest.approx(100)  # the baseline
    candidates = drawn["candidates"].axes[0]  # type: ignore[attr-defined]
    assert candidates.get_ylabel() == "change vs baseline (%); higher is better"
    assert list(candidates.collections[0].get_offsets()[:, 1]) == pytest.approx([0, 50, 20])  # the rate's change
    pareto = drawn["pareto"].axes[0]  # type: ignore[attr-defined]
    assert (pareto.get_xlabel(), pareto.get_ylabel()) == ("time as TFLOPS (higher is better)",
                                                          "registers (lower is better)")
    assert sorted(pareto.collections[0].get_offsets()[:, 0]) == pytest.approx([100, 120, 150])
    sizes = drawn["sizes"].axes[0]  # type: ignore[attr-defined]
    assert sizes.get_ylabel() == "time as TFLOPS: ratio to the defaults on the same size; higher is better"
    pinned = next(line for line in sizes.lines if line.get_label().endswith("(pinned)"))
    assert list(pinned.get_ydata()) == pytest.approx([1.6, 1.4])  # small and large: the rate's ratios
    remeasure = drawn["remeasure"].axes[0]  # type: ignore[attr-defined]
    assert remeasure.get_ylabel() == "time as TFLOPS (higher is better)"
    assert sorted(remeasure.collections[1].get_offsets()[:, 1]) == pytest.approx([149, 150, 151])  # the winner's
    parallel = drawn["parallel"].axes[0]  # type: ignore[attr-defined]
    assert parallel.get_xticklabels()[-1].get_text() == "time as TFLOPS\nhigher is up"


def test_a_failure_is_shown_by_its_error_line_not_the_build_tools_last_word() -> None:
    # cuda_hgemv's PARAMS in a #pragma unroll the front end does not expand: the report's failures table showed
    # "ninja: build stopped: subcommand failed." for each, and the reason was 20 lines up.
    message = ("compile exited with code 1:\n[1/13] Building CUDA object CMakeFiles/hgemv_kernels.dir/src/thread/"
               "thread_smem.cu.o\nFAILED: CMakeFiles/hgemv_kernels.dir/src/thread/thread_smem.cu.o\n"
               "/tmp/hgemv/src/thread/thread_smem.cu(32): error: identifier \"HGEMV_UNROLL\" is undefined\n"
               "  #pragma unroll HGEMV_UNROLL\n1 error detected in the compilation of \"thread_smem.cu\".\n"
               "ninja: build stopped: subcommand failed.\n")
    assert report_tables.telling_line(message) == ("/tmp/hgemv/src/thread/thread_smem.cu(32): error: identifier "
                                                   "\"HGEMV_UNROLL\" is undefined")
    assert report_tables.telling_line("the benchmark timed out after 60 s\n(no output)") == "(no output)"
    assert report_tables.telling_line("") == ""
