"""The space a tune searches, made again once the baseline's registers fit the register cap (real nvcc probes)."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from ciq_build.compiler.controls import Controls
from ciq_build.compiler.toolchain import find_toolchain
from ciq_build.core.objectives import parse_objectives
from ciq_build.core.settings import MeasureSettings, SearchSettings
from ciq_build.errors import ConfigError
from ciq_build.search.base import Proposal
from ciq_build.search.evaluation import Evaluation
from ciq_build.search.select import REGISTER_CAP_RULE
from ciq_build.state.journal import Journal
from ciq_build.tune.cache import EvaluationCache
from ciq_build.tune.confirm import Confirmer
from ciq_build.tune.searched_space import SearchedSpace
from ciq_build.tune.timeouts import Timeouts
from support import bare_manifest


def searched(tmp_path: Path, *kinds: str, objectives: tuple[str, ...] = ("registers",),
             params: tuple[str, ...] = ("TILE=8,16",), generator: str = "Ninja",
             cuda_flags: tuple[str, ...] = ()) -> SearchedSpace:
    manifest = bare_manifest(tmp_path, params=params, constraints=(), generator=generator,
                             allow_numerics=bool(cuda_flags), cuda_flags=cuda_flags)
    settings = SearchSettings(controls=kinds, strategy="random", seed=1, seed_from=("-DTILE=48",) if params else (),
                              allow_numerics=bool(cuda_flags))
    return SearchedSpace(settings, manifest, find_toolchain(), parse_objectives(list(objectives)), tmp_path / "acf")


def baseline(registers: float) -> Evaluation:
    return Evaluation("b", Proposal(-1, 0, {}), Controls(), True, None, "", {"registers": registers}, {},
                      (registers,), 1.0)


def test_the_register_cap_is_fitted_to_the_baseline_said_once_and_named_in_the_header(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    space = searched(tmp_path, "knobs", "params")
    said: list[str] = []
    with caplog.at_level(logging.WARNING, logger="ciq_build"):
        first = space.source()  # before anything is built: the catalogue's grid, the space checked
        fitted = space.fitted(baseline(40.0), said.append)
    # The header names the rule, not values the baseline decides: a resume finds the same search.
    assert space.described(first)["register_cap"] == REGISTER_CAP_RULE
    assert first.describe()["search_space"]["knob.maxrregcount"]["type"] == "range"
    assert fitted.describe()["search_space"]["knob.maxrregcount"]["values"] == [32]
    assert said[0] == ("register cap: -maxrregcount 32 (below the defaults' 40 registers; a cap at or above what "
                       "a kernel uses leaves its code as it is)")
    assert said[1].startswith("search space: 2 PARAMS combinations x ")
    # A seed that does not fit is said once, by the source that searches, not by the one made to check the space.
    assert caplog.text.count("-DTILE=48 is not among the controls this tune searches") == 1
    # Deterministic: the same baseline, the same candidates.
    again = space.fitted(baseline(40.0), said.append)
    assert [p.params for p in again.ask()] == [p.params for p in fitted.ask()]
    # 26 registers: no cap below can change anything: the knob is left out, and said.
    small = space.fitted(baseline(26.0), said.append)
    assert "knob.maxrregcount" not in small.describe()["search_space"]
    assert said[-2].startswith("register cap: left out of the search: the defaults' kernels use at most 26 registers")
    # Without knobs nothing is fitted, and the header is as it was.
    params = searched(tmp_path, "params")
    assert not params.fitting and "register_cap" not in params.described(params.source())


def test_a_tune_of_some_kernels_registers_fits_the_register_cap_below_those_kernels_registers(tmp_path: Path) -> None:
    # stdgpu's unordered_map example: 28 kernels, the most registers (64) CUB's, whose __launch_bounds__ keep them
    # under any cap; its own insert_neighbors uses 49. Fitted to the 64, the cap's values were 32..56, and 56 (a
    # quarter of them) left the scored kernel's code as it was.
    space = searched(tmp_path, "knobs", objectives=("registers:insert_neighbors", "spill_bytes:insert_neighbors"))
    said: list[str] = []
    defaults = Evaluation("b", Proposal(-1, 0, {}), Controls(), True, None, "",
                          {"registers": 64.0, "registers:insert_neighbors": 49.0, "spill_bytes:insert_neighbors": 0.0},
                          {}, (49.0, 0.0), 1.0)
    values = space.fitted(defaults, said.append).describe()["search_space"]["knob.maxrregcount"]["values"]
    assert values == [32, 40, 48]
    assert said[0].startswith("register cap: -maxrregcount 32, 40, 48 (below the 49 registers of the kernels "
                              "registers:insert_neighbors scores;")
    # Where a registers objective scores every kernel, the whole target's most sets the cap, as before.
    both = searched(tmp_path, "knobs", objectives=("registers:insert_neighbors", "registers"))
    values = both.fitted(defaults, said.append).describe()["search_space"]["knob.maxrregcount"]["values"]
    assert values == [32, 40, 48, 56]


class BuildingTree:
    """TEST DOUBLE for the baseline's tree: counts the builds it is asked for."""

    def __init__(self) -> None:
        self.builds = 0

    def build(self, controls: Controls, timeout: float, static_only: bool = False, *, benchmark: bool = True) -> Any:
        self.builds += 1
        return SimpleNamespace(ok=True, message="", objects=())


