"""Static metrics from real nvcc 13.3 compiles for sm_90a (no GPU needed)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import pytest

from ciq_build.compiler.metrics import (
    KernelUsage,
    code_hash,
    dynamic_shared,
    host_code_hash,
    kernel_values,
    normalise_symbol,
    parse_ptxas_verbose,
    ptx_dynamic_shared,
    resource_usage,
    sass_instruction_count,
    sass_instruction_counts,
    summarize,
)
from ciq_build.compiler.toolchain import Toolchain, find_toolchain
from ciq_build.errors import ToolchainError
from ciq_build.measure import proc

# 48 floats live across a loop: fits in registers by default (~56), spills when capped at 32.
KERNELS = """\
__global__ void heavy(const float* __restrict__ in, float* __restrict__ out, int n)
{
    float acc[48];
#pragma unroll
    for (int j = 0; j < 48; ++j) acc[j] = in[threadIdx.x + j * n];
    for (int it = 0; it < n; ++it) {
#pragma unroll
        for (int j = 0; j < 48; ++j) acc[j] = acc[j] * acc[(j + 7) % 48] + acc[(j + 13) % 48];
    }
    float s = 0.f;
#pragma unroll
    for (int j = 0; j < 48; ++j) s += acc[j] * (j + 1);
    out[threadIdx.x] = s;
}

__global__ void light(int* x) { x[threadIdx.x] *= 3; }
"""

HEAVY = "_Z5heavyPKfPfi"
LIGHT = "_Z5lightPi"


@dataclass(frozen=True)
class Built:
    obj: Path
    ptxas_output: str


@pytest.fixture(scope="module")
def toolchain(cuda133_bin: Path) -> Toolchain:
    return find_toolchain(cuda133_bin / "nvcc")


def _build(toolchain: Toolchain, where: Path, name: str, *flags: str, arch: tuple[str, ...] = ("90a",)) -> Built:
    where.mkdir(parents=True, exist_ok=True)
    source = where / f"{name}.cu"
    source.write_text(KERNELS)
    gencode = [f"-gencode=arch=compute_{a},code=sm_{a}" for a in arch]
    result = proc.run([toolchain.nvcc, "-c", *gencode, *flags, source, "-o", where / f"{name}.o"], 300, cwd=where)
    assert result.ok, result.output_tail()
    return Built(where / f"{name}.o", result.stdout + result.stderr)


@pytest.fixture(scope="module")
def default_build(toolchain: Toolchain, tmp_path_factory: pytest.TempPathFactory) -> Built:
    return _build(toolchain, tmp_path_factory.mktemp("default"), "kernels", "-Xptxas=-v")


@pytest.fixture(scope="module")
def capped_build(toolchain: Toolchain, tmp_path_factory: pytest.TempPathFactory) -> Built:
    return _build(toolchain, tmp_path_factory.mktemp("capped"), "kernels", "-Xptxas=-v", "-maxrregcount=32")


# ---------------------------------------------------------------- ptxas -v


@pytest.mark.slow
def test_ptxas_report_shows_spills_only_when_registers_are_capped(default_build: Built, capped_build: Built) -> None:
    default = {u.function: u for u in parse_ptxas_verbose(default_build.ptxas_output)}
    capped = {u.function: u for u in parse_ptxas_verbose(capped_build.ptxas_output)}
    assert set(default) == set(capped) == {HEAVY, LIGHT}
    assert default[HEAVY].registers > 32 and default[HEAVY].spill_bytes == 0
    # The cap reached ptxas: registers within it, and the rest spilled to the stack.
    assert capped[HEAVY].registers <= 32
    assert capped[HEAVY].spill_stores > 0 and capped[HEAVY].spill_loads > 0
    assert capped[HEAVY].stack_frame > 0
    assert capped[LIGHT].spill_bytes == 0 and all(u.arch == "90a" for u in capped.values())


def test_summarize_gives_the_static_objectives(default_build: Built, capped_build: Built) -> None:
    default = summarize(parse_ptxas_verbose(default_build.ptxas_output))
    capped = summarize(parse_ptxas_verbose(capped_build.ptxas_output))
    heavy = next(u for u in parse_ptxas_verbose(capped_build.ptxas_output) if u.function == HEAVY)
    assert default["spill_bytes"] == 0 and default["stack_bytes"] == 0 and default["kernels"] == 2
    assert capped["registers"] <= 32 < default["registers"]
    assert capped["spill_bytes"] == heavy.spill_stores + heavy.spill_loads > 0
    assert capped["stack_bytes"] == heavy.stack_frame
    assert summarize([]) == {"registers": 0, "spill_bytes": 0, "stack_bytes": 0, "shared_bytes": 0,
                             "occupancy": 0, "kernels": 0}


def test_ptxas_report_is_read_from_a_build_log(default_build: Built, capped_build: Built) -> None:
    # What ninja prints for a two-object target: progress lines, compiler
    # output of each object, warnings and other noise between them.
    log = "\n".join([
        "[1/3] Building CUDA object CMakeFiles/gemm.dir/a.cu.o",
        default_build.ptxas_output,
        "a.cu(3): warning #177-D: variable \"unused\" was declared but never referenced",
        "[2/3] Building CUDA object CMakeFiles/gemm.dir/b.cu.o",
        capped_build.ptxas_output,
        "[3/3] Linking CUDA shared library libgemm.so",
    ])
    usages = parse_ptxas_verbose(log)
    by_object = {(u.object, u.function): u for u in usages}
    assert len(usages) == 4  # nvcc's second ptxas pass (PTX check) is not counted twice
    assert by_object[("CMakeFiles/gemm.dir/a.cu.o", HEAVY)].spill_bytes == 0
    assert by_object[("CMakeFiles/gemm.dir/b.cu.o", HEAVY)].spill_bytes > 0
    assert summarize(usages)["spill_bytes"] == summarize(parse_ptxas_verbose(capped_build.ptxas_output))["spill_bytes"]


def test_a_called_device_function_does_not_count_as_the_kernel() -> None:
    text = """\
