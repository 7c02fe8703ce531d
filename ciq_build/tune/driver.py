"""The tuning driver: `TuneRun`, the composition root of one `tune` run of one target, and the entry to it
(`run_tune`: the options checked, the project prepared, each --stage run through `tune_configured`).

The order: resolve the settings (ciq_build.tune.tune_options), make the candidate
source and check every tool, take the target's lock, open the journal
(ciq_build.tune.cache), configure the scratch trees, measure the baseline
(ciq_build.tune.baseline) with the baseline's limits, then run the search loop
(ciq_build.tune.loop) with the candidates' runner (ciq_build.tune.runner, its
limits derived from the baseline: ciq_build.tune.timeouts), and finish: confirm,
minimize, pin (ciq_build.tune.finish). What the builds write into the source
tree is watched by ciq_build.tune.source_watch. Everything a candidate does happens
in scratch trees, which the project's build backend makes (ciq_build.project.backend:
CMake's or setuptools').
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TextIO, TypeVar

from ciq_build.compiler import occupancy
from ciq_build.compiler.architectures import architecture_list, flag_architectures, is_keyword
from ciq_build.compiler.controls import Controls
from ciq_build.compiler.gpu_arch import ArchitecturePlan, plan_architectures, read_gpu_arch
from ciq_build.compiler.toolchain import Toolchain, other_toolkits
from ciq_build.core.objectives import Objective, needs_benchmark
from ciq_build.core.settings import CONFIGURE_TIMEOUT_FACTOR
from ciq_build.errors import BuildError, CiqError, ConfigError, DiskFullError
from ciq_build.measure import claim
from ciq_build.measure.sizes import SIZE_SEPARATOR
from ciq_build.pin.record import check_pin_dir
from ciq_build.project import environment
from ciq_build.project.backend import BuildBackend, make_trees
from ciq_build.project.manifest import Manifest, check_architectures_read, for_architecture
from ciq_build.project.param_defines import unguarded_defines
from ciq_build.project.per_block import Declared, check_block_size, wants_block_size
from ciq_build.project.preflight import benchmark_outside
from ciq_build.project.sources import Snapshot
from ciq_build.project.worker import WorkerTree, safe_name, scratch_root, tune_name
from ciq_build.search.base import CandidateSource
from ciq_build.search.evaluation import Evaluation
from ciq_build.search.select import search_kinds
from ciq_build.state.journal import Journal, TargetLock, tune_lock_path
from ciq_build.state.live import LiveStatus, live_status_path
from ciq_build.tune.ahead import start_builds_ahead
from ciq_build.tune.baseline import baseline_for_search, measure_baseline
from ciq_build.tune.cache import EvaluationCache, cache_key, part_digests, search_header
from ciq_build.tune.confirm import Confirmer
from ciq_build.tune.executor import Executor, SearchPhase
from ciq_build.tune.executors import checked_executor, get_executor
from ciq_build.tune.finish import Finish, Searched, TuneOutcome
from ciq_build.tune.gpu_time import GpuMeter, MeteredSlots
from ciq_build.tune.loop import (
    AT_BOUND,
    SearchLoop,
    at_every_bound,
    end_reserve_line,
    planned_budget,
    stop_on_disk_full,
    stopped_text,
    time_limit_ended,
)
from ciq_build.tune.old_pin import refuse_what_cannot_be_pinned
from ciq_build.tune.param_probe import overridden_params, warn_before_building
from ciq_build.tune.progress import LOG, TuneProgress, said_to
from ciq_build.tune.runner import BuildRunner, Runner, relocatable_note
from ciq_build.tune.searched_space import SearchedSpace
from ciq_build.tune.source_watch import SourceWatch
from ciq_build.tune.stages import tune_in_stages
from ciq_build.tune.timeouts import Timeouts, end_reserve, for_baseline, for_candidates, for_configure
from ciq_build.tune.tune_options import TuneOptions, TuneSettings, resolve_settings

W = TypeVar("W")


def run_tune(options: TuneOptions, backend: BuildBackend) -> TuneOutcome:
    """`python -m ciq_build tune`: prepare the project (CMake: configure or refresh), read the target, resolve,
    tune."""
    check_options(options, backend)
    backend.prepare()
    return tune_configured(options, backend)


def check_options(options: TuneOptions, backend: BuildBackend) -> Executor:
    """Refuse what no manifest can make right, before anything is configured or read; the options' executor."""
    executor = checked_executor(options)
    if not executor.uses_driver_trees and not backend.remote_builds:
        raise ConfigError(f"--executor {executor.name}: the workers it starts cannot build this project "
                          f"(a {backend.kind} project tunes with the local executor only); leave out --executor")
    return executor


