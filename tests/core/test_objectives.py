"""The objective table (ciq_build.core.objectives): specs read by it, and everything that must agree with it.

The conformance tests run over every row of KINDS, so a new kind is checked by the same tests: the rule
book's objective pattern, the README's objectives table, the CLI help, the ptxas report fields, and the
spec's round trip.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest

from ciq_build.cli import build_parser
from ciq_build.compiler.metrics import KernelUsage, kernel_values, parse_ptxas_verbose, summarize
from ciq_build.compiler.toolchain import find_toolchain
from ciq_build.core.objectives import (
    KINDS,
    METRIC_NAME,
    Objective,
    ObjectiveKind,
    PtxasReport,
    find_kind,
    known_spellings,
    metric_key,
    parse_objective,
    parse_objectives,
)
from ciq_build.core.rules import load_rules
from ciq_build.errors import ConfigError
from ciq_build.measure import proc
from support import REPO_ROOT, build_tool, ensure_ok, said

REPO = REPO_ROOT

# ------------------------------------------------------------------ objectives


@pytest.mark.parametrize(
    "spec,expected",
    [
        ("time", Objective("time", "min", "benchmark")),
        ("energy", Objective("energy", "min", "benchmark")),
        ("compile_time", Objective("compile_time", "min", "compile")),
        ("compile_seconds", Objective("compile_time", "min", "compile")),
        ("registers", Objective("registers", "min", "static")),
        ("spills", Objective("spill_bytes", "min", "static")),
        ("spill_bytes", Objective("spill_bytes", "min", "static")),
        ("stack_bytes", Objective("stack_bytes", "min", "static")),
        ("sass_instructions", Objective("sass_instructions", "min", "static")),
        ("metric:gflops", Objective("metric:gflops", "min", "benchmark")),
        ("max:metric:gflops", Objective("metric:gflops", "max", "benchmark")),
        ("min:time", Objective("time", "min", "benchmark")),
        ("max:registers", Objective("registers", "max", "static")),
        (" time ", Objective("time", "min", "benchmark")),
        ("registers:heavy", Objective("registers:heavy", "min", "static")),
        ("max:stack_bytes:gemm_(f16|f32)", Objective("stack_bytes:gemm_(f16|f32)", "max", "static")),
        ("spills:tin.*", Objective("spill_bytes:tin.*", "min", "static")),
    ],
)
def test_objective_specs(spec, expected):
    assert parse_objective(spec) == expected


def test_objective_spec_round_trips():
    for spec in ("time", "max:metric:gbps", "compile_time", "spill_bytes"):
        objective = parse_objective(spec)
        assert parse_objective(objective.spec) == objective
    assert parse_objective("max:time").spec == "max:time"


def test_a_per_kernel_objective_names_its_metric_and_regex():
    assert parse_objective("registers:heavy|tiny").kernels == ("registers", "heavy|tiny")
    assert parse_objective("spills:_Z5heavy").kernels == ("spill_bytes", "_Z5heavy")
    assert parse_objective("registers").kernels is None and parse_objective("metric:a").kernels is None


@pytest.mark.parametrize("spec,why", [("registers:", "may use only"), ("registers:^heavy", "may use only"),
                                      ("registers:a b", "may use only"), ("registers:(heavy", "not a regular"),
                                      ("time:heavy", "is not an objective"), ("sass_instructions:k", "is not an objective")])
def test_a_bad_kernel_regex_is_refused_with_what_is_allowed(spec, why):
    with pytest.raises(ConfigError, match=why) as info:
        parse_objective(spec)
    assert repr(spec) in str(info.value)


def test_a_kernel_regex_written_as_a_demangled_template_name_is_refused_with_the_regex_that_finds_it():
    # miniBUDE's fasten_main<PPWI>: a user wrote occupancy:fasten_main<8>, as `cu++filt` prints it.
    with pytest.raises(ConfigError) as info:
        parse_objective("max:occupancy:fasten_main<8>")
    assert str(info.value) == (
        "objective 'max:occupancy:fasten_main<8>': the kernel regex 'fasten_main<8>' may use only letters, digits and "
        "_ . * + ? | ( ) - (at most 100, found anywhere in a kernel's mangled or demangled name) (write '.' for any "
        "other character, which matches any one: max:occupancy:fasten_main.8.), e.g. registers:heavy or "
        "spill_bytes:gemm_(f16|f32)")
    suggested = parse_objective("max:occupancy:fasten_main.8.")
    assert suggested.kernels is not None and re.search(suggested.kernels[1], "void fasten_main<8ul>(int, int)")
    with pytest.raises(ConfigError) as info:
        parse_objective("registers:")
    assert "write '.'" not in str(info.value)  # nothing to replace: no regex to offer


@pytest.mark.parametrize("spec", ["", "latency", "max:", "metric:", "metric:9x", "metric:a b", "avg:time",
                                  "TIME", "max:max:time", 3, None])
def test_bad_objective_specs_name_the_choices(spec):
    with pytest.raises(ConfigError) as info:
        parse_objective(spec)
    assert repr(spec) in str(info.value)


def test_objective_lists():
    assert [o.name for o in parse_objectives(["time", "registers"])] == ["time", "registers"]
    with pytest.raises(ConfigError, match="at least one"):
        parse_objectives([])
    with pytest.raises(ConfigError, match="twice"):
        parse_objectives(["spills", "spill_bytes"])
    with pytest.raises(ConfigError, match="list"):
        parse_objectives("time")




def test_the_default_direction_and_the_kind_come_from_the_table():
    assert parse_objective("registers").kind is find_kind("registers") is not None
    assert parse_objective("spills:gemm").kind is find_kind("spill_bytes")
    assert Objective("objective 1", "min", "static").kind is None  # a report's stand-in for a journal's scores
    assert metric_key(parse_objective("time")) == "time_ms" and metric_key(parse_objective("compile_seconds")) \
        == "compile_seconds"
    assert metric_key(parse_objective("max:metric:gflops")) == "gflops"
    assert metric_key(parse_objective("registers:heavy")) == "registers:heavy"


# ------------------------------------------------------------------ conformance: every row of the table


def _example_spec(kind: ObjectiveKind) -> str:
    return f"{kind.name}:gflops" if kind.argument == "metric name" else kind.name


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.name)
def test_each_kind_parses_to_itself_and_round_trips(kind):
    objective = parse_objective(_example_spec(kind))
    assert objective.kind is kind and objective.source == kind.source and objective.direction == kind.direction
    assert metric_key(objective) == (kind.metric_key or "gflops")
    assert parse_objective(objective.spec) == objective
    flipped = parse_objective(f"{'min' if kind.direction == 'max' else 'max'}:{_example_spec(kind)}")
    assert flipped.direction != kind.direction and flipped.name == objective.name
    for alias in kind.aliases:
        assert parse_objective(alias) == objective
    if kind.argument == "kernel regex":
        per_kernel = parse_objective(f"{kind.name}:heavy|tiny")
        assert per_kernel.kernels == (kind.metric_key, "heavy|tiny") and metric_key(per_kernel) == per_kernel.name
    else:
        assert objective.kernels is None
        with pytest.raises(ConfigError, match="is not an objective"):
            parse_objective(f"{kind.name}:heavy" if not kind.argument else kind.name)


def test_the_rows_are_distinct_and_documented():
    names = [kind.name for kind in KINDS] + [alias for kind in KINDS for alias in kind.aliases]
    assert len(names) == len(set(names))
    keys = [kind.metric_key for kind in KINDS if kind.metric_key]
    assert len(keys) == len(set(keys)), "two kinds would read one metric"
    assert all(kind.doc and "\n" not in kind.doc and kind.unit for kind in KINDS)
    assert all((kind.metric_key == "") == (kind.argument == "metric name") for kind in KINDS)



def test_the_occupancy_objective_says_it_does_not_see_the_grids_waves():
    # It scores the blocks an SM can hold; the grid is the launch's (host code, a problem size), unknown to a static
    # figure: a launch that fills fewer blocks than the SMs hold, or leaves a partial last wave, does not gain what
    # the percentage promises (the README's FDTD3d: occupancy 25 -> 46% at 1.09 waves). Its help says so.
    doc = next(kind for kind in KINDS if kind.name == "occupancy").doc
    assert "blind to the grid" in doc and "fewer blocks than the SMs hold at once" in doc and "partial wave" in doc

def _rule_book_pattern() -> str:
    """The rule book's objective pattern as the table spells it: every canonical name a record may carry."""
    plain = [kind.name for kind in KINDS if kind.argument != "metric name"]
    named = [f"{kind.name}:{METRIC_NAME}" for kind in KINDS if kind.argument == "metric name"]
    per_kernel = "|".join(kind.name for kind in KINDS if kind.argument == "kernel regex")
    kernel_regex = load_rules().regex_text("kernel_regex")
    return f"({'|'.join([*plain, *named, f'({per_kernel}):{kernel_regex}'])})"


