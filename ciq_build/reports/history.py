"""What a tune did, read back from its journal and its pinned record.

The data behind `report` and `export` (rendering lives in page.py, plots.py and
export.py): every evaluation in the order it finished, the baseline, the
pinned winner, best-so-far per objective, the Pareto front, failures by
cause, where the time went, and the winner's re-measure against the baseline.
Nothing here builds or measures; a journal is enough, the record adds the
re-measure and marks the chosen point.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from ciq_build.compiler.controls import Controls
from ciq_build.core.metric_unit import RATE_UNIT, shown_rate
from ciq_build.core.objectives import Objective, metric_key, parse_objective, with_rate
from ciq_build.core.pareto import non_dominated
from ciq_build.errors import CiqError, ConfigError, ManifestError
from ciq_build.measure.sizes import size_ratios, sizes_of
from ciq_build.measure.stats import beats_baseline
from ciq_build.pin.display import rate_unit_of
from ciq_build.pin.read import read_record
from ciq_build.pin.record import PinnedRecord
from ciq_build.reports.importance import (
    MIN_PER_CELL,
    Importance,
    Interaction,
    parameter_importance,
    parameter_interactions,
)
from ciq_build.reports.show import chosen_journal, pin_file_for, target_journals
from ciq_build.search.evaluation import (
    EVALUATION_KIND,
    TIMING_NAMES,
    journaled_count,
    journaled_numbers,
    journaled_timings,
)
from ciq_build.state.journal import HEADER_KIND, RUN_KIND, Journal


@dataclass(frozen=True)
class JournalEntry:
    """One journaled evaluation, as the report shows it: every line, each field as written.

    Not the evaluation record (ciq_build.search.evaluation), which a line with
    no ``ok``, an unknown cause or controls a compiler refuses cannot be: a
    report shows any journal, an edited one too, and says what it holds.
    The fields both read alike (metrics, timings, runs) are read by the record's readers.
    """

    index: int  # 0-based, in the order evaluations finished (a re-journaled key keeps its first place)
    generation: int
    key: str
    ok: bool
    cause: str | None
    environmental: bool
    message: str
    scores: tuple[float, ...] | None  # one per objective, when ok
    metrics: dict[str, float]
    params: dict[str, Any]
    flags: tuple[str, ...]
    defines: dict[str, str]
    acf: str | None  # the ACF file the candidate applied, if any
    timings: dict[str, float]
    seconds: float  # the whole evaluation's wall time
    finished: str  # the journal's timestamp, as written
    elapsed_s: float  # seconds from the start of its run's first evaluation to the end of this one
    worker: str = ""  # where it ran when not on this machine (a Ray slot and its host:pid)
    runs: int = 0  # benchmark runs it made (fewer when racing stopped it)
    raced: bool = False  # stopped early by racing: measured, never pinned over a full measurement
    same_code_as: str = ""  # the key of the earlier evaluation whose machine code, so measurement, it took
    search: int = 1  # the search (1-based, in journal order) that journaled it
    run: int = 1  # the `tune` run (1-based, in journal order) that journaled it; `elapsed_s` counts from its start

    @property
    def is_baseline(self) -> bool:
        """The compiler's defaults: no flags, no defines, no ACF."""
        return not self.flags and not self.defines and self.acf is None


@dataclass(frozen=True)
class Remeasure:
    """The winner re-measured against the baseline, interleaved, before it was pinned."""

    metric: str
    baseline: tuple[float, ...]
    winner: tuple[float, ...]
    verdict: str  # the driver's explanation, as recorded
    p_value: float  # one-sided Mann-Whitney U, recomputed from the recorded samples
    baseline_median: float
    winner_median: float
    baseline_iqr: float
    winner_iqr: float
    objective: Objective | None = None  # the shown objective whose metric it is (its rate_unit: a time read from a rate)


@dataclass(frozen=True)
class SearchInfo:
    """One search in a journal: what one header started (a tune whose settings differed from the last one's)."""

    number: int  # 1-based, in journal order
    objectives: tuple[Objective, ...]
    journaled: int  # evaluations its own lines hold
    sizes: tuple[str, ...] = ()  # its benchmark's problem sizes (ARGS_SETS), in their order
    architecture: str = ""  # the one architecture it tuned (tune --architecture), "" for all the build's


