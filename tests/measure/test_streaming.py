"""Benchmarks that stream their repetitions' samples (CIQ_SAMPLES): read as they come, raced mid-process.

Each benchmark here is a real process (a Python script) that logs every
repetition it finishes to a file, so what a killed run did is counted by the
run itself, not assumed.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ciq_build.measure import bench, proc, protocol
from ciq_build.measure.bench import BenchSpec, run_once
from ciq_build.measure.racing import MIN_STREAMED, Incumbent, RaceBoard, race
from ciq_build.measure.stats import Measurement

# -- reading the samples -------------------------------------------------------------------------


def test_after_ciq_samples_every_value_is_a_sample_and_the_run_is_their_median() -> None:
    text = "CIQ_METRIC time_ms=9\nCIQ_SAMPLES\n" + "".join(f"CIQ_METRIC time_ms={t}\n" for t in (3, 1, 2, 8))
    parsed = protocol.parse_output(text + "CIQ_METRIC energy_j=4\nCIQ_CHECK PASS\n")
    assert parsed.samples["time_ms"] == (3.0, 1.0, 2.0, 8.0)  # the 9 before CIQ_SAMPLES is no sample
    assert parsed.metrics["time_ms"] == parsed.metrics["time"] == 2.5
    assert parsed.samples["energy_j"] == (4.0,) and parsed.check == "PASS"


def test_without_ciq_samples_the_last_value_wins_as_before() -> None:
    parsed = protocol.parse_output("CIQ_METRIC time_ms=3\nCIQ_METRIC time_ms=1\nCIQ_METRIC time_ms=2\n")
    assert parsed.metrics["time_ms"] == 2.0 and not parsed.samples
    assert protocol.parse_output("CIQ_SAMPLESX\nCIQ_METRIC time_ms=3\nCIQ_METRIC time_ms=1\n").samples == {}


def test_the_metric_regex_streams_samples_too_in_its_unit_and_wins() -> None:
    text = "CIQ_SAMPLES\nTime= 0.002 s\nCIQ_METRIC time_ms=50\nTime= 0.004 s\nTime= 0.003 s\n"
    parsed = protocol.parse_output(text, r"Time= (\S+) s", "s")
    assert parsed.samples["time_ms"] == parsed.samples["time"] == (2.0, 4.0, 3.0)
    assert parsed.metrics["time_ms"] == 3.0


def test_a_sample_that_measured_nothing_fails_the_run_even_before_the_last() -> None:
    # Without CIQ_SAMPLES a 0.0 warm-up line before the real figure is fine; as a sample it is used.
    assert not protocol.parse_output("Time= 0.0 ms\nTime= 1.5 ms\n", r"Time= (\S+) ms").problems
    parsed = protocol.parse_output("CIQ_SAMPLES\nTime= 0.0 ms\nTime= 1.5 ms\n", r"Time= (\S+) ms")
    assert parsed.problems and "measures nothing" in parsed.problems[0]


def test_a_measurement_pools_the_runs_samples() -> None:
    def run(*times: float) -> bench.BenchRun:
        parsed = protocol.parse_output("CIQ_SAMPLES\n" + "".join(f"CIQ_METRIC time_ms={t}\n" for t in times))
        return bench.BenchRun(True, None, "", dict(parsed.metrics), None, 1.0, "", samples=dict(parsed.samples))

    measured = Measurement.from_runs([run(1, 2, 3), run(4, 5, 6, 7, 8, 9)])
    assert measured.samples["time_ms"] == [1, 2, 3, 4, 5, 6, 7, 8, 9]
    assert measured.metrics["time_ms"] == 5.0  # the samples' median, not the median of the runs' (2 and 6.5)
    assert measured.iqr["time_ms"] == 4.0


# -- real streaming processes ---------------------------------------------------------------------


def _streamer(tmp_path: Path, times: list[float], *, pause: float = 0.02, hang_after: int | None = None,
              timeout: float = 60.0, stream: bool = True) -> tuple[BenchSpec, Path]:
    """A benchmark printing `times` as its repetitions' samples, each after `pause` s, logging each one."""
    log = tmp_path / "reps.log"
    script = tmp_path / "streamer.py"
    script.write_text(
        "import os, sys, time\n"
        f"times, log, stream = {times!r}, {str(log)!r}, {stream!r}\n"
        "if stream:\n"
        "    print('CIQ_SAMPLES', flush=True)\n"
        "for i, t in enumerate(times):\n"
        f"    if i == {hang_after!r}:\n"
        "        time.sleep(10**6)\n"
        f"    time.sleep({pause!r})\n"
        "    with open(log, 'a') as f:\n"
        "        f.write(f'{os.getpid()} {i}\\n')\n"
        "    if stream:\n"
        "        print(f'CIQ_METRIC time_ms={t}', flush=True)\n"
        "if not stream:\n"
        "    print(f'CIQ_METRIC time_ms={sum(times) / len(times)}')\n"
        "print('CIQ_CHECK PASS')\n")
    return BenchSpec(Path(sys.executable), (str(script),), timeout), log


