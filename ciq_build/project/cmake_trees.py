"""Out-of-band rebuilds of one tuned target, in scratch build trees.

The driver never builds in the user's build tree. Each worker owns one scratch
tree (a separate CMake binary dir under `<build>/ciq/scratch/<target>/`),
configured once with `CIQ_TUNE_TARGET` / `CIQ_TUNE_OPTIONS_FILE`, so that the
CMake module hands the tuned target's CUDA compiles the per-candidate nvcc
options file: the same mechanism the real build uses for a pin. A candidate
rewrites that file (its mtime changes, so exactly the target's CUDA objects are
rebuilt), rebuilds the target, then relinks the benchmark.

The scratch trees compile CUDA through the ptxas-only path's launcher
(ciq_build.compiler.ptxas_path): a compile whose nvcc front end (source ->
PTX) equals one already run in any of the tune's scratch trees (they share
one cache: `front_ends_folder`) re-runs only ptxas and what follows, giving
the object nvcc would; the build tool links as usual. Static objectives can
skip even that (`build(static_only=True)`: ptxas alone, after the front end
where it is new).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

import filelock

from ciq_build.compiler import metrics, ptxas_path
from ciq_build.compiler.controls import Controls, write_options_file
from ciq_build.compiler.toolchain import Toolchain
from ciq_build.core.settings import timeout_advice
from ciq_build.errors import BuildError, ConfigError
from ciq_build.measure import proc, stopping
from ciq_build.measure.bench import BenchSpec
from ciq_build.project import environment
from ciq_build.project.manifest import Manifest
from ciq_build.project.preflight import benchmark_outside, target_outside
from ciq_build.project.skbuild import scikit_build_core_args
from ciq_build.project.tree_cache import cache_value, tree_tool
from ciq_build.project.worker import (
    COMPILER_OUTPUT_BYTES,
    VERBOSE_PTXAS,
    CandidateBuild,
    compile_verdict,
    existing_objects,
    failed_build,
    options_file,
    timed_out_cause,
    timeout_note,
)
from ciq_build.resources import build_tool, cmake_dir

# Cache entries of the user's tree that the scratch tree must not inherit:
# they describe the user's tree itself, or are recomputed by CMake.
_CACHE_SKIP = re.compile(
    r"^(CMAKE_CACHEFILE_DIR|CMAKE_HOME_DIRECTORY|CMAKE_PROJECT_.*|CMAKE_GENERATOR.*|"
    r"CMAKE_EXPORT_COMPILE_COMMANDS|CIQ_TUNE_.*|.*_BINARY_DIR|.*_SOURCE_DIR|.*_IS_TOP_LEVEL)$"
)
_CACHE_LINE = re.compile(r"^([A-Za-z0-9_.+-]+):(BOOL|STRING|PATH|FILEPATH|UNINITIALIZED)=(.*)$")

@dataclass
class ScratchTree:
    """One worker's private build tree of the user's project: a `WorkerTree` (ciq_build.project.worker)."""

    manifest: Manifest
    root: Path
    toolchain: Toolchain
    fast_path: bool = True  # compile through the ptxas-only path's launcher (False: nvcc whole, as before)
    # The user's cache settings as a `cmake -C` script; None: read from the user's build tree. Given where
    # the tree is configured away from it (a Ray worker building from an uploaded copy of the sources).
    replayed_cache: str | None = None
    # The project writes into its source tree (configure_file, a custom command's output there), as the tune
    # has seen: a tree's first build runs such steps too, so it takes the source tree's turn (source_tree_turn).
    writes_sources: bool = False
    build_dir: Path = field(init=False)
    options_file: Path = field(init=False)

    _compiles: tuple[float, list[list[str]]] | None = field(default=None, init=False, repr=False)
    _built: bool = field(default=False, init=False, repr=False)  # built once in this process

    def __post_init__(self) -> None:
        self.build_dir = self.root / "build"
        self.options_file = options_file(self.root, self.manifest)
        self.front_end_cache = front_ends_folder(self.root)

    # -- paths inside the scratch tree that mirror the user's tree ------------

    def mirror(self, user_path: Path) -> Path:
        """Where a file of the user's build tree lives in this scratch tree."""
        try:
            relative = Path(user_path).relative_to(self.manifest.binary_dir)
        except ValueError as exc:
            bench = self.manifest.benchmark
            why = benchmark_outside(self.manifest) if bench is not None and Path(user_path) == Path(bench.path) else None
            raise BuildError(why or f"{user_path} is outside the build tree {self.manifest.binary_dir}") from exc
        return self.build_dir / relative

    @property
    def benchmark_path(self) -> Path | None:
        bench = self.manifest.benchmark
        return self.mirror(bench.path) if bench is not None else None

    @property
    def object_dir(self) -> Path:
        return self.mirror(self.manifest.object_dir)

    def object_files(self) -> tuple[Path, ...]:
        return existing_objects(self.mirror(path) for path in self.manifest.objects)

    def bench_spec(self, timeout: float, required: tuple[str, ...]) -> BenchSpec:
        """How this tree's benchmark runs once: the tree's own build of it, from the tree's build dir."""
        bench = self.manifest.benchmark
        assert bench is not None and self.benchmark_path is not None
        return BenchSpec(path=self.benchmark_path, args=tuple(bench.args), timeout=timeout,
                         metric_regex=self.manifest.metric_regex or None, cwd=self.build_dir, required=required,
                         metric_unit=self.manifest.metric_unit, args_sets=bench.args_sets, score=bench.score)

    # -- configure and build ---------------------------------------------------

    def configure(self, timeout: float) -> None:
        """Configure once (reused while its cache exists, the launcher is the one wanted and the user's cache settings
        are those it was configured from)."""
        self.root.mkdir(parents=True, exist_ok=True)
        if not self.options_file.exists():
            write_options_file(self.options_file, Controls())
        replayed = (self.replayed_cache if self.replayed_cache is not None
                    else initial_cache(self.manifest.binary_dir / "CMakeCache.txt"))
        # The ptxas-only path's launcher, unless the user has a launcher of their own (ccache...), kept as it is.
        launcher = None
        if self.fast_path and "CMAKE_CUDA_COMPILER_LAUNCHER" not in replayed:
            launcher = ";".join(ptxas_path.launcher(self.front_end_cache, self.options_file))
        cache_file = self.build_dir / "CMakeCache.txt"
        generated = (self.build_dir / "build.ninja").exists() or (self.build_dir / "Makefile").exists()
        configured = cache_file.is_file() and generated
        current = cache_value(cache_file, "CMAKE_CUDA_COMPILER_LAUNCHER") or ""
        init_cache = self.root / "ciq-init-cache.cmake"
        # The user's settings as this tree was configured with them: a user who reconfigured with another
        # -DCMAKE_CUDA_ARCHITECTURES (or build type, flags) since would else have the old ones' code measured
        # and reported as the new ones' (seen: a tune after -DCMAKE_CUDA_ARCHITECTURES=80 scored sm_75 code).
        same_settings = init_cache.is_file() and init_cache.read_text(encoding="utf-8") == replayed
        same_launcher = current == launcher if launcher else "ptxas_path" not in current
        if configured and same_settings and same_launcher:
            self._regenerate(timeout)
            return
        if configured and same_launcher:  # configured again from the new settings, its compilers seeded as at first
            cache_file.unlink()
            configured = False
        init_cache.write_text(replayed, encoding="utf-8")
        args = [
            tree_tool(self.manifest.binary_dir, "cmake"),
            "-S", str(self.manifest.source_dir),
            "-B", str(self.build_dir),
            "-G", self.manifest.generator,
            "-C", str(init_cache),
            f"-DCMAKE_CUDA_COMPILER={self.toolchain.nvcc}",
            f"-Dciq_build_DIR={cmake_dir()}",
            f"-DCIQ_TUNE_TARGET={self.manifest.target}",
            f"-DCIQ_TUNE_OPTIONS_FILE={self.options_file}",
        ]
        if self.manifest.tune_architecture:  # the CMake module builds the tuned target for this one only
            args.append(f"-DCIQ_TUNE_ARCHITECTURES={self.manifest.toolchain.architectures}")
        if configured:
            args.append("--fresh")  # the launcher is switched on or off: nothing of the old cache may keep it
        elif self.replayed_cache is None and (seeded := seed_compilers(self.manifest.binary_dir, self.build_dir,
                                                                         self.toolchain.nvcc)):
            args += seeded
        if launcher:
            args.append(f"-DCMAKE_CUDA_COMPILER_LAUNCHER={launcher}")
        with source_tree_turn(self.manifest.source_dir, timeout):
            result = proc.run(args, timeout)
        if not result.ok:
            advice = f"; {timeout_advice(timeout)}" if result.timed_out else ""
            raise BuildError(
                f"configuring the scratch tree {self.build_dir} failed ({result.describe()}{advice}):\n"
                f"{result.output_tail()}\nDoes `cmake -S {self.manifest.source_dir}` configure on its own?"
            )

    def _regenerate(self, timeout: float) -> None:
        """A reused tree's Ninja files brought up to date with the project's CMake files, as any build of it does
        first: the ptxas-only path reads the compile commands from build.ninja without building, so an edit of
        a CMakeLists.txt since (CUDA_ARCHITECTURES native -> 90, seen) would go unseen, and a static tune would
        measure the old build's code under the new architectures' name. Makefiles: the fast path reads none."""
        if not (self.build_dir / "build.ninja").is_file():
            return
        with source_tree_turn(self.manifest.source_dir, timeout):
            result = proc.run([tree_tool(self.build_dir, "ninja"), "-C", str(self.build_dir), "build.ninja"],
                              timeout)
        if not result.ok:
            advice = f"; {timeout_advice(timeout)}" if result.timed_out else ""
            raise BuildError(
                f"regenerating the scratch tree {self.build_dir} after a change of the project's CMake files "
                f"failed ({result.describe()}{advice}):\n{result.output_tail()}\n"
                f"Does `cmake -S {self.manifest.source_dir}` configure on its own?")

    def build(self, controls: Controls, timeout: float, static_only: bool = False, *,
              benchmark: bool = True) -> CandidateBuild:
        """Rebuild the tuned target with `controls`, then the benchmark (if any and `benchmark`: static
        objectives need no relink of it).

        `static_only`: the caller reads only the compiler's report
        (compiler_output), neither objects nor the benchmark; when every
        compile's front end is kept, only ptxas runs and the result has no
        objects and no benchmark; else the target alone is built, never the
        benchmark (as the setuptools backend does).
        """
        write_options_file(self.options_file, controls, extra=VERBOSE_PTXAS)
        if static_only and self.fast_path:
            reported = self._ptxas_only(timeout)
            if reported is not None:
                return reported
        # Waiting for the turn is no part of the compile (its time, its timeout): other trees' first builds.
        first = self.writes_sources and not self._built
        # The target's objects first, where the generator builds them alone: where nothing is run they are all a
        # build needs (an executable's own link, of a library only the machine that runs it has, as the driver's
        # -lcuda, failed every tune that never needed it), and a target that is its own benchmark is then linked
        # as a benchmark is, its link's failure said as the benchmark build's, not as the compile's.
        bench = self.manifest.benchmark
        own_benchmark = bench is not None and bench.target == self.manifest.target
        objects = self._object_names() if own_benchmark or not benchmark or static_only else ()
        built_names = objects or (self.manifest.target,)
        # Where this build links the benchmark, where to is asked first: one CMake writes outside the build tree
        # (EXECUTABLE_OUTPUT_PATH) is refused before the build writes a candidate's executable over the user's there.
        # A static build links none, and never asks.
        links = (own_benchmark and not objects) or (benchmark and not static_only and bench is not None)
        linked = self.benchmark_path if links else None
        # Likewise the target itself, where the build makes it whole (its objects alone are Ninja's).
        if (not objects or links) and (outside := target_outside(self.manifest, links and not own_benchmark)):
            raise BuildError(outside)
        kept = ptxas_path.kept_front_ends(self.options_file)
        kept.unlink(missing_ok=True)
        with source_tree_turn(self.manifest.source_dir, None) if first else contextlib.nullcontext():
            with environment.CompileWitness(self.options_file, timeout) as witness:
                compile_step = proc.run(self._build_args(*built_names), timeout, max_output=COMPILER_OUTPUT_BYTES)
        self._built = True
        compiled = compile_verdict("compile", compile_step, witness, timeout, self.root, self.object_files(),
                                   linked)
        if kept.is_file():  # the launcher's compiles that took a kept front end (ciq_build.compiler.ptxas_path)
            compiled = replace(compiled, kept_front_end_seconds=sum(
                float(line) for line in kept.read_text(encoding="utf-8").split()))
        if compiled.ok and own_benchmark and not objects:
            return replace(compiled, linked=linked)  # the target's own build linked it
        if not compiled.ok or not benchmark or static_only or bench is None:
            return compiled
        with environment.CompileWitness(self.options_file, timeout) as witness:
            link_step = proc.run(self._build_args(bench.target), timeout)
        if not link_step.ok:
            # The candidate's compile time and report stay those of its compile; the link's log says why.
            return failed_build("benchmark build", link_step, witness, timeout, self.root, compiled.compile_seconds,
                                compiled.compiler_output)
        return replace(compiled, linked=linked)

    def _ptxas_only(self, timeout: float) -> CandidateBuild | None:
        """ptxas alone on every compile's PTX, the front end run first (and kept) where it is new;
        None where the fast path cannot take a compile, or a step fails: the full build then runs."""
        # The steps' processes name no options file: the witness is told of each as it starts.
        with environment.CompileWitness(self.options_file, timeout) as witness:
            return self._ptxas_steps(timeout, witness, witness.watching(proc.started))

    def _ptxas_steps(self, timeout: float, witness: environment.CompileWitness,
                     start: ptxas_path.Start) -> CandidateBuild | None:
        started = time.monotonic()
        try:
            plans = [ptxas_path.plan(argv, self.build_dir, self.front_end_cache, start=start)
                     for argv in self._tuned_compiles(timeout)]
        except (ptxas_path.Unsupported, OSError, subprocess.SubprocessError):
            return None
        if not plans:
            return None
        output: list[str] = []
        kept = 0.0
        bounds: dict[str, int] = {}
        dynamic: set[str] = set()
        for p in plans:
            try:
                # A new front end is run here, in place of nvcc's whole compile (which would also run
                # fatbinary and the host compile, of no use to a static objective): kept at no extra cost.
                # One that fails costs its front end twice (the full build below says why it failed).
                if not ptxas_path.ready(p):
                    ptxas_path.fill(p, timeout - (time.monotonic() - started), start=start)
                else:
                    kept += ptxas_path.front_end_seconds(p)
                ran = ptxas_path.ptxas_only(p, timeout - (time.monotonic() - started), start=start)
            except subprocess.TimeoutExpired:
                # The candidate's own compile steps, no build tool: its timeout (not once more in the full build),
                # or the machine's where they waited for a CPU (the rule of every candidate's compile).
                cause = timed_out_cause(witness)
                return CandidateBuild(False, cause, f"compile of {p.output} timed out "
                                      f"({timeout_note(cause, witness, timeout)})",
                                      time.monotonic() - started, "".join(output))
            except (ptxas_path.Unsupported, OSError, subprocess.SubprocessError):
                return None
            if ran.returncode != 0:
                return None  # the full build says why (and tells the candidate's failure from the machine's)
            # The progress line a build tool prints, so each report is read as that object's; then what the
            # launcher's compile of it prints: the front end's warnings (a -D redefined), then ptxas's report.
            output.append(f"Building CUDA object {p.output} (ptxas only)\n{ptxas_path.front_end_log(p)}{ran.stdout}")
            for text in ptxas_path.front_end_ptx(p):
                bounds.update(metrics.ptx_launch_bounds(text))
                dynamic.update(metrics.ptx_dynamic_shared(text))
        return CandidateBuild(True, None, "", time.monotonic() - started, "".join(output),
                              kept_front_end_seconds=kept, launch_bounds=tuple(sorted(bounds.items())),
                              dynamic_shared=tuple(sorted(dynamic)))

    def _tuned_compiles(self, timeout: float) -> list[list[str]]:
        """The tuned target's nvcc compile commands (Ninja only), re-read when the build files change."""
        build_ninja = self.build_dir / "build.ninja"
        if not build_ninja.is_file():
            return []
        stamp = build_ninja.stat().st_mtime
        if self._compiles is None or self._compiles[0] != stamp:
            ninja = tree_tool(self.build_dir, "ninja")
            listed = proc.run([ninja, "-C", str(self.build_dir), "-t", "commands", self.manifest.target], timeout)
            if not listed.ok:
                return []
            self._compiles = (stamp, ptxas_path.compile_commands(listed.stdout, self.options_file))
        return self._compiles[1]

    def _build_args(self, *targets: str) -> list[str]:
        return [tree_tool(self.build_dir, "cmake"), "--build", str(self.build_dir), "--target", *targets]

    def _object_names(self) -> tuple[str, ...]:
        return object_names(self.manifest)


