"""Objective kinds in one table: what each objective a tune can score is, and where its value comes from.

An objective spec is ``[max:|min:]<kind>[:<argument>]`` (``time``, ``registers:heavy``,
``max:metric:gflops``). Everything ciq_build decides about an objective (the manifest's and the
command line's specs, the evaluator's build and measurement, preflight's tools, the compile-time
knobs, Ray's resource request, the help and the messages that list objectives) it reads from its
kind's row here. A new kind is one row of `KINDS` (and, where it reads ptxas's report, the one
`KernelUsage` field it reads); for a pinned record to carry it, also the rule book's
``pattern objective``, which tests/core/test_objectives.py checks against this table, as it does the
README's objectives table.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import ClassVar, Literal

from ciq_build.core.metric_unit import is_rate, rate_text
from ciq_build.core.pareto import Direction
from ciq_build.core.rules import load_rules, nearest
from ciq_build.errors import ConfigError

# Where a value is measured: a benchmark run (a GPU), the compiled code (no GPU), the compile's clock.
Source = Literal["benchmark", "static", "compile"]
# A tool beyond nvcc and ptxas (which every tune checks when it loads the toolchain).
Tool = Literal["cuobjdump", "nvdisasm"]
# What follows "<kind>:": nothing, an optional kernel regex, or the benchmark's metric name (required).
Argument = Literal["", "kernel regex", "metric name"]


# ---------------------------------------------------------------- extractors: how a value is read
# `costly`: measuring costs more than the code key (~50 ms of cuobjdump an object), so a candidate that
# builds the same code as an earlier one takes that one's value instead (ciq_build.tune.dedupe).


@dataclass(frozen=True)
class PtxasReport:
    """A field of ptxas's -v report of each kernel (ciq_build.compiler.metrics.KernelUsage), combined over
    the kernels: free with every candidate's compile log, and read by ptxas alone where the front end is kept."""

    field: str  # the KernelUsage attribute
    combine: Literal["max", "min", "sum"]
    origin: ClassVar[str] = "ptxas -v report"
    source: ClassVar[Source] = "static"
    costly: ClassVar[bool] = False


@dataclass(frozen=True)
class SassCount:
    """SASS instructions of the built objects, from cuobjdump --dump-sass: the objects must be built whole."""

    origin: ClassVar[str] = "cuobjdump --dump-sass"
    source: ClassVar[Source] = "static"
    costly: ClassVar[bool] = True


@dataclass(frozen=True)
class CompileClock:
    """Seconds the target's rebuild took: timed whole (nvcc, not the ptxas-only path), never the same twice."""

    origin: ClassVar[str] = "compile clock"
    source: ClassVar[Source] = "compile"
    costly: ClassVar[bool] = False


@dataclass(frozen=True)
class BenchmarkMetric:
    """A number the benchmark prints (``CIQ_METRIC <key>=<number>``; METRIC's regex for time_ms), the median of
    its runs; the key is the kind's metric key, or the spec's argument (metric:<name>)."""

    origin: ClassVar[str] = "benchmark run (GPU)"
    source: ClassVar[Source] = "benchmark"
    costly: ClassVar[bool] = True


Extractor = PtxasReport | SassCount | CompileClock | BenchmarkMetric


@dataclass(frozen=True)
class ObjectiveKind:
    """One row of the table: an objective's name and everything ciq_build does with it."""

    name: str
    extractor: Extractor
    metric_key: str  # where an evaluation's metrics hold the value ("" : the spec's argument names it)
    unit: str
    doc: str  # one line, as the README's objectives table shows it
    aliases: tuple[str, ...] = ()
    direction: Direction = "min"  # without a max: or min: prefix
    argument: Argument = ""
    tools: tuple[tuple[Tool, str], ...] = ()  # (tool, what it does for this kind)

    @property
    def source(self) -> Source:
        return self.extractor.source

    @property
    def spelling(self) -> str:
        """How help and messages name it: time, metric:<name>, registers[:<kernel regex>]."""
        if self.argument == "metric name":
            return f"{self.name}:<name>"
        return f"{self.name}[:<kernel regex>]" if self.argument == "kernel regex" else self.name


