"""The tuning driver: baseline, ask/tell loop over candidates, re-measure, pin.

Everything a candidate does happens in scratch trees (ciq_build.build.cmake); every
finished evaluation is journaled before the search hears of it, so a stopped
tune resumes by replaying the journal into a search with the same seed.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import math
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ciq_build import __version__
from ciq_build.build import environment
from ciq_build.compiler import metrics
from ciq_build.measure import proc
from ciq_build.compiler.fingerprint import object_fingerprints
from ciq_build.measure.bench import (BenchSpec, GpuSlots, Measurement, beats_baseline, coarse_precision_warning,
                             interleaved, measure)
from ciq_build.build.cmake import (CandidateBuild, ScratchTree, configure_user_tree, make_scratch_trees, safe_name,
                             scratch_root)
from ciq_build.compiler.controls import Controls, controls_from_candidate, controls_to_json
from ciq_build.search.base import CandidateSource, Proposal
from ciq_build.errors import BenchmarkError, BuildError, ConfigError, DiskFullError, NoGpuError, SearchError
from ciq_build.state.journal import Journal, TargetLock
from ciq_build.build.sources import SourceSet, Snapshot
from ciq_build.pin.record import PinnedRecord, RecordObjective, RecordToolchain, ScoreSummary, record_path, write_record
from ciq_build.core.pareto import dominates, non_dominated
from ciq_build.build.manifest import Manifest, Objective, load_manifest, parse_objectives
from ciq_build.compiler.toolchain import architecture_list
from ciq_build.compiler.toolchain import Toolchain, find_toolchain

DEFAULT_TIMEOUT = 120.0


@dataclass
class TuneOptions:
    """Everything `python -m ciq_build tune` was asked to do."""

    target: str
    build_dir: Path
    source_dir: Path | None = None
    generations: int = 4
    pool_size: int = 8
    mutate_rate: float = 0.25
    objectives: list[str] | None = None
    controls: list[str] | None = None
    allow_numerics: bool = False
    pick: str = "knee"
    seed: int = 0
    jobs: int = 1
    repeats: int = 5
    timeout: float | None = None
    max_evaluations: int | None = None
    fresh: bool = False
    wait: bool = False
    pin: bool = True
    quiet: bool = False
    cmake_args: list[str] = field(default_factory=list)
    gpus: list[str] = field(default_factory=list)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> "TuneOptions":
        return cls(
            target=args.target, build_dir=args.build_dir.resolve(),
            source_dir=args.source_dir.resolve() if args.source_dir else None,
            generations=args.generations, pool_size=args.pool_size, mutate_rate=args.mutate_rate,
            objectives=args.objective, controls=args.controls, allow_numerics=args.allow_numerics,
            pick=args.pick, seed=args.seed, jobs=args.jobs, repeats=args.repeats, timeout=args.timeout,
            max_evaluations=args.max_evaluations, fresh=args.fresh, wait=args.wait, pin=not args.no_pin,
            quiet=args.quiet, cmake_args=list(args.cmake_arg),
            gpus=[g for g in (args.gpus or "").split(",") if g.strip()],
        )

    def validate(self) -> None:
        if self.jobs < 1:
            raise ConfigError("--jobs must be at least 1")
        if self.repeats < 1:
            raise ConfigError("--repeats must be at least 1")
        if self.generations < 1 or self.pool_size < 2:
            raise ConfigError("--generations must be at least 1 and --pool-size at least 2")
        if self.timeout is not None and self.timeout <= 0:
            raise ConfigError("--timeout must be a positive number of seconds")


@dataclass
class Evaluated:
    """One candidate's outcome, as journaled."""

    key: str
    proposal: Proposal
    controls: Controls
    ok: bool
    cause: str | None
    message: str
    metrics: dict[str, float]
    spread: dict[str, float]
    scores: tuple[float, ...] | None
    seconds: float  # wall time of the whole evaluation, waiting for a GPU included
    cached: bool = False
    # Where the time went: compile_s (the target and the benchmark's link), benchmark_s
    # (the runs), wait_s (queued for a GPU slot). Empty for journals written before 0.2.
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def environmental(self) -> bool:
        """Failed because of the machine (full disk, foreign kill, hung build tool): never cached."""
        return not self.ok and self.cause in environment.ENVIRONMENTAL_CAUSES


@dataclass
class TuneOutcome:
    ok: bool
    pinned: Path | None
    baseline: Evaluated
    winner: Evaluated | None
    evaluations: list[Evaluated]
    message: str


# --------------------------------------------------------------------------------------
# objectives


# Where each objective's value is found among a candidate's metrics.
_METRIC_KEYS = {"time": "time_ms", "energy": "energy_j", "compile_time": "compile_seconds"}


def metric_key(objective: Objective) -> str:
    """The metric an objective reads: time -> time_ms (benchmark protocol), metric:X -> X, static names as is."""
    if objective.name.startswith("metric:"):
        return objective.name[len("metric:"):]
    return _METRIC_KEYS.get(objective.name, objective.name)


