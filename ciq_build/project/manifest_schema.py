"""The JSON Schema of a target's manifest (<build dir>/ciq/targets/<target>.json), declared once.

    python -m ciq_build.project.manifest_schema > docs/target-manifest.schema.json

Two writers make manifests: the CMake module (cmake/ciq_build.cmake,
file(GENERATE)) and the setuptools backend (ciq_build.setuptools_tune, through
ciq_build.project.manifest.manifest_document). One reader takes them
(ciq_build.project.manifest.read_manifest). This declaration is what the three
agree on: the fields, their JSON types, which are absolute paths and which
are required. The reader takes its field set from it, the tests check that
every writer's output validates and that the reader refuses whatever the
schema refuses. What a schema cannot say stays with the reader: that the
target names its file, that every object lies under object_dir, that METRIC
compiles with a group, that the objectives parse and that a benchmark
objective has a benchmark.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from ciq_build.core.rules import load_rules

SCHEMA_ID = "https://ciq-build.invalid/target-manifest.schema.json"  # a name, not a place to fetch
MANIFEST_SCHEMA = 2  # 2: "objects", the target's object files as CMake names them
METRIC_UNITS = ("s", "ms", "us", "ns")  # UNIT of ciq_tune_target() (ciq_build.measure.protocol.METRIC_UNITS)

_TEXT = {"type": "string", "pattern": "^[^\\u0000]*$"}  # no NUL: it would cut a path or argument short
_NONEMPTY = _TEXT | {"minLength": 1}
_ABSOLUTE = {"type": "string", "pattern": "^/[^\\u0000]*$"}  # POSIX: the build machine's own paths
_TEXTS = {"type": "array", "items": _TEXT}
_ABSOLUTES = {"type": "array", "items": _ABSOLUTE}


def _object(properties: dict[str, dict[str, Any]], optional: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"type": "object", "properties": properties,
            "required": [name for name in properties if name not in optional], "additionalProperties": False}


# The one declaration: field -> its schema. A field the writers may leave out is named in _OPTIONAL.
# A manifest from before UNIT meant milliseconds; one from before CONSTRAINTS or SEEDS had none.
_OPTIONAL = ("metric_unit", "constraints", "seeds")


def _args_set_name() -> dict[str, Any]:
    rule = load_rules().patterns["args_set_name"]
    return {"type": "string", "pattern": f"^(?:{rule.regex.pattern})$", "minLength": rule.min_length,
            "maxLength": rule.max_length}


def _fields() -> dict[str, dict[str, Any]]:
    target_name = load_rules().patterns["target_name"]
    return {
        "schema": {"const": MANIFEST_SCHEMA},
        "target": {"type": "string", "pattern": f"^(?:{target_name.regex.pattern})$",
                   "minLength": target_name.min_length, "maxLength": target_name.max_length},
        "source_dir": _ABSOLUTE,  # CMAKE_SOURCE_DIR
        "binary_dir": _ABSOLUTE,  # CMAKE_BINARY_DIR
        "target_source_dir": _ABSOLUTE,
        "target_binary_dir": _ABSOLUTE,
        "cuda_sources": _ABSOLUTES,
        "object_dir": _ABSOLUTE,  # what object names in a pin's fingerprints are relative to
        "objects": _ABSOLUTES,  # $<TARGET_OBJECTS:target>
        # args_sets (ARGS_SETS): the problem sizes scored together, each run once per repeat; score
        # (SCORE): how their ratios to the defaults make one score. Left out: one size, ARGS.
        "benchmark": {"anyOf": [{"type": "null"},
                                _object({"target": _NONEMPTY, "path": _ABSOLUTE, "args": _TEXTS,
                                         "args_sets": {"type": "array", "items": _object(
                                             {"name": _args_set_name(), "args": _TEXTS})},
                                         "score": {"enum": list(load_rules().words["score"])}},
                                        ("args_sets", "score"))]},
        "metric_regex": _TEXT,
        "metric_unit": {"enum": list(METRIC_UNITS)},
        "objectives": _TEXTS,
        "params": _TEXTS,
        "constraints": _TEXTS,  # CONSTRAINTS: expressions over the PARAMS names
        "seeds": _TEXTS,  # SEEDS: records, ACFs, folders of them (absolute paths) or controls lists
        "search_space": _TEXTS,
        "pin_dir": _ABSOLUTE,
        "pin_file": _ABSOLUTE,
        "timeout": {"type": "number", "exclusiveMinimum": 0},
        "options_file": _ABSOLUTE,
        "generator": _NONEMPTY,
        "allow_numerics": {"type": "boolean"},
        "toolchain": _object({"cuda_compiler": _ABSOLUTE, "cuda_compiler_version": _TEXT, "architectures": _TEXT}),
    }


def manifest_fields() -> frozenset[str]:
    """The top-level fields a manifest may have."""
    return frozenset(_fields())


def manifest_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a target's manifest."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "ciq_build target manifest (<build dir>/ciq/targets/<target>.json)",
        "description": "Generated by `python -m ciq_build.project.manifest_schema`; written by the CMake module "
                       "and the setuptools backend, read by ciq_build.project.manifest, which also checks what "
                       "a schema cannot.",
    } | _object(_fields(), _OPTIONAL)


def main() -> int:
    json.dump(manifest_schema(), sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
