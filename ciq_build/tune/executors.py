"""The executor registry: which executors `--executor` names, the options each declares itself, and the one check
of a tune's options.

A name maps to `module:attribute` strings, imported when first asked for (Kernel
Tuner's `_STRATEGY_IMPORTS`, Optuna's `get_storage`): Ray is imported only by
`--executor ray`, and its options' declarations (ciq_build.ray.options, which
import nothing of Ray) only to build or read a command line. `register_executor`
adds one from Python (a user's own, a test's double), with its own options if it
declares any. No other module interprets an executor's name: `--executor`'s
choices, each executor's options in `tune`'s command line, --help and
`ciq_build.tune_target`'s keywords, the refusals and the driver's dispatch all
come from here. An executor imports its contract (ciq_build.tune.executor),
never this registry.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ciq_build.core.options import changed, declared_names, parsed_values, problems
from ciq_build.errors import ConfigError
from ciq_build.tune.tune_options import TuneOptions, add_tune_arguments

if TYPE_CHECKING:  # the contract (and the build machinery under it) is imported with an executor, not for --help
    from ciq_build.tune.executor import Executor


@dataclass(frozen=True)
class _BuiltIn:
    executor: str  # `module:attribute` of its class, made with no arguments
    options: str | None = None  # `module:attribute` of the dataclass declaring its own options (core.options)


_BUILT_IN = {
    "local": _BuiltIn("ciq_build.tune.executor:LocalExecutor"),
    "ray": _BuiltIn("ciq_build.ray.plugin:RayExecutor", options="ciq_build.ray.options:RayOptions"),
}
_REGISTERED: dict[str, Executor] = {}
_REGISTERED_OPTIONS: dict[str, type] = {}


def _load(reference: str) -> Any:
    module, _, attribute = reference.partition(":")
    return getattr(importlib.import_module(module), attribute)


def register_executor(executor: Executor, options: type | None = None) -> None:
    """Make `executor` available as `--executor <its name>` (and `TuneOptions(executor=...)`) in this process;
    `options`: the dataclass declaring its own options (ciq_build.core.options.option fields), if any."""
    if executor.name in _BUILT_IN:
        raise ConfigError(f"the executor name {executor.name!r} is taken by a built-in executor: pick another")
    _REGISTERED[executor.name] = executor
    if options is not None:
        _REGISTERED_OPTIONS[executor.name] = options


def executor_names() -> tuple[str, ...]:
    """Every executor --executor accepts: the built-in ones, then those registered."""
    return (*_BUILT_IN, *(name for name in _REGISTERED if name not in _BUILT_IN))


def get_executor(name: str) -> Executor:
    """The executor called `name`; a ConfigError naming the choices for any other."""
    if name in _REGISTERED:
        return _REGISTERED[name]
    if name not in _BUILT_IN:
        raise ConfigError(f"--executor must be one of {', '.join(executor_names())}, not {name!r}")
    executor: Executor = _load(_BUILT_IN[name].executor)()
    _REGISTERED[name] = executor
    return executor


def own_options() -> dict[str, type]:
    """The dataclass declaring each executor's own options, by executor name (those that declare any)."""
    built_in = {name: _load(entry.options) for name, entry in _BUILT_IN.items() if entry.options is not None}
    return {**built_in, **_REGISTERED_OPTIONS}


# -- the command line and the library call: `tune`'s own options and each executor's --------------------------


def add_arguments(parser: argparse.ArgumentParser) -> dict[str, argparse._ArgumentGroup]:
    """`tune`'s arguments (TuneOptions), `--executor`'s choices, and each executor's own options in their --help
    groups (returned, by name)."""
    return add_tune_arguments(parser, TuneOptions, more=tuple(own_options().values()),
                              choices={"executor": executor_names})


def read_tune_options(args: argparse.Namespace) -> TuneOptions:
    """The options a parser made by `add_arguments` read, the executor's own among them (None where all are
    their defaults). Another executor's options given are kept instead, for the check to refuse them."""
    given = {name: declaration(**parsed_values(declaration, args)) for name, declaration in own_options().items()}
    given = {name: own for name, own in given.items() if any(changed(own))}
    foreign = [own for name, own in given.items() if name != args.executor]
    return TuneOptions.from_args(args, executor_options=foreign[0] if foreign else given.get(args.executor))


def keyword_names() -> frozenset[str]:
    """Every option `ciq_build.tune_target` takes as a keyword: `tune`'s own, and each executor's."""
    return declared_names(TuneOptions).union(*(declared_names(d) for d in own_options().values()))


def tune_options(keywords: Mapping[str, Any], **fixed: Any) -> TuneOptions:
    """TuneOptions of a library call's `keywords` (keyword_names) and the call's `fixed` fields: an executor's
    own options (by field name) become its `executor_options`."""
    theirs = {name: declaration for declaration in own_options().values() for name in declared_names(declaration)}
    given: dict[type, dict[str, Any]] = {}
    for key, value in keywords.items():
        if key in theirs:
            given.setdefault(theirs[key], {})[key] = value
    if len(given) > 1:
        raise ConfigError(f"tune_target() was given the options of several executors: {', '.join(sorted(theirs))}")
    own = next((declaration(**values) for declaration, values in given.items()), None)
    return TuneOptions(**fixed, executor_options=own, **{k: v for k, v in keywords.items() if k not in theirs})


# -- the one check of a tune's options ------------------------------------------------------------------------


def checked_executor(options: TuneOptions) -> Executor:
    """`options` checked once, before anything is configured, and their executor: `tune`'s own declared values
    (TuneOptions.validate), the executor's name, its own options (given with another executor, refused naming
    their flags), then what the executor itself refuses (Executor.validate)."""
    options.validate()
    executor = get_executor(options.executor)
    own = options.executor_options
    if own is not None:
        owner = next((name for name, declaration in own_options().items() if isinstance(own, declaration)), None)
        if owner is None:
            known = ", ".join(declaration.__name__ for declaration in own_options().values())
            raise ConfigError(f"executor_options must be an executor's own options ({known}), not {own!r}")
        if owner != options.executor:
            flags = [how.flag for _, how in changed(own)]
            raise ConfigError(f"{', '.join(flags)} need{'s' if len(flags) == 1 else ''} --executor {owner}")
        for problem in problems(own):
            raise ConfigError(problem)
    executor.validate(options)
    return executor

