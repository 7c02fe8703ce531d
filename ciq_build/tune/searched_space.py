"""The space a tune searches and the candidates' source over it, said at the start of the search.

Where the knobs are searched the source is made twice: before anything is built, with the register cap's
catalogue grid (the space is checked then, and the journal's header names it, with the rule that fits the
cap); and once the baseline's registers are known, the cap's values fitted below them
(ciq_build.search.select.fit_register_cap). The fitted values follow from the baseline, which the journal
holds, so a resumed search gets the same space and proposes the same candidates; a journaled baseline's
registers are checked against a fresh build first (ciq_build.tune.confirm.Confirmer.trusted_baseline), so a
stale journal's are not what the cap is fitted to.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ciq_build.compiler.controls import Controls
from ciq_build.compiler.toolchain import Toolchain
from ciq_build.core.objectives import Objective, needs_benchmark
from ciq_build.core.settings import SearchSettings
from ciq_build.project.manifest import Manifest
from ciq_build.search.base import CandidateSource
from ciq_build.search.evaluation import Evaluation
from ciq_build.search.on_top import on_top_of
from ciq_build.search.select import (
    REGISTER_CAP_RULE,
    cappable_registers,
    fits_register_cap,
    make_candidate_source,
    numerics_line,
    register_cap_line,
    scored_registers,
    space_size_text,
)
from ciq_build.tune.loop import planned_budget, space_line


@dataclass
class SearchedSpace:
    """The space of one tune (`settings`' --controls over `manifest`'s target), each candidate on top of `on_top`."""

    settings: SearchSettings
    manifest: Manifest
    toolchain: Toolchain
    objectives: list[Objective]
    acf_dir: Path  # where an ACF search writes its ACFs
    on_top: Controls | None = None  # a staged tune's best so far; None: the defaults
    total: int | None = None  # the grid's configurations after CONSTRAINTS, where known (once said)

    @property
    def fitting(self) -> bool:
        """Whether the register cap is fitted once the baseline is measured (the knobs are searched)."""
        return fits_register_cap(self.settings)

    def source(self, registers: int | None = None) -> CandidateSource:
        """The candidates' source, the register cap fitted to the baseline's `registers` where known. The first
        of two (`fitting`) warns of nothing (a seed that does not fit, say): the second says it, once."""
        with _warnings_left_out() if self.fitting and registers is None else nullcontext():
            made = make_candidate_source(self.settings, self.manifest, self.toolchain, self.objectives,
                                         self.acf_dir, registers)
        return on_top_of(made, self.on_top)

    def described(self, source: CandidateSource) -> dict[str, Any]:
        """The search as the journal's header names it: the source, and the rule that fits the register cap."""
        return {**source.describe(), **({"register_cap": REGISTER_CAP_RULE} if self.fitting else {})}

    def fitted(self, baseline: Evaluation, say: Callable[[str], None]) -> CandidateSource:
        """The source again, the register cap's values below the baseline's registers (the most of any kernel on
        the scored architecture, or of the kernels `registers:<kernel regex>` objectives score; of the kernels
        without __launch_bounds__ where some declare them), said with the space's size."""
        scored, whose = scored_registers(baseline.metrics, self.objectives)
        known, bounded = cappable_registers(scored, whose, baseline.metrics, self.objectives)
        if numerics := numerics_line(self.manifest, self.settings.allow_numerics):
            say(numerics)
        say(register_cap_line(known, whose, bounded, benchmarked=needs_benchmark(self.objectives)))
        source = self.source(known)
        self.say_size(source, say, known)
        return source

    def say_size(self, source: CandidateSource, say: Callable[[str], None], registers: int | None = None) -> None:
        """How many configurations the grid holds after CONSTRAINTS, against the budget."""
        text, self.total = space_size_text(self.settings, self.manifest, self.toolchain, self.objectives, registers)
        if text:
            described = source.describe()
            budget, _ = planned_budget(described, self.settings)
            say(space_line(text, self.total, budget, self.settings.strategy, described))


@contextmanager
def _warnings_left_out() -> Iterator[None]:
    """ciq_build's warnings from this thread left unsaid meanwhile (errors still raise)."""
    me = threading.get_ident()

    def said(record: logging.LogRecord) -> bool:
        return record.thread != me or record.levelno != logging.WARNING

    log = logging.getLogger("ciq_build")
    log.addFilter(said)
    try:
        yield
    finally:
        log.removeFilter(said)
