"""Hostile pinned records, generated: what the two pin readers must judge alike.

Each record is the valid record of ``readers.valid_record`` (or its per-architecture form) with one
hostile change, drawn from seven kinds in turn:

- a string field (or a map key) holding text CMake's evaluator would act on: ``${...}``, ``$ENV{...}``,
  ``$CACHE{...}``, backslashes, ``;``, quotes, generator expressions, control and non-ASCII characters;
- a ``nvcc_version`` / ``ptxas_version`` of long, spaced, zero-padded or odd numbers, met by a ptxas
  of some version;
- ``toolchain.architectures`` in spellings with repeated, mixed or upper-case prefixes and suffixes;
- a build compiling for such spellings;
- a NUL byte anywhere in the file;
- byte mutations with an alphabet of JSON's and CMake's special characters;
- any field of the record replaced by a hostile JSON value.

The probes name ``CIQ_PROBE``, which the differential run defines (environment and cache) with
``PROBE_VALUE``: a message that holds ``PROBE_VALUE`` (or the cmake path behind ``${CMAKE_COMMAND}``)
is a record's text that CMake expanded.
"""

from __future__ import annotations

import json
import random

from bench.pin_readers.readers import Case, as_json, per_architecture_record, valid_record, with_value

PROBE_VALUE = "ciq-probe-expanded"
PROBES = ["${CIQ_PROBE}", "$ENV{CIQ_PROBE}", "$CACHE{CIQ_PROBE}", "${CMAKE_COMMAND}"]
# Text that CMake's evaluator would expand or stop at, were a record's string ever evaluated again.
EVALUATED = [*PROBES, "${", "a\\qb", "a\\", "\\${X}", "$ENV{PATH};x", "@CIQ_PROBE@", 'a"b']
_PIECES = [*EVALUATED, "\\", "\\\\", ";", "\n", "\t", "\u001b[2J", "\u00e9", "}", "{", "$<TARGET_FILE:x>",
           "#", "[[", "]]", " ", "13.3", "90a", "-O2", "kern", "(", ")", "$", "\\n", "\\;"]
STRING_PATHS = ["target", "toolchain.cuda", "toolchain.nvcc_version", "toolchain.ptxas_version",
                "toolchain.architectures.0", "controls.flags.0", "controls.flags.1", "controls.defines.TILE",
                "controls.acf.file", "controls.acf.compiler", "controls.acf.sha256", "objectives.0.name",
                "objectives.0.direction", "provenance.engine", "provenance.note"]
_JSON_VALUES = [None, True, False, 0, -1, 1.5, 10**20, "", "x", [], ["x"], {}, {"x": 1}, "A" * 300]
_MUTATION_BYTES = b'{}[]:,"\\ 0123456789.eE+-truefalsn\tu${};@#\x00'
_SPELLINGS = ["", "sm_", "compute_", "lto_", "SM_", "Sm_", "sm_sm_", "lto_sm_", "compute_sm_", "sm_compute_"]


def _hostile_text(rng: random.Random) -> str:
    return "".join(rng.choice(_PIECES) for _ in range(rng.randint(1, 3)))


def _string_field(rng: random.Random, i: int) -> Case:
    value = _hostile_text(rng)
    if rng.random() < 0.2:  # a map key: a define's name or a per-architecture entry's
        record = valid_record()
        record["controls"]["defines"][value] = "1"
        return Case(f"{i}: define named {value!r}", as_json(record))
    path = rng.choice(STRING_PATHS)
    return Case(f"{i}: {path} = {value!r}", as_json(with_value(path, value)))


def _version(rng: random.Random, i: int) -> Case:
    numbers = [rng.choice(["0", "00", "13", "013", "3", "73", "999999", "1234567", "1" * rng.randint(7, 25)])
               for _ in range(rng.randint(1, 4))]
    version = rng.choice([".", "..", ". ", "-"]).join(numbers) if rng.random() < 0.3 else ".".join(numbers)
    if rng.random() < 0.3:
        version = rng.choice([" ", "\t", "V", "x"]) + version if rng.random() < 0.5 else version + " x"
    field = rng.choice(["toolchain.ptxas_version", "toolchain.nvcc_version"])
    ptxas = rng.choice(["13.3", "13.0", "12.0", ""])
    return Case(f"{i}: {field} = {version!r}, ptxas {ptxas!r}", as_json(with_value(field, version)), ptxas=ptxas)


def _arch(rng: random.Random) -> str:
    number = rng.choice(["90a", "90A", "80", "100a", "120", "090", "9", "sm", ""])
    return rng.choice(_SPELLINGS) + number + rng.choice(["", "", "-real", "-virtual", "_", " "])


def _architectures(rng: random.Random, i: int) -> Case:
    tuned = [_arch(rng) for _ in range(rng.randint(1, 3))]
    building = tuple(rng.choice(["90a", "sm_90a", "80", "90a-real"]) for _ in range(rng.randint(1, 2)))
    return Case(f"{i}: tuned {tuned} building {building}", as_json(with_value("toolchain.architectures", tuned)),
                architectures=building)


def _building(rng: random.Random, i: int) -> Case:
    building = tuple(_arch(rng) for _ in range(rng.randint(0, 3)))
    return Case(f"{i}: building {building}", as_json(valid_record()), architectures=building)


def _nul(rng: random.Random, i: int) -> Case:
    text = bytearray(as_json(valid_record()) if rng.random() < 0.8 else json.dumps(valid_record()).encode())
    if rng.random() < 0.3:
        text = bytearray(bytes(text).replace(b"\n", b"\r\n"))
    at = rng.choice([0, len(text), len(text), rng.randrange(len(text) + 1)])
    text[at:at] = b"\x00" * rng.randint(1, 2)
    return Case(f"{i}: NUL at {at}", bytes(text))


def _mutation(rng: random.Random, i: int) -> Case:
    data = bytearray(as_json(valid_record()))
    for _ in range(rng.randint(1, 3)):
        at = rng.randrange(len(data))
        op = rng.random()
        if op < 0.4:
            del data[at]
        elif op < 0.8:
            data.insert(at, rng.choice(_MUTATION_BYTES))
        else:
            data[at] = rng.choice(_MUTATION_BYTES)
    return Case(f"{i}: mutation", bytes(data))


def _any_field(rng: random.Random, i: int) -> Case:
    per_arch = rng.random() < 0.3
    base = per_architecture_record() if per_arch else valid_record()
    paths: list[str] = []

    def walk(node: object, prefix: str) -> None:
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else []
        for key, value in items:
            here = f"{prefix}.{key}" if prefix else str(key)
            if "CMakeFiles" not in here:  # an object path has dots of its own
                paths.append(here)
                walk(value, here)

    walk(base, "")
    path = rng.choice(paths)
    value = rng.choice([*_JSON_VALUES, _hostile_text(rng)])
    extra = {"architectures": ("80", "90a"), "setup": "other-acf"} if per_arch else {}
    return Case(f"{i}: {path} = {value!r}"[:120], as_json(with_value(path, value, base)), **extra)  # type: ignore[arg-type]


KINDS = [_string_field, _version, _architectures, _building, _nul, _mutation, _any_field]


def hostile_cases(count: int, seed: int = 36) -> list[Case]:
    """`count` hostile records, the same for the same seed: the kinds in turn, each drawn at random."""
    rng = random.Random(seed)
    return [KINDS[i % len(KINDS)](rng, i) for i in range(count)]
