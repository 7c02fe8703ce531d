"""The journal as a cache of evaluations: the cache key, which journaled records may be reused, and writing them.

Same sources, toolchain, benchmark and controls => same measurement, so an
evaluation is keyed by a hash of exactly those (`cache_key`). A journaled
record is reused on resume unless it cannot be trusted: unreadable, failed for
a reason outside the candidate (the machine's: full disk, a foreign kill, a
hung build tool), or measured without a value for one of today's objectives.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ciq_build.compiler.controls import Controls
from ciq_build.compiler.toolchain import Toolchain
from ciq_build.core.causes import Cause
from ciq_build.core.metric_unit import RATE_UNIT
from ciq_build.core.objectives import Objective
from ciq_build.errors import DiskFullError
from ciq_build.project import environment
from ciq_build.project.manifest import Manifest, benchmark_sizes
from ciq_build.search.base import Proposal
from ciq_build.search.evaluation import EVALUATION_KIND, JOURNALED_ID, Evaluation
from ciq_build.state.journal import KEPT_BACKUPS, RUN_KIND, Journal
from ciq_build.tune.scores import objective_values

# A journal record naming files the build writes into the source tree (ciq_build.project.sources).
SOURCE_OUTPUTS_KIND = "source_outputs"
GPU_TIME_KIND = "gpu_time"  # where a runtime tune's GPU time went (ciq_build.tune.gpu_time), one per tune


# The parts of `cache_key` besides the controls and the sources, in the order a resume line names them: the one
# list of them, which `keyed_parts` fills and the resume line names where the journal does not say which changed
# (a list of its own there omitted "architectures").
KEY_PARTS = ("toolchain", "architectures", "nvcc flags", "per-block declarations", "benchmark")


def keyed_parts(manifest: Manifest, toolchain: Toolchain) -> dict[str, dict[str, Any]]:
    """What `cache_key` holds besides the controls and the sources, part by part as a resume line names them: each
    part the key's own entries (their names as the key has them, so the key is what it was before the parts)."""
    bench = manifest.benchmark
    parts: dict[str, dict[str, Any]] = {name: {} for name in KEY_PARTS}
    parts["toolchain"].update(toolchain=toolchain.version,
                              ptxas=toolchain.ptxas_version,  # a ptxas swapped into a toolkit changes the code too
                              nvcc=str(toolchain.nvcc))
    parts["architectures"]["architectures"] = manifest.toolchain.architectures
    parts["benchmark"]["benchmark"] = [str(bench.path), *bench.args] if bench else None
    if manifest.cuda_flags:
        # The target's own nvcc flags (CMAKE_CUDA_FLAGS, its compile options) are no source file: a tune after
        # `cmake -DCMAKE_CUDA_FLAGS=-Xptxas=-O0` reused the journal's figures of other code (cuda-api-wrappers'
        # trial: "resuming: 6", then every one "not what a fresh build measures"). Absent without any, so those
        # keys stay as they were.
        parts["nvcc flags"]["cuda_flags"] = list(manifest.cuda_flags)
    if manifest.metric_regex:
        # What the benchmark's output means; absent for the line protocol, so its keys stay as they were.
        parts["benchmark"]["metric"] = [manifest.metric_regex, manifest.metric_unit]
    if bench and bench.args_sets:
        # Other sizes, or another SCORE, measure something else; absent for one size, so its keys stay.
        parts["benchmark"]["sizes"] = [[name, *args] for name, args in bench.args_sets] + [bench.score]
    if manifest.threads_per_block or manifest.dynamic_shared_memory:
        # What a block takes at launch, which the occupancy counts: a journal of the occupancy without 64 KB of
        # DYNAMIC_SHARED_MEMORY was taken as its figures once declared. Absent where neither is, so those keys stay.
        parts["per-block declarations"]["per_block"] = [list(manifest.threads_per_block),
                                                        list(manifest.dynamic_shared_memory)]
    return parts


