"""ciq_build.measure.bench, .protocol, .stats and .gpu_slots with real misbehaving benchmark processes (tests/programs/)."""

from __future__ import annotations

import dataclasses
import random
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from ciq_build.errors import BenchmarkError, CiqError, ConfigError
from ciq_build.measure import bench, gpu_slots, proc, protocol, stats
from ciq_build.measure.bench import BenchSpec, run_once
from ciq_build.measure.gpu_slots import GpuSlots
from ciq_build.measure.stats import beats_baseline, interleaved, measure
from support import PROGRAMS, REPO_ROOT, ensure_ok

FAULT_BENCH = PROGRAMS / "fault_bench.py"


def fault(mode: str, *args: str, timeout: float = 10.0, **kwargs: object) -> BenchSpec:
    """A spec running tests/programs/fault_bench.py in `mode` with this Python."""
    return BenchSpec(Path(sys.executable), (str(FAULT_BENCH), mode, *args), timeout, **kwargs)  # type: ignore[arg-type]


def process_gone(pid: int) -> bool:
    """True when `pid` no longer runs (gone, or a zombie waiting to be reaped)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


def wait_gone(pid: int, seconds: float = 3.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process_gone(pid):
            return True
        time.sleep(0.02)
    return process_gone(pid)


@pytest.fixture(scope="module")
def segfault_exe(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests/programs/segfault.c built with the system C compiler."""
    gcc = shutil.which("gcc") or shutil.which("cc")
    if gcc is None:
        pytest.skip("needs a C compiler (gcc) to build the crashing benchmark")
    exe = tmp_path_factory.mktemp("segfault") / "segfault"
    ensure_ok(proc.run([gcc, "-O0", "-o", str(exe), str(PROGRAMS / "segfault.c")], 60))
    return exe


# -- one run: every cause, with a real process -------------------------------------------


def test_good_benchmark_reports_time_and_check() -> None:
    run = run_once(fault("good", "1.25"))
    assert run.ok and run.cause is None
    assert run.metrics == {"time_ms": 1.25, "time": 1.25}
    assert run.check == "PASS"
    assert run.seconds > 0
    assert "CIQ_METRIC time_ms=1.25" in run.output_tail


def test_hanging_benchmark_times_out() -> None:
    started = time.monotonic()
    run = run_once(fault("hang", timeout=0.5))
    assert not run.ok and run.cause == bench.BENCH_TIMEOUT
    assert "0.5 s timeout" in run.message
    # Stopped by its timeout, not left to hang for ever; the bound is loose, as a busy machine can take
    # seconds to start a Python process and to reap it.
    assert time.monotonic() - started < 60


def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    run = run_once(fault("hang_child", str(pid_file), timeout=1.0))
    assert run.cause == bench.BENCH_TIMEOUT
    child = int(pid_file.read_text())
    assert wait_gone(child), f"the benchmark's hanging child {child} survived the timeout"


def test_detached_child_of_a_finished_benchmark_is_killed(tmp_path: Path) -> None:
    pid_file = tmp_path / "daemon.pid"
    run = run_once(fault("daemon_child", str(pid_file), timeout=5.0))
    assert run.ok and run.metrics["time"] == 2.5
    assert wait_gone(int(pid_file.read_text())), "a daemonised child outlived its benchmark"


def test_real_segfault_is_bench_signal(segfault_exe: Path) -> None:
    run = run_once(BenchSpec(segfault_exe, (), 5.0))
    assert not run.ok and run.cause == bench.BENCH_SIGNAL
    assert "SIGSEGV" in run.message


def test_python_segfault_is_bench_signal_even_after_a_metric() -> None:
    run = run_once(fault("segv"))
    assert run.cause == bench.BENCH_SIGNAL and "SIGSEGV" in run.message


def test_garbage_and_non_utf8_output_are_ignored_around_a_metric() -> None:
    run = run_once(fault("garbage", "yes"))
    assert run.ok, run.message
    assert run.metrics["time"] == 3.5  # not the 9 of the near-miss lines
    assert run_once(fault("garbage", "no")).cause == bench.NO_METRIC


def test_huge_output_keeps_the_tail() -> None:
    assert run_once(fault("huge", "last")).metrics["time"] == 4.0
    lost = run_once(fault("huge", "first"))
    assert lost.cause == bench.NO_METRIC
    assert "print the CIQ_METRIC lines last" in lost.message
    assert len(lost.output_tail) < 10_000  # the journal gets a tail, not megabytes


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "abc", "1e999", "0", "0.000", "-0", "1e-300", "0.0000009"])
def test_unusable_time_is_bad_metric(value: str) -> None:
    run = run_once(fault("metric", value))
    assert not run.ok and run.cause == bench.BAD_METRIC
    assert "time_ms" in run.message


@pytest.mark.parametrize("energy", ["0", "0.000", "-0.5"])
def test_a_reading_of_0_or_below_of_a_metric_to_minimize_is_bad_metric_as_a_zero_time(energy: str) -> None:
    printed = f"print('CIQ_METRIC time_ms=1.5'); print('CIQ_METRIC energy_j={energy}')"
    spec = BenchSpec(Path(sys.executable), ("-c", printed), 10, required=("time_ms", "energy_j"),
                     positive=("time_ms", "energy_j"))
    run = run_once(spec)
    assert not run.ok and run.cause == bench.BAD_METRIC
    assert f"energy_j={float(energy):g} measures nothing for an objective to minimize" in run.message
    assert run_once(dataclasses.replace(spec, positive=("time_ms",))).ok  # maximized, or not an objective: a value


