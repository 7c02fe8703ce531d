"""Property tests: no benchmark output, however broken, makes the parser raise anything but CiqError."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ciq_build.errors import CiqError
from ciq_build.measure import bench, proc, protocol, stats

# Fuzzing with a thousand examples a test: seconds of CPU each, so in the whole suite, not the fast subset.
pytestmark = pytest.mark.slow

FUZZ = settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Pieces that look like the protocol, to reach the parser's inner branches often.
KEYWORDS = st.sampled_from(
    ["CIQ_METRIC", "CIQ_CHECK", "CIQ_ERROR", "CIQ_METRICS", "ciq_metric", " CIQ_METRIC", "CIQ_CHECK\t"]
)
NAMES = st.sampled_from(["time_ms", "time", "gflops", "x.y-z", "neg_s", "", "=", "1bad", "é"])
VALUES = st.one_of(
    st.sampled_from(["nan", "-inf", "Infinity", "1e999", "-0", "1_000", "0x10", "", "1e", ".", "-1.5", "PASS", "no-gpu"]),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers().map(str),
    st.text(max_size=8),
)
PROTOCOL_LINE = st.one_of(
    st.builds(lambda k, n, v: f"{k} {n}={v}", KEYWORDS, NAMES, VALUES),
    st.builds(lambda k, v: f"{k} {v}", KEYWORDS, VALUES),
    st.sampled_from(["CIQ_CHECK PASS", "CIQ_CHECK FAIL", "CIQ_CHECK pass", "CIQ_ERROR no-gpu",
                     "cudaErrorNoDevice", "no CUDA-capable device is detected", "elapsed 3.5 ms"]),
    st.text(),
)
OUTPUT = st.one_of(
    st.text(),
    st.binary().map(lambda b: b.decode("utf-8", errors="replace")),  # what proc.run hands over
    st.lists(PROTOCOL_LINE, max_size=12).map("\n".join),
    st.lists(PROTOCOL_LINE, max_size=12).map("\r\n".join),
)
REGEXES = st.sampled_from([None, r"elapsed ([0-9.]+) ms", r"(\S+)", r"time=(.*)", r"(a)?b", r"(\d+)|(x)"])


def check_parsed(parsed: protocol.ParsedOutput) -> None:
    for name, value in parsed.metrics.items():
        assert isinstance(value, float) and math.isfinite(value)
        if protocol.is_time_metric(name):
            assert value >= 0
    assert parsed.check in (None, "PASS", "FAIL")


@FUZZ
@given(text=OUTPUT, regex=REGEXES)
def test_parser_never_raises_unexpectedly(text: str, regex: str | None) -> None:
    try:
        parsed = protocol.parse_output(text, regex)
    except CiqError:
        return
    check_parsed(parsed)


@FUZZ
@given(
    stdout=OUTPUT,
    stderr=OUTPUT,
    returncode=st.sampled_from([0, 0, 0, 1, 2, 127, -11, -9, -6, None]),
    required=st.lists(st.sampled_from(["time", "gflops", "time_ms"]), max_size=2),
)
def test_classification_always_gives_one_known_verdict(
    stdout: str, stderr: str, returncode: int | None, required: list[str]
) -> None:
    # A real ProcResult as proc.run builds it (no process needed for the parser's part).
    result = proc.ProcResult(("bench",), returncode, stdout, stderr, 0.1, timed_out=returncode is None)
    run = bench.classify(result, protocol.parse_output(stdout + "\n" + stderr), required, 1.0)
    if run.ok:
        assert run.cause is None and returncode == 0 and run.check != "FAIL"
        assert run.metrics and all(name in run.metrics for name in required)
        check_parsed(protocol.parse_output(stdout + "\n" + stderr))
    else:
        assert run.cause in bench.CAUSES and run.message
    assert len(run.output_tail) <= 20 * 300 + 20


@FUZZ
@given(regex=st.text(max_size=30))
def test_any_metric_regex_is_accepted_or_a_config_error(regex: str) -> None:
    try:
        pattern = protocol.compile_metric_regex(regex)
    except CiqError:
        return
    assert pattern.groups >= 1


@FUZZ
@given(
    base=st.lists(st.floats(allow_nan=True, allow_infinity=True, width=32), max_size=12),
    cand=st.lists(st.floats(allow_nan=True, allow_infinity=True, width=32), max_size=12),
    direction=st.sampled_from(["min", "max"]),
)
def test_verdict_is_total_and_p_is_a_probability(base: list[float], cand: list[float], direction: str) -> None:
    verdict = stats.beats_baseline(base, cand, direction)  # type: ignore[arg-type]
    assert 0.0 <= verdict.p_value <= 1.0
    assert isinstance(verdict.better, bool) and verdict.explanation
    if verdict.better:
        m = len([x for x in cand if math.isfinite(x)])
        n = len([x for x in base if math.isfinite(x)])
        # The exact test cannot pass when even the most extreme ranking is too likely.
        assert 1 / math.comb(m + n, m) <= 0.05 * (1 + 1e-9)