def cache_key(manifest: Manifest, toolchain: Toolchain, controls: Controls, sources: str) -> str:
    """What a measurement depends on besides the controls: the target's real inputs (`sources`, a digest)."""
    digest = hashlib.sha256(sources.encode())
    payload: dict[str, Any] = {
        "flags": list(controls.flags),
        "defines": [list(d) for d in controls.defines],
        "acf": controls.acf.sha256 if controls.acf else None,
    }
    for entries in keyed_parts(manifest, toolchain).values():
        payload.update(entries)
    digest.update(json.dumps(payload, sort_keys=True).encode())
    return digest.hexdigest()


# -- what the journaled evaluations were made with -----------------------------------

# A journal record of what the evaluations after it were made with, part by part (`made_with`), so that a later
# tune whose key differs can say which part changed: adding THREADS_PER_BLOCK to CMakeLists.txt made 24 journaled
# evaluations (25 minutes of compiles) another sources', and the tune said only "other sources, toolchain or
# benchmark" (flash_attention_inference's trial).
MADE_WITH_KIND = "made_with"
SOURCES_PART = "sources"
_SHOWN_FILES = 3


def part_digests(manifest: Manifest, toolchain: Toolchain) -> dict[str, str]:
    """A short digest of each of `keyed_parts` (what a journal records of it)."""
    return {name: hashlib.sha256(json.dumps(entries, sort_keys=True).encode()).hexdigest()[:16]
            for name, entries in keyed_parts(manifest, toolchain).items()}


def made_with(parts: Mapping[str, str], files: Mapping[str, str]) -> dict[str, Any]:
    """The journal record of `part_digests` and of each source file's digest (`files`: its name -> digest)."""
    return {"kind": MADE_WITH_KIND, "parts": dict(parts), SOURCES_PART: dict(files)}