ptxas info    : Compiling entry function '_Z1kPf' for 'sm_90a'
ptxas info    : Function properties for _Z6helperf
    24 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads
ptxas info    : Function properties for _Z1kPf
    16 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 40 registers, used 1 barriers, 2048 bytes smem, 360 bytes cmem[0]
"""
    assert parse_ptxas_verbose(text) == [
        KernelUsage(function="_Z1kPf", arch="90a", registers=40, spill_stores=0, spill_loads=0,
                    stack_frame=16, shared=2048, barriers=1)
    ]


def test_no_ptxas_report_gives_no_kernels() -> None:
    assert parse_ptxas_verbose("[1/1] Building CUDA object x.cu.o\nninja: no work to do.\n") == []


# ---------------------------------------------------------------- cuobjdump


def test_resource_usage_agrees_with_ptxas(toolchain: Toolchain, default_build: Built, capped_build: Built) -> None:
    for built in (default_build, capped_build):
        usage = resource_usage(built.obj, toolchain)
        assert set(usage) == {(HEAVY, "90a"), (LIGHT, "90a")}
        for kernel in parse_ptxas_verbose(built.ptxas_output):
            assert usage[(kernel.function, "90a")]["registers"] == kernel.registers
            assert usage[(kernel.function, "90a")]["stack"] == kernel.stack_frame
    assert resource_usage(capped_build.obj, toolchain)[(HEAVY, "90a")]["stack"] > 0


@pytest.mark.slow
def test_sass_counts_grow_with_spill_code(toolchain: Toolchain, default_build: Built, capped_build: Built) -> None:
    default = sass_instruction_counts(default_build.obj, toolchain)
    capped = sass_instruction_counts(capped_build.obj, toolchain)
    assert set(default) == {(HEAVY, "90a"), (LIGHT, "90a")}
    assert 0 < default[(LIGHT, "90a")] < default[(HEAVY, "90a")]
    assert capped[(HEAVY, "90a")] > default[(HEAVY, "90a")]  # spill stores and loads
    assert capped[(LIGHT, "90a")] == default[(LIGHT, "90a")]
    assert sass_instruction_count(capped_build.obj, toolchain) == sum(capped.values())


SHARED_KERNELS = """\
extern __shared__ float tile[];
__global__ void sized_by_launch(float* p) { tile[threadIdx.x] = p[threadIdx.x]; __syncthreads(); p[0] = tile[31]; }
__global__ void sized_here(float* p) { __shared__ float s[32]; s[threadIdx.x] = p[threadIdx.x]; __syncthreads(); p[0] = s[31]; }
__global__ void none(float* tile_) { tile_[threadIdx.x] *= 2.f; }
"""


@pytest.mark.slow
def test_the_kernels_that_use_dynamic_shared_memory_are_read_from_their_ptx(toolchain: Toolchain,
                                                                           tmp_path: Path) -> None:
    # ptxas reports static shared memory only (flash_attention_inference's FA2 kernels: "0 bytes smem", 64 KB a block
    # at launch), so the occupancy objective must know which kernels it cannot see whole: from the kept PTX where
    # ptxas alone runs, else the PTX the object embeds.
    (tmp_path / "k.cu").write_text(SHARED_KERNELS)
    ptx = proc.run([toolchain.nvcc, "-arch=sm_90a", "-ptx", "k.cu", "-o", "k.ptx"], 300, cwd=tmp_path)
    assert ptx.ok, ptx.output_tail()
    assert ptx_dynamic_shared((tmp_path / "k.ptx").read_text()) == {"_Z15sized_by_launchPf"}
    embedded = proc.run([toolchain.nvcc, "--generate-code=arch=compute_90a,code=[compute_90a,sm_90a]", "-c", "k.cu",
                         "-o", "k.o"], 300, cwd=tmp_path)
    assert embedded.ok, embedded.output_tail()
    assert dynamic_shared(tmp_path / "k.o", toolchain) == {"_Z15sized_by_launchPf"}
    assert ptx_dynamic_shared("") == set()


@pytest.mark.slow
def test_one_object_for_two_architectures(toolchain: Toolchain, tmp_path: Path) -> None:
    built = _build(toolchain, tmp_path, "multi", arch=("80", "90a"))
    assert {arch for _, arch in resource_usage(built.obj, toolchain)} == {"80", "90a"}
    assert {arch for _, arch in sass_instruction_counts(built.obj, toolchain)} == {"80", "90a"}
    hashes = code_hash(built.obj, toolchain)
    assert set(hashes) == {"80", "90a"} and hashes["80"] != hashes["90a"]


# ---------------------------------------------------------------- code hash


def _whole_cubin_sha(toolchain: Toolchain, obj: Path, where: Path) -> str:
    assert toolchain.cuobjdump is not None
    where.mkdir()
    result = proc.run([toolchain.cuobjdump, "-xelf", "all", obj], 60, cwd=where)
    assert result.ok, result.output_tail()
    (cubin,) = where.glob("*.cubin")
    return hashlib.sha256(cubin.read_bytes()).hexdigest()


@pytest.mark.slow
def test_code_hash_ignores_where_and_how_verbosely_the_code_was_built(
    toolchain: Toolchain, default_build: Built, tmp_path: Path
) -> None:
    # The tuning build adds -Xptxas=-v and lives in another tree under
    # another name; the real build has neither. Same code, same hash...
    real = _build(toolchain, tmp_path / "real build" / "objs", "renamed_kernels")
    assert code_hash(real.obj, toolchain) == code_hash(default_build.obj, toolchain)
    # ... although the cubins as files differ (ptxas's options are in .note.nv.tkinfo).
    assert _whole_cubin_sha(toolchain, real.obj, tmp_path / "x1") != _whole_cubin_sha(
        toolchain, default_build.obj, tmp_path / "x2"
    )


def test_code_hash_changes_with_the_generated_code(
    toolchain: Toolchain, default_build: Built, capped_build: Built
) -> None:
    default, capped = code_hash(default_build.obj, toolchain), code_hash(capped_build.obj, toolchain)
    assert set(default) == set(capped) == {"90a"}
    assert default["90a"] != capped["90a"]
    assert len(default["90a"]) == 64


# What has internal linkage, with a helper the kernel calls, in whole-program mode.
ANONYMOUS = """\
namespace {
__device__ __noinline__ float helper(float x) { return x * 3.0f + 1.0f; }
__global__ void anon_kernel(float* p) { p[threadIdx.x] = helper(p[threadIdx.x]); }
}
static __device__ int counter;
static __global__ void static_kernel(float* p) { p[threadIdx.x] += counter; }
void launch(float* p) { anon_kernel<<<1, 32>>>(p); static_kernel<<<1, 32>>>(p); }
"""


def _compile(toolchain: Toolchain, source: Path, *flags: str) -> Path:
    obj = source.with_suffix(".o")
    # An absolute source path, as CMake passes it.
    result = proc.run([toolchain.nvcc, "-c", "-arch=sm_90a", *flags, source.absolute(), "-o", obj], 300)
    assert result.ok, result.output_tail()
    return obj


def _text_section_names(toolchain: Toolchain, obj: Path) -> set[str]:
    assert toolchain.cuobjdump is not None
    listing = proc.run([toolchain.cuobjdump, "-elf", obj], 60).stdout
    return {word for word in listing.split() if word.startswith(".text.")}


@pytest.mark.slow
def test_code_hash_is_the_same_for_internal_names_built_from_two_checkouts(
    toolchain: Toolchain, tmp_path: Path
) -> None:
    objects = []
    for checkout in (tmp_path / "here", tmp_path / "a clone" / "elsewhere"):
        checkout.mkdir(parents=True)
        (checkout / "anon.cu").write_text(ANONYMOUS)
        objects.append(_compile(toolchain, checkout / "anon.cu"))
    # nvcc named the kernels after each checkout's path ...
    names = [_text_section_names(toolchain, obj) for obj in objects]
    assert names[0] != names[1] and any("_GLOBAL__N__" in n for n in names[0])
    # ... and the hash does not care.
    assert code_hash(objects[0], toolchain) == code_hash(objects[1], toolchain)
    assert {normalise_symbol(n) for n in names[0]} == {normalise_symbol(n) for n in names[1]}


@pytest.mark.slow
def test_code_hash_sees_which_function_a_call_reaches(toolchain: Toolchain, tmp_path: Path) -> None:
    # Relocatable device code: the call's target is a relocation, not in the code bytes,
    # and both callees compile to the same bytes.
    (tmp_path / "calls.cu").write_text(
        "__device__ __noinline__ float twice(float x) { return 2.0f * x; }\n"
        "__device__ __noinline__ float double_it(float x) { return 2.0f * x; }\n"
        "__global__ void scale(float* p) { p[threadIdx.x] = CALLEE(p[threadIdx.x]); }\n")
    hashes = []
    for callee in ("twice", "double_it"):
        obj = _compile(toolchain, tmp_path / "calls.cu", "-rdc=true", f"-DCALLEE={callee}")
        hashes.append(code_hash(obj, toolchain))
    assert hashes[0] != hashes[1]


@pytest.mark.parametrize(("name", "normal"), [
    ("_ZN36_GLOBAL__N__cbfaf43b_4_k_cu_572212f911anon_kernelEPf",
     "_ZN36_GLOBAL__N__00000000_4_k_cu_0000000011anon_kernelEPf"),
    ("__nv_static_25__cbfaf43b_4_k_cu_572212f9__ZN34_INTERNAL_cbfaf43b_4_k_cu_572212f936_GLOBAL__N__cbfaf43b_4_k_cu"
     "_572212f98anon_varE",
     "__nv_static_25__00000000_4_k_cu_00000000__ZN34_INTERNAL_00000000_4_k_cu_0000000036_GLOBAL__N__00000000_4_k_cu"
     "_000000008anon_varE"),
    ("_ZN36_GLOBAL__N__4a14eddf_9_gemm_1_cu_00c0ffee4tileEv", "_ZN36_GLOBAL__N__00000000_9_gemm_1_cu_000000004tileEv"),
    # Not a module id: hex digits without the file name and second hash after them stay.
    ("_ZN1_deadbeef_4_abcdEv", "_ZN1_deadbeef_4_abcdEv"), ("x_deadbeef_4_abcd_0123456", "x_deadbeef_4_abcd_0123456"),
    ("_Z5heavyPKfPfi", "_Z5heavyPKfPfi"),
    ("", ""),
])
def test_normalise_symbol_zeroes_only_nvcc_module_ids(name: str, normal: str) -> None:
    assert normalise_symbol(name) == normal
    assert normalise_symbol(normal) == normal


@pytest.mark.slow
def test_an_object_without_device_code_has_no_metrics(toolchain: Toolchain, tmp_path: Path) -> None:
    source = tmp_path / "host.cu"
    source.write_text("int host_only(int x) { return x + 1; }\n")
    obj = tmp_path / "host.o"
    result = proc.run([toolchain.nvcc, "-c", "-arch=sm_90a", source, "-o", obj], 300)
    assert result.ok, result.output_tail()
    assert resource_usage(obj, toolchain) == {}
    assert code_hash(obj, toolchain) == {}
    assert sass_instruction_count(obj, toolchain) == 0


def test_metrics_need_cuobjdump(default_build: Built, toolchain: Toolchain, tmp_path: Path) -> None:
    from dataclasses import replace

    without = replace(toolchain, cuobjdump=None)
    with pytest.raises(ToolchainError, match=r'pip install "ciq-build\[cuda\]"'):
        resource_usage(default_build.obj, without)
    # A missing object is reported with cuobjdump's own words.
    with pytest.raises(ToolchainError, match="Could not open input file"):
        code_hash(tmp_path / "missing.o", toolchain)
    # cuobjdump reads a truncated object as one without device code.
    broken = tmp_path / "broken.o"
    broken.write_bytes(default_build.obj.read_bytes()[:100])
    assert resource_usage(broken, toolchain) == {}


HOST_LAUNCH = """\
#ifndef GRID
#define GRID 2
#endif
namespace { __device__ float triple(float x) { return 3.0f * x; } }
__global__ void scale(float* p) { p[threadIdx.x] = triple(p[threadIdx.x]); }
void launch(float* p) { scale<<<GRID, 32>>>(p); }
#ifndef SCALE
#define SCALE 3
#endif
double host_time() { return 1.0 + 0.25 * SCALE; }  // a constant in .rodata, as a benchmark test double prints
"""


@pytest.mark.slow
def test_host_code_hash_is_reproducible_where_the_object_is_not_and_sees_host_only_changes(
    toolchain: Toolchain, tmp_path: Path
) -> None:
    def build(where: str, *flags: str) -> Path:
        (tmp_path / where).mkdir()
        (tmp_path / where / "launch.cu").write_text(HOST_LAUNCH)
        return _compile(toolchain, tmp_path / where / "launch.cu", *flags)

    first, second = build("a"), build("b")
    # nvcc's module id is not reproducible: two builds of one source differ byte for byte ...
    assert hashlib.sha256(first.read_bytes()).digest() != hashlib.sha256(second.read_bytes()).digest()
    # ... their host code does not.
    assert host_code_hash(first) == host_code_hash(second)
    # A -D that changes only the launch leaves the device code alone, not the host code.
    other = build("c", "-DGRID=5")
    assert code_hash(other, toolchain) == code_hash(first, toolchain)
    assert host_code_hash(other) != host_code_hash(first)
    constant = build("d", "-DSCALE=1")  # the code is the same, the constant it loads is not
    assert code_hash(constant, toolchain) == code_hash(first, toolchain)
    assert host_code_hash(constant) != host_code_hash(first)


def test_a_per_kernel_objective_reads_only_the_kernels_its_regex_finds(capped_build: Built) -> None:
    usages = parse_ptxas_verbose(capped_build.ptxas_output)
    heavy = next(u for u in usages if u.function == HEAVY)
    light = next(u for u in usages if u.function == LIGHT)
    assert heavy.spill_bytes > 0 and light.registers < heavy.registers
    values = kernel_values(usages, {"registers:light": ("registers", "light"),
                                    "spill_bytes:_Z5heavy": ("spill_bytes", "_Z5heavy"),  # the mangled name
                                    "stack_bytes:heavy[(]": ("stack_bytes", "heavy[(]"),  # the demangled one
                                    "registers:li|he": ("registers", "li|he"),
                                    "registers:nothing": ("registers", "nothing")})
    assert values["registers:light"] == light.registers
    assert values["spill_bytes:_Z5heavy"] == heavy.spill_bytes
    assert values["stack_bytes:heavy[(]"] == heavy.stack_frame
    assert values["registers:li|he"] == heavy.registers  # the most of the kernels found
    assert "registers:nothing" not in values  # no kernel: no value, so the candidate has no score
