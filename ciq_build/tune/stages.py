"""A staged tune (`tune --stage KINDS --stage KINDS ...`): one search after another, the pin the best of them.

Each stage is a whole tune of its own controls (what --controls would name). With `--stage-from defaults` (the
default) everything else stays at the compiler's defaults: the stages are separate searches, one after another,
whose winners meet in the pin's side-by-side re-measure. With `--stage-from best` everything else is fixed at the
best configuration the stages before it validated: the winner of the latest stage that beat the compiler's
defaults beyond the noise, and any better pin already there (ciq_build.tune.old_pin); the defaults until one
has. So `--stage knobs,params --stage ptxas-acf:13.3 --stage-from best` searches ACFs on top of the best knobs
and PARAMS. Searching from the defaults is the default because that is what the GPU measurements say: on four
kernels (two GEMMs, two attentions) the gains of knobs, PARAMS and ACFs never composed, and on the SGEMM the ACFs
searched on top of the best tile found nothing while an ACF on the default tile beat that tile. Every stage has
its own search in the journal (resumed like any other), its re-measure and its pin, which replaces the one before
unless that one is better beyond the noise, re-measured side by side (with `--stage-from best` a tie keeps the
pin too, whose controls the later winner holds and more: ciq_build.tune.finish's tie_keeps_pin): the pin at the
end is the best validated of all stages. --time-limit and --max-evaluations cover the whole staged tune: each stage gets an
equal share of what the stages before it left.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

from ciq_build.compiler.controls import Controls, nvcc_arguments
from ciq_build.core.settings import duration_seconds
from ciq_build.errors import ConfigError
from ciq_build.tune.finish import TuneOutcome
from ciq_build.tune.tune_options import STAGE_FROM_BEST, TuneOptions, stage_kinds

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
        left = len(stages) - index
        share = _share(deadline, evaluations_left, left)
        if share is None:
            say(f"stage {index + 1} of {len(stages)} ({', '.join(kinds)}) and after: not run, the budget is spent")
            break
        seconds, evaluations = share
        base = best if options.stage_from == STAGE_FROM_BEST else None
        say(f"stage {index + 1} of {len(stages)}: {', '.join(kinds)}, on top of "
            + (f"the best so far ({_shown(base)})" if base is not None else "the compiler's defaults")
            + (f"; {seconds:.0f} s of the time limit" if seconds is not None else "")
            + (f"; {evaluations} evaluation(s)" if evaluations is not None else ""))
        stage_options = replace(options, controls=list(kinds), stages=[],
                                time_limit=None if seconds is None else round(seconds), max_evaluations=evaluations)
        outcome = run_stage(stage_options, base)
        if outcome.better and outcome.winner is not None:
            best, kept = outcome.winner.controls, outcome
        if evaluations_left is not None:  # as the search counts them: those from the journal too (a resume shares alike)
            evaluations_left -= len(outcome.evaluations)
    if outcome is None:  # no stage had any budget: cannot happen with a positive budget, said all the same
        raise ConfigError("the budget left no stage to run (--time-limit, --max-evaluations)")
    say("staged tune: " + (f"the best validated configuration is {_shown(best)}" if best is not None else
                           "no stage beat the compiler's defaults beyond the noise"))
    return kept if kept is not None else outcome


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
