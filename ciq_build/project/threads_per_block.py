"""``ciq_tune_target(... THREADS_PER_BLOCK ...)``: how many threads a block of the target's kernels has.

The occupancy objective needs each kernel's block size. A kernel's own ``__launch_bounds__`` gives the
most it runs (the tune reads it from the cubin, or the PTX: ciq_build.compiler.metrics.launch_bounds); for
the others, which the compiled code does not tell (the launch says it, in host code), the declaration gives
it, for every kernel of the target:

    THREADS_PER_BLOCK 256                           a number
    THREADS_PER_BLOCK FDTD3D_BLOCK_SIZE 512         a PARAMS name: each candidate's -D value; the defaults'
                                                    build (no -D) the number after it
    THREADS_PER_BLOCK "(128/TM)*(128/TN)"           an expression over PARAMS names, in the CONSTRAINTS
                                                    language (ciq_build.core.constraints)

Without the number after it, the defaults' build takes each name's value from the sources' own
``#ifndef NAME / #define NAME <number>`` (ciq_build.project.param_defines.guarded_defaults); where a
name has none that is a number, the tune asks for the number.

A setuptools CudaExtension declares the same values as ``ciq_threads_per_block=256``, ``="NAME"``,
``=("NAME", 512)`` or ``="<expression>"`` (ciq_build.project.cuda_extension), read by this module alike; only
what a message tells the user to write differs (`declaration`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ciq_build.compiler.controls import Controls
from ciq_build.compiler.occupancy import MAX_THREADS_PER_BLOCK
from ciq_build.core.constraints import expression_over
from ciq_build.core.params import PARAM_PREFIX, parse_params
from ciq_build.errors import ConfigError

if TYPE_CHECKING:
    from ciq_build.core.objectives import Objective

KEYWORD = "THREADS_PER_BLOCK"
SETUPTOOLS_ARGUMENT = "ciq_threads_per_block"  # CudaExtension's spelling of the same declaration
_COUNT = re.compile(r"[1-9][0-9]*")
_WHOLE = re.compile(r"[+-]?[0-9]+")
FORMS = (f"{KEYWORD} 256, {KEYWORD} <a PARAMS name> [<the defaults' threads>] or {KEYWORD} "
         "\"<expression over PARAMS names>\" [<the defaults' threads>], e.g. \"(128/TM)*(128/TN)\"")
SETUPTOOLS_FORMS = (f"{SETUPTOOLS_ARGUMENT}=256, =\"<a params name>\", =(\"<a params name>\", <the defaults' threads>) "
                    "or =\"<expression over params names>\", e.g. =\"(128/TM)*(128/TN)\"")


@dataclass(frozen=True)
class ThreadsPerBlock:
    """The declaration, read: its expression, and the defaults' build's threads where known."""

    expression: str
    defaults: int | None = None  # the defaults' build's threads a block
    _value: Callable[[Mapping[str, int]], int | None] = field(default=lambda env: None, compare=False, repr=False)

    def of(self, controls: Controls) -> int | None:
        """The threads a block of a build with `controls` has; None where its -D values are not whole numbers, the
        result is not 1 to 1024, or (the defaults' build) the number is not known."""
        env = {name: int(value) for name, value in controls.defines if _WHOLE.fullmatch(value)}
        try:
            threads = self._value(env)
        except KeyError:  # a name the build defines as no whole number, or not at all: the defaults' build's
            return None if dict(controls.defines) else self.defaults
        return threads if threads is not None and 0 < threads <= MAX_THREADS_PER_BLOCK else None


def read_threads_per_block(items: Sequence[str], params: Sequence[str],
                           source_defaults: Mapping[str, str] | None = None) -> ThreadsPerBlock | None:
    """The declaration's values as the manifest holds them (none: None), checked against the PARAMS names;
    `source_defaults`: the sources' guarded #define of each name, for the defaults' threads where the declaration
    gives none. A ConfigError says what is wrong and the forms."""
    if not items:
        return None
    if len(items) > 2:
        raise ConfigError(f"{KEYWORD} takes one or two values, not {' '.join(items)!r}: {FORMS}")
    expression, *rest = items
    names = [name[len(PARAM_PREFIX):] for name in parse_params(list(params))]
    value = expression_over(expression, names, KEYWORD)
    used = [name for name in names if re.search(rf"\b{name}\b", expression)]
    if rest and not used:
        raise ConfigError(f"{KEYWORD} {expression} {rest[0]}: the second value is the defaults' threads of a "
                          f"declaration over PARAMS names; a number is every build's: {FORMS}")
    defaults = _count(rest[0]) if rest else None
    if defaults is None and not used:
        defaults = value({})
        if defaults is None or not 0 < defaults <= MAX_THREADS_PER_BLOCK:
            raise ConfigError(f"{KEYWORD} {expression} is {defaults}: a block has 1 to {MAX_THREADS_PER_BLOCK} "
                              "threads")
    elif defaults is None and source_defaults is not None:
        own = {name: source_defaults.get(name) for name in used}
        if all(text is not None and _COUNT.fullmatch(text) for text in own.values()):
            defaults = value({name: int(str(text)) for name, text in own.items()})
    return ThreadsPerBlock(expression, defaults, value)


def _count(text: str) -> int:
    if _COUNT.fullmatch(text) is None or int(text) > MAX_THREADS_PER_BLOCK:
        raise ConfigError(f"{KEYWORD}: {text!r} is not a number of threads (1 to {MAX_THREADS_PER_BLOCK}): {FORMS}")
    return int(text)


def wants_block_size(objectives: Sequence[Objective]) -> bool:
    """Some objective is the occupancy, which needs each kernel's block size."""
    return any(o.kind is not None and o.kind.name == "occupancy" for o in objectives)


def declaration(expression: str, setuptools: bool, threads: str | None = None) -> str:
    """The declaration of `expression` (and the defaults' `threads`) as the user writes it: in ciq_tune_target(),
    or as a setuptools CudaExtension's argument."""
    if not setuptools:
        return " ".join([KEYWORD, expression, *([threads] if threads else [])])
    value = expression if _COUNT.fullmatch(expression) else f'"{expression}"'
    return f"{SETUPTOOLS_ARGUMENT}=" + (f"({value}, {threads})" if threads else value)


def check_block_size(declared: ThreadsPerBlock | None, objectives: Sequence[Objective], *,
                     setuptools: bool = False) -> None:
    """Before a tune: a ConfigError, saying what to add, where the occupancy objective is asked for and the
    defaults' build would have no block size. (Without a declaration, kernels with `__launch_bounds__` have one: a
    kernel without fails its evaluation, the baseline first, and unknown_block_size says what to add.)
    `setuptools`: the target is a CudaExtension's, whose declaration is `SETUPTOOLS_ARGUMENT`."""
    if declared is not None and declared.defaults is None and wants_block_size(objectives):
        raise ConfigError(
            f"{declaration(declared.expression, setuptools)}: the defaults' build passes no -D for it, and the "
            f"sources give its names no #define that is a number: give the defaults' threads a block after it "
            f"({declaration(declared.expression, setuptools, '<threads>')})")


NO_BLOCK_SIZE = "a kernel has no __launch_bounds__ and"  # how the message of an undeclared block size starts


def unknown_block_size(declared: ThreadsPerBlock | None, controls: Controls, *, setuptools: bool = False) -> str:
    """Why a build with `controls` has no occupancy, for the message of an evaluation without it."""
    if declared is None:
        # One message, in the words of the front end the user declares it in.
        where, name, forms, doc, then = (
            ("its CudaExtension", SETUPTOOLS_ARGUMENT, SETUPTOOLS_FORMS, "docs/setuptools.md", "") if setuptools else
            ("ciq_tune_target()", KEYWORD, FORMS, "docs/cmake.md", " and configure again"))
        return (f"{NO_BLOCK_SIZE} {where} declares no {name}: add {name} to it ({forms}; "
                f"{doc}: {name}){then}")
    if declared.of(controls) is None:
        defines = " ".join(f"-D{name}={value}" for name, value in controls.defines) or "the defaults' build"
        return (f"{declaration(declared.expression, setuptools)} gives no number of threads (1 to "
                f"{MAX_THREADS_PER_BLOCK}) for {defines}")
    return "its architecture has no occupancy limits (ciq_build.compiler.occupancy.LIMITS)"
