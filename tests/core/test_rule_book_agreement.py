"""One rule book, two readers: the same verdict from Python and from the real CMake module.

Every record here, hostile or valid, hand-written or generated, is written into
a pin directory of its own and judged twice: by ``lock.resolve_build_pin`` (what
tune, verify and the setuptools build use) and by the CMake module's
``_ciq_resolve_pin`` through ``cmake/ciq_build_check_pin.cmake`` (the same
functions configure runs, many records per process). The test asserts the same
status (applied / none / skipped / refused) and, when applied, the same nvcc
arguments, for every record; where a case names the verdict it must get
(``expect``), both must reach that one. A real configure of a CUDA project
(ciq_tune_target() and the finalize step CMake defers) judges a selection too. It also bounds the time: a hostile record must
not make either reader hang or crawl.
"""

from __future__ import annotations

import json
import random
import re
import resource
import time
from pathlib import Path

import pytest

from bench.pin_readers.hostile import EVALUATED, PROBE_VALUE, hostile_cases
from bench.pin_readers.readers import (
    ACF,
    ACF_SHA,
    PARAMS,
    Case,
    Prepared,
    Verdict,
    as_json,
    per_architecture_record,
    prepare,
    python_verdict,
    reason,
    valid_record,
    with_value,
)
from bench.pin_readers.readers import cmake_verdicts as cmake_run
from ciq_build.compiler.architectures import flag_architectures
from ciq_build.core.constraints import syntax_problem as constraint_syntax_problem
from ciq_build.core.objectives import parse_objective
from ciq_build.core.params import parse_param
from ciq_build.core.rules import RuleBook, load_rules, nearest, shown_text
from ciq_build.errors import CiqError, ConfigError
from ciq_build.measure.proc import run
from ciq_build.project.per_block import SETTINGS
from support import REPO_ROOT, build_tool


def cmake_verdicts(prepared: list[Prepared], tmp: Path, cmake: str) -> list[Verdict]:
    """CMake's verdicts, failing the test where CMake stopped instead of judging a record."""
    found, tail = cmake_run(prepared, tmp, cmake, probe=PROBE_VALUE)
    if None in found:
        stopped = found.index(None)
        pytest.fail(f"CMake stopped at case {stopped + 1} ({prepared[stopped].case.name}):\n{tail}")
    return [v for v in found if v is not None]















def per_architecture_cases() -> list[Case]:
    """Per-architecture records, valid and hostile (setup 'other-acf' plants kern.90a.acf)."""
    pa = per_architecture_record()
    same = per_architecture_record(a90a={"controls": {"flags": ["-maxrregcount=32"],
                                                      "defines": {"TILE": "64", "UNROLL": "3"}}})
    both = ("80", "90a")
    return [
        Case("per-arch: differing controls, applied per -gencode", as_json(pa), architectures=both, setup="other-acf"),
        Case("per-arch: in other spellings", as_json(pa), architectures=("sm_80", "90a-real"), setup="other-acf"),
        Case("per-arch: identical entries are plain nvcc", as_json(same), architectures=both),
        Case("per-arch: one entry, the other architecture takes the record's controls",
             as_json(per_architecture_record(a90a=...)), architectures=both),
        Case("per-arch: entry with compiler defaults", as_json(per_architecture_record(a90a={"controls": {
            "defines": {"TILE": "64", "UNROLL": "3"}}})), architectures=both),
        Case("per-arch: building for one of them skips", as_json(pa), architectures=("80",), setup="other-acf"),
        Case("per-arch: CUDA mismatch skips", as_json(pa), architectures=both, cuda="13.0", setup="other-acf"),
        Case("per-arch: entry's ptxas ACF meets another ptxas, skips", as_json(pa), architectures=both, ptxas="13.0",
             setup="other-acf"),
        Case("per-arch: empty map is a single-winner record", as_json(with_value("per_architecture", {}, pa)),
             architectures=both),
        Case("per-arch: entry for an architecture not tuned", as_json(per_architecture_record(a75={"controls": {}})),
             architectures=both, setup="other-acf"),
        Case("per-arch: key sm_80", as_json(per_architecture_record(a80=..., **{"asm_80": pa["per_architecture"]["80"]})),
             architectures=both, setup="other-acf"),
        Case("per-arch: key 90A", as_json(per_architecture_record(a90a=..., a90A=pa["per_architecture"]["90a"])),
             architectures=both, setup="other-acf"),
        Case("per-arch: key 90a-real", as_json(per_architecture_record(
            a90a=..., **{"a90a-real": pa["per_architecture"]["90a"]})), architectures=both, setup="other-acf"),
        Case("per-arch: a key twice", as_json(pa).replace(b'"80": {', b'"80": {"controls": {}}, "80": {', 1),
             architectures=both, setup="other-acf"),
        Case("per-arch: defines differ", as_json(with_value("per_architecture.80.controls.defines", {"TILE": "32",
                                                                                            "UNROLL": "3"}, pa)),
             architectures=both, setup="other-acf"),
        Case("per-arch: defines differ from the record's", as_json(per_architecture_record(
            a90a=..., a80={"controls": {"defines": {"TILE": "128", "UNROLL": "3"}}})), architectures=both),
        Case("per-arch: unused record controls' define outside its domain",
             as_json(with_value("controls.defines", {"TILE": "48"}, pa)), architectures=both, setup="other-acf"),
        Case("per-arch: entry define not a PARAM", as_json(with_value("per_architecture.80.controls.defines",
                                                               {"NDEBUG": "1"}, pa)), architectures=both,
             setup="other-acf"),
        Case("per-arch: entry numerics without consent", as_json(with_value("per_architecture.80.controls.flags",
                                                                     ["-ftz=true"], pa)), architectures=both,
             setup="other-acf"),
        Case("per-arch: entry numerics with consent", as_json(with_value("per_architecture.80.controls.flags",
                                                                  ["-ftz=true"], pa)), architectures=both,
             allow_numerics=True, setup="other-acf"),
        Case("per-arch: entry flag off the list", as_json(with_value("per_architecture.80.controls.flags",
                                                              ["-Xcompiler=-fplugin=x.so"], pa)), architectures=both,
             setup="other-acf"),
        Case("per-arch: entry same option twice", as_json(with_value("per_architecture.80.controls.flags",
                                                              ["-Xptxas=-O1", "-Xptxas=-O3"], pa)),
             architectures=both, setup="other-acf"),
        Case("per-arch: entry ptxas conflict", as_json(with_value("per_architecture.80.controls.flags",
                                                           ["--Ofast-compile=max", "-Xptxas=-O2"], pa)),
             architectures=both, setup="other-acf"),
        Case("per-arch: entry nvcc ACF", as_json(with_value("per_architecture.90a.controls.acf.compiler", "nvcc", pa)),
             architectures=both, setup="other-acf"),
        Case("per-arch: entry ACF missing", as_json(pa), architectures=both),
        Case("per-arch: entry ACF wrong sha256", as_json(with_value("per_architecture.90a.controls.acf.sha256", ACF_SHA,
                                                             pa)), architectures=both, setup="other-acf"),
        Case("per-arch: entry ACF out of the pin dir", as_json(with_value("per_architecture.90a.controls.acf.file",
                                                                   "../kern.90a.acf", pa)), architectures=both,
             setup="other-acf"),
        Case("per-arch: entry ACF shared with the record's", as_json(with_value("per_architecture.90a.controls.acf",
                                                                         {"file": "kern.acf", "sha256": ACF_SHA,
                                                                          "compiler": "ptxas"}, pa)),
             architectures=both),
        Case("per-arch: pin dir with a space, entry ACF through a copy", as_json(pa), architectures=both,
             setup="other-acf", pin_dir_name="my pins"),
        Case("per-arch: entry without controls", as_json(per_architecture_record(a80={"provenance": {}})),
             architectures=both, setup="other-acf"),
        Case("per-arch: unknown entry key", as_json(with_value("per_architecture.80.objects", {}, pa)), architectures=both,
             setup="other-acf"),
        Case("per-arch: entry scores short", as_json(with_value("per_architecture.80.winner.scores", [1.0], pa)),
             architectures=both, setup="other-acf"),
        Case("per-arch: entry winner null", as_json(with_value("per_architecture.80.winner", None, pa)), architectures=both,
             setup="other-acf"),
        Case("per-arch: map a list", as_json(with_value("per_architecture", [], pa)), architectures=both),
        Case("per-arch: map null", as_json(with_value("per_architecture", None, pa)), architectures=both),
        Case("per-arch: 33 entries", as_json(with_value("per_architecture", {str(100 + i): {"controls": {}}
                                                                       for i in range(33)}, pa)), architectures=both),
        Case("per-arch: record without architectures", as_json(with_value("toolchain.architectures", ..., pa)),
             architectures=both, setup="other-acf"),
    ]


