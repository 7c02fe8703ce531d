"""A strategy's own options: one frozen dataclass per strategy, a field per option with its default and help.

A strategy declares them as its ``options`` attribute (Kernel Tuner's per-strategy
``_options`` table); ``tune --strategy-option KEY=VALUE`` sets one, its help is
generated from the declarations (`describe`), and a key the strategy does not
declare is refused in one line naming those it does. The values are merged by
field name (scikit-build-core's sources): the declaration's default, then the
same-named field of the run's ``SearchConfiguration`` (what ``--generations``,
``--pool-size`` and ``--mutate-rate`` set), then ``--strategy-option``.

The budget is not a strategy's option: ``--max-evaluations`` and
``--time-limit`` belong to the loop, whatever the strategy.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ciq_build.errors import ConfigError

_HELP = "ciq_strategy_option"


def strategy_option(default: Any, help: str) -> Any:
    """A field of a strategy's options dataclass: its default and one line of help."""
    return dataclasses.field(default=default, metadata={_HELP: help})


@dataclass(frozen=True)
class NoOptions:
    """A strategy that declares no options (one given from Python without an ``options`` attribute)."""


def split_pairs(pairs: Iterable[str]) -> dict[str, str]:
    """``KEY=VALUE`` words by key (the last one given wins); a ConfigError for a word without ``=``."""
    split: dict[str, str] = {}
    for pair in pairs:
        key, equals, value = pair.partition("=")
        if not equals or not key.strip():
            raise ConfigError(f"--strategy-option takes KEY=VALUE, not {pair!r}")
        split[key.strip()] = value.strip()
    return split


def options_of(strategy: object) -> type:
    """The options dataclass `strategy` declares (``NoOptions`` where it declares none)."""
    declared = getattr(strategy, "options", NoOptions)
    if not (isinstance(declared, type) and dataclasses.is_dataclass(declared)):
        raise ConfigError(f"strategy {getattr(strategy, 'name', strategy)!r}: its options must be a dataclass, "
                          f"not {declared!r}")
    return declared


def check_keys(name: str, options: type, keys: Iterable[str]) -> None:
    """Refuse, in one line naming the known ones, a key `options` does not declare."""
    known = [f.name for f in dataclasses.fields(options)]
    unknown = [key for key in keys if key not in known]
    if unknown:
        takes = f"its options: {', '.join(known)}" if known else "it takes none"
        raise ConfigError(f"--strategy-option {unknown[0]}: strategy {name!r} has no such option; {takes}")


def merged(name: str, options: type, config: object, given: Mapping[str, str]) -> Any:
    """`options` of strategy `name`: declared defaults <- `config`'s same-named fields <- `given` (parsed)."""
    check_keys(name, options, given)
    hints = typing.get_type_hints(options)
    values: dict[str, Any] = {}
    for f in dataclasses.fields(options):
        if f.name in given:
            values[f.name] = _parse(name, f.name, hints[f.name], given[f.name])
        elif hasattr(config, f.name):
            values[f.name] = getattr(config, f.name)
    return options(**values)


def describe(name: str, options: type) -> str:
    """One line of help for strategy `name`'s options, from their declarations."""
    fields = dataclasses.fields(options)
    if not fields:
        return f"{name}: none"
    return f"{name}: " + "; ".join(f"{f.name} ({f.metadata.get(_HELP, '')}{_shown(f)})" for f in fields)


def _shown(f: dataclasses.Field[Any]) -> str:
    """The default as the help says it: the flag that sets it, the value, or nothing (the help says it)."""
    if f.name in _FLAGGED:
        return ", default as --" + f.name.replace("_", "-")
    return "" if f.default is None else f", default {f.default}"


# The fields --generations, --pool-size and --mutate-rate set: their default is the flag's.
_FLAGGED = frozenset({"generations", "pool_size", "mutate_rate"})


def _parse(strategy: str, key: str, hint: Any, text: str) -> Any:
    """`text` as a value of the field's type (int, float, bool, str, or one of them or None)."""
    kinds = [k for k in typing.get_args(hint) if k is not type(None)] if _is_union(hint) else [hint]
    if _is_union(hint) and text.lower() in ("none", ""):
        return None
    kind = kinds[0]
    try:
        if kind is bool:
            if text.lower() not in ("true", "false", "1", "0", "yes", "no", "on", "off"):
                raise ValueError(text)
            return text.lower() in ("true", "1", "yes", "on")
        return kind(text)
    except ValueError:
        raise ConfigError(f"--strategy-option {key}={text}: strategy {strategy!r} takes "
                          f"{getattr(kind, '__name__', kind)} there") from None


def _is_union(hint: Any) -> bool:
    return typing.get_origin(hint) in (typing.Union, types.UnionType)
