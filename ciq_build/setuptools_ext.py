"""setuptools integration: CUDA extensions whose .cu files get a target's pinned controls.

For projects that build CUDA through setuptools rather than CMake::

    from setuptools import setup
    from ciq_build.setuptools_ext import CudaExtension, build_ext

    setup(
        ext_modules=[CudaExtension("pkg._kern", sources=["pkg/kern.cu", "pkg/mod.cpp"],
                                   ciq_target="kern", pin_dir="ciq", cuda_architectures=["90a"])],
        cmdclass={"build_ext": build_ext},
    )

`build_ext` compiles the extension's ``.cu`` sources with nvcc and links the
objects, with the toolkit's static cudart, into the extension that setuptools
builds from the other sources as usual. The pin reaches nvcc the same way as in
the CMake build (docs/ARCHITECTURE.md): a per-target options file,
``<build_temp>/<target>.nvcc-options``, written from the validated record
``<pin_dir>/<target>.json`` (empty without a pin) and passed to the CUDA
compiles only with ``--options-file``. Environment: CIQ_DISABLE=1 ignores
pins; CIQ_STRICT=1 turns a toolkit mismatch into an error; CIQ_NVCC (or
CUDACXX, CMake's variable) names the nvcc to use; CUDAHOSTCXX the host compiler.
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, NamedTuple

from setuptools import Extension
from setuptools.command.build_ext import build_ext as _setuptools_build_ext
from setuptools.errors import CompileError, SetupError

from ciq_build.compiler import gencode
from ciq_build.compiler.controls import options_file_line
from ciq_build.compiler.toolchain import Toolchain, default_cache_dir, find_toolchain
from ciq_build.core.rules import load_rules
from ciq_build.errors import CiqError, ToolchainError
from ciq_build.measure import proc
from ciq_build.pin.apply import BuildPin, gencode_options_file, resolve_build_pin
from ciq_build.project.cuda_extension import CudaExtension, explicit_nvcc, gencode_flag, is_cuda_source, object_for
from ciq_build.state.durable import atomic_write

__all__ = ["BuildPin", "CudaExtension", "build_ext", "cudart_static", "resolve_pin"]

_TRUE = ("1", "on", "true", "yes")

# What static cudart needs from the system (as CMake's CUDA::cudart_static links).
_CUDART_STATIC_LIBS = ("dl", "pthread", "rt")


def _plain_error(kind: type[BaseException], error: BaseException, trace: Any, previous: Any = sys.excepthook) -> None:
    """`python setup.py ...` with a mistake CudaExtension() refuses (a misspelt objective, say): one line
    saying what to do, as setuptools itself says its errors, instead of a traceback. Only a ciq_build error
    that nothing caught comes here (`tune --setuptools` catches them and says them its own way)."""
    if isinstance(error, CiqError):
        print(f"error: {error}", file=sys.stderr, flush=True)
    else:
        previous(kind, error, trace)


sys.excepthook = _plain_error


def _env_flag(env: Mapping[str, str], name: str) -> bool:
    return env.get(name, "").strip().lower() in _TRUE


def _say(text: str) -> None:
    # stderr, not warnings.warn: a build message must never become an exception
    # in a caller that turns warnings into errors.
    print(f"ciq_build: {text}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- the pin


def resolve_pin(
    target: str,
    pin_dir: Path,
    toolchain: Toolchain,
    architectures: Sequence[str],
    *,
    params: Sequence[str] = (),
    allow_numerics: bool = False,
    copy_dir: Path,
    env: Mapping[str, str] | None = None,
) -> BuildPin:
    """What `target`'s pin applies, decided by the rule book exactly as the CMake module does.

    RecordError for an unsafe or broken record, for a toolkit or architecture
    mismatch under CIQ_STRICT=1, and for an nvcc ACF with architectures below
    sm_100 (resolve_build_pin's rule, the CMake module's too); a plain mismatch is
    printed as a warning and the pin skipped.
    """
    environ = os.environ if env is None else env
    decision = resolve_build_pin(
        target, Path(pin_dir), params=params, allow_numerics=allow_numerics, cuda=toolchain.major_minor,
        ptxas=toolchain.ptxas_version, architectures=architectures,
        strict=_env_flag(environ, "CIQ_STRICT"), disabled=_env_flag(environ, "CIQ_DISABLE"), copy_dir=copy_dir,
    )
    if decision.status == "skipped":
        _say(f"warning: {decision.warning} (CIQ_STRICT=1 makes this an error.)")
    return replace(decision, message=f"{target}: {decision.message}")


def _acf_copy_dir(build_temp: Path) -> Path:
    """Where an ACF whose path nvcc cannot pass on goes: the build tree, or (when the build
    tree's own path has spaces or shell characters) ciq_build's cache directory."""
    preferred = build_temp / "ciq"
    if load_rules().matches("nvcc_path", str(preferred / "x.acf")):
        return preferred
    return default_cache_dir() / "acf-copies" / hashlib.sha256(str(build_temp).encode()).hexdigest()[:16]


def _options_text(arguments: Sequence[str]) -> str:
    return "".join(options_file_line(arg) + "\n" for arg in arguments)


def _write_options_if_changed(path: Path, arguments: Sequence[str]) -> None:
    """Rewrite the options file only when its content changes, so its mtime means "controls changed"."""
    text = _options_text(arguments)
    try:
        if path.read_text(encoding="utf-8") == text:
            return
    except OSError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, text)


# ---------------------------------------------------------------- toolkit


def cudart_static(toolchain: Toolchain) -> Path:
    """The toolkit's libcudart_static.a (lib/, lib64/ or targets/<arch>/lib/)."""
    tried = []
    for lib in toolchain.library_dirs():
        candidate = lib / "libcudart_static.a"
        if candidate.is_file():
            return candidate
        tried.append(str(candidate))
    raise ToolchainError(
        f"no static CUDA runtime (libcudart_static.a) in the toolkit of {toolchain.nvcc} "
        f"(looked at {', '.join(tried)}). Install a complete toolkit "
        '(pip install "ciq-build[cuda]"), or point CIQ_NVCC at the nvcc of one.'
    )


class ToolkitLink(NamedTuple):
    """How an extension links the toolkit's libraries it names (toolkit_libraries)."""

    libraries: list[str]  # left to -l
    library_dirs: list[str]  # the toolkit's folders holding them
    files: list[str]  # linked by their soname file (no development name)
    shared_dirs: list[Path]  # the folders of the shared ones, which the module loads them from at run time


def installed_run_paths(module: str, shared_dirs: Sequence[Path]) -> list[str]:
    """Where the module `module` ("pkg._kern"), installed by pip, finds the pip toolkit's shared libraries it
    links (cuBLAS): the same nvidia/<package>/lib of site-packages, relative to the module's folder ($ORIGIN).
    The build's own folder is gone once an isolated build ends; a toolkit elsewhere (/usr/local/cuda) is the
    loader's, as nvcc's own link leaves it."""
    up = "../" * module.count(".")
    return [f"$ORIGIN/{up}{Path(*folder.parts[-3:]).as_posix()}" for folder in shared_dirs
            if len(folder.parts) > 3 and folder.parents[1].name == "nvidia"]


def toolkit_libraries(libraries: Sequence[str], toolchain: Toolchain) -> ToolkitLink:
    """How the link finds those of an extension's `libraries` that the toolkit holds (cuBLAS: "cublas").

    nvcc's own link passes -L with the toolkit's library folder; setuptools links with the host compiler,
    which knows no toolkit, so the folders holding them go on the link line. The PyPI toolkit ships its
    libraries by soname only (libcublas.so.13), which -lcublas cannot find: such a library is linked by its
    file instead (the module still loads it by that soname).
    """
    folders = [folder for folder in toolchain.library_dirs() if folder.is_dir()]
    link = ToolkitLink([], [], [], [])
    for name in libraries:
        found = _toolkit_library(name, folders)
        if found is None or found.name in (f"lib{name}.so", f"lib{name}.a"):
            link.libraries.append(name)  # -l finds it (in the folder added below, or where the system keeps it)
        else:
            link.files.append(str(found))
        if found is not None and str(found.parent) not in link.library_dirs:
            link.library_dirs.append(str(found.parent))
        if found is not None and found.suffix != ".a" and found.parent not in link.shared_dirs:
            link.shared_dirs.append(found.parent)
    return link


def _toolkit_library(name: str, folders: Sequence[Path]) -> Path | None:
    """The first of the toolkit's `folders` holding library `name`: its development name (libNAME.so,
    libNAME.a), else its soname (libNAME.so.<major>, the shortest where there are several); None when none does."""
    for folder in folders:
        for development in (folder / f"lib{name}.so", folder / f"lib{name}.a"):
            if development.exists():
                return development
        sonames = [path for path in folder.glob(f"lib{name}.so.*") if path.name[len(f"lib{name}.so."):].isdigit()]
        if sonames:
            return min(sonames, key=lambda path: len(path.name))
    return None


def _toolkit_include(toolchain: Toolchain) -> list[str]:
    for root in toolchain.roots():
        if (root / "include" / "cuda_runtime.h").is_file():
            return [str(root / "include")]
    return []


# ---------------------------------------------------------------- the command


def _stale(obj: Path, inputs: Iterable[Path]) -> bool:
    try:
        built = obj.stat().st_mtime_ns
    except OSError:
        return True
    for path in inputs:
        try:
            if path.stat().st_mtime_ns > built:
                return True
        except OSError:
            return True  # a missing input: let nvcc say what is wrong
    return False


def host_extension(ext: CudaExtension) -> Extension:
    """A plain setuptools Extension with everything `ext` has, for setuptools to build the host sources and link.

    Plain, not a copy of the CudaExtension: with Cython installed, setuptools' build_ext is Cython's, which
    cythonizes a .pyx source (py-faster-rcnn's gpu_nms.pyx beside its nms_kernel.cu) by making a new extension
    of the same class from the distutils arguments alone (`type(ext)(name=..., sources=...)`); a CudaExtension
    cannot be made without its ciq_target, and the build failed with a TypeError.
    """
    host = Extension.__new__(Extension)
    host.__dict__.update(vars(ext))
    return host


class build_ext(_setuptools_build_ext):  # noqa: N801 - setuptools' own name for the command
    """setuptools' build_ext, compiling a CudaExtension's .cu files with nvcc and the target's pin."""

    # A tune's candidate build (build_candidate): this options file in place of the pin's, as CMake's
    # CIQ_TUNE_OPTIONS_FILE, and nvcc's output echoed (the static metrics are read from it).
    candidate_options: Path | None = None

    def build_extension(self, ext: Extension) -> None:
        if not isinstance(ext, CudaExtension):
            super().build_extension(ext)
            return
        try:
            host_ext = self.build_cuda_objects(ext)
        except CiqError as exc:
            raise SetupError(f"{ext.name}: {exc}") from exc
        super().build_extension(host_ext)

    def _toolchain(self) -> Toolchain:
        found = getattr(self, "_ciq_toolchain", None)
        if found is None:
            found = find_toolchain(explicit_nvcc(os.environ))
            self._ciq_toolchain = found
        return found

    def build_cuda_objects(self, ext: CudaExtension) -> Extension:
        """Compile `ext`'s .cu files; return `ext` as a plain Extension (host_extension) that links them in."""
        toolchain = self._toolchain()
        build_temp = Path(self.build_temp).absolute()
        options, pin_depends, launcher = self._options_file(ext, toolchain, build_temp)

        cuda_sources = [os.fspath(s) for s in ext.sources if is_cuda_source(s)]
        # The record and its ACF: same path, new content must recompile.
        depends = [options, *pin_depends, *(Path(d) for d in ext.depends)]
        objects = []
        for source in cuda_sources:
            obj = object_for(source, build_temp)
            command = [*launcher, *self._nvcc_command(ext, toolchain, source, obj, options)]
            objects.append(obj)
            # The command itself (nvcc, version, architectures, flags) is part of what the object depends on.
            stamp = obj.with_name(obj.name + ".cmd")
            signature = hashlib.sha256("\0".join([toolchain.version, *command]).encode()).hexdigest()
            if (
                not self.force
                and not _stale(obj, [Path(source), *depends])
                and stamp.is_file()
                and stamp.read_text(encoding="utf-8") == signature
            ):
                continue
            obj.parent.mkdir(parents=True, exist_ok=True)
            stamp.unlink(missing_ok=True)
            _say(f"{ext.ciq_target}: nvcc {source}")
            result = self._run_nvcc(command, ext.nvcc_timeout)
            if not result.ok:
                raise CompileError(
                    f"nvcc failed to compile {source} for {ext.name} ({result.describe()}):\n"
                    f"{result.output_tail()}\ncommand: {' '.join(command)}"
                )
            atomic_write(stamp, signature)

        host_ext = host_extension(ext)
        host_ext.sources = [s for s in ext.sources if not is_cuda_source(s)]
        # nvcc's objects are C++ (as is the static cudart): link with the C++ driver, which adds libstdc++, even
        # where no host source says so (an extension of .cu files alone would else link with the C driver and
        # fail to load: undefined __gxx_personality_v0).
        host_ext.language = ext.language or "c++"
        # Objects in `depends`: a recompiled kernel relinks the module even when no host source changed.
        host_ext.depends = [*ext.depends, *cuda_sources, *(str(o) for o in objects)]
        host_ext.extra_objects = [*ext.extra_objects, *(str(o) for o in objects), str(cudart_static(toolchain))]
        link = toolkit_libraries(ext.libraries, toolchain)
        host_ext.extra_objects += link.files
        host_ext.library_dirs = [*ext.library_dirs, *(f for f in link.library_dirs if f not in ext.library_dirs)]
        host_ext.libraries = [*link.libraries, *(lib for lib in _CUDART_STATIC_LIBS if lib not in link.libraries)]
        host_ext.runtime_library_dirs = [*ext.runtime_library_dirs, *installed_run_paths(ext.name, link.shared_dirs)]
        host_ext.include_dirs = [*ext.include_dirs, *_toolkit_include(toolchain)]
        return host_ext

    def _options_file(self, ext: CudaExtension, toolchain: Toolchain,
                      build_temp: Path) -> tuple[Path, list[Path], list[str]]:
        """The options file the .cu compiles read (written from the pin), the files they depend on,
        and the launcher to put before nvcc (empty unless the pin's architectures differ).

        A tune's candidate build hands its own file instead (`candidate_options`), as CIQ_TUNE_OPTIONS_FILE
        does in CMake: one candidate's controls for every architecture, so no launcher.
        """
        if self.candidate_options is not None:
            return self.candidate_options, [], []
        pin_dir = Path(ext.pin_dir).absolute()
        decision = resolve_pin(
            ext.ciq_target, pin_dir, toolchain, ext.cuda_architectures, params=ext.params,
            allow_numerics=ext.allow_numerics, copy_dir=_acf_copy_dir(build_temp),
        )
        _say(decision.message)
        options = build_temp / f"{ext.ciq_target}.nvcc-options"
        _write_options_if_changed(options, decision.arguments)
        depends = list(decision.depends)
        # A pin whose architectures have different controls: each one's own arguments beside the
        # options file, applied to its own cicc and ptxas by ciq_build's gencode launcher (as in CMake).
        launcher: list[str] = []
        if decision.per_architecture:
            launcher = [sys.executable, "-I", "-S", str(Path(gencode.__file__).resolve())]
            for arch, arguments in decision.per_architecture:
                arch_file = gencode_options_file(options, arch)
                _write_options_if_changed(arch_file, arguments)
                depends.append(arch_file)
                launcher.append(f"--arch={arch}={arch_file}")
            launcher.append("--")
        return options, depends, launcher

    def _run_nvcc(self, command: list[str], timeout: float) -> proc.ProcResult:
        result = proc.run(command, timeout)
        if self.candidate_options is not None:
            sys.stdout.write(result.stdout + result.stderr)  # a tune reads the static metrics from this
        return result

    def _nvcc_command(
        self, ext: CudaExtension, toolchain: Toolchain, source: str, obj: Path, options: Path
    ) -> list[str]:
        command = [str(toolchain.nvcc), "-c", source, "-o", str(obj), "-Xcompiler", "-fPIC"]
        host = os.environ.get("CUDAHOSTCXX")
        if host:
            command += ["-ccbin", host]
        command += [gencode_flag(arch) for arch in ext.cuda_architectures]
        for name, value in ext.define_macros:
            command.append(f"-D{name}" if value is None else f"-D{name}={value}")
        command += [f"-U{name}" for name in ext.undef_macros]
        command += [f"-I{d}" for d in ext.include_dirs]
        command += list(ext.nvcc_flags)
        # Last, so that a pinned -D or flag wins over the same one given above.
        command.append(f"--options-file={options}")
        return command

