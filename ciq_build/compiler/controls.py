"""What a candidate changes in the compile: public nvcc/ptxas flags, -D parameters, an ACF.

A `Controls` becomes nvcc arguments, written one per line to the per-target
nvcc options file that both the tuning build and the real build pass with
``--options-file`` (see docs/ARCHITECTURE.md), so what was measured is what ships.

Canonical flag spellings were measured against nvcc 13.0 and 13.3 (both
refuse the documentation's first guesses): the register-usage level is a
ptxas option (``-Xptxas=--register-usage-level=N``; nvcc says "Unknown
option '--register-usage-level=5'"), and fast-compile needs the double dash
(``--Ofast-compile=max``; ``-Ofast-compile=max`` is read as ``-O`` with the
value "fast-compile=max").
"""

from __future__ import annotations

import hashlib
import numbers
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ciq_build.core.space as ss
from ciq_build.compiler.probe import probe_capabilities
from ciq_build.compiler.toolchain import Toolchain, default_cache_dir
from ciq_build.core.allowlist import ALLOWLIST_NAME, check_define, check_flag
from ciq_build.core.rules import RuleBook, load_rules, read_regular_file
from ciq_build.errors import ConfigError, RecordError, UnsafeFlagError
from ciq_build.state.durable import atomic_write, sha256_file

__all__ = [
    "AcfRef",
    "Controls",
    "Knob",
    "KNOBS",
    "check_flag",
    "controls_from_candidate",
    "controls_to_json",
    "knob_space",
    "nvcc_arguments",
    "options_file_line",
    "register_caps",
    "write_options_file",
]

ACF_COMPILERS = ("ptxas", "nvcc")
KNOB_PREFIX = "knob."
PARAM_PREFIX = "param."
_HEX64 = re.compile(r"[0-9a-f]{64}")


# ------------------------------------------------------------------ controls


@dataclass(frozen=True)
class AcfRef:
    """An NVIDIA Advanced Controls File and the compiler that reads it."""

    path: Path  # absolute path of the .acf file
    compiler: str  # "ptxas" or "nvcc"
    sha256: str  # lowercase hex; "" only before the file has been hashed

    def __post_init__(self) -> None:
        object.__setattr__(self, "path", Path(self.path))
        if self.compiler not in ACF_COMPILERS:
            raise ConfigError(f"an ACF is read by 'ptxas' or 'nvcc', not {self.compiler!r}")
        if self.sha256 and _HEX64.fullmatch(self.sha256) is None:
            raise ConfigError(f"the ACF sha256 {self.sha256!r} is not 64 lowercase hex digits")
        if not self.path.is_absolute():
            raise ConfigError(f"the ACF path {self.path} must be absolute")

    @classmethod
    def from_file(cls, path: Path, compiler: str) -> AcfRef:
        """An AcfRef for an existing file, hashing it now."""
        path = Path(path).absolute()
        try:
            digest = sha256_file(path)
        except OSError as exc:
            raise ConfigError(f"cannot read the ACF {path}: {exc}") from exc
        return cls(path=path, compiler=compiler, sha256=digest)


def option_name(flag: str) -> str:
    """What two flags must not both set: "-maxrregcount", "-Xptxas=-O", "-Xptxas=--def-load-cache"."""
    prefix = ""
    if flag.startswith("-Xptxas="):
        prefix, flag = "-Xptxas=", flag[len("-Xptxas="):]
    match = re.match(r"-O(?=[0-9])", flag)
    return prefix + (match.group() if match else flag.split("=", 1)[0])


