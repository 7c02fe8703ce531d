"""The rule book (``cmake/ciq_build_rules.txt``): what a pinned record may be and say.

The CMake module interprets the same file (``_ciq_rules_*`` in ``cmake/ciq_build_rules.cmake``
and ``cmake/ciq_build_rules_record.cmake``), so every rule exists once and both builds reach the
same verdict on every record (tests/core/test_rule_book_agreement.py). This module
reads the rule book and applies its three layers, in the order both readers use:

1. the file: a regular file (no link, FIFO or device) of at most
   ``limit record_bytes`` bytes, ASCII text (no NUL, no BOM);
2. the text: a strict JSON subset that both Python's json and CMake's
   string(JSON) read alike (see ``syntax_problem``);
3. the fields: the ``field`` lines, a small schema of types and patterns.

Checks that relate fields to each other (the target is the file's name, one
score per objective, the ACF's sha256, -D names declared as PARAMS) live with
the record in lock.py, and in the CMake module's ``_ciq_read_pin``.
"""

from __future__ import annotations

import functools
import json
import os
import re
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeGuard

from ciq_build.errors import CiqError
from ciq_build.resources import cmake_dir

RULES_NAME = "ciq_build_rules.txt"

# The regex subset that Python's re and CMake's regex engine read the same way ('"' a plain character to both, as a
# CMake variable's value: arch_value_separator's, nvcc's quoted code list).
_REGEX_CHARS = re.compile(r'[A-Za-z0-9_=+\-\[\]()|?*.:/ ,%@<>!"]+')
_REGEX_FORBIDDEN = re.compile(r"\(\?|[?*+][?*+]")
# Characters any allowed flag is made of, checked before the flag lines so that
# a careless edit (a '.*') still cannot admit a space, a quote, a comma
# (-Xptxas=-O3,-Xcompiler=...), a path separator or a NUL.
FLAG_CHARS = re.compile(r"[A-Za-z0-9_=-]+")
# A flag line's literal start: its flag characters before the first pattern character (both readers alike).
FLAG_CHARS_PREFIX = re.compile(r"[A-Za-z0-9_=-]*")


def option_of_other_values(flag: str, patterns: Sequence[re.Pattern[str]]) -> str | None:
    """The option of `flag` (`-maxrregcount` of '-maxrregcount=300') where the allow-list's `patterns` hold it with
    other values only: a flag line's literal start (FLAG_CHARS_PREFIX) up to its last '='. A pin's out-of-range
    value was told "a flag outside the allow-list", of an option the list holds (CMake: _ciq_rules_option_of). A
    flag of other characters (a second argument smuggled in: '-maxrregcount=32 -ccbin=/bin/sh') is no value."""
    if FLAG_CHARS.fullmatch(flag) is None:
        return None
    for pattern in patterns:
        literal = FLAG_CHARS_PREFIX.match(pattern.pattern.removeprefix("(?:"))  # the group parse_rules wraps it in
        option = literal.group(0).rpartition("=")[0] if literal else ""
        if option and flag.startswith(option + "="):
            return option
    return None

_FIELD_TYPES = re.compile(r"(object|open|map:[a-z0-9_]+|array|string|string:[a-z0-9_]+|int|count|number|flag)\??")


class RuleBookError(CiqError):
    """The rule book itself is missing or malformed: the installation is broken."""


@dataclass(frozen=True)
class StringRule:
    min_length: int
    max_length: int
    regex: re.Pattern[str]

    def matches(self, value: str) -> bool:
        return self.min_length <= len(value) <= self.max_length and self.regex.fullmatch(value) is not None


@dataclass(frozen=True)
class Field:
    path: str
    kind: str  # object, open, map, array, string, int, count, number, flag
    pattern: str  # the string or map-key pattern's name, or ""
    nullable: bool
    required: bool


