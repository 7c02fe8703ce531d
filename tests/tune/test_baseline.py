"""What a tune says of a baseline that failed: its benchmark, or no kernel to score (ciq_build.tune.baseline)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from ciq_build.compiler.controls import Controls
from ciq_build.core.causes import Cause
from ciq_build.core.objectives import parse_objectives, unbenchmarked_names
from ciq_build.measure.gpu_slots import GpuSlots
from ciq_build.pin.display import format_record
from ciq_build.pin.record import PinnedRecord, RecordObjective, RecordToolchain, ScoreSummary
from ciq_build.project.per_block import DYNAMIC_SHARED, THREADS, read_declared
from ciq_build.project.worker import CandidateBuild
from ciq_build.search.base import Proposal
from ciq_build.search.evaluation import Evaluation
from ciq_build.tune.baseline import (
    declared_size_note,
    dynamic_shared_note,
    failed_baseline_text,
    no_gpu_seen,
    no_gpu_seen_note,
)
from ciq_build.tune.cache import read_evaluation
from ciq_build.tune.confirm import Confirmation
from ciq_build.tune.finish import occupancy_steps
from ciq_build.tune.runner import BuildRunner
from ciq_build.tune.timeouts import Timeouts


def failed(cause: Cause, metrics: dict[str, float]) -> Evaluation:
    return Evaluation("b", Proposal(-1, 0, {}), Controls(), False, cause,
                      "the benchmark crashed: killed by SIGABRT\nterminate called without an active exception",
                      metrics, {}, None, 1.0)


def test_a_baseline_timed_where_no_gpu_answered_is_warned_about_as_measuring_no_gpu_work() -> None:
    # mini-nbody on a machine without a GPU: its benchmark checks no CUDA call, so every launch failed unseen and it
    # printed "65536, 15530.215" (billion interactions/s); the tune timed 20 runs, re-measured, and said nothing.
    def measured(metrics: dict[str, float]) -> Evaluation:
        return Evaluation("b", Proposal(-1, 0, {}), Controls(), True, None, "", metrics, {}, (0.064,), 1.0)

    timed = parse_objectives(["time"])
    note = no_gpu_seen_note("nbody_unroll", timed, measured({"time_ms": 0.064}))
    assert note.startswith(f"warning: {no_gpu_seen()} where the benchmark of nbody_unroll ran, yet it "
                           "printed its figures")
    assert f"--objective, one of {unbenchmarked_names()}" in note
    assert no_gpu_seen_note("nbody_unroll", timed, measured({"time_ms": 0.064, "gpu_sm": 90.0})) == ""
    assert no_gpu_seen_note("nbody_unroll", parse_objectives(["registers"]), measured({"registers": 40.0})) == ""


def test_a_baseline_benchmark_that_failed_where_no_gpu_answered_says_so_and_what_to_tune_instead() -> None:
    # stdgpu's unordered_map example on a machine without a GPU aborts on its first CUDA call without printing the
    # runtime's words: the tune said "Fix the build or benchmark first", and a newcomer went looking for a bug.
    text = failed_baseline_text("unordered_map", failed(Cause.BENCH_SIGNAL, {"registers": 64.0}))
    assert text.startswith("the baseline of unordered_map (no compiler controls) failed: bench_signal: the "
                           "benchmark crashed: killed by SIGABRT\nterminate called without an active exception\n")
    assert f"{no_gpu_seen()} where the benchmark ran, which is likely why it failed" in text
    assert f"--objective, one of {unbenchmarked_names()}" in text
    assert "Fix the build or benchmark first" not in text
    # Where a GPU ran it, or the build failed, the benchmark or the build is what to fix.
    # A run that ended well without its metric says why itself: a METRIC regex that matched no line is not the GPU.
    for cause, metrics in ((Cause.BENCH_SIGNAL, {"gpu_sm": 90.0}), (Cause.COMPILE_FAILED, {}), (Cause.NO_METRIC, {})):
        text = failed_baseline_text("unordered_map", failed(cause, metrics))
        assert "nvidia-smi" not in text and text.endswith("nothing can be compared to a failing baseline.")


def test_a_baseline_benchmark_the_loader_could_not_start_names_the_library_and_its_folder_not_the_gpu(
        tmp_path: Path) -> None:
    # cuda_hgemv's benchmark links cuBLAS, whose pip wheel is on no default library path: the loader stopped it
    # (exit 127) and the tune said that no GPU was "likely why it failed", which a GPU machine would not change.
    (tmp_path / "cublas.c").write_text("int cublas_version(void) { return 13; }\n")
    (tmp_path / "bench.c").write_text("int cublas_version(void);\nint main(void) { return cublas_version() - 13; }\n")
    lib = tmp_path / "toolkit" / "lib"
    lib.mkdir(parents=True)
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(lib / "libfakeblas.so.13"), str(tmp_path / "cublas.c"),
                    "-Wl,-soname,libfakeblas.so.13"], check=True)
    (lib / "libfakeblas.so").symlink_to("libfakeblas.so.13")
    subprocess.run(["cc", "-o", str(tmp_path / "bench"), str(tmp_path / "bench.c"), f"-L{lib}", "-lfakeblas"],
                   check=True)
    run = subprocess.run([str(tmp_path / "bench")], capture_output=True, text=True,
                         env={"PATH": "/usr/bin:/bin"})  # the loader's own words, as a tune's run gets them
    assert run.returncode == 127
    evaluated = Evaluation("b", Proposal(-1, 0, {}), Controls(), False, Cause.BENCH_EXIT,
                           f"the benchmark exited with code 127\n{run.stderr}", {}, {}, None, 1.0)
    text = failed_baseline_text("hgemv_kernels", evaluated, [tmp_path / "toolkit" / "lib64", lib])
    assert "nvidia-smi" not in text and "Fix the build or benchmark first" not in text
    assert ("The benchmark did not start: the dynamic loader found no libfakeblas.so.13, a shared library it "
            f"links (with or without a GPU). It is in {lib}, the CUDA toolkit's, on no default path: run the tune "
            f"with LD_LIBRARY_PATH={lib}") in text
    # Not in the toolkit: what to do without a folder to name.
    text = failed_baseline_text("hgemv_kernels", evaluated, [tmp_path / "toolkit" / "lib64"])
    assert "found no libfakeblas.so.13" in text and "put its folder on LD_LIBRARY_PATH" in text


# What ptxas -v says of a .cu file holding device functions only, compiled relocatable (-rdc=true, CMake's
# CUDA_SEPARABLE_COMPILATION): robertmaynard/code-samples' particles library, nvcc 13.3.
DEVICE_FUNCTIONS_ONLY = (
    "[1/2] Building CUDA object CMakeFiles/particles.dir/particle.cu.o\n"
    "ptxas info    : 0 bytes gmem\n"
    "ptxas info    : Function properties for _ZN8particle7advanceEf\n"
    "    32 bytes stack frame, 28 bytes spill stores, 28 bytes spill loads\n"
    "ptxas info    : Compile time = 3.118 ms\n")


class DeviceFunctionsTree:
    """TEST DOUBLE for a worker tree: its build reports DEVICE_FUNCTIONS_ONLY, as the real one's did."""

    def build(self, controls: Controls, timeout: float, static_only: bool = False, *,
              benchmark: bool = True) -> CandidateBuild:
        return CandidateBuild(True, None, "", 1.4, DEVICE_FUNCTIONS_ONLY)


