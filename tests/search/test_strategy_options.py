"""A strategy's own options (ciq_build.search.strategy_options): declared by the strategy, set by
`tune --strategy-option KEY=VALUE` over the same-named flags, refused when unknown, and shown in --help."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from ciq_build.core.params import parse_params
from ciq_build.errors import ConfigError
from ciq_build.search.base import CandidateSource
from ciq_build.search.evolution import SearchConfiguration
from ciq_build.search.strategies import make_source, resolve_strategy
from ciq_build.search.strategy import SearchRequest
from ciq_build.search.strategy_options import options_of
from ciq_build.tune.tune_options import TuneOptions

SPACE = parse_params(["TILE=8,16,32,64", "UNROLL=1,2,4,8"])  # 16 configurations


def _request(**options: str) -> SearchRequest:
    config = SearchConfiguration(generations=3, pool_size=4, seed=1)  # what --generations 3 --pool-size 4 give
    return SearchRequest(SPACE, config, ("time",), strategy_options=options)


def _batches(source: CandidateSource) -> list[int]:
    """The size of each batch the source asks, told a score each."""
    sizes = []
    while batch := source.ask():
        sizes.append(len(batch))
        for proposal in batch:
            source.tell(proposal, (float(proposal.id),))
    return sizes


@pytest.mark.parametrize("name", ["ga", "random", "tpe"])
def test_an_unknown_key_is_refused_in_one_line_naming_the_known_ones(name: str) -> None:
    known = [f.name for f in dataclasses.fields(options_of(resolve_strategy(name)))]
    with pytest.raises(ConfigError) as refused:
        make_source(name, _request(generatoins="5"))
    message = str(refused.value)
    assert "\n" not in message and "generatoins" in message and f"strategy {name!r}" in message
    assert all(key in message for key in known), message


def test_the_flags_are_the_defaults_and_an_option_replaces_its_namesake() -> None:
    assert _batches(make_source("ga", _request())) == [4, 4, 4]  # --generations 3 --pool-size 4
    assert _batches(make_source("ga", _request(generations="2", pool_size="5"))) == [5, 5]
    assert make_source("ga", _request(mutate_rate="0.5")).describe()["budget"]["mutate_rate"] == 0.5
    # Random search's batch is its own option; how many it draws is the loop's budget: here, the grid's 16.
    assert _batches(make_source("random", _request(pool_size="5"))) == [5, 5, 5, 1]


def test_tpe_takes_its_startup_trials() -> None:
    source = make_source("tpe", _request(startup_trials="2"))
    assert source.study.sampler._n_startup_trials == 2  # type: ignore[attr-defined]
    assert make_source("tpe", _request()).study.sampler._n_startup_trials == 4  # type: ignore[attr-defined]


def test_a_value_of_the_wrong_type_or_range_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"--strategy-option pool_size=many: strategy 'random' takes int there"):
        make_source("random", _request(pool_size="many"))
    with pytest.raises(ConfigError, match="pool_size"):  # the configuration's own check: one validation
        make_source("ga", _request(pool_size="1"))


def test_a_word_without_a_value_is_refused_with_the_other_options() -> None:
    options = TuneOptions(target="t", build_dir=Path("."), strategy_options=["generations"])
    with pytest.raises(ConfigError, match=r"--strategy-option takes KEY=VALUE, not 'generations'"):
        options.validate()


def test_the_help_is_generated_from_each_strategys_declaration() -> None:
    shown = subprocess.run([sys.executable, "-m", "ciq_build", "tune", "--help"], capture_output=True, text=True,
                           check=True).stdout
    text = " ".join(shown.split())  # argparse wraps lines
    for name in ("ga", "random", "tpe"):
        for f in dataclasses.fields(options_of(resolve_strategy(name))):
            assert f.name in text, (name, f.name)
    assert "startup_trials (trials drawn at random before TPE models" in text
    assert "cull_size (the best kept to breed the next generation" in text