KINDS: tuple[ObjectiveKind, ...] = (
    ObjectiveKind("time", BenchmarkMetric(), "time_ms", "ms",
                  "the benchmark's time (`CIQ_METRIC time_ms=`, or `METRIC`'s regex in `UNIT`; a rate such as `TFLOPS` as "
                  "1000 / rate), median of the runs"),
    ObjectiveKind("energy", BenchmarkMetric(), "energy_j", "J",
                  "the benchmark's energy (`CIQ_METRIC energy_j=`, e.g. read from NVML), median of the runs"),
    ObjectiveKind("compile_time", CompileClock(), "compile_seconds", "s",
                  "seconds the rebuild of the target's objects takes (with Ninja its link is left out); also searches "
                  "the knobs that trade code for compile time",
                  aliases=("compile_seconds",)),
    ObjectiveKind("registers", PtxasReport("registers", "max"), "registers", "registers",
                  "registers per thread, the most of any kernel",
                  argument="kernel regex"),
    ObjectiveKind("spill_bytes", PtxasReport("spill_bytes", "sum"), "spill_bytes", "bytes",
                  "spill stores + spill loads, summed over the kernels", aliases=("spills",),
                  argument="kernel regex"),
    ObjectiveKind("stack_bytes", PtxasReport("stack_frame", "sum"), "stack_bytes", "bytes",
                  "stack frame, summed over the kernels", argument="kernel regex"),
    ObjectiveKind("shared_bytes", PtxasReport("shared", "max"), "shared_bytes", "bytes",
                  "static shared memory (`__shared__`) per block, the most of any kernel",
                  argument="kernel regex"),
    ObjectiveKind("occupancy", PtxasReport("occupancy", "min"), "occupancy", "%",
                  "theoretical occupancy (an SM's resident warps of its most, as Nsight Compute computes it) at "
                  "each kernel's block size (its `__launch_bounds__`, else `THREADS_PER_BLOCK`) and shared memory "
                  "(static, and the dynamic `DYNAMIC_SHARED_MEMORY` declares), the least of any "
                  "kernel; blind to the grid, which only the launch knows: a grid of fewer blocks than the SMs hold "
                  "at once, or its last partial wave, gains less from it or nothing",
                  direction="max", argument="kernel regex"),
    ObjectiveKind("sass_instructions", SassCount(), "sass_instructions", "instructions",
                  "SASS instructions but NOP padding, total over every kernel",
                  tools=(("cuobjdump", "counts SASS instructions"),
                         ("nvdisasm", "disassembles for cuobjdump --dump-sass"))),
    ObjectiveKind("metric", BenchmarkMetric(), "", "as printed",
                  "any number the benchmark prints as `CIQ_METRIC <name>=<number>`, median of the runs",
                  argument="metric name"),
)
_BY_NAME = {kind.name: kind for kind in KINDS}
_ALIASES = {alias: kind.name for kind in KINDS for alias in kind.aliases}

# The argument's characters, which the rule book's objective pattern repeats (tests/core/test_objectives.py).
METRIC_NAME = "[A-Za-z_][A-Za-z0-9_.-]*"


# What is tuned when neither --objective nor the target's OBJECTIVES (a CudaExtension's ciq_objectives) says,
# with a benchmark or without; `list` shows it for such a target.
DEFAULT_OBJECTIVES = ("spill_bytes",)


def find_kind(name: str) -> ObjectiveKind | None:
    """The kind of an objective's canonical name ("registers:heavy" -> registers), or None for none."""
    return _BY_NAME.get(name.partition(":")[0])