def test_the_rule_book_objective_pattern_is_the_tables():
    rule = load_rules().patterns["objective"]
    assert rule.regex.pattern == f"(?:{_rule_book_pattern()})", (
        f"cmake/ciq_build_rules.txt: write `pattern objective {rule.min_length}..{rule.max_length} "
        f"{_rule_book_pattern()}`")
    for kind in KINDS:
        objective = parse_objective(_example_spec(kind))
        assert rule.matches(objective.name)
        longest = f"{kind.name}:{'a' * 100}"
        assert rule.matches(longest) == (kind.argument != ""), longest
        assert not any(rule.matches(alias) for alias in kind.aliases)


def _spelling_patterns() -> tuple[str, str]:
    """The rule book's objective_spec and benchmark_objective patterns as the table spells them: every spec a
    ciq_tune_target() call may write (aliases and max:/min: included), and those read from a benchmark run."""
    def spellings(kinds: list[ObjectiveKind]) -> str:
        plain = [n for kind in kinds if kind.argument != "metric name" for n in (kind.name, *kind.aliases)]
        named = [f"{n}:{METRIC_NAME}" for kind in kinds if kind.argument == "metric name" for n in (kind.name, *kind.aliases)]
        per_kernel = "|".join(n for kind in kinds if kind.argument == "kernel regex" for n in (kind.name, *kind.aliases))
        kernel_regex = load_rules().regex_text("kernel_regex")
        alternatives = [*plain, *named] + ([f"({per_kernel}):{kernel_regex}"] if per_kernel else [])
        return f"((max|min):)?({'|'.join(alternatives)})"
    return spellings(list(KINDS)), spellings([kind for kind in KINDS if kind.source == "benchmark"])