def test_a_baseline_of_a_target_without_kernels_says_ptxas_found_none_and_what_to_tune_instead() -> None:
    # A new user tuned the particles library (the code), whose kernel lives in the test executable that links it:
    # the tune said "no_metric: no value for objective(s) spill_bytes, registers ... Fix the build or benchmark first".
    runner = BuildRunner(None, None, parse_objectives(["spill_bytes", "registers"]), 1, Timeouts(60.0, 60.0),
                         GpuSlots())
    manifest: Any = SimpleNamespace(target="particles", cuda_sources=(Path("/p/particle.cu"), Path("/p/v3.cu")),
                                    separable_compilation=True, benchmark=None)  # no benchmark: ptxas alone
    runner.manifest = manifest  # what the message reads of it
    tree: Any = DeviceFunctionsTree()
    evaluated = runner.evaluate(tree, Proposal(-1, 0, {}), Controls(), "k")
    assert evaluated.cause == Cause.NO_METRIC
    text = failed_baseline_text("particles", evaluated)
    assert ("no value for objective(s) spill_bytes, registers: ptxas reported no kernel (__global__ function) in "
            "particles's CUDA compiles (particle.cu, v3.cu)") in text
    assert "CUDA_SEPARABLE_COMPILATION" in text and "Tune the target whose .cu files define the kernels" in text
    assert "Fix the build or benchmark first" not in text and not text.endswith("\n")  # no blank line after it