def what_changed(then: Mapping[str, Any], now: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """(the parts, the source files) that differ between two `made_with` records; a part one of them does not
    record (another version's) is not compared."""
    parts_then, parts_now = then.get("parts") or {}, now.get("parts") or {}
    files_then, files_now = then.get(SOURCES_PART) or {}, now.get(SOURCES_PART) or {}
    files = sorted(name for name in set(files_then) | set(files_now) if files_then.get(name) != files_now.get(name))
    changed = [name for name in parts_now if name in parts_then and parts_then[name] != parts_now[name]]
    return ([SOURCES_PART] if files else []) + changed, files


def _listed(names: Sequence[str], last: str = "and") -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + f" {last} " + names[-1]


def _unrecorded() -> str:
    """What the key may have changed in where the journal does not say which: "other sources, toolchain, ... or
    benchmark" (`KEY_PARTS`)."""
    return "other " + _listed([SOURCES_PART, *KEY_PARTS], "or")


def changed_text(changed: Sequence[str], files: Sequence[str], parts: Sequence[str]) -> str:
    """How evaluations made with other `changed` parts (of `parts`; `files`: the sources that differ) are said:
    "were made with another CMakeLists.txt (sources), the same toolchain, ... and benchmark"."""
    def another(part: str) -> str:
        if part != SOURCES_PART or not files:
            return f"{'other' if part.endswith('s') else 'another'} {part}"  # other nvcc flags, another toolchain
        more = f" and {len(files) - _SHOWN_FILES} more files" if len(files) > _SHOWN_FILES else ""
        return f"another {'/'.join(Path(name).name for name in files[:_SHOWN_FILES])}{more} (sources)"

    same = [part for part in [SOURCES_PART, *parts] if part not in changed]
    return "were made with " + ", ".join(another(part) for part in changed) + (
        f", the same {_listed(same)}" if same else "")


# -- reading journaled evaluations ------------------------------------------------------


def read_evaluation(record: dict[str, Any], proposal: Proposal, controls: Controls, key: str,
                    objectives: Sequence[Objective], *, cached: bool = True) -> Evaluation | None:
    """A journaled evaluation as it was, for `proposal`, or None when it is unreadable or scores none of `objectives`.

    The scores are today's objectives' values of the journaled metrics (the
    objectives may have changed since); a `cached` one took no time and ran on
    no worker this run.
    """
    journaled = Evaluation.from_journal(record)
    if journaled is None:
        return None
    scores = objective_values(objectives, journaled.metrics) if journaled.ok else None
    if journaled.ok and scores is None:
        return None  # measured, but not for today's objectives: measure again
    return replace(journaled, key=key, proposal=proposal, controls=controls, scores=scores, cached=cached,
                   seconds=0.0 if cached else journaled.seconds, worker="")


def from_journal(record: dict[str, Any], proposal: Proposal, controls: Controls, key: str,
                 objectives: Sequence[Objective]) -> Evaluation | None:
    """A journaled evaluation to reuse, or None when the line cannot be trusted (it is then re-run)."""
    if record.get("ok") is False and journaled_environmental(record):
        return None  # the machine's failure, not the candidate's: run it again
    return read_evaluation(record, proposal, controls, key, objectives)


def journaled_environmental(record: dict[str, Any]) -> bool:
    """Whether a journaled failure was the machine's: marked so, or (older journals) says so."""
    cause = record.get("cause")
    if record.get("environmental") is True or (isinstance(cause, str) and Cause.read(cause).environmental):
        return True
    # Journals written before environmental failures were told apart cached them as
    # compile_failed / bench_signal; their messages still say what happened.
    message = record.get("message")
    return isinstance(message, str) and (environment.says_disk_full(message) or environment.says_killed(message))


# -- the cache -------------------------------------------------------------------------


def _journaled(entries: Mapping[str, dict[str, Any]], objectives: Sequence[Objective]) -> list[Evaluation]:
    """The journaled evaluations of `entries` (key -> record) that measured `objectives`, their proposal unknown."""
    found = (from_journal(record, Proposal(id=JOURNALED_ID, generation=0, params={}), Controls(), key, objectives)
             for key, record in entries.items())
    return [evaluated for evaluated in found if evaluated is not None]


def _of_today(record: dict[str, Any], key: str, key_of: Callable[[Controls], str]) -> bool:
    """Whether the journaled `record` (under `key`) measured today's sources, toolchain and benchmark: its
    configuration's key today is the one it was journaled under. A record whose controls cannot be read is
    counted as today's (its lookup is what decides)."""
    journaled = Evaluation.from_journal(record)
    return journaled is None or key_of(journaled.controls) == key


class EvaluationCache:
    """The journal of one target, read as a cache of evaluations and appended as evaluations finish.

    Nothing is read or written until `open`.
    """

    def __init__(self, journal: Journal, objectives: Sequence[Objective], say: Callable[[str], None]) -> None:
        self.journal = journal
        self.objectives = list(objectives)
        self.say = say
        self.entries: dict[str, dict[str, Any]] = {}  # key -> the journaled record to reuse
        self.source_outputs: set[Path] = set()  # files the build writes into the source tree, as journaled
        self.measured_this_run: set[str] = set()  # keys this run evaluated (a later hit is a repeat, not a resume)
        self.checked: set[str] = set()  # journaled keys whose static figures a fresh build of this run checked
        self.made_with: dict[str, dict[str, Any]] = {}  # journaled key -> what it was made with, where recorded
        self._latest_made_with: dict[str, Any] | None = None  # the journal's newest MADE_WITH_KIND record

    @property
    def path(self) -> Path:
        return self.journal.path

    def __len__(self) -> int:
        return len(self.entries)

    def open(self, header: dict[str, Any], *, fresh: bool = False, said_later: bool = False) -> None:
        """Read what the journal holds for this target (after its header for this search is written). `said_later`:
        what there is to resume from is said by `say_resuming`, once the sources are fingerprinted."""
        start = self.journal.begin(header, fresh=fresh)
        # Where this run's evaluations begin: a report keeps each run's wall time apart (a resume is another run).
        self.journal.append({"kind": RUN_KIND, "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "pid": os.getpid()})
        if start.backup is not None:
            kept = f"; only the newest {KEPT_BACKUPS} such backups are kept" if start.pruned else ""
            removed = f" (removed the older {', '.join(p.name for p in start.pruned)})" if start.pruned else ""
            self.say(f"--fresh: the old journal is now {start.backup}{kept}{removed}")
        retried = set()
        for record in start.records:
            if record.get("kind") == EVALUATION_KIND and isinstance(record.get("key"), str):
                if record.get("ok") is False and journaled_environmental(record):
                    retried.add(record["key"])  # never a cached result; never hides one either
                    continue
                self.entries[record["key"]] = record
                if self._latest_made_with is not None:
                    self.made_with[record["key"]] = self._latest_made_with
            elif record.get("kind") == MADE_WITH_KIND and isinstance(record.get("parts"), dict):
                self._latest_made_with = record
            elif record.get("kind") == SOURCE_OUTPUTS_KIND and isinstance(record.get("paths"), list):
                self.source_outputs |= {Path(p) for p in record["paths"] if isinstance(p, str)}
        for line, reason in self.journal.skipped:
            self.say(f"journal line {line} skipped ({reason})")
        if start.another_search and (not self.entries or self.journaled(self.objectives)):
            # Evaluations are keyed by what determines them (sources, toolchain,
            # controls, benchmark), so another search's results stay valid: keep them.
            self.say("the journal holds another search (settings changed); its measurements are reused "
                     "where sources, toolchain and controls match (--fresh to start over)")
        self._another_search = start.another_search
        if self.entries and not said_later:
            self.say(self._resuming())
        retried -= set(self.entries)
        if retried:
            self.say(f"{len(retried)} evaluation(s) that failed for environmental reasons (full disk, killed, "
                     "hung build tool) are run again")

    @property
    def resuming(self) -> bool:
        """Whether the journal holds evaluations of this tune's objectives to resume from."""
        return bool(self.journaled(self.objectives))

    def say_resuming(self, key_of: Callable[[Controls], str], now: Mapping[str, Any] | None = None) -> None:
        """Say what the journal holds to resume from, counting only the evaluations of today's sources, toolchain
        and benchmark (`key_of`: today's key of a configuration; the others are never looked up), and which part
        of those the others were made with another of, where the journal recorded it (`now`: today's `made_with`).
        A tune after the sources changed said "resuming: 1 finished evaluation(s)" and reused none (the cudamat
        trial's)."""
        if self.entries:
            self.say(self._resuming(key_of, now))

    def record_made_with(self, record: Mapping[str, Any]) -> None:
        """Journal what the evaluations from now on are made with (`made_with`), unless the journal says so last."""
        if self._latest_made_with is not None and {**self._latest_made_with, "time": ""} == {**record, "time": ""}:
            return
        self._latest_made_with = {**record, "time": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        self.journal.append(self._latest_made_with)

    def _changed_since(self, keys: Sequence[str], now: Mapping[str, Any] | None) -> str:
        """What the journaled evaluations of `keys` (none of them today's) were made with another of: the parts and
        files the journal's records tell from `now`'s, or, where it recorded none (older journals), all it may be."""
        if now is None:
            return f"measured {_unrecorded()}, changed since"
        changed: dict[str, None] = {}
        files: dict[str, None] = {}
        for then in {id(self.made_with[k]): self.made_with[k] for k in keys if k in self.made_with}.values():
            parts, names = what_changed(then, now)
            changed.update(dict.fromkeys(parts))
            files.update(dict.fromkeys(names))
        if not changed:  # not recorded, or recorded alike (the key itself changed: another ciq_build)
            return f"measured {_unrecorded()}, changed since"
        order = [SOURCES_PART, *now.get("parts", {})]
        return changed_text(sorted(changed, key=order.index), sorted(files), list(now.get("parts", {})))

    def _resuming(self, key_of: Callable[[Controls], str] | None = None, now: Mapping[str, Any] | None = None) -> str:
        """What the journal holds to resume from: how many evaluations measured today's objectives (a search
        of other objectives may have measured none of them, and those are measured again), of today's sources
        where `key_of` is given. The journal's last search having had other settings is said in the same line
        where nothing is reused (it said "its measurements are reused", then "nothing to resume": miniBUDE, a
        static tune of new objectives)."""
        today = {key: record for key, record in self.entries.items() if key_of is None or _of_today(record, key, key_of)}
        since = self._changed_since([key for key in self.entries if key not in today], now)
        other = (f"; {len(self.entries) - len(today)} more {since}: measured again where proposed"
                 if len(today) < len(self.entries) else "")
        usable, held = len(_journaled(today, self.objectives)), len(today)
        if usable == held and held:
            return f"resuming: {held} finished evaluation(s) in {self.journal.path}" + (f" ({other[2:]})" if other else "")
        names = ", ".join(o.spec for o in self.objectives)
        whose = "the journal holds another search (settings changed), whose" if self._another_search else "the journal's"
        if held == 0:
            return (f"{whose} {len(self.entries)} finished evaluation(s) {since}: kept, not reused (--fresh starts "
                    f"over); nothing to resume from {self.journal.path}")
        if usable == 0:
            return (f"{whose} {held} finished evaluation(s) measured none of this tune's objectives ({names}){other}: "
                    f"nothing to resume from {self.journal.path}")
        return (f"resuming: {usable} finished evaluation(s) in {self.journal.path} ({held - usable} more measured "
                f"none of this tune's objectives, {names}: measured again where proposed{other})")

    def lookup(self, proposal: Proposal, controls: Controls, key: str) -> Evaluation | None:
        """The journaled evaluation of `key` to reuse for `proposal`, or None: evaluate it."""
        record = self.entries.get(key)
        return None if record is None else from_journal(record, proposal, controls, key, self.objectives)

    def has(self, key: str) -> bool:
        """Whether the journal holds a reusable evaluation of `key` (the loop will not build it)."""
        return key in self.entries

    def journaled(self, objectives: Sequence[Objective]) -> list[Evaluation]:
        """Every reusable journaled evaluation (its proposal unknown: JOURNALED_ID), for what later candidates compare with."""
        return _journaled(self.entries, objectives)

    def record(self, evaluated: Evaluation, *, reuse: bool = False) -> None:
        """Journal a finished evaluation, durably; `reuse`: also serve it to later lookups of this run."""
        self.journal.append(evaluated.to_journal())
        self.measured_this_run.add(evaluated.key)
        if reuse:
            self.entries[evaluated.key] = {"ok": evaluated.ok, "metrics": evaluated.metrics}

    def record_environmental(self, evaluated: Evaluation) -> None:
        """Journal a full-disk failure if the disk still takes it (the report counts it; never reused)."""
        try:
            self.record(evaluated)
        except DiskFullError:
            pass

    def record_source_outputs(self, written: set[Path]) -> None:
        """Remember files the build wrote into the source tree (left out of the fingerprint from now on)."""
        self.source_outputs |= written
        self.journal.append({"kind": SOURCE_OUTPUTS_KIND, "paths": sorted(str(p) for p in written),
                             "time": time.strftime("%Y-%m-%dT%H:%M:%S%z")})

    def record_gpu_time(self, figures: dict[str, Any]) -> None:
        """Journal where this tune's GPU time went, from the first benchmark to the pin (ciq_build.tune.gpu_time)."""
        self.journal.append({"kind": GPU_TIME_KIND, **figures, "time": time.strftime("%Y-%m-%dT%H:%M:%S%z")})


def search_header(manifest: Manifest, toolchain: Toolchain, objectives: Sequence[Objective],
                  described: dict[str, Any], repeats: int) -> dict[str, Any]:
    """What identifies a search in the journal: its target, toolchain, objectives, source, repeats, sizes,
    architecture and the rate its time is read from (METRIC's UNIT, where it is one: what the report shows)."""
    return {"target": manifest.target, "toolchain": toolchain.version, "objectives": [o.spec for o in objectives],
            "search": described, "repeats": repeats,
            **({"sizes": sizes} if (sizes := benchmark_sizes(manifest)) else {}),
            **({"architecture": manifest.tune_architecture} if manifest.tune_architecture else {}),
            **({RATE_UNIT: rate} if (rate := next((o.rate_unit for o in objectives if o.rate_unit), "")) else {})}
