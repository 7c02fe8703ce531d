"""A staged tune (`tune --stage KINDS --stage KINDS ...`): one search after another, the pin the best of them.

Each stage is a whole tune of its own controls (what --controls would name). Where a stage searches from is what
`--stage-from` says. `defaults`: everything else stays at the compiler's defaults, the stages separate searches
whose winners meet in the pin's side-by-side re-measure. `best`: everything else is fixed at the best
configuration the stages before it validated (the winner of the latest stage that beat the compiler's defaults
beyond the noise, and any better pin already there: ciq_build.tune.old_pin; the defaults until one has), so
`--stage knobs,params --stage ptxas-acf:13.3 --stage-from best` searches ACFs on top of the best knobs and
PARAMS. `both` (the default): a stage after one that validated a winner searches from the defaults and then on
top of that winner, each with half the stage's budget. Both is the default because the GPU measurements went
both ways (docs/RESULTS.md): on an SGEMM an ACF on the default tile beat the best tile, and ACFs searched on top
of that tile found nothing; on FlashInfer's attention the larger KV tile spilled and an ACF searched on top of it
removed the spills, 0.901x where each alone gave 0.97x. A stage that searches ACFs goes on top of the best's
source parameters (-D) only, its compiler flags left out: an ACF sets the compiler's controls itself, and on the GPU
an ACF on top of ptxas flags never composed (an HGEMM's ACF at -O2 under a register cap spilled, 1.077x; on the
attention no ACF helped on top of --register-usage-level=10, where on top of the same tile alone one gave 0.901x).
Every search has its own entry in the journal (resumed
like any other; one on top of a configuration names it), its re-measure and its pin, which replaces the one
before unless that one is better beyond the noise, re-measured side by side (on top of a configuration a tie
keeps the pin too, there first and with fewer controls: ciq_build.tune.finish's tie_keeps_pin): the
pin at the end is the best validated of all. --time-limit and --max-evaluations cover the whole staged tune:
each stage gets an equal share of what the stages before it left, split equally among its searches.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

from ciq_build.compiler.controls import Controls, nvcc_arguments
from ciq_build.core.settings import duration_seconds
from ciq_build.errors import ConfigError
from ciq_build.search.select import is_acf_kind
from ciq_build.tune.finish import TuneOutcome
from ciq_build.tune.tune_options import STAGE_FROM_BEST, STAGE_FROM_DEFAULTS, TuneOptions, stage_kinds

# One stage's tune: the options of that stage alone, and what it goes on top of (None: the compiler's defaults).
RunStage = Callable[[TuneOptions, "Controls | None"], TuneOutcome]

# A stage's time share under this is no search: the stages from there on are not run.
_LEAST_STAGE_S = 1.0


def tune_in_stages(options: TuneOptions, run_stage: RunStage, say: Callable[[str], None]) -> TuneOutcome:
    """Each of `options.stages` tuned by `run_stage` in turn, from what `options.stage_from` says; the outcome of
    the stage whose winner is the pin at the end (the last stage's when none beat the defaults)."""
    stages = [stage_kinds(text) for text in options.stages]  # checked with the options (TuneOptions.validate)
    deadline = None if options.time_limit is None else time.monotonic() + duration_seconds(options.time_limit)
    evaluations_left = options.max_evaluations
    best: Controls | None = None
    kept: TuneOutcome | None = None  # the stage whose winner is the best so far
    outcome: TuneOutcome | None = None
    for index, kinds in enumerate(stages):
        share = _share(deadline, evaluations_left, len(stages) - index)
        if share is None:
            say(f"stage {index + 1} of {len(stages)} ({', '.join(kinds)}) and after: not run, the budget is spent")
            break
        beneath, left_out = _beneath(best, searches_acfs=any(is_acf_kind(kind) for kind in kinds))
        bases = _bases(options.stage_from, beneath)
        stage_end = None if share[0] is None else time.monotonic() + share[0]
        stage_evaluations = share[1]
        for searched, base in enumerate(bases):
            searches_left = len(bases) - searched
            seconds = None if stage_end is None else max(stage_end - time.monotonic(), 0.0) / searches_left
            evaluations = None if stage_evaluations is None else stage_evaluations // searches_left
            if (seconds is not None and seconds < _LEAST_STAGE_S) or (evaluations is not None and evaluations < 1):
                say(f"stage {index + 1} of {len(stages)} on top of {_shown(base)}: not run, the stage's budget is spent")
                continue
            say(f"stage {index + 1} of {len(stages)}: {', '.join(kinds)}, on top of "
                + (f"the best so far ({_shown(base)}{left_out})" if base is not None else "the compiler's defaults")
                + (f"; {seconds:.0f} s of the time limit" if seconds is not None else "")
                + (f"; {evaluations} evaluation(s)" if evaluations is not None else ""))
            stage_options = replace(options, controls=list(kinds), stages=[],
                                    time_limit=None if seconds is None else round(seconds),
                                    max_evaluations=evaluations)
            outcome = run_stage(stage_options, base)
            if outcome.better and outcome.winner is not None:
                best, kept = outcome.winner.controls, outcome
            spent = len(outcome.evaluations)  # as the search counts them: those from the journal too (a resume alike)
            if stage_evaluations is not None:
                stage_evaluations -= spent
            if evaluations_left is not None:
                evaluations_left -= spent
    if outcome is None:  # no stage had any budget: cannot happen with a positive budget, said all the same
        raise ConfigError("the budget left no stage to run (--time-limit, --max-evaluations)")
    say("staged tune: " + (f"the best validated configuration is {_shown(best)}" if best is not None else
                           "no stage beat the compiler's defaults beyond the noise"))
    return kept if kept is not None else outcome


def _beneath(best: Controls | None, searches_acfs: bool) -> tuple[Controls | None, str]:
    """What of the best so far a stage may go on top of: all of it, or for a stage that searches ACFs its source
    parameters alone (None where that leaves the defaults); and what the stage's line says it left out."""
    if best is None or not searches_acfs:
        return best, ""
    source = Controls(defines=best.defines)
    left_out = f"; its compiler flags ({' '.join(best.flags)}) left to the ACFs" if best.flags else ""
    return (None if source.is_default else source), left_out


def _bases(stage_from: str, best: Controls | None) -> list[Controls | None]:
    """What a stage's searches go on top of, in order (None: the compiler's defaults), given the best
    configuration the stages before it validated."""
    if best is None or stage_from == STAGE_FROM_DEFAULTS:
        return [None]
    return [best] if stage_from == STAGE_FROM_BEST else [None, best]


def _share(deadline: float | None, evaluations_left: int | None,
           stages_left: int) -> tuple[float | None, int | None] | None:
    """This stage's part of the budgets left (seconds, evaluations; None: no such budget), or None: nothing left."""
    seconds = None if deadline is None else (deadline - time.monotonic()) / stages_left
    evaluations = None if evaluations_left is None else evaluations_left // stages_left
    if (seconds is not None and seconds < _LEAST_STAGE_S) or (evaluations is not None and evaluations < 1):
        return None
    return seconds, evaluations


def _shown(controls: Controls | None) -> str:
    return " ".join(nvcc_arguments(controls)) if controls is not None and not controls.is_default else "the defaults"
