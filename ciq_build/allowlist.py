"""The allow-list of compiler flags and -D parameters a pinned record may carry.

A pinned record is committed beside the sources and applied by every later
build, so whoever can edit it must not be able to make the build run a
program, load a plugin or read a file (-Xcompiler, -ccbin, --options-file,
-I, ...). The patterns live in ``cmake/ciq_build_allowlist.txt`` so that this
module and the CMake module read the very same list; this module also refuses
any character a flag could use to smuggle a second argument (whitespace,
quotes, commas that -Xptxas splits on, path separators, NUL).
"""

from __future__ import annotations

import functools
import re
from importlib import resources
from pathlib import Path

from ciq_build.errors import UnsafeFlagError

ALLOWLIST_NAME = "ciq_build_allowlist.txt"

# Characters any allowed flag is made of. Checked before the patterns so that a
# careless edit of the allow-list (say, a '.*') still cannot let through a
# space, a quote, a comma (-Xptxas=-O3,-Xcompiler=...), a path or a NUL.
_FLAG_CHARS = re.compile(r"[A-Za-z0-9_=-]+")

# The regex subset that Python's re and CMake's regex engine read the same way:
# literals, classes, groups, alternation and the ?, *, + quantifiers. No '.',
# no backslash, no {n}, no anchors (the readers add them), no ';' (CMake lists).
_PATTERN_CHARS = re.compile(r"[A-Za-z0-9_=+\-\[\]()|?*]+")
# Within those characters, "(?" opens Python-only groups (lookarounds, flags)
# and a quantifier after a quantifier is non-greedy or an error.
_PATTERN_FORBIDDEN = re.compile(r"\(\?|[?*+][?*+]")

DEFINE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
DEFINE_VALUE = re.compile(r"[A-Za-z0-9_.+-]*")

_WHY = (
    "A pinned record is applied by every build of the project, so its flags are "
    "limited to the public optimisation and numerics flags listed in {allowlist} "
    "(nothing that runs programs, loads plugins or reads files)."
)
_FIX = (
    "Retune the target (python -m ciq_build tune <target>) to write a fresh record, "
    "or edit the record's controls.flags by hand to drop the flag."
)


def allowlist_path() -> Path:
    """Where ciq_build_allowlist.txt is: the source tree, an installed wheel, or package data."""
    here = Path(__file__).resolve().parent
    # Source checkout / editable install: the repository's top-level cmake/ folder.
    # Installed wheel: the ciq_build.cmake package is ciq_build/cmake/.
    for candidate in (here.parent / "cmake" / ALLOWLIST_NAME, here / "cmake" / ALLOWLIST_NAME):
        if candidate.is_file():
            return candidate
    try:
        found = resources.files("ciq_build.cmake") / ALLOWLIST_NAME
        with resources.as_file(found) as path:
            if Path(path).is_file():
                return Path(path)
    except (ModuleNotFoundError, FileNotFoundError, NotADirectoryError):
        pass
    raise UnsafeFlagError(
        f"cannot find {ALLOWLIST_NAME} beside ciq_build ({here.parent / 'cmake'}); "
        "the installation is incomplete: reinstall ciq-build."
    )


def parse_patterns(text: str, source: str = ALLOWLIST_NAME) -> tuple[re.Pattern[str], ...]:
    """Compile allow-list text: one regex per line, '#' comments and blank lines skipped."""
    patterns: list[re.Pattern[str]] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if _PATTERN_CHARS.fullmatch(line) is None or _PATTERN_FORBIDDEN.search(line) is not None:
            # A construct outside the shared subset could mean different things
            # to Python and CMake, so the two builds would disagree on safety.
            raise UnsafeFlagError(
                f"{source}:{number}: pattern {line!r} uses characters outside the subset "
                "that Python and CMake read alike (letters, digits, _ = - + [ ] ( ) | ? *); "
                "rewrite it with [0-9]+-style classes and no '.', backslash, {n}, anchors, "
                "lookarounds or non-greedy quantifiers."
            )
        try:
            patterns.append(re.compile(f"(?:{line})"))
        except re.error as exc:
            raise UnsafeFlagError(f"{source}:{number}: pattern {line!r} is not a valid regex: {exc}") from exc
    return tuple(patterns)


def load_patterns(path: Path | None = None) -> tuple[re.Pattern[str], ...]:
    """The allow-list's patterns, each to be used with fullmatch."""
    where = path if path is not None else allowlist_path()
    try:
        stat = where.stat()
    except OSError as exc:
        raise UnsafeFlagError(f"cannot read the flag allow-list {where}: {exc}; reinstall ciq-build.") from exc
    return _load_cached(str(where), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=8)
def _load_cached(where: str, mtime_ns: int, size: int) -> tuple[re.Pattern[str], ...]:
    # Keyed by the file's mtime and size, so an edited allow-list is re-read;
    # the result is an immutable tuple, so sharing it is safe.
    try:
        text = Path(where).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UnsafeFlagError(f"cannot read the flag allow-list {where}: {exc}; reinstall ciq-build.") from exc
    return parse_patterns(text, where)


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
    raise UnsafeFlagError(
        f"the pinned flag {flag!r} is not on the allow-list. {why} "
        "Flags are spelled as one token in '=' form, e.g. -maxrregcount=64 or -Xptxas=-O2. "
        f"{_FIX}"
    )


def check_define(name: object, value: object) -> None:
    """Raise UnsafeFlagError unless NAME=VALUE is a plain -D source parameter."""
    if not isinstance(name, str) or DEFINE_NAME.fullmatch(name) is None:
        raise UnsafeFlagError(
            f"the pinned define name {name!r} is refused: names must match "
            "[A-Za-z_][A-Za-z0-9_]* (a C identifier). Fix the PARAMS of ciq_tune_target() "
            "and retune, or edit the record's controls.defines."
        )
    if not isinstance(value, str) or DEFINE_VALUE.fullmatch(value) is None:
        raise UnsafeFlagError(
            f"the pinned define {name}={value!r} is refused: values may only contain letters, "
            "digits and _ . + - (no spaces, quotes, commas or paths, which could add compiler "
            "arguments). Fix the PARAMS of ciq_tune_target() and retune, or edit the "
            "record's controls.defines."
        )
