"""The GPU-busy figure: what share of the time from the first benchmark to the pin a benchmark held the GPU,
and what the GPU waited for otherwise, phase by phase (clock given, so the arithmetic is checked exactly; the
real tunes' figure: test_tune_gpu_busy.py)."""

from __future__ import annotations

import pytest

from ciq_build.tune.gpu_time import GpuMeter, MeteredSlots


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _hold(meter: GpuMeter, clock: Clock, start: float, end: float) -> None:
    clock.now = start
    with meter.holding():
        clock.now = end


def test_the_figure_runs_from_the_first_benchmark_to_now_and_says_what_the_gpu_waited_for() -> None:
    clock = Clock()
    meter = GpuMeter(clock)
    meter.enter("baseline")  # at 0: the baseline's build, before its first run, is not counted
    _hold(meter, clock, 10.0, 12.0)  # the baseline's runs
    clock.now = 12.0
    meter.enter("search")
    _hold(meter, clock, 15.0, 25.0)  # 3 s waiting for the first candidate's compile
    _hold(meter, clock, 25.0, 30.0)
    clock.now = 30.0
    meter.enter("rebuild")
    clock.now = 34.0
    meter.enter("re-measure")
    _hold(meter, clock, 34.0, 40.0)
    clock.now = 40.0
    meter.enter("minimize")
    clock.now = 41.0
    meter.enter("pin")
    clock.now = 42.0
    figures = meter.result()
    assert figures is not None
    assert figures.wall_s == pytest.approx(32.0) and figures.busy_s == pytest.approx(23.0)
    assert figures.fraction == pytest.approx(23.0 / 32.0)
    assert [figures.idle(p) for p in ("baseline", "search", "rebuild", "re-measure", "minimize", "pin")] == \
        pytest.approx([0.0, 3.0, 4.0, 0.0, 1.0, 1.0])
    text = figures.describe()
    assert text.startswith("a benchmark held the GPU 72% of the 32.0 s from the first benchmark to the pin")
    assert "candidates to compile 3.0 s" in text and "the winner's rebuild 4.0 s" in text
    assert "the baseline's build" not in text  # no wait after the first benchmark there
    journal = figures.to_journal()
    assert journal["busy_fraction"] == pytest.approx(0.7188, abs=1e-4)
    assert journal["phases"]["search"] == {"wall_s": 18.0, "busy_s": 15.0}


def test_several_gpus_count_each_gpus_time_and_no_benchmark_gives_no_figure() -> None:
    clock = Clock()
    meter = GpuMeter(clock)
    meter.enter("search")
    assert meter.result() is None
    _hold(meter, clock, 0.0, 10.0)
    _hold(meter, clock, 0.0, 5.0)  # the second GPU, half the time
    clock.now = 10.0
    figures = meter.result(gpus=2)
    assert figures is not None and figures.fraction == pytest.approx(0.75)
    assert figures.idle("search") == pytest.approx(5.0)
    assert "held the GPUs 75%" in figures.describe()


def test_metered_slots_record_each_hold_and_still_pin_the_gpu() -> None:
    slots = MeteredSlots(["3"])
    with slots.slot() as env:
        assert env == {"CUDA_VISIBLE_DEVICES": "3"}
    assert len(slots.meter.holds) == 1 and slots.count == 1
    with pytest.raises(ValueError, match="unknown phase"):
        slots.meter.enter("lunch")