def object_names(manifest: Manifest) -> tuple[str, ...]:
    """The target's object files as build targets of its tree (Ninja takes an output's path relative to its build
    dir), or () where the generator cannot build one file alone: the target is built then."""
    if manifest.generator != "Ninja" or not manifest.objects:
        return ()
    return tuple(os.path.relpath(path, manifest.binary_dir) for path in manifest.objects)


def front_ends_folder(tree_root: Path) -> Path:
    """The ptxas-only path's cache of a scratch tree: one for all the trees beside it (a tune's baseline
    tree and its workers'), so that each front-end configuration is compiled once per tune, not per tree."""
    return tree_root.parent / "front-ends"


# What CMake found out about the compilers and the system, per CMake version (CMakeFiles/<version>/):
# where these files exist and the cache says they are initialized, CMake reads them instead of
# identifying each compiler again (a CUDA compiler's identification runs nvcc several times).
_PLATFORM_FILES = re.compile(r"^CMake(System|[A-Za-z]+Compiler)\.cmake$")


def seed_compilers(user_tree: Path, scratch_build: Path, nvcc: Path) -> list[str]:
    """Give a scratch tree, before its first configure, what CMake found about the compilers in the user's tree;
    the cache entries its configure then takes (none: nothing was seeded, CMake identifies the compilers).

    The scratch tree replays the user's cache (the same C++ and host compilers, flags and toolchain
    file), so where its CUDA compiler is the user's too, identifying them all again finds what the
    user's configure found: measured, a scratch tree's configure took 2.3 s of CPU with it and
    0.15 s without, for each tree of every tune. Nothing is seeded (CMake identifies them, as
    before) where the user's tree names another nvcc or has no such files.
    Identifying a compiler also caches the format of the binaries it makes, which those files do not
    hold: without it CMake takes the platform for one that cannot edit an RPATH at install, and a
    project installing a module that needs one (a nanobind module built by scikit-build-core: curadon)
    failed its scratch tree's configure ("not supported with the Ninja generator unless on an
    ELF-based ... platform"), so it is passed on as the user's configure found it.
    """
    cache = user_tree / "CMakeCache.txt"
    compiler = cache_value(cache, "CMAKE_CUDA_COMPILER") if cache.is_file() else None
    if not compiler or not cache_value(cache, "CMAKE_PLATFORM_INFO_INITIALIZED"):
        return []
    try:
        if not Path(compiler).samefile(nvcc):
            return []
        versions = [d for d in (user_tree / "CMakeFiles").iterdir()
                    if d.is_dir() and (d / "CMakeSystem.cmake").is_file() and (d / "CMakeCUDACompiler.cmake").is_file()]
        for version in versions:  # each CMake version reads its own folder only
            target = scratch_build / "CMakeFiles" / version.name
            target.mkdir(parents=True, exist_ok=True)
            for file in version.iterdir():
                if _PLATFORM_FILES.match(file.name) and file.is_file():
                    shutil.copy2(file, target / file.name)
    except OSError:
        return []  # a file gone or unreadable: CMake finds the compilers itself
    if not versions:
        return []
    seeded = ["-DCMAKE_PLATFORM_INFO_INITIALIZED=1"]  # else CMake deletes the seeded files as stale
    binary_format = cache_value(cache, "CMAKE_EXECUTABLE_FORMAT")
    if binary_format:
        seeded.append(f"-DCMAKE_EXECUTABLE_FORMAT:INTERNAL={binary_format}")
    return seeded


