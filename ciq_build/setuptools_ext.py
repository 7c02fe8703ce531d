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

import copy
import hashlib
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from setuptools import Extension
from setuptools.command.build_ext import build_ext as _setuptools_build_ext
from setuptools.errors import CompileError, SetupError

from ciq_build.compiler import gencode
from ciq_build.compiler.controls import options_file_line
from ciq_build.compiler.toolchain import Toolchain, default_cache_dir, find_toolchain, split_arch, split_architectures
from ciq_build.core.constraints import parse_constraints
from ciq_build.core.objectives import parse_objectives
from ciq_build.core.params import parse_params
from ciq_build.core.rules import is_target_name, load_rules
from ciq_build.core.settings import TIMEOUT_RULE, timeout_seconds
from ciq_build.errors import CiqError, ConfigError, ToolchainError
from ciq_build.measure import proc
from ciq_build.pin.apply import BuildPin, gencode_options_file, resolve_build_pin
from ciq_build.project.manifest import args_set_problem
from ciq_build.state.durable import atomic_write

__all__ = ["BuildPin", "CudaExtension", "build_ext", "cudart_static", "resolve_pin"]

# Seconds one nvcc compile of one .cu file may take before it is killed.
DEFAULT_NVCC_TIMEOUT = 1800.0

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


