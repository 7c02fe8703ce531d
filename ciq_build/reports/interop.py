"""A tune's evaluations in the formats of tools people already use: an Optuna journal storage (optuna-dashboard,
``optuna.storages.JournalStorage``) and a Kernel Tuner cache file.

One search's evaluations (the shown one: its objectives name the values), the baseline included. Optuna's file
is written by Optuna itself (the ``[optuna]`` extra), so any Optuna of that format reads it: one study named
after the target, one trial per evaluation, each search parameter a categorical distribution over the values
the search tried, the objectives as the study's directions; a failed candidate is a FAIL trial. Each trial's
user attributes keep what Optuna has no field for (the journal key, the controls, the metrics, the cause).

Kernel Tuner's cache is its JSON: ``tune_params`` and ``tune_params_keys`` from the search parameters,
``objective`` the first objective, and one ``cache`` entry per configuration keyed by its values joined with
commas, holding the parameters, every metric and the objectives' scores (a failed one's scores say why, as
Kernel Tuner's own failed entries do).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from ciq_build.errors import ConfigError
from ciq_build.reports.history import JournalEntry, TuneHistory


def _shown(history: TuneHistory) -> list[JournalEntry]:
    """The evaluations scored in the shown search's objectives (earlier searches' reused ones included)."""
    return [e for e in history.evaluations if history.objectives_of(e) == tuple(history.objectives)]


def _choices(entries: list[JournalEntry]) -> dict[str, list[Any]]:
    """Each search parameter's values the evaluations hold, in a stable order."""
    values: dict[str, set[Any]] = {}
    for entry in entries:
        for name, value in entry.params.items():
            values.setdefault(name, set()).add(value)
    return {name: sorted(found, key=lambda v: (type(v).__name__, v)) for name, found in sorted(values.items())}


def write_optuna_journal(history: TuneHistory, path: Path) -> int:
    """An Optuna journal storage file at `path` (replaced) holding `history`'s shown search; its trial count."""
    try:
        import optuna
        from optuna.storages import JournalStorage
        from optuna.storages.journal import JournalFileBackend
    except ImportError:
        raise ConfigError('export --optuna writes with Optuna itself: pip install "ciq-build[optuna]"') from None
    entries = _shown(history)
    distributions = {name: optuna.distributions.CategoricalDistribution(values)
                     for name, values in _choices(entries).items()}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.unlink(missing_ok=True)
        storage = JournalStorage(JournalFileBackend(str(path)))
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror or exc}; choose another file") from exc
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(study_name=history.target, storage=storage,
                                directions=["minimize" if o.direction == "min" else "maximize"
                                            for o in history.objectives])
    study.set_user_attr("objectives", [o.spec for o in history.objectives])
    study.set_user_attr("journal", str(history.journal_path))
    for entry in entries:
        finite = entry.ok and entry.scores is not None and all(math.isfinite(s) for s in entry.scores)
        study.add_trial(optuna.trial.create_trial(
            params=dict(entry.params), distributions={name: distributions[name] for name in entry.params},
            values=list(entry.scores) if finite and entry.scores is not None else None,
            state=optuna.trial.TrialState.COMPLETE if finite else optuna.trial.TrialState.FAIL,
            user_attrs={"key": entry.key, "baseline": entry.is_baseline, "generation": entry.generation,
                        "flags": list(entry.flags), "defines": entry.defines, "acf": entry.acf,
                        "cause": entry.cause, "metrics": {k: v for k, v in entry.metrics.items() if math.isfinite(v)}}))
    return len(entries)


def kernel_tuner_cache(history: TuneHistory) -> str:
    """`history`'s shown search as a Kernel Tuner cache file (its JSON)."""
    entries = [e for e in _shown(history) if not e.is_baseline]  # the defaults are no configuration of the grid
    choices = _choices(entries)
    keys = list(choices)
    objectives = [o.spec for o in history.objectives]
    cache: dict[str, dict[str, Any]] = {}
    for entry in entries:
        row: dict[str, Any] = {name: entry.params.get(name) for name in keys}
        row.update({name: value for name, value in sorted(entry.metrics.items()) if math.isfinite(value)})
        if entry.ok and entry.scores is not None:
            row.update(zip(objectives, entry.scores))
        else:
            failed = "CompilationFailedConfig" if (entry.cause or "").startswith("compile") else "RuntimeFailedConfig"
            row.update({name: failed for name in objectives})
        cache[",".join(str(entry.params.get(name)) for name in keys)] = row
    document = {"device_name": "", "kernel_name": history.target, "problem_size": [], "tune_params_keys": keys,
                "tune_params": choices, "objective": objectives[0] if objectives else "",
                "objective_higher_is_better": bool(history.objectives) and history.objectives[0].direction == "max",
                "cache": cache}
    return json.dumps(document, indent=1, allow_nan=False) + "\n"