@dataclass(frozen=True)
class RuleBook:
    schema: int
    limits: dict[str, int]
    patterns: dict[str, StringRule]
    flags: tuple[re.Pattern[str], ...]  # the numerics flags included
    numerics: tuple[re.Pattern[str], ...]
    conflicts: tuple[tuple[re.Pattern[str], re.Pattern[str]], ...]
    fields: dict[str, Field]
    words: dict[str, tuple[str, ...]] = field(default_factory=dict)
    messages: dict[str, str] = field(default_factory=dict)

    def message(self, name: str, **values: str) -> str:
        """The rule book's "message <name>" text with each {key} replaced (what CMake says, word for word)."""
        text = self.messages[name]
        for key, value in values.items():
            text = text.replace("{" + key + "}", value)
        return text

    def limit(self, name: str) -> int:
        return self.limits[name]

    def matches(self, pattern: str, value: object) -> bool:
        return isinstance(value, str) and self.patterns[pattern].matches(value)

    def regex_text(self, pattern: str) -> str:
        """`pattern`'s regex as the rule book writes it (unanchored: the CMake module's _ciq_rules_regex)."""
        return self.patterns[pattern].regex.pattern[3:-1]  # _regex wraps it in (?:...)

    def pattern_text(self, pattern: str) -> str:
        """What a string of `pattern` is, for a message: "64 characters matching [0-9a-f]+" (the CMake module's
        _ciq_rules_pattern_text says the same)."""
        rule = self.patterns[pattern]
        length = (str(rule.min_length) if rule.min_length == rule.max_length
                  else f"{rule.min_length} to {rule.max_length}")
        return f"{length} characters matching {self.regex_text(pattern)}"

    def is_flag(self, flag: object) -> bool:
        return (
            isinstance(flag, str)
            and FLAG_CHARS.fullmatch(flag) is not None
            and any(p.fullmatch(flag) for p in self.flags)
        )

    def is_numerics(self, flag: str) -> bool:
        return any(p.fullmatch(flag) for p in self.numerics)

    def conflict(self, flags: Sequence[str]) -> tuple[str, str] | None:
        """The first pair of `flags` that a conflict line forbids (both readers scan alike)."""
        for first, second in self.conflicts:
            for x in flags:
                for y in flags:
                    if first.fullmatch(x) and second.fullmatch(y):
                        return x, y
        return None

    def children(self, path: str) -> list[Field]:
        prefix = path + "." if path else ""
        return [
            f for p, f in self.fields.items()
            if p.startswith(prefix) and "." not in p[len(prefix):] and "[" not in p[len(prefix):]
        ]


def rules_path() -> Path:
    """Where ciq_build_rules.txt is: beside ciq_build-config.cmake, in a checkout or an installed wheel."""
    return cmake_dir() / RULES_NAME


def _regex(text: str, where: str) -> re.Pattern[str]:
    if _REGEX_CHARS.fullmatch(text) is None or _REGEX_FORBIDDEN.search(text) is not None:
        raise RuleBookError(
            f"{where}: regex {text!r} is outside the subset Python and CMake read alike (literals, "
            "[...] classes, ( | ), ?, * and +; no backslash, {n}, anchors or lookarounds)."
        )
    # '.' is a literal only inside a class; outside it would mean "any character".
    if "." in re.sub(r"\[[^\]]*\]", "", text):
        raise RuleBookError(f"{where}: regex {text!r} uses '.' outside a [...] class; write [.] for a dot.")
    try:
        return re.compile(f"(?:{text})")
    except re.error as exc:
        raise RuleBookError(f"{where}: regex {text!r} is not valid: {exc}") from exc


def parse_rules(text: str, source: str = RULES_NAME) -> RuleBook:
    schema = None
    limits: dict[str, int] = {}
    patterns: dict[str, StringRule] = {}
    flags: list[re.Pattern[str]] = []
    numerics: list[re.Pattern[str]] = []
    fields: dict[str, Field] = {}
    conflicts: list[tuple[re.Pattern[str], re.Pattern[str]]] = []
    words: dict[str, tuple[str, ...]] = {}
    messages: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        where = f"{source}:{number}"
        kind, _, rest = line.partition(" ")
        rest = rest.strip()
        if kind == "schema" and rest.isdigit():
            schema = int(rest)
        elif kind == "limit" and (m := re.fullmatch(r"([a-z_]+) ([0-9]+)", rest)):
            limits[m.group(1)] = int(m.group(2))
        elif kind == "pattern" and (m := re.fullmatch(r"([a-z0-9_]+) ([0-9]+)[.][.]([0-9]+) (.+)", rest)):
            patterns[m.group(1)] = StringRule(int(m.group(2)), int(m.group(3)), _regex(m.group(4), where))
        elif kind in ("flag", "numerics") and rest:
            pattern = _regex(rest, where)
            flags.append(pattern)
            if kind == "numerics":
                numerics.append(pattern)
        elif kind == "conflict" and (m := re.fullmatch(r"(\S+) (\S+)", rest)):
            conflicts.append((_regex(m.group(1), where), _regex(m.group(2), where)))
        elif kind == "words" and (m := re.fullmatch(r"([a-z0-9_]+)((?: [A-Za-z0-9_:.-]+)+)", rest)):
            words[m.group(1)] = tuple(m.group(2).split())
        elif kind == "message" and (m := re.fullmatch(r"([a-z0-9_]+) ([^;]+)", rest)):
            messages[m.group(1)] = m.group(2)
        elif kind == "field" and (m := re.fullmatch(r"([a-z0-9_.*\[\]]+) (\S+)( required)?", rest)):
            fields[m.group(1)] = _field(m.group(1), m.group(2), m.group(3) is not None, patterns, where)
        else:
            raise RuleBookError(f"{where}: cannot read the rule {line!r}")
    if schema is None:
        raise RuleBookError(f"{source}: no 'schema' line")
    return RuleBook(schema, limits, patterns, tuple(flags), tuple(numerics), tuple(conflicts), fields, words, messages)


