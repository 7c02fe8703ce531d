"""Controls whose values never changed a candidate's machine code, as far as the search shows: a PARAMS name
(misspelt, or one the source never reads) or a compiler knob (the register cap of kernels whose
``__launch_bounds__`` set their registers, a cache operator on code without such loads).

One rule for both: a name is reported when some candidates differ in it alone (everything else the same) and,
wherever they do, their code is the same, and they show at least two of its values (a switch has one): one value
may be the default, which builds the same code as no value at all. Never where no two candidates tell. It needs
the candidates' code keys (ciq_build.tune.dedupe: computed with a benchmark or sass_instructions).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence

from ciq_build.compiler.controls import KNOBS, Controls, Knob, option_name
from ciq_build.core.params import PARAM_PREFIX, parse_params
from ciq_build.search.evaluation import Evaluation

# (its value, None where not set; everything else the controls set) of one name in a candidate's controls.
Split = Callable[[Controls], tuple[Hashable, Hashable]]


def _without_effect(splits: dict[str, tuple[Split, int]], evaluations: Iterable[Evaluation]) -> list[str]:
    """The names of `splits` ({name: (split, values it must show)}) whose values changed no candidate's code."""
    coded = [e for e in evaluations if e.ok and e.code is not None]
    found = []
    for name, (split, needed) in splits.items():
        codes: dict[Hashable, dict[Hashable, set[str]]] = {}
        for e in coded:
            value, rest = split(e.controls)
            assert e.code is not None
            codes.setdefault(rest, {}).setdefault(value, set()).add(e.code)
        told = [by_value for by_value in codes.values() if len(by_value) > 1]
        shown = {value for by_value in told for value in by_value if value is not None}
        if told and len(shown) >= needed and all(len(set().union(*by_value.values())) == 1 for by_value in told):
            found.append(name)
    return found


def _acf(controls: Controls) -> str | None:
    return controls.acf.sha256 if controls.acf is not None else None


def _define_split(name: str) -> Split:
    def split(controls: Controls) -> tuple[Hashable, Hashable]:
        defines = dict(controls.defines)
        return defines.get(name), (controls.flags, _acf(controls), tuple(sorted(defines.items() - {(name, defines.get(name))})))
    return split


def _knob_split(knob: Knob) -> Split:
    def split(controls: Controls) -> tuple[Hashable, Hashable]:
        mine = [flag for flag in controls.flags if option_name(flag) == knob.option]
        rest = tuple(flag for flag in controls.flags if option_name(flag) != knob.option)
        return (mine[0] if mine else None), (rest, _acf(controls), controls.defines)
    return split


def params_without_effect(specs: Iterable[str], evaluations: Iterable[Evaluation]) -> list[str]:
    """The PARAMS names (without param.) whose values changed no candidate's machine code."""
    names = sorted(name[len(PARAM_PREFIX):] for name in parse_params(specs))
    return _without_effect({name: (_define_split(name), 2) for name in names}, evaluations)


def knobs_without_effect(evaluations: Sequence[Evaluation]) -> list[Knob]:
    """The knobs whose values changed no candidate's machine code (the baseline, no knob set, among them)."""
    splits = {knob.name: (_knob_split(knob), 1 if knob.is_switch else 2) for knob in KNOBS}
    found = set(_without_effect(splits, evaluations))
    return [knob for knob in KNOBS if knob.name in found]


# Why a knob changed nothing, where there is a likely reason. Measured with nvcc 13.0 and 13.3: a kernel that
# declares __launch_bounds__ keeps its registers under -maxrregcount=24 or 32 (64 registers; its code may still
# differ a little), one beside it without them gets 24; FlashInfer's kernels built the same code at every cap.
_LIKELY_REASONS = {
    "maxrregcount": "its kernels likely declare __launch_bounds__, which govern their registers (a kernel that "
                    "declares them keeps its registers whatever -maxrregcount says); tune the bounds instead, as "
                    "PARAMS",
}


def without_effect_lines(params: Sequence[str], knobs: Sequence[Knob]) -> list[str]:
    """The summary's line for each PARAMS name and knob that changed no candidate's code."""
    lines = [f"PARAMS {name} changed no candidate's code: is it used in the sources? (candidates that differ in "
             f"{name} alone built the same machine code; a misspelt name or one the source never reads costs the "
             "search a dimension)" for name in params]
    for knob in knobs:
        reason = _LIKELY_REASONS.get(knob.name, "the code it acts on is absent, or the compiler does so already")
        lines.append(f"knob.{knob.name} ({knob.option}) changed no candidate's code: {reason} (candidates that "
                     f"differ in it alone built the same machine code; it cost the search a dimension)")
    return lines