def test_failed_check_is_check_failed_even_with_nonzero_exit() -> None:
    run = run_once(fault("check_fail"))
    assert run.cause == bench.CHECK_FAILED and run.check == "FAIL"
    assert "max abs error" in run.output_tail


def test_nonzero_exit_is_bench_exit() -> None:
    run = run_once(fault("exit", "3"))
    assert run.cause == bench.BENCH_EXIT
    assert "code 3" in run.message and "out of memory" in run.output_tail


def test_no_metric_and_the_metric_regex() -> None:
    assert run_once(fault("no_metric")).cause == bench.NO_METRIC
    run = run_once(fault("no_metric", metric_regex=r"done in ([0-9.]+) ms"))
    assert run.ok and run.metrics["time"] == 1.75


def test_required_metric_missing_is_no_metric() -> None:
    run = run_once(fault("good", required=("time", "gflops")))
    assert run.cause == bench.NO_METRIC and "gflops" in run.message


def test_metric_on_stderr_counts() -> None:
    assert run_once(fault("stderr_metric")).metrics["time"] == 6.0


@pytest.mark.parametrize("mode", ["no_gpu", "cuda_text"])
def test_no_gpu_is_its_own_cause(mode: str) -> None:
    # The driver stops the tune on this cause (tests/tune/test_tune_sample.py checks its message).
    run = run_once(fault(mode))
    assert run.cause == bench.NO_GPU
    measured = measure(fault(mode), 3)
    assert measured.failure is not None and measured.failure.cause == bench.NO_GPU


def test_real_cuda_program_without_a_gpu_is_no_gpu(cuda133_bin: Path, tmp_path: Path) -> None:
    if Path("/dev/nvidia0").exists():
        pytest.skip("a GPU is present; this checks a machine without one")
    source = tmp_path / "probe.cu"
    source.write_text(
        "#include <cstdio>\n"
        "int main() { int n = 0; cudaError_t e = cudaGetDeviceCount(&n);\n"
        "  if (e != cudaSuccess) { fprintf(stderr, \"%s: %s\\n\", cudaGetErrorName(e), cudaGetErrorString(e));"
        " return 1; }\n"
        "  printf(\"CIQ_METRIC time_ms=1\\n\"); return 0; }\n"
    )
    exe = tmp_path / "probe"
    ensure_ok(proc.run([str(cuda133_bin / "nvcc"), "-cudart", "static", "-o", str(exe), str(source)], 120))
    run = run_once(BenchSpec(exe, (), 10.0))
    assert run.cause == bench.NO_GPU, run.message


def test_runtime_no_gpu_text_in_a_successful_run_is_not_no_gpu() -> None:
    # A benchmark that probes several devices may print the text and still measure: its passed check says so.
    run = run_once(fault("good", "1.0", "device 3: no CUDA-capable device is detected"))
    assert run.ok


@pytest.mark.parametrize("text", ["CUDA driver version is insufficient for CUDA runtime version",
                                  "no CUDA-capable device is detected"])
def test_a_time_printed_after_the_runtimes_no_gpu_text_without_a_passed_check_is_no_gpu(text: str) -> None:
    # simpleGEMM's CUDA_CHECK prints "GPUassert: <text>" and goes on: exit 0 and a time of 0.5 ms that timed nothing.
    run = run_once(fault("kernel_fault", text, metric_regex=r"Time elapse: ([0-9.]+) *ms"))
    assert not run.ok and run.cause == bench.NO_GPU, run.message
    assert f"found no usable GPU: 'GPUassert: {text} gemm.cuh 120'" in run.message


@pytest.mark.parametrize("error", ["an illegal memory access was encountered",
                                   "too many resources requested for launch", "cudaErrorLaunchFailure"])
def test_a_cuda_error_the_benchmark_printed_and_went_on_from_is_cuda_error(error: str) -> None:
    # Its CUDA_CHECK printed and went on: exit 0 and a time, which measured no work and would win.
    run = run_once(fault("kernel_fault", error, metric_regex=r"Time elapse: ([0-9.]+) *ms"))
    assert not run.ok and run.cause == bench.CUDA_ERROR
    assert f"printed a CUDA error, 'GPUassert: {error} gemm.cuh 120'" in run.message


def test_words_of_the_cuda_error_texts_in_other_lines_are_no_cuda_error() -> None:
    run = run_once(fault("good", "1.0", "an illegal memory access was avoided by padding",
                         "cudaErrorLaunchFailureCount=0"))
    assert run.ok, run.message


def test_missing_benchmark_is_a_setup_error(tmp_path: Path) -> None:
    with pytest.raises(BenchmarkError, match="does not exist or is not executable"):
        run_once(BenchSpec(tmp_path / "nope", (), 1.0))


def test_env_and_cwd_reach_the_benchmark(tmp_path: Path) -> None:
    script = tmp_path / "env_bench.py"
    script.write_text(
        "import os\nprint('CIQ_METRIC time_ms=' + os.environ['BENCH_TIME'])\n"
        "print('CIQ_METRIC in_cwd=' + str(int(os.path.exists('marker'))))\n"
    )
    (tmp_path / "marker").write_text("")
    run = run_once(BenchSpec(Path(sys.executable), (str(script),), 5.0, cwd=tmp_path, env={"BENCH_TIME": "7"}))
    assert run.metrics["time"] == 7.0 and run.metrics["in_cwd"] == 1.0


def test_bad_spec_is_config_error() -> None:
    with pytest.raises(ConfigError, match="no group"):
        fault("good", metric_regex=r"time [0-9.]+")
    with pytest.raises(ConfigError, match="not a valid"):
        fault("good", metric_regex=r"(unclosed")
    with pytest.raises(ConfigError, match="timeout"):
        fault("good", timeout=0)


