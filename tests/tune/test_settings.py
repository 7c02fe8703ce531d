"""One tune's settings: the command line over the target's ciq_tune_target() over the defaults, resolved once."""

from __future__ import annotations

import argparse
import dataclasses
import re
from pathlib import Path

import pytest

from ciq_build.cli import build_parser, parse
from ciq_build.core.options import declared, declared_names, option
from ciq_build.core.settings import DEFAULT_TIMEOUT, MeasureSettings, SearchSettings
from ciq_build.errors import ConfigError
from ciq_build.project.manifest import Benchmark, Manifest, ManifestToolchain
from ciq_build.ray.options import RAY, RayOptions
from ciq_build.resources import cmake_dir
from ciq_build.search.strategies import strategy_names
from ciq_build.tune.executors import checked_executor, read_tune_options
from ciq_build.tune.tune_options import (
    EXECUTION,
    OUTPUT,
    SEARCH,
    TuneOptions,
    add_tune_arguments,
    resolve_settings,
)


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
    return read_tune_options(build_parser().parse_args(["tune", "kern", *argv]))


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
    assert from_target.search.controls == ("params",) and from_target.search.allow_numerics
    given = resolve_settings(_options("--objective", "max:stack_bytes", "--controls", "knobs", "--timeout", "7",
                                      "--gpus", "0,1", "--seed", "3", "-j", "2", "--no-pin"), manifest)
    assert [o.spec for o in given.objectives] == ["max:stack_bytes"] and given.search.controls == ("knobs",)
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
def test_impossible_command_lines_are_refused(argv: tuple[str, ...], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        checked_executor(_options(*argv))  # the one check of the options, before anything is configured


def test_the_strategy_comes_from_the_command_line_and_an_unknown_one_is_refused_naming_them(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert resolve_settings(_options(), _manifest(tmp_path)).search.strategy is None  # the space's default
    given = _options("--strategy", "ga")
    assert resolve_settings(given, _manifest(tmp_path)).search.strategy == "ga"
    assert read_tune_options(build_parser().parse_args(["tune", *given.argv()])).strategy == "ga"
    with pytest.raises(SystemExit):
        _options("--strategy", "annealing")
    assert f"invalid choice: 'annealing' (choose from {', '.join(map(repr, strategy_names()))})" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="unknown strategy 'annealing': use one of"):
        checked_executor(dataclasses.replace(_options(), strategy="annealing"))


def test_time_limit_and_seeds_resolve_and_reach_a_child_tune_through_argv(tmp_path: Path) -> None:
    given = _options("--time-limit", "1h30m", "--seed-from", "pins/", "--seed-from=-Xptxas=-O2 -DTILE=32")
    search = resolve_settings(given, _manifest(tmp_path)).search
    assert search.time_limit == 5400 and search.seed_from == ("pins/", "-Xptxas=-O2 -DTILE=32")
    again = read_tune_options(build_parser().parse_args(["tune", *given.argv()]))  # tune --all on Ray
    assert (again.time_limit, again.seed_from) == ("1h30m", ["pins/", "-Xptxas=-O2 -DTILE=32"])
    assert resolve_settings(_options(), _manifest(tmp_path)).search.time_limit is None



def test_seeds_are_named_in_messages_as_the_user_gave_them(tmp_path: Path) -> None:
    # mini-nbody's trial: a target's SEEDS entry was warned about as "--seed-from ...", an option it never passed.
    seeded = _manifest(tmp_path, seeds=("-DTILE=32",))
    assert resolve_settings(_options(), seeded).search.seeds_said_as == "SEEDS"
    assert resolve_settings(_options(), dataclasses.replace(seeded, generator="setuptools")).search.seeds_said_as == "ciq_seeds"
    assert resolve_settings(_options("--seed-from=-DTILE=16"), seeded).search.seeds_said_as == "--seed-from"

# -- one declaration per option: the command line, argv, validation and the library call come from it ---------


def test_a_childs_command_line_reads_back_as_the_options_it_was_made_from() -> None:
    options = TuneOptions(
        target="kern", build_dir=Path("/b"), source_dir=Path("/s"), generations=3, pool_size=5, mutate_rate=0.3,
        objectives=["time", "max:registers"], controls=["knobs", "params"], allow_numerics=True, pick="first",
        seed=9, jobs=3, repeats=4, timeout=12.5, max_evaluations=7, time_limit="1h30m", fresh=True,
        seed_from=["pins/", "-Xptxas=-O2 -DTILE=32"], wait=True, pin=False, quiet=True, force=True,
        cmake_args=["-DX=1", "-DY=a b"], gpus=["0", "1"], executor="ray", architecture="90a",
        targets=("kern", "timer"), strategy="random", strategy_options=["pool_size=6", "x=a b"],
        stages=["knobs,params", "ptxas-acf:13.3"], stage_from="best",
        executor_options=RayOptions(ray_address="head:6379", ray_gpu_resource="H200", ray_sources="upload",
                                    ray_compile_resource="compile", ray_targets=2))
    defaults = TuneOptions(target="", build_dir=Path("build"))
    unchanged = [f.name for f in dataclasses.fields(TuneOptions) if getattr(options, f.name) == getattr(defaults, f.name)]
    unchanged += [f.name for f in dataclasses.fields(RayOptions)  # the executor's own options (ciq_build.ray.options)
                  if getattr(options.executor_options, f.name) == getattr(RayOptions(), f.name)]
    assert unchanged == [], f"give {unchanged} a value other than the default here, so that argv() is tested on it"
    parsed = read_tune_options(build_parser().parse_args(["tune", *options.argv()]))
    assert parsed == dataclasses.replace(options, target="")  # several targets: `target` is each one's, later
    one = dataclasses.replace(options, targets=())
    assert read_tune_options(build_parser().parse_args(["tune", *one.argv()])) == one
    plain = TuneOptions(target="kern", build_dir=Path("/b"))
    assert read_tune_options(build_parser().parse_args(["tune", *plain.argv()])) == plain
    assert plain.argv() == ["kern", "-B", "/b"]  # only what differs from the defaults is written


def test_a_python_strategy_object_cannot_be_written_on_a_childs_command_line() -> None:
    class Mine:
        name, spaces = "mine", ("knobs",)

        def make(self, request: object) -> object:
            return None

    with pytest.raises(ConfigError, match="Python object, which a tune in another process"):
        TuneOptions(target="kern", build_dir=Path("b"), strategy=Mine()).argv()


def _tree_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """-B and -S, which the command line adds to every command (and `from_args` reads), for a parser of a test."""
    parser.add_argument("-B", dest="build_dir", type=Path, default=Path("build"))
    parser.add_argument("-S", dest="source_dir", type=Path, default=None)
    return parser


@dataclasses.dataclass
class _WithColour(TuneOptions):
    """TuneOptions and one throwaway option more: a new option is this one declaration and nothing else."""

    colour: str | None = option("--colour", group=OUTPUT, choices=("red", "blue"), help="a throwaway option")


def test_an_option_declared_once_is_parsed_written_back_checked_and_shown_in_its_help_group() -> None:
    parser = _tree_arguments(argparse.ArgumentParser(prog="tune"))
    add_tune_arguments(parser, _WithColour)
    given = _WithColour.from_args(parser.parse_args(["kern", "--colour", "blue", "--seed", "4"]))
    assert given == _WithColour(target="kern", build_dir=Path("build").resolve(), colour="blue", seed=4)
    assert _WithColour.from_args(parser.parse_args(given.argv())) == given
    assert "colour" in declared_names(_WithColour) and "colour" not in declared_names(TuneOptions)
    with pytest.raises(ConfigError, match=r"^--colour must be one of red, blue, not 'green'$"):
        _WithColour(target="kern", build_dir=Path("b"), colour="green").validate()  # as from Python
    output = parser.format_help().split("output options:")[1]
    assert "--colour {red,blue}" in output and "a throwaway option" in output


def _tune_help() -> str:
    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return commands.choices["tune"].format_help()


def test_tune_help_lists_each_declared_option_in_its_group_and_ends_with_examples() -> None:
    text = _tune_help()
    sections = {name: text.split(f"\n{name} options:\n")[1].split("\n\n")[0] for name in (SEARCH, EXECUTION, RAY, OUTPUT)}
    for _, how in [*declared(TuneOptions), *declared(RayOptions)]:  # Ray's declared in ciq_build.ray.options
        assert how.flag in sections[how.group], f"{how.flag} should be listed under `{how.group} options:`"
    assert "--verbose" in sections[OUTPUT] and "--executor {local,ray}" in sections[EXECUTION]
    assert text.index(f"\n{EXECUTION} options:") < text.index(f"\n{RAY} options:") < text.index(f"\n{OUTPUT} options:")
    examples = text.split("\nexamples:\n")[1]
    assert "tune kern -B build" in examples and "tune --all" in examples


def _every_parser(parser: argparse.ArgumentParser, name: str) -> list[tuple[str, argparse.ArgumentParser]]:
    found = [(name, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for command, sub in action.choices.items():
                found += _every_parser(sub, f"{name} {command}")
    return found


def test_every_positional_and_option_of_every_command_has_help() -> None:
    missing = [f"{name}: {action.option_strings or action.dest}"
               for name, parser in _every_parser(build_parser(), "ciq_build") for action in parser._actions
               if not isinstance(action, argparse._SubParsersAction)
               and not (action.help and action.help.strip()) and action.help is not argparse.SUPPRESS]
    assert missing == [], f"give these a help text: {missing}"


def test_the_library_calls_keywords_are_the_declared_options(tmp_path: Path) -> None:
    from ciq_build import tune_target

    with pytest.raises(ConfigError, match="takes no option targets, verbose; its options are allow_numerics, ") as e:
        tune_target("kern", build_dir=tmp_path, targets=("a", "b"), verbose=True)
    assert all(name in str(e.value) for name in declared_names(TuneOptions))


def test_the_top_level_help_names_both_kinds_of_project() -> None:
    text = build_parser().format_help()
    assert "CMake target" in text and "setuptools" in text, text  # setuptools extensions are tuned too


def test_every_targets_help_names_both_kinds_of_project() -> None:
    # A setuptools CudaExtension's ciq_target= is tuned, shown and verified as a CMake target is, yet the target's
    # help (and --all's) said "a CMake target registered with ciq_tune_target()".
    helps = {f"{name} {action.dest}": action.help or "" for name, parser in _every_parser(build_parser(), "ciq_build")
             for action in parser._actions if action.dest in ("target", "all_targets")}
    assert len(helps) >= 6, helps  # tune's target and --all, show, verify, report, export
    wrong = [name for name, text in helps.items() if not ("ciq_tune_target()" in text and "ciq_target=" in text)]
    assert wrong == [], helps


def test_the_pool_size_help_says_the_least_pool_compileiq_takes() -> None:
    from ciq_build.search.compileiq import min_pool_size

    text = " ".join(_tune_help().split())
    said = text.split("--pool-size POOL_SIZE ")[1].split(" --mutate-rate")[0]
    # One objective: 6 (it said 3 + 2 x objectives alone, 5); two: 7; three: 9.
    assert [min_pool_size(n) for n in (1, 2, 3)] == [6, 7, 9]
    assert "at least 6 and 3 + 2 x objectives" in said, said


def test_every_command_with_a_build_dir_says_its_default() -> None:
    with_build_dir = [(name, parser) for name, parser in _every_parser(build_parser(), "ciq_build")
                      if any("-B" in action.option_strings for action in parser._actions)]
    assert len(with_build_dir) >= 6  # tune, show, list, verify, report, export
    for name, parser in with_build_dir:
        action = next(a for a in parser._actions if "-B" in a.option_strings)
        assert "default: ./build" in (action.help or ""), name


@pytest.mark.parametrize("command", [["list"], ["show", "kern"], ["verify", "kern"], ["report", "kern"],
                                     ["export", "kern", "--csv", "-"], ["tune", "kern"]])
def test_a_missing_implicit_build_dir_says_b_was_not_given(command: list[str], tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    from ciq_build.cli import main

    monkeypatch.chdir(tmp_path)  # no ./build here
    assert main(command) != 0
    error = capsys.readouterr().err
    assert "-B was not given, so ./build was assumed" in error, error
    (tmp_path / "mine").mkdir()
    assert main([*command, "-B", "mine"]) != 0  # given: the error is about the tree given, and says nothing of -B
    assert "was not given" not in capsys.readouterr().err


def test_cmake_args_reach_the_configure_of_a_new_build_tree(tmp_path: Path) -> None:
    """`tune -S src -B build --cmake-arg=...` configures with them (they were dropped once the options were declared)."""
    from ciq_build.cli import _backend, build_parser

    args = build_parser().parse_args(["tune", "kern", "-S", str(tmp_path), "-B", str(tmp_path / "build"),
                                      "--cmake-arg=-DA=1", "--cmake-arg", "-DB=two words"])
    from ciq_build.project.cmake_backend import CMakeBackend

    backend = _backend(args)
    assert isinstance(backend, CMakeBackend) and backend.cmake_args == ("-DA=1", "-DB=two words")
    listed = _backend(build_parser().parse_args(["list", "-B", str(tmp_path / "build")]))
    assert isinstance(listed, CMakeBackend) and listed.cmake_args == ()


@pytest.mark.parametrize("command", [["list"], ["show", "kern"], ["report", "kern"], ["export", "kern", "--csv", "-"]])
def test_a_command_that_configures_nothing_does_not_say_its_source_dir_configures(command: list[str],
                                                                                  tmp_path: Path) -> None:
    # Every command's -S said "configures --build-dir first when it is not configured yet"; only tune and verify do.
    from ciq_build.cli import main

    source = tmp_path / "src"
    source.mkdir()
    (source / "CMakeLists.txt").write_text("project(p NONE)\n")
    assert main([*command, "-S", str(source), "-B", str(tmp_path / "build")]) != 0
    assert not (tmp_path / "build" / "CMakeCache.txt").exists()
    parsers = dict(_every_parser(build_parser(), "ciq_build"))
    said = {name: next(a.help for a in parsers[f"ciq_build {name}"]._actions if "-S" in a.option_strings)
            for name in (command[0], "tune", "verify")}
    assert "configures nothing" in str(said[command[0]])
    assert "configures --build-dir first" in str(said["tune"]) and said["verify"] == said["tune"]


@pytest.mark.parametrize(("argv", "said"), [
    (["tune", "k", "--generatoins", "2"], "tune: error: unrecognized arguments: --generatoins 2 (did you mean "
                                          "--generations?)"),
    (["tune", "k", "--stratgy=ga", "--pool-szie", "4"], "tune: error: unrecognized arguments: --stratgy=ga "
     "--pool-szie 4 (did you mean --strategy for --stratgy, --pool-size for --pool-szie?)"),
    (["export", "k", "--csv", "f", "--serach", "2"], "export: error: unrecognized arguments: --serach 2 (did you mean "
                                                     "--search?)"),
    (["verify", "k", "--bulid-dir", "b"], "verify: error: unrecognized arguments: --bulid-dir b (did you mean "
                                          "--build-dir?)"),
    (["show", "k", "--zzz"], "show: error: unrecognized arguments: --zzz\n"),
])
def test_a_misspelt_option_is_refused_by_its_commands_parser_naming_the_one_meant(
        argv: list[str], said: str, capsys: pytest.CaptureFixture[str]) -> None:
    # wangzyon's SGEMM's trial: `tune sgemm --generatoins 2` said "python -m ciq_build: error: unrecognized arguments:
    # --generatoins 2", under the top-level usage, with nothing of --generations.
    with pytest.raises(SystemExit) as exited:
        parse(build_parser(), argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert f"python -m ciq_build {said}" in err, err