def objective_values(objectives: list[Objective], values: dict[str, float]) -> tuple[float, ...] | None:
    """The score tuple of a candidate, or None when a metric an objective needs is missing."""
    scores = []
    for objective in objectives:
        value = values.get(metric_key(objective))
        if value is None:
            return None
        scores.append(float(value))
    return tuple(scores)


# --------------------------------------------------------------------------------------
# evaluating one candidate in one scratch tree


@dataclass
class Evaluator:
    """Builds and measures candidates; owns nothing but how one evaluation goes."""

    manifest: Manifest
    toolchain: Toolchain
    objectives: list[Objective]
    repeats: int
    timeout: float
    slots: GpuSlots
    warn: Callable[[str], None] | None = None  # where the coarse-precision warning goes
    _warned: bool = field(default=False, init=False, repr=False)
    _warn_lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    @property
    def needs_benchmark(self) -> bool:
        return any(o.source == "benchmark" for o in self.objectives)

    @property
    def needs_sass(self) -> bool:
        return any(o.name == "sass_instructions" for o in self.objectives)

    def bench_spec(self, tree: ScratchTree) -> BenchSpec:
        bench = self.manifest.benchmark
        assert bench is not None and tree.benchmark_path is not None
        required = tuple(metric_key(o) for o in self.objectives if o.source == "benchmark")
        return BenchSpec(path=tree.benchmark_path, args=list(bench.args), timeout=self.timeout,
                         metric_regex=self.manifest.metric_regex or None, cwd=tree.build_dir, required=required,
                         metric_unit=self.manifest.metric_unit)

    def check_precision(self, *measurements: Measurement) -> None:
        """Warn, once per tune, when the METRIC regex's printed time is too coarse to compare candidates."""
        printed = next((run.printed_time for m in measurements for run in m.runs
                        if run.printed_time is not None and run.printed_time.coarse), None)
        if printed is None or self.warn is None:
            return
        with self._warn_lock:
            if self._warned:
                return
            self._warned = True
        bench = self.manifest.benchmark
        self.warn(coarse_precision_warning(bench.target if bench else self.manifest.target, printed,
                                           self.manifest.metric_regex or None))

    def evaluate(self, tree: ScratchTree, proposal: Proposal, controls: Controls, key: str) -> Evaluated:
        started = time.monotonic()
        timings: dict[str, float] = {}

        def failed(cause: str, message: str, values: dict[str, float] | None = None) -> Evaluated:
            return Evaluated(key, proposal, controls, False, cause, message, values or {}, {}, None,
                             time.monotonic() - started, timings=_rounded(timings))

        build = tree.build(controls, self.timeout)
        timings["compile_s"] = time.monotonic() - started
        if not build.ok:
            return failed(build.cause or "compile_failed", build.message, {"compile_seconds": build.compile_seconds})
        values = self.static_metrics(build)
        spread: dict[str, float] = {}
        if self.needs_benchmark:
            queued = time.monotonic()
            with self.slots.slot() as env:
                running = time.monotonic()
                timings["wait_s"] = running - queued
                measurement = measure(self.bench_spec(tree).with_env(env), self.repeats)
                timings["benchmark_s"] = time.monotonic() - running
            self.check_precision(measurement)
            if measurement.failure is not None:
                run = measurement.failure
                detail = f"{run.message}\n{run.output_tail}" if run.output_tail else run.message
                return failed(_bench_cause(run.cause, run.message, run.output_tail), detail, values)
            values.update(measurement.metrics)
            spread.update(measurement.iqr)
        scores = objective_values(self.objectives, values)
        if scores is None:
            missing = [metric_key(o) for o in self.objectives if metric_key(o) not in values]
            return failed("no_metric", f"no value for objective(s) {', '.join(missing)}", values)
        return Evaluated(key, proposal, controls, True, None, "", values, spread, scores, time.monotonic() - started,
                         timings=_rounded(timings))

    def static_metrics(self, build: CandidateBuild) -> dict[str, float]:
        """compile_seconds and the compiler's static metrics of a build (deterministic but the first)."""
        values: dict[str, float] = {"compile_seconds": build.compile_seconds}
        usages = metrics.parse_ptxas_verbose(build.compiler_output)
        if usages:
            values.update({k: float(v) for k, v in metrics.summarize(usages).items()})
        if self.needs_sass and build.objects:
            values["sass_instructions"] = float(
                sum(metrics.sass_instruction_count(obj, self.toolchain) for obj in build.objects))
        return values


def _rounded(timings: dict[str, float]) -> dict[str, float]:
    return {name: round(value, 3) for name, value in timings.items()}


def _bench_cause(cause: str | None, message: str, output_tail: str) -> str:
    """A failed benchmark run's cause, or an environmental one when the machine did it."""
    if cause == "bench_signal" and environment.says_killed(message):
        return environment.BENCH_KILLED  # SIGKILL from the OOM killer, a SIGTERM from someone: not a crash
    if environment.says_disk_full(output_tail):
        return environment.DISK_FULL
    return cause or "bench_exit"


