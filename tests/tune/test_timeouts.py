"""Where a tune's timeouts come from: the baseline's own limit, and the candidates' from its measurement."""

from __future__ import annotations

import ast
from pathlib import Path

import ciq_build
from ciq_build.compiler.controls import Controls
from ciq_build.core.objectives import parse_objectives
from ciq_build.core.settings import MeasureSettings, timeout_advice
from ciq_build.measure.gpu_slots import GpuSlots
from ciq_build.search.base import Proposal
from ciq_build.search.evaluation import KEPT_FRONT_END, Evaluation, journaled_timings
from ciq_build.tune.runner import BuildRunner
from ciq_build.tune.timeouts import (
    BASELINE_TIMEOUT,
    Timeouts,
    baseline_limits,
    for_baseline,
    for_candidates,
    for_configure,
)


def _baseline(compile_s: float, benchmark_s: float) -> Evaluation:
    return Evaluation("k", Proposal(-1, 0, {}), Controls(), True, None, "", {"compile_seconds": compile_s}, {},
                      (1.0,), compile_s + benchmark_s, timings={"compile_s": compile_s, "benchmark_s": benchmark_s})


def test_the_baseline_gets_a_generous_limit_unless_timeout_was_given() -> None:
    assert for_baseline(MeasureSettings(timeout=60)).compile == BASELINE_TIMEOUT == 600
    assert for_baseline(MeasureSettings(timeout=900)).benchmark == 900  # a larger TIMEOUT stays
    assert for_baseline(MeasureSettings(timeout=60, timeout_explicit=True)).compile == 60
    assert for_configure(MeasureSettings(timeout=1), 5) == BASELINE_TIMEOUT
    assert for_configure(MeasureSettings(timeout=1, timeout_explicit=True), 5) == 5


def test_the_baselines_line_says_when_its_build_and_runs_are_stopped() -> None:
    # A benchmark that hung was stopped after 600 s of silence, its TIMEOUT 5 raised to the baseline's floor.
    limits = for_baseline(MeasureSettings(timeout=5))
    said = baseline_limits(limits, benchmarked=True)
    assert said == "its build and each benchmark run are stopped after 600 s; tune --timeout S sets the limit"
    assert baseline_limits(limits, benchmarked=False).startswith("its build is stopped after 600 s;")
    assert "each benchmark run after 30 s" in baseline_limits(Timeouts(600.0, 30.0), benchmarked=True)


def test_candidates_get_four_times_the_baselines_compile_and_run_with_timeout_as_the_floor() -> None:
    # A 162 s baseline build (the 9-architecture sample) and 5 runs of 2 s each.
    slow = for_candidates(MeasureSettings(timeout=60, repeats=5), _baseline(162.0, 10.0))
    assert (slow.compile, slow.benchmark) == (648.0, 60.0)
    fast = for_candidates(MeasureSettings(timeout=60, repeats=5), _baseline(3.0, 1.0))
    assert (fast.compile, fast.benchmark) == (60.0, 60.0)
    given = for_candidates(MeasureSettings(timeout=30, repeats=5, timeout_explicit=True), _baseline(162.0, 10.0))
    assert (given.compile, given.benchmark) == (30.0, 30.0)
    assert "compile 648 s" in slow.describe(MeasureSettings(timeout=60))


def test_a_timeout_message_names_both_knobs() -> None:
    advice = timeout_advice(60)
    assert "60 s" in advice and "TIMEOUT in ciq_tune_target()" in advice and "tune --timeout" in advice


def test_the_candidates_runner_has_their_limits_and_knows_what_the_baselines_knew() -> None:
    baseline = BuildRunner(None, None, parse_objectives(["time"]), 1, Timeouts(600.0, 600.0), GpuSlots(),
                           build_jobs=2)
    baseline.code_context, baseline.scored_architecture = "defaults", "90"
    candidates = baseline.with_timeouts(Timeouts(648.0, 60.0))
    assert (candidates.timeouts, baseline.timeouts) == (Timeouts(648.0, 60.0), Timeouts(600.0, 600.0))
    assert candidates.racing is baseline.racing is not None and candidates.dedupe is baseline.dedupe is not None
    assert (candidates.code_context, candidates.scored_architecture) == ("defaults", "90")
    assert candidates._builds is baseline._builds and candidates._in_tree is baseline._in_tree  # one --jobs bound


def test_no_timeout_is_assigned_after_construction_anywhere_in_the_package() -> None:
    """A timeout travels as a value handed to a constructor, never by overwriting one (what lost the derived
    timeouts on Ray once): no assignment to a `*timeout*` attribute outside an `__init__`."""
    assigned = []
    for path in (Path(ciq_build.__file__).parent).rglob("*.py"):
        tree = ast.parse(path.read_text())
        for function in (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
            if function.name == "__init__":
                continue
            for node in ast.walk(function):
                targets = node.targets if isinstance(node, ast.Assign) else (
                    [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else [])
                assigned += [f"{path.name}:{t.lineno} {t.attr}" for t in targets
                             if isinstance(t, ast.Attribute) and "timeout" in t.attr]
            assigned += [f"{path.name}:{call.lineno} replace(..., timeout=)" for call in ast.walk(function)
                         if isinstance(call, ast.Call) and getattr(call.func, "attr", getattr(call.func, "id", ""))
                         == "replace" and any("timeout" in (k.arg or "") for k in call.keywords)]
    assert assigned == []


def test_a_baseline_built_from_kept_front_ends_limits_candidates_by_nvcc_whole() -> None:
    # simpleGEMM: the baseline's build took a front end kept by an earlier tune, ptxas only (0.8 s); a candidate
    # whose options reach cicc runs the front end again (about 20 s; CUTLASS 3's take minutes).
    kept = _baseline(0.8, 0.0)
    kept.timings[KEPT_FRONT_END] = 150.0
    assert for_candidates(MeasureSettings(timeout=60), kept).compile == 603.2
    # Journaled with the baseline, so a resume's limits are the same.
    assert journaled_timings(kept.to_journal())[KEPT_FRONT_END] == 150.0
