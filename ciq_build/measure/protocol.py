"""The benchmark's line protocol: what its output says, read by rules that never trust it.

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
  format tunes ``time`` through METRIC alone. A UNIT that is a rate
  (``TFLOPS``, ``GB/s``, ``items/s``: higher is better) makes the regex's
  number the milliseconds one unit of work takes, 1000 / rate
  (ciq_build.core.metric_unit); a rate must be above 0, and a ``CIQ_METRIC
  time_ms`` line (milliseconds of a whole run, another unit) is then never the
  time.
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
* The CUDA runtime's words for a kernel that failed to launch or faulted ("an
  illegal memory access was encountered", "too many resources requested for
  launch", ``cudaErrorLaunchFailure``, ...) anywhere fail the run as
  ``cuda_error``, whatever its exit status and time: a benchmark whose error
  check prints and goes on prints a time that measured no work.
* The CUDA runtime's words for no usable GPU ("CUDA driver version is
  insufficient for CUDA runtime version", "no CUDA-capable device is detected",
  ``cudaErrorNoDevice``, ...) anywhere fail the run as ``no_gpu``, whatever
  its time, unless the run succeeded and its own check passed (``CIQ_CHECK
  PASS``: a benchmark that probes several devices, one missing, measured on
  another; ciq_build.measure.bench.classify says why).
* Anything else (garbage, non-UTF-8 bytes, which arrive as U+FFFD) is ignored.

How a run is started and its failure judged is ciq_build.measure.bench; the statistics over runs,
ciq_build.measure.stats.
"""

from __future__ import annotations

import functools
import math
import re
import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Literal

from ciq_build.core.metric_unit import DEFAULT_METRIC_UNIT, TIME_UNITS, check_metric_unit, is_rate, per_unit_ms
from ciq_build.core.rules import load_rules
from ciq_build.errors import ConfigError
from ciq_build.measure.runtime_errors import KERNEL_FAULT, NO_GPU

if TYPE_CHECKING:
    import regex

TIME = "time"  # the runtime objective, in milliseconds
TIME_MS = "time_ms"  # the protocol's name for it, and the metric the tune reads

# A printed time whose last digit is worth more than this fraction of the value
# cannot tell candidates 1% apart (a 1% gain would be at most two steps).
COARSE_RESOLUTION = 0.005

_MAX_PROBLEMS = 5  # problems kept per run; a benchmark can print a million bad lines

# A protocol keyword is the line's first word: "CIQ_METRICS" is not "CIQ_METRIC".
_KEYWORD = re.compile(r"(CIQ_METRIC|CIQ_SAMPLES|CIQ_CHECK|CIQ_ERROR)(?=\s|$)", re.ASCII)
_METRIC_BODY = re.compile(r"\s+([A-Za-z_][A-Za-z0-9_.\-]*)\s*=\s*(\S+)\s*", re.ASCII)
_NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?", re.ASCII)
_NON_FINITE = re.compile(r"[-+]?(?:nan|inf|infinity)", re.ASCII | re.IGNORECASE)
_CHECK_BODY = re.compile(r"\s+(PASS|FAIL)\s*", re.ASCII | re.IGNORECASE)
_ERROR_NO_GPU = re.compile(r"\s+no-gpu\b.*", re.ASCII | re.IGNORECASE)
_TIME_SUFFIXES = ("_ms", "_us", "_ns", "_s")


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
    """TIME_FLOOR_NS in `unit` (one of TIME_UNITS)."""
    return TIME_FLOOR_NS * 10.0 ** (TIME_UNITS["ns"] - TIME_UNITS[unit])


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
    if "|" in _outside_groups(text):  # alternatives; CMake makes a quoted "\|" one
        raise ConfigError(load_rules().message("metric_alternatives", value=text))
    import regex  # deferred, as in _timed_regex

    try:
        _timed_regex(pattern.pattern, pattern.flags)  # what runs it, under a time limit
    except (regex.error, OverflowError, RecursionError, ValueError) as exc:
        raise ConfigError(f"the METRIC regex {text!r} cannot be run under a time limit: {exc}; "
                          "write it in plain Python regular-expression syntax") from None
    return pattern