@dataclass(frozen=True)
class Objective:
    """One thing the search scores: its canonical name, direction and where it is measured."""

    name: str  # canonical: "time", "registers", "registers:heavy", "metric:gflops", ...
    direction: Direction = "min"
    source: Source = "benchmark"
    # `time` read from a rate (METRIC's UNIT, e.g. TFLOPS): its values are 1000 / rate ms, shown as the rate the
    # benchmark printed (ciq_build.core.metric_unit). How it is shown, not what it is: equal objectives stay equal.
    rate_unit: str = field(default="", compare=False)

    @property
    def spec(self) -> str:
        """The spelling that parse_objective reads back to this objective."""
        return self.name if self.direction == "min" else f"max:{self.name}"

    @property
    def kind(self) -> ObjectiveKind | None:
        """Its row of KINDS; None only for a stand-in named after nothing there (a journal without a record)."""
        return find_kind(self.name)

    @property
    def kernels(self) -> tuple[str, str] | None:
        """(metric key, kernel regex) of a per-kernel objective ("registers:heavy"), else None."""
        kind, (_, sep, pattern) = self.kind, self.name.partition(":")
        return (kind.metric_key, pattern) if kind is not None and sep and kind.argument == "kernel regex" else None

    @property
    def extractor(self) -> Extractor | None:
        kind = self.kind
        return kind.extractor if kind is not None else None

    def at_bound(self, value: float) -> bool:
        """Whether `value` is the best this objective can be, so that no candidate can beat it: a static figure
        (bytes, registers or instructions, never below 0) minimised at 0, or a percentage (occupancy) maximised
        at 100. A benchmark's figures have no such bound (a metric may go below 0)."""
        kind = self.kind
        if self.source != "static" or kind is None:
            return False
        return value <= 0 if self.direction == "min" else kind.unit == "%" and value >= 100


def metric_key(objective: Objective) -> str:
    """The metric an objective reads: time -> time_ms, metric:X -> X, registers:heavy as named, static names as is."""
    kind = objective.kind
    if kind is None or objective.kernels is not None:
        return objective.name
    return objective.name.partition(":")[2] if kind.argument == "metric name" else kind.metric_key


def unit_of(objective: Objective) -> str:
    """The unit a value of `objective` is shown in ("ms", "bytes"); "" where the name already says it
    (registers) or the benchmark's own number has none we know (metric:<name>)."""
    kind = objective.kind
    if kind is None or kind.unit in (kind.name, "as printed"):
        return ""
    return kind.unit


def with_unit(objective: Objective, value: float) -> str:
    """A value as progress lines and tables show it: `4.2 ms`, `0 bytes`, `40` (registers), `123.4 TFLOPS` (a time
    read from a rate)."""
    if objective.rate_unit:
        return rate_text(value, objective.rate_unit)
    unit = unit_of(objective)
    return f"{value:.6g} {unit}" if unit else f"{value:.6g}"


def read_from(objectives: Iterable[Objective], metric_regex: str, metric_unit: str) -> tuple[Objective, ...]:
    """`objectives` with `time` shown as the rate METRIC reads, where its UNIT is one (else as they are)."""
    return with_rate(objectives, metric_unit if metric_regex and is_rate(metric_unit) else "")


def with_rate(objectives: Iterable[Objective], rate_unit: str) -> tuple[Objective, ...]:
    """`objectives` with `time` shown as read from a rate in `rate_unit` ("": as a time)."""
    return tuple(replace(o, rate_unit=rate_unit) if o.name == "time" else o for o in objectives)


def named_scores(objectives: Iterable[Objective], scores: Iterable[float]) -> str:
    """Scores with their objectives' names and units: `time 4.2 ms, registers 40`."""
    return ", ".join(f"{o.spec} {with_unit(o, s)}" for o, s in zip(objectives, scores))


def unknown_objective(spec: str, base: str) -> str:
    """The one message for a misspelt objective: the rule book's, which ciq_tune_target() gives too."""
    rules = load_rules()
    words = rules.words["objective"]
    guess = nearest(base, list(words))
    return rules.message("unknown_objective", value=spec, hint=f" (did you mean {guess}?)" if guess and guess != base else "",
                         words=", ".join("metric:<name>" if w == "metric" else w for w in words)) + "."


def known_spellings() -> str:
    """Every objective spec a user may write, for help and error messages."""
    return ", ".join(kind.spelling for kind in KINDS)


def unbenchmarked_names() -> str:
    """The objectives measured without a benchmark (so without a GPU), for messages that suggest one."""
    return ", ".join(kind.name for kind in KINDS if kind.source != "benchmark")


def needs_benchmark(objectives: Iterable[Objective]) -> bool:
    """Some objective is read from a benchmark run: a GPU, and the benchmark linked."""
    return any(o.source == "benchmark" for o in objectives)


