"""Before a pin, which winners' static scores a fresh build must reproduce: the journal's of an earlier run, not
what this run measured itself (ciq_build.tune.confirm)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from ciq_build.compiler.controls import Controls
from ciq_build.core.objectives import parse_objectives
from ciq_build.core.settings import MeasureSettings
from ciq_build.search.base import Proposal
from ciq_build.search.evaluation import Evaluation
from ciq_build.state.journal import Journal
from ciq_build.tune.cache import EvaluationCache
from ciq_build.tune.confirm import Confirmer
from ciq_build.tune.timeouts import Timeouts

OBJECTIVES = parse_objectives(["spill_bytes", "registers"])
METRICS = {"spill_bytes": 0.0, "registers": 40.0}
REBUILDING = "rebuilding the journal's winner"


class CountingTree:
    """TEST DOUBLE for a worker tree: counts the builds it is asked for, each of which reproduces METRICS."""

    def __init__(self) -> None:
        self.builds: list[Controls] = []

    def build(self, controls: Controls, timeout: float, static_only: bool = False, *,
              benchmark: bool = True) -> Any:
        self.builds.append(controls)
        return SimpleNamespace(ok=True, message="", objects=())


def static_confirmer(cache: EvaluationCache, said: list[str], fresh: dict[str, float] = METRICS) -> Confirmer:
    """A Confirmer of a static tune whose every build measures `fresh` (METRICS: what the journal holds)."""
    runner: Any = SimpleNamespace(needs_benchmark=False, links=False, static_metrics=lambda built, controls: dict(fresh))
    return Confirmer(runner, cache, OBJECTIVES, MeasureSettings(), Timeouts(60.0, 60.0), "knee", "kern",
                     said.append, said.append)


def trusted_winner(cache: EvaluationCache, baseline: Evaluation, said: list[str]) -> CountingTree:
    """Confirm the defaults proposed again by the search, as the loop took them from `cache`; the builds asked."""
    again = cache.lookup(Proposal(0, 1, {}), Controls(), baseline.key)
    assert again is not None and again.cached
    confirmer = static_confirmer(cache, said)
    tree = CountingTree()
    tree_arg: Any = tree
    _, winner, _ = confirmer._trusted_winner(baseline, [again], tree_arg, tree_arg)
    assert winner.metrics == METRICS
    return tree


def test_a_winner_measured_earlier_in_this_run_is_not_rebuilt_as_a_journaled_one(tmp_path: Path) -> None:
    # A first static tune whose search proposed the defaults again said "rebuilding the journal's winner" and
    # rebuilt them, though this run had just built and measured them as its baseline.
    journal = Journal(tmp_path / "kern.jsonl")
    header = {"target": "kern", "objectives": [o.spec for o in OBJECTIVES]}
    said: list[str] = []
    cache = EvaluationCache(journal, OBJECTIVES, said.append)
    cache.open(header)
    baseline = Evaluation("defaults", Proposal(-1, 0, {}), Controls(), True, None, "", dict(METRICS), {},
                          (0.0, 40.0), 3.9)
    cache.record(baseline, reuse=True)  # as the baseline's measurement is (ciq_build.tune.baseline)
    assert trusted_winner(cache, baseline, said).builds == [] and not any(REBUILDING in line for line in said)
    # The same winner read back from the journal by a later run is rebuilt: the journal may be stale.
    later = EvaluationCache(journal, OBJECTIVES, said.append)
    later.open(header)
    assert trusted_winner(later, baseline, said).builds == [Controls()] and any(REBUILDING in line for line in said)
    # Where the baseline came from that journal too, its rebuild checks the defaults once, not twice.
    said.clear()
    journaled = later.lookup(Proposal(-1, 0, {}), Controls(), baseline.key)
    assert journaled is not None and journaled.cached
    assert trusted_winner(later, journaled, said).builds == [Controls()]
    assert any("rebuilding the journal's baseline" in line for line in said)
    assert not any(REBUILDING in line for line in said)


def test_a_static_winner_that_does_not_beat_the_defaults_is_not_rebuilt_for_a_pin(tmp_path: Path) -> None:
    # simpleGEMM's static tune: nothing beat the defaults, yet the winner was rebuilt "to read its objects (what
    # a pin records of it)", a whole compile of the target for a pin never written.
    said: list[str] = []
    cache = EvaluationCache(Journal(tmp_path / "kern.jsonl"), OBJECTIVES, said.append)
    cache.open({"target": "kern", "objectives": [o.spec for o in OBJECTIVES]})
    baseline = Evaluation("defaults", Proposal(-1, 0, {}), Controls(), True, None, "", dict(METRICS), {},
                          (0.0, 40.0), 3.9)
    cache.record(baseline, reuse=True)
    worse = Evaluation("capped", Proposal(0, 1, {}), Controls(flags=("-maxrregcount=32",)), True, None, "",
                       {"spill_bytes": 64.0, "registers": 32.0}, {}, (64.0, 32.0), 4.0)
    tree = CountingTree()
    tree_arg: Any = tree
    picked: list[Evaluation] = []
    confirmation = static_confirmer(cache, said).confirm(
        baseline, [baseline, worse], tree_arg, tree_arg, picked=lambda winner: picked.append(winner))
    assert not confirmation.better and "nothing pinned" in confirmation.verdict
    assert tree.builds == [] and picked == [] and not any("rebuilding" in line for line in said)


def test_the_defaults_proposed_again_take_the_fresh_figures_of_a_journaled_baseline_a_build_corrects(
        tmp_path: Path) -> None:
    # simpleGEMM: a journal of sm_75 figures under sm_90's key (a stale scratch tree). The baseline's rebuild
    # corrected 56 to 222 registers, but the defaults proposed again kept the journal's 56, "beat" the corrected
    # baseline without a rebuild (their key was the baseline's, now trusted) and an empty pin claimed 222 -> 56.
    journal = Journal(tmp_path / "kern.jsonl")
    header = {"target": "kern", "objectives": [o.spec for o in OBJECTIVES]}
    said: list[str] = []
    first = EvaluationCache(journal, OBJECTIVES, said.append)
    first.open(header)
    first.record(Evaluation("defaults", Proposal(-1, 0, {}), Controls(), True, None, "", dict(METRICS), {},
                            (0.0, 40.0), 3.9), reuse=True)
    later = EvaluationCache(journal, OBJECTIVES, said.append)
    later.open(header)
    baseline = later.lookup(Proposal(-1, 0, {}), Controls(), "defaults")
    again = later.lookup(Proposal(0, 1, {}), Controls(), "defaults")
    assert baseline is not None and again is not None and baseline.cached and again.cached
    tree = CountingTree()
    tree_arg: Any = tree
    fresh = {"spill_bytes": 0.0, "registers": 222.0}
    confirmation = static_confirmer(later, said, fresh).confirm(baseline, [again], tree_arg, tree_arg)
    assert confirmation.baseline.metrics["registers"] == 222.0
    assert not confirmation.better and confirmation.winner.metrics["registers"] == 222.0, confirmation.verdict


class ClockedTree:
    """TEST DOUBLE for a worker tree: each build of the defaults or of the winner takes the next of its seconds."""

    def __init__(self, seconds: dict[str, list[float]]) -> None:
        self.seconds = seconds
        self.builds: list[str] = []

    def build(self, controls: Controls, timeout: float, static_only: bool = False, *,
              benchmark: bool = True) -> Any:
        name = "winner" if controls.flags else "baseline"
        self.builds.append(name)
        return SimpleNamespace(ok=True, message="", objects=(), compile_seconds=self.seconds[name].pop(0))


def compile_time_verdict(seconds: dict[str, list[float]]) -> tuple[Any, ClockedTree]:
    """A static tune of compile_time whose search measured the defaults at 3.36 s and the winner at 1.15 s (one build
    each, as particle_test's), confirmed against a tree whose rebuilds take `seconds`."""
    objectives = parse_objectives(["compile_time"])
    runner: Any = SimpleNamespace(needs_benchmark=False, links=False)
    said: list[str] = []
    cache: Any = SimpleNamespace(measured_this_run={"w", "defaults"}, checked=set())  # this run's: none journaled
    confirmer = Confirmer(runner, cache, objectives, MeasureSettings(), Timeouts(60.0, 60.0), "knee", "particle_test",
                          said.append, said.append)
    baseline = Evaluation("defaults", Proposal(-1, 0, {}), Controls(), True, None, "", {"compile_seconds": 3.36}, {},
                          (3.36,), 3.4)
    winner = Evaluation("w", Proposal(0, 1, {}), Controls(flags=("--Ofast-compile=min",)), True, None, "",
                        {"compile_seconds": 1.15}, {}, (1.15,), 1.2)
    tree = ClockedTree(seconds)
    tree_arg: Any = tree
    return confirmer.confirm(baseline, [winner], tree_arg, tree_arg), tree


def test_a_compile_time_win_of_one_build_each_is_rebuilt_in_turn_and_pinned_only_beyond_the_noise() -> None:
    # A new user's static tune of particle_test for compile_time pinned a 65.7% gain (3.36 -> 1.15 s, one build each:
    # the defaults' was a cold first build); both took 1.6-1.7 s again.
    same = {"baseline": [1.92, 1.41, 1.68, 1.62, 1.70], "winner": [1.72, 1.66, 1.62, 1.69, 1.64, 1.64]}
    confirmation, tree = compile_time_verdict(same)
    assert not confirmation.better and confirmation.verdict.endswith("; nothing pinned")
    assert "compile time re-measured, 5 builds each" in confirmation.verdict
    assert confirmation.baseline_scores == (1.68,) and confirmation.winner_scores == (1.66,)  # the medians
    assert tree.builds == ["baseline", "winner"] * 5  # in turn, each a compile; the winner not rebuilt for objects
    # A real gain is pinned, with the re-measure's medians.
    faster = {"baseline": [3.1, 3.0, 3.2, 3.0, 3.1], "winner": [1.1, 1.2, 1.1, 1.0, 1.1, 1.1]}
    confirmation, tree = compile_time_verdict(faster)
    assert confirmation.better and confirmation.winner_scores == (1.1,) and confirmation.baseline_scores == (3.1,)
    assert tree.builds == ["baseline", "winner"] * 5 + ["winner"]  # then rebuilt to read its objects


def test_a_static_winner_whose_registers_are_the_same_allocation_as_the_defaults_is_not_pinned(
        tmp_path: Path) -> None:
    # llm.c's layernorm kernel: 23 registers at the defaults, 22 with -Xptxas=--register-usage-level=0, pinned;
    # the SM allocates both as 24 a thread, so no block size could see the change.
    said: list[str] = []
    cache = EvaluationCache(Journal(tmp_path / "kern.jsonl"), OBJECTIVES, said.append)
    cache.open({"target": "kern", "objectives": [o.spec for o in OBJECTIVES]})
    defaults = {"spill_bytes": 16.0, "registers": 23.0}
    baseline = Evaluation("defaults", Proposal(-1, 0, {}), Controls(), True, None, "", defaults, {}, (16.0, 23.0), 1.0)
    cache.record(baseline, reuse=True)

    def verdict(spills: float, registers: float) -> tuple[bool, str]:
        figures = {"spill_bytes": spills, "registers": registers}
        winner = Evaluation(f"w{spills}-{registers}", Proposal(0, 1, {}), Controls(flags=("-maxrregcount=32",)), True,
                            None, "", figures, {}, (spills, registers), 1.0)
        tree: Any = CountingTree()
        confirmation = static_confirmer(cache, said, figures).confirm(baseline, [baseline, winner], tree, tree)
        return confirmation.better, confirmation.verdict

    better, said_of = verdict(16.0, 22.0)
    assert not better and "the same registers, the same occupancy at any block size; nothing pinned" in said_of
    assert verdict(16.0, 16.0)[0]  # 16 a thread: another allocation
    assert verdict(0.0, 22.0)[0] and verdict(0.0, 24.0)[0]  # fewer spills at the same allocation (24 > 23 too)
    assert not verdict(0.0, 25.0)[0]  # 32 a thread
