"""Property tests: journals with arbitrary damage are read, never crash a resumed tune.

A journal is written by a process that may be SIGKILLed at any byte, and read
back by the next `tune`; a corrupt line is reported and skipped, and a
well-formed line with nonsense values is re-measured rather than trusted.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ciq_build.compiler.controls import Controls
from ciq_build.core.objectives import parse_objectives
from ciq_build.errors import CiqError
from ciq_build.search.base import Proposal
from ciq_build.state.journal import Journal
from ciq_build.tune.cache import from_journal

# Fuzzing with a thousand examples a test: seconds of CPU each, so in the whole suite, not the fast subset.
pytestmark = pytest.mark.slow

FUZZ = settings(max_examples=1000, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

GOOD = {"kind": "evaluation", "key": "k", "ok": True, "metrics": {"time_ms": 1.5, "spill_bytes": 0}}
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=12,
)


@FUZZ
@given(garbage=st.lists(st.binary(max_size=80), max_size=6), cut=st.integers(min_value=0, max_value=200))
def test_a_damaged_journal_keeps_every_intact_record(tmp_path: Path, garbage: list[bytes], cut: int) -> None:
    path = tmp_path / "j.jsonl"
    path.unlink(missing_ok=True)
    journal = Journal(path)
    journal.append(GOOD)
    with path.open("ab") as raw:
        for chunk in garbage:
            raw.write(chunk.replace(b"\n", b" ") + b"\n")
        raw.write(json.dumps(GOOD).encode()[:cut])  # a torn last line, as a SIGKILL leaves it
    journal.append(GOOD)  # the next run appends after the damage
    try:
        records = Journal(path).records()
    except CiqError:
        return
    assert all(isinstance(r, dict) for r in records)
    assert sum(1 for r in records if r == GOOD) >= 2


@FUZZ
@given(record=st.dictionaries(st.sampled_from(["ok", "metrics", "spread", "cause", "message", "scores"]),
                              json_values, max_size=6))
def test_any_journaled_evaluation_is_trusted_only_when_well_formed(record: dict) -> None:
    objectives = parse_objectives(["time", "spill_bytes"])
    evaluated = from_journal(record, Proposal(0, 0, {}), Controls(), "k", objectives)
    if evaluated is None:
        return
    assert evaluated.cached and isinstance(evaluated.ok, bool)
    if evaluated.ok:
        assert evaluated.scores is not None and len(evaluated.scores) == 2
        assert all(isinstance(s, float) for s in evaluated.scores)
    else:
        assert evaluated.scores is None and isinstance(evaluated.cause, str)
