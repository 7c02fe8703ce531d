"""Evaluating one candidate: the interface the search loop calls, and the real one (build, then benchmark).

The loop hands each candidate to a `Runner` with a worker of its own; the
real runner (`BuildRunner`) builds it in a scratch tree and measures it there,
`ciq_build.tune.replay.ReplayRunner` plays a journal back instead.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from typing import NamedTuple, Protocol, TypeVar

from ciq_build.compiler import metrics
from ciq_build.compiler.architectures import arch_name
from ciq_build.compiler.controls import Controls
from ciq_build.compiler.gpu_arch import GPU_ARCH_METRIC, read_gpu_arch
from ciq_build.compiler.toolchain import Toolchain
from ciq_build.core.causes import Cause
from ciq_build.core.objectives import (
    Objective,
    PtxasReport,
    SassCount,
    costly,
    metric_key,
    needs_benchmark,
    only_ptxas_report,
    times_the_compile,
)
from ciq_build.measure.bench import BenchSpec
from ciq_build.measure.gpu_slots import GpuSlots
from ciq_build.measure.protocol import coarse_precision_warning, several_matches_warning, unmatched_metric_warning
from ciq_build.measure.racing import Incumbent, RaceBoard, race
from ciq_build.measure.stats import Measurement, measure
from ciq_build.project import environment
from ciq_build.project.manifest import Manifest, declared_per_block
from ciq_build.project.per_block import (
    COUNTED_DYNAMIC_METRIC,
    DYNAMIC_SHARED_METRIC,
    NO_BLOCK_SIZE,
    Declared,
    no_value,
    unknown_block_size,
    wants_block_size,
)
from ciq_build.project.worker import CandidateBuild, WorkerTree
from ciq_build.search.base import Proposal
from ciq_build.search.evaluation import KEPT_FRONT_END, Evaluation
from ciq_build.search.select import BOUNDED_KERNELS_METRIC, UNBOUNDED_REGISTERS_METRIC
from ciq_build.tune.ahead import BuildsAhead
from ciq_build.tune.dedupe import CodeDedupe, code_key, taken_from
from ciq_build.tune.scores import objective_values, with_spills
from ciq_build.tune.timeouts import Timeouts

W_contra = TypeVar("W_contra", contravariant=True)


class Runner(Protocol[W_contra]):
    """Evaluates one candidate on one worker (a scratch tree for the real runner); never raises for the candidate.

    A candidate that does not build or measure is an `Evaluation` with ok=False and a cause.
    """

    def evaluate(self, worker: W_contra, proposal: Proposal, controls: Controls, key: str) -> Evaluation: ...


# Among a build's metrics: the threads a block of the kernel the summary's occupancy line describes has (where known):
# the kernel of least occupancy where occupancy is an objective, else the one with the most registers.
THREADS_METRIC = "threads_per_block"
# How many kernels an occupancy of the whole target sized by THREADS_PER_BLOCK (no __launch_bounds__ of their own).
DECLARED_SIZE_METRIC = "kernels_sized_by_declaration"
# The shared memory (static, and dynamic where declared) of the kernel the occupancy line describes, where
# registers:<kernel regex> or occupancy objectives score some kernels (else the line takes the target's most:
# shared_bytes).
DESCRIBED_SHARED_METRIC = "described_shared_bytes"
# The registers of the kernel the occupancy line describes, where occupancy is an objective (else the line takes
# the registers the tune scores: ciq_build.search.select.scored_registers).
DESCRIBED_REGISTERS_METRIC = "described_registers"


class BuildRunner:
    """Builds candidates in scratch trees and measures them; owns nothing but how one evaluation goes."""

    def __init__(self, manifest: Manifest, toolchain: Toolchain, objectives: Sequence[Objective], repeats: int,
                 timeouts: Timeouts, slots: GpuSlots, warn: Callable[[str], None] | None = None, *,
                 build_jobs: int | None = None) -> None:
        self.manifest = manifest
        self.toolchain = toolchain
        self.objectives = list(objectives)
        self.repeats = repeats
        self.timeouts = timeouts  # per compile (the target's whole rebuild) and per benchmark run
        self.slots = slots
        self.warn = warn  # where check_precision's warnings go, each once a tune
        self._warned: set[str] = set()  # the warnings given once per tune (check_precision)
        self._lock = threading.Lock()  # the workers' threads share `_warned` and `_in_tree`
        # At most `build_jobs` compiles at once, however many workers there are: with one
        # worker more than that per GPU, the next candidates compile while one is benchmarked.
        self._builds = threading.BoundedSemaphore(build_jobs) if build_jobs else None
        # None: every candidate is measured. Only where measuring costs more than the code key
        # (~50 ms of cuobjdump an object): a costly kind (a benchmark, the SASS count); the other static
        # metrics come free with the compile log.
        self.dedupe: CodeDedupe | None = CodeDedupe() if costly(self.objectives) else None
        # What else a measurement depends on (sources, toolchain, benchmark: the driver's key of
        # the defaults), so a journaled evaluation of other sources never shares its code key.
        self.code_context = ""
        # The baseline's per-size medians (time_ms@small ...), once measured: what SCORE worst divides by
        # (ciq_build.measure.sizes), the same for every candidate and the confirmation.
        self.size_reference: dict[str, float] = {}
        # Candidates built ahead while the GPU is busy (ciq_build.tune.ahead); set by the driver for a runtime tune.
        self.ahead: BuildsAhead | None = None
        # id(tree) -> (controls, build): what the runner last built in each tree, while it still holds it.
        self._in_tree: dict[int, tuple[Controls, CandidateBuild]] = {}
        # Racing needs one objective, from the benchmark: with more, a candidate behind on
        # time may still be on the Pareto front.
        timed = self.objectives[0] if len(self.objectives) == 1 else None
        self.racing: RaceBoard | None = (RaceBoard(metric_key(timed), timed.direction)
                                         if timed is not None and timed.source == "benchmark" else None)
        # The architecture whose machine code static objectives describe (ciq_build.compiler.gpu_arch), set by
        # the driver before the baseline; None: every architecture built, combined.
        self.scored_architecture: str | None = None
        # The first build's static figures of the architectures not scored: {arch: {metric: value}}, to show.
        self.other_architectures: dict[str, dict[str, float]] = {}
        # THREADS_PER_BLOCK and DYNAMIC_SHARED_MEMORY of ciq_tune_target(): each kernel's block size and the dynamic
        # shared memory a block of those that use it takes, for the occupancy objective and the occupancy steps the
        # summary shows (None: not declared, or a test's runner).
        self.threads_per_block: Declared | None
        self.dynamic_shared_memory: Declared | None
        self.threads_per_block, self.dynamic_shared_memory = (declared_per_block(manifest) if manifest is not None
                                                              else (None, None))
        self._setuptools = manifest is not None and manifest.setuptools  # how its messages name the declaration

    @property
    def per_block(self) -> tuple[Declared | None, Declared | None]:
        """THREADS_PER_BLOCK and DYNAMIC_SHARED_MEMORY, as declared (None: not)."""
        return self.threads_per_block, self.dynamic_shared_memory

    def read_gpu(self) -> int | None:
        """The architecture of the GPU this runner's benchmarks run on (None: no GPU answers here)."""
        with self.slots.query() as env:  # not a benchmark: the GPU-busy figure starts at the baseline's run
            return read_gpu_arch({**os.environ, **env} if env else None)

    def with_timeouts(self, timeouts: Timeouts) -> BuildRunner:
        """This runner for the tune's next phase: limited by `timeouts` (the candidates' once the baseline is
        measured), knowing all this one knows: the measured code, the race's incumbent, the warnings given, what
        each tree holds, the builds ahead, the scored architecture, and sharing its --jobs bound on compiles."""
        twin = BuildRunner(self.manifest, self.toolchain, self.objectives, self.repeats, timeouts, self.slots,
                           self.warn)
        # Everything else is this runner's own objects, shared (not copies): what either learns, both know.
        vars(twin).update({name: value for name, value in vars(self).items() if name != "timeouts"})
        return twin

    @property
    def needs_benchmark(self) -> bool:
        return needs_benchmark(self.objectives)

    @property
    def static_only(self) -> bool:
        """Every objective is in ptxas's report: no object, no benchmark link is needed (but where the target is
        relocatable: its kernels' figures are the link's)."""
        return only_ptxas_report(self.objectives) and not self.relocatable

    @property
    def relocatable(self) -> bool:
        """The target's CUDA is relocatable device code (CUDA_SEPARABLE_COMPILATION) and a benchmark links it: its
        kernels' registers and stack are read from the linked benchmark (ptxas reports them before the device link,
        which adds those of what they call in other files), and a build the device link refuses fails."""
        return self.manifest is not None and self.manifest.separable_compilation and self.manifest.benchmark is not None

    @property
    def links(self) -> bool:
        """Whether a candidate's build links the benchmark: to run it, or to read a relocatable target's figures."""
        return self.needs_benchmark or self.relocatable

    @property
    def measures_compile_time(self) -> bool:
        return times_the_compile(self.objectives)

    def remember(self, evaluated: Evaluation, *, incumbent: bool = False) -> None:
        """A journaled evaluation: later candidates may share its code; `incumbent`: and race against it."""
        if self.dedupe is not None:
            self.dedupe.remember(evaluated)
        racing = self.racing
        if not incumbent or racing is None or not evaluated.ok or evaluated.raced:
            return
        if racing.metric in evaluated.metrics:
            racing.offer(Incumbent(evaluated.metrics[racing.metric], evaluated.spread.get(racing.metric, 0.0)))

    def bench_spec(self, tree: WorkerTree) -> BenchSpec:
        """The benchmark as `tree` runs it (its backend's command), timed and checked as this tune wants."""
        spec = tree.bench_spec(self.timeouts.benchmark, tuple(metric_key(o) for o in self.objectives
                                                          if o.source == "benchmark"))
        # A minimized reading of 0 measured nothing (a time's floor; an energy counter that did not step).
        spec = dataclasses.replace(spec, positive=tuple(metric_key(o) for o in self.objectives
                                                        if o.source == "benchmark" and o.direction == "min"))
        if not spec.args_sets:
            return spec
        maximized = tuple(metric_key(o) for o in self.objectives if o.direction == "max")
        return dataclasses.replace(spec, reference=dict(self.size_reference), maximized=maximized)

    def check_precision(self, *measurements: Measurement) -> None:
        """Warn, once per tune each, when a time an objective reads is printed too coarsely to compare
        candidates, when METRIC matched nothing and a CIQ_METRIC time was read instead, and when it matched
        different lines (several kernels' times), the last of which was read."""
        read = [metric_key(o) for o in self.objectives if o.source == "benchmark"]
        printed = [run.printed_times[name] for m in measurements for run in m.runs for name in read
                   if name in run.printed_times]
        bench = self.manifest.benchmark
        benchmark = bench.target if bench else self.manifest.target
        regex = self.manifest.metric_regex or None
        coarse = next((p for p in printed if p.coarse), None)
        if coarse is not None:
            self._warn_once("coarse", coarse_precision_warning(benchmark, coarse, regex))
        unmatched = next((text for p in printed if (text := unmatched_metric_warning(benchmark, p, regex))), None)
        if unmatched is not None:
            self._warn_once("unmatched", unmatched)
        several = next((text for p in printed if (text := several_matches_warning(benchmark, p, regex))), None)
        if several is not None:
            self._warn_once("several", several)

    def _warn_once(self, what: str, text: str) -> None:
        if self.warn is None:
            return
        with self._lock:
            if what in self._warned:
                return
            self._warned.add(what)
        self.warn(text)

    def evaluate(self, worker: WorkerTree, proposal: Proposal, controls: Controls, key: str) -> Evaluation:
        started = time.monotonic()
        timings: dict[str, float] = {}

        def failed(cause: Cause, message: str, values: dict[str, float] | None = None) -> Evaluation:
            return Evaluation(key, proposal, controls, False, cause, message, values or {}, {}, None,
                              time.monotonic() - started, timings=_rounded(timings))

        # A build made ahead for this candidate (ciq_build.tune.ahead) is taken, waited for if still running;
        # compile_s is then what the candidate waited for it.
        ahead = self.ahead.take(worker, controls) if self.ahead is not None else None
        build = ahead if ahead is not None else self.build(worker, controls)
        timings["compile_s"] = time.monotonic() - started
        if build.kept_front_end_seconds:
            timings[KEPT_FRONT_END] = build.kept_front_end_seconds
        if not build.ok:
            return failed(build.cause or Cause.COMPILE_FAILED, build.message, {"compile_seconds": build.compile_seconds})
        if self.dedupe is None:
            return self._measured(worker, build, proposal, controls, key, started, timings)
        code = code_key(build.objects, worker.build_dir, self.toolchain, host=self.needs_benchmark,
                        context=self.code_context)
        timings["compile_s"] = time.monotonic() - started  # reading the code the compiler made is compiling's time
        return self.dedupe.evaluate(
            code,
            lambda: dataclasses.replace(self._measured(worker, build, proposal, controls, key, started, timings),
                                        code=code),
            lambda earlier: taken_from(earlier, Evaluation(key, proposal, controls, True, None, "", {}, {}, None,
                                                           time.monotonic() - started, timings=_rounded(timings))))

    def build(self, worker: WorkerTree, controls: Controls) -> CandidateBuild:
        """A candidate's build in `worker`, at most `build_jobs` at once (builds ahead too)."""
        # Static objectives read ptxas's own report: where the front end is kept, ptxas alone runs.
        with self._builds if self._builds is not None else nullcontext():
            built = worker.build(controls, self.timeouts.compile, static_only=self.static_only, benchmark=self.links)
        with self._lock:
            if built.ok and built.objects:
                self._in_tree[id(worker)] = (controls, built)
            else:
                self._in_tree.pop(id(worker), None)
        return built

    def holding(self, worker: WorkerTree, controls: Controls) -> CandidateBuild | None:
        """The build of `controls` that `worker` still holds from this runner's last build there, or None.

        Only the runner's builds are known: ask before anything else builds in `worker` (the search's trees,
        once it ended: the winner is re-measured in its own tree, without a rebuild).
        """
        with self._lock:
            held = self._in_tree.get(id(worker))
        return held[1] if held is not None and held[0] == controls else None

    def _measured(self, worker: WorkerTree, build: CandidateBuild, proposal: Proposal, controls: Controls,
                  key: str, started: float, timings: dict[str, float]) -> Evaluation:
        """A built candidate's static metrics and benchmark runs, scored."""
        def failed(cause: Cause, message: str, values: dict[str, float] | None = None) -> Evaluation:
            return Evaluation(key, proposal, controls, False, cause, message, values or {}, {}, None,
                              time.monotonic() - started, timings=_rounded(timings), runs=runs)

        runs, raced = 0, False
        values = self.static_metrics(build, controls)
        # Reading what the compiler made (its report, the objects' SASS and launch bounds) is compiling's time too:
        # else it was in no part, and the parts summed short of the evaluation's seconds on a loaded machine.
        timings["compile_s"] = time.monotonic() - started
        spread: dict[str, float] = {}
        samples: dict[str, list[float]] = {}
        if self.needs_benchmark:
            queued = time.monotonic()
            with self.slots.slot() as env:
                running = time.monotonic()
                measurement, raced, waited, gpu = self.run_benchmark(self.bench_spec(worker).with_env(env))
                runs = len(measurement.runs)
                # What a runner waited for a GPU elsewhere (Ray: the fair share's grant, Ray's scheduling) is
                # waiting too: benchmark_s is the runs alone, as locally.
                timings["wait_s"] = running - queued + waited
                timings["benchmark_s"] = time.monotonic() - running - waited
            self.check_precision(measurement)
            if gpu is not None:
                values[GPU_ARCH_METRIC] = float(gpu)  # what the times are for: the GPU that ran them (or failed to)
            if measurement.failure is not None:
                run = measurement.failure
                detail = f"{run.message}\n{run.output_tail}" if run.output_tail else run.message
                return failed(_bench_cause(run.cause, run.message, run.output_tail), detail, values)
            values.update(measurement.metrics)
            spread.update(measurement.iqr)
            read = {metric_key(o) for o in self.objectives if o.source == "benchmark"}
            samples = {name: taken for name, taken in measurement.samples.items() if name in read}
        scores = objective_values(self.objectives, values)
        if scores is None:
            missing = [self._why_missing(o, build, controls) for o in self.objectives if metric_key(o) not in values]
            text = f"no value for objective(s) {', '.join(missing)}"
            if "kernels" not in values and any(isinstance(o.extractor, PtxasReport) for o in self.objectives):
                text += f": {no_kernels(self.manifest)}"
            return failed(Cause.NO_METRIC, text, values)
        return Evaluation(key, proposal, controls, True, None, "", values, spread, scores, time.monotonic() - started,
                          timings=_rounded(timings), runs=runs, raced=raced, samples=samples)

    def _why_missing(self, objective: Objective, build: CandidateBuild, controls: Controls) -> str:
        """An objective the build has no value of, with why where a static figure's cause is known: a kernel regex
        that found no kernel (naming those there are), or an occupancy without a block size."""
        said = metric_key(objective)
        if objective.kernels is not None:
            # Only where it is so: llm.c's occupancy:layernorm_forward_kernel4 was said to match no kernel, its own,
            # when the kernels' block size was what it lacked.
            kernels = metrics.parse_ptxas_verbose(build.compiler_output)
            if kernels and not metrics.found_by(kernels, [objective.kernels[1]]):
                names = sorted({name.split("(")[0] for name in metrics.demangled({k.function for k in kernels}).values()})
                shown = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
                return f"{said} ({NO_MATCHING_KERNEL}; the kernels: {shown})"  # the whole cause: no kernel to size
        if wants_block_size([objective]):
            dynamic = self.dynamic_shared_memory
            said += " (" + (no_value(dynamic, controls, setuptools=self._setuptools)
                            if dynamic is not None and dynamic.of(controls) is None and self._dynamic_shared(build) else
                            unknown_block_size(self.threads_per_block, controls, setuptools=self._setuptools)) + ")"
        return said

    def run_benchmark(self, spec: BenchSpec) -> Benchmarked:
        """The built benchmark's runs, raced when racing is on.

        Here, on this machine, in a GPU slot already held (nothing waited); the Ray executor's compile
        workers run it on a GPU worker instead.
        """
        measurement, raced = run_benchmark(spec, self.repeats, self.racing)
        return Benchmarked(measurement, raced, 0.0, read_gpu_arch({**os.environ, **spec.env} if spec.env else None))

    def static_metrics(self, build: CandidateBuild, controls: Controls) -> dict[str, float]:
        """The compiler's static metrics of a build with `controls`, and compile_seconds where a tune of compile_time
        built it (deterministic but the latter)."""
        # Only such a tune compiles whole (no kept front end, no ptxas alone: ciq_build.compiler.ptxas_path); the seconds
        # of another's build, journaled, were taken by a later compile_time tune as its own (particle_test's defaults:
        # 0.09 s of ptxas against the 2.2 s of their compile).
        values: dict[str, float] = {"compile_seconds": build.compile_seconds} if self.measures_compile_time else {}
        usages = metrics.parse_ptxas_verbose(build.compiler_output)
        if self.relocatable and build.linked is not None:
            usages = metrics.as_linked(usages, metrics.resource_usage(build.linked, self.toolchain))
        dynamic = self._dynamic_shared(build)
        usages = self.scored(self.with_launch(usages, build, controls, dynamic))
        if usages:
            values.update(self.figures(usages))
            # The kernel the summary's occupancy steps are of: the heaviest of those a registers:<kernel regex>
            # objective scores, where one does (stdgpu's example: not CUB's 64-register kernel beside the user's).
            patterns = [o.kernels[1] for o in self.objectives if o.kernels is not None and o.kernels[0] == "registers"]
            heaviest = max(metrics.found_by(usages, patterns) or usages, key=lambda usage: usage.registers)
            if heaviest.threads:  # its block size, and, where some kernels are scored, its own shared memory
                values[THREADS_METRIC] = float(heaviest.threads)
                if patterns:
                    values[DESCRIBED_SHARED_METRIC] = float(heaviest.shared + heaviest.dynamic_shared)
            values.update(self._least_occupancy(usages))
            values.update(self._bounded_kernels(usages, build, controls))
            if any(o.kind is not None and o.kind.name == "occupancy" and o.kernels is None for o in self.objectives):
                values[DECLARED_SIZE_METRIC] = float(sum(usage.declared_threads for usage in usages))
            using = [usage for usage in usages if usage.function in dynamic]
            if THREADS_METRIC in values and using:
                values[DYNAMIC_SHARED_METRIC] = float(len(using))
                if declared_bytes := max(usage.dynamic_shared for usage in using):
                    values[COUNTED_DYNAMIC_METRIC] = float(declared_bytes)
        counted = {metric_key(o) for o in self.objectives if isinstance(o.extractor, SassCount)}
        if counted and build.objects:
            count = float(sum(n for obj in build.objects
                              for (_, arch), n in metrics.sass_instruction_counts(obj, self.toolchain).items()
                              if self._is_scored(arch)))
            values.update(dict.fromkeys(counted, count))
        return values

    def _bounded_kernels(self, usages: list[metrics.KernelUsage], build: CandidateBuild,
                         controls: Controls) -> dict[str, float]:
        """In the defaults' build, where some kernels declare __launch_bounds__, how many do and the most registers
        of the others: the register cap is fitted below those (ciq_build.search.select.cappable_registers). The
        bounds are read from the PTX where ptxas alone ran, else from the objects' cubins, once a tune."""
        if controls != Controls():
            return {}
        bounds = dict(build.launch_bounds)
        if not bounds:
            for obj in build.objects:
                bounds.update(metrics.launch_bounds(obj, self.toolchain))
        bounded = {usage.function for usage in usages if usage.function in bounds}
        if not bounded:
            return {}
        others = [usage.registers for usage in usages if usage.function not in bounds]
        return {BOUNDED_KERNELS_METRIC: float(len(bounded)), UNBOUNDED_REGISTERS_METRIC: float(max(others, default=0))}

    def _least_occupancy(self, usages: list[metrics.KernelUsage]) -> dict[str, float]:
        """Where occupancy is an objective, the figures of the kernel that sets it (the least occupancy of those it
        scores), for the summary's occupancy line: the heaviest kernel's registers at its block size, with the target's
        most shared memory, described a kernel that may not exist, at an occupancy other than the objective's."""
        scored = [o for o in self.objectives if o.kind is not None and o.kind.name == "occupancy"]
        regexes = [o.kernels[1] for o in scored if o.kernels is not None]
        among = metrics.found_by(usages, regexes) if scored and len(regexes) == len(scored) else usages
        known = [usage for usage in among if usage.occupancy is not None] if scored else []
        if not known:
            return {}
        least = min(known, key=lambda usage: (usage.occupancy, -usage.registers))
        return {THREADS_METRIC: float(least.threads), DESCRIBED_SHARED_METRIC: float(least.shared + least.dynamic_shared),
                DESCRIBED_REGISTERS_METRIC: float(least.registers)}

    def _dynamic_shared(self, build: CandidateBuild) -> set[str]:
        """The kernels of `build` that use dynamic shared memory: from the PTX where ptxas alone ran (free), else,
        where the occupancy is an objective, from the PTX the objects embed."""
        dynamic = set(build.dynamic_shared)
        if not dynamic and build.objects and wants_block_size(self.objectives):
            for obj in build.objects:
                dynamic |= metrics.dynamic_shared(obj, self.toolchain)
        return dynamic

    def with_launch(self, usages: list[metrics.KernelUsage], build: CandidateBuild, controls: Controls,
                    dynamic: set[str]) -> list[metrics.KernelUsage]:
        """The kernels with what a block of theirs takes at launch in `build` (with `controls`): its threads, a
        kernel's own `__launch_bounds__` (read from the PTX where ptxas alone ran, free; from the cubins where the
        occupancy is an objective), else THREADS_PER_BLOCK's; and, for the kernels that use dynamic shared memory
        (`dynamic`), DYNAMIC_SHARED_MEMORY's bytes. Where that declaration gives this build none, those kernels have
        no block size, so no occupancy: not one that counts none."""
        declared = self.threads_per_block.of(controls) if self.threads_per_block is not None else None
        bytes_ = self.dynamic_shared_memory.of(controls) if self.dynamic_shared_memory is not None else 0
        bounds = dict(build.launch_bounds)
        if not bounds and wants_block_size(self.objectives):
            for obj in build.objects:
                bounds.update(metrics.launch_bounds(obj, self.toolchain))

        def launched(usage: metrics.KernelUsage) -> metrics.KernelUsage:
            threads = bounds.get(usage.function) or declared or 0
            usage = dataclasses.replace(usage, declared_threads=not bounds.get(usage.function) and bool(declared))
            if usage.function not in dynamic:
                return dataclasses.replace(usage, threads=threads)
            if bytes_ is None:
                return dataclasses.replace(usage, threads=0)
            return dataclasses.replace(usage, threads=threads, dynamic_shared=bytes_)

        return [launched(usage) for usage in usages]

    def static_figures(self, build: CandidateBuild, controls: Controls) -> tuple[float, ...] | None:
        """A build's values of the objectives, as a tune of static objectives scores them (None: one is missing)."""
        return objective_values(self.objectives, self.static_metrics(build, controls))

    def minimal_pin_figures(self, build: CandidateBuild, controls: Controls) -> tuple[float, ...] | None:
        """static_figures and the build's spill bytes (scores.with_spills): what the minimal pin compares."""
        metrics = self.static_metrics(build, controls)
        values = objective_values(self.objectives, metrics)
        return None if values is None else with_spills(values, metrics)

    def figures(self, usages: list[metrics.KernelUsage]) -> dict[str, float]:
        """The static figures of `usages`: the whole target's, and those of the objectives that score some kernels
        (`registers:<kernel regex>`)."""
        per_kernel = {o.name: o.kernels for o in self.objectives if o.kernels is not None}
        return {k: float(v) for k, v in {**metrics.summarize(usages), **metrics.kernel_values(usages, per_kernel)}.items()}

    def scored(self, usages: list[metrics.KernelUsage]) -> list[metrics.KernelUsage]:
        """The kernels of the scored architecture (all of them when none is set, or none of it was built)."""
        kept = [usage for usage in usages if self._is_scored(usage.arch)]
        if kept and self.scored_architecture is not None and not self.other_architectures:
            shown = [metric_key(o) for o in self.objectives if o.source == "static"]
            for arch in sorted({arch_name(u.arch) for u in usages} - {self.scored_architecture}):
                figures = self.figures([u for u in usages if arch_name(u.arch) == arch])
                self.other_architectures[arch] = {k: figures[k] for k in shown if k in figures}
        return kept or usages

    def _is_scored(self, arch: str) -> bool:
        return self.scored_architecture is None or arch_name(arch) == self.scored_architecture


