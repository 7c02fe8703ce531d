"""The command line of `tune` and its resolution, with the target's manifest, into one TuneSettings.

`TuneOptions` is what the user typed (None where they gave nothing);
`resolve_settings` reads it and the manifest once, in one place, and every
other part of the driver reads the frozen `TuneSettings` it returns.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field, fields
from pathlib import Path

from ciq_build.build.manifest import SETUPTOOLS_GENERATOR, Manifest
from ciq_build.core.objectives import Objective, needs_benchmark, parse_objectives, unbenchmarked_names
from ciq_build.core.settings import (
    PLAIN_KINDS,
    TIMEOUT_RULE,
    BuildSettings,
    MeasureSettings,
    SearchSettings,
    duration_seconds,
    timeout_seconds,
)
from ciq_build.errors import ConfigError
from ciq_build.search.strategies import resolve_strategy

# What is tuned when neither --objective nor the target's OBJECTIVES says.
DEFAULT_OBJECTIVES = ("spill_bytes",)

_SEARCH = SearchSettings()
_MEASURE = MeasureSettings()
_BUILD = BuildSettings()


@dataclass(frozen=True)
class ExecutorSettings:
    """Where candidates are evaluated: an executor's name (ciq_build.tune.executor), and the Ray executor's options."""

    kind: str = "local"
    address: str | None = None  # the Ray cluster (ray.init(address=)); None: as ray.init() finds one
    gpu_resource: str | None = None  # a custom resource naming the GPU kind, asked for per benchmark slot
    sources: str = "shared"  # how the sources reach the workers: one of ciq_build.ray.sources.SOURCE_MODES
    compile_resource: str | None = None  # a custom resource of the nodes meant for compiles (CPU-only ones)


def _of(executor: str, flag: str) -> dict[str, str]:
    """A TuneOptions field that is `executor`'s own option, given on the command line as `flag`."""
    return {"executor": executor, "flag": flag}


