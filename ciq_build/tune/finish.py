"""After the search: confirm the winner, keep only the controls that change its code, pin it, say what came of it.

Three steps, in this order, each its own method of `Finish`: `confirm` (the
winner re-measured against the baseline, ciq_build.tune.confirm, with the
minimal pin's rebuilds started beside it, and against a pin already there,
ciq_build.tune.old_pin), `minimize` (its no-op controls dropped,
ciq_build.tune.minimize, then its benchmark's own check,
ciq_build.tune.winner_check) and `pin` (the record assembled and written,
ciq_build.tune.assemble); `summarize` prints the summary.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ciq_build.compiler import occupancy
from ciq_build.compiler.architectures import architecture_list, architecture_order
from ciq_build.compiler.controls import Controls
from ciq_build.compiler.gpu_arch import ArchitecturePlan
from ciq_build.compiler.toolchain import Toolchain
from ciq_build.core.declared import declared
from ciq_build.core.objectives import Objective, metric_key
from ciq_build.measure.sizes import size_ratios
from ciq_build.measure.stats import interleaved
from ciq_build.pin.read import read_record
from ciq_build.pin.record import architecture_set, record_path
from ciq_build.pin.write import merge_architecture, write_record
from ciq_build.project.manifest import Manifest, benchmark_sizes
from ciq_build.project.per_block import COUNTED_DYNAMIC_METRIC, DYNAMIC_SHARED, DYNAMIC_SHARED_METRIC
from ciq_build.project.worker import CandidateBuild, WorkerTree
from ciq_build.search.evaluation import Evaluation
from ciq_build.search.select import scored_registers
from ciq_build.tune.assemble import assemble_record, scored_record
from ciq_build.tune.cache import EvaluationCache
from ciq_build.tune.confirm import Confirmation, Confirmer
from ciq_build.tune.gpu_time import GpuMeter
from ciq_build.tune.minimize import Minimizer
from ciq_build.tune.old_pin import Standing, compare, pinned_before, pins_the_same, widened_note
from ciq_build.tune.runner import DESCRIBED_REGISTERS_METRIC, DESCRIBED_SHARED_METRIC, THREADS_METRIC, BuildRunner
from ciq_build.tune.scores import with_spills
from ciq_build.tune.summary import improved_objectives, next_without_a_pin, replacement_note, run_summary
from ciq_build.tune.tune_options import TuneSettings
from ciq_build.tune.winner_check import WinnerCheck, check_winner, unchecked, wants_check
from ciq_build.tune.without_effect import knobs_without_effect, params_without_effect, without_effect_lines


@dataclass
class TuneOutcome:
    ok: bool
    pinned: Path | None
    baseline: Evaluation
    winner: Evaluation | None
    evaluations: list[Evaluation]
    message: str
    better: bool = False  # the winner beat the defaults, beyond the noise (and any better pin already there)


@dataclass
class Searched:
    """What the search left for the steps after it."""

    baseline: Evaluation
    evaluations: list[Evaluation]
    base_tree: WorkerTree
    workers: list[WorkerTree]
    described: dict[str, Any]  # the candidate source's provenance (CandidateSource.describe)
    stopped: str  # the summary's word on a budget that ended the search early; "" when it ran to its end
    overridden: Sequence[str] = ()  # PARAMS names the source #defines again (said before the baseline)


@dataclass
class Finish:
    """The steps after the search of one tune, with what they need of it."""

    settings: TuneSettings
    manifest: Manifest
    toolchain: Toolchain
    runner: BuildRunner  # the candidates' (its limits, its slots, the builds each tree holds)
    cache: EvaluationCache
    meter: GpuMeter
    architectures: ArchitecturePlan
    applied_by: str  # what applies the pin (BuildBackend.applied_by)
    metered: bool  # this process's slots held every benchmark: the summary says where the GPU's time went
    say: Callable[[str], None]
    warn: Callable[[str], None]
    # A staged tune's later stage (ciq_build.tune.stages): its winner holds the pin's controls and more (an ACF
    # stage's: the pin's -D and an ACF for its flags), so it replaces a comparable pin only when better than it; a
    # tie keeps the pin, there first and with fewer controls.
    tie_keeps_pin: bool = False
    # The architectures the target's build compiles for, where this tune was narrowed to one (--architecture):
    # the pin applies only once it holds an entry for each, which the summary's next: says.
    built_architectures: str = ""
    # The figures of each configuration the search measured in this run (a static tune's minimal pin builds none
    # of them again).
    measured: dict[Controls, tuple[float, ...]] = field(default_factory=dict)
    # The record pin() left as it was, already pinning the winner: the summary's next: has nothing to commit.
    unchanged: Path | None = None

    def run(self, searched: Searched) -> TuneOutcome:
        if not searched.evaluations and searched.stopped:
            return self._nothing_evaluated(searched)
        self.measured = {e.controls: with_spills(e.scores, e.metrics) for e in searched.evaluations
                         if e.ok and e.scores is not None and e.key in self.cache.measured_this_run}
        confirmation, tree, minimizer, standing = self.confirm(searched)
        confirmation, checked = self.minimize(confirmation, tree, minimizer, searched.base_tree)
        self.meter.enter("pin")
        pinned = self.pin(confirmation, tree, standing, checked, searched) if confirmation.better else None
        self.summarize(searched, confirmation, pinned, standing, checked)
        return TuneOutcome(True, pinned, confirmation.baseline, confirmation.winner, searched.evaluations,
                           confirmation.verdict, confirmation.better)

    @property
    def pinning(self) -> bool:
        return self.settings.pin

    # -- confirm ---------------------------------------------------------------------

    def confirm(self, searched: Searched) -> tuple[Confirmation, WorkerTree, Minimizer | None, Standing | None]:
        """The winner re-measured against the baseline (and a pin already there): the verdict, the tree that
        holds its build, and the minimal pin's rebuilds started beside the re-measure (None: none started)."""
        workers = searched.workers
        trees = {"winner": workers[0]}  # the winner's tree: the first worker's, or the one that holds its build
        confirmer = Confirmer(self.runner, self.cache, list(self.settings.objectives), self.settings.measure,
                              self.runner.timeouts, self.settings.search.pick, self.manifest.target, self.say,
                              self.warn, phase=self.meter.enter)
        minimizer: Minimizer | None = None

        def picked(winner: Evaluation) -> tuple[WorkerTree, CandidateBuild] | None:
            # A tree the search left holding the winner's build is re-measured as it is. The minimal pin's
            # rebuilds start now, in the other workers' trees, while the winner is (re)built and re-measured:
            # decided by machine code, they need no benchmark and the GPU waits for none.
            nonlocal minimizer
            held = next(((t, b) for t in workers if (b := self.runner.holding(t, winner.controls)) is not None),
                        None)
            if held is not None:
                trees["winner"] = held[0]
            others = [t for t in workers if t is not trees["winner"]]
            if self.pinning and others and not winner.controls.is_default:
                minimizer = self._minimizer(winner, others)
            return held

        def rebuilt(objects: tuple[Path, ...]) -> None:
            if minimizer is not None:
                minimizer.reference(objects, trees["winner"])

        try:
            confirmation = confirmer.confirm(searched.baseline, searched.evaluations, searched.base_tree,
                                             trees["winner"], picked=picked, rebuilt=rebuilt)
        except BaseException:
            if minimizer is not None:
                minimizer.cancel()
            raise
        tree = trees["winner"]
        standing = self._against_old_pin(confirmation, searched.base_tree, tree)
        if standing is not None and standing.keeps_old(self.tie_keeps_pin) and not self.settings.force:
            confirmation = dataclasses.replace(
                confirmation, better=False,
                verdict=f"{confirmation.verdict}; the pin already there is "
                        f"{'better' if standing.old_better else 'as good'} ({standing.text}): kept, not replaced "
                        "(--force replaces it)")
        if minimizer is not None and not (confirmation.better and self.pinning):
            minimizer.cancel()
            minimizer = None
        return confirmation, tree, minimizer, standing

    def _against_old_pin(self, confirmation: Confirmation, base_tree: WorkerTree,
                         tree: WorkerTree) -> Standing | None:
        """Where the pin already there stands against a winner about to replace it (ciq_build.tune.old_pin); None
        where nothing would be replaced. A runtime is re-measured: the old pin is built in the baseline's tree and
        run interleaved with the winner, still built in `tree`. With --no-pin, static figures alone are compared (the
        records' own, free): sgemm.cu's tune --no-pin said to run it without --no-pin to pin a winner of 208
        registers, which that run then kept out for the pin's 202."""
        previewed = not self.pinning and not self.runner.needs_benchmark
        if not (confirmation.better and (self.pinning or previewed)) or self.manifest.tune_architecture:
            return None
        old = pinned_before(record_path(self.manifest.pin_dir, self.manifest.target))
        if old is None:
            return None

        def remeasure(controls: Controls) -> tuple[dict[str, list[float]], dict[str, list[float]]] | str:
            rounds = self.settings.measure.confirm_rounds
            self.say(f"building the pin already there, to re-measure it beside the new winner ({rounds} rounds "
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

        objectives = list(self.settings.objectives)
        new = scored_record(self.manifest, self.toolchain, objectives, confirmation)
        standing = compare(old, new, objectives, remeasure if self.runner.needs_benchmark else None)
        if standing.old_better and not self.settings.force:
            self.warn(f"the pin already there is better than this tune's winner: {standing.text}; it is kept "
                      "(tune --force replaces it)")
        return standing

    # -- minimize --------------------------------------------------------------------

    def minimize(self, confirmation: Confirmation, tree: WorkerTree, minimizer: Minimizer | None,
                 base_tree: WorkerTree) -> tuple[Confirmation, WinnerCheck | None]:
        """A winner to pin with its no-op controls dropped (ciq_build.tune.minimize), then its benchmark's own
        check run on it (ciq_build.tune.winner_check); as it was when nothing is to be pinned. `base_tree`: the
        baseline's, free once the winner is confirmed."""
        if not (confirmation.better and self.pinning):
            return confirmation, None
        confirmation = self._minimal(confirmation, tree, minimizer, base_tree)
        if confirmation.better and (never := unchecked(self.runner, confirmation.winner.controls)) is not None:
            self.warn(f"the winner was {never.text}; the pin records that it was not run")
            return confirmation, never
        if not (confirmation.better and wants_check(self.runner, confirmation.winner.controls)):
            return confirmation, None
        checked = check_winner(self.runner, tree, confirmation.winner.controls, self.runner.timeouts.compile,
                               self.say, base_tree)
        if checked.failed:
            self.warn(f"the winner's benchmark {checked.text}: nothing pinned. Keep such values out of the "
                      "search (CONSTRAINTS, or fewer PARAMS values), or tune an objective the benchmark "
                      "measures (its check then runs for every candidate)")
        elif not checked.ran:
            self.warn(f"the winner's benchmark was {checked.text}; the pin records that it was not run")
        return dataclasses.replace(confirmation, better=not checked.failed,
                                   verdict=f"{confirmation.verdict}; its benchmark: {checked.text}"
                                           + ("; nothing pinned" if checked.failed else "")), checked

    def _minimal(self, confirmation: Confirmation, tree: WorkerTree, minimizer: Minimizer | None,
                 base_tree: WorkerTree) -> Confirmation:
        """The confirmation with the winner's no-op controls dropped.

        `minimizer`: the rebuilds started beside the re-measure in the other workers' trees; None with a single
        worker tree, `tree`: the rebuilds start now, one after another, in `base_tree` (nothing reads the
        baseline's build after the re-measure), so that `tree` keeps the winner's build the pin reads (they ran
        in `tree` before, and the winner was rebuilt after them: a whole build more per tune).
        """
        winner = confirmation.winner
        self.meter.enter("minimize")  # what of it outlasted the re-measure
        if minimizer is None:
            minimizer = self._minimizer(winner, [base_tree])
            minimizer.reference(confirmation.winner_objects, tree)
        minimal = minimizer.result(confirmation.winner_objects)
        if not minimal.dropped:
            return confirmation
        if not minimal.same_code:  # a static tune's pin of other code, the winner's figures: its objects are read
            built = tree.build(minimal.controls, self.runner.timeouts.compile, benchmark=self.runner.links)
            if not built.ok:
                self.say(f"the minimal pin's controls do not build now ({built.message}): the winner's are pinned")
                return confirmation
            minimal = minimizer.built_as(minimal, built.objects, tree)
            # The record's figures are the pin's build's: a dropped -D changes what the launch declares (mini-nbody's
            # -DBLOCK_SIZE=512, dropped at the same occupancy, was recorded as 512 threads the pin never launches).
            winner = dataclasses.replace(winner, metrics={**winner.metrics,
                                                          **self.runner.static_metrics(built, minimal.controls)})
        self.say(minimal.describe())
        verdict = f"{confirmation.verdict}; {minimal.describe()}"
        if minimal.controls.is_default:
            verdict += "; the winner's code is the compiler's default code: nothing pinned"
        return dataclasses.replace(confirmation, winner=dataclasses.replace(winner, controls=minimal.controls),
                                   winner_objects=minimal.objects, verdict=verdict, dropped=minimal.dropped,
                                   better=not minimal.controls.is_default)

    def _minimizer(self, winner: Evaluation, trees: Sequence[WorkerTree]) -> Minimizer:
        """The minimal pin's rebuilds of `winner` in `trees`; a tune of static objectives alone judges them by the
        objectives' figures too (a control that changes the code but none of them is dropped), built as its
        candidates were (ptxas alone where ptxas's report holds them)."""
        static = not self.runner.needs_benchmark
        return Minimizer(winner.controls, trees, self.toolchain, self.runner.timeouts, self.say,
                         benchmark=self.runner.links, figures=self.runner.minimal_pin_figures if static else None,
                         winner_figures=with_spills(winner.scores, winner.metrics) if static and winner.scores
                         else None, static_only=self.runner.static_only, searched=self.measured, spills_last=True)

    # -- pin -------------------------------------------------------------------------

    def pin(self, confirmation: Confirmation, tree: WorkerTree, standing: Standing | None,
            checked: WinnerCheck | None, searched: Searched) -> Path | None:
        """The winner's record written (or its architecture's entry merged in); where, or None with --no-pin."""
        if not self.pinning:
            return None
        against: dict[str, Any] = {} if standing is None else {"against_old_pin": standing.text}
        if checked is not None:
            against["winner_check"] = checked.to_record()
        record = assemble_record(self.manifest, self.toolchain, list(self.settings.objectives), confirmation, tree,
                                 {**searched.described, **self.architectures.provenance()}, searched.evaluations,
                                 extra=against)
        pinned = record_path(self.manifest.pin_dir, self.manifest.target)
        acf = confirmation.winner.controls.acf
        if self.manifest.tune_architecture:  # under the target's lock, as every write of its record
            before = pinned_before(pinned)
            merged = merge_architecture(pinned, record, self.manifest.tune_architecture)
            if before is not None and (note := widened_note(pinned, before, merged)):
                self.say(note)
        else:
            replaced = pinned_before(pinned)
            if replaced is not None and pins_the_same(replaced, record):
                self.say(f"the pin in {pinned} already pins these controls, for the same machine code: left as it is")
                self.unchanged = pinned
                return pinned
            if replaced is not None:
                print(replacement_note(pinned, replaced, record, standing), file=sys.stdout)
            write_record(pinned, record, acf_source=acf.path if acf else None)
        return pinned

    # -- say what came of it ---------------------------------------------------------

    def summarize(self, searched: Searched, confirmation: Confirmation, pinned: Path | None,
                  standing: Standing | None, checked: WinnerCheck | None) -> None:
        objectives = list(self.settings.objectives)
        kept_pin = bool(self._kept_text(standing))  # the winner beat the defaults, not the pin the build keeps
        print(run_summary(self.manifest.target, objectives, confirmation.baseline_scores,
                          confirmation.winner_scores, searched.evaluations, self.runner.needs_benchmark,
                          confirmation.verdict, pinned, self.cache.path, self.cache.measured_this_run,
                          repeats=self.settings.measure.repeats, applied_by=self.applied_by,
                          stopped=searched.stopped, next_with_pin=self._skipped_text(pinned) or self._unchanged_text(pinned),
                          next_without_pin=self._kept_text(standing)
                          or _check_failed_text(checked, self.manifest.setuptools) or next_without_a_pin(
                              objectives, self.settings.search, self.pinning, confirmation.better,
                              int(confirmation.baseline.metrics.get("kernels", 1)), confirmation.baseline_scores,
                              improved_objectives(objectives, confirmation.baseline_scores, searched.evaluations),
                              setuptools=self.manifest.setuptools, described=searched.described,
                              params=bool(self.manifest.params)),
                          size_ratios=self._size_ratios(confirmation), gpu_time=self._gpu_time(),
                          figures=self.architectures.describe(), winner=confirmation.better, kept_pin=kept_pin,
                          occupancy=self._occupancy_steps(
                              dataclasses.replace(confirmation, better=True) if kept_pin else confirmation),
                          without_effect=without_effect_lines(
                              [name for name in params_without_effect(self.manifest.params, searched.evaluations)
                               if name not in searched.overridden],
                              knobs_without_effect([searched.baseline, *searched.evaluations]))),
              file=sys.stdout)

    def _occupancy_steps(self, confirmation: Confirmation) -> str:
        """The summary's occupancy line (ciq_build.tune.finish.occupancy_steps), on the architecture the static
        figures are of."""
        built = architecture_list(self.manifest.toolchain.architectures)
        return occupancy_steps(confirmation, list(self.settings.objectives),
                               self.architectures.scored or (built[0] if built else ""),
                               setuptools=self.manifest.setuptools)

    def _skipped_text(self, pinned: Path | None) -> str:
        """The summary's `next:` where the build will skip the pin just written: a tune --architecture ARCH whose
        record lacks other architectures the build compiles for ("" where the build applies it)."""
        if pinned is None or not self.built_architectures:
            return ""
        record = read_record(pinned)
        built = architecture_set(architecture_list(self.built_architectures))
        tuned = architecture_set(record.toolchain.architectures)
        if not tuned or tuned == built:
            return ""
        missing = sorted(set(built) - set(tuned), key=architecture_order)
        return (f"commit {pinned.parent}; {self.applied_by} skips this pin until it holds every architecture the "
                f"build compiles for: it has {', '.join(sorted(tuned, key=architecture_order))}, the build also "
                f"compiles for {', '.join(missing)}. Tune --architecture for each (each adds its entry), tune "
                f"without --architecture, or build {self.manifest.target} for "
                f"{', '.join(sorted(tuned, key=architecture_order))} only")

    def _unchanged_text(self, pinned: Path | None) -> str:
        """The summary's `next:` where the record already pinned the winner and was left as it was: no diff to
        commit (a second tune of moderngpu's test_segsort still said "commit .../ciq")."""
        if pinned is None or pinned != self.unchanged:
            return ""
        return f"nothing to commit: {pinned} already pinned these controls, and {self.applied_by} applies it"

    def _kept_text(self, standing: Standing | None) -> str:
        """The summary's `next:` where a better pin was kept."""
        if standing is None or not standing.keeps_old(self.tie_keeps_pin) or self.settings.force:
            return ""
        instead = " instead of --no-pin" if not self.pinning else ""
        return (f"the pin in {record_path(self.manifest.pin_dir, self.manifest.target)} stays; to replace it with "
                f"this winner anyway, run the same command with --force{instead}")

    def _size_ratios(self, confirmation: Confirmation) -> dict[str, dict[str, float]]:
        """Each benchmark objective's per-size ratio, winner over defaults (ARGS_SETS; empty without)."""
        names = benchmark_sizes(self.manifest)
        if not names:
            return {}
        return {o.spec: size_ratios(confirmation.winner.metrics, confirmation.baseline.metrics, metric_key(o), names)
                for o in self.settings.objectives if o.source == "benchmark"}

    def _nothing_evaluated(self, searched: Searched) -> TuneOutcome:
        """No candidate evaluated (a --time-limit the baseline used up, or a baseline at every objective's bound):
        nothing to confirm or pin."""
        baseline = searched.baseline
        assert baseline.scores is not None
        verdict = "the search ended before any candidate was evaluated; nothing pinned"
        kernels = int(baseline.metrics.get("kernels", 1))
        objectives = list(self.settings.objectives)
        print(run_summary(self.manifest.target, objectives, baseline.scores, baseline.scores, [],
                          self.runner.needs_benchmark, verdict, None, self.cache.path, self.cache.measured_this_run,
                          repeats=self.settings.measure.repeats, applied_by=self.applied_by,
                          stopped=searched.stopped, winner=False,
                          next_without_pin=next_without_a_pin(objectives, self.settings.search, self.pinning,
                                                              better=False, kernels=kernels, baseline=baseline.scores,
                                                              setuptools=self.manifest.setuptools,
                                                              described=searched.described,
                                                              params=bool(self.manifest.params))),
              file=sys.stdout)
        return TuneOutcome(True, None, baseline, None, [], verdict)

    def _gpu_time(self) -> str:
        """Where the GPU's time went from the first benchmark to now (the pin), journaled; the summary's line.

        Only where this process's slots held every benchmark (local worker trees; Ray's run elsewhere).
        """
        if not self.runner.needs_benchmark or not self.metered:
            return ""
        figures = self.meter.result(self.runner.slots.count)
        if figures is None:
            return ""
        self.cache.record_gpu_time(figures.to_journal())
        return figures.describe()


def occupancy_steps(confirmation: Confirmation, objectives: Sequence[Objective], arch: str, *,
                    setuptools: bool = False) -> str:
    """Where the blocks an SM change with the register count of the configuration the summary's table shows: the
    winner, or, where nothing beat the defaults, the defaults the build keeps ("" without its block size, or limits
    for `arch`). The search's best that was not pinned is the verdict's to tell: a line of its steps would read as
    what the build now runs. `setuptools`: the target is a CudaExtension's (how the line names a declaration)."""
    described = confirmation.winner if confirmation.better else confirmation.baseline
    threads = described.metrics.get(THREADS_METRIC)
    least = described.metrics.get(DESCRIBED_REGISTERS_METRIC)  # an occupancy objective's kernel (BuildRunner)
    registers, whose = (int(least), "") if least is not None else scored_registers(described.metrics, list(objectives))
    if threads is None or registers is None or not occupancy.knows(arch):
        return ""
    counted = int(described.metrics.get(COUNTED_DYNAMIC_METRIC, 0))
    # The target's most static shared memory, with the declared dynamic where some kernels use it (the described
    # kernel's own figure already has it).
    shared = (described.metrics.get(DESCRIBED_SHARED_METRIC, 0) if whose or least is not None else
              described.metrics.get("shared_bytes", 0) + counted)
    steps = occupancy.describe_steps(occupancy.limits(arch), registers, int(threads), int(shared))
    kernels = described.metrics.get("kernels", 1)
    if least is not None:
        several = " (the kernel of least occupancy, which the objective scores)" if kernels > 1 else ""
    else:
        several = (f" (the kernels {whose} scores)" if whose else
                   " (the most registers and shared memory of any kernel)" if kernels > 1 else "")
    dynamic = int(described.metrics.get(DYNAMIC_SHARED_METRIC, 0))
    keyword = DYNAMIC_SHARED.argument if setuptools else DYNAMIC_SHARED.keyword
    dynamic_note = ("" if not dynamic else
                    f"; {dynamic} of the kernels use dynamic shared memory, counted at {counted} bytes a block "
                    f"({keyword})" if counted else
                    f"; {dynamic} of the kernels use dynamic shared memory, which this leaves out: they may hold fewer "
                    f"blocks an SM (declare it: {keyword})")
    return f"sm_{arch}, {steps}{several}{dynamic_note}"


def _check_failed_text(checked: WinnerCheck | None, setuptools: bool) -> str:
    """The summary's `next:` where the winner's benchmark failed its check (`setuptools`: a CudaExtension's
    target, core/declared.py)."""
    if checked is None or not checked.failed:
        return ""
    return (f"keep the values that fail the benchmark's check out of the search ({declared('CONSTRAINTS', setuptools)}, "
            f"or fewer values in {declared('PARAMS', setuptools)}), or tune an objective the benchmark measures, "
            "then tune again")
