"""The portfolio search: arms over one history, the AUC bandit, noise-aware choice of the best, linear repairs."""

from __future__ import annotations

import itertools
import math
import random
from typing import Any

import pytest

import ciq_build
import ciq_build.core.space as ss
from ciq_build.core.space import Genome
from ciq_build.errors import ConfigError
from ciq_build.search.arms import LocalArm
from ciq_build.search.bandit import AucBandit
from ciq_build.search.configuration import SearchConfiguration
from ciq_build.search.evolution import GeneticSearch
from ciq_build.search.operators import TournamentSelection, single_changes
from ciq_build.search.portfolio import PortfolioSearch
from ciq_build.search.repairs import RepairIndex
from ciq_build.search.walks import NEAR_LOSS, Walks, walk_step

RIDGE_SPACE = {
    "x": ss.range(0, 63),
    "y": ss.range(0, 63),
    "flag": ss.literal("-fast", knockout_prob=0.5),
}


def ridge(p: dict[str, Any]) -> float:
    # The sum x + y must stay 63 (one step off costs 10); along the ridge x = 50 is best (1 a step). No single
    # change from a point of the ridge is better: only x and y moved together, in opposite directions.
    x, y = p["x"], p["y"]
    return 10 * abs(x + y - 63) + abs(x - 50) + (0 if "flag" in p else 0.5)


def test_auc_bandit_credits_recent_improvements_and_forgets_outside_its_window() -> None:
    bandit = AucBandit(2, c=0.05, window=4)
    assert bandit.score(0) == math.inf  # never used: tried first
    for improved in (False, False, True):
        bandit.record(0, improved)
    assert bandit.exploitation(0) == pytest.approx(3 / 6)  # the third of three uses improved: area 3 of 1+2+3
    bandit.record(1, False)
    bandit.record(1, False)  # the window (4) drops arm 0's first use
    assert bandit.exploitation(0) == pytest.approx(2 / 3)  # now the second of two uses: area 2 of 1+2
    assert bandit.order([0, 0], [0.5, 0.1]) == [0, 1]
    for _ in range(4):
        bandit.record(1, False)  # arm 0's uses have all left the window
    assert bandit.exploitation(0) == 0.0 and bandit.score(0) == math.inf


def test_the_same_seed_gives_the_same_candidates_and_no_configuration_is_measured_twice() -> None:
    config = SearchConfiguration(generations=6, pool_size=8, seed=3)
    runs = [[e.params for e in PortfolioSearch(ridge, RIDGE_SPACE, config, progress=False).start()]
            for _ in range(2)]
    assert runs[0] == runs[1] and len(runs[0]) == 48
    keys = [ss.canonical_key(p) for p in runs[0]]
    # a deterministic objective: the best measured once more, to learn that there is no noise, and nothing else
    assert len(keys) - len(set(keys)) == 1
    other = [e.params for e in PortfolioSearch(ridge, RIDGE_SPACE, SearchConfiguration(generations=6, pool_size=8,
                                                                                       seed=4), progress=False).start()]
    assert other != runs[0]


def test_the_public_search_is_the_portfolio_unless_told_ga() -> None:
    config = SearchConfiguration(generations=2, pool_size=4, seed=1)
    assert isinstance(ciq_build.Search(ridge, RIDGE_SPACE, config), PortfolioSearch)
    assert isinstance(ciq_build.Search(ridge, RIDGE_SPACE, config, strategy="ga"), GeneticSearch)
    with pytest.raises(ConfigError, match="unknown strategy 'annealing' for Search: use one of portfolio, ga"):
        ciq_build.Search(ridge, RIDGE_SPACE, config, strategy="annealing")
    with pytest.raises(ConfigError, match=r"the portfolio takes no operators \(selection\): they are the GA's"):
        ciq_build.Search(ridge, RIDGE_SPACE, config, selection=TournamentSelection(3))


def test_the_portfolio_walks_a_ridge_that_no_single_change_climbs() -> None:
    # The optimum (x=50, y=13, flag) within 320 evaluations of an 8,192-configuration space: the portfolio on
    # (almost) every seed, the GA alone, held at local optima by single changes, on far fewer.
    reached = {"portfolio": 0, "ga": 0}
    for seed in range(10):
        config = SearchConfiguration(generations=10, pool_size=32, seed=seed)
        for name in reached:
            best = ciq_build.Search(ridge, RIDGE_SPACE, config, strategy=name).start().get_best_result()
            assert best is not None and best.scores is not None
            reached[name] += best.scores[0] == 0
    assert reached["portfolio"] >= 8 and reached["ga"] <= reached["portfolio"] - 3


