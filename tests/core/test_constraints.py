"""CONSTRAINTS between PARAMS (issue 22 item 7): the expression language, and searches that never propose a
configuration a constraint refuses, down to a real tune whose otherwise-winning value is excluded.

The syntax's agreement with the CMake module is tests/core/test_rule_book_agreement.py's; configure's refusals
are tests/cmake/test_cmake_module.py's.
"""

from __future__ import annotations

import dataclasses
import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ciq_build.compiler.toolchain import find_toolchain
from ciq_build.core.constraints import parse_constraints
from ciq_build.core.objectives import parse_objectives
from ciq_build.core.params import parse_params
from ciq_build.core.settings import SearchSettings
from ciq_build.errors import ConfigError
from ciq_build.project.manifest import SETUPTOOLS_GENERATOR
from ciq_build.search.base import CandidateSource
from ciq_build.search.evolution import SearchConfiguration
from ciq_build.search.select import make_candidate_source, space_size_text
from ciq_build.search.strategies import make_source
from ciq_build.search.strategy import SearchRequest
from support import REPO_ROOT, bare_manifest

REPO = REPO_ROOT
SPACE = parse_params(["BX=choice(1,2,4,8,16,32,64)", "BY=range(1,64)", "MODE=fast,safe"])


def _allows(expression: str, **values: object) -> bool:
    constraints = parse_constraints([expression], SPACE)
    assert constraints is not None
    return constraints.allows({f"param.{k}": v for k, v in values.items()})


@pytest.mark.parametrize(
    ("expression", "bx", "by", "expected"),
    [
        ("BX*BY<=1024", 32, 32, True),
        ("BX*BY<=1024", 64, 32, False),
        ("BX*BY <= 1024 and BY % 4 == 0", 16, 6, False),
        ("not BX > 8 or BY < 4", 16, 3, True),
        ("not BX > 8 or BY < 4", 16, 4, False),
        ("not BX < BY", 8, 9, False),  # not binds looser than a comparison, as in Python
        ("-BX * -2 == 2 * BX", 4, 1, True),
        ("BY / BX == 2", 8, 23, True),  # C's division truncates: 23 / 8 == 2
        ("(0 - BY) / BX == -2", 8, 23, True),  # towards zero, not floor
        ("(0 - BY) % BX == -7", 8, 23, True),  # C's remainder keeps the dividend's sign
        ("BY / (BX - 8) > 0", 8, 5, False),  # a division by zero fails the constraint
        ("BX + BY * 2 == 10", 2, 4, True),  # * before +
        ("(BX + BY) * 2 == 12", 2, 4, True),
        ("BX", 1, 1, True),  # a number is true when it is not 0
        ("BX - 1", 1, 1, False),
        ("BX < 4 or BX > 16 and BY > 100", 2, 1, True),  # and before or
    ],
)
def test_the_expression_language(expression: str, bx: int, by: int, expected: bool) -> None:
    assert _allows(expression, BX=bx, BY=by, MODE="fast") is expected


@pytest.mark.parametrize(
    ("expressions", "message"),
    [
        (["BXX > 1"], "'BXX' is not one of the PARAMS (BX, BY, MODE) (did you mean BX?)"),
        (["BX*BY<="], "it ends where a number, a PARAMS name or '(' belongs"),
        (["1 < BX < 8"], "comparisons do not chain"),
        (["__import__('os')"], "'__import__' is not one of the PARAMS"),
        (["BX ** 2 > 1"], "'*' where a number, a PARAMS name or '(' belongs"),
        (["MODE == 1"], "MODE takes values that are not whole numbers"),
        ([""], "it is empty"),
        (["+".join(["BX"] * 3000)], "it is 8999 bytes long, more than 256"),  # it crashed tune (RecursionError)
        (["(" * 17 + "BX" + ")" * 17], "it nests parentheses, signs and nots more than 16 deep"),
        (["not " * 17 + "BX"], "it nests parentheses, signs and nots more than 16 deep"),
    ],
)
def test_a_bad_constraint_is_refused_saying_what_to_fix(expressions: list[str], message: str) -> None:
    with pytest.raises(ConfigError) as error:
        parse_constraints(expressions, SPACE)
    assert message in str(error.value) and "CONSTRAINTS" in str(error.value)


