"""``ciq_tune_target(... THREADS_PER_BLOCK ... DYNAMIC_SHARED_MEMORY ...)``: what a block of the target's kernels
takes at launch, which the compiled code does not tell (the launch says it, in host code).

The occupancy objective needs each kernel's block size and its shared memory. A kernel's own
``__launch_bounds__`` gives the most threads it runs (the tune reads it from the cubin, or the PTX:
ciq_build.compiler.metrics.launch_bounds); ptxas reports its static shared memory, but not the dynamic
shared memory (``extern __shared__``) its launch sizes (FlashAttention-2's 64 KB a block). Each setting is
declared once for every kernel of the target, in one of three forms:

    THREADS_PER_BLOCK 256                           a number
    THREADS_PER_BLOCK FDTD3D_BLOCK_SIZE 512         a PARAMS name: each candidate's -D value; the defaults'
                                                    build (no -D) the number after it
    THREADS_PER_BLOCK "(128/TM)*(128/TN)"           an expression over PARAMS names, in the CONSTRAINTS
                                                    language (ciq_build.core.constraints)

and DYNAMIC_SHARED_MEMORY alike, in bytes a block (counted for the kernels whose PTX uses dynamic shared
memory). Without the number after it, the defaults' build takes each name's value from the sources' own
``#ifndef NAME / #define NAME <number>`` (ciq_build.project.param_defines.guarded_defaults); where a
name has none that is a number, the tune asks for the number.

A setuptools CudaExtension declares the same values as ``ciq_threads_per_block=256``, ``="NAME"``,
``=("NAME", 512)`` or ``="<expression>"`` (``ciq_dynamic_shared_memory`` alike; ciq_build.project.cuda_extension),
read by this module alike; only what a message tells the user to write differs (`Setting.declaration`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ciq_build.compiler.controls import Controls
from ciq_build.compiler.occupancy import LIMITS, MAX_THREADS_PER_BLOCK
from ciq_build.core.constraints import expression_over
from ciq_build.core.params import PARAM_PREFIX, parse_params
from ciq_build.errors import ConfigError

if TYPE_CHECKING:
    from ciq_build.core.objectives import Objective

_NUMBER = re.compile(r"0|[1-9][0-9]*")
_WHOLE = re.compile(r"[+-]?[0-9]+")


@dataclass(frozen=True)
class Setting:
    """One per-block declaration: its keyword, CudaExtension's argument, what it counts, and the values allowed."""

    keyword: str  # ciq_tune_target()'s: THREADS_PER_BLOCK
    argument: str  # CudaExtension's spelling of the same declaration: ciq_threads_per_block
    unit: str  # what the number counts: "threads"
    least: int
    most: int
    example: str  # a number: "256"
    example_expression: str  # over PARAMS names: "(128/TM)*(128/TN)"

    @property
    def forms(self) -> str:
        """The forms, as ciq_tune_target() writes them (CMake's check says the same: cmake/ciq_build_call.cmake)."""
        return (f"{self.keyword} {self.example}, {self.keyword} <a PARAMS name> [<the defaults' {self.unit}>] or "
                f"{self.keyword} \"<expression over PARAMS names>\" [<the defaults' {self.unit}>], e.g. "
                f"\"{self.example_expression}\"")

    @property
    def setuptools_forms(self) -> str:
        """The forms, as a CudaExtension's argument."""
        return (f"{self.argument}={self.example}, =\"<a params name>\", =(\"<a params name>\", <the defaults' "
                f"{self.unit}>) or =\"<expression over params names>\", e.g. =\"{self.example_expression}\"")

    def allows(self, value: int | None) -> bool:
        return value is not None and self.least <= value <= self.most

    def declaration(self, expression: str, setuptools: bool, value: str | None = None) -> str:
        """The declaration of `expression` (and the defaults' `value`) as the user writes it: in ciq_tune_target(),
        or as a setuptools CudaExtension's argument."""
        if not setuptools:
            return " ".join([self.keyword, expression, *([value] if value else [])])
        shown = expression if _NUMBER.fullmatch(expression) else f'"{expression}"'
        return f"{self.argument}=" + (f"({shown}, {value})" if value else shown)