@dataclass(frozen=True)
class Controls:
    """Everything a candidate (or a pin) changes in a target's CUDA compiles.

    Normalised on construction: flags are checked against the allow-list,
    deduplicated and sorted; defines are checked and sorted by name. So equal
    controls compare equal and write byte-identical options files.
    """

    flags: tuple[str, ...] = ()  # canonical public nvcc args, each matches the allow-list
    defines: tuple[tuple[str, str], ...] = ()  # user -D source parameters (NAME, VALUE), sorted by name
    acf: AcfRef | None = None

    def __post_init__(self) -> None:
        if isinstance(self.flags, str):
            raise RecordError(f"Controls.flags must be a sequence of flags, not the string {self.flags!r}")
        flags = tuple(sorted(set(self.flags)))
        for flag in flags:
            check_flag(flag)
        seen: dict[str, str] = {}
        for flag in flags:
            name = option_name(flag)
            if name in seen:
                raise RecordError(
                    f"the flags {seen[name]!r} and {flag!r} set the same compiler option; keep one of them."
                )
            seen[name] = flag
        conflict = load_rules().conflict(flags)
        if conflict is not None:
            raise RecordError(
                f"ptxas refuses the flags {conflict[0]!r} and {conflict[1]!r} together "
                "(\"Conflicting options\"); keep one of them."
            )
        pairs = list(self.defines.items()) if isinstance(self.defines, Mapping) else list(self.defines)
        defines: dict[str, str] = {}
        for pair in pairs:
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise RecordError(f"a define is a (NAME, VALUE) pair, not {pair!r}")
            name, value = pair
            check_define(name, value)
            if name in defines and defines[name] != value:
                raise RecordError(f"the define {name} is given twice ({defines[name]!r} and {value!r}); keep one.")
            defines[name] = value
        if self.acf is not None and not isinstance(self.acf, AcfRef):
            raise RecordError(f"Controls.acf must be an AcfRef or None, not {self.acf!r}")
        object.__setattr__(self, "flags", flags)
        object.__setattr__(self, "defines", tuple(sorted(defines.items())))

    @property
    def is_default(self) -> bool:
        """No change at all: the compiler's defaults (what the baseline measures)."""
        return not self.flags and not self.defines and self.acf is None

    def over(self, base: Controls) -> Controls:
        """These controls on top of `base` (a staged search's best so far): `base`'s flags for the compiler options
        these leave unset, its defines for the names these leave unset, its ACF where these have none."""
        if base.is_default:
            return self
        mine = {option_name(flag) for flag in self.flags}
        flags = self.flags + tuple(flag for flag in base.flags if option_name(flag) not in mine)
        defines = {**dict(base.defines), **dict(self.defines)}
        return Controls(flags=flags, defines=tuple(defines.items()), acf=self.acf or base.acf)


def _acf_argument(acf: AcfRef) -> str:
    """The nvcc argument applying `acf`; its path is one the rule book calls shell-plain.

    nvcc hands the value of -Xptxas to ptxas through a shell, so an ACF whose
    path has anything else (a space, ';', '&', '$', ...) is used through a copy
    named by its sha256 in ciq_build's cache directory: an allow-list, never
    quoting or a blocklist.
    """
    rules = load_rules()
    path = Path(acf.path)
    if not rules.matches("nvcc_path", str(path)):
        path = _plain_copy(acf, rules)
    if acf.compiler == "nvcc":
        return f"--apply-controls={path}"
    return f"-Xptxas=--apply-controls={path}"


def _plain_copy(acf: AcfRef, rules: RuleBook) -> Path:
    try:
        data = read_regular_file(Path(acf.path), rules.limit("acf_bytes"), "the ACF")
    except OSError as exc:
        raise ConfigError(f"cannot read the ACF {acf.path}: {exc}") from exc
    digest = hashlib.sha256(data).hexdigest()
    if acf.sha256 and digest != acf.sha256:
        raise ConfigError(f"the ACF {acf.path} changed after it was chosen (sha256 {digest}, not {acf.sha256})")
    copy = default_cache_dir() / "acf-copies" / f"{digest}.acf"
    if not rules.matches("nvcc_path", str(copy)):
        raise ConfigError(
            f"the ACF {acf.path} has a path nvcc cannot pass to ptxas, and so does ciq_build's cache "
            f"directory ({copy.parent}); set CIQ_BUILD_CACHE_DIR (or XDG_CACHE_HOME) to a path of only "
            "letters, digits and _ . / + : @ % = -."
        )
    if not (copy.is_file() and not copy.is_symlink() and sha256_file(copy) == digest):
        copy.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(copy, data)
    return copy


def nvcc_arguments(controls: Controls) -> list[str]:
    """The nvcc arguments for `controls`: flags, then -DNAME=VALUE, then the ACF."""
    args = list(controls.flags)
    args += [f"-D{name}={value}" for name, value in controls.defines]
    if controls.acf is not None:
        args.append(_acf_argument(controls.acf))
    return args


