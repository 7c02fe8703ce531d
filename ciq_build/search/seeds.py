"""Seeds: known-good configurations a search evaluates first (`tune --seed-from`, SEEDS), as values of its space.

A seed is a pinned record (another target's or another architecture's: its
controls, and each of its architecture entries'), an ACF file, a folder of
records and ACFs (a pool from `sample-acfs`, another project's ``ciq/``), or
a list of controls written as an nvcc command line (``-Xptxas=-O2 -DTILE=32``,
as `show` and `tune -v` print them). Each control becomes the knob or
parameter value of the searched space that gives exactly that flag or -D.

A seed that does not fit the space is said and skipped, never fatal: what a
record holds that this space cannot give (a flag not searched, a -D of
another target's PARAMS, an ACF when no ACFs are searched, or one this
toolkit refuses) is left out of it, so another target's pin seeds what the
two share; a controls list is the user's own words, so one with a control
the space cannot give is left out whole (seeding part of it would evaluate
a configuration nobody named). A parameter that cannot be absent (PARAMS)
and that the seed does not give keeps the source's own value where the
target's sources #define it under a guard and the space holds that value
(`source_defaults`: an ACF pinned on the defaults seeds the defaults' code
with that ACF), else takes its first value, said. A record or ACF that
cannot be read is said and left out too: an ACF is read as the pin readers
read one (a regular file, no link, FIFO or device, within the size limit),
a record by the pin reader itself. Only a malformed seed (no such file,
`-DNAME` without a value) is an error.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ciq_build.compiler.acf import ACF_SUFFIX
from ciq_build.compiler.controls import KNOB_PREFIX, PARAM_PREFIX, AcfRef, controls_from_candidate, define_value, knob
from ciq_build.core.rules import load_rules, nearest, read_regular_file
from ciq_build.core.space import Param
from ciq_build.errors import CiqError, ConfigError
from ciq_build.pin.read import read_record

LOG = logging.getLogger("ciq_build")
FLAG = "--seed-from"
POOL_LISTING = "pool.json"  # an ACF pool's listing (search/acf_pool.py): not a pinned record


@dataclass(frozen=True)
class Seed:
    """One configuration to evaluate first: values of the space, and the ACF it applies (if any)."""

    params: Mapping[str, Any]
    acf: AcfRef | None = None
    origin: str = field(default="", compare=False)  # what named it, for messages


@dataclass(frozen=True)
class AcfSeeding:
    """How the tune searches ACFs, for the ACFs seeds bring: the compiler that reads them, and
    `refusals`, which says for each ACF this tune cannot apply why not ({path: reason}; accepted absent)."""

    compiler: str
    refusals: Callable[[list[AcfRef]], Mapping[Path, str]]


@dataclass
class _Found:
    origin: str
    flags: list[str]
    defines: dict[str, str]
    acf: AcfRef | None = None
    strict: bool = False  # a controls list: left out whole when a control does not fit
    said_as: str = FLAG  # how the user gave it: --seed-from, or the target's SEEDS


def read_seeds(specs: Sequence[str], space: Mapping[str, Param],
               allows: Callable[[Mapping[str, Any]], bool] | None = None,
               acfs: AcfSeeding | None = None, source_defaults: Mapping[str, str] | None = None,
               said_as: str = FLAG) -> list[Seed]:
    """The configurations `specs` name, as Seeds of `space`, in order, each once; the defaults left out, and
    what does not fit (see the module's note) or the target's CONSTRAINTS (`allows`) refuse, with a warning.
    `source_defaults`: the -D text of each PARAMS name the sources give a guarded default ({"TILE": "32"});
    `said_as`: what the messages call them (the target's SEEDS where the command line gave none)."""
    found = [dataclasses.replace(item, said_as=said_as) for spec in specs for item in _found(spec, acfs, said_as)]
    refused = _acf_refusals(found, acfs)
    seeds: list[Seed] = []
    for item in found:
        acf = item.acf
        if acf is not None and acf.path in refused:
            LOG.warning("%s %s: the ACF %s cannot be seeded: %s; %s", item.said_as, item.origin, acf.path.name,
                        refused[acf.path], "seeding with its flags and -D values only"
                        if item.flags or item.defines else "left out")
            acf = None
        params = _as_params(item, space, source_defaults or {})
        if params is None or (not params and acf is None):
            continue
        seed = Seed(params, acf, item.origin)
        if seed in seeds:
            continue
        if allows is not None and not allows(params):
            controls = controls_from_candidate(params)  # as the user writes it, not the space's knob.*/param.* names
            LOG.warning("%s %s: %s is refused by the target's CONSTRAINTS; left out", item.said_as, item.origin,
                        " ".join([*controls.flags, *(f"-D{name}={value}" for name, value in controls.defines)]))
            continue
        seeds.append(seed)
    return seeds


def manifest_seeds(seeds: Sequence[str], source_dir: Path) -> tuple[str, ...]:
    """A target's SEEDS, their paths relative to its source folder (a controls list as written); a path not
    there (yet: another target's pin before its first tune) said and skipped, since the project names it."""
    kept = []
    for seed in seeds:
        if seed.strip().startswith("-"):
            kept.append(seed)
            continue
        path = source_dir / Path(seed).expanduser()
        if path.exists():
            kept.append(str(path))
        else:
            LOG.warning("SEEDS %s: no such file or folder (yet); skipped", seed)
    return tuple(kept)


def _found(spec: str, acfs: AcfSeeding | None, said_as: str = FLAG) -> list[_Found]:
    if spec.strip().startswith("-"):
        flags, defines = _command_line(spec, said_as)
        return [_Found(repr(spec), flags, defines, strict=True)]
    path = Path(spec).expanduser()
    if path.is_dir():
        records = sorted(p for p in path.glob("*.json") if p.name != POOL_LISTING)
        acf_files = sorted(path.glob(f"*{ACF_SUFFIX}"))
        if not records and not acf_files:
            raise ConfigError(f"{said_as} {spec}: the folder holds no pinned record (*.json) and no ACF (*.acf); "
                              "name a record, an ACF, a folder of them, or controls such as '-Xptxas=-O2 -DTILE=32'")
        return ([c for record in records for c in _record_found(record, said_as)]
                + [c for file in acf_files for c in _acf_found(file, acfs, said_as)])
    if path.is_file():
        return _acf_found(path, acfs, said_as) if path.suffix == ACF_SUFFIX else _record_found(path, said_as)
    raise ConfigError(f"{said_as} {spec}: no such file or folder; name a pinned record (<target>.json), an ACF (.acf), "
                      "a folder of them, or controls starting with - such as '-Xptxas=-O2 -DTILE=32'")


def _acf_found(path: Path, acfs: AcfSeeding | None, said_as: str = FLAG) -> list[_Found]:
    """An ACF file on its own: read by the compiler whose ACFs the tune searches (nothing in it says which)."""
    if acfs is None:
        LOG.warning("%s %s: this tune searches no ACFs (SEARCH_SPACE or --controls ptxas-acf[:VERSION], nvcc-acf, "
                    "or acf-pool:<folder>); left out", said_as, path)
        return []
    try:
        # As the pin readers read an ACF: a regular file (no link, FIFO or device) within the size limit.
        data = read_regular_file(path, load_rules().limit("acf_bytes"), "the ACF")
    except OSError as error:
        LOG.warning("%s %s: cannot be seeded: %s; left out", said_as, path, error.strerror or error)
        return []
    if not data:
        LOG.warning("%s %s: cannot be seeded: the ACF is empty; left out", said_as, path)
        return []
    return [_Found(str(path), [], {}, AcfRef(path.absolute(), acfs.compiler, hashlib.sha256(data).hexdigest()))]


def _record_found(path: Path, said_as: str = FLAG) -> list[_Found]:
    """The record's controls and each architecture entry's; a record that cannot be read is said and left out."""
    try:
        record = read_record(path, named_for_target=False)  # a seed may be a record copied under any name
    except CiqError as error:
        LOG.warning("%s %s: not a pinned record ciq_build can read (%s); left out", said_as, path,
                    " ".join(str(error).split()))
        return []
    return [_Found(f"{path}{where}", list(controls.flags), dict(controls.defines), controls.acf)
            for where, controls in [("", record.controls),
                                    *((f" (architecture {arch})", e.controls)
                                      for arch, e in sorted(record.per_architecture.items()))]]


def _acf_refusals(found: list[_Found], acfs: AcfSeeding | None) -> Mapping[Path, str]:
    """Why each seed's ACF cannot be applied here: no ACFs searched, another compiler's, or `acfs.refusals`."""
    refused: dict[Path, str] = {}
    asked: dict[Path, AcfRef] = {}
    for item in found:
        acf = item.acf
        if acf is None:
            continue
        if acfs is None:
            refused[acf.path] = ("this tune searches no ACFs (SEARCH_SPACE or --controls ptxas-acf[:VERSION], "
                                 "nvcc-acf, or acf-pool:<folder>)")
        elif acf.compiler != acfs.compiler:
            refused[acf.path] = f"a {acf.compiler} ACF, and this tune searches {acfs.compiler} ACFs"
        else:
            asked[acf.path] = acf
    if asked and acfs is not None:
        refused.update(acfs.refusals(list(asked.values())))
    return refused


def _command_line(spec: str, said_as: str = FLAG) -> tuple[list[str], dict[str, str]]:
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
                raise ConfigError(f"{said_as}: {token!r} needs a value: -D{name or 'NAME'}=VALUE")
            defines[name] = value
        else:
            flags.append(token)
    return flags, defines


def _define_refusal(name: str, text: str, param: Param | None, names: Sequence[str]) -> str:
    """Why a seed's -Dname=text is not searched: the values its PARAMS takes, or that no PARAMS has the name (and
    the one meant)."""
    if param is not None:
        shown = [define_value(param.value(i)) for i in range(min(param.size, 13))]  # not values(): a range may be long
        return (f"PARAMS {name} takes {', '.join(shown[:12])}{', ...' if len(shown) > 12 else ''} (not {text})")
    if not names:
        return f"{name} is not a PARAMS name (this tune searches no PARAMS)"
    meant = nearest(name, names)
    return f"{name} is not a PARAMS name ({f'did you mean {meant}?' if meant else 'they are ' + ', '.join(names)})"


def _as_params(item: _Found, space: Mapping[str, Param], source_defaults: Mapping[str, str]) -> dict[str, Any] | None:
    """The seed's flags and -D values as the space's knob.* and param.* values (None: a controls list that
    does not fit, left out whole); what it cannot give said."""
    by_flag = {knob(name).flag(value): (name, value) for name, param in space.items()
               if name.startswith(KNOB_PREFIX) for value in param.values()}
    params: dict[str, Any] = {}
    missing: list[str] = []
    for flag in item.flags:
        if flag in by_flag:
            name, value = by_flag[flag]
            params[name] = value
        else:
            missing.append(flag)
    names = [n.removeprefix(PARAM_PREFIX) for n in space if n.startswith(PARAM_PREFIX)]
    why: list[str] = []  # of each -D left out: the values its PARAMS takes, or the name meant
    for define, text in item.defines.items():
        param = space.get(PARAM_PREFIX + define)
        value = next((v for v in param.values() if define_value(v) == text), None) if param is not None else None
        if value is None:
            missing.append(f"-D{define}={text}")
            why.append(_define_refusal(define, text, param, names))
        else:
            params[PARAM_PREFIX + define] = value
    if missing:
        searched = sorted(by_flag) + [f"-D{name}=..." for name in names]
        LOG.warning("%s %s: %s %s not among the controls this tune searches (%s%s); %s%s", item.said_as, item.origin,
                    ", ".join(missing), "is" if len(missing) == 1 else "are", ", ".join(searched[:12]) or "none",
                    " ..." if len(searched) > 12 else "",
                    "the seed is left out (seed only those, or widen the search: --controls, PARAMS values)"
                    if item.strict else "left out of the seed", "".join(f". {each}" for each in why))
        if item.strict:
            return None
    # A parameter that cannot be absent (PARAMS) and that the seed does not give: the source's own value where
    # the space has it (the code the seed was made on, when it is a pin of the defaults), else the first value.
    filled: dict[str, Any] = {}
    guessed: dict[str, Any] = {}  # by PARAMS name: the first value, taken for want of the source's own
    for name, param in space.items():
        if param.can_knockout or name in params:
            continue
        own = source_defaults.get(name.removeprefix(PARAM_PREFIX))
        value = next((v for v in param.values() if own is not None and define_value(v) == own), None)
        if value is None:
            value = guessed[name.removeprefix(PARAM_PREFIX)] = param.values()[0]
        filled[name] = value
    if guessed and (params or item.acf is not None):
        LOG.warning("%s %s gives no %s and the sources give no guarded default the search has: %s taken (the first "
                    "value of each); to seed the defaults' value, name it (-DNAME=VALUE in a controls list)", item.said_as,
                    item.origin, "value for " + ", ".join(guessed),
                    ", ".join(f"{name}={value}" for name, value in guessed.items()))
    return {**params, **filled}
