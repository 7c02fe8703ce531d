"""Running the user's benchmark: the line protocol, failure causes, repeats, noise, GPU slots.

A benchmark prints any number of lines (stdout or stderr; stdout is read first)::

    CIQ_METRIC <name>=<number>     e.g. CIQ_METRIC time_ms=0.532
    CIQ_SAMPLES                    from here on, each value is one repetition's sample
    CIQ_CHECK PASS|FAIL            its own correctness verdict
    CIQ_ERROR no-gpu               it found no usable GPU

and exits 0. Reading rules (the benchmark's output is never trusted):

* The ``time`` metric (milliseconds) comes from ``time_ms``, or, when the
  target has a METRIC regex, from the regex's first group (the regex wins),
  converted from the target's UNIT (``s``, ``ms``, ``us`` or ``ns``; default
  ``ms``) to milliseconds. The regex's value is then also ``time_ms``, the
  metric the ``time`` objective reads, so a benchmark with its own output
  format tunes ``time`` through METRIC alone.
* A time's printed precision is judged (`PrintedTime.coarse`), the regex's
  and a ``CIQ_METRIC`` time's alike: printed digits that resolve less than
  ``COARSE_RESOLUTION`` (0.5%) of the value cannot tell candidates 1% apart,
  and the tune warns about it (``time_ms=1`` is 100%).
* A metric printed twice: the last value wins (benchmarks print running
  results and then the final one).
* Samples (SAMPLES): after a ``CIQ_SAMPLES`` line, every ``CIQ_METRIC`` line
  and every METRIC regex match is one sample of its metric (one internal
  repetition), and the run's value of a sampled metric is the median of its
  samples; a repetition's time below the floor fails the run. The statistics
  of a candidate (median, spread, the test before a pin) pool the samples of
  its runs. An explicit opt-in, because printing a number several times
  already means something else (running results, then the final one): no
  benchmark that does not print ``CIQ_SAMPLES`` changes meaning. Racing reads
  the samples from stdout as they come (print each line with a flush) and may
  kill a run that is clearly behind mid-way (ciq_build.measure.racing); such a
  run keeps the samples it gave. With ARGS_SETS each size's run is one value.
* Every protocol value must be a finite number; a time (``time`` and names
  ending ``_ms``, ``_us``, ``_ns``, ``_s``, and the METRIC regex's value) must
  also be at least ``TIME_FLOOR_NS`` = 1 ns in its unit (``time_ms=0.000001``,
  ``x_us=0.001``, ``x_ns=1``, ``x_s=1e-9``). One bad value fails the run as
  ``bad_metric``: a NaN in the protocol means the benchmark went wrong, even if
  the objective in use looks fine; a time of 0 or below 1 ns means it measured
  nothing (it skipped its work for this candidate, an early return, or its
  timer ticked below its resolution), and such a candidate would otherwise win
  and be pinned. Why 1 ns: no timer resolves less (a host's steady clock ticks
  in ns, CUDA events in ~0.5 us) and no kernel launch takes less (a launch is
  microseconds, one GPU clock cycle ~0.5-1 ns).
* ``CIQ_CHECK FAIL`` anywhere fails the run, even after a PASS; an unreadable
  ``CIQ_CHECK`` line counts as FAIL (never pin code whose check is unknown).
* Anything else (garbage, non-UTF-8 bytes, which arrive as U+FFFD) is ignored.

Causes of a failed run, checked in this order: ``no_gpu`` (``CIQ_ERROR no-gpu``
always; the CUDA runtime's own no-device text only when the run did not
succeed), ``bench_timeout``, ``bench_signal``, ``check_failed`` (before the
exit status: a failed check usually exits 1 too), ``bench_exit``,
``bad_metric``, ``no_metric``. ``no_gpu`` is not a candidate's fault: the
driver stops the tune when the baseline's run has it.

Deciding that a candidate beats the baseline (`beats_baseline`) takes two
things at once: its median is better by more than the larger of the two
interquartile ranges, AND a one-sided Mann-Whitney U test (exact distribution,
ties included) gives p <= 0.05. With 3 runs a side the exact test can just reach
0.05, so 3 repeats is the least that can ever show an improvement.
"""

from __future__ import annotations

import functools
import math
import os
import queue
import re
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np
import regex

from ciq_build.core.causes import Cause
from ciq_build.core.settings import TIMEOUT_RULE, timeout_advice, timeout_seconds
from ciq_build.errors import BenchmarkError, ConfigError
from ciq_build.measure import proc, sizes

# Failure causes (the benchmark's part of ARCHITECTURE.md's list), plus no_gpu.
BENCH_TIMEOUT = Cause.BENCH_TIMEOUT
BENCH_SIGNAL = Cause.BENCH_SIGNAL
BENCH_EXIT = Cause.BENCH_EXIT
NO_METRIC = Cause.NO_METRIC
BAD_METRIC = Cause.BAD_METRIC
CHECK_FAILED = Cause.CHECK_FAILED
NO_GPU = Cause.NO_GPU
CAUSES = (BENCH_TIMEOUT, BENCH_SIGNAL, BENCH_EXIT, NO_METRIC, BAD_METRIC, CHECK_FAILED, NO_GPU)

TIME = "time"  # the runtime objective, in milliseconds
TIME_MS = "time_ms"  # the protocol's name for it, and the metric the tune reads