def test_with_noisy_scores_the_best_is_judged_by_its_measurements_again_not_by_one_lucky_run() -> None:
    space = {f"k{i}": ss.choice([0, 1, 2, 3], knockout_prob=0.5) for i in range(5)}
    rng = random.Random(0)

    def true_time(p: dict[str, Any]) -> float:
        return 1.0 - 0.004 * sum(p.values())

    def measured(p: dict[str, Any]) -> float:
        return true_time(p) * math.exp(rng.gauss(0.0, 0.02))

    search = PortfolioSearch(measured, space, SearchConfiguration(generations=10, pool_size=16, seed=2),
                             progress=False)
    results = search.start()
    assert search.noisy is True
    best = results.get_best_result()
    assert best is not None and best.scores is not None
    samples = [e.scores[0] for e in results if e.ok and e.key == best.key and e.scores]
    # reported: the mean of the measurements of the last batch, taken after the pick was chosen (not those it was
    # chosen by: they favour it)
    fresh = [e.scores[0] for e in results if e.ok and e.key == best.key and e.scores and e.proposal.generation == 9]
    assert len(samples) > len(fresh) >= 4 and best.scores[0] == pytest.approx(sum(fresh) / len(fresh))
    lowest = min(e.scores[0] for e in results if e.ok and e.scores)
    assert best.scores[0] > lowest  # not the luckiest single measurement


def test_a_noisy_search_of_a_small_space_spends_its_whole_budget_and_reports_its_pick_measured_afresh() -> None:
    # 25 configurations, 12 batches of 16, 2% noise: every configuration is measured in the second batch. The rest
    # of the budget decides which of the best-judged is best (measured again), and the pick is confirmed in the last
    # batch; before, the search ended there, and reported a configuration measured once by its lucky sample.
    space = {"tile": ss.choice([16, 32, 64, 128], knockout_prob=0.5), "unroll": ss.choice([1, 2, 4, 8], knockout_prob=0.5)}
    rng = random.Random(0)

    def true_time(p: dict[str, Any]) -> float:
        # tile 64 with unroll 4 is best by 2.5%, 1.9% ahead of the next best
        return 1.0 - 0.006 * (p.get("tile") == 64) - 0.004 * (p.get("unroll") == 4) - 0.015 * (p.get("tile") == 64
                                                                                                 and p.get("unroll") == 4)

    def measured(p: dict[str, Any]) -> float:
        return true_time(p) * math.exp(rng.gauss(0.0, 0.02))

    search = PortfolioSearch(measured, space, SearchConfiguration(generations=12, pool_size=16, seed=1), progress=False)
    results = search.start()
    assert search.stop_reason == "generations"  # not "exhausted": every batch was spent
    best = results.get_best_result()
    assert best is not None and best.scores is not None and best.params == {"tile": 64, "unroll": 4}
    fresh = [e.scores[0] for e in results if e.ok and e.key == best.key and e.scores and e.proposal.generation == 11]
    assert len(fresh) >= 4 and best.scores[0] == pytest.approx(sum(fresh) / len(fresh))


def test_the_repair_index_finds_what_comparing_every_pair_finds() -> None:
    space = ss.SearchSpace({f"p{i}": ss.choice([0, 1, 2], knockout_prob=0.5) for i in range(6)})
    rng = random.Random(5)
    index = RepairIndex()
    fitness: dict[Any, tuple[float, ...]] = {}
    failed: list[Any] = []
    for step in range(400):
        genome = space.sample(rng, 0.0)
        if genome in fitness or genome in failed:
            continue
        if rng.random() < 0.3:
            failed.append(genome)
            index.add(genome, None)
        else:
            fitness[genome] = (float(rng.randrange(4)),)
            index.add(genome, fitness[genome])
        if step % 50 == 49:
            for best in (frozenset({(0.0,)}), frozenset({(0.0,), (1.0,)})):
                expected = []
                for f in reversed(failed):
                    cause = {apart[0] for g, fit in fitness.items() if fit in best
                             for apart in [[i for i, (x, y) in enumerate(zip(f, g, strict=True)) if x != y]]
                             if len(apart) == 1}
                    if cause:
                        expected.append((f, cause))
                assert index.repairable(best) == expected
    assert expected and all(single_changes(f, space) for f, _ in expected)


@pytest.mark.parametrize("shape", ["ripple", "tilt"])
def test_on_a_stalled_plateau_the_space_filling_arm_gets_most_of_the_batch(shape: str) -> None:
    # At 100 but for a 2%-deep decoy slope (x, y within 6 of (4, 4)), the plateau rippled by 0.01% or tilted by 1%
    # (not flat within any fixed tolerance, but narrow next to the decoy): the batches go mostly to uniform draws;
    # on a landscape with no plateau, no more than they leave.
    space = {"x": ss.range(0, 63), "y": ss.range(0, 63), "z": ss.range(0, 63)}

    def decoy(p: dict[str, Any]) -> float:
        distance = abs(p["x"] - 4) + abs(p["y"] - 4)
        level = 0.01 * ((p["z"] * 37) % 10) / 10 if shape == "ripple" else p["z"] / 63
        return 98.0 + distance / 6 if distance <= 12 else 100.0 + level

    config = SearchConfiguration(generations=12, pool_size=32, seed=1)
    plateau = PortfolioSearch(decoy, space, config, progress=False)
    plateau.start()
    assert plateau.plateau() and plateau.describe()["fill"] >= 150  # of 352 after generation 0
    rugged = PortfolioSearch(lambda p: float((p["x"] * 7 + p["y"] * 13 + p["z"]) % 101), space, config,
                             progress=False)
    rugged.start()
    # its floor (2 a batch) and the slots other arms leave (the local arm's quarter of a batch once the best has
    # stalled, where its moves around the best run out)
    assert not rugged.plateau() and rugged.describe()["fill"] < 110


