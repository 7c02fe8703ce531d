"""A dataclass as a JSON document, declared once (scikit-build-core's settings model and to_json_schema).

Each field of such a dataclass carries its JSON form (`Form`, through `in_json`): the JSON Schema
of its value, how a reader takes the value (refusing what the schema refuses, naming the field), and
how a document writes it. A document's schema (`object_schema`), its reader (`read_object`) and its
writer (`document`) are then derived from the dataclass, so a field is declared in one place.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

# (where, problem) -> the exception a reader raises, e.g. ManifestError naming the file.
Fail = Callable[[str, str], Exception]

T = TypeVar("T")


def _same(value: Any) -> Any:
    return value


@dataclass(frozen=True)
class Form:
    """A field's JSON form: its schema (made when asked: some read the rule book), its reader and its writer."""

    schema: Callable[[], dict[str, Any]]
    read: Callable[[Fail, str, Any], Any]  # (fail, where, the JSON value) -> the field's value, or raises
    write: Callable[[Any], Any] = _same  # the field's value -> its JSON value


@dataclass(frozen=True)
class JsonField:
    """What `in_json` declares about one field."""

    form: Form
    help: str  # what the field is, for a reader of the declaration
    optional: bool = False  # a document may leave it out (older writers): the dataclass default is then its value
    shown: str = ""  # the label under which `show` prints it ("": not shown)


def in_json(form: Form, help: str, *, optional: bool = False, shown: str = "") -> dict[str, JsonField]:
    """The metadata of a dataclass field that a JSON document holds, in `form`:
    ``name: str = field(metadata=in_json(TEXT, "what it is"))``."""
    return {"json": JsonField(form, help, optional, shown)}


def json_fields(cls: type) -> dict[str, JsonField]:
    """The fields of `cls` that its JSON document holds, in declaration order (the document's order)."""
    return {f.name: f.metadata["json"] for f in dataclasses.fields(cls) if "json" in f.metadata}


def object_schema(cls: type) -> dict[str, Any]:
    """The JSON Schema of `cls`'s document: its fields, the required ones, nothing else."""
    fields = json_fields(cls)
    return {"type": "object", "properties": {name: f.form.schema() for name, f in fields.items()},
            "required": [name for name, f in fields.items() if not f.optional], "additionalProperties": False}


def as_object(fail: Fail, where: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise fail(where, f"must be a JSON object, not {type(value).__name__}")
    return value


def read_object(cls: type, fail: Fail, where: str, data: dict[str, Any], unknown: str) -> dict[str, Any]:
    """The values of `cls`'s fields in `data` (a document's object at `where`, "" at the top), each read by its
    form: a field `data` lacks is missing unless optional; a key `cls` does not declare is refused (`unknown`
    says why)."""
    prefix = f"{where}." if where else ""
    fields = json_fields(cls)
    extra = sorted(set(data) - set(fields))
    if extra:
        raise fail(prefix + extra[0], unknown)
    values: dict[str, Any] = {}
    for name, declared in fields.items():
        if name in data:
            values[name] = declared.form.read(fail, prefix + name, data[name])
        elif not declared.optional:
            raise fail(prefix + name, "is missing")
    return values


def document(value: Any) -> dict[str, Any]:
    """`value` (an instance of a dataclass declared with in_json) as its JSON document."""
    return {name: f.form.write(getattr(value, name)) for name, f in json_fields(type(value)).items()}


def object_form(cls: type[T], unknown: str) -> Form:
    """The form of a field whose value is another such dataclass."""
    return Form(lambda: object_schema(cls),
                lambda fail, where, value: cls(**read_object(cls, fail, where, as_object(fail, where, value), unknown)),
                document)


def nullable(form: Form) -> Form:
    """`form`, or null."""
    return Form(lambda: {"anyOf": [{"type": "null"}, form.schema()]},
                lambda fail, where, value: None if value is None else form.read(fail, where, value),
                lambda value: None if value is None else form.write(value))


# -- the common forms ----------------------------------------------------------------------

_TEXT = {"type": "string", "pattern": "^[^\\u0000]*$"}  # no NUL: it would cut a path or argument short
_ABSOLUTE = {"type": "string", "pattern": "^/[^\\u0000]*$"}  # POSIX: the build machine's own paths


def read_text(fail: Fail, where: str, value: Any, empty: bool = True) -> str:
    if not isinstance(value, str):
        raise fail(where, f"must be a string, not {type(value).__name__}")
    if not empty and not value:
        raise fail(where, "must not be empty")
    if "\x00" in value:
        raise fail(where, "contains a NUL character")
    return value


def read_texts(fail: Fail, where: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise fail(where, f"must be a list of strings, not {type(value).__name__}")
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise fail(f"{where}[{i}]", f"must be a string, not {type(item).__name__}")
        if "\x00" in item:
            raise fail(f"{where}[{i}]", "contains a NUL character")
    return tuple(value)


def _read_absolute(fail: Fail, where: str, value: Any) -> Path:
    text = read_text(fail, where, value, empty=False)
    if not Path(text).is_absolute():
        raise fail(where, f"must be an absolute path, not {text!r}")
    return Path(text)


def _read_absolutes(fail: Fail, where: str, value: Any) -> tuple[Path, ...]:
    return tuple(_read_absolute(fail, f"{where}[{i}]", item) for i, item in enumerate(read_texts(fail, where, value)))


def _read_bool(fail: Fail, where: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise fail(where, f"must be true or false, not {value!r}")
    return value


TEXT = Form(lambda: dict(_TEXT), read_text)
NONEMPTY = Form(lambda: _TEXT | {"minLength": 1}, lambda fail, where, value: read_text(fail, where, value, empty=False))
TEXTS = Form(lambda: {"type": "array", "items": dict(_TEXT)}, read_texts, list)
ABSOLUTE = Form(lambda: dict(_ABSOLUTE), _read_absolute, str)
ABSOLUTES = Form(lambda: {"type": "array", "items": dict(_ABSOLUTE)}, _read_absolutes,
                 lambda paths: [str(path) for path in paths])
BOOL = Form(lambda: {"type": "boolean"}, _read_bool)