THREADS = Setting("THREADS_PER_BLOCK", "ciq_threads_per_block", "threads", 1, MAX_THREADS_PER_BLOCK, "256",
                  "(128/TM)*(128/TN)")
# Bytes a block; at most the largest SM's shared memory (an architecture's own limit, its occupancy: no block fits).
DYNAMIC_SHARED = Setting("DYNAMIC_SHARED_MEMORY", "ciq_dynamic_shared_memory", "bytes", 0,
                         max(sm.shared for sm in LIMITS.values()), "65536", "(BM+BN)*BK*2")
SETTINGS = (THREADS, DYNAMIC_SHARED)

# Among a build's metrics (ciq_build.tune.runner), kept in a pinned record's: how many of the scored kernels use
# dynamic shared memory (`extern __shared__`), where the occupancy is scored or described: no compiled figure holds
# it (the launch sizes it), so their occupancy can be more than they get.
DYNAMIC_SHARED_METRIC = "dynamic_shared_kernels"
# The bytes of dynamic shared memory a block DYNAMIC_SHARED_MEMORY declares, where some of those kernels use it: what
# their occupancy counts beside their static shared memory.
COUNTED_DYNAMIC_METRIC = "declared_dynamic_shared_bytes"


@dataclass(frozen=True)
class Declared:
    """A declaration, read: its setting, its expression, and the defaults' build's value where known."""

    setting: Setting
    expression: str
    defaults: int | None = None  # the defaults' build's value
    _value: Callable[[Mapping[str, int]], int | None] = field(default=lambda env: None, compare=False, repr=False)

    def of(self, controls: Controls) -> int | None:
        """The value of a build with `controls`; None where its -D values are not whole numbers, the result is out
        of the setting's range, or (the defaults' build) the number is not known."""
        env = {name: int(value) for name, value in controls.defines if _WHOLE.fullmatch(value)}
        try:
            value = self._value(env)
        except KeyError:  # a name the build defines as no whole number, or not at all: the defaults' build's
            return None if dict(controls.defines) else self.defaults
        return value if self.setting.allows(value) else None


def read_declared(setting: Setting, items: Sequence[str], params: Sequence[str],
                  source_defaults: Mapping[str, str] | None = None) -> Declared | None:
    """The declaration's values as the manifest holds them (none: None), checked against the PARAMS names;
    `source_defaults`: the sources' guarded #define of each name, for the defaults' value where the declaration
    gives none. A ConfigError says what is wrong and the forms."""
    if not items:
        return None
    keyword, forms, unit = setting.keyword, setting.forms, setting.unit
    if len(items) > 2:
        raise ConfigError(f"{keyword} takes one or two values, not {' '.join(items)!r}: {forms}")
    expression, *rest = items
    names = [name[len(PARAM_PREFIX):] for name in parse_params(list(params))]
    value = expression_over(expression, names, keyword)
    used = [name for name in names if re.search(rf"\b{name}\b", expression)]
    if rest and not used:
        raise ConfigError(f"{keyword} {expression} {rest[0]}: the second value is the defaults' {unit} of a "
                          f"declaration over PARAMS names; a number is every build's: {forms}")
    defaults = _number(setting, rest[0]) if rest else None
    if defaults is None and not used:
        defaults = value({})
        if not setting.allows(defaults):
            raise ConfigError(f"{keyword} {expression} is {defaults}: a block has {setting.least} to {setting.most} "
                              f"{unit}")
    elif defaults is None and source_defaults is not None:
        own = {name: source_defaults.get(name) for name in used}
        if all(text is not None and _NUMBER.fullmatch(text) for text in own.values()):
            found = value({name: int(str(text)) for name, text in own.items()})
            defaults = found if setting.allows(found) else None
    return Declared(setting, expression, defaults, value)


