"""The summary a tune prints: one spelling of a change, and what "from the journal" counts."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ciq_build.compiler.controls import Controls
from ciq_build.core.objectives import parse_objectives
from ciq_build.search.base import Proposal
from ciq_build.search.evaluation import Evaluation
from ciq_build.tune.summary import run_summary


def evaluated(key: str, cached: bool = False) -> Evaluation:
    return Evaluation(key, Proposal(0, 0, {}), Controls(), True, None, "", {"registers": 10.0}, {}, (10.0,), 1.0,
                      cached=cached)


def summary(evaluations: list[Evaluation], measured: set[str], base: float, best: float) -> str:
    return run_summary("kern", parse_objectives(["registers"]), (base,), (best,), evaluations, False, "pinned",
                       None, Path("journal.jsonl"), measured)


def test_a_candidate_proposed_again_in_a_first_run_is_not_said_to_come_from_the_journal() -> None:
    first = [evaluated("a"), evaluated("b"), evaluated("a", cached=True)]
    text = summary(first, {"a", "b"}, 10.0, 10.0)
    assert "evaluations: 3 (2 run, 0 from the journal, 1 proposed again (measured once))" in text

    resumed = [replace(e, cached=True) for e in first[:2]] + [evaluated("c")]
    text = summary(resumed, {"c"}, 10.0, 10.0)
    assert "evaluations: 3 (1 run, 2 from the journal)" in text


def test_changes_are_spelt_one_way() -> None:
    assert summary([evaluated("a")], {"a"}, 10.0, 10.0).count("+0.0%") == 1
    assert "-20.0%" in summary([evaluated("a")], {"a"}, 10.0, 8.0)
    row = next(line for line in summary([evaluated("a")], {"a"}, 0.0, 0.0).splitlines() if "registers" in line)
    assert row.split()[-1] == "-"  # no change to speak of from zero