def test_the_rule_book_call_patterns_are_the_tables():
    rules = load_rules()
    spec, benchmark = _spelling_patterns()
    for name, expected in (("objective_spec", spec), ("benchmark_objective", benchmark)):
        rule = rules.patterns[name]
        assert rule.regex.pattern == f"(?:{expected})", (
            f"cmake/ciq_build_rules.txt: write `pattern {name} {rule.min_length}..{rule.max_length} {expected}`")
    assert rules.words["objective"] == tuple(kind.name for kind in KINDS), (
        f"cmake/ciq_build_rules.txt: write `words objective {' '.join(kind.name for kind in KINDS)}`")
    per_kernel = tuple(n for kind in KINDS if kind.argument == "kernel regex" for n in (kind.name, *kind.aliases))
    assert rules.words["kernel_objective"] == per_kernel, (
        f"cmake/ciq_build_rules.txt: write `words kernel_objective {' '.join(per_kernel)}`")
    # What the patterns accept, parse_objective accepts, and the other way round, with the same source.
    for kind in KINDS:
        for name in (kind.name, *kind.aliases):
            for written in (_example_spec(kind).replace(kind.name, name, 1), f"max:{name}", f"{name}:x y"):
                try:
                    objective = parse_objective(written)
                except ConfigError:
                    assert not rules.matches("objective_spec", written), written
                    continue
                assert rules.matches("objective_spec", written), written
                assert rules.matches("benchmark_objective", written) == (objective.source == "benchmark"), written


def test_an_unknown_objective_gets_a_suggestion_in_the_readmes_words():
    with pytest.raises(ConfigError) as error:
        parse_objective("regsters")
    assert "(did you mean registers?)" in str(error.value)
    assert not any(alias in str(error.value) for kind in KINDS for alias in kind.aliases)


def _readme_row(kind: ObjectiveKind) -> str:
    name = " ".join([f"`{kind.spelling}`", *(f"(or `{alias}`)" for alias in kind.aliases)])
    key = f"`{kind.metric_key}`" if kind.metric_key else "`<name>`"
    tools = ", ".join(tool for tool, _ in kind.tools) or "-"
    cells = [name, kind.extractor.origin, key, kind.unit, kind.direction, tools, kind.doc]
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"


