"""A staged tune's order of business (ciq_build.tune.stages), each stage's tune played by a function.

What a stage goes on top of, how the budgets are shared out, which outcome stands at the end. A real staged
tune (CMake, nvcc, the journal, the pin) runs in tests/tune/test_tune_old_pin.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ciq_build.compiler.controls import Controls
from ciq_build.errors import ConfigError
from ciq_build.search.base import Proposal
from ciq_build.search.evaluation import Evaluation
from ciq_build.tune.finish import TuneOutcome
from ciq_build.tune.stages import tune_in_stages
from ciq_build.tune.tune_options import TuneOptions


def _evaluation(controls: Controls) -> Evaluation:
    return Evaluation("", Proposal(0, 0, {}), controls, True, None, "", {}, {}, (1.0,), 0.0)


def _outcome(winner: Controls, better: bool, evaluated: int) -> TuneOutcome:
    return TuneOutcome(True, None, _evaluation(Controls()), _evaluation(winner),
                       [_evaluation(winner)] * evaluated, "verdict", better)


def test_with_stage_from_best_each_stage_goes_on_top_of_the_latest_winner_that_beat_the_defaults() -> None:
    knobs = Controls(flags=("-maxrregcount=64",), defines={"TILE": "8"})  # type: ignore[arg-type]
    acf_stage = Controls(flags=("-maxrregcount=64",), defines={"TILE": "16"})  # type: ignore[arg-type]
    results = iter([_outcome(knobs, True, 3), _outcome(acf_stage, False, 2), _outcome(Controls(), False, 1)])
    ran: list[tuple[list[str] | None, Controls | None, int | None]] = []
    said: list[str] = []

    def stage(options: TuneOptions, on_top: Controls | None) -> TuneOutcome:
        assert not options.stages
        ran.append((options.controls, on_top, options.max_evaluations))
        return next(results)

    options = TuneOptions(target="t", build_dir=Path("b"), stages=["knobs,params", "ptxas-acf:13.3", "params"],
                          max_evaluations=10, stage_from="best")
    outcome = tune_in_stages(options, stage, said.append)
    # 10 shared out: 3 (of 10 over 3 stages), then 3 (of 7 over 2), then 5 (of 5 over 1).
    # The ACF stage goes on top of the winner's source parameters alone: an ACF sets the compiler's controls itself
    # (on the GPU an ACF on top of ptxas flags never composed; on top of a tile it did). Other stages take it all.
    tile = Controls(defines={"TILE": "8"})  # type: ignore[arg-type]
    assert ran == [(["knobs", "params"], None, 3), (["ptxas-acf:13.3"], tile, 3), (["params"], knobs, 5)]
    assert outcome.winner is not None and outcome.winner.controls == knobs  # the stage whose winner stands
    assert said[1] == ("stage 2 of 3: ptxas-acf:13.3, on top of the best so far (-DTILE=8; its compiler flags "
                       "(-maxrregcount=64) left to the ACFs); 3 evaluation(s)")
    assert said[2] == "stage 3 of 3: params, on top of the best so far (-maxrregcount=64 -DTILE=8); 5 evaluation(s)"
    assert said[-1] == "staged tune: the best validated configuration is -maxrregcount=64 -DTILE=8"


def test_an_acf_stage_after_a_winner_of_compiler_flags_alone_searches_from_the_defaults_once() -> None:
    flags_only = Controls(flags=("-maxrregcount=128", "-Xptxas=-O2"))
    results = iter([_outcome(flags_only, True, 3), _outcome(Controls(), False, 2)])
    ran: list[Controls | None] = []

    def stage(options: TuneOptions, on_top: Controls | None) -> TuneOutcome:
        ran.append(on_top)
        return next(results)

    options = TuneOptions(target="t", build_dir=Path("b"), stages=["knobs", "ptxas-acf:13.3"], max_evaluations=10)
    outcome = tune_in_stages(options, stage, lambda _: None)
    assert ran == [None, None]  # the ACF stage: once from the defaults, its whole budget, not twice the same search
    assert outcome.winner is not None and outcome.winner.controls == flags_only


def test_with_stage_from_defaults_every_stage_searches_from_the_defaults_and_the_last_better_winner_stands() -> None:
    tile = Controls(defines={"TILE": "8"})  # type: ignore[arg-type]
    acf = Controls(flags=("-maxrregcount=64",))
    results = iter([_outcome(tile, True, 3), _outcome(acf, True, 2)])  # the ACF beat the tile's pin: it stands
    ran: list[tuple[list[str] | None, Controls | None]] = []
    said: list[str] = []

    def stage(options: TuneOptions, on_top: Controls | None) -> TuneOutcome:
        ran.append((options.controls, on_top))
        return next(results)

    options = TuneOptions(target="t", build_dir=Path("b"), stages=["knobs,params", "ptxas-acf:13.3"],
                          stage_from="defaults")
    outcome = tune_in_stages(options, stage, said.append)
    assert ran == [(["knobs", "params"], None), (["ptxas-acf:13.3"], None)]
    assert said[1] == "stage 2 of 2: ptxas-acf:13.3, on top of the compiler's defaults"
    assert outcome.winner is not None and outcome.winner.controls == acf
    assert said[-1] == "staged tune: the best validated configuration is -maxrregcount=64"


def test_by_default_a_later_stage_searches_from_the_defaults_then_on_top_of_the_best_each_with_half() -> None:
    # What the GPU measurements said (docs/RESULTS.md): on an SGEMM an ACF on the default tile beat ACFs on top of
    # the best tile; on an attention the ACF searched on top of the best tile composed with it. So both are searched.
    tile = Controls(defines={"TILE": "8"})  # type: ignore[arg-type]
    acf_on_tile = Controls(flags=("-maxrregcount=64",), defines={"TILE": "8"})  # type: ignore[arg-type]
    results = iter([_outcome(tile, True, 5), _outcome(Controls(), False, 2), _outcome(acf_on_tile, True, 3)])
    ran: list[tuple[list[str] | None, Controls | None, int | None]] = []
    said: list[str] = []

    def stage(options: TuneOptions, on_top: Controls | None) -> TuneOutcome:
        ran.append((options.controls, on_top, options.max_evaluations))
        return next(results)

    options = TuneOptions(target="t", build_dir=Path("b"), stages=["knobs,params", "ptxas-acf:13.3"],
                          max_evaluations=10)
    outcome = tune_in_stages(options, stage, said.append)
    # 10 shared out: 5 to stage 1; stage 2's 5 split: 2 from the defaults, then the 3 left on top of the tile.
    assert ran == [(["knobs", "params"], None, 5), (["ptxas-acf:13.3"], None, 2), (["ptxas-acf:13.3"], tile, 3)]
    assert said[1] == "stage 2 of 2: ptxas-acf:13.3, on top of the compiler's defaults; 2 evaluation(s)"
    assert said[2] == "stage 2 of 2: ptxas-acf:13.3, on top of the best so far (-DTILE=8); 3 evaluation(s)"
    assert outcome.winner is not None and outcome.winner.controls == acf_on_tile
    assert said[-1] == "staged tune: the best validated configuration is -maxrregcount=64 -DTILE=8"


def test_by_default_a_stage_after_one_that_validated_nothing_searches_once_from_the_defaults() -> None:
    results = iter([_outcome(Controls(), False, 4), _outcome(Controls(), False, 4)])
    ran: list[tuple[Controls | None, int | None]] = []

    def stage(options: TuneOptions, on_top: Controls | None) -> TuneOutcome:
        ran.append((on_top, options.max_evaluations))
        return next(results)

    options = TuneOptions(target="t", build_dir=Path("b"), stages=["knobs", "ptxas-acf:13.3"], max_evaluations=8)
    said: list[str] = []
    tune_in_stages(options, stage, said.append)
    assert ran == [(None, 4), (None, 4)]  # nothing to go on top of: the whole share from the defaults
    assert said[-1] == "staged tune: no stage beat the compiler's defaults beyond the noise"


def test_a_misspelt_later_stage_or_stages_with_controls_are_refused_with_the_options() -> None:
    with pytest.raises(ConfigError, match="--stage 'knob': unknown search space 'knob' \\(did you mean knobs\\?\\)"):
        TuneOptions(target="t", build_dir=Path("b"), stages=["params", "knob"]).validate()
    with pytest.raises(ConfigError, match="in place of --controls"):
        TuneOptions(target="t", build_dir=Path("b"), stages=["params"], controls=["knobs"]).validate()
    with pytest.raises(ConfigError, match="--stage names what the stage searches"):
        TuneOptions(target="t", build_dir=Path("b"), stages=[" , "]).validate()
    with pytest.raises(ConfigError, match="--stage-from best says where each --stage searches from: name the stages"):
        TuneOptions(target="t", build_dir=Path("b"), controls=["knobs"], stage_from="best").validate()