# METRIC's UNIT -> the power of ten that turns it into milliseconds.
METRIC_UNITS = {"s": 3, "ms": 0, "us": -3, "ns": -6}
DEFAULT_METRIC_UNIT = "ms"
# A printed time whose last digit is worth more than this fraction of the value
# cannot tell candidates 1% apart (a 1% gain would be at most two steps).
COARSE_RESOLUTION = 0.005

_TAIL_LINES = 20
_TAIL_LINE_CHARS = 300
_MAX_PROBLEMS = 5  # problems kept per run; a benchmark can print a million bad lines

# A protocol keyword is the line's first word: "CIQ_METRICS" is not "CIQ_METRIC".
_KEYWORD = re.compile(r"(CIQ_METRIC|CIQ_SAMPLES|CIQ_CHECK|CIQ_ERROR)(?=\s|$)", re.ASCII)
_METRIC_BODY = re.compile(r"\s+([A-Za-z_][A-Za-z0-9_.\-]*)\s*=\s*(\S+)\s*", re.ASCII)
_NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?", re.ASCII)
_NON_FINITE = re.compile(r"[-+]?(?:nan|inf|infinity)", re.ASCII | re.IGNORECASE)
_CHECK_BODY = re.compile(r"\s+(PASS|FAIL)\s*", re.ASCII | re.IGNORECASE)
_ERROR_NO_GPU = re.compile(r"\s+no-gpu\b.*", re.ASCII | re.IGNORECASE)
_TIME_SUFFIXES = ("_ms", "_us", "_ns", "_s")
# What the CUDA runtime and driver say when there is no usable GPU (cudaGetErrorString
# and cudaGetErrorName of errors 35 and 100, the driver API's CUDA_ERROR_NO_DEVICE).
# Measured here: "cudaErrorInsufficientDriver: CUDA driver version is insufficient
# for CUDA runtime version".
_RUNTIME_NO_GPU = re.compile(
    r"cudaErrorInsufficientDriver|cudaErrorNoDevice|CUDA_ERROR_NO_DEVICE"
    r"|CUDA driver version is insufficient|insufficient driver"
    r"|no CUDA-capable device is detected|Found no NVIDIA driver",
    re.IGNORECASE,
)


# The least time a run can measure (see the module docstring): below it, or 0, a run measured nothing.
TIME_FLOOR_NS = 1.0


def time_unit(name: str) -> str | None:
    """The unit of the metric `name` when it is a duration (``time``: ms), else None."""
    if name == TIME:
        return DEFAULT_METRIC_UNIT
    return next((suffix[1:] for suffix in _TIME_SUFFIXES if name.endswith(suffix)), None)


def is_time_metric(name: str) -> bool:
    """Whether `name` is a duration, which must be at least TIME_FLOOR_NS."""
    return time_unit(name) is not None


def time_floor(unit: str) -> float:
    """TIME_FLOOR_NS in `unit` (one of METRIC_UNITS)."""
    return TIME_FLOOR_NS * 10.0 ** (METRIC_UNITS["ns"] - METRIC_UNITS[unit])


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


def compile_metric_regex(text: str) -> re.Pattern[str]:
    """The target's METRIC regex, compiled; ConfigError when it cannot serve."""
    try:
        with warnings.catch_warnings():  # "possible nested set": a note about the future, not an error
            warnings.simplefilter("ignore", FutureWarning)
            pattern = re.compile(text)
    except (re.error, OverflowError, RecursionError, ValueError) as exc:
        raise ConfigError(f"the METRIC regex {text!r} is not a valid Python regular expression: {exc}") from None
    if pattern.groups < 1:
        raise ConfigError(
            f"the METRIC regex {text!r} has no group; put the time in the first group (in UNIT, default "
            r"milliseconds), e.g. 'elapsed: ([0-9.]+) ms'"
        )
    try:
        _timed_regex(pattern.pattern, pattern.flags)  # what runs it, under a time limit
    except (regex.error, OverflowError, RecursionError, ValueError) as exc:
        raise ConfigError(f"the METRIC regex {text!r} cannot be run under a time limit: {exc}; "
                          "write it in plain Python regular-expression syntax") from None
    return pattern


# A METRIC regex may backtrack catastrophically ('(a+)+$' on a long line): it
# gets this many seconds per line, and in all on one run's output (the `regex`
# package's timeout, which stops it within about twice that), then the run
# fails. A sane regex needs ~10 us a line: 4 MiB of short lines take ~3 s.
METRIC_REGEX_SECONDS = 1.0
METRIC_REGEX_TOTAL_SECONDS = 10.0
_RE_TO_REGEX_FLAGS = {re.IGNORECASE: regex.IGNORECASE, re.MULTILINE: regex.MULTILINE, re.DOTALL: regex.DOTALL,
                      re.VERBOSE: regex.VERBOSE, re.ASCII: regex.ASCII, re.UNICODE: regex.UNICODE}


@functools.lru_cache(maxsize=64)
def _timed_regex(text: str, flags: int) -> regex.Pattern[str]:
    converted = regex.VERSION0  # Python re's semantics
    for re_flag, regex_flag in _RE_TO_REGEX_FLAGS.items():
        if flags & re_flag:
            converted |= regex_flag
    return regex.compile(text, converted)