class CudaExtension(Extension):
    """A setuptools Extension whose ``.cu`` sources are compiled by nvcc with a tuned target's pin.

    `ciq_target` names the pinned record ``<pin_dir>/<ciq_target>.json``; a
    relative `pin_dir` is taken from the directory setup.py runs in (as
    setuptools takes `sources`). `cuda_architectures` uses CMake's spelling
    ("90a" = SASS + PTX, "90a-real", "90a-virtual"); empty means nvcc's
    default. `nvcc_flags` are your own extra nvcc arguments (not checked: they
    come from setup.py, not from a pin). `allow_numerics` lets a pin carry
    flags that change floating-point results (CMake's ALLOW_NUMERICS).
    `params` are the target's source parameters, as in ciq_tune_target(PARAMS
    ...): a pin may define only these names, with values from their domains.
    Headers the .cu files include belong in `depends`, so that editing them
    recompiles. `ciq_benchmark` (a command line, e.g. ``[sys.executable,
    "bench.py"]``, run from the project), `ciq_benchmark_args_sets` (several
    problem sizes: ``{"small": ["-n", "1024"], ...}``, each size's arguments
    after ciq_benchmark's) and `ciq_score` ("geomean" or "worst"),
    `ciq_objectives`, `ciq_search_space`, `ciq_constraints`, `ciq_seeds` and
    `ciq_timeout` are read only by ``python -m ciq_build tune <ciq_target>
    --setuptools .`` (ciq_build.setuptools_tune), as ciq_tune_target()'s
    BENCHMARK/ARGS, ARGS_SETS, SCORE, OBJECTIVES, SEARCH_SPACE, CONSTRAINTS,
    SEEDS and TIMEOUT.
    """

    def __init__(
        self,
        name: str,
        sources: Sequence[str | os.PathLike[str]],
        *args: Any,
        ciq_target: str,
        pin_dir: str | os.PathLike[str] = "ciq",
        cuda_architectures: Iterable[str] = (),
        nvcc_flags: Iterable[str] = (),
        allow_numerics: bool = False,
        params: Iterable[str] = (),
        nvcc_timeout: float = DEFAULT_NVCC_TIMEOUT,
        ciq_benchmark: Sequence[str] | None = None,
        ciq_objectives: Iterable[str] = (),
        ciq_search_space: Iterable[str] = (),
        ciq_constraints: Iterable[str] = (),
        ciq_seeds: Iterable[str] = (),
        ciq_benchmark_args_sets: Mapping[str, Sequence[str]] | None = None,
        ciq_score: str = "geomean",
        ciq_timeout: float = 60.0,
        **kwargs: Any,
    ) -> None:
        if not is_target_name(ciq_target):
            raise ConfigError(
                f"CudaExtension({name!r}): ciq_target {ciq_target!r} must be a plain target name "
                "(letters, digits, _ . + -), which names the pinned record <pin_dir>/<ciq_target>.json."
            )
        if isinstance(cuda_architectures, str):
            cuda_architectures = split_architectures(cuda_architectures)
        architectures = tuple(str(a) for a in cuda_architectures)
        for arch in architectures:
            _gencode(arch)  # refuse a misspelt architecture when setup.py is read, not mid-build
        if isinstance(nvcc_flags, str):
            raise ConfigError(
                f"CudaExtension({name!r}): nvcc_flags is a list of arguments, not the string {nvcc_flags!r}"
            )
        nvcc_seconds = _timeout(name, "nvcc_timeout", nvcc_timeout)
        super().__init__(name, [os.fspath(s) for s in sources], *args, **kwargs)
        if not any(_is_cuda(s) for s in self.sources):
            raise ConfigError(f"CudaExtension({name!r}) has no .cu source; list the kernels' .cu files in sources.")
        self.ciq_target = ciq_target
        self.pin_dir = os.fspath(pin_dir)
        self.cuda_architectures = architectures
        self.nvcc_flags = tuple(str(f) for f in nvcc_flags)
        self.allow_numerics = bool(allow_numerics)
        if isinstance(params, str):
            raise ConfigError(f"CudaExtension({name!r}): params is a list of PARAMS entries, not the string {params!r}")
        self.params = tuple(str(p) for p in params)
        self.nvcc_timeout = nvcc_seconds
        # What `python -m ciq_build tune <ciq_target> --setuptools .` needs (ciq_build.setuptools_tune),
        # as ciq_tune_target()'s BENCHMARK/ARGS, OBJECTIVES, SEARCH_SPACE and TIMEOUT; the build ignores them.
        for what, value in (("ciq_benchmark", ciq_benchmark), ("ciq_objectives", ciq_objectives),
                            ("ciq_search_space", ciq_search_space), ("ciq_constraints", ciq_constraints),
                            ("ciq_seeds", ciq_seeds)):
            if isinstance(value, str):
                raise ConfigError(f"CudaExtension({name!r}): {what} is a list of strings, not the string {value!r}")
        if ciq_benchmark is not None and not ciq_benchmark:
            raise ConfigError(f"CudaExtension({name!r}): ciq_benchmark is a command line, e.g. "
                              '[sys.executable, "bench.py"]; leave it out for static objectives only')
        ciq_seconds = _timeout(name, "ciq_timeout", ciq_timeout)
        self.ciq_benchmark = None if ciq_benchmark is None else tuple(str(a) for a in ciq_benchmark)
        self.ciq_objectives = tuple(str(o) for o in ciq_objectives)
        self.ciq_search_space = tuple(str(s) for s in ciq_search_space)
        self.ciq_constraints = tuple(str(c) for c in ciq_constraints)
        self.ciq_seeds = tuple(str(s) for s in ciq_seeds)  # SEEDS: paths relative to the project
        self.ciq_benchmark_args_sets = _args_sets(name, ciq_benchmark_args_sets, ciq_benchmark)
        if ciq_score not in load_rules().words["score"]:
            raise ConfigError(f"CudaExtension({name!r}): ciq_score {ciq_score!r} is not one of "
                              f"{', '.join(load_rules().words['score'])} (how the sizes' ratios make one score)")
        self.ciq_score = ciq_score
        # What configure checks in a ciq_tune_target() call, checked when setup.py is read, not first at tune.
        try:
            parse_constraints(self.ciq_constraints, parse_params(self.params))
            if self.ciq_objectives:
                parse_objectives(list(self.ciq_objectives))
        except ConfigError as error:
            raise ConfigError(f"CudaExtension({name!r}): {error}") from None
        self.ciq_timeout = ciq_seconds


