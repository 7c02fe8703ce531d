"""One tune's settings: the command line over the target's ciq_tune_target() over the defaults, resolved once."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from ciq_build.build.manifest import Benchmark, Manifest, ManifestToolchain
from ciq_build.cli import build_parser
from ciq_build.core.settings import DEFAULT_TIMEOUT, MeasureSettings, SearchSettings
from ciq_build.errors import ConfigError
from ciq_build.resources import cmake_dir
from ciq_build.search.strategies import strategy_names
from ciq_build.tune.settings import TuneOptions, resolve_settings


def _manifest(tmp_path: Path, **changes: object) -> Manifest:
    fields: dict[str, object] = {
        "target": "kern", "source_dir": tmp_path, "binary_dir": tmp_path / "build", "target_source_dir": tmp_path,
        "target_binary_dir": tmp_path / "build", "cuda_sources": (tmp_path / "kern.cu",),
        "object_dir": tmp_path / "build" / "obj", "benchmark": None, "metric_regex": "", "objectives": (),
        "params": (), "search_space": (), "pin_dir": tmp_path / "ciq", "pin_file": tmp_path / "ciq" / "kern.json",
        "timeout": 45.0, "options_file": tmp_path / "build" / "kern.nvcc-options", "generator": "Ninja",
        "allow_numerics": False, "toolchain": ManifestToolchain(Path("/usr/bin/nvcc"), "13.3.1", "90a")}
    fields.update(changes)
    return Manifest(**fields)  # type: ignore[arg-type]


def _options(*argv: str) -> TuneOptions:
    return TuneOptions.from_args(build_parser().parse_args(["tune", "kern", *argv]))


def test_the_cmake_modules_timeout_default_is_the_drivers() -> None:
    module = (cmake_dir() / "ciq_build.cmake").read_text()
    default = re.search(r"if\(NOT DEFINED ARG_TIMEOUT\)\s*set\(ARG_TIMEOUT ([0-9.]+)\)", module)
    assert default is not None and float(default.group(1)) == DEFAULT_TIMEOUT == MeasureSettings().timeout


def test_the_command_lines_defaults_are_the_settings_defaults(tmp_path: Path) -> None:
    settings = resolve_settings(_options(), _manifest(tmp_path))
    assert settings.search == SearchSettings()
    assert settings.measure == MeasureSettings(timeout=45.0)  # the target's TIMEOUT
    assert [o.spec for o in settings.objectives] == ["spill_bytes"] and settings.pin and not settings.fresh


def test_the_command_line_wins_over_the_target_and_the_target_over_the_defaults(tmp_path: Path) -> None:
    manifest = _manifest(tmp_path, objectives=("registers",), search_space=("params",), allow_numerics=True)
    from_target = resolve_settings(_options(), manifest)
    assert [o.spec for o in from_target.objectives] == ["registers"]
    assert from_target.search.kinds == ("params",) and from_target.search.allow_numerics
    given = resolve_settings(_options("--objective", "max:stack_bytes", "--controls", "knobs", "--timeout", "7",
                                      "--gpus", "0,1", "--seed", "3", "-j", "2", "--no-pin"), manifest)
    assert [o.spec for o in given.objectives] == ["max:stack_bytes"] and given.search.kinds == ("knobs",)
    assert given.measure.timeout == 7.0 and given.measure.gpus == ("0", "1") and given.search.seed == 3
    assert given.build.jobs == 2 and not given.pin


def test_a_timed_objective_without_a_benchmark_is_refused_when_resolving(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="registers none: add BENCHMARK"):
        resolve_settings(_options("--objective", "time"), _manifest(tmp_path))
    bench = Benchmark(target="bench", path=tmp_path / "bench", args=())
    assert resolve_settings(_options("--objective", "time"), _manifest(tmp_path, benchmark=bench)).needs_benchmark


@pytest.mark.parametrize("argv, message", [(("-j", "0"), "--jobs"), (("--repeats", "0"), "--repeats"),
                                           (("--pool-size", "1"), "--pool-size"), (("--timeout", "0"), "--timeout"),
                                           (("--timeout", "inf"), "--timeout"), (("--timeout", "nan"), "--timeout")])
def test_impossible_command_lines_are_refused(tmp_path: Path, argv: tuple[str, ...], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        resolve_settings(_options(*argv), _manifest(tmp_path))


def test_the_strategy_comes_from_the_command_line_and_an_unknown_one_is_refused_naming_them(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert resolve_settings(_options(), _manifest(tmp_path)).search.strategy is None  # the space's default
    given = _options("--strategy", "ga")
    assert resolve_settings(given, _manifest(tmp_path)).search.strategy == "ga"
    assert TuneOptions.from_args(build_parser().parse_args(["tune", *given.argv()])).strategy == "ga"
    with pytest.raises(SystemExit):
        _options("--strategy", "annealing")
    assert f"invalid choice: 'annealing' (choose from {', '.join(map(repr, strategy_names()))})" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="unknown strategy 'annealing': use one of"):
        resolve_settings(dataclasses.replace(_options(), strategy="annealing"), _manifest(tmp_path))


def test_time_limit_and_seeds_resolve_and_reach_a_child_tune_through_argv(tmp_path: Path) -> None:
    given = _options("--time-limit", "1h30m", "--seed-from", "pins/", "--seed-from=-Xptxas=-O2 -DTILE=32")
    search = resolve_settings(given, _manifest(tmp_path)).search
    assert search.time_limit == 5400 and search.seed_from == ("pins/", "-Xptxas=-O2 -DTILE=32")
    again = TuneOptions.from_args(build_parser().parse_args(["tune", *given.argv()]))  # tune --all on Ray
    assert (again.time_limit, again.seed_from) == ("1h30m", ["pins/", "-Xptxas=-O2 -DTILE=32"])
    assert resolve_settings(_options(), _manifest(tmp_path)).search.time_limit is None