def options_file_line(argument: str) -> str:
    """One nvcc options-file line holding exactly `argument`.

    nvcc splits an options file on whitespace, groups double-quoted text and,
    inside quotes, reads ``\\"`` and ``\\\\`` as escapes; a bare backslash outside
    quotes is eaten (measured: ``-I/tmp/b\\s`` finds ``/tmp/bs``). So an argument
    with whitespace, quotes or backslashes is quoted and escaped; others are
    written as they are (the same text ``shlex.split`` reads back).
    """
    if "\n" in argument or "\r" in argument or "\0" in argument:
        raise ConfigError(f"an nvcc argument cannot contain a newline or NUL: {argument!r}")
    if argument and re.search(r'[\s"\'\\]', argument) is None:
        return argument
    escaped = argument.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def write_options_file(path: Path, controls: Controls, extra: Iterable[str] = ()) -> None:
    """Write the nvcc options file for `controls` (+ `extra` arguments, e.g. -Xptxas=-v).

    Atomic (temporary file + rename, so a concurrent compile never reads half a
    file) and always written, even with unchanged content: the tuning build
    relies on the new mtime to rebuild the target's objects. The new mtime is
    made strictly later than the replaced file's, even on coarse clocks.
    """
    path = Path(path)
    text = "".join(options_file_line(arg) + "\n" for arg in [*nvcc_arguments(controls), *extra])
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, text, newer_mtime=True)


# ------------------------------------------------------------------ knob catalogue


@dataclass(frozen=True)
class Knob:
    """One public compiler option the search may set.

    `template` holds "{}" where the value goes; a template without it is an
    on/off switch (searched as a literal True that can be knocked out). Every
    knob can be knocked out: absent means the compiler's default.
    """

    name: str
    template: str
    choices: tuple[str | int, ...] = ()  # a choice knob's values
    grid: tuple[int, int, int] | None = None  # a range knob's (start, end, step), end inclusive
    numerics: bool = False  # changes floating-point results: searched only with ALLOW_NUMERICS
    knockout_prob: float = 0.5
    help: str = ""

    @property
    def is_switch(self) -> bool:
        return "{}" not in self.template

    def domain(self) -> tuple[str | int | bool, ...]:
        """Every value the catalogue searches."""
        if self.is_switch:
            return (True,)
        if self.grid is not None:
            start, end, step = self.grid
            return tuple(range(start, end + 1, step))
        return self.choices

    def probe_values(self) -> tuple[str | int | bool, ...]:
        """The values probed on a compiler: a range's ends, every choice, the switch."""
        if self.grid is not None:
            return (self.grid[0], self.grid[1])
        return self.domain()

    def flag(self, value: Any) -> str:
        """The canonical flag for `value`; ConfigError when the value is not one this knob takes."""
        if self.is_switch:
            if value is not True:
                raise ConfigError(
                    f"knob.{self.name} is an on/off switch ({self.template}): its value is True "
                    f"(absent = compiler default), not {value!r}"
                )
            return self.template
        if isinstance(value, bool):
            raise ConfigError(f"knob.{self.name} takes one of {list(self.domain())}, not {value!r}")
        if self.grid is not None:
            if isinstance(value, numbers.Integral):
                value = int(value)
            elif isinstance(value, numbers.Real) and float(value).is_integer():
                value = int(float(value))
            if not isinstance(value, int):
                raise ConfigError(f"knob.{self.name} takes an integer such as {self.grid[0]}, not {value!r}")
        elif value not in self.choices:
            raise ConfigError(f"knob.{self.name} takes one of {list(self.choices)}, not {value!r}")
        flag = self.template.format(value)
        try:
            check_flag(flag)
        except UnsafeFlagError as exc:
            raise ConfigError(
                f"knob.{self.name}={value!r} gives {flag!r}, which the allow-list {ALLOWLIST_NAME} refuses; "
                f"use one of {list(self.domain())}."
            ) from exc
        return flag

    @property
    def option(self) -> str:
        """The compiler option it sets, as two flags setting the same one share it: "-maxrregcount", "-Xptxas=-O"."""
        return option_name(self.template.replace("{}", "0"))

    def param(self, values: tuple[str | int | bool, ...] | None = None) -> ss.Param:
        """The search parameter for this knob, over `values` (default: the whole domain)."""
        if self.is_switch:
            return ss.literal(True, knockout_prob=self.knockout_prob)
        if self.grid is not None and values is None:
            start, end, step = self.grid
            return ss.range(start, end, step, knockout_prob=self.knockout_prob)
        return ss.choice(list(values if values is not None else self.domain()), knockout_prob=self.knockout_prob)


