"""The summary a tune prints: one spelling of a change, and what "from the journal" counts."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ciq_build.compiler.controls import Controls
from ciq_build.core.objectives import parse_objectives
from ciq_build.core.settings import SearchSettings
from ciq_build.search.base import Proposal
from ciq_build.search.evaluation import Evaluation
from ciq_build.tune.summary import next_without_a_pin, run_summary


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


def test_where_few_register_caps_lie_below_the_defaults_next_names_one_to_seed() -> None:
    # cuda_reduction_sum's kernel: 40 registers by default, and of the cap's grid (32..248 by 8) only 32 below
    # it, which a 24-candidate search never drew; seeded, it pinned 40 -> 32 registers with no spills.
    objectives = parse_objectives(["spill_bytes", "registers"])
    knobs = SearchSettings(generations=3, pool_size=8, controls=("knobs",))
    said = next_without_a_pin(objectives, knobs, pin=True, better=False, baseline_scores=(0.0, 40.0))
    assert ("; the register cap's grid (-maxrregcount 32..248 by 8) holds 1 value(s) below the defaults' 40 "
            "registers, which the search seldom draws: seed one, --seed-from='-maxrregcount=32'; --fresh") in said
    assert "--seed-from='-maxrregcount=40'" in next_without_a_pin(objectives, knobs, True, False, (0.0, 48.0))
    # Not where the grid holds enough caps below, nothing lies below, no knob is searched or registers is no goal.
    for quiet in (next_without_a_pin(objectives, knobs, True, False, (0.0, 80.0)),
                  next_without_a_pin(objectives, knobs, True, False, (0.0, 32.0)),
                  next_without_a_pin(objectives, SearchSettings(controls=("params",)), True, False, (0.0, 40.0)),
                  next_without_a_pin(parse_objectives(["spill_bytes", "max:registers"]), knobs, True, False,
                                     (0.0, 40.0)),
                  next_without_a_pin(parse_objectives(["spill_bytes"]), knobs, True, False, (40.0,))):
        assert "maxrregcount" not in quiet


def test_the_table_shows_each_objectives_unit() -> None:
    text = run_summary("kern", parse_objectives(["time", "spill_bytes", "registers"]), (4.25, 16.0, 40.0),
                       (3.5, 0.0, 32.0), [evaluated("a")], True, "better", None, Path("journal.jsonl"), {"a"})
    rows = {line.split()[0]: line.split() for line in text.splitlines()[2:5]}
    assert rows["time"][1:5] == ["4.25", "ms", "3.5", "ms"]
    assert rows["spill_bytes"][1:5] == ["16", "bytes", "0", "bytes"]
    assert rows["registers"][1:3] == ["40", "32"]  # the name says the unit


def test_when_nothing_is_pinned_next_says_what_to_try() -> None:
    objectives = parse_objectives(["registers"])
    search = SearchSettings(generations=2, pool_size=4, controls=("params",))
    hint = next_without_a_pin(objectives, search, pin=True, better=False)
    text = run_summary("kern", objectives, (40.0,), (40.0,), [evaluated("a")], False, "no better", None,
                       Path("journal.jsonl"), {"a"}, next_without_pin=hint)
    said = next(line for line in text.splitlines() if line.startswith("  next: "))
    # other objectives, a wider space, a bigger budget, each as the option that asks for it
    assert "--objective, one of time, energy, compile_time, spill_bytes" in said and "registers," not in said
    assert "--controls knobs beside params" in said and "PARAMS" in said
    assert "this tune: 2 generations of 4" in said and "--generations" in said
    assert "without --no-pin" in next_without_a_pin(objectives, search, pin=False, better=True)
    # --no-pin on a search that found nothing better: running it again without --no-pin would pin nothing either
    assert next_without_a_pin(objectives, search, pin=False, better=False) == hint
    pinned = run_summary("kern", objectives, (40.0,), (32.0,), [evaluated("a")], False, "better",
                         Path("ciq/kern.json"), Path("journal.jsonl"), {"a"}, next_without_pin=hint)
    assert "nothing beat" not in pinned and "next: commit ciq" in pinned
