"""The theoretical occupancy (ciq_build.compiler.occupancy) against figures NVIDIA's tools and documents give.

Nsight Compute's Occupancy section on an H100 (sm_90), from this project's own runs
(docs/results/readme-winners-h100-fitted-caps.txt: FDTD3d; docs/results/tensor-cores-hgemm-h100-ncu-defaults.txt:
the HGEMM peer), and the CUDA C++ Best Practices Guide's worked example ("Calculating Occupancy": 37 registers
a thread on compute capability 7.0, whose register file and warp slots sm_80's row shares).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from ciq_build.compiler.controls import Controls
from ciq_build.compiler.metrics import KernelUsage, launch_bounds, ptx_launch_bounds, summarize
from ciq_build.compiler.occupancy import LIMITS, describe_steps, limits, occupancy, register_steps
from ciq_build.compiler.toolchain import find_toolchain
from ciq_build.core.objectives import parse_objectives
from ciq_build.errors import ConfigError
from ciq_build.measure import proc
from ciq_build.measure.gpu_slots import GpuSlots
from ciq_build.project.per_block import DYNAMIC_SHARED, THREADS, check_block_size, read_declared, unknown_block_size
from ciq_build.project.worker import CandidateBuild
from ciq_build.tune.runner import BuildRunner
from ciq_build.tune.timeouts import Timeouts
from support import ensure_ok

H100 = limits("90a")


@pytest.mark.parametrize("registers,threads,blocks,percent", [
    (80, 512, 1, 25.0),   # FDTD3d's defaults: "Block Limit Registers 1", achieved 25.00%
    (48, 512, 2, 50.0),   # the README's pin: "Block Limit Registers 2" (achieved 46.41%)
    (48, 256, 5, 62.5),   # the GA's pin, block 256: "Block Limit Registers 5" (achieved 51.86%)
])
def test_fdtd3d_on_an_h100_as_nsight_compute_measured_it(registers: int, threads: int, blocks: int,
                                                         percent: float) -> None:
    # FDTD3d's tile: (16 + 2*4) x (32 + 2*4) floats of static shared memory, one barrier.
    found = occupancy(H100, registers, threads, shared=24 * 40 * 4, barriers=1)
    assert (found.blocks, found.percent, found.limiter) == (blocks, percent, "registers")


def test_the_hgemm_peer_on_an_h100_as_nsight_compute_measured_it() -> None:
    # 168 registers, 256 threads: "Block Limit Registers 1, Block Limit Warps 8, Block Limit SM 32,
    # Theoretical Active Warps per SM 8, Theoretical Occupancy 12.50"; its shared memory is dynamic (not static).
    found = occupancy(H100, 168, 256)
    assert (found.blocks, found.warps, found.percent, found.limiter) == (1, 8, 12.5, "registers")
    assert occupancy(H100, 24, 256).limiter == "warps" and occupancy(H100, 24, 256).blocks == 8
    # The kernel writer's seed of docs/RESULTS.md: two CTAs an SM need <= 128 registers.
    assert [(s.registers, s.blocks) for s in register_steps(H100, 256)][-2:] == [(128, 2), (255, 1)]


def test_the_best_practices_guides_worked_example() -> None:
    # "a kernel with 128-thread blocks using 37 registers per thread results in an occupancy of 75% with 12
    # active 128-thread blocks per multi-processor, whereas a kernel with 320-thread blocks using the same 37
    # registers per thread results in an occupancy of 63% because only four 320-thread blocks can reside"
    sm80 = limits(80)
    assert (occupancy(sm80, 37, 128).blocks, occupancy(sm80, 37, 128).percent) == (12, 75.0)
    assert (occupancy(sm80, 37, 320).blocks, occupancy(sm80, 37, 320).percent) == (4, 62.5)  # the guide's "63%"


def test_shared_memory_barriers_and_the_block_slots_limit_as_cuda_occupancy_h_says() -> None:
    # sm_86: 100 KB an SM; 40 KB static + the driver's 1 KB, in 128-byte units: 2 blocks.
    assert occupancy(limits(86), 32, 128, shared=40 * 1024).blocks == 2
    assert occupancy(limits(86), 32, 128, shared=40 * 1024).limiter == "shared memory"
    # sm_75 reserves nothing and allocates in 256-byte units: 64 KB / 16.25 KB is 3 blocks, not 4.
    assert occupancy(limits(75), 32, 32, shared=16 * 1024 + 1).blocks == 3
    # sm_120: 24 block slots, one barrier slot each: 4 barriers a block leave 6 blocks.
    assert occupancy(limits(120), 16, 32, barriers=4).limiter == "barriers"
    assert occupancy(limits(120), 16, 32, barriers=4).blocks == 6
    # Two limits alike are both named.
    assert occupancy(H100, 32, 128).limiter == "registers and warps"
    # Tiny blocks run out of block slots: sm_89 holds 24 blocks, 48 warps.
    assert (occupancy(limits(89), 16, 32).blocks, occupancy(limits(89), 16, 32).percent) == (24, 50.0)
    # More registers than a block can have: it does not launch.
    assert occupancy(H100, 255, 1024).blocks == 0


def test_every_architecture_the_toolkit_targets_has_a_row_and_another_is_refused_by_name() -> None:
    assert {75, 80, 86, 87, 89, 90, 100, 103, 110, 120} <= set(LIMITS)
    assert limits("sm_100f") == LIMITS[100]
    with pytest.raises(ConfigError, match=r"no occupancy limits are known for sm_88 .* sm_75, sm_80"):
        limits("88")


def test_the_steps_say_where_the_blocks_an_sm_change() -> None:
    # The newcomer's GEMM (docs/results/newcomer-trial-simpleGEMM.md): 222 and 192 registers both allow two
    # 128-thread blocks an SM; the step to three is at 168.
    assert describe_steps(H100, 192, 128) == (
        "192 registers at 128 threads: 2 blocks an SM (12.5%, limited by registers); 3 (18.75%) at <= 168")
    assert describe_steps(H100, 48, 512, 3840, 1) == (
        "48 registers at 512 threads: 2 blocks an SM (50%, limited by registers); 3 (75%) at <= 40, "
        "1 (25%) above 64")


def test_occupancy_over_several_kernels_is_the_least_and_needs_every_block_size() -> None:
    light = KernelUsage("_Z5lightPf", "90a", 32, 0, 0, 0, threads=256)
    heavy = KernelUsage("_Z5heavyPf", "90a", 128, 0, 0, 0, threads=256)
    assert summarize([light, heavy])["occupancy"] == 25.0  # heavy's one block of 8 warps
    assert "occupancy" not in summarize([light, KernelUsage("_Z1kPf", "90a", 32, 0, 0, 0)])  # no block size


def test_threads_per_block_reads_a_number_a_param_or_an_expression_over_params() -> None:
    params = ["TM=choice(4,8)", "TN=choice(4,8)", "BLOCK=choice(128,256)", "KIND=choice(fast,slow)"]
    defaults = Controls()
    assert read_declared(THREADS, ["256"], params).of(Controls(defines=(("TM", "4"),))) == 256
    block = read_declared(THREADS, ["BLOCK", "512"], params)
    assert block.of(Controls(defines=(("BLOCK", "128"), ("KIND", "fast")))) == 128 and block.of(defaults) == 512
    tiles = read_declared(THREADS, ["(128/TM)*(128/TN)"], params, {"TM": "8", "TN": "8"})
    assert tiles.of(Controls(defines=(("TM", "4"), ("TN", "8")))) == 512 and tiles.of(defaults) == 256
    assert tiles.of(Controls(defines=(("TM", "4"), ("TN", "4")))) == 1024
    assert read_declared(THREADS, ["BLOCK*8"], params).of(Controls(defines=(("BLOCK", "256"),))) is None  # > 1024
    unknown = read_declared(THREADS, ["BLOCK"], params)  # no number for the defaults' build: the tune asks for it
    with pytest.raises(ConfigError, match=r"give the defaults' threads a block after it \(THREADS_PER_BLOCK BLOCK "):
        check_block_size(unknown, parse_objectives(["occupancy", "spill_bytes"]))
    check_block_size(unknown, parse_objectives(["registers"]))  # only the occupancy needs it
    with pytest.raises(ConfigError, match=r"'BLOK' is not one of the PARAMS .* \(did you mean BLOCK\?\)"):
        read_declared(THREADS, ["BLOK"], params)
    with pytest.raises(ConfigError, match="the second value is the defaults' threads"):
        read_declared(THREADS, ["256", "512"], params)
    with pytest.raises(ConfigError, match="a block has 1 to 1024 threads"):
        read_declared(THREADS, ["2048"], params)


def test_a_block_size_param_the_source_defines_unguarded_is_refused_for_the_occupancy_saying_to_guard_it() -> None:
    # mini-nbody's "#define BLOCK_SIZE 256" (no #ifndef) with THREADS_PER_BLOCK BLOCK_SIZE: the tune said "the sources
    # give its names no #define that is a number"; with the defaults' 256 given, it scored -DBLOCK_SIZE=64 as
    # 64-thread blocks of code that launches 256.
    params = ["BLOCK_SIZE=choice(64,128,256,512)"]
    overridden = {"BLOCK_SIZE": "nbody-unroll.cu:6"}
    for items in (["BLOCK_SIZE"], ["BLOCK_SIZE", "256"], ["BLOCK_SIZE/2"]):
        with pytest.raises(ConfigError, match=r"^THREADS_PER_BLOCK BLOCK_SIZE.*: the source #defines BLOCK_SIZE itself "
                                              r"\(nbody-unroll.cu:6, outside any #ifndef BLOCK_SIZE\), so every "
                                              r"-DBLOCK_SIZE=\.\.\. is overridden.*Guard the #define with #ifndef "
                                              r"BLOCK_SIZE \.\.\. #endif"):
            check_block_size(read_declared(THREADS, items, params), parse_objectives(["occupancy"]),
                             overridden=overridden)
    check_block_size(read_declared(THREADS, ["BLOCK_SIZE", "256"], params), parse_objectives(["registers"]),
                     overridden=overridden)  # only the occupancy reads it
    check_block_size(read_declared(THREADS, ["256"], params), parse_objectives(["occupancy"]), overridden=overridden)


def test_dynamic_shared_memory_counts_with_the_static_and_caps_the_blocks_whatever_the_registers() -> None:
    # flash_attention_inference's FA2 kernels: 64 KB of extern __shared__ a block at launch, "0 bytes smem" in
    # ptxas's report. On sm_80 (164 KB an SM, 1 KB reserved a block) two blocks fit, so no register cap gains a third.
    sm80 = limits(80)
    for registers in range(1, 169):  # from 168 down the registers alone would allow 3 or more 128-thread blocks
        found = occupancy(sm80, registers, 128, shared=64 * 1024)
        assert (found.blocks, found.limiter) == (2, "shared memory"), registers
    assert describe_steps(sm80, 168, 128, 64 * 1024) == (
        "168 registers at 128 threads: 2 blocks an SM (12.5%, limited by shared memory)")
    # A kernel's occupancy adds what its launch takes to its static figure: 40 KB + 60 KB + 2 x 1 KB > sm_86's 100 KB.
    kernel = KernelUsage("_Z9flash_fwdv", "80", 168, 0, 0, 0, threads=128)
    assert kernel.occupancy == 18.75 and replace(kernel, dynamic_shared=64 * 1024).occupancy == 12.5
    assert occupancy(limits(86), 32, 128, shared=40 * 1024 + 9 * 1024).blocks == 2
    assert replace(kernel, arch="86", shared=40 * 1024, dynamic_shared=60 * 1024).occupancy == 0.0  # does not fit


def test_dynamic_shared_memory_is_declared_as_threads_per_block_is_in_bytes() -> None:
    params = ["BM=choice(64,128)", "BN=choice(64,128)", "BK=choice(32,64)"]
    tile = read_declared(DYNAMIC_SHARED, ["(BM+BN)*BK*2"], params, {"BM": "128", "BN": "64", "BK": "64"})
    assert tile is not None and tile.of(Controls()) == (128 + 64) * 64 * 2
    assert tile.of(Controls(defines=(("BM", "64"), ("BN", "64"), ("BK", "32")))) == 8192
    assert read_declared(DYNAMIC_SHARED, ["0"], params).of(Controls()) == 0  # bytes may be none; threads may not
    assert read_declared(DYNAMIC_SHARED, ["BM*BK*4", "32768"], params).of(Controls()) == 32768
    with pytest.raises(ConfigError, match=r"DYNAMIC_SHARED_MEMORY 1048576 is 1048576: a block has 0 to 233472 bytes"):
        read_declared(DYNAMIC_SHARED, ["1048576"], params)
    with pytest.raises(ConfigError, match=r"give the defaults' bytes a block after it \(DYNAMIC_SHARED_MEMORY BM\*BK "
                                          r"<bytes>\)"):
        check_block_size(read_declared(DYNAMIC_SHARED, ["BM*BK"], params), parse_objectives(["occupancy"]))
    with pytest.raises(ConfigError, match="a block has 1 to 1024 threads"):
        read_declared(THREADS, ["0"], params)


def test_an_undeclared_block_size_says_what_to_add_in_the_words_of_the_front_end_it_is_declared_in() -> None:
    # One message for both: what is missing, every form (the defaults' threads beside a name too), where the doc is.
    cmake = unknown_block_size(None, Controls())
    assert cmake.startswith("a kernel has no __launch_bounds__ and ciq_tune_target() declares no THREADS_PER_BLOCK: "
                            "add THREADS_PER_BLOCK to it (THREADS_PER_BLOCK 256, ")
    assert "<a PARAMS name> [<the defaults' threads>]" in cmake and "docs/cmake.md: THREADS_PER_BLOCK" in cmake
    assert cmake.endswith(") and configure again")  # the CMake module writes the declaration into the manifest
    setuptools = unknown_block_size(None, Controls(), setuptools=True)
    assert setuptools.startswith("a kernel has no __launch_bounds__ and its CudaExtension declares no "
                                 "ciq_threads_per_block: add ciq_threads_per_block to it (ciq_threads_per_block=256, ")
    assert '=("<a params name>", <the defaults\' threads>)' in setuptools  # the pair, not a name alone
    assert setuptools.endswith("docs/setuptools.md: ciq_threads_per_block)")  # setup.py is read at each tune


def test_a_kernels_launch_bounds_are_read_from_its_ptx_and_from_its_cubin(tmp_path: Path, cuda133_bin: Path) -> None:
    # What the occupancy takes before THREADS_PER_BLOCK: the PTX where ptxas alone runs, the cubin where there are
    # objects. __launch_bounds__(256, 2) is .maxntid 256, 1, 1; a kernel without bounds is absent.
    (tmp_path / "k.cu").write_text(
        "__global__ void __launch_bounds__(256, 2) bounded(float* x) { x[threadIdx.x] *= 2.0f; }\n"
        "__global__ void free_kernel(float* x) { x[threadIdx.x] += 1.0f; }\n"
        "template <int N> __global__ void __launch_bounds__(N) tiled(float* x) { x[threadIdx.x] -= 1.0f; }\n"
        "template __global__ void tiled<96>(float*);\n")
    ensure_ok(proc.run([str(cuda133_bin / "nvcc"), "-c", "--generate-code=arch=compute_90a,code=[compute_90a,sm_90a]",
                        "k.cu", "-o", "k.o"], 300, cwd=tmp_path))
    ptx = ensure_ok(proc.run([str(cuda133_bin / "cuobjdump"), "-ptx", "k.o"], 60, cwd=tmp_path)).stdout
    expected = {"_Z7boundedPf": 256, "_Z5tiledILi96EEvPf": 96}
    assert ptx_launch_bounds(ptx) == expected
    assert launch_bounds(tmp_path / "k.o", find_toolchain(cuda133_bin / "nvcc")) == expected


def test_the_occupancy_is_the_scored_architectures_and_the_others_are_shown() -> None:
    # As every static objective (issue 37): a build for sm_90a and sm_120 scores the one the tune is for, not the
    # least over both; the other's figure is kept to show beside the baseline.
    report = "".join(
        f"ptxas info    : Compiling entry function '_Z1kPf' for 'sm_{arch}'\n"
        "ptxas info    : Function properties for _Z1kPf\n"
        "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
        "ptxas info    : Used 48 registers, used 1 barriers, 3840 bytes smem, 400 bytes cmem[0]\n"
        for arch in ("90a", "120"))
    runner = BuildRunner(None, None, parse_objectives(["occupancy", "registers"]), 1, Timeouts(60.0, 60.0), GpuSlots())
    runner.threads_per_block = read_declared(THREADS, ["512"], [])
    runner.scored_architecture = "120"
    values = runner.static_metrics(CandidateBuild(True, None, "", 1.0, report), Controls())
    assert round(values["occupancy"], 2) == 66.67  # sm_120: 2 blocks of 16 warps of its 48; sm_90a's 50% not taken
    assert runner.other_architectures == {"90a": {"occupancy": 50.0, "registers": 48}}
    assert values["threads_per_block"] == 512


def test_the_other_architectures_figures_of_a_tune_of_some_kernels_are_those_kernels() -> None:
    # stdgpu's unordered_map, built for 80;90, tuned for registers:insert_neighbors: the line beside the baseline
    # read "not scored: sm_90 " and nothing more (the whole target's figures, none of them the objectives').
    report = "".join(
        f"ptxas info    : Compiling entry function '{name}' for 'sm_{arch}'\n"
        f"ptxas info    : Function properties for {name}\n"
        "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
        f"ptxas info    : Used {registers} registers, 400 bytes cmem[0]\n"
        for arch in ("80", "90") for name, registers in (("_Z16insert_neighborsPKi", 49), ("_Z10cub_kernelPi", 64)))
    objectives = parse_objectives(["registers:insert_neighbors", "spill_bytes:insert_neighbors"])
    runner = BuildRunner(None, None, objectives, 1, Timeouts(60.0, 60.0), GpuSlots())
    runner.scored_architecture = "80"
    values = runner.static_metrics(CandidateBuild(True, None, "", 1.0, report), Controls())
    assert values["registers:insert_neighbors"] == 49 and values["registers"] == 64
    assert runner.other_architectures == {"90": {"registers:insert_neighbors": 49, "spill_bytes:insert_neighbors": 0}}
    # The summary's occupancy line is of the scored kernel, not of CUB's heavier one beside it (whose bounds gave the
    # line its 256 threads and 64 registers): none where the scored kernel's block size is not known ...
    bounded = CandidateBuild(True, None, "", 1.0, report, launch_bounds=(("_Z10cub_kernelPi", 256),))
    assert "threads_per_block" not in runner.static_metrics(bounded, Controls())
    whole = BuildRunner(None, None, parse_objectives(["registers"]), 1, Timeouts(60.0, 60.0), GpuSlots())
    assert whole.static_metrics(bounded, Controls())["threads_per_block"] == 256
    # ... and its own block size and shared memory where they are.
    both = CandidateBuild(True, None, "", 1.0, report.replace("Used 49 registers,", "Used 49 registers, 512 bytes smem,"),
                          launch_bounds=(("_Z10cub_kernelPi", 256), ("_Z16insert_neighborsPKi", 128)))
    values = runner.static_metrics(both, Controls())
    assert values["threads_per_block"] == 128 and values["described_shared_bytes"] == 512

