"""ciq_tune_target() (cmake/ciq_build.cmake) with real CMake, Ninja and nvcc 13.3.

One small project ("tiny", in a source directory whose path has a space) is
configured once per module; each test rewrites its CMakeLists body, pin
directory and cache settings and reconfigures (about a second, no compiler
detection), so every test states all the state it depends on.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from test_manifest_schema import assert_valid_manifest

from ciq_build.compiler.toolchain import _real_bin_dir, load_toolchain
from ciq_build.core.objectives import parse_objective, parse_objectives, unknown_objective
from ciq_build.core.rules import load_rules
from ciq_build.errors import ConfigError
from ciq_build.measure.proc import ProcResult, run
from ciq_build.project.cmake_trees import ScratchTree
from ciq_build.project.manifest import load_manifest
from ciq_build.project.worker import existing_objects
from ciq_build.state.journal import Journal
from ciq_build.tune.runner import relocatable_note
from support import REPO_ROOT, build_tool, ensure_ok, said

pytestmark = pytest.mark.slow

CMAKE_PACKAGE_DIR = REPO_ROOT / "cmake"


@pytest.fixture(scope="module")
def cmake_bin() -> str:
    return build_tool("cmake")


@pytest.fixture(scope="module")
def ninja_bin() -> str:
    return build_tool("ninja")


def compile_commands(ninja: str, build: Path, target: str) -> dict[str, str]:
    """Object file -> compile command, for what Ninja would build for `target`."""
    result = ensure_ok(run([ninja, "-C", build, "-t", "commands", target], timeout=60))
    found = {}
    for line in result.stdout.splitlines():
        if " -c " in line and (m := re.search(r" -o (\S+\.o)(?:\s|$)", line)):
            found[m.group(1)] = line
    return found


# --- the tiny project -------------------------------------------------------

KERN_CU = r"""
#ifndef KTILE
#define KTILE 1
#endif
#define CIQ_CAT2(a, b) a##b
#define CIQ_CAT(a, b) CIQ_CAT2(a, b)
// The symbol's name shows which -DKTILE the object was compiled with.
extern "C" int CIQ_CAT(kern_tile_, KTILE)() { return KTILE; }

