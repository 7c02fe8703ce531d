"""The published JSON Schema of a target's manifest (docs/target-manifest.schema.json).

It is generated from one declaration (ciq_build.project.manifest_schema), so it
must be exactly what the generator writes today; the reader must refuse
whatever it refuses. That every writer's output validates is checked where
each writer runs: the CMake module's in tests/cmake/test_cmake_module.py, the
setuptools backend's in tests/entry/test_setuptools_tune.py, both through
`assert_valid_manifest` here.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from test_manifest import valid_manifest, write_manifest

from ciq_build.errors import ManifestError
from ciq_build.project.manifest import manifest_document, read_manifest
from ciq_build.project.manifest_schema import manifest_schema
from support import REPO_ROOT

REPO = REPO_ROOT
PUBLISHED = REPO / "docs" / "target-manifest.schema.json"


def assert_valid_manifest(document: Any) -> None:
    """`document` (a manifest as a writer made it) passes the published schema."""
    validator = jsonschema.Draft202012Validator(json.loads(PUBLISHED.read_text()))
    assert [error.message for error in validator.iter_errors(document)] == []


def test_the_published_schema_is_what_the_declaration_generates() -> None:
    published = json.loads(PUBLISHED.read_text())
    assert published == manifest_schema(), (
        "docs/target-manifest.schema.json is stale: run "
        "`python -m ciq_build.project.manifest_schema > docs/target-manifest.schema.json`")
    jsonschema.Draft202012Validator.check_schema(published)


def _wrong_values(schema: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """Values `schema` refuses, each named: another JSON type, and for strings what their pattern refuses."""
    yield from (("null", None), ("bool", True), ("number", 7), ("string", "x"), ("list", ["x"]), ("object", {"x": 1}))
    for alternative in schema.get("anyOf", [schema]):
        if alternative.get("type") == "string":
            yield "relative path", "relative/path"
            yield "empty", ""
            yield "NUL", "/a\x00b"
        if alternative.get("type") == "array":
            yield "list of numbers", [1]
            yield "list with a relative path", ["relative/path"]
        if alternative.get("type") == "number":
            yield "zero", 0
            yield "negative", -1.5


def _mutations(document: dict[str, Any], schema: dict[str, Any], where: str = "") -> Iterator[tuple[str, Any]]:
    """Copies of `document` that break it at one place each, walking the schema's objects."""
    for name in schema.get("required", []):
        yield f"{where}{name} missing", {k: v for k, v in document.items() if k != name}
    yield f"{where}unknown field", document | {"not_a_field": 1}
    for name, field_schema in schema["properties"].items():
        if name not in document:
            continue
        for what, value in _wrong_values(field_schema):
            yield f"{where}{name} = {what}", document | {name: value}
        for alternative in field_schema.get("anyOf", [field_schema]):
            if alternative.get("type") == "object" and isinstance(document[name], dict):
                for what, inner in _mutations(document[name], alternative, f"{where}{name}."):
                    yield what, document | {name: inner}


def test_the_reader_refuses_whatever_the_schema_refuses(tmp_path: Path) -> None:
    validator = jsonschema.Draft202012Validator(manifest_schema())
    build = tmp_path / "build"
    base = valid_manifest(build)
    assert validator.is_valid(base)
    read_manifest(write_manifest(build, base))
    refused = 0
    for what, document in _mutations(base, manifest_schema()):
        if validator.is_valid(document):
            continue  # e.g. "" for metric_regex: both accept it
        refused += 1
        with pytest.raises(ManifestError):
            read_manifest(write_manifest(build, document))
            pytest.fail(f"{what}: the schema refuses it, the reader took it")
    assert refused > 150  # every field, in every wrong way: the walk reached them all


def test_a_manifest_document_is_read_back_as_the_same_manifest(tmp_path: Path) -> None:
    build = tmp_path / "build"
    manifest = read_manifest(write_manifest(build, valid_manifest(build)))
    document = manifest_document(manifest)
    assert_valid_manifest(document)
    assert read_manifest(write_manifest(build, document)) == manifest
