"""A setuptools target: `CudaExtension`, the Extension whose .cu sources ciq_build compiles and tunes.

What a setup.py says about one tuned target (its ``ciq_target``, pin folder,
architectures, PARAMS and what a tune of it runs), checked when setup.py is
read, as configure checks a ciq_tune_target() call; and the rules both its
build (ciq_build.setuptools_ext's `build_ext`) and its tune
(ciq_build.project.setuptools_backend) follow: which sources nvcc compiles,
where each one's object goes, which nvcc is explicitly asked for. Users
import it from ciq_build.setuptools_ext.
"""

from __future__ import annotations

import inspect
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from setuptools import Extension

from ciq_build.compiler.architectures import split_arch, split_architectures
from ciq_build.core.constraints import parse_constraints
from ciq_build.core.metric_unit import DEFAULT_METRIC_UNIT
from ciq_build.core.objectives import parse_objectives
from ciq_build.core.params import parse_params
from ciq_build.core.rules import is_target_name, load_rules, nearest
from ciq_build.core.settings import TIMEOUT_RULE, timeout_seconds
from ciq_build.errors import ConfigError, ToolchainError
from ciq_build.measure.protocol import compile_metric_regex
from ciq_build.project.manifest import args_set_problem
from ciq_build.project.per_block import DYNAMIC_SHARED, THREADS, Setting, read_declared

# Seconds one nvcc compile of one .cu file may take before it is killed.
DEFAULT_NVCC_TIMEOUT = 1800.0


