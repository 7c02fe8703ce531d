"""The search loop, resume and the winner's choice, in milliseconds: a journal played back by the replay runner.

A first run records a journal with a TEST DOUBLE for building and benchmarking
(`StandInRunner`: a deterministic "measurement" of each candidate's -D values,
where a GPU would time the kernel); every other run plays that journal back
with `ReplayRunner`, through the real loop, the real genetic search, the real
journal cache and the real winner rule.
"""

from __future__ import annotations

import dataclasses
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from ciq_build.compiler.controls import Controls
from ciq_build.core.causes import Cause
from ciq_build.core.objectives import Objective, parse_objectives
from ciq_build.core.params import parse_params
from ciq_build.measure import stopping
from ciq_build.search.base import CandidateSource, Proposal
from ciq_build.search.evaluation import Evaluation
from ciq_build.search.evolution import SearchConfiguration
from ciq_build.search.genetic import GeneticSource
from ciq_build.state.journal import Journal
from ciq_build.tune.cache import MADE_WITH_KIND, EvaluationCache, keyed_parts, made_with
from ciq_build.tune.loop import RunningBest, SearchLoop
from ciq_build.tune.replay import NotInJournal, ReplayRunner, controls_id
from ciq_build.tune.scores import objective_values
from ciq_build.tune.winner import pick_from_front, pick_winner
from support import bare_manifest

SPACE = ["TILE=8,16,32,64", "UNROLL=1,2,4,8", "VEC=1,2,4"]
TIME = parse_objectives(["time"])
BASELINE = Proposal(id=-1, generation=0, params={})