README_HEADER = "| objective | value from | metric | unit | default | needs | what it is |"


def test_the_readme_objectives_table_is_the_tables():
    lines = (REPO / "README.md").read_text().splitlines()
    assert README_HEADER in lines, f"README.md has no objectives table headed {README_HEADER}"
    start = lines.index(README_HEADER) + 2
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append(line)
    expected = [_readme_row(kind) for kind in KINDS]
    assert rows == expected, "README.md's objectives table should read:\n" + "\n".join(expected)


def test_the_cli_help_names_every_kind():
    tune = next(action for action in build_parser()._actions if action.dest == "command")
    text = " ".join(tune.choices["tune"].format_help().split())
    assert known_spellings() in text


def test_each_ptxas_report_field_is_reported_and_summarized():
    reported = {f.name for f in fields(KernelUsage)} | {name for name in dir(KernelUsage) if not name.startswith("_")}
    ptxas = [kind for kind in KINDS if isinstance(kind.extractor, PtxasReport)]
    assert all(kind.extractor.field in reported for kind in ptxas)
    assert {kind.metric_key for kind in ptxas} | {"kernels"} == set(summarize([]))



# ------------------------------------------------------------------ shared_bytes, from real compiles and a real tune

SHARED = REPO / "tests" / "projects" / "shared"  # TILE sizes `transpose`'s tile (4*TILE*TILE bytes), `row_sum`'s row


@pytest.mark.slow
@pytest.mark.parametrize("tile", [8, 32])
def test_shared_bytes_is_the_ptxas_reports_static_shared_memory(cuda133_bin: Path, tmp_path: Path, tile: int) -> None:
    nvcc = find_toolchain(cuda133_bin / "nvcc").nvcc
    compiled = ensure_ok(proc.run([nvcc, "-c", "-gencode=arch=compute_90a,code=sm_90a", "-Xptxas=-v", f"-DTILE={tile}",
                                   SHARED / "kern.cu", "-o", tmp_path / "kern.o"], 300, cwd=tmp_path))
    usages = parse_ptxas_verbose(compiled.stdout + compiled.stderr)
    assert sorted(u.shared for u in usages) == [4 * tile, 4 * tile * tile]  # what ptxas said, per kernel
    whole, row_sum = parse_objective("shared_bytes"), parse_objective("shared_bytes:row_sum")
    assert whole.source == "static" and whole.direction == "min"
    assert summarize(usages)[metric_key(whole)] == 4 * tile * tile  # the most of any kernel
    assert row_sum.kernels is not None
    assert kernel_values(usages, {row_sum.name: row_sum.kernels}) == {row_sum.name: 4 * tile}


@pytest.mark.slow
def test_a_static_tune_minimises_shared_bytes_and_its_pin_applies(tmp_path: Path) -> None:
    source, build = tmp_path / "src", tmp_path / "build"
    shutil.copytree(SHARED, source)
    tune = subprocess.run([sys.executable, "-m", "ciq_build", "tune", "shared_kernels", "-S", str(source), "-B",
                           str(build), "--generations", "2", "--pool-size", "4"],
                          capture_output=True, text=True, cwd=source)
    assert tune.returncode == 0, tune.stdout + tune.stderr
    record = json.loads((source / "ciq" / "shared_kernels.json").read_text())
    assert record["objectives"] == [{"name": "shared_bytes", "direction": "min"}]
    # TILE=32 by default: transpose's 4 KiB tile; TILE=8 holds 256 bytes.
    assert record["baseline"]["scores"] == [4096] and record["winner"]["scores"] == [256]
    assert record["controls"]["defines"] == {"TILE": "8"}
    # CMake reads the record (the rule book's objective pattern) and applies it; verify agrees.
    configure = ensure_ok(proc.run([build_tool("cmake"), str(build)], 600))
    assert "shared_kernels" in said(configure) and "Warning" not in said(configure)
    verify = subprocess.run([sys.executable, "-m", "ciq_build", "verify", "shared_kernels", "-B", str(build)],
                            capture_output=True, text=True, cwd=source)
    assert verify.returncode == 0, verify.stdout + verify.stderr