def test_on_a_plateau_the_local_arm_gets_a_slot_for_each_plateau_spread_its_last_batch_gained() -> None:
    # A plateau at 100 (rippled by 0.01%: its spread is MIN_SPREAD's 0.1) with a slope (x + y within 16 of (40, 40))
    # falling 0.2 a step, a gentle decoy, or 3 a step, a basin. On the gentle slope a batch gains a step or two, two to
    # four of the plateau's spreads: the local arm gets that many slots (at least its sliver of 2), the draws the
    # rest; before, every step larger than the spread kept its quarter (8 of 32) until the bottom. The steep slope
    # keeps the quarter while it descends. Both are descended to the bottom in 12 batches.
    space = {"x": ss.range(0, 63), "y": ss.range(0, 63), "z": ss.range(0, 63)}

    def sloped(step: float) -> Any:
        def objective(p: dict[str, Any]) -> float:
            distance = abs(p["x"] - 40) + abs(p["y"] - 40)
            return 100.0 - step * (16 - distance) if distance <= 16 else 100.0 + 0.01 * ((p["z"] * 37) % 10) / 10
        return objective

    local = {}
    for step in (0.2, 3.0):
        local[step] = 0
        for seed in range(4):
            search = PortfolioSearch(sloped(step), space, SearchConfiguration(generations=12, pool_size=32, seed=seed),
                                     progress=False)
            search.start()
            assert search.plateau() and search._best is not None
            assert search._best[0][0] == pytest.approx(100.0 - 16 * step)  # the slope's bottom
            local[step] += search.describe()["local"]
    assert local[0.2] < 0.8 * local[3.0], local  # 126 and 202 of the 4 x 352 evaluations after generation 0 (before:
    # 202 and 202)