def _args_sets(name: str, sets: Mapping[str, Sequence[str]] | None,
               benchmark: Sequence[str] | None) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """ciq_benchmark_args_sets as ARGS_SETS: each size's name and the arguments it adds to ciq_benchmark."""
    if sets is None:
        return ()
    if not isinstance(sets, Mapping) or not sets:
        raise ConfigError(f"CudaExtension({name!r}): ciq_benchmark_args_sets maps each size's name to the "
                          "arguments it adds to ciq_benchmark, e.g. {\"small\": [\"-n\", \"1024\"], \"large\": "
                          "[\"-n\", \"65536\"]}")
    if benchmark is None:
        raise ConfigError(f"CudaExtension({name!r}): ciq_benchmark_args_sets are arguments of ciq_benchmark; "
                          "give ciq_benchmark too")
    out: list[tuple[str, tuple[str, ...]]] = []
    for size, args in sets.items():
        problem = args_set_problem(str(size), [known for known, _ in out])
        if problem:
            raise ConfigError(f"CudaExtension({name!r}): ciq_benchmark_args_sets: {problem}")
        if isinstance(args, str) or not isinstance(args, Sequence):
            raise ConfigError(f"CudaExtension({name!r}): ciq_benchmark_args_sets[{size!r}] is a list of "
                              f"arguments, not {args!r}")
        out.append((str(size), tuple(str(a) for a in args)))
    return tuple(out)


def _timeout(name: str, what: str, value: object) -> float:
    """An extension's timeout argument in seconds, by the rule every timeout follows (BenchSpec's)."""
    seconds = timeout_seconds(value)
    if seconds is None:
        raise ConfigError(f"CudaExtension({name!r}): {what} must be {TIMEOUT_RULE}, not {value!r}")
    return seconds


def _is_cuda(source: str | os.PathLike[str]) -> bool:
    return os.fspath(source).endswith(".cu")


def _gencode(arch: str) -> str:
    """nvcc's -gencode for one CMake-style architecture ("90a", "90a-real", "sm_100a")."""
    try:
        number, suffix = split_arch(arch)
    except ToolchainError as exc:
        raise ConfigError(f"cuda_architectures: {exc}") from None
    codes = {"-real": f"sm_{number}", "-virtual": f"compute_{number}"}.get(suffix, f"[compute_{number},sm_{number}]")
    return f"-gencode=arch=compute_{number},code={codes}"


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


def _explicit_nvcc(env: Mapping[str, str]) -> Path | None:
    for variable in ("CIQ_NVCC", "CUDACXX"):
        if env.get(variable):
            return Path(env[variable])
    return None


def _toolkit_roots(toolchain: Toolchain) -> list[Path]:
    # nvcc may be a wrapper (/usr/local/bin/nvcc); ptxas always sits in the real bin/.
    roots = [
        toolchain.nvcc.parent.parent,
        toolchain.nvcc.resolve().parent.parent,
        toolchain.ptxas.resolve().parent.parent,
    ]
    return list(dict.fromkeys(roots))


def cudart_static(toolchain: Toolchain) -> Path:
    """The toolkit's libcudart_static.a (lib/, lib64/ or targets/<arch>/lib/)."""
    tried = []
    for root in _toolkit_roots(toolchain):
        for lib in ("lib", "lib64", "targets/x86_64-linux/lib", "targets/sbsa-linux/lib"):
            candidate = root / lib / "libcudart_static.a"
            if candidate.is_file():
                return candidate
            tried.append(str(candidate))
    raise ToolchainError(
        f"no static CUDA runtime (libcudart_static.a) in the toolkit of {toolchain.nvcc} "
        f"(looked at {', '.join(tried)}). Install a complete toolkit "
        '(pip install "ciq-build[cuda]"), or point CIQ_NVCC at the nvcc of one.'
    )


def _toolkit_include(toolchain: Toolchain) -> list[str]:
    for root in _toolkit_roots(toolchain):
        if (root / "include" / "cuda_runtime.h").is_file():
            return [str(root / "include")]
    return []


