"""Racing (ciq_build.measure.racing) and dedupe (ciq_build.tune.dedupe): their decisions on fixed sequences.

The sequential loop runs a real process (a script that prints the next time
from a file), so the runs it spends are counted, not assumed.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any

from ciq_build.compiler.controls import Controls
from ciq_build.core.causes import Cause
from ciq_build.core.objectives import Objective, parse_objectives
from ciq_build.measure.bench import BenchSpec
from ciq_build.measure.gpu_slots import GpuSlots
from ciq_build.measure.racing import Incumbent, RaceBoard, ahead, behind, race
from ciq_build.project.manifest import Benchmark, Manifest, ManifestToolchain
from ciq_build.project.worker import CandidateBuild
from ciq_build.search.base import Proposal
from ciq_build.search.evaluation import Evaluation
from ciq_build.tune.dedupe import CodeDedupe, taken_from
from ciq_build.tune.runner import BuildRunner
from ciq_build.tune.timeouts import Timeouts
from ciq_build.tune.winner import pick_winner

# -- the rule ---------------------------------------------------------------------------------


def test_a_candidate_whose_best_run_is_beyond_k_spreads_is_out() -> None:
    incumbent = Incumbent.from_samples([1.00, 1.01, 0.99, 1.02, 1.00])  # median 1.00, IQR 0.01 -> floor 0.01
    assert incumbent.median == 1.00 and abs(incumbent.margin() - 3 * 0.01) < 1e-12
    assert behind(incumbent, [1.031], "min")
    assert not behind(incumbent, [1.029], "min")  # within 3 spreads: may still win, run it again
    assert not behind(incumbent, [1.20, 1.25, 0.98], "min")  # one good run keeps it in: its best counts
    assert behind(incumbent, [0.969], "max") and not behind(incumbent, [0.971], "max")


def test_the_spread_is_the_incumbents_iqr_but_never_below_one_percent() -> None:
    noisy = Incumbent.from_samples([1.0, 1.1, 0.9, 1.2, 0.8])  # IQR 0.2: margin 0.6
    assert abs(noisy.margin() - 0.6) < 1e-12
    assert not behind(noisy, [1.55], "min") and behind(noisy, [1.65], "min")
    tight = Incumbent.from_samples([2.0, 2.0, 2.0])  # IQR 0: the floor, 1% of 2.0
    assert abs(tight.margin() - 0.06) < 1e-12
    assert not behind(tight, [2.05], "min") and behind(tight, [2.07], "min")


def test_a_candidate_better_than_the_incumbent_is_never_out() -> None:
    incumbent = Incumbent(1.0, 0.0)
    for samples in ([0.5], [0.99, 5.0, 7.0], [1.0]):
        assert not behind(incumbent, samples, "min")
    assert not behind(incumbent, [], "min")


def test_a_candidate_is_placed_when_its_upper_quartile_is_ahead_by_k_spreads() -> None:
    incumbent = Incumbent(1.0, 0.0)  # margin: the floor, 3 x 1% of 1.0
    assert ahead(incumbent, [0.96] * 10, "min") and not ahead(incumbent, [0.975] * 10, "min")
    assert ahead(incumbent, [5.0, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9], "min")  # a cold first sample moves it little
    assert not ahead(incumbent, [0.9, 0.9, 1.0, 1.0, 1.0], "min")  # its upper quartile is at the incumbent
    assert ahead(incumbent, [1.04] * 4, "max") and not ahead(incumbent, [1.02] * 4, "max")
    assert not ahead(incumbent, [], "min")


def test_the_board_keeps_the_best_median_offered() -> None:
    board = RaceBoard("time_ms", "min")
    assert board.incumbent is None
    board.offer(Incumbent(2.0, 0.1))
    board.offer(Incumbent(3.0, 0.0))  # worse: ignored
    board.offer(Incumbent(1.5, 0.2))
    assert board.incumbent == Incumbent(1.5, 0.2)


# -- the sequential loop, on a real process ------------------------------------------------


def _sequence(tmp_path: Path, times: list[float]) -> tuple[BenchSpec, Path]:
    """A benchmark printing the next of `times` each run; returns its spec and the file of times left."""
    left = tmp_path / "times"
    left.write_text("\n".join(str(t) for t in times))
    script = tmp_path / "sequence.py"
    script.write_text(
        "import sys\nfrom pathlib import Path\n"
        "p = Path(sys.argv[1]); lines = p.read_text().split()\n"
        "p.write_text('\\n'.join(lines[1:]))\nprint('CIQ_METRIC time_ms=' + lines[0])\n")
    return BenchSpec(Path(sys.executable), (str(script), str(left)), 10.0), left


def test_race_stops_after_one_run_when_far_behind_and_is_not_offered(tmp_path: Path) -> None:
    board = RaceBoard("time_ms", "min")
    board.offer(Incumbent(1.0, 0.01))
    spec, left = _sequence(tmp_path, [1.5, 1.5, 1.5, 1.5, 1.5])
    result = race(spec, 5, board)
    assert result.raced and len(result.measurement.runs) == 1 and result.measurement.ok
    assert result.measurement.metrics["time_ms"] == 1.5
    assert len(left.read_text().split()) == 4  # four runs never made
    assert board.incumbent == Incumbent(1.0, 0.01)


def test_race_stops_when_later_runs_leave_it_behind(tmp_path: Path) -> None:
    board = RaceBoard("time_ms", "min")
    board.offer(Incumbent(1.0, 0.01))
    spec, _ = _sequence(tmp_path, [1.02, 1.06, 1.2, 1.2, 1.2])  # 1.02 is within 0.03: a second run; still in
    result = race(spec, 5, board)
    assert not result.raced and len(result.measurement.runs) == 5  # its best (1.02) never leaves the margin

    spec, _ = _sequence(tmp_path, [1.5, 1.04, 1.0, 1.0, 1.0])
    assert race(spec, 5, board).raced  # dropped at run 1


def test_a_contender_gets_every_repeat_and_becomes_the_incumbent(tmp_path: Path) -> None:
    board = RaceBoard("time_ms", "min")
    board.offer(Incumbent(1.0, 0.01))
    spec, _ = _sequence(tmp_path, [0.9, 0.92, 0.88, 0.91, 0.9])
    result = race(spec, 5, board)
    assert not result.raced and len(result.measurement.runs) == 5
    assert board.incumbent is not None and board.incumbent.median == 0.9


def test_a_benchmark_of_one_number_a_run_gives_a_clear_winner_every_repeat(tmp_path: Path) -> None:
    board = RaceBoard("time_ms", "min")
    board.offer(Incumbent(1.0, 0.01))
    spec, left = _sequence(tmp_path, [0.5, 0.5, 0.5])  # far ahead, but one sample a run: no lead is placed early
    result = race(spec, 3, board)
    assert not result.raced and not result.placed and len(result.measurement.runs) == 3
    assert left.read_text().split() == []


def test_without_an_incumbent_every_repeat_runs(tmp_path: Path) -> None:
    board = RaceBoard("time_ms", "min")
    spec, _ = _sequence(tmp_path, [9.0, 9.0, 9.0])
    result = race(spec, 3, board)
    assert not result.raced and len(result.measurement.runs) == 3
    assert board.incumbent is not None and board.incumbent.median == 9.0


def test_the_last_repeat_is_never_called_raced(tmp_path: Path) -> None:
    board = RaceBoard("time_ms", "min")
    board.offer(Incumbent(1.0, 0.0))
    spec, _ = _sequence(tmp_path, [1.0, 5.0])
    result = race(spec, 1, board)  # one repeat asked: it is a full measurement, however slow
    assert not result.raced and len(result.measurement.runs) == 1


# -- raced candidates and the winner ------------------------------------------------------


def _evaluated(key: str, time_ms: float, *, raced: bool = False) -> Evaluation:
    return Evaluation(key, Proposal(id=len(key), generation=0, params={}), Controls(), True, None, "",
                      {"time_ms": time_ms}, {}, (time_ms,), 1.0, raced=raced)


def test_a_raced_candidate_never_wins_over_a_fully_measured_one() -> None:
    objectives = [Objective("time", "min", "benchmark")]
    baseline = _evaluated("base", 2.0)
    lucky = _evaluated("lucky", 0.5, raced=True)  # one fast run, dropped later: not a trustworthy median
    full = _evaluated("full", 1.0)
    assert pick_winner([lucky, full], baseline, objectives, "first") is full
    assert pick_winner([lucky], baseline, objectives, "first") is lucky  # nothing else to pick


# -- dedupe ---------------------------------------------------------------------------------


def test_the_same_code_is_measured_once_even_side_by_side() -> None:
    dedupe = CodeDedupe()
    measured: list[str] = []

    def measure(key: str) -> Evaluation:
        measured.append(key)
        time.sleep(0.2)  # the others arrive while this one is measuring
        return _evaluated(key, 1.25)

    results: dict[str, Evaluation] = {}

    def worker(key: str) -> None:
        mine = _evaluated(key, 0.0)
        results[key] = dedupe.evaluate("code-a", lambda: measure(key), lambda earlier: taken_from(earlier, mine))

    threads = [threading.Thread(target=worker, args=(f"k{i}",)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(measured) == 1 and dedupe.shared == 3
    first = measured[0]
    for key, evaluated in results.items():
        assert evaluated.key == key and evaluated.metrics == {"time_ms": 1.25}
        assert evaluated.same_code_as == (None if key == first else first)
        assert evaluated.runs == 0 or key == first


def test_an_environmental_failure_is_not_shared_and_no_code_shares_nothing() -> None:
    dedupe = CodeDedupe()
    killed = Evaluation("a", Proposal(id=1, generation=0, params={}), Controls(), False, Cause.BENCH_KILLED,
                        "killed", {}, {}, None, 1.0)
    assert killed.environmental
    assert dedupe.evaluate("code", lambda: killed, lambda e: e) is killed
    again = _evaluated("b", 1.0)
    assert dedupe.evaluate("code", lambda: again, lambda e: e) is again  # measured, not the kill
    crashed = dataclass_failed("c")
    assert dedupe.evaluate("other", lambda: crashed, lambda e: e) is crashed
    copied = dedupe.evaluate("other", lambda: _evaluated("d", 0.1), lambda e: taken_from(e, _evaluated("d", 0.1)))
    assert not copied.ok and copied.cause == Cause.BENCH_SIGNAL and copied.same_code_as == "c"  # same code, same crash
    assert dedupe.evaluate(None, lambda: again, lambda e: e) is again


def dataclass_failed(key: str) -> Evaluation:
    return Evaluation(key, Proposal(id=2, generation=0, params={}), Controls(), False, Cause.BENCH_SIGNAL,
                      "segfault", {}, {}, None, 1.0)


# -- compiles overlap benchmarks ------------------------------------------------------------


def test_the_next_candidate_compiles_while_one_is_benchmarked_but_compiles_stay_within_jobs(tmp_path: Path) -> None:
    # Events, not sleeps: the benchmark says when it runs and waits (up to 60 s) until a compile has seen it
    # running; a compile that could only start after a benchmark ended sees it ended. So the verdict does not
    # depend on how long a loaded machine takes to start a process.
    started, release, ended = tmp_path / "started", tmp_path / "release", tmp_path / "ended"
    script = tmp_path / "bench.py"  # a real process
    script.write_text(
        f"#!{sys.executable}\nimport os, time\nopen({str(started)!r}, 'a').close()\n"
        f"end = time.monotonic() + 60\nwhile not os.path.exists({str(release)!r}) and time.monotonic() < end:\n"
        f"    time.sleep(0.01)\nopen({str(ended)!r}, 'a').close()\nprint('CIQ_METRIC time_ms=1')\n")
    script.chmod(0o755)
    manifest = Manifest(
        target="kern", source_dir=tmp_path, binary_dir=tmp_path / "build", target_source_dir=tmp_path,
        target_binary_dir=tmp_path / "build", cuda_sources=(), object_dir=tmp_path / "build",
        benchmark=Benchmark("bench", script, ()), metric_regex="", objectives=("time",), params=(),
        search_space=("params",), pin_dir=tmp_path / "ciq", pin_file=tmp_path / "ciq" / "kern.json", timeout=120.0,
        options_file=tmp_path / "kern.nvcc-options", generator="Ninja", allow_numerics=False,
        toolchain=ManifestToolchain(Path("/usr/bin/nvcc"), "13.3.1", "90a"))
    builds: list[tuple[float, float]] = []
    compiled_during_a_benchmark: list[bool] = []

    class WaitingTree:
        """TEST DOUBLE for a scratch tree: the first "compile" is instant; the second waits until a benchmark
        has started, notes whether it still runs, then lets it finish."""

        build_dir = tmp_path
        benchmark_path = script

        def build(self, controls: Controls, timeout: float, static_only: bool = False, *,
                  benchmark: bool = True) -> CandidateBuild:
            start = time.monotonic()
            if builds:  # the second compile
                end = start + 90
                while not started.exists() and not ended.exists() and time.monotonic() < end:
                    time.sleep(0.01)
                compiled_during_a_benchmark.append(started.exists() and not ended.exists())
                release.touch()
            builds.append((start, time.monotonic()))
            return CandidateBuild(True, None, "", 0.0, "", (), script)

        def bench_spec(self, timeout: float, required: tuple[str, ...]) -> BenchSpec:
            return BenchSpec(path=script, args=tuple(()), timeout=timeout, cwd=tmp_path, required=required)

    runner = BuildRunner(manifest, None, parse_objectives(["time"]), 1, Timeouts(120.0, 120.0), GpuSlots(),
                         build_jobs=1)
    trees: list[Any] = [WaitingTree(), WaitingTree()]  # duck-typed scratch trees
    outcomes: list[Evaluation] = []
    threads = [threading.Thread(target=lambda i=i: outcomes.append(
                   runner.evaluate(trees[i], Proposal(i, 0, {}), Controls(), f"k{i}")))
               for i in range(2)]  # two workers (what --jobs 1 with one GPU gets), two candidates
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(builds) == 2 and len(outcomes) == 2 and all(o.ok for o in outcomes)
    (a0, a1), (b0, b1) = sorted(builds)
    assert b0 >= a1  # one compile at a time (--jobs 1)
    assert compiled_during_a_benchmark == [True]  # the second compile ran while the first benchmark ran
