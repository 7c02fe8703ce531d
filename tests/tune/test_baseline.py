"""What a tune says of a baseline whose benchmark failed (ciq_build.tune.baseline)."""

from __future__ import annotations

from ciq_build.compiler.controls import Controls
from ciq_build.core.causes import Cause
from ciq_build.core.objectives import unbenchmarked_names
from ciq_build.search.base import Proposal
from ciq_build.search.evaluation import Evaluation
from ciq_build.tune.baseline import failed_baseline_text


def failed(cause: Cause, metrics: dict[str, float]) -> Evaluation:
    return Evaluation("b", Proposal(-1, 0, {}), Controls(), False, cause,
                      "the benchmark crashed: killed by SIGABRT\nterminate called without an active exception",
                      metrics, {}, None, 1.0)


def test_a_baseline_benchmark_that_failed_where_no_gpu_answered_says_so_and_what_to_tune_instead() -> None:
    # stdgpu's unordered_map example on a machine without a GPU aborts on its first CUDA call without printing the
    # runtime's words: the tune said "Fix the build or benchmark first", and a newcomer went looking for a bug.
    text = failed_baseline_text("unordered_map", failed(Cause.BENCH_SIGNAL, {"registers": 64.0}))
    assert text.startswith("the baseline of unordered_map (no compiler controls) failed: bench_signal: the "
                           "benchmark crashed: killed by SIGABRT\nterminate called without an active exception\n")
    assert "nvidia-smi reported no GPU where the benchmark ran, which is likely why it failed" in text
    assert f"--objective, one of {unbenchmarked_names()}" in text
    assert "Fix the build or benchmark first" not in text
    # Where a GPU ran it, or the build failed, the benchmark or the build is what to fix.
    # A run that ended well without its metric says why itself: a METRIC regex that matched no line is not the GPU.
    for cause, metrics in ((Cause.BENCH_SIGNAL, {"gpu_sm": 90.0}), (Cause.COMPILE_FAILED, {}), (Cause.NO_METRIC, {})):
        text = failed_baseline_text("unordered_map", failed(cause, metrics))
        assert "nvidia-smi" not in text and text.endswith("nothing can be compared to a failing baseline.")
