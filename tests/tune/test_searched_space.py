"""The space a tune searches, made again once the baseline's registers fit the register cap (real nvcc probes)."""

from __future__ import annotations

import logging
import re
import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from ciq_build.compiler.controls import Controls, register_caps
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
    assert said[0] == ("register cap: -maxrregcount 32 (below the defaults' 40 registers; a cap above what a "
                       "kernel uses cannot lower its registers)")
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


# Three kernels of 16 values live at once, two declaring __launch_bounds__ (a block size alone, and with blocks an SM).
BOUNDED_CU = """
template <int B> __device__ float body(const float* x, int n) {
  float v[16];
#pragma unroll
  for (int i = 0; i < 16; ++i) v[i] = x[threadIdx.x + i * n];
  float s = 0;
#pragma unroll
  for (int i = 0; i < 16; ++i)
#pragma unroll
    for (int j = 0; j < 16; ++j) s += v[i] * v[j] + B;
  return s;
}
__global__ void __launch_bounds__(256) sized(const float* x, float* y, int n) { y[threadIdx.x] = body<1>(x, n); }
__global__ void __launch_bounds__(256, 2) resident(const float* x, float* y, int n) { y[threadIdx.x] = body<2>(x, n); }
__global__ void free_kernel(const float* x, float* y, int n) { y[threadIdx.x] = body<3>(x, n) * n; }
"""


def test_the_register_cap_is_fitted_below_the_kernels_that_declare_no_launch_bounds(
        tmp_path: Path, cuda133_bin: Path) -> None:
    # salykova's sgemm.cu: its GEMMs declare __launch_bounds__ (214 and 128 registers), kernel_basic none (32). The cap
    # was fitted below the 214, "-maxrregcount 104..208", which ptxas ignores for a kernel with bounds: its GEMMs kept
    # 214 and 128 registers under a cap of 104, and the search's cap could only reach kernel_basic.
    from ciq_build.compiler.metrics import parse_ptxas_verbose
    from ciq_build.compiler.toolchain import load_toolchain
    from ciq_build.measure.gpu_slots import GpuSlots
    from ciq_build.project.worker import CandidateBuild
    from ciq_build.tune.runner import BuildRunner

    (tmp_path / "bounded.cu").write_text(BOUNDED_CU)

    def compiled(*flags: str) -> CandidateBuild:
        obj = tmp_path / "bounded.o"
        done = subprocess.run([str(cuda133_bin / "nvcc"), "-arch=sm_90", "-Xptxas=-v", *flags, "-c",
                               str(tmp_path / "bounded.cu"), "-o", str(obj)], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return CandidateBuild(True, None, "", 1.0, done.stdout + done.stderr, objects=(obj,))

    defaults = compiled()
    registers = {usage.function: usage.registers for usage in parse_ptxas_verbose(defaults.compiler_output)}
    capped = {usage.function: usage.registers for usage in parse_ptxas_verbose(compiled("-maxrregcount=24").compiler_output)}
    unbounded = registers.pop("_Z11free_kernelPKfPfi")
    assert capped.pop("_Z11free_kernelPKfPfi") == 24 and capped == registers  # the premise: the cap binds one kernel
    runner = BuildRunner(None, load_toolchain(cuda133_bin / "nvcc"), parse_objectives(["registers"]), 1,
                         Timeouts(60.0, 60.0), GpuSlots())
    figures = runner.static_metrics(defaults, Controls())  # the bounds read from the object's cubin
    assert figures["kernels_with_launch_bounds"] == 2 and figures["registers_without_launch_bounds"] == unbounded
    assert "kernels_with_launch_bounds" not in runner.static_metrics(defaults, Controls(flags=("-maxrregcount=64",)))
    said: list[str] = []
    figures["registers"] = 214.0  # as sgemm.cu's heaviest: the cap's values follow the unbounded kernel's alone
    fitted = searched(tmp_path, "knobs").fitted(baseline_of(figures), said.append).describe()["search_space"]
    caps = list(range(32, unbounded, 8))
    assert caps and fitted["knob.maxrregcount"]["values"] == caps
    assert said[0] == (f"register cap: -maxrregcount {', '.join(map(str, caps))} (below the {unbounded} registers of "
                       "the defaults' kernels without __launch_bounds__; the 2 kernel(s) declaring __launch_bounds__ "
                       "keep the registers their bounds allow)"), said[0]
    # Every kernel bounded: the cap is left out of a static tune, and said why.
    figures["registers_without_launch_bounds"] = 0.0
    fitted = searched(tmp_path, "knobs").fitted(baseline_of(figures), said.append).describe()["search_space"]
    assert "knob.maxrregcount" not in fitted
    assert said[-2] == ("register cap: left out of the search: every kernel declares __launch_bounds__, and ptxas "
                        "does not lower their registers under -maxrregcount (tune the bounds instead, as PARAMS)")
    # A tune its benchmark scores keeps the cap below the bounded kernels' registers too: a cap does not lower
    # them, but it can change their code (a kernel of 254 registers under __launch_bounds__(256): the same
    # registers and instruction count, other SASS under caps of 64-180, the defaults' under 200-250), which only
    # the benchmark can judge.
    timed = searched(tmp_path, "knobs", objectives=("time",)).fitted(baseline_of(figures), said.append)
    assert timed.describe()["search_space"]["knob.maxrregcount"]["values"] == list(register_caps(214))
    assert said[-2].endswith("the 2 kernel(s) declaring __launch_bounds__ keep the registers their bounds allow; a "
                             "cap can still change their code, which the benchmark scores)"), said[-2]


def baseline_of(figures: dict[str, float]) -> Evaluation:
    return Evaluation("b", Proposal(-1, 0, {}), Controls(), True, None, "", figures, {}, (figures["registers"],), 1.0)


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