KNOBS: tuple[Knob, ...] = (
    Knob(
        "maxrregcount", "-maxrregcount={}", grid=(32, 248, 8),
        help="cap on registers per thread (absent: no cap), searched below the baseline's registers "
             "(register_caps); fewer registers, more occupancy, maybe spills",
    ),
    Knob(
        "register_usage_level", "-Xptxas=--register-usage-level={}", grid=(0, 10, 1),
        help="ptxas 0..10 (default 5): how freely optimisations may add registers",
    ),
    Knob("ptxas_opt_level", "-Xptxas=-O{}", grid=(0, 3, 1), help="ptxas optimisation level (default 3)"),
    Knob("extra_device_vectorization", "--extra-device-vectorization", help="more aggressive vectorisation"),
    Knob(
        "allow_expensive_optimizations", "-Xptxas=--allow-expensive-optimizations={}",
        choices=("true", "false"), help="ptxas expensive optimisations (default: on at -O2 and above)",
    ),
    # 'lu' (last use) is left out although ptxas accepts it: on a generic load
    # that hits local memory it may discard the line, which is not a tuning choice.
    Knob(
        "def_load_cache", "-Xptxas=--def-load-cache={}", choices=("ca", "cg", "cs", "cv"),
        help="default cache operator of global/generic loads",
    ),
    Knob(
        "def_store_cache", "-Xptxas=--def-store-cache={}", choices=("wb", "cg", "cs", "wt"),
        help="default cache operator of global/generic stores",
    ),
    Knob(
        "fast_compile", "--Ofast-compile={}", choices=("min", "mid", "max"),
        help="trade generated-code quality for compile time (absent: off)",
    ),
    # Numerics: change floating-point results, so offered only when the target opts in.
    Knob("use_fast_math", "--use_fast_math", numerics=True, help="fast approximate math (implies ftz, fast div/sqrt)"),
    Knob("ftz", "-ftz=true", numerics=True, help="flush single-precision denormals to zero"),
    Knob("prec_div", "-prec-div=false", numerics=True, help="approximate single-precision division"),
    Knob("prec_sqrt", "-prec-sqrt=false", numerics=True, help="approximate single-precision square root"),
    Knob("fmad", "-fmad=false", numerics=True, help="no multiply-add contraction (fmad=false)"),
)

_KNOBS_BY_NAME: dict[str, Knob] = {knob.name: knob for knob in KNOBS}

# What nvcc's documentation says --use_fast_math implies (measured with nvcc 13.3 on sm_90: --use_fast_math with
# -ftz=true is the same cubin as without; with -fmad=false, or after -ftz=false, another).
FAST_MATH = "--use_fast_math"
FAST_MATH_IMPLIES = {"ftz": "true", "prec-div": "false", "prec-sqrt": "false", "fmad": "true"}


def _numerics_set(flags: Sequence[str]) -> tuple[dict[str, str], bool]:
    """The floating-point options a target's own nvcc `flags` set ({"ftz": "false"}; -ftz=false, --ftz false), and
    whether they hold --use_fast_math; a later flag over an earlier one, as nvcc reads them."""
    explicit: dict[str, str] = {}
    fast = False
    words = [w for flag in flags for w in flag.removeprefix("SHELL:").split()]
    for i, word in enumerate(words):
        name, equals, value = word.lstrip("-").partition("=")
        name = name.replace("_", "-")
        if word.startswith("-") and name == "use-fast-math":
            fast = True
        elif word.startswith("-") and name in FAST_MATH_IMPLIES:
            explicit[name] = value if equals else (words[i + 1] if i + 1 < len(words) else "")
    return explicit, fast


