"""tests/conftest.py's order of the test files (longest first, from durations.json) and how it is measured,
on a throwaway suite run by pytest itself (pytester) with a copy of that conftest."""

from __future__ import annotations

import json
import shutil

import pytest

from support import TESTS

pytest_plugins = ["pytester"]

CONFTEST = TESTS / "conftest.py"


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    shutil.copy(CONFTEST, pytester.path / "conftest.py")
    pytester.makepyfile(test_alpha="def test_a(): pass\ndef test_b(): pass\n",
                        test_beta="import time\ndef test_c(): time.sleep(0.2)\n",
                        test_gamma="def test_d(): pass\n",
                        test_delta="def test_e(): pass\n")
    return pytester


def _files_in_order(result: pytest.RunResult) -> list[str]:
    files = [line.split("::")[0] for line in result.outlines if "::" in line]
    return list(dict.fromkeys(files))


def test_the_longest_files_run_first_and_unmeasured_ones_after_in_collection_order(suite: pytest.Pytester) -> None:
    (suite.path / "durations.json").write_text(json.dumps({"test_gamma.py": 9.5, "test_beta.py": 120.0}))
    listed = suite.runpytest("--collect-only", "-q")
    assert _files_in_order(listed) == ["test_beta.py", "test_gamma.py", "test_alpha.py", "test_delta.py"]
    # Without a table (or with a broken one): collection order, never an error.
    (suite.path / "durations.json").write_text("{not json")
    assert _files_in_order(suite.runpytest("--collect-only", "-q")) == [
        "test_alpha.py", "test_beta.py", "test_delta.py", "test_gamma.py"]


def test_store_durations_writes_each_whole_files_seconds_and_keeps_the_others(suite: pytest.Pytester) -> None:
    (suite.path / "durations.json").write_text(json.dumps({"test_gone.py": 3.0, "test_beta.py": 120.0}))
    suite.runpytest("--store-durations", "test_alpha.py", "test_beta.py").assert_outcomes(passed=3)
    stored = json.loads((suite.path / "durations.json").read_text())
    assert stored.keys() == {"test_alpha.py", "test_beta.py", "test_gone.py"} and stored["test_gone.py"] == 3.0
    assert 0.2 <= stored["test_beta.py"] < 120.0 and stored["test_alpha.py"] < stored["test_beta.py"]
    # A part of a file is not its time: refused in one line saying what to do.
    refused = suite.runpytest("--store-durations", "-k", "test_a")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines(["*--store-durations measures whole test files: run it without -m and -k*"])
