"""Both pin readers on one record: Python's (``resolve_build_pin``, what tune, verify and the setuptools
build use) and the CMake module's (``_ciq_resolve_pin`` through ``cmake/ciq_build_check_pin.cmake``, the
functions configure runs, many records per ``cmake -P``).

A record is a ``Case`` (its bytes and the build it meets: PARAMS, CUDA and ptxas versions, the build's
architectures, what else lies in its pin dir); ``prepare`` writes each into a pin dir of its own;
``python_verdict`` and ``cmake_verdicts`` give each reader's (status, arguments, message). Used by
tests/core/test_rule_book_agreement.py and by this folder's differential run.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from ciq_build.testing import CiqError, resolve_build_pin
from ciq_build.testing import run_process as run

Verdict = tuple[str, tuple[str, ...], str]  # status, arguments (one per options-file line), message


REPO_ROOT = Path(__file__).resolve().parents[2]
CHECK_SCRIPT = REPO_ROOT / "cmake" / "ciq_build_check_pin.cmake"


# ACFs are binary: every byte value, NUL and CR LF included (read as text, CMake stops at a NUL or drops the CR).
ACF = bytes(range(256)) + b"\r\n"


ACF_SHA = hashlib.sha256(ACF).hexdigest()


PARAMS = ("TILE=choice(32,64,128)", "UNROLL=range(1,8)", "STEP=range(0,12,4)", "SCALE=log_sampling(1,100,5)",
          "MODE=fast,safe", "ONE=literal(7)")


def valid_record(**overrides: object) -> dict:
    record = {
        "schema": 1,
        "target": "kern",
        "controls": {
            "flags": ["-Xptxas=-O2", "-maxrregcount=64"],
            "defines": {"TILE": "64", "UNROLL": "3"},
            "acf": {"file": "kern.acf", "sha256": ACF_SHA, "compiler": "ptxas"},
        },
        "toolchain": {"cuda": "13.3", "nvcc_version": "13.3.1", "ptxas_version": "13.3.1",
                      "architectures": ["90a"]},
        "provenance": {"engine": "genetic", "seed": 1, "budget": {"generations": 3}, "free": [1, {"x": None}]},
        "objectives": [{"name": "time", "direction": "min"}, {"name": "registers", "direction": "min"}],
        "baseline": {"scores": [1.5, 40], "spread": [0.01, 0]},
        "winner": {"scores": [1.4, 38], "spread": [0.02, 0]},
        "objects": {"CMakeFiles/kern.dir/kern.cu.o": {"90a": {"registers": 38, "stack": 0,
                                                              "code_sha256": "ab" * 32}}},
    }
    record.update(overrides)
    return record


@dataclass
class Case:
    name: str
    text: bytes | None  # the record's bytes; None: no record at all
    params: tuple[str, ...] = PARAMS
    allow_numerics: bool = False
    cuda: str = "13.3"
    ptxas: str = "13.3"
    architectures: tuple[str, ...] = ("90a",)  # what the build compiles for
    acf: bytes | None = ACF
    setup: str = ""  # what else to plant in the pin dir (see plant)
    pin_dir_name: str = "ciq"
    extra: dict = field(default_factory=dict)
    expect: str = ""  # the verdict both readers must reach (not only the same one), where the case says
    said: str = ""  # text both readers' reasons must hold, where the case says


def as_json(record: object) -> bytes:
    return json.dumps(record, indent=2).encode()


def with_value(path: str, value: object, base: dict | None = None) -> dict:
    """A copy of the valid record with the value at a dotted path replaced (or deleted for ...)."""
    record = json.loads(json.dumps(base or valid_record()))
    node = record
    keys = path.split(".")
    for key in keys[:-1]:
        node = node[int(key)] if isinstance(node, list) else node[key]
    last = keys[-1]
    if isinstance(node, list):
        last = int(last)  # type: ignore[assignment]
    if value is ...:
        del node[last]
    else:
        node[last] = value
    return record


OTHER_ACF = bytes(reversed(range(256))) + b"\r\n"


OTHER_SHA = hashlib.sha256(OTHER_ACF).hexdigest()


def per_architecture_record(**entries: object) -> dict:
    """A record tuned for 80 and 90a with an entry per architecture (override either by keyword)."""
    record = valid_record()
    record["toolchain"]["architectures"] = ["80", "90a"]
    record["per_architecture"] = {
        "80": {"controls": {"flags": ["-maxrregcount=32"], "defines": {"TILE": "64", "UNROLL": "3"}},
               "provenance": {"engine": "genetic", "seed": 2}, "baseline": {"scores": [2.0, 40], "spread": [0, 0]},
               "winner": {"scores": [1.9, 32], "spread": [0.01, 0]}},
        "90a": {"controls": {"flags": ["-Xptxas=-O2"], "defines": {"TILE": "64", "UNROLL": "3"},
                             "acf": {"file": "kern.90a.acf", "sha256": OTHER_SHA, "compiler": "ptxas"}}},
    }
    for arch, entry in entries.items():
        key = arch.removeprefix("a")
        if entry is ...:
            del record["per_architecture"][key]
        else:
            record["per_architecture"][key] = entry
    return record


def plant(case: Case, pin_dir: Path, outside: Path) -> None:
    record = pin_dir / "kern.json"
    acf = pin_dir / "kern.acf"
    if case.setup == "other-acf":
        (pin_dir / "kern.90a.acf").write_bytes(OTHER_ACF)
    elif case.setup.startswith("acf-named:"):
        acf.rename(pin_dir / case.setup.removeprefix("acf-named:"))
    elif case.setup == "pin-parent-symlink":
        # The pin dir's parent is a link (PIN_DIR pins/ciq with a committed `pins -> elsewhere`).
        elsewhere = outside / "elsewhere"
        pin_dir.parent.rename(elsewhere)
        pin_dir.parent.symlink_to(elsewhere)
    elif case.setup == "pin-dir-symlink":
        # The pin dir's content lives elsewhere; the pin dir is a link to it.
        elsewhere = outside / "elsewhere"
        pin_dir.rename(elsewhere)
        pin_dir.symlink_to(elsewhere)
    elif case.setup.startswith("acf-"):
        if acf.exists():
            acf.unlink()
        if case.setup == "acf-symlink":
            secret = outside / "secret.acf"
            secret.write_bytes(ACF)
            acf.symlink_to(secret)
        elif case.setup == "acf-devzero":
            acf.symlink_to("/dev/zero")
        elif case.setup == "acf-fifo":
            os.mkfifo(acf)
        elif case.setup == "acf-dir":
            acf.mkdir()
    elif case.setup.startswith("record-"):
        real = outside / "real.json"
        real.write_bytes(record.read_bytes())
        record.unlink()
        if case.setup == "record-symlink":
            record.symlink_to(real)
        elif case.setup == "record-fifo":
            os.mkfifo(record)
        elif case.setup == "record-devzero":
            record.symlink_to("/dev/zero")
        elif case.setup == "record-dir":
            record.mkdir()


@dataclass
class Prepared:
    case: Case
    pin_file: Path
    build_dir: Path
    top: Path  # the project's top folder: no folder from it down to the pin dir may be a link


def prepare(cases: list[Case], root: Path) -> list[Prepared]:
    out = []
    for i, case in enumerate(cases):
        top = root / f"c{i}"
        pin_dir = top / case.pin_dir_name
        pin_dir.mkdir(parents=True)
        (top / "outside").mkdir()
        if case.text is not None:
            (pin_dir / "kern.json").write_bytes(case.text)
        if case.acf is not None:
            (pin_dir / "kern.acf").write_bytes(case.acf)
        plant(case, pin_dir, top / "outside")
        out.append(Prepared(case, pin_dir / "kern.json", top / "build", top))
    return out


def python_verdict(p: Prepared) -> tuple[str, tuple[str, ...], str]:
    try:
        pin = resolve_build_pin("kern", p.pin_file.parent, params=p.case.params,
                                allow_numerics=p.case.allow_numerics, cuda=p.case.cuda, strict=False,
                                disabled=False, copy_dir=p.build_dir, ptxas=p.case.ptxas,
                                architectures=p.case.architectures, top=p.top)
    except CiqError as exc:
        return "refused", (), str(exc)
    gencode = [line for arch, args in pin.per_architecture for line in (f"[{arch}]", *(f"[{arch}] {a}" for a in args))]
    return pin.status, (*pin.arguments, *gencode), pin.message


_PREFIXES = re.compile(r"^(ciq_tune_target\(kern\): refusing the pinned record \S+?: |pinned record \S+?:? )(it )?")


_FIXES = re.compile(r"[.;] (Retune the target|Restore it from version control|restore it from version control|"
                    r"Retune, or|Retune with|Upgrade|Retune this one|Add ALLOW_NUMERICS|Allow them|Add \w+ to PARAMS)")


def reason(message: str) -> str:
    """What a refusal says is wrong, without the words around it that differ by reader: the record's
    name in front (the target's call, or the record) and the advice behind."""
    text = _PREFIXES.sub("", message, count=1)
    return _FIXES.split(text, maxsplit=1)[0]


def cmake_verdicts(prepared: list[Prepared], tmp: Path, cmake: str, probe: str = "") -> tuple[list[Verdict | None], str]:
    """CMake's verdict of each prepared case, in one ``cmake -P``; None for the cases from one where
    CMake stopped (a CMake error), and the output's tail to say why. A `probe` is CIQ_PROBE's value,
    as a variable, a cache entry and in the environment: no message may hold it."""
    lines = []
    for p in prepared:
        for value in (str(p.pin_file), *p.case.params, str(p.build_dir)):
            assert "\t" not in value and "|" not in value and "\n" not in value
        lines.append("\t".join([str(p.pin_file), "|".join(p.case.params), "ON" if p.case.allow_numerics else "OFF",
                                p.case.cuda, str(p.build_dir), p.case.ptxas, "|".join(p.case.architectures),
                                str(p.top)]))
    cases_file = tmp / "cases.txt"
    cases_file.write_text("\n".join(lines) + "\n")
    probe_args = [f"-DCIQ_PROBE={probe}"] if probe else []
    result = run([cmake, *probe_args, f"-DCIQ_CASES={cases_file}", "-P", str(CHECK_SCRIPT)], timeout=600,
                 env={**os.environ, "CIQ_PROBE": probe} if probe else None)
    assert not result.timed_out, "the CMake reader hung on a record"
    verdicts: dict[int, list] = {}
    for line in result.stderr.splitlines():
        if m := re.fullmatch(r"case (\d+): (applied|none|skipped|disabled|refused)(?:: (.*))?", line):
            verdicts[int(m.group(1))] = [m.group(2), [], m.group(3) or ""]
        elif (m := re.fullmatch(r"case (\d+) arg: (.*)", line)) and int(m.group(1)) in verdicts:
            verdicts[int(m.group(1))][1].append(m.group(2))
    found: list[Verdict | None] = []
    for i in range(len(prepared)):
        v = verdicts.get(i + 1)
        found.append(None if v is None or None in found else (v[0], tuple(v[1]), v[2]))
    return found, result.output_tail(40)
