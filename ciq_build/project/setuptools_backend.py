"""`tune <ciq_target> --setuptools <project>`: tune a setuptools CudaExtension, no CMake involved.

How ciq_build learns the extension: it runs the project's ``setup.py`` with
``setuptools.setup`` replaced by one that records its arguments and stops
(nothing is built), and takes the ``CudaExtension`` whose ``ciq_target`` is
the one asked for. Its ``ciq_benchmark``, ``ciq_objectives``,
``ciq_search_space``, ``ciq_timeout``, ``ciq_threads_per_block``, ``ciq_dynamic_shared_memory`` and ``params``
play the part of ciq_tune_target()'s BENCHMARK/ARGS, OBJECTIVES, SEARCH_SPACE, TIMEOUT, THREADS_PER_BLOCK,
DYNAMIC_SHARED_MEMORY and PARAMS, and become the same `Manifest` the CMake module writes, so the
driver's search, journal, lock, resume, confirmation, minimal pin and record
are the CMake path's own (ciq_build.tune.driver).

Per candidate, a worker (`ExtensionTree`, a folder under
``<project>/build/ciq/scratch/<target>/``: a `WorkerTree` of its own,
ciq_build.project.worker) runs the project's own `build_ext` (setup.py's cmdclass: ciq_build's) in a child
process (`build_candidate`): the same nvcc command line as
``pip install .``, with the candidate's options file in place of the pin's,
and links the extension into the worker's ``lib/``. The benchmark runs from the project directory with that
``lib/`` first on PYTHONPATH. Static objectives compile without linking. The
winner is pinned to ``<pin_dir>/<ciq_target>.json``, which the next ordinary
build applies.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import os
import runpy
import shlex
import shutil
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

from ciq_build.compiler.controls import Controls, write_options_file
from ciq_build.compiler.toolchain import Toolchain, find_toolchain
from ciq_build.core.objectives import Objective
from ciq_build.errors import ConfigError
from ciq_build.measure import proc
from ciq_build.measure.bench import BenchSpec
from ciq_build.project import environment
from ciq_build.project.backend import SETUPTOOLS_BUILD_FOLDER
from ciq_build.project.cuda_extension import CudaExtension, explicit_nvcc, is_cuda_source, object_for
from ciq_build.project.manifest import (
    SETUPTOOLS_GENERATOR,
    Benchmark,
    Manifest,
    ManifestToolchain,
    check_target_name,
)
from ciq_build.project.preflight import check_tune
from ciq_build.project.sources import SourceSet
from ciq_build.project.worker import (
    COMPILER_OUTPUT_BYTES,
    VERBOSE_PTXAS,
    CandidateBuild,
    compile_verdict,
    existing_objects,
    options_file,
)

# Where setuptools builds by default; ciq_build's journal, lock and scratch trees go in its ciq/ folder.
BUILD_FOLDER = SETUPTOOLS_BUILD_FOLDER
# The worker folder's parts: objects as the plain build's build_temp lays them out, and the linked module.
OBJECT_FOLDER = "objects"
LIB_FOLDER = "lib"


class _Captured(Exception):
    def __init__(self, kwargs: dict[str, Any]) -> None:
        super().__init__("setup() captured")
        self.kwargs = kwargs


def load_extension(project: Path, target: str) -> CudaExtension:
    """The CudaExtension(ciq_target=`target`) of `project`'s setup.py, read without building anything; refused
    unless setup.py builds it with ciq_build's build_ext (`build_command`)."""
    kwargs, setup_py = capture_setup(project), Path(project) / "setup.py"
    ext = find_extension(kwargs, setup_py, target)
    build_command(kwargs, setup_py, target)
    return ext


def capture_setup(project: Path) -> dict[str, Any]:
    """The arguments `project`'s setup.py gives setup(), which builds nothing here.

    setup.py runs (in this process, from `project`, as pip would run it) with a
    setup() that records its arguments and stops it there.
    """
    setup_py = Path(project) / "setup.py"
    if not setup_py.is_file():
        raise ConfigError(f"--setuptools {project}: there is no setup.py; point it at the folder holding the "
                          "setup.py whose CudaExtension(ciq_target=...) you want to tune")
    import setuptools

    # After setuptools, which makes `distutils` its own copy (Python 3.12 has no other); setup.py may call either.
    distutils_core = importlib.import_module("distutils.core")

    def capture(**kwargs: Any) -> None:
        raise _Captured(kwargs)

    with contextlib.ExitStack() as patched:
        for module in (setuptools, distutils_core):
            patched.enter_context(mock.patch.object(module, "setup", capture))
        patched.enter_context(mock.patch.object(sys, "argv", [str(setup_py), "--name"]))
        patched.enter_context(mock.patch.object(sys, "path", [str(project), *sys.path]))  # its own helper modules
        patched.enter_context(contextlib.chdir(project))  # setup.py's paths are the project's, as under pip
        try:
            runpy.run_path(str(setup_py), run_name="__main__")
        except _Captured as captured:
            kwargs = captured.kwargs
        else:
            raise ConfigError(f"{setup_py} never called setuptools.setup(); ciq_build reads the extension from "
                              "its arguments (ext_modules=[CudaExtension(..., ciq_target=...)])")
    return kwargs


