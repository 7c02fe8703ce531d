"""The search-quality bench's eleventh held-out set: every kind of issue 38's goals, never tuned on.

held_out_10.py judged the walks' origins ordered by interaction and is read
now. Issue 38's goals still unmet after it: the knob ridge reached in >= 95%
of the runs (the local arm gets one or two slots of a batch and its walks
start late), the ACF-like spaces where compileiq is ahead, and the portfolio
at least as good as the best single strategy everywhere. This set holds one
or two problems of each kind the issue names, written from its descriptions
before the next change to the search, with other shapes, sizes, constants and
parameter names than the tuning set's and the ten earlier held-out sets'.
Budget: 640 evaluations (20 generations of 32) for every problem and engine;
100 seeds for a claim.

* decoy3c: a decoy 3% deep on a plateau chequered by 0.3% (half its points a
  little worse, every neighbour of a good point a bad one);
* decoy8v: a decoy 8% deep on a plateau that funnels toward it (0.6% from the
  far side down to the decoy's edge): every slope leads to the decoy;
* pridge11: a product ridge -- warps x items x chunks is the work a block does
  (best 2**9), the shape on it matters a little (1.2% a step) -- with failures
  (registers, shared memory) two steps from the best, never next to it;
* bounds11: pipeline stages and a register cap (an ordinal range, 32 to 255):
  two stages alone are 3% slower, 5% faster only where the cap is at 72-85
  registers (six blocks of 128 threads an SM); three stages or more need more
  registers, so the cap is neutral from what they need up and spills below;
* splitk11: a split-K factor (an ordered choice of six) and the K tile (64
  values, 16 to 1024): a split of 5 alone is 4.2% slower, 5.3% faster only at
  tiles of 864-896; the other splits ignore the tile (neutral from 192 up, a
  little slower below), and splits of 2 and 4 are near-best decoys;
* noisy11: a knob space measured with 1.5% lognormal noise, its optimum 3.0%
  better than the defaults, one interaction, judged by the true time of the
  pick;
* acf47 and acf58s: ACF-like spaces of 47 and 58 parameters, mostly flags:
  a triple or a quadruple of flags that helps only whole, a flag that costs
  unless another is set, ranges whose best value a choice or flag sets or whose
  sum is what matters; failures of pairs and a triple and a scattered 2-2.5%.

Short names (run.py --problems) are unique across the sets: decoy8v and acf58s were decoy8f and acf58 when
the before run was recorded (the names of held-out-4's and held-out-2's problems; labels only, renamed before any
other run).

Their constants (optima, decoy points, which parameters matter) were chosen
once, by hand, and are not to be changed to suit a result. Before any search
ran on them, only their sizes were checked, by sampling each objective (no
search): a uniform draw (each knockout at its probability) is on target with
probability 0.13% (decoy3c), 0.17% (decoy8v), 0.08% (pridge11), 0.03%
(bounds11), 0.07% (splitk11), 0.2% (noisy11, by the true time), 0.01% (acf47)
and 0.002% (acf58s), 400,000 draws each. Checking each optimum against its
description before any run changed four constants: the flags of pridge11,
bounds11 and splitk11's optima helped less than the 1% target (0.7-0.9%),
so the optimum did not need them (now 1.1-1.2%), and splitk11's stages cost
0.6% a step instead of 0.4% (a uniform draw hit it 0.18%: random search's).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from bench.search_quality.held_out_2 import _decoy_plateau, _decoy_space
from bench.search_quality.held_out_3 import _shaped
from bench.search_quality.problems import Problem, _stable_fraction
from ciq_build import INVALID_SCORE
from ciq_build import space as ss

# -- decoys 3% and 8% deep on plateaus of new textures --------------------------------------------------------

# 6 ranges of 15, basin within 2 of an interior optimum: (5/15)**6 = 0.14% of the space; a chequered plateau.
DECOY_3C_OPT, DECOY_3C_POINT = [11, 4, 8, 2, 12, 6], [2, 13, 1, 12, 3, 14]
# 7 ranges of 12, basin within 2: (5/12)**7 = 0.22%; the plateau funnels toward the decoy.
DECOY_8F_OPT, DECOY_8F_POINT = [2, 9, 5, 10, 3, 7, 9], [10, 1, 11, 2, 10, 0, 1]


def _chequer(r: Sequence[int]) -> float:
    # 0.3 (%) on every point whose coordinates sum to an odd number: each good point's neighbours are all worse
    return 0.3 * (sum(r) % 2)


def _funnel(r: Sequence[int]) -> float:
    # 0.6 (%) at the far side, falling linearly with the distance to the decoy's point: the plateau leads there
    far = sum(max(d, 11 - d) for d in DECOY_8F_POINT)
    return 0.6 * sum(abs(v - d) for v, d in zip(r, DECOY_8F_POINT, strict=True)) / far


DECOY_3C = Problem(
    "decoy3c (3%-deep decoy, a chequered plateau)",
    _decoy_space(6, 15, ["a", "b", "c", "d"]),
    _shaped(_decoy_plateau(DECOY_3C_OPT, 2, DECOY_3C_POINT, 5, 0.03, "b"), _chequer),
    40.0,  # the basin found: at most 6 * 2 + 4 = 16 in it, the decoy 97, the plateau 100-100.3
)

DECOY_8F = Problem(
    "decoy8v (8%-deep decoy, the plateau funnelling toward it)",
    _decoy_space(7, 12, ["a", "b", "c"]),
    _shaped(_decoy_plateau(DECOY_8F_OPT, 2, DECOY_8F_POINT, 3, 0.08, "c"), _funnel),
    40.0,  # at most 7 * 2 + 4 = 18 in the basin, the decoy 92, the plateau 100-100.6
)

# -- a product ridge of three block dimensions, its failures two steps from the best -------------------------

_P11_VECTOR = {1: 1.015, 2: 1.0, 4: 1.006}
_P11_SCHED = {"static": 1.0, "dynamic": 1.004, "guided": 1.009}


def _pridge11(p: dict[str, Any]) -> Any:
    # The work a block does is warps x items x chunks (best 2**9): 3.5% a doubling or halving off it. On the
    # ridge the shape matters, 1.2% a step (of a doubling) from 4 warps, 16 items, 8 chunks. Fails: warps x items
    # from 2**9 up (registers), items x chunks from 2**10 up (shared memory): neither next to the best (2**6,
    # 2**7). Mild: vector best 2, schedule best static, the fast-math flag 1.2% faster; the alias flag neutral.
    lw, li, lc = (int(p[name]).bit_length() - 1 for name in ("warps", "items", "chunks"))
    if lw + li >= 9 or li + lc >= 10:
        return INVALID_SCORE
    time = 1 + 0.035 * abs(lw + li + lc - 9)
    time *= 1 + 0.012 * (abs(lw - 2) + abs(li - 4) + abs(lc - 3))
    time *= _P11_VECTOR[p["vector"]] * _P11_SCHED[p.get("sched", "static")]
    return time * (0.988 if "fast_math" in p else 1.0)


PRIDGE_11_SPACE: dict[str, ss.Param] = {
    "warps": ss.choice([1, 2, 4, 8, 16, 32]),
    "items": ss.choice([1, 2, 4, 8, 16, 32, 64, 128]),
    "chunks": ss.choice([1, 2, 4, 8, 16, 32, 64]),
    "vector": ss.choice([1, 2, 4]),
    "sched": ss.choice(["static", "dynamic", "guided"], knockout_prob=0.5),
    "fast_math": ss.literal("-DFAST_MATH", knockout_prob=0.5),
    "alias": ss.literal("-DNO_ALIAS", knockout_prob=0.5),
}
PRIDGE_11_BEST = {"warps": 4, "items": 16, "chunks": 8, "vector": 2, "fast_math": "-DFAST_MATH"}
PRIDGE_11_OPTIMUM = 0.988

PRIDGE_11 = Problem(
    "pridge11 (warps x items x chunks a product ridge, the shape on it 1.2% a step, failures two steps off)",
    PRIDGE_11_SPACE,
    _pridge11,
    PRIDGE_11_OPTIMUM * 1.01,  # within 1% of the optimum: the exact shape on the ridge
)

# -- pipeline stages and a register cap: the cap far down with one stage fewer -------------------------------

BOUNDS_11_NEED = {2: 72, 3: 96, 4: 120, 5: 150, 6: 180}  # the registers a thread needs at each depth (absent: 3)
_B11_GREEDY = 168  # what the compiler takes when it needs less and nothing caps it
_B11_CODE = {2: 1.03, 3: 1.0, 4: 0.996, 5: 1.006, 6: 1.02}  # the pipeline's own speed, without spills
_B11_THREADS = 128
_B11_SWIZZLE = {1: 1.01, 2: 1.0, 4: 1.003, 8: 1.012}


def bounds_11_blocks(p: dict[str, Any]) -> int:
    """The blocks of 128 threads an SM keeps: the registers a thread holds decide (at most 16)."""
    need = BOUNDS_11_NEED[p.get("stages", 3)]
    held = min(max(_B11_GREEDY, need), p.get("maxrreg", 255))
    return min(16, 65536 // (max(held, need) * _B11_THREADS))


def _bounds11(p: dict[str, Any]) -> float:
    # A cap below what the stages need spills (1.2x slower, more the further below, to 25x); six blocks an SM or
    # more (a thread holding at most 85 registers) are 5% faster: only two stages reach them unspilled, with the
    # cap at 72-85. Mild: tile_k best 64 (0.25% a step of 16), swizzle best 2, the async copy 1.1% faster; the
    # cache hint and the ftz flag change nothing.
    stages = p.get("stages", 3)
    cap = p.get("maxrreg", 255)
    short = max(0, BOUNDS_11_NEED[stages] - cap)
    time = _B11_CODE[stages] * (1.0 if short == 0 else min(25.0, 1.2 * math.exp(0.04 * short)))
    time *= 0.95 if bounds_11_blocks(p) >= 6 and short == 0 else 1.0
    time *= _B11_SWIZZLE[p["swizzle"]] * (1 + 0.0025 * abs(p["tile_k"] - 64) / 16)
    return time * (0.989 if "async" in p else 1.0)


BOUNDS_11_SPACE: dict[str, ss.Param] = {
    "stages": ss.choice([2, 3, 4, 5, 6], knockout_prob=0.5),
    "maxrreg": ss.range(32, 255, knockout_prob=0.5),
    "tile_k": ss.range(16, 256, 16),
    "swizzle": ss.choice([1, 2, 4, 8]),
    "async": ss.literal("-DASYNC", knockout_prob=0.5),
    "cache_hint": ss.choice(["ca", "cg"], knockout_prob=0.5),
    "ftz": ss.literal("-ftz=true", knockout_prob=0.5),
}
BOUNDS_11_BEST = {"stages": 2, "maxrreg": 80, "tile_k": 64, "swizzle": 2, "async": "-DASYNC"}
BOUNDS_11_OPTIMUM = 1.03 * 0.95 * 0.989

BOUNDS_11 = Problem(
    "bounds11 (two stages, 3% slower alone, with the register cap far down at 72-85, together)",
    BOUNDS_11_SPACE,
    _bounds11,
    BOUNDS_11_OPTIMUM * 1.01,  # within 1% of the optimum: only with the stages and the cap moved together
)

# -- a split-K factor and the K tile: the tile far up along a neutral plateau --------------------------------

_S11_SPLIT = {1: 1.0, 2: 1.006, 4: 1.009, 5: 1.042, 8: 1.03, 16: 1.06}  # each split's speed, away from the window
SPLITK_11_TILES = (864, 880, 896)  # the K tiles at which a split of 5 divides K evenly: 5.3% faster
_S11_EPILOGUE = {"fused": 1.0, "separate": 1.01, "atomic": 1.004}


def _splitk11(p: dict[str, Any]) -> float:
    # A split of 5 is 0.947 at K tiles 864-896, 1.042 elsewhere; the other splits ignore the tile, which is neutral
    # from 192 up and 0.3% slower a step (of 16) below. Mild: stages best 4 (0.6% a step), epilogue best fused,
    # the L2 prefetch 1.2% faster; the rasterisation and the unit-stride flag change nothing.
    split, tile = p["split"], p["k_tile"]
    if split == 5 and tile in SPLITK_11_TILES:
        time = 0.947
    else:
        time = _S11_SPLIT[split] * (1 + 0.003 * max(0, (192 - tile) // 16))
    time *= (1 + 0.006 * abs(p["stages"] - 4)) * _S11_EPILOGUE[p["epilogue"]]
    return time * (0.988 if "l2_prefetch" in p else 1.0)


SPLITK_11_SPACE: dict[str, ss.Param] = {
    "split": ss.choice([1, 2, 4, 5, 8, 16]),
    "k_tile": ss.range(16, 1024, 16),
    "stages": ss.range(1, 7),
    "epilogue": ss.choice(["fused", "separate", "atomic"]),
    "l2_prefetch": ss.literal("-DL2_PREFETCH", knockout_prob=0.5),
    "raster": ss.choice(["row", "col"], knockout_prob=0.5),
    "unit_stride": ss.literal("-DUNIT_STRIDE", knockout_prob=0.5),
}
SPLITK_11_BEST = {"split": 5, "k_tile": 880, "stages": 4, "epilogue": "fused", "l2_prefetch": "-DL2_PREFETCH"}
SPLITK_11_OPTIMUM = 0.947 * 0.988

SPLITK_11 = Problem(
    "splitk11 (split-K by 5, 4.2% slower alone, with the K tile far up at 864-896, together)",
    SPLITK_11_SPACE,
    _splitk11,
    SPLITK_11_OPTIMUM * 1.01,  # within 1% of the optimum: the split and the tile moved together
)

# -- a knob space measured with 1.5% lognormal noise ---------------------------------------------------------

_N11_THREADS = {64: 1.01, 128: 1.0, 256: 0.993, 512: 0.997, 1024: 1.012}  # absent: 128
_N11_UNROLL = {1: 1.008, 2: 1.0, 4: 0.992, 8: 0.989}  # absent: 2
_N11_CACHE = {"ca": 1.0, "cg": 0.996, "cs": 1.006}  # absent: ca


def noisy_knobs_11_time(p: dict[str, Any]) -> float:
    """The true time of a configuration (defaults 1.0, the optimum 0.970): effects of 0.2-1.2%, one interaction."""
    threads, unroll = p.get("threads", 128), p.get("unroll", 2)
    time = _N11_THREADS[threads] * _N11_UNROLL[unroll] * _N11_CACHE[p.get("cache", "ca")]
    if unroll == 8 and threads >= 512:  # the deepest unroll with the biggest blocks runs out of registers
        time *= 1.025
    time *= 0.995 if "restrict" in p else 1.0
    time *= 0.997 if "fast_div" in p else 1.0
    time *= 1.002 if "lineinfo" in p else 1.0
    return time


_N11_SPACE: dict[str, ss.Param] = {name: ss.choice(values, knockout_prob=0.5) for name, values in
                                   (("threads", list(_N11_THREADS)), ("unroll", list(_N11_UNROLL)),
                                    ("cache", list(_N11_CACHE)))}
_N11_SPACE |= {name: ss.literal(flag, knockout_prob=0.5) for name, flag in (("restrict", "-DRESTRICT"),
                                                                           ("fast_div", "-DFAST_DIV"),
                                                                           ("lineinfo", "-lineinfo"))}
NOISY_KNOBS_11_OPTIMUM = 0.993 * 0.989 * 0.996 * 0.995 * 0.997  # threads 256, unroll 8, cg, restrict, fast_div

NOISY_KNOBS_11 = Problem(
    "noisy11 (knobs, 1.5% noise, one interaction)",
    _N11_SPACE,
    noisy_knobs_11_time,
    NOISY_KNOBS_11_OPTIMUM * 1.005,  # the pick's true time within 0.5% of the optimum
    noise=0.015,
)

# -- a 47-parameter ACF-like space with a triple -------------------------------------------------------------


def _acf47(p: dict[str, Any]) -> Any:
    # 32 flags, 7 choices of 3 and 8 ranges 0-13; 9 matter: a triple that helps only whole (f4, f19, f30: each one
    # or two of it costs 0.4% a flag), a flag costing 1.2% unless another is set (f11 needs f25, which helps a
    # little alone), a range whose best value is 4 with g2 = 1 and 10 otherwise (k3), a range with its best value
    # at 8 (k6), a flag alone (f1). Failures: f19 with g0 = 2, f11 with k6 above 11, and a scattered 2%.
    if "f19" in p and p.get("g0") == 2:
        return INVALID_SCORE
    if "f11" in p and p.get("k6", 0) > 11:
        return INVALID_SCORE
    if _stable_fraction(p) < 0.02:
        return INVALID_SCORE
    triple = ("f4" in p) + ("f19" in p) + ("f30" in p)
    time = 0.955 if triple == 3 else 1 + 0.004 * triple
    time *= 0.996 if "f25" in p else 1.0
    if "f11" in p:
        time *= 0.985 if "f25" in p else 1.012
    k3 = p.get("k3")
    if k3 is not None:
        time *= 0.968 + 0.0007 * (k3 - 4) ** 2 if p.get("g2") == 1 else 0.984 + 0.0007 * (k3 - 10) ** 2
    k6 = p.get("k6")
    time *= 1.0 if k6 is None else 0.985 + 0.0005 * (k6 - 8) ** 2
    return time * (0.99 if "f1" in p else 1.0)


def _acf47_space() -> dict[str, ss.Param]:
    space: dict[str, ss.Param] = {f"f{i}": ss.literal(f"--acf11a-{i}", knockout_prob=0.5) for i in range(32)}
    space.update({f"g{i}": ss.choice([0, 1, 2], knockout_prob=0.5) for i in range(7)})
    space.update({f"k{i}": ss.range(0, 13, knockout_prob=0.5) for i in range(8)})
    return space


ACF47_BEST: dict[str, Any] = {"f4": "--acf11a-4", "f19": "--acf11a-19", "f30": "--acf11a-30", "f11": "--acf11a-11",
                              "f25": "--acf11a-25", "g2": 1, "k3": 4, "k6": 8, "f1": "--acf11a-1"}
ACF47_OPTIMUM = 0.955 * 0.996 * 0.985 * 0.968 * 0.985 * 0.99

ACF_47 = Problem(
    "acf47 (ACF-like, 10 of 47 matter, a triple whole or costing, a flag needing another)",
    _acf47_space(),
    _acf47,
    ACF47_OPTIMUM * 1.01,  # within 1% of the optimum
)

# -- a 58-parameter ACF-like space with a quadruple and a sum ridge ------------------------------------------


def _acf58(p: dict[str, Any]) -> Any:
    # 40 flags, 10 choices of 4 and 8 ranges 0-11; 11 matter: a quadruple that helps only whole (f9, f21, f33,
    # f38: each one to three of it costs 0.25% a flag), a flag costing 1.5% unless another is set (f14 needs f2,
    # which helps a little alone), two ranges whose sum should be 12 (k1, k5: a ridge, neutral unless both are
    # set), a choice's value (g7 = 2), a range whose best value is 2 with f20 and 9 without it (k3; f20 neutral
    # alone). Failures: f9 with g3 = 0, f2 with f14 and f27 (any two work), and a scattered 2.5%.
    if "f9" in p and p.get("g3") == 0:
        return INVALID_SCORE
    if "f2" in p and "f14" in p and "f27" in p:
        return INVALID_SCORE
    if _stable_fraction(p) < 0.025:
        return INVALID_SCORE
    quad = ("f9" in p) + ("f21" in p) + ("f33" in p) + ("f38" in p)
    time = 0.96 if quad == 4 else 1 + 0.0025 * quad
    time *= 0.997 if "f2" in p else 1.0
    if "f14" in p:
        time *= 0.988 if "f2" in p else 1.015
    if "k1" in p and "k5" in p:
        time *= 0.965 + 0.002 * abs(p["k1"] + p["k5"] - 12)
    time *= 0.985 if p.get("g7") == 2 else 1.0
    k3 = p.get("k3")
    if k3 is not None:
        time *= 0.975 + 0.0006 * (k3 - 2) ** 2 if "f20" in p else 0.988 + 0.0006 * (k3 - 9) ** 2
    return time


def _acf58_space() -> dict[str, ss.Param]:
    space: dict[str, ss.Param] = {f"f{i}": ss.literal(f"--acf11b-{i}", knockout_prob=0.5) for i in range(40)}
    space.update({f"g{i}": ss.choice([0, 1, 2, 3], knockout_prob=0.5) for i in range(10)})
    space.update({f"k{i}": ss.range(0, 11, knockout_prob=0.5) for i in range(8)})
    return space


ACF58_BEST: dict[str, Any] = {"f9": "--acf11b-9", "f21": "--acf11b-21", "f33": "--acf11b-33", "f38": "--acf11b-38",
                              "f2": "--acf11b-2", "f14": "--acf11b-14", "k1": 6, "k5": 6, "g7": 2,
                              "f20": "--acf11b-20", "k3": 2}
ACF58_OPTIMUM = 0.96 * 0.997 * 0.988 * 0.965 * 0.985 * 0.975

ACF_58 = Problem(
    "acf58s (ACF-like, 11 of 58 matter, a quadruple, a flag needing another, a sum ridge, a failing triple)",
    _acf58_space(),
    _acf58,
    ACF58_OPTIMUM * 1.01,  # within 1% of the optimum
)

HELD_OUT_11 = [DECOY_3C, DECOY_8F, PRIDGE_11, BOUNDS_11, SPLITK_11, NOISY_KNOBS_11, ACF_47, ACF_58]
