"""The search-quality bench's held-out set: problems a claim about the search is made on, never tuned on.

Written from issue 38's descriptions of where the GA lost, before the search
changed (the commit that added this file holds nothing else but the bench's
support for it): a plateau whose decoy is 2% and 10% deep, a product ridge
with no failure next to its best, a knob space measured with 1.5% lognormal
noise and judged by the true value of the search's pick, and a 52-parameter
ACF-like space where 9 parameters matter, 3 of them through interacting pairs.
Their seeds' constants (optima, decoy points, which parameters matter) were
chosen once, by hand, and are not to be changed to suit a result.
"""

from __future__ import annotations

import math
from typing import Any

from bench.search_quality.problems import Problem, _stable_fraction
from ciq_build import INVALID_SCORE
from ciq_build import space as ss

# -- a plateau with a decoy 2% / 10% below it ----------------------------------------------

_SIDE = 26  # values per range: 0..25
_BASIN_RADIUS = 4  # the basin: every coordinate within 4 of the hidden optimum ((9/26)**6 = 0.17% of the space)
_DECOY_RADIUS = 7  # the decoy's slope: every coordinate within 7 of the decoy point (up to 3.7% of the space)


def _decoy_plateau(depth: float, optimum: list[int], decoy: list[int], best_mode: str) -> Any:
    def objective(p: dict[str, Any]) -> float:
        # Flat at 100 but for a basin around a hidden optimum (scores below 40) and, far from it, a
        # decoy: a slope that falls to 100 * (1 - depth) at the decoy point. A search that settles on
        # the decoy's slope never sees the basin.
        r = [p[f"r{i}"] for i in range(len(optimum))]
        if all(abs(v - o) <= _BASIN_RADIUS for v, o in zip(r, optimum, strict=True)):
            cost = sum(abs(v - o) for v, o in zip(r, optimum, strict=True))
            return float(cost + 4 * (p["mode"] != best_mode) + (0 if p.get("flag") is None else 1))
        distance = [abs(v - d) for v, d in zip(r, decoy, strict=True)]
        if max(distance) <= _DECOY_RADIUS:
            return 100.0 * (1 - depth * (1 - sum(distance) / (_DECOY_RADIUS * len(decoy))))
        return 100.0
    return objective


def _decoy_space() -> dict[str, ss.Param]:
    return {
        **{f"r{i}": ss.range(0, _SIDE - 1) for i in range(6)},
        "mode": ss.choice(["a", "b", "c", "d", "e"]),
        "flag": ss.literal("-O3", knockout_prob=0.5),
    }


DECOY_2_OPT, DECOY_2_POINT = [18, 6, 11, 20, 14, 9], [3, 21, 24, 5, 2, 22]
DECOY_10_OPT, DECOY_10_POINT = [8, 17, 21, 5, 12, 19], [22, 3, 6, 20, 25, 2]

DECOY_2 = Problem(
    "decoy2 (plateau, 2%-deep decoy)",
    _decoy_space(),
    _decoy_plateau(0.02, DECOY_2_OPT, DECOY_2_POINT, "c"),
    40.0,  # the basin found: every point of it scores at most 6 * 4 + 5 = 29, the decoy 98
)

DECOY_10 = Problem(
    "decoy10 (plateau, 10%-deep decoy)",
    _decoy_space(),
    _decoy_plateau(0.10, DECOY_10_OPT, DECOY_10_POINT, "e"),
    40.0,  # the decoy point scores 90
)

# -- a product ridge with no failure next to its best -----------------------------------------

_BLOCK_TIME = {64: 1.03, 128: 1.01, 256: 1.0, 512: 1.005, 1024: 1.02}
_LEVEL_TIME = {1: 1.15, 2: 1.01, 3: 1.0}  # absent: -O3
_CACHE = {"ca": 1.0, "cg": 0.99, "cs": 1.01}


def _ridge(p: dict[str, Any]) -> Any:
    # A kernel whose time depends on the work per thread, tile_x * tile_y (best 256), and only a
    # little on the tile's shape (best 4:1 wide). Changing one tile size alone doubles or halves the
    # work (+5%); changing both together in opposite directions keeps it and moves along the ridge
    # (1% per step towards the best shape). Tiles of more than 4,096 elements do not fit in shared
    # memory (fail), nor 1,024 or more with blocks of 1,024: no single change from the best fails.
    x, y = int(p["tile_x"]), int(p["tile_y"])
    if x * y > 4096:
        return INVALID_SCORE
    block = p["block"]
    if block == 1024 and x * y >= 1024:
        return INVALID_SCORE  # too many resources requested for launch
    work = 1 + 0.05 * abs(math.log2(x * y) - 8)
    shape = 1 + 0.005 * abs(math.log2(x) - math.log2(y) - 2)
    time = work * shape * _BLOCK_TIME[block] * _LEVEL_TIME[p.get("O", 3)] * _CACHE[p.get("cache", "ca")]
    return time * (0.97 if "fast_math" in p else 1.0)


RIDGE = Problem(
    "ridge (tile product, no failure near best)",
    {
        "tile_x": ss.log_sampling(1, 128, 8),
        "tile_y": ss.log_sampling(1, 128, 8),
        "block": ss.choice([64, 128, 256, 512, 1024]),
        "O": ss.choice([1, 2, 3], knockout_prob=0.5),
        "cache": ss.choice(["ca", "cg", "cs"], knockout_prob=0.5),
        "fast_math": ss.literal("--use_fast_math", knockout_prob=0.5),
    },
    _ridge,
    0.97 * 0.99 + 1e-9,  # the optimum (32 x 8, block 256, -O3, cg, fast math) exactly: 0.9603
)

