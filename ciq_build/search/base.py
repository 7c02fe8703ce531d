"""What the tuning driver needs from any source of candidates.

The driver only asks for proposals and tells their scores; ciq_build's own
genetic search and NVIDIA's compileiq engine both sit behind this.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from ciq_build.compiler.controls import AcfRef, Controls, controls_from_candidate
from ciq_build.errors import ConfigError, RecordError, SearchError


@dataclass(frozen=True)
class Proposal:
    """One candidate to evaluate: search parameters (knob.*, param.*) and an optional ACF."""

    id: int
    generation: int
    params: dict[str, Any]
    acf: AcfRef | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    # What the search's parameters go on top of: a staged tune's best so far (ciq_build.search.on_top); None: the
    # compiler's defaults.
    on_top_of: Controls | None = None

    def controls(self) -> Controls:
        """What this candidate compiles with: its parameters and ACF as controls, over `on_top_of`.

        Unknown names and unusable values or combinations raise ConfigError (a bad candidate)."""
        own = controls_from_candidate(self.params, self.acf)
        if self.on_top_of is None:
            return own
        try:
            return own.over(self.on_top_of)
        except RecordError as exc:
            raise ConfigError(f"candidate {dict(self.params)!r} on top of the best so far: {exc}") from exc


class CandidateSource(Protocol):
    """An ask/tell optimiser. `ask()` returns [] when the search is over.

    A source may end by itself, at its own plan (the GA's generations, a grid listed to its end), or say
    `ended_by_the_loop = True` (random search, Optuna's samplers): it proposes until the search loop's plan
    ends it (ciq_build.tune.loop), as Optuna's `optimize(n_trials=)` ends a study."""

    def ask(self) -> list[Proposal]: ...

    def tell(self, proposal: Proposal, scores: tuple[float, ...] | None, reason: str | None = None) -> None: ...

    def describe(self) -> dict[str, Any]:
        """Provenance for the pinned record: engine, search space, seed, budget."""
        ...


class WrappedSource:
    """A source that hands on `inner`'s proposals, each changed by `_wrap`, and tells `inner` of each as `inner`
    proposed it: what a wrapper adds (an ACF of a pool, a base to build on) never reaches the inner search."""

    def __init__(self, inner: CandidateSource) -> None:
        self.inner = inner
        self._asked: dict[int, Proposal] = {}  # the inner source's own proposal of each id, as it is told back

    @property
    def proposes_ahead(self) -> bool:
        """Whether its next batch may be guessed ahead (ciq_build.tune.ahead): as `inner`'s may."""
        return bool(getattr(self.inner, "proposes_ahead", False))

    @property
    def ended_by_the_loop(self) -> bool:
        """Whether the search loop's plan ends it (CandidateSource): as it ends `inner`."""
        return bool(getattr(self.inner, "ended_by_the_loop", False))

    def _wrap(self, proposal: Proposal) -> Proposal:
        raise NotImplementedError

    def ask(self) -> list[Proposal]:
        proposals = self.inner.ask()
        self._asked.update((proposal.id, proposal) for proposal in proposals)
        return [self._wrap(proposal) for proposal in proposals]

    def tell(self, proposal: Proposal, scores: tuple[float, ...] | None, reason: str | None = None) -> None:
        # Refused, not passed on: `inner` may still know the id (told twice) and would take the changed proposal
        # as its own. The loop tells each asked candidate once; a copy guessing ahead (ciq_build.tune.ahead)
        # tells its own copy of `_asked`.
        asked = self._asked.pop(proposal.id, None)
        if asked is None:
            raise SearchError(f"candidate {proposal.id} was not asked, or was told already")
        self.inner.tell(asked, scores, reason)


class FirstBatchCheck:
    """Ends a search whose whole first batch failed: more draws would only fail the same way.

    One rule for the strategies that draw in batches (random, Optuna's samplers); `what` names the batch
    in the message ("random", "tpe").
    """

    def __init__(self, what: str) -> None:
        self.what = what
        self.any_ok = False
        self.first_reasons: list[str] = []

    def told(self, proposal: Proposal, ok: bool, reason: str | None, first_batch_done: bool) -> None:
        if ok:
            self.any_ok = True
        elif proposal.generation == 0:
            self.first_reasons.append(reason or "no reason given")
        if first_batch_done and not self.any_ok:
            # Not "broken for any configuration": a tune built and ran the compiler's defaults before its first
            # batch, so what every candidate changes (a -D the source cannot take, a flag) may be all that fails.
            raise SearchError(
                f"all {len(self.first_reasons)} candidates of the first {self.what} batch failed: what they change "
                f"breaks the build or the benchmark, or the build is broken whatever the controls. First reasons: "
                f"{'; '.join(sorted(set(self.first_reasons))[:3])}. Check that the build works with the compiler's "
                "defaults, then with one candidate's controls by hand.")