def test_on_a_plateau_draws_fill_the_gaps_between_the_configurations_measured() -> None:
    # A flat 32 x 32 plateau: 128 evaluations over its 64 cells of 4 x 4. As many uniform draws leave about 8 cells
    # empty ((63/64)**128 of 64); draws each the farthest of several from those measured leave hardly any, so a basin
    # the size of a cell is seldom missed -- and the cells at the edges are filled as often as the middle ones.
    space = {"x": ss.range(0, 31), "y": ss.range(0, 31)}
    empty, edge = [], []
    for seed in range(4):
        search = PortfolioSearch(lambda p: 100.0, space, SearchConfiguration(generations=4, pool_size=32, seed=seed),
                                 progress=False)
        cells = [(e.params["x"] // 4, e.params["y"] // 4) for e in search.start()]
        empty.append(64 - len(set(cells)))
        edge.append(sum(1 for c in cells if 0 in c or 7 in c) / len(cells))  # 28 of the 64 cells are at an edge
    assert search.plateau() and sum(empty) <= 8, empty
    assert 0.3 < sum(edge) / len(edge) < 0.58, edge


def test_local_moves_merge_every_improvement_even_ties_where_a_parameter_is_knocked_out() -> None:
    # Two moves around the old best improved on it by the same amount; one holds None (knocked out) where the
    # other holds a value: merged in the order measured, never compared (that raised a TypeError).
    space = {"x": ss.range(0, 15), "cache": ss.choice(["ca", "cg"], knockout_prob=0.5),
             "unroll": ss.choice([1, 2], knockout_prob=0.5)}
    local = LocalArm(PortfolioSearch(lambda p: 0.0, space, SearchConfiguration(generations=2, pool_size=4, seed=0),
                                     progress=False))
    old, new = (3, 0, 0), (4, 0, 0)  # the best moved x up a step
    local._better = [((1.0,), (4, 0, 0), old), ((0.5,), (3, None, 1), old), ((0.5,), (3, 1, None), old)]
    assert local._merged(new) == (4, None, 1)  # every improving change at once, the first of a tie first


def test_a_gently_tilted_or_terraced_plateau_is_one_before_any_draw_lands_below_it() -> None:
    # A plateau tilted by 1% over seven parameters: more than half of its draws within 0.1% of their median, none
    # below them yet (the decoy is rare), so the draws' shape alone cannot tell it from a slope; it is flat.
    search = PortfolioSearch(lambda p: 0.0, {"x": ss.range(0, 3)}, SearchConfiguration(generations=1, pool_size=4),
                             progress=False)
    rng = random.Random(0)
    search._drawn = sorted(100 + sum(rng.randrange(13) for _ in range(7)) / 84 for _ in range(64))
    assert search.plateau()
    search._drawn = sorted(100 + 5 * rng.random() for _ in range(64))  # spread evenly: a slope, not a plateau
    assert not search.plateau()
    # Terraces of 0.2% steps (two parameters of 20 values, a step every 5), none below them: fewer than half on the
    # median's step, the middle half two steps apart, the lowest draw as far below; the middle half is within 0.5%.
    search._drawn = sorted(100 + 0.2 * (rng.randrange(20) // 5 + rng.randrange(20) // 5) for _ in range(64))
    assert search.plateau()
    search._drawn = sorted(100 + 2 * rng.random() for _ in range(64))  # knobs of 1-2% effects: no plateau
    assert not search.plateau()


def test_local_moves_include_three_ordered_parameters_moved_together_every_way() -> None:
    # A valley that only the three moved together go down (r1 up with r0, r2 down): no pair or single change
    # of its points improves, so the local arm's moves hold every triple of ordered parameters, every sign.
    space = {"r0": ss.range(0, 9), "r1": ss.range(0, 9), "r2": ss.range(0, 9), "mode": ss.choice(["a", "b"])}
    local = LocalArm(PortfolioSearch(lambda p: 0.0, space, SearchConfiguration(generations=2, pool_size=4, seed=0),
                                     progress=False))
    local._rebuild((4, 4, 4, 0))
    triples = {move for move in local._moves
               if move[3] == 0 and all(abs(move[i] - 4) == 1 for i in range(3))}
    assert len(triples) == 8 and (5, 5, 3, 0) in triples


def test_a_walk_doubles_its_steps_to_the_grids_end_and_halves_back_between_a_step_that_stayed_and_one_that_lost() -> None:
    space = ss.SearchSpace({"cap": ss.range(0, 40, knockout_prob=0.5), "mode": ss.choice(["a", "b"])})
    origin = (40, 1)
    down = [walk_step((origin, 0, -1, near, 0), space) for near in (0, 1, 2, 4, 8, 16, 32, 40)]
    assert [None if m is None else m[0] for m in down] == [39, 38, 36, 32, 24, 8, 0, None]  # 1, 2, 4 ... the end
    assert walk_step((origin, 0, 1, 0, 0), space) is None  # at the end already
    assert walk_step((origin, 0, -1, 16, 32), space) == (16, 1) and walk_step((origin, 0, -1, 16, 17), space) is None
    assert walk_step(((None, 1), 0, 0, 0, 0), space) == (20, 1)  # knocked out: back at the middle value first


def test_a_single_change_that_lost_is_walked_from_far_across_a_plateau_to_the_pair_that_pays() -> None:
    # Held-out-7's HGEMM kind: lowering the level loses alone; with it lowered the cap is a plateau from 40 down to
    # 25 and pays at 24, below which it spills (as it does below 30 at the best's level). Once that single change is
    # measured, the local arm walks from it: the cap 16 steps down with the level lowered, a pair no step and no
    # single change of the best makes. Levels 0 and 1 lose more, the same everywhere (their cap lines the best's):
    # origins too, probed but not walked.
    space = {"level": ss.choice([0, 1, 2, 3]), "cap": ss.range(0, 40), "mode": ss.choice(["a", "b"])}

    def score(genome: Genome) -> float:
        level, cap = genome[0], genome[1]
        assert cap is not None
        if level == 2:
            return 1 + NEAR_LOSS / 4 if cap >= 25 else 0.9 if cap == 24 else 3.0
        return (1.0 if cap >= 30 else 3.0) * (1.0 if level == 3 else 1.5)

    search = PortfolioSearch(lambda p: 0.0, space, SearchConfiguration(generations=2, pool_size=4, seed=0),
                             progress=False)
    centre, lowered = (3, 40, 0), (2, 40, 0)
    search._best, search.measured[centre] = ((1.0,), centre), (1.0,)
    local = LocalArm(search)
    proposed: list[Genome] = []
    while (2, 24, 0) not in proposed and len(proposed) < 40:
        move = local.propose()
        assert move is not None
        search.measured[move] = (score(move),)
        local.learn(move, search.measured[move], False)
        proposed.append(move)
    assert (2, 24, 0) in proposed
    # walked from the changes of the level alone: not from a tie (mode b) or a change of an ordered parameter
    assert set(local.walks._origins) <= {lowered, (1, 40, 0), (0, 40, 0)} and lowered in local.walks._origins
    search.noisy = True  # where scores are noisy, a loss cannot be told from noise: no walk
    quiet = LocalArm(search)
    quiet._rebuild(centre)
    quiet._around[lowered] = centre
    quiet.learn(lowered, search.measured[lowered], False)
    assert not quiet.walks._origins and not quiet.walks.pending


def test_walks_start_from_the_change_that_interacts_however_much_it_lost_and_never_from_one_that_does_not() -> None:
    # At the best (algorithm a, width 40) narrower widths lose 2x from 29 down. Algorithm b loses 0.5% and its width
    # line is the best's (no interaction); c loses 4% -- twice the loss the walks once admitted -- but its width
    # line is flat down to 8 and pays at 7: at the best's worst width (20) it does 1.04 where the best does 2.0.
    # Each change is probed there once, the least loss first; then c's walk reaches width 7, and b is not walked.
    space = ss.SearchSpace({"algo": ss.choice(["a", "b", "c"]), "width": ss.range(0, 40)})

    def score(genome: Genome) -> float:
        algo, width = genome
        assert width is not None
        if algo == 2:
            return 1.04 if width >= 8 else 0.95 if width == 7 else 3.0
        return (1.0 if width >= 30 else 2.0) * (1.0 if algo == 0 else 1.005)

    search = PortfolioSearch(lambda p: 0.0, dict(space), SearchConfiguration(generations=2, pool_size=4, seed=0),
                             progress=False)
    centre = (0, 40)
    for genome in (centre, (0, 39), (0, 20), (1, 40), (2, 40)):
        search.measured[genome] = (score(genome),)
    walks = Walks(search, space)
    walks.reset(centre)
    walks.admit((1, 40), search.measured[(1, 40)])
    walks.admit((2, 40), search.measured[(2, 40)])
    proposed: list[Genome] = []
    while (2, 7) not in proposed and len(proposed) < 20:
        move = walks.propose()
        assert move is not None
        search.measured[move] = (score(move),)
        walks.learned(move, search.measured[move])
        proposed.append(move)
    assert proposed[:2] == [(1, 20), (2, 20)]  # the probes: b's (1.005 x the best's 2.0), c's (1.04)
    assert proposed[-1] == (2, 7) and all(move[0] == 2 for move in proposed[2:])
    assert walks._origins[(2, 40)].interacts() > 0.9 and walks._origins[(1, 40)].interacts() == 0
    while (move := walks.propose()) is not None:  # c's walks out: b's is not walked (the best's line, shifted)
        assert move[0] == 2
        search.measured[move] = (score(move),)
        walks.learned(move, search.measured[move])


def test_local_moves_keep_the_products_of_ordered_parameters_however_far_one_moves() -> None:
    # Where a product matters (tile sides: 2 x 12 = 4 x 6 = 24), the best along it is one move away from anywhere on
    # it: one parameter to another value, the other to the value that keeps the product nearest. No one-step pair
    # makes that move; ranges holding zero or negative values (no product to keep) get none.
    space = {"tm": ss.range(1, 16), "tn": ss.range(1, 16), "k": ss.range(0, 9), "mode": ss.choice(["a", "b"])}
    local = LocalArm(PortfolioSearch(lambda p: 0.0, space, SearchConfiguration(generations=2, pool_size=4, seed=0),
                                     progress=False))
    local._rebuild((1, 11, 4, 0))  # tm 2, tn 12, k 4
    moves = set(local._moves)
    assert (3, 5, 4, 0) in moves and (7, 2, 4, 0) in moves  # tm 4 x tn 6, tm 8 x tn 3: both 24
    assert not any(abs(m[2] - 4) > 1 and m[:2] != (1, 11) for m in moves)  # k (0 to 9) is in no product move
    # Where one parameter's products with several others matter (warps x stages, warps x unroll: two resource
    # limits), it moves with every other rescaled at once: warps 4 -> 8 halves both stages and unroll.
    space = {"warps": ss.range(1, 16), "stages": ss.range(1, 12), "unroll": ss.range(1, 12)}
    local = LocalArm(PortfolioSearch(lambda p: 0.0, space, SearchConfiguration(generations=2, pool_size=4, seed=0),
                                     progress=False))
    local._rebuild((3, 5, 5))  # warps 4, stages 6, unroll 6
    assert (7, 2, 2) in local._moves  # warps 8, stages 3, unroll 3


def test_local_moves_keep_the_product_of_three_when_two_step_and_the_third_rescales() -> None:
    # CTAs x warps x depth a product ridge (1 x 4 x 12 = 2 x 8 x 3 = 48) whose shape along it favours warps / CTAs
    # 4 and depth 3: the better point needs CTAs and warps up a step each and depth down to a quarter at once. No pair
    # keeps the product of three, and rescaling keeps each pair's product (CTAs 4 x warps 16 x depth 3), not the
    # three's: held-out-19's pridge19w stalled there in 12 of 50 seeds.
    space = {"ctas": ss.range(1, 16), "warps": ss.choice([1, 2, 4, 8, 16]), "depth": ss.range(1, 24)}
    local = LocalArm(PortfolioSearch(lambda p: 0.0, space, SearchConfiguration(generations=2, pool_size=4, seed=0),
                                     progress=False))
    local._rebuild((0, 2, 11))  # ctas 1, warps 4, depth 12
    assert (1, 3, 2) in local._moves  # ctas 2, warps 8, depth 3


def test_local_moves_keep_the_product_of_three_and_the_ratio_of_two() -> None:
    # rows x column blocks x split a product ridge (32 x 4 x 8 = 64 x 8 x 2 = 1024) whose shape along it favours
    # rows / column blocks 8 and split 2: the better point doubles rows and column blocks (their ratio kept) and
    # quarters the split. A step of column blocks is +1, not a doubling, so no two-steps-and-a-rescale makes it:
    # held-out-21's pridge21t stalled at 32 x 4 x 8 in 9 of 50 seeds.
    space = {"rows": ss.choice([16, 32, 64, 128, 256]), "cols": ss.range(1, 20), "split": ss.range(1, 12)}
    local = LocalArm(PortfolioSearch(lambda p: 0.0, space, SearchConfiguration(generations=2, pool_size=4, seed=0),
                                     progress=False))
    local._rebuild((1, 3, 7))  # rows 32, cols 4, split 8
    assert (2, 7, 1) in local._moves  # rows 64, cols 8, split 2


def test_product_moves_step_along_the_ridge_before_they_jump_far_along_it() -> None:
    # rows x cols a product ridge (best 24 x 12), the centre at 29 x 10 on it: the neighbouring points of the ridge
    # (cols 11 with rows 26, cols 9 with rows 32) are where a smooth ridge improves, so they come before every
    # product move that jumps far (cols 1 with rows 32, cols 30 with rows 10): a local arm given a quarter of a
    # batch reaches them while it lasts. Shuffled among ~200 product moves, they came after the budget in 8 of
    # 100 seeds of held-out-15's pridge15s.
    space = {"rows": ss.range(1, 32), "cols": ss.range(1, 32), "stages": ss.choice([1, 2, 3, 4, 5, 6])}
    for seed in range(3):
        local = LocalArm(PortfolioSearch(lambda p: 0.0, space,
                                         SearchConfiguration(generations=2, pool_size=4, seed=seed), progress=False))
        local._rebuild((28, 9, 2))  # rows 29, cols 10, stages 3
        first: dict[Genome, int] = {}
        for index, move in enumerate(local._moves):
            first.setdefault(move, index)
        near = [first[(25, 10, 2)], first[(31, 8, 2)]]  # rows 26 x cols 11, rows 32 x cols 9
        far = [index for move, index in first.items() if max(abs(a - b) for a, b in zip(move, (28, 9, 2))) > 4]
        assert far and max(near) < min(far)


def test_each_other_value_of_a_choice_comes_before_the_pairs_and_products_and_the_walks_take_turns_from_there() -> None:
    # The walks' origins are changes of a choice; the far ones (unroll 8 -> 2, not a step of the choice's poll)
    # are measured before the centre's pairs and product moves of ordered parameters, which may be many.
    space = {"unroll": ss.choice([1, 2, 4, 8, 16], knockout_prob=0.5), "a": ss.range(1, 32), "b": ss.range(1, 16)}
    local = LocalArm(PortfolioSearch(lambda p: 0.0, space, SearchConfiguration(generations=2, pool_size=4, seed=0),
                                     progress=False))
    local._rebuild((3, 5, 5))  # unroll 8
    first: dict[Genome, int] = {}
    for index, move in enumerate(local._moves):
        first.setdefault(move, index)
    choices = [first[(u, 5, 5)] for u in (0, 1, 2, 4, None)]  # unroll 1, 2, 4, 16 and knocked out
    pairs = [index for move, index in first.items() if move[0] == 3 and move[1] != 5 and move[2] != 5]
    assert max(choices) < min(pairs) and local._walks_from == max(choices) + 1


def test_origins_that_interact_walk_by_turns() -> None:
    # Two changes of the algorithm interact with the width (each avoids the best's failure at width 5, where a
    # third fails as the best does); b's walk pays nothing, c's pays at width 28 (8 steps up). Walked the most
    # interacting first, b's walk (admitted first, its interaction as infinite) would hold every turn to its end:
    # by turns, c's is walked from the start.
    space = ss.SearchSpace({"algo": ss.choice(["a", "b", "c", "d"]), "width": ss.range(0, 40)})

    def score(genome: Genome) -> tuple[float] | None:
        algo, width = genome
        assert width is not None
        if width <= 5 and algo in (0, 3):
            return None
        return ({0: 1.0, 1: 1.02, 2: 0.9 if width == 28 else 1.03, 3: 1.01}[algo],)

    search = PortfolioSearch(lambda p: 0.0, dict(space), SearchConfiguration(generations=2, pool_size=4, seed=0),
                             progress=False)
    centre = (0, 20)
    for genome in (centre, (0, 5), (1, 20), (2, 20), (3, 20)):
        search.measured[genome] = score(genome)
    walks = Walks(search, space)
    walks.reset(centre)
    for genome in ((1, 20), (2, 20), (3, 20)):
        walks.admit(genome, search.measured[genome])
    proposed: list[Genome] = []
    while (2, 28) not in proposed and len(proposed) < 40:
        move = walks.propose()
        assert move is not None
        search.measured[move] = score(move)
        walks.learned(move, search.measured[move])
        proposed.append(move)
    # the probes, the least loss first, and b's first step between b's probe and c's
    assert proposed[:4] == [(3, 5), (1, 5), (1, 19), (2, 5)]
    walked = [move[0] for move in proposed[4:]]
    assert (2, 28) in proposed and len(proposed) <= 20 and set(walked) == {1, 2}
    assert all(a != b for a, b in itertools.pairwise(walked)), proposed  # by turns


def test_while_a_walk_from_a_change_that_interacts_has_a_step_the_local_arm_gets_a_quarter_of_the_batch() -> None:
    search = PortfolioSearch(lambda p: 0.0, dict(RIDGE_SPACE), SearchConfiguration(generations=2, pool_size=32, seed=0),
                             progress=False)
    assert search.floors(32)[2] == 2  # 1/16
    origin = search.local.walks
    origin.reset((40, 23, 0))
    search.measured[(40, 23, 0)], search.measured[(40, 23, None)] = (1.0,), (1.5,)
    origin.admit((40, 23, None), (1.5,))
    assert not origin.urgent and search.floors(32)[2] == 2  # an origin, not known to interact
    next(iter(origin._origins.values())).interaction[0] = 0.5
    assert origin.urgent and search.floors(32)[2] == 8


def test_local_moves_step_a_choice_of_ascending_numbers_as_an_ordered_grid() -> None:
    # warps x items is a product ridge over two choices of powers of two (no log sampling declared): local moves
    # step each to its neighbouring values, move the two together along the ridge and keep their product; a choice
    # of words has no order and gets none of that.
    space = {"warps": ss.choice([1, 2, 4, 8, 16, 32]), "items": ss.choice([1, 2, 4, 8, 16, 32, 64, 128]),
             "mode": ss.choice(["a", "b", "c"])}
    local = LocalArm(PortfolioSearch(lambda p: 0.0, space, SearchConfiguration(generations=2, pool_size=4, seed=0),
                                     progress=False))
    local._rebuild((3, 4, 0))  # warps 8, items 16
    moves = set(local._moves)
    assert (2, 5, 0) in moves and (4, 3, 0) in moves  # one step each, in opposite directions: along the ridge
    assert (0, 7, 0) in moves  # warps 1 x items 128: the same product, far along it
    assert not any(m[2] != 0 and m[:2] != (3, 4) for m in moves)  # the words move alone


def test_once_the_best_has_stalled_for_a_batch_the_local_arm_gets_a_quarter_of_the_batch() -> None:
    search = PortfolioSearch(lambda p: 0.0, dict(RIDGE_SPACE), SearchConfiguration(generations=9, pool_size=32, seed=0),
                             progress=False)
    search._generation, search._best_at = 2, 1
    assert search.floors(32)[2] == 2  # improving: 1/16
    search._generation = 3
    assert search.floors(32)[2] == 8  # a batch without a new best: the moves around the best get a quarter


def test_once_scores_are_known_to_be_noisy_the_draws_get_a_quarter_of_each_batch_off_a_plateau() -> None:
    # Knobs measured with 1% noise (a 2% trend along x), where a basin no draw has found yet may lie: noise spreads
    # the draws as widely as a plateau's, so a landscape is not known to be no plateau, and only draws find a basin.
    # Once a repeat of the best has shown the noise, a quarter of each batch goes to draws, the GA's floor giving way
    # so that the measurements again (a quarter) and the other floors leave the draws theirs.
    rng = random.Random(0)
    space = {"x": ss.range(0, 63), "y": ss.range(0, 63), "z": ss.range(0, 63)}
    search = PortfolioSearch(lambda p: (100.0 + 2 * p["x"] / 63) * math.exp(rng.gauss(0.0, 0.01)), space,
                             SearchConfiguration(generations=8, pool_size=32, seed=0), progress=False)
    assert search.floors(32)[:2] == [24, 2]  # noise not known yet: the GA's three quarters, the draws' sixteenth
    drawn: list[int] = []  # each batch's draws (the space-filling arm is arm 1)
    batch = search._candidates

    def counted(genomes: list[Genome], arms: list[int], repeated: int) -> Any:
        drawn.append(arms[repeated:].count(1))
        return batch(genomes, arms, repeated)

    search._candidates = counted  # type: ignore[method-assign]
    search.start()
    assert search.noisy and not search.plateau()
    # generation 0 is draws of its own and generation 1 learns the noise; the next four give the draws 8 slots each
    # (the last two measure again three quarters of theirs: what is left goes to whichever arm leads)
    assert min(drawn[2:6]) >= 8, drawn
    floors = search.floors(32, 8)
    assert floors[1] == 8 and sum(floors) == 24  # the draws' quarter, and all of them fit beside 8 measured again
    quiet = PortfolioSearch(lambda p: 100.0 + p["x"] % 7, space, SearchConfiguration(generations=2, pool_size=32),
                            progress=False)
    quiet.start()
    assert quiet.noisy is False and quiet.floors(32)[:2] == [24, 2]  # scores that repeat exactly: as before


def test_under_noise_a_plateau_is_known_once_any_arm_finds_a_configuration_far_below_the_draws() -> None:
    # A plateau at 100 measured with 1% noise: the draws' middle half spans about 1.3, their lowest (one noisy
    # measurement each) about 2.5 below their median -- not the four middle halves that tell a plateau. A decoy 8%
    # deep, too small for the draws to land in, found by the GA or the local moves and measured again: its pooled
    # score lies far below the draws, so the landscape is a plateau (the draws take most of each batch: only they
    # find a basin behind a decoy). Noisy knobs, whose best lies about one middle half below, are not.
    def measured(decoy: float) -> PortfolioSearch:
        rng = random.Random(0)
        search = PortfolioSearch(lambda p: 0.0, {"x": ss.range(0, 63), "y": ss.range(0, 63), "z": ss.range(0, 63)},
                                 SearchConfiguration(generations=8, pool_size=32, seed=0), progress=False)
        for _ in range(48):
            value = 100.0 * math.exp(rng.gauss(0.0, 0.01))
            search._sample((rng.randrange(64), rng.randrange(64), rng.randrange(64)), (value,))
            search._drawn.append(value)
        search._drawn.sort()
        for _ in range(4):  # found by moves, not draws, and measured again: the noise is known from it
            search._sample((31, 31, 31), (decoy * math.exp(rng.gauss(0.0, 0.01)),))
        assert search.noisy and search._pooled is not None
        search._judge()  # as after a batch: the best judged by the pooled scores
        return search

    search = measured(92.0)
    drawn = search._drawn
    assert drawn[0] > search._median() - search._quartiles_apart() / 0.25  # the draws alone: no plateau
    assert search.plateau()
    assert not measured(99.0).plateau()  # a best about a middle half below the draws: searched as before


def test_under_noise_a_decoy_the_draws_main_effects_do_not_explain_is_a_plateau_and_noisy_knobs_are_not() -> None:
    # Three ranges, every measurement with 1% noise, 48 draws from the whole space, and a best found by moves and
    # measured four times 3% below the draws' mean: too shallow for the draws' spread to tell (four middle halves,
    # about 5%). On a plateau (a decoy: the draws score alike, their main effects predict nothing of the best's
    # depth) the landscape is a plateau and the draws get most of the budget; on knobs (x and y each a straight
    # trend of 3%, so the draws' main effects predict the best at the corner where the good values meet) it is not.
    def measured(knobs: float) -> PortfolioSearch:
        rng = random.Random(1)
        search = PortfolioSearch(lambda p: 0.0, {"x": ss.range(0, 63), "y": ss.range(0, 63), "z": ss.range(0, 63)},
                                 SearchConfiguration(generations=8, pool_size=32, seed=0), progress=False)

        def true(genome: Genome) -> float:
            return 100.0 + knobs * (1 - (genome[0] + genome[1]) / 63)

        for _ in range(48):
            genome = (rng.randrange(64), rng.randrange(64), rng.randrange(64))
            value = true(genome) * math.exp(rng.gauss(0.0, 0.01))
            search._sample(genome, (value,))
            search._drew(genome, value)
        best = (63, 63, 31) if knobs else (31, 31, 31)
        for _ in range(4):
            search._sample(best, ((true(best) if knobs else 97.0) * math.exp(rng.gauss(0.0, 0.01)),))
        assert search.noisy and search._pooled is not None
        search._judge()  # as after a batch: the best judged by the pooled scores
        return search

    decoy = measured(0.0)
    assert decoy._noisy_centre == (31, 31, 31)
    assert decoy._median() - decoy._centre_judged < decoy._quartiles_apart() / 0.25  # the spread alone: no plateau
    assert decoy.plateau()
    # On the plateau nothing else is measured again, but the pit is, up to MAX_REPEATS: a pit claimed on one lucky
    # measurement would otherwise keep the draws there for good.
    decoy._best = ((96.0,), (31, 31, 31))
    assert decoy._to_measure_again(32) == [(31, 31, 31)]
    for _ in range(4):
        decoy._sample((31, 31, 31), (97.0,))
    decoy._judge()
    assert decoy.plateau() and decoy._to_measure_again(32) == []
    knobs = measured(3.0)
    assert knobs._median() - knobs._centre_judged > 2.0  # as deep below the draws as the decoy
    assert not knobs.plateau()


def test_once_every_other_move_is_out_the_local_arm_moves_two_ordered_parameters_one_of_them_two_steps() -> None:
    # A basin a block's next value with two more stages away (each alone a loss): no one-step pair or triple
    # reaches it. Once the centre's other moves are out, the local arm tries the pairs with a two-step, nearest first.
    space = {"cap": ss.range(0, 9), "block": ss.choice([64, 128, 256]), "stages": ss.range(1, 8),
             "vec": ss.literal("-v", knockout_prob=0.5)}
    search = PortfolioSearch(lambda p: 0.0, space, SearchConfiguration(generations=2, pool_size=4, seed=0),
                             progress=False)
    centre = (4, 1, 2, 0)
    search._best = ((0.0,), centre)
    local = LocalArm(search)
    local._rebuild(centre)
    wide = local._wide_pairs(centre)
    assert (4, 2, 4, 0) in wide and (6, 1, 0, 0) in wide
    assert all(max(abs(a - b) for a, b in zip(move, centre, strict=True)) == 2 for move in wide)
    assert all(sum(1 for a, b in zip(move, centre, strict=True) if a != b) == 2 for move in wide)
    apart = [sum(abs(a - b) for a, b in zip(move, centre, strict=True)) for move in wide]
    assert apart == sorted(apart) and apart[0] == 3 and apart[-1] == 4
    proposed = []
    while (genome := local.propose()) is not None:
        proposed.append(genome)
        search._seen.add(genome)
    assert set(wide) <= set(proposed) and proposed[-1] in wide and proposed.index((4, 2, 4, 0)) > len(proposed) - len(wide)