@dataclass
class TuneHistory:
    target: str
    journal_path: Path
    objectives: list[Objective]
    evaluations: list[JournalEntry]
    record: PinnedRecord | None = None
    record_path: Path | None = None
    skipped_lines: list[tuple[int, str]] = field(default_factory=list)
    searches: list[SearchInfo] = field(default_factory=list)
    search: int = 1  # the search shown (its objectives are `objectives`)
    from_record: bool = False  # no journal: what the pinned record holds (its baseline and winner) is all there is
    run_starts: dict[int, str] = field(default_factory=dict)  # run number -> when it began, as journaled ("": unknown)
    other_journals: list[Path] = field(default_factory=list)  # the target's other tunes' (other architectures)

    @property
    def runs(self) -> list[int]:
        """The runs of `tune` that journaled the evaluations shown, in order (a resume is a run of its own)."""
        return sorted({e.run for e in self.evaluations})

    def objectives_of(self, evaluation: JournalEntry) -> tuple[Objective, ...]:
        """The objectives `evaluation`'s scores are in: the shown search's, or (export) its own search's."""
        if self.from_record or evaluation.search == self.search or not self.searches:
            return tuple(self.objectives)
        return self.searches[evaluation.search - 1].objectives

    # -- the points that matter -------------------------------------------------

    @property
    def baseline(self) -> JournalEntry | None:
        return next((e for e in reversed(self.evaluations) if e.is_baseline and e.ok), None)

    @property
    def pinned_controls(self) -> Controls | None:
        """The controls the record pins for what the shown search tuned: its architecture's entry (tune
        --architecture), else the record's own; None without a record."""
        if self.record is None:
            return None
        architecture = self.searches[self.search - 1].architecture if self.searches else ""
        return self.record.controls_for(architecture) if architecture else self.record.controls

    @property
    def pinned_provenance(self) -> dict[str, Any]:
        """The provenance of `pinned_controls`: its architecture's entry's, else the record's."""
        if self.record is None:
            return {}
        architecture = self.searches[self.search - 1].architecture if self.searches else ""
        entry = self.record.per_architecture.get(architecture) if architecture else None
        return entry.provenance if entry is not None else self.record.provenance

    @property
    def winner(self) -> JournalEntry | None:
        """The pinned record's controls among the evaluations (None without a record).

        A minimal pin (ciq_build.tune.minimize) lacks the controls that changed
        nothing: its evaluation is the one with the search parameters the record names."""
        if self.record is None:
            return None
        if [(o.name, o.direction) for o in self.record.objectives] != [(o.name, o.direction)
                                                                       for o in self.objectives]:
            return None  # pinned by a search with other objectives: not this one's winner
        controls = self.pinned_controls
        assert controls is not None
        acf_name = Path(controls.acf.path).name if controls.acf is not None else None
        wanted = (tuple(controls.flags), tuple(controls.defines), acf_name)
        for evaluation in reversed(self.evaluations):
            acf = Path(evaluation.acf).name if evaluation.acf else None
            if evaluation.ok and (evaluation.flags, tuple(sorted(evaluation.defines.items())), acf) == wanted:
                return evaluation
        searched = self.pinned_provenance.get("winner_params")
        if not self.pinned_provenance.get("dropped_controls") or not isinstance(searched, dict):
            return None
        for evaluation in reversed(self.evaluations):
            acf = Path(evaluation.acf).name if evaluation.acf else None
            if (evaluation.ok and evaluation.params == searched and set(controls.flags) <= set(evaluation.flags)
                    and set(controls.defines) <= set(evaluation.defines.items()) and acf_name in (None, acf)):
                return evaluation  # what was searched, of which the pin keeps a part
        return None

    @property
    def scored(self) -> list[JournalEntry]:
        return [e for e in self.evaluations if e.ok and e.scores is not None]

    @property
    def failures(self) -> dict[str, int]:
        """Failed evaluations by cause, most frequent first."""
        counts: dict[str, int] = {}
        for e in self.evaluations:
            if not e.ok:
                counts[e.cause or "error"] = counts.get(e.cause or "error", 0) + 1
        return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))

    @property
    def generations(self) -> list[int]:
        return sorted({e.generation for e in self.evaluations})

    # -- derived series -----------------------------------------------------------

    def best_so_far(self, objective: int = 0) -> list[tuple[JournalEntry, float]]:
        """After each scored evaluation, the best value of `objective` seen up to it."""
        direction = self.objectives[objective].direction
        best = math.nan
        series = []
        for e in self.scored:
            value = e.scores[objective]  # type: ignore[index]
            if math.isfinite(value) and (math.isnan(best) or (value < best if direction == "min" else value > best)):
                best = value
            series.append((e, best))
        return series

    def relative(self, evaluation: JournalEntry, objective: int) -> float | None:
        """`evaluation`'s score over the baseline's on `objective` (1.0: the same); None without a baseline > 0."""
        base = self.baseline
        if base is None or base.scores is None or evaluation.scores is None:
            return None
        reference = base.scores[objective]
        if reference == 0 or not math.isfinite(reference):
            return None
        return evaluation.scores[objective] / reference

    def pareto_front(self, first: int = 0, second: int = 1) -> list[JournalEntry]:
        """The scored evaluations no other one beats on both objectives, along the first."""
        points = [e for e in self.scored if all(math.isfinite(s) for s in e.scores)]  # type: ignore[union-attr]
        if not points:
            return []
        directions = [self.objectives[first].direction, self.objectives[second].direction]
        pairs = [(e.scores[first], e.scores[second]) for e in points]  # type: ignore[index]
        front = [points[i] for i in non_dominated(pairs, directions)]
        return sorted(front, key=lambda e: (e.scores[first], e.scores[second]))  # type: ignore[index]

    def parameters(self) -> list[str]:
        """The search parameters the scored evaluations set, by name."""
        return sorted({name for e in self.scored for name in e.params})

    def _scored_points(self, objective: int) -> list[tuple[dict[str, Any], float]]:
        """(search parameters, score) of each scored evaluation with a finite score on `objective`."""
        return [(e.params, e.scores[objective]) for e in self.scored  # type: ignore[index]
                if math.isfinite(e.scores[objective])]  # type: ignore[index]

    def importance(self, objective: int = 0) -> list[Importance]:
        """How much of `objective`'s variance each search parameter explains on its own, most first
        (reports.importance.parameter_importance)."""
        return parameter_importance(self._scored_points(objective), self.parameters())

    def interactions(self, objective: int = 0, top: int = 5, min_per_cell: float = MIN_PER_CELL) -> list[Interaction]:
        """The `top` pairs of search parameters whose values together explain most of `objective`'s variance
        beyond each alone, most first (reports.importance.parameter_interactions)."""
        return parameter_interactions(self._scored_points(objective), self.parameters(), top, min_per_cell)

    # -- several problem sizes (ARGS_SETS) ------------------------------------------

    def sizes(self) -> dict[str, list[str]]:
        """Per objective measured on several sizes (ARGS_SETS), its sizes in the order run; {} for one size."""
        base = self.baseline
        if base is None:
            return {}
        order = self.searches[self.search - 1].sizes if self.searches else ()
        if not order and self.record is not None:
            order = tuple(str(s) for s in _list(self.record.provenance.get("sizes")))
        found = {o.spec: sizes_of(base.metrics, metric_key(o), order) for o in self.objectives}
        return {spec: sizes for spec, sizes in found.items() if sizes}

    def size_ratios(self, evaluation: JournalEntry) -> dict[str, dict[str, float]]:
        """Per objective measured on several sizes, each size's ratio `evaluation` / the defaults."""
        base = self.baseline
        if base is None:
            return {}
        by_spec = {o.spec: o for o in self.objectives}
        return {spec: size_ratios(evaluation.metrics, base.metrics, metric_key(by_spec[spec]), sizes)
                for spec, sizes in self.sizes().items()}

    def size_candidates(self, top: int = 5) -> list[tuple[JournalEntry, str]]:
        """What the per-size view shows: the pinned winner, then the Pareto front (several objectives) or
        the `top` best on the first objective, each once, with its role."""
        shown: list[tuple[JournalEntry, str]] = []
        if self.winner is not None:
            shown.append((self.winner, "pinned"))
        if len(self.objectives) >= 2:
            others = [(e, "Pareto front") for e in self.pareto_front()]
        else:
            sign = 1.0 if self.objectives[0].direction == "min" else -1.0
            ranked = sorted((e for e in self.scored if not e.is_baseline and math.isfinite(e.scores[0])),  # type: ignore[index]
                            key=lambda e: sign * e.scores[0])  # type: ignore[index]
            others = [(e, f"top {top}") for e in ranked[:top]]
        keys = {e.key for e, _ in shown}
        shown += [(e, role) for e, role in others if e.key not in keys and not e.is_baseline]
        return shown

    def time_spent(self) -> dict[str, float]:
        """Seconds compiling, benchmarking and waiting for a GPU, over every journaled evaluation."""
        return {name: sum(e.timings.get(name, 0.0) for e in self.evaluations) for name in TIMING_NAMES}

    def remeasure(self) -> Remeasure | None:
        """The record's re-measure of the winner against the baseline (timed objectives only)."""
        if self.record is None:
            return None
        samples = self.record.provenance.get("remeasured")
        if not isinstance(samples, dict) or not samples.get("baseline") or not samples.get("winner"):
            return None
        try:
            base = tuple(float(v) for v in samples["baseline"])
            win = tuple(float(v) for v in samples["winner"])
        except (TypeError, ValueError):
            return None
        metric = str(samples.get("metric", ""))
        direction = next((o.direction for o in self.record.objectives
                          if metric_key(parse_objective(o.name)) == metric), "min")
        verdict = beats_baseline(base, win, direction)  # type: ignore[arg-type]
        objective = next((o for o in self.objectives if metric_key(o) == metric), None)
        return Remeasure(metric=metric, baseline=base, winner=win, verdict=str(samples.get("verdict", "")),
                         p_value=verdict.p_value, baseline_median=_median(base), winner_median=_median(win),
                         baseline_iqr=_iqr(base), winner_iqr=_iqr(win), objective=objective)