def test_a_missing_per_kernel_figure_says_the_regex_missed_only_where_it_did() -> None:
    # llm.c's layernorm_forward, tuned for occupancy:layernorm_forward_kernel4 without THREADS_PER_BLOCK: the baseline
    # failed "no kernel's mangled or demangled name matches its regex", of a regex that names a kernel there, before
    # the cause, the block size nobody declared.
    report = "".join(
        f"ptxas info    : Compiling entry function '{name}' for 'sm_90'\n"
        f"ptxas info    : Function properties for {name}\n"
        "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
        "ptxas info    : Used 32 registers, 400 bytes cmem[0]\n"
        for name in ("_Z25layernorm_forward_kernel4PfS_S_PKfS1_S1_ii", "_Z11mean_kernelPfPKfiii"))
    build = CandidateBuild(True, None, "", 1.0, report)
    runner = BuildRunner(None, None, parse_objectives(["occupancy:kernel4"]), 1, Timeouts(60.0, 60.0), GpuSlots())
    evaluated = runner._measured(None, build, Proposal(0, 0, {}), Controls(), "k", 0.0, {})
    assert "regex" not in evaluated.message
    assert "declares no THREADS_PER_BLOCK: add THREADS_PER_BLOCK" in evaluated.message
    # ... and the baseline's failure ends there: nothing of the build or benchmark is to fix.
    assert "Fix the build or benchmark first" not in failed_baseline_text("layernorm_forward", evaluated)
    # A regex that finds nothing says so, and which kernels there are to name.
    runner = BuildRunner(None, None, parse_objectives(["registers:kernel9"]), 1, Timeouts(60.0, 60.0), GpuSlots())
    evaluated = runner._measured(None, build, Proposal(0, 0, {}), Controls(), "k", 0.0, {})
    assert evaluated.message == ("no value for objective(s) registers:kernel9 (no kernel's mangled or demangled name matches its "
                    "regex; the kernels: layernorm_forward_kernel4, mean_kernel)")
    # An occupancy regex that finds nothing says that alone: wangzyon's SGEMM's occupancy:mysgemm_v9 (THREADS_PER_BLOCK
    # declared) added "(its architecture has no occupancy limits ...)" of sm_90, which has them.
    for declared in (read_declared(THREADS, ("256",), ()), None):
        runner = BuildRunner(None, None, parse_objectives(["occupancy:kernel9"]), 1, Timeouts(60.0, 60.0), GpuSlots())
        runner.threads_per_block = declared
        evaluated = runner._measured(None, build, Proposal(0, 0, {}), Controls(), "k", 0.0, {})
        assert evaluated.message == ("no value for objective(s) occupancy:kernel9 (no kernel's mangled or demangled name "
                                     "matches its regex; the kernels: layernorm_forward_kernel4, mean_kernel)")
    assert "Fix the build or benchmark first" not in failed_baseline_text("layernorm_forward", evaluated)


def test_only_a_tune_of_compile_time_journals_a_builds_seconds_for_one_to_take() -> None:
    # A new user's compile_time tune after a registers tune took 5 of the latter's journaled evaluations: their
    # compile_seconds, 0.09 s of ptxas alone (the front end kept), against the 2.2 s of a whole compile.
    build = CandidateBuild(True, None, "", 0.09, DEVICE_FUNCTIONS_ONLY.replace("Function properties for",
                           "Compiling entry function '_Z1kv' for 'sm_75'\nptxas info    : Function properties for")
                           + "ptxas info    : Used 24 registers\n")
    registers = BuildRunner(None, None, parse_objectives(["registers"]), 1, Timeouts(60.0, 60.0), GpuSlots())
    journaled = registers.static_metrics(build, Controls())
    assert journaled["registers"] == 24 and "compile_seconds" not in journaled
    record = Evaluation("k", Proposal(0, 1, {}), Controls(), True, None, "", journaled, {}, (24.0,), 0.1).to_journal()
    assert read_evaluation(record, Proposal(0, 1, {}), Controls(), "k", parse_objectives(["compile_time"])) is None
    clocked = BuildRunner(None, None, parse_objectives(["compile_time"]), 1, Timeouts(60.0, 60.0), GpuSlots())
    assert clocked.static_metrics(build, Controls())["compile_seconds"] == 0.09


