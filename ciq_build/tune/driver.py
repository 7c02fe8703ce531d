"""The tuning driver: orchestrates one `tune` run of one target, and nothing else.

The order: resolve the settings (ciq_build.tune.tune_options), make the candidate
source and check every tool, take the target's lock, open the journal
(ciq_build.tune.cache), configure the scratch trees, measure the baseline,
run the search loop (ciq_build.tune.loop) with the real runner
(ciq_build.tune.runner), confirm the winner (ciq_build.tune.confirm) and
pin its record (ciq_build.tune.assemble). Everything a candidate does happens
in scratch trees, which the project's build backend makes (ciq_build.project.backend:
CMake's or setuptools').
"""

from __future__ import annotations

import dataclasses
import logging
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO, TypeVar

from ciq_build.compiler.controls import Controls
from ciq_build.compiler.gpu_arch import ArchitecturePlan, plan_architectures, sm
from ciq_build.compiler.toolchain import Toolchain, architecture_list, other_toolkits
from ciq_build.core import pace
from ciq_build.core.causes import Cause
from ciq_build.core.objectives import metric_key, named_scores, unbenchmarked_names
from ciq_build.core.settings import CONFIGURE_TIMEOUT_FACTOR, duration_text
from ciq_build.errors import BenchmarkError, BuildError, ConfigError, DiskFullError, NoGpuError
from ciq_build.measure import claim
from ciq_build.measure.sizes import SIZE_SEPARATOR, size_ratios
from ciq_build.measure.stats import interleaved
from ciq_build.pin.record import check_pin_dir, record_path
from ciq_build.pin.write import merge_architecture, write_record
from ciq_build.project import environment
from ciq_build.project.backend import BuildBackend, make_trees
from ciq_build.project.cmake_trees import CandidateBuild, ScratchTree, safe_name, scratch_root, tune_name
from ciq_build.project.manifest import Manifest, benchmark_sizes, for_architecture
from ciq_build.project.sources import Snapshot, TreeWatch
from ciq_build.search.base import CandidateSource, Proposal
from ciq_build.search.configuration import planned_evaluations
from ciq_build.search.evaluation import Evaluation
from ciq_build.search.select import make_candidate_source, search_kinds, space_size_text
from ciq_build.state.journal import Journal, TargetLock, tune_lock_path
from ciq_build.tune.ahead import BuildsAhead, guess_next
from ciq_build.tune.assemble import assemble_record, scored_record
from ciq_build.tune.cache import EvaluationCache, cache_key
from ciq_build.tune.confirm import Confirmation, Confirmer
from ciq_build.tune.executor import Executor, SearchPhase, checked_executor, get_executor
from ciq_build.tune.gpu_time import GpuMeter, MeteredSlots
from ciq_build.tune.loop import SearchLoop, stop_on_disk_full
from ciq_build.tune.minimize import Minimizer
from ciq_build.tune.old_pin import Standing, compare, pinned_before
from ciq_build.tune.param_probe import overridden_params, without_effect
from ciq_build.tune.progress import LOG, TuneProgress
from ciq_build.tune.runner import BuildRunner, Runner
from ciq_build.tune.summary import next_without_a_pin, replacement_note, run_summary
from ciq_build.tune.timeouts import Timeouts, for_baseline, for_candidates, for_configure
from ciq_build.tune.tune_options import TuneOptions, TuneSettings, resolve_settings
from ciq_build.tune.winner_check import WinnerCheck, check_winner, wants_check

W = TypeVar("W")


@dataclass
class TuneOutcome:
    ok: bool
    pinned: Path | None
    baseline: Evaluation
    winner: Evaluation | None
    evaluations: list[Evaluation]
    message: str


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
    """Tune `options.target` of a project `backend.prepare()` has prepared: read it, resolve, tune."""
    manifest = backend.manifest(options.target)
    if options.architecture:
        manifest = for_architecture(manifest, options.architecture)
    return TuneRun(resolve_settings(options, manifest), manifest, backend.toolchain(manifest), backend).run()


