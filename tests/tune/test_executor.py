"""The executor seam (ciq_build.tune.executor, ciq_build.tune.executors): a new executor is one registration, with
no change to ciq_build.

`RecordingExecutor` is a TEST DOUBLE of an executor, registered from this
test only: it evaluates one candidate at a time on one of the driver's scratch
trees, through the driver's runner, and records what the driver handed it.
The tunes are real (CMake, Ninja, nvcc) on tests/projects/transient.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

from ciq_build.cli import main
from ciq_build.compiler.controls import Controls
from ciq_build.errors import ConfigError
from ciq_build.project.worker import WorkerTree
from ciq_build.search.base import Proposal
from ciq_build.search.evaluation import Evaluation
from ciq_build.tune import executors as registry
from ciq_build.tune.executor import Executor, SearchPhase, Workers
from ciq_build.tune.executors import executor_names, get_executor, register_executor
from ciq_build.tune.runner import Runner
from ciq_build.tune.target_result import TargetResult
from ciq_build.tune.tune_options import TuneOptions
from support import REPO_ROOT

PROJECT = REPO_ROOT / "tests" / "projects" / "transient"


class _RecordingRunner:
    def __init__(self, runner: Runner[WorkerTree], evaluated: list[int]) -> None:
        self.runner = runner
        self.evaluated = evaluated

    def evaluate(self, worker: WorkerTree, proposal: Proposal, controls: Controls, key: str) -> Evaluation:
        self.evaluated.append(proposal.id)
        return self.runner.evaluate(worker, proposal, controls, key)


class RecordingExecutor(Executor):
    """TEST DOUBLE of an executor: one candidate at a time, on the driver's first tree; records what it is handed.
    Only what it changes is written: the rest is the base class's local default (no check of the settings)."""

    name = "recording"

    def __init__(self) -> None:
        self.phases: list[SearchPhase] = []
        self.evaluated: list[int] = []  # proposal ids, as evaluated through this executor's runner
        self.several: list[list[str]] = []  # the targets of each tune of several

    def validate(self, options: TuneOptions) -> None:
        if options.jobs != 1:
            raise ConfigError("--executor recording evaluates one candidate at a time: leave out --jobs")

    def local_trees(self, jobs: int, benchmark_slots: int) -> int:
        return 1

    @contextmanager
    def workers(self, phase: SearchPhase, trees: Sequence[WorkerTree]) -> Iterator[Workers]:
        self.phases.append(phase)
        yield Workers(_RecordingRunner(phase.known, self.evaluated), trees[:1])

    def tune_targets(self, options: TuneOptions, targets: list[str],
                     one_after_another: Callable[[], list[TargetResult]]) -> list[TargetResult]:
        self.several.append(list(targets))
        return one_after_another()


@pytest.fixture
def recording(monkeypatch: pytest.MonkeyPatch) -> RecordingExecutor:
    """The double, registered for one test (the registry as it was afterwards)."""
    monkeypatch.setattr(registry, "_REGISTERED", dict(registry._REGISTERED))
    executor = RecordingExecutor()
    register_executor(executor)
    return executor


def test_a_built_in_name_cannot_be_taken_and_an_unknown_one_is_refused_naming_the_choices() -> None:
    taken = RecordingExecutor()
    taken.name = "local"
    with pytest.raises(ConfigError, match="taken by a built-in executor"):
        register_executor(taken)
    with pytest.raises(ConfigError, match=r"--executor must be one of local, ray.*not 'nowhere'"):
        get_executor("nowhere")


@pytest.mark.slow
def test_a_registered_executor_tunes_every_target_with_the_timeouts_derived_from_each_baseline(
        tmp_path: Path, recording: RecordingExecutor, capsys: pytest.CaptureFixture[str]) -> None:
    assert "recording" in executor_names()
    source = tmp_path / "transient src"
    shutil.copytree(PROJECT, source)
    # Each target's own OBJECTIVES: kern's stack_bytes, timer's time (a host TEST DOUBLE of a benchmark, its time
    # computed from X). Not one static objective for both: timer has no kernel, so its static figures are 0 at the
    # defaults, and a tune whose baseline is at every objective's bound ends before any candidate reaches an executor.
    common = ["-S", str(source), "-B", str(tmp_path / "build"), "--executor", "recording",
              "--generations", "1", "--pool-size", "2", "--no-pin",
              "--cmake-arg=-DTIMER_PARAMS=X=range(0,3)", "--cmake-arg=-DKERN_PARAMS=X=range(0,3)"]
    # Its own refusal, said as any option's: exit code 2, before anything is configured.
    assert main(["tune", "--all", *common, "--jobs", "2"]) == 2
    assert "--executor recording evaluates one candidate at a time" in capsys.readouterr().err
    assert not (tmp_path / "build").exists()

    assert main(["tune", "--all", *common]) == 0
    said = capsys.readouterr()
    assert recording.several == [["kern", "timer"]], said.err
    assert [phase.manifest.target for phase in recording.phases] == ["kern", "timer"]
    limits = [line.split("timeouts from the baseline: ")[1] for line in said.err.splitlines()
              if "timeouts from the baseline: " in line]
    assert [f"compile {p.timeouts.compile:g} s, benchmark run {p.timeouts.benchmark:g} s" for p in recording.phases] \
        == [limit.split(" (")[0] for limit in limits], said.err
    assert "tune --all: 2 target(s), 0 failed" in said.out, said.out
    # Every candidate journaled by both tunes went through this executor's runner.
    journaled = [line for target in ("kern", "timer")
                 for line in (tmp_path / "build" / "ciq" / "journal" / f"{target}.jsonl").read_text().splitlines()
                 if json.loads(line).get("kind") == "evaluation" and json.loads(line)["params"]]
    assert len(journaled) >= 2 and len(recording.evaluated) == len(journaled), (recording.evaluated, journaled)