class CudaExtension(Extension):
    """A setuptools Extension whose ``.cu`` sources are compiled by nvcc with a tuned target's pin.

    `ciq_target` names the pinned record ``<pin_dir>/<ciq_target>.json``; a
    relative `pin_dir` is taken from the directory setup.py runs in (as
    setuptools takes `sources`). `cuda_architectures` uses CMake's spelling
    ("90a" = SASS + PTX, "90a-real", "90a-virtual"); empty means nvcc's
    default. `nvcc_flags` are your own extra nvcc arguments (not checked: they
    come from setup.py, not from a pin); `extra_compile_args` reach the host
    compiles, or, as a dict (PyTorch's CUDAExtension's form), its "nvcc" list
    nvcc's and its "cxx" (or "gcc") list the host's. `allow_numerics` lets a pin carry
    flags that change floating-point results (CMake's ALLOW_NUMERICS).
    `params` are the target's source parameters, as in ciq_tune_target(PARAMS
    ...): a pin may define only these names, with values from their domains.
    Headers the .cu files include belong in `depends`, so that editing them
    recompiles. `ciq_benchmark` (a command line, e.g. ``[sys.executable,
    "bench.py"]``, run from the project), `ciq_benchmark_args_sets` (several
    problem sizes: ``{"small": ["-n", "1024"], ...}``, each size's arguments
    after ciq_benchmark's) and `ciq_score` ("geomean" or "worst"),
    `ciq_objectives`, `ciq_search_space`, `ciq_constraints`, `ciq_seeds` and
    `ciq_timeout`, `ciq_metric` and `ciq_unit` are read only by ``python -m ciq_build tune <ciq_target>
    --setuptools .`` (ciq_build.project.setuptools_backend), as ciq_tune_target()'s
    BENCHMARK/ARGS, ARGS_SETS, SCORE, OBJECTIVES, SEARCH_SPACE, CONSTRAINTS,
    SEEDS, TIMEOUT, METRIC and UNIT; `ciq_threads_per_block` too, as THREADS_PER_BLOCK (the
    kernels' block size, which the occupancy objective needs): ``256``, a
    params name (``"BLOCK"``, or ``("BLOCK", 512)`` with the defaults' threads)
    or an expression over params names (``"(128/TM)*(128/TN)"``); and
    `ciq_dynamic_shared_memory` as DYNAMIC_SHARED_MEMORY (the bytes of
    ``extern __shared__`` a block takes at launch, in the same forms).
    """

    def __init__(
        self,
        name: str,
        sources: Sequence[str | os.PathLike[str]],
        *args: Any,
        ciq_target: str | None = None,
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
        ciq_threads_per_block: int | str | Sequence[int | str] | None = None,
        ciq_dynamic_shared_memory: int | str | Sequence[int | str] | None = None,
        ciq_metric: str | None = None,
        ciq_unit: str | None = None,
        **kwargs: Any,
    ) -> None:
        if ciq_target is None:
            # Cython's cythonize() remakes each extension it is given from its setuptools arguments alone
            # (`type(ext)(name=..., sources=...)`): Python's own "missing 1 required keyword-only argument:
            # 'ciq_target'" blamed a setup.py that gave it.
            raise ConfigError(
                f"CudaExtension({name!r}) needs ciq_target=, the tuned target's name. Given in setup.py? Cython's "
                "cythonize() remakes each extension without it: list the .pyx in the CudaExtension's sources and "
                "leave it out of cythonize() (setuptools cythonizes it, with Cython installed)"
            )
        if not is_target_name(ciq_target):
            raise ConfigError(
                f"CudaExtension({name!r}): ciq_target {ciq_target!r} must be a plain target name "
                "(letters, digits, _ . + -), which names the pinned record <pin_dir>/<ciq_target>.json."
            )
        if isinstance(cuda_architectures, str):
            cuda_architectures = split_architectures(cuda_architectures)
        architectures = tuple(str(a) for a in cuda_architectures)
        for arch in architectures:
            gencode_flag(arch)  # refuse a misspelt architecture when setup.py is read, not mid-build
        if isinstance(nvcc_flags, str):
            raise ConfigError(
                f"CudaExtension({name!r}): nvcc_flags is a list of arguments, not the string {nvcc_flags!r}"
            )
        nvcc_seconds = _timeout(name, "nvcc_timeout", nvcc_timeout)
        _refuse_unknown_arguments(name, kwargs)
        super().__init__(name, [os.fspath(s) for s in sources], *args, **kwargs)
        if not any(is_cuda_source(s) for s in self.sources):
            raise ConfigError(f"CudaExtension({name!r}) has no .cu source; list the kernels' .cu files in sources.")
        self.ciq_target = ciq_target
        self.pin_dir = os.fspath(pin_dir)
        self.cuda_architectures = architectures
        self.nvcc_flags = tuple(str(f) for f in nvcc_flags) + _nvcc_compile_args(self, name)
        self.allow_numerics = bool(allow_numerics)
        if isinstance(params, str):
            raise ConfigError(f"CudaExtension({name!r}): params is a list of PARAMS entries, not the string {params!r}")
        self.params = tuple(str(p) for p in params)
        self.nvcc_timeout = nvcc_seconds
        # What `python -m ciq_build tune <ciq_target> --setuptools .` needs (ciq_build.project.setuptools_backend),
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
            parse_constraints(self.ciq_constraints, parse_params(self.params), setuptools=True)
            if self.ciq_objectives:
                parse_objectives(list(self.ciq_objectives))
        except ConfigError as error:
            raise ConfigError(f"CudaExtension({name!r}): {error}") from None
        self.ciq_timeout = ciq_seconds
        self.ciq_threads_per_block = _per_block(name, THREADS, ciq_threads_per_block, self.params)
        self.ciq_dynamic_shared_memory = _per_block(name, DYNAMIC_SHARED, ciq_dynamic_shared_memory, self.params)
        self.ciq_metric, self.ciq_unit = _metric(name, ciq_metric, ciq_unit, ciq_benchmark)


def _arguments(function: Any) -> set[str]:
    return {p.name for p in inspect.signature(function).parameters.values()
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)} - {"self"}


