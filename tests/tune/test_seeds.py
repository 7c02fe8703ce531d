"""Seeds (`tune --seed-from`): pinned records, folders of them and controls lists, evaluated first.

The reading is tested on a hand-made space in milliseconds; the last test is a
real CMake/nvcc tune of tests/projects/noop whose journal shows the seeds
evaluated first, right after the compiler's defaults.
"""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ciq_build.compiler.controls import Controls, knob
from ciq_build.core.params import parse_params
from ciq_build.core.space import Param
from ciq_build.errors import ConfigError
from ciq_build.pin.record import PinnedRecord, RecordObjective, RecordToolchain, write_record
from ciq_build.search.evolution import SearchConfiguration
from ciq_build.search.genetic import GeneticStrategy
from ciq_build.search.optuna_search import Nsga2Strategy, TpeStrategy
from ciq_build.search.random_search import RandomStrategy
from ciq_build.search.seeds import read_seeds
from ciq_build.search.strategies import SearchRequest, make_source
from support import REPO_ROOT

NOOP = REPO_ROOT / "tests" / "projects" / "noop"


def space() -> dict[str, Param]:
    return {"knob.maxrregcount": knob("maxrregcount").param(), "knob.ptxas_opt_level": knob("ptxas_opt_level").param(),
            **parse_params(["TILE=choice(16,32,64)", "VEC=choice(1,2,4)"])}


def pinned(pin_dir: Path, target: str, flags: tuple[str, ...], defines: dict[str, str]) -> Path:
    record = PinnedRecord(target=target, controls=Controls(flags=flags, defines=tuple(defines.items())),
                          toolchain=RecordToolchain("13.3", "13.3.73", "13.3.73", ("90a",)),
                          objectives=(RecordObjective("registers", "min"),))
    write_record(pin_dir, record)
    return pin_dir / f"{target}.json"


def test_a_controls_list_becomes_the_spaces_knob_and_param_values() -> None:
    seeds = read_seeds(["-maxrregcount=64 -Xptxas=-O2 -DTILE=32", "-D VEC=4", "-DTILE=32 -Xptxas=-O2 -maxrregcount=64"], space())
    # the third is the first again (in another order): each configuration once; a PARAMS value not given is
    # the parameter's first (a PARAMS parameter is never absent)
    assert seeds == [{"knob.maxrregcount": 64, "knob.ptxas_opt_level": 2, "param.TILE": 32, "param.VEC": 1},
                     {"param.TILE": 16, "param.VEC": 4}]


@pytest.mark.parametrize(("given", "said"), [
    ("-DTILE=48", "-DTILE=48 is not among the controls this tune searches"),
    ("--use_fast_math", "--use_fast_math is not among the controls this tune searches"),
    ("-DTILE", "'-DTILE' needs a value: -DTILE=VALUE"),
    ("no/such/pin.json", "--seed-from no/such/pin.json: no such file or folder"),
])
def test_what_a_controls_list_or_path_cannot_give_is_one_clear_error(given: str, said: str) -> None:
    with pytest.raises(ConfigError, match=said.replace("(", r"\(").replace(".", r"\.")):
        read_seeds([given], space())


def test_another_targets_pin_seeds_what_the_two_share_and_says_what_it_leaves_out(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    pinned(tmp_path / "pins", "other", ("-maxrregcount=96", "-Xptxas=--def-load-cache=cg"), {"TILE": "64", "ROWS": "8"})
    pinned(tmp_path / "pins", "third", (), {"VEC": "2"})
    with caplog.at_level(logging.WARNING, logger="ciq_build"):
        seeds = read_seeds([str(tmp_path / "pins")], space())  # a folder: each record in it, by name
    assert seeds == [{"knob.maxrregcount": 96, "param.TILE": 64, "param.VEC": 1}, {"param.TILE": 16, "param.VEC": 2}]
    assert "-Xptxas=--def-load-cache=cg, -DROWS=8 are not among the controls this tune searches" in caplog.text
    with pytest.raises(ConfigError, match="holds no pinned record"):
        read_seeds([str(tmp_path)], space())


def request(seeds: list[dict[str, Any]]) -> SearchRequest:
    config = SearchConfiguration(generations=2, pool_size=4, seed=3, problem_type=["min"], num_objectives=1)
    return SearchRequest(space(), config, ("registers",), seeds=tuple(seeds))


@pytest.mark.parametrize("strategy", [GeneticStrategy(), RandomStrategy(), TpeStrategy(), Nsga2Strategy()],
                         ids=["ga", "random", "tpe", "nsga2"])
def test_the_seeds_are_the_first_proposals_of_the_first_generation(strategy: Any) -> None:
    seeds = read_seeds(["-DTILE=64 -DVEC=1", "-maxrregcount=40"], space())
    proposals = make_source(strategy, request(seeds)).ask()
    firsts = [p.params for p in proposals if p.params]  # the GA proposes the defaults ({}) before them
    assert firsts[:2] == seeds and all(p.generation == 0 for p in proposals)


def test_a_strategy_that_takes_no_seeds_is_refused_naming_those_that_do() -> None:
    class Unseeded:
        name, spaces = "mine", frozenset({"grid"})

        def make(self, request: SearchRequest) -> Any:
            raise AssertionError("not reached")

    with pytest.raises(ConfigError, match="strategy 'mine' takes no seeds .* strategies that do: ga, random, tpe, nsga2"):
        make_source(Unseeded(), request([{"param.TILE": 16, "param.VEC": 2}]))


@pytest.mark.slow
def test_a_tune_evaluates_its_seeds_first_from_a_record_and_a_controls_list(tmp_path: Path) -> None:
    source, build = tmp_path / "src", tmp_path / "build"
    shutil.copytree(NOOP, source)
    record = pinned(tmp_path / "elsewhere", "other_kernels", ("-maxrregcount=64",), {"X": "2", "ROWS": "8"})
    command = [sys.executable, "-m", "ciq_build", "tune", "noop_kernels", "-S", str(source), "-B", str(build),
               "--generations", "1", "--pool-size", "3", "--no-pin", "--seed-from", str(record),
               "--seed-from=-DX=0 -DUNROLL=8"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=source)
    assert result.returncode == 0, result.stderr
    # noop's SEARCH_SPACE is params: the record's flag and its -DROWS are not searched here, and said so
    assert "-maxrregcount=64, -DROWS=8 are not among the controls this tune searches" in result.stderr
    lines = (build / "ciq" / "journal" / "noop_kernels.jsonl").read_text().splitlines()
    evaluated = [r for r in map(json.loads, filter(str.strip, lines)) if r.get("kind") == "evaluation"]
    defines = [r["controls"]["defines"] for r in evaluated]
    assert defines[:2] == [{}, {"UNROLL": "2", "X": "2"}]  # the baseline, then the seeds in the order given
    assert defines[2] == {"UNROLL": "8", "X": "0"}


def test_a_seed_the_constraints_refuse_is_left_out_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="ciq_build"):
        seeds = read_seeds(["-DTILE=64 -DVEC=4", "-DTILE=32"], space(), allows=lambda p: p["param.TILE"] < 64)
    assert seeds == [{"param.TILE": 32, "param.VEC": 1}]
    assert "--seed-from -DTILE=64 -DVEC=4: param.TILE=64 param.VEC=4 is refused by the target's CONSTRAINTS" \
        in caplog.text
