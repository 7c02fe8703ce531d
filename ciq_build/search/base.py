"""What the tuning driver needs from any source of candidates.

The driver only asks for proposals and tells their scores; ciq_build's own
genetic search and NVIDIA's compileiq engine both sit behind this.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from ciq_build.compiler.controls import AcfRef


@dataclass(frozen=True)
class Proposal:
    """One candidate to evaluate: search parameters (knob.*, param.*) and an optional ACF."""

    id: int
    generation: int
    params: dict[str, Any]
    acf: AcfRef | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class CandidateSource(Protocol):
    """An ask/tell optimiser. `ask()` returns [] when the search is over."""

    def ask(self) -> list[Proposal]: ...

    def tell(self, proposal: Proposal, scores: tuple[float, ...] | None, reason: str | None = None) -> None: ...

    def describe(self) -> dict[str, Any]:
        """Provenance for the pinned record: engine, search space, seed, budget."""
        ...
