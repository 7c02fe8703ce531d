"""Before pinning: trust no journaled score of the winner, and re-measure it against the baseline.

A journal is a cache, not a proof: it may be stale (a toolchain swapped under
the same version string) or edited, so the winner's and the baseline's static
scores are rebuilt and checked. Timed objectives are then re-measured,
baseline and winner interleaved, and the winner is pinned only when it beats
the baseline beyond the noise; static ones are deterministic, so the winner
must dominate the compiler's defaults, and compile_time, a clock, is then
rebuilt in turn with the defaults and judged beyond the noise too.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ciq_build.compiler.controls import Controls
from ciq_build.compiler.occupancy import REGISTER_UNIT, WARP
from ciq_build.core.causes import Cause
from ciq_build.core.objectives import CompileClock, Objective, metric_key, times_the_compile
from ciq_build.core.pareto import dominates
from ciq_build.core.settings import MeasureSettings
from ciq_build.errors import SearchError
from ciq_build.measure.stats import FINAL_ALPHA, INTERIM_ALPHA, Measurement, beats_baseline, interim_look, interleaved
from ciq_build.project.worker import CandidateBuild, WorkerTree
from ciq_build.search.evaluation import Evaluation
from ciq_build.tune.cache import EvaluationCache
from ciq_build.tune.runner import BuildRunner
from ciq_build.tune.scores import failure_summary, jsonable, objective_values
from ciq_build.tune.timeouts import Timeouts
from ciq_build.tune.winner import beats_defaults, pick_winner

# Builds of the defaults and of the winner each when a compile_time win is re-measured: the fewest whose one-sided
# Mann-Whitney U test can reach FINAL_ALPHA (5 against 5: p >= 1/252), since each is a whole rebuild of the target.
COMPILE_ROUNDS = 5


@dataclass(frozen=True)
class Confirmation:
    """The verdict on the winner, and the scores a pinned record carries."""

    baseline: Evaluation
    winner: Evaluation
    better: bool  # beats the baseline: pin it
    verdict: str  # one line for the summary
    baseline_scores: tuple[float, ...]
    winner_scores: tuple[float, ...]
    # baseline / winner: IQR per metric of the re-measurement; samples: its runs and verdict. Empty when static.
    spreads: Mapping[str, Any] = field(default_factory=dict)
    winner_objects: tuple[Path, ...] = ()  # the winner's object files, rebuilt in a worker tree
    dropped: tuple[str, ...] = ()  # the winner's controls left out of the pin: the code is the same without them


class Confirmer:
    """Picks the winner of a finished search and decides whether it beats the baseline."""

    def __init__(self, runner: BuildRunner, cache: EvaluationCache, objectives: Sequence[Objective],
                 measure: MeasureSettings, timeouts: Timeouts, pick: str, target: str, say: Callable[[str], None],
                 warn: Callable[[str], None], phase: Callable[[str], None] = lambda name: None) -> None:
        self.runner = runner
        self.cache = cache
        self.objectives = list(objectives)
        self.measure = measure
        self.timeouts = timeouts  # the candidates': the winner's and the baseline's rebuilds are limited as theirs
        self.pick = pick
        self.target = target
        self.say = say
        self.warn = warn
        self.phase = phase  # told when the winner's rebuild and the re-measure start (ciq_build.tune.gpu_time)

    def confirm(self, baseline: Evaluation, evaluations: list[Evaluation], base_tree: WorkerTree,
                tree: WorkerTree, *,
                picked: Callable[[Evaluation], tuple[WorkerTree, CandidateBuild] | None] | None = None,
                rebuilt: Callable[[tuple[Path, ...]], None] | None = None) -> Confirmation:
        """The winner of `evaluations` (a corrected journaled score is replaced in the list) and its verdict.

        `picked` hears of the winner as soon as it is known, and may name a tree that still holds its build (the
        one the search built it in), which is then re-measured without a rebuild; `rebuilt` hears of its
        objects (the minimal pin's rebuilds start and compare meanwhile, ciq_build.tune.minimize).
        """
        baseline, winner, prebuilt = self._trusted_winner(baseline, evaluations, base_tree, tree)
        assert winner.scores is not None and baseline.scores is not None
        static = None if self.runner.needs_benchmark else self._static_verdict(baseline, winner)
        if static is not None and static.better and times_the_compile(self.objectives):
            static = self._compile_remeasure(static, winner, tree)
        if static is not None and not static.better:
            return static  # nothing to pin: the winner's objects are never read, so it is not rebuilt for them
        held = picked(winner) if picked is not None else None
        if prebuilt is None and held is not None:
            tree, prebuilt = held
            self.say("the winner's build is still in the tree the search built it in: no rebuild")
        self.phase("rebuild")
        # Rebuild the winner in a worker tree: its objects are pinned (resource usage, code hash).
        if prebuilt is None:
            self.say("rebuilding the winner to read its objects (what a pin records of it)")
        built = prebuilt if prebuilt is not None else tree.build(winner.controls, self.timeouts.compile,
                                                                 benchmark=self.runner.links)
        if not built.ok:
            raise SearchError(f"the winning candidate no longer builds: {built.message}")
        if rebuilt is not None:
            rebuilt(built.objects)
        if static is not None:
            return dataclasses.replace(static, winner_objects=built.objects)
        return self._remeasure(baseline, winner, base_tree, tree, built.objects)

    def _static_verdict(self, baseline: Evaluation, winner: Evaluation) -> Confirmation:
        """Static metrics are deterministic: better means no worse on any objective and better on one (the
        winner dominates the compiler's defaults)."""
        assert winner.scores is not None and baseline.scores is not None
        directions = [o.direction for o in self.objectives]
        better = beats_defaults(winner.scores, baseline.scores, self.objectives)
        text = ", ".join(f"{o.spec}: {b:g} -> {w:g}"
                         for o, b, w in zip(self.objectives, baseline.scores, winner.scores))
        if not better and dominates(winner.scores, baseline.scores, directions):
            text += (f" (registers are allocated {REGISTER_UNIT // WARP} a thread at a time, so the winner's and the "
                     "defaults' are the same registers, the same occupancy at any block size; nothing pinned)")
        elif not better:
            text += " (does not beat the compiler's defaults on every objective; nothing pinned)"
        return Confirmation(baseline, winner, better, text, baseline.scores, winner.scores)

    def _compile_remeasure(self, static: Confirmation, winner: Evaluation, tree: WorkerTree) -> Confirmation:
        """`static` with compile_time judged again: a clock, not a figure the code fixes, so one build each (the
        search's) proves nothing (particle_test's baseline took 3.4 s once, the winner 1.2 s: both 1.6-1.7 s again,
        and the 66% gain was pinned). The defaults and the winner rebuilt in turn in `tree` (each build compiles: the
        options file changes), COMPILE_ROUNDS times each; better only beyond the noise, on the medians."""
        rounds = COMPILE_ROUNDS
        self.say(f"re-measuring the compile time: the defaults and the winner rebuilt in turn, {rounds} times each")
        samples: dict[str, list[float]] = {"baseline": [], "winner": []}
        for _ in range(rounds):
            for name, controls in (("baseline", Controls()), ("winner", winner.controls)):
                built = tree.build(controls, self.timeouts.compile, benchmark=False)
                if not built.ok:
                    raise SearchError(f"re-measuring the compile time: the {name} no longer builds: {built.message}")
                samples[name].append(built.compile_seconds)
        verdict = beats_baseline(samples["baseline"], samples["winner"], "min", alpha=FINAL_ALPHA)
        medians = {name: statistics.median(values) for name, values in samples.items()}
        clocked = [isinstance(o.extractor, CompileClock) for o in self.objectives]
        baseline_scores = tuple(medians["baseline"] if c else v for c, v in zip(clocked, static.baseline_scores))
        winner_scores = tuple(medians["winner"] if c else v for c, v in zip(clocked, static.winner_scores))
        better = static.better and verdict.better
        text = f"{static.verdict}; compile time re-measured, {rounds} builds each: {verdict.explanation}"
        return dataclasses.replace(static, better=better, verdict=text + ("" if better else "; nothing pinned"),
                                   baseline_scores=baseline_scores, winner_scores=winner_scores)

    def _remeasure(self, baseline: Evaluation, winner: Evaluation, base_tree: WorkerTree, tree: WorkerTree,
                   objects: tuple[Path, ...]) -> Confirmation:
        """Baseline and winner measured side by side, interleaved; better only beyond the noise."""
        assert winner.scores is not None and baseline.scores is not None
        # A baseline measured in this run is still built in its tree; one read
        # from the journal may never have been built there.
        if baseline.cached:
            self.say("rebuilding the baseline to re-measure it beside the winner")
            base_build = base_tree.build(Controls(), self.timeouts.compile)
            if not base_build.ok:
                raise SearchError(f"the baseline no longer builds: {base_build.message}")
        rounds = self.measure.confirm_rounds
        timed = next(o for o in self.objectives if o.source == "benchmark")
        key, direction = metric_key(timed), timed.direction

        def settled(base: Measurement, win: Measurement) -> bool:  # at the look: a clear winner needs no more runs
            return (base.failure is None and win.failure is None and key in base.samples and key in win.samples
                    and beats_baseline(base.samples[key], win.samples[key], direction, alpha=INTERIM_ALPHA).better)

        self.phase("re-measure")
        looked = interim_look(rounds)
        self.say(f"re-measuring the winner against the baseline, interleaved, {rounds} rounds each"
                 + (f" (a look after {looked}: a clear winner ends it there)" if looked else ""))
        with self.runner.slots.slot() as env:
            base_m, win_m = interleaved(self.runner.bench_spec(base_tree).with_env(env),
                                        self.runner.bench_spec(tree).with_env(env), rounds,
                                        look=(looked, settled) if looked else None)
        self.runner.check_precision(base_m, win_m)
        failure = base_m.failure or win_m.failure
        if failure is not None:
            raise SearchError(f"re-measuring failed: {failure.cause}: {failure.message}")
        early = len(win_m.runs) < rounds
        verdict = beats_baseline(base_m.samples[key], win_m.samples[key], direction,
                                 alpha=INTERIM_ALPHA if early else FINAL_ALPHA, rate_unit=timed.rate_unit)
        if early:
            self.say(f"the re-measure ended after {len(win_m.runs)} of {rounds} rounds: the winner is better "
                     f"at p <= {INTERIM_ALPHA} already")
        baseline_scores = objective_values(self.objectives, dict(baseline.metrics, **base_m.metrics)) \
            or baseline.scores
        winner_scores = objective_values(self.objectives, dict(winner.metrics, **win_m.metrics)) or winner.scores
        spreads = {"baseline": base_m.iqr, "winner": win_m.iqr,
                   "samples": {"metric": key, "baseline": base_m.samples[key], "winner": win_m.samples[key],
                               "verdict": verdict.explanation, "rounds": len(win_m.runs), "of": rounds}}
        text = verdict.explanation + ("" if verdict.better else "; nothing pinned")
        return Confirmation(baseline, winner, verdict.better, text, baseline_scores, winner_scores, spreads, objects)

    def _deterministic_keys(self) -> list[str]:
        """The metrics of the static objectives, whose journaled values a fresh build must reproduce exactly
        (compile_time is not one: the compile's clock is never the same twice)."""
        return [metric_key(o) for o in self.objectives if o.source == "static"]

    def _trusted_winner(self, baseline: Evaluation, evaluations: list[Evaluation], base_tree: WorkerTree,
                        tree: WorkerTree) -> tuple[Evaluation, Evaluation, CandidateBuild | None]:
        """The baseline and winner, with every static score read from the journal of an earlier run re-measured
        from a fresh build.

        A journaled value that a fresh build does not reproduce is replaced by the
        fresh one (and journaled), and the winner is picked again. Returns the
        winner's build when it is the last one made in `tree`.
        """
        keys = self._deterministic_keys()
        fresh = self.trusted_baseline(baseline, base_tree)
        if fresh is not baseline:  # the defaults proposed again hold the journal's wrong figures too
            evaluations[:] = [dataclasses.replace(e, metrics=fresh.metrics, scores=fresh.scores, ok=fresh.ok,
                                                  cause=fresh.cause) if e.key == baseline.key else e
                              for e in evaluations]
        baseline = fresh
        measured = self.cache.measured_this_run | self.cache.checked  # what this run built itself: trusted
        checked: set[int] = set()
        last: tuple[Evaluation, CandidateBuild] | None = None
        while True:
            winner = pick_winner(evaluations, baseline, self.objectives, self.pick)
            if winner is None:
                raise SearchError(
                    f"no candidate of {self.target} could be evaluated ({failure_summary(evaluations)}); "
                    "see the journal for each failure")
            # A winner this run built and measured itself (a repeat of one, the defaults again) needs no second build.
            if not keys or not winner.cached or winner.key in measured or id(winner) in checked:
                break
            self.say("rebuilding the journal's winner: its static metrics must be what a fresh build measures")
            built = tree.build(winner.controls, self.timeouts.compile, benchmark=self.runner.links)
            if not built.ok:
                raise SearchError(f"the winning candidate no longer builds: {built.message}")
            fresh = self._remeasured(winner, built, keys)
            checked.add(id(fresh))
            last = (fresh, built)
            if fresh is winner:
                break
            evaluations[evaluations.index(winner)] = fresh
        return baseline, winner, (last[1] if last is not None and last[0] is winner else None)

    def trusted_baseline(self, baseline: Evaluation, base_tree: WorkerTree, also: Sequence[str] = ()) -> Evaluation:
        """`baseline`, or where it was read from the journal of an earlier run, rebuilt in `base_tree` and its static
        metrics (the objectives' and `also`'s) checked against the fresh build: a wrong one is corrected (and
        journaled). Checked once a run (`EvaluationCache.checked`)."""
        own = self._deterministic_keys()
        keys = own + [key for key in also if key not in own]
        if not keys or not baseline.cached or baseline.key in self.cache.measured_this_run | self.cache.checked:
            return baseline
        self.say("rebuilding the journal's baseline: its static metrics must be what a fresh build measures")
        built = base_tree.build(Controls(), self.timeouts.compile, benchmark=self.runner.links)
        if not built.ok:
            raise SearchError(f"the baseline no longer builds: {built.message}")
        fresh = self._remeasured(baseline, built, keys)
        self.cache.checked.add(baseline.key)
        return fresh

    def _remeasured(self, evaluated: Evaluation, built: CandidateBuild, keys: list[str]) -> Evaluation:
        """`evaluated` when a fresh build reproduces its static metrics, else a corrected copy (journaled)."""
        fresh = self.runner.static_metrics(built, evaluated.controls)
        wrong = [k for k in keys if k not in fresh or k not in evaluated.metrics
                 or abs(fresh[k] - evaluated.metrics[k]) > 1e-9 * max(1.0, abs(fresh[k]))]
        if not wrong:
            return evaluated
        values = {**evaluated.metrics, **fresh}
        scores = objective_values(self.objectives, values)
        what = "the baseline" if evaluated.proposal.id == -1 else f"candidate {jsonable(evaluated.proposal.params)}"
        journaled = ", ".join(f"{k} {evaluated.metrics.get(k, math.nan):g}" for k in wrong)
        measured = ", ".join(f"{k} {fresh.get(k, math.nan):g}" for k in wrong)
        self.warn(f"the journal's {journaled} for {what} is not what a fresh build measures ({measured}): the "
                  f"journal {self.cache.path} is stale or was edited; the fresh measurement replaces it")
        corrected = dataclasses.replace(evaluated, metrics=values, scores=scores, ok=scores is not None,
                                        cause=None if scores is not None else Cause.NO_METRIC)
        self.cache.record(corrected, reuse=True)
        return corrected