class _RegexClock:
    """The METRIC regex's time left for one output; once spent, the regex is not run again."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern = pattern
        self.timed = _timed_regex(pattern.pattern, pattern.flags)
        # The time spent searching, not the wall time since it was made: a reader of a streaming run lives as
        # long as the run.
        self.spent = 0.0
        self.expired: str | None = None  # why it stopped, for the run's problems

    def search(self, line: str) -> regex.Match[str] | None:
        if self.expired is not None:
            return None
        left = METRIC_REGEX_TOTAL_SECONDS - self.spent
        started = time.monotonic()
        try:
            if left <= 0:
                raise TimeoutError
            return self.timed.search(line, timeout=min(METRIC_REGEX_SECONDS, left))
        except TimeoutError:
            if left > METRIC_REGEX_SECONDS:
                limit = f"{METRIC_REGEX_SECONDS:g} s time limit on a {len(line)}-character line of the output"
            else:
                limit = f"{METRIC_REGEX_TOTAL_SECONDS:g} s time limit for one output"
            self.expired = (
                f"the METRIC regex {_clip(self.pattern.pattern)!r} ran past its {limit} (catastrophic "
                "backtracking, e.g. nested quantifiers like (a+)+): simplify it, e.g. match the words around "
                "the number and a plain number pattern such as ([0-9.]+)"
            )
            return None
        finally:
            self.spent += time.monotonic() - started


def check_metric_unit(unit: object) -> str:
    """METRIC's UNIT, or ConfigError naming the units there are."""
    if not isinstance(unit, str) or unit not in METRIC_UNITS:
        raise ConfigError(
            f"the METRIC unit {unit!r} is not one of {', '.join(METRIC_UNITS)} (seconds, milliseconds, "
            "microseconds, nanoseconds); set UNIT in ciq_tune_target() to the unit the benchmark prints"
        )
    return unit


@dataclass(frozen=True)
class PrintedTime:
    """A time as the benchmark printed it (the METRIC regex's capture, or a CIQ_METRIC time's value):
    the text, and how finely its digits resolve the value."""

    text: str  # as printed, e.g. "0.00009"
    unit: str  # METRIC's UNIT, or the protocol name's unit
    resolution: float  # the last printed digit's worth / the value (inf for a printed 0)
    line: str | None = None  # the protocol line's name, e.g. "time_ms"; None: the METRIC regex's capture

    @property
    def coarse(self) -> bool:
        return self.resolution > COARSE_RESOLUTION


def coarse_precision_warning(benchmark: str, printed: PrintedTime, metric_regex: str | None = None) -> str:
    """The one warning a tune gives when the benchmark prints its time too coarsely."""
    how = f"its last digit is {printed.resolution:.2%} of the value"  # never inf: a time of 0 is bad_metric
    if printed.line is not None:
        via = f" as 'CIQ_METRIC {printed.line}={printed.text}'"
        fix = f"(e.g. printf(\"CIQ_METRIC {printed.line}=%.6g\"), or a name in a smaller unit such as _us)."
    else:
        via = f" through METRIC {metric_regex!r}" if metric_regex else ""
        fix = ("(e.g. printf(\"%.6g\"), or a smaller UNIT), or print 'CIQ_METRIC time_ms=<milliseconds>' "
               "with full precision.")
    return (
        f"warning: the benchmark {benchmark} printed its time as {printed.text!r} {printed.unit}{via}: "
        f"{how}, too coarse to tell candidates 1% apart (a digit must be worth at most "
        f"{COARSE_RESOLUTION:.1%} of the value), so close candidates tie. Print more significant digits {fix}"
    )


def unmatched_metric_warning(benchmark: str, printed: PrintedTime, metric_regex: str | None) -> str | None:
    """The one warning a tune gives when METRIC matched no line and the time came from a CIQ_METRIC line
    instead (the regex wins when it matches): None when there is no regex or it gave the time."""
    if not metric_regex or printed.line is None:
        return None
    return (f"warning: the METRIC regex {_clip(metric_regex)!r} matched no line of the benchmark {benchmark}'s "
            f"output; its 'CIQ_METRIC {printed.line}={printed.text}' line was used for the time instead. Fix the "
            "regex (its first group is the time, in UNIT) or leave METRIC out of ciq_tune_target() to say so.")


# -- parsing the output ---------------------------------------------------------------


@dataclass(frozen=True)
class ParsedOutput:
    """What a benchmark's output says, before its exit status is considered."""

    metrics: dict[str, float]
    check: Literal["PASS", "FAIL"] | None
    no_gpu_marker: str | None  # the CIQ_ERROR no-gpu line, if printed
    no_gpu_runtime: str | None  # a CUDA runtime no-device line, if printed
    problems: tuple[str, ...]  # bad metric values (first few)
    problem_count: int
    check_problems: tuple[str, ...]  # unreadable CIQ_CHECK lines (first few)
    regex_matched: bool  # the METRIC regex matched at least once
    # How each time metric was printed (the value kept: the last), the METRIC regex's under time and time_ms.
    printed_times: Mapping[str, PrintedTime] = field(default_factory=dict)
    metric_regex: str | None = None  # the METRIC regex, when one was given
    # Each sampled metric's samples in the order printed (after CIQ_SAMPLES; empty without it).
    samples: Mapping[str, tuple[float, ...]] = field(default_factory=dict)