def _field(path: str, spec: str, required: bool, patterns: dict[str, StringRule], where: str) -> Field:
    """A "field <path> <type>[?] [required]" line; its pattern must be declared before it."""
    if _FIELD_TYPES.fullmatch(spec) is None:
        raise RuleBookError(f"{where}: unknown field type {spec!r}")
    base, _, pattern_name = spec.rstrip("?").partition(":")
    if pattern_name and pattern_name not in patterns:
        raise RuleBookError(f"{where}: field {path} names the unknown pattern {pattern_name!r}")
    return Field(path, base, pattern_name, spec.endswith("?"), required)


def load_rules(path: Path | None = None) -> RuleBook:
    where = path if path is not None else rules_path()
    try:
        st = where.stat()
    except OSError as exc:
        raise RuleBookError(f"cannot read the rule book {where}: {exc}; reinstall ciq-build.") from exc
    return _load_cached(str(where), st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=8)
def _load_cached(where: str, mtime_ns: int, size: int) -> RuleBook:
    # Keyed by mtime and size, so an edited rule book is re-read.
    try:
        text = Path(where).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RuleBookError(f"cannot read the rule book {where}: {exc}; reinstall ciq-build.") from exc
    return parse_rules(text, where)


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance (insertions, deletions, substitutions), as _ciq_rules_nearest counts it."""
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, start=1):
        current = [i]
        for j, y in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y)))
        previous = current
    return previous[-1]


def nearest(word: str, candidates: Sequence[str]) -> str | None:
    """The first of `candidates` closest to a misspelt `word`, if it is close enough to be meant:
    at most 2 edits, and at most a third of the word (measured: "regsters", "chioce", "knobz" find
    registers, choice, knobs; "x" finds nothing). _ciq_rules_nearest in CMake chooses alike."""
    best, best_distance = None, max(2, len(word) // 3) + 1
    for candidate in candidates:
        distance = edit_distance(word.lower(), candidate.lower())
        if distance < best_distance and distance <= 2 and 3 * distance <= max(len(word), 3):
            best, best_distance = candidate, distance
    return best


def is_target_name(name: object) -> TypeGuard[str]:
    """Whether `name` is a CMake target name that can also name files (<name>.json): the rule book's
    target_name pattern, which ciq_tune_target() checks too (no '/', no '..', no '::' aliases)."""
    return load_rules().matches("target_name", name)


# --------------------------------------------------------------------------- layer 1: the file


def read_regular_file(path: Path, limit: int, what: str) -> bytes:
    """The bytes of `path`, refusing links, FIFOs, devices and anything over `limit` bytes.

    Opened without following a link and without blocking (a FIFO would wait for
    a writer), checked with fstat on the open descriptor, and read only up to
    the limit: a huge or endless file costs nothing.
    """
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise
    except OSError as exc:
        if os.path.islink(path):
            raise OSError(f"{what} {path} is a symbolic link; a pinned file must be a regular file "
                          "inside the pin directory, not a link") from exc
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"{what} {path} is not a regular file (a FIFO, device or directory); "
                          "a pinned file must be a regular file")
        if st.st_size > limit:
            raise OSError(f"{what} {path} is {st.st_size} bytes, more than the {limit} a pinned file may have")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise OSError(f"{what} {path} grew past {limit} bytes while it was read")
    return data


# --------------------------------------------------------------------------- layer 2: the text

_ESCAPED_BACKSLASH = re.compile(r"\\\\")
_SURROGATE_OR_NUL = re.compile(r"\\u([dD][89a-fA-F][0-9a-fA-F]{2}|0000)")
_ESCAPE = re.compile(r'\\(["\\/bfnrt]|u[0-9a-fA-F]{4})')
_STRING = re.compile(r'"[^"\t\n\r]*"')
_OUTSIDE_CHARS = re.compile(r'[^\[\]{}:, \t\n\r"0-9.eE+truefalsn-]')
_NUMBER = re.compile(r"-?(0|[1-9][0-9]*)([.][0-9]+)?([eE][-+]?[0-9]+)?")
_LONG_EXPONENT = re.compile(r"[eE][-+]?[0-9]{3}")
_LONG_DIGITS = re.compile(r"[0-9.]{41}")
_LITERAL = re.compile(r"true|false|null")
_TOKENS = re.compile(r"[\[\]{}:,SNL \t\n\r]*")
_WHITESPACE = re.compile(r"[ \t\n\r]+")
# Token pairs JSON never has (S string, N number, L literal): what may follow what.
_BAD_PAIR = re.compile(r"[{][^S}]|[\[][,:}]|[:,][\]},:]|S[SNL{\[]|[NL}\]][SNL{\[:]")
_BRACKET_PAIR = re.compile(r"[{][}]|[\[][\]]")
_NON_BRACKET = re.compile(r"[^\[\]{}]")


def syntax_problem(text: str, max_depth: int, max_members: int) -> str | None:
    """Why `text` is outside the strict JSON subset both readers accept, or None.

    CMake's string(JSON) accepts comments, trailing data, trailing commas,
    leading zeros and repeated keys, and aborts on deep nesting; Python's json
    accepts lone surrogates. So both readers first check the text itself, with
    the same regexes in the same order (see _ciq_rules_syntax in the CMake
    module); repeated keys are found afterwards, by counting members.
    """
    if re.search(r"[^\t\n\r -~]", text):
        return "is not plain ASCII text (a NUL, a byte order mark, a control or non-ASCII character)"
    unescaped = _ESCAPED_BACKSLASH.sub("_", text)
    if _SURROGATE_OR_NUL.search(unescaped):
        return "has a \\u escape of a surrogate or NUL, which the two builds would read differently"
    unescaped = _ESCAPE.sub("_", _ESCAPED_BACKSLASH.sub("_", text))
    if "\\" in unescaped:
        return "has an invalid escape (a backslash not followed by one of \" \\ / b f n r t uXXXX)"
    outside = _STRING.sub("S", unescaped)
    if '"' in outside:
        return "has an unterminated string, or a tab or line break inside a string"
    tokens = outside.replace("S", '""')
    if _OUTSIDE_CHARS.search(tokens):
        return "has characters outside strings that JSON does not allow (comments or bare words)"
    if _LONG_EXPONENT.search(tokens) or _LONG_DIGITS.search(tokens):
        return "has a number with more than 40 digits or a 3-digit exponent"
    tokens = _LITERAL.sub("L", _NUMBER.sub("N", tokens.replace('""', "S")))
    if _TOKENS.fullmatch(tokens) is None:
        return "is not JSON (a malformed number or word outside strings)"
    tokens = _WHITESPACE.sub("", tokens)
    if not (tokens.startswith("{") and tokens.endswith("}")):
        return "is not one JSON object"
    if _BAD_PAIR.search(tokens):
        return "is not JSON (a missing or extra comma, colon or value)"
    if tokens.count(":") > max_members:
        return f"has more than {max_members} object members"
    return _nesting_problem(tokens, max_depth) or _grammar_problem(tokens, max_depth)


def _nesting_problem(tokens: str, max_depth: int) -> str | None:
    """syntax_problem's brackets: balanced, one object, at most `max_depth` deep."""
    skeleton = _NON_BRACKET.sub("", tokens)
    for _ in range(max_depth):
        if skeleton == "{}":
            return None
        reduced = _BRACKET_PAIR.sub("", skeleton)
        if reduced == skeleton or reduced == "":
            return "is not one JSON object (unbalanced brackets, or several values)"
        skeleton = reduced
    return f"nests objects and arrays more than {max_depth} deep"