def _median(values: tuple[float, ...]) -> float:
    return float(np.median(values))


def _iqr(values: tuple[float, ...]) -> float:
    """75th - 25th percentile, linearly interpolated: the spread the tune's verdict uses."""
    q25, q75 = np.percentile(values, [25, 75])
    return float(q75 - q25)


# -- reading -----------------------------------------------------------------------


def load_history(target: str, build_dir: Path, source_dir: Path | None = None, pin_file: Path | None = None,
                 *, search: int | None = None, every_search: bool = False, command: str = "report",
                 architecture: str | None = None) -> TuneHistory:
    """The history of `target`'s tunes in `build_dir`, as one search saw it; ManifestError when never tuned there.

    A journal holds one search per header (a tune whose settings, objectives among them, differed from the
    last one's). `search` picks one (1-based; None: the latest): its evaluations, and those of the searches
    before it that its objectives can score from their metrics, as the tune reuses them - each in that
    search's objectives, never another's. `every_search` (export): every journaled evaluation once per
    search that journaled it, each scored as its own search was. With no journal but a pinned record, the
    record's baseline and winner are the history (`from_record`).
    """
    path = chosen_journal(build_dir, target, architecture)  # a tune --architecture ARCH journals apart
    journal = Journal(path)
    records = journal.records()
    if pin_file is None:
        try:
            pin_file = pin_file_for(target, build_dir, source_dir)
        except CiqError:
            pin_file = None  # no manifest to say where: a report of the journal alone
    record = read_record(pin_file) if pin_file is not None and pin_file.is_file() else None
    segments = _searches(records)
    if not any(evaluations for _, evaluations in segments):
        if record is not None and pin_file is not None:
            return _record_history(target, path, record, pin_file)
        state = "has no evaluations yet" if path.exists() else "does not exist"
        raise ManifestError(
            f"no tune of {target} to {command}: its journal {path} {state}, and no pinned record says what a tune "
            f"found. Run `python -m ciq_build tune {target} -B {build_dir}` first (the {command} reads what it "
            "journals).")
    searches = [SearchInfo(number, tuple(_objectives(header, record, evaluations)), len(evaluations),
                           tuple(str(s) for s in _list((header or {}).get("sizes"))),
                           str((header or {}).get("architecture") or ""))
                for number, (header, evaluations) in enumerate(segments, start=1)]
    shown = len(searches) if search is None else search
    if not 1 <= shown <= len(searches):
        raise ConfigError(f"--search {search}: the journal {path} holds {len(searches)} search(es); pick one of "
                          f"1..{len(searches)} (the latest, {len(searches)}, when --search is left out)")
    tagged = [(number, line) for number, (_, evaluations) in enumerate(segments, start=1) for line in evaluations
              if every_search or number <= shown]
    run_of, run_starts = _runs(records)
    entries = _evaluations(tagged, searches, None if every_search else shown, run_of)
    return TuneHistory(target=target, journal_path=path, objectives=list(searches[shown - 1].objectives),
                       evaluations=entries, record=record, record_path=pin_file if record is not None else None,
                       skipped_lines=list(journal.skipped), searches=searches, search=shown, run_starts=run_starts,
                       other_journals=[p for p in target_journals(build_dir, target) if p != path])