@contextlib.contextmanager
def source_tree_turn(source_dir: Path, timeout: float | None) -> Iterator[None]:
    """Holds a lock on `source_dir` across processes while a configure of it, or a tree's first build, runs.

    Projects write into their sources at configure time (configure_file into the source tree) and at
    build time (a custom command's output there, run by each new tree's first build), and CMake writes
    through a fixed `<file>.tmp`: two at once make one of them fail with "No such file or directory"
    (seen: two Ray actors' first builds of one uploaded copy; `tune --all`'s tunes configuring one source
    tree at once). A tune configures its own trees one after another; tunes of several targets, and two
    checkouts' tunes, may share nothing but the sources, so the lock is keyed on the source tree's real
    path, in the temporary folder. `timeout` None: wait as long as the holder runs (its own timeout ends
    it) or until the tune stops.
    """
    key = hashlib.sha256(str(source_dir.resolve()).encode()).hexdigest()[:16]
    folder = Path(tempfile.gettempdir()) / f"ciq_build-{os.getuid()}"
    folder.mkdir(exist_ok=True)
    lock = filelock.FileLock(str(folder / f"configure-{key}.lock"))

    def taken(seconds: float) -> bool:
        try:
            lock.acquire(timeout=seconds)
        except filelock.Timeout:
            return False
        return True

    if timeout is None:
        stopping.wait_or_stop(taken, f"waiting for the turn of the source tree {source_dir}")
    elif not taken(timeout):
        raise BuildError(f"another configure or first build of {source_dir} held its turn for {timeout:.0f} s "
                         f"(the configure timeout): is a CMake run of it hanging? ({lock.lock_file})")
    try:
        yield
    finally:
        lock.release()


