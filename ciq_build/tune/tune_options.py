"""The command line of `tune` and its resolution, with the target's manifest, into one TuneSettings.

`TuneOptions` is what the user typed (None where they gave nothing);
`resolve_settings` reads it and the manifest once, in one place, and every
other part of the driver reads the frozen `TuneSettings` it returns.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ciq_build.core.objectives import (
    DEFAULT_OBJECTIVES,
    Objective,
    known_spellings,
    needs_benchmark,
    parse_objectives,
    read_from,
    unbenchmarked_names,
)
from ciq_build.core.options import (
    add_arguments,
    at_least,
    command_line,
    declared,
    given,
    option,
    parsed_values,
    problems,
)
from ciq_build.core.settings import (
    TIMEOUT_RULE,
    BuildSettings,
    MeasureSettings,
    SearchSettings,
    duration_seconds,
    first_given,
    merged,
    timeout_seconds,
)
from ciq_build.errors import ConfigError
from ciq_build.project.manifest import REGISTERED, Manifest
from ciq_build.search.strategies import GRID_DEFAULT, resolve_strategy, strategy_names, strategy_options_help

# Where each --stage searches from: the compiler's defaults, or the best configuration the stages before it validated.
STAGE_FROM_DEFAULTS, STAGE_FROM_BEST, STAGE_FROM_BOTH = "defaults", "best", "both"

_SEARCH = SearchSettings()
_MEASURE = MeasureSettings()
_BUILD = BuildSettings()


def _comma_list(text: str) -> list[str]:
    return [item for item in text.split(",") if item.strip()]


def _strategy_name(strategy: object) -> str:
    """The strategy as a command line names it: only a registered one can be handed to another process."""
    if isinstance(strategy, str):
        return strategy
    raise ConfigError(f"the strategy {strategy!r} is a Python object, which a tune in another process "
                      "(several targets on Ray) cannot receive: tune these targets one at a time from Python")


def stage_kinds(text: str) -> tuple[str, ...]:
    """What one --stage searches: --controls' words, comma-separated ("knobs,params")."""
    return tuple(kind.strip() for kind in text.split(",") if kind.strip())


def _stage(text: str) -> str | None:
    kinds = stage_kinds(text)
    if not kinds:
        return f"names what the stage searches, --controls' words comma-separated (e.g. knobs,params), not {text!r}"
    from ciq_build.search.select import search_kinds  # the search's machinery: for a --stage only, not --help

    try:
        search_kinds(SearchSettings(controls=kinds))  # a misspelt later stage is refused before the first one runs
    except ConfigError as error:
        return f"{text!r}: {error}"
    return None


def _key_value(pair: str) -> str | None:
    return None if "=" in pair and pair.partition("=")[0].strip() else f"takes KEY=VALUE, not {pair!r}"


def _strategy_options_help() -> str:
    return f"Options: {strategy_options_help()}."  # imports every strategy's module: only for --help


def _known_strategy(strategy: object) -> None:
    resolve_strategy(strategy)  # an unknown name (or an object that is no Strategy) is refused, naming the choices


def _timeout(timeout: float) -> str | None:
    return None if timeout_seconds(timeout) is not None else f"must be {TIMEOUT_RULE}, not {timeout!r}"


def _duration(limit: float | str) -> None:
    duration_seconds(limit)  # 30m, 1h30m, 90s or seconds: anything else is refused with the forms it takes


# The sections of `tune --help`, in this order (an option's `group`); an executor's own options' sections come
# between execution and output (ciq_build.tune.executors).
SEARCH, EXECUTION, OUTPUT = "search", "execution", "output"


