"""A JSON Schema of the pinned record, derived from the rule book.

    python -m ciq_build.pin.schema > docs/pinned-record.schema.json

The rule book (cmake/ciq_build_rules.txt) is the one definition of what a
record may hold; this module only translates its `field`, `pattern`, `flag`
and `limit` lines into JSON Schema (draft 2020-12) for editors and other
tools. What a schema cannot say stays with the readers: the size, depth and
member limits of the whole file, duplicate keys, declared PARAMS and their
domains, conflicting flags, and the ACF's hash. A record the schema accepts
may still be refused by a build; one it refuses is refused by every build.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from ciq_build.core.rules import FLAG_CHARS, Field, RuleBook, StringRule, load_rules

SCHEMA_ID = "https://ciq-build.invalid/pinned-record.schema.json"  # a name, not a place to fetch


def _string(rule: StringRule) -> dict[str, Any]:
    return {"type": "string", "minLength": rule.min_length, "maxLength": rule.max_length,
            "pattern": f"^(?:{rule.regex.pattern})$"}


def _leaf(field: Field, rules: RuleBook) -> dict[str, Any]:
    if field.kind == "string":
        return _string(rules.patterns[field.pattern]) if field.pattern else {"type": "string"}
    if field.kind == "int":
        return {"type": "integer"}
    if field.kind == "count":
        return {"type": "integer", "minimum": 0}
    if field.kind == "number":
        return {"type": "number"}
    if field.kind == "flag":
        return {"type": "string", "pattern": f"^{FLAG_CHARS.pattern}$",
                "anyOf": [{"pattern": f"^(?:{p.pattern})$"} for p in rules.flags]}
    raise ValueError(f"rule book field {field.path}: no JSON Schema for kind {field.kind!r}")


def _node(path: str, rules: RuleBook) -> dict[str, Any]:
    field = rules.fields[path]
    limit = rules.limits.get(path.rsplit(".", 1)[-1].removesuffix("[]"))
    if field.kind in ("object", "open"):
        children = rules.children(path)
        schema: dict[str, Any] = {
            "type": "object",
            "properties": {child.path.rsplit(".", 1)[-1]: _node(child.path, rules) for child in children},
            "additionalProperties": field.kind == "open",
        }
        required = [child.path.rsplit(".", 1)[-1] for child in children if child.required]
        if required:
            schema["required"] = required
    elif field.kind == "map":
        schema = {"type": "object", "propertyNames": _string(rules.patterns[field.pattern])}
        if f"{path}.*" in rules.fields:
            schema["additionalProperties"] = _node(f"{path}.*", rules)
        if limit is not None:
            schema["maxProperties"] = limit
    elif field.kind == "array":
        schema = {"type": "array"}
        if f"{path}[]" in rules.fields:
            schema["items"] = _node(f"{path}[]", rules)
        if limit is not None:
            schema["maxItems"] = limit
    else:
        schema = _leaf(field, rules)
    if field.nullable:
        schema = {"anyOf": [schema, {"type": "null"}]}
    return schema


def record_schema(rules: RuleBook | None = None) -> dict[str, Any]:
    """The JSON Schema of a pinned record, from the rule book."""
    rules = rules or load_rules()
    top = [f for f in rules.fields.values() if "." not in f.path and "[" not in f.path]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "ciq_build pinned record (<pin dir>/<target>.json)",
        "description": "Generated from cmake/ciq_build_rules.txt by `python -m ciq_build.pin.schema`; "
                       "the rule book is the definition, builds also check what a schema cannot.",
        "type": "object",
        "properties": {f.path: _node(f.path, rules) for f in top} | {"schema": {"const": rules.schema}},
        "required": [f.path for f in top if f.required],
        "additionalProperties": False,
    }


def main() -> int:
    json.dump(record_schema(), sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