def configure_user_tree(source_dir: Path, build_dir: Path, toolchain: Toolchain, generator: str | None,
                        cmake_args: list[str], timeout: float, *, site_packages: list[Path] | None = None) -> None:
    """Configure the user's project when `tune` is pointed at a build dir that does not exist yet (a package
    scikit-build-core builds with what it would give CMake: `site_packages`, default this Python's)."""
    args = [build_tool("cmake"), "-S", str(source_dir), "-B", str(build_dir), f"-DCMAKE_CUDA_COMPILER={toolchain.nvcc}",
            f"-Dciq_build_DIR={cmake_dir()}"]
    ninja = shutil.which(build_tool("ninja"))
    if generator:
        args += ["-G", generator]
    elif ninja:
        args += ["-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={ninja}"]
    args += scikit_build_core_args(source_dir, cmake_args, site_packages) + cmake_args
    with source_tree_turn(source_dir, timeout):
        result = proc.run(args, timeout)
    if not result.ok:
        raise BuildError(f"configuring {source_dir} into {build_dir} failed ({result.describe()}):\n{result.output_tail()}")


# The build-system check each generator runs before any build: it re-runs CMake
# when a CMakeLists.txt (or anything configure read) changed, and does nothing otherwise.
# Each: (that check's target, the build system a configure that succeeded wrote).
_REGENERATE = {"Ninja": ("build.ninja", "build.ninja"), "Ninja Multi-Config": ("build.ninja", "build.ninja"),
               "Unix Makefiles": ("cmake_check_build_system", "Makefile")}


