"""A tuner that knows which GPU it tunes for (ciq_build.compiler.gpu_arch), without a GPU.

The GPU is played by tests/programs/nvidia_smi_test_double/nvidia-smi, a TEST DOUBLE that reports the
compute capabilities it is given; the tunes are real (CMake, nvcc, tests/projects/sizes, whose benchmark
is itself a test double computing its "time" on the host).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ciq_build.compiler import gpu_arch
from ciq_build.compiler.architectures import flag_architectures
from ciq_build.compiler.gpu_arch import has_sass_for, plan_architectures, read_gpu_arch, runs_on, scored_architecture
from ciq_build.errors import ConfigError
from support import REPO_ROOT

DOUBLE = REPO_ROOT / "tests" / "programs" / "nvidia_smi_test_double"
SIZES = REPO_ROOT / "tests" / "projects" / "sizes"


def _gpu_env(caps: str, **extra: str) -> dict[str, str]:
    return {**os.environ, "PATH": f"{DOUBLE}{os.pathsep}{os.environ['PATH']}", "CIQ_TEST_DOUBLE_COMPUTE_CAPS": caps,
            **extra}


@pytest.mark.parametrize(("entry", "gpu", "runs"), [
    ("90a", 90, True), ("90", 90, True), ("90-real", 90, True), ("90-virtual", 90, False),
    ("75", 90, False), ("80", 86, True), ("86", 80, False), ("90a", 100, False), ("100a", 103, False),
    ("100f", 103, True), ("120", 120, True), ("native", 90, True), ("all", 75, True),
])
def test_machine_code_runs_on_the_same_major_with_an_equal_or_newer_minor(entry: str, gpu: int, runs: bool) -> None:
    assert runs_on(entry, gpu) is runs


def test_the_scored_architecture_is_the_one_named_else_the_gpus_else_the_first() -> None:
    nine = "75;80;86;89;90;100;103;110;120"  # a new user's nine-architecture build
    assert scored_architecture(nine, 90, None)[0] == "90"
    assert scored_architecture(nine, 90, "sm_120")[0] == "120"
    assert scored_architecture(nine, None, None) == ("75", "the first of CUDA_ARCHITECTURES; --architecture names "
                                                           "another")
    assert scored_architecture("75;86", 90, None)[0] == "75"  # nothing runs on it: the first, said so
    assert "none runs on the benchmark GPU, sm_90" in scored_architecture("75;86", 90, None)[1]
    assert scored_architecture("90a", 90, None)[0] == "90a"
    assert scored_architecture("", 90, None)[0] is None
    assert has_sass_for("75;90a", 90) and not has_sass_for("75", 90) and not has_sass_for("90-virtual", 90)


def test_a_static_objective_is_refused_where_the_gpu_runs_jit_compiled_ptx() -> None:
    plan = plan_architectures("kern", "75", 90, None, [], True)  # time alone: said, not refused
    assert plan.jit is not None and "no machine code for the benchmark's GPU (sm_90)" in plan.jit
    assert "CUDA_ARCHITECTURES to 90" in plan.jit
    with pytest.raises(ConfigError, match=r"registers would be read from the sm_75 machine code of kern, but the "
                                          r"benchmark's GPU \(sm_90\) runs PTX JIT-compiled"):
        plan_architectures("kern", "75", 90, None, ["registers"], True)
    assert plan_architectures("kern", "75;90", 90, None, ["registers"], True).jit is None
    assert plan_architectures("kern", "75", None, None, ["registers"], True).jit is None  # no GPU read: nothing said
    said = plan_architectures("kern", "75;90a", 90, None, ["registers"], True).describe()
    assert said == "times on a GPU of sm_90; static metrics of the sm_90a machine code (the benchmark GPU's (sm_90))"
    # Static objectives alone on a machine with a GPU: its architecture is scored, and no time is said to be of it.
    static = plan_architectures("kern", "75;90a", 90, None, ["registers"], False)
    assert static.describe() == "static metrics of the sm_90a machine code (this machine's GPU's (sm_90))"
    assert static.gpu is None and static.provenance() == {"static_metrics": "sm_90a"}


def test_machine_code_the_targets_own_flags_build_is_read_and_said() -> None:
    # cuda-ground-up's CMakeLists sets CMAKE_CUDA_ARCHITECTURES and, in CMAKE_CUDA_FLAGS, -arch=sm_75: moved to 90, its
    # tune said "static metrics of the sm_90 machine code (the only architecture built)" beside "not scored: sm_75".
    assert flag_architectures(["-arch=sm_75", "--std=c++17", "-Xptxas=-v"]) == {"75": "-arch=sm_75"}
    assert flag_architectures(["-gencode", "arch=compute_80,code=[sm_80,compute_80]", "-arch=native",
                               "--generate-code=arch=compute_90a,code=sm_90a", "-arch=compute_86"]) == {
        "80": "-gencode arch=compute_80,code=[sm_80,compute_80]", "90a": "--generate-code=arch=compute_90a,code=sm_90a"}
    plan = plan_architectures("kernels", "90", None, None, ["registers"], False, {"75": "-arch=sm_75"})
    assert plan.built == "90;75" and plan.scored == "90"
    assert plan.describe() == ("static metrics of the sm_90 machine code (the first of CUDA_ARCHITECTURES; "
                               "--architecture names another)")
    assert plan.flags == (
        "kernels's own nvcc flags (-arch=sm_75) build sm_75 machine code too, which CUDA_ARCHITECTURES (90) does not "
        "name: every candidate compiles it as well, its figures are the 'not scored' ones, and a pin is checked "
        "against CUDA_ARCHITECTURES alone. To tune only what you run, take -arch=sm_75 out of the flags "
        "(CMAKE_CUDA_FLAGS, target_compile_options) and list the architectures in CMAKE_CUDA_ARCHITECTURES")
    # npcuda-example's trial: a CudaExtension's -arch in its nvcc flags was told to edit CMAKE_CUDA_FLAGS.
    ext = plan_architectures("gpuadder", "90a", None, None, ["registers"], False, {"80": "-arch=sm_80"},
                             setuptools=True)
    assert ext.describe() == ("static metrics of the sm_90a machine code (the first of cuda_architectures=; "
                              "--architecture names another)")
    assert ext.flags is not None and ext.flags.endswith(
        "which cuda_architectures= (90a) does not name: every candidate compiles it as well, its figures are the "
        "'not scored' ones, and a pin is checked against cuda_architectures= alone. To tune only what you run, take "
        "-arch=sm_80 out of the flags (nvcc_flags= or extra_compile_args['nvcc']) and list the architectures in "
        "cuda_architectures="), ext.flags
    same = plan_architectures("kernels", "75", None, None, ["registers"], False, {"75": "-arch=sm_75"})  # as shipped
    assert same.flags is None and same.built == "75" and same.describe().endswith("(the only architecture built)")


def test_a_build_for_native_is_said_to_pin_what_any_gpu_applies() -> None:
    # A newcomer's static tune of a project built for "native" on a machine without a GPU measured nvcc's default
    # architecture and pinned a record "tuned for native", which a build on any GPU applies, without a word.
    assert plan_architectures("kern", "90a;100", None, None, ["registers"], False).native is None
    alone = plan_architectures("gemm", "native", None, None, ["registers"], False).native
    assert alone == ("gemm is built for CUDA_ARCHITECTURES native, the GPU of whichever machine builds it (nvcc's "
                     "default architecture on a machine without one): the figures describe this machine's code, but "
                     "the pin, tuned for \"native\", is applied by a build on any GPU. Set CUDA_ARCHITECTURES to the "
                     "architectures you run on (e.g. 90a) to tune and pin those")
    among = plan_architectures("gemm", "90a;NATIVE", 90, None, [], True).native
    assert among is not None and "(here sm_90)" in among
    static = plan_architectures("gemm", "native", 90, None, ["registers"], False).native  # a GPU here, no benchmark
    assert static is not None and "(here sm_90)" in static


def test_architectures_the_project_did_not_choose_are_said_with_what_to_set() -> None:
    # CMake's default with CUDA 13 on an H100: "architectures: 75" and "the only architecture built" said nothing of
    # whose choice sm_75 was.
    note = plan_architectures("gemm", "75", 90, None, [], True, defaulted=True, build_dir="/p/build").default
    assert note == ("gemm is built for sm_75, CMake's default for this nvcc, as the project sets no "
                    "CMAKE_CUDA_ARCHITECTURES: the candidates are compiled for it alone, and the pin is checked "
                    "against it. To tune for the GPUs you run on, set them and configure again (e.g. cmake "
                    "-DCMAKE_CUDA_ARCHITECTURES=90 /p/build, or set(CMAKE_CUDA_ARCHITECTURES 90) before project() "
                    "in CMakeLists.txt)")
    said: list[str] = []
    plan_architectures("gemm", "75", None, None, ["registers"], False, defaulted=True,
                       build_dir="/p/build").say(said.append, said.append)
    assert said[0].startswith("gemm is built for sm_75, CMake's default") and "=90a /p/build" in said[0]
    assert said[1] == "figures: static metrics of the sm_75 machine code (the only architecture built)"
    # cuda-api-wrappers' examples: CMake's default 75, and -gencode flags of their own for 80 and 86, which every
    # candidate compiles too: "compiled for it alone" was false beside the flags' line.
    flags = {"80": "-gencode arch=compute_80,code=sm_80", "86": "-gencode arch=compute_86,code=sm_86"}
    beside = plan_architectures("gemm", "75", None, None, ["registers"], False, flags, defaulted=True,
                                build_dir="/p/build")
    assert beside.default is not None and beside.flags is not None
    assert ("the candidates are compiled for it (and for what its own nvcc flags build, said below), and the pin "
            "is checked against it.") in beside.default
    none = plan_architectures("gemm", "", None, None, ["registers"], False, build_dir="/p/build").default
    assert none is not None and none.startswith("gemm is built for nvcc's default architecture, as the project")
    # The project's own choice, or a setuptools extension (no CMake tree to configure): nothing said.
    assert plan_architectures("gemm", "75", 90, None, [], True, build_dir="/p/build").default is None
    assert plan_architectures("gemm", "", 90, None, [], True, defaulted=True).default is None


def test_the_gpu_is_the_first_visible_device_read_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gpu_arch, "_KNOWN", {})
    calls = tmp_path / "calls"
    env = _gpu_env("9.0,8.6,12.0", CIQ_TEST_DOUBLE_CALLS=str(calls))
    assert read_gpu_arch(env) == 90
    assert read_gpu_arch({**env, "CUDA_VISIBLE_DEVICES": "2,0"}) == 120
    assert read_gpu_arch({**env, "CUDA_VISIBLE_DEVICES": "1"}) == 86
    assert read_gpu_arch(env) == 90
    assert len(calls.read_text().splitlines()) == 3  # once per device
    assert read_gpu_arch({**env, "CUDA_VISIBLE_DEVICES": "7"}) is None  # no such GPU: unknown
    assert read_gpu_arch({"PATH": str(tmp_path)}) is None  # no nvidia-smi: unknown


def _tune(tmp_path: Path, architectures: str, caps: str, *objectives: str,
          cuda_flags: str = "") -> subprocess.CompletedProcess[str]:
    """A tune of tests/projects/sizes copied to `tmp_path`; where it was copied already, the same tune again."""
    source, build = tmp_path / "src", tmp_path / "build"
    if not source.exists():
        shutil.copytree(SIZES, source)
    command = [sys.executable, "-m", "ciq_build", "tune", "size_bench", "-S", str(source), "-B", str(build),
               "--max-evaluations", "2", "--pool-size", "2", "--repeats", "1", "--controls", "params",
               f"--cmake-arg=-DCMAKE_CUDA_ARCHITECTURES={architectures}",
               *([f"--cmake-arg=-DCMAKE_CUDA_FLAGS={cuda_flags}"] if cuda_flags else []),
               *(f"--objective={o}" for o in objectives)]
    return subprocess.run(command, capture_output=True, text=True, timeout=900, cwd=source, env=_gpu_env(caps))


@pytest.mark.slow
def test_a_tune_says_before_its_search_that_the_gpu_will_run_jit_compiled_ptx(tmp_path: Path) -> None:
    # CMake's default with CUDA 13 (75) on an H100 (9.0): the cuda-samples tune that said nothing.
    tuned = _tune(tmp_path / "jit", "75", "9.0", "time")
    assert tuned.returncode == 0, tuned.stderr
    said = tuned.stderr.splitlines()
    jit = next(i for i, line in enumerate(said) if "no machine code for the benchmark's GPU (sm_90)" in line)
    assert jit < next(i for i, line in enumerate(said) if line.startswith("ciq_build: baseline:"))
    assert "figures: times on a GPU of sm_90 (JIT-compiled PTX)" in tuned.stdout
    journal = (tmp_path / "jit" / "build" / "ciq" / "journal" / "size_bench.jsonl").read_text().splitlines()
    measured = [r for r in map(json.loads, journal) if r.get("kind") == "evaluation" and r["ok"]]
    assert measured and all(r["metrics"]["gpu_sm"] == 90 for r in measured)  # each time says its GPU
    refused = _tune(tmp_path / "refused", "75", "9.0", "time", "registers")
    assert refused.returncode != 0
    assert "registers would be read from the sm_75 machine code of size_bench" in refused.stderr


@pytest.mark.slow
def test_a_static_objective_scores_the_gpus_architecture_and_shows_the_others(tmp_path: Path) -> None:
    # Static objectives alone, on a machine whose GPU is 9.0: before, with no benchmark to run, no GPU was read
    # and the first architecture (sm_75) was scored; an H100 showed it (docs/results/gpu-arch-h100.txt).
    tuned = _tune(tmp_path, "75;90a", "9.0", "registers")
    assert tuned.returncode == 0, tuned.stderr
    assert "figures: static metrics of the sm_90a machine code (this machine's GPU's (sm_90))" in tuned.stdout
    unscored = [line for line in tuned.stderr.splitlines() if line.startswith("ciq_build: not scored: sm_75 registers")]
    assert len(unscored) == 1, tuned.stderr
    # Resumed, its baseline from the journal: the line was said before the baseline was rebuilt, so never (stdgpu).
    resumed = _tune(tmp_path, "75;90a", "9.0", "registers")
    assert resumed.returncode == 0, resumed.stderr
    assert "baseline: registers" in resumed.stderr and "(from the journal)" in resumed.stderr
    assert unscored[0] in resumed.stderr.splitlines(), resumed.stderr


@pytest.mark.slow
def test_a_tune_says_which_machine_code_the_targets_own_flags_add(tmp_path: Path) -> None:
    # cuda-ground-up: CMAKE_CUDA_FLAGS' -arch=sm_75 beside CUDA_ARCHITECTURES 90(a): the tune called sm_90a "the only
    # architecture built", then listed sm_75 as "not scored" with figures as floats ("registers 80.0").
    tuned = _tune(tmp_path, "90a", "9.0", "registers", cuda_flags="-arch=sm_75")
    assert tuned.returncode == 0, tuned.stderr
    assert "size_bench's own nvcc flags (-arch=sm_75) build sm_75 machine code too" in tuned.stderr
    assert "figures: static metrics of the sm_90a machine code (this machine's GPU's (sm_90))" in tuned.stdout
    unscored = [line for line in tuned.stderr.splitlines() if line.startswith("ciq_build: not scored: sm_75 ")]
    assert len(unscored) == 1 and re.fullmatch(r"ciq_build: not scored: sm_75 registers \d+", unscored[0]), tuned.stderr


def test_machine_code_only_the_targets_own_flags_build_is_said_to_be_scored_and_pinned_for_any() -> None:
    # CUDA_ARCHITECTURES naming none and `-arch=sm_90` in a generator expression, which configure does not read: the
    # tune said both "built for nvcc's default architecture" and "sm_90 machine code too ... the 'not scored' ones",
    # then scored sm_90, and pinned a record that names no architecture.
    plan = plan_architectures("bude", "", None, None, ["registers"], False, {"90": "-arch=sm_90"},
                              build_dir="/p/build")
    assert plan.built == "90" and plan.scored == "90" and plan.default is None
    assert plan.flags == (
        "bude's own nvcc flags (-arch=sm_90) build sm_90, and no architecture list names it: the figures are of that "
        "code, but the pin will name no architecture, so a build for any other applies it too. List the "
        "architectures in CMAKE_CUDA_ARCHITECTURES (setuptools: cuda_architectures=) in place of the flags, or write "
        "them where configure reads them: CMAKE_CUDA_FLAGS, or target_compile_options without a generator expression")