def stand_in_metrics(controls: Controls) -> dict[str, float] | None:
    """TEST DOUBLE for a GPU benchmark: time is best at TILE=32, UNROLL=4, VEC=4; None: it does not compile."""
    d = {name: int(value) for name, value in controls.defines}
    tile, unroll, vec = d.get("TILE", 16), d.get("UNROLL", 1), d.get("VEC", 1)
    if tile == 64 and unroll == 8:
        return None
    return {"time_ms": 10 + abs(tile - 32) / 8 + abs(unroll - 4) * 0.5 + (0 if vec == 4 else 1.0),
            "registers": float(tile * unroll // 4), "gflops": 1000.0 / (1 + tile * unroll)}


class StandInRunner:
    """TEST DOUBLE for building in a scratch tree and benchmarking on a GPU: `stand_in_metrics`."""

    def __init__(self, objectives: Sequence[Objective]) -> None:
        self.objectives = list(objectives)
        self.calls = 0
        self._lock = threading.Lock()

    def evaluate(self, worker: object, proposal: Proposal, controls: Controls, key: str) -> Evaluation:
        with self._lock:
            self.calls += 1
        values = stand_in_metrics(controls)
        if values is None:
            return Evaluation(key, proposal, controls, False, Cause.COMPILE_FAILED, "error: too many registers",
                              {"compile_seconds": 0.1}, {}, None, 0.1)
        scores = objective_values(self.objectives, values)
        return Evaluation(key, proposal, controls, True, None, "", values, {}, scores, 0.1)


def source(seed: int = 0, objectives: Sequence[Objective] = TIME, generations: int = 4, pool_size: int = 8,
           max_evaluations: int | None = None) -> GeneticSource:
    config = SearchConfiguration(generations=generations, pool_size=pool_size, seed=seed,
                                 problem_type=[o.direction for o in objectives], num_objectives=len(objectives),
                                 max_evaluations=max_evaluations)
    return GeneticSource(parse_params(SPACE), config, [o.spec for o in objectives])


class Counting:
    """Wraps a candidate source and counts what the loop asks and tells."""

    def __init__(self, inner: GeneticSource) -> None:
        self.inner = inner
        self.asks = 0
        self.asked: list[int] = []
        self.told: list[tuple[int, tuple[float, ...] | None, str | None]] = []

    def ask(self) -> list[Proposal]:
        self.asks += 1
        proposals = self.inner.ask()
        self.asked += [p.id for p in proposals]
        return proposals

    def tell(self, proposal: Proposal, scores: tuple[float, ...] | None, reason: str | None = None) -> None:
        self.told.append((proposal.id, scores, reason))
        self.inner.tell(proposal, scores, reason)

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()


def opened_cache(path: Path, objectives: Sequence[Objective], said: list[str] | None = None) -> EvaluationCache:
    cache = EvaluationCache(Journal(path), objectives, (said if said is not None else []).append)
    cache.open({"target": "kernels", "objectives": [o.spec for o in objectives]})
    return cache


def baseline_of(runner: Any, objectives: Sequence[Objective], key_of: Any) -> Evaluation:
    evaluated = runner.evaluate(None, BASELINE, Controls(), key_of(Controls()))
    assert isinstance(evaluated, Evaluation)
    return evaluated


def record(tmp_path: Path, objectives: Sequence[Objective] = TIME, seed: int = 0, **config: Any) -> Path:
    """A journal of a whole search with the stand-in runner: what a real tune would have written."""
    path = tmp_path / f"recorded-{seed}-{len(objectives)}.jsonl"
    cache = opened_cache(path, objectives)
    runner = StandInRunner(objectives)
    cache.record(baseline_of(runner, objectives, controls_id))
    SearchLoop(source(seed, objectives, **config), runner, ["worker"], cache, controls_id, objectives).run()
    return path


def replay(recorded: Path, journal: Path, objectives: Sequence[Objective] = TIME, *, seed: int = 0,
           workers: int = 1, budget: int | None = None, pick: str = "knee", **config: Any,
           ) -> tuple[SearchLoop[str], ReplayRunner, Counting, Evaluation | None]:
    """A search replayed from `recorded` into the journal `journal`; the runner has played the baseline first."""
    runner = ReplayRunner(recorded, objectives)
    baseline = baseline_of(runner, objectives, runner.key_of)
    counting = Counting(source(seed, objectives, **config))
    loop = SearchLoop(counting, runner, [f"w{i}" for i in range(workers)], opened_cache(journal, objectives),
                      runner.key_of, objectives, budget=budget)
    loop.run()
    return loop, runner, counting, pick_winner(loop.evaluations, baseline, objectives, pick)


def evaluation_lines(path: Path) -> list[dict[str, Any]]:
    return [r for r in Journal(path).records() if r.get("kind") == "evaluation"]


# -- the loop ---------------------------------------------------------------------------------


def test_the_loop_tells_every_proposal_once_in_the_order_asked_and_journals_each_first(tmp_path: Path) -> None:
    recorded = record(tmp_path)
    loop, runner, counting, winner = replay(recorded, tmp_path / "run.jsonl", workers=3)
    assert counting.asks == 5  # four generations, then [] ends the search
    assert [told[0] for told in counting.told] == counting.asked  # each once, in the order asked
    assert len(loop.evaluations) == len(counting.asked) == 32 and loop.asked == 4
    assert len(runner.played) - 1 == loop.spent == len(evaluation_lines(tmp_path / "run.jsonl"))
    assert winner is not None and winner.ok


def test_the_same_seed_finds_the_same_winner_whatever_the_number_of_workers(tmp_path: Path) -> None:
    recorded = record(tmp_path)
    one = replay(recorded, tmp_path / "one.jsonl", workers=1)
    four = replay(recorded, tmp_path / "four.jsonl", workers=4)
    assert [e.key for e in one[0].evaluations] == [e.key for e in four[0].evaluations]
    assert one[3] is not None and four[3] is not None and one[3].key == four[3].key


def test_the_budget_counts_evaluations_run_and_stops_the_search(tmp_path: Path) -> None:
    recorded = record(tmp_path)
    loop, runner, counting, _ = replay(recorded, tmp_path / "run.jsonl", budget=5, workers=2)
    assert loop.spent == len(runner.played) - 1 == 5
    assert len(evaluation_lines(tmp_path / "run.jsonl")) == 5
    assert len(counting.told) == 5 and counting.asks == 1  # cut inside the first batch; never asked again


def test_the_time_limit_starts_no_candidate_after_the_deadline_and_says_it_ended_the_search(tmp_path: Path) -> None:
    """A clock that is the number of evaluations started (no sleeps: the same on a loaded machine).

    One worker: with two, the loop may hand out a candidate before the worker that took the one before has
    started it (and moved this clock), which made the count 6 now and then on a loaded machine."""
    runner = StandInRunner(TIME)
    journal = tmp_path / "timed.jsonl"
    counting = Counting(source())
    loop = SearchLoop(counting, runner, ["w0"], opened_cache(journal, TIME), controls_id, TIME,
                      deadline=5, clock=lambda: runner.calls)
    loop.run()
    assert runner.calls == 5 and loop.stopped_by == "time_limit"
    assert len(evaluation_lines(journal)) == 5 and len(counting.told) == 5  # what ran is journaled and told
    untimed = SearchLoop(source(), StandInRunner(TIME), ["w0"], opened_cache(tmp_path / "all.jsonl", TIME),
                         controls_id, TIME, deadline=10**9, clock=lambda: 0)
    untimed.run()
    assert untimed.stopped_by is None and len(untimed.evaluations) > 5  # the source ended it, not the clock
    budgeted, *_ = replay(record(tmp_path), tmp_path / "budget.jsonl", budget=3)
    assert budgeted.stopped_by == "max_evaluations"


def main_thread_waits() -> bool:
    """Whether the main thread is in a threading wait (for a lock, an event: the loop's wait for candidates)."""
    frame = sys._current_frames().get(threading.main_thread().ident or 0)
    return frame is not None and frame.f_code.co_name == "wait" and frame.f_code.co_filename == threading.__file__


def slept(seconds: float, done: Callable[[], bool]) -> bool:
    time.sleep(seconds)
    return done()


class LongRunner(StandInRunner):
    """TEST DOUBLE for a benchmark that runs `seconds` unless the loop's stop ends it (as a killed one ends);
    the first evaluation also takes a SIGUSR1 in its own worker thread, as the kernel may hand one there,
    once the main thread waits for the candidates."""

    def __init__(self, seconds: float) -> None:
        super().__init__(TIME)
        self.seconds = seconds
        self.signalled = threading.Event()

    def evaluate(self, worker: object, proposal: Proposal, controls: Controls, key: str) -> Evaluation:
        end = time.monotonic() + self.seconds
        with self._lock:
            first = not self.signalled.is_set()
            self.signalled.set()
        if first:
            stopping.wait_or_stop(lambda timeout: slept(timeout, main_thread_waits), "the loop's wait")
            signal.pthread_kill(threading.get_ident(), signal.SIGUSR1)
        stopping.wait_or_stop(lambda timeout: slept(timeout, lambda: time.monotonic() > end), "the benchmark")
        return super().evaluate(worker, proposal, controls, key)


def test_a_signal_a_worker_thread_takes_stops_the_search_before_the_candidates_end(tmp_path: Path) -> None:
    # Python runs a signal's handler in the main thread only, when it next runs Python: a loop waiting for
    # its candidates in one blocking wait heard of a SIGINT that a worker thread took only when a
    # benchmark ended (120 s in tests/tune/test_tune_interrupt.py).
    def interrupted(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    seconds = 60.0  # each candidate's "benchmark": the stop must come long before it would end
    loop = SearchLoop(source(), LongRunner(seconds), ["w0", "w1"], opened_cache(tmp_path / "run.jsonl", TIME),
                      controls_id, TIME)
    previous = signal.signal(signal.SIGUSR1, interrupted)
    started = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            loop.run()
    finally:
        signal.signal(signal.SIGUSR1, previous)
    assert time.monotonic() - started < seconds / 2
    assert loop.evaluations == []


def test_a_resumed_search_reuses_the_journal_and_finds_the_same_winner(tmp_path: Path) -> None:
    recorded = record(tmp_path)
    whole, _, _, whole_winner = replay(recorded, tmp_path / "whole.jsonl")
    stopped = tmp_path / "stopped.jsonl"
    replay(recorded, stopped, budget=11)  # as if killed after 11 evaluations
    said: list[str] = []
    runner = ReplayRunner(recorded, TIME)
    loop = SearchLoop(source(), runner, ["w0"], opened_cache(stopped, TIME, said), runner.key_of, TIME)
    loop.run()
    assert "resuming: 11 finished evaluation(s)" in " ".join(said)
    assert [e.key for e in loop.evaluations] == [e.key for e in whole.evaluations]
    assert sum(1 for e in loop.evaluations if e.cached) == 11 and len(runner.played) == len(whole.evaluations) - 11
    winner = pick_winner(loop.evaluations, baseline_of(runner, TIME, runner.key_of), TIME, "knee")
    assert winner is not None and whole_winner is not None and winner.key == whole_winner.key


def test_failed_candidates_are_journaled_and_told_and_the_search_goes_on(tmp_path: Path) -> None:
    recorded = record(tmp_path, generations=6)
    loop, _, counting, winner = replay(recorded, tmp_path / "run.jsonl", generations=6)
    failed = [line for line in evaluation_lines(tmp_path / "run.jsonl") if not line["ok"]]
    assert failed and all(line["cause"] == "compile_failed" for line in failed)
    reasons = [reason for _, scores, reason in counting.told if scores is None]
    assert reasons and all(r is not None and r.startswith("compile_failed: ") for r in reasons)
    first_failure = next(i for i, e in enumerate(loop.evaluations) if not e.ok)
    assert any(e.ok for e in loop.evaluations[first_failure + 1:])  # evaluations went on after it
    assert winner is not None and winner.ok


def test_a_candidate_the_journal_never_saw_is_a_clear_error(tmp_path: Path) -> None:
    recorded = record(tmp_path, seed=0, generations=1)
    with pytest.raises(NotInJournal, match="is not in the journal .*recorded-0-1.jsonl"):
        replay(recorded, tmp_path / "run.jsonl", seed=5, generations=3)


# -- the winner -------------------------------------------------------------------------------


def _point(i: int, *scores: float) -> Evaluation:
    return Evaluation(f"k{i}", Proposal(i, 0, {}), Controls(), True, None, "", {}, {}, tuple(scores), 0.0)


def test_minimise_and_maximise_pick_opposite_ends(tmp_path: Path) -> None:
    fastest = parse_objectives(["metric:gflops"])  # minimised: the fewest gflops (a silly but legal aim)
    most = parse_objectives(["max:metric:gflops"])
    _, _, _, low = replay(record(tmp_path, fastest), tmp_path / "low.jsonl", fastest)
    loop, _, _, high = replay(record(tmp_path, most), tmp_path / "high.jsonl", most)
    assert low is not None and high is not None
    assert high.scores is not None and low.scores is not None and high.scores[0] > low.scores[0]
    assert high.scores[0] == max(e.scores[0] for e in loop.evaluations if e.scores is not None)


def test_ties_go_to_the_first_evaluated() -> None:
    a, b, c = _point(0, 2.0), _point(1, 1.0), _point(2, 1.0)
    directions = ["min"]
    assert pick_from_front([a, b, c], directions, "first") is b
    assert pick_from_front([a, b, c], directions, "knee") is b
    baseline = _point(-1, 3.0)
    assert pick_winner([c, b, a], baseline, TIME, "knee") is c


def best_so_far(found: list[Evaluation], objectives: list[Objective], pick: str = "first") -> tuple[float, ...] | None:
    running = RunningBest(objectives, pick)
    for evaluated in found:
        running.add(evaluated)
    return running.scores


def test_the_progress_lines_best_breaks_ties_on_the_first_objective_by_the_next() -> None:
    # cuda-samples FDTD3d, spills then registers: the line said "best 0/127" (the first with no spills)
    # while 0/56 was found, and the summary then said 56.
    spills_registers = parse_objectives(["spill_bytes", "registers"])
    found = [_point(0, 0.0, 127.0), _point(1, 88.0, 80.0), _point(2, 0.0, 56.0), _point(3, 0.0, 56.0)]
    assert best_so_far(found, spills_registers) == (0.0, 56.0)
    assert best_so_far(found, parse_objectives(["spill_bytes", "max:registers"])) == (0.0, 127.0)
    assert best_so_far([dataclasses.replace(found[0], ok=False)], spills_registers) is None


def test_with_several_objectives_the_progress_lines_best_is_the_point_the_pin_takes() -> None:
    # time and registers: the first objective's best is 1.0 ms at 128 registers, but the pin takes the knee
    # (1.05 ms at 40), and the line said the first while the summary then said the other.
    time_registers = parse_objectives(["time", "registers"])
    found = [_point(0, 2.0, 32.0), _point(1, 1.0, 128.0), _point(2, 1.05, 40.0), _point(3, 1.5, 60.0)]
    assert best_so_far(found, time_registers, "knee") == (1.05, 40.0)
    assert best_so_far(found, time_registers, "first") == (1.0, 128.0)
    winner = pick_winner(found, _point(-1, 2.5, 130.0), time_registers, "knee")
    assert winner is not None and best_so_far(found, time_registers, "knee") == winner.scores


def test_several_objectives_pin_a_pareto_point_that_beats_the_baseline_by_the_pick_rule(tmp_path: Path) -> None:
    both = parse_objectives(["time", "registers"])
    recorded = record(tmp_path, both)
    loop, runner, _, knee = replay(recorded, tmp_path / "knee.jsonl", both, pick="knee")
    baseline = baseline_of(runner, both, runner.key_of)
    first = pick_winner(loop.evaluations, baseline, both, "first")
    scored = [e for e in loop.evaluations if e.scores is not None]
    for winner in (knee, first):
        assert winner is not None and winner.scores is not None
        assert not any(all(x <= y for x, y in zip(e.scores, winner.scores)) and e.scores != winner.scores
                       for e in scored if e.scores is not None), "the winner is dominated"
    assert first is not None and first.scores is not None and baseline.scores is not None

    def allocated(scores: tuple[float, ...]) -> tuple[float, float]:  # registers as the SM allocates them, 8 at a time
        return scores[0], -(-scores[1] // 8) * 8

    assert first.scores[0] == min(e.scores[0] for e in scored if e.scores is not None
                                  and all(x <= y for x, y in zip(allocated(e.scores), allocated(baseline.scores))))
    # A hand-made front: the knee is the balanced point, first the best on the first objective.
    ends = [_point(0, 1.0, 10.0), _point(1, 5.0, 5.0), _point(2, 10.0, 1.0)]
    assert pick_from_front(ends, ["min", "min"], "knee") is ends[1]
    assert pick_from_front(ends, ["min", "min"], "first") is ends[0]
    assert pick_from_front(ends, ["max", "min"], "first") is ends[2]


def test_resuming_counts_only_the_journaled_evaluations_that_measured_todays_objectives(tmp_path: Path) -> None:
    # A static tune after a search of other objectives said "resuming: 49 finished evaluation(s)" and then
    # measured every candidate again: none of the 49 had measured its objective.
    recorded = record(tmp_path)  # time_ms, registers and gflops of every candidate, its failures too
    held = len(evaluation_lines(recorded))
    failed = sum(1 for line in evaluation_lines(recorded) if not line["ok"])
    assert 0 < failed < held
    said: list[str] = []
    assert opened_cache(recorded, parse_objectives(["registers"]), said).resuming  # the first line's advice not again
    assert said[-1] == f"resuming: {held} finished evaluation(s) in {recorded}"
    said.clear()
    opened_cache(recorded, parse_objectives(["sass_instructions", "registers"]), said)
    assert said[-1] == (f"resuming: {failed} finished evaluation(s) in {recorded} ({held - failed} more measured none "
                        "of this tune's objectives, sass_instructions, registers: measured again where proposed)")
    # Without its failures (which are reused whatever the objectives), nothing there measured stack_bytes.
    kept = [line for line in recorded.read_text().splitlines(keepends=True) if '"ok": false' not in line]
    recorded.write_text("".join(kept))
    said.clear()
    assert not opened_cache(recorded, parse_objectives(["stack_bytes"]), said).resuming  # as a first start
    # One line: the search of other settings, and that none of its evaluations is reused (miniBUDE's static tune of
    # new objectives said "its measurements are reused ...", then "nothing to resume").
    assert said == [f"the journal holds another search (settings changed), whose {held - failed} finished "
                    f"evaluation(s) measured none of this tune's objectives (stack_bytes): nothing to resume from "
                    f"{recorded}"]


def test_resuming_counts_only_the_evaluations_of_todays_sources(tmp_path: Path) -> None:
    # The cudamat trial: a tune after the sources changed (its first baseline had not compiled) said "resuming: 1
    # finished evaluation(s)" and reused none. A tune says it once the sources are fingerprinted, counting theirs.
    recorded = record(tmp_path)
    said: list[str] = []
    cache = EvaluationCache(Journal(recorded), TIME, said.append)
    cache.open({"target": "kernels", "objectives": [o.spec for o in TIME]}, said_later=True)
    held = len(cache)
    assert held > 2 and not any("resum" in line for line in said)
    cache.say_resuming(controls_id)  # every key is today's
    assert said[-1] == f"resuming: {held} finished evaluation(s) in {recorded}"
    cache.say_resuming(lambda controls: "edited " + controls_id(controls))
    assert said[-1] == (f"the journal's {held} finished evaluation(s) measured other sources, toolchain, "
                        "architectures, nvcc flags, per-block declarations or benchmark, changed since: kept, not "
                        f"reused (--fresh starts over); nothing to resume from {recorded}")
    # Every part of the key is named there (a list of its own omitted the architectures).
    toolchain = SimpleNamespace(version="13.3.1", ptxas_version="13.3.1", nvcc=Path("/usr/bin/nvcc"))
    assert all(part in said[-1] for part in keyed_parts(bare_manifest(tmp_path), toolchain))  # type: ignore[arg-type]
    cache.say_resuming(lambda controls: controls_id(controls) if controls.is_default else "edited")
    assert said[-1] == (f"resuming: 1 finished evaluation(s) in {recorded} ({held - 1} more measured other sources, "
                        "toolchain, architectures, nvcc flags, per-block declarations or benchmark, changed since: "
                        "measured again where proposed)")


def test_the_resume_line_names_the_part_and_the_files_the_journaled_evaluations_were_made_with_another_of(
        tmp_path: Path) -> None:
    # flash_attention_inference's trial: one line (THREADS_PER_BLOCK) added to CMakeLists.txt made 24 journaled
    # evaluations another sources', and the tune said only "other sources, toolchain, ... or benchmark".
    parts = {"toolchain": "t1", "architectures": "a1", "nvcc flags": "f1", "per-block declarations": "p1",
             "benchmark": "b1"}
    files = {"CMakeLists.txt": "c1", "src/fi_launch.cu": "l1", "include/fi.h": "h1"}
    journal, runner = tmp_path / "journal.jsonl", StandInRunner(TIME)
    cache = EvaluationCache(Journal(journal), TIME, lambda line: None)
    cache.open({"target": "kernels", "objectives": ["time"]}, said_later=True)
    cache.record_made_with(made_with(parts, files))
    for tile in ("8", "16"):
        controls = Controls(defines=(("TILE", tile),))
        cache.record(runner.evaluate(None, Proposal(id=0, generation=0, params={}), controls, controls_id(controls)))

    def resumed(now: dict[str, Any] | None, key_of: Callable[[Controls], str] = lambda c: "edited") -> str:
        said: list[str] = []
        cache = EvaluationCache(Journal(journal), TIME, said.append)
        cache.open({"target": "kernels", "objectives": ["time"]}, said_later=True)
        cache.say_resuming(key_of, now)
        if now is not None:
            cache.record_made_with(now)
        return said[-1]

    now = made_with(parts, {**files, "CMakeLists.txt": "c2"})
    assert resumed(now) == (f"the journal's 2 finished evaluation(s) were made with another CMakeLists.txt (sources), "
                            "the same toolchain, architectures, nvcc flags, per-block declarations and benchmark: kept, "
                            f"not reused (--fresh starts over); nothing to resume from {journal}")
    # Today's is journaled once, after them: what they were made with stays theirs.
    assert [r["kind"] for r in Journal(journal).records()].count(MADE_WITH_KIND) == 2
    resumed(now)
    assert [r["kind"] for r in Journal(journal).records()].count(MADE_WITH_KIND) == 2
    # Several parts and files; only the evaluations not of today are told about.
    other = made_with({**parts, "toolchain": "t2"}, {"CMakeLists.txt": "c1", "src/fi_launch.cu": "l2", "a.h": "h",
                                                     "b.h": "h", "c.h": "h"})
    assert resumed(other, lambda c: controls_id(c) if ("TILE", "16") in c.defines else "edited") == (
        f"resuming: 1 finished evaluation(s) in {journal} (1 more were made with another a.h/b.h/c.h and 2 more files "
        "(sources), another toolchain, the same architectures, nvcc flags, per-block declarations and benchmark: "
        "measured again where proposed)")
    # A journal that does not say (older than the records, or the key's own make changed) says what it may be.
    assert resumed(None).startswith("the journal's 2 finished evaluation(s) measured other sources, toolchain, "
                                     "architectures")
    assert resumed(made_with(parts, files)).startswith("the journal's 2 finished evaluation(s) measured other sources")


# -- failure causes in the journal -----------------------------------------------------------


def test_a_failure_cause_is_journaled_as_the_plain_string_old_journals_hold(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    cache = opened_cache(path, TIME)
    failed = Evaluation("k", Proposal(0, 0, {}), Controls(), False, Cause.BENCH_KILLED, "Killed", {}, {}, None, 1.0)
    cache.record(failed)
    assert b'"cause": "bench_killed"' in path.read_bytes() and b'"environmental": true' in path.read_bytes()
    line = evaluation_lines(path)[0]
    assert line["cause"] == "bench_killed" and type(line["cause"]) is str
    # An old journal's line reads back as its Cause; a cause no version emits reads as error.
    old = {**line, "cause": "compile_failed", "environmental": False}
    again = EvaluationCache(Journal(path), TIME, print)
    again.entries["k"] = old
    evaluated = again.lookup(Proposal(0, 0, {}), Controls(), "k")
    assert evaluated is not None and evaluated.cause is Cause.COMPILE_FAILED and not evaluated.environmental
    assert Cause.read("no_such_cause") is Cause.ERROR and Cause.read(None) is Cause.ERROR


# -- racing and dedupe, as journaled ---------------------------------------------------------


class RacingStandIn(StandInRunner):
    """StandInRunner whose best candidate was raced out on a lucky first run, and whose VEC=2 builds VEC=1's code."""

    def __init__(self, objectives: Sequence[Objective]) -> None:
        super().__init__(objectives)
        self.first_of_code: dict[str, str] = {}

    def evaluate(self, worker: object, proposal: Proposal, controls: Controls, key: str) -> Evaluation:
        evaluated = super().evaluate(worker, proposal, controls, key)
        d = dict(controls.defines)
        code = controls_id(Controls(defines=tuple((n, "1" if (n, v) == ("VEC", "2") else v)
                                                  for n, v in controls.defines)))
        earlier = self.first_of_code.setdefault(code, key)
        if earlier != key:
            return dataclasses.replace(evaluated, same_code_as=earlier, runs=0)
        if (d.get("TILE"), d.get("UNROLL"), d.get("VEC")) == ("32", "4", "4"):
            return dataclasses.replace(evaluated, raced=True, runs=1)
        return dataclasses.replace(evaluated, runs=5)


def test_raced_and_shared_evaluations_survive_the_journal_and_a_raced_one_never_wins(tmp_path: Path) -> None:
    path = tmp_path / "recorded.jsonl"
    cache = opened_cache(path, TIME)
    runner = RacingStandIn(TIME)
    cache.record(baseline_of(runner, TIME, controls_id))
    SearchLoop(source(generations=8, pool_size=12), runner, ["w"], cache, controls_id, TIME).run()
    lines = evaluation_lines(path)
    raced = [line for line in lines if line["raced"]]
    shared = [line for line in lines if line["same_code_as"]]
    assert raced and shared and all(line["runs"] == 1 for line in raced)
    keys = {line["key"] for line in lines}
    assert all(line["same_code_as"] in keys for line in shared)

    loop, _, _, winner = replay(path, tmp_path / "replayed.jsonl", generations=8, pool_size=12, pick="first")
    assert any(e.raced for e in loop.evaluations) and any(e.same_code_as for e in loop.evaluations)
    best = min((e for e in loop.evaluations if e.ok and e.scores), key=lambda e: e.scores or ())
    assert best.raced  # the lowest time seen is the raced candidate's one lucky run...
    assert winner is not None and not winner.raced  # ...but a fully measured candidate wins

    resumed = SearchLoop(source(generations=8, pool_size=12), ReplayRunner(path, TIME), ["w"],
                         opened_cache(tmp_path / "replayed.jsonl", TIME), controls_id, TIME)
    resumed.run()  # everything from the journal now: the flags are read back from it
    assert all(e.cached for e in resumed.evaluations)
    assert {e.key for e in resumed.evaluations if e.raced} == {e.key for e in loop.evaluations if e.raced}
    assert {(e.key, e.same_code_as) for e in resumed.evaluations if e.same_code_as} == \
        {(e.key, e.same_code_as) for e in loop.evaluations if e.same_code_as}


def test_a_fresh_start_says_where_the_old_journal_went_and_which_backups_it_removed(tmp_path: Path) -> None:
    path = tmp_path / "kernels.jsonl"
    header = {"target": "kernels", "objectives": [o.spec for o in TIME]}
    for stamp in ("20240101T000000Z", "20240102T000000Z", "20240103T000000Z"):
        path.with_name(f"{path.name}.{stamp}.bak").write_text("{}\n")
    opened_cache(path, TIME)
    said: list[str] = []
    EvaluationCache(Journal(path), TIME, said.append).open(header, fresh=True)
    (line,) = [text for text in said if "--fresh" in text]
    assert "kernels.jsonl.2024" not in line.split("(removed")[0]  # the new backup's name comes first
    assert "only the newest 3 such backups are kept" in line and "kernels.jsonl.20240101T000000Z.bak" in line
    assert len(list(tmp_path.glob("kernels.jsonl.*.bak"))) == 3


class Narrated:
    """Records, in one list, each evaluation the runner starts and each progress update, in the order they happen."""

    def __init__(self, objectives: Sequence[Objective]) -> None:
        self.inner = StandInRunner(objectives)
        self.events: list[str] = []

    def evaluate(self, worker: object, proposal: Proposal, controls: Controls, key: str) -> Evaluation:
        self.events.append(f"evaluate {proposal.id}")
        return self.inner.evaluate(worker, proposal, controls, key)

    def update(self, generation: int, *, evaluations: int = 0, failures: int = 0,
               best: tuple[float, ...] | None = None, front: int = 0, last: Evaluation | None = None,
               pinnable: bool = True) -> None:
        self.events.append(f"progress {evaluations}")

    def close(self) -> None:
        self.events.append("close")


def test_progress_is_told_after_each_evaluation_not_at_the_end_of_a_generation(tmp_path: Path) -> None:
    # A tune printed nothing for ~5 minutes, then one line per evaluation of the generation at once:
    # progress must follow each finished evaluation, before the next one starts (one worker).
    narrated = Narrated(TIME)
    cache = opened_cache(tmp_path / "journal.jsonl", TIME)
    SearchLoop(source(generations=2, pool_size=4), narrated, ["worker"], cache, controls_id, TIME,
               progress=narrated).run()
    evaluated = [e for e in narrated.events if e.startswith("evaluate")]
    assert len(evaluated) >= 6
    first_two = narrated.events[:4]
    assert first_two[0].startswith("evaluate") and first_two[1] == "progress 1"
    assert first_two[2].startswith("evaluate") and first_two[3] == "progress 2"
    told = [int(e.split()[1]) for e in narrated.events if e.startswith("progress")]
    assert told == list(range(1, len(told) + 1)) and narrated.events[-1] == "close"


def test_progress_hears_the_best_so_far_as_scores(tmp_path: Path) -> None:
    heard: list[tuple[float, ...] | None] = []

    class Listening:
        def update(self, generation: int, *, evaluations: int = 0, failures: int = 0,
                   best: tuple[float, ...] | None = None, front: int = 0, last: Evaluation | None = None,
                   pinnable: bool = True) -> None:
            heard.append(best)

        def close(self) -> None:
            pass

    cache = opened_cache(tmp_path / "journal.jsonl", TIME)
    found = SearchLoop(source(generations=2, pool_size=4), StandInRunner(TIME), ["worker"], cache, controls_id,
                       TIME, progress=Listening()).run()
    assert heard[-1] == best_so_far(found, TIME)
    told_best = [b[0] for b in heard if b is not None]
    assert told_best == sorted(told_best, reverse=True)  # never worse than before (time: lower is better)


# -- the plan is the loop's: a source that never ends by itself (random search, Optuna's samplers) ends here ---


def test_random_search_runs_until_the_loops_plan_and_a_resumed_search_plans_as_many(tmp_path: Path) -> None:
    from ciq_build.search.strategies import make_source
    from ciq_build.search.strategy import SearchRequest

    def random_search() -> CandidateSource:
        config = SearchConfiguration(generations=1, pool_size=4, seed=2)  # its own end would have been 4
        return make_source("random", SearchRequest(parse_params(SPACE), config, ("time",)))

    endless = random_search()
    drawn = 0
    while batch := endless.ask():  # no budget of its own: the 48 configurations, drawn to the end
        drawn += len(batch)
        for proposal in batch:
            endless.tell(proposal, (1.0,))
    assert drawn == 48
    path = tmp_path / "random.jsonl"
    runner = StandInRunner(TIME)
    first = SearchLoop(random_search(), runner, ["w0", "w1"], opened_cache(path, TIME), controls_id, TIME, planned=10)
    assert len(first.run()) == 10 and runner.calls == 10 and first.stopped_by is None  # the plan ends inside a batch
    again = StandInRunner(TIME)
    resumed = SearchLoop(random_search(), again, ["w0"], opened_cache(path, TIME), controls_id, TIME, planned=10)
    assert len(resumed.run()) == 10 and again.calls == 0  # the journaled ten count: nothing more to evaluate
    capped = SearchLoop(random_search(), StandInRunner(TIME), ["w0"], opened_cache(tmp_path / "capped.jsonl", TIME),
                        controls_id, TIME, planned=10, budget=6)
    assert len(capped.run()) == 6 and capped.stopped_by == "max_evaluations"


class Listed:
    """A candidate source that proposes fixed candidates, once: a search's finds, in order."""

    def __init__(self, count: int) -> None:
        self.proposals = [Proposal(i, 0, {"knob.maxrregcount": 32 + 8 * i}) for i in range(count)]

    def ask(self) -> list[Proposal]:
        proposals, self.proposals = self.proposals, []
        return proposals

    def tell(self, proposal: Proposal, scores: tuple[float, ...] | None, reason: str | None = None) -> None:
        pass

    def describe(self) -> dict[str, Any]:
        return {"engine": "listed"}


class Found:
    """TEST DOUBLE for a static tune's builds: each proposal's figures, as stdgpu's search found them."""

    def __init__(self, scores: Sequence[tuple[float, ...]]) -> None:
        self.scores = list(scores)

    def evaluate(self, worker: object, proposal: Proposal, controls: Controls, key: str) -> Evaluation:
        return Evaluation(key, proposal, controls, True, None, "", {}, {}, self.scores[proposal.id], 0.1)


def _searched_with_progress(tmp_path: Path, objectives: list[Objective], found: list[tuple[float, float]],
                            baseline: Evaluation) -> tuple[SearchLoop[str], list[str]]:
    """A search of `found`, in order, with the tune's progress lines written to a file: the loop and the lines."""
    from ciq_build.tune.progress import TuneProgress, configure_logging, reset_logging

    said = tmp_path / "said.txt"
    with said.open("w") as stream:
        configure_logging(0, stream)
        try:
            progress = TuneProgress(len(found), 1, objectives, stream=stream, terminal=False)
            loop = SearchLoop(Listed(len(found)), Found(found), ["w0"], opened_cache(tmp_path / "j.jsonl", objectives),
                              controls_id, objectives, progress=progress, pick="knee", baseline=baseline.scores)
            loop.run()
        finally:
            reset_logging()
    return loop, said.read_text().splitlines()


def test_a_tune_of_two_objectives_says_in_its_progress_line_the_point_it_will_pin(tmp_path: Path) -> None:
    # stdgpu's unordered_map, registers and spills of insert_neighbors from 49 registers and no spills: the lines
    # said "best registers:insert_neighbors 40, spill_bytes:insert_neighbors 72 bytes" (the knee of the whole
    # front) and the tune pinned 44 registers without spills (the front's points that beat the defaults).
    objectives = parse_objectives(["registers:insert_neighbors", "spill_bytes:insert_neighbors"])
    found = [(48.0, 0.0), (40.0, 72.0), (44.0, 0.0), (40.0, 152.0)]
    baseline = _point(-1, 49.0, 0.0)
    loop, lines = _searched_with_progress(tmp_path, objectives, found, baseline)
    pinned = pick_winner(loop.evaluations, baseline, objectives, "knee")
    assert pinned is not None and pinned.scores == (44.0, 0.0)
    last = lines[-1]
    assert ("| front: 2 points; would pin registers:insert_neighbors 44, spill_bytes:insert_neighbors 0 bytes |"
            in last), last


def test_a_tune_of_two_objectives_says_it_would_pin_nothing_while_no_point_beats_the_defaults(tmp_path: Path) -> None:
    # miniBUDE's fasten_main, spills and registers from 0 bytes at 168 registers: every register cap spilled, the lines
    # said "would pin spill_bytes 72 bytes, registers 144" (the knee of the front, none of whose points beat the
    # defaults) and the tune pinned nothing. Only a point that beats the defaults on both is what it would pin.
    objectives = parse_objectives(["spill_bytes", "registers"])
    found = [(416.0, 104.0), (72.0, 144.0), (0.0, 160.0)]
    baseline = _point(-1, 0.0, 168.0)
    loop, lines = _searched_with_progress(tmp_path, objectives, found, baseline)
    assert len(lines) == 3, lines
    for line, points in zip(lines, ("1 point", "2 points")):
        assert f"| front: {points}; would pin nothing (none beats the defaults on every objective) |" in line, line
    assert "| front: 3 points; would pin spill_bytes 0 bytes, registers 160 |" in lines[2], lines[2]