def parse_output(
    text: str, metric_regex: str | re.Pattern[str] | None = None, metric_unit: str = DEFAULT_METRIC_UNIT
) -> ParsedOutput:
    """Read the protocol lines (and the METRIC regex) out of a benchmark's output.

    The regex's number is in `metric_unit` and becomes ``time`` and ``time_ms``
    in milliseconds. Never raises for any text; raises ConfigError only for an
    unusable regex or unit.
    """
    reader = OutputReader(metric_regex, metric_unit)
    for line in text.splitlines():
        reader.feed(line)
    return reader.parsed()


class OutputReader:
    """The protocol's reading rules, one line at a time: `parse_output` feeds it a finished run's output,
    racing (ciq_build.measure.racing) a streaming run's stdout as it comes, to see its samples so far."""

    def __init__(self, metric_regex: str | re.Pattern[str] | None = None,
                 metric_unit: str = DEFAULT_METRIC_UNIT) -> None:
        self.unit = check_metric_unit(metric_unit)
        self.shift = METRIC_UNITS[self.unit]
        pattern: re.Pattern[str] | None = None
        if isinstance(metric_regex, re.Pattern):
            pattern = compile_metric_regex(metric_regex.pattern) if metric_regex.groups < 1 else metric_regex
        elif metric_regex:
            pattern = compile_metric_regex(metric_regex)
        self.pattern = pattern
        self.clock = _RegexClock(pattern) if pattern is not None else None
        self.metrics: dict[str, float] = {}
        self.problems: list[str] = []
        self.problem_count = 0
        self.check: Literal["PASS", "FAIL"] | None = None
        self.check_problems: list[str] = []
        self.no_gpu_marker: str | None = None
        self.no_gpu_runtime: str | None = None
        self.printed_times: dict[str, PrintedTime] = {}
        self.regex_time: float | None = None
        self.regex_printed: PrintedTime | None = None
        self.regex_matched = False
        self.regex_too_small: str | None = None  # the last match's time, when it is below the floor
        # After a CIQ_SAMPLES line: every value is one repetition's sample (SAMPLES in the module docstring).
        self.sampling = False
        self.samples: dict[str, list[float]] = {}
        self.regex_samples: list[float] = []

    def _problem(self, message: str) -> None:
        self.problem_count += 1
        if len(self.problems) < _MAX_PROBLEMS:
            self.problems.append(message)

    def feed(self, line: str) -> bool:
        """Read one line (without its newline); True when it gave a sample."""
        sampled = False
        stripped = line.strip()
        keyword = _KEYWORD.match(stripped)
        word = keyword.group(1) if keyword else ""
        if word == "CIQ_METRIC":
            body = _METRIC_BODY.fullmatch(stripped, len("CIQ_METRIC"))
            if body is None:
                self._problem(f"malformed line {_clip(stripped)!r} (expected 'CIQ_METRIC name=number')")
            else:
                name, raw = body.group(1), body.group(2)
                unit = time_unit(name)
                value, why = _read_value(raw, unit)
                if value is None:
                    self._problem(f"{name}={_clip(raw)}: {why}")
                else:
                    self.metrics[name] = value
                    if unit is not None:
                        self.printed_times[name] = PrintedTime(_clip(raw.strip()), unit, _resolution(raw), name)
                    if self.sampling:
                        self.samples.setdefault(name, []).append(value)
                        sampled = True
        elif word == "CIQ_SAMPLES":
            self.sampling = True
        elif word == "CIQ_CHECK":
            verdict = _CHECK_BODY.fullmatch(stripped, len("CIQ_CHECK"))
            if verdict is None:
                self.check = "FAIL"
                if len(self.check_problems) < _MAX_PROBLEMS:
                    self.check_problems.append(f"unreadable check line {_clip(stripped)!r} (counted as FAIL)")
            elif verdict.group(1).upper() == "FAIL":
                self.check = "FAIL"
            elif self.check is None:
                self.check = "PASS"
        elif word == "CIQ_ERROR" and _ERROR_NO_GPU.fullmatch(stripped, len("CIQ_ERROR")):
            self.no_gpu_marker = _clip(stripped)
        if self.no_gpu_runtime is None and _RUNTIME_NO_GPU.search(line) is not None:
            self.no_gpu_runtime = _clip(line.strip())
        if self.clock is not None:
            found = _search_time(self.clock, line)
            if found is not None:
                self.regex_matched = True
                value, why = _read_value(found, DEFAULT_METRIC_UNIT, self.shift, self.unit)
                if value is None and _read_value(found, None, self.shift)[0] is None:
                    self._problem(f"METRIC regex captured {_clip(found)!r}: {why}")  # not a number at all
                elif value is None and self.sampling:
                    self._problem(f"METRIC regex captured {_clip(found)!r}: {why}")  # every sample is used
                elif value is None:
                    # A time below the floor counts only if it is the one used (the last match): a benchmark
                    # printing each iteration's time may print a 0.0 warm-up line before its real figure.
                    self.regex_too_small = f"METRIC regex captured {_clip(found)!r}: {why}"
                else:
                    self.regex_time = value  # the last match wins, like a repeated CIQ_METRIC
                    self.regex_printed = PrintedTime(_clip(found.strip()), self.unit, _resolution(found))
                    self.regex_too_small = None
                    if self.sampling:
                        self.regex_samples.append(value)
                        sampled = True
        return sampled

    def time_samples(self) -> list[float]:
        """The samples of the time so far (the METRIC regex's when it gave any: the regex wins)."""
        return self.regex_samples or self.samples.get(TIME_MS, [])

    def sample_values(self) -> dict[str, list[float]]:
        """Every metric's samples so far, ``time`` and ``time_ms`` from the regex when it gave any."""
        found = dict(self.samples)
        if self.regex_samples:
            found[TIME_MS] = self.regex_samples
        if TIME_MS in found:
            found[TIME] = found[TIME_MS]
        return found

    def parsed(self) -> ParsedOutput:
        """What the lines read so far say."""
        metrics = dict(self.metrics)
        printed_times = dict(self.printed_times)
        problems = list(self.problems)
        problem_count = self.problem_count
        for why in (self.regex_too_small, self.clock.expired if self.clock is not None else None):
            if why is not None:
                problem_count += 1
                if len(problems) < _MAX_PROBLEMS:
                    problems.append(why)
        if TIME_MS in metrics:
            metrics[TIME] = metrics[TIME_MS]
            printed_times[TIME] = printed_times[TIME_MS]
        if self.regex_time is not None and self.regex_printed is not None:
            # The regex wins, under both names: `time_ms` is what the time objective reads.
            metrics[TIME] = metrics[TIME_MS] = self.regex_time
            printed_times[TIME] = printed_times[TIME_MS] = self.regex_printed
        samples = {name: tuple(values) for name, values in self.sample_values().items()}
        for name, values in samples.items():  # a sampled metric's value is its samples' median
            metrics[name] = float(np.median(values))
        return ParsedOutput(
            metrics, self.check, self.no_gpu_marker, self.no_gpu_runtime, tuple(problems), problem_count,
            tuple(self.check_problems), self.regex_matched, printed_times,
            self.pattern.pattern if self.pattern is not None else None, samples,
        )