def only_benchmark(objectives: Iterable[Objective]) -> bool:
    """Every objective (one at least) is read from a benchmark run: the running code judges each candidate."""
    objectives = list(objectives)
    return bool(objectives) and all(o.source == "benchmark" for o in objectives)


def only_ptxas_report(objectives: Iterable[Objective]) -> bool:
    """Every objective is in ptxas's report: no object, no benchmark link is needed."""
    return all(isinstance(o.extractor, PtxasReport) for o in objectives)


def times_the_compile(objectives: Iterable[Objective]) -> bool:
    """Some objective is the compile's clock: compile whole, and search the knobs that trade code for time."""
    return any(isinstance(o.extractor, CompileClock) for o in objectives)


def costly(objectives: Iterable[Objective]) -> bool:
    """Measuring some objective costs more than the code key, so dedupe by machine code pays."""
    return any(o.extractor is not None and o.extractor.costly for o in objectives)


def tools_needed(objectives: Iterable[Objective]) -> dict[Tool, list[str]]:
    """{tool: what it does for which objective} for the tools beyond nvcc and ptxas that the objectives need."""
    needed: dict[Tool, list[str]] = {}
    for objective in objectives:
        kind = objective.kind
        for tool, why in kind.tools if kind is not None else ():
            needed.setdefault(tool, []).append(f"{why} (objective {objective.name})")
    return needed


def parse_objective(spec: object) -> Objective:
    """Read one objective spec: ``[max:|min:]<kind>[:<argument>]``, its direction the kind's by default."""
    if not isinstance(spec, str):
        raise ConfigError(f"objective {spec!r} is not a string; write e.g. time, max:metric:gflops or registers.")
    text = spec.strip()
    direction: Direction | None = None
    for prefix in ("max:", "min:"):
        if text.startswith(prefix):
            direction = "max" if prefix == "max:" else "min"
            text = text[len(prefix):]
            break
    base, sep, argument = text.partition(":")
    kind = _BY_NAME.get(_ALIASES.get(base, base))
    if kind is None or (sep and not kind.argument) or (kind.argument == "metric name" and not sep):
        raise ConfigError(unknown_objective(spec, base))
    if kind.argument == "metric name":
        argument = _metric_name(spec, argument)
    elif sep:
        argument = _kernel_regex(spec, argument)
    return Objective(f"{kind.name}:{argument}" if sep else kind.name, direction or kind.direction, kind.source)


def _metric_name(spec: str, name: str) -> str:
    if re.fullmatch(METRIC_NAME, name) is None:
        raise ConfigError(
            f"objective {spec!r}: metric name {name!r} must match {METRIC_NAME} "
            "(the <name> a benchmark prints as 'CIQ_METRIC <name>=<number>').")
    return name


def _kernel_regex(spec: str, pattern: str) -> str:
    """The kernel regex of a per-kernel objective, checked (it is written into records and read by CMake)."""
    rules = load_rules()
    if not rules.matches("kernel_regex", pattern):
        # A demangled template name holds < > , and spaces: '.' for each is the regex a user meant.
        dotted = "".join(c if rules.matches("kernel_regex", c) else "." for c in pattern)
        hint = (f" ({rules.message('kernel_regex_dotted', spec=spec[:-len(pattern)] + dotted)})"
                if pattern and dotted != pattern else "")
        raise ConfigError(rules.message("kernel_regex", value=spec, regex=pattern, hint=hint))
    try:
        re.compile(pattern)
    except re.error as error:
        raise ConfigError(f"objective {spec!r}: {pattern!r} is not a regular expression ({error})") from None
    return pattern


def parse_objectives(specs: list[str] | tuple[str, ...]) -> list[Objective]:
    """Read a list of objective specs; at least one, no objective twice."""
    if isinstance(specs, str) or not isinstance(specs, (list, tuple)):
        raise ConfigError(f"objectives must be a list of names, got {specs!r}.")
    if not specs:
        raise ConfigError("no objective given; name at least one, e.g. time or registers.")
    objectives = [parse_objective(spec) for spec in specs]
    seen: set[str] = set()
    for objective in objectives:
        if objective.name in seen:
            raise ConfigError(f"objective {objective.name!r} is given twice in {list(specs)!r}; name it once.")
        seen.add(objective.name)
    return objectives
