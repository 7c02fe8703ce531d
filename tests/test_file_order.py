"""tests/conftest.py's order of the test files (longest first, from durations.json), how it is measured, and
which tests must share a worker, on a throwaway suite run by pytest itself (pytester) with a copy of that
conftest."""

from __future__ import annotations

import json
import shutil

import pytest

from conftest import scheduling_unit  # type: ignore[import-not-found]  # tests/conftest.py, on the path as support is
from support import TESTS

pytest_plugins = ["pytester"]

CONFTEST = TESTS / "conftest.py"


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    shutil.copy(CONFTEST, pytester.path / "conftest.py")
    shutil.copy(TESTS / "identified_compilers.py", pytester.path)  # which that conftest imports
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



def test_a_files_tests_that_share_a_module_fixture_run_on_one_worker_and_other_files_tests_spread(
        suite: pytest.Pytester) -> None:
    built = suite.path / "built.txt"
    # Named as files of the suite: TOGETHER names test_tune_metric.py, not test_tune_interrupt.py.
    suite.makepyfile(test_tune_metric=f"""
import pytest

@pytest.fixture(scope="module")
def tuned():
    with open({str(built)!r}, "a") as out:
        out.write("built\\n")
    return 1

def test_one(tuned): pass
def test_two(tuned): pass
def test_three(tuned): pass
""", test_tune_interrupt="def test_p(): pass\ndef test_q(): pass\ndef test_r(): pass\ndef test_s(): pass\n")
    ran = suite.runpytest("-n", "2", "--dist", "loadfile", "-v", "test_tune_interrupt.py", "test_tune_metric.py")
    ran.assert_outcomes(passed=7)

    def workers(file: str) -> set[str]:
        return {line.split("]")[0] for line in ran.outlines if f"PASSED {file}::" in line}

    assert len(workers("test_tune_metric.py")) == 1, ran.outlines
    assert built.read_text() == "built\n"  # built once
    # Which worker takes which test depends on the machine's load, so the spread is checked on the rule
    # the scheduler applies: a file outside TOGETHER is split into its tests, one in it stays whole.
    assert scheduling_unit("tests/tune/test_tune_interrupt.py::test_p") == "tests/tune/test_tune_interrupt.py::test_p"
    assert scheduling_unit("tests/tune/test_tune_metric.py::test_one") == "tests/tune/test_tune_metric.py"



def test_a_file_sharing_a_module_fixture_must_be_listed(suite: pytest.Pytester) -> None:
    suite.makepyfile(test_new="import pytest\n@pytest.fixture(scope='module')\ndef built(): return 1\n"
                              "def test_x(built): pass\n")
    unlisted = suite.runpytest("--collect-only", "-q", "test_new.py")
    assert unlisted.ret == pytest.ExitCode.USAGE_ERROR
    unlisted.stderr.fnmatch_lines(["*test_new.py uses a fixture built once per module (test_x): add it to TOGETHER*"])