class TuneRun:
    """One `tune` run of one target, with its settings resolved. Constructing it reads and writes nothing.

    What depends on the kind of project (its tools, scratch trees, benchmark command, source fingerprint,
    what applies the pin) is asked of `backend`.
    """

    def __init__(self, settings: TuneSettings, manifest: Manifest, toolchain: Toolchain, backend: BuildBackend,
                 out: TextIO | None = None) -> None:
        self.settings = settings
        self.backend = backend
        self.manifest = manifest
        self.toolchain = toolchain
        self.out = out if out is not None else sys.stderr
        self.objectives = list(settings.objectives)
        self.executor = get_executor(settings.executor.kind)
        slots = MeteredSlots(settings.measure.gpus)
        self.meter: GpuMeter = slots.meter  # when benchmarks held a GPU, and the phases meanwhile
        # The baseline's runner (a large project's defaults may take long); the candidates' takes over once the
        # baseline is measured, with limits derived from it (ciq_build.tune.timeouts).
        self.runner = BuildRunner(manifest, toolchain, self.objectives, settings.measure.repeats,
                                  for_baseline(settings.measure), slots, warn=self._warn,
                                  build_jobs=settings.build.jobs)
        self.state_dir = manifest.binary_dir / "ciq"
        self.cache = EvaluationCache(Journal(self.state_dir / "journal" / f"{tune_name(manifest)}.jsonl"),
                                     self.objectives, self._say)
        self.evaluations: list[Evaluation] = []
        self.source_set = backend.source_set(manifest)
        self.sources = ""  # the source digest, once the journal says which files the build writes
        # Whether candidates' benchmarks write into the source tree, until one is seen to.
        self.tree_watch: TreeWatch | None = None
        self.deadline: float | None = None  # --time-limit, on time.monotonic(), from the start under the lock
        self.stopped_by: str | None = None  # the budget that ended the search (SearchLoop.stopped_by)
        self.space_total: int | None = None  # the grid's configurations after CONSTRAINTS, where known
        self.overridden: list[str] = []  # PARAMS names the source #defines again, unguarded (said after the baseline)
        self.builds_ahead: dict[str, int] = {}  # builds started ahead and used (ciq_build.tune.ahead), once stopped
        # Which architecture each figure is for (ciq_build.compiler.gpu_arch), once read before the baseline.
        self.architectures = ArchitecturePlan(None, None, "", None)

    # -- the run ---------------------------------------------------------------

    def run(self) -> TuneOutcome:
        if LOG.handlers:  # the CLI's
            return self._run()
        # Called as a library: for this run, say things where `out` goes.
        handler = logging.StreamHandler(self.out)
        handler.setFormatter(logging.Formatter("ciq_build: %(message)s"))
        LOG.addHandler(handler)
        level = LOG.level
        LOG.setLevel(logging.WARNING if self.settings.quiet else logging.INFO)
        try:
            return self._run()
        finally:
            LOG.removeHandler(handler)
            LOG.setLevel(level)

    def _run(self) -> TuneOutcome:
        self.executor.check(self.settings)  # what the executor refuses for these objectives, before anything runs
        source = make_candidate_source(self.settings.search, self.manifest, self.toolchain, self.objectives,
                                       self.state_dir / "acf" / safe_name(self.manifest.target))
        # Every tool the run will need, before anything is built (the search space is refused first).
        self.backend.check_tools(self.manifest, self.toolchain, pin=self.settings.pin, objectives=self.objectives,
                                 needs_benchmark=self.runner.needs_benchmark)
        if self.settings.pin:  # a pin dir that is a link is refused now, not after the search
            check_pin_dir(self.manifest.pin_dir, self.manifest.source_dir)
        lock_path = tune_lock_path(self.state_dir, safe_name(self.manifest.target))
        with TargetLock(lock_path, wait=self.settings.wait):
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

    def _run_locked(self, source: CandidateSource) -> TuneOutcome:
        limit = self.settings.search.time_limit
        if limit is not None:  # waiting for the lock (--wait) is not this tune's time
            self.deadline = time.monotonic() + limit
        self.cache.open(self._header(source), fresh=self.settings.fresh)
        self.source_set.excluded |= self.cache.source_outputs
        rule, switch = self.backend.toolkit_rule()
        built = architecture_list(self.manifest.toolchain.architectures)
        self._say(f"tuning {self.manifest.target} with {self.toolchain.describe(rule)}; "
                  f"objectives: {', '.join(o.spec for o in self.objectives)}; "
                  f"architectures: {', '.join(built) or 'nvcc default'}"
                  + (f" (each candidate builds all {len(built)}: --architecture ARCH tunes one, faster)"
                     if len(built) > 2 else ""))
        self._say_space_size(source)
        others = other_toolkits(self.toolchain.nvcc)
        if others:  # a CMake tree kept the system's 13.0 while setuptools in the same venv took pip's 13.3
            self._say(f"other toolkits here: {', '.join(f'{nvcc} ({source})' for source, nvcc in others)}; "
                      f"to tune with one, {switch}")
        # Nothing an earlier, killed tune left running may still write the scratch trees.
        for note in claim.claim_tree(scratch_root(self.manifest)):
            self._say(note)
        before = self.source_set.snapshot()
        # The baseline's tree and the workers' (as many as the executor uses here: on Ray one, for the
        # confirmation, since the actors keep their own).
        # Compile time is measured on the whole nvcc compile, never on the ptxas-only fast path.
        benchmarking = self.runner.slots.count if self.runner.needs_benchmark else 0
        count = self.executor.local_trees(self.settings.build.jobs, benchmarking) + 1
        # A configure each the first time (seconds to minutes for a large project), said before it starts.
        self._say(f"preparing {count} scratch trees in {scratch_root(self.manifest)} (the baseline's and "
                  f"{count - 1} worker(s)'; each configured once, then reused)")
        base_tree, *workers = make_trees(self.backend, self.manifest, self.toolchain, count,
                                         self._configure_timeout(), fast_path=not self.runner.measures_compile_time)
        configured = self.source_set.snapshot()
        self._note_source_writes(before, configured, "configuring the scratch trees")
        self._tell_trees_of_source_writes(base_tree, *workers)
        self.sources = self.source_set.digest(configured)
        self.runner.code_context = self._key(Controls())
        self.meter.enter("baseline")
        if self.runner.needs_benchmark and self.executor.uses_driver_trees:
            self._build_ahead(source, workers)
        self._plan_architectures()
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="ciq-param-probe") as beside:
            # A PARAMS name the source overrides, said early: its two builds run in the first worker's tree
            # beside the baseline's build and runs (not where the compile is timed: they would slow it).
            probe = None
            if "params" in search_kinds(self.settings.search):
                probe = beside.submit(overridden_params, self.manifest.params, workers[0],
                                      self.runner.timeouts.compile,
                                      self.manifest.target, self._warn)
                if self.runner.measures_compile_time:
                    probe.result()
            try:
                baseline = self._baseline(base_tree, configured)
                if probe is not None:
                    self.overridden = probe.result()
            except BaseException:
                self._stop_ahead()
                raise
        self._tell_trees_of_source_writes(base_tree, *workers)  # the baseline's build may have written there first
        timeouts = for_candidates(self.settings.measure, baseline)
        self.runner = self.runner.with_timeouts(timeouts)  # the candidates' runner, knowing what the baseline's did
        self.runner.size_reference = {name: value for name, value in baseline.metrics.items()
                                      if SIZE_SEPARATOR in name}
        self.runner.code_context = self._key(Controls())  # the baseline's build may have changed the sources
        if not self.settings.measure.timeout_explicit:
            self._say(timeouts.describe(self.settings.measure))
        self.runner.remember(baseline, incumbent=True)  # candidates race the defaults, journaled or measured now
        for journaled in self.cache.journaled(self.objectives):
            self.runner.remember(journaled)  # its code is shared as if measured in this run
        if self.runner.needs_benchmark:  # what a candidate's benchmark writes into the source tree is looked for
            self.tree_watch = TreeWatch(self.source_set)
        self._reserve_for_the_end(baseline)
        self._search(source, workers, timeouts)
        return self._finish(baseline, base_tree, workers, source)

    def _reserve_for_the_end(self, baseline: Evaluation) -> None:
        """--time-limit covers the whole tune: the search's deadline leaves room for what comes after it (the
        winner's rebuild, and its interleaved re-measure with a benchmark), estimated from the baseline's."""
        if self.deadline is None:
            return
        timings = baseline.timings
        reserve = timings.get("compile_s", 0.0)
        if self.runner.needs_benchmark:
            per_run = timings.get("benchmark_s", 0.0) / max(1, baseline.runs or self.settings.measure.repeats)
            reserve += 2 * self.settings.measure.confirm_rounds * per_run
        self.deadline -= reserve
        left = self.deadline - time.monotonic()
        self._say(f"{self._time_limit_text()} covers the whole tune: no candidate starts after {pace.clock(left)} "
                  f"from now, leaving about {reserve:.0f} s for the winner's rebuild"
                  + (" and re-measure" if self.runner.needs_benchmark else "")
                  + " (estimated from the baseline's); candidates running then finish")

    def _say_space_size(self, source: CandidateSource) -> None:
        """How many configurations the grid holds after CONSTRAINTS, against the budget; where the whole grid
        fits the budget and the search samples, that --strategy exhaustive evaluates each once."""
        text, total = space_size_text(self.settings.search, self.manifest, self.toolchain, self.objectives)
        if not text:
            return
        search = self.settings.search
        planned = source.describe().get("budget", {})  # as the strategy's own options set it
        budget = planned_evaluations(planned.get("generations", search.generations),
                                     planned.get("pool_size", search.pool_size), search.max_evaluations)
        line = f"search space: {text}; budget {budget:,} evaluations"
        self.space_total = total
        if total is not None and total <= budget and search.strategy in (None, "ga", "portfolio"):
            line += (f" (the space is smaller: --strategy exhaustive evaluates each of its {total:,} "
                     "configurations once)")
        self._say(line)

    def _build_ahead(self, source: CandidateSource, workers: list[ScratchTree]) -> None:
        """The first batch's builds start beside the baseline's build and runs (ciq_build.tune.ahead): at most
        --jobs - 1, so the baseline's build is never kept waiting, and not in the first worker's tree, which
        the PARAMS probe builds in meanwhile."""
        jobs = self.settings.build.jobs
        # Built by the runner of the phase at hand: those still building once the baseline is measured are
        # limited as candidates.
        ahead = BuildsAhead(lambda tree, controls: self.runner.build(tree, controls), jobs)
        self.runner.ahead = ahead
        if jobs > 1 and len(workers) > 1:
            ahead.start(guess_next(source, []), workers[1:], lambda c: not self.cache.has(self._key(c)),
                        limit=jobs - 1)

    def _stop_ahead(self) -> None:
        ahead, self.runner.ahead = self.runner.ahead, None
        if ahead is not None:
            ahead.stop()
            self.builds_ahead = ahead.describe()

    def _configure_timeout(self) -> float:
        return for_configure(self.settings.measure, CONFIGURE_TIMEOUT_FACTOR)

    def _header(self, source: CandidateSource) -> dict[str, Any]:
        """What identifies this search in the journal."""
        return {"target": self.manifest.target, "toolchain": self.toolchain.version,
                "objectives": [o.spec for o in self.objectives], "search": source.describe(),
                "repeats": self.settings.measure.repeats,
                **({"sizes": sizes} if (sizes := benchmark_sizes(self.manifest)) else {}),
                **({"architecture": self.manifest.tune_architecture} if self.manifest.tune_architecture else {})}

    def _key(self, controls: Controls) -> str:
        return cache_key(self.manifest, self.toolchain, controls, self.sources)

    def _note_source_writes(self, before: Snapshot, after: Snapshot, when: str) -> bool:
        """Leave files the build wrote into the source tree out of the fingerprint; True when some were."""
        written = self.source_set.written_between(before, after) - self.source_set.excluded
        if not written:
            return False
        self.source_set.excluded |= written
        self.cache.record_source_outputs(written)
        shown = ", ".join(sorted(str(p) for p in written)[:5]) + (" ..." if len(written) > 5 else "")
        self._say(f"{when} wrote into the source tree ({shown}); left out of the source fingerprint "
                  "(declare such files as OUTPUT or BYPRODUCTS of their command to say so up front)")
        return True

    def _tell_trees_of_source_writes(self, *trees: ScratchTree) -> None:
        """Tell the trees whether the project writes into its source tree (seen in this tune or journaled)."""
        for tree in trees:
            tree.writes_sources = bool(self.source_set.excluded)

    def _note_candidate_writes(self, evaluated: Evaluation) -> None:
        """Warn, once, when the source tree changed while candidates ran (a benchmark that writes there).

        Looked at after a benchmarked candidate, within TreeWatch's share of the time; after the warning,
        no more looks.
        """
        watch = self.tree_watch
        if watch is None or evaluated.runs == 0:  # no benchmark ran: a failed build, the same code as another
            return
        written = watch.look()
        if not written:
            return
        self.tree_watch = None
        shown = ", ".join(sorted(written)[:5]) + (f" and {len(written) - 5} more" if len(written) > 5 else "")
        self._warn(f"warning: the source tree changed while candidates were built and benchmarked (first seen after "
                   f"candidate {evaluated.proposal.id}): {shown}. A benchmark (or build) that writes there can change "
                   "what the next candidate builds and measures; have it write into its working directory (the "
                   "scratch build tree) or elsewhere. Not checked again in this tune.")

    def _disk_full(self, what: str) -> DiskFullError:
        done = sum(1 for e in self.evaluations if not e.cached and not e.environmental)
        return environment.disk_full_error(what, scratch_root(self.manifest), self.cache.path, len(self.cache) + done)

    def _plan_architectures(self) -> None:
        """Which GPU the benchmark runs on and which architecture static objectives score, said before the
        baseline; a static objective that would describe other code than the GPU runs is refused here."""
        gpu = self.runner.read_gpu() if self.runner.needs_benchmark else None
        static = [o.spec for o in self.objectives if o.source == "static"]
        self.architectures = plan_architectures(self.manifest.target, self.manifest.toolchain.architectures, gpu,
                                                self.manifest.tune_architecture, static,
                                                self.runner.needs_benchmark)
        self.runner.scored_architecture = self.architectures.scored
        if self.architectures.jit:
            self._warn(self.architectures.jit)
        if self.architectures.describe():
            self._say(f"figures: {self.architectures.describe()}")

    def _baseline(self, tree: ScratchTree, before: Snapshot | None = None) -> Evaluation:
        """The compiler's defaults, measured (or journaled): what every candidate is compared with."""
        proposal = Proposal(id=-1, generation=0, params={})
        controls = Controls()
        key = self._key(controls)
        evaluated = self.cache.lookup(proposal, controls, key)
        if evaluated is None or not evaluated.ok:  # a failed baseline is always tried again
            self._say("building and measuring the baseline (the compiler's defaults)")
            evaluated = self.runner.evaluate(tree, proposal, controls, key)
            if before is not None:
                built = self.source_set.snapshot()
                if self._note_source_writes(before, built, "building the baseline"):
                    self.sources = self.source_set.digest(built)
                    evaluated.key = self._key(controls)
            if evaluated.cause == Cause.DISK_FULL:
                self.cache.record_environmental(evaluated)
                raise self._disk_full("building the baseline")
            if evaluated.environmental:
                self.cache.record(evaluated)
                raise BuildError(
                    f"the baseline of {self.manifest.target} (no compiler controls) failed for a reason outside "
                    f"the candidate ({evaluated.cause}): {evaluated.message}\nNothing was cached; run the same "
                    "command again once the machine is fine (memory, other processes, the build tool).")
            if evaluated.cause == Cause.NO_GPU:
                raise NoGpuError(
                    f"the benchmark of {self.manifest.target} found no usable GPU, so runtime objectives cannot be "
                    f"measured here. Tune one measured without a GPU instead: --objective, one of {unbenchmarked_names()}."
                    f"\n{evaluated.message}")
            self.cache.record(evaluated, reuse=True)
        if not evaluated.ok:
            raise BenchmarkError(
                f"the baseline of {self.manifest.target} (no compiler controls) failed: {evaluated.cause}: "
                f"{evaluated.message}\nFix the build or benchmark first; nothing can be compared to a failing baseline.")
        assert evaluated.scores is not None
        self._say(f"baseline: {named_scores(self.objectives, evaluated.scores)} "
                  + ("(from the journal)" if evaluated.cached else f"(built and measured in {evaluated.seconds:.1f} s)"))
        if self.runner.other_architectures:  # the static figures of what is not scored, shown once
            self._say("not scored: " + "; ".join(
                f"{sm(arch)} {', '.join(f'{k} {v}' for k, v in figures.items())}"
                for arch, figures in self.runner.other_architectures.items()))
        return evaluated

    def _search(self, source: CandidateSource, workers: list[ScratchTree], timeouts: Timeouts) -> None:
        # A bar on a terminal, a line per evaluation in logs and CI; nothing with --quiet.
        search = self.settings.search
        budget = source.describe().get("budget", {})  # as the strategy's own options set it
        generations = budget.get("generations", search.generations)
        expected = planned_evaluations(generations, budget.get("pool_size", search.pool_size), search.max_evaluations)
        if search.strategy == "exhaustive" and self.space_total is not None:
            expected = min(expected, self.space_total)  # it evaluates each configuration once, then ends
        progress = None if self.settings.quiet else TuneProgress(expected, generations, self.objectives,
                                                               stream=self.out,
                                                               measured_this_run=self.cache.measured_this_run,
                                                               deadline=self.deadline)
        # Every value the executor's workers need, fixed now: the candidates' timeouts are the baseline's.
        phase = SearchPhase(self.manifest, self.toolchain, tuple(self.objectives), self.settings.measure.repeats,
                            self.settings.build.jobs, timeouts, self._configure_timeout(), self.settings.executor,
                            self.source_set.snapshot(), bool(self.source_set.excluded), self.runner, self._say)
        self.meter.enter("search")
        try:
            with self.executor.workers(phase, workers) as evaluating:
                loop = self._loop(source, evaluating.runner, evaluating.slots, progress)
                loop.run()
        finally:
            self._stop_ahead()  # what the guesses still build ends before the winner's rebuild
        self.stopped_by = loop.stopped_by
        if self.stopped_by == "time_limit":
            then = "; the best so far is re-measured and pinned" if self.evaluations else ""
            self._say(f"the time limit ({self._time_limit_text()}) ended the search after "
                      f"{len(self.evaluations)} evaluation(s){then}")

    def _loop(self, source: CandidateSource, runner: Runner[W], workers: Sequence[W],
              progress: TuneProgress | None) -> SearchLoop[W]:
        disk_full = stop_on_disk_full(self._disk_full)

        def after_candidate(evaluated: Evaluation) -> BaseException | None:
            self._note_candidate_writes(evaluated)
            return disk_full(evaluated)

        loop = SearchLoop(source, runner, workers, self.cache, self._key, self.objectives,
                          budget=self.settings.search.max_evaluations, deadline=self.deadline, progress=progress,
                          stop_for=after_candidate, ahead=self.runner.ahead if self.executor.uses_driver_trees else None)
        self.evaluations = loop.evaluations  # the same list: a full disk mid-search counts what finished
        return loop

    # -- confirm and pin -----------------------------------------------------------

    def _finish(self, baseline: Evaluation, base_tree: ScratchTree, workers: list[ScratchTree],
                source: CandidateSource) -> TuneOutcome:
        if not self.evaluations and self.stopped_by is not None:
            return self._nothing_evaluated(baseline)
        trees = {"winner": workers[0]}  # the winner's tree: the first worker's, or the one that holds its build
        confirmer = Confirmer(self.runner, self.cache, self.objectives, self.settings.measure, self.runner.timeouts,
                              self.settings.search.pick, self.manifest.target, self._say, self._warn,
                              phase=self.meter.enter)
        minimizer: Minimizer | None = None

        def picked(winner: Evaluation) -> tuple[ScratchTree, CandidateBuild] | None:
            # A tree the search left holding the winner's build is re-measured as it is. The minimal pin's
            # rebuilds start now, in the other workers' trees, while the winner is (re)built and re-measured:
            # decided by machine code, they need no benchmark and the GPU waits for none.
            nonlocal minimizer
            held = next(((t, b) for t in workers if (b := self.runner.holding(t, winner.controls)) is not None),
                        None)
            if held is not None:
                trees["winner"] = held[0]
            others = [t for t in workers if t is not trees["winner"]]
            if self.settings.pin and others and not winner.controls.is_default:
                minimizer = Minimizer(winner.controls, others, self.toolchain, self.runner.timeouts, self._say)
            return held

        def rebuilt(objects: tuple[Path, ...]) -> None:
            if minimizer is not None:
                minimizer.reference(objects, trees["winner"])

        try:
            confirmation = confirmer.confirm(baseline, self.evaluations, base_tree, trees["winner"], picked=picked,
                                             rebuilt=rebuilt)
        except BaseException:
            if minimizer is not None:
                minimizer.cancel()
            raise
        tree = trees["winner"]
        standing = self._against_old_pin(confirmation, base_tree, tree)
        if standing is not None and standing.old_better and not self.settings.force:
            if minimizer is not None:
                minimizer.cancel()
            minimizer = None
            confirmation = dataclasses.replace(
                confirmation, better=False,
                verdict=f"{confirmation.verdict}; the pin already there is better ({standing.text}): kept, not "
                        "replaced (--force replaces it)")
        if confirmation.better and self.settings.pin:
            confirmation = self._minimal(confirmation, tree, minimizer)
        elif minimizer is not None:
            minimizer.cancel()
        checked: WinnerCheck | None = None
        if confirmation.better and self.settings.pin and wants_check(self.runner, confirmation.winner.controls):
            checked = check_winner(self.runner, tree, confirmation.winner.controls, self.runner.timeouts.compile,
                                   self._say)
            if checked.failed:
                self._warn(f"the winner's benchmark {checked.text}: nothing pinned. Keep such values out of the "
                           "search (CONSTRAINTS, or fewer PARAMS values), or tune an objective the benchmark "
                           "measures (its check then runs for every candidate)")
            elif not checked.ran:
                self._warn(f"the winner's benchmark was {checked.text}; the pin records that it was not run")
            confirmation = dataclasses.replace(
                confirmation, better=not checked.failed,
                verdict=f"{confirmation.verdict}; its benchmark: {checked.text}"
                        + ("; nothing pinned" if checked.failed else ""))
        self.meter.enter("pin")
        pinned: Path | None = None
        if confirmation.better and self.settings.pin:
            against: dict[str, Any] = {} if standing is None else {"against_old_pin": standing.text}
            if checked is not None:
                against["winner_check"] = checked.to_record()
            record = assemble_record(self.manifest, self.toolchain, self.objectives, confirmation, tree,
                                     {**source.describe(), **self.architectures.provenance()}, self.evaluations,
                                     extra=against)
            pinned = record_path(self.manifest.pin_dir, self.manifest.target)
            acf = confirmation.winner.controls.acf
            if self.manifest.tune_architecture:  # under the target's lock, as every write of its record
                merge_architecture(pinned, record, self.manifest.tune_architecture)
            else:
                replaced = pinned_before(pinned)
                if replaced is not None:
                    print(replacement_note(pinned, replaced, record, standing), file=sys.stdout)
                write_record(pinned, record, acf_source=acf.path if acf else None)
        gpu_time = self._gpu_time()
        print(run_summary(self.manifest.target, self.objectives, confirmation.baseline_scores,
                          confirmation.winner_scores, self.evaluations, self.runner.needs_benchmark,
                          confirmation.verdict, pinned, self.cache.path, self.cache.measured_this_run,
                          repeats=self.settings.measure.repeats, applied_by=self.backend.applied_by,
                          stopped=self._stopped_text(),
                          next_without_pin=self._kept_text(standing) or _check_failed_text(checked) or next_without_a_pin(
                              self.objectives, self.settings.search, self.settings.pin, confirmation.better),
                          size_ratios=self._size_ratios(confirmation), gpu_time=gpu_time,
                          figures=self.architectures.describe(),
                          idle_params=[name for name in without_effect(self.manifest.params, self.evaluations)
                                       if name not in self.overridden]),
              file=sys.stdout)
        return TuneOutcome(True, pinned, confirmation.baseline, confirmation.winner, self.evaluations,
                           confirmation.verdict)

    def _against_old_pin(self, confirmation: Confirmation, base_tree: ScratchTree,
                         tree: ScratchTree) -> Standing | None:
        """Where the pin already there stands against a winner about to replace it (ciq_build.tune.old_pin); None
        where nothing would be replaced. A runtime is re-measured: the old pin is built in the baseline's tree and
        run interleaved with the winner, still built in `tree`."""
        if not (confirmation.better and self.settings.pin) or self.manifest.tune_architecture:
            return None
        old = pinned_before(record_path(self.manifest.pin_dir, self.manifest.target))
        if old is None:
            return None

        def remeasure(controls: Controls) -> tuple[dict[str, list[float]], dict[str, list[float]]] | str:
            rounds = self.settings.measure.confirm_rounds
            self._say(f"building the pin already there, to re-measure it beside the new winner ({rounds} rounds "
                      "each, interleaved)")
            built = base_tree.build(controls, self.runner.timeouts.compile, benchmark=True)
            if not built.ok:
                return f"the old pin no longer builds ({built.message})"
            with self.runner.slots.slot() as env:
                old_m, new_m = interleaved(self.runner.bench_spec(base_tree).with_env(env),
                                           self.runner.bench_spec(tree).with_env(env), rounds)
            failure = old_m.failure or new_m.failure
            if failure is not None:
                return f"re-measuring the old pin failed ({failure.cause}: {failure.message})"
            return old_m.samples, new_m.samples

        new = scored_record(self.manifest, self.toolchain, self.objectives, confirmation)
        standing = compare(old, new, self.objectives, remeasure if self.runner.needs_benchmark else None)
        if standing.old_better and not self.settings.force:
            self._warn(f"the pin already there is better than this tune's winner: {standing.text}; it is kept "
                       "(tune --force replaces it)")
        return standing

    def _kept_text(self, standing: Standing | None) -> str:
        """The summary's `next:` where a better pin was kept."""
        if standing is None or not standing.old_better or self.settings.force:
            return ""
        return (f"the pin in {record_path(self.manifest.pin_dir, self.manifest.target)} stays; to replace it with "
                "this winner anyway, run the same command with --force")

    def _size_ratios(self, confirmation: Confirmation) -> dict[str, dict[str, float]]:
        """Each benchmark objective's per-size ratio, winner over defaults (ARGS_SETS; empty without)."""
        names = benchmark_sizes(self.manifest)
        if not names:
            return {}
        return {o.spec: size_ratios(confirmation.winner.metrics, confirmation.baseline.metrics, metric_key(o), names)
                for o in self.objectives if o.source == "benchmark"}

    def _nothing_evaluated(self, baseline: Evaluation) -> TuneOutcome:
        """A budget spent before any candidate (a --time-limit the baseline used up): nothing to confirm or pin."""
        assert baseline.scores is not None
        verdict = "the search ended before any candidate was evaluated; nothing pinned"
        print(run_summary(self.manifest.target, self.objectives, baseline.scores, baseline.scores, [],
                          self.runner.needs_benchmark, verdict, None, self.cache.path, self.cache.measured_this_run,
                          repeats=self.settings.measure.repeats, applied_by=self.backend.applied_by,
                          stopped=self._stopped_text(),
                          next_without_pin=next_without_a_pin(self.objectives, self.settings.search,
                                                              self.settings.pin, better=False)),
              file=sys.stdout)
        return TuneOutcome(True, None, baseline, None, [], verdict)

    def _minimal(self, confirmation: Confirmation, tree: ScratchTree, minimizer: Minimizer | None) -> Confirmation:
        """The confirmation with the winner's no-op controls dropped (ciq_build.tune.minimize).

        `minimizer`: the rebuilds started beside the re-measure in the other workers' trees; None with a single
        worker tree, whose rebuilds start now, in `tree`, one after another.
        """
        winner = confirmation.winner
        self.meter.enter("minimize")  # what of it outlasted the re-measure
        if minimizer is None:
            minimizer = Minimizer(winner.controls, [tree], self.toolchain, self.runner.timeouts, self._say,
                                  winner_tree=tree,
                                  winner_objects=confirmation.winner_objects)
        minimal = minimizer.result(confirmation.winner_objects)
        if not minimal.dropped:
            return confirmation
        self._say(minimal.describe())
        verdict = f"{confirmation.verdict}; {minimal.describe()}"
        if minimal.controls.is_default:
            verdict += "; the winner's code is the compiler's default code: nothing pinned"
        return dataclasses.replace(confirmation, winner=dataclasses.replace(winner, controls=minimal.controls),
                                   winner_objects=minimal.objects, verdict=verdict, dropped=minimal.dropped,
                                   better=not minimal.controls.is_default)

    def _gpu_time(self) -> str:
        """Where the GPU's time went from the first benchmark to now (the pin), journaled; the summary's line.

        Only where this process's slots held every benchmark (local worker trees; Ray's run elsewhere).
        """
        if not self.runner.needs_benchmark or not self.executor.uses_driver_trees:
            return ""
        figures = self.meter.result(self.runner.slots.count)
        if figures is None:
            return ""
        self.cache.record_gpu_time(figures.to_journal())
        return figures.describe()

    # -- output --------------------------------------------------------------------

    def _time_limit_text(self) -> str:
        limit = self.settings.search.time_limit
        return "" if limit is None else f"--time-limit {duration_text(limit)}"

    def _stopped_text(self) -> str:
        """The summary's word on a budget that ended the search early."""
        if self.stopped_by == "time_limit":
            return f"by the time limit ({self._time_limit_text()}), after {len(self.evaluations)} evaluation(s)"
        if self.stopped_by == "max_evaluations":
            return f"by --max-evaluations {self.settings.search.max_evaluations}"
        return ""

    def _say(self, text: str) -> None:
        if not self.settings.quiet:
            LOG.info("%s", text)

    def _warn(self, text: str) -> None:
        """A warning about the tune's results: said even with --quiet (which only silences progress)."""
        LOG.warning("%s", text)


def _check_failed_text(checked: WinnerCheck | None) -> str:
    """The summary's `next:` where the winner's benchmark failed its check."""
    if checked is None or not checked.failed:
        return ""
    return ("keep the values that fail the benchmark's check out of the search (CONSTRAINTS in ciq_tune_target(), "
            "or fewer PARAMS values), or tune an objective the benchmark measures, then tune again")
