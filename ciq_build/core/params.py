"""The user's source parameters: ``ciq_tune_target(... PARAMS "TILE=choice(32,64)" ...)``.

Each spec names a C macro and the values the search may give it; a candidate
compiles with ``-DNAME=VALUE``. Forms::

    NAME=choice(a,b,c)          one of the values
    NAME=a,b,c                  the same (shorthand)
    NAME=range(start,end[,step])   start, start+step, ... <= end (numbers)
    NAME=literal(v)             a constant
    NAME=log_sampling(start,end[,total])   `total` values on a log scale (default 10)

Values are kept as written: whole numbers become ints (so they print back
identically), anything else stays a string.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import ciq_build.core.space as ss
from ciq_build.core.rules import load_rules, nearest
from ciq_build.errors import ConfigError

PARAM_PREFIX = "param."

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_VALUE = re.compile(r"[A-Za-z0-9_.+-]+")
_INT = re.compile(r"[+-]?[0-9]+")
# A form's name and what follows its '(' (the forms are the rule book's `words params_form`).
_CALL = re.compile(r"(?P<fn>[A-Za-z_]+)\s*\((?P<rest>.*)", re.S)

SYNTAX = (
    "expected NAME=choice(a,b,c), NAME=a,b,c, NAME=range(start,end[,step]), NAME=literal(v) "
    "or NAME=log_sampling(start,end[,total]); NAME is a C identifier and values use only "
    "letters, digits and _ . + -"
)


def _fail(spec: str, why: str) -> ConfigError:
    return ConfigError(f"PARAMS entry {spec!r}: {why}; {SYNTAX}")


def _value(spec: str, text: str) -> str | int:
    text = text.strip()
    if _VALUE.fullmatch(text) is None or not load_rules().matches("define_value", text):
        raise _fail(spec, f"value {text!r} is not allowed")
    # Only canonical whole numbers become ints: "064" or "+1" must reach -D unchanged.
    if _INT.fullmatch(text) and str(int(text)) == text:
        return int(text)
    return text


def _number(spec: str, text: str, what: str) -> int | float:
    value = _value(spec, text)
    if isinstance(value, int):
        return value
    if not load_rules().matches("number", value):
        raise _fail(spec, f"{what} {value!r} is not a number")
    try:
        return float(value)
    except ValueError:
        raise _fail(spec, f"{what} {value!r} is not a number") from None


def _args(spec: str, text: str) -> list[str]:
    parts = [part.strip() for part in text.split(",")]
    if any(not part for part in parts):
        raise _fail(spec, "empty value")
    return parts


def parse_param(spec: str) -> tuple[str, ss.Param]:
    """("param.NAME", Param) for one spec; ConfigError naming the spec and the syntax."""
    if not isinstance(spec, str) or "=" not in spec:
        raise _fail(str(spec), "no '='")
    name, _, body = spec.partition("=")
    name, body = name.strip(), body.strip()
    if _NAME.fullmatch(name) is None:
        raise _fail(spec, f"{name!r} is not a C identifier")
    if not body:
        raise _fail(spec, "no values")
    call = _CALL.fullmatch(body)
    try:
        if call is None:
            if "(" in body or ")" in body:
                raise _fail(spec, "unknown form")
            return PARAM_PREFIX + name, _choice(spec, _args(spec, body))
        fn, rest = call.group("fn"), call.group("rest")
        forms = load_rules().words["params_form"]
        if fn not in forms:
            guess = nearest(fn, forms)
            hint = f" (did you mean {guess}?)" if guess else ""
            raise _fail(spec, f"unknown form {fn}(...){hint}")
        if not rest.endswith(")"):
            raise _fail(spec, f"the '(' of {fn}( is not closed")
        args = _args(spec, rest[:-1])
        if fn == "choice":
            param: ss.Param = _choice(spec, args)
        elif fn == "literal":
            if len(args) != 1:
                raise _fail(spec, "literal takes exactly one value")
            param = ss.literal(_value(spec, args[0]))
        elif fn == "range":
            if len(args) not in (2, 3):
                raise _fail(spec, "range takes start,end or start,end,step")
            numbers = [_number(spec, a, w) for a, w in zip(args, ("start", "end", "step"))]
            param = ss.range(*numbers)
        elif fn == "log_sampling":
            if len(args) not in (2, 3):
                raise _fail(spec, "log_sampling takes start,end or start,end,total")
            start, end = _number(spec, args[0], "start"), _number(spec, args[1], "end")
            total = _number(spec, args[2], "total") if len(args) == 3 else 10
            if not isinstance(total, int):
                raise _fail(spec, f"total {args[2]!r} must be a whole number")
            param = ss.log_sampling(start, end, total)
        else:
            raise _fail(spec, f"unknown form {fn}(...)")
    except ConfigError as exc:
        if str(exc).startswith("PARAMS entry"):
            raise
        raise _fail(spec, str(exc)) from None
    return PARAM_PREFIX + name, param


def _choice(spec: str, args: list[str]) -> ss.Param:
    values = [_value(spec, a) for a in args]
    if not all(isinstance(v, int) for v in values):
        values = [str(v) for v in values]  # one kind for ss.choice; the text is kept
    return ss.choice(values)


def parse_params(specs: Iterable[str]) -> dict[str, ss.Param]:
    """{"param.NAME": Param} for the target's PARAMS; a NAME given twice is an error."""
    out: dict[str, ss.Param] = {}
    for spec in specs:
        name, param = parse_param(spec)
        if name in out:
            raise _fail(spec, f"{name[len(PARAM_PREFIX):]} is given more than once")
        out[name] = param
    return out
