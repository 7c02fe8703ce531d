"""A CMake project as a `BuildBackend`: targets registered with ciq_tune_target(), read from the build tree's
manifests, built in scratch copies of the build tree, a pin applied by a plain `cmake --build`."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from ciq_build.compiler.toolchain import PROJECT_COMPILER, Toolchain, find_toolchain
from ciq_build.core.objectives import Objective
from ciq_build.core.settings import USER_CONFIGURE_TIMEOUT
from ciq_build.errors import ConfigError
from ciq_build.measure import proc
from ciq_build.project.cmake_trees import (
    ScratchTree,
    check_configure_finished,
    check_tree_is_here,
    configure_user_tree,
    object_names,
    refresh_user_tree,
)
from ciq_build.project.manifest import Manifest, load_manifest, manifest_dir, tuned_targets
from ciq_build.project.preflight import check_tune
from ciq_build.project.skbuild import is_scikit_build_core_project
from ciq_build.project.sources import SourceSet
from ciq_build.project.tree_cache import cache_value, tree_tool


@dataclass(frozen=True)
class CMakeBackend:
    """The CMake build tree `build_dir`; `source_dir` (and `cmake_args`) configure it when it has no cache yet."""

    build_dir: Path
    source_dir: Path | None = None
    cmake_args: tuple[str, ...] = ()

    kind = "CMake"
    remote_builds = True  # a Ray actor configures its own scratch tree from the manifest (ciq_build.ray.executor)

    def prepare(self) -> None:
        """Configure the build tree (with `source_dir`, when it has no cache yet), else refresh it."""
        if self.source_dir is not None and not (self.build_dir / "CMakeCache.txt").is_file():
            configure_user_tree(self.source_dir, self.build_dir, find_toolchain(), None, list(self.cmake_args),
                                USER_CONFIGURE_TIMEOUT)
        else:
            check_cmake_args_kept(self.build_dir, self.cmake_args)
            refresh_user_tree(self.build_dir, USER_CONFIGURE_TIMEOUT)

    @property
    def applied_by(self) -> str:
        """A plain build of this tree; for a package scikit-build-core builds, pip's build too, given the tree's nvcc:
        pip's takes the first nvcc CMake finds, and a curadon wheel built by CUDA 13.0 skipped its 13.3 pin unseen."""
        cache = self.build_dir / "CMakeCache.txt"
        source = cache_value(cache, "CMAKE_HOME_DIRECTORY") if cache.is_file() else None
        if not source or not is_scikit_build_core_project(Path(source)):
            return "a plain `cmake --build`"
        nvcc = cache_value(cache, "CMAKE_CUDA_COMPILER") or "<the nvcc tuned with>"
        return (f"a plain `cmake --build`, or `pip install -C cmake.define.CMAKE_CUDA_COMPILER={shlex.quote(nvcc)} .` "
                "(pip's build takes the first nvcc CMake finds),")

    def check_buildable(self) -> None:
        check_tree_is_here(self.build_dir)

    def targets(self) -> list[str]:
        if not (self.build_dir / "CMakeCache.txt").is_file():
            raise ConfigError(f"{self.build_dir} is not a configured CMake build tree (no CMakeCache.txt): pass the "
                              "build folder of your project with -B <build dir>, or configure it first "
                              "(cmake -S <src> -B <build>)")
        tuned = tuned_targets(self.build_dir)
        if not tuned:
            check_configure_finished(self.build_dir)
        return tuned

    def no_targets(self) -> str:
        return (f"{self.build_dir} has no tuned targets (no manifests in {manifest_dir(self.build_dir)}): add "
                "ciq_tune_target(<target> ...) to CMakeLists.txt and configure the project (or pass --source-dir)")

    def manifest(self, target: str) -> Manifest:
        if not (manifest_dir(self.build_dir) / f"{target}.json").is_file():
            check_configure_finished(self.build_dir)
        return load_manifest(self.build_dir, target)

    def pin_file(self, target: str) -> Path:
        """<source>/ciq/ while the build tree is not configured, else the manifest's."""
        if self.source_dir is not None and not (self.build_dir / "ciq").is_dir():
            return self.source_dir / "ciq" / f"{target}.json"
        return self.manifest(target).pin_file

    def toolchain(self, manifest: Manifest) -> Toolchain:
        return find_toolchain(manifest.toolchain.cuda_compiler, explicit_from=PROJECT_COMPILER)

    def check_tools(self, manifest: Manifest, toolchain: Toolchain, *, pin: bool, objectives: list[Objective],
                    needs_benchmark: bool) -> None:
        check_tune(manifest, toolchain, pin=pin, objectives=objectives, needs_benchmark=needs_benchmark)

    def make_tree(self, manifest: Manifest, root: Path, toolchain: Toolchain, *, fast_path: bool,
                  replayed_cache: str | None = None) -> ScratchTree:
        """A scratch build tree: a CMake binary dir configured from the user's cache (or `replayed_cache`)."""
        return ScratchTree(manifest, root, toolchain, fast_path, replayed_cache=replayed_cache)

    def source_set(self, manifest: Manifest) -> SourceSet:
        return SourceSet(manifest)

    def build_pinned(self, manifest: Manifest, timeout: float) -> proc.ProcResult:
        """The target's objects (the target where the generator cannot build them alone): what verify reads. Not
        its link: an executable linking the driver's libcuda failed verify on a machine without one, where its
        tune had run (cuda-api-wrappers' examples link CUDA::cuda_driver)."""
        names = object_names(manifest) or (manifest.target,)
        return proc.run([tree_tool(self.build_dir, "cmake"), "--build", str(self.build_dir), "--target", *names],
                        timeout)

    def toolkit_rule(self) -> tuple[str, str]:
        return ("chosen by this build tree's CMAKE_CUDA_COMPILER",
                "configure a new build dir with -DCMAKE_CUDA_COMPILER=<its nvcc>")

    def rebuild_hint(self, manifest: Manifest) -> str:
        return (f"reconfigure (cmake {self.build_dir}) and look for a warning from ciq_tune_target (a skipped pin "
                "says why)")

    def command(self, name: str, target: str) -> str:
        return f"python -m ciq_build {name} {shlex.quote(target)} -B {shlex.quote(str(self.build_dir))}"


def check_cmake_args_kept(build_dir: Path, cmake_args: tuple[str, ...]) -> None:
    """Refuse `--cmake-arg`s that a build tree configured already would not take: they configure a new tree only, and a
    tune that dropped them searched another configuration than the one asked for, unsaid. The same settings as the
    cache's pass, so the command that started a tune resumes it word for word."""
    cache = build_dir / "CMakeCache.txt"
    differing = []
    for arg in cmake_args:
        setting = re.fullmatch(r"-D([^:=]+)(?::[A-Za-z]+)?=(.*)", arg, re.S)
        if setting is None:
            differing.append(f"{arg} (only -D<name>=<value> settings can be checked against a configured tree)")
            continue
        name, value = setting.groups()
        cached = cache_value(cache, name)
        if cached != value and not (cached and value and Path(value).resolve() == Path(cached)):
            differing.append(f"-D{name}={value} (the cache has " + (f"{name}={cached})" if cached is not None else
                                                                     "no such entry)"))
    if differing:
        raise ConfigError(f"{build_dir} is configured already, and --cmake-arg only configures a new build dir: "
                          f"{'; '.join(differing)}. Set it in that tree yourself (cmake -B {build_dir} -D...) and tune "
                          "again without --cmake-arg, or tune in a new build dir (-B <new dir> --source-dir <src>)")