def _search_time(clock: _RegexClock, line: str) -> str | None:
    match = clock.search(line)
    if match is None:
        return None
    group = match.group(1)
    return group if isinstance(group, str) else None  # a group that did not take part


def _read_value(raw: str, unit: str | None, shift: int = 0, printed_unit: str | None = None
                ) -> tuple[float | None, str]:
    """The number in `raw` times 10**shift (a unit change, exact in decimal), or None and why not.

    `unit`: the result's unit when it is a time (then at least TIME_FLOOR_NS), None for any other metric;
    `printed_unit`: the unit it was printed in, for the message (default `unit`).
    """
    token = raw.strip()
    if _NON_FINITE.fullmatch(token):
        return None, "not a finite number"
    if not _NUMBER.fullmatch(token):
        return None, "not a number"
    mantissa, _, exponent = token.lower().partition("e")
    if shift and len(exponent.lstrip("+-").lstrip("0")) <= 9:  # longer: 0 or inf in any unit
        token = f"{mantissa}e{int(exponent or 0) + shift}"  # 0.0023712 s -> 0.0023712e3 ms, rounded once
    value = float(token)  # cannot fail after the regex; huge exponents become inf
    if not math.isfinite(value):
        return None, "not a finite number (out of range)"
    if unit is not None and value < 0:
        return None, "a time cannot be negative"
    if unit is not None and value < time_floor(unit):
        shown = printed_unit or unit
        return None, (f"a time of 0 or below 1 ns ({time_floor(shown):g} {shown}) measures nothing: the benchmark "
                      "skipped its work or its timer is too coarse; time more iterations of the work, or check it")
    return value, ""


def _resolution(raw: str) -> float:
    """How much the last printed digit of the number `raw` is worth, as a fraction of its value.

    The digits printed, read as one integer N (``2.371`` -> 2371, ``0.00009`` -> 9,
    ``1.20e-3`` -> 120), make the value N steps of the last digit, whatever the
    unit or exponent: the step is 1/N of the value (inf for a printed 0).
    """
    mantissa = raw.strip().lower().partition("e")[0].lstrip("+-").replace(".", "")
    digits = mantissa.lstrip("0")
    if not digits:
        return math.inf
    if len(digits) > 15:
        return 0.0  # finer than anything measurable
    return 1.0 / int(digits)