def test_a_metric_regex_with_a_bar_outside_its_groups_is_refused_and_one_inside_or_escaped_is_not() -> None:
    # llm.c's layernorm benchmark prints "block_size  256 | time 0.1500 ms | ..." for six block sizes; its METRIC
    # "block_size +256 \| time ([0-9.]+) ms", quoted in CMakeLists.txt, reached tune as "block_size +256 | time
    # ([0-9.]+) ms" (CMake takes the backslash): two alternatives, and the time read was block size 1024's.
    output = "".join(f"block_size {size:4d} | time {ms} ms | bandwidth 1.00 GB/s\n"
                     for size, ms in ((256, "0.1500"), (1024, "0.2500")))
    with pytest.raises(ConfigError, match=r"has a \| outside every group: .* write \[\|\] \(in CMake a quoted "):
        protocol.compile_metric_regex("block_size +256 | time ([0-9.]+) ms")
    for meant in (r"block_size +256 \| time ([0-9.]+) ms", "block_size +256 [|] time ([0-9.]+) ms",
                  "block_size +256 [|] time ([0-9.]+) (ms|us)"):
        assert protocol.parse_output(output, meant).metrics["time_ms"] == 0.15


# -- repeats -------------------------------------------------------------------------------


def test_measure_takes_medians_and_spreads(tmp_path: Path) -> None:
    times = tmp_path / "times"
    times.write_text("3\n1\n2\n5\n4\n")
    script = tmp_path / "varying.py"
    script.write_text(
        "import sys\nfrom pathlib import Path\n"
        "p = Path(sys.argv[1]); lines = p.read_text().split()\n"
        "p.write_text('\\n'.join(lines[1:]))\nprint('CIQ_METRIC time_ms=' + lines[0])\n"
    )
    result = measure(BenchSpec(Path(sys.executable), (str(script), str(times)), 5.0), 5)
    assert result.ok and len(result.runs) == 5
    assert result.metrics["time"] == 3.0
    assert result.samples["time"] == [3.0, 1.0, 2.0, 5.0, 4.0]
    spread = result.spread["time"]
    assert (spread.min, spread.max, spread.iqr) == (1.0, 5.0, 2.0)
    assert result.iqr["time"] == 2.0


def test_measure_fails_on_the_first_failed_repeat_and_stops() -> None:
    result = measure(fault("hang", timeout=0.5), 4)
    assert not result.ok and result.failure is not None
    assert result.failure.cause == bench.BENCH_TIMEOUT
    assert len(result.runs) == 1 and result.metrics == {}  # one timeout, not 4 (whatever the clock says)


def test_interleaved_alternates_and_balances_order(tmp_path: Path) -> None:
    log = tmp_path / "order"
    a = fault("record", str(log), "A", "2.0")
    b = fault("record", str(log), "B", "1.0")
    ma, mb = interleaved(a, b, 4)
    assert log.read_text().split() == ["A", "B", "B", "A", "A", "B", "B", "A"]
    assert ma.metrics["time"] == 2.0 and mb.metrics["time"] == 1.0
    assert len(ma.runs) == len(mb.runs) == 4


def test_interleaved_stops_running_a_failed_side(tmp_path: Path) -> None:
    log = tmp_path / "order"
    ma, mb = interleaved(fault("exit", "2"), fault("record", str(log), "B", "1.0"), 3)
    assert not ma.ok and len(ma.runs) == 1
    assert mb.ok and log.read_text().split() == ["B", "B", "B"]


def test_interleaved_ends_at_its_look_when_the_rounds_so_far_settle_it(tmp_path: Path) -> None:
    log = tmp_path / "order"
    a = fault("record", str(log), "A", "2.0")
    b = fault("record", str(log), "B", "1.0")
    seen: list[tuple[int, int]] = []

    def settled(ma: stats.Measurement, mb: stats.Measurement) -> bool:
        seen.append((len(ma.runs), len(mb.runs)))
        return True

    ma, mb = interleaved(a, b, 6, look=(3, settled))
    assert seen == [(3, 3)] and len(ma.runs) == len(mb.runs) == 3
    assert log.read_text().split() == ["A", "B", "B", "A", "A", "B"]
    log.unlink()
    ma, mb = interleaved(a, b, 6, look=(3, lambda ma, mb: False))
    assert len(ma.runs) == len(mb.runs) == 6 and len(log.read_text().split()) == 12


def test_the_look_is_half_way_or_the_first_round_after_it_where_its_level_can_be_reached() -> None:
    # 5 a side is the least that can reach INTERIM_ALPHA (1/252); 4 a side cannot (1/70).
    assert stats.min_p(5, 5) <= stats.INTERIM_ALPHA < stats.min_p(4, 4)
    assert {rounds: stats.interim_look(rounds) for rounds in (3, 5, 6, 8, 9, 10, 12, 20)} == \
        {3: None, 5: None, 6: 5, 8: 5, 9: 5, 10: 5, 12: 6, 20: 10}