def check_tree_is_here(build_dir: Path) -> None:
    """Refuse a build tree CMake made in another folder: a project copied with its old build folder.

    Its CMakeCache.txt still names the folder it was made in (and that folder's
    sources), so every build there re-runs CMake against them: measured, `verify`
    in such a copy ran 2 minutes through ~100 "Re-running CMake" blocks before
    failing as if the pin did not match.
    """
    cache = Path(build_dir) / "CMakeCache.txt"
    made_in = cache_value(cache, "CMAKE_CACHEFILE_DIR") if cache.is_file() else None
    if not made_in or _same_folder(Path(made_in), Path(build_dir)):
        return
    sources = cache_value(cache, "CMAKE_HOME_DIRECTORY") or "its sources"
    raise ConfigError(
        f"{build_dir} is a copy of the build tree made in {made_in} (for the sources in {sources}); CMake cannot "
        f"build it here. Delete it and configure afresh (cmake -S <sources> -B {build_dir}), or give this command "
        "-S <sources> with a new -B folder.")


def check_configure_finished(build_dir: Path) -> None:
    """Refuse a build tree whose last configure stopped at an error before it wrote its build system.

    Its manifests were never written, so a target it lacks is no sign of a missing ciq_tune_target(): a
    copy of sgemm.cu whose sources were left behind ("No SOURCES given to target") was said to have "no
    tuned targets", and to need a ciq_tune_target() its CMakeLists.txt already held.
    """
    cache = Path(build_dir) / "CMakeCache.txt"
    generator = cache_value(cache, "CMAKE_GENERATOR") if cache.is_file() else None
    regenerate = _REGENERATE.get(generator or "")
    if regenerate is None or (Path(build_dir) / regenerate[1]).is_file():
        return
    raise ConfigError(
        f"the last configure of {build_dir} stopped at an error before it wrote its build system (no "
        f"{regenerate[1]}), so its tuned targets are not known yet: fix the error CMake printed, then configure "
        f"again (cmake {build_dir})")


