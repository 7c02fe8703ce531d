"""The summary a tune prints when it ends: scores before and after, evaluations, failures, time, verdict."""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from pathlib import Path
from typing import Any

from ciq_build.core.declared import declared
from ciq_build.core.metric_unit import change_text
from ciq_build.core.objectives import KINDS, Objective, with_unit
from ciq_build.core.settings import SearchSettings, duration_text
from ciq_build.pin.display import pinned_scores, size_ratios_text
from ciq_build.pin.record import PinnedRecord
from ciq_build.search.configuration import planned_batches
from ciq_build.search.evaluation import Evaluation
from ciq_build.tune.old_pin import Standing
from ciq_build.tune.scores import failure_summary


def time_summary(evaluations: Sequence[Evaluation], needs_benchmark: bool) -> str:
    """Where this run's evaluation time went: compiling, benchmarking, waiting for a GPU."""
    fresh = [e for e in evaluations if not e.cached]
    totals = {name: sum(e.timings.get(name, 0.0) for e in fresh) for name in ("compile_s", "benchmark_s", "wait_s")}
    text = f"compile {totals['compile_s']:.1f} s"
    if needs_benchmark:
        text += f", benchmark {totals['benchmark_s']:.1f} s, waiting for a GPU {totals['wait_s']:.1f} s"
    return text


def runs_summary(evaluations: Sequence[Evaluation], repeats: int) -> str:
    """Benchmark runs this run's evaluations made, and those racing and dedupe saved of `repeats` each."""
    fresh = [e for e in evaluations if not e.cached]
    ran = sum(e.runs for e in fresh)
    raced = [e for e in fresh if e.raced and e.same_code_as is None]
    # Fewer runs, not raced out, no failure: streamed samples put it far ahead (ciq_build.measure.racing.ahead).
    placed = [e for e in fresh if e.ok and not e.raced and e.same_code_as is None and 0 < e.runs < repeats]
    same = [e for e in fresh if e.same_code_as is not None]
    by_racing = sum(max(0, repeats - e.runs) for e in raced)
    by_lead = sum(repeats - e.runs for e in placed)
    by_dedupe = len(same) * repeats
    text = f"{ran} run, {by_racing + by_lead + by_dedupe} saved"
    if by_racing + by_lead + by_dedupe:
        parts = [f"{by_racing} by racing: {len(raced)} candidate(s) stopped early"]
        if placed:
            parts.append(f"{by_lead} by a clear lead: {len(placed)} candidate(s) far ahead after their streamed samples")
        parts.append(f"{by_dedupe} by dedupe: {len(same)} candidate(s) with an earlier one's machine code")
        text += f" ({'; '.join(parts)})"
    return text


NEVER_WORKED_AFTER = 5  # candidates that set a PARAMS value, all failed, before the summary names it


def params_never_working(evaluations: Sequence[Evaluation]) -> list[str]:
    """`-DNAME=VALUE` for each PARAMS value that failed in every one of NEVER_WORKED_AFTER or more candidates, where
    another value of the same name worked: likely a value the source cannot build or run (FlashInfer's KV tile of 1
    failed in 62 of 193 candidates of a GPU tune, its static_assert naming "a configuration upstream never launches"),
    which a CONSTRAINT or a shorter PARAMS list leaves out of every later search."""
    carried: dict[tuple[str, str], list[bool]] = {}
    for evaluation in evaluations:
        for define in evaluation.controls.defines:
            carried.setdefault(define, []).append(evaluation.ok)
    working_names = {name for (name, _), oks in carried.items() if any(oks)}
    return [f"-D{name}={value} failed in all {len(oks)}" for (name, value), oks in sorted(carried.items())
            if len(oks) >= NEVER_WORKED_AFTER and not any(oks) and name in working_names]