@dataclass
class TuneOptions:
    """Everything `python -m ciq_build tune` was asked to do; None: not given, the manifest or default decides."""

    target: str  # "" for tune --all or several targets: each is tuned with these options (ciq_build.tune.all_targets)
    build_dir: Path
    source_dir: Path | None = None
    generations: int = _SEARCH.generations
    pool_size: int = _SEARCH.pool_size
    mutate_rate: float = _SEARCH.mutate_rate
    objectives: list[str] | None = None
    controls: list[str] | None = None
    allow_numerics: bool = _SEARCH.allow_numerics
    pick: str = _SEARCH.pick
    seed: int = _SEARCH.seed
    jobs: int = _BUILD.jobs
    repeats: int = _MEASURE.repeats
    timeout: float | None = None
    max_evaluations: int | None = _SEARCH.max_evaluations
    time_limit: float | str | None = None  # --time-limit: 30m, 1h30m, 90s or seconds; None: no limit
    seed_from: list[str] = field(default_factory=list)  # --seed-from, repeatable (ciq_build.search.seeds)
    fresh: bool = False
    wait: bool = False
    pin: bool = True
    quiet: bool = False
    cmake_args: list[str] = field(default_factory=list)
    gpus: list[str] = field(default_factory=list)
    executor: str = "local"  # a name of ciq_build.tune.executor's registry
    # An executor's own options say so (`_of`): given with another executor, they are refused.
    ray_address: str | None = field(default=None, metadata=_of("ray", "--ray-address"))
    ray_gpu_resource: str | None = field(default=None, metadata=_of("ray", "--ray-gpu-resource"))
    ray_sources: str = field(default="shared", metadata=_of("ray", "--ray-sources"))
    ray_compile_resource: str | None = field(default=None, metadata=_of("ray", "--ray-compile-resource"))
    architecture: str | None = None  # tune --architecture: one architecture of a multi-architecture target
    targets: tuple[str, ...] = ()  # tune A B C: the targets named, when more than one (tune --all: none)
    # --ray-targets: how many targets tune at once on the cluster (None: all)
    ray_targets: int | None = field(default=None, metadata=_of("ray", "--ray-targets"))
    # --strategy: a registered name (ciq_build.search.strategies), or from Python a Strategy object;
    # None: the space's default.
    strategy: object = None

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> TuneOptions:
        return cls(
            target=args.target[0] if len(args.target) == 1 else "", build_dir=args.build_dir.resolve(),
            source_dir=args.source_dir.resolve() if args.source_dir else None,
            generations=args.generations, pool_size=args.pool_size, mutate_rate=args.mutate_rate,
            objectives=args.objective, controls=args.controls, allow_numerics=args.allow_numerics,
            pick=args.pick, seed=args.seed, jobs=args.jobs, repeats=args.repeats, timeout=args.timeout,
            max_evaluations=args.max_evaluations, time_limit=args.time_limit, fresh=args.fresh,
            seed_from=list(args.seed_from), wait=args.wait, pin=not args.no_pin,
            quiet=args.quiet, cmake_args=list(args.cmake_arg),
            gpus=[g for g in (args.gpus or "").split(",") if g.strip()],
            executor=args.executor, ray_address=args.ray_address, ray_gpu_resource=args.ray_gpu_resource,
            ray_sources=args.ray_sources, ray_compile_resource=args.ray_compile_resource,
            architecture=getattr(args, "architecture", None),
            targets=tuple(dict.fromkeys(args.target)) if len(args.target) > 1 else (), ray_targets=args.ray_targets,
            strategy=args.strategy,
        )

    def argv(self) -> list[str]:
        """The `tune` command line of these options (its arguments after `tune`): what from_args reads back.

        How `tune --all --executor ray` starts each target's own `tune` (ciq_build.ray.targets).
        """
        args = [*(self.targets or ([self.target] if self.target else [])), "-B", str(self.build_dir)]
        if self.source_dir is not None:
            args += ["-S", str(self.source_dir)]
        args += ["--generations", str(self.generations), "--pool-size", str(self.pool_size),
                 "--mutate-rate", repr(self.mutate_rate), "--pick", self.pick, "--seed", str(self.seed),
                 "--jobs", str(self.jobs), "--repeats", str(self.repeats), "--executor", self.executor,
                 "--ray-sources", self.ray_sources]
        for flag, values in (("--objective", self.objectives), ("--controls", self.controls),
                             ("--seed-from", self.seed_from)):
            for value in values or ():
                args.append(f"{flag}={value}")
        args += [f"--cmake-arg={arg}" for arg in self.cmake_args]
        given: tuple[tuple[str, object], ...] = (
            ("--timeout", self.timeout), ("--max-evaluations", self.max_evaluations),
            ("--time-limit", self.time_limit),
            ("--ray-address", self.ray_address), ("--ray-gpu-resource", self.ray_gpu_resource),
            ("--ray-compile-resource", self.ray_compile_resource), ("--architecture", self.architecture),
            ("--ray-targets", self.ray_targets), ("--strategy", self._strategy_name()))
        for flag, setting in given:
            if setting is not None:
                args.append(f"{flag}={setting!r}" if isinstance(setting, float) else f"{flag}={setting}")
        if self.gpus:
            args.append(f"--gpus={','.join(self.gpus)}")
        for flag, on in (("--allow-numerics", self.allow_numerics), ("--fresh", self.fresh), ("--wait", self.wait),
                         ("--no-pin", not self.pin), ("--quiet", self.quiet)):
            if on:
                args.append(flag)
        return args

    def _strategy_name(self) -> str | None:
        """The strategy as a command line names it: only a registered one can be handed to another process."""
        if self.strategy is None or isinstance(self.strategy, str):
            return self.strategy
        raise ConfigError(f"the strategy {self.strategy!r} is a Python object, which a tune in another process "
                          "(several targets on Ray) cannot receive: tune these targets one at a time from Python")

    def validate(self) -> None:
        """Refuse what no manifest can make right, before anything is configured or read."""
        if self.strategy is not None:
            resolve_strategy(self.strategy)  # an unknown name, said before anything is built
        if self.jobs < 1:
            raise ConfigError("--jobs must be at least 1")
        if self.repeats < 1:
            raise ConfigError("--repeats must be at least 1")
        if self.generations < 1 or self.pool_size < 2:
            raise ConfigError("--generations must be at least 1 and --pool-size at least 2")
        if self.time_limit is not None:
            duration_seconds(self.time_limit)
        if self.timeout is not None and timeout_seconds(self.timeout) is None:
            raise ConfigError(f"--timeout must be {TIMEOUT_RULE}, not {self.timeout!r}")
        foreign = [(o.metadata["executor"], o.metadata["flag"]) for o in fields(self)
                   if o.metadata.get("executor") not in (None, self.executor) and getattr(self, o.name) != o.default]
        if foreign:
            owner = foreign[0][0]
            flags = [flag for executor, flag in foreign if executor == owner]
            raise ConfigError(f"{', '.join(flags)} need{'s' if len(flags) == 1 else ''} --executor {owner}")