def _grammar_problem(tokens: str, max_depth: int) -> str | None:
    """syntax_problem's grammar, one nesting level per round: values V, members P."""
    tokens = re.sub(r"[SNL]", "V", tokens)
    for _ in range(2 * max_depth + 2):
        if tokens == "V":
            return None
        reduced = re.sub(r"V:V", "P", tokens)
        reduced = re.sub(r"[{][P,]*[}]", "V", reduced)
        reduced = re.sub(r"[\[][V,]*[\]]", "V", reduced)
        if reduced == tokens:
            break
        tokens = reduced
    return "is not JSON (keys and values do not pair up)"


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # CMake's string(JSON) keeps the last of a repeated key; refuse it outright.
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"the key {key!r} appears twice in one object")
        out[key] = value
    return out


def parse_strict(raw: bytes, rules: RuleBook) -> Any:
    """Bytes -> JSON value under the strict subset; ValueError saying what is wrong."""
    if len(raw) > rules.limit("record_bytes"):
        raise ValueError(f"is {len(raw)} bytes, more than the {rules.limit('record_bytes')} a record may have")
    text = raw.decode("latin-1")  # bytes as they are; the ASCII check comes first
    if not text.strip():
        raise ValueError("is empty")
    problem = syntax_problem(text, rules.limit("depth"), rules.limit("members"))
    if problem is not None:
        raise ValueError(problem)
    return json.loads(text, object_pairs_hook=_no_duplicates)