def knobs_set_by(flags: Sequence[str]) -> dict[str, str]:
    """The numerics knobs whose option the target's own nvcc `flags` already set, each with the flag that sets it:
    a value it sets itself (-ftz=false) leaves the knob's other value contradicting the target's choice, and one
    --use_fast_math implies the knob's value again (a candidate of the same code); -fmad=false is still searched
    over --use_fast_math, which implies -fmad=true but leaves contraction the target's to refine."""
    explicit, fast = _numerics_set(flags)
    set_by: dict[str, str] = {}
    for k in KNOBS:
        option, _, value = k.template.lstrip("-").partition("=")  # each numerics knob is one flag: -ftz=true
        if not k.numerics:
            continue
        if k.template == FAST_MATH:
            if fast:
                set_by[k.name] = FAST_MATH
        elif option in explicit:
            set_by[k.name] = f"-{option}={explicit[option]}"
        elif fast and FAST_MATH_IMPLIES.get(option) == value:
            set_by[k.name] = FAST_MATH
    return set_by

# The register cap's values are fitted to the kernels (`register_caps`): the catalogue's grid above is what the
# compiler is probed with, and what is searched where no register count is known.
# Registers are allocated per warp in blocks of 256, 8 a thread: a cap between two multiples of 8 allocates what
# the multiple above it does, so it cannot raise occupancy over that, only hold ptxas tighter (with steps of 4, a
# static `registers` tune of FDTD3d pinned -maxrregcount=44: 80 -> 44 registers, allocated as 48). So steps of 8.
# 65,536 registers per SM and 2,048 threads (sm_80, sm_90, sm_100; others run fewer) make 32 registers a
# thread's share at the most threads any SM holds: a lower cap cannot raise occupancy, it only spills. Nor is a
# cap under half of a kernel's registers searched: it spills at least half the values live at its peak.
REGISTER_CAP_FLOOR = 32
REGISTER_ALLOCATION_UNIT = 8