# --------------------------------------------------------------------------------------
# the cache key: same sources, toolchain, benchmark and controls => same measurement


# What a cached measurement depends on besides the controls: the target's real
# inputs (ciq_build.build.sources: its sources and headers, not what the build writes).
def source_digest(manifest: Manifest) -> str:
    """One hash of the sources a measurement depends on."""
    return SourceSet(manifest).digest()


def cache_key(manifest: Manifest, toolchain: Toolchain, controls: Controls, sources: str) -> str:
    digest = hashlib.sha256(sources.encode())
    bench = manifest.benchmark
    payload = {
        "toolchain": toolchain.version,
        "ptxas": toolchain.ptxas_version,  # a ptxas swapped into a toolkit changes the code too
        "nvcc": str(toolchain.nvcc),
        "architectures": manifest.toolchain.architectures,
        "flags": list(controls.flags),
        "defines": [list(d) for d in controls.defines],
        "acf": controls.acf.sha256 if controls.acf else None,
        "benchmark": [str(bench.path), *bench.args] if bench else None,
    }
    if manifest.metric_regex:
        # What the benchmark's output means; absent for the line protocol, so its keys stay as they were.
        payload["metric"] = [manifest.metric_regex, manifest.metric_unit]
    digest.update(json.dumps(payload, sort_keys=True).encode())
    return digest.hexdigest()


def _numbers(value: Any) -> dict[str, float]:
    """The name -> number entries of a journaled mapping; anything else is dropped."""
    if not isinstance(value, dict):
        return {}
    return {str(k): float(v) for k, v in value.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool) and abs(v) < float("inf")}


def from_journal(record: dict[str, Any], proposal: Proposal, controls: Controls, key: str,
                 objectives: list[Objective]) -> Evaluated | None:
    """A journaled evaluation as an Evaluated, or None when the line cannot be trusted (it is then re-run)."""
    ok = record.get("ok")
    if not isinstance(ok, bool):
        return None
    if not ok and journaled_environmental(record):
        return None  # the machine's failure, not the candidate's: run it again
    values = _numbers(record.get("metrics"))
    scores = objective_values(objectives, values) if ok else None
    if ok and scores is None:
        return None  # measured, but not for today's objectives: measure again
    cause = record.get("cause")
    return Evaluated(key, proposal, controls, ok, None if ok else (cause if isinstance(cause, str) else "error"),
                     str(record.get("message") or ""), values, _numbers(record.get("spread")), scores, 0.0,
                     cached=True, timings=journaled_timings(record))


def journaled_environmental(record: dict[str, Any]) -> bool:
    """Whether a journaled failure was the machine's: marked so, or (older journals) says so."""
    cause = record.get("cause")
    if record.get("environmental") is True or (isinstance(cause, str) and cause in environment.ENVIRONMENTAL_CAUSES):
        return True
    # Journals written before environmental failures were told apart cached them as
    # compile_failed / bench_signal; their messages still say what happened.
    message = record.get("message")
    return isinstance(message, str) and (environment.says_disk_full(message) or environment.says_killed(message))


def journaled_timings(record: dict[str, Any]) -> dict[str, float]:
    """compile_s / benchmark_s / wait_s of a journaled evaluation; {} for older journals (only "seconds")."""
    timings = _numbers(record.get("timings"))
    return {name: value for name, value in timings.items() if name in ("compile_s", "benchmark_s", "wait_s")}


# --------------------------------------------------------------------------------------
# the driver

# A journal record naming files the build writes into the source tree (ciq_build.build.sources).
SOURCE_OUTPUTS_KIND = "source_outputs"