def test_a_bad_constraint_names_where_the_user_declared_it() -> None:
    with pytest.raises(ConfigError, match=r"fix it \(CONSTRAINTS in ciq_tune_target\(\)\)"):
        parse_constraints(["BXX > 1"], SPACE)
    with pytest.raises(ConfigError, match=r"fix it \(ciq_constraints= in its CudaExtension\)") as error:
        parse_constraints(["BXX > 1"], SPACE, setuptools=True)
    assert "ciq_tune_target" not in str(error.value)


@pytest.mark.parametrize("expression", ["BX" + "+1" * 126, "(" * 16 + "BX" + ")" * 16, "-" * 16 + "BX",
                                        "- " * 8 + "(" * 8 + "BX" + ")" * 8, " and ".join(["BX<99"] * 25)])
def test_the_longest_and_deepest_constraints_allowed_are_evaluated(expression: str) -> None:
    # Within the rule book's constraint_length and constraint_depth, the parser and evaluator recursion is bounded.
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(400)  # far below Python's default: the margin is real
    try:
        assert _allows(expression, BX=4, BY=1, MODE="fast") in (True, False)
    finally:
        sys.setrecursionlimit(limit)


def _proposed(strategy: str, expression: str, space: dict, evaluations: int, seed: int) -> list[dict]:
    constraints = parse_constraints([expression], space)
    assert constraints is not None
    config = SearchConfiguration(generations=50, pool_size=8, seed=seed, max_evaluations=evaluations,
                                 problem_type=["min"], num_objectives=1)
    source: CandidateSource = make_source(strategy, SearchRequest(space, config, ("registers",),
                                                                  allows=constraints.allows))
    proposed: list[dict] = []
    rng = random.Random(seed)
    while len(proposed) < evaluations and (batch := source.ask()):  # random search ends at the loop's budget
        for proposal in batch[:evaluations - len(proposed)]:
            proposed.append(proposal.params)
            source.tell(proposal, (rng.random(),))
    return proposed


@pytest.mark.parametrize("strategy", ["ga", "random"])
def test_a_search_never_proposes_what_a_constraint_refuses(strategy: str) -> None:
    space = parse_params(["BX=choice(1,2,4,8,16,32,64)", "BY=choice(1,2,4,8,16,32,64)"])
    # 16 of the 49 configurations have BX*BY <= 16: the search must find them all and never another.
    proposed = _proposed(strategy, "BX*BY <= 16", space, evaluations=49, seed=3)
    pairs = {(p["param.BX"], p["param.BY"]) for p in proposed}
    assert len(pairs) == len(proposed)
    assert pairs == {(x, y) for x in (1, 2, 4, 8, 16, 32, 64) for y in (1, 2, 4, 8, 16, 32, 64) if x * y <= 16}


@pytest.mark.parametrize("strategy", ["ga", "random"])
def test_a_large_constrained_space_is_sampled_within_the_constraint(strategy: str) -> None:
    # BX*BY <= 1024 allows 0.7% of these 1M configurations: draws must keep looking, not give up.
    space = parse_params(["BX=range(1,1024)", "BY=range(1,1024)"])
    proposed = _proposed(strategy, "BX*BY <= 1024", space, evaluations=60, seed=5)
    assert len(proposed) == 60
    assert all(p["param.BX"] * p["param.BY"] <= 1024 for p in proposed)


@pytest.mark.parametrize("strategy", ["ga", "random"])
def test_constraints_that_allow_nothing_say_so(strategy: str) -> None:
    space = parse_params(["BX=choice(1,2,4)", "BY=range(1,8)"])
    with pytest.raises(ConfigError, match="CONSTRAINTS allow none of the configurations"):
        _proposed(strategy, "BX*BY > 100", space, evaluations=10, seed=1)


# ------------------------------------------------------------------ a real tune

SHARED = REPO / "tests" / "projects" / "shared"  # TILE sizes shared memory: 4*TILE*TILE bytes, TILE=8 wins