def resumed_baseline(tmp_path: Path, journaled: float, built: float) -> tuple[Evaluation, BuildingTree, list[str]]:
    """The baseline a resume trusts, its journal saying `journaled` registers and a fresh build `built` (checked
    as the tune does before it fits the register cap, ciq_build.tune.driver); the builds asked, what was said."""
    objectives = parse_objectives(["spill_bytes"])  # registers not an objective: the cap's fit checks them still
    journal = Journal(tmp_path / f"kern-{journaled:g}.jsonl")
    header = {"target": "kern", "objectives": [o.spec for o in objectives]}
    said: list[str] = []
    first = EvaluationCache(journal, objectives, said.append)
    first.open(header)
    first.record(Evaluation("defaults", Proposal(-1, 0, {}), Controls(), True, None, "",
                            {"spill_bytes": 0.0, "registers": journaled}, {}, (0.0,), 3.9), reuse=True)
    later = EvaluationCache(journal, objectives, said.append)
    later.open(header)
    cached = later.lookup(Proposal(-1, 0, {}), Controls(), "defaults")
    assert cached is not None and cached.cached
    runner: Any = SimpleNamespace(needs_benchmark=False, links=False,
                                  static_metrics=lambda _, __: {"spill_bytes": 0.0, "registers": built})
    confirmer = Confirmer(runner, later, objectives, MeasureSettings(), Timeouts(60.0, 60.0), "knee", "kern",
                          said.append, said.append)
    tree = BuildingTree()
    tree_arg: Any = tree
    trusted = confirmer.trusted_baseline(cached, tree_arg, also=("registers",))
    assert confirmer.trusted_baseline(trusted, tree_arg, also=("registers",)) is trusted  # checked once a run
    assert tree.builds == 1
    return trusted, tree, said


def test_a_resume_fits_the_register_cap_to_the_baseline_a_fresh_build_corrected(tmp_path: Path) -> None:
    # simpleGEMM: the journal said 56 registers (sm_75's code under sm_90's key), the baseline's rebuild at the
    # confirmation found 222, but the cap had been fitted to the journal's 56 already: 32..52, none of use.
    space = searched(tmp_path, "knobs")
    said: list[str] = []
    stale, _, told = resumed_baseline(tmp_path, 56.0, 222.0)
    assert stale.metrics["registers"] == 222.0
    assert any("registers 56 for the baseline is not what a fresh build measures (registers 222)" in line
               for line in told), told
    values = space.fitted(stale, said.append).describe()["search_space"]["knob.maxrregcount"]["values"]
    assert values[0] == 104 and values[-1] == 216, values  # as the trial's --fresh tune (4): 104..216
    # A plain resume (the journal right): the journal's baseline itself, so the same space, the same candidates.
    right, _, told = resumed_baseline(tmp_path, 40.0, 40.0)
    assert not any("not what a fresh build measures" in line for line in told)
    resumed = space.fitted(right, said.append)
    assert [p.params for p in resumed.ask()] == [p.params for p in space.fitted(baseline(40.0), said.append).ask()]


@pytest.mark.parametrize(("generator", "where"), [
    ("Ninja", "ciq_tune_target() declares none: add PARAMS NAME=a,b,c (docs/cmake.md: PARAMS) and configure again"),
    ("setuptools", 'its CudaExtension declares none: add params=["NAME=a,b,c"] (docs/setuptools.md)'),
])
def test_searching_params_of_a_target_without_params_says_what_to_declare_or_to_search_the_knobs(
        tmp_path: Path, generator: str, where: str) -> None:
    # llm.c's layernorm_forward, `tune --controls params` without PARAMS, was told "SEARCH_SPACE ['params'] gives
    # no parameters (no PARAMS given, and no knob accepted by this compiler)": a Python list, a keyword it had not
    # used, and knobs nobody asked for. Refused before anything is built, in the front end's own words.
    with pytest.raises(ConfigError) as refused:
        searched(tmp_path, "params", params=(), generator=generator).source()
    assert str(refused.value) == (f"nothing to search for kern: params searches the target's PARAMS, and {where}, "
                       "or search the compiler's knobs (--controls knobs)")


def test_numerics_knobs_the_targets_own_flags_already_set_are_left_out_and_said(tmp_path: Path) -> None:
    # llm.c's softmax_forward, ALLOW_NUMERICS over its own --use_fast_math: 3,600 knob settings became 115,200, and
    # 4 of the 5 numerics flags repeat what --use_fast_math implies. -fmad=false overrules its -fmad=true: searched.
    def space(*flags: str) -> tuple[list[str], set[str], int]:
        said: list[str] = []
        source = searched(tmp_path, "knobs", params=(), cuda_flags=("-lineinfo", *flags)).fitted(baseline(40.0),
                                                                                                 said.append)
        size = re.search(r"([0-9,]+) knob settings", next(line for line in said if line.startswith("search space:")))
        assert size is not None, said
        return said, set(source.describe()["search_space"]), int(size.group(1).replace(",", ""))

    said, every, settings = space()
    numerics = {"knob.use_fast_math", "knob.ftz", "knob.prec_div", "knob.prec_sqrt", "knob.fmad"}
    assert numerics <= every and not any(line.startswith("numerics:") for line in said)
    said, fast, fewer = space("-O3", "--use_fast_math")
    assert fast == every - (numerics - {"knob.fmad"}) and fewer * 16 == settings  # 4 switches: 2**4
    assert said[0] == ("numerics: --use_fast_math, -ftz=true, -prec-div=false, -prec-sqrt=false left out of the "
                       "search: the target's own flags already set them: --use_fast_math (which implies -ftz=true "
                       "-prec-div=false -prec-sqrt=false -fmad=true); a candidate with one would repeat the target's "
                       "choice or overrule it")