# --------------------------------------------------------------------------- layer 3: the fields

_INT_DIGITS = 15  # exact in a double, and so in CMake's JSON reader


def json_kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null",
            int: "a number", float: "a number"}.get(type(value), type(value).__name__)


def shown_text(text: str) -> str:
    """A record's string as both readers show it in a message (the CMake module's _ciq_rules_shown): in
    single quotes, each byte of its UTF-8 outside printable ASCII as '?', so that no control character of
    an untrusted record reaches a terminal or a log, and nothing else is changed."""
    return "'" + re.sub(rb"[^ -~]", b"?", text.encode("utf-8", "surrogatepass")).decode("ascii") + "'"


def field_problem(rules: RuleBook, data: Any) -> tuple[str, str] | None:
    """(where, problem) for the first field that breaks the rule book's schema, or None."""
    return _check(rules, Field("", "object", "", False, True), "", data)


def _check(rules: RuleBook, field: Field, where: str, value: Any) -> tuple[str, str] | None:
    """(where, problem) for the first part of `value` that breaks `field`'s rule, or None."""
    shown = where or "the record"
    if value is None:
        return None if field.nullable else (shown, "must not be null")
    check = _CHECKS.get(field.kind)
    if check is None:
        raise RuleBookError(f"field {field.path}: unknown kind {field.kind!r}")
    return check(rules, field, where, shown, value)


def _check_map(rules: RuleBook, field: Field, where: str, shown: str, value: Any) -> tuple[str, str] | None:
    if not isinstance(value, dict):
        return shown, f"must be a JSON object, not {json_kind(value)}"
    problem = _over_limit(rules, field, shown, value, "entries")
    if problem:
        return problem
    item = rules.fields[f"{field.path}.*"]
    for key, member in value.items():
        if not rules.matches(field.pattern, key):
            return f"{shown}[{shown_text(key)}]", f"is not a valid key here (it must match the {field.pattern} rule)"
        problem = _check(rules, item, f"{where}.{key}" if where else key, member)
        if problem:
            return problem
    return None


def _check_object(rules: RuleBook, field: Field, where: str, shown: str, value: Any) -> tuple[str, str] | None:
    """An object (its fields only) or an open one (other fields allowed)."""
    if not isinstance(value, dict):
        return shown, f"must be a JSON object, not {json_kind(value)}"
    children = {f.path.rsplit(".", 1)[-1]: f for f in rules.children(field.path)}
    if field.kind == "object":
        unknown = sorted(set(value) - set(children))
        if unknown:
            return f"{where + '.' if where else ''}{unknown[0]}", "is not a field of this record schema"
    for name, child in children.items():
        here = f"{where}.{name}" if where else name
        if name not in value:
            if child.required:
                return here, "is missing"
            continue
        problem = _check(rules, child, here, value[name])
        if problem:
            return problem
    return None


def _check_array(rules: RuleBook, field: Field, where: str, shown: str, value: Any) -> tuple[str, str] | None:
    if not isinstance(value, list):
        return shown, f"must be a list, not {json_kind(value)}"
    problem = _over_limit(rules, field, shown, value, "items")
    if problem:
        return problem
    item = rules.fields[f"{field.path}[]"]
    for i, member in enumerate(value):
        problem = _check(rules, item, f"{where}[{i}]", member)
        if problem:
            return problem
    return None