def find_extension(kwargs: dict[str, Any], setup_py: Path, target: str) -> CudaExtension:
    """The CudaExtension(ciq_target=`target`) among the arguments `setup_py` gave setup() (capture_setup)."""
    found = [e for e in kwargs.get("ext_modules") or () if isinstance(e, CudaExtension)]
    for ext in found:
        if ext.ciq_target == target:
            return ext
    names = ", ".join(sorted(e.ciq_target for e in found)) or "none"
    raise ConfigError(f"{setup_py} has no CudaExtension(ciq_target={target!r}) (its CudaExtension targets: "
                      f"{names}); pass one of those, or add ciq_target={target!r} to the extension")


def build_command(kwargs: dict[str, Any], setup_py: Path, target: str) -> Any:
    """The build_ext command `setup_py` gives setup() (its cmdclass): ciq_build.setuptools_ext.build_ext or a
    subclass, which compiles the .cu files with the pin, and each tune candidate as `pip install .` would.

    Taken from setup.py, not imported here by name: the setuptools hooks are the front end, above this backend.
    """
    command = (kwargs.get("cmdclass") or {}).get("build_ext")
    if not hasattr(command, "candidate_options"):  # ciq_build's build_ext's mark (or a subclass's)
        raise ConfigError(
            f"{setup_py}: setup()'s cmdclass has no build_ext from ciq_build, so a plain build compiles no .cu file "
            f"of {target!r} with its pin, and a tune cannot build its candidates: give setup() "
            "cmdclass={\"build_ext\": build_ext}, build_ext being ciq_build.setuptools_ext.build_ext")
    return command


def build_candidate(argv: Sequence[str] | None = None) -> None:
    """A tune's build of one candidate, in a child process of its worker tree (`ExtensionTree.build`):
    `project target options build_temp build_lib link|compile`, the project's build_ext on the extension with
    the candidate's options file, linked into build_lib (or only compiled)."""
    from setuptools import Distribution

    project, target, options, build_temp, build_lib, mode = argv if argv is not None else sys.argv[1:]
    setup_py = Path(project) / "setup.py"
    kwargs = capture_setup(Path(project))
    ext = find_extension(kwargs, setup_py, target)
    # The project's Python packages too: the benchmark imports the extension as part of its package.
    packaging = {k: kwargs[k] for k in ("packages", "py_modules", "package_dir") if kwargs.get(k)}
    dist = Distribution({"name": "ciq-tune", **packaging, "ext_modules": [ext]})
    dist.script_name = "setup.py"  # build_py finds packages relative to it (we run from the project)
    cmd = build_command(kwargs, setup_py, target)(dist)
    cmd.build_temp, cmd.build_lib, cmd.force = build_temp, build_lib, True
    cmd.candidate_options = Path(options)
    cmd.ensure_finalized()
    if hasattr(cmd, "cython_c_in_temp"):
        # Cython's build_ext (setuptools' base when Cython is installed) writes the C++ of a .pyx source beside it, in
        # the project, where each worker's candidate wrote the same file at once (py-faster-rcnn's nms/gpu_nms.cpp):
        # the tune warned that the source tree changed, and one worker could compile another's half-written file.
        cmd.cython_c_in_temp = 1
    if mode == "compile":
        cmd.build_cuda_objects(ext)
        return
    py = dist.get_command_obj("build_py")
    py.build_lib = build_lib
    py.ensure_finalized()
    if packaging:
        py.run()
    cmd.run()  # sets up the host compiler, then build_extension(ext): nvcc's objects linked into the module
    _candidate_first(ext.name, Path(build_lib), Path(project), py.get_package_dir)


