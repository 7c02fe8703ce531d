"""CUDA architecture names as CMAKE_CUDA_ARCHITECTURES and nvcc spell them: split, normalised, ordered.

One spelling for comparing (`arch_name`: "sm_90a", "90A", "90a-real" are all "90a"), the checked
CMake form and its -real/-virtual tail (`split_arch`), the SM generation ("90a" is 90), and the keywords
that name no one architecture (`is_keyword`: all, all-major, native). Strings
only: which architectures a toolkit can build is probed (compiler.probe), the GPU's own asked
(compiler.gpu_arch).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ciq_build.core.rules import load_rules
from ciq_build.errors import ToolchainError

# CMAKE_CUDA_ARCHITECTURES' keywords, each naming no one architecture: every architecture nvcc builds, every major
# one, or the GPU of whichever machine builds.
KEYWORDS = ("all", "all-major", "native")


def is_keyword(entry: str) -> bool:
    """Whether a CMAKE_CUDA_ARCHITECTURES entry is one of its KEYWORDS, not an architecture."""
    return entry.strip().lower() in KEYWORDS


def split_architectures(architectures: str) -> list[str]:
    """The items of CMAKE_CUDA_ARCHITECTURES ("80;90a-real", "80,90", "80 90"), as written."""
    return [item for item in re.split(r"[;,\s]+", architectures) if item]


def arch_name(arch: str) -> str:
    """One spelling of an architecture, unchecked: "sm_90a", "90A", "90a-real" are all "90a".

    Lower case, without one sm_/compute_/lto_ prefix ("sm_sm_90a" keeps one, and
    names no architecture), nothing from the first '-' on. The pinned record's
    architectures are written in it and compared in it; the CMake module's
    _ciq_architecture_set is the same rule.
    """
    text = re.sub(r"^(sm_|compute_|lto_)", "", arch.strip().lower(), count=1)
    return text.split("-", 1)[0]


def architecture_order(name: str) -> tuple[int, str]:
    """A sort key for architecture names as a person reads them: by number, then suffix (75, 90, 90a, 100)."""
    digits = re.match(r"\d+", name)
    return (int(digits.group()) if digits else 1 << 30, name)


def architecture_list(architectures: str) -> list[str]:
    """CMAKE_CUDA_ARCHITECTURES ("90a;100-real") as a list of arch names ("90a", "100"), unchecked."""
    return [arch_name(item) for item in split_architectures(architectures)]


def split_arch(arch: str) -> tuple[str, str]:
    """("90a", "-real") for "90a-real", ("90a", "") for "sm_90a": the CMake-style architecture and its tail.

    Accepts "sm_", "compute_" and "lto_" prefixes and the "-real"/"-virtual"
    tails; anything else is a ToolchainError.
    """
    text = arch.strip().lower()
    for prefix in ("sm_", "compute_", "lto_"):
        if text.startswith(prefix):
            text = text[len(prefix):]
    tail = ""
    for suffix in ("-real", "-virtual"):
        if text.endswith(suffix):
            text, tail = text[: -len(suffix)], suffix
    if not re.fullmatch(r"[0-9]+[a-z]?", text):
        raise ToolchainError(
            f"{arch!r} is not a CUDA architecture; use the CMAKE_CUDA_ARCHITECTURES form, e.g. 90a or 100."
        )
    return text, tail


def arch_number(arch: str) -> str:
    """The CMake-style architecture ("90a") of "sm_90a", "compute_90", "90a-real", ..."""
    return split_arch(arch)[0]


def arch_generation(arch: str) -> int:
    """The SM generation (90) of "90a", "sm_90a", "compute_90", ...: its number without the letter."""
    return int(arch_number(arch).rstrip("abcdefghijklmnopqrstuvwxyz"))


def flag_architectures(flags: Sequence[str]) -> dict[str, str]:
    """The architectures (arch names, "75") whose machine code nvcc `flags` ask for themselves, each with the flag
    that asks ("-arch=sm_75"), in their order: CMAKE_CUDA_FLAGS' `-arch=sm_75` builds sm_75 besides
    CUDA_ARCHITECTURES' (cuda-ground-up's CMakeLists). The options and spellings are the rule book's arch_option,
    arch_value_separator and arch_code (the CMake module's _ciq_rules_flag_architectures reads them alike)."""
    rules = load_rules()
    separator = re.compile(rules.regex_text("arch_value_separator"))
    found: dict[str, str] = {}
    value_of = ""  # the option whose value is the next flag ("-arch sm_75")
    for flag in flags:
        if value_of:
            asking, value, value_of = f"{value_of} {flag}", flag, ""
        else:
            option, joined, value = flag.partition("=")
            if not rules.matches("arch_option", option):
                continue
            if not joined:
                value_of = flag
                continue
            asking = flag
        for piece in separator.split(value):
            if rules.matches("arch_code", piece):
                found.setdefault(piece.removeprefix("sm_"), asking)
    return found