def tune_configured(options: TuneOptions, backend: BuildBackend) -> TuneOutcome:
    """Tune `options.target` of a project `backend.prepare()` has prepared: read it, resolve, tune (stage by
    stage with --stage: ciq_build.tune.stages)."""
    manifest = backend.manifest(options.target)
    check_architectures_read(manifest)
    if options.architecture:
        manifest = for_architecture(manifest, options.architecture)
    toolchain = backend.toolchain(manifest)

    def tune(stage: TuneOptions, on_top: Controls | None) -> TuneOutcome:
        return TuneRun(resolve_settings(stage, manifest), manifest, toolchain, backend, on_top_of=on_top).run()

    if not options.stages:
        return tune(options, None)
    return tune_in_stages(options, tune, lambda text: None if options.quiet else LOG.info("%s", text))


class TuneRun:
    """One `tune` run of one target, with its settings resolved: the composition root of a tune, which makes the
    parts and runs them in order. Constructing it reads and writes nothing.

    What depends on the kind of project (its tools, scratch trees, benchmark command, source fingerprint,
    what applies the pin) is asked of `backend`.
    """

    def __init__(self, settings: TuneSettings, manifest: Manifest, toolchain: Toolchain, backend: BuildBackend,
                 out: TextIO | None = None, on_top_of: Controls | None = None) -> None:
        self.settings = settings
        self.on_top_of = on_top_of  # what the search goes on top of (a staged tune's best so far); None: the defaults
        self.backend = backend
        self.manifest = manifest
        self.toolchain = toolchain
        self.out = out if out is not None else sys.stderr
        self.objectives = list(settings.objectives)
        self.executor = get_executor(settings.executor)
        slots = MeteredSlots(settings.measure.gpus)
        self.meter: GpuMeter = slots.meter  # when benchmarks held a GPU, and the phases meanwhile
        # The baseline's runner (a large project's defaults may take long); the candidates' takes over once the
        # baseline is measured, with limits derived from it (ciq_build.tune.timeouts).
        self.runner = BuildRunner(manifest, toolchain, self.objectives, settings.measure.repeats,
                                  for_baseline(settings.measure), slots, warn=_warn,
                                  build_jobs=settings.build.jobs)
        self.state_dir = manifest.binary_dir / "ciq"
        self.cache = EvaluationCache(Journal(self.state_dir / "journal" / f"{tune_name(manifest)}.jsonl"),
                                     self.objectives, self._say)
        self.evaluations: list[Evaluation] = []
        self.sources = SourceWatch(backend.source_set(manifest), self.cache, self._say, _warn, self._key,
                                   part_digests(manifest, toolchain))
        self.deadline: float | None = None  # --time-limit, on time.monotonic(), from the start under the lock
        self.stopped_by: str | None = None  # the budget that ended the search (SearchLoop.stopped_by)
        self.space = SearchedSpace(settings.search, manifest, toolchain, self.objectives,
                                   self.state_dir / "acf" / safe_name(manifest.target), on_top_of)
        self.overridden: list[str] = []  # PARAMS names the source #defines again, unguarded (said before the baseline)
        self.builds_ahead: dict[str, int] = {}  # builds started ahead and used (ciq_build.tune.ahead), once stopped
        # Which architecture each figure is for (ciq_build.compiler.gpu_arch), once read before the baseline.
        self.architectures = ArchitecturePlan(None, None, "", None)
        self.live: LiveStatus | None = None  # what report --watch reads, once the lock is held

    def run(self) -> TuneOutcome:
        with said_to(self.out, self.settings.quiet):  # called as a library: what the tune says goes to `out`
            return self._run()

    def _run(self) -> TuneOutcome:
        self.executor.check(self.settings)  # what the executor refuses for these objectives, before anything runs
        source = self.space.source()  # the register cap's values fitted once the baseline is measured
        # Every tool the run will need, before anything is built (the search space is refused first).
        self.backend.check_tools(self.manifest, self.toolchain, pin=self.settings.pin, objectives=self.objectives,
                                 needs_benchmark=self.runner.needs_benchmark)
        if self.settings.pin:  # a pin dir that is a link is refused now, not after the search
            check_pin_dir(self.manifest.pin_dir, self.manifest.source_dir)
        with TargetLock(tune_lock_path(self.state_dir, safe_name(self.manifest.target)), wait=self.settings.wait) as lock:
            # What report --watch says of this tune: each phase the meter marks, each evaluation the progress tells.
            live = self.live = LiveStatus(live_status_path(lock.path), self.manifest.target)
            self.meter.listeners.append(live.phase)
            try:
                return self._run_locked(source)
            except DiskFullError as error:
                if error.advised:
                    raise
                raise self._disk_full("writing the journal") from None
            except OSError as error:
                if not environment.is_disk_full_error(error):
                    raise
                raise self._disk_full(f"writing {error.filename}" if error.filename else "writing a file") from None
            except BuildError as error:
                if not environment.says_disk_full(str(error)):
                    raise
                raise self._disk_full("configuring the scratch trees") from None
            finally:
                live.end()

    def _run_locked(self, source: CandidateSource) -> TuneOutcome:
        refuse_what_cannot_be_pinned(self.manifest, self.settings, self.toolchain)  # locked: what it waited for pinned
        limit = self.settings.search.time_limit
        if limit is not None:  # waiting for the lock (--wait) is not this tune's time
            self.deadline = time.monotonic() + limit
        fitting = self.space.fitting
        self.cache.open(search_header(self.manifest, self.toolchain, self.objectives, self.space.described(source),
                                      self.settings.measure.repeats), fresh=self.settings.fresh, said_later=True)
        self.sources.journaled()
        rule, switch = self.backend.toolkit_rule()
        self._say(_first_line(self.manifest, self.toolchain.describe(rule), self.objectives, self.cache.resuming))
        if others := other_toolkits(self.toolchain.nvcc):  # a CMake tree kept 13.0 while setuptools took pip's 13.3
            self._say(f"other toolkits here: {', '.join(f'{nvcc} ({where})' for where, nvcc in others)}; "
                      f"to tune with one, {switch}")
        if not fitting:  # else said once the register cap is fitted
            self.space.say_size(source, self._say)
        for note in claim.claim_tree(scratch_root(self.manifest)):  # nothing a killed tune left may still write
            self._say(note)
        base_tree, workers, configured = self._trees()
        self.runner.code_context = self._key(Controls())
        self.meter.enter("baseline")
        if self.runner.needs_benchmark and self.executor.uses_driver_trees:
            # Built by the runner of the phase at hand: those still building once the baseline is measured are
            # limited as candidates.
            # None guessed beside the baseline where the register cap is fitted after it: they would be other candidates.
            self.runner.ahead = start_builds_ahead(lambda tree, controls: self.runner.build(tree, controls),
                                                   None if fitting else source, workers, self.settings.build.jobs,
                                                   lambda c: not self.cache.has(self._key(c)))
        self._plan_architectures()
        baseline = self._baseline(base_tree, workers[0], configured)
        self.sources.tell(base_tree, *workers)  # the baseline's build may have written there first
        timeouts = for_candidates(self.settings.measure, baseline)
        self.runner = self.runner.with_timeouts(timeouts)  # the candidates' runner, knowing what the baseline's did
        trusted = Confirmer(self.runner, self.cache, self.objectives, self.settings.measure, timeouts,
                            self.settings.search.pick, self.manifest.target, self._say, _warn).trusted_baseline
        baseline = baseline_for_search(self.runner, trusted, baseline, base_tree, fitting,
                                       self.architectures.built, self._say)
        self.runner.size_reference = {name: value for name, value in baseline.metrics.items()
                                      if SIZE_SEPARATOR in name}
        self.runner.code_context = self._key(Controls())  # the baseline's build may have changed the sources
        if not self.settings.measure.timeout_explicit:
            self._say(timeouts.describe(self.settings.measure))
        self.runner.remember(baseline, incumbent=True)  # candidates race the defaults, journaled or measured now
        for journaled in self.cache.journaled(self.objectives):
            self.runner.remember(journaled)  # its code is shared as if measured in this run
        if self.runner.needs_benchmark:  # what a candidate's benchmark writes into the source tree is looked for
            self.sources.watch_candidates()
        if fitting:
            source = self.space.fitted(baseline, self._say)
        self._reserve_for_the_end(baseline)
        self.stopped_by = (AT_BOUND if at_every_bound(self.objectives, baseline.scores)
                           else self._search(source, workers, timeouts, baseline.scores))
        finish = Finish(self.settings, self.manifest, self.toolchain, self.runner, self.cache, self.meter,
                        self.architectures, self.backend.applied_by, self.executor.uses_driver_trees, self._say,
                        _warn, tie_keeps_pin=self.on_top_of is not None and not self.on_top_of.is_default,
                        built_architectures=built_architectures(self.manifest, self.backend))
        return finish.run(Searched(baseline, self.evaluations, base_tree, workers, source.describe(),
                                   stopped_text(self.stopped_by, self.settings.search, len(self.evaluations)), self.overridden))

    def _trees(self) -> tuple[WorkerTree, list[WorkerTree], Snapshot]:
        """The baseline's tree and the workers' (as many as the executor uses here: on Ray one, for the
        confirmation, since the actors keep their own), configured; the sources as configuring left them."""
        before = self.sources.snapshot()
        benchmarking = self.runner.slots.count if self.runner.needs_benchmark else 0
        count = self.executor.local_trees(self.settings.build.jobs, benchmarking) + 1
        # A configure each the first time (seconds to minutes for a large project), said before it starts.
        self._say(f"preparing {count} scratch trees in {scratch_root(self.manifest)} (the baseline's and "
                  f"{count - 1} worker(s)'; each configured once, then reused)")
        # Compile time is measured on the whole nvcc compile, never on the ptxas-only fast path.
        base_tree, *workers = make_trees(self.backend, self.manifest, self.toolchain, count,
                                         for_configure(self.settings.measure, CONFIGURE_TIMEOUT_FACTOR),
                                         fast_path=not self.runner.measures_compile_time)
        configured = self.sources.snapshot()
        self.sources.note(before, configured, "configuring the scratch trees")
        self.sources.tell(base_tree, *workers)
        self.sources.fingerprint(configured)
        return base_tree, workers, configured

    def _baseline(self, base_tree: WorkerTree, probe_tree: WorkerTree, configured: Snapshot) -> Evaluation:
        """The baseline, with a PARAMS name the source overrides said early: the probe's two builds run in
        `probe_tree` beside the baseline's build and runs (not where the compile is timed: they would slow it)."""
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="ciq-param-probe") as beside:
            probe = None
            if "params" in search_kinds(self.settings.search):
                said = warn_before_building(self.manifest, _warn)
                probe = beside.submit(overridden_params, self.manifest.params, probe_tree, self.runner.timeouts.compile,
                                      self.manifest.target, _warn, said, self.manifest.cuda_flags)
                if self.runner.measures_compile_time:
                    probe.result()
            try:
                baseline = measure_baseline(self.runner, self.cache, base_tree, self.manifest.target, self._key,
                                            self.sources, configured, self._disk_full, self._say)
                if probe is not None:
                    self.overridden = probe.result()
                return baseline
            except BaseException:
                self._stop_ahead()
                raise

    def _reserve_for_the_end(self, baseline: Evaluation) -> None:
        """--time-limit covers the whole tune: the search's deadline leaves room for what comes after it."""
        if self.deadline is None:
            return
        reserve = end_reserve(self.settings.measure, baseline, self.runner.needs_benchmark)
        self.deadline -= reserve
        self._say(end_reserve_line(self.settings.search, self.deadline - time.monotonic(), reserve,
                                   self.runner.needs_benchmark))

    def _stop_ahead(self) -> None:
        ahead, self.runner.ahead = self.runner.ahead, None
        if ahead is not None:
            ahead.stop()
            self.builds_ahead = ahead.describe()

    def _key(self, controls: Controls) -> str:
        return cache_key(self.manifest, self.toolchain, controls, self.sources.digest)

    def _disk_full(self, what: str) -> DiskFullError:
        done = sum(1 for e in self.evaluations if not e.cached and not e.environmental)
        return environment.disk_full_error(what, scratch_root(self.manifest), self.cache.path, len(self.cache) + done)

    def _plan_architectures(self) -> None:
        """Which GPU the benchmark runs on (without one: this machine's, read without taking a benchmark's slot)
        and which architecture static objectives score, said before the baseline; one describing other code is refused."""
        gpu = self.runner.read_gpu() if self.runner.needs_benchmark else read_gpu_arch()
        static = [o.spec for o in self.objectives if o.source == "static"]
        self.architectures = _architecture_plan(self.manifest, gpu, static, self.runner.needs_benchmark)
        self.runner.scored_architecture = self.architectures.scored
        _check_static_inputs(self.runner.per_block, self.objectives, self.manifest, self.architectures.scored)
        self.architectures.say(_warn, self._say)

    def _search(self, source: CandidateSource, workers: list[WorkerTree], timeouts: Timeouts,
                baseline: tuple[float, ...] | None) -> str | None:
        # A bar on a terminal, a line per evaluation in logs and CI; nothing with --quiet (the watched status
        # file is told all the same).
        expected, generations = planned_budget(source.describe(), self.settings.search, self.space.total)
        progress = TuneProgress(expected, generations, self.objectives, stream=self.out,
                                measured_this_run=self.cache.measured_this_run, deadline=self.deadline,
                                live=self.live, quiet=self.settings.quiet)
        # Every value the executor's workers need, fixed now: the candidates' timeouts are the baseline's.
        phase = SearchPhase(self.backend, self.manifest, self.toolchain, tuple(self.objectives),
                            self.settings.measure.repeats, self.settings.build.jobs, timeouts,
                            for_configure(self.settings.measure, CONFIGURE_TIMEOUT_FACTOR),
                            self.settings.executor_options,
                            self.sources.snapshot(), self.sources.writes_sources, self.runner, self._say)
        self.meter.enter("search")
        try:
            with self.executor.workers(phase, workers) as evaluating:
                loop = self._loop(source, evaluating.runner, evaluating.slots, progress, expected, baseline)
                loop.run()
        finally:
            self._stop_ahead()  # what the guesses still build ends before the winner's rebuild
        if loop.stopped_by == "time_limit":
            self._say(time_limit_ended(self.settings.search, len(self.evaluations)))
        return loop.stopped_by  # the budget that ended it, if one did

    def _loop(self, source: CandidateSource, runner: Runner[W], workers: Sequence[W],
              progress: TuneProgress | None, planned: int, baseline: tuple[float, ...] | None) -> SearchLoop[W]:
        disk_full = stop_on_disk_full(self._disk_full)

        def after_candidate(evaluated: Evaluation) -> BaseException | None:
            self.sources.after_candidate(evaluated)
            return disk_full(evaluated)

        loop = SearchLoop(source, runner, workers, self.cache, self._key, self.objectives,
                          planned=planned, budget=self.settings.search.max_evaluations, deadline=self.deadline,
                          progress=progress, stop_for=after_candidate,
                          ahead=self.runner.ahead if self.executor.uses_driver_trees else None,
                          pick=self.settings.search.pick, baseline=baseline)
        self.evaluations = loop.evaluations  # the same list: a full disk mid-search counts what finished
        return loop

    def _say(self, text: str) -> None:
        if not self.settings.quiet:
            LOG.info("%s", text)