def _refuse_unknown_arguments(name: str, given: Mapping[str, Any]) -> None:
    """A keyword neither CudaExtension nor setuptools' Extension takes (`ciq_objective=`, singular) is refused by name:
    setuptools only warns of an unknown option and drops it, so the tune went on with the defaults (spill_bytes)
    and a plain build printed a UserWarning among nvcc's and gcc's lines."""
    # setuptools' own Extension takes **kw and pops py_limited_api; distutils' (its base) names the rest
    setuptools_arguments = {"py_limited_api"}.union(*(_arguments(vars(cls)["__init__"]) for cls in Extension.__mro__
                                                      if "__init__" in vars(cls) and cls is not object))
    ours = sorted(_arguments(CudaExtension.__init__) - setuptools_arguments)
    for argument in sorted(set(given) - setuptools_arguments):
        guess = nearest(argument, [*ours, *sorted(setuptools_arguments)])
        hint = f" (did you mean {guess}?)" if guess else ""
        raise ConfigError(f"CudaExtension({name!r}): {argument}= is not an argument of CudaExtension{hint}, and "
                          f"setuptools' Extension would drop it; its own arguments are {', '.join(ours)} "
                          "(docs/setuptools.md)")


# The keys of a dict extra_compile_args (PyTorch's CUDAExtension's form; npcuda-example's setup.py has "gcc"): nvcc's
# arguments, and the host compiler's.
NVCC_ARGS_KEY = "nvcc"
HOST_ARGS_KEYS = ("cxx", "gcc")


def _nvcc_compile_args(ext: Extension, name: str) -> tuple[str, ...]:
    """nvcc's arguments from a dict extra_compile_args ({"cxx": [...], "nvcc": [...]}), whose host arguments stay
    the extension's extra_compile_args. A list is the host compiler's, as setuptools has it: with no host source to
    reach it is refused (cudamat's setup.py gave nvcc's flags there, to its own nvcc-driven build_ext; here they
    were dropped without a word)."""
    given = ext.extra_compile_args
    if isinstance(given, Mapping):
        unknown = sorted(str(key) for key in given if key not in (NVCC_ARGS_KEY, *HOST_ARGS_KEYS))
        if unknown:
            raise ConfigError(f"CudaExtension({name!r}): extra_compile_args has {', '.join(map(repr, unknown))}: "
                              f"its keys are {NVCC_ARGS_KEY!r} (nvcc's arguments) and "
                              f"{' or '.join(map(repr, HOST_ARGS_KEYS))} (the host compiler's)")
        for key, value in given.items():
            if isinstance(value, str):
                raise ConfigError(f"CudaExtension({name!r}): extra_compile_args[{key!r}] is a list of arguments, "
                                  f"not the string {value!r}")
        ext.extra_compile_args = [str(arg) for key in HOST_ARGS_KEYS for arg in given.get(key, ())]
        return tuple(str(arg) for arg in given.get(NVCC_ARGS_KEY, ()))
    if given and all(is_cuda_source(source) for source in ext.sources):
        raise ConfigError(f"CudaExtension({name!r}): extra_compile_args reach the host compiler only, and its "
                          "sources are .cu files alone: give nvcc's arguments as nvcc_flags=[...] (or "
                          'extra_compile_args={"nvcc": [...]})')
    return ()


def _per_block(name: str, setting: Setting, value: int | str | Sequence[int | str] | None,
               params: Sequence[str]) -> tuple[str, ...]:
    """A per-block argument (ciq_threads_per_block, ciq_dynamic_shared_memory) as its keyword's values (the
    manifest's), checked by the keyword's own reader when setup.py is read, as configure checks the keyword."""
    if value is None:
        return ()
    items = [value] if isinstance(value, (int, str)) else value
    if not isinstance(items, Sequence) or any(isinstance(i, bool) or not isinstance(i, (int, str)) for i in items):
        raise ConfigError(f"CudaExtension({name!r}): {setting.argument} is a number, a params name or an "
                          f"expression over them, not {value!r}: {setting.setuptools_forms}")
    values = tuple(str(i) for i in items)
    try:
        read_declared(setting, values, params)
    except ConfigError as error:
        raise ConfigError(f"CudaExtension({name!r}): {setting.argument}, ciq_tune_target()'s {setting.keyword}: "
                          f"{error}") from None
    return values