def _outside_groups(text: str) -> str:
    """The regex `text` without its escapes, [...] classes and (...) groups, as configure reads it."""
    plain = re.sub(r"\[[^]]*\]", "", re.sub(r"\\.", "", text))
    while (inner := re.sub(r"\([^()]*\)", "", plain)) != plain:
        plain = inner
    return plain


# A METRIC regex may backtrack catastrophically ('(a+)+$' on a long line): it
# gets this many seconds per line, and in all on one run's output (the `regex`
# package's timeout, which stops it within about twice that), then the run
# fails. A sane regex needs ~10 us a line: 4 MiB of short lines take ~3 s.
METRIC_REGEX_SECONDS = 1.0
METRIC_REGEX_TOTAL_SECONDS = 10.0
_RE_TO_REGEX_FLAGS = {re.IGNORECASE: "IGNORECASE", re.MULTILINE: "MULTILINE", re.DOTALL: "DOTALL",
                      re.VERBOSE: "VERBOSE", re.ASCII: "ASCII", re.UNICODE: "UNICODE"}  # re's flag: regex's name


@functools.lru_cache(maxsize=64)
def _timed_regex(text: str, flags: int) -> regex.Pattern[str]:
    # Imported here, once a METRIC regex is compiled: ~70 ms that no other command needs to pay.
    import regex

    converted = regex.VERSION0  # Python re's semantics
    for re_flag, regex_flag in _RE_TO_REGEX_FLAGS.items():
        if flags & re_flag:
            converted |= getattr(regex, regex_flag)
    return regex.compile(text, converted)


def _median(values: tuple[float, ...]) -> float:
    import numpy as np  # deferred: ~130 ms at import, paid only where a metric is sampled

    return float(np.median(values))


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
                f"the METRIC regex {clip(self.pattern.pattern)!r} ran past its {limit} (catastrophic "
                "backtracking, e.g. nested quantifiers like (a+)+): simplify it, e.g. match the words around "
                "the number and a plain number pattern such as ([0-9.]+)"
            )
            return None
        finally:
            self.spent += time.monotonic() - started


@dataclass(frozen=True)
class PrintedTime:
    """A time as the benchmark printed it (the METRIC regex's capture, or a CIQ_METRIC time's value):
    the text, and how finely its digits resolve the value."""

    text: str  # as printed, e.g. "0.00009"
    unit: str  # METRIC's UNIT, or the protocol name's unit
    resolution: float  # the last printed digit's worth / the value (inf for a printed 0)
    line: str | None = None  # the protocol line's name, e.g. "time_ms"; None: the METRIC regex's capture
    # The METRIC regex's matching lines, how many, the first and the last (which counts), where they differ beyond
    # their numbers: several kernels' or sizes' times (cuda_hgemv prints 13 'profiling time' lines); else None.
    several: tuple[int, str, str] | None = None

    @property
    def coarse(self) -> bool:
        return self.resolution > COARSE_RESOLUTION


def coarse_precision_warning(benchmark: str, printed: PrintedTime, metric_regex: str | None = None) -> str:
    """The one warning a tune gives when the benchmark prints its time too coarsely."""
    how = f"its last digit is {printed.resolution:.2%} of the value"  # never inf: a time of 0 is bad_metric
    what = "rate" if is_rate(printed.unit) else "time"
    if printed.line is not None:
        via = f" as 'CIQ_METRIC {printed.line}={printed.text}'"
        fix = f"(e.g. printf(\"CIQ_METRIC {printed.line}=%.6g\"), or a name in a smaller unit such as _us)."
    elif what == "rate":
        via = f" through METRIC {metric_regex!r}" if metric_regex else ""
        fix = "(e.g. printf(\"%.6g\"))."
    else:
        via = f" through METRIC {metric_regex!r}" if metric_regex else ""
        fix = ("(e.g. printf(\"%.6g\"), or a smaller UNIT), or print 'CIQ_METRIC time_ms=<milliseconds>' "
               "with full precision.")
    return (
        f"warning: the benchmark {benchmark} printed its {what} as {printed.text!r} {printed.unit}{via}: "
        f"{how}, too coarse to tell candidates 1% apart (a digit must be worth at most "
        f"{COARSE_RESOLUTION:.1%} of the value), so close candidates tie. Print more significant digits {fix}"
    )