def improved_objectives(objectives: Sequence[Objective], baseline: Sequence[float],
                        evaluations: Sequence[Evaluation]) -> set[str]:
    """The names of the objectives on which some candidate scored better than the defaults (`baseline`)."""
    return {o.name for e in evaluations if e.ok and e.scores is not None
            for o, score, base in zip(objectives, e.scores, baseline)
            if (score < base if o.direction == "min" else score > base)}


def next_without_a_pin(objectives: Sequence[Objective], search: SearchSettings, pin: bool, better: bool,
                       kernels: int = 1, baseline: Sequence[float] = (), improved: Set[str] | None = None, *,
                       setuptools: bool = False, described: Mapping[str, Any] | None = None, params: bool = True) -> str:
    """What to try when a tune pinned nothing (`better`: its winner beat the defaults): the summary's `next:` line.
    `kernels`: how many the target's ptxas report has (a per-kernel objective is suggested where several, and
    where the search never moved the whole target's figure); `baseline`: the defaults' scores, where one minimised at
    0 (no spills) is said to have nothing to lower, and a percentage maximised at 100 (occupancy) nothing to raise;
    `improved`: the objectives some candidate beat the defaults on (improved_objectives; None: not known).
    `setuptools`: the target is a CudaExtension's, whose PARAMS are its params= (core/declared.py). `described`: the
    candidate source's describe(), whose budget is the one searched (a strategy's own options, compileiq's raised
    pool), where `search` says only what was asked. `params`: the target declares PARAMS (without, the line says to
    declare some, not to widen them: GPUSorting's kernels had none)."""
    if not pin and better:
        return "run the same command without --no-pin to pin the winner"
    # cuda_hgemv's 12 kernels spill nothing: the line offered spill_bytes:<kernel regex>, which is 0 for each; llm.c's
    # layernorm kernels all run at 100% occupancy at 256 threads, and it offered occupancy:<kernel regex>.
    floored = [o.name for o, value in zip(objectives, baseline) if o.at_bound(value) and o.direction == "min"]
    full = [o.name for o, value in zip(objectives, baseline) if o.at_bound(value) and o.direction == "max"]
    said = (f"{' and '.join(floored)} {'is' if len(floored) == 1 else 'are'} 0 at the compiler's defaults, "
            "nothing to lower; " if floored else "")
    said += (f"{' and '.join(full)} {'is' if len(full) == 1 else 'are'} 100% at the compiler's defaults, "
             "nothing to raise; " if full else "")
    # flash_attention_inference's FA2 kernels: register caps took registers from 255 to 120, each with more spills
    # than the defaults' 5296 bytes; the line said the registers were a figure one kernel a control cannot move may
    # set, when the search had moved it: what stopped a pin was the other objective.
    never = [o.name for o in objectives if improved and o.name not in improved and o.name not in floored + full]
    if never and len(objectives) > 1:
        gained = [o.name for o in objectives if improved and o.name in improved]
        return (f"{said}{' and '.join(never)} never beat the compiler's defaults, and {' and '.join(gained)} did only "
                f"in candidates no better on {' or '.join(never)}: a pin must beat the defaults on every objective, "
                "so the defaults are the best trade-off this search found; try "
                + _other_tries(objectives, search, setuptools, described, params))
    whole = [o.name for o in objectives if o.name not in floored + full
             and o.kernels is None and o.kind is not None and o.kind.argument == "kernel regex"
             and (improved is None or o.name not in improved)]
    if kernels > 1 and whole:
        # stdgpu's unordered_map: 28 kernels, the most registers (64) CUB's, whose __launch_bounds__ keep them under
        # any cap: 24 candidates could not move the target's figure, while its own kernel went from 49 to 44.
        first = whole[0]
        # Said of any target with several kernels: whether a library's are among them is not known here (a
        # cuda-samples target's two kernels are both the user's).
        return (f"{said}{first} is a figure of all {kernels} kernels of the target together, which one a control "
                "cannot move may set (a library's, Thrust's or CUB's say, whose __launch_bounds__ keep its registers "
                f"under any register cap): score the kernels you wrote with --objective "
                f"{first}:<kernel regex> (found in their names, e.g. {first}:my_kernel); or try "
                + _other_tries(objectives, search, setuptools, described, params))
    return ((said or "nothing beat the compiler's defaults here; ") + "try "
            + _other_tries(objectives, search, setuptools, described, params))


