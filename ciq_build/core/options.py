"""One declaration per option: a dataclass field whose metadata says how the option is given on a command line.

From the declarations of an options dataclass come its argparse arguments
(`add_arguments`), the values read back from them (`parsed_values`), the
command line that gives them again (`command_line`), the checks of each value
(`problems`) and the keywords a library call takes (`declared_names`), so an
option is written once (scikit-build-core's settings model: a field with its
metadata, read by every source). A field without a declaration is set by the
caller itself (`tune`'s positional targets and its build tree).
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

_KEY = "ciq_option"

# A check of one value: what is wrong with it ("must be at least 1"), or None.
Check = Callable[[Any], "str | None"]


def word(value: object) -> str:
    """A value as one command-line word that reads back the same: repr for a float (all its digits), else str."""
    return repr(value) if isinstance(value, float) else str(value)


@dataclass(frozen=True)
class Option:
    """How one field is given on the command line, shown in --help and checked."""

    flags: tuple[str, ...]  # the first is the one command_line writes
    help: str
    group: str  # the --help section it is listed in
    metavar: str | None = None
    # The accepted words, or a function (a registry's) that returns them: asked when the parser is built and
    # when a value is checked, so what is registered later counts. Choices kept above the declaring module (a
    # registry that names what it loads) are handed to `add_arguments` by the registry itself.
    choices: Sequence[str] | Callable[[], Sequence[str]] | None = None
    parse: Callable[[str], Any] | None = None  # one word to the value (argparse's type=); None: the word itself
    show: Callable[[Any], str] = word  # the value to the word `parse` reads back
    check: Check | None = None  # replaces the choices' check when given (a value that is not a word)
    repeated: bool = False  # given once per item of a list (--objective A --objective B)
    switch: bool = False  # a flag without a value that sets the field to the opposite of its default (--no-pin)
    # More help, generated from declarations elsewhere when --help is shown (HelpFormatter), not when parsing.
    more_help: Callable[[], str] | None = None

    @property
    def flag(self) -> str:
        return self.flags[0]

    def accepted(self) -> tuple[str, ...] | None:
        return tuple(self.choices() if callable(self.choices) else self.choices) if self.choices is not None else None


def option(*flags: str, help: str, group: str, default: Any = None,
           default_factory: Callable[[], Any] | None = None, **how: Any) -> Any:
    """A dataclass field declared as a command-line option (`Option`'s fields as keywords)."""
    metadata = {_KEY: Option(flags=flags, help=help, group=group, **how)}
    if default_factory is not None:
        return dataclasses.field(default_factory=default_factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def declared(cls: type) -> Iterator[tuple[dataclasses.Field[Any], Option]]:
    """Every declared field of the dataclass `cls`, in declaration order, with its option."""
    for f in dataclasses.fields(cls):
        if _KEY in f.metadata:
            yield f, f.metadata[_KEY]


def declared_names(cls: type) -> frozenset[str]:
    return frozenset(f.name for f, _ in declared(cls))


def _default(f: dataclasses.Field[Any]) -> Any:
    return f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default


def add_arguments(parser: argparse.ArgumentParser, cls: type, groups: dict[str, argparse._ArgumentGroup],
                  choices: Mapping[str, Callable[[], Sequence[str]]] | None = None) -> None:
    """The argparse arguments of `cls`'s declared fields, each in its group (made here when `groups` lacks it);
    `choices`: by field name, the accepted words a registry above the declaring module keeps (--executor's)."""
    for f, how in declared(cls):
        if choices and f.name in choices:
            how = dataclasses.replace(how, choices=choices[f.name])
        group = groups.get(how.group) or groups.setdefault(how.group, parser.add_argument_group(how.group))
        default = _default(f)
        if how.switch:
            group.add_argument(*how.flags, dest=f.name, action="store_const", const=not default, default=default,
                               help=how.help)
            continue
        parsed: dict[str, Any] = {"type": how.parse} if how.parse is not None else {}
        action = group.add_argument(*how.flags, dest=f.name, action="append" if how.repeated else "store",
                                    default=default, choices=how.accepted(), metavar=how.metavar, help=how.help,
                                    **parsed)
        if how.more_help is not None:
            setattr(action, _MORE_HELP, how.more_help)


_MORE_HELP = "ciq_more_help"


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """--help that adds an option's generated help (`Option.more_help`) to its own, asked only when shown."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = super()._get_help_string(action)
        more = getattr(action, _MORE_HELP, None)
        return text if more is None else f"{text} {more().replace('%', '%%')}"


def parsed_values(cls: type, args: argparse.Namespace) -> dict[str, Any]:
    """The declared fields' values as `add_arguments`' parser read them, by field name."""
    return {f.name: getattr(args, f.name) for f, _ in declared(cls)}


def changed(options: object) -> Iterator[tuple[dataclasses.Field[Any], Option]]:
    """The declared fields of `options` whose value is not their default: what was given."""
    return ((f, how) for f, how in declared(type(options)) if getattr(options, f.name) != _default(f))


def given(options: object) -> dict[str, Any]:
    """`options`' declared values by field name, as a source of settings (ciq_build.core.settings.merged): a
    switch only where it was turned (left at its default, it says nothing), None and empty lists as they are."""
    turned = {f.name for f, _ in changed(options)}
    return {f.name: getattr(options, f.name) for f, how in declared(type(options)) if not how.switch or f.name in turned}


def command_line(options: object) -> list[str]:
    """The arguments that give `options`' declared fields again: those not at their default, as `--flag=word`."""
    words: list[str] = []
    for f, how in changed(options):
        value = getattr(options, f.name)
        if how.switch:
            words.append(how.flag)
        elif how.repeated:
            words += [f"{how.flag}={how.show(item)}" for item in value]
        else:
            words.append(f"{how.flag}={how.show(value)}")
    return words


def problems(options: object) -> Iterator[str]:
    """What is wrong with `options`' declared values, one message each, naming the flag: each value on its own
    (its check, or its choices)."""
    for f, how in declared(type(options)):
        value = getattr(options, f.name)
        if value is None or how.switch:
            continue  # not given: the manifest or a default decides
        accepted = how.accepted()
        for item in value if how.repeated else (value,):
            problem = how.check(item) if how.check is not None else (
                f"must be one of {', '.join(accepted)}, not {item!r}" if accepted and item not in accepted else None)
            if problem:
                yield f"{how.flag} {problem}"


def at_least(least: int) -> Check:
    """The check of a count: `least` or more."""
    return lambda value: None if value >= least else f"must be at least {least}, not {value!r}"