def _architecture_plan(manifest: Manifest, gpu: int | None, static: Sequence[str], timed: bool) -> ArchitecturePlan:
    """The plan of a tune of `manifest`'s target (ciq_build.compiler.gpu_arch.plan_architectures)."""
    tree = None if manifest.setuptools else str(manifest.binary_dir)  # where other architectures are configured
    return plan_architectures(manifest.target, manifest.toolchain.architectures, gpu, manifest.tune_architecture,
                              static, timed, flag_architectures(manifest.cuda_flags),
                              defaulted=manifest.toolchain.architectures_default, build_dir=tree,
                              setuptools=manifest.setuptools)


def _warn(text: str) -> None:  # about the tune's results: said even with --quiet (it silences progress)
    LOG.warning("%s", text)


def _check_static_inputs(declared: Sequence[Declared | None], objectives: Sequence[Objective], manifest: Manifest,
                         scored: str | None) -> None:
    """Before the baseline: an occupancy objective needs the defaults' value of each per-block declaration
    (`declared`: THREADS_PER_BLOCK's, DYNAMIC_SHARED_MEMORY's) and the scored architecture's
    limits (an architecture without them would leave every candidate unscored); ptxas's figures of relocatable
    device code are not the linked kernels' (warned)."""
    if (relocatable := relocatable_note(manifest, objectives)) is not None:
        _warn(relocatable)
    if (manifest.params and not needs_benchmark(objectives) and not manifest.setuptools
            and (outside := benchmark_outside(manifest))):  # said at the end alone, after minutes of search
        _warn(f"{outside}. So a winner that sets PARAMS cannot be run for its check before it is pinned: the pin "
              "will say it was not run")
    overridden = unguarded_defines(manifest.params, manifest.cuda_sources) if any(declared) else {}
    for each in declared:
        check_block_size(each, objectives, setuptools=manifest.setuptools, overridden=overridden)
    if wants_block_size(objectives):
        built = architecture_list(manifest.toolchain.architectures)
        arch = scored or (built[0] if len(built) == 1 else None)
        if arch is not None and not is_keyword(arch):
            occupancy.limits(arch)