def _runs(records: list[dict[str, Any]]) -> tuple[dict[int, int], dict[int, str]]:
    """Which `tune` run journaled each evaluation line (by the line's id), and when each run began.

    A run opens the journal with a run line, after a header where its settings are new; a header with no run
    line after it (journals older than run lines) begins a run too. Lines before either are run 1's."""
    run_of: dict[int, int] = {}
    starts: dict[int, str] = {}
    run = 0
    for i, line in enumerate(records):
        kind = line.get("kind")
        dates_the_header = kind == RUN_KIND and i > 0 and records[i - 1].get("kind") == HEADER_KIND
        if kind == HEADER_KIND or (kind == RUN_KIND and not dates_the_header):
            run += 1
            starts[run] = ""
        if kind == RUN_KIND and isinstance(line.get("time"), str):
            starts[max(run, 1)] = line["time"]
        elif kind == EVALUATION_KIND:
            run_of[id(line)] = max(run, 1)
            starts.setdefault(max(run, 1), "")
    return run_of, starts


def _searches(records: list[dict[str, Any]]) -> list[tuple[dict[str, Any] | None, list[dict[str, Any]]]]:
    """The journal cut at each header: (the header, the evaluation lines after it); lines before any header first."""
    segments: list[tuple[dict[str, Any] | None, list[dict[str, Any]]]] = []
    for line in records:
        if line.get("kind") == HEADER_KIND:
            segments.append((line, []))
        elif line.get("kind") == EVALUATION_KIND:
            if not segments:
                segments.append((None, []))  # a journal older than headers
            segments[-1][1].append(line)
    return segments