# -- a knob space measured with 1.5% lognormal noise -------------------------------------------

_NOISY_BLOCK = {64: 1.012, 128: 1.004, 256: 1.0, 512: 0.990, 1024: 1.006}  # absent: 256
_NOISY_UNROLL = {1: 1.0, 2: 0.994, 4: 0.988, 8: 0.996}  # absent: 1
_NOISY_LEVEL = {1: 1.02, 2: 1.004, 3: 1.0}  # absent: 3
_NOISY_CACHE = {"ca": 1.0, "cg": 0.994, "cs": 1.004, "lu": 1.01}  # absent: ca
_NOISY_REGS = {32: 1.03, 48: 1.01, 64: 0.996, 80: 0.998, 96: 1.0, 112: 1.0, 128: 1.0}  # absent: no cap


def noisy_knobs_time(p: dict[str, Any]) -> float:
    """The true time of a configuration (defaults 1.0): small effects, most within the noise of each other."""
    time = _NOISY_BLOCK[p.get("block", 256)] * _NOISY_UNROLL[p.get("unroll", 1)] * _NOISY_LEVEL[p.get("O", 3)]
    time *= _NOISY_CACHE[p.get("cache", "ca")] * _NOISY_REGS.get(p.get("maxrreg", 96), 1.0)
    if "fast_math" in p:  # implies flush-to-zero and approximate division: those two do nothing with it
        return time * 0.990
    return time * (0.997 if p.get("ftz") is True else 1.0) * (0.998 if p.get("prec_div") is False else 1.0)


NOISY_KNOBS = Problem(
    "noisy knobs (1.5% noise, optimum -4.1%)",
    {
        "block": ss.choice([64, 128, 256, 512, 1024], knockout_prob=0.5),
        "unroll": ss.choice([1, 2, 4, 8], knockout_prob=0.5),
        "O": ss.choice([1, 2, 3], knockout_prob=0.5),
        "fast_math": ss.literal("--use_fast_math", knockout_prob=0.5),
        "ftz": ss.choice([True, False], knockout_prob=0.5),
        "prec_div": ss.choice([True, False], knockout_prob=0.5),
        "cache": ss.choice(["ca", "cg", "cs", "lu"], knockout_prob=0.5),
        "maxrreg": ss.range(32, 128, 16, knockout_prob=0.5),
    },
    noisy_knobs_time,
    0.990 * 0.988 * 0.990 * 0.994 * 0.996 * 1.005,  # the pick's true time within 0.5% of the optimum
    noise=0.015,
)

# -- a 52-parameter ACF-like space: 9 parameters matter, 3 pairs interact ------------------------


def _acf_like(p: dict[str, Any]) -> Any:
    # 30 on/off flags, 14 small choices and 8 ranges, like a compiler's ACF options: most do nothing.
    # Failures: two flags that crash the compiler together, a range too high with a flag the best needs,
    # and a scattered 3% "compiler bug". Of the pairs, one is deceptive: either flag alone is worse.
    if "f8" in p and "f14" in p:
        return INVALID_SCORE
    if "f3" in p and p.get("r7", 0) > 13:
        return INVALID_SCORE
    if _stable_fraction(p) < 0.03:
        return INVALID_SCORE
    time = 0.96 if "f3" in p else 1.0
    time *= 0.975 if "f11" in p else 1.0
    time *= {"a": 1.0, "b": 0.97, "c": 1.02, "d": 1.0}[p.get("c2", "a")]
    time *= {0: 1.0, 1: 1.0, 2: 0.985}[p.get("c7", 0)]
    r1, r5 = p.get("r1"), p.get("r5")
    time *= 1.0 if r1 is None else 0.95 + 0.0015 * (r1 - 11) ** 2
    time *= 1.0 if r5 is None else 0.98 + 0.004 * abs(r5 - 4)
    pair = ("f5" in p) + ("f17" in p)
    time *= {0: 1.0, 1: 1.03, 2: 0.94}[pair]
    if p.get("c4") == "y":
        time *= 0.95 if p.get("r3", 0) >= 12 else 1.01
    if "f20" in p and p.get("c9") == 2:
        time *= 0.96
    return time


_ACF_FLAGS, _ACF_CHOICES, _ACF_RANGES = 30, 14, 8


def _acf_like_space() -> dict[str, ss.Param]:
    space: dict[str, ss.Param] = {f"f{i}": ss.literal(f"--flag-{i}", knockout_prob=0.5) for i in range(_ACF_FLAGS)}
    for i in range(_ACF_CHOICES):
        values: list[Any] = ["a", "b", "c", "d"] if i == 2 else ["x", "y", "z"] if i == 4 else [0, 1, 2]
        space[f"c{i}"] = ss.choice(values, knockout_prob=0.5)
    space.update({f"r{i}": ss.range(0, 15, knockout_prob=0.5) for i in range(_ACF_RANGES)})
    return space


ACF_LIKE_OPTIMUM = 0.96 * 0.975 * 0.97 * 0.985 * 0.95 * 0.98 * 0.94 * 0.95 * 0.96

ACF_LIKE = Problem(
    "acf52 (ACF-like, 9 of 52 matter, 3 pairs)",
    _acf_like_space(),
    _acf_like,
    ACF_LIKE_OPTIMUM * 1.01,  # within 1% of the optimum
)

HELD_OUT = [DECOY_2, DECOY_10, RIDGE, NOISY_KNOBS, ACF_LIKE]