def test_an_occupancy_tunes_summary_line_is_of_the_kernel_of_least_occupancy() -> None:
    # The line took the heaviest kernel's registers and block size and the target's most shared memory: here 64
    # registers at 64 threads with 40000 bytes, no kernel of the target, at neither kernel's occupancy (found reading
    # moderngpu's reduce tune, whose objective moved with a kernel the line did not describe).
    report = "".join(
        f"ptxas info    : Compiling entry function '{name}' for 'sm_90'\n"
        f"ptxas info    : Function properties for {name}\n"
        "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
        f"ptxas info    : Used {registers} registers, {shared} bytes smem, 400 bytes cmem[0]\n"
        for name, registers, shared in (("_Z5heavyv", 64, 0), ("_Z6sharedv", 24, 40000)))
    build = CandidateBuild(True, None, "", 1.0, report, launch_bounds=(("_Z5heavyv", 64), ("_Z6sharedv", 192)))
    objectives = parse_objectives(["occupancy"])
    runner = BuildRunner(None, None, objectives, 1, Timeouts(60.0, 60.0), GpuSlots())
    figures = runner.static_metrics(build, Controls())
    # heavy: 64 registers hold 32 warps an SM (50%); shared: 40000 bytes hold 5 blocks of 6 warps (46.875%).
    assert figures["occupancy"] == 46.875, figures
    assert figures["threads_per_block"] == 192 and figures["described_registers"] == 24, figures
    kept = Evaluation("k", Proposal(0, 0, {}), Controls(), True, None, "", figures, {}, (46.875,), 1.0)
    said = occupancy_steps(Confirmation(kept, kept, False, "", (46.875,), (46.875,)), objectives, "90")
    assert said.startswith("sm_90, 24 registers at 192 threads: 5 blocks an SM (46.88%, limited by shared memory)"), said
    assert said.endswith("(the kernel of least occupancy, which the objective scores)"), said


# flash_attention_inference's FA2 kernels as ptxas reports them: no shared memory of their own (it is dynamic), and
# their block size (__launch_bounds__); the first uses dynamic shared memory.
FLASH_REPORT = "".join(
    f"ptxas info    : Compiling entry function '{name}' for 'sm_80'\n"
    f"ptxas info    : Function properties for {name}\n"
    "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    f"ptxas info    : Used {registers} registers, 400 bytes cmem[0]\n"
    for name, registers in (("_Z9flash_fwdv", 168), ("_Z7combinev", 40)))
FLASH_BOUNDS = (("_Z9flash_fwdv", 128), ("_Z7combinev", 128))


