"""What a target's CUDA sources #define for its PARAMS names, read as text without the compiler.

Two readings of the same directives: a `#define NAME` outside any conditional
naming NAME overrides every -DNAME=... the search passes (`unguarded_defines`:
the tune warns before it builds anything); one inside such a conditional
(`#ifndef NAME` / `#define NAME 3`) is the value a build without -DNAME
compiles, the source's default (`guarded_defaults`: a `--seed-from` seed that
does not name NAME keeps it). A third reading, of the conditions: a name whose
presence alone is tested (`#ifdef NAME`, `#if defined(NAME)`) takes the same
branch for every -DNAME=..., 0 included (`presence_tests`). Sources and the
headers they include by quotes are read; a directive this cannot see (a header
found through -I, a generated one) is absent from all three.

Beside the directives, the code: `identifier_uses` finds where a source the
search's -D does not reach (a host .cpp, the benchmark's own) uses a PARAMS
name at all, directive or code, outside comments and string literals.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from ciq_build.core.params import PARAM_PREFIX, parse_params

_DIRECTIVE = re.compile(r"^\s*#\s*(\w+)(.*)$")
_QUOTED_INCLUDE = re.compile(r'^\s*"([^"]+)"')
_BLOCK_COMMENT = re.compile(r"/\*.*?\*/", re.DOTALL)
_DEFINED = re.compile(r"(!?)\s*\bdefined\b\s*\(?\s*(\w+)")  # `defined(NAME)`, `defined NAME`, and whether negated
# Comments and string/character literals, matched left to right so that a // inside a string is not a comment.
_COMMENT_OR_LITERAL = re.compile(r"""//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'""", re.DOTALL)
_INCLUDE_LINE = re.compile(r"^[ \t]*#[ \t]*include\b.*$", re.MULTILINE)


def unguarded_defines(specs: Sequence[str], sources: Iterable[Path]) -> dict[str, str]:
    """Each PARAMS name that `sources`, or a header they include by quotes, #defines outside any conditional
    naming it (`#ifndef NAME`, `#if !defined(NAME)`, ...), with where: {"UNROLL": "kern.cu:6"}."""
    found: dict[str, str] = {}
    for name, _value, guarded, where in _param_defines(specs, sources):
        if not guarded:
            found.setdefault(name, where)
    return found


def guarded_defaults(specs: Sequence[str], sources: Iterable[Path]) -> dict[str, str]:
    """The value each PARAMS name is #defined to inside a conditional naming it, the first such #define read:
    {"TILE": "32"}: what the compiler's defaults build, since the search's -DTILE=... is absent there."""
    found: dict[str, str] = {}
    for name, value, guarded, _where in _param_defines(specs, sources):
        if guarded and value:
            found.setdefault(name, value)
    return found


def presence_tests(specs: Sequence[str], sources: Iterable[Path]) -> dict[str, str]:
    """Each PARAMS name whose presence a source, or a header it includes by quotes, tests (`#ifdef NAME`, `#if
    defined(NAME)`, `#elif defined NAME`; not a negated `!defined`, the guard of a default), with where of the first:
    {"USE_SHARED": "fasten.hpp:34"}."""
    names = {name[len(PARAM_PREFIX):] for name in parse_params(specs)}
    found: dict[str, str] = {}
    for path, number, word, rest, _open in _directives(sources):
        if word == "ifdef":
            tested = rest.split()[:1]
        elif word in ("if", "elif"):
            tested = [name for negated, name in _DEFINED.findall(rest) if not negated]
        else:
            tested = []
        for name in tested:
            if name in names:
                found.setdefault(name, f"{path.name}:{number}")
    return found