def _counted(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _other_tries(objectives: Sequence[Objective], search: SearchSettings, setuptools: bool,
                 described: Mapping[str, Any] | None, params: bool = True) -> str:
    """Other objectives, a wider search, a bigger budget (the one searched, `described`'s): what the `next:` line of
    a tune that pinned nothing offers."""
    others = [kind.name for kind in KINDS if kind.name not in {o.name.partition(":")[0] for o in objectives}]
    kinds = set(search.controls)
    missing = sorted({"knobs", "params"} - kinds) if params else sorted({"knobs"} - kinds)
    wider = f"--controls {' --controls '.join(missing)} beside {', '.join(search.controls)}, " if missing else ""
    source = (f"more values in {declared('PARAMS', setuptools)}" if params else
              f"-D source parameters such as tile sizes, declared as {declared('PARAMS', setuptools)}")
    generations, pool_size = planned_batches(described or {}, search.generations, search.pool_size)
    budget = f"{_counted(generations, 'generation')} of {pool_size}"
    if search.max_evaluations is not None:
        budget += f", at most {_counted(search.max_evaluations, 'evaluation')}"
    if search.time_limit is not None:
        budget += f", --time-limit {duration_text(search.time_limit)}"
    return (f"other objectives (--objective, one of "
            f"{', '.join(others)}), a wider search ({wider}{source}) or a bigger "
            f"budget (--generations, --pool-size, --max-evaluations, --time-limit; this tune: {budget})"
            "; --fresh starts over")


def _occupancy_label(winner: bool, kept_pin: bool) -> str:
    """Whose occupancy steps the summary's line gives: the configuration its table shows."""
    return ("winner" if winner else "the search's best, not pinned: the pin already there stays" if kept_pin else
            "the defaults, kept")


def run_summary(target: str, objectives: Sequence[Objective], baseline_scores: tuple[float, ...],
                winner_scores: tuple[float, ...], evaluations: Sequence[Evaluation], needs_benchmark: bool,
                verdict: str, pinned: Path | None, journal: Path, measured_this_run: Set[str] = frozenset(),
                *, repeats: int = 0, applied_by: str = "a plain `cmake --build`",
                next_without_pin: str = "", next_with_pin: str = "", stopped: str = "",
                size_ratios: Mapping[str, Mapping[str, float]] | None = None, gpu_time: str = "",
                without_effect: Sequence[str] = (), figures: str = "", occupancy: str = "",
                winner: bool = True, kept_pin: bool = False) -> str:
    """The summary's lines. `winner`: whether the verdict found one (it beat the defaults); without, the table shows
    what the build keeps, the defaults' figures, and the search's best is the verdict's to tell (llm.c's layernorm:
    the table's "best" said 22 registers where the verdict pinned nothing, 22 and 23 being the same allocation).
    `kept_pin`: the winner beat the defaults but not the pin already there, which the build keeps: the table shows
    the search's best, not the defaults as kept (sgemm.cu's retune said "kept 214, none (the defaults)" while its
    pin of 202 registers stayed). `occupancy`: the steps of the configuration the table shows
    (ciq_build.tune.finish.occupancy_steps), labelled with it."""
    best_shown = winner or kept_pin
    rows = [("objective", "baseline", "best" if best_shown else "kept", "change")]
    for objective, base, best in zip(objectives, baseline_scores, winner_scores if best_shown else baseline_scores):
        rows.append((objective.spec, with_unit(objective, base), with_unit(objective, best),
                     change_text(base, best, objective.rate_unit) if best_shown else "none (the defaults)"))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    table = "\n".join("  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows)
    fresh = sum(1 for e in evaluations if not e.cached)
    # A cached hit on a key this run measured is the search proposing a candidate again, not a resume.
    again = sum(1 for e in evaluations if e.cached and e.key in measured_this_run)
    reused = f"{fresh} run, {len(evaluations) - fresh - again} from the journal"
    if again:
        reused += f", {again} proposed again (measured once)"
    whose = "winner" if winner else "the search's best"
    lines = [
        f"ciq_build: {target}",
        table,
        *(f"  {spec} per size ({whose} / defaults): {size_ratios_text(ratios)}"
          for spec, ratios in (size_ratios or {}).items() if ratios),
        f"  evaluations: {len(evaluations)} ({reused}); failures: {failure_summary(evaluations)}",
        *([f"  never worked: {'; '.join(never)} candidates that set it: if the source cannot build or run it, leave "
           "it out of PARAMS or add a CONSTRAINTS expression (docs/cmake.md), and later searches will not spend "
           "candidates on it"] if (never := params_never_working(evaluations)) else []),
        f"  time: {time_summary(evaluations, needs_benchmark)} (this run's evaluations)",
        *([f"  figures: {figures}"] if figures else []),
        *([f"  occupancy ({_occupancy_label(winner, kept_pin)}): {occupancy}"] if occupancy else []),
    ]
    shared = sum(1 for e in evaluations if not e.cached and e.same_code_as is not None)
    if needs_benchmark:
        lines.append(f"  benchmark runs: {runs_summary(evaluations, repeats)}")
    if gpu_time:
        lines.append(f"  GPU: {gpu_time}")
    elif shared:
        lines.append(f"  same machine code as an earlier candidate: {shared} (its metrics taken, not measured again)")
    lines += [f"  {line}" for line in without_effect]  # ciq_build.tune.without_effect.without_effect_lines
    if stopped:
        lines.append(f"  search ended early: {stopped}")
    lines.append(f"  verdict: {verdict}")
    if pinned is not None:
        lines.append(f"  pinned: {pinned}")
        lines.append(f"  next: {next_with_pin or f'commit {pinned.parent}, then {applied_by} applies it'}")
    elif next_without_pin:
        lines.append(f"  next: {next_without_pin}")
    lines.append(f"  journal: {journal}")
    return "\n".join(lines)


def replacement_note(path: Path, old: PinnedRecord, new: PinnedRecord, standing: Standing | None = None) -> str:
    """What pinning `new` over the record `old` at `path` replaces, old against new, for the tune's output.

    Each side: when it was pinned, the evaluations behind it, its scores against its own baseline, its
    controls; then `standing`, the two compared (ciq_build.tune.old_pin). Where they could not be compared, a pin
    found with fewer evaluations than the one it replaces is said so, with the way back.
    """
    lines = [f"ciq_build: replacing the pin in {path}:"]
    counts = []
    for side, record in (("old", old), ("new", new)):
        evaluations = record.provenance.get("evaluations")
        count = evaluations if isinstance(evaluations, int) and not isinstance(evaluations, bool) else None
        counts.append(count)
        when = f"pinned {record.provenance['created']}, " if side == "old" and record.provenance.get("created") else ""
        scores = pinned_scores(record)
        c = record.controls
        controls = " ".join([*c.flags, *(f"-D{k}={v}" for k, v in c.defines),
                             *([f"ACF {c.acf.path.name}"] if c.acf is not None else [])]) or "(no controls)"
        lines.append(f"  {side}: {when}{'?' if count is None else count} evaluation(s); "
                     f"{', '.join(scores) or 'no scores'}; {controls}")
    if standing is not None:
        lines.append(f"  old against new: {standing.text}" if standing.comparable else f"  {standing.text}")
        if standing.comparable:
            return "\n".join(lines)
    if counts[0] is not None and counts[1] is not None and counts[1] < counts[0]:
        lines.append(f"  the old pin stood on more evaluations ({counts[0]} against {counts[1]}): to keep it, "
                     f"restore {path} from version control (or tune with --no-pin to look without pinning)")
    return "\n".join(lines)