@pytest.mark.parametrize("rounds", [6, 10])
def test_the_two_looks_of_the_remeasure_pin_no_more_false_winners_and_lose_no_power(rounds: int) -> None:
    """The re-measure before a pin looks once (stats.interim_look, stats.INTERIM_ALPHA) and at the end
    (stats.FINAL_ALPHA): two chances to call a candidate better must not make a candidate no better than the
    defaults pass more often than one look's 5%, nor miss a small real gain more often than one look; a
    clear gain ends at the look."""
    rng = random.Random(0)
    looked = stats.interim_look(rounds)
    assert looked is not None

    def trial(effect: float) -> tuple[bool, bool, bool]:  # (two looks pin, ended at the look, one look pins)
        base = [rng.gauss(1.0, 0.02) for _ in range(rounds)]
        cand = [rng.gauss(effect, 0.02) for _ in range(rounds)]
        early = beats_baseline(base[:looked], cand[:looked], "min", alpha=stats.INTERIM_ALPHA).better
        final = early or beats_baseline(base, cand, "min", alpha=stats.FINAL_ALPHA).better
        return final, early, beats_baseline(base, cand, "min").better

    null = [trial(1.0) for _ in range(1000)]
    assert sum(t[0] for t in null) / len(null) <= 0.05
    small = [trial(0.98) for _ in range(1000)]  # a 2% gain in 2% noise: found about a quarter of the time
    assert sum(t[0] for t in small) >= sum(t[2] for t in small) - 30
    clear = [trial(0.9) for _ in range(200)]
    assert all(t[0] for t in clear) and sum(t[1] for t in clear) >= 190


# -- better beyond the noise -------------------------------------------------------------


def test_overlapping_samples_are_not_better() -> None:
    verdict = beats_baseline([1.00, 1.10, 0.95, 1.05, 1.02], [0.98, 1.08, 0.96, 1.01, 1.04], "min")
    assert not verdict.better
    assert "noise" in verdict.explanation


def test_clearly_separated_samples_are_better() -> None:
    verdict = beats_baseline([1.00, 1.02, 0.99, 1.01, 1.03], [0.80, 0.81, 0.79, 0.82, 0.80], "min")
    assert verdict.better
    assert verdict.ratio == pytest.approx(0.80 / 1.01)
    assert verdict.p_value < 0.01


def test_the_verdict_on_a_time_read_from_a_rate_shows_the_rates_the_benchmark_printed() -> None:
    # time = 1000 / TFLOPS ms per unit of work: 100 TFLOPS -> 10, 150 TFLOPS -> 6.67.
    base, cand = [1e3 / r for r in (100, 101, 99, 100.5, 99.5)], [1e3 / r for r in (150, 151, 149, 150.5, 149.5)]
    verdict = beats_baseline(base, cand, "min", rate_unit="TFLOPS")
    assert verdict.better and verdict.ratio == pytest.approx(100 / 150)
    assert verdict.explanation.startswith("better beyond the noise: median 150 TFLOPS vs baseline 100 TFLOPS "
                                          "(time ratio 0.6667, i.e. +50.0% TFLOPS), noise (larger IQR) 1.0% of the "
                                          "baseline, p=")
    # A time is shown as it was measured.
    assert "median 6.66667 vs baseline 10 (ratio 0.6667, min is better), noise" in beats_baseline(
        base, cand, "min").explanation


def test_direction_max() -> None:
    low, high = [100.0, 101, 99, 100.5, 100.2], [120.0, 121, 119, 120.5, 122]
    assert beats_baseline(low, high, "max").better
    assert not beats_baseline(high, low, "max").better
    assert not beats_baseline(low, high, "min").better


def test_separated_medians_within_wide_noise_are_not_better() -> None:
    # Medians differ, but the baseline scatters more than the difference.
    verdict = beats_baseline([0.7, 0.85, 1.0, 1.15, 1.3], [0.85, 0.86, 0.84, 0.85, 0.86], "min")
    assert not verdict.better and "within the noise" in verdict.explanation


def test_too_few_samples_are_never_significant() -> None:
    verdict = beats_baseline([1.0, 1.0], [0.5, 0.5], "min")
    assert not verdict.better and "too few samples" in verdict.explanation
    assert beats_baseline([1.0, 1.01, 1.02], [0.5, 0.51, 0.52], "min").better  # 3 vs 3 can pass


def test_identical_and_non_finite_samples() -> None:
    assert not beats_baseline([1.0] * 5, [1.0] * 5, "min").better
    verdict = beats_baseline([1.0, 1.0], [float("nan")], "min")
    assert not verdict.better and "no finite samples" in verdict.explanation
    with pytest.raises(ConfigError):
        beats_baseline([1.0], [1.0], "fastest")  # type: ignore[arg-type]


def test_mann_whitney_matches_known_exact_values() -> None:
    # 5 vs 5 fully separated: 1 / C(10, 5); with ties the mid-rank version must stay in (0, 1].
    assert beats_baseline([2, 3, 4, 5, 6], [1, 0.5, 0.4, 0.3, 0.2], "min").p_value == pytest.approx(1 / 252)
    tied = beats_baseline([1, 1, 2, 2, 3], [1, 1, 1, 2, 2], "min").p_value
    assert 0 < tied < 1


# -- GPU slots -------------------------------------------------------------------------------