# The __init__.py of a package holding a candidate's module, in the worker's lib/: the package's own, with the
# project's folder of it after lib/'s on its __path__.
CANDIDATE_PACKAGE_INIT = '''\
# Written by ciq_build for a tune's candidate: this package's modules are looked up here first (the candidate's
# build of its CUDA extension), then in the project's {source!r} (its other modules), whose __init__.py runs.
__path__.append({source!r})
__file__ = {init!r}  # as in the project: an __init__.py that finds its data files beside itself
with open({init!r}, encoding="utf-8") as _ciq_init:
    exec(compile(_ciq_init.read(), {init!r}, "exec"))
del _ciq_init
'''


def _candidate_first(module: str, build_lib: Path, project: Path, package_dir: Callable[[str], str]) -> None:
    """Make `import <module>` in the benchmark find the candidate's build in `build_lib`, before the project's.

    The benchmark runs with lib/ and then the project on PYTHONPATH. A package of the project with an __init__.py
    (py-faster-rcnn's nms/, holding gpu_nms) is a regular package, which Python takes over lib/'s nms/ of the
    candidate's gpu_nms alone (a namespace portion) wherever it comes on the path: every candidate's benchmark
    imported the project's own build (`build_ext --inplace`'s), and the tune compared one module with itself. A
    copy of each such package's __init__.py in lib/ that also looks in the project's folder finds the candidate's
    module first and the package's other modules (its other extensions, its .py files) where they are.
    """
    parts = module.split(".")[:-1]
    for depth in range(1, len(parts) + 1):
        source = (project / package_dir(".".join(parts[:depth]))).absolute()
        init = source / "__init__.py"
        if not init.is_file():
            continue  # a namespace package in the project too: lib/'s portion comes first, as PYTHONPATH says
        target = build_lib.joinpath(*parts[:depth], "__init__.py")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(CANDIDATE_PACKAGE_INIT.format(source=str(source), init=str(init)), encoding="utf-8")


def extension_manifest(project: Path, ext: CudaExtension, toolchain: Toolchain) -> Manifest:
    """`ext` described as the CMake module would describe a ciq_tune_target() target."""
    project = Path(project).absolute()
    binary = project / BUILD_FOLDER
    object_dir = build_temp(project)
    cuda_sources = [os.fspath(s) for s in ext.sources if is_cuda_source(s)]
    pin_dir = (project / ext.pin_dir).absolute()
    bench = None
    if ext.ciq_benchmark is not None:
        bench = Benchmark(target="ciq_benchmark", path=_program(project, ext.ciq_benchmark[0], ext.ciq_target),
                          args=ext.ciq_benchmark[1:], score=ext.ciq_score,
                          # each size runs ciq_benchmark with its own arguments after the common ones
                          args_sets=tuple((size, (*ext.ciq_benchmark[1:], *args))
                                          for size, args in ext.ciq_benchmark_args_sets))
    return Manifest(
        target=ext.ciq_target, source_dir=project, binary_dir=binary, target_source_dir=project,
        target_binary_dir=binary, cuda_sources=tuple(project / s for s in cuda_sources), object_dir=object_dir,
        # what setuptools' host compiler builds (a .cpp, a Cython .pyx), without a candidate's -D; the benchmark is a
        # Python program, whose sources say nothing of them
        host_sources=tuple(project / os.fspath(s) for s in ext.sources if not is_cuda_source(s)),
        benchmark=bench, metric_regex=ext.ciq_metric, metric_unit=ext.ciq_unit, objectives=ext.ciq_objectives, params=ext.params,
        search_space=ext.ciq_search_space, constraints=ext.ciq_constraints, seeds=ext.ciq_seeds, pin_dir=pin_dir,
        pin_file=_record(pin_dir, ext.ciq_target),
        timeout=ext.ciq_timeout, threads_per_block=ext.ciq_threads_per_block,
        dynamic_shared_memory=ext.ciq_dynamic_shared_memory,
        options_file=object_dir / f"{ext.ciq_target}.nvcc-options",
        generator=SETUPTOOLS_GENERATOR,
        allow_numerics=ext.allow_numerics,
        toolchain=ManifestToolchain(toolchain.nvcc, toolchain.version, ";".join(ext.cuda_architectures)),
        objects=tuple(object_for(s, object_dir) for s in cuda_sources), cuda_flags=ext.nvcc_flags,
    )


def _record(pin_dir: Path, target: str) -> Path:
    """The pinned record's file: <pin_dir>/<target>.json, as the CMake module names it."""
    return pin_dir / f"{check_target_name(target, ConfigError)}.json"


