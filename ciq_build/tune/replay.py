"""A runner that plays a journal back instead of building and measuring (Kernel Tuner's simulation runner).

Each candidate gets the evaluation its journal holds for the same controls, so
the search loop, resume and the winner's choice run in milliseconds against
what a real tune measured. A candidate the journal never saw is an error that
says so: a replay cannot invent a measurement.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ciq_build.compiler.controls import Controls, controls_to_json
from ciq_build.core.objectives import Objective
from ciq_build.errors import SearchError
from ciq_build.search.base import Proposal
from ciq_build.search.evaluation import EVALUATION_KIND, Evaluation
from ciq_build.state.journal import Journal
from ciq_build.tune.cache import read_evaluation
from ciq_build.tune.scores import jsonable


class NotInJournal(SearchError):
    """The replayed journal has no evaluation for a candidate."""


def controls_id(controls: Controls) -> str:
    """The controls as the journal writes them, as one comparable string."""
    return json.dumps(controls_to_json(controls, None), sort_keys=True)


class ReplayRunner:
    """Answers each candidate with its journaled evaluation (the last one for its controls)."""

    def __init__(self, journal: Path | Journal, objectives: Sequence[Objective]) -> None:
        self.journal = journal if isinstance(journal, Journal) else Journal(journal)
        self.objectives = list(objectives)
        self.played: list[str] = []  # the keys answered, in order
        self._by_controls: dict[str, dict[str, Any]] = {}
        for record in self.journal.records():
            if record.get("kind") == EVALUATION_KIND and isinstance(record.get("key"), str):
                self._by_controls[json.dumps(record.get("controls"), sort_keys=True)] = record

    def key_of(self, controls: Controls) -> str:
        """The journal's key for these controls (what the real cache key was), or one no record has."""
        record = self._by_controls.get(controls_id(controls))
        return str(record["key"]) if record is not None else "not-journaled:" + controls_id(controls)

    def evaluate(self, worker: object, proposal: Proposal, controls: Controls, key: str) -> Evaluation:
        record = self._by_controls.get(controls_id(controls))
        if record is None or record["key"] != key:
            raise NotInJournal(
                f"candidate {jsonable(proposal.params)} (controls {controls_id(controls)}) is not in the journal "
                f"{self.journal.path}: a replay can only answer candidates the recorded tune evaluated")
        evaluated = read_evaluation(record, proposal, controls, key, self.objectives, cached=False)
        if evaluated is None:
            raise NotInJournal(f"the journal {self.journal.path} has no usable evaluation of {key} "
                               f"for objectives {[o.spec for o in self.objectives]}")
        self.played.append(key)
        return evaluated
