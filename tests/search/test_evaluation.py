"""The one evaluation record and its journal line: every field goes out and comes back; old lines still read."""

from __future__ import annotations

import hashlib
from dataclasses import MISSING, fields, replace
from pathlib import Path

from ciq_build.compiler.controls import AcfRef, Controls
from ciq_build.core.causes import Cause
from ciq_build.search.base import Proposal
from ciq_build.search.evaluation import JOURNALED_ID, Evaluation
from ciq_build.state.journal import Journal


def _through_a_journal(tmp_path: Path, evaluation: Evaluation) -> Evaluation | None:
    """Written as a journal line to a real file and read back: what a resumed tune sees."""
    journal = Journal(tmp_path / "j.jsonl")
    journal.append(evaluation.to_journal())
    (line,) = journal.records()
    return Evaluation.from_journal(line)


def _every_field_set() -> Evaluation:
    acf = AcfRef(Path("/pins/gemm.acf"), "ptxas", hashlib.sha256(b"acf").hexdigest())
    return Evaluation(
        "key-1", Proposal(id=JOURNALED_ID, generation=3, params={"knob.maxrregcount": 64, "param.TILE": "32"}),
        Controls(flags=("-maxrregcount=64",), defines=(("TILE", "32"),), acf=acf),
        False, Cause.BENCH_SIGNAL, "Segmentation fault", {"time_ms": 1.25, "registers": 64.0}, {"time_ms": 0.01},
        None, 12.5, cached=True, timings={"compile_s": 9.0, "benchmark_s": 3.0, "wait_s": 0.5}, runs=3,
        raced=True, same_code_as="key-0", code="code-1", worker="ray-1@node7:4242",
        samples={"time_ms": [1.25, 1.5, 1.0]})


def test_every_field_of_a_record_comes_back_from_its_journal_line(tmp_path: Path) -> None:
    failed = _every_field_set()
    defaults = {f.name: f.default_factory() if callable(f.default_factory) else f.default
                for f in fields(Evaluation) if f.default is not MISSING or callable(f.default_factory)}
    assert all(getattr(failed, name) != value for name, value in defaults.items())  # so each one is tried
    assert _through_a_journal(tmp_path, failed) == failed
    measured = replace(failed, ok=True, cause=None, message="", scores=(1.25, 64.0))
    (tmp_path / "j.jsonl").unlink()
    assert _through_a_journal(tmp_path, measured) == measured


def test_the_journal_line_keeps_the_format_old_journals_have() -> None:
    line = _every_field_set().to_journal()
    assert set(line) == {"kind", "key", "generation", "params", "controls", "ok", "cause", "message", "metrics",
                         "spread", "scores", "seconds", "timings", "environmental", "time", "runs", "raced",
                         "same_code_as", "code", "worker", "samples"}
    assert line["kind"] == "evaluation" and line["cause"] == "bench_signal" and line["environmental"] is False
    assert line["controls"] == {"flags": ["-maxrregcount=64"], "defines": {"TILE": "32"},
                                "acf": {"file": "/pins/gemm.acf", "sha256": hashlib.sha256(b"acf").hexdigest(),
                                        "compiler": "ptxas"}}
    assert "worker" not in replace(_every_field_set(), worker="").to_journal()  # journaled only when set
    assert "samples" not in replace(_every_field_set(), samples={}).to_journal()
    edited = {**line, "samples": {"time_ms": [1.0, "fast"], "energy_j": [2.0]}}  # a hand-edited journal
    read = Evaluation.from_journal(edited)
    assert read is not None and read.samples == {"energy_j": [2.0]}


def test_a_line_of_an_older_journal_reads_with_the_defaults_of_what_it_lacks() -> None:
    old = {"kind": "evaluation", "key": "k", "generation": 1, "params": {"knob.O": "-O2"},
           "controls": {"flags": ["-Xptxas=-O2"], "defines": {}}, "ok": True, "cause": None, "message": "",
           "metrics": {"time_ms": 2.0}, "spread": {}, "scores": [2.0], "seconds": 4.0}
    evaluation = Evaluation.from_journal(old)
    assert evaluation is not None and evaluation.ok and evaluation.scores == (2.0,)
    assert evaluation.controls == Controls(flags=("-Xptxas=-O2",)) and evaluation.generation == 1
    assert (evaluation.timings, evaluation.runs, evaluation.raced, evaluation.same_code_as, evaluation.code,
            evaluation.worker, evaluation.samples) == ({}, 0, False, None, None, "", {})


def test_a_line_that_is_no_evaluation_reads_as_none() -> None:
    assert Evaluation.from_journal({"kind": "evaluation", "key": "k"}) is None  # no ok
    assert Evaluation.from_journal({"ok": True, "controls": {"flags": ["--not-a-flag"]}}) is None
    unknown = Evaluation.from_journal({"ok": False, "cause": "gremlins"})
    assert unknown is not None and unknown.cause == Cause.ERROR