def build_temp(project: Path) -> Path:
    """Where a plain build of `project` (`pip install .`, `setup.py build_ext`) puts its objects and options file.

    setuptools' own answer (build/temp.<platform>-<python>, or what setup.cfg's [build] or [build_ext]
    says), so that `verify` checks the files the user's build writes.
    """
    from setuptools import Distribution

    with contextlib.chdir(project):
        dist = Distribution({"name": "ciq-build-temp"})
        if Path("setup.cfg").is_file():  # only it: the project's metadata is not ours to judge
            dist.parse_config_files(["setup.cfg"], ignore_option_errors=True)
        command = dist.get_command_obj("build_ext")
        command.ensure_finalized()
        return (Path(project) / command.build_temp).absolute()


def _program(project: Path, program: str, target: str) -> Path:
    """The benchmark command's program: a bare name from PATH (as a shell finds it), a path from the project."""
    if os.sep in program or (os.altsep and os.altsep in program):
        return project / program
    found = shutil.which(program)
    if found is None:
        raise ConfigError(f'CudaExtension(ciq_target="{target}"): ciq_benchmark runs {program!r}, which is not on '
                          'PATH; give its path, or sys.executable for a Python script')
    return Path(found)


@dataclass
class ExtensionTree:
    """One worker's folder: the extension's objects (as build_temp lays them out) and linked module (``lib/``).

    A `WorkerTree`: build_ext compiles the candidate into it, in a child process, and its benchmark runs from
    the project with its ``lib/`` first on PYTHONPATH.
    """

    manifest: Manifest
    root: Path
    toolchain: Toolchain
    writes_sources: bool = False  # nothing of a build_ext run waits on it: each worker builds on its own
    options_file: Path = field(init=False)

    def __post_init__(self) -> None:
        self.options_file = options_file(self.root, self.manifest)

    @property
    def build_dir(self) -> Path:
        return self.root / "build"

    @property
    def object_dir(self) -> Path:
        """The objects folder, wherever setup.cfg may have put the plain build's build_temp."""
        return self.build_dir / OBJECT_FOLDER

    @property
    def lib_dir(self) -> Path:
        return self.build_dir / LIB_FOLDER

    def mirror(self, user_path: Path) -> Path:
        """Where a file of the plain build's build_temp (an object) lives in this worker."""
        return self.object_dir / Path(user_path).relative_to(self.manifest.object_dir)

    def object_files(self) -> tuple[Path, ...]:
        return existing_objects(self.mirror(path) for path in self.manifest.objects)

    def configure(self, timeout: float) -> None:
        self.build_dir.mkdir(parents=True, exist_ok=True)

    def bench_spec(self, timeout: float, required: tuple[str, ...]) -> BenchSpec:
        """The benchmark command, run from the project, importing the extension from this worker's lib/."""
        bench = self.manifest.benchmark
        assert bench is not None
        return BenchSpec(path=bench.path, args=tuple(bench.args), timeout=timeout, cwd=self.manifest.source_dir,
                         env=benchmark_env(self.lib_dir, self.manifest.source_dir, bench.args), required=required,
                         args_sets=bench.args_sets, score=bench.score, metric_regex=self.manifest.metric_regex or None,
                         metric_unit=self.manifest.metric_unit)

    def build(self, controls: Controls, timeout: float, static_only: bool = False, *,
              benchmark: bool = True) -> CandidateBuild:
        """build_ext on the extension with `controls`; linked unless `static_only` (or no benchmark is wanted)."""
        write_options_file(self.options_file, controls, extra=VERBOSE_PTXAS)
        link = benchmark and not static_only
        command = [sys.executable, "-c", "from ciq_build.project.setuptools_backend import build_candidate; build_candidate()",
                   str(self.manifest.source_dir), self.manifest.target, str(self.options_file),
                   str(self.object_dir), str(self.lib_dir), "link" if link else "compile"]
        env = {**os.environ, "CIQ_NVCC": str(self.toolchain.nvcc)}
        # The witness sees nvcc by the options file on its command line, as in a CMake scratch tree.
        with environment.CompileWitness(self.options_file, timeout) as witness:
            step = proc.run(command, timeout, cwd=self.manifest.source_dir, env=env,
                            max_output=COMPILER_OUTPUT_BYTES)
        bench = self.manifest.benchmark
        return compile_verdict("build_ext", step, witness, timeout, self.root, self.object_files(),
                               Path(bench.path) if bench is not None else None)  # a command, run from the project


def benchmark_env(lib: Path, project: Path, args: Sequence[str]) -> dict[str, str]:
    """PYTHONPATH for a benchmark run: the worker's lib/ first, then the project and its scripts' folders.

    PYTHONSAFEPATH=1 (Python 3.11+): else Python puts the script's folder
    (usually the project, holding the package without its built extension)
    before PYTHONPATH, and `import pkg._kern` would miss the candidate's module.
    """
    scripts = [str((project / a).parent) for a in args if a.endswith(".py") and (project / a).is_file()]
    path = [str(lib), str(project), *scripts, *filter(None, [os.environ.get("PYTHONPATH", "")])]
    return {"PYTHONPATH": os.pathsep.join(dict.fromkeys(path)), "PYTHONSAFEPATH": "1"}


