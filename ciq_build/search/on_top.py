"""A search on top of a configuration already chosen: a staged tune's later stages (ciq_build.tune.stages).

`OnTopOf` hands out another source's proposals with the best configuration so far beneath them
(`Proposal.on_top_of`): every candidate compiles with what it searches over that configuration, which keeps
whatever the candidate leaves unset (ciq_build.compiler.controls.Controls.over). The configuration is part of
the search's description, so a search on top of another configuration is another search in the journal (its
evaluations are still reused wherever the controls come out the same).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ciq_build.compiler.controls import Controls
from ciq_build.search.base import CandidateSource, Proposal, WrappedSource


def describe_base(base: Controls) -> dict[str, Any]:
    """The configuration beneath a search, as its description names it: flags, defines and the ACF's digest (its
    path is a scratch file's)."""
    return {"flags": list(base.flags), "defines": dict(base.defines),
            "acf": base.acf.sha256 if base.acf is not None else None}


class OnTopOf(WrappedSource):
    """`inner`'s search, each proposal on top of `base`."""

    def __init__(self, inner: CandidateSource, base: Controls) -> None:
        super().__init__(inner)
        self.base = base

    def _wrap(self, proposal: Proposal) -> Proposal:
        return replace(proposal, on_top_of=self.base)

    def describe(self) -> dict[str, Any]:
        return {**self.inner.describe(), "on_top_of": describe_base(self.base)}


def on_top_of(source: CandidateSource, base: Controls | None) -> CandidateSource:
    """`source`, on top of `base` where there is one to go on top of."""
    return source if base is None or base.is_default else OnTopOf(source, base)