def _first_line(manifest: Manifest, toolchain: str, objectives: Sequence[Objective], resumed: bool = False) -> str:
    """What a tune says first: the target, the toolchain, the objectives and the architectures each build makes.
    The advice to tune one architecture (`--architecture`) is the first start's: a resumed tune (`resumed`: its
    journal holds finished evaluations) was started for them all, and one of --architecture keeps a journal of
    its own, so taking the advice then would drop what this journal holds."""
    built = architecture_list(manifest.toolchain.architectures)
    shown = ", ".join(o.spec + (f" (METRIC's {o.rate_unit}, higher is better: read as 1000 / rate ms a unit of "
                                "work)" if o.rate_unit else "") for o in objectives)
    advice = ("" if resumed else ": --architecture ARCH tunes one, faster; the build applies such pins once each of "
              "its architectures has one")
    return (f"tuning {manifest.target} with {toolchain}; objectives: {shown}; "
            f"architectures: {', '.join(built) or 'nvcc default'}"
            + (f" (each candidate builds all {len(built)}{advice})" if len(built) > 2 else ""))


def built_architectures(manifest: Manifest, backend: BuildBackend) -> str:
    """What the target's build compiles for, where this tune was narrowed to one architecture ("" else)."""
    if not manifest.tune_architecture:
        return ""
    try:
        return backend.manifest(manifest.target).toolchain.architectures
    except CiqError:
        return ""  # the build's manifest unreadable now: the summary says nothing of it
