"""Where a tune's timeouts come from: the baseline's own limit, and the candidates' from its measurement."""

from __future__ import annotations

from ciq_build.compiler.controls import Controls
from ciq_build.core.settings import MeasureSettings, timeout_advice
from ciq_build.search.base import Proposal
from ciq_build.search.evaluation import Evaluation
from ciq_build.tune.timeouts import BASELINE_TIMEOUT, for_baseline, for_candidates, for_configure


def _baseline(compile_s: float, benchmark_s: float) -> Evaluation:
    return Evaluation("k", Proposal(-1, 0, {}), Controls(), True, None, "", {"compile_seconds": compile_s}, {},
                      (1.0,), compile_s + benchmark_s, timings={"compile_s": compile_s, "benchmark_s": benchmark_s})


def test_the_baseline_gets_a_generous_limit_unless_timeout_was_given() -> None:
    assert for_baseline(MeasureSettings(timeout=60)).compile == BASELINE_TIMEOUT == 600
    assert for_baseline(MeasureSettings(timeout=900)).benchmark == 900  # a larger TIMEOUT stays
    assert for_baseline(MeasureSettings(timeout=60, timeout_explicit=True)).compile == 60
    assert for_configure(MeasureSettings(timeout=1), 5) == BASELINE_TIMEOUT
    assert for_configure(MeasureSettings(timeout=1, timeout_explicit=True), 5) == 5


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