// 48 live values: 64 registers by default, so -maxrregcount=32 shows.
__global__ void heavy(const float* in, float* out) {
    float v[48];
#pragma unroll
    for (int i = 0; i < 48; ++i) v[i] = in[threadIdx.x + i * blockDim.x];
    float s = 0.0f;
#pragma unroll
    for (int r = 0; r < 4; ++r)
#pragma unroll
        for (int i = 0; i < 48; ++i) s = fmaf(s, v[i], v[(i * 7 + r) % 48]);
    out[threadIdx.x] = s;
}
"""

BENCH_CU = KERN_CU.replace("kern_tile_", "bench_tile_") + r"""
#include <cstdio>
int main() { std::printf("CIQ_ERROR no-gpu\n"); return 2; }
"""

OTHER_CU = "__global__ void other_kernel(float* p) { p[threadIdx.x] = 1.0f; }\n"
KERN_HOST_CPP = "int kern_host_helper() { return 7; }\n"
HOST_CPP = "int host_only() { return 1; }\n"

# The seed include: the test projects' shortcut past CMake's compiler identification
# (tests/projects/seed_compilers.cmake; the architectures are given on the command line, before project()).
HEADER = """cmake_minimum_required(VERSION 3.24)
include("$ENV{CIQ_TEST_COMPILERS}/seed_compilers.cmake" OPTIONAL)  # unset or empty: no seed
project(tiny LANGUAGES CXX CUDA)
find_package(ciq_build CONFIG REQUIRED)
add_library(kern STATIC kern.cu kern_host.cpp)
add_library(other STATIC other.cu)
add_executable(kern_bench bench.cu)
add_library(hostonly STATIC host.cpp)
add_library(kern_alias ALIAS kern)
"""

DEFAULT_BODY = ('ciq_tune_target(kern BENCHMARK kern_bench ARGS --n 4 OBJECTIVES time PIN_DIR "pins dir" '
                'PARAMS "KTILE=range(1,64)")\n')

# The legacy FindCUDA module (removed by policy CMP0146), pointed at the toolkit the tiny project compiles with.
FIND_CUDA = """cmake_policy(SET CMP0146 OLD)
cmake_path(GET CMAKE_CUDA_COMPILER PARENT_PATH cuda_bin)
cmake_path(GET cuda_bin PARENT_PATH CUDA_TOOLKIT_ROOT_DIR)
find_package(CUDA REQUIRED)
"""

CACHE_DEFAULTS = {"CIQ_DISABLE": "OFF", "CIQ_STRICT": "OFF", "CIQ_TUNE_TARGET": "", "CIQ_TUNE_OPTIONS_FILE": ""}


@dataclass
class Tiny:
    source: Path
    build: Path
    cmake: str
    ninja: str
    cuda_bin: Path
    generator: str = "Ninja"
    body: str = field(default=DEFAULT_BODY)

    @property
    def pin_dir(self) -> Path:
        return self.source / "pins dir"

    def options_file(self, target: str = "kern") -> Path:
        return self.build / "ciq" / f"{target}.nvcc-options"

    def configure(
        self,
        *,
        body: str = DEFAULT_BODY,
        pins: Mapping[str, object] | None = None,
        files: Mapping[str, bytes] | None = None,
        cache: Mapping[str, str] | None = None,
    ) -> ProcResult:
        """Write the project and its pin dir exactly as given, then (re)configure."""
        (self.source / "CMakeLists.txt").write_text(HEADER + body)
        shutil.rmtree(self.pin_dir, ignore_errors=True)
        self.pin_dir.mkdir()
        for target, record in (pins or {}).items():
            text = record if isinstance(record, str) else json.dumps(record, indent=2)
            (self.pin_dir / f"{target}.json").write_text(text)
        for name, data in (files or {}).items():
            (self.pin_dir / name).write_bytes(data)
        return self.rerun_cmake(cache)

    def rerun_cmake(self, cache: Mapping[str, str] | None = None) -> ProcResult:
        """Configure again without touching the sources or the pins."""
        settings = {**CACHE_DEFAULTS, **(cache or {})}
        args: list[str | Path] = [
            self.cmake, "-S", self.source, "-B", self.build, "-G", self.generator,
            f"-DCMAKE_CUDA_COMPILER={self.cuda_bin / 'nvcc'}",
            "-DCMAKE_CUDA_ARCHITECTURES=90a",
            f"-Dciq_build_DIR={CMAKE_PACKAGE_DIR}",
            *(f"-D{k}={v}" for k, v in settings.items()),
        ]
        if self.generator == "Ninja":
            args.append(f"-DCMAKE_MAKE_PROGRAM={self.ninja}")
        return run(args, timeout=300)

    def commands(self, target: str) -> dict[str, str]:
        """Object file -> the compile command Ninja would run for it, for `target`."""
        return compile_commands(self.ninja, self.build, target)

    def build_targets(self, *targets: str) -> ProcResult:
        return ensure_ok(run([self.cmake, "--build", self.build, "--target", *targets], timeout=300))


def write_tiny_sources(source: Path) -> None:
    source.mkdir(parents=True)
    (source / "kern.cu").write_text(KERN_CU)
    (source / "bench.cu").write_text(BENCH_CU)
    (source / "other.cu").write_text(OTHER_CU)
    (source / "kern_host.cpp").write_text(KERN_HOST_CPP)
    (source / "host.cpp").write_text(HOST_CPP)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory, cmake_bin: str, ninja_bin: str, cuda133_bin: Path) -> Iterator[Tiny]:
    root = tmp_path_factory.mktemp("tiny")
    project = Tiny(root / "tiny src", root / "build", cmake_bin, ninja_bin, cuda133_bin)
    write_tiny_sources(project.source)
    ensure_ok(project.configure())
    yield project


def record(target: str = "kern", *, flags: list[str] | None = None, defines: dict[str, str] | None = None,
           acf: dict[str, str] | None = None, cuda: str = "13.3", schema: int = 1,
           architectures: list[str] | None = None) -> dict[str, object]:
    """A pinned record as `python -m ciq_build tune` writes it (contract schema 1)."""
    controls: dict[str, object] = {"flags": flags or [], "defines": defines or {}}
    if acf is not None:
        controls["acf"] = acf
    return {
        "schema": schema,
        "target": target,
        "controls": controls,
        "toolchain": {"cuda": cuda, "nvcc_version": f"{cuda}.73", "ptxas_version": f"{cuda}.73",
                      "architectures": ["90a"] if architectures is None else architectures},
        "provenance": {"engine": "hand-written for a test", "seed": 1},
        "objectives": [{"name": "time", "direction": "min"}],
        "baseline": {"scores": [1.0], "spread": [0.01]},
        "winner": {"scores": [0.9], "spread": [0.01]},
        "objects": {},
    }


def registers(cuobjdump: Path, obj: Path) -> dict[str, int]:
    """Kernel -> register count, per `cuobjdump --dump-resource-usage` (all archs)."""
    out = ensure_ok(run([cuobjdump, "--dump-resource-usage", obj], timeout=60)).stdout
    found: dict[str, int] = {}
    arch = ""
    for line in out.splitlines():
        if m := re.search(r"arch = (sm_\w+)", line):
            arch = m.group(1)
        if m := re.search(r"REG:(\d+)", line):
            found[f"{arch}:{len(found)}"] = int(m.group(1))
    return found


# --- pins applied -----------------------------------------------------------


# ------------------------------------------------------------------ the module's shape (its text, no CMake run)

MODULE = REPO_ROOT / "cmake" / "ciq_build.cmake"
# The parts ciq_build.cmake includes, as it names them: each owns one idea, behind a header saying which.
PARTS = [MODULE.parent / name for name in re.findall(
    r'^include\("\$\{CMAKE_CURRENT_LIST_DIR\}/(ciq_build_\w+\.cmake)"\)', MODULE.read_text(), re.M)]
# ciq_tune_target() and the checks of its own parse, which read its ARG_* by design and set nothing in it.
# Every other helper takes keyword arguments and names its outs.
CALL_CHECKS = {"ciq_tune_target", "_ciq_check_call", "_ciq_check_arguments"}


def _functions(text: str) -> dict[str, str]:
    """{name: body} of every function() and macro() of a CMake file."""
    return {m.group(2): m.group(3) for m in re.finditer(
        r"^(function|macro)\((\w+)[^)]*\)\n(.*?)^end\1\(\)", text, re.S | re.M)}


def test_the_module_opens_with_its_contract_and_the_contract_names_every_public_name() -> None:
    text = MODULE.read_text()
    contract = re.match(r"#\[=+\[\.rst:\n(.*?)#\]=+\]", text, re.S)
    assert contract is not None, "cmake/ciq_build.cmake must open with its contract block"
    parse = re.search(r"function\(ciq_tune_target target\)\n\s*cmake_parse_arguments\((.*?)\)\n", text, re.S)
    assert parse is not None
    keywords: set[str] = set()
    for group in re.findall(r'"([A-Z_;]+)"', parse.group(1)):
        keywords |= set(group.split(";"))
    code = text[contract.end():] + "".join(part.read_text() for part in PARTS)
    public = set(re.findall(r"(?<![\w@])CIQ_[A-Z_]*[A-Z]", code))  # cache variables, properties (not _CIQ_*)
    assert keywords >= {"BENCHMARK", "PARAMS", "ALLOW_NUMERICS"} and public >= {"CIQ_DISABLE", "CIQ_PIN_STATUS"}
    missing = sorted(name for name in keywords | public if name not in contract.group(1))
    assert missing == [], f"the contract block at the top of cmake/ciq_build.cmake does not say {missing}"


def test_each_part_of_the_module_says_what_it_owns_and_stays_short() -> None:
    assert len(PARTS) >= 6 and all(part.is_file() for part in PARTS)
    for path in [MODULE, *PARTS]:
        lines = path.read_text().splitlines()
        assert len(lines) <= 700, f"cmake/{path.name} has {len(lines)} lines; split off what is a separate idea"
    for part in PARTS:
        assert part.read_text().startswith("# ciq_build's CMake module, part: "), (
            f"cmake/{part.name} must open with a header saying what it owns and why it is a file of its own")


def test_helpers_take_keyword_arguments_and_set_only_the_names_their_caller_gave() -> None:
    functions: dict[str, str] = {}
    for path in [MODULE, *PARTS]:
        defined = _functions(path.read_text())
        assert not set(defined) & set(functions), f"cmake/{path.name} defines again {set(defined) & set(functions)}"
        functions |= defined
    assert len(functions) > 20 and CALL_CHECKS <= set(functions)
    readers = sorted(name for name, body in functions.items() if "ARG_" in body and name not in CALL_CHECKS)
    assert readers == [], f"{readers} read the caller's ARG_*: pass what they need as keyword arguments"
    literal_outs = sorted(
        f"{name}: {out}" for name, body in functions.items() if name != "ciq_tune_target"
        for out in re.findall(r"set\((\w+)[^\n]*PARENT_SCOPE\)", body))
    assert literal_outs == [], f"helpers set names their caller never gave: {literal_outs}"
    keyword_helpers = [name for name, body in functions.items() if "cmake_parse_arguments(PARSE_ARGV 0 arg" in body]
    assert {"_ciq_read_controls", "_ciq_read_pin", "_ciq_resolve_pin", "_ciq_apply_pin"} <= set(keyword_helpers)


def test_no_pin_gives_empty_options_file_on_cuda_compiles_only(tiny: Tiny) -> None:
    result = ensure_ok(tiny.configure())
    assert "ciq_build: kern: no pinned controls" in said(result)
    assert tiny.options_file().read_text() == ""
    option = f"--options-file={tiny.options_file()}"
    kern = tiny.commands("kern")
    assert set(kern) == {"CMakeFiles/kern.dir/kern.cu.o", "CMakeFiles/kern.dir/kern_host.cpp.o"}
    assert option in kern["CMakeFiles/kern.dir/kern.cu.o"]
    assert "--options-file" not in kern["CMakeFiles/kern.dir/kern_host.cpp.o"]  # CUDA compiles only
    other = tiny.commands("other")
    assert other and not any("--options-file" in c for c in other.values())


def test_pin_is_applied_to_that_target_and_changes_the_code(tiny: Tiny) -> None:
    pin = record(flags=["-maxrregcount=32", "-Xptxas=-O2"], defines={"KTILE": "4"})
    result = ensure_ok(tiny.configure(pins={"kern": pin}))
    assert "ciq_build: kern: pinned controls from" in said(result)
    # Sorted, as lock.py's Controls sorts them: both builds write the same file.
    assert "-Xptxas=-O2 -maxrregcount=32 -DKTILE=4" in said(result)
    assert tiny.options_file().read_text().splitlines() == ["-Xptxas=-O2", "-maxrregcount=32", "-DKTILE=4"]
    assert not (tiny.build / "ciq" / "other.nvcc-options").exists()  # other is not tuned

    # The compiled object obeys the pin: register cap and -D parameter.
    tiny.build_targets("kern")
    obj = tiny.build / "CMakeFiles" / "kern.dir" / "kern.cu.o"
    regs = registers(tiny.cuda_bin / "cuobjdump", obj)
    assert regs and max(regs.values()) <= 32
    symbols = ensure_ok(run(["nm", obj], timeout=60)).stdout
    assert "kern_tile_4" in symbols and "kern_tile_1" not in symbols

    # An unchanged reconfigure leaves the options file (and so the objects) alone.
    mtime = tiny.options_file().stat().st_mtime_ns
    ensure_ok(tiny.rerun_cmake())
    assert tiny.options_file().stat().st_mtime_ns == mtime
    dry = ensure_ok(run([tiny.ninja, "-C", tiny.build, "-n", "kern"], timeout=60)).stdout
    assert "kern.cu.o" not in dry


def test_pin_written_after_configure_is_picked_up_by_the_next_build(tiny: Tiny) -> None:
    ensure_ok(tiny.configure())
    tiny.build_targets("other")
    assert tiny.options_file().read_text() == ""
    # What `python -m ciq_build tune` does at the end: write the pin, nothing else.
    (tiny.pin_dir / "kern.json").write_text(json.dumps(record(flags=["-maxrregcount=40"])))
    tiny.build_targets("other")  # any build re-runs CMake, because the pin dir changed
    assert tiny.options_file().read_text() == "-maxrregcount=40\n"


@pytest.mark.parametrize(
    "flag",
    [
        "-Xcompiler=-fplugin=/tmp/evil.so",
        "-ccbin=/bin/sh",
        "--options-file=/etc/passwd",
        "-Xptxas=--apply-controls=/tmp/x.acf",
        "-maxrregcount=32 -ccbin=/bin/sh",
        "-maxrregcount=32;-ccbin=/bin/sh",
        "-I/usr/include",
        "",
    ],
)
def test_flag_outside_the_allowlist_is_a_configure_error(tiny: Tiny, flag: str) -> None:
    result = tiny.configure(pins={"kern": record(flags=["-maxrregcount=32", flag])})
    assert not result.ok
    assert "ciq_tune_target(kern): refusing the pinned record" in said(result)
    assert "flag outside the allow-list" in said(result) or "breaks the" in said(result)


def test_numerics_flags_need_allow_numerics(tiny: Tiny) -> None:
    pin = {"kern": record(flags=["--use_fast_math"])}
    refused = tiny.configure(pins=pin)
    assert not refused.ok and "ALLOW_NUMERICS" in said(refused)
    body = DEFAULT_BODY.replace("OBJECTIVES time", "OBJECTIVES time ALLOW_NUMERICS")
    ensure_ok(tiny.configure(body=body, pins=pin))
    assert tiny.options_file().read_text() == "--use_fast_math\n"
    manifest = json.loads((tiny.build / "ciq" / "targets" / "kern.json").read_text())
    assert manifest["allow_numerics"] is True


@pytest.mark.parametrize(
    ("defines", "message"),
    [
        ({"1TILE": "4"}, "define_name rule"),
        ({"KTILE": "4 -ccbin=x"}, "define_value rule"),
        ({"KTILE": "$(touch pwned)"}, "define_value rule"),
        ({"NDEBUG": "1"}, "only the PARAMS of ciq_tune_target(kern) may be defined"),
        ({"KTILE": "65"}, "outside its declared domain"),
    ],
)
def test_unsafe_defines_are_refused(tiny: Tiny, defines: dict[str, str], message: str) -> None:
    result = tiny.configure(pins={"kern": record(defines=defines)})
    assert not result.ok and message in said(result)


@pytest.mark.parametrize(
    ("pin", "message"),
    [
        ("{not json", "comments or bare words"),
        (record(schema=2), "schema is 2"),
        (record(target="other"), "copied from another target"),
    ],
)
def test_malformed_records_are_refused(tiny: Tiny, pin: object, message: str) -> None:
    result = tiny.configure(pins={"kern": pin})
    assert not result.ok and message in said(result)


# --- ACF ---------------------------------------------------------------------

# Binary, as a real ACF is (a NUL, CR LF): configure-time checks only look at its sha256.
FAKE_ACF = b"not a real ACF\x00\xff\r\n"


def acf_record(name: str = "kern.acf", compiler: str = "ptxas", sha: str | None = None,
               architectures: list[str] | None = None) -> dict[str, object]:
    return record(acf={"file": name, "sha256": sha or hashlib.sha256(FAKE_ACF).hexdigest(), "compiler": compiler},
                  architectures=architectures)


def test_ptxas_acf_in_a_pin_dir_with_spaces_is_applied_through_a_plain_path(tiny: Tiny) -> None:
    ensure_ok(tiny.configure(pins={"kern": acf_record()}, files={"kern.acf": FAKE_ACF}))
    lines = tiny.options_file().read_text().splitlines()
    # nvcc hands the ACF path to ptxas through a shell that splits at spaces,
    # so the ACF from "pins dir" is used through a copy in the build tree.
    copy = tiny.build / "ciq" / "kern.acf"
    assert lines == [f"-Xptxas=--apply-controls={copy}"]
    assert copy.read_bytes() == FAKE_ACF
    # Editing the ACF (even with a matching record) rebuilds: it is in OBJECT_DEPENDS.
    explain = ensure_ok(run([tiny.ninja, "-C", tiny.build, "-t", "query", "CMakeFiles/kern.dir/kern.cu.o"],
                            timeout=60)).stdout
    implicit = {line.strip()[2:] for line in explain.splitlines() if line.strip().startswith("| ")}
    # Ninja names build-tree files relative to the build tree.
    assert {"ciq/kern.nvcc-options", "ciq/kern.acf", str(tiny.pin_dir / "kern.acf"),
            str(tiny.pin_dir / "kern.json")} <= implicit


def test_acf_sha_mismatch_is_a_configure_error(tiny: Tiny) -> None:
    result = tiny.configure(pins={"kern": acf_record(sha="0" * 64)}, files={"kern.acf": FAKE_ACF})
    assert not result.ok
    assert "is not the one that" in said(result)
    assert "Restore it from version control, or retune" in said(result)


@pytest.mark.parametrize("name", ["../kern.acf", "sub/kern.acf", "..", "x$(touch pwned).acf", "a b.acf"])
def test_acf_file_must_be_a_plain_name_in_the_pin_dir(tiny: Tiny, name: str) -> None:
    result = tiny.configure(pins={"kern": acf_record(name=name)}, files={"kern.acf": FAKE_ACF})
    assert not result.ok and "controls.acf.file is" in said(result) and "breaks the acf_file rule" in said(result)


def test_missing_acf_is_a_configure_error(tiny: Tiny) -> None:
    result = tiny.configure(pins={"kern": acf_record()})
    assert not result.ok and "does not exist" in said(result)


def test_nvcc_acf_is_refused_below_sm_100(tiny: Tiny) -> None:
    files = {"kern.acf": FAKE_ACF}
    body = 'set_target_properties(kern PROPERTIES CUDA_ARCHITECTURES "90a;100a")\n' + DEFAULT_BODY
    pin = {"kern": acf_record(compiler="nvcc", architectures=["90a", "100a"])}  # tuned for what it builds
    result = tiny.configure(body=body, pins=pin, files=files)
    assert not result.ok and "use the ptxas search space" in said(result)

    body = 'set_target_properties(kern PROPERTIES CUDA_ARCHITECTURES "100a")\n' + DEFAULT_BODY
    pin = {"kern": acf_record(compiler="nvcc", architectures=["100a"])}
    ensure_ok(tiny.configure(body=body, pins=pin, files=files))
    assert tiny.options_file().read_text() == f"--apply-controls={tiny.build / 'ciq' / 'kern.acf'}\n"


# --- toolkit, disable, tuning mode ------------------------------------------


def test_toolkit_mismatch_warns_and_skips_or_fails_when_strict(tiny: Tiny) -> None:
    pin = {"kern": record(flags=["-maxrregcount=32"], cuda="12.8")}
    result = ensure_ok(tiny.configure(pins=pin))
    assert "CMake Warning" in said(result) and "tuned with CUDA 12.8" in said(result)
    assert "ciq_build: kern: pin skipped (tuned with CUDA 12.8, compiling with 13.3)" in said(result)
    assert tiny.options_file().read_text() == ""

    strict = tiny.configure(pins=pin, cache={"CIQ_STRICT": "ON"})
    assert not strict.ok
    assert "CMake Error" in said(strict) and "tuned with CUDA 12.8" in said(strict)
    # One message, said once: the target and the record are named once, not under a second prefix.
    assert said(strict).count("ciq_tune_target(kern):") == 1 and said(strict).count("kern.json") == 1
    assert "(CIQ_STRICT=ON makes this an error.)" in said(strict)
    # Built by scikit-build-core (pip), which hides the warning without -v and takes CMake's settings from -C:
    # it said -DCMAKE_CUDA_COMPILER=... alone (curadon's wheel, built by the first nvcc found, shipped unpinned).
    wheel = ensure_ok(tiny.configure(pins=pin, cache={"SKBUILD": "2"}))
    assert "-C cmake.define.CMAKE_CUDA_COMPILER=<its nvcc>" in said(wheel), said(wheel)
    assert "pip shows this only with -v" in said(wheel) and "-C cmake.define.CIQ_STRICT=ON" in said(wheel)


def test_a_pin_tuned_for_other_architectures_is_skipped_or_fails_when_strict(tiny: Tiny) -> None:
    pin = {"kern": record(flags=["-maxrregcount=32"], architectures=["100", "75"])}
    result = ensure_ok(tiny.configure(pins=pin))  # the project builds for 90a
    # Architectures by number, as a person reads them (as text, 100 came before 75).
    assert "CMake Warning" in said(result) and "was tuned for 75, 100, but this build compiles for 90a" in said(result)
    assert "or build for 75, 100." in said(result)
    assert "ciq_build: kern: pin skipped (tuned for 75, 100, compiling for 90a)" in said(result)
    assert tiny.options_file().read_text() == ""

    strict = tiny.configure(pins=pin, cache={"CIQ_STRICT": "ON"})
    assert not strict.ok and "CMake Error" in said(strict) and "tuned for 75" in said(strict)
    assert said(strict).count("ciq_tune_target(kern):") == 1 and said(strict).count("kern.json") == 1

    # The same architecture in another spelling is the same architecture.
    ensure_ok(tiny.configure(pins={"kern": record(flags=["-maxrregcount=32"], architectures=["sm_90a"])}))
    assert tiny.options_file().read_text() == "-maxrregcount=32\n"


def test_where_cuda_architectures_name_none_a_pin_is_checked_against_those_the_targets_own_flags_build(
        tiny: Tiny) -> None:
    # miniBUDE sets policy CMP0104 OLD and `-arch=sm_90` in CMAKE_CUDA_FLAGS: its pin, measured on sm_90, named no
    # architecture ("tuned for nvcc's default, applied to any") and a build for sm_80 applied it without a word.
    for flags in ('string(APPEND CMAKE_CUDA_FLAGS " -arch=sm_90")',
                  'target_compile_options(kern PRIVATE "$<$<COMPILE_LANGUAGE:CUDA>:SHELL:-gencode arch=compute_90,'
                  'code=sm_90>")'):
        body = f"set_target_properties(kern PROPERTIES CUDA_ARCHITECTURES OFF)\n{flags}\n{DEFAULT_BODY}"
        other = ensure_ok(tiny.configure(body=body, pins={"kern": record(flags=["-maxrregcount=32"],
                                                                         architectures=["80"])}))
        assert "ciq_build: kern: pin skipped (tuned for 80, compiling for 90)" in said(other), said(other)
        assert tiny.options_file().read_text() == ""
        manifest = json.loads((tiny.build / "ciq" / "targets" / "kern.json").read_text())
        assert manifest["toolchain"]["architectures"] == "90"  # what a tune measures, and so pins
        ensure_ok(tiny.configure(body=body, pins={"kern": record(flags=["-maxrregcount=32"], architectures=["90"])}))
        assert tiny.options_file().read_text() == "-maxrregcount=32\n"


SUBDIRECTORY_FLAGS = """string(APPEND CMAKE_CUDA_FLAGS " -arch=sm_80")
add_library(subkern STATIC ../kern.cu)
set_target_properties(subkern PROPERTIES CUDA_ARCHITECTURES OFF)
ciq_tune_target(subkern OBJECTIVES registers)
"""


def test_the_flags_of_a_target_made_in_a_subdirectory_are_those_its_directory_sets(tiny: Tiny) -> None:
    # cuda-api-wrappers appends its -gencode flags to CMAKE_CUDA_FLAGS in examples/CMakeLists.txt alone: the steps
    # deferred to the end of the top level read the top level's (none), so the tune said "the only architecture
    # built" of a build of three, and where CUDA_ARCHITECTURES name none (CMP0104 OLD, as the project means to set),
    # configure stopped on "CUDA_ARCHITECTURES changed from '80' to ''" after a call that changed nothing.
    (tiny.source / "sub").mkdir(exist_ok=True)
    (tiny.source / "sub" / "CMakeLists.txt").write_text(SUBDIRECTORY_FLAGS)
    try:
        result = ensure_ok(tiny.configure(body=DEFAULT_BODY + "add_subdirectory(sub)\n"))
        assert "ciq_build: subkern: no pinned controls" in said(result)
        manifest = json.loads((tiny.build / "ciq" / "targets" / "subkern.json").read_text())
        assert manifest["toolchain"]["architectures"] == "80"  # what a tune measures, and a pin is checked against
        flags = (tiny.build / "ciq" / "targets" / "subkern.cuda-flags-noconfig").read_text().split()
        assert "-arch=sm_80" in flags  # the tune's "own nvcc flags" of the target
    finally:
        shutil.rmtree(tiny.source / "sub")


def test_a_call_above_the_directory_that_enables_cuda_says_where_to_call(tmp_path: Path, cmake_bin: str,
                                                                         ninja_bin: str, cuda133_bin: Path) -> None:
    # cuda-api-wrappers enables CUDA in examples/CMakeLists.txt alone: a call at the top level, after
    # add_subdirectory(examples), was told "Add CUDA to project() or call enable_language(CUDA)", which it had.
    source = tmp_path / "src"
    (source / "examples").mkdir(parents=True)
    (source / "examples" / "kern.cu").write_text(OTHER_CU)
    (source / "examples" / "CMakeLists.txt").write_text("enable_language(CUDA)\nadd_library(kern STATIC kern.cu)\n")
    (source / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.24)\nproject(top LANGUAGES CXX)\nfind_package(ciq_build CONFIG REQUIRED)\n"
        "add_subdirectory(examples)\nciq_tune_target(kern OBJECTIVES registers)\n")
    result = run([cmake_bin, "-S", source, "-B", tmp_path / "build", "-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={ninja_bin}",
                  f"-DCMAKE_CUDA_COMPILER={cuda133_bin / 'nvcc'}", "-DCMAKE_CUDA_ARCHITECTURES=90a",
                  f"-Dciq_build_DIR={CMAKE_PACKAGE_DIR}"], timeout=300)
    assert not result.ok
    text = " ".join(said(result).split())
    assert (f"ciq_tune_target(kern): CUDA is enabled in {source}/examples, where 'kern' is made, not in {source}, "
            f"where this call is: call ciq_tune_target(kern ...) in {source}/examples/CMakeLists.txt, after the "
            "target, or add CUDA to the top-level project().") in text, text


def test_a_findcuda_target_in_a_project_without_cuda_is_told_both_at_once(tmp_path: Path, cmake_bin: str,
                                                                          ninja_bin: str, cuda133_bin: Path) -> None:
    # wangzyon's SGEMM (project() of C and CXX, find_package(CUDA), cuda_add_executable()) was told "CUDA is not
    # enabled here. Add CUDA to project() ...", and once it had, that FindCUDA's commands are out of a pin's reach.
    source = tmp_path / "src"
    source.mkdir()
    (source / "kern.cu").write_text(OTHER_CU)
    (source / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.24)\nproject(top LANGUAGES C CXX)\nfind_package(ciq_build CONFIG REQUIRED)\n"
        + FIND_CUDA.replace("CMAKE_CUDA_COMPILER", "NVCC") + "cuda_add_executable(legacy kern.cu)\n"
        "ciq_tune_target(legacy OBJECTIVES registers)\n")
    result = run([cmake_bin, "-S", source, "-B", tmp_path / "build", "-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={ninja_bin}",
                  f"-DNVCC={cuda133_bin / 'nvcc'}", f"-Dciq_build_DIR={CMAKE_PACKAGE_DIR}"], timeout=300)
    assert not result.ok
    text = " ".join(said(result).split())
    assert ("ciq_tune_target(legacy): CUDA is not enabled here, and 'legacy' is made by FindCUDA's cuda_add_executable() "
            "or cuda_add_library(), which compiles kern.cu by a command of its own") in text, text
    assert "Build the target with CMake's CUDA language instead" in text, text


UNREAD_ARCHITECTURES = [
    ('set_target_properties(kern PROPERTIES CUDA_ARCHITECTURES OFF)\n'
     'target_compile_options(kern PRIVATE "$<$<CONFIG:Release>:-arch=sm_90>")',
     "CUDA_ARCHITECTURES names none, and its compile option '$<$<CONFIG:Release>:-arch=sm_90>' sets -arch inside a "
     "generator expression"),
    ('set_target_properties(kern PROPERTIES CUDA_ARCHITECTURES OFF)\n'
     'target_compile_options(kern PRIVATE "$<$<COMPILE_LANGUAGE:CUDA>:$<$<CONFIG:Release>:--generate-code='
     'arch=compute_90,code=sm_90>>")',
     "CUDA_ARCHITECTURES names none, and its compile option '$<$<COMPILE_LANGUAGE:CUDA>:$<$<CONFIG:Release>:"
     "--generate-code=arch=compute_90,code=sm_90>>' sets --generate-code inside a generator expression"),
    ('set_target_properties(kern PROPERTIES CUDA_ARCHITECTURES "$<IF:$<CONFIG:Debug>,80,90>")',
     "its CUDA_ARCHITECTURES '$<IF:$<CONFIG:Debug>,80,90>' hold a generator expression"),
]
WHAT_TO_WRITE = ("Name the architectures in CUDA_ARCHITECTURES, without a generator expression: "
                 "set_target_properties(kern PROPERTIES CUDA_ARCHITECTURES 90), or -DCMAKE_CUDA_ARCHITECTURES=90.")


@pytest.mark.parametrize(("setting", "why"), UNREAD_ARCHITECTURES)
def test_architectures_configure_cannot_read_are_refused_with_what_to_write(tiny: Tiny, setting: str, why: str
                                                                            ) -> None:
    # A pin is checked against the architectures the target builds: where a generator expression hides them,
    # configure took the flags it could read (none: "nvcc's default") and applied any pin tuned for any.
    result = tiny.configure(body=f"{setting}\n{DEFAULT_BODY}", pins={"kern": record(flags=["-maxrregcount=32"],
                                                                                     architectures=["80"])})
    assert not result.ok
    assert (f"ciq_tune_target(kern): cannot read which architectures kern builds: {why}, which configure cannot "
            f"evaluate, so the pinned record {tiny.pin_dir / 'kern.json'} cannot be checked against them. "
            f"{WHAT_TO_WRITE}") in said(result), said(result)


@pytest.mark.parametrize(("setting", "why"), UNREAD_ARCHITECTURES)
def test_architectures_configure_cannot_read_without_a_pin_are_a_warning_and_a_tune_is_refused(
        tiny: Tiny, setting: str, why: str) -> None:
    # Without a pin there is nothing to check against them: configure stopped all the same, and a project whose
    # CUDA_ARCHITECTURES is a generator expression could not build with ciq_tune_target() in it at all.
    from ciq_build.project.manifest import check_architectures_read

    result = ensure_ok(tiny.configure(body=f"{setting}\n{DEFAULT_BODY}"))
    assert (f"ciq_tune_target(kern): cannot read which architectures kern builds: {why}, which configure cannot "
            "evaluate. With no pin to apply, kern builds as written, but a tune could not know which architectures "
            "it measures, nor pin a record this build can check against them, so `python -m ciq_build tune kern` is "
            f"refused until they are named. {WHAT_TO_WRITE}") in said(result), said(result)
    assert "CMake Warning" in said(result) and "no pinned controls" in said(result)
    manifest = load_manifest(tiny.build, "kern")
    assert (manifest.toolchain.architectures, manifest.toolchain.architectures_unread) == ("", why)
    with pytest.raises(ConfigError, match="cannot tune kern: configure could not read which architectures it builds"):
        check_architectures_read(manifest)
    # The tune's own configure of such a target stops: it would measure architectures it cannot name.
    tuning = tiny.rerun_cmake({"CIQ_TUNE_TARGET": "kern", "CIQ_TUNE_OPTIONS_FILE": str(tiny.build / "t.opts")})
    assert not tuning.ok and "so a tune cannot know which architectures it measures" in said(tuning), said(tuning)
    ensure_ok(tiny.rerun_cmake())


def test_generator_expressions_that_choose_no_architecture_are_no_reason_to_refuse(tiny: Tiny) -> None:
    body = ('set_target_properties(kern PROPERTIES CUDA_ARCHITECTURES OFF)\n'
            'string(APPEND CMAKE_CUDA_FLAGS " -arch=sm_90")\n'
            'target_compile_options(kern PRIVATE "$<$<CONFIG:Debug>:-G>" "$<$<COMPILE_LANGUAGE:CXX>:-march=native>"'
            ' "$<$<COMPILE_LANGUAGE:CXX>:$<$<CONFIG:Release>:-arch=x>>")\n' + DEFAULT_BODY)
    result = ensure_ok(tiny.configure(body=body, pins={"kern": record(flags=["-maxrregcount=32"],
                                                                      architectures=["90"])}))
    assert "ciq_build: kern: pinned controls" in said(result), said(result)


def test_list_says_which_pin_the_build_skips(tiny: Tiny) -> None:
    # miniBUDE's pin tuned for sm_90, in a build for sm_80: `list` showed it in its pin column as if it applied.
    from ciq_build.project.cmake_backend import CMakeBackend
    from ciq_build.reports.show import list_targets

    ensure_ok(tiny.configure(pins={"kern": record(flags=["-maxrregcount=32"], architectures=["80"])}))
    listed = list_targets(CMakeBackend(tiny.build, None))
    assert "kern.json (skipped by this build: tuned for 80, compiling for 90a)" in listed, listed
    ensure_ok(tiny.configure(pins={"kern": record(flags=["-maxrregcount=32"], architectures=["90a"])}))
    listed = list_targets(CMakeBackend(tiny.build, None))
    assert "kern.json" in listed and "skipped" not in listed, listed


def test_show_list_and_verify_say_a_build_with_ciq_disable_applies_no_pin(tiny: Tiny) -> None:
    # wangzyon's SGEMM's clone configured with -DCIQ_DISABLE=ON: show said "build  pinned controls from ...", list
    # listed the pin as applied, and verify said to "look for a warning from ciq_tune_target" and that the source had
    # changed since the tune.
    from ciq_build.pin.verify import verify
    from ciq_build.project.cmake_backend import CMakeBackend
    from ciq_build.reports.show import list_targets, show

    ensure_ok(tiny.configure(pins={"kern": record(flags=["-maxrregcount=32"], architectures=["90a"])},
                             cache={"CIQ_DISABLE": "ON"}))
    backend = CMakeBackend(tiny.build, None)
    text, applies = show("kern", backend, None)
    assert text.endswith("build       pins disabled (CIQ_DISABLE)") and applies, text
    assert "kern.json (skipped by this build: pins disabled (CIQ_DISABLE))" in list_targets(backend)
    report = verify("kern", backend)
    assert not report.ok and "this build applies no pin: pins disabled (CIQ_DISABLE); configure with " \
                               "-DCIQ_DISABLE=OFF" in report.text, report.text
    assert "machine code differs" not in report.text
    ensure_ok(tiny.configure(pins={"kern": record(flags=["-maxrregcount=32"], architectures=["90a"])},
                             cache={"CIQ_DISABLE": "OFF"}))
    assert "pinned controls from" in show("kern", backend, None)[0]


def test_list_says_why_it_refuses_a_pin(tiny: Tiny) -> None:
    # wangzyon's SGEMM's pin cut short: `list` said "(refused: pinned record /tmp/.../ciq/sgemm.json is not o)", the
    # first 60 characters of the message, the path the column had already shown.
    from ciq_build.project.cmake_backend import CMakeBackend
    from ciq_build.reports.show import list_targets

    ensure_ok(tiny.configure(pins={"kern": record(flags=["-maxrregcount=32"], architectures=["90a"])}))
    pin = tiny.pin_dir / "kern.json"
    pin.write_text(pin.read_text()[:300])
    listed = list_targets(CMakeBackend(tiny.build, None))
    assert f"{pin} (refused: is not one JSON object; `show kern` says what to do)" in listed, listed
    pin.write_text(json.dumps(record(flags=["-Xptxas=-O3;rm -rf /"], architectures=["90a"])))
    listed = list_targets(CMakeBackend(tiny.build, None))
    assert f"{pin} (refused: controls.flags[0]: the pinned flag '-Xptxas=-O3;rm -rf /' is refused" in listed, listed


def test_verify_of_a_pin_the_build_skips_says_why_the_build_skips_it(tiny: Tiny) -> None:
    # miniBUDE's pin tuned for sm_90 verified in a build for sm_80: verify said "reconfigure and look for a warning
    # from ciq_tune_target" of the empty options file, where it knew the build's reason itself.
    from ciq_build.pin.verify import verify
    from ciq_build.project.cmake_backend import CMakeBackend

    ensure_ok(tiny.configure(pins={"kern": record(flags=["-maxrregcount=32"], architectures=["80"])}))
    # The tree is shared with the module's other tests: objects they built may be there already.
    objects = {obj: obj.stat().st_mtime_ns for obj in tiny.build.rglob("*.cu.o")}
    report = verify("kern", CMakeBackend(tiny.build, None))
    assert not report.ok
    # Said once, as the build decided it, without a rebuild: GPUSorting's record for 80, 90 verified in a build for 90
    # alone gave 11 lines (each options file empty, each object's code not the winner's), all of the one reason.
    lines = report.text.splitlines()
    assert lines[1:] == ["  FAILED:", f"    this build skips the pin: pin skipped (tuned for 80, compiling for 90a): "
                                      f"{tiny.pin_dir / 'kern.json'}; the pinned record for 'kern' was tuned for 80, "
                                      "but this build compiles for 90a: retune for these architectures (python -m "
                                      "ciq_build tune kern), or build for 80. The pin is skipped for now."], report.text
    assert {obj: obj.stat().st_mtime_ns for obj in tiny.build.rglob("*.cu.o")} == objects, "built for nothing"


def test_verify_builds_the_objects_it_checks_not_a_link_the_machine_cannot_make(tiny: Tiny) -> None:
    # cuda-api-wrappers' examples link CUDA::cuda_driver: on a machine without the driver its static tune ran (it
    # never links), but verify built the whole executable and stopped on the link's undefined cu* symbols.
    from ciq_build.pin.verify import verify
    from ciq_build.project.cmake_backend import CMakeBackend

    body = ('add_executable(kexe kern.cu host.cpp)\ntarget_link_libraries(kexe PRIVATE ciq_no_such_driver_library)\n'
            'ciq_tune_target(kexe OBJECTIVES registers PIN_DIR "pins dir")\n')
    ensure_ok(tiny.configure(body=body, pins={"kexe": record("kexe", flags=["-maxrregcount=32"])},
                             files={"host.cpp": b"int host_side() { return 1; }\n"}))
    report = verify("kexe", CMakeBackend(tiny.build, None))  # raised "building kexe failed" (the link's)
    # BabelStream's "2 object(s)" counted its main.cpp.o, which holds no device code to check: said.
    assert "ciq_build verify kexe: 2 object(s) (1 with device code)" in report.text, report.text
    assert "holds no fingerprint of any object's code (kern.cu.o built)" in report.text  # the record is hand-made


def test_architectures_changed_after_the_call_are_refused(tiny: Tiny) -> None:
    # The pin was checked against the architectures at the call; a later change would go unchecked.
    body = DEFAULT_BODY + 'set_target_properties(kern PROPERTIES CUDA_ARCHITECTURES "75")\n'
    result = tiny.configure(body=body, pins={"kern": record(flags=["-maxrregcount=32"])})
    assert not result.ok and "CUDA_ARCHITECTURES changed from '90a' to '75'" in said(result)
    assert "before calling ciq_tune_target()" in said(result)


def test_architectures_changed_after_the_call_are_refused_without_a_pin_too_at_the_calls_line(tiny: Tiny) -> None:
    # No pin yet: a tune would measure 75 and pin a record that the call checks against 90a and skips.
    body = DEFAULT_BODY + 'set_target_properties(kern PROPERTIES CUDA_ARCHITECTURES "75")\n'
    result = tiny.configure(body=body)
    assert not result.ok and "CUDA_ARCHITECTURES changed from '90a' to '75'" in said(result)
    assert "a tune would measure '75' and pin a record that this call then checks against '90a'" in said(result)
    line = HEADER.count("\n") + 1  # the call is the body's first line
    assert f"{tiny.source / 'CMakeLists.txt'}:{line}: ciq_tune_target(kern)" in said(result)


def test_a_misspelt_benchmark_gets_did_you_mean_and_the_calls_line(tiny: Tiny) -> None:
    body = "\n\nciq_tune_target(kern BENCHMARK kern_bnch OBJECTIVES time)\n"
    result = tiny.configure(body=body)
    assert not result.ok
    line = HEADER.count("\n") + 3
    assert (f"{tiny.source / 'CMakeLists.txt'}:{line}: ciq_tune_target(kern): BENCHMARK 'kern_bnch' is not a "
            "target (did you mean kern_bench?)") in said(result), said(result)


def test_ciq_disable_builds_without_pins(tiny: Tiny) -> None:
    pin = {"kern": record(flags=["-maxrregcount=32"])}
    result = ensure_ok(tiny.configure(pins=pin, cache={"CIQ_DISABLE": "ON"}))
    assert "pins disabled" in said(result)
    assert tiny.options_file().read_text() == ""
    ensure_ok(tiny.configure(pins=pin))
    assert tiny.options_file().read_text() == "-maxrregcount=32\n"


def test_tuning_mode_uses_the_drivers_options_file_and_ignores_the_pin(tiny: Tiny, tmp_path: Path) -> None:
    candidate = tmp_path / "candidate.nvcc-options"
    candidate.write_text("-maxrregcount=64\n")
    pin = {"kern": record(flags=["-maxrregcount=32"])}
    cache = {"CIQ_TUNE_TARGET": "kern", "CIQ_TUNE_OPTIONS_FILE": str(candidate)}
    result = ensure_ok(tiny.configure(pins=pin, cache=cache))
    assert f"tuning build, controls from {candidate}" in said(result)
    kern_cuda = tiny.commands("kern")["CMakeFiles/kern.dir/kern.cu.o"]
    assert f"--options-file={candidate}" in kern_cuda
    assert str(tiny.options_file()) not in kern_cuda
    manifest = load_manifest(tiny.build, "kern")
    assert Path(manifest.options_file) == candidate
    query = ensure_ok(run([tiny.ninja, "-C", tiny.build, "-t", "query", "CMakeFiles/kern.dir/kern.cu.o"],
                          timeout=60)).stdout
    assert str(candidate) in query  # the driver's rewrite triggers the rebuild


def test_tuning_mode_for_an_unregistered_target_is_an_error(tiny: Tiny, tmp_path: Path) -> None:
    cache = {"CIQ_TUNE_TARGET": "other", "CIQ_TUNE_OPTIONS_FILE": str(tmp_path / "x.opts")}
    result = tiny.configure(cache=cache)
    assert not result.ok and "no ciq_tune_target() call registered" in said(result)


# --- manifest ---------------------------------------------------------------


def test_manifest_lists_the_objects_cmake_builds_never_stale_ones(tiny: Tiny) -> None:
    # A source removed from the target leaves its object in CMakeFiles/kern.dir;
    # tune and verify must not fingerprint it as if it were still linked.
    body = 'ciq_tune_target(kern OBJECTIVES registers PIN_DIR "pins dir")\n'
    ensure_ok(tiny.configure(body="target_sources(kern PRIVATE other.cu)\n" + body))
    tiny.build_targets("kern")
    stale = tiny.build / "CMakeFiles" / "kern.dir" / "other.cu.o"
    assert stale in load_manifest(tiny.build, "kern").objects and stale.is_file()

    ensure_ok(tiny.configure(body=body))
    tiny.build_targets("kern")
    manifest = load_manifest(tiny.build, "kern")
    assert stale.is_file()  # still on disk
    assert stale not in manifest.objects
    assert existing_objects(manifest.objects) == tuple(tiny.build / "CMakeFiles" / "kern.dir" / name
                                                       for name in ("kern.cu.o", "kern_host.cpp.o"))


def test_a_misspelt_keyword_after_args_is_refused_not_taken_as_an_argument(tiny: Tiny) -> None:
    # A new user's "ARGS 256000 OBJECTIVE spill_bytes registers" configured: OBJECTIVE and the objectives were taken
    # as the benchmark's arguments, and the target had no objectives.
    result = tiny.configure(body='ciq_tune_target(kern BENCHMARK kern_bench ARGS 256000 OBJECTIVE registers)\n')
    assert not result.ok
    assert ("ciq_tune_target(kern): ARGS '256000;OBJECTIVE;registers' holds OBJECTIVE (did you mean OBJECTIVES?)"
            in said(result))
    # Arguments that merely look like words are the benchmark's (and so is a keyword of nobody's: MODE).
    ensure_ok(tiny.configure(body='ciq_tune_target(kern BENCHMARK kern_bench ARGS --mode FAST MODE -n 4 '
                                  'OBJECTIVES time)\n'))
    assert load_manifest(tiny.build, "kern").benchmark.args == ("--mode", "FAST", "MODE", "-n", "4")


def test_a_misspelt_keyword_after_any_list_keyword_is_named_as_a_keyword(tiny: Tiny) -> None:
    # A new user's "OBJECTIVES occupancy spill_bytes THREAD_PER_BLOCK BLOCK_SIZE" (mini-nbody) was refused as
    # "OBJECTIVES 'THREAD_PER_BLOCK' is not an objective", with no word of the keyword meant.
    result = tiny.configure(body='ciq_tune_target(kern OBJECTIVES registers THREAD_PER_BLOCK 256)\n')
    assert not result.ok
    assert ("ciq_tune_target(kern): OBJECTIVES 'registers;THREAD_PER_BLOCK;256' holds THREAD_PER_BLOCK (did you "
            "mean THREADS_PER_BLOCK?): OBJECTIVES takes every word up to the next keyword" in said(result))
    # A PARAMS name is a value wherever the names are (SCORES is one edit from SCORE).
    ensure_ok(tiny.configure(body='ciq_tune_target(kern OBJECTIVES occupancy PARAMS "SCORES=choice(64,128)" '
                                  'THREADS_PER_BLOCK SCORES 64 CONSTRAINTS "SCORES >= 64")\n'))


def test_a_removed_ciq_tune_target_call_leaves_no_manifest_for_list_and_tune_to_offer(tiny: Tiny) -> None:
    # A new user renamed ciq_tune_target(particles ...) to (particle_test ...): `list` still showed particles, `tune`
    # suggested it and a tune of it failed in its scratch tree's CMake ("which no ciq_tune_target() call registered").
    two = 'ciq_tune_target(kern OBJECTIVES registers PIN_DIR "pins dir")\nciq_tune_target(other OBJECTIVES registers)\n'
    ensure_ok(tiny.configure(body=two))
    targets = tiny.build / "ciq" / "targets"
    assert sorted(p.name for p in targets.glob("*.json")) == ["kern.json", "other.json"]
    ensure_ok(tiny.configure(body='ciq_tune_target(kern OBJECTIVES registers PIN_DIR "pins dir")\n'))
    assert sorted(p.name for p in targets.glob("*.json")) == ["kern.json"]
    assert sorted(p.name for p in targets.iterdir()) == ["kern.cuda-flags-noconfig", "kern.json"]  # its flags too
    listed = ensure_ok(run([sys.executable, "-m", "ciq_build", "list", "-B", str(tiny.build)], 300)).stdout
    assert "kern" in listed and "other" not in listed, listed
    # A record left in the pin dir by a target no longer tuned (BabelStream's cuda-stream.json, once its call moved
    # to the kernels' library) is applied by nothing: `list` says so; a pin dir's other JSON files are not records.
    (tiny.pin_dir / "other.json").write_text('{"schema": 1, "target": "other", "controls": {"flags": []}}')
    (tiny.pin_dir / "notes.json").write_text('{"title": "not a record"}')
    listed = ensure_ok(run([sys.executable, "-m", "ciq_build", "list", "-B", str(tiny.build)], 300)).stdout
    assert (f"not applied: {tiny.pin_dir / 'other.json'}: no target of this build tree is tuned as other"
            in listed), listed
    assert "notes.json" not in listed and "kern.json" not in listed.split("not applied")[1], listed
    # No call at all: none left.
    ensure_ok(tiny.configure(body=""))
    assert list(targets.glob("*.json")) == []


def test_the_flags_file_names_its_configuration_and_a_reconfigure_drops_those_no_longer_built(tiny: Tiny) -> None:
    # A tree without CMAKE_BUILD_TYPE named it "kern.cuda-flags-" (an empty $<CONFIG>). The driver reads the flags
    # every such file holds, so a file left by an older ciq_build or an earlier build type would hide a flag the
    # build passes now: here Release's -lineinfo, which the Debug file lacks.
    body = 'ciq_tune_target(kern OBJECTIVES registers PIN_DIR "pins dir")\n'
    targets = tiny.build / "ciq" / "targets"
    ensure_ok(tiny.configure(body=body, cache={"CMAKE_BUILD_TYPE": "Debug"}))
    assert sorted(p.name for p in targets.glob("kern.*")) == ["kern.cuda-flags-Debug", "kern.json"]
    (targets / "kern.cuda-flags-").write_text("-G\n")  # an older ciq_build's name, with a flag of its own
    ensure_ok(tiny.rerun_cmake({"CMAKE_BUILD_TYPE": "Release", "CMAKE_CUDA_FLAGS_RELEASE": "-O3 -lineinfo"}))
    assert sorted(p.name for p in targets.glob("kern.*")) == ["kern.cuda-flags-Release", "kern.json"]
    assert "-lineinfo" in load_manifest(tiny.build, "kern").cuda_flags
    ensure_ok(tiny.rerun_cmake({"CMAKE_BUILD_TYPE": ""}))
    assert sorted(p.name for p in targets.glob("kern.*")) == ["kern.cuda-flags-noconfig", "kern.json"]


def test_a_target_compiled_relocatable_is_said_so_to_a_tune_of_ptxas_figures(tiny: Tiny) -> None:
    # robertmaynard/code-samples' particles (CUDA_SEPARABLE_COMPILATION ON): ptxas reported its kernel at 24
    # registers, the device link gave it 52 and a 32-byte stack (the functions it calls in another file); a static
    # tune scored the 24 without a word.
    body = 'ciq_tune_target(kern OBJECTIVES registers PIN_DIR "pins dir")\n'
    ensure_ok(tiny.configure(body=body))
    assert load_manifest(tiny.build, "kern").separable_compilation is False
    assert relocatable_note(load_manifest(tiny.build, "kern"), parse_objectives(["registers"])) is None
    ensure_ok(tiny.configure(body=body + "set_target_properties(kern PROPERTIES CUDA_SEPARABLE_COMPILATION ON)\n"))
    data = json.loads((tiny.build / "ciq" / "targets" / "kern.json").read_text())
    assert data["separable_compilation"] is True
    assert_valid_manifest(data)
    manifest = load_manifest(tiny.build, "kern")
    note = relocatable_note(manifest, parse_objectives(["registers", "spill_bytes", "time"]))
    assert note is not None and note.startswith("kern is compiled relocatable (CUDA_SEPARABLE_COMPILATION): ptxas "
                                                "reports its kernels before the device link")
    assert "registers, spill_bytes score the kernels as compiled, not as linked" in note
    assert relocatable_note(manifest, parse_objectives(["time"])) is None  # what runs is measured


def test_an_object_librarys_manifest_has_no_target_file(tiny: Tiny) -> None:
    ensure_ok(tiny.configure(body='add_library(kobj OBJECT other.cu)\nciq_tune_target(kobj OBJECTIVES registers)\n'))
    data = json.loads((tiny.build / "ciq" / "targets" / "kobj.json").read_text())
    assert_valid_manifest(data)
    assert data["target_file"] is None and load_manifest(tiny.build, "kobj").target_file is None


def test_manifest_is_valid_and_escapes_every_string(tiny: Tiny) -> None:
    awkward = ['say "hi"', "back\\slash", "$<1:genex>", "tab\there", "dollar$sign", "new\nline"]
    cmake_args = " ".join(
        '"' + a.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$").replace("\t", "\\t")
        .replace("\n", "\\n") + '"'
        for a in awkward
    )
    body = (
        f"ciq_tune_target(kern BENCHMARK kern_bench ARGS {cmake_args} "
        r'METRIC "time: ([0-9.]+)\\s*us" UNIT us OBJECTIVES time spill_bytes '
        'PARAMS "KTILE=choice(1,2,4)" SEARCH_SPACE knobs TIMEOUT 30 PIN_DIR "pins dir")\n'
    )
    ensure_ok(tiny.configure(body=body))
    path = tiny.build / "ciq" / "targets" / "kern.json"
    data = json.loads(path.read_text())
    assert_valid_manifest(data)  # the CMake writer's output passes the published schema
    assert data["benchmark"]["args"] == awkward
    assert data["target_file"] == str(tiny.build / "libkern.a")  # what building it whole writes
    assert data["metric_regex"] == r"time: ([0-9.]+)\s*us"
    assert data["metric_unit"] == "us"
    assert data["objectives"] == ["time", "spill_bytes"]
    assert data["params"] == ["KTILE=choice(1,2,4)"]
    assert data["search_space"] == ["knobs"]
    assert data["timeout"] == 30

    manifest = load_manifest(tiny.build, "kern")  # the Python reader accepts it
    assert manifest.benchmark is not None
    assert manifest.benchmark.path == tiny.build / "kern_bench"
    assert [Path(s) for s in manifest.cuda_sources] == [tiny.source / "kern.cu"]  # not the .cpp
    # the sources a candidate's -D does not reach (ciq_build.tune.param_probe): the .cpp, and the benchmark's own,
    # its .cu file included
    assert manifest.host_sources == (tiny.source / "kern_host.cpp",)
    assert manifest.benchmark.sources == (tiny.source / "bench.cu",)
    assert Path(manifest.object_dir) == tiny.build / "CMakeFiles" / "kern.dir"
    assert manifest.objects == tuple(tiny.build / "CMakeFiles" / "kern.dir" / name
                                     for name in ("kern.cu.o", "kern_host.cpp.o"))
    assert Path(manifest.pin_file) == tiny.pin_dir / "kern.json"
    assert Path(manifest.options_file) == tiny.options_file()
    assert manifest.generator == "Ninja"
    assert manifest.metric_unit == "us"
    assert manifest.toolchain.architectures == "90a"
    assert manifest.toolchain.cuda_compiler_version.startswith("13.3.")


def test_static_only_target_has_a_null_benchmark(tiny: Tiny) -> None:
    ensure_ok(tiny.configure(body='ciq_tune_target(kern OBJECTIVES spill_bytes PIN_DIR "pins dir")\n'))
    data = json.loads((tiny.build / "ciq" / "targets" / "kern.json").read_text())
    assert data["benchmark"] is None
    assert data["pin_dir"] == str(tiny.pin_dir)
    assert data["metric_regex"] == "" and data["metric_unit"] == "ms"  # UNIT's default


def test_executable_with_separable_compilation_and_two_archs_tunes_itself(tiny: Tiny) -> None:
    body = (
        'set_target_properties(kern_bench PROPERTIES CUDA_SEPARABLE_COMPILATION ON '
        'CUDA_ARCHITECTURES "90a;100a")\n'
        'ciq_tune_target(kern_bench BENCHMARK kern_bench OBJECTIVES time PIN_DIR "pins dir")\n'
    )
    pin = record("kern_bench", flags=["-maxrregcount=32"], architectures=["90a", "100a"])
    ensure_ok(tiny.configure(body=body, pins={"kern_bench": pin}))
    assert tiny.options_file("kern_bench").read_text() == "-maxrregcount=32\n"
    manifest = load_manifest(tiny.build, "kern_bench")
    assert manifest.benchmark is not None and manifest.benchmark.path == tiny.build / "kern_bench"
    assert manifest.benchmark.sources == ()  # its bench.cu is the tuned target's, which the -D reaches
    assert manifest.toolchain.architectures == "90a;100a"

    tiny.build_targets("kern_bench")
    regs = registers(tiny.cuda_bin / "cuobjdump", tiny.build / "CMakeFiles" / "kern_bench.dir" / "bench.cu.o")
    assert {key.split(":")[0] for key in regs} == {"sm_90a", "sm_100a"}
    assert max(regs.values()) <= 32
    run_bench = run([tiny.build / "kern_bench"], timeout=60)
    assert run_bench.returncode == 2 and "CIQ_ERROR no-gpu" in run_bench.stdout


# --- call errors ------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("ciq_tune_target(kern BENCHMARK kern_bench ITERATIONS 3)\n", "unknown arguments 'ITERATIONS;3'"),
        ("ciq_tune_target(nosuch)\n", "there is no target 'nosuch'"),
        ("ciq_tune_target(kern BENCHMARK kern_bench OBJECTIVE registers SEARCHSPACE knobs)\n",
         "unknown arguments 'OBJECTIVE;registers;SEARCHSPACE;knobs' (did you mean OBJECTIVES for OBJECTIVE?)"),
        ("ciq_tune_target(hostonly OBJECTIVES spill_bytes)\n", "'hostonly' has no CUDA sources"),
        # stdgpu: a header-only library's kernels are compiled by the targets that link it (an alias too).
        # stdgpu: a library of host sources whose kernels (in its headers) the targets that link it compile; those
        # are named, linked by an alias too, at the call's line.
        ("add_library(ns::hostonly ALIAS hostonly)\ntarget_link_libraries(kern_bench PRIVATE ns::hostonly)\n"
         "target_link_libraries(other PRIVATE hostonly)\nciq_tune_target(hostonly OBJECTIVES registers)\n",
         f"CMakeLists.txt:{HEADER.count(chr(10)) + 4}: ciq_tune_target(hostonly): "  # the body's fourth line
         "'hostonly' has no CUDA sources (.cu files or sources with "
         "LANGUAGE CUDA); its kernels are compiled by the targets that use it. Targets that compile CUDA and link "
         "'hostonly': other, kern_bench; tune one of them, e.g. ciq_tune_target(other ...)."),
        ("add_library(headers INTERFACE)\nciq_tune_target(headers OBJECTIVES registers)\n",
         "'headers' is INTERFACE_LIBRARY; only a library or executable built here from CUDA sources can be tuned. A "
         "header-only library's kernels are compiled by the targets that link it: tune one of those."),
        # FindCUDA's cuda_add_library() compiles other.cu by a custom command, which no pin's flag reaches.
        (FIND_CUDA + "cuda_add_library(legacy STATIC other.cu)\nciq_tune_target(legacy OBJECTIVES registers)\n",
         "'legacy' has no CUDA sources that CMake compiles: FindCUDA's cuda_add_library() or "
         "cuda_add_executable() compiles other.cu"),
        ("ciq_tune_target(kern_alias)\n", "pass the real target 'kern'"),
        ("ciq_tune_target(kern BENCHMARK other)\n", "it must be an executable"),
        ("ciq_tune_target(kern BENCHMARK nosuch_bench)\n", "BENCHMARK 'nosuch_bench' is not a target"),
        ("ciq_tune_target(kern ARGS --n 4)\n", "give BENCHMARK <exe-target> too"),
        ("ciq_tune_target(kern OBJECTIVES time)\n", "OBJECTIVES time is read from a benchmark run; add BENCHMARK"),
        ("ciq_tune_target(kern TIMEOUT soon)\n", "must be a positive number"),
        ("ciq_tune_target(kern)\nciq_tune_target(kern)\n", "called twice"),
        ('ciq_tune_target(kern BENCHMARK kern_bench METRIC "t=([0-9.]+)" UNIT min)\n',
         "UNIT 'min' is neither a time nor a rate: use s, ms, us or ns (a time: lower is better) or a rate"),
        # A rate without its "/s" (the rule book's message, as the manifest's reader and tune give it).
        ('ciq_tune_target(kern BENCHMARK kern_bench METRIC "t=([0-9.]+)" UNIT GFLOP)\n',
         "ciq_tune_target(kern): " + load_rules().message("unknown_metric_unit", value="GFLOP") + "."),
        ('ciq_tune_target(kern BENCHMARK kern_bench METRIC "t=([0-9.]+)" UNIT)\n', "UNIT needs a value"),
        ("ciq_tune_target(kern BENCHMARK kern_bench UNIT s)\n", "UNIT is the unit of METRIC's number; give METRIC"),
        ("ciq_tune_target(kern DESCRIPTION)\n", "DESCRIPTION needs a value"),
    ],
)
def test_call_errors_name_the_function_and_say_what_to_do(tiny: Tiny, body: str, message: str) -> None:
    result = tiny.configure(body=body)
    assert not result.ok
    assert "ciq_tune_target(" in said(result)
    assert message in said(result)


def test_a_findcuda_toolkit_of_another_release_than_the_cuda_compiler_is_warned(tiny: Tiny,
                                                                              system_nvcc: Path) -> None:
    """find_package(CUDA) finding the system's toolkit while CMake compiles with the pip one's nvcc."""
    body = "cmake_policy(SET CMP0146 OLD)\nfind_package(CUDA REQUIRED)\nciq_tune_target(kern OBJECTIVES registers)\n"
    system_bin = _real_bin_dir(system_nvcc)  # /usr/local/bin/nvcc may be a wrapper script
    assert system_bin is not None
    other = said(ensure_ok(tiny.configure(body=body, cache={"CUDA_TOOLKIT_ROOT_DIR": str(system_bin.parent)})))
    assert "find_package(CUDA) found CUDA" in other and "but CMAKE_CUDA_COMPILER is nvcc 13.3" in other
    assert f'Configure with -DCUDA_TOOLKIT_ROOT_DIR="{tiny.cuda_bin.parent}" as well' in other
    # Once FindCUDA finds the compiler's own toolkit, nothing is said.
    same = said(ensure_ok(tiny.configure(body=body, cache={"CUDA_TOOLKIT_ROOT_DIR": str(tiny.cuda_bin.parent)})))
    assert "find_package(CUDA) found" not in same


def kernel_regex_refusal(spec: str) -> str:
    """What tune --objective says of `spec`'s kernel regex (the rule book's kernel_regex message)."""
    try:
        parse_objective(spec)
    except ConfigError as error:
        return str(error)
    raise AssertionError(f"{spec} was accepted")


# Issue 22 item 4: what tune used to refuse only after a clean configure and build, configure refuses at the
# call's line, in docs/cmake.md's words, with "did you mean" for a misspelt word.
@pytest.mark.parametrize(
    ("call", "message"),
    [
        ('PARAMS "KTILE=choice(1,2,4,8"', "PARAMS 'KTILE=choice(1,2,4,8': the '(' of choice( is not closed"),
        ('PARAMS "KTILE=chioce(1,2)"', "unknown form chioce(...) (did you mean choice?)"),
        ('PARAMS "KTILE=range(8,1)"', "range end must be greater than start, got start=8, end=1"),
        ('PARAMS "KTILE=log_sampling(0,8)"', "log_sampling start must be > 0"),
        ('PARAMS "KTILE=1,2" "KTILE=4"', "KTILE is given more than once"),
        ("OBJECTIVES regsters", "OBJECTIVES 'regsters' is not an objective (did you mean registers?)"),
        # the one message (the rule book's), word for word what setup.py's CudaExtension and tune say
        ("OBJECTIVES max:regsters", "OBJECTIVES " + unknown_objective("max:regsters", "regsters")),
        ("OBJECTIVES max:sass_instruction", "(did you mean sass_instructions?)"),
        # no word near: the message's empty "did you mean" shifted its other words (configure failed on list(GET))
        ("OBJECTIVES zzzz", "OBJECTIVES " + unknown_objective("zzzz", "zzzz")),
        # a template's demangled name (miniBUDE's fasten_main<8ul>): what a kernel regex holds, as tune says it
        ('OBJECTIVES "occupancy:fasten_main<8>"', "OBJECTIVES " + kernel_regex_refusal("occupancy:fasten_main<8>")),
        # an alias, and a regex the objective_spec pattern's 140 characters take and kernel_regex's 100 do not
        (f"OBJECTIVES min:spills:{'k' * 101}", "OBJECTIVES " + kernel_regex_refusal(f"min:spills:{'k' * 101}")),
        ("OBJECTIVES energy", "OBJECTIVES energy is read from a benchmark run; add BENCHMARK"),
        ("OBJECTIVES registers metric:gflops", "OBJECTIVES metric:gflops is read from a benchmark run"),
        ("OBJECTIVES max:time", "OBJECTIVES max:time is read from a benchmark run"),
        ("SEARCH_SPACE knobz", "SEARCH_SPACE 'knobz' is not a search space (did you mean knobs?)"),
        ("SEARCH_SPACE params ptxas-acf:latest", "SEARCH_SPACE 'ptxas-acf:latest' is not a search space;"),
        ('BENCHMARK kern_bench METRIC "time=[0-9.]+ ms"', "METRIC 'time=[0-9.]+ ms' has no capture group"),
        # CMake takes the backslash of a quoted "\\|" (llm.c's block sizes): alternatives, one without the number
        ('BENCHMARK kern_bench METRIC "block_size +256 \\| time ([0-9.]+) ms"',
         "METRIC 'block_size +256 | time ([0-9.]+) ms' has a | outside every group: "),
        ('PARAMS "KTILE=range(1,64)" CONSTRAINTS "KTILE*KTILEE<=1024"',
         "CONSTRAINTS 'KTILE*KTILEE<=1024': 'KTILEE' is not one of the PARAMS (KTILE) (did you mean KTILE?)"),
        ('PARAMS "KTILE=range(1,64)" CONSTRAINTS "KTILE*2<="',
         "it ends where a number, a PARAMS name or '(' belongs"),
        ('PARAMS "KTILE=range(1,64)" CONSTRAINTS "1<KTILE<8"', "comparisons do not chain"),
        # Issue 22 item 10: several problem sizes.
        ('BENCHMARK kern_bench ARGS_SETS "small:-n 1" "-n 2"', "ARGS_SETS '-n 2' is not <name>:<arguments>"),
        ('BENCHMARK kern_bench ARGS_SETS "small:-n 1" ".big:-n 2"', "ARGS_SETS '.big:-n 2' is not <name>:"),
        ('BENCHMARK kern_bench ARGS_SETS "n:-n 1" "n:-n 2"', "the size n is given more than once"),
        ('BENCHMARK kern_bench ARGS_SETS "a:-n 1" "b:-n 2" SCORE geomaen',
         "SCORE 'geomaen' is not a score (did you mean geomean?); use geomean or worst"),
        ('BENCHMARK kern_bench ARGS -n 1 ARGS_SETS "a:-n 1" "b:-n 2"', "give ARGS (one size) or ARGS_SETS"),
        ('BENCHMARK kern_bench SCORE worst', "SCORE combines the sizes of ARGS_SETS"),
        ('ARGS_SETS "a:-n 1" "b:-n 2"', "ARGS_SETS are the benchmark's problem sizes; give BENCHMARK"),
        ('BENCHMARK kern_bench ARGS_SETS "a:-n 1" SCORE', "SCORE needs a value"),
        # mini-nbody's trial: the form said "... or ;THREADS_PER_BLOCK" (CMake joined the message's two strings with ;)
        ('PARAMS "KTILE=range(1,64)" THREADS_PER_BLOCK KTILEE',
         "THREADS_PER_BLOCK 'KTILEE': 'KTILEE' is not one of the PARAMS (KTILE) (did you mean KTILE?). THREADS_PER_BLOCK"
         " 256, THREADS_PER_BLOCK <a PARAMS name> [<the defaults' threads>] or THREADS_PER_BLOCK \"<expression over "
         "PARAMS names>\" [<the defaults' threads>]."),
        # THREADS_PER_BLOCK's checks, in bytes: FlashAttention's 64 KB a block of extern __shared__ (no static figure)
        ('PARAMS "KTILE=range(1,64)" DYNAMIC_SHARED_MEMORY "KTILE*1024" 300000',
         "DYNAMIC_SHARED_MEMORY KTILE*1024 300000: the defaults' bytes a block is a number from 0 to 233472."),
    ],
)
def test_a_bad_argument_is_refused_at_configure_at_the_calls_line(tiny: Tiny, call: str, message: str) -> None:
    body = f"\n\nciq_tune_target(kern {call})\n"
    result = tiny.configure(body=body)
    assert not result.ok
    assert message in said(result)
    # The call stack names the caller's line, so the user lands on the call.
    line = len((HEADER + body).splitlines())
    assert f"CMakeLists.txt:{line} (ciq_tune_target)" in said(result)
    assert "manifest" not in said(result)


def test_good_arguments_configure_and_reach_the_manifest(tiny: Tiny) -> None:
    body = ('ciq_tune_target(kern BENCHMARK kern_bench METRIC "time=([0-9.]+)" OBJECTIVES max:metric:gflops spills '
            'registers:heavy SEARCH_SPACE knobs params PARAMS "KTILE=range(1,64)" "KTILE2=choice(1,2)" '
            'CONSTRAINTS "KTILE*KTILE2 <= 32 and not (KTILE % 2 == 1)" THREADS_PER_BLOCK 256 '
            'DYNAMIC_SHARED_MEMORY "KTILE*KTILE2*1024" 0)\n')
    # The target's own nvcc flags, as its CUDA compiles get them (llm.c's --use_fast_math, which fixes 4 of the 5
    # numerics knobs): CMAKE_CUDA_FLAGS, then its COMPILE_OPTIONS for CUDA, not those for C++.
    flags = ('target_compile_options(kern PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-O3 --use_fast_math> '
             '$<$<COMPILE_LANGUAGE:CXX>:-Wall> "-DQUOTED=\\"a b\\"")\n'
             'target_compile_definitions(kern PRIVATE KTWO=2)\nadd_compile_definitions(CIQ_OPTION_ON)\n')
    ensure_ok(tiny.configure(body=flags + body, cache={"CMAKE_CUDA_FLAGS": "-lineinfo -ftz=false"}))
    manifest = load_manifest(tiny.build, "kern")
    assert manifest.constraints == ("KTILE*KTILE2 <= 32 and not (KTILE % 2 == 1)",)
    assert manifest.params == ("KTILE=range(1,64)", "KTILE2=choice(1,2)")
    assert manifest.threads_per_block == ("256",)
    assert manifest.dynamic_shared_memory == ("KTILE*KTILE2*1024", "0")  # what the occupancy adds a block
    assert manifest.cuda_flags[:5] == ("-lineinfo", "-ftz=false", "-O3", "--use_fast_math", '-DQUOTED="a b"')
    assert "-Wall" not in manifest.cuda_flags
    # Then its definitions (a journaled evaluation's key holds them: cuda-api-wrappers' CAW_WITH_COOPERATIVE_GROUPS
    # option adds one through add_compile_definitions, after which a tune resumed the other code's figures).
    assert set(manifest.cuda_flags[-2:]) == {"-DCIQ_OPTION_ON", "-DKTWO=2"}


def test_seeds_reach_the_manifest_their_paths_from_the_calls_folder(tiny: Tiny) -> None:
    body = 'ciq_tune_target(kern SEEDS ../other/ciq "-Xptxas=-O2 -DKTILE=4" /abs/pin.json PARAMS "KTILE=1,2,4")\n'
    ensure_ok(tiny.configure(body=body))
    manifest = load_manifest(tiny.build, "kern")
    assert manifest.seeds == (str(tiny.source / "../other/ciq"), "-Xptxas=-O2 -DKTILE=4", "/abs/pin.json")
    assert_valid_manifest(json.loads((tiny.build / "ciq" / "targets" / "kern.json").read_text()))


def test_a_description_reaches_the_manifest_and_show_prints_it(tiny: Tiny) -> None:
    said_as = 'GEMM "tiled" for sm_90a; 50% faster'
    body = 'ciq_tune_target(kern DESCRIPTION "GEMM \\"tiled\\" for sm_90a; 50% faster" PIN_DIR "pins dir")\n'
    ensure_ok(tiny.configure(body=body, pins={"kern": record()}))
    data = json.loads((tiny.build / "ciq" / "targets" / "kern.json").read_text())
    assert data["description"] == said_as
    assert_valid_manifest(data)
    assert load_manifest(tiny.build, "kern").description == said_as
    shown = run([sys.executable, "-m", "ciq_build", "show", "kern", "-B", str(tiny.build)], 300)
    lines = ensure_ok(shown).stdout.splitlines()
    assert lines[0].startswith("target      kern") and lines[1] == f"description {said_as}", shown.stdout
    # Without DESCRIPTION the manifest says "" and show has no such line.
    ensure_ok(tiny.configure(body='ciq_tune_target(kern PIN_DIR "pins dir")\n', pins={"kern": record()}))
    assert json.loads((tiny.build / "ciq" / "targets" / "kern.json").read_text())["description"] == ""
    shown = ensure_ok(run([sys.executable, "-m", "ciq_build", "show", "kern", "-B", str(tiny.build)], 300))
    assert not any(line.startswith("description") for line in shown.stdout.splitlines()), shown.stdout


def test_args_sets_and_score_reach_the_manifest_split_like_a_command_line(tiny: Tiny) -> None:
    body = ('ciq_tune_target(kern BENCHMARK kern_bench ARGS_SETS "small:-n 1024 --label \\"a b\\"" '
            '"large.2:-n 65536" "none:" SCORE worst OBJECTIVES time)\n')
    ensure_ok(tiny.configure(body=body))
    bench = load_manifest(tiny.build, "kern").benchmark
    assert bench is not None and bench.args == ()
    assert bench.args_sets == (("small", ("-n", "1024", "--label", "a b")), ("large.2", ("-n", "65536")),
                               ("none", ()))
    assert bench.score == "worst"
    # ...and from there each candidate's benchmark, run in a scratch tree: each SCORE's rule is tested where it
    # is decided (tests/measure/test_sizes.py), a tune of several sizes in tests/tune/test_tune_sizes.py.
    tree = ScratchTree(load_manifest(tiny.build, "kern"), tiny.build / "scratch", load_toolchain(tiny.cuda_bin / "nvcc"))
    spec = tree.bench_spec(60, ())
    assert (spec.score, spec.args_sets) == ("worst", bench.args_sets)
    assert spec.path == tree.build_dir / "kern_bench"
    ensure_ok(tiny.configure(body='ciq_tune_target(kern BENCHMARK kern_bench ARGS_SETS "a:-n 1" "b:-n 2")\n'))
    assert load_manifest(tiny.build, "kern").benchmark.score == "geomean"


# --- other generators -------------------------------------------------------


def test_unix_makefiles_with_a_build_dir_path_with_spaces(tmp_path: Path, cmake_bin: str, ninja_bin: str,
                                                          cuda133_bin: Path) -> None:
    if shutil.which("make") is None:
        pytest.skip("needs make")
    project = Tiny(tmp_path / "src", tmp_path / "build with spaces", cmake_bin, ninja_bin, cuda133_bin,
                   generator="Unix Makefiles")
    write_tiny_sources(project.source)
    result = ensure_ok(project.configure(pins={"kern": record(flags=["-maxrregcount=32"])}))
    assert "pinned controls from" in said(result)
    assert project.options_file().read_text() == "-maxrregcount=32\n"
    assert load_manifest(project.build, "kern").generator == "Unix Makefiles"
    project.build_targets("kern")
    regs = registers(cuda133_bin / "cuobjdump", project.build / "CMakeFiles" / "kern.dir" / "kern.cu.o")
    assert regs and max(regs.values()) <= 32


def test_a_multi_config_tree_generates_and_applies_pins(tmp_path: Path, cmake_bin: str, ninja_bin: str,
                                                       cuda133_bin: Path) -> None:
    # Ninja Multi-Config: the manifest's objects differ by configuration, and CMake failed the generate step
    # ("Evaluation file to be written multiple times with different content") where its warning says pins apply.
    project = Tiny(tmp_path / "src", tmp_path / "build", cmake_bin, ninja_bin, cuda133_bin,
                   generator="Ninja Multi-Config")
    write_tiny_sources(project.source)
    result = ensure_ok(project.configure(body='ciq_tune_target(kern OBJECTIVES registers PIN_DIR "pins dir")\n',
                                         pins={"kern": record(flags=["-maxrregcount=32"])}))
    assert "pinned controls from" in said(result)
    targets = project.build / "ciq" / "targets"
    assert sorted(p.name for p in targets.iterdir()) == [
        "kern.cuda-flags-Debug", "kern.cuda-flags-RelWithDebInfo", "kern.cuda-flags-Release", "kern.json"]
    # The manifest is the configuration a plain `cmake --build` builds: Debug, the first.
    manifest = load_manifest(project.build, "kern")
    assert project.build / "CMakeFiles" / "kern.dir" / "Debug" / "kern.cu.o" in manifest.objects


def test_architectures_cmake_chose_for_want_of_the_projects_are_marked_so_in_the_manifest(
        tmp_path: Path, cmake_bin: str, ninja_bin: str, cuda133_bin: Path) -> None:
    # A project without CMAKE_CUDA_ARCHITECTURES is built for nvcc's default (75 with CUDA 13): a tune on an H100
    # said "architectures: 75" and "the only architecture built", as if it were the project's choice.
    project = Tiny(tmp_path / "src", tmp_path / "build", cmake_bin, ninja_bin, cuda133_bin)
    write_tiny_sources(project.source)
    (project.source / "CMakeLists.txt").write_text(HEADER + "ciq_tune_target(kern OBJECTIVES registers)\n")
    configure: list[str | Path] = [cmake_bin, "-S", project.source, "-B", project.build, "-G", "Ninja",
                                   f"-DCMAKE_MAKE_PROGRAM={ninja_bin}", f"-DCMAKE_CUDA_COMPILER={cuda133_bin / 'nvcc'}",
                                   f"-Dciq_build_DIR={CMAKE_PACKAGE_DIR}"]
    env = {name: value for name, value in os.environ.items() if name != "CUDAARCHS"}
    ensure_ok(run(configure, timeout=300, env=env))
    toolchain = load_manifest(project.build, "kern").toolchain
    assert (toolchain.architectures, toolchain.architectures_default) == ("75", True)
    # Given on the command line, as the tune's note says: the user's choice, even of the same architecture.
    ensure_ok(run([*configure, "-DCMAKE_CUDA_ARCHITECTURES=75"], timeout=300, env=env))
    toolchain = load_manifest(project.build, "kern").toolchain
    assert (toolchain.architectures, toolchain.architectures_default) == ("75", False)


def test_config_version_file_accepts_this_version_and_refuses_a_newer_one(tmp_path: Path, cmake_bin: str) -> None:
    init = (REPO_ROOT / "ciq_build" / "version.py").read_text()
    version = re.search(r'__version__ = "([^"]+)"', init)
    assert version is not None
    script = tmp_path / "check.cmake"
    script.write_text(
        f'set(PACKAGE_FIND_VERSION "{version.group(1)}")\n'
        f'include("{CMAKE_PACKAGE_DIR}/ciq_build-config-version.cmake")\n'
        'message(STATUS "same=${PACKAGE_VERSION_COMPATIBLE}")\n'
        'set(PACKAGE_FIND_VERSION "99.0")\n'
        f'include("{CMAKE_PACKAGE_DIR}/ciq_build-config-version.cmake")\n'
        'message(STATUS "newer=${PACKAGE_VERSION_COMPATIBLE}")\n'
    )
    out = ensure_ok(run([cmake_bin, "-P", script], timeout=60)).stdout
    assert "same=TRUE" in out and "newer=FALSE" in out


def test_old_cmake_is_told_to_upgrade(tmp_path: Path, cmake_bin: str) -> None:
    script = tmp_path / "old.cmake"
    script.write_text(f'set(CMAKE_VERSION 3.20.0)\ninclude("{CMAKE_PACKAGE_DIR}/ciq_build-config.cmake")\n')
    result = run([cmake_bin, "-P", script], timeout=60)
    assert not result.ok and "needs CMake 3.24 or newer" in said(result)



def _object_symbols(build: Path) -> str:
    (obj,) = list((build / "CMakeFiles" / "kern.dir").glob("kern.cu.o"))
    return ensure_ok(run(["nm", obj], timeout=60)).stdout


def test_a_pin_written_after_configure_is_applied_by_the_next_plain_build(
    tmp_path: Path, cmake_bin: str, ninja_bin: str, cuda133_bin: Path
) -> None:
    # Issue 8, defect 1: a project that had no ciq/ folder when it was
    # configured; tune writes ciq/kern.json; a plain `cmake --build` must apply it
    # (it used to say "ninja: no work to do"), and a removed pin must stop applying.
    project = Tiny(tmp_path / "fresh src", tmp_path / "build", cmake_bin, ninja_bin, cuda133_bin)
    write_tiny_sources(project.source)
    (project.source / "CMakeLists.txt").write_text(HEADER + 'ciq_tune_target(kern PARAMS "KTILE=choice(1,7)")\n')
    ensure_ok(project.rerun_cmake())
    assert not (project.source / "ciq").exists()
    project.build_targets("kern")
    assert "kern_tile_1" in _object_symbols(project.build)

    pin_dir = project.source / "ciq"
    pin_dir.mkdir()
    (pin_dir / "kern.json").write_text(json.dumps(record(defines={"KTILE": "7"}), indent=2))
    built = project.build_targets("kern")
    assert "ninja: no work to do" not in built.stdout
    assert project.options_file().read_text() == "-DKTILE=7\n"
    assert "kern_tile_7" in _object_symbols(project.build)

    (pin_dir / "kern.json").unlink()
    project.build_targets("kern")
    assert project.options_file().read_text() == ""
    assert "kern_tile_1" in _object_symbols(project.build)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('ciq_tune_target(kern PIN_DIR "../elsewhere")\n', "is not a plain path"),
        ('ciq_tune_target(kern PIN_DIR "a$b")\n', "is not a plain path"),
        ('ciq_tune_target(kern METRIC "t=([0-9.]+)")\n', "METRIC reads the output of a benchmark"),
        ('ciq_tune_target(kern OBJECTIVES time METRIC "t=([0-9.]+)")\n', "METRIC reads the output"),
    ],
)
def test_names_python_refuses_are_refused_by_cmake_too(tiny: Tiny, body: str, message: str) -> None:
    # Issue 8, defect 12: CMake accepted PIN_DIR values and METRIC-without-BENCHMARK
    # that the Python side refuses.
    result = tiny.configure(body=body)
    assert not result.ok and message in said(result)
    ensure_ok(tiny.configure())


# --- a target or build tree that is not what the user meant -------------------


def test_a_mistyped_target_or_an_unconfigured_build_dir_is_said_in_the_users_words(tiny: Tiny,
                                                                                    tmp_path: Path) -> None:
    # Before: "no manifest for target 'kernn' at <build>/ciq/targets/kernn.json: ..." for both, naming a
    # file the user never wrote, and no guess at the name they meant.
    for command in ("show", "verify", "tune"):
        result = run([sys.executable, "-m", "ciq_build", command, "kernn", "-B", str(tiny.build)], 120)
        assert result.returncode == 2, said(result)
        line = result.stderr.strip()
        assert line.count("\n") == 0 and "manifest" not in line, line
        assert "did you mean kern?" in line and f"'kernn' is not a tuned target of {tiny.build}" in line, line
        assert "ciq_tune_target(kernn" in line, line  # how it becomes one

    nowhere = tmp_path / "not configured"
    result = run([sys.executable, "-m", "ciq_build", "show", "kern", "-B", str(nowhere)], 120)
    assert result.returncode == 2 and "manifest" not in result.stderr, said(result)
    assert f"{nowhere} is not a configured CMake build tree" in result.stderr and "-B" in result.stderr, said(result)


def test_verify_without_a_pin_says_why_as_show_does(tiny: Tiny) -> None:
    # Before: verify said "run `python -m ciq_build tune kern` first" after a tune that pinned nothing
    # (and without the -B it needs), where show said that the tune ran and pinned nothing.
    ensure_ok(tiny.configure())  # no pin
    journal = Journal(tiny.build / "ciq" / "journal" / "kern.jsonl")
    try:
        journal.append({"kind": "evaluation", "index": 0, "baseline": True, "ok": True})
        for command in ("show", "verify"):
            result = run([sys.executable, "-m", "ciq_build", command, "kern", "-B", str(tiny.build)], 300)
            assert result.returncode == 2, said(result)
            assert "though a tune ran (1 evaluation(s)" in result.stderr, said(result)
            assert f"report kern -B {tiny.build}" in result.stderr, said(result)
    finally:
        journal.path.unlink()
    for command in ("show", "verify"):
        result = run([sys.executable, "-m", "ciq_build", command, "kern", "-B", str(tiny.build)], 300)
        assert result.returncode == 2 and f"tune kern -B {tiny.build}" in result.stderr, said(result)


def test_tune_of_a_tuned_targets_benchmark_names_the_target_to_tune(tiny: Tiny) -> None:
    # BabelStream's trial: `tune cuda-stream`, the executable running the tuned library's kernels, was told to add
    # ciq_tune_target(cuda-stream ...), which configure refuses (it has no CUDA sources of its own).
    ensure_ok(tiny.configure(body="ciq_tune_target(kern BENCHMARK kern_bench OBJECTIVES registers)\n"))
    for command in ("tune", "show"):
        done = run([sys.executable, "-m", "ciq_build", command, "kern_bench", "-B", str(tiny.build)], 300)
        assert done.returncode == 2, said(done)
        assert (f"'kern_bench' is not a tuned target of {tiny.build}: it is the BENCHMARK of kern, the tuned target "
                "whose kernels it runs and whose pin they build with: name kern instead") in said(done), said(done)
        assert "add ciq_tune_target(kern_bench" not in said(done)
