"""Seeds: known-good configurations a search evaluates first (`tune --seed-from`), as values of its space.

A seed is a pinned record (another target's or another architecture's: its
controls, and each of its architecture entries'), a folder of records, or a
list of controls written as an nvcc command line (``-Xptxas=-O2 -DTILE=32``,
as `show` and `tune -v` print them). Each control becomes the knob or
parameter value of the searched space that gives exactly that flag or -D;
what a record holds that this space cannot give (a flag not searched, a -D
of another target's PARAMS, an ACF) is left out with a warning, so another
target's pin seeds what the two share; a parameter that cannot be absent
(PARAMS) and that the seed does not give takes its first value. A list of
controls is the user's own words, so a control in it that the space cannot
give is refused instead.
"""

from __future__ import annotations

import logging
import shlex
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ciq_build.compiler.controls import KNOB_PREFIX, PARAM_PREFIX, define_value, knob
from ciq_build.core.space import Param
from ciq_build.errors import CiqError, ConfigError
from ciq_build.pin.record import read_record

LOG = logging.getLogger("ciq_build")
FLAG = "--seed-from"


def read_seeds(specs: Sequence[str], space: Mapping[str, Param],
               allows: Callable[[Mapping[str, Any]], bool] | None = None) -> list[dict[str, Any]]:
    """The configurations `specs` name, as params of `space`, in order, each once; the defaults left out, and
    those the target's CONSTRAINTS (`allows`) refuse, with a warning (a strategy would drop them unsaid)."""
    seeds: list[dict[str, Any]] = []
    for spec in specs:
        for params in _configurations(spec, space):
            if not params or params in seeds:
                continue
            if allows is not None and not allows(params):
                LOG.warning("%s %s: %s is refused by the target's CONSTRAINTS; left out", FLAG, spec,
                            " ".join(f"{n}={v}" for n, v in params.items()))
                continue
            seeds.append(params)
    return seeds


def _configurations(spec: str, space: Mapping[str, Param]) -> list[dict[str, Any]]:
    if spec.strip().startswith("-"):
        flags, defines = _command_line(spec)
        return [_as_params(flags, defines, space, f"{FLAG} {spec!r}", strict=True)]
    path = Path(spec).expanduser()
    if path.is_dir():
        records = sorted(path.glob("*.json"))
        if not records:
            raise ConfigError(f"{FLAG} {spec}: the folder holds no pinned record (*.json); name a record, a "
                              "folder of them, or controls such as '-Xptxas=-O2 -DTILE=32'")
        return [c for record in records for c in _record_configurations(record, space)]
    if path.is_file():
        return _record_configurations(path, space)
    raise ConfigError(f"{FLAG} {spec}: no such file or folder; name a pinned record (<target>.json), a folder of "
                      "them, or controls starting with - such as '-Xptxas=-O2 -DTILE=32'")


def _record_configurations(path: Path, space: Mapping[str, Param]) -> list[dict[str, Any]]:
    """The record's controls and each architecture entry's, as params of `space`."""
    try:
        record = read_record(path)
    except CiqError as error:
        raise ConfigError(f"{FLAG} {path}: not a pinned record ciq_build can read: {error}") from None
    out = []
    for where, controls in [("", record.controls),
                            *((f" (architecture {arch})", e.controls) for arch, e in sorted(record.per_architecture.items()))]:
        if controls.acf is not None:
            LOG.warning("%s: the ACF of %s%s is not searched here; seeding with its flags and -D values only",
                        FLAG, path, where)
        out.append(_as_params(controls.flags, dict(controls.defines), space, f"{FLAG} {path}{where}", strict=False))
    return out


def _command_line(spec: str) -> tuple[list[str], dict[str, str]]:
    """Flags and -D NAME=VALUE of a controls list."""
    flags: list[str] = []
    defines: dict[str, str] = {}
    tokens = shlex.split(spec)
    while tokens:
        token = tokens.pop(0)
        if token == "-D" and tokens:
            token = "-D" + tokens.pop(0)
        if token.startswith("-D"):
            name, equals, value = token[2:].partition("=")
            if not name or not equals:
                raise ConfigError(f"{FLAG}: {token!r} needs a value: -D{name or 'NAME'}=VALUE")
            defines[name] = value
        else:
            flags.append(token)
    return flags, defines


def _as_params(flags: Sequence[str], defines: Mapping[str, str], space: Mapping[str, Param], what: str,
               strict: bool) -> dict[str, Any]:
    """`flags` and `defines` as the space's knob.* and param.* values; what it cannot give refused or warned."""
    by_flag = {knob(name).flag(value): (name, value) for name, param in space.items()
               if name.startswith(KNOB_PREFIX) for value in param.values()}
    params: dict[str, Any] = {}
    missing: list[str] = []
    for flag in flags:
        if flag in by_flag:
            name, value = by_flag[flag]
            params[name] = value
        else:
            missing.append(flag)
    for define, text in defines.items():
        param = space.get(PARAM_PREFIX + define)
        value = next((v for v in param.values() if define_value(v) == text), None) if param is not None else None
        if value is None:
            missing.append(f"-D{define}={text}")
        else:
            params[PARAM_PREFIX + define] = value
    if missing:
        searched = sorted(by_flag) + [f"-D{n.removeprefix(PARAM_PREFIX)}=..." for n in space if n.startswith(PARAM_PREFIX)]
        message = (f"{what}: {', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not among the controls this "
                   f"tune searches ({', '.join(searched[:12])}{' ...' if len(searched) > 12 else ''})")
        if strict:
            raise ConfigError(message + "; seed only those, or widen the search (--controls, PARAMS values)")
        LOG.warning("%s; left out of the seed", message)
    # A parameter that cannot be absent (PARAMS) and that the seed does not give takes its first value,
    # so a seed from another target still fits this space.
    filled = {name: param.values()[0] for name, param in space.items() if not param.can_knockout and name not in params}
    if filled:
        LOG.info("%s gives no %s: %s taken (the first value of each)", what,
                 ", ".join(n.removeprefix(PARAM_PREFIX) for n in filled),
                 ", ".join(f"{n.removeprefix(PARAM_PREFIX)}={v}" for n, v in filled.items()))
    return {**params, **filled}