def _clip(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


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
    result: proc.ProcResult, parsed: ParsedOutput, required: Sequence[str] = (), timeout: float | None = None
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
    if parsed.no_gpu_runtime is not None and not (finished and usable):
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
    if result.returncode != 0 and not result.stopped:
        return failed(BENCH_EXIT, f"the benchmark {result.describe()}")
    if parsed.problems:
        more = f" and {parsed.problem_count - 1} more" if parsed.problem_count > 1 else ""
        return failed(BAD_METRIC, f"the benchmark printed an unusable metric: {parsed.problems[0]}{more}")
    if not parsed.metrics or missing:
        if parsed.metric_regex is not None and not parsed.regex_matched:
            hint = f" (the METRIC regex {_clip(parsed.metric_regex)!r} matched no line of its output)"
        else:
            hint = " (print 'CIQ_METRIC time_ms=<milliseconds>' or set the target's METRIC regex)"
        if missing:
            what = "no " + ", ".join(missing)
            if TIME in missing or TIME_MS in missing:
                what += hint
        else:
            what = "no metric" + hint
        if truncated:
            what += f"; {result.truncation}: print the CIQ_METRIC lines last"
        return failed(NO_METRIC, f"the benchmark printed {what}")
    shown = ", ".join(f"{name}={value:g}" for name, value in sorted(parsed.metrics.items()))
    if parsed.samples:
        count = max(len(values) for values in parsed.samples.values())
        shown += f" (median of {count} samples{'; stopped early by racing' if result.stopped else ''})"
    return BenchRun(True, None, shown, dict(parsed.metrics), parsed.check, result.seconds, tail,
                    samples=dict(parsed.samples), stopped=result.stopped)


def _output_tail(result: proc.ProcResult) -> str:
    lines = (result.stdout.rstrip("\n") + "\n" + result.stderr.rstrip("\n")).strip("\n").splitlines()
    notes = [f"[{note}]" for note in result.notes]  # what the tail cannot show (truncation, a lingering child)
    return "\n".join([*(_clip(line, _TAIL_LINE_CHARS) for line in lines[-_TAIL_LINES:]), *notes])


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
    return replace(classify(result, parsed, spec.required, spec.timeout), printed_times=parsed.printed_times)


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


# -- repeated runs ---------------------------------------------------------------------


@dataclass(frozen=True)
class Spread:
    """How far one metric's samples scatter."""

    iqr: float  # interquartile range (75th - 25th percentile, linear interpolation)
    min: float
    max: float


@dataclass(frozen=True)
class Measurement:
    """Repeated runs of one benchmark: medians, spreads, and the first failure if any.

    A candidate fails when any repeat fails; then `metrics` and `spread` are empty
    so a failed candidate's numbers cannot be mistaken for a score.
    """

    metrics: dict[str, float]  # median per metric
    spread: dict[str, Spread]
    runs: tuple[BenchRun, ...]
    failure: BenchRun | None

    @property
    def ok(self) -> bool:
        return self.failure is None and bool(self.runs)

    @property
    def samples(self) -> dict[str, list[float]]:
        """Every run's samples of each metric, in run order (for beats_baseline and the record): a streaming
        run's samples, one value of a run that prints one."""
        return _pooled([run for run in self.runs if run.ok])  # a failed run's numbers are not samples

    @property
    def iqr(self) -> dict[str, float]:
        """The interquartile range of each metric (the pinned record's "spread")."""
        return {name: spread.iqr for name, spread in self.spread.items()}

    @classmethod
    def from_runs(cls, runs: Sequence[BenchRun]) -> Measurement:
        runs = tuple(runs)
        failure = next((run for run in runs if not run.ok), None)
        if failure is not None or not runs:
            return cls({}, {}, runs, failure)
        medians: dict[str, float] = {}
        spread: dict[str, Spread] = {}
        for name, pooled in _pooled(runs).items():
            values = np.array(pooled, dtype=float)
            q25, q75 = np.percentile(values, [25, 75])
            medians[name] = float(np.median(values))
            spread[name] = Spread(float(q75 - q25), float(values.min()), float(values.max()))
        return cls(medians, spread, runs, None)


def _pooled(runs: Sequence[BenchRun]) -> dict[str, list[float]]:
    """Each metric's samples over `runs`, in order: the statistics of a measurement use the samples, not one
    number per process, when the benchmark streams them."""
    names = sorted({name for run in runs for name in run.metrics})
    return {name: [value for run in runs for value in run.values(name)] for name in names}


def measure(spec: BenchSpec, repeats: int, *, slots: GpuSlots | None = None) -> Measurement:
    """Run the benchmark `repeats` times; stop at the first failed run (the candidate failed)."""
    if repeats < 1:
        raise ConfigError(f"the number of benchmark repeats must be at least 1, not {repeats}")
    runs: list[BenchRun] = []
    for _ in range(repeats):
        run = run_once(spec, slots=slots)
        runs.append(run)
        if not run.ok:
            break
    return Measurement.from_runs(runs)


def interleaved(
    spec_a: BenchSpec, spec_b: BenchSpec, rounds: int, *, slots: GpuSlots | None = None,
    look: tuple[int, Callable[[Measurement, Measurement], bool]] | None = None,
) -> tuple[Measurement, Measurement]:
    """Measure A and B alternately, so clock and thermal drift hits both alike.

    Rounds alternate which goes first (A B, B A, A B, ...): with plain A B A B a
    steady drift would always favour A by one run. A side that fails stops being
    run; the other goes on. `look` = (k, decided): after k rounds, the rounds end
    there when `decided` says the measurements so far settle the question.
    """
    if rounds < 1:
        raise ConfigError(f"the number of interleaved rounds must be at least 1, not {rounds}")
    runs: dict[str, list[BenchRun]] = {"a": [], "b": []}
    specs = {"a": spec_a, "b": spec_b}
    for index in range(rounds):
        for side in ("a", "b") if index % 2 == 0 else ("b", "a"):
            done = runs[side]
            if done and not done[-1].ok:
                continue
            done.append(run_once(specs[side], slots=slots))
        if look is not None and index + 1 == look[0] < rounds and look[1](
                Measurement.from_runs(runs["a"]), Measurement.from_runs(runs["b"])):
            break
    return Measurement.from_runs(runs["a"]), Measurement.from_runs(runs["b"])


# -- better beyond the noise -----------------------------------------------------------


# The re-measure before a pin looks at its samples twice: half-way (or, with 6 to 9 rounds, after 5: see
# interim_look), where it ends if the winner is already better at a strict level, and at the end. The levels
# are O'Brien-Fleming-type boundaries for two equally spaced looks (Lan-DeMets spending, one-sided): together
# they keep the chance of pinning a candidate no better than the defaults at about the 5% of a single look
# (a later look is spent at no more than this), while a clear winner (0.41x and 0.87x of the defaults' time
# on the H200) is settled in half the runs. 5 against 5 samples can reach p = 1/252 = 0.004.
# bench/interim_look/run.py, 2,000 trials a row, 2% noise: no better than the defaults, pinned 2.9% (6 rounds,
# a look after 5) and 1.1% (10 rounds) against 2.7% and 0.9% for one look at the end; a 10% gain ends at
# the look in 99.5-99.7%, so 0.83x and 0.50x of the runs.
INTERIM_ALPHA = 0.005
FINAL_ALPHA = 0.048


@dataclass(frozen=True)
class Verdict:
    """Whether a candidate beats the baseline, and why."""

    better: bool
    ratio: float  # candidate median / baseline median
    noise: float  # the larger IQR, as a fraction of the baseline median
    explanation: str
    p_value: float = 1.0  # one-sided Mann-Whitney U


def beats_baseline(
    baseline_samples: Sequence[float],
    candidate_samples: Sequence[float],
    direction: Literal["min", "max"],
    *,
    alpha: float = 0.05,
) -> Verdict:
    """Is the candidate better than the baseline beyond the measured noise?

    Better means both: (1) its median beats the baseline's median, in `direction`,
    by more than the larger of the two interquartile ranges, and (2) a one-sided
    Mann-Whitney U test says the candidate's samples are better with p <= alpha
    (exact null distribution with mid-ranks for ties). Non-finite samples are
    dropped first.
    """
    if direction not in ("min", "max"):
        raise ConfigError(f"an objective's direction is 'min' or 'max', not {direction!r}")
    base = np.array([x for x in baseline_samples if _finite(x)], dtype=float)
    cand = np.array([x for x in candidate_samples if _finite(x)], dtype=float)
    if base.size == 0 or cand.size == 0:
        return Verdict(False, math.nan, math.nan, "no finite samples to compare")
    base_median, cand_median = float(np.median(base)), float(np.median(cand))
    noise = max(_iqr(base), _iqr(cand))
    gain = base_median - cand_median if direction == "min" else cand_median - base_median
    ratio = _ratio(cand_median, base_median)
    relative_noise = _ratio(noise, abs(base_median)) if noise else 0.0
    sign = -1.0 if direction == "min" else 1.0  # the test asks "are candidate values larger"
    p_value = _mann_whitney_greater(sign * cand, sign * base)
    beyond_noise = gain > noise
    significant = p_value <= alpha * (1 + 1e-9)  # exact p can equal alpha (3 vs 3: 1/20)
    better = beyond_noise and significant
    summary = (
        f"median {cand_median:.6g} vs baseline {base_median:.6g} (ratio {ratio:.4g}, {direction} is better), "
        f"noise (larger IQR) {noise:.3g}, p={p_value:.3g} with {cand.size} vs {base.size} samples"
    )
    if better:
        reason = "better beyond the noise"
    elif gain <= 0:
        reason = "not better"
    elif not beyond_noise:
        reason = "the gain is within the noise"
    else:
        reason = f"not significant at {1 - alpha:.0%}" + (
            " (too few samples for the test to ever pass)" if min_p(cand.size, base.size) > alpha else ""
        )
    return Verdict(better, ratio, relative_noise, f"{reason}: {summary}", p_value)


def _finite(value: Any) -> bool:
    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def _iqr(values: np.ndarray) -> float:
    q25, q75 = np.percentile(values, [25, 75])
    return float(q75 - q25)


def _ratio(numerator: float, denominator: float) -> float:
    if denominator == 0:
        return 1.0 if numerator == 0 else math.copysign(math.inf, numerator)
    return numerator / denominator


def min_p(m: int, n: int) -> float:
    """The smallest p the exact test can give with m and n samples: 1 / C(m+n, m)."""
    return 1.0 / math.comb(m + n, m)


def interim_look(rounds: int) -> int | None:
    """After how many of `rounds` interleaved rounds the re-measure looks: half-way, or the first round after
    it at which one sample a side a round can pass INTERIM_ALPHA at all (5 a side: p = 1/252), so that the
    common 6 to 9 rounds (`--repeats` 3 and 4) get a look too; None where no round before the last can.
    A later look spends no more than one half-way: the same two levels bound the chance of a false pin."""
    for looked in range(max(1, rounds // 2), rounds):
        if min_p(looked, looked) <= INTERIM_ALPHA:
            return looked
    return None


# The most pooled samples the exact test counts: its table grows as the cube of them (100 took 1.5 s and 400
# 17 s per call here, once streaming benchmarks gave each side hundreds of samples), and from about 20 a
# side the normal approximation is within a few percent of the exact p.
EXACT_POOLED = 60


def _mann_whitney_greater(x: np.ndarray, y: np.ndarray) -> float:
    """One-sided p-value that `x` tends to be larger than `y` (Mann-Whitney U, mid-ranks).

    Exact: the null distribution of x's rank sum over every way to pick len(x) of
    the pooled mid-ranks, counted with a 0/1 knapsack on doubled (integer) ranks.
    Beyond EXACT_POOLED samples, the normal approximation with tie correction.
    """
    m, n = x.size, y.size
    pooled = np.concatenate([x, y])
    total = m + n
    ranks2 = _doubled_midranks(pooled)  # integers: 2 * mid-rank
    observed = int(ranks2[:m].sum())
    if total > EXACT_POOLED:
        mean = m * (total + 1) / 2
        _, counts = np.unique(pooled, return_counts=True)
        ties = float(np.sum(counts.astype(float) ** 3 - counts))
        variance = m * n / 12 * ((total + 1) - ties / (total * (total - 1)))
        if variance <= 0:
            return 1.0
        z = (observed / 2 - mean - 0.5) / math.sqrt(variance)  # continuity correction
        return 0.5 * math.erfc(z / math.sqrt(2))
    size = int(ranks2.sum()) + 1
    ways = np.zeros((m + 1, size), dtype=float)  # ways[k, s]: picks of k ranks summing to s
    ways[0, 0] = 1.0
    for value in ranks2.tolist():
        for k in range(m, 0, -1):  # downwards: each rank is used at most once
            ways[k, value:] += ways[k - 1, : size - value]
    distribution = ways[m]
    return float(min(1.0, distribution[observed:].sum() / distribution.sum()))


def _doubled_midranks(values: np.ndarray) -> np.ndarray:
    order = np.argsort(values, kind="mergesort")
    sorted_values = values[order]
    ranks2 = np.empty(values.size, dtype=np.int64)
    start = 0
    while start < values.size:
        end = start
        while end + 1 < values.size and sorted_values[end + 1] == sorted_values[start]:
            end += 1
        # Positions start..end (0-based) share the mean of ranks start+1..end+1.
        ranks2[order[start : end + 1]] = start + end + 2
        start = end + 1
    return ranks2


# -- sharing GPUs between parallel jobs --------------------------------------------------


@dataclass
class GpuSlots:
    """At most one benchmark per GPU at a time, shared by the driver's worker threads.

    ``devices``: the GPUs to spread benchmarks over (CUDA_VISIBLE_DEVICES values,
    e.g. ``["0", "1"]``); each run holding a slot sees only its GPU. Empty: one
    slot, the default GPU, environment untouched. Builds need no slot, so with
    ``--jobs 4`` and one GPU, compiles overlap while benchmarks queue.
    """

    devices: Sequence[str | int] = ()
    _free: queue.Queue[str | None] = field(default_factory=queue.Queue, init=False, repr=False)

    def __post_init__(self) -> None:
        names = tuple(str(device).strip() for device in self.devices)
        if any(not name for name in names):
            raise ConfigError(f"a GPU in {list(self.devices)!r} is empty; give CUDA device numbers or UUIDs")
        if len(set(names)) != len(names):
            raise ConfigError(f"a GPU is listed twice in {list(names)!r}; two benchmarks would share it")
        self.devices = names
        for name in names or (None,):
            self._free.put(name)

    @property
    def count(self) -> int:
        return max(1, len(self.devices))

    @contextmanager
    def slot(self) -> Iterator[dict[str, str]]:
        """Block until a GPU is free (in this process, and in the others sharing GPU_LOCK_DIR's locks);
        yield the environment that pins a run to it."""
        # Waited for in steps, not blocked on: a worker thread waiting here when the tune is interrupted
        # must give up, not take the slot its killed holder frees and start a full benchmark.
        taken: list[str | None] = []

        def take(timeout: float) -> bool:
            try:
                taken.append(self._free.get(timeout=timeout))
            except queue.Empty:
                return False
            return True

        proc.wait_or_stop(take, "waiting for a GPU")
        device = taken[0]
        try:
            with _held_across_processes(device):
                yield {} if device is None else {"CUDA_VISIBLE_DEVICES": device}
        finally:
            self._free.put(device)


# Set (to a folder) by a parent that runs several tunes on this machine at once (tune A B --executor ray):
# each GPU slot is then also an exclusive lock on a file there, so that the tunes' own measurements on
# this machine (the baselines, the re-measures before the pins) never share a GPU with one another.
GPU_LOCK_DIR = "CIQ_GPU_LOCK_DIR"


@contextmanager
def _held_across_processes(device: str | None) -> Iterator[None]:
    folder = os.environ.get(GPU_LOCK_DIR)
    if not folder:
        yield
        return
    import fcntl

    Path(folder).mkdir(parents=True, exist_ok=True)
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", device) if device is not None else "default"
    with open(Path(folder) / f"gpu-{name}.lock", "a") as lock:
        def take(timeout: float) -> bool:  # released when the file closes, or when its holder dies
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                time.sleep(timeout)  # flock has no timeout of its own; and a stopped tune must not wait on
                return False
            return True

        proc.wait_or_stop(take, "waiting for a GPU another tune holds")
        yield