def test_an_occupancy_of_kernels_with_dynamic_shared_memory_says_it_leaves_that_out() -> None:
    # flash_attention_inference's FA2 kernels: 255 registers at 128 threads, "0 bytes smem" in ptxas's report, 64 KB
    # of dynamic shared memory a block at launch: two blocks an SM on sm_80 whatever the registers, while the
    # occupancy counted three at a cap of 168, a gain a pin would spill registers for and never get.
    report = FLASH_REPORT
    objectives = parse_objectives(["occupancy", "spill_bytes"])
    runner = BuildRunner(None, None, objectives, 1, Timeouts(60.0, 60.0), GpuSlots())
    bounds = FLASH_BOUNDS
    figures = runner.static_metrics(CandidateBuild(True, None, "", 1.0, report, launch_bounds=bounds,
                                                   dynamic_shared=("_Z9flash_fwdv",)), Controls())
    assert figures["dynamic_shared_kernels"] == 1 and figures["occupancy"] == 18.75, figures
    note = dynamic_shared_note(figures)
    assert note.startswith("1 of the 2 kernels use dynamic shared memory (extern __shared__), which their launch "
                           "sizes and no compiled figure holds"), note
    # ... and says which declaration counts it, in the words of the front end it is declared in.
    assert "ciq_tune_target() declares no DYNAMIC_SHARED_MEMORY: add DYNAMIC_SHARED_MEMORY to it (" in note, note
    assert "add ciq_dynamic_shared_memory to it (ciq_dynamic_shared_memory=65536, " in (
        dynamic_shared_note(figures, setuptools=True))
    kept = Evaluation("k", Proposal(0, 0, {}), Controls(), True, None, "", figures, {}, (18.75, 0.0), 1.0)
    said = occupancy_steps(Confirmation(kept, kept, False, "", (18.75, 0.0), (18.75, 0.0)), objectives, "80")
    assert said.endswith("; 1 of the kernels use dynamic shared memory, which this leaves out: they may hold fewer "
                         "blocks an SM (declare it: DYNAMIC_SHARED_MEMORY)"), said
    # Declared (DYNAMIC_SHARED_MEMORY 65536), it counts for the kernel that uses it, not for the one beside it: two
    # blocks an SM, limited by shared memory, where the registers alone gave three.
    runner.dynamic_shared_memory = read_declared(DYNAMIC_SHARED, ["65536"], [])
    counted = runner.static_metrics(CandidateBuild(True, None, "", 1.0, report, launch_bounds=bounds,
                                                   dynamic_shared=("_Z9flash_fwdv",)), Controls())
    assert counted["occupancy"] == 12.5 and counted["declared_dynamic_shared_bytes"] == 65536, counted
    assert dynamic_shared_note(counted) == ("1 of the 2 kernels use dynamic shared memory (extern __shared__): their "
                                            "occupancy counts 65536 bytes of it a block (DYNAMIC_SHARED_MEMORY)")
    kept = Evaluation("k", Proposal(0, 0, {}), Controls(), True, None, "", counted, {}, (12.5, 0.0), 1.0)
    said = occupancy_steps(Confirmation(kept, kept, False, "", (12.5, 0.0), (12.5, 0.0)), objectives, "80")
    assert said == ("sm_80, 168 registers at 128 threads: 2 blocks an SM (12.5%, limited by shared memory) (the "
                    "kernel of least occupancy, which the objective scores); 1 of the kernels use dynamic shared "
                    "memory, counted at 65536 bytes a block (DYNAMIC_SHARED_MEMORY)"), said
    runner.dynamic_shared_memory = None
    # Kernels without it, and a tune that neither scores nor describes the occupancy, say nothing of it.
    plain = runner.static_metrics(CandidateBuild(True, None, "", 1.0, report, launch_bounds=bounds), Controls())
    assert "dynamic_shared_kernels" not in plain and dynamic_shared_note(plain) == ""
    # A DYNAMIC_SHARED_MEMORY that no kernel's PTX uses counts for none, which is said.
    assert dynamic_shared_note(plain, declared=True) == (
        "DYNAMIC_SHARED_MEMORY is declared, but no kernel's PTX uses dynamic shared memory (extern __shared__), or "
        "the objects embed no PTX to read it from (architectures built -real only: add one with PTX, e.g. 90 for "
        "90-real): the occupancy counts it for none")
    registers = BuildRunner(None, None, parse_objectives(["registers"]), 1, Timeouts(60.0, 60.0), GpuSlots())
    unseen = registers.static_metrics(CandidateBuild(True, None, "", 1.0, report, dynamic_shared=("_Z9flash_fwdv",)),
                                      Controls())
    assert "dynamic_shared_kernels" not in unseen



def test_show_says_which_dynamic_shared_memory_a_pinned_occupancy_counted() -> None:
    # `show` of an occupancy pin said nothing of DYNAMIC_SHARED_MEMORY: an occupancy counted at 0 bytes, or at the
    # defaults' size where the winner's differs, read as the kernels' own.
    objectives = parse_objectives(["occupancy", "spill_bytes"])
    runner = BuildRunner(None, None, objectives, 1, Timeouts(60.0, 60.0), GpuSlots())
    build = CandidateBuild(True, None, "", 1.0, FLASH_REPORT, launch_bounds=FLASH_BOUNDS,
                           dynamic_shared=("_Z9flash_fwdv",))
    winner = Controls(defines=(("BM", "128"),))

    def shown(declared: list[str] | None, setuptools: bool = False, kinds: tuple[str, ...] = ("occupancy",)) -> str:
        runner.dynamic_shared_memory = read_declared(DYNAMIC_SHARED, declared, ["BM=choice(64,128)"]) if declared else None
        base, best = (runner.static_metrics(build, controls) for controls in (Controls(), winner))
        record = PinnedRecord(target="fa2", controls=winner, toolchain=RecordToolchain("13.3", architectures=("80",)),
                              objectives=tuple(RecordObjective(kind, "max") for kind in kinds),
                              baseline=ScoreSummary((base["occupancy"],), (0.0,)),
                              winner=ScoreSummary((best["occupancy"],), (0.0,)),
                              provenance={"baseline_metrics": base, "winner_metrics": best})
        lines = format_record(record, setuptools=setuptools).splitlines()
        return "\n".join(line.strip() for line in lines[lines.index("objectives") + 1:])

    assert ("the occupancy counts no dynamic shared memory (0 bytes a block: no DYNAMIC_SHARED_MEMORY declared) for "
            "the 1 kernel that uses it, so it can be higher than at launch") in shown(None)
    assert "no ciq_dynamic_shared_memory declared" in shown(None, setuptools=True)
    assert ("the occupancy counts 65536 bytes of dynamic shared memory a block (DYNAMIC_SHARED_MEMORY) for the 1 "
            "kernel that uses it") in shown(["65536"])
    # Sized by a PARAMS name, the defaults and the winner count different sizes: each is said.
    assert ("the occupancy counts 16384 bytes at the defaults, 32768 bytes at the winner of dynamic shared memory a "
            "block (DYNAMIC_SHARED_MEMORY) for the 1 kernel that uses it") in shown(["BM*256", "16384"])
    # A pin of other objectives has no occupancy figure that depends on it.
    assert "dynamic shared memory" not in shown(["65536"], kinds=("registers",))