def _logged(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def test_a_watch_stops_a_run_mid_way_and_kills_it(tmp_path: Path) -> None:
    spec, log = _streamer(tmp_path, [1.0] * 200)
    seen: list[str] = []

    def watch(line: str) -> bool:
        seen.append(line)
        return len(seen) == 6  # CIQ_SAMPLES and five samples
    result = proc.run([spec.path, *spec.args], 60.0, watch=watch)
    assert result.stopped and not result.timed_out and result.signal is not None
    assert seen[0] == "CIQ_SAMPLES" and seen[1:] == ["CIQ_METRIC time_ms=1.0"] * 5
    done = len(_logged(log))
    assert 5 <= done < 200, done  # it was killed long before its last repetition ...
    assert len(_logged(log)) == done  # ... and stays dead
    assert "stopped by its caller" in result.describe()


def test_racing_kills_a_losing_streaming_candidate_after_a_few_samples(tmp_path: Path) -> None:
    board = RaceBoard("time_ms", "min")
    board.offer(Incumbent(1.0, 0.01))
    spec, log = _streamer(tmp_path, [1.5] * 100)
    result = race(spec, 5, board)
    measured = result.measurement
    assert result.raced and measured.ok and len(measured.runs) == 1 and measured.runs[0].stopped
    samples = measured.samples["time_ms"]
    # Its own log: it stopped after a few of its 100 repetitions, and each one it printed is a sample.
    done = len(_logged(log))
    assert MIN_STREAMED <= len(samples) <= done < 100, (len(samples), done)
    assert set(samples) == {1.5} and measured.metrics["time_ms"] == 1.5
    assert board.incumbent == Incumbent(1.0, 0.01)  # a raced candidate is never the incumbent


def test_one_cold_sample_alone_does_not_stop_a_run(tmp_path: Path) -> None:
    board = RaceBoard("time_ms", "min")
    board.offer(Incumbent(1.0, 0.01))
    spec, log = _streamer(tmp_path, [5.0] + [0.99] * 9)  # a cold first repetition, then level with the best
    result = race(spec, 2, board)
    assert not result.raced and not result.placed and len(_logged(log)) == 20
    assert result.measurement.samples["time_ms"] == ([5.0] + [0.99] * 9) * 2
    assert board.incumbent is not None and board.incumbent.median == 0.99


def test_a_streaming_candidate_far_ahead_is_placed_after_one_run_and_becomes_the_incumbent(tmp_path: Path) -> None:
    board = RaceBoard("time_ms", "min")
    board.offer(Incumbent(1.0, 0.01))
    spec, log = _streamer(tmp_path, [2.0] + [0.5] * 9)  # cold first repetition, then twice as fast
    result = race(spec, 3, board)
    # One whole process (10 samples, more than the 3 a full measurement of one number a run has), not three.
    assert result.placed and not result.raced and len(result.measurement.runs) == 1
    assert len(_logged(log)) == 10 and not result.measurement.runs[0].stopped
    assert board.incumbent is not None and board.incumbent.median == 0.5

    (tmp_path / "closer").mkdir()
    closer, log = _streamer(tmp_path / "closer", [0.49] * 10)
    result = race(closer, 3, board)  # 2% ahead of the new incumbent: within its margin, so all three runs
    assert not result.placed and not result.raced and len(_logged(log)) == 30


def test_a_contender_streams_every_repetition_of_every_repeat(tmp_path: Path) -> None:
    board = RaceBoard("time_ms", "min")
    board.offer(Incumbent(1.0, 0.01))
    times = [1.0, 1.01, 0.99, 1.02, 1.0]
    spec, log = _streamer(tmp_path, times)
    result = race(spec, 3, board)
    assert not result.raced and len(result.measurement.runs) == 3 and len(_logged(log)) == 15
    assert result.measurement.samples["time_ms"] == times * 3


def test_a_streaming_benchmark_that_hangs_is_a_timeout_not_a_crash_of_the_tune(tmp_path: Path) -> None:
    board = RaceBoard("time_ms", "min")
    board.offer(Incumbent(1.0, 0.01))
    # Within the race's margin, so racing never stops it; it hangs after two samples: only the timeout can.
    spec, log = _streamer(tmp_path, [1.01] * 10, hang_after=2, timeout=1.0)
    result = race(spec, 3, board)
    failure = result.measurement.failure
    assert failure is not None and failure.cause == bench.BENCH_TIMEOUT and not result.measurement.ok
    assert len(_logged(log)) <= 2 and len(result.measurement.runs) == 1  # fewer when a loaded machine is slow


@pytest.mark.parametrize("stream", [True, False])
def test_run_once_without_a_stop_reads_the_same_whether_it_streams_or_not(tmp_path: Path, stream: bool) -> None:
    spec, _ = _streamer(tmp_path, [2.0, 1.0, 3.0], pause=0.0, stream=stream)
    run = run_once(spec)
    assert run.ok and not run.stopped and run.metrics["time_ms"] == 2.0
    assert run.values("time_ms") == ([2.0, 1.0, 3.0] if stream else [2.0])
    assert ("samples" in run.to_record()) == stream


def test_a_line_cut_by_the_kill_is_not_read(tmp_path: Path) -> None:
    # Three samples behind the incumbent and the start of a fourth line in one write, then nothing: racing
    # stops it on the third sample, and the cut 'CIQ_METRIC time_m' must not fail the run as a bad metric.
    script = tmp_path / "cut.py"
    script.write_text("import sys, time\n"
                      "sys.stdout.write('CIQ_SAMPLES\\n' + 'CIQ_METRIC time_ms=2.0\\n' * 3 + 'CIQ_METRIC time_m')\n"
                      "sys.stdout.flush()\ntime.sleep(10**6)\n")
    board = RaceBoard("time_ms", "min")
    board.offer(Incumbent(1.0, 0.01))
    result = race(BenchSpec(Path(sys.executable), (str(script),), 60.0), 3, board)
    run = result.measurement.runs[0]
    assert result.raced and run.ok and run.stopped, run.message
    assert result.measurement.samples["time_ms"] == [2.0, 2.0, 2.0]
