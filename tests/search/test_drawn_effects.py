"""The draws' main effects (ciq_build.search.drawn_effects): how much of the best's depth they explain."""

from __future__ import annotations

import math
import random
from collections.abc import Callable

import pytest

from ciq_build.core.space import Genome
from ciq_build.search.drawn_effects import DrawnEffects

Point = tuple[int, ...]


def _decoy(point: Point) -> float:
    # held-out-20's kind: 4 ranges of 24, a decoy 3% deep whose slope reaches 6 from (4, 18, 7, 21), a plateau at 100
    distance = [abs(v - c) for v, c in zip(point, (4, 18, 7, 21), strict=True)]
    return 100.0 * (1 - 0.03 * (1 - sum(distance) / 24)) if max(distance) <= 6 else 100.0


def _knobs(point: Point) -> float:
    return 100.0 + 3.0 * (1 - (point[0] + point[1]) / 46)  # x and y each a straight trend, best at their top


def _drawn(objective: Callable[[Point], float], seed: int, ordered: list[int]) -> DrawnEffects:
    rng = random.Random(seed)
    effects = DrawnEffects(ordered)
    for _ in range(48):  # the draws by generation 2, each measured once with 0.8% noise
        point = tuple(rng.randrange(24) for _ in range(4))
        effects.add(point, objective(point) * math.exp(rng.gauss(0.0, 0.008)))
    return effects


def test_a_decoy_on_a_plateau_is_a_pit_and_the_best_of_knobs_is_not() -> None:
    for seed in range(6):
        for objective, best, pit in ((_decoy, (4, 18, 7, 21), True), (_knobs, (23, 23, 5, 9), False)):
            effects = _drawn(objective, seed, [23] * 4)  # four ranges of 24 values: smooth along each
            level, explained, error = effects.explained(best)
            assert 99.5 < level < 102.0 and error > 0
            # judged a little above its true score, as the pooled scores' standard error puts it
            assert effects.pit(best, objective(best) + 0.3) is pit, (seed, objective, level, explained, error)


def test_a_trend_along_a_range_is_one_effect_not_one_for_each_value() -> None:
    # One effect for each of 24 values (as for a choice) leaves each estimated from two draws and shrunk: the knobs'
    # trend is then too uncertain, and its best taken for a pit in some seeds. A line and a parabola along each range
    # are pinned down by every draw.
    best = (23, 23, 5, 9)
    per_value = [_drawn(_knobs, seed, [0] * 4).pit(best, 100.3) for seed in range(6)]
    smooth = [_drawn(_knobs, seed, [23] * 4).pit(best, 100.3) for seed in range(6)]
    assert any(per_value) and not any(smooth)


def test_the_fit_kept_as_draws_come_is_the_fit_of_every_draw_without_the_best() -> None:
    # The sums are kept as draws come (a fit a batch costs one small solve, not a pass over every draw); the fit is
    # still the ridge regression of the draws' values on their features, without the configuration asked about.
    import numpy as np

    rng = random.Random(5)
    ordered = [23, 0, 0]  # a range of 24 (a line and a parabola), a choice of 3 that may be absent, a flag
    effects = DrawnEffects(ordered)
    draws: dict[Genome, float] = {}
    while len(draws) < 60:
        first = rng.randrange(24)
        draws.setdefault((first, rng.choice([0, 1, 2, None]), rng.choice([0, None])), 100 + 0.05 * first + rng.gauss(0, 1))
    for genome, value in draws.items():
        effects.add(genome, value)
    best = next(iter(draws))
    rows = [p for p in draws if p != best]

    def features(p: Genome) -> list[float]:
        t = 2 * (p[0] or 0) / 23 - 1
        return [t, t * t - 1 / 3] + [float(p[1] == v) for v in (0, 1, 2, None)] + [float(p[2] == v) for v in (0, None)]

    x, y = np.array([features(p) for p in rows]), np.array([draws[p] for p in rows])
    level = y.mean()
    inverse = np.linalg.inv(x.T @ x + np.eye(x.shape[1]))
    fitted = inverse @ x.T @ (y - level)
    residual = y - level - x @ fitted
    variance = residual @ residual / (len(y) - np.trace(inverse @ x.T @ x) - 1)
    at = np.array(features(best))
    error = math.sqrt(variance * (inverse @ at) @ x.T @ x @ (inverse @ at))
    assert effects.explained(best) == pytest.approx((level, -at @ fitted, error), rel=1e-9)


def test_a_fit_survives_a_pickle_and_a_deep_copy_as_a_search_state_must():
    import copy
    import pickle

    effects = DrawnEffects([23, 23, 23, 23])
    rng = random.Random(3)
    for _ in range(40):
        point = tuple(rng.randrange(24) for _ in range(4))
        effects.add(point, _knobs(point))
    best = (23, 23, 0, 0)
    for twin in (pickle.loads(pickle.dumps(effects)), copy.deepcopy(effects)):
        assert twin.explained(best) == effects.explained(best)
