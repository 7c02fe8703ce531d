"""The PARAMS of ciq_tune_target(): spec text -> search parameters -> -D defines."""

from __future__ import annotations

import pytest

import ciq_build.core.space as ss
from ciq_build.compiler.controls import controls_from_candidate, nvcc_arguments
from ciq_build.core.params import parse_param, parse_params
from ciq_build.errors import ConfigError


def _defines(name: str, param: ss.Param) -> list[str]:
    """The -D argument each value of `param` compiles with."""
    return [nvcc_arguments(controls_from_candidate({name: v}))[0] for v in param.values()]


def test_choice_and_its_shorthand_are_the_same() -> None:
    name, long = parse_param("TILE=choice(32,64,128)")
    assert name == "param.TILE"
    assert parse_param("TILE=32,64,128")[1] == long
    assert long.values() == [32, 64, 128]
    assert _defines(name, long) == ["-DTILE=32", "-DTILE=64", "-DTILE=128"]


def test_choice_values_reach_the_compiler_as_written() -> None:
    # "064" and "1.50" must not be rewritten as 64 and 1.5 on their way to -D.
    name, param = parse_param("V = choice( 064 , 1.50, fast_path )")
    assert _defines(name, param) == ["-DV=064", "-DV=1.50", "-DV=fast_path"]


def test_range_with_and_without_step() -> None:
    assert parse_param("UNROLL=range(1,4)")[1].values() == [1, 2, 3, 4]
    assert parse_param("UNROLL=range(2,16,4)")[1].values() == [2, 6, 10, 14]
    name, floats = parse_param("ALPHA=range(0.5,1.5,0.5)")
    assert _defines(name, floats) == ["-DALPHA=0.5", "-DALPHA=1", "-DALPHA=1.5"]
    assert parse_param("OFF=range(-2,2,2)")[1].values() == [-2, 0, 2]


def test_literal() -> None:
    name, param = parse_param("MODE=literal(fast)")
    assert param.values() == ["fast"] and not param.can_knockout
    assert _defines(name, param) == ["-DMODE=fast"]


def test_log_sampling_default_and_total() -> None:
    name, param = parse_param("BLOCK=log_sampling(1,1024,11)")
    assert _defines(name, param) == [f"-DBLOCK={2 ** i}" for i in range(11)]
    assert parse_param("BLOCK=log_sampling(1,1000)")[1].size == 10


def test_parse_params_builds_the_search_space_part() -> None:
    space = parse_params(["TILE=32,64", "UNROLL=range(1,4)"])
    assert list(space) == ["param.TILE", "param.UNROLL"]
    assert ss.SearchSpace(space).cardinality == 8
    assert parse_params([]) == {}


@pytest.mark.parametrize(
    ("spec", "why"),
    [
        ("TILE", "no '='"),
        ("1TILE=1,2", "not a C identifier"),
        ("TILE-X=1,2", "not a C identifier"),
        ("TILE=", "no values"),
        ("TILE=1,,2", "empty value"),
        ("TILE=1;rm -rf", "not allowed"),
        ("TILE=a b", "not allowed"),
        ('TILE="x"', "not allowed"),
        ("TILE=$(HOME)", "unknown form"),
        ("TILE=grid(1,2)", "unknown form grid"),
        ("TILE=range(1)", "range takes"),
        ("TILE=range(1,x)", "not a number"),
        ("TILE=range(4,1)", "greater than start"),
        ("TILE=literal(1,2)", "exactly one"),
        ("TILE=log_sampling(0,8)", "> 0"),
        ("TILE=log_sampling(1,8,2.5)", "whole number"),
        ("TILE=choice(1,1)", "distinct"),
    ],
)
def test_bad_specs_name_the_spec_and_the_syntax(spec: str, why: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_param(spec)
    message = str(info.value)
    assert spec in message and why in message
    assert "NAME=choice(a,b,c)" in message and "NAME=range(start,end[,step])" in message


def test_a_name_given_twice_is_an_error() -> None:
    with pytest.raises(ConfigError, match="TILE is given more than once"):
        parse_params(["TILE=32,64", "TILE=range(1,4)"])