# ---------------------------------------------------------------- the command


def _object_for(source: str, build_temp: Path) -> Path:
    """<build_temp>/<source path without its anchor>.o; ".cu.o" keeps kern.cu and kern.cpp apart."""
    relative = Path(source)
    if relative.is_absolute():
        relative = relative.relative_to(relative.anchor)
    parts = [p for p in relative.parts if p not in ("..", ".")]
    return build_temp.joinpath(*parts).with_name(relative.name + ".o")


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


class build_ext(_setuptools_build_ext):  # noqa: N801 - setuptools' own name for the command
    """setuptools' build_ext, compiling a CudaExtension's .cu files with nvcc and the target's pin."""

    def build_extension(self, ext: Extension) -> None:
        if not isinstance(ext, CudaExtension):
            super().build_extension(ext)
            return
        try:
            host_ext = self._build_cuda_objects(ext)
        except CiqError as exc:
            raise SetupError(f"{ext.name}: {exc}") from exc
        super().build_extension(host_ext)

    def _toolchain(self) -> Toolchain:
        found = getattr(self, "_ciq_toolchain", None)
        if found is None:
            found = find_toolchain(_explicit_nvcc(os.environ))
            self._ciq_toolchain = found
        return found

    def _build_cuda_objects(self, ext: CudaExtension) -> Extension:
        """Compile `ext`'s .cu files; return a copy of `ext` for setuptools that links them in."""
        toolchain = self._toolchain()
        build_temp = Path(self.build_temp).absolute()
        options, pin_depends, launcher = self._options_file(ext, toolchain, build_temp)

        cuda_sources = [os.fspath(s) for s in ext.sources if _is_cuda(s)]
        # The record and its ACF: same path, new content must recompile.
        depends = [options, *pin_depends, *(Path(d) for d in ext.depends)]
        objects = []
        for source in cuda_sources:
            obj = _object_for(source, build_temp)
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

        host_ext = copy.copy(ext)
        host_ext.sources = [s for s in ext.sources if not _is_cuda(s)]
        # Objects in `depends`: a recompiled kernel relinks the module even when no host source changed.
        host_ext.depends = [*ext.depends, *cuda_sources, *(str(o) for o in objects)]
        host_ext.extra_objects = [*ext.extra_objects, *(str(o) for o in objects), str(cudart_static(toolchain))]
        host_ext.libraries = [*ext.libraries, *(lib for lib in _CUDART_STATIC_LIBS if lib not in ext.libraries)]
        host_ext.include_dirs = [*ext.include_dirs, *_toolkit_include(toolchain)]
        return host_ext

    def _options_file(self, ext: CudaExtension, toolchain: Toolchain,
                      build_temp: Path) -> tuple[Path, list[Path], list[str]]:
        """The options file the .cu compiles read (written from the pin), the files they depend on,
        and the launcher to put before nvcc (empty unless the pin's architectures differ).

        A tune (ciq_build.setuptools_tune) hands its candidate's file instead, as CIQ_TUNE_OPTIONS_FILE does in CMake.
        """
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
        return proc.run(command, timeout)

    def _nvcc_command(
        self, ext: CudaExtension, toolchain: Toolchain, source: str, obj: Path, options: Path
    ) -> list[str]:
        command = [str(toolchain.nvcc), "-c", source, "-o", str(obj), "-Xcompiler", "-fPIC"]
        host = os.environ.get("CUDAHOSTCXX")
        if host:
            command += ["-ccbin", host]
        command += [_gencode(arch) for arch in ext.cuda_architectures]
        for name, value in ext.define_macros:
            command.append(f"-D{name}" if value is None else f"-D{name}={value}")
        command += [f"-U{name}" for name in ext.undef_macros]
        command += [f"-I{d}" for d in ext.include_dirs]
        command += list(ext.nvcc_flags)
        # Last, so that a pinned -D or flag wins over the same one given above.
        command.append(f"--options-file={options}")
        return command
