"""Optuna's samplers as strategies (`--strategy tpe`, `nsga2`). The contract every strategy keeps (budget,
resume by the same seed, failures, several objectives) is tests/search/test_strategy_contract.py's; here
what is theirs alone."""

from __future__ import annotations

import sys

import pytest

from ciq_build.core.params import parse_params
from ciq_build.errors import ConfigError
from ciq_build.search.evolution import SearchConfiguration
from ciq_build.search.strategies import make_source
from ciq_build.search.strategy import SearchRequest


def request() -> SearchRequest:
    config = SearchConfiguration(generations=3, pool_size=4, seed=1, problem_type=["min"], num_objectives=1)
    return SearchRequest(parse_params(["TILE=choice(16,32,64)", "VEC=choice(1,2,4)"]), config, ("time",))


@pytest.mark.parametrize("name", ["tpe", "nsga2"])
def test_without_optuna_the_strategy_is_one_line_naming_the_extra(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "optuna", None)  # as if not installed: `import optuna` raises ImportError
    with pytest.raises(ConfigError, match=r'need Optuna: pip install "ciq-build\[optuna\]" \(or use --strategy ga'):
        make_source(name, request())


@pytest.mark.parametrize("name", ["tpe", "nsga2"])
def test_each_configuration_reaches_the_loop_once_and_the_journal_names_the_sampler(name: str) -> None:
    source = make_source(name, request())
    seen: list[dict[str, object]] = []
    while batch := source.ask():
        for proposal in batch:
            seen.append(proposal.params)
            source.tell(proposal, (float(proposal.params["param.TILE"]) + float(proposal.params["param.VEC"]),))
    assert len(seen) == len({tuple(sorted(p.items())) for p in seen}) > 4  # 9 configurations: no repeat told
    assert source.describe()["engine"] == f"optuna.{name}"
