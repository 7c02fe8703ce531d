"""METRIC's UNIT: what the number a benchmark prints in its own format is in, and how the `time` objective reads it.

A time (``s``, ``ms``, ``us``, ``ns``: lower is better) becomes milliseconds. A rate (higher is better:
``TFLOPS``, ``GFLOP/s``, ``GB/s``, ``items/s``; the rule book's ``pattern metric_unit``, which CMake checks
too) becomes the milliseconds one unit of the work takes, ``per_unit_ms(rate) = 1000 / rate``: a run's work is
fixed, so its time is work / rate, and the `time` objective, its statistics, racing and the test before a pin
treat a rate exactly as a time. A 10% higher rate is 1 / 1.1 = 0.909x the defaults' time.

`per_unit_ms` is its own inverse: the same function turns those milliseconds back into the rate the program
printed, in its own unit, for what the tune's summary, its progress lines and the pin show.
"""

from __future__ import annotations

import math

from ciq_build.core.rules import load_rules
from ciq_build.errors import ConfigError

# A time UNIT -> the power of ten that turns it into milliseconds.
TIME_UNITS = {"s": 3, "ms": 0, "us": -3, "ns": -6}
DEFAULT_METRIC_UNIT = "ms"
# The key under which a pinned record's provenance and a search's journal header keep the rate the `time` objective
# was read from (METRIC's UNIT, e.g. TFLOPS), when it was one.
RATE_UNIT = "time_rate_unit"


def check_metric_unit(unit: object) -> str:
    """METRIC's UNIT, or ConfigError naming the units there are (the rule book's message, as CMake gives it)."""
    if not isinstance(unit, str) or not load_rules().matches("metric_unit", unit):
        raise ConfigError(load_rules().message("unknown_metric_unit", value=str(unit))
                          + "; set UNIT in ciq_tune_target() to the unit the benchmark prints")
    return unit


def is_rate(unit: str) -> bool:
    """Whether UNIT (a checked one) is a rate, higher is better, rather than a time."""
    return unit not in TIME_UNITS


def shown_rate(unit: object) -> str:
    """A rate's unit as a record or a journal keeps it (untrusted): `unit` where the rule book takes it and it is a
    rate, else "" (the time is then shown as it was read)."""
    if not isinstance(unit, str) or not load_rules().matches("metric_unit", unit):
        return ""
    return unit if is_rate(unit) else ""


def per_unit_ms(value: float) -> float:
    """A rate's milliseconds per unit of work, and those milliseconds' rate: 1000 / `value`."""
    return 1e3 / value


def rate_text(per_unit: float, unit: str) -> str:
    """The milliseconds per unit of work of a rate in `unit` as the rate, as the benchmark printed it: "123.4 TFLOPS"."""
    if not (math.isfinite(per_unit) and per_unit > 0):
        return f"{per_unit:.6g} ms per unit of work"  # no rate gives it: a failed evaluation's placeholder
    return f"{per_unit_ms(per_unit):.6g} {unit}"


def relative_change(before: float, after: float) -> str:
    """`after` against `before` as a signed percentage, one spelling everywhere ("-2.2%", "+0.0%")."""
    if before == 0:
        return "-"
    return f"{(after / before - 1) * 100:+.1f}%"


def change_text(before: float, after: float, rate_unit: str = "") -> str:
    """The change column: `relative_change`, and for a time read from a rate in `rate_unit` the rate's change
    too, so that both read the right way round: "-9.1% (+10.0% TFLOPS)" (0.909x the time is 1.1x the rate)."""
    change = relative_change(before, after)
    if rate_unit and before > 0 and after > 0:
        change += f" ({rate_change(before, after, rate_unit)})"
    return change


def rate_change(before: float, after: float, unit: str) -> str:
    """Milliseconds per unit of work `before` and `after` as the change of the rate in `unit`: "+10.0% TFLOPS"."""
    return f"{relative_change(per_unit_ms(before), per_unit_ms(after))} {unit}"
