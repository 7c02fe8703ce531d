"""The published JSON Schema of the pinned record (docs/pinned-record.schema.json).

It is generated from the rule book, so it must be exactly what the generator
writes today, and it must never accept what a build refuses on the same
grounds: every record of the rule-book agreement test that the schema refuses
is refused by the real reader too, and the readers' valid records pass it.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from test_rule_book_agreement import generated, hand_written, prepare

from ciq_build.errors import CiqError
from ciq_build.pin.apply import resolve_build_pin
from ciq_build.pin.schema import record_schema
from support import REPO_ROOT

REPO = REPO_ROOT
PUBLISHED = REPO / "docs" / "pinned-record.schema.json"


def test_the_published_schema_is_what_the_rule_book_generates() -> None:
    published = json.loads(PUBLISHED.read_text())
    assert published == record_schema(), (
        "docs/pinned-record.schema.json is stale: run `python -m ciq_build.pin.schema > docs/pinned-record.schema.json`")
    jsonschema.Draft202012Validator.check_schema(published)


def test_the_sample_pin_is_valid() -> None:
    validator = jsonschema.Draft202012Validator(json.loads(PUBLISHED.read_text()))
    record = json.loads((REPO / "sample_extension" / "ciq" / "gemm_kernels.json").read_text())
    assert list(validator.iter_errors(record)) == []


@pytest.mark.parametrize("cases", [hand_written, generated], ids=["hand-written", "generated"])
@pytest.mark.slow
def test_the_schema_never_accepts_less_than_a_build_would_refuse_it_for(tmp_path: Path, cases) -> None:
    validator = jsonschema.Draft202012Validator(record_schema())
    accepted_by_both = refused_by_both = 0
    for p in prepare(cases(), tmp_path):
        if p.case.text is None:
            continue
        try:
            document = json.loads(p.case.text)
        except ValueError:
            continue  # not JSON at all: no schema question
        schema_ok = validator.is_valid(document)
        try:
            resolve_build_pin("kern", p.pin_file.parent, params=p.case.params,
                              allow_numerics=p.case.allow_numerics, cuda=p.case.cuda, strict=False,
                              disabled=False, copy_dir=p.build_dir, ptxas=p.case.ptxas,
                              architectures=p.case.architectures)
            reader_ok = True
        except CiqError:
            reader_ok = False
        if reader_ok:
            assert schema_ok, f"{p.case.name}: the readers accept it, the schema does not"
            accepted_by_both += 1
        elif not schema_ok:
            refused_by_both += 1
    assert accepted_by_both > 10 and refused_by_both > 10  # both sides of the line were tried