def identifier_uses(specs: Sequence[str], sources: Iterable[Path]) -> dict[str, tuple[Path, str]]:
    """Each PARAMS name that one of `sources`, or a header it includes by quotes, uses as an identifier outside
    comments and string literals, with the source it is read through and where the first use is:
    {"TILE": (Path(".../main.cpp"), "config.h:3")}. Any use counts: code (`dim3 grid(n / TILE)`), a condition
    (`#if TILE > 16`), and a default's `#ifndef TILE` / `#define TILE 16`, which is what a file compiled without
    the search's -DTILE builds with; an #include line's own text does not."""
    names = {name[len(PARAM_PREFIX):] for name in parse_params(specs)}
    if not names:
        return {}
    pattern = re.compile(r"\b(" + "|".join(sorted(map(re.escape, names))) + r")\b")
    texts: dict[Path, tuple[str, list[Path]]] = {}
    found: dict[str, tuple[Path, str]] = {}
    for source in sources:
        pending, seen = [Path(source)], set()
        while pending and len(found) < len(names):
            path = pending.pop(0)
            if path in seen:
                continue
            seen.add(path)
            if path not in texts:
                texts[path] = _code_of(path)
            code, includes = texts[path]
            pending.extend(includes)
            for match in pattern.finditer(code):
                line = code.count("\n", 0, match.start()) + 1
                found.setdefault(match.group(1), (Path(source), f"{path.name}:{line}"))
    return found


def _code_of(path: Path) -> tuple[str, list[Path]]:
    """`path`'s text with comments, string and character literals and #include lines blanked (line numbers kept),
    and the headers it includes by quotes, that exist; ("", []) for a file that cannot be read."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""
    except OSError:
        text = ""

    def blank(match: re.Match[str]) -> str:
        return "\n" * match.group().count("\n")

    def comment_only(match: re.Match[str]) -> str:
        return match.group() if match.group()[0] in "\"'" else blank(match)

    uncommented = _COMMENT_OR_LITERAL.sub(comment_only, text)
    includes = [path.parent / quoted.group(1) for line in _INCLUDE_LINE.findall(uncommented)
                if (quoted := re.match(r'^\s*#\s*include\s*"([^"]+)"', line))]
    code = _INCLUDE_LINE.sub("", _COMMENT_OR_LITERAL.sub(blank, uncommented))
    return code, [include for include in includes if include.is_file()]


def _param_defines(specs: Sequence[str], sources: Iterable[Path]) -> Iterator[tuple[str, str, bool, str]]:
    """Every #define of a PARAMS name: (name, its value as written, "" for a function-like one, whether a
    conditional naming it is open, "file:line"), in the order read."""
    names = {name[len(PARAM_PREFIX):] for name in parse_params(specs)}
    for path, number, word, rest, open_conditions in _directives(sources):
        if word == "define" and (head := rest.split("(", 1)[0].split()[:1]) and head[0] in names:
            name, body = head[0], rest.lstrip()[len(head[0]):]
            value = "" if body.startswith("(") else body.strip()  # NAME(x) overrides, but has no value
            guarded = any(re.search(rf"\b{name}\b", condition) for condition in open_conditions)
            yield name, value, guarded, f"{path.name}:{number}"


def _directives(sources: Iterable[Path]) -> Iterator[tuple[Path, int, str, str, list[str]]]:
    """Every preprocessor directive of `sources` and the headers they include by quotes: (file, line, its word,
    the rest of the line, the conditions open around it), in the order read."""
    pending, seen = [Path(s) for s in sources], set()
    while pending:
        path = pending.pop(0)
        if path in seen or not path.is_file():
            continue
        seen.add(path)
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        # Comments out, line numbers kept; continued lines are rare in the directives that matter here.
        text = _BLOCK_COMMENT.sub(lambda m: "\n" * m.group().count("\n"), text)
        open_conditions: list[str] = []
        for number, line in enumerate(text.splitlines(), 1):
            directive = _DIRECTIVE.match(line.split("//", 1)[0])
            if directive is None:
                continue
            word, rest = directive.groups()
            if word in ("if", "ifdef", "ifndef"):
                open_conditions.append(rest)
            elif word in ("elif", "else") and open_conditions:
                open_conditions[-1] += " " + rest
            elif word == "endif" and open_conditions:
                open_conditions.pop()
            elif word == "include" and (quoted := _QUOTED_INCLUDE.match(rest)):
                pending.append(path.parent / quoted.group(1))
            yield path, number, word, rest, open_conditions