@pytest.mark.slow
def test_a_real_tune_never_builds_the_excluded_winner_and_pins_the_best_allowed(tmp_path: Path) -> None:
    source, build = tmp_path / "src", tmp_path / "build"
    shutil.copytree(SHARED, source)
    lists = source / "CMakeLists.txt"
    call = '  PARAMS "TILE=choice(8,16,32)"\n'
    assert call in lists.read_text()
    lists.write_text(lists.read_text().replace(call, call + '  CONSTRAINTS "TILE >= 16"\n'))
    tune = subprocess.run([sys.executable, "-m", "ciq_build", "tune", "shared_kernels", "-S", str(source), "-B",
                           str(build), "--generations", "2", "--pool-size", "4"],
                          capture_output=True, text=True, cwd=source)
    assert tune.returncode == 0, tune.stdout + tune.stderr
    record = json.loads((source / "ciq" / "shared_kernels.json").read_text())
    # Unconstrained, this tune pins TILE=8 (256 bytes, tests/core/test_objectives.py); TILE >= 16 leaves 16 the best.
    assert record["controls"]["defines"] == {"TILE": "16"}
    assert record["winner"]["scores"] == [1024]
    journals = list(build.rglob("journal/*.jsonl"))
    assert journals, "the tune wrote no journal"
    evaluated = [json.loads(line) for journal in journals for line in journal.read_text().splitlines()]
    tiles = {str(v) for entry in evaluated for k, v in _walk(entry) if k == "param.TILE"}
    assert tiles and "8" not in tiles, tiles


def _walk(node: object) -> list[tuple[str, object]]:
    """Every (key, value) pair in a JSON document."""
    if isinstance(node, dict):
        return [pair for k, v in node.items() for pair in [(k, v), *_walk(v)]]
    if isinstance(node, list):
        return [pair for item in node for pair in _walk(item)]
    return []


def test_the_spaces_size_says_what_constraints_ruled_out_and_when_they_ruled_out_none(tmp_path: Path) -> None:
    # "6 of 6 PARAMS combinations (CONSTRAINTS)" read as if they had cut something (cuda-samples' transpose).
    def said(constraint: str, generator: str = "Ninja") -> tuple[str, int | None]:
        manifest = dataclasses.replace(bare_manifest(tmp_path, params=("BX=choice(1,2,4,8)", "BY=choice(1,2,4,8)"),
                                                     constraints=(constraint,)), generator=generator)
        return space_size_text(SearchSettings(controls=("params",)), manifest, find_toolchain(),
                               parse_objectives(["registers"]))

    assert said("BX*BY == 8") == ("4 of 16 PARAMS combinations (CONSTRAINTS)", 4)
    assert said("BX*BY <= 64") == ("16 PARAMS combinations (CONSTRAINTS rule out none of them)", 16)
    # A CudaExtension's, in its arguments' names (npcuda-example's trial read "4 PARAMS combinations" of a setup.py).
    assert said("BX*BY == 8", SETUPTOOLS_GENERATOR) == ("4 of 16 params= combinations (ciq_constraints=)", 4)


def test_a_tune_applies_constraints_or_says_why_it_cannot(tmp_path: Path) -> None:
    manifest = bare_manifest(tmp_path, params=("BX=choice(1,2,4,8)", "BY=choice(1,2,4,8)"),
                             constraints=("BX*BY == 8",))
    objectives = parse_objectives(["spill_bytes"])

    def source(*kinds: str, strategy: str | None = None) -> CandidateSource:
        return make_candidate_source(SearchSettings(controls=kinds, strategy=strategy, seed=1), manifest,
                                     find_toolchain(), objectives, tmp_path)

    for strategy in ("ga", "random"):
        proposed = {(p.params["param.BX"], p.params["param.BY"]) for p in source("params", strategy=strategy).ask()}
        assert proposed and proposed <= {(1, 8), (2, 4), (4, 2), (8, 1)}, (strategy, proposed)
    # PARAMS not searched keep one value each: their CONSTRAINTS rule out nothing, and the tune goes on
    # (a GPU campaign's ACF-alone arm was refused here).
    assert source("knobs").ask()
    with pytest.raises(ConfigError, match="not with the compiler search space ptxas-acf:13.3"):
        source("params", "ptxas-acf:13.3")
