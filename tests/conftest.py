"""Shared fixtures: the real CUDA toolchains on this machine, and sample projects."""

from __future__ import annotations

import json
import os
import resource
import shutil
import sys
from collections import defaultdict
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

import identified_compilers
from ciq_build.resources import build_tool

REPO_ROOT = Path(__file__).resolve().parent.parent
SAMPLE_EXTENSION = REPO_ROOT / "sample_extension"
# Tests live in a folder per package (tests/core/, tests/search/, ...), each file named after what it
# tests, every name unique across folders: a few import another's helpers by module name
# (`from test_manifest import valid_manifest`), so every folder is importable from any other.
for _folder in sorted(p for p in Path(__file__).resolve().parent.iterdir()
                      if p.is_dir() and p.name not in ("programs", "projects", "__pycache__")):
    if str(_folder) not in sys.path:
        sys.path.append(str(_folder))
# Seconds each test file took, as measured by `scripts/test --store-durations` (see below).
DURATIONS = Path(__file__).resolve().parent / "durations.json"


# -- the longest files first ---------------------------------------------------------------------
# scripts/test gives its workers the tests in the order collected (a file's tests that share a module
# fixture as one unit: see below). Files ran alphabetically, so the longest (test_tune_ray.py, ~600 s)
# started late and ran alone at the end while the other worker idled: the longest first (as measured
# last) lets the short ones fill in around it. Files not measured yet follow those measured, in
# collection order.


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--store-durations", action="store_true",
                     help=f"write each test file's seconds (setup, call, teardown) to {DURATIONS.name}, "
                          "which orders the files, longest first")
    parser.addoption("--cpu-durations", type=int, default=0, metavar="N",
                     help="list the N tests that cost the most CPU (their own and their waited-for "
                          "children's: compilers, CMake, tunes), beside --durations' wall time")


def _measured_seconds() -> dict[str, float]:
    try:
        return {str(name): float(seconds) for name, seconds in json.loads(DURATIONS.read_text()).items()}
    except (OSError, ValueError, AttributeError):
        return {}  # none yet, or unreadable: collection order (a slower suite, never a failing one)


# -- which tests must share a worker -------------------------------------------------------------
# scripts/test runs the suite with --dist loadfile, refined here (pytest_xdist_make_scheduler): the
# files below, whose tests share a fixture built once per module (a Ray cluster, a tuned sample), go to
# one worker whole, so that fixture is built once; every other file's tests go one by one to whichever
# worker is free. One file per worker left one worker idle for minutes at the end, while the other ran
# the last long file alone (test_tune_interrupt.py's tunes, each independent of the others).
# (xdist's own --dist loadgroup cannot express this here: it renames tests through an attribute that
# pytest 9 no longer reads.) The list is checked at each collection against the fixtures the tests use.
TOGETHER = frozenset({
    "test_acf_pool.py", "test_allowlist.py", "test_bench.py", "test_cmake_module.py", "test_compileiq.py",
    "test_controls.py", "test_front_end_once.py", "test_fuzz_records.py", "test_metrics.py", "test_preflight.py",
    "test_progress.py",
    "test_ptxas_path.py", "test_ray_executor.py", "test_reports.py", "test_rule_book_agreement.py",
    "test_sample_extension.py", "test_seeds.py", "test_toolchain.py", "test_tune_acf.py", "test_tune_metric.py",
    "test_tune_sample.py", "test_tune_sizes.py",
})
_SHARED_SCOPES = ("class", "module", "package")


def _uses_a_shared_fixture(item: pytest.Item) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    return any(defs and defs[-1].scope in _SHARED_SCOPES for defs in info.name2fixturedefs.values())


def _check_together(items: list[pytest.Item]) -> None:
    # One way only: a run of some of a file's tests (by node id) may leave out those that share.
    for item in items:
        if item.path.name not in TOGETHER and _uses_a_shared_fixture(item):
            raise pytest.UsageError(f"{item.path.name} uses a fixture built once per module ({item.name}): add it "
                                    "to TOGETHER in tests/conftest.py")


def scheduling_unit(nodeid: str) -> str:
    """What one worker takes at a time: a whole file in TOGETHER, any other test by itself."""
    file = nodeid.split("::", 1)[0]
    return file if Path(file).name in TOGETHER else nodeid


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    if config.getvalue("dist") != "loadfile":
        return None  # another distribution, asked for by name: xdist's own
    from xdist.scheduler import LoadScopeScheduling  # type: ignore[import-untyped]

    class FileOrTest(LoadScopeScheduling):
        """A file in TOGETHER is one unit of work; any other file's tests are a unit each."""

        def _split_scope(self, nodeid: str) -> str:
            return scheduling_unit(nodeid)

    return FileOrTest(config, log)


@pytest.hookimpl(tryfirst=True)  # every test collected, before -k and -m deselect some
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    _check_together(items)
    measured = _measured_seconds()

    def expected(item: pytest.Item) -> float:
        return measured.get(item.path.name, 0.0)

    items.sort(key=expected, reverse=True)  # stable: a file's tests keep their order


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--store-durations") and (config.getoption("markexpr") or config.getoption("keyword")):
        raise pytest.UsageError("--store-durations measures whole test files: run it without -m and -k")


