"""Random search (`--strategy random`, ciq_build.search.random_search): uniform, without replacement, blind to scores."""

from __future__ import annotations

from collections import Counter

import pytest

from ciq_build.core.params import parse_params
from ciq_build.core.space import Genome, SearchSpace, as_space
from ciq_build.errors import SearchError
from ciq_build.search.base import Proposal
from ciq_build.search.evolution import SearchConfiguration
from ciq_build.search.strategies import make_source
from ciq_build.search.strategy import SearchRequest

SPACE = parse_params(["TILE=8,16,32,64", "UNROLL=1,2,4,8"])  # 16 configurations


def _run(seed: int, generations: int, pool_size: int, score: float | None) -> list[dict[str, object]]:
    """What random search draws, to its end: its budget is the search loop's (ciq_build.tune.loop), not its own."""
    config = SearchConfiguration(generations=generations, pool_size=pool_size, seed=seed)
    source = make_source("random", SearchRequest(SPACE, config, ("time",)))
    proposals: list[Proposal] = []
    while batch := source.ask():
        proposals += batch
        for proposal in batch:
            source.tell(proposal, (score if score is not None else float(proposal.id),))
    return [p.params for p in proposals]


def test_a_space_smaller_than_the_budget_is_covered_once_each() -> None:
    drawn = _run(3, generations=4, pool_size=6, score=1.0)  # a budget of 24 for 16 configurations
    assert len(drawn) == as_space(SPACE).cardinality == 16
    assert len({repr(sorted(p.items())) for p in drawn}) == 16


def test_what_is_drawn_does_not_depend_on_the_scores_told() -> None:
    assert _run(5, 2, 6, score=1.0) == _run(5, 2, 6, score=None)  # a flat landscape, and a steep one


def test_each_value_of_a_parameter_is_drawn_about_equally_often() -> None:
    big = parse_params(["A=1,2,3,4", "B=range(0,999)"])  # large enough that draws rarely collide
    config = SearchConfiguration(generations=50, pool_size=40, seed=11)
    source = make_source("random", SearchRequest(big, config, ("time",)))
    counts: Counter[int] = Counter()
    for _ in range(50):  # the loop's budget: 50 batches of 40
        batch = source.ask()
        for proposal in batch:
            counts[proposal.params["param.A"]] += 1
            source.tell(proposal, (0.0,))
    # 2000 draws over 4 values: 500 each expected; a biased draw (seed bounds, a GA's selection) is far off.
    assert sorted(counts) == [1, 2, 3, 4] and all(400 < n < 600 for n in counts.values()), counts


def test_a_small_space_is_enumerated_once_not_for_each_draw(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = 0
    genome_at = SearchSpace.genome_at

    def counted(self: SearchSpace, ordinal: int) -> Genome:
        nonlocal calls
        calls += 1
        return genome_at(self, ordinal)

    monkeypatch.setattr(SearchSpace, "genome_at", counted)
    assert len(_run(3, generations=4, pool_size=6, score=1.0)) == 16
    assert calls <= as_space(SPACE).cardinality


def test_a_first_batch_that_all_fails_ends_the_search_naming_how_many_and_that_their_controls_may_be_why() -> None:
    # A newcomer's PARAMS in `#pragma unroll NAME` failed every candidate while the defaults built: the message must
    # not say the build is broken "for any configuration".
    config = SearchConfiguration(generations=3, pool_size=4, seed=1)
    source = make_source("random", SearchRequest(SPACE, config, ("time",)))
    batch = source.ask()
    with pytest.raises(SearchError, match=r"all 4 candidates of the first random batch failed: what they change breaks "
                                        r"the build or the benchmark.*identifier \"UNROLL\" is undefined"):
        for proposal in batch:
            source.tell(proposal, None, 'error: identifier "UNROLL" is undefined')