NO_KERNELS = "ptxas reported no kernel (__global__ function)"
NO_MATCHING_KERNEL = "no kernel's mangled or demangled name matches its regex"
# Failures whose message says what to do, which is not to fix the build or the benchmark: another target, another
# kernel regex, a block size to declare.
SAYS_WHAT_TO_DO = (NO_KERNELS, NO_MATCHING_KERNEL, NO_BLOCK_SIZE)


def no_kernels(manifest: Manifest) -> str:
    """Why a target's static objectives have no value where ptxas reported no kernel: what it compiles holds none."""
    sources = ", ".join(path.name for path in manifest.cuda_sources) or "none"
    return (f"{NO_KERNELS} in {manifest.target}'s CUDA compiles ({sources}), "
            "and these objectives score kernels: its .cu files hold device functions only (with "
            "CUDA_SEPARABLE_COMPILATION, linked into the kernels of the targets that link it) or nothing. Tune the "
            "target whose .cu files define the kernels, or one of its objectives measured by its benchmark")


def relocatable_note(manifest: Manifest, objectives: Sequence[Objective]) -> str | None:
    """What a tune scoring ptxas's figures says of a target compiled relocatable (CUDA_SEPARABLE_COMPILATION), None
    otherwise: ptxas reports its kernels before the device link, which gives each the registers and stack of what it
    calls in other files (particles' advanceParticles: 24 registers reported, 52 and a 32-byte stack linked). With a
    benchmark those are read from its link (BuildRunner.relocatable); without, they cannot be."""
    read = [o.spec for o in objectives if isinstance(o.extractor, PtxasReport)]
    if not manifest.separable_compilation or not read:
        return None
    said = (f"{manifest.target} is compiled relocatable (CUDA_SEPARABLE_COMPILATION): ptxas reports its kernels "
            "before the device link, which gives each the registers and stack of the device functions it calls in "
            "other files")
    if manifest.benchmark is not None:
        return (f"{said}; so each candidate links {manifest.benchmark.target} and its kernels' registers and stack "
                "are read from it (their spills stay ptxas's, the callees' not counted), and one the link refuses "
                "(a register cap below a callee's) fails")
    return (f"{said}, and it links no benchmark here; {', '.join(read)} score the kernels as compiled, not as linked, "
            "and a register cap below a callee's fails the device link (nvlink: 'calls function ... with regcount of "
            "...'). Give it a BENCHMARK that links it (its figures are then read from that link), or tune for what "
            "runs on a GPU (--objective time)")