def test_an_occupancy_that_sizes_several_kernels_by_threads_per_block_says_so_and_how_to_score_some() -> None:
    # wangzyon's SGEMM: eight kernels without __launch_bounds__, launched with 1024, 512 or 256 threads, tuned for
    # occupancy with THREADS_PER_BLOCK "(V7_BM/V7_TM)*(V7_BN/V7_TN)" (kernel 7's tile): every kernel was scored at
    # kernel 7's block size, each candidate's tile changing it for kernels its code does not touch, and nothing said so.
    report = "".join(
        f"ptxas info    : Compiling entry function '{name}' for 'sm_90'\n"
        f"ptxas info    : Function properties for {name}\n"
        "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
        "ptxas info    : Used 64 registers, 400 bytes cmem[0]\n"
        for name in ("_Z10mysgemm_v1v", "_Z10mysgemm_v7v", "_Z7boundedv"))
    tile = read_declared(THREADS, ("(BM/TM)*64",), ("BM=choice(64,128)", "TM=choice(4,8)"))
    for objective, bounded, said in (("occupancy", (), 3), ("occupancy", (("_Z7boundedv", 128),), 2),
                                     ("occupancy:mysgemm_v7", (), None), ("registers", (), None)):
        runner = BuildRunner(None, None, parse_objectives([objective]), 1, Timeouts(60.0, 60.0), GpuSlots())
        runner.threads_per_block = tile
        build = CandidateBuild(True, None, "", 1.0, report, launch_bounds=bounded)
        figures = runner.static_metrics(build, Controls((), (("BM", "128"), ("TM", "8"))))
        note = declared_size_note("sgemm", runner, figures)
        if said is None:
            assert note == "", note
            continue
        assert note.startswith(f"warning: {said} kernels of sgemm have no __launch_bounds__, so the occupancy takes "
                               "THREADS_PER_BLOCK (BM/TM)*64 as the block size of each, and each candidate's PARAMS "
                               "change it for every one of them, and scores the least"), note
        assert "Score the kernels the declaration is of with occupancy:<kernel regex>" in note
    # One kernel sized by it is what the declaration is for: nothing to say.
    runner = BuildRunner(None, None, parse_objectives(["occupancy"]), 1, Timeouts(60.0, 60.0), GpuSlots())
    runner.threads_per_block = read_declared(THREADS, ("256",), ())
    one = CandidateBuild(True, None, "", 1.0, report, launch_bounds=(("_Z7boundedv", 128), ("_Z10mysgemm_v1v", 1024)))
    assert declared_size_note("sgemm", runner, runner.static_metrics(one, Controls())) == ""


def test_no_gpu_seen_says_nvidia_smi_reported_none_only_where_there_is_one(tmp_path: Path,
                                                                          monkeypatch: Any) -> None:
    # wangzyon's SGEMM's trial, on a machine with no nvidia-smi: "nvidia-smi reported no GPU where the benchmark ran".
    monkeypatch.setenv("PATH", str(tmp_path))
    assert no_gpu_seen().startswith("no GPU was seen (there is no nvidia-smi on PATH")
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\nexit 9\n")  # TEST DOUBLE of a driver's nvidia-smi that finds no GPU
    smi.chmod(0o755)
    assert no_gpu_seen() == "nvidia-smi reported no GPU"