def hand_written() -> list[Case]:
    v = valid_record()
    text = as_json(v)
    cases = [
        Case("valid", text),
        Case("valid, compact", json.dumps(v, separators=(",", ":")).encode()),
        Case("valid, no acf", as_json(with_value("controls.acf", ...)), acf=None),
        Case("valid, acf null", as_json(with_value("controls.acf", None)), acf=None),
        Case("valid, minimal", as_json({"schema": 1, "target": "kern", "controls": {}, "toolchain": {"cuda": "13.3"}})),
        Case("no record", None),
        Case("cuda mismatch skips", text, cuda="13.0"),
        Case("nvcc acf", as_json(with_value("controls.acf.compiler", "nvcc"))),
        Case("ptxas acf read by another ptxas skips", text, ptxas="13.0"),
        Case("ptxas acf, building ptxas unknown", text, ptxas=""),
        Case("nvcc acf ignores the ptxas version", as_json(with_value("controls.acf.compiler", "nvcc")), ptxas="13.0"),
        Case("no acf ignores the ptxas version", as_json(with_value("controls.acf", ...)), acf=None, ptxas="13.0"),
        Case("record's ptxas 13.03 is 13.3", as_json(with_value("toolchain.ptxas_version", "13.03.1")), ptxas="13.3"),
        Case("nvcc 13.0 with a swapped-in ptxas 13.3", as_json(with_value("toolchain.cuda", "13.0")), cuda="13.0"),
        Case("tuned for 90a, building for 75 skips", text, architectures=("75",)),
        Case("tuned for 90a, building for 90a and 80 skips", text, architectures=("90a", "80")),
        Case("tuned for 90a, building for nvcc's default skips", text, architectures=()),
        Case("sm_90a is 90a", text, architectures=("sm_90a",)),
        Case("90a-real is 90a", text, architectures=("90a-real",)),
        Case("90A is 90a", text, architectures=("90A",)),
        Case("90a twice is 90a", text, architectures=("90a", "90a-real")),
        Case("two architectures in any order", as_json(with_value("toolchain.architectures", ["80", "90a"])),
             architectures=("90a", "80-real")),
        Case("90 is not 90a", text, architectures=("90",)),
        Case("record without architectures fits any", as_json(with_value("toolchain.architectures", ...)),
             architectures=("75",),
             said="(the record names no architecture: tuned for nvcc's default, applied to any)"),
        Case("record with no architectures fits any", as_json(with_value("toolchain.architectures", [])),
             architectures=("75",)),
        Case("CUDA mismatch and architecture mismatch", as_json(with_value("toolchain.cuda", "12.8")), architectures=("75",)),
        Case("pin dir with a space: the ACF goes through a copy", text, pin_dir_name="my pins"),
        Case("pin dir with '&' and '|': copy", text, pin_dir_name="p&touch x"),
        Case("pin dir with $( ): copy", text, pin_dir_name="p$(id)"),
        # The defects of issue 8, as records.
        Case("NDEBUG is not a PARAM", as_json(with_value("controls.defines", {"NDEBUG": "1"}))),
        Case("float=double", as_json(with_value("controls.defines", {"float": "double"}))),
        Case("cudaMemcpy=cudaMemset", as_json(with_value("controls.defines", {"cudaMemcpy": "cudaMemset"}))),
        Case("define outside choice", as_json(with_value("controls.defines", {"TILE": "48"}))),
        Case("define outside range", as_json(with_value("controls.defines", {"UNROLL": "9"}))),
        Case("define off the range grid", as_json(with_value("controls.defines", {"STEP": "6"}))),
        Case("define on the range grid", as_json(with_value("controls.defines", {"STEP": "8"}))),
        Case("log_sampling inside", as_json(with_value("controls.defines", {"SCALE": "31.6227766017"}))),
        Case("log_sampling outside", as_json(with_value("controls.defines", {"SCALE": "100.5"}))),
        Case("bare list", as_json(with_value("controls.defines", {"MODE": "safe"}))),
        Case("bare list outside", as_json(with_value("controls.defines", {"MODE": "slow"}))),
        Case("literal", as_json(with_value("controls.defines", {"ONE": "7"}))),
        Case("literal outside", as_json(with_value("controls.defines", {"ONE": "8"}))),
        Case("define with no PARAMS at all", text, params=()),
        Case("define value a number", as_json(with_value("controls.defines", {"TILE": 64}))),
        Case("numerics without consent", as_json(with_value("controls.flags", ["--use_fast_math"]))),
        Case("numerics with consent", as_json(with_value("controls.flags", ["--use_fast_math"])), allow_numerics=True),
        Case("flag off the list", as_json(with_value("controls.flags", ["-Xcompiler=-fplugin=x.so"]))),
        Case("apply-controls as a flag", as_json(with_value("controls.flags", ["-Xptxas=--apply-controls=/etc/passwd"]))),
        Case("same option twice", as_json(with_value("controls.flags", ["-Xptxas=-O1", "-Xptxas=-O3"]))),
        Case("same flag twice is one flag", as_json(with_value("controls.flags", ["-Xptxas=-O1", "-Xptxas=-O1"]))),
        Case("ptxas conflict", as_json(with_value("controls.flags", ["--Ofast-compile=max", "-Xptxas=-O2"]))),
        Case("ptxas conflict 2", as_json(with_value("controls.flags",
                                             ["--Ofast-compile=min", "-Xptxas=--allow-expensive-optimizations=false"]))),
        Case("schema as a string", as_json(with_value("schema", "1"))),
        Case("schema 2", as_json(with_value("schema", 2))),
        Case("schema 1.0", text.replace(b'"schema": 1', b'"schema": 1.0')),
        Case("schema 1e0", text.replace(b'"schema": 1', b'"schema": 1e0')),
        Case("unknown top key", as_json(with_value("extra", 1))),
        Case("unknown controls key", as_json(with_value("controls.run", "x"))),
        Case("unknown acf key", as_json(with_value("controls.acf.path", "/etc/passwd"))),
        Case("duplicate key", text.replace(b'"schema": 1,', b'"schema": 1, "schema": 1,')),
        Case("duplicate define", text.replace(b'"TILE": "64",', b'"TILE": "64", "TILE": "32",')),
        Case("duplicate key via escape", text.replace(b'"schema": 1,', b'"schema": 1, "\\u0073chema": 1,')),
        Case("trailing data", text + b"{}"),
        Case("trailing garbage", text + b" x"),
        Case("trailing whitespace", text + b"\n\n  \t"),
        Case("comment", text.replace(b'"schema": 1,', b'"schema": 1, /* hi */')),
        Case("line comment", text.replace(b'"schema": 1,', b'"schema": 1, // hi\n')),
        Case("trailing comma", text.replace(b'"seed": 1,', b'"seed": 1,,')),
        Case("trailing comma in object", text[:-1].rstrip() + b",}"),
        Case("BOM", b"\xef\xbb\xbf" + text),
        Case("upper-case sha256", as_json(with_value("controls.acf.sha256", ACF_SHA.upper()))),
        Case("wrong sha256", as_json(with_value("controls.acf.sha256", "0" * 64))),
        Case("NUL in the file", text.replace(b'"genetic"', b'"gen\x00etic"')),
        Case("NUL escape in target", as_json(with_value("target", "kern\u0000x"))),
        Case("NUL escape in provenance", as_json(with_value("provenance.note", "a\u0000b"))),
        Case("cuda 13.03", as_json(with_value("toolchain.cuda", "13.03"))),
        Case("cuda 13", as_json(with_value("toolchain.cuda", "13"))),
        Case("cuda ' 13.3'", as_json(with_value("toolchain.cuda", " 13.3"))),
        Case("lone surrogate", text.replace(b'"genetic"', b'"\\ud800"')),
        Case("surrogate pair", text.replace(b'"genetic"', b'"\\ud83d\\ude00"')),
        Case("escaped backslash then u", text.replace(b'"genetic"', b'"\\\\ud800"')),
        Case("non-ASCII UTF-8", text.replace(b'"genetic"', "\"g\u00e9n\u00e9tique\"".encode())),
        Case("non-ASCII escaped", text.replace(b'"genetic"', b'"g\\u00e9n"')),
        Case("raw tab in string", text.replace(b'"genetic"', b'"gen\tetic"')),
        Case("raw newline in string", text.replace(b'"genetic"', b'"gen\netic"')),
        Case("invalid escape", text.replace(b'"genetic"', b'"gen\\qetic"')),
        Case("leading zero", text.replace(b'"seed": 1', b'"seed": 01')),
        Case("NaN", text.replace(b'"seed": 1', b'"seed": NaN')),
        Case("Infinity", text.replace(b'1.5, 40', b'Infinity, 40')),
        Case("huge exponent", text.replace(b'1.5, 40', b'1e400, 40')),
        Case("huge integer score", text.replace(b'1.5, 40', b'1' + b'0' * 39 + b', 40')),
        Case("too many digits", text.replace(b'1.5, 40', b'1' + b'0' * 41 + b', 40')),
        Case("16-digit seed", text.replace(b'"seed": 1', b'"seed": 1234567890123456')),
        Case("15-digit seed", text.replace(b'"seed": 1', b'"seed": 123456789012345')),
        Case("negative zero seed", text.replace(b'"seed": 1', b'"seed": -0')),
        Case("seed 1.0", text.replace(b'"seed": 1', b'"seed": 1.0')),
        Case("seed null", text.replace(b'"seed": 1', b'"seed": null')),
        Case("negative registers", text.replace(b'"registers": 38', b'"registers": -1')),
        Case("registers -0", text.replace(b'"registers": 38', b'"registers": -0')),
        Case("a list at the top", b"[" + text + b"]"),
        Case("a string at the top", b'"x"'),
        Case("empty file", b""),
        Case("only whitespace", b"  \n"),
        Case("truncated", text[: len(text) // 2]),
        Case("deep nesting 2000", text.replace(b'"free": [1', b'"free": [' + b"[" * 2000 + b"]" * 2000 + b", 1")),
        Case("nesting 15 deep in provenance", as_json(with_value("provenance.deep", json.loads("[" * 13 + "]" * 13)))),
        Case("nesting 17 deep in provenance", as_json(with_value("provenance.deep", json.loads("[" * 15 + "]" * 15)))),
        Case("10,000 flags", as_json(with_value("controls.flags", ["-Xptxas=-O2"] * 10000))),
        Case("33 flags", as_json(with_value("controls.flags", ["-Xptxas=-O2"] * 33))),
        Case("15 MB of provenance", as_json(with_value("provenance.blob", "x" * 15_000_000))),
        Case("200 KB of provenance", as_json(with_value("provenance.blob", "x" * 200_000))),
        Case("5000 provenance members", as_json(with_value("provenance.many", {f"k{i}": i for i in range(5000)}))),
        Case("target of another file", as_json(with_value("target", "other"))),
        Case("target '..'", as_json(with_value("target", ".."))),
        Case("target '-kern'", as_json(with_value("target", "-kern"))),
        Case("acf file with a slash", as_json(with_value("controls.acf.file", "../kern.acf"))),
        Case("acf file absolute", as_json(with_value("controls.acf.file", "/etc/passwd"))),
        Case("acf file '.hidden'", as_json(with_value("controls.acf.file", ".kern.acf"))),
        Case("acf file with ';'", as_json(with_value("controls.acf.file", "k;id.acf"))),
        Case("acf missing", text, acf=None),
        Case("acf empty", text, acf=b""),
        Case("acf symlink out of the pin dir", text, setup="acf-symlink"),
        Case("acf symlink to /dev/zero", text, setup="acf-devzero"),
        Case("acf is a FIFO", text, setup="acf-fifo"),
        Case("acf is a directory", text, setup="acf-dir"),
        Case("record is a symlink", text, setup="record-symlink"),
        Case("record is a FIFO", text, setup="record-fifo"),
        Case("record symlink to /dev/zero", text, setup="record-devzero"),
        Case("record is a directory", text, setup="record-dir"),
        Case("objectives twice", as_json(with_value("objectives", [{"name": "time", "direction": "min"}] * 2),),),
        Case("objective alias", as_json(with_value("objectives.0.name", "spills"))),
        Case("objective metric", as_json(with_value("objectives.0.name", "metric:gflops"))),
        Case("direction up", as_json(with_value("objectives.0.direction", "up"))),
        Case("scores short", as_json(with_value("baseline.scores", [1.0]))),
        Case("score a string", as_json(with_value("winner.scores", ["1", 2]))),
        Case("score a boolean", as_json(with_value("winner.scores", [True, 2]))),
        Case("object path absolute", as_json(with_value("objects", {"/abs.o": {}}))),
        Case("object path ..", as_json(with_value("objects", {"a/../b.o": {}}))),
        Case("arch with a space", as_json(with_value("objects", {"a.o": {"9 0": {"registers": 1, "stack": 0,
                                                                       "code_sha256": "a" * 64}}}))),
        Case("architectures a string", as_json(with_value("toolchain.architectures", "90a"))),
        Case("version with a newline", as_json(with_value("toolchain.nvcc_version", "13.3\nx"))),
        Case("provenance a list", as_json(with_value("provenance", []))),
        Case("engine a number", as_json(with_value("provenance.engine", 3))),
        Case("budget a list", as_json(with_value("provenance.budget", []))),
        Case("controls null", as_json(with_value("controls", None))),
        Case("defines null", as_json(with_value("controls.defines", None))),
        Case("flags null", as_json(with_value("controls.flags", None))),
        Case("baseline null", as_json(with_value("baseline", None))),
        Case("ANSI escape in engine", as_json(with_value("provenance.engine", "\u001b[2J"))),
        *per_architecture_cases(),
        *issue21_cases(),
        *evaluator_cases(),
    ]
    return cases




def evaluator_cases() -> list[Case]:
    """Record text that must never reach CMake's evaluator (variables, backslashes), versions that
    overflow or carry spaces, repeated architecture prefixes and NUL bytes: each with the verdict and
    the message (``said``, in both readers' reasons) both must give."""
    text = as_json(valid_record())
    cases = []
    for value in EVALUATED:
        for path in ("toolchain.nvcc_version", "toolchain.ptxas_version", "target", "controls.flags.0",
                     "controls.defines.TILE", "controls.acf.file", "objectives.0.name"):
            # A refused flag is named by the allow-list's own message, which the readers word apart.
            said = "" if path == "controls.flags.0" else shown_text(value)
            cases.append(Case(f"{path} = {value!r}", as_json(with_value(path, value)), expect="refused", said=said))
    for version in ("1" * 20 + ".0", "13.3." + "9" * 20, "99999999999999999999", " 12.0", "12.0 ", "13.3.73 x",
                    "1234567.0", "13..3", "13.3-rc1"):
        cases.append(Case(f"ptxas_version {version!r}", as_json(with_value("toolchain.ptxas_version", version)),
                          ptxas="12.0", expect="refused", said=shown_text(version)))
    for version in ("123456.0.1", "13.3", "13", ""):
        cases.append(Case(f"ptxas_version {version!r} is a version", as_json(with_value("toolchain.ptxas_version", version)),
                          ptxas="12.0", expect="skipped" if "." in version else "applied"))
    for arch in ("sm_sm_90a", "lto_sm_90a", "compute_sm_90a", "sm_compute_90a", "sm_lto_90a", "SM_SM_90A"):
        cases.append(Case(f"architectures [{arch!r}]", as_json(with_value("toolchain.architectures", [arch])),
                          expect="refused", said=f"is {arch!r}, which names no CUDA architecture"))
        cases.append(Case(f"building for {arch!r}", text, architectures=(arch,), expect="skipped"))
    for arch in ("lto_90a", "compute_90A", "SM_90a-real"):
        cases.append(Case(f"architectures [{arch!r}] is 90a", as_json(with_value("toolchain.architectures", [arch])),
                          expect="applied"))
    plain_text = "is not plain ASCII text (a NUL, a byte order mark, a control or non-ASCII character)"
    for name, data in [("NUL at the end", text + b"\x00"), ("NUL at the start", b"\x00" + text),
                       ("NUL after the end", text + b"\n\x00\n"), ("NUL between tokens", text.replace(b"{", b"{\x00", 1)),
                       ("NUL in a string", text.replace(b'"genetic"', b'"gen\x00etic"')),
                       ("NUL in a CR LF record", text.replace(b"\n", b"\r\n") + b"\x00")]:
        cases.append(Case(name, data, expect="refused", said=plain_text))
    # A code fingerprint shortened by hand (cuda_hgemv's trial): "which breaks the sha256 rule" named a rule the
    # user could not see; both readers say what it is.
    cases.append(Case("code_sha256 of 12 digits", as_json(with_value("objects", {"a.o": {"90a": {
        "registers": 1, "stack": 0, "code_sha256": "38abc36ae00c"}}})), expect="refused",
        said="is '38abc36ae00c', which breaks the sha256 rule (64 characters matching [0-9a-f]+)"))
    return cases


def issue21_cases() -> list[Case]:
    """The classes an outside review found judged wrongly (issue 21), each with the verdict both must reach."""
    text = as_json(valid_record())
    crlf = text.replace(b"\n", b"\r\n")
    nvcc = with_value("controls.acf.compiler", "nvcc")
    return [
        # CR LF line ends (a Windows checkout with core.autocrlf): the same record, applied by both.
        Case("CR LF record", crlf, expect="applied"),
        Case("CR LF record, compact with a final CR LF", json.dumps(valid_record()).encode() + b"\r\n",
             expect="applied"),
        Case("CR LF record without an ACF", as_json(with_value("controls.acf", ...)).replace(b"\n", b"\r\n"), acf=None,
             expect="applied"),
        Case("CR LF inside a string", text.replace(b'"genetic"', b'"gen\r\netic"'), expect="refused"),
        Case("lone CR inside a string", text.replace(b'"genetic"', b'"gen\retic"'), expect="refused"),
        Case("lone CR between tokens", text.replace(b'"schema": 1,', b'"schema": 1,\r'), expect="applied"),
        Case("CR LF record with a NUL", crlf.replace(b'"genetic"', b'"gen\x00etic"'), expect="refused"),
        # Integer range() values: canonical spellings only (C reads 010 as 8; 08 does not compile).
        Case("range value 08", as_json(with_value("controls.defines", {"UNROLL": "08"})), expect="refused"),
        Case("range value 010", as_json(with_value("controls.defines", {"WIDE": "010"})), params=(*PARAMS, "WIDE=range(0,16)"),
             expect="refused"),
        Case("range value 08 on the grid", as_json(with_value("controls.defines", {"STEP": "08"})), expect="refused"),
        Case("range value 10", as_json(with_value("controls.defines", {"WIDE": "10"})), params=(*PARAMS, "WIDE=range(0,16)"),
             expect="applied"),
        Case("range value 3.0", as_json(with_value("controls.defines", {"UNROLL": "3.0"})), expect="refused"),
        Case("range value 1e0", as_json(with_value("controls.defines", {"UNROLL": "1e0"})), expect="refused"),
        Case("range value +3", as_json(with_value("controls.defines", {"UNROLL": "+3"})), expect="refused"),
        Case("range value -0", as_json(with_value("controls.defines", {"STEP": "-0"})), expect="refused"),
        Case("range value 0", as_json(with_value("controls.defines", {"STEP": "0"})), expect="applied"),
        Case("range value 7", as_json(with_value("controls.defines", {"UNROLL": "7"})), expect="applied"),
        Case("negative range value", as_json(with_value("controls.defines", {"NEG": "-3"})), params=(*PARAMS, "NEG=range(-4,4)"),
             expect="applied"),
        Case("negative range value -03", as_json(with_value("controls.defines", {"NEG": "-03"})),
             params=(*PARAMS, "NEG=range(-4,4)"), expect="refused"),
        Case("choice value 064 of choice(64)", as_json(with_value("controls.defines", {"TILE": "064"})), expect="refused"),
        # Architecture lists that name no architecture must not switch the guard off.
        Case("architectures ['--run']", as_json(with_value("toolchain.architectures", ["--run"])), expect="refused"),
        Case("architectures ['x']", as_json(with_value("toolchain.architectures", ["x"])), expect="refused"),
        Case("architectures ['sm_']", as_json(with_value("toolchain.architectures", ["sm_"])), expect="refused"),
        Case("architectures ['90a', 'x']", as_json(with_value("toolchain.architectures", ["90a", "x"])), expect="refused"),
        Case("architectures ['090']", as_json(with_value("toolchain.architectures", ["090"])), expect="refused"),
        Case("architectures []", as_json(with_value("toolchain.architectures", [])), expect="refused"),
        Case("architectures ['sm_90a']", as_json(with_value("toolchain.architectures", ["sm_90a"])), expect="applied"),
        Case("architectures ['compute_90a']", as_json(with_value("toolchain.architectures", ["compute_90a"])),
             expect="applied"),
        # An nvcc ACF on a build for architectures below sm_100 (nvcc refuses it there).
        Case("nvcc ACF, building for 90a", as_json(nvcc), expect="refused"),
        Case("nvcc ACF, record for any, building for nvcc's default", as_json(with_value("toolchain.architectures", ...,
                                                                                 nvcc)),
             architectures=(), expect="refused"),
        Case("nvcc ACF, record for any, building for 100a and 90", as_json(with_value("toolchain.architectures", ...,
                                                                              nvcc)),
             architectures=("100a", "90"), expect="refused"),
        Case("nvcc ACF, building for 100a", as_json(with_value("toolchain.architectures", ["100a"], nvcc)),
             architectures=("100a",), expect="applied"),
        Case("nvcc ACF, building for sm_100a and 120", as_json(with_value("toolchain.architectures", ["100a", "120"], nvcc)),
             architectures=("sm_100a", "120-real"), expect="applied"),
        Case("nvcc ACF, tuned for 100a, building for 90a skips", as_json(with_value("toolchain.architectures", ["100a"],
                                                                             nvcc)),
             expect="skipped"),
        # -maxrregcount within nvcc's range (ptxas ignores a value above 255).
        Case("maxrregcount 255", as_json(with_value("controls.flags", ["-maxrregcount=255"])), expect="applied"),
        Case("maxrregcount 16", as_json(with_value("controls.flags", ["-maxrregcount=16"])), expect="applied"),
        Case("maxrregcount 999", as_json(with_value("controls.flags", ["-maxrregcount=999"])), expect="refused"),
        Case("maxrregcount 256", as_json(with_value("controls.flags", ["-maxrregcount=256"])), expect="refused"),
        Case("maxrregcount 1", as_json(with_value("controls.flags", ["-maxrregcount=1"])), expect="refused"),
        Case("maxrregcount 15", as_json(with_value("controls.flags", ["-maxrregcount=15"])), expect="refused"),
        Case("maxrregcount 064", as_json(with_value("controls.flags", ["-maxrregcount=064"])), expect="refused"),
        # A pin dir that is a symbolic link (a committed `ciq -> elsewhere`).
        Case("pin dir is a symlink", text, setup="pin-dir-symlink", expect="refused"),
        Case("pin dir is a symlink, no record in it", None, setup="pin-dir-symlink", expect="refused"),
        Case("pin dir's parent is a symlink", text, setup="pin-parent-symlink", pin_dir_name="pins/ciq",
             expect="refused", said="lies in "),
        Case("pin dir's parent is a symlink, no record in it", None, setup="pin-parent-symlink",
             pin_dir_name="pins/ciq", expect="refused", said="lies in "),
        Case("pin dir below a real folder", text, pin_dir_name="pins/ciq", expect="applied"),
        # A content-addressed ACF name (write_record pins <target>.<sha12>.acf).
        Case("ACF under its content name", as_json(with_value("controls.acf.file", f"kern.{ACF_SHA[:12]}.acf")),
             setup=f"acf-named:kern.{ACF_SHA[:12]}.acf", expect="applied"),
        Case("ACF named as an earlier writer did", as_json(with_value("controls.acf.file", f"kern-{ACF_SHA[:12]}.acf")),
             setup=f"acf-named:kern-{ACF_SHA[:12]}.acf", expect="applied"),
        Case("ACF of another target", as_json(with_value("controls.acf.file", "other.acf")), setup="acf-named:other.acf",
             expect="refused"),
        Case("ACF of a target whose name starts alike", as_json(with_value("controls.acf.file", "kernel.acf")),
             setup="acf-named:kernel.acf", expect="refused"),
        Case("ACF without the .acf suffix", as_json(with_value("controls.acf.file", "kern.bin")), setup="acf-named:kern.bin",
             expect="refused"),
        Case("ACF named kern.acf.x", as_json(with_value("controls.acf.file", "kern.acf.x")), setup="acf-named:kern.acf.x",
             expect="refused"),
    ]


_HOSTILE_VALUES = [None, True, False, 0, -1, 1.5, 10**20, "", "x", "13.3", " ", "a b", "a;b", "$(id)", "\u00e9",
                   [], ["x"], {}, {"x": 1}, "A" * 300]


def generated(seed: int = 8) -> list[Case]:
    """Every field of the valid record replaced by each hostile value, and byte-level mutations."""
    base = valid_record()
    paths: list[str] = []

    def walk(node: object, prefix: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                here = f"{prefix}.{key}" if prefix else key
                paths.append(here)
                walk(value, here)
        elif isinstance(node, list):
            for i, value in enumerate(node):
                here = f"{prefix}.{i}"
                paths.append(here)
                walk(value, here)

    walk(base, "")
    # And every field of the entries of a per-architecture record, applied per -gencode.
    per_arch = per_architecture_record()
    record_paths = len(paths)
    walk(per_arch["per_architecture"], "per_architecture")
    entry_paths = paths[record_paths:]
    del paths[record_paths:]
    cases = []
    rng = random.Random(seed)
    for path in paths:
        if path.startswith("objects.CMakeFiles"):
            continue  # the key has dots; covered by the hand-written cases
        for value in rng.sample(_HOSTILE_VALUES, 6) + [...]:
            cases.append(Case(f"{path} = {value!r}"[:80], as_json(with_value(path, value))))
    for path in entry_paths:
        for value in rng.sample(_HOSTILE_VALUES, 4) + [...]:
            cases.append(Case(f"{path} = {value!r}"[:80], as_json(with_value(path, value, per_arch)),
                              architectures=("90a", "80"), setup="other-acf"))
    spellings = ["75", "80", "90", "90a", "sm_90a", "90a-real", "90-virtual", "100A", "compute_80", " 80 "]
    for _ in range(60):  # the architecture rule: record's against the build's, in many spellings
        tuned = [a.strip().removeprefix("sm_").removeprefix("compute_").lower().split("-")[0]
                 for a in rng.sample(spellings, rng.randint(0, 2))]
        building = tuple(rng.sample(spellings, rng.randint(0, 3)))
        cases.append(Case(f"tuned {tuned} building {building}", as_json(with_value("toolchain.architectures", tuned)),
                          architectures=building))
    text = as_json(base)
    alphabet = b'{}[]:,"\\ 0123456789.eE+-truefalsn\tu'
    for i in range(150):
        data = bytearray(text)
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(data))
            op = rng.random()
            if op < 0.4:
                del data[at]
            elif op < 0.8:
                data.insert(at, rng.choice(alphabet))
            else:
                data[at] = rng.choice(alphabet)
        cases.append(Case(f"mutation {i}", bytes(data)))
    return cases
















@pytest.fixture(scope="module")
def cmake_bin() -> str:
    return build_tool("cmake")


def _children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _agree(cases: list[Case], tmp_path: Path, cmake: str) -> dict[str, int]:
    prepared = prepare(cases, tmp_path)
    # CPU seconds, not wall: a loaded machine stretches wall time, not the work a reader does.
    start = time.process_time()
    python = [python_verdict(p) for p in prepared]
    python_s = time.process_time() - start
    start = _children_cpu_seconds()
    cmake_side = cmake_verdicts(prepared, tmp_path, cmake)
    cmake_s = _children_cpu_seconds() - start
    disagreements = [
        f"{p.case.name!r}: python {py[0]} {list(py[1])} ({py[2][:200]}) / cmake {cm[0]} {list(cm[1])} ({cm[2][:200]})"
        for p, py, cm in zip(prepared, python, cmake_side)
        if py[0] != cm[0] or py[1] != cm[1]
    ]
    disagreements += [
        f"{p.case.name!r}: expected {p.case.expect}, python {py[0]} ({py[2][:200]}) / cmake {cm[0]} ({cm[2][:200]})"
        for p, py, cm in zip(prepared, python, cmake_side)
        if p.case.expect and (py[0] != p.case.expect or cm[0] != p.case.expect)
    ]
    disagreements += [
        f"{p.case.name!r}: both must say {p.case.said!r} alike, python {reason(py[2])!r} / cmake {reason(cm[2])!r}"
        for p, py, cm in zip(prepared, python, cmake_side)
        if p.case.said and not (p.case.said in reason(py[2]) and reason(py[2]) == reason(cm[2]))
    ]
    cmake_path = str(Path(cmake).resolve())
    disagreements += [f"{p.case.name!r}: CMake expanded a variable of the record: {cm[2][:300]}"
                      for p, cm in zip(prepared, cmake_side) if PROBE_VALUE in cm[2] or cmake_path in cm[2]]
    assert not disagreements, f"{len(disagreements)} of {len(cases)} records judged differently:\n" + "\n".join(
        disagreements)
    # Linear readers: hundreds of records, hostile ones included, in seconds of CPU.
    assert python_s < 60 and cmake_s < 120, (python_s, cmake_s)
    counts: dict[str, int] = {}
    for verdict in python:
        counts[verdict[0]] = counts.get(verdict[0], 0) + 1
    return counts


@pytest.mark.slow
def test_hand_written_records_get_the_same_verdict_from_python_and_cmake(tmp_path: Path, cmake_bin: str) -> None:
    cases = hand_written()
    counts = _agree(cases, tmp_path, cmake_bin)
    # The table is not all-refused or all-applied: both kinds are exercised.
    assert counts.get("applied", 0) >= 15 and counts.get("refused", 0) >= 80, counts


def test_a_value_out_of_an_allowed_options_range_is_said_as_such_by_both_readers(tmp_path: Path, cmake_bin: str) -> None:
    # GPUSorting's trial: a hand-edited -maxrregcount=300 was "a flag outside the allow-list", of a flag it holds.
    cases = [Case("maxrregcount 300", as_json(with_value("controls.flags", ["-maxrregcount=300"])), expect="refused"),
             Case("-Xcompiler", as_json(with_value("controls.flags", ["-Xcompiler=-fopenmp"])), expect="refused")]
    prepared = prepare(cases, tmp_path)
    python = [python_verdict(p) for p in prepared]
    cmake = cmake_verdicts(prepared, tmp_path, cmake_bin)
    assert [verdict[0] for verdict in python + cmake] == ["refused"] * 4
    assert "the allow-list holds -maxrregcount with other values only" in python[0][2], python[0]
    assert "is '-maxrregcount=300', a value of -maxrregcount outside the allow-list" in cmake[0][2], cmake[0]
    assert "is not on the allow-list" in python[1][2] and "holds" not in python[1][2], python[1]
    assert "is '-Xcompiler=-fopenmp', a flag outside the allow-list" in cmake[1][2], cmake[1]


@pytest.mark.slow
def test_generated_records_get_the_same_verdict_from_python_and_cmake(tmp_path: Path, cmake_bin: str) -> None:
    cases = generated()
    counts = _agree(cases, tmp_path, cmake_bin)
    assert len(cases) >= 400 and counts.get("applied", 0) >= 20 and counts.get("refused", 0) >= 300, counts


@pytest.mark.slow
def test_a_sample_of_the_differential_bench_records_gets_the_same_verdict(tmp_path: Path, cmake_bin: str) -> None:
    # bench/pin_readers/run.py judges 2,000 and more of these; CI a sample, in one cmake -P.
    cases = hostile_cases(140, seed=7)
    counts = _agree(cases, tmp_path, cmake_bin)
    assert counts.get("applied", 0) >= 10 and counts.get("refused", 0) >= 60, counts


def test_an_unsafe_acf_path_reaches_nvcc_only_through_a_copy_in_the_build_tree(tmp_path: Path) -> None:
    # ';' cannot be in a CMake path (it splits lists), but setuptools builds meet it.
    (p,) = prepare([Case("pin dir with ';'", as_json(valid_record()), pin_dir_name="p;touch x&y")], tmp_path)
    status, arguments, _ = python_verdict(p)
    assert status == "applied"
    assert arguments[-1] == f"-Xptxas=--apply-controls={p.build_dir}/kern.acf"
    assert (p.build_dir / "kern.acf").read_bytes() == ACF


def test_a_per_architecture_record_gives_each_architecture_its_own_controls(tmp_path: Path) -> None:
    (p,) = prepare([Case("per-arch", as_json(per_architecture_record()), architectures=("90a", "80"),
                         setup="other-acf")], tmp_path)
    status, arguments, message = python_verdict(p)
    assert status == "applied", message
    # Only the -D parameters are shared; each architecture's flags and ACF are its own.
    assert arguments == ("-DTILE=64", "-DUNROLL=3", "[80]", "[80] -maxrregcount=32", "[90a]", "[90a] -Xptxas=-O2",
                         f"[90a] -Xptxas=--apply-controls={p.pin_file.parent}/kern.90a.acf")
    assert "sm_80: -maxrregcount=32" in message


REAL_CONFIGURE = """cmake_minimum_required(VERSION 3.24)
project(agree LANGUAGES CUDA)
find_package(ciq_build CONFIG REQUIRED)
add_library(kern STATIC kern.cu)
set_target_properties(kern PROPERTIES CUDA_ARCHITECTURES "${AGREE_ARCHITECTURES}")
ciq_tune_target(kern OBJECTIVES registers PIN_DIR "${AGREE_PIN_DIR}" PARAMS ${AGREE_PARAMS})
"""


def _configure_verdict(result_text: str, ok: bool, options: Path) -> tuple[str, tuple[str, ...]]:
    if not ok:
        assert "refusing the pinned record" in result_text, result_text[-3000:]
        return "refused", ()
    m = re.search(r"ciq_build: kern: (pinned controls|pin skipped|no pinned controls)", result_text)
    assert m is not None, result_text[-3000:]
    status = {"pinned controls": "applied", "pin skipped": "skipped", "no pinned controls": "none"}[m.group(1)]
    return status, tuple(options.read_text().splitlines())


@pytest.mark.slow
def test_a_real_configure_with_its_deferred_finalize_step_reaches_the_same_verdicts(
        tmp_path: Path, cmake_bin: str, cuda133_bin: Path) -> None:
    """The real thing, not only `cmake -P`: a CUDA project configured for each record, through
    ciq_tune_target() and the finalize step CMake defers to the end of the directory."""
    wanted = {"valid", "CR LF record", "range value 08", "architectures ['x']", "architectures []",
              "nvcc ACF, building for 90a", "nvcc ACF, record for any, building for nvcc's default",
              "nvcc ACF, building for 100a", "maxrregcount 999", "pin dir is a symlink", "ACF under its content name"}
    cases = [c for c in hand_written() if c.name in wanted]
    assert len(cases) == len(wanted)
    prepared = prepare(cases, tmp_path / "cases")
    project, build = tmp_path / "project", tmp_path / "build"
    project.mkdir()
    (project / "CMakeLists.txt").write_text(REAL_CONFIGURE)
    (project / "kern.cu").write_text("__global__ void kern(int *x) { x[threadIdx.x] = 1; }\n")
    checked = []
    for p in prepared:
        params = ";".join(p.case.params)
        args = [cmake_bin, "-S", str(project), "-B", str(build), "-G", "Ninja",
                f"-DCMAKE_MAKE_PROGRAM={build_tool('ninja')}", f"-DCMAKE_CUDA_COMPILER={cuda133_bin / 'nvcc'}",
                f"-Dciq_build_DIR={REPO_ROOT / 'cmake'}", f"-DAGREE_PIN_DIR={p.pin_file.parent}",
                f"-DAGREE_ARCHITECTURES={';'.join(p.case.architectures) or 'OFF'}", f"-DAGREE_PARAMS={params}"]
        result = run(args, timeout=600)
        cmake_side = _configure_verdict(result.stdout + result.stderr, result.returncode == 0,
                                        build / "ciq" / "kern.nvcc-options")
        python = python_verdict(p)
        assert cmake_side[0] == python[0] == p.case.expect or not p.case.expect, (p.case.name, cmake_side, python)
        assert cmake_side[0] == python[0], (p.case.name, cmake_side, python)
        if python[0] == "applied":
            assert cmake_side[1] == python[1], (p.case.name, cmake_side, python)
        checked.append(python[0])
    assert checked.count("applied") >= 3 and checked.count("refused") >= 6, checked


# --- ciq_tune_target() arguments (issue 22 items 4 and 7) --------------------------------------------------------
# The rule book's rules for a call's PARAMS, CONSTRAINTS, OBJECTIVES and SEARCH_SPACE, and its "did you mean",
# judged by Python (params.parse_param, constraints.syntax_problem, RuleBook.matches, rules.nearest) and by
# the CMake functions _ciq_check_call runs, on the same inputs. Constraints must give the same message too.

CALL_NAMES = ("BX", "BY", "TILE", "UNROLL_4")
CALL_PARAMS = (
    *PARAMS, "T=choice(1,2,4,8", "T=chioce(1,2)", "T=Choice(1,2)", "T=range(8,1)", "T=range(1,8,0)", "T=range(1,8,-1)",
    "T=range(1,8,2)", "T=range(1.,2)", "T=range(.5,2)", "T=range(1e3,2e3,1e2)", "T=range(1,2,3,4)", "T=range(1)",
    "T=range(a,b)", "T=range(1,1)", "T=range(+1,8)", "T=log_sampling(0,8)", "T=log_sampling(1,8,1)",
    "T=log_sampling(1,8,3.0)", "T=log_sampling(1,8,+3)", "T=log_sampling(1,8,03)", "T=log_sampling(2,64,6)",
    "T=literal(1,2)", "T=literal(x)", "T=1,1", "T=1,01", "T=1,,2", "T=1,2,", "T=,1", "T=", "T", "=1", "1T=1",
    " T = 1 , 2 ", "T=choice( 1 , 2 )", "T=choice(1,2)x", "T=(1,2)", "T=choice(1,(2))", "T=a b", "T=x/y",
    "T=rang(1,8)", "T=logsampling(1,8)", "T=literl(3)", "T=choice()", "T=choice(1,2))", "T=" + "9" * 300,
)
CALL_CONSTRAINTS = (
    "BX*BY<=1024", "BX*BY <= 1024 and TILE % 4 == 0", "not BX > 8 or (BY - 1) / 2 != 3", "-BX*-2 > 0",
    "BX<BY<3", "BX<BY and BY<3", "(BX<BY)<3", "BX == (BY < 3)", "not not BX", "- not BX", "BX < not BY",
    "BXX > 1", "bx > 1", "TILES > 1", "UNROLL4 == 2", "Z > 1", "BX @ 2", "BX ** 2", "BX && BY", "BX = 2",
    "BX*BY<=", "(BX", "BX)", "()", "", "   ", "BX BY", "1 2", "BX (BY)", "and BX", "BX and", "BX or or BY",
    "((((BX))))", "((BX)", "BX))", "BX >= 2 and (BY <= 4 or TILE != 8) and not UNROLL_4 % 2",
    "BX\t<\t2", "3.5 > BX", "0x10 > BX", "BX !== 2", "BX <> 2", "BX =< 2", "BX!", "!BX",
    # Too long or too deep for the parser and the evaluator, which recurse (3,000 terms crashed tune).
    "+".join(["BX"] * 3000), "BX" + "+1" * 126, "BX" + "+1" * 127, "(" * 16 + "BX" + ")" * 16,
    "(" * 17 + "BX" + ")" * 17, "-" * 16 + "BX", "-" * 17 + "BX", "not " * 17 + "BX", "-(" * 9 + "BX" + ")" * 9,
    "(" * 3000 + "BX" + ")" * 3000, "- " * 8 + "(" * 8 + "BX" + ")" * 8, "- " * 9 + "(" * 8 + "BX" + ")" * 8,
)
CALL_OBJECTIVES = (
    "time", "max:time", "min:energy", "compile_time", "compile_seconds", "registers", "registers:heavy",
    "spills", "spill_bytes:gemm_(f16|f32)", "stack_bytes", "shared_bytes:k", "sass_instructions",
    "metric:gflops", "max:metric:gflops", "metric:", "metric", "regsters", "time:x", "max:", "sass_instructions:x",
    "max:max:time", "energy_j", "registers:a b", "Time",
)
CALL_SPACES = (
    "knobs", "params", "ptxas-acf", "ptxas-acf:13.3", "ptxas-acf:13.3:att", "nvcc-acf:13.0", "ptxas-acf:latest",
    "ptxas-acf:13", "knobz", "param", "acf-pool:pools/a", "acf-pool:", "spaces/ptxas13.3.bin", "x.bin",
    "/abs/path/space.bin", "space.bin.txt", "Knobs", "acf_pool:x",
)
CALL_WORDS = (
    ("objective", "regsters"), ("objective", "registers"), ("objective", "sass_instruction"), ("objective", "x"),
    ("objective", "tim"), ("objective", "enrgy"), ("objective", "compiletime"), ("objective", "metrics"),
    ("params_form", "chioce"), ("params_form", "rang"), ("params_form", "logsampling"), ("params_form", "literl"),
    ("params_form", "Choice"), ("params_form", "zz"), ("search_space", "knobz"), ("search_space", "param"),
    ("search_space", "ptxas-acff"), ("search_space", "acfpool"), ("search_space", "nvcc"),
)

# Two rules both sides apply outside a record: which architectures a target's own nvcc flags build (a flag list,
# written with spaces), and the hint a refused kernel regex gets (an objective spec).
CALL_ARCH_FLAGS = (
    "-arch=sm_75 --std=c++17 -Xptxas=-v", "-arch sm_90a", "--gpu-architecture=sm_100a", "-code=sm_80,sm_86",
    "--gpu-code sm_89", "-gencode arch=compute_80,code=[sm_80,compute_80] -arch=native "
    "--generate-code=arch=compute_90a,code=sm_90a -arch=compute_86",
    "-gencode=arch=compute_75,code=sm_75 -gencode=arch=compute_75,code=compute_75 -arch=sm_75",
    "-arch=sm_90ab", "-arch=xsm_90", "-Xptxas=-arch=sm_75", "-march=sm_90", "-arch", "-arch=sm_", "-arch=SM_90",
    "-arch=all", "--std=c++17",
    '-gencode=arch=compute_80,code="sm_80,compute_80"', '-gencode arch=compute_86,code="sm_86"',
)
CALL_KERNEL_REGEXES = (
    "occupancy:fasten_main<8>", "max:registers:void k<int, 4>(float*)", "registers:", "registers:heavy",
    "spills:gemm_(f16|f32)", "registers:" + "a" * 101, "min:spill_bytes:a::b", "shared_bytes:x[0]", "registers:a{2}",
)


def _random_constraints(count: int, seed: int = 22) -> list[str]:
    rng = random.Random(seed)
    alphabet = ["BX", "BY", "TILE", "BZ", "1", "1024", "(", ")", "+", "-", "*", "/", "%", "<", "<=", ">", ">=",
                "==", "!=", "and", "or", "not", " ", "@", "="]
    return ["".join(rng.choice(alphabet) + rng.choice(["", " "]) for _ in range(rng.randint(1, 9)))
            for _ in range(count)]


def _bracket(text: str) -> str:
    assert "]==]" not in text and ";" not in text
    return f"[==[{text}]==]"


def _python_call_verdict(kind: str, value: str, rules: RuleBook) -> str:
    if kind == "param":
        try:
            parse_param(value)
        except CiqError:
            return "refused"
        return ""
    if kind == "constraint":
        return constraint_syntax_problem(value, CALL_NAMES, rules) or ""
    if kind == "architectures":
        return ",".join(flag_architectures(value.split(" ")))
    if kind == "kernel_regex":
        try:
            parse_objective(value)
        except ConfigError as error:
            return str(error)
        return ""
    if kind.startswith("pattern:"):
        return "" if rules.matches(kind.partition(":")[2], value) else "refused"
    return nearest(value, rules.words[kind.partition(":")[2]]) or ""


def _cmake_call_verdicts(cases: list[tuple[str, str]], tmp: Path, cmake: str) -> list[str]:
    calls = "\n".join(f"_case({i} {kind} {_bracket(value)})" for i, (kind, value) in enumerate(cases))
    script = tmp / "check_call.cmake"
    script.write_text(f"""
include({_bracket(str(REPO_ROOT / "cmake" / "ciq_build_rules.cmake"))})
function(_case n kind value)
  set(problem "")
  if(kind STREQUAL "param")
    _ciq_rules_param_problem(problem "${{value}}")
    if(NOT problem STREQUAL "")
      set(problem refused)
    endif()
  elseif(kind STREQUAL "constraint")
    _ciq_rules_constraint_problem(problem "${{value}}" {' '.join(CALL_NAMES)})
  elseif(kind STREQUAL "architectures")
    string(REPLACE " " ";" flags "${{value}}")
    _ciq_rules_flag_architectures(found ${{flags}})
    list(JOIN found "," problem)
  elseif(kind STREQUAL "kernel_regex")
    string(REGEX MATCH "^((max|min):)?[a-z_]+:" head "${{value}}")
    string(LENGTH "${{head}}" skip)
    string(SUBSTRING "${{value}}" ${{skip}} -1 regex)
    _ciq_rules_matches(ok kernel_regex "${{regex}}")
    if(NOT ok)
      _ciq_rules_kernel_regex_hint(hint "${{value}}" "${{regex}}")
      _ciq_rules_message(problem kernel_regex value "${{value}}" regex "${{regex}}" hint "${{hint}}")
    endif()
  elseif(kind MATCHES "^pattern:(.*)$")
    _ciq_rules_matches(ok ${{CMAKE_MATCH_1}} "${{value}}")
    if(NOT ok)
      set(problem refused)
    endif()
  elseif(kind MATCHES "^nearest:(.*)$")
    _ciq_rules_words(words ${{CMAKE_MATCH_1}})
    _ciq_rules_nearest(problem "${{value}}" ${{words}})
  endif()
  message("case ${{n}}: [${{problem}}]")
endfunction()
{calls}
""")
    result = run([cmake, "-P", str(script)], timeout=600)
    found = dict(re.findall(r"^case (\d+): \[(.*)\]$", result.stderr, re.M))
    assert len(found) == len(cases), result.output_tail(40)
    return [found[str(i)] for i in range(len(cases))]


def test_the_per_block_declarations_cmake_checks_are_pythons_settings() -> None:
    # THREADS_PER_BLOCK and DYNAMIC_SHARED_MEMORY: one check in CMake for both, from one row each (keyword, unit,
    # range, example), which must be ciq_build.project.per_block's (a DYNAMIC_SHARED_MEMORY configure accepts, tune
    # must not refuse).
    text = (REPO_ROOT / "cmake" / "ciq_build_call.cmake").read_text()
    for setting in SETTINGS:
        row = "|".join(map(str, (setting.keyword, setting.unit, setting.least, setting.most, setting.example)))
        assert f'"{row}"' in text, row


def test_call_arguments_get_the_same_verdict_from_python_and_cmake(tmp_path: Path, cmake_bin: str) -> None:
    cases = [("param", p) for p in CALL_PARAMS]
    cases += [("constraint", c) for c in (*CALL_CONSTRAINTS, *_random_constraints(300))]
    cases += [(f"pattern:{rule}", o) for o in CALL_OBJECTIVES for rule in ("objective_spec", "benchmark_objective")]
    cases += [("pattern:search_space", s) for s in CALL_SPACES]
    cases += [(f"nearest:{name}", word) for name, word in CALL_WORDS]
    cases += [("architectures", flags) for flags in CALL_ARCH_FLAGS]
    cases += [("kernel_regex", spec) for spec in CALL_KERNEL_REGEXES]
    rules = load_rules()
    python = [_python_call_verdict(kind, value, rules) for kind, value in cases]
    cmake_side = _cmake_call_verdicts(cases, tmp_path, cmake_bin)
    disagreements = [f"{kind} {value!r}: python [{py}] / cmake [{cm}]"
                     for (kind, value), py, cm in zip(cases, python, cmake_side) if py != cm]
    assert not disagreements, f"{len(disagreements)} of {len(cases)} judged differently:\n" + "\n".join(disagreements)
    verdicts = dict(zip(cases, python))
    # Both kinds are exercised, and the issue's examples are refused with their suggestion.
    assert sum(1 for (k, _), v in verdicts.items() if k == "constraint" and not v) >= 20
    assert sum(1 for (k, _), v in verdicts.items() if k == "constraint" and v) >= 100
    assert verdicts[("param", "T=choice(1,2,4,8")] == verdicts[("param", "T=range(8,1)")] == "refused"
    assert verdicts[("nearest:objective", "regsters")] == "registers"
    assert verdicts[("nearest:params_form", "chioce")] == "choice"
    assert verdicts[("nearest:search_space", "knobz")] == "knobs"
    assert verdicts[("constraint", "BXX > 1")].endswith("(did you mean BX?)")
    # The architectures the flags build, and the refused kernel regexes with the regex that finds the kernel.
    assert verdicts[("architectures", CALL_ARCH_FLAGS[5])] == "80,90a"
    assert verdicts[("architectures", "-arch sm_90a")] == "90a" and verdicts[("architectures", "-arch=xsm_90")] == ""
    # nvcc's documented spelling, whose quotes reach it from a Makefile or a COMPILE_OPTIONS entry
    assert verdicts[("architectures", '-gencode=arch=compute_80,code="sm_80,compute_80"')] == "80"
    assert "(write '.' for any other character, which matches any one: max:registers:void.k.int..4.(float*))" in (
        verdicts[("kernel_regex", "max:registers:void k<int, 4>(float*)")])
    assert verdicts[("kernel_regex", "registers:" + "a" * 101)].startswith("objective 'registers:aaa")
    assert verdicts[("kernel_regex", "registers:heavy")] == ""