_seconds_by_file: defaultdict[str, float] = defaultdict(float)
_cpu_by_test: defaultdict[str, float] = defaultdict(float)  # CPU seconds (see "CPU per test" below)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    # Under xdist this runs in the controller too, with each worker's reports: there the whole suite's.
    _seconds_by_file[Path(report.nodeid.split("::")[0]).name] += report.duration
    for key, value in report.user_properties:
        if key == "cpu_s" and isinstance(value, float):
            _cpu_by_test[report.nodeid] += value


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    if not config.getoption("--store-durations") or hasattr(config, "workerinput"):
        return  # not asked, or a worker (it saw only its own files; the controller writes them all)
    if exitstatus != 0:
        return  # a failure (and -x) cuts files short: their seconds would be too few
    measured = _measured_seconds() | {name: round(seconds, 1) for name, seconds in _seconds_by_file.items()}
    DURATIONS.write_text(json.dumps(dict(sorted(measured.items())), indent=1) + "\n")


# -- CPU per test ----------------------------------------------------------------------------------
# Wall time on two shared cores says more about the neighbours than about a test; the CPU a test and
# the processes it waited for used is what the suite costs (`scripts/test` lists the top 30). Each
# phase's report carries its CPU seconds (a user property: xdist sends those to the controller).
# A Ray cluster's daemons are not waited for until the cluster stops: their CPU lands on the teardown
# of the fixture that started it.


def _cpu_seconds() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


_cpu_mark: dict[str, float] = {}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, Any, None]:
    _cpu_mark[item.nodeid] = _cpu_seconds()
    yield
    _cpu_mark.pop(item.nodeid, None)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    outcome: Any = yield
    now = _cpu_seconds()
    outcome.get_result().user_properties.append(("cpu_s", now - _cpu_mark.get(item.nodeid, now)))
    _cpu_mark[item.nodeid] = now



def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    count = config.getoption("--cpu-durations")
    if not count or not _cpu_by_test:
        return
    terminalreporter.write_sep("=", f"the {count} tests costing the most CPU")
    terminalreporter.write_line(f"{sum(_cpu_by_test.values()):.0f} s CPU in all tests")
    for nodeid, seconds in sorted(_cpu_by_test.items(), key=lambda kv: -kv[1])[:count]:
        terminalreporter.write_line(f"{seconds:7.1f}s cpu  {nodeid}")


def _pip_cuda_bin() -> Path | None:
    try:
        import nvidia.cu13
    except ImportError:
        return None
    for base in nvidia.cu13.__path__:
        candidate = Path(base) / "bin" / "nvcc"
        if candidate.is_file():
            return candidate.parent
    return None


@pytest.fixture(scope="session")
def cuda133_bin() -> Path:
    """bin/ of the pip-installed CUDA 13.3 toolkit (nvcc, ptxas, cuobjdump)."""
    found = _pip_cuda_bin()
    if found is None:
        pytest.skip('needs the CUDA 13.3 toolkit from PyPI: pip install "ciq-build[cuda]"')
    return found


@pytest.fixture(scope="session")
def system_nvcc() -> Path:
    """A second, different toolkit (the system's), for version-mismatch tests."""
    found = shutil.which("nvcc")
    if found is None:
        pytest.skip("needs a system nvcc on PATH (a toolkit other than the pip one)")
    return Path(found)


@pytest.fixture(scope="session")
def search_spaces_dir() -> Path:
    """The real NVIDIA compiler search spaces (never committed; CI points at them)."""
    value = os.environ.get("CIQ_SEARCH_SPACES_DIR")
    path = Path(value) if value else REPO_ROOT.parent / "shared" / "search-spaces"
    if not (path / "ptxas13.3.bin").is_file():
        pytest.skip(f"needs the CUDA 13.3 search spaces (set CIQ_SEARCH_SPACES_DIR; looked in {path})")
    return path


# -- the compilers, identified once a session (a test shortcut: tests/identified_compilers.py) -----


@pytest.fixture(scope="session", autouse=True)
def _identified_compilers(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    nvcc_bin, ninja = _pip_cuda_bin(), shutil.which(build_tool("ninja"))
    if nvcc_bin is None or ninja is None or identified_compilers.ENV in os.environ:
        yield  # no toolkit or tools (those tests skip), seeded from outside, or the shortcut turned off
        return
    if not any(item.get_closest_marker("slow") for item in request.session.items):
        yield  # no real build among the tests run (the fast subset): nothing to spare
        return
    # The cmake and ninja the tunes run (ciq_build's choice), so that the seed is of the same CMake version.
    seed = identified_compilers.identify(tmp_path_factory.mktemp("identified-compilers"), nvcc_bin / "nvcc",
                                         build_tool("cmake"), ninja)
    if seed is None:
        yield  # the probe did not configure: every tree identifies its compilers (and a test says why)
        return
    os.environ[identified_compilers.ENV] = str(seed)
    yield
    os.environ.pop(identified_compilers.ENV, None)


@pytest.fixture(autouse=True)
def _working_directory_left_as_found() -> Iterator[None]:
    """A test (or the code it runs in this process) that leaves the process in another directory breaks
    every later test of its worker that starts a tool without cwd= (CMake cannot even start in a folder
    since deleted): this names the test that did it, and puts the directory back."""
    before = os.getcwd()
    yield
    try:
        after = os.getcwd()
    except FileNotFoundError:
        after = "(a directory since deleted)"
    if after != before:
        os.chdir(before)
        pytest.fail(f"the test left the process's working directory at {after}, not {before}")