def _number(setting: Setting, text: str) -> int:
    if _NUMBER.fullmatch(text) is None or not setting.allows(int(text)):
        raise ConfigError(f"{setting.keyword}: {text!r} is not a number of {setting.unit} ({setting.least} to "
                          f"{setting.most}): {setting.forms}")
    return int(text)


def wants_block_size(objectives: Sequence[Objective]) -> bool:
    """Some objective is the occupancy, which needs each kernel's block size (and shared memory)."""
    return any(o.kind is not None and o.kind.name == "occupancy" for o in objectives)


def check_block_size(declared: Declared | None, objectives: Sequence[Objective], *, setuptools: bool = False,
                     overridden: Mapping[str, str] | None = None) -> None:
    """Before a tune: a ConfigError, saying what to add, where the occupancy objective is asked for and the
    defaults' build would have no value of `declared`. (Without THREADS_PER_BLOCK, kernels with `__launch_bounds__`
    have a block size: a kernel without fails its evaluation, the baseline first, and unknown_block_size says what
    to add.) `setuptools`: the target is a CudaExtension's, whose declaration is the setting's argument.
    `overridden`: the PARAMS names the sources #define outside any #ifndef, with where
    (ciq_build.project.param_defines.unguarded_defines): a declaration over one would give each candidate the -D
    value the code never sees (mini-nbody's #define BLOCK_SIZE 256), so it is refused, saying to guard it."""
    if declared is None or not wants_block_size(objectives):
        return
    setting = declared.setting
    for name, where in sorted((overridden or {}).items()):
        if re.search(rf"\b{name}\b", declared.expression):
            raise ConfigError(
                f"{setting.declaration(declared.expression, setuptools)}: the source #defines {name} itself ({where}, "
                f"outside any #ifndef {name}), so every -D{name}=... is overridden and the occupancy would count "
                f"{setting.unit} a block the code does not have. Guard the #define with #ifndef {name} ... #endif")
    if declared.defaults is None:
        raise ConfigError(
            f"{setting.declaration(declared.expression, setuptools)}: the defaults' build passes no -D for it, and "
            f"the sources give its names no #define that is a number: give the defaults' {setting.unit} a block "
            f"after it ({setting.declaration(declared.expression, setuptools, f'<{setting.unit}>')})")


def no_value(declared: Declared, controls: Controls, *, setuptools: bool = False) -> str:
    """Why `declared` gives a build with `controls` no value, for the message of an evaluation without it."""
    setting = declared.setting
    defines = " ".join(f"-D{name}={value}" for name, value in controls.defines) or "the defaults' build"
    return (f"{setting.declaration(declared.expression, setuptools)} gives no number of {setting.unit} "
            f"({setting.least} to {setting.most}) for {defines}")


def how_to_declare(setting: Setting, *, setuptools: bool = False) -> str:
    """Where and how to add an undeclared `setting`, in the words of the front end the user declares it in."""
    where, name, forms, doc, then = (
        ("its CudaExtension", setting.argument, setting.setuptools_forms, "docs/setuptools.md", "") if setuptools else
        ("ciq_tune_target()", setting.keyword, setting.forms, "docs/cmake.md", " and configure again"))
    return f"{where} declares no {name}: add {name} to it ({forms}; {doc}: {name}){then}"


NO_BLOCK_SIZE = "a kernel has no __launch_bounds__ and"  # how the message of an undeclared block size starts


def unknown_block_size(declared: Declared | None, controls: Controls, *, setuptools: bool = False) -> str:
    """Why a build with `controls` has no occupancy, for the message of an evaluation without it."""
    if declared is None:
        return f"{NO_BLOCK_SIZE} {how_to_declare(THREADS, setuptools=setuptools)}"
    if declared.of(controls) is None:
        return no_value(declared, controls, setuptools=setuptools)
    return "its architecture has no occupancy limits (ciq_build.compiler.occupancy.LIMITS)"
