"""Scratch trees (ciq_build.project.cmake_trees): what CMake found about the compilers in the user's tree is
reused, never found again, where the compilers are the same; found afresh where they are not.

Real CMake, Ninja and nvcc on tests/projects/noop.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

import identified_compilers
from ciq_build.compiler.controls import Controls
from ciq_build.compiler.toolchain import load_toolchain
from ciq_build.errors import BuildError, ConfigError
from ciq_build.measure import proc, stopping
from ciq_build.project import cmake_trees
from ciq_build.project.cmake_backend import CMakeBackend
from ciq_build.project.manifest import Benchmark, load_manifest
from ciq_build.project.tree_cache import cache_value
from ciq_build.tune.param_probe import overridden_params
from support import PROJECTS, REPO_ROOT, build_tool, ensure_ok, in_thread

pytestmark = pytest.mark.slow

NOOP = PROJECTS / "noop"


def _user_tree(root: Path, nvcc: Path, more_cmake: str = "") -> Path:
    """A user's tree as a user's configure makes it: the compilers identified (the tests' shortcut off);
    `more_cmake` appended to its CMakeLists.txt."""
    source = root / "noop src"
    shutil.copytree(NOOP, source)
    lists = source / "CMakeLists.txt"
    lists.write_text(lists.read_text() + more_cmake)
    user = root / "user-build"
    ensure_ok(proc.run([build_tool("cmake"), "-S", str(source), "-B", str(user), "-G", "Ninja",
                        f"-DCMAKE_CUDA_COMPILER={nvcc}", f"-Dciq_build_DIR={REPO_ROOT / 'cmake'}"], 600,
                       env={**os.environ, identified_compilers.ENV: ""}))
    return user


def _identified_cuda(build: Path) -> bool:
    """Whether CMake identified the CUDA compiler in this tree (it leaves its CompilerIdCUDA folder)."""
    return any(build.glob("CMakeFiles/*/CompilerIdCUDA"))


def test_a_scratch_tree_reads_the_users_compilers_instead_of_identifying_them_and_builds_what_nvcc_builds(
        tmp_path: Path, cuda133_bin: Path) -> None:
    nvcc = cuda133_bin / "nvcc"
    user = _user_tree(tmp_path, nvcc)
    assert _identified_cuda(user)
    tree = cmake_trees.ScratchTree(load_manifest(user, "noop_kernels"), tmp_path / "scratch", load_toolchain(nvcc))
    tree.configure(600)
    assert not _identified_cuda(tree.build_dir), "the scratch tree identified the compilers again"
    seeded = sorted(p.name for p in tree.build_dir.glob("CMakeFiles/*/CMake*.cmake"))
    assert seeded == ["CMakeCUDACompiler.cmake", "CMakeCXXCompiler.cmake", "CMakeSystem.cmake"]
    # What identifying caches beside those files: without the binaries' format (ELF) a nanobind module's install
    # rule failed the scratch tree's configure (curadon: "not supported ... unless on an ELF-based ... platform").
    binary_format = cache_value(user / "CMakeCache.txt", "CMAKE_EXECUTABLE_FORMAT")
    assert binary_format == "ELF"
    assert cache_value(tree.build_dir / "CMakeCache.txt", "CMAKE_EXECUTABLE_FORMAT") == binary_format
    built = tree.build(Controls(), 600, static_only=False, benchmark=False)
    assert built.ok, built.message
    assert built.objects and all(o.stat().st_size > 0 for o in built.objects)
    assert "for 'sm_90a'" in tree.build(Controls(), 600, static_only=True).compiler_output
    # The user's tree reconfigured with other settings (-DCMAKE_CUDA_ARCHITECTURES=75), the CMakeLists.txt as it
    # was, a later tune: its reused scratch tree builds for sm_75 (it kept its first cache: a newcomer's tune after
    # -DCMAKE_CUDA_ARCHITECTURES=80 scored the sm_75 code and reported it as sm_80's), its compilers still seeded.
    ensure_ok(proc.run([build_tool("cmake"), "-DCMAKE_CUDA_ARCHITECTURES=75", str(user)], 600))
    again = cmake_trees.ScratchTree(load_manifest(user, "noop_kernels"), tmp_path / "scratch", load_toolchain(nvcc))
    again.configure(600)
    report = again.build(Controls(), 600, static_only=True).compiler_output
    assert "for 'sm_75'" in report and "sm_90a" not in report, report
    assert not _identified_cuda(again.build_dir), "the scratch tree identified the compilers again"
    # The project's CMakeLists.txt edited, the user's tree reconfigured, a later tune: its reused scratch tree
    # builds what the project says now (the ptxas-only path read the old build.ninja: sm_90a code measured and
    # reported as sm_80's, as simpleGEMM's CUDA_ARCHITECTURES native -> 90 was).
    source = tree.manifest.source_dir / "CMakeLists.txt"
    source.write_text(source.read_text().replace(
        "add_library(noop_kernels STATIC kern.cu)",
        "add_library(noop_kernels STATIC kern.cu)\nset_property(TARGET noop_kernels PROPERTY CUDA_ARCHITECTURES 80)"))
    ensure_ok(proc.run([build_tool("cmake"), str(user)], 600))
    later = cmake_trees.ScratchTree(load_manifest(user, "noop_kernels"), tmp_path / "scratch", load_toolchain(nvcc))
    later.configure(600)
    report = later.build(Controls(), 600, static_only=True).compiler_output
    assert "for 'sm_80'" in report and "sm_90a" not in report, report


def test_a_scratch_tree_is_configured_and_built_by_the_tools_that_made_the_users_tree(
        tmp_path: Path, cuda133_bin: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A user who configured with one cmake (a venv's, not activated) while another comes first on PATH: the
    scratch tree is configured and built by the user's (another would identify the compilers again, or fail
    on a project that needs a newer CMake), and the user's tree is regenerated with its own."""
    nvcc = cuda133_bin / "nvcc"
    user = _user_tree(tmp_path, nvcc)
    first_on_path = tmp_path / "first-on-path"
    first_on_path.mkdir()
    called = tmp_path / "tools-first-on-path-ran"
    for tool in ("cmake", "ninja"):
        impostor = first_on_path / tool
        impostor.write_text(f"#!/bin/sh\necho \"$0 $*\" >> '{called}'\nexit 3\n")
        impostor.chmod(0o755)
    monkeypatch.setenv("PATH", f"{first_on_path}{os.pathsep}{os.environ['PATH']}")
    tree = cmake_trees.ScratchTree(load_manifest(user, "noop_kernels"), tmp_path / "scratch", load_toolchain(nvcc))
    tree.configure(600)
    built = tree.build(Controls(), 600, static_only=False, benchmark=False)
    assert built.ok, built.message
    assert not _identified_cuda(tree.build_dir), "the scratch tree identified the compilers again"
    cmake_trees.refresh_user_tree(user, 600)
    assert not called.exists(), called.read_text()


def test_a_static_build_never_asks_where_a_benchmark_built_outside_the_build_tree_is(
        tmp_path: Path, cuda133_bin: Path) -> None:
    """wangzyon's SGEMM writes its executable, its own benchmark, into the source tree (EXECUTABLE_OUTPUT_PATH): a
    static tune with PARAMS stopped after the baseline, at the probe for redefined PARAMS (a full build where the
    ptxas-only path cannot), with "... is outside the build tree; ciq_build can only rebuild benchmarks that the
    same CMake project builds": no static build links the benchmark, so none needs its path."""
    nvcc = cuda133_bin / "nvcc"
    # X is also the target's own definition: the probe's -DX=0 draws "X redefined" from it, not from the source,
    # and wins (salykova's sgemm.cu's -DGPUCC=90, searched as PARAMS, was said to do nothing).
    user = _user_tree(tmp_path, nvcc, "target_compile_definitions(noop_kernels PRIVATE X=1)\n")
    manifest = replace(load_manifest(user, "noop_kernels"),
                       benchmark=Benchmark("noop_kernels", tmp_path / "noop src" / "noop_kernels"))
    assert "-DX=1" in manifest.cuda_flags
    tree = cmake_trees.ScratchTree(manifest, tmp_path / "scratch", load_toolchain(nvcc), fast_path=False)
    tree.configure(600)
    built = tree.build(Controls(), 600, static_only=True)
    assert built.ok, built.message
    assert "Used" in built.compiler_output and built.linked is None
    warned: list[str] = []
    assert overridden_params(manifest.params, tree, 600, "noop_kernels", warned.append, (),
                             manifest.cuda_flags) == ["UNROLL"]
    assert len(warned) == 1 and warned[0].startswith("PARAMS UNROLL of noop_kernels does nothing"), warned
    # Where a build does link it, the message says why it must be inside and what moves it out.
    with pytest.raises(BuildError, match="EXECUTABLE_OUTPUT_PATH or RUNTIME_OUTPUT_DIRECTORY"):
        tree.benchmark_path  # noqa: B018


def test_a_scratch_tree_never_builds_the_target_whole_where_cmake_writes_it_outside_the_build_tree(
        tmp_path: Path, cuda133_bin: Path) -> None:
    """wangzyon's SGEMM writes its executable into its source folder (EXECUTABLE_OUTPUT_PATH): configured with Unix
    Makefiles, which cannot compile a target's objects alone, every candidate of a static tune linked its sgemm over
    the user's. Refused before the build, saying why and what to do; Ninja compiles the objects alone, and builds."""
    nvcc = cuda133_bin / "nvcc"
    source = tmp_path / "src"
    shutil.copytree(NOOP, source)
    (source / "CMakeLists.txt").write_text((source / "CMakeLists.txt").read_text() + (
        "set_target_properties(noop_kernels PROPERTIES ARCHIVE_OUTPUT_DIRECTORY ${CMAKE_SOURCE_DIR})\n"))
    users = source / "libnoop_kernels.a"
    users.write_bytes(b"the user's own build")
    for generator, build in (("Unix Makefiles", tmp_path / "make"), ("Ninja", tmp_path / "ninja")):
        ensure_ok(proc.run([build_tool("cmake"), "-S", str(source), "-B", str(build), "-G", generator,
                            f"-DCMAKE_CUDA_COMPILER={nvcc}", f"-Dciq_build_DIR={REPO_ROOT / 'cmake'}"], 600))
        manifest = load_manifest(build, "noop_kernels")
        assert manifest.target_file == users
        tree = cmake_trees.ScratchTree(manifest, tmp_path / f"scratch {generator}", load_toolchain(nvcc),
                                       fast_path=False)
        tree.configure(600)
        if generator == "Ninja":
            assert tree.build(Controls(), 600, static_only=True).ok
        else:
            with pytest.raises(BuildError) as refused:
                tree.build(Controls(), 600, static_only=True)
            assert (f"noop_kernels is built at {users}, outside the build tree {build}, and a candidate's build in a "
                    "scratch copy of the tree builds noop_kernels itself (the Unix Makefiles generator cannot compile "
                    "noop_kernels's objects alone)") in str(refused.value)
            assert "Configure a build tree with -G Ninja" in str(refused.value)
        assert users.read_bytes() == b"the user's own build"


def test_a_scratch_tree_for_another_nvcc_than_the_users_identifies_its_compilers(
        tmp_path: Path, cuda133_bin: Path, system_nvcc: Path) -> None:
    if system_nvcc.resolve() == (cuda133_bin / "nvcc").resolve():
        pytest.skip("needs two toolkits")
    user = _user_tree(tmp_path, system_nvcc)
    nvcc = cuda133_bin / "nvcc"
    tree = cmake_trees.ScratchTree(load_manifest(user, "noop_kernels"), tmp_path / "scratch", load_toolchain(nvcc))
    tree.configure(600)
    assert _identified_cuda(tree.build_dir)
    cuda = next(tree.build_dir.glob("CMakeFiles/*/CMakeCUDACompiler.cmake")).read_text()
    assert f'set(CMAKE_CUDA_COMPILER "{nvcc}")' in cuda or str(nvcc.resolve()) in cuda, cuda[:400]


def test_a_wait_for_the_source_trees_turn_ends_when_the_tune_stops(tmp_path: Path) -> None:
    # A tree's first build waits for the source tree's turn for as long as another holds it, unless the tune
    # stops meanwhile: then at once (a stopped tune ends within a second), not when the holder is done.
    source = tmp_path / "src"
    source.mkdir()
    held, release = threading.Event(), threading.Event()

    def holder() -> None:
        with cmake_trees.source_tree_turn(source, 60):
            held.set()
            release.wait(120)

    def waiter() -> str:
        with cmake_trees.source_tree_turn(source, None):
            return "took the turn"

    holding = threading.Thread(target=holder)
    holding.start()
    try:
        assert held.wait(60)
        waiting, outcome = in_thread(waiter)
        time.sleep(0.5)
        assert outcome == []  # the turn is held: it waits
        stopped = time.monotonic()
        stopping.stop_starting()
        waiting.join(60)
        assert isinstance(outcome[0], stopping.Stopped), outcome
        assert time.monotonic() - stopped < 15, "the stop waited for the holder"
    finally:
        stopping.resume_starting()  # this test process goes on after its "interrupt"
        release.set()
        holding.join()


def test_a_tree_whose_first_configure_failed_is_configured_again_once_the_error_is_fixed(
        tmp_path: Path, cuda133_bin: Path) -> None:
    """`tune -S src -B build` whose configure fails on a CMake error leaves a cache and no build.ninja; once the
    user fixes the error, the same command must configure again, not fail for ever on ninja's missing file."""
    source = tmp_path / "src"
    shutil.copytree(NOOP, source)
    lists = source / "CMakeLists.txt"
    good = lists.read_text()
    lists.write_text(good + "include(a_file_that_is_not_there.cmake)\n")
    build = tmp_path / "build"
    with pytest.raises(BuildError, match="a_file_that_is_not_there"):
        cmake_trees.configure_user_tree(source, build, load_toolchain(cuda133_bin / "nvcc"), None, [], 600)
    assert (build / "CMakeCache.txt").is_file() and not (build / "build.ninja").exists()
    # verify, show and list say so: they said "no tuned targets" and to add a ciq_tune_target() the CMakeLists.txt
    # already held (a copy of sgemm.cu without its sources: "No SOURCES given to target").
    unfinished = f"the last configure of {build} stopped at an error before it wrote its build system"
    for read in (lambda backend: backend.manifest("noop_kernels"), CMakeBackend.targets):
        with pytest.raises(ConfigError, match=re.escape(unfinished)):
            read(CMakeBackend(build))
    lists.write_text(good)
    cmake_trees.refresh_user_tree(build, 600)
    assert (build / "build.ninja").is_file()


def test_tune_s_configures_a_scikit_build_core_package_with_what_pip_would_give_cmake(
        tmp_path: Path, cuda133_bin: Path) -> None:
    """A package scikit-build-core builds finds its bindings' CMake package (nanobind's) in the Python environment,
    which pip's build puts on CMAKE_PREFIX_PATH: curadon's `tune -S . -B build` stopped at "Could not find a package
    configuration file provided by nanobind". A project pip does not build that way is configured as written."""
    packages = tmp_path / "site-packages"
    (packages / "bindings" / "cmake").mkdir(parents=True)
    (packages / "bindings" / "cmake" / "bindings-config.cmake").write_text("set(bindings_FOUND TRUE)\n")
    source = tmp_path / "src"
    source.mkdir()
    (source / "CMakeLists.txt").write_text("cmake_minimum_required(VERSION 3.24)\nproject(pkg LANGUAGES NONE)\n"
                                           "find_package(bindings CONFIG REQUIRED)\n")
    pyproject = source / "pyproject.toml"
    toolchain = load_toolchain(cuda133_bin / "nvcc")
    pyproject.write_text('[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n')
    with pytest.raises(BuildError, match="provided by \"bindings\""):
        cmake_trees.configure_user_tree(source, tmp_path / "other", toolchain, None, [], 600, site_packages=[packages])
    pyproject.write_text('[build-system]\nrequires = ["scikit-build-core"]\nbuild-backend = "scikit_build_core.build"\n'
                         '[tool.scikit-build.cmake.define]\nCMAKE_CUDA_ARCHITECTURES = "90a"\nWITH_X = true\n')
    build = tmp_path / "build"
    cmake_trees.configure_user_tree(source, build, toolchain, None, ["-DWITH_X=OFF"], 600, site_packages=[packages])
    # The package's own settings, as pip's build gives them (the architectures pip builds for, its Release), the
    # user's --cmake-arg over them.
    cache = build / "CMakeCache.txt"
    assert cache_value(cache, "CMAKE_CUDA_ARCHITECTURES") == "90a" and cache_value(cache, "WITH_X") == "OFF"
    assert cache_value(cache, "CMAKE_BUILD_TYPE") == "Release"
    assert cache_value(build / "CMakeCache.txt", "bindings_DIR") == str(packages / "bindings" / "cmake")
    assert cache_value(build / "CMakeCache.txt", "Python_EXECUTABLE") == sys.executable
    # The summary's next step: pip's build applies the pin only with the nvcc it was tuned with.
    assert f"pip install -C cmake.define.CMAKE_CUDA_COMPILER={toolchain.nvcc} ." in CMakeBackend(build).applied_by