def _record_objectives(record: PinnedRecord) -> list[Objective]:
    """The objectives a pinned record's scores are in, `time` shown as the rate it was read from (if one)."""
    objectives = [parse_objective(o.name if o.direction == "min" else f"max:{o.name}") for o in record.objectives]
    return list(with_rate(objectives, rate_unit_of(record, "time")))


def _record_history(target: str, path: Path, record: PinnedRecord, pin_file: Path) -> TuneHistory:
    """What a pinned record alone says (its journal deleted): the objectives, the baseline and the winner."""
    objectives = _record_objectives(record)
    controls = record.controls
    points = [("baseline", (), {}, None, record.baseline),
              ("winner", tuple(controls.flags), dict(controls.defines),
               controls.acf.path.name if controls.acf is not None else None, record.winner)]
    evaluations: list[JournalEntry] = []
    for key, flags, defines, acf, summary in points:
        if summary is None or len(summary.scores) != len(objectives):
            continue
        scores = tuple(_number(v, math.nan) for v in summary.scores)
        evaluations.append(JournalEntry(
            index=len(evaluations), generation=0, key=key, ok=True, cause=None, environmental=False,
            message="from the pinned record (the journal is gone)", scores=scores,
            metrics={metric_key(o): s for o, s in zip(objectives, scores)}, params={}, flags=flags,
            defines={str(k): str(v) for k, v in defines.items()}, acf=acf, timings={}, seconds=0.0, finished="",
            elapsed_s=math.nan))
    return TuneHistory(target=target, journal_path=path, objectives=objectives, evaluations=evaluations,
                       record=record, record_path=pin_file, from_record=True)


def _objectives(header: dict[str, Any] | None, record: PinnedRecord | None,
                evaluations: list[dict[str, Any]]) -> list[Objective]:
    """The objectives a search's scores are in: its header's, else the record's, else unnamed ones."""
    specs = header.get("objectives") if header else None
    if isinstance(specs, list) and specs:
        try:
            return list(with_rate([parse_objective(spec) for spec in specs], shown_rate((header or {}).get(RATE_UNIT))))
        except (CiqError, TypeError, AttributeError):
            pass
    if record is not None and record.objectives:
        return _record_objectives(record)
    width = max((len(r["scores"]) for r in evaluations if isinstance(r.get("scores"), list)), default=1)
    return [Objective(f"objective {i + 1}", "min", "static") for i in range(width)]


