"""The public Python API: `from ciq_build import Search, SearchConfiguration, space, tune_target`.

The examples of docs/python-api.md are read from it and run as they stand (so the
documentation cannot rot), a CompileIQ objective function runs unchanged, and
`import ciq_build` stays cheap.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import ciq_build
from ciq_build.errors import ConfigError
from ciq_build.tune.tune_options import TuneOptions
from support import REPO_ROOT


def _documented_examples() -> list[str]:
    """The Python blocks of docs/python-api.md (the README's "Use it from Python" links it), in order."""
    page = (REPO_ROOT / "docs" / "python-api.md").read_text(encoding="utf-8")
    return re.findall(r"```python\n(.*?)```", page, flags=re.S)


def _run(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True)


def test_import_ciq_build_loads_nothing_until_a_name_is_used() -> None:
    probe = ("import sys, ciq_build; before = sorted(m for m in sys.modules if m.startswith('ciq_build')); "
             "ciq_build.Search, ciq_build.space; heavy = [m for m in ('numpy', 'compileiq', 'ray') if m in sys.modules]; "
             "print(before, heavy)")
    result = _run(probe, REPO_ROOT)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "['ciq_build'] []"


def test_the_command_line_starts_without_numpy_or_the_build_machinery() -> None:
    # Every `python -m ciq_build ...` pays its imports: --help, list and show need no statistics, no METRIC regex
    # engine and no build machinery (measured: 0.43 s of CPU per call with them, 0.22 s without).
    probe = ("import sys, ciq_build.cli; print(sorted(m for m in ('numpy', 'regex', 'filelock', 'yaml', 'compileiq', "
             "'ray', 'ciq_build.tune.executor', 'ciq_build.measure.bench', 'ciq_build.search.evolution') "
             "if m in sys.modules))")
    result = _run(probe, REPO_ROOT)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_the_public_names_are_the_search_engine_and_the_tune_call() -> None:
    from ciq_build.core import space
    from ciq_build.search.configuration import INVALID_SCORE, SearchConfiguration
    from ciq_build.search.search_api import Search

    assert (ciq_build.Search, ciq_build.SearchConfiguration, ciq_build.INVALID_SCORE, ciq_build.space) == (
        Search, SearchConfiguration, INVALID_SCORE, space)
    assert callable(ciq_build.tune_target) and set(dir(ciq_build)) >= {"Search", "space", "tune_target"}
    with pytest.raises(AttributeError, match="no attribute 'Tuner'"):
        ciq_build.Tuner  # noqa: B018


def test_the_documented_search_example_runs_as_written(tmp_path: Path) -> None:
    search_example = _documented_examples()[0]
    assert "Search(" in search_example and "objective_function=objective" in search_example
    result = _run(search_example, tmp_path)
    assert result.returncode == 0, result.stderr
    found = re.fullmatch(r"best (\S+) at (\{.*\}) after (\d+) evaluations\n", result.stdout)
    assert found, result.stdout
    assert int(found.group(3)) == 5 * 16  # the budget: generations x pool_size
    assert float(found.group(1)) <= 5.0  # the optimum is 2.0 (x=1, y=1): a search, not a random pick


@pytest.mark.slow  # a real tune (CMake, nvcc): 77 s of the fast subset's wall, 21 s CPU, on the loaded machine
def test_the_documented_tune_example_runs_as_written_on_the_project_it_names(tmp_path: Path) -> None:
    tune_example = _documented_examples()[1]
    project = re.search(r'source_dir="([^"]+)"', tune_example)
    assert project is not None and (REPO_ROOT / project.group(1)).is_dir()
    shutil.copytree(REPO_ROOT / project.group(1), tmp_path / project.group(1))
    result = _run(tune_example, tmp_path)
    assert result.returncode == 0, result.stderr
    message, pinned = result.stdout.splitlines()[-2:]
    assert message and (pinned == "nothing pinned" or Path(pinned.removeprefix("pinned ")).is_file()), result.stdout


def test_a_compileiq_objective_function_runs_unchanged() -> None:
    compileiq_invalid = "*"  # compileiq.types.INVALID_SCORE, where compileiq is installed
    try:
        from compileiq.types import INVALID_SCORE as compileiq_invalid  # type: ignore[no-redef]
    except ImportError:
        pass

    def multiobjective(config):  # compileiq's examples/multi_objective.py
        if config["y"] == 2 and config["x"] == 1.0:
            return compileiq_invalid
        return config["x"] ** 2 + config["y"], config["y"] ** 2 + config["x"]

    search = ciq_build.Search(
        objective_function=multiobjective,
        search_space={"x": ciq_build.space.range(start=1.0, end=20.0, step=0.5), "y": ciq_build.space.choice([1, 2, 3])},
        search_config=ciq_build.SearchConfiguration(pool_size=12, generations=3, mutate_rate=0.5, problem_type="min",
                                                    num_objectives=2, seed=1),
    )
    results = search.start(num_workers=2)
    front = results.pareto_front()
    assert len(results) == 36 and front and all(e.ok and len(e.scores or ()) == 2 for e in front)
    invalid = [e for e in results.get_results() if e.params == {"x": 1.0, "y": 2}]
    assert all(not e.ok for e in invalid)


def test_tune_target_refuses_an_unknown_option_naming_the_ones_it_takes() -> None:
    with pytest.raises(ConfigError, match=r"tune_target\(\) takes no option generation; its options are .*generations"):
        ciq_build.tune_target("kern", build_dir="build", generation=3)


def test_tune_target_tunes_with_the_backend_it_is_given(tmp_path: Path) -> None:
    """`backend=`: the project's own build backend (a setuptools project's, a test's) prepares and builds it,
    in its own build tree."""

    class Prepared(Exception):
        pass

    class Backend:
        kind, remote_builds, build_dir = "mine", True, tmp_path / "mine"

        def prepare(self) -> None:
            raise Prepared(str(self.build_dir))

    with pytest.raises(Prepared, match="mine"):
        ciq_build.tune_target("kern", backend=Backend(), generations=1)


def test_tune_target_takes_one_word_where_a_list_is_declared_as_that_one_item(monkeypatch: pytest.MonkeyPatch,
                                                                               tmp_path: Path) -> None:
    """npcuda-example's trial passed objectives="registers": it was tuned as the objectives 'r', 'e', 'g', ...
    ("'r' is not an objective"), and controls="params" as the search space 'p'."""
    import ciq_build.api

    seen: list[TuneOptions] = []
    monkeypatch.setattr(ciq_build.api, "run_tune", lambda options, backend: seen.append(options))
    ciq_build.tune_target("kern", build_dir=tmp_path, objectives="registers", controls="params",
                          seed_from="-DTILE=8")
    ciq_build.tune_target("kern", build_dir=tmp_path, objectives=["registers", "spill_bytes"], controls=("knobs",))
    assert [(o.objectives, o.controls, o.seed_from) for o in seen] == [
        (["registers"], ["params"], ["-DTILE=8"]), (["registers", "spill_bytes"], ("knobs",), [])]