def register_caps(registers: int) -> tuple[int, ...]:
    """The -maxrregcount values worth searching where the defaults' kernels use at most `registers` registers
    per thread: only caps below it (a cap at or above what a kernel uses leaves its code as it is), by 8, from
    32 or half of `registers`; () where none is left. Deterministic: a resumed search, its baseline journaled,
    gets the same values."""
    unit = REGISTER_ALLOCATION_UNIT
    floor = max(REGISTER_CAP_FLOOR, registers // 2 // unit * unit)
    return tuple(range(floor, registers, unit))


def knob(name: str) -> Knob:
    """The catalogue knob `name` ("maxrregcount" or "knob.maxrregcount")."""
    short = name.removeprefix(KNOB_PREFIX)
    try:
        return _KNOBS_BY_NAME[short]
    except KeyError:
        raise ConfigError(
            f"unknown compiler knob {name!r}; known knobs: {', '.join(KNOB_PREFIX + k for k in _KNOBS_BY_NAME)}"
        ) from None


def _pinnable(flag: str) -> bool:
    try:
        check_flag(flag)
    except UnsafeFlagError:
        return False
    return True


def knob_space(
    toolchain: Toolchain,
    allow_numerics: bool = False,
    *,
    arch: str | None = None,
    cache_dir: Path | None = None,
) -> dict[str, ss.Param]:
    """The public knobs this compiler accepts, as search parameters named ``knob.<name>``.

    Each knob value is offered only when the probed compiler accepts it and the
    allow-list would let it be pinned (a winner that could not be pinned is no
    winner). Numerics knobs only with `allow_numerics`.
    """
    knobs = [k for k in KNOBS if allow_numerics or not k.numerics]
    probes = {k.name: [k.template.format(v) if not k.is_switch else k.template for v in k.probe_values()] for k in knobs}
    capabilities = probe_capabilities(
        toolchain, [flag for flags in probes.values() for flag in flags], arch=arch, cache_dir=cache_dir
    )
    space: dict[str, ss.Param] = {}
    for k in knobs:
        flags = probes[k.name]
        ok = [capabilities.accepts(f) and _pinnable(f) for f in flags]
        if k.grid is not None:
            if all(ok):  # a range is offered whole or not at all: its ends were probed
                space[KNOB_PREFIX + k.name] = k.param()
            continue
        values = tuple(v for v, good in zip(k.probe_values(), ok) if good)
        if values:
            space[KNOB_PREFIX + k.name] = k.param(None if k.is_switch else values)
    return space


# ------------------------------------------------------------------ candidates


def define_value(value: Any) -> str:
    """The -D text of a parameter value: ints as written, floats shortest round-trip, str as is."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        number = float(value)
        return str(int(number)) if number.is_integer() and abs(number) < 2**53 else repr(number)
    if isinstance(value, str):
        return value
    raise ConfigError(f"a source parameter's value must be a number or a string, not {value!r}")


def _without_overridden_knobs(params: Mapping[str, Any]) -> dict[str, Any]:
    """Drop the knobs another knob overrides, so every candidate compiles.

    Measured with nvcc 13.3 over all pairs of catalogue flags: a fast-compile
    level sets ptxas's -O itself (min/mid: -O1, max: -O0) and ptxas refuses
    any other ("Conflicting options -opt-level=... and --Ofast-compile");
    --Ofast-compile=min refuses --allow-expensive-optimizations=false; ptxas
    -O0 ignores --register-usage-level (with a warning). The overriding knob
    wins; the candidate then equals (and dedupes with) the one without the
    overridden knob.
    """
    out = dict(params)
    fast = out.get(KNOB_PREFIX + "fast_compile")
    if fast is not None:
        out.pop(KNOB_PREFIX + "ptxas_opt_level", None)
        if fast == "min" and out.get(KNOB_PREFIX + "allow_expensive_optimizations") == "false":
            del out[KNOB_PREFIX + "allow_expensive_optimizations"]
    if out.get(KNOB_PREFIX + "ptxas_opt_level") == 0:
        out.pop(KNOB_PREFIX + "register_usage_level", None)
    return out


def controls_from_candidate(params: Mapping[str, Any], acf: AcfRef | None = None) -> Controls:
    """The Controls of one candidate: ``knob.*`` become flags, ``param.*`` -D defines.

    An ``acf`` entry in `params` (an AcfRef, as the compileiq engine puts it)
    is taken as the ACF. Unknown names and unusable values raise ConfigError.
    """
    flags: list[str] = []
    defines: list[tuple[str, str]] = []
    for name, value in sorted(_without_overridden_knobs(params).items()):
        if name == "acf":
            if value is not None and not isinstance(value, AcfRef):
                raise ConfigError(f"the candidate's 'acf' must be an AcfRef, not {value!r}")
            if value is not None and acf is not None and value != acf:
                raise ConfigError("the candidate carries two different ACFs")
            acf = acf or value
        elif name.startswith(KNOB_PREFIX):
            flags.append(knob(name).flag(value))
        elif name.startswith(PARAM_PREFIX):
            defines.append((name[len(PARAM_PREFIX):], define_value(value)))
        else:
            raise ConfigError(
                f"unknown search parameter {name!r}: compiler knobs are named knob.<name> "
                f"(e.g. knob.maxrregcount) and source parameters param.<NAME> (e.g. param.TILE)"
            )
    try:
        return Controls(flags=tuple(flags), defines=tuple(defines), acf=acf)
    except RecordError as exc:  # UnsafeFlagError included: a bad candidate, not a bad record
        raise ConfigError(f"candidate {dict(params)!r}: {exc}") from exc


# ------------------------------------------------------------------ JSON


def controls_to_json(controls: Controls, pin_dir: Path | None) -> dict[str, Any]:
    """The record's "controls" object.

    With a `pin_dir` the ACF is named by its bare file name and must lie
    directly in that directory; with None (journals, reports) by its absolute path.
    """
    out: dict[str, Any] = {"flags": list(controls.flags), "defines": dict(controls.defines)}
    acf = controls.acf
    if acf is not None:
        if pin_dir is None:
            file = str(acf.path)
        else:
            if Path(os.path.realpath(acf.path)).parent != Path(os.path.realpath(pin_dir)):
                raise RecordError(
                    f"the ACF {acf.path} is not in the pin directory {pin_dir}; copy it there before pinning."
                )
            file = acf.path.name
        out["acf"] = {"file": file, "sha256": acf.sha256, "compiler": acf.compiler}
    return out