def _over_limit(rules: RuleBook, field: Field, shown: str, value: dict[str, Any] | list[Any], what: str
                ) -> tuple[str, str] | None:
    """A map's or list's size against the limit named like its field, if there is one."""
    limit_name = field.path.rsplit(".", 1)[-1]
    if limit_name in rules.limits and len(value) > rules.limit(limit_name):
        return shown, f"has {len(value)} {what}, more than {rules.limit(limit_name)}"
    return None


def _check_string(rules: RuleBook, field: Field, where: str, shown: str, value: Any) -> tuple[str, str] | None:
    """A string, or a flag (a string on the allow-list)."""
    if not isinstance(value, str):
        return shown, f"must be a string, not {json_kind(value)}"
    if field.kind == "flag" and not rules.is_flag(value):
        option = option_of_other_values(value, rules.flags)
        return shown, (f"is {shown_text(value)}, a value of {option} outside the allow-list" if option else
                       f"is {shown_text(value)}, a flag outside the allow-list")
    if field.pattern and not rules.matches(field.pattern, value):
        return shown, (f"is {shown_text(value)}, which breaks the {field.pattern} rule "
                       f"({rules.pattern_text(field.pattern)})")
    return None


def _check_int(rules: RuleBook, field: Field, where: str, shown: str, value: Any) -> tuple[str, str] | None:
    """A whole number (int), or one that is not negative (count)."""
    if type(value) is not int or abs(value) >= 10**_INT_DIGITS:
        return shown, f"must be a whole number of at most {_INT_DIGITS} digits, not {value!r}"
    if field.kind == "count" and value < 0:
        return shown, f"must not be negative, not {value!r}"
    return None


def _check_number(rules: RuleBook, field: Field, where: str, shown: str, value: Any) -> tuple[str, str] | None:
    if type(value) not in (int, float):
        return shown, f"must be a number, not {json_kind(value)}"
    return None


# Each field kind's check: (rules, field, where, where as shown, value) -> (where, problem) or None.
_CHECKS: dict[str, Callable[[RuleBook, Field, str, str, Any], tuple[str, str] | None]] = {
    "object": _check_object, "open": _check_object, "map": _check_map, "array": _check_array,
    "string": _check_string, "flag": _check_string, "int": _check_int, "count": _check_int,
    "number": _check_number,
}


# --------------------------------------------------------------------------- PARAMS domains

_PARAM_SPEC = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*=(.*)", re.S)
_CALL = re.compile(r"\s*(choice|literal|range|log_sampling)\s*[(](.*)[)]\s*", re.S)
_SMALL_INT = re.compile(r"[+-]?[0-9]{1,15}")


def declared_params(specs: Sequence[str]) -> dict[str, str]:
    """NAME -> the domain text of each PARAMS entry ("NAME=choice(1,2)" -> {"NAME": "choice(1,2)"})."""
    out: dict[str, str] = {}
    for spec in specs:
        m = _PARAM_SPEC.fullmatch(spec) if isinstance(spec, str) else None
        if m is not None:
            out[m.group(1)] = m.group(2).strip()
    return out


def value_in_domain(domain: str, value: str) -> bool:
    """Whether a pinned -D value lies in its PARAMS domain (the CMake module's _ciq_in_domain).

    choice(a,b), a,b and literal(v): one of the values, as written. range(lo,hi[,step])
    of whole numbers: a canonical integer on the grid lo, lo+step, ... <= hi; other ranges and
    log_sampling(lo,hi[,n]): a number within [lo, hi] (their values are computed
    in floating point, which CMake cannot reproduce, so bounds are what both check).
    """
    call = _CALL.fullmatch(domain)
    fn, body = (call.group(1), call.group(2)) if call else ("choice", domain)
    args = [a.strip() for a in body.split(",")]
    if fn in ("choice", "literal"):
        return value in args and (fn == "choice" or len(args) == 1)
    rules = load_rules()
    if len(args) not in (2, 3) or not all(rules.matches("number", x) for x in args):
        return False
    if fn == "range" and all(_SMALL_INT.fullmatch(x) for x in args):
        # A range of whole numbers: the value as the search writes it, or it is not what was searched.
        if not rules.matches("integer", value):
            return False
        lo, hi, v = int(args[0]), int(args[1]), int(value)
        step = int(args[2]) if len(args) == 3 else 1
        return step > 0 and lo <= v <= hi and (v - lo) % step == 0
    if not rules.matches("number", value):
        return False
    lo_f, hi_f, v_f = float(args[0]), float(args[1]), float(value)
    return lo_f <= v_f <= hi_f