def several_matches_warning(benchmark: str, printed: PrintedTime, metric_regex: str | None) -> str | None:
    """The one warning a tune gives when METRIC matched lines that differ beyond their numbers, the last of which
    is the time (a benchmark timing several kernels: the tune would tune for whichever it prints last)."""
    if not metric_regex or printed.several is None:
        return None
    count, first, last = printed.several
    return (f"warning: the METRIC regex {clip(metric_regex)!r} matched {count} different lines of the benchmark "
            f"{benchmark}'s output (the first {first!r}); the last is the time tuned for: {last!r}. Where they time "
            "different kernels or sizes, make the regex match only the line of the one to tune (by its name), or "
            "give each size's arguments in ARGS_SETS.")


def unmatched_metric_warning(benchmark: str, printed: PrintedTime, metric_regex: str | None) -> str | None:
    """The one warning a tune gives when METRIC matched no line and the time came from a CIQ_METRIC line
    instead (the regex wins when it matches): None when there is no regex or it gave the time."""
    if not metric_regex or printed.line is None:
        return None
    return (f"warning: the METRIC regex {clip(metric_regex)!r} matched no line of the benchmark {benchmark}'s "
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
    kernel_fault: str | None = None  # the first line with a CUDA runtime kernel-failure text, if printed


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
        self.rate = is_rate(self.unit)  # the regex's number is a rate, higher is better (ciq_build.core.metric_unit)
        self.shift = TIME_UNITS.get(self.unit, 0)
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
        self.kernel_fault: str | None = None
        self.printed_times: dict[str, PrintedTime] = {}
        self.regex_time: float | None = None
        self.regex_printed: PrintedTime | None = None
        self.regex_matched = False
        self.regex_too_small: str | None = None  # the last match's time, when it is below the floor
        self.regex_lines: list[str] = []  # the lines it matched outside samples: the first, and the last so far
        self.regex_count = 0
        self.regex_differ = False  # whether two of them differ beyond their numbers
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
        stripped = line.strip()
        keyword = _KEYWORD.match(stripped)
        word = keyword.group(1) if keyword else ""
        sampled = False
        if word == "CIQ_METRIC":
            sampled = self._read_metric(stripped)
        elif word == "CIQ_SAMPLES":
            self.sampling = True
        elif word == "CIQ_CHECK":
            self._read_check(stripped)
        elif word == "CIQ_ERROR" and _ERROR_NO_GPU.fullmatch(stripped, len("CIQ_ERROR")):
            self.no_gpu_marker = clip(stripped)
        if self.no_gpu_runtime is None and NO_GPU.search(line) is not None:
            self.no_gpu_runtime = clip(line.strip())
        if self.kernel_fault is None and KERNEL_FAULT.search(line) is not None:
            self.kernel_fault = clip(line.strip())
        if self.clock is not None and self._read_regex(self.clock, line):
            sampled = True
        return sampled

    def _read_metric(self, stripped: str) -> bool:
        """A CIQ_METRIC line; True when it gave a sample."""
        body = _METRIC_BODY.fullmatch(stripped, len("CIQ_METRIC"))
        if body is None:
            self._problem(f"malformed line {clip(stripped)!r} (expected 'CIQ_METRIC name=number')")
            return False
        name, raw = body.group(1), body.group(2)
        if self.rate and name == TIME_MS:
            return False  # a whole run's milliseconds, not the rate's unit of work: never the time (module docstring)
        unit = time_unit(name)
        value, why = _read_value(raw, unit)
        if value is None:
            self._problem(f"{name}={clip(raw)}: {why}")
            return False
        self.metrics[name] = value
        if unit is not None:
            self.printed_times[name] = PrintedTime(clip(raw.strip()), unit, _resolution(raw), name)
        if self.sampling:
            self.samples.setdefault(name, []).append(value)
        return self.sampling

    def _read_check(self, stripped: str) -> None:
        """A CIQ_CHECK line: FAIL (or an unreadable one) wins over any PASS."""
        verdict = _CHECK_BODY.fullmatch(stripped, len("CIQ_CHECK"))
        if verdict is None:
            self.check = "FAIL"
            if len(self.check_problems) < _MAX_PROBLEMS:
                self.check_problems.append(f"unreadable check line {clip(stripped)!r} (counted as FAIL)")
        elif verdict.group(1).upper() == "FAIL":
            self.check = "FAIL"
        elif self.check is None:
            self.check = "PASS"

    def _read_regex(self, clock: _RegexClock, line: str) -> bool:
        """The METRIC regex on any line; True when its match gave a sample."""
        found = _search_time(clock, line)
        if found is None:
            return False
        self.regex_matched = True
        value, why = self._regex_value(found)
        if value is None and (self.sampling or _read_value(found, None, self.shift)[0] is None):
            # Not a number at all; or a bad sample: every sample is used.
            self._problem(f"METRIC regex captured {clip(found)!r}: {why}{_later_number(clock.search(line))}")
        elif value is None:
            # A time below the floor counts only if it is the one used (the last match): a benchmark
            # printing each iteration's time may print a 0.0 warm-up line before its real figure.
            self.regex_too_small = f"METRIC regex captured {clip(found)!r}: {why}"
        else:
            self.regex_time = value  # the last match wins, like a repeated CIQ_METRIC
            self.regex_printed = PrintedTime(clip(found.strip()), self.unit, _resolution(found))
            self.regex_too_small = None
            if self.sampling:
                self.regex_samples.append(value)
                return True
            self._note_regex_line(clip(line.strip()))
        return False

    def _note_regex_line(self, line: str) -> None:
        """A line whose match gave the time (not a sample): counted, kept if the first, and the last so far."""
        self.regex_count += 1
        if not self.regex_lines:
            self.regex_lines = [line]
            return
        if _NUMBER.sub("#", line) != _NUMBER.sub("#", self.regex_lines[0]):  # a timestamp or figure is no difference
            self.regex_differ = True
        self.regex_lines[1:] = [line]

    def _regex_value(self, found: str) -> tuple[float | None, str]:
        """The regex's capture as the time objective's milliseconds (a rate's per unit of work), or None and why."""
        if not self.rate:
            return _read_value(found, DEFAULT_METRIC_UNIT, self.shift, self.unit)
        rate, why = _read_value(found, None)
        if rate is None:
            return None, why
        if rate <= 0:
            return None, (f"a rate of 0 or below measures nothing ({self.unit}, higher is better): the benchmark "
                          "skipped its work or its timer is too coarse; time more iterations of the work, or check it")
        per_unit = per_unit_ms(rate)
        if not math.isfinite(per_unit):
            return None, "a rate too small to be a number (out of range)"
        return per_unit, ""

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
            printed = self.regex_printed
            if self.regex_differ:
                printed = replace(printed, several=(self.regex_count, self.regex_lines[0], self.regex_lines[-1]))
            printed_times[TIME] = printed_times[TIME_MS] = printed
        samples = {name: tuple(values) for name, values in self.sample_values().items()}
        for name, values in samples.items():  # a sampled metric's value is its samples' median
            metrics[name] = _median(values)
        return ParsedOutput(
            metrics, self.check, self.no_gpu_marker, self.no_gpu_runtime, tuple(problems), problem_count,
            tuple(self.check_problems), self.regex_matched, printed_times,
            self.pattern.pattern if self.pattern is not None else None, samples, self.kernel_fault,
        )


def _search_time(clock: _RegexClock, line: str) -> str | None:
    match = clock.search(line)
    if match is None:
        return None
    group = match.group(1)
    return group if isinstance(group, str) else None  # a group that did not take part


def _later_number(match: regex.Match[str] | None) -> str:
    """Where the METRIC regex's first group took no number: the rule book's note naming the first later group of
    the same match that took one, and its number, to append to the message; "" where none did. cuda-ground-up's
    METRIC "size \\(([0-9x]+)\\): ([0-9.]+)" captured the size '4096x4096x4096' in its first group, the GFLOPS in
    its second."""
    if match is None:
        return ""
    for index, group in enumerate(match.groups()[1:], start=2):
        if group and _read_value(group, None)[0] is not None:
            note = load_rules().message("metric_later_group", index=str(index), value=clip(group))
            return f" ({note})"
    return ""


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


def clip(text: str, limit: int = 120) -> str:
    """`text` cut to `limit` characters (ending "..."), for messages quoting the benchmark."""
    return text if len(text) <= limit else text[: limit - 3] + "..."