class Benchmarked(NamedTuple):
    """A runner's benchmark of one candidate."""

    measurement: Measurement
    raced: bool  # raced out: stopped early, behind the incumbent
    waited: float  # seconds spent waiting for a GPU before the first run, beyond the runner's own slot
    gpu: int | None = None  # the architecture of the GPU the runs ran on (ciq_build.compiler.gpu_arch)


def run_benchmark(spec: BenchSpec, repeats: int, racing: RaceBoard | None) -> tuple[Measurement, bool]:
    """`repeats` runs of the benchmark, or fewer raced against `racing`'s incumbent; (measurement, raced out)."""
    if racing is None:
        return measure(spec, repeats), False
    raced = race(spec, repeats, racing)
    return raced.measurement, raced.raced


def _rounded(timings: dict[str, float]) -> dict[str, float]:
    return {name: round(value, 3) for name, value in timings.items()}


def _bench_cause(cause: Cause | None, message: str, output_tail: str) -> Cause:
    """A failed benchmark run's cause, or an environmental one when the machine did it."""
    if cause == Cause.BENCH_SIGNAL and environment.says_killed(message):
        return environment.BENCH_KILLED  # SIGKILL from the OOM killer, a SIGTERM from someone: not a crash
    if environment.says_disk_full(output_tail):
        return environment.DISK_FULL
    return cause or Cause.BENCH_EXIT