@dataclass(frozen=True)
class SetuptoolsBackend:
    """The setuptools project `project` as a `BuildBackend`: its targets are the CudaExtension(ciq_target=...)
    of its setup.py, each candidate is built by build_ext in an extension folder, and the next plain build_ext
    applies the pin."""

    project: Path

    kind = "setuptools"
    applied_by = "the next `pip install .` (or `setup.py build_ext`)"
    # Ray's actors would ask make_tree for extension folders, but its uploaded sources replay a CMake cache
    # (ciq_build.ray.sources), and a build_ext tune has not run on Ray: the local executor only.
    remote_builds = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "project", Path(self.project).absolute())

    @property
    def build_dir(self) -> Path:
        return self.project / BUILD_FOLDER

    @functools.cached_property
    def _toolchain(self) -> Toolchain:
        return find_toolchain(explicit_nvcc(os.environ))  # as build_ext finds it

    def prepare(self) -> None:
        """Nothing to configure: setup.py is read for each target."""

    def check_buildable(self) -> None:
        """Nothing to refuse: build_ext builds wherever the project is."""

    def targets(self) -> list[str]:
        return sorted({e.ciq_target for e in capture_setup(self.project).get("ext_modules") or ()
                       if isinstance(e, CudaExtension)})

    def no_targets(self) -> str:
        return (f"{self.project / 'setup.py'} has no CudaExtension with a ciq_target: build the CUDA sources with "
                "ciq_build.setuptools_ext.CudaExtension(..., ciq_target=<name>) to tune them")

    def manifest(self, target: str) -> Manifest:
        check_target_name(target, ConfigError)
        return extension_manifest(self.project, load_extension(self.project, target), self._toolchain)

    def pin_file(self, target: str) -> Path:
        check_target_name(target, ConfigError)
        return _record((self.project / load_extension(self.project, target).pin_dir).absolute(), target)

    def toolchain(self, manifest: Manifest) -> Toolchain:
        return self._toolchain

    def check_tools(self, manifest: Manifest, toolchain: Toolchain, *, pin: bool, objectives: list[Objective],
                    needs_benchmark: bool) -> None:
        check_tune(manifest, toolchain, pin=pin, objectives=objectives, needs_benchmark=needs_benchmark, cmake=False)

    def make_tree(self, manifest: Manifest, root: Path, toolchain: Toolchain, *, fast_path: bool,
                  replayed_cache: str | None = None) -> ExtensionTree:
        """An extension folder: build_ext runs nvcc whole (no ptxas-only path), with nothing to replay."""
        return ExtensionTree(manifest, root, toolchain)

    def source_set(self, manifest: Manifest) -> SourceSet:
        """The sources' fingerprint, with the project's Python files: setup.py makes the nvcc command, bench.py
        measures, and a change to either must not reuse journaled measurements (CMake's graph covers both); its
        Cython sources too (a .pyx beside the kernels is compiled into the module a benchmark imports)."""
        return SourceSet(manifest, project_suffixes=frozenset({".py", ".pyx", ".pxd", ".pxi"}))

    def build_pinned(self, manifest: Manifest, timeout: float) -> proc.ProcResult:
        return proc.run(self._plain_build, timeout, cwd=self.project,
                        env={**os.environ, "CIQ_NVCC": str(self._toolchain.nvcc)})

    def toolkit_rule(self) -> tuple[str, str]:
        if explicit_nvcc(os.environ) is not None:
            return "chosen by $CIQ_NVCC (else $CUDACXX)", "set CIQ_NVCC=<its nvcc>"
        return ("chosen as the first of: the PyPI toolkit, $CUDA_HOME, $CUDA_PATH, PATH", "set CIQ_NVCC=<its nvcc>")

    def rebuild_hint(self, manifest: Manifest) -> str:
        return (f"rebuild ({shlex.join(self._plain_build)} in {self.project}) and look for a warning from ciq_build in "
                "its output (a skipped pin says why)")

    def command(self, name: str, target: str) -> str:
        return f"python -m ciq_build {name} {shlex.quote(target)} --setuptools {shlex.quote(str(self.project))}"

    @property
    def _plain_build(self) -> list[str]:
        """The build a user runs, whose build_temp is the manifest's object folder."""
        return [sys.executable, "setup.py", "build_ext"]
