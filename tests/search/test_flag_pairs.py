"""The local arm's flag pairs: once the best has stalled on a flag space, a flag that lost is tried with each value
of each small choice (ciq_build.search.flag_pairs)."""

from __future__ import annotations

import ciq_build.core.space as ss
from ciq_build.core.space import Genome
from ciq_build.search.configuration import SearchConfiguration
from ciq_build.search.portfolio import PortfolioSearch

# Six flags, a choice of three values and a range: a flag space (at least half flags).
SPACE = {**{f"f{i}": ss.literal(f"--f{i}", knockout_prob=0.5) for i in range(6)},
         "mode": ss.choice(["lo", "mid", "hi"], knockout_prob=0.5), "r": ss.range(0, 7)}
CENTRE: Genome = (None,) * 6 + (0, 3)  # no flag, mode "lo", r 3: the best


def _added(flag: int, mode: int = 0) -> Genome:
    return CENTRE[:flag] + (0,) + CENTRE[flag + 1:6] + (mode, 3)


def _search(losing_flag: int | None, stalled: bool, noisy: bool = False) -> PortfolioSearch:
    """A search whose best is CENTRE, each flag added to it measured: `losing_flag` loses 1.5%, the others tie."""
    search = PortfolioSearch(lambda p: 0.0, dict(SPACE), SearchConfiguration(generations=9, pool_size=32, seed=0),
                             progress=False)
    measured = {CENTRE: 1.0} | {_added(i): 1.015 if i == losing_flag else 1.0 for i in range(6)}
    for genome, score in measured.items():
        search.measured[genome] = (score,)
        search._seen.add(genome)
    search._best = ((1.0,), CENTRE)
    search.noisy, search._noisy_centre = noisy, CENTRE
    search._generation, search._best_at = (3, 1) if stalled else (3, 3)
    return search


def test_once_the_best_stalls_a_flag_that_lost_is_tried_first_with_each_other_value_of_each_small_choice() -> None:
    # f4 costs alone: the moves that may pay are f4 with mode "mid" and f4 with mode "hi" (a fast-math flag that
    # needs one rounding mode); no single change and no pair of ordered parameters makes them.
    pairs = {_added(4, 1), _added(4, 2)}
    local = _search(losing_flag=4, stalled=True).local
    assert {local.propose(), local.propose()} == pairs
    # Not while the best still improves (its other moves come first), not where no flag lost, not with noisy scores.
    for search in (_search(4, stalled=False), _search(None, stalled=True), _search(4, stalled=True, noisy=True)):
        assert not {search.local.propose(), search.local.propose()} & pairs