def test_one_gpu_never_runs_two_benchmarks_at_once(tmp_path: Path) -> None:
    slots = GpuSlots()
    spec = fault("exclusive", str(tmp_path), "0.15")
    runs: list[bench.BenchRun] = []
    threads = [threading.Thread(target=lambda: runs.append(run_once(spec, slots=slots))) for _ in range(4)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(runs) == 4 and all(run.ok for run in runs), [run.message for run in runs]
    assert time.monotonic() - started >= 4 * 0.15


def test_without_slots_the_overlap_detector_fires(tmp_path: Path) -> None:
    # Proves the exclusivity test above can fail: unslotted runs do collide.
    spec = fault("exclusive", str(tmp_path), "0.5")
    runs: list[bench.BenchRun] = []
    threads = [threading.Thread(target=lambda: runs.append(run_once(spec))) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert any(run.cause == bench.CHECK_FAILED for run in runs)


_SLOTTED_RUN = """
import sys
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from ciq_build.measure.bench import BenchSpec, run_once
from ciq_build.measure.gpu_slots import GpuSlots
run = run_once(BenchSpec(Path(sys.executable), (sys.argv[2], "exclusive", sys.argv[3], "1.0"), 30.0), slots=GpuSlots())
print("ok" if run.ok else run.cause)
"""


def _processes_benchmarking_at_once(tmp_path: Path, env: dict[str, str]) -> list[str]:
    """Three tunes' worth of processes, each running one benchmark on "the" GPU at the same moment."""
    command = [sys.executable, "-c", _SLOTTED_RUN, str(REPO_ROOT), str(FAULT_BENCH),
               str(tmp_path / "gpu")]
    children = [subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env) for _ in range(3)]
    return [child.communicate(timeout=60)[0].strip() for child in children]


@pytest.mark.slow
def test_tunes_sharing_a_gpu_lock_dir_never_benchmark_on_one_gpu_at_once(tmp_path: Path) -> None:
    # Several tunes at once on one machine (tune A B --executor ray sets CIQ_GPU_LOCK_DIR for its children).
    import os

    (tmp_path / "gpu").mkdir()
    locked = _processes_benchmarking_at_once(tmp_path, {**os.environ, gpu_slots.GPU_LOCK_DIR: str(tmp_path / "locks")})
    assert locked == ["ok"] * 3
    # Without the shared locks the same processes do collide: the check above can fail.
    apart = _processes_benchmarking_at_once(tmp_path, {k: v for k, v in os.environ.items()
                                                       if k != gpu_slots.GPU_LOCK_DIR})
    assert any(result != "ok" for result in apart), apart


def test_several_gpus_each_get_their_own_device(tmp_path: Path) -> None:
    slots = GpuSlots(["0", "1"])
    spec = fault("exclusive", str(tmp_path), "0.2")
    runs: list[bench.BenchRun] = []
    threads = [threading.Thread(target=lambda: runs.append(run_once(spec, slots=slots))) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(run.ok for run in runs), [run.message for run in runs]
    assert {run.metrics["device"] for run in runs} == {0.0, 1.0}  # both GPUs used, never shared
    assert sorted(set((tmp_path / "log").read_text().split())) == ["0", "1"]


def test_gpu_slots_refuse_duplicates() -> None:
    with pytest.raises(ConfigError, match="twice"):
        GpuSlots(["0", "0"])
    with pytest.raises(CiqError):
        GpuSlots(["0", " "])


def test_gpu_slot_is_returned_after_an_exception() -> None:
    slots = GpuSlots(["3"])
    with pytest.raises(RuntimeError):
        with slots.slot():
            raise RuntimeError("benchmark thread failed")
    with slots.slot() as env:
        assert env == {"CUDA_VISIBLE_DEVICES": "3"}


def test_run_record_is_json_ready() -> None:
    import json

    record = run_once(fault("good")).to_record()
    assert json.loads(json.dumps(record))["metrics"]["time"] == 1.25


# -- the parser's rules, on text ----------------------------------------------------------


def test_parser_rules_for_duplicates_checks_and_the_regex() -> None:
    text = "\n".join([
        "CIQ_METRIC time_ms=2.0",
        "CIQ_METRIC time_ms=1.5",  # the last value wins
        "CIQ_METRIC delta=-3",  # negative is fine for a metric that is not a time
        "CIQ_METRICS time_ms=99",  # not the protocol keyword
        "CIQ_CHECK PASS",
        "elapsed 0.75 ms", "elapsed 0.5 ms",  # the regex's last match wins, over time_ms
    ])
    parsed = protocol.parse_output(text, r"elapsed ([0-9.]+) ms")
    # ... under both names: time_ms is what the tune's time objective reads.
    assert parsed.metrics == {"time_ms": 0.5, "delta": -3.0, "time": 0.5}
    assert parsed.check == "PASS" and parsed.problems == ()
    assert protocol.parse_output(text).metrics["time"] == 1.5


def test_a_metric_whose_first_group_took_no_number_says_which_later_group_did() -> None:
    # cuda-ground-up's gemm_runner: a METRIC with a group around the size too read "4096x4096x4096" as the time,
    # said as "not a number" and nothing more: the number was the regex's second group.
    line = "kernel 5 (2D tiling) (blockDim(16,16)) GFLOPS for size (4096x4096x4096): 12345.6"
    parsed = protocol.parse_output(line, r"GFLOPS for size \(([0-9x]+)\): ([0-9.]+)", "GFLOPS")
    assert "time" not in parsed.metrics
    assert parsed.problems == (
        "METRIC regex captured '4096x4096x4096': not a number (the time is METRIC's first group, and its group 2 took "
        "the number '12345.6': make the groups before that one non-capturing, (?:...), and match a literal ( as [(] "
        "(in CMake a quoted \\( is a plain (: CMake takes the backslash))",)
    # No later group holds a number: the message is as before.
    assert protocol.parse_output("time: n/a ms (run 3)", r"time: (\S+) ms \(run (x)?").problems == (
        "METRIC regex captured 'n/a': not a number",)
    fixed = protocol.parse_output(line, r"GFLOPS for size [(](?:[0-9x]+)[)]: ([0-9.]+)", "GFLOPS")
    assert fixed.problems == () and round(fixed.metrics["time"], 6) == round(1000 / 12345.6, 6)


@pytest.mark.parametrize(
    "lines",
    [["CIQ_CHECK PASS", "CIQ_CHECK FAIL"], ["CIQ_CHECK FAIL", "CIQ_CHECK PASS"], ["CIQ_CHECK maybe"]],
)
def test_any_fail_or_unreadable_check_is_fail(lines: list[str]) -> None:
    assert protocol.parse_output("\n".join(lines)).check == "FAIL"


@pytest.mark.parametrize(
    ("line", "unit", "expected"),
    [("Time= 0.0023712 sec", "s", 2.3712), ("Time= 2.3712 msec", "ms", 2.3712), ("Time= 2371.2 usec", "us", 2.3712),
     ("Time= 2371200 nsec", "ns", 2.3712), ("Time= 2.3712e-3 sec", "s", 2.3712), ("Time= 1e-9 sec", "s", 1e-6)],
)
def test_the_regex_value_is_converted_from_its_unit_to_ms_under_both_time_names(
        line: str, unit: str, expected: float) -> None:
    parsed = protocol.parse_output(f"warming up\n{line}\n", r"Time= *(\S+) \w+", unit)
    assert parsed.metrics == {"time": expected, "time_ms": expected}  # exact: one decimal rounding
    assert parsed.printed_times["time_ms"].unit == unit and parsed.printed_times["time_ms"].line is None


def test_the_unit_applies_to_the_regex_only_and_must_be_known() -> None:
    # The line protocol is milliseconds whatever UNIT says; a protocol benchmark parses as before.
    assert protocol.parse_output("CIQ_METRIC time_ms=1.5\nCIQ_METRIC x_s=2\n", None, "s").metrics == {
        "time_ms": 1.5, "x_s": 2.0, "time": 1.5}
    assert protocol.parse_output("CIQ_METRIC time_ms=1.5\n").printed_times["time_ms"].unit == "ms"
    for unit in ("min", "MS", "", None, "GFLOP", "GB/min"):
        with pytest.raises(ConfigError, match=r"use s, ms, us or ns \(a time: lower is better\) or a rate \(higher "
                                              r"is better: FLOPS, .* any <word>/s or <word>/sec such as GFLOP/s, "
                                              r"GB/s, items/s, MBytes/sec\)"):
            protocol.parse_output("Time= 1 sec", r"Time= (\S+)", unit)
        with pytest.raises(ConfigError, match="set UNIT in ciq_tune_target"):
            fault("good", metric_regex=r"Time= (\S+)", metric_unit=unit)
    spec = fault("good", metric_regex=r"Time= (\S+)", metric_unit="us")
    assert spec.with_env({"A": "1"}).metric_unit == "us"  # kept by with_env


def test_a_rate_is_read_as_the_time_a_unit_of_work_takes_so_higher_is_better() -> None:
    # simpleGEMM prints "TFLOPS: ...": time is 1000 / rate ms per Tflop, so a 10% higher rate is 0.909x the time. A
    # CIQ_METRIC time_ms line (a whole run's milliseconds, another unit) is never the time then.
    def rate(*lines: str) -> bench.BenchRun:
        return run_once(fault("good", "1.0", *lines, metric_regex=r"TFLOPS: *([0-9.]+)", metric_unit="TFLOPS"))

    slow, fast = rate("TFLOPS: 100.0"), rate("TFLOPS: 0", "TFLOPS: 110.0")  # a warm-up 0 before the last counts not
    assert slow.ok and fast.ok, (slow.message, fast.message)
    assert slow.metrics["time_ms"] == slow.metrics["time"] == 10.0
    assert fast.metrics["time_ms"] / slow.metrics["time_ms"] == pytest.approx(1 / 1.1)  # 0.909x the defaults' time
    assert fast.printed_times["time_ms"] == protocol.PrintedTime("110.0", "TFLOPS", 1 / 1100)  # as printed
    zero = rate("TFLOPS: 0.0")
    assert zero.cause == bench.BAD_METRIC and "a rate of 0 or below measures nothing (TFLOPS" in zero.message
    unmatched = rate()
    assert unmatched.cause == bench.NO_METRIC and "matched no line" in unmatched.message
    # Any <word>/s is a rate; the protocol's other metrics are read as ever.
    parsed = protocol.parse_output("CIQ_METRIC x_us=2\n512 GB/s", r"([0-9.]+) GB/s", "GB/s")
    assert parsed.metrics == {"x_us": 2.0, "time_ms": pytest.approx(1000 / 512), "time": pytest.approx(1000 / 512)}


def test_huge_exponents_in_any_unit_are_bad_metrics_not_crashes() -> None:
    for text in ("Time= 1e400 sec", "Time= 1e99999999999999999999 sec", "Time= 1e" + "9" * 5000 + " sec"):
        parsed = protocol.parse_output(text, r"Time= (\S+) sec", "s")
        assert "time" not in parsed.metrics and "finite" in parsed.problems[0]
    tiny = protocol.parse_output("Time= 1e-99999999999 sec", r"Time= (\S+) sec", "s")  # 0 in any unit
    assert "time" not in tiny.metrics and "below 1 ns" in tiny.problems[0]


@pytest.mark.parametrize(
    ("printed", "resolution"),
    [("2.371", 1 / 2371), ("0.00009", 1 / 9), ("0.0023712", 1 / 23712), ("12", 1 / 12), ("1.20e-3", 1 / 120),
     ("+.5", 1 / 5), ("1234567890.1234567", 0.0)],
)
def test_the_resolution_of_a_printed_time_is_its_last_digit_over_its_value(printed: str, resolution: float) -> None:
    through_regex = protocol.parse_output(f"Time= {printed} sec", r"Time= (\S+) sec", "s").printed_times
    through_lines = protocol.parse_output(f"CIQ_METRIC time_ms={printed}\nCIQ_METRIC kernel_s={printed}").printed_times
    for name, times in (("time_ms", through_regex), ("time_ms", through_lines), ("time", through_lines),
                        ("kernel_s", through_lines)):
        assert times[name].text == printed
        assert times[name].resolution == pytest.approx(resolution)
        assert times[name].coarse == (resolution > protocol.COARSE_RESOLUTION)


def test_the_coarse_precision_warning_says_what_was_printed_and_what_to_do() -> None:
    printed = protocol.parse_output("Time= 0.00009 s", r"Time= (\S+) s", "s").printed_times["time_ms"]
    assert printed.coarse
    text = protocol.coarse_precision_warning("gemm_bench", printed, r"Time= (\S+) s")
    assert "gemm_bench" in text and "'0.00009' s" in text and "11.11%" in text and "0.5%" in text
    assert "more significant digits" in text and "CIQ_METRIC time_ms=" in text
    fine = protocol.parse_output("Time= 2.371 msec", r"Time= (\S+) msec").printed_times["time_ms"]
    assert not fine.coarse  # 0.04%: candidates 1% apart are 24 steps apart


def test_a_line_protocol_time_printed_too_coarsely_is_warned_about_too() -> None:
    # A baseline printing 'CIQ_METRIC time_ms=1' got no warning: only the METRIC regex's capture was judged.
    printed = protocol.parse_output("CIQ_METRIC time_ms=1\n").printed_times["time_ms"]
    assert printed.coarse and printed.line == "time_ms"
    text = protocol.coarse_precision_warning("gemm_bench", printed)
    assert "'CIQ_METRIC time_ms=1'" in text and "100.00%" in text and "through METRIC" not in text
    assert "more significant digits" in text and "_us" in text
    run = run_once(fault("metric", "2"))
    assert run.ok and run.printed_times["time_ms"].coarse  # what the tune's check reads


def test_a_regex_that_matches_nothing_is_named_in_the_no_metric_message() -> None:
    run = run_once(fault("no_metric", metric_regex=r"Time= ([0-9.]+) sec", required=("time_ms",)))
    assert run.cause == bench.NO_METRIC and "the METRIC regex 'Time= ([0-9.]+) sec' matched no line" in run.message
    run = run_once(fault("no_metric", required=("time_ms",)))
    assert run.cause == bench.NO_METRIC and "print 'CIQ_METRIC time_ms=<milliseconds>'" in run.message


def test_a_metric_regex_that_matched_nothing_while_ciq_metric_gave_the_time_is_warned_about() -> None:
    # METRIC set, matching no line, and a 'CIQ_METRIC time_ms=' line: the time was read from it in silence.
    regex = r"Time= ([0-9.]+) sec"
    run = run_once(fault("metric", "2.5", metric_regex=regex))
    assert run.ok and run.metrics["time_ms"] == 2.5
    text = protocol.unmatched_metric_warning("gemm_bench", run.printed_times["time_ms"], regex)
    assert text is not None and text.startswith("warning: the METRIC regex 'Time= ([0-9.]+) sec' matched no line")
    assert "gemm_bench" in text and "'CIQ_METRIC time_ms=2.5'" in text and "Fix the regex" in text
    # The regex gave the time, or there is none: nothing to say.
    matched = protocol.parse_output("CIQ_METRIC time_ms=2.5\nTime= 0.002 sec\n", regex, "s").printed_times["time_ms"]
    assert matched.line is None and protocol.unmatched_metric_warning("gemm_bench", matched, regex) is None
    assert protocol.unmatched_metric_warning("gemm_bench", run.printed_times["time_ms"], None) is None


# cuda_hgemv's benchmark times cuBLAS and 12 kernels in one run, a line each (on stderr, by its HLOG).
HGEMV_OUTPUT = "".join(
    f"[HGEMV 2026-12-07 07:35:{35 + i} 15757:15757 tester.h:102 profile] {name} exit, profiling time: {ms} ms "
    f"({pct}%), throughput: 4.3 TFLOPS (84.01%)\n"
    for i, (name, ms, pct) in enumerate((("Cublas-Tensor-Op", "0.0131", "100.00"), ("Warp4-Smem", "0.0156", "119.08"),
                                         ("Warp16-Smem", "0.0150", "114.50"))))


def test_a_metric_regex_matching_several_kernels_lines_is_warned_about_naming_the_one_read() -> None:
    # A regex for hgemv's time format matched every kernel's line, and the tune read the last kernel's in silence.
    regex = r"profiling time: ([0-9.]+) ms"
    printed = protocol.parse_output(HGEMV_OUTPUT, regex).printed_times["time_ms"]
    assert printed.text == "0.0150"  # the last match is the time, as documented
    text = protocol.several_matches_warning("hgemv", printed, regex)
    assert text is not None and text.startswith(f"warning: the METRIC regex {regex!r} matched 3 different lines of "
                                                "the benchmark hgemv's output (the first '[HGEMV")
    assert "Cublas-Tensor-Op exit" in text and "the last is the time tuned for: '[HGEMV" in text
    assert "Warp16-Smem exit" in text and "match only the line of the one to tune" in text
    # A regex naming the kernel matches one line; lines that differ only in their numbers (each iteration's time,
    # a timestamp) and samples after CIQ_SAMPLES are one measurement's: nothing to say.
    one = protocol.parse_output(HGEMV_OUTPUT, r"Warp4-Smem exit, profiling time: ([0-9.]+) ms")
    repeated = protocol.parse_output("[07:35:35] iteration 1: 2.5 ms\n[07:35:36] iteration 2: 2.4 ms\n",
                                     r"iteration \d+: ([0-9.]+) ms")
    sampled = protocol.parse_output("CIQ_SAMPLES\nkernel a: 2.5 ms\nkernel b: 2.4 ms\n", r": ([0-9.]+) ms")
    for parsed in (one, repeated, sampled):
        assert protocol.several_matches_warning("hgemv", parsed.printed_times["time_ms"], regex) is None


def test_a_run_carries_its_printed_time_but_does_not_journal_it() -> None:
    run = run_once(fault("no_metric", metric_regex=r"done in ([0-9.]+) ms", metric_unit="s"))
    assert run.ok and run.metrics["time_ms"] == 1750.0
    assert run.printed_times["time_ms"].text == "1.75"
    assert "printed_times" not in run.to_record()


def test_negative_time_from_the_regex_is_bad() -> None:
    parsed = protocol.parse_output("elapsed -1 ms", r"elapsed (\S+) ms")
    assert "time" not in parsed.metrics and "negative" in parsed.problems[0]


@pytest.mark.parametrize(
    ("text", "regex", "unit"),
    [("CIQ_METRIC time_ms=0", None, "ms"), ("CIQ_METRIC time_ms=0.0000009", None, "ms"),
     ("CIQ_METRIC time=0", None, "ms"), ("CIQ_METRIC kernel_us=0.0009", None, "ms"),
     ("CIQ_METRIC kernel_ns=0.5", None, "ms"), ("CIQ_METRIC kernel_s=1e-10", None, "ms"),
     ("CIQ_METRIC time_ms=1e-300", None, "ms"), ("Time= 0 sec", r"Time= (\S+) sec", "s"),
     ("Time= 0.0000000000 sec", r"Time= (\S+) sec", "s"), ("Time= 1e-300 sec", r"Time= (\S+) sec", "s"),
     ("Time= 0.9 nsec", r"Time= (\S+) nsec", "ns"), ("elapsed 0.0000009 ms", r"elapsed (\S+) ms", "ms")],
)
def test_a_time_of_zero_or_below_one_nanosecond_measures_nothing(text: str, regex: str | None, unit: str) -> None:
    # A benchmark that skipped its work for a candidate printed 0, and that candidate won and was pinned.
    parsed = protocol.parse_output(f"CIQ_METRIC time_ms=1.5\n{text}\n", regex, unit)
    assert parsed.problems and "below 1 ns" in parsed.problems[0] and "skipped its work" in parsed.problems[0]


def test_only_the_regex_match_that_is_used_must_be_a_plausible_time() -> None:
    """The last match wins: a 0.0 warm-up line before the real figure is fine, a 0 after it is not."""
    regex = r"iteration \d+: (\S+) ms"
    warm_up_first = protocol.parse_output("iteration 0: 0.0 ms\niteration 1: 2.5 ms\n", regex)
    assert warm_up_first.problems == () and warm_up_first.metrics["time_ms"] == 2.5
    zero_last = protocol.parse_output("iteration 0: 2.5 ms\niteration 1: 0.0 ms\n", regex)
    assert zero_last.problems and "below 1 ns" in zero_last.problems[0]
    not_a_number = protocol.parse_output("iteration 0: n/a ms\niteration 1: 2.5 ms\n", regex)
    assert not_a_number.problems  # an unreadable capture is a problem wherever it is


@pytest.mark.parametrize(
    ("text", "regex", "unit", "name", "value"),
    [("CIQ_METRIC time_ms=0.000001", None, "ms", "time_ms", 1e-6), ("CIQ_METRIC kernel_us=0.001", None, "ms",
      "kernel_us", 1e-3), ("CIQ_METRIC kernel_ns=1", None, "ms", "kernel_ns", 1.0),
     ("CIQ_METRIC kernel_s=1e-9", None, "ms", "kernel_s", 1e-9), ("CIQ_METRIC errors=0", None, "ms", "errors", 0.0),
     ("Time= 1 nsec", r"Time= (\S+) nsec", "ns", "time_ms", 1e-6)],
)
def test_a_time_of_one_nanosecond_and_a_zero_that_is_not_a_time_are_kept(
        text: str, regex: str | None, unit: str, name: str, value: float) -> None:
    parsed = protocol.parse_output(text, regex, unit)
    assert parsed.problems == () and parsed.metrics[name] == pytest.approx(value)


def test_large_samples_use_the_normal_approximation() -> None:
    import numpy as np

    rng = np.random.default_rng(3)
    base = rng.normal(1.0, 0.01, 300).tolist()
    assert beats_baseline(base, rng.normal(0.9, 0.01, 300).tolist(), "min").better
    same = beats_baseline(base, rng.normal(1.0, 0.01, 300).tolist(), "min")
    assert not same.better and same.p_value > 0.001


def test_mann_whitney_beyond_the_exact_limit_is_the_normal_approximation_of_it(monkeypatch: pytest.MonkeyPatch) -> None:
    # Streaming benchmarks give hundreds of samples a side: the exact count would take seconds a call.
    random = np.random.default_rng(7)
    base, cand = random.normal(1.0, 0.01, 30).tolist(), random.normal(0.995, 0.01, 30).tolist()
    exact = beats_baseline(base, cand, "min").p_value  # 60 pooled: counted exactly
    monkeypatch.setattr(stats, "EXACT_POOLED", 10)
    approximated = beats_baseline(base, cand, "min").p_value
    assert approximated != exact and approximated == pytest.approx(exact, rel=0.1, abs=1e-3)