def _evaluations(tagged: list[tuple[int, dict[str, Any]]], searches: list[SearchInfo],
                 shown: int | None, run_of: dict[int, int]) -> list[JournalEntry]:
    """One entry per key (per search and key with `shown` None): a key journaled again replaces the earlier one.

    Scores are as journaled by the search shown (or, `shown` None, by each line's own search); an earlier
    search's evaluation is scored in the shown search's objectives from its metrics, and left out where
    they lack one (the tune would measure it again). Wall time counts from the start of each run's first
    evaluation (`run_of`: the run of each line, by id): a resume days later starts at 0 again.
    """
    by_key: dict[Any, tuple[int, int, dict[str, Any]]] = {}  # identity -> (search, run, the line)
    order: list[Any] = []
    for position, (number, record) in enumerate(tagged):
        journaled = record.get("key")
        key = journaled if isinstance(journaled, str) else f"#{position}"
        identity = key if shown is not None else (number, key)
        if identity not in by_key:
            order.append(identity)
        by_key[identity] = (number, run_of.get(id(record), 1), {**record, "key": key})
    origins: dict[int, float] = {}  # run -> the start of its first evaluation
    for _, line in tagged:
        when = _timestamp(line.get("time"))
        if when is not None:
            run = run_of.get(id(line), 1)
            origins[run] = min(origins.get(run, math.inf), when - _number(line.get("seconds")))
    result: list[JournalEntry] = []
    for identity in order:
        number, run, record = by_key[identity]
        origin = origins.get(run)
        objectives = searches[(shown or number) - 1].objectives
        scores = record.get("scores")
        if shown is not None and number != shown and record.get("ok") is True:
            metrics = journaled_numbers(record.get("metrics"))
            rescored = [metrics.get(metric_key(o)) for o in objectives]
            if any(value is None for value in rescored):
                continue  # measured for other objectives only
            scores = rescored
        ok = record.get("ok") is True and isinstance(scores, list) and len(scores) == len(objectives)
        when = _timestamp(record.get("time"))
        controls = _mapping(record.get("controls"))
        acf = controls.get("acf")
        result.append(JournalEntry(
            index=len(result),
            generation=_count(record.get("generation")),
            key=record["key"],
            ok=ok,
            cause=None if ok else (str(record.get("cause") or "error")),
            environmental=record.get("environmental") is True,
            message=str(record.get("message") or ""),
            scores=tuple(_number(s, math.nan) for s in scores) if ok else None,  # type: ignore[union-attr]
            metrics=journaled_numbers(record.get("metrics")),
            params=_mapping(record.get("params")),
            flags=tuple(str(f) for f in _list(controls.get("flags"))),
            defines={str(k): str(v) for k, v in _mapping(controls.get("defines")).items()},
            acf=str(acf["file"]) if isinstance(acf, dict) and acf.get("file") else None,
            timings=journaled_timings(record),
            seconds=_number(record.get("seconds")),
            finished=str(record.get("time") or ""),
            elapsed_s=(when - origin) if when is not None and origin is not None else math.nan,
            worker=str(record.get("worker") or ""),
            runs=journaled_count(record.get("runs")),
            raced=record.get("raced") is True,
            same_code_as=str(record.get("same_code_as") or ""),
            search=number,
            run=run,
        ))
    return result


def _timestamp(value: Any) -> float | None:
    """Seconds since the epoch of a journal "time" (``%Y-%m-%dT%H:%M:%S%z``), or None."""
    if not isinstance(value, str):
        return None
    try:
        return datetime.strptime(value, "%Y-%m-%dT%H:%M:%S%z").timestamp()
    except ValueError:
        return None


def _number(value: Any, default: float = 0.0) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return default
    return float(value)


def _count(value: Any) -> int:
    """A whole number of the journal (a generation): 0 for anything else, NaN and Infinity included (JSON as
    Python reads it takes them)."""
    number = _number(value)
    return int(number) if math.isfinite(number) else 0


# A journal is a file anyone could have edited: a field of the wrong type reads as empty.
def _mapping(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else []