@dataclass
class TuneOptions:
    """Everything `python -m ciq_build tune` was asked to do; None: not given, the manifest or default decides.

    Each option is declared once, as a field made by `option` (ciq_build.core.options): its flag, help, group,
    choices and check. The `tune` arguments, `from_args`, `argv`, `validate` and the keywords of
    `ciq_build.tune_target` are built from these declarations. The fields without one are set by the command
    itself: the positional targets and the build tree, and the executor's own options, which that executor
    declares (ciq_build.tune.executors names them, e.g. ciq_build.ray.options).
    """

    target: str  # "" for tune --all or several targets: each is tuned with these options (ciq_build.tune.all_targets)
    build_dir: Path
    source_dir: Path | None = None
    targets: tuple[str, ...] = ()  # tune A B C: the targets named, when more than one (tune --all: none)
    # The options the executor declares itself, as an instance of its dataclass (--executor ray: RayOptions);
    # None: its defaults.
    executor_options: Any = None
    # -- search --
    objectives: list[str] | None = option(
        "--objective", group=SEARCH, repeated=True, metavar="NAME",
        help=f"objective, repeatable ({known_spellings()}; prefix max: to maximise); default: the target's OBJECTIVES")
    controls: list[str] | None = option(
        "--controls", group=SEARCH, repeated=True, metavar="KIND",
        help="what to search, repeatable: knobs, params, ptxas-acf[:VER[:VARIANT]], nvcc-acf[:VER[:VARIANT]], a .bin search "
             "space, or acf-pool:DIR (ACFs sampled ahead with sample-acfs); default: the target's SEARCH_SPACE "
             "(knobs + params)")
    stages: list[str] = option(
        "--stage", group=SEARCH, repeated=True, default_factory=list, metavar="KINDS", check=_stage,
        help="repeatable, in place of --controls: a staged search (ciq_build.tune.stages), each stage searching "
             "KINDS (--controls' words, comma-separated) from what --stage-from says, e.g. --stage knobs,params "
             "--stage ptxas-acf:13.3; each stage is a whole tune (its search in the journal, re-measure and pin, "
             "which replaces the one before unless that one is better); --time-limit and --max-evaluations are shared out among the "
             "stages")
    stage_from: str = option(
        "--stage-from", group=SEARCH, choices=(STAGE_FROM_BOTH, STAGE_FROM_DEFAULTS, STAGE_FROM_BEST),
        default=STAGE_FROM_BOTH,
        help="what each --stage searches from: both (a later stage's budget split between a search from the "
             "compiler's defaults and one on top of the best configuration the stages before it validated: for a "
             "stage of ACFs its -D source parameters alone, an ACF setting the compiler's controls itself), "
             "defaults or best alone; the pin at the end the best validated of all, each winner re-measured beside "
             "the pin before it. Default both: on the GPU an SGEMM's ACF gain was larger from the defaults than on "
             "top of its best tile, and an attention's ACF gain only composed with its best tile on top of it "
             "(docs/RESULTS.md)")
    # A registered name (ciq_build.search.strategies), or from Python a Strategy object; None: the space's default.
    strategy: object = option(
        "--strategy", group=SEARCH, choices=strategy_names, show=_strategy_name, check=_known_strategy,
        help=f"how to search: {', '.join(strategy_names())} (ciq_build.search.strategies); default: compileiq for "
             f"a compiler ACF space (only it can sample one), else {GRID_DEFAULT} (a grid its budget covers, after "
             "CONSTRAINTS: each configuration once, as exhaustive)")
    generations: int = option("--generations", group=SEARCH, parse=int, default=_SEARCH.generations,
                              check=at_least(1),
                              help=f"generations of the search: batches of --pool-size candidates (default {_SEARCH.generations})")
    # None: not given (SearchSettings.pool_size_explicit), so a strategy may raise the default where it needs more.
    pool_size: int | None = option(
        "--pool-size", group=SEARCH, parse=int, check=at_least(2),
        help=f"candidates per generation (default {_SEARCH.pool_size}; compileiq's raised to the smallest its engine "
             "takes, at least 6 and 3 + 2 x objectives, where neither this nor --strategy-option pool_size= is "
             "given)")
    mutate_rate: float = option("--mutate-rate", group=SEARCH, parse=float, default=_SEARCH.mutate_rate,
                                help=f"probability that a gene mutates (default {_SEARCH.mutate_rate})")
    strategy_options: list[str] = option(
        "--strategy-option", group=SEARCH, repeated=True, default_factory=list, metavar="KEY=VALUE",
        check=_key_value, more_help=_strategy_options_help,
        help="repeatable: one of the strategy's own options, over --generations, --pool-size and --mutate-rate "
             "where it has the same name; a key the strategy does not declare is refused.")
    max_evaluations: int | None = option("--max-evaluations", group=SEARCH, parse=int,
                                         default=_SEARCH.max_evaluations,
                                         help="stop after this many evaluations")
    time_limit: float | str | None = option(
        "--time-limit", group=SEARCH, metavar="DURATION", check=_duration,
        help="a wall-clock budget for the whole tune from its start, e.g. 30m, 1h30m, 90s: the search stops "
             "starting candidates early enough for the winner's rebuild and re-measure (estimated from the "
             "baseline's; those running finish), and the best so far is re-measured and pinned")
    seed_from: list[str] = option(
        "--seed-from", group=SEARCH, repeated=True, default_factory=list, metavar="SEED",
        help="repeatable: known-good configurations evaluated first, entering the search's first generation (in "
             "place of the target's SEEDS): a pinned record (another target's or architecture's <target>.json), an "
             "ACF (.acf), a folder of them (an ACF pool, another project's ciq/), or controls as a command line, "
             "e.g. --seed-from='-Xptxas=-O2 -DTILE=32'; what does not fit the space searched is said and skipped "
             "(every strategy; compileiq evaluates them without learning from them)")
    allow_numerics: bool = option("--allow-numerics", group=SEARCH, switch=True, default=_SEARCH.allow_numerics,
                                  help="also search flags that change floating-point results (fast-math family)")
    pick: str = option("--pick", group=SEARCH, choices=("knee", "first"), default=_SEARCH.pick,
                       help="with several objectives, which Pareto point to pin: knee (closest to the ideal point "
                            "after normalising each objective) or first (best on the first objective)")
    seed: int = option("--seed", group=SEARCH, parse=int, default=_SEARCH.seed,
                       help="random seed (same seed, same candidates)")
    architecture: str | None = option(
        "--architecture", group=SEARCH, metavar="ARCH",
        help="tune one architecture of a multi-architecture target (e.g. 80 or sm_90a): only it is built, and the "
             "winner is pinned as its entry of the target's record, beside the other architectures' (each applied "
             "to its own -gencode)")
    # -- execution --
    jobs: int = option("--jobs", "-j", group=EXECUTION, parse=int, default=_BUILD.jobs, check=at_least(1),
                       help=f"candidates built in parallel (default {_BUILD.jobs})")
    gpus: list[str] = option("--gpus", group=EXECUTION, parse=_comma_list, show=",".join, default_factory=list,
                             metavar="LIST",
                             help="GPUs to spread benchmarks over, e.g. 0,1 (one benchmark per GPU at a time; "
                                  "default: the default GPU, one benchmark at a time)")
    repeats: int = option("--repeats", group=EXECUTION, parse=int, default=_MEASURE.repeats, check=at_least(1),
                          help=f"benchmark runs per candidate; the median is scored (default {_MEASURE.repeats})")
    timeout: float | None = option(
        "--timeout", group=EXECUTION, parse=float, check=_timeout,
        help=f"seconds before a compile or benchmark run is killed, used as given (default: the target's TIMEOUT, "
             f"{_MEASURE.timeout:g} unless set, or 4x the baseline's when more; the baseline itself gets at least 600)")
    # Its choices are the executor registry's names, which the registry (above this module) hands the parser and
    # checks itself (ciq_build.tune.executors).
    executor: str = option("--executor", group=EXECUTION, default="local",
                           help="where candidates are evaluated: local (this machine, default) or ray (one actor per "
                                "--jobs slot on a Ray cluster; needs ciq-build[ray] on the workers), or one "
                                "registered from Python (ciq_build.tune.executors.register_executor)")
    cmake_args: list[str] = option("--cmake-arg", group=EXECUTION, repeated=True, default_factory=list,
                                   metavar="ARG",
                                   help="extra argument for configuring a new build dir (with --source-dir); on one configured "
                                        "already, refused unless its cache holds the same -D setting")
    fresh: bool = option("--fresh", group=EXECUTION, switch=True, default=False,
                         help="start over instead of resuming the journal")
    wait: bool = option("--wait", group=EXECUTION, switch=True, default=False,
                        help="wait for another tune of the same target to finish")
    # -- output --
    pin: bool = option("--no-pin", group=OUTPUT, switch=True, default=True,
                       help="search and report, but write no pinned record")
    quiet: bool = option("--quiet", "-q", group=OUTPUT, switch=True, default=False,
                         help="no progress: warnings and the summary only")
    force: bool = option("--force", group=OUTPUT, switch=True, default=False,
                         help="pin the winner even where the pin already there is better (same objectives, toolkit "
                              "and architectures: its figures, or its runtime re-measured beside the winner); "
                              "without it, such a pin is kept and old against new is said; and replace a pin tuned "
                              "for other objectives, which a tune without it refuses before its search (a tune "
                              "--architecture, whose winner would join that record, even with it)")

    @classmethod
    def from_args(cls, args: argparse.Namespace, executor_options: object = None) -> TuneOptions:
        """The options a parser made by `add_tune_arguments` read; `executor_options`: those of the executor's own
        declaration it read (ciq_build.tune.executors.read_tune_options)."""
        return cls(target=args.target[0] if len(args.target) == 1 else "",
                   targets=tuple(dict.fromkeys(args.target)) if len(args.target) > 1 else (),
                   build_dir=args.build_dir.resolve(),
                   source_dir=args.source_dir.resolve() if args.source_dir else None,
                   executor_options=executor_options, **parsed_values(cls, args))

    def argv(self) -> list[str]:
        """The `tune` command line of these options (its arguments after `tune`): what from_args reads back.

        How `tune --all --executor ray` starts each target's own `tune` (ciq_build.ray.targets).
        """
        args = [*(self.targets or ([self.target] if self.target else [])), "-B", str(self.build_dir)]
        if self.source_dir is not None:
            args += ["-S", str(self.source_dir)]
        own = command_line(self.executor_options) if self.executor_options is not None else []
        return args + command_line(self) + own

    def validate(self) -> None:
        """Refuse what no manifest can make right in the options `tune` declares (the executor's name and its own
        options are the registry's to check: ciq_build.tune.executors.checked_executor, which calls this)."""
        for problem in problems(self):
            raise ConfigError(problem)
        if self.stages and self.controls:
            raise ConfigError("--stage names what each stage searches, in place of --controls: leave out --controls")
        if self.stage_from != STAGE_FROM_BOTH and not self.stages:
            raise ConfigError(f"--stage-from {self.stage_from} says where each --stage searches from: name the stages "
                              "(--stage KINDS, repeated) or leave out --stage-from")


