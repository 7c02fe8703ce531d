"""Running the user's benchmark once: the spec of a run, its process, and its verdict with one cause.

The benchmark's output is read by the line protocol (ciq_build.measure.protocol); a run holds a GPU slot
(ciq_build.measure.gpu_slots) while it runs; repeated runs and their statistics are ciq_build.measure.stats.

Causes of a failed run, checked in this order: ``no_gpu`` (``CIQ_ERROR no-gpu``
always; the CUDA runtime's own no-device text unless the run succeeded and its
own check passed), ``bench_timeout``, ``bench_signal``, ``check_failed`` (before the
exit status: a failed check usually exits 1 too), ``bench_exit``,
``bad_metric``, ``no_metric``. ``no_gpu`` is not a candidate's fault: the
driver stops the tune when the baseline's run has it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from ciq_build.core.causes import Cause
from ciq_build.core.metric_unit import DEFAULT_METRIC_UNIT, check_metric_unit
from ciq_build.core.settings import TIMEOUT_RULE, timeout_advice, timeout_seconds
from ciq_build.errors import BenchmarkError, ConfigError
from ciq_build.measure import proc, sizes
from ciq_build.measure.gpu_slots import GpuSlots
from ciq_build.measure.protocol import (
    TIME,
    TIME_MS,
    OutputReader,
    ParsedOutput,
    PrintedTime,
    clip,
    compile_metric_regex,
    parse_output,
)

# Failure causes (the benchmark's part of ARCHITECTURE.md's list), plus no_gpu.
BENCH_TIMEOUT = Cause.BENCH_TIMEOUT
BENCH_SIGNAL = Cause.BENCH_SIGNAL
BENCH_EXIT = Cause.BENCH_EXIT
NO_METRIC = Cause.NO_METRIC
BAD_METRIC = Cause.BAD_METRIC
CHECK_FAILED = Cause.CHECK_FAILED
CUDA_ERROR = Cause.CUDA_ERROR
NO_GPU = Cause.NO_GPU
CAUSES = (BENCH_TIMEOUT, BENCH_SIGNAL, BENCH_EXIT, NO_METRIC, BAD_METRIC, CHECK_FAILED, CUDA_ERROR, NO_GPU)

_TAIL_LINES = 20
_TAIL_LINE_CHARS = 300


# -- the specification of a benchmark run -----------------------------------------


@dataclass(frozen=True)
class BenchSpec:
    """How to run the benchmark once."""

    path: Path
    args: tuple[str, ...] = ()
    timeout: float = 60.0  # seconds; the whole process group is killed after it
    metric_regex: str | None = None  # first group: the time, in metric_unit (the target's METRIC)
    cwd: Path | None = None
    env: Mapping[str, str] | None = None  # extra variables over the inherited environment
    # Metrics every run must print (the runtime objectives); empty: at least one metric.
    required: tuple[str, ...] = ()
    metric_unit: str = DEFAULT_METRIC_UNIT  # the unit of the METRIC regex's number (the target's UNIT)
    # ARGS_SETS: (size name, its arguments) each; a run runs every size once (ciq_build.measure.sizes).
    # Empty: one size, `args`.
    args_sets: tuple[tuple[str, tuple[str, ...]], ...] = ()
    score: str = "geomean"  # SCORE: how the sizes combine
    reference: Mapping[str, float] = field(default_factory=dict)  # the baseline's per-size medians
    maximized: tuple[str, ...] = ()  # the metrics where more is better (for SCORE worst)
    # The metrics an objective minimizes: a reading of 0 or below measured nothing (an energy counter that
    # did not step in a short run, as a time of 0), and fails the run as an unusable metric.
    positive: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        path = Path(self.path)
        if not path.is_absolute():
            path = (Path(self.cwd) if self.cwd is not None else Path.cwd()) / path
        object.__setattr__(self, "path", path)
        object.__setattr__(self, "args", tuple(str(a) for a in self.args))
        object.__setattr__(self, "required", tuple(self.required))
        if self.cwd is not None:
            object.__setattr__(self, "cwd", Path(self.cwd))
        seconds = timeout_seconds(self.timeout)
        if seconds is None:
            raise ConfigError(f"the benchmark timeout must be {TIMEOUT_RULE}, not {self.timeout!r}")
        object.__setattr__(self, "timeout", seconds)
        if self.metric_regex:
            compile_metric_regex(self.metric_regex)
        else:
            object.__setattr__(self, "metric_regex", None)
        check_metric_unit(self.metric_unit)

    def with_env(self, extra: Mapping[str, str]) -> BenchSpec:
        """This spec with more environment variables (e.g. a GPU slot's CUDA_VISIBLE_DEVICES)."""
        return replace(self, env={**(self.env or {}), **extra})



# -- one run ---------------------------------------------------------------------------


@dataclass(frozen=True)
class BenchRun:
    """One run of the benchmark and its verdict."""

    ok: bool
    cause: Cause | None  # one of CAUSES when not ok
    message: str  # one line: why it failed, or what it measured
    metrics: dict[str, float]
    check: Literal["PASS", "FAIL"] | None
    seconds: float
    output_tail: str  # the last lines of stdout + stderr, for the journal and reports
    # How each time metric was printed (ParsedOutput.printed_times; not journaled).
    printed_times: Mapping[str, PrintedTime] = field(default_factory=dict)
    # A streaming run's samples per metric (ParsedOutput.samples); empty for a run that prints one value.
    samples: Mapping[str, tuple[float, ...]] = field(default_factory=dict)
    stopped: bool = False  # killed mid-run by its caller (racing), its samples so far kept

    def values(self, name: str) -> list[float]:
        """This run's samples of `name`: the streamed ones, or its one value (none when it has no value)."""
        if name in self.samples:
            return list(self.samples[name])
        return [self.metrics[name]] if name in self.metrics else []

    def to_record(self) -> dict[str, Any]:
        """A JSON-ready dict for the journal."""
        return {
            "ok": self.ok, "cause": self.cause, "message": self.message, "metrics": dict(self.metrics),
            "check": self.check, "seconds": round(self.seconds, 6), "output_tail": self.output_tail,
            **({"samples": {k: list(v) for k, v in self.samples.items()}} if self.samples else {}),
            **({"stopped": True} if self.stopped else {}),
        }


def classify(
    result: proc.ProcResult, parsed: ParsedOutput, required: Sequence[str] = (), timeout: float | None = None,
    positive: Sequence[str] = (),
) -> BenchRun:
    """Turn a finished process and its parsed output into a BenchRun with one cause."""
    tail = _output_tail(result)
    truncated = result.truncated

    def failed(cause: Cause, message: str) -> BenchRun:
        return BenchRun(False, cause, message, dict(parsed.metrics), parsed.check, result.seconds, tail)

    missing = [name for name in required if name not in parsed.metrics]
    usable = bool(parsed.metrics) and not missing and not parsed.problems
    # Stopped by its caller (racing, on the samples it streamed): its exit is ours, not a crash or an error.
    finished = result.ok or result.stopped
    if parsed.no_gpu_marker is not None:
        return failed(NO_GPU, f"the benchmark found no usable GPU: {parsed.no_gpu_marker!r}")
    # The runtime's no-device texts (errors 35 and 100) hold for the whole process that printed them: none of its
    # CUDA calls reaches a GPU after them, so a time printed too measured no GPU work (a CUDA_CHECK that prints and
    # goes on, then times nothing or a CPU path). Only the benchmark's own passed check (CIQ_CHECK PASS), in a run
    # that finished with a usable time, says the work ran and was right: a benchmark that probes several devices in
    # processes of their own, one of which has none (CUDA_VISIBLE_DEVICES=3 on a one-GPU machine), measured another.
    # Nothing else in an output can say a device was used, so nothing else excuses the text.
    if parsed.no_gpu_runtime is not None and not (finished and usable and parsed.check == "PASS"):
        return failed(NO_GPU, f"the benchmark found no usable GPU: {parsed.no_gpu_runtime!r}")
    if result.timed_out:
        limit = f"its {timeout:g} s timeout" if timeout is not None else "its timeout"
        return failed(
            BENCH_TIMEOUT,
            f"the benchmark ran past {limit} and was killed with its child processes "
            f"({result.seconds:.1f} s{'; ' + result.truncation if truncated else ''}); "
            + timeout_advice(timeout if timeout is not None else result.seconds),
        )
    if result.signal is not None and not result.stopped:
        return failed(BENCH_SIGNAL, f"the benchmark crashed: {result.describe()}")
    if parsed.check == "FAIL":
        # Before the exit status: a benchmark that fails its check usually exits 1 too,
        # and "the check failed" is what the user needs to hear.
        detail = f" ({parsed.check_problems[0]})" if parsed.check_problems else ""
        return failed(CHECK_FAILED, f"the benchmark's own check failed: it printed CIQ_CHECK FAIL{detail}")
    if parsed.kernel_fault is not None:
        # Before the exit status and the metrics: a benchmark whose error check prints and goes on exits 0 with a
        # time that measured no work (a kernel that never launched is the fastest candidate of all).
        return failed(CUDA_ERROR, f"the benchmark printed a CUDA error, {parsed.kernel_fault!r}: a kernel failed "
                                  "to launch or faulted, so the time it printed measures no work")
    if result.returncode != 0 and not result.stopped:
        return failed(BENCH_EXIT, f"the benchmark {result.describe()}")
    if parsed.problems:
        more = f" and {parsed.problem_count - 1} more" if parsed.problem_count > 1 else ""
        return failed(BAD_METRIC, f"the benchmark printed an unusable metric: {parsed.problems[0]}{more}")
    if not parsed.metrics or missing:
        return failed(NO_METRIC, f"the benchmark printed {_no_metric(result, parsed, missing)}")
    nothing = next((name for name in positive if parsed.metrics.get(name, 1.0) <= 0), None)
    if nothing is not None:
        return failed(BAD_METRIC, f"the benchmark printed an unusable metric: {nothing}="
                                  f"{parsed.metrics[nothing]:g} measures nothing for an objective to minimize (a "
                                  "counter that did not step in a short run, e.g. NVML's energy in ~1 mJ steps): "
                                  "measure more iterations of the work per run")
    shown = ", ".join(f"{name}={value:g}" for name, value in sorted(parsed.metrics.items()))
    if parsed.samples:
        count = max(len(values) for values in parsed.samples.values())
        shown += f" (median of {count} samples{'; stopped early by racing' if result.stopped else ''})"
    return BenchRun(True, None, shown, dict(parsed.metrics), parsed.check, result.seconds, tail,
                    samples=dict(parsed.samples), stopped=result.stopped)


def _no_metric(result: proc.ProcResult, parsed: ParsedOutput, missing: Sequence[str]) -> str:
    """What a run that printed no usable metric (or not the `missing` ones) lacks, and the hint that fixes it."""
    if parsed.metric_regex is not None and not parsed.regex_matched:
        hint = f" (the METRIC regex {clip(parsed.metric_regex)!r} matched no line of its output)"
    else:
        hint = " (print 'CIQ_METRIC time_ms=<milliseconds>' or set the target's METRIC regex)"
    if missing:
        what = "no " + ", ".join(missing)
        if TIME in missing or TIME_MS in missing:
            what += hint
    else:
        what = "no metric" + hint
    if result.truncated:
        what += f"; {result.truncation}: print the CIQ_METRIC lines last"
    return what


def _output_tail(result: proc.ProcResult) -> str:
    lines = (result.stdout.rstrip("\n") + "\n" + result.stderr.rstrip("\n")).strip("\n").splitlines()
    notes = [f"[{note}]" for note in result.notes]  # what the tail cannot show (truncation, a lingering child)
    return "\n".join([*(clip(line, _TAIL_LINE_CHARS) for line in lines[-_TAIL_LINES:]), *notes])


# Given a streaming run's samples so far (OutputReader.sample_values), whether to stop it there (racing).
StopWhen = Callable[[Mapping[str, Sequence[float]]], bool]


def run_once(spec: BenchSpec, *, slots: GpuSlots | None = None, stop_when: StopWhen | None = None) -> BenchRun:
    """Run the benchmark once (holding a GPU slot when `slots` is given) and classify it.

    `stop_when` sees the samples of a benchmark that streams them (CIQ_SAMPLES) after each new one, as
    its stdout comes; when it says so, the run is killed there and keeps the samples it gave (``stopped``).
    Raises BenchmarkError when the benchmark cannot be started at all: that is
    the setup's fault, not the candidate's, and would fail every candidate.
    """
    if not spec.path.is_file() or not os.access(spec.path, os.X_OK):
        raise BenchmarkError(
            f"the benchmark {spec.path} does not exist or is not executable; build it "
            "(cmake --build <build dir> --target <benchmark>) or fix BENCHMARK in ciq_tune_target()"
        )
    if spec.args_sets:
        return _run_sizes(spec, slots)
    slot: AbstractContextManager[dict[str, str]] = slots.slot() if slots is not None else nullcontext({})
    with slot as slot_env:
        env = None
        if spec.env or slot_env:
            env = {**os.environ, **(spec.env or {}), **slot_env}
        # The tail only: a metric from the start of an output whose middle was dropped may be stale.
        result = proc.run([spec.path, *spec.args], spec.timeout, cwd=spec.cwd, env=env, head_bytes=0,
                          watch=_watch(spec, stop_when) if stop_when is not None else None)
    if result.stopped and not result.stdout.endswith("\n"):
        # Killed mid-write: its last, cut line ("CIQ_METRIC time_ms=1.") is not what it meant to print.
        result = replace(result, stdout=result.stdout[: result.stdout.rfind("\n") + 1])
    text = result.stdout + ("\n" if result.stdout and result.stderr else "") + result.stderr
    parsed = parse_output(text, spec.metric_regex, spec.metric_unit)
    return replace(classify(result, parsed, spec.required, spec.timeout, spec.positive),
                   printed_times=parsed.printed_times)


def _watch(spec: BenchSpec, stop_when: StopWhen) -> Callable[[str], bool]:
    """A proc.run watch: each stdout line read by the protocol's rules, `stop_when` asked after each sample."""
    reader = OutputReader(spec.metric_regex, spec.metric_unit)
    # Lines before CIQ_SAMPLES give no sample: not read here (the METRIC regex runs once on them, after the run).
    return lambda line: ((reader.sampling or "CIQ_SAMPLES" in line) and reader.feed(line)
                         and stop_when(reader.sample_values()))


def _run_sizes(spec: BenchSpec, slots: GpuSlots | None) -> BenchRun:
    """One run over every size (run_once each, in order): the first size that fails fails the run,
    named; otherwise the sizes' metrics combined by SCORE."""
    per_size: dict[str, dict[str, float]] = {}
    printed: dict[str, PrintedTime] = {}
    seconds = 0.0
    tails: list[str] = []
    checks: list[str | None] = []
    for name, args in spec.args_sets:
        run = run_once(replace(spec, args=args, args_sets=()), slots=slots)
        seconds += run.seconds
        if not run.ok:
            return replace(run, message=f"size {name} ({' '.join(args) or 'no arguments'}): {run.message}",
                           seconds=seconds)
        per_size[name] = dict(run.metrics)
        checks.append(run.check)
        tails.append(f"[size {name}]\n{run.output_tail}")
        for metric, how in run.printed_times.items():  # the coarsest of the sizes, for the precision warning
            if metric not in printed or how.resolution > printed[metric].resolution:
                printed[metric] = how
    metrics = sizes.combine(per_size, spec.score, spec.reference, spec.maximized)
    check: Literal["PASS", "FAIL"] | None = "PASS" if all(c == "PASS" for c in checks) else None
    missing = [name for name in spec.required if name not in metrics]
    if missing:
        return BenchRun(False, NO_METRIC, f"no combined value of {', '.join(missing)} over the sizes "
                        f"{', '.join(per_size)}: every size must print it, above 0", metrics, check, seconds,
                        "\n".join(tails))
    shown = ", ".join(f"{k}={v:.6g}" for k, v in sorted(metrics.items()))
    return BenchRun(True, None, shown, metrics, check, seconds, "\n".join(tails), printed_times=printed)