class Tuner:
    """One `tune` run of one target."""

    def __init__(self, options: TuneOptions):
        options.validate()
        self.options = options
        self.out = sys.stderr
        self.manifest = self._load_manifest()
        self.toolchain = find_toolchain(self.manifest.toolchain.cuda_compiler)
        self.objectives = parse_objectives(options.objectives or self.manifest.objectives or ["spill_bytes"])
        self.timeout = options.timeout or self.manifest.timeout or DEFAULT_TIMEOUT
        self.evaluator = Evaluator(self.manifest, self.toolchain, self.objectives, options.repeats, self.timeout,
                                   GpuSlots(options.gpus), warn=self._warn)
        if self.evaluator.needs_benchmark and self.manifest.benchmark is None:
            raise ConfigError(
                f"objective(s) {', '.join(o.name for o in self.objectives if o.source == 'benchmark')} need a "
                f"benchmark, and ciq_tune_target({self.manifest.target}) registers none: add BENCHMARK <exe-target>, "
                "or tune a static objective (--objective spill_bytes, registers, stack_bytes, sass_instructions, "
                "compile_time)")
        self.state_dir = self.manifest.binary_dir / "ciq"
        self.journal = Journal(self.state_dir / "journal" / f"{safe_name(self.manifest.target)}.jsonl")
        self.cache: dict[str, dict[str, Any]] = {}
        self.evaluations: list[Evaluated] = []
        self.source_set = SourceSet(self.manifest)
        self.sources = ""  # the source digest, once the journal says which files the build writes

    def _load_manifest(self) -> Manifest:
        options = self.options
        if options.source_dir is not None and not (options.build_dir / "CMakeCache.txt").is_file():
            configure_user_tree(options.source_dir, options.build_dir, find_toolchain(), None,
                                options.cmake_args, DEFAULT_TIMEOUT * 5)
        return load_manifest(options.build_dir, options.target)

    # -- journal ---------------------------------------------------------------

    def _header(self, source: CandidateSource) -> dict[str, Any]:
        return {
            "kind": "header", "target": self.manifest.target, "toolchain": self.toolchain.version,
            "objectives": [o.spec for o in self.objectives], "search": source.describe(),
            "repeats": self.options.repeats,
        }

    def _open_journal(self, source: CandidateSource) -> None:
        header = self._header(source)
        if self.options.fresh:
            self.journal.reset()
        latest = next((r for r in reversed(self.journal.records()) if r.get("kind") == "header"), None)
        if latest is not None and {k: latest.get(k) for k in header} != header:
            # Evaluations are keyed by what determines them (sources, toolchain,
            # controls, benchmark), so another search's results stay valid: keep them.
            self._say("the journal holds another search (settings changed); its measurements are reused "
                      "where sources, toolchain and controls match (--fresh to start over)")
        if latest is None or {k: latest.get(k) for k in header} != header:
            self.journal.append(header)
        retried = set()
        for record in self.journal.records():
            if record.get("kind") == "evaluation" and isinstance(record.get("key"), str):
                if record.get("ok") is False and journaled_environmental(record):
                    retried.add(record["key"])  # never a cached result; never hides one either
                    continue
                self.cache[record["key"]] = record
            elif record.get("kind") == SOURCE_OUTPUTS_KIND and isinstance(record.get("paths"), list):
                self.source_set.excluded |= {Path(p) for p in record["paths"] if isinstance(p, str)}
        for line, reason in self.journal.skipped:
            self._say(f"journal line {line} skipped ({reason})")
        if self.cache:
            self._say(f"resuming: {len(self.cache)} finished evaluation(s) in {self.journal.path}")
        retried -= set(self.cache)
        if retried:
            self._say(f"{len(retried)} evaluation(s) that failed for environmental reasons (full disk, killed, "
                      "hung build tool) are run again")

    def _journal(self, evaluated: Evaluated) -> None:
        self.journal.append({
            "kind": "evaluation", "key": evaluated.key, "generation": evaluated.proposal.generation,
            "params": evaluated.proposal.params, "controls": controls_to_json(evaluated.controls, None),
            "ok": evaluated.ok, "cause": evaluated.cause, "message": evaluated.message[-4000:],
            "metrics": evaluated.metrics, "spread": evaluated.spread,
            "scores": list(evaluated.scores) if evaluated.scores is not None else None,
            "seconds": round(evaluated.seconds, 3), "timings": evaluated.timings,
            "environmental": evaluated.environmental, "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        })

    # -- the source fingerprint ----------------------------------------------------

    def _note_source_writes(self, before: Snapshot, after: Snapshot, when: str) -> bool:
        """Leave files the build wrote into the source tree out of the fingerprint; True when some were."""
        written = self.source_set.written_between(before, after) - self.source_set.excluded
        if not written:
            return False
        self.source_set.excluded |= written
        self.journal.append({"kind": SOURCE_OUTPUTS_KIND, "paths": sorted(str(p) for p in written),
                             "time": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
        shown = ", ".join(sorted(str(p) for p in written)[:5]) + (" ..." if len(written) > 5 else "")
        self._say(f"{when} wrote into the source tree ({shown}); left out of the source fingerprint "
                  "(declare such files as OUTPUT or BYPRODUCTS of their command to say so up front)")
        return True

    def _journal_environmental(self, evaluated: Evaluated) -> None:
        """Journal a full-disk failure if the disk still takes it (the report counts it; never reused)."""
        try:
            self._journal(evaluated)
        except DiskFullError:
            pass

    def _from_cache(self, proposal: Proposal, controls: Controls, key: str) -> Evaluated | None:
        record = self.cache.get(key)
        return None if record is None else from_journal(record, proposal, controls, key, self.objectives)

    # -- the run ---------------------------------------------------------------

    def run(self) -> TuneOutcome:
        from ciq_build.search.select import make_candidate_source
        from ciq_build.build.preflight import check_tune

        source = make_candidate_source(self.options, self.manifest, self.toolchain, self.objectives,
                                       self.state_dir / "acf" / safe_name(self.manifest.target))
        # Every tool the run will need, before anything is built (the search space is refused first).
        check_tune(self.manifest, self.toolchain, pin=self.options.pin, objectives=self.objectives,
                   needs_benchmark=self.evaluator.needs_benchmark)
        lock_path = self.state_dir / "locks" / f"{safe_name(self.manifest.target)}.lock"
        with TargetLock(lock_path, wait=self.options.wait):
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
        self._open_journal(source)
        self._say(f"tuning {self.manifest.target} with {self.toolchain.describe()}; objectives: "
                  f"{', '.join(o.spec for o in self.objectives)}; scratch trees in {scratch_root(self.manifest)}")
        # Nothing an earlier, killed tune left running may still write the scratch trees.
        for note in proc.claim_tree(scratch_root(self.manifest)):
            self._say(note)
        before = self.source_set.snapshot()
        base_tree, *workers = make_scratch_trees(self.manifest, self.toolchain, self.options.jobs + 1,
                                                 self.timeout * 5)
        configured = self.source_set.snapshot()
        self._note_source_writes(before, configured, "configuring the scratch trees")
        self.sources = self.source_set.digest(configured)
        baseline = self._baseline(base_tree, configured)
        self._search(source, workers)
        return self._finish(baseline, base_tree, workers[0], source)

    def _disk_full(self, what: str) -> DiskFullError:
        done = sum(1 for e in self.evaluations if not e.cached and not e.environmental)
        return environment.disk_full_error(what, scratch_root(self.manifest), self.journal.path,
                                           len(self.cache) + done)

    def _baseline(self, tree: ScratchTree, before: Snapshot | None = None) -> Evaluated:
        proposal = Proposal(id=-1, generation=0, params={})
        controls = Controls()
        key = cache_key(self.manifest, self.toolchain, controls, self.sources)
        evaluated = self._from_cache(proposal, controls, key)
        if evaluated is None or not evaluated.ok:  # a failed baseline is always tried again
            self._say("building and measuring the baseline (the compiler's defaults)")
            evaluated = self.evaluator.evaluate(tree, proposal, controls, key)
            if before is not None:
                built = self.source_set.snapshot()
                if self._note_source_writes(before, built, "building the baseline"):
                    self.sources = self.source_set.digest(built)
                    key = cache_key(self.manifest, self.toolchain, controls, self.sources)
                    evaluated.key = key
            if evaluated.cause == environment.DISK_FULL:
                self._journal_environmental(evaluated)
                raise self._disk_full("building the baseline")
            if evaluated.environmental:
                self._journal(evaluated)
                raise BuildError(
                    f"the baseline of {self.manifest.target} (no compiler controls) failed for a reason outside "
                    f"the candidate ({evaluated.cause}): {evaluated.message}\nNothing was cached; run the same "
                    "command again once the machine is fine (memory, other processes, the build tool).")
            if evaluated.cause == "no_gpu":
                raise NoGpuError(
                    f"the benchmark of {self.manifest.target} found no usable GPU, so runtime objectives cannot be "
                    "measured here. Tune a static objective instead: --objective spill_bytes (or registers, "
                    f"stack_bytes, sass_instructions, compile_time).\n{evaluated.message}")
            self._journal(evaluated)
            self.cache[key] = {"ok": evaluated.ok, "metrics": evaluated.metrics}
        if not evaluated.ok:
            raise BenchmarkError(
                f"the baseline of {self.manifest.target} (no compiler controls) failed: {evaluated.cause}: "
                f"{evaluated.message}\nFix the build or benchmark first; nothing can be compared to a failing baseline.")
        return evaluated

    def _search(self, source: CandidateSource, workers: list[ScratchTree]) -> None:
        from ciq_build.search.ga import ProgressReporter

        budget = self.options.max_evaluations
        # A live line on a terminal; silent in logs and CI, and with --quiet.
        progress = ProgressReporter(self.options.generations, stream=self.out,
                                    enabled=False if self.options.quiet else None)
        with ThreadPoolExecutor(max_workers=len(workers), thread_name_prefix="ciq-candidate") as pool:
            try:
                self._search_loop(source, workers, pool, progress, budget)
            except BaseException:
                # Ctrl-C / SIGTERM: kill the compiles and benchmarks in flight so the
                # workers return now; what finished is already in the journal.
                proc.kill_all_running()
                pool.shutdown(wait=False, cancel_futures=True)
                raise
        progress.close()

    def _search_loop(self, source: CandidateSource, workers: list[ScratchTree], pool: ThreadPoolExecutor,
                     progress: Any, budget: int | None) -> None:
        free = list(workers)
        while True:
            proposals = source.ask()
            if not proposals:
                break
            pending: dict[Future[Evaluated], ScratchTree] = {}
            outcomes: dict[int, Evaluated] = {}
            queue = list(proposals)
            while queue or pending:
                while queue and free:
                    proposal = queue.pop(0)
                    try:
                        controls = controls_from_candidate(proposal.params, proposal.acf)
                    except ConfigError as error:
                        outcomes[proposal.id] = Evaluated("", proposal, Controls(), False, "invalid_controls",
                                                          str(error), {}, {}, None, 0.0)
                        continue
                    key = cache_key(self.manifest, self.toolchain, controls, self.sources)
                    cached = self._from_cache(proposal, controls, key)
                    if cached is not None:
                        outcomes[proposal.id] = cached
                        continue
                    if budget is not None and len([e for e in self.evaluations if not e.cached]) + len(pending) >= budget:
                        queue.clear()
                        break
                    tree = free.pop()
                    pending[pool.submit(self.evaluator.evaluate, tree, proposal, controls, key)] = tree
                if not pending:
                    break
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    free.append(pending.pop(future))
                    evaluated = future.result()
                    if evaluated.cause == environment.DISK_FULL:
                        self._journal_environmental(evaluated)
                        raise self._disk_full(f"building or measuring candidate {evaluated.proposal.id}")
                    self._journal(evaluated)  # before the search hears of it: nothing lost on a kill
                    outcomes[evaluated.proposal.id] = evaluated
            for proposal in proposals:
                evaluated = outcomes.get(proposal.id)
                if evaluated is None:  # cut by the evaluation budget
                    continue
                self.evaluations.append(evaluated)
                source.tell(proposal, evaluated.scores, None if evaluated.ok else f"{evaluated.cause}: {evaluated.message}")
                best = self._best_scores()
                progress.update(proposal.generation, evaluations=len(self.evaluations),
                                failures=sum(1 for e in self.evaluations if not e.ok),
                                best=None if best is None else "/".join(f"{s:g}" for s in best))
            if budget is not None and len([e for e in self.evaluations if not e.cached]) >= budget:
                break

    def _best_scores(self) -> tuple[float, ...] | None:
        ok = [e for e in self.evaluations if e.ok and e.scores is not None]
        if not ok:
            return None
        primary = self.objectives[0]
        best = min(ok, key=lambda e: e.scores[0] if primary.direction == "min" else -e.scores[0])  # type: ignore[index]
        return best.scores

    def pick_winner(self, baseline: Evaluated) -> Evaluated | None:
        """The Pareto point to pin; among the points that beat the defaults on every objective, if any do."""
        ok = [e for e in self.evaluations if e.ok and e.scores is not None]
        if not ok:
            return None
        directions = [o.direction for o in self.objectives]
        front = [ok[i] for i in non_dominated([e.scores for e in ok], directions)]  # type: ignore[misc]
        dominating = [e for e in front if dominates(e.scores, baseline.scores, directions)]  # type: ignore[arg-type]
        return pick_from_front(dominating or front, directions, self.options.pick)

    # -- re-measure and pin ------------------------------------------------------

    def _finish(self, baseline: Evaluated, base_tree: ScratchTree, tree: ScratchTree,
                source: CandidateSource) -> TuneOutcome:
        baseline, winner, prebuilt = self._trusted_winner(baseline, base_tree, tree)
        verdict_text, better, baseline_scores, winner_scores, spreads = self._confirm(baseline, winner, base_tree, tree,
                                                                                     prebuilt)
        pinned: Path | None = None
        if better and self.options.pin:
            pinned = self._pin(baseline, winner, tree, source, baseline_scores, winner_scores, spreads)
        print(self._summary(baseline_scores, winner_scores, verdict_text, pinned), file=sys.stdout)
        return TuneOutcome(True, pinned, baseline, winner, self.evaluations, verdict_text)

    # Static objectives whose journaled values a fresh build must reproduce exactly
    # (compile_time is static too, but never the same twice).
    def _deterministic_keys(self) -> list[str]:
        return [metric_key(o) for o in self.objectives if o.source == "static"]

    def _trusted_winner(self, baseline: Evaluated, base_tree: ScratchTree,
                        tree: ScratchTree) -> tuple[Evaluated, Evaluated, CandidateBuild | None]:
        """The baseline and winner, with every journaled static score re-measured from a fresh build.

        A journal is a cache, not a proof: it may be stale (a toolchain swapped
        under the same version string) or edited. A journaled value that a fresh
        build does not reproduce is replaced by the fresh one (and journaled), and
        the winner is picked again. Returns the winner's build when it is the last
        one made in `tree`.
        """
        keys = self._deterministic_keys()
        if keys and baseline.cached:
            built = base_tree.build(Controls(), self.timeout)
            if not built.ok:
                raise SearchError(f"the baseline no longer builds: {built.message}")
            baseline = self._remeasured(baseline, built, keys)
        checked: set[int] = set()
        last: tuple[Evaluated, CandidateBuild] | None = None
        while True:
            winner = self.pick_winner(baseline)
            if winner is None:
                raise SearchError(
                    f"no candidate of {self.manifest.target} could be evaluated ({self._failure_summary()}); "
                    "see the journal for each failure")
            if not keys or not winner.cached or id(winner) in checked:
                break
            built = tree.build(winner.controls, self.timeout)
            if not built.ok:
                raise SearchError(f"the winning candidate no longer builds: {built.message}")
            fresh = self._remeasured(winner, built, keys)
            checked.add(id(fresh))
            last = (fresh, built)
            if fresh is winner:
                break
            self.evaluations[self.evaluations.index(winner)] = fresh
        return baseline, winner, (last[1] if last is not None and last[0] is winner else None)

    def _remeasured(self, evaluated: Evaluated, built: CandidateBuild, keys: list[str]) -> Evaluated:
        """`evaluated` when a fresh build reproduces its static metrics, else a corrected copy (journaled)."""
        fresh = self.evaluator.static_metrics(built)
        wrong = [k for k in keys if k not in fresh or k not in evaluated.metrics
                 or abs(fresh[k] - evaluated.metrics[k]) > 1e-9 * max(1.0, abs(fresh[k]))]
        if not wrong:
            return evaluated
        values = {**evaluated.metrics, **fresh}
        scores = objective_values(self.objectives, values)
        what = "the baseline" if evaluated.proposal.id == -1 else f"candidate {_jsonable(evaluated.proposal.params)}"
        journaled = ", ".join(f"{k} {evaluated.metrics.get(k, math.nan):g}" for k in wrong)
        measured = ", ".join(f"{k} {fresh.get(k, math.nan):g}" for k in wrong)
        self._warn(f"the journal's {journaled} for {what} is not what a fresh build measures ({measured}): the "
                   f"journal {self.journal.path} is stale or was edited; the fresh measurement replaces it")
        corrected = dataclasses.replace(evaluated, metrics=values, scores=scores, ok=scores is not None,
                                        cause=None if scores is not None else "no_metric")
        self._journal(corrected)
        self.cache[corrected.key] = {"ok": corrected.ok, "metrics": corrected.metrics}
        return corrected

    def _confirm(self, baseline: Evaluated, winner: Evaluated, base_tree: ScratchTree, tree: ScratchTree,
                 prebuilt: CandidateBuild | None = None,
                 ) -> tuple[str, bool, tuple[float, ...], tuple[float, ...], dict[str, Any]]:
        """Is the winner better than the baseline beyond the noise? Re-measured side by side when timed."""
        assert winner.scores is not None and baseline.scores is not None
        # Rebuild the winner in a worker tree: its objects are pinned (resource usage, code hash).
        rebuilt = prebuilt if prebuilt is not None else tree.build(winner.controls, self.timeout)
        if not rebuilt.ok:
            raise SearchError(f"the winning candidate no longer builds: {rebuilt.message}")
        self._winner_objects = rebuilt.objects
        if not self.evaluator.needs_benchmark:
            # Static metrics are deterministic: better means no worse on any
            # objective and better on one (the winner dominates the defaults).
            directions = [o.direction for o in self.objectives]
            better = dominates(winner.scores, baseline.scores, directions)
            text = ", ".join(f"{o.spec}: {b:g} -> {w:g}" for o, b, w in zip(self.objectives, baseline.scores, winner.scores))
            text += "" if better else " (does not beat the compiler's defaults on every objective; nothing pinned)"
            return text, better, baseline.scores, winner.scores, {}
        # A baseline measured in this run is still built in its tree; one read
        # from the journal may never have been built there.
        if baseline.cached:
            base_build = base_tree.build(Controls(), self.timeout)
            if not base_build.ok:
                raise SearchError(f"the baseline no longer builds: {base_build.message}")
        rounds = max(5, self.options.repeats * 2)
        self._say(f"re-measuring the winner against the baseline, interleaved, {rounds} rounds each")
        with self.evaluator.slots.slot() as env:
            base_m, win_m = interleaved(self.evaluator.bench_spec(base_tree).with_env(env),
                                        self.evaluator.bench_spec(tree).with_env(env), rounds)
        self.evaluator.check_precision(base_m, win_m)
        if base_m.failure is not None or win_m.failure is not None:
            failure = base_m.failure or win_m.failure
            raise SearchError(f"re-measuring failed: {failure.cause}: {failure.message}")  # type: ignore[union-attr]
        timed = next(o for o in self.objectives if o.source == "benchmark")
        key, direction = metric_key(timed), timed.direction
        verdict = beats_baseline(base_m.samples[key], win_m.samples[key], direction)
        base_values = dict(baseline.metrics, **base_m.metrics)
        win_values = dict(winner.metrics, **win_m.metrics)
        baseline_scores = objective_values(self.objectives, base_values) or baseline.scores
        winner_scores = objective_values(self.objectives, win_values) or winner.scores
        spreads = {"baseline": base_m.iqr, "winner": win_m.iqr,
                   "samples": {"metric": key, "baseline": base_m.samples[key], "winner": win_m.samples[key],
                               "verdict": verdict.explanation}}
        text = verdict.explanation + ("" if verdict.better else "; nothing pinned")
        return text, verdict.better, baseline_scores, winner_scores, spreads

    def _pin(self, baseline: Evaluated, winner: Evaluated, tree: ScratchTree, source: CandidateSource,
             baseline_scores: tuple[float, ...], winner_scores: tuple[float, ...], spreads: dict[str, Any]) -> Path:
        objects = object_fingerprints(self._winner_objects, tree.mirror(self.manifest.object_dir),
                                              self.toolchain)
        n = len(self.objectives)

        def summary(scores: tuple[float, ...], spread: dict[str, float]) -> ScoreSummary:
            return ScoreSummary(tuple(scores), tuple(float(spread.get(metric_key(o), 0.0)) for o in self.objectives))

        record = PinnedRecord(
            target=self.manifest.target,
            controls=winner.controls,
            toolchain=RecordToolchain(cuda=self.toolchain.major_minor, nvcc_version=self.toolchain.version,
                                      ptxas_version=self.toolchain.ptxas_version,
                                      architectures=tuple(architecture_list(self.manifest.toolchain.architectures))),
            provenance={**source.describe(), "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                        "ciq_build_version": __version__, "evaluations": len(self.evaluations),
                        "failures": self._failure_counts(), "winner_params": _jsonable(winner.proposal.params),
                        "baseline_metrics": baseline.metrics, "winner_metrics": winner.metrics,
                        "remeasured": spreads.get("samples", {})},
            objectives=tuple(RecordObjective(o.name, o.direction) for o in self.objectives),
            baseline=summary(baseline_scores, spreads.get("baseline", baseline.spread)),
            winner=summary(winner_scores, spreads.get("winner", winner.spread)),
            objects=objects,
        )
        assert len(record.objectives) == n
        path = record_path(self.manifest.pin_dir, self.manifest.target)
        write_record(path, record, acf_source=winner.controls.acf.path if winner.controls.acf else None)
        return path

    # -- reporting ---------------------------------------------------------------

    def _failure_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for e in self.evaluations:
            if not e.ok:
                counts[e.cause or "error"] = counts.get(e.cause or "error", 0) + 1
        return counts

    def _failure_summary(self) -> str:
        counts = self._failure_counts()
        text = ", ".join(f"{cause} {n}" for cause, n in sorted(counts.items())) or "none"
        environmental = sum(1 for e in self.evaluations if e.environmental)
        if environmental:
            text += f" ({environmental} environmental: not cached, run again on resume)"
        return text

    def _time_summary(self) -> str:
        """Where this run's evaluation time went: compiling, benchmarking, waiting for a GPU."""
        fresh = [e for e in self.evaluations if not e.cached]
        totals = {name: sum(e.timings.get(name, 0.0) for e in fresh) for name in ("compile_s", "benchmark_s", "wait_s")}
        text = f"compile {totals['compile_s']:.1f} s"
        if self.evaluator.needs_benchmark:
            text += f", benchmark {totals['benchmark_s']:.1f} s, waiting for a GPU {totals['wait_s']:.1f} s"
        return text

    def _summary(self, baseline_scores: tuple[float, ...], winner_scores: tuple[float, ...], verdict: str,
                 pinned: Path | None) -> str:
        rows = [("objective", "baseline", "best", "change")]
        for objective, base, best in zip(self.objectives, baseline_scores, winner_scores):
            change = f"{(best - base) / base * 100:+.1f}%" if base else ("0%" if best == base else "n/a")
            rows.append((objective.spec, f"{base:.6g}", f"{best:.6g}", change))
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        table = "\n".join("  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows)
        fresh = sum(1 for e in self.evaluations if not e.cached)
        lines = [
            f"ciq_build: {self.manifest.target}",
            table,
            f"  evaluations: {len(self.evaluations)} ({fresh} run, {len(self.evaluations) - fresh} from the journal); "
            f"failures: {self._failure_summary()}",
            f"  time: {self._time_summary()} (this run's evaluations)",
            f"  verdict: {verdict}",
        ]
        if pinned is not None:
            lines.append(f"  pinned: {pinned}")
            lines.append(f"  next: commit {pinned.parent}, then a plain `cmake --build` applies it")
        lines.append(f"  journal: {self.journal.path}")
        return "\n".join(lines)

    def _say(self, text: str) -> None:
        if not self.options.quiet:
            print(f"ciq_build: {text}", file=self.out, flush=True)

    def _warn(self, text: str) -> None:
        """A warning about the tune's results: printed even with --quiet (which only silences progress)."""
        print(f"ciq_build: {text}", file=self.out, flush=True)


def pick_from_front(front: list[Evaluated], directions: list[str], rule: str) -> Evaluated:
    """Which Pareto point to pin: `first` = best on the first objective; `knee` = closest to the ideal point."""
    if len(front) == 1 or rule == "first":
        sign = 1.0 if directions[0] == "min" else -1.0
        return min(front, key=lambda e: tuple(sign * s for s in e.scores))  # type: ignore[union-attr]
    columns = list(zip(*[e.scores for e in front]))  # type: ignore[misc]
    normalised = []
    for e in front:
        distance = 0.0
        for i, value in enumerate(e.scores):  # type: ignore[arg-type]
            low, high = min(columns[i]), max(columns[i])
            span = (high - low) or 1.0
            gap = (value - low) / span if directions[i] == "min" else (high - value) / span
            distance += gap * gap
        normalised.append(distance)
    return front[normalised.index(min(normalised))]


def _jsonable(params: dict[str, Any]) -> dict[str, Any]:
    return {k: v if isinstance(v, (str, int, float, bool)) or v is None else str(v) for k, v in params.items()}


def tune(options: TuneOptions) -> TuneOutcome:
    return Tuner(options).run()