def add_tune_arguments(parser: argparse.ArgumentParser, options: type[TuneOptions] = TuneOptions,
                       more: Sequence[type] = (), choices: Mapping[str, Callable[[], Sequence[str]]] | None = None
                       ) -> dict[str, argparse._ArgumentGroup]:
    """`tune`'s positional targets and its declared options, in their --help groups (returned, by name); `more`:
    other declarations (an executor's own options), their groups between execution and output; `choices`: by
    field name, those a registry keeps (add_arguments)."""
    parser.add_argument("target", nargs="*", default=[],
                        help=f"a target {REGISTERED}; several are tuned as --all tunes its targets")
    theirs = [how.group for declaration in more for _, how in declared(declaration)]
    names = dict.fromkeys([SEARCH, EXECUTION, *theirs, OUTPUT])
    groups = {name: parser.add_argument_group(f"{name} options") for name in names}
    for declaration in (options, *more):
        add_arguments(parser, declaration, groups, choices)
    return groups


@dataclass(frozen=True)
class TuneSettings:
    """One tune, resolved: what to search, how to measure and build, and what to do with the result."""

    target: str
    build_dir: Path
    objectives: tuple[Objective, ...]
    search: SearchSettings
    measure: MeasureSettings
    build: BuildSettings
    source_dir: Path | None = None  # the project's sources, where given (tune -S)
    pin: bool = True  # write the winner's record (tune --no-pin: search and report only)
    fresh: bool = False  # start the journal over instead of resuming it
    wait: bool = False  # queue behind another tune of the target instead of refusing
    quiet: bool = False  # no progress lines (warnings are still printed)
    force: bool = False  # replace a pin that is better than the winner (ciq_build.tune.old_pin)
    executor: str = "local"  # where candidates are evaluated: an executor's name (ciq_build.tune.executors)
    executor_options: Any = None  # its own options, as given (TuneOptions.executor_options)

    @property
    def needs_benchmark(self) -> bool:
        return needs_benchmark(self.objectives)


