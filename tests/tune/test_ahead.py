"""Builds ahead (ciq_build.tune.ahead) through the real loop, genetic search and journal, with TEST DOUBLES for
the build and the GPU benchmark (milliseconds; a real tune's: test_tune_gpu_busy.py): the search is asked and told
exactly as without them, and the candidates of the next generation find their builds made while the GPU worked."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path

from test_loop import TIME, Counting, opened_cache, source, stand_in_metrics

from ciq_build.compiler.controls import Controls
from ciq_build.core.causes import Cause
from ciq_build.core.objectives import Objective
from ciq_build.search.base import Proposal
from ciq_build.search.evaluation import Evaluation
from ciq_build.tune.ahead import BuildsAhead, guess_next
from ciq_build.tune.loop import SearchLoop
from ciq_build.tune.replay import controls_id
from ciq_build.tune.scores import objective_values


class Tree:
    """A TEST DOUBLE for a scratch tree: holds one build at a time (two at once is the bug this catches)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.lock = threading.Lock()
        self.built: Controls | None = None


class DoubleRunner:
    """TEST DOUBLE for the build runner: a build takes `compile_s` in its tree; a benchmark holds the one "GPU"
    for `bench_s`. It takes builds made ahead as BuildRunner does."""

    def __init__(self, objectives: Sequence[Objective], compile_s: float, bench_s: float) -> None:
        self.objectives = list(objectives)
        self.compile_s, self.bench_s = compile_s, bench_s
        self.gpu = threading.Lock()
        self.ahead: BuildsAhead | None = None
        self.builds: list[Controls] = []
        self.overlaps = 0
        self.trees: list[Tree] = []

    def build(self, tree: Tree, controls: Controls) -> Controls:
        if not tree.lock.acquire(blocking=False):
            self.overlaps += 1
            tree.lock.acquire()
        try:
            time.sleep(self.compile_s)
            tree.built = controls
            self.builds.append(controls)
            return controls
        finally:
            tree.lock.release()

    def holding(self, tree: Tree, controls: Controls) -> Controls | None:
        return tree.built if tree.built == controls else None

    def evaluate(self, worker: Tree, proposal: Proposal, controls: Controls, key: str) -> Evaluation:
        taken = self.ahead.take(worker, controls) if self.ahead is not None else None  # type: ignore[arg-type]
        if taken is None:
            self.build(worker, controls)
        assert worker.built == controls, "benchmarked another build than the candidate's"
        values = stand_in_metrics(controls)
        if values is None:
            return Evaluation(key, proposal, controls, False, Cause.COMPILE_FAILED, "too many registers", {}, {},
                              None, 0.0)
        with self.gpu:
            time.sleep(self.bench_s)
        return Evaluation(key, proposal, controls, True, None, "", values, {},
                          objective_values(self.objectives, values), 0.0)


def _search(tmp_path: Path, name: str, ahead: bool, workers: int = 4) -> tuple[SearchLoop[Tree], DoubleRunner]:
    runner = DoubleRunner(TIME, compile_s=0.02, bench_s=0.01)
    if ahead:
        runner.ahead = BuildsAhead(runner.build, jobs=workers)  # type: ignore[arg-type]
    runner.trees = [Tree(f"w{i}") for i in range(workers)]
    loop = SearchLoop(source(seed=3, generations=4, pool_size=6), runner, runner.trees,
                      opened_cache(tmp_path / f"{name}.jsonl", TIME), controls_id, TIME,
                      ahead=runner.ahead)
    try:
        loop.run()
    finally:
        if runner.ahead is not None:
            runner.ahead.stop()
    return loop, runner


def test_builds_ahead_change_no_candidate_and_the_next_generation_finds_its_builds_made(tmp_path: Path) -> None:
    plain, _ = _search(tmp_path, "plain", ahead=False)
    ahead, runner = _search(tmp_path, "ahead", ahead=True)
    # The same seed, the same candidates told in the same order, the same scores: the search never saw them.
    assert [(e.proposal.id, e.proposal.params, e.scores) for e in ahead.evaluations] == \
        [(e.proposal.id, e.proposal.params, e.scores) for e in plain.evaluations]
    assert runner.ahead is not None and runner.ahead.used > 0, runner.ahead.describe()
    assert runner.overlaps == 0  # a tree never built two things at once
    generations = {e.proposal.generation for e in ahead.evaluations}
    assert len(generations) == 4
    # The best candidate's tree was kept from the rest of the search: the winner needs no rebuild.
    best = min((e for e in ahead.evaluations if e.ok), key=lambda e: e.scores or ())
    assert any(tree.built == best.controls for tree in runner.trees)


def test_a_guess_leaves_the_source_as_it_was_and_a_source_that_cannot_be_copied_gives_none() -> None:
    real = source(seed=5, generations=3, pool_size=4)
    batch = real.ask()
    guessed = guess_next(real, [(p, None) for p in batch[:1]] + [
        (p, Evaluation("", p, Controls(), True, None, "", {}, {}, (float(i),), 0.0)) for i, p in enumerate(batch[1:])])
    assert guessed and {p.generation for p in guessed} == {1}
    # The real source still waits for its first batch's scores, and asks for the same batch again.
    assert [p.id for p in real.ask()] == [p.id for p in batch]
    assert guess_next(Counting(real), []) == []  # no proposes_ahead: its ask may have effects; never guessed