def _metric(name: str, regex: str | None, unit: str | None, benchmark: Sequence[str] | None) -> tuple[str, str]:
    """ciq_metric and ciq_unit as METRIC and UNIT: the regex whose first group is the time (or rate) in a benchmark
    that prints its own format, checked by METRIC's and UNIT's own readers when setup.py is read."""
    if unit is not None and (not isinstance(unit, str) or not load_rules().matches("metric_unit", unit)):
        raise ConfigError(f"CudaExtension({name!r}): "
                          + _as_arguments(load_rules().message("unknown_metric_unit", value=str(unit)), str(unit))
                          + "; set ciq_unit to the unit the benchmark prints")
    if regex is None:
        if unit is not None:
            # As configure refuses UNIT without METRIC: a rate unit alone made every CIQ_METRIC time_ms line a whole
            # run's milliseconds, not the rate's, and each candidate's benchmark was read as printing no time.
            raise ConfigError(f"CudaExtension({name!r}): ciq_unit is the unit of ciq_metric's number; give "
                              "ciq_metric=r'<regex>' too, or leave ciq_unit out (CIQ_METRIC time_ms=... lines are "
                              "always milliseconds)")
        return "", DEFAULT_METRIC_UNIT
    if benchmark is None:
        raise ConfigError(f"CudaExtension({name!r}): ciq_metric reads the benchmark's output; add ciq_benchmark, "
                          "the command that prints it")
    try:
        compile_metric_regex(regex)
    except ConfigError as error:
        raise ConfigError(f"CudaExtension({name!r}): {_as_arguments(str(error), regex)}") from None
    return regex, unit or DEFAULT_METRIC_UNIT


def _as_arguments(message: str, written: str) -> str:
    """METRIC's and UNIT's readers word their messages for ciq_tune_target(); a CudaExtension's are ciq_metric, ciq_unit.
    What the user `written` (quoted in the message, as is or as its repr) stays as written: a regex 'UNIT: ([0-9.]+)'
    was quoted back as 'ciq_unit: ([0-9.]+)'."""
    if not written:
        return message.replace("METRIC", "ciq_metric").replace("UNIT", "ciq_unit")
    pieces = re.split(f"({re.escape(repr(written))}|{re.escape(written)})", message)  # odd: the quoted text
    return "".join(piece if i % 2 else piece.replace("METRIC", "ciq_metric").replace("UNIT", "ciq_unit")
                   for i, piece in enumerate(pieces))


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


def is_cuda_source(source: str | os.PathLike[str]) -> bool:
    """Whether nvcc compiles `source` (a .cu file); setuptools builds the others."""
    return os.fspath(source).endswith(".cu")


def gencode_flag(arch: str) -> str:
    """nvcc's -gencode for one CMake-style architecture ("90a", "90a-real", "sm_100a")."""
    try:
        number, suffix = split_arch(arch)
    except ToolchainError as exc:
        raise ConfigError(f"cuda_architectures: {exc}") from None
    codes = {"-real": f"sm_{number}", "-virtual": f"compute_{number}"}.get(suffix, f"[compute_{number},sm_{number}]")
    return f"-gencode=arch=compute_{number},code={codes}"


def explicit_nvcc(env: Mapping[str, str]) -> Path | None:
    """The nvcc `env` names (CIQ_NVCC, else CMake's CUDACXX), or None: the toolkit is then found."""
    for variable in ("CIQ_NVCC", "CUDACXX"):
        if env.get(variable):
            return Path(env[variable])
    return None


def object_for(source: str, build_temp: Path) -> Path:
    """<build_temp>/<source path without its anchor>.o; ".cu.o" keeps kern.cu and kern.cpp apart."""
    relative = Path(source)
    if relative.is_absolute():
        relative = relative.relative_to(relative.anchor)
    parts = [p for p in relative.parts if p not in ("..", ".")]
    return build_temp.joinpath(*parts).with_name(relative.name + ".o")