def resolve_settings(options: TuneOptions, manifest: Manifest) -> TuneSettings:
    """The command line over the manifest over the defaults, checked against each other.

    The options on their own were checked once already, before anything was configured
    (ciq_build.tune.executors.checked_executor; a Ray child's are its parent's)."""
    # Each field by its name (ciq_build.core.settings.merged): what the command line gave, else the target's
    # ciq_tune_target(), else the default. Only the values below are not the sources' own as they stand.
    from ciq_build.search.seeds import manifest_seeds  # the search's machinery: for a tune only, not --help

    typed = {**given(options), "timeout_explicit": options.timeout is not None,
             "pool_size_explicit": options.pool_size is not None,
             "seeds_said_as": "--seed-from" if options.seed_from else None,
                    "time_limit": None if options.time_limit is None else duration_seconds(options.time_limit)}
    # The manifest always has a TIMEOUT (the CMake module's default is DEFAULT_TIMEOUT).
    target = {"objectives": manifest.objectives, "controls": manifest.search_space, "timeout": manifest.timeout,
              "seed_from": manifest_seeds(manifest.seeds, manifest.source_dir),
              "seeds_said_as": ("ciq_seeds" if manifest.setuptools else "SEEDS") if manifest.seeds else None,
              "allow_numerics": manifest.allow_numerics}
    objectives = read_from(parse_objectives(list(first_given("objectives", typed, target, default=DEFAULT_OBJECTIVES))),
                           manifest.metric_regex, manifest.metric_unit)
    resolved = {"target": manifest.target, "build_dir": options.build_dir, "source_dir": options.source_dir,
                "objectives": objectives, "executor_options": options.executor_options}
    settings = merged(TuneSettings, resolved, typed, target)
    if settings.needs_benchmark and manifest.benchmark is None:
        registered = (f'CudaExtension(ciq_target="{manifest.target}") gives none: add ciq_benchmark=[sys.executable, '
                      '"bench.py"]' if manifest.setuptools else
                      f"ciq_tune_target({manifest.target}) registers none: add BENCHMARK <exe-target>")
        raise ConfigError(
            f"objective(s) {', '.join(o.name for o in objectives if o.source == 'benchmark')} need a "
            f"benchmark, and {registered}, "
            f"or tune an objective measured without one (--objective, one of {unbenchmarked_names()})")
    return settings