@dataclass(frozen=True)
class TuneSettings:
    """One tune, resolved: what to search, how to measure and build, and what to do with the result."""

    target: str
    build_dir: Path
    source_dir: Path | None
    objectives: tuple[Objective, ...]
    search: SearchSettings
    measure: MeasureSettings
    build: BuildSettings
    pin: bool = True  # write the winner's record (tune --no-pin: search and report only)
    fresh: bool = False  # start the journal over instead of resuming it
    wait: bool = False  # queue behind another tune of the target instead of refusing
    quiet: bool = False  # no progress lines (warnings are still printed)
    executor: ExecutorSettings = ExecutorSettings()

    @property
    def needs_benchmark(self) -> bool:
        return needs_benchmark(self.objectives)


def resolve_settings(options: TuneOptions, manifest: Manifest) -> TuneSettings:
    """The command line over the manifest over the defaults, checked against each other."""
    options.validate()
    objectives = tuple(parse_objectives(list(options.objectives or manifest.objectives or DEFAULT_OBJECTIVES)))
    settings = TuneSettings(
        target=manifest.target, build_dir=options.build_dir, source_dir=options.source_dir,
        objectives=objectives,
        search=SearchSettings(
            generations=options.generations, pool_size=options.pool_size, mutate_rate=options.mutate_rate,
            seed=options.seed, max_evaluations=options.max_evaluations,
            time_limit=None if options.time_limit is None else duration_seconds(options.time_limit),
            seed_from=tuple(options.seed_from),
            kinds=tuple(options.controls or manifest.search_space or PLAIN_KINDS),
            allow_numerics=options.allow_numerics or manifest.allow_numerics, pick=options.pick,
            strategy=options.strategy),
        # The manifest always has a TIMEOUT (the CMake module's default is DEFAULT_TIMEOUT).
        measure=MeasureSettings(repeats=options.repeats, timeout=options.timeout or manifest.timeout,
                                timeout_explicit=options.timeout is not None, gpus=tuple(options.gpus)),
        build=BuildSettings(jobs=options.jobs, cmake_args=tuple(options.cmake_args)),
        pin=options.pin, fresh=options.fresh, wait=options.wait, quiet=options.quiet,
        executor=ExecutorSettings(options.executor, options.ray_address, options.ray_gpu_resource,
                                  options.ray_sources, options.ray_compile_resource),
    )
    if settings.needs_benchmark and manifest.benchmark is None:
        registered = (f'CudaExtension(ciq_target="{manifest.target}") gives none: add ciq_benchmark=[sys.executable, '
                      '"bench.py"]' if manifest.generator == SETUPTOOLS_GENERATOR else
                      f"ciq_tune_target({manifest.target}) registers none: add BENCHMARK <exe-target>")
        raise ConfigError(
            f"objective(s) {', '.join(o.name for o in objectives if o.source == 'benchmark')} need a "
            f"benchmark, and {registered}, "
            f"or tune an objective measured without one (--objective, one of {unbenchmarked_names()})")
    return settings