def _same_folder(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or a.samefile(b)
    except OSError:
        return False


def refresh_user_tree(build_dir: Path, timeout: float) -> None:
    """Bring the user's build tree up to date with its CMakeLists.txt before its manifests are read.

    A tune right after an edit (PARAMS added, OBJECTIVES changed) must see the
    edit, as the next `cmake --build` would; a reconfigure that fails is the
    user's CMake error, said as such.
    """
    check_tree_is_here(build_dir)
    cache = Path(build_dir) / "CMakeCache.txt"
    generator = cache_value(cache, "CMAKE_GENERATOR") if cache.is_file() else None
    regenerate = _REGENERATE.get(generator or "")
    if regenerate is None:
        return  # another generator: its manifests are as the last configure wrote them
    target, generated = regenerate
    command = [tree_tool(build_dir, "cmake"), "--build", str(build_dir), "--target", target]
    if not (Path(build_dir) / generated).is_file():
        # The last configure failed before it wrote the build system (a CMake error the user has since fixed):
        # there is nothing to regenerate from, so configure the tree again from its cache.
        command = [tree_tool(build_dir, "cmake"), str(build_dir)]
    result = proc.run(command, timeout)
    if not result.ok:
        raise BuildError(
            f"re-running CMake in {build_dir} (a CMakeLists.txt changed since it was configured) failed "
            f"({result.describe()}):\n{result.output_tail()}\nFix the CMake error, then tune again.")


def initial_cache(cache_file: Path) -> str:
    """The user's cache settings (build type, architectures, paths) as a `cmake -C` script."""
    lines = ["# Written by ciq_build: the user's cache settings, replayed into a scratch tree."]
    if not cache_file.is_file():
        return "\n".join(lines) + "\n"
    for raw in cache_file.read_text(encoding="utf-8", errors="replace").splitlines():
        match = _CACHE_LINE.match(raw)
        if not match or _CACHE_SKIP.match(match.group(1)):
            continue
        name, kind, value = match.groups()
        kind = "STRING" if kind == "UNINITIALIZED" else kind  # given as -DNAME=value without a type
        lines.append(f'set({name} "{cmake_escape(value)}" CACHE {kind} "")')
    return "\n".join(lines) + "\n"


def cmake_escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$")
