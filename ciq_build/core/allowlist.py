"""The allow-list of compiler flags and -D parameters a pinned record may carry.

A pinned record is committed beside the sources and applied by every later
build, so whoever can edit it must not be able to make the build run a
program, load a plugin or read a file (-Xcompiler, -ccbin, --options-file,
-I, ...). The patterns are the ``flag`` lines of the rule book
(``cmake/ciq_build_rules.txt``, see rules.py), which the CMake module reads
too; this module also refuses
any character a flag could use to smuggle a second argument (whitespace,
quotes, commas that -Xptxas splits on, path separators, NUL).
"""

from __future__ import annotations

import re
from pathlib import Path

from ciq_build.core.rules import (
    FLAG_CHARS,
    RULES_NAME,
    RuleBookError,
    load_rules,
    option_of_other_values,
    parse_rules,
    rules_path,
)
from ciq_build.errors import UnsafeFlagError

ALLOWLIST_NAME = RULES_NAME  # the flag lines of the rule book

# Characters any allowed flag is made of (the rule book's own guard, re-exported).
_FLAG_CHARS = FLAG_CHARS

_WHY = (
    "A pinned record is applied by every build of the project, so its flags are "
    "limited to the public optimisation and numerics flags on the allow-list in {allowlist} "
    "(nothing that runs programs, loads plugins or reads files)."
)
_FIX = (
    "Retune the target (python -m ciq_build tune <target>) to write a fresh record, "
    "or edit the record's controls.flags by hand to drop the flag."
)


def allowlist_path() -> Path:
    """Where the rule book (and so the flag allow-list) is."""
    try:
        return rules_path()
    except RuleBookError as exc:
        raise UnsafeFlagError(str(exc)) from exc


def parse_patterns(text: str, source: str = ALLOWLIST_NAME) -> tuple[re.Pattern[str], ...]:
    """The flag patterns of rule-book text (``flag`` and ``numerics`` lines)."""
    try:
        return parse_rules("schema 1\n" + text if "schema" not in text else text, source).flags
    except RuleBookError as exc:
        raise UnsafeFlagError(str(exc)) from exc


def load_patterns(path: Path | None = None) -> tuple[re.Pattern[str], ...]:
    """The allow-list's patterns, each to be used with fullmatch."""
    try:
        return load_rules(path).flags
    except RuleBookError as exc:
        raise UnsafeFlagError(str(exc)) from exc


def is_allowed(flag: object, patterns: tuple[re.Pattern[str], ...] | None = None) -> bool:
    """True when `flag` is a single allowed token."""
    if not isinstance(flag, str) or _FLAG_CHARS.fullmatch(flag) is None:
        return False
    chosen = patterns if patterns is not None else load_patterns()
    return any(p.fullmatch(flag) is not None for p in chosen)


def check_flag(flag: object, patterns: tuple[re.Pattern[str], ...] | None = None) -> None:
    """Raise UnsafeFlagError unless `flag` is one allowed canonical flag."""
    if isinstance(flag, str) and "apply-controls" in flag:
        raise UnsafeFlagError(
            f"the pinned flag {flag!r} is refused: an ACF is never passed as a flag (it could "
            "name any file). Put it in the record's controls.acf (a file inside the pin "
            "directory, checked by its sha256), or retune the target."
        )
    if is_allowed(flag, patterns):
        return
    why = _WHY.format(allowlist=ALLOWLIST_NAME)
    if not isinstance(flag, str):
        raise UnsafeFlagError(f"the pinned flag {flag!r} is not a string. {why} {_FIX}")
    if _FLAG_CHARS.fullmatch(flag) is None:
        detail = (
            "it is empty" if not flag
            else "it contains characters a single flag never needs (whitespace, quotes, commas, "
            "paths or non-ASCII), which could smuggle in further arguments"
        )
        raise UnsafeFlagError(f"the pinned flag {flag!r} is refused: {detail}. {why} {_FIX}")
    option = option_of_other_values(flag, patterns if patterns is not None else load_patterns())
    if option is not None:
        raise UnsafeFlagError(f"the pinned flag {flag!r} is refused: the allow-list holds {option} with other values "
                              f"only ({ALLOWLIST_NAME} says which). {why} {_FIX}")
    raise UnsafeFlagError(
        f"the pinned flag {flag!r} is not on the allow-list. {why} "
        "Flags are spelled as one token in '=' form, e.g. -maxrregcount=64 or -Xptxas=-O2. "
        f"{_FIX}"
    )


def check_define(name: object, value: object) -> None:
    """Raise UnsafeFlagError unless NAME=VALUE is a plain -D source parameter."""
    rules = load_rules()
    if not rules.matches("define_name", name):
        raise UnsafeFlagError(
            f"the pinned define name {name!r} is refused: names must match "
            "[A-Za-z_][A-Za-z0-9_]* (a C identifier). Fix the PARAMS of ciq_tune_target() "
            "and retune, or edit the record's controls.defines."
        )
    if not rules.matches("define_value", value):
        raise UnsafeFlagError(
            f"the pinned define {name}={value!r} is refused: values may only contain letters, "
            "digits and _ . + - (no spaces, quotes, commas or paths, which could add compiler "
            "arguments). Fix the PARAMS of ciq_tune_target() and retune, or edit the "
            "record's controls.defines."
        )
