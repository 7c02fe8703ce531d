"""The search-quality bench's twentieth held-out set: issue 38's kinds and a failing knob, never tuned on.

held_out_19.py judged 375aa66 (under noise, a plateau is judged by how far
below the draws the best judged lies). This set was written after that
judgement was read and before any further change to the search, from issue
38's descriptions, with other shapes, sizes, constants and parameter names
than the tuning set's and the nineteen earlier held-out sets'. Budget: 640
evaluations (20 generations of 32) for every problem and engine; 100 seeds
for a claim.

* decoy3l: a decoy 3% deep on a ledged plateau (0.3% higher wherever the
  kernel choice takes the value the basin needs: the plateau points away
  from it), every measurement with 0.8% lognormal noise, the basin elsewhere;
* decoy7c: a decoy 7% deep on a plateau of concentric ripples (0.2% deep,
  rings of period 5 round a centre far from both the basin and the decoy),
  no noise, the basin elsewhere and a swizzle the basin needs;
* pridge20k: K tile times pipeline stages times blocks per SM (a choice of
  8-512 in powers of two, a range 1-20, a range 1-10) a product ridge best
  at 512 (5% a doubling off it), the shape on it 0.9% a doubling of the
  ratio K tile / stages from 16 and 0.6% a doubling of the blocks from 2, a
  raster choice; failures only far off the ridge (the product above 16,384),
  none next to the best;
* noisy20: knobs measured with 1.1% lognormal noise, 3,840 configurations
  (more than the budget), the optimum 5.3% better than the defaults, a
  split-phase flag that pays only with 4 or more items a thread and two
  reduction flags that each help alone and cost together, judged by the
  true time of the pick;
* acf42: an ACF-like space of 42 parameters: a flag costing unless a choice
  takes one value, a pair of flags, a range best low (at 5), a choice's
  fourth value, a flag helping only with a range at 12 or less, a flag alone;
  failures of a flag with a choice's value, of a flag of the pair with a
  range below 4, and a scattered 3%;
* cluster20: knobs where a thread-block cluster must divide the grid's row
  of CTAs (2304 rows over the row tile): the best cluster (4) fails with
  both row tiles next to the best one, the largest cluster fails with the
  best tile, and a multicast flag, paying only with a cluster, fails with
  clusters of 3 and 6 -- failures next to the best.

Their constants (optima, decoy points, which parameters matter) were chosen
once, by hand, and are not to be changed to suit a result. Only their sizes
were checked, by sampling each objective (no search ran on them before
their before run): a uniform draw (each knockout at its probability) is on
target with probability 0.19% (decoy3l, by the true score), 0.099%
(decoy7c), 0.018% (pridge20k; the product above 16,384 fails in 15%),
0.0055% (noisy20, by the true time), 0.0045% (acf42; 13% fail) and 0.0070%
(cluster20; 23% fail), 200,000 draws each; pridge20k, noisy20 and cluster20
were also counted whole: the optimum alone is on target in each. Sampling
changed three problems once, before any search ran: acf42 (choices of 5,
ranges 0-31, h13 needing t0 at 8 or less) was on target in 0.0005% of
draws, so its choices were cut to 4 values, its ranges to 0-23 and h13's
bound raised to 12; noisy20's unrolling flag (0.5%) and cluster20's
persistent flag (0.3%) put the optimum with them on target, so they were
made to cost 0.7% and 0.6%.
"""

from __future__ import annotations

import math
from typing import Any

from bench.search_quality.problems import Problem, _stable_fraction
from ciq_build import INVALID_SCORE
from ciq_build import space as ss

# -- a decoy 3% deep on a ledged plateau, measured with 0.8% noise ---------------------------------------------------

# 4 ranges of 24, basin within 2 of an interior optimum: (5/24)**4 = 0.19% of the space.
DECOY_3L_OPT, DECOY_3L_POINT = [17, 5, 20, 9], [4, 18, 7, 21]
_D3L_REACH = 6


def _decoy3l(p: dict[str, Any]) -> float:
    # The basin (every range within 2 of the optimum) scores at most 4 * 2 + 4 = 12 (8 with the fused kernel); the
    # decoy's slope (every range within 6 of its point) falls to 97; elsewhere a ledge: 0.3 higher with the fused
    # kernel, the value the basin needs, so the plateau leads away from it (hidden under the noise, but not always).
    ell = [p[f"l{i}"] for i in range(4)]
    off = [abs(v - o) for v, o in zip(ell, DECOY_3L_OPT, strict=True)]
    if max(off) <= 2:
        return float(sum(off) + 4 * (p["kernel"] != "fused"))
    distance = [abs(v - c) for v, c in zip(ell, DECOY_3L_POINT, strict=True)]
    if max(distance) <= _D3L_REACH:
        return 100.0 * (1 - 0.03 * (1 - sum(distance) / (_D3L_REACH * len(ell))))
    return 100.3 if p["kernel"] == "fused" else 100.0


DECOY_3L = Problem(
    "decoy3l (a decoy 3% deep on a ledged plateau, 0.8% noise)",
    {**{f"l{i}": ss.range(0, 23) for i in range(4)},
     "kernel": ss.choice(["split", "fused", "naive"])},
    _decoy3l,
    40.0,  # the basin found (true score): at most 12 in it, the decoy 97, the ledge 100-100.3
    noise=0.008,
)

# -- a decoy 7% deep on a plateau of concentric ripples --------------------------------------------------------------

# 5 ranges of 20, basin within 2 of the optimum: (5/20)**5 = 0.098% of the space, a quarter of it with the swizzle.
DECOY_7C_OPT, DECOY_7C_POINT, DECOY_7C_CENTRE = [3, 16, 14, 2, 7], [15, 4, 3, 13, 17], [9, 11, 8, 10, 12]
_D7C_REACH = 5


def _decoy7c(p: dict[str, Any]) -> float:
    # The basin (every range within 2 of the optimum) scores at most 5 * 2 + 3 = 13 (10 with a swizzle of 4); the
    # decoy's slope (every range within 5 of its point) falls to 93; elsewhere rings of 0.2 round the centre (period 5
    # in the Euclidean distance from it): the plateau's texture is the same in every direction.
    q = [p[f"q{i}"] for i in range(5)]
    off = [abs(v - o) for v, o in zip(q, DECOY_7C_OPT, strict=True)]
    if max(off) <= 2:
        return float(sum(off) + 3 * (p["swizzle"] != 4))
    distance = [abs(v - c) for v, c in zip(q, DECOY_7C_POINT, strict=True)]
    if max(distance) <= _D7C_REACH:
        return 100.0 * (1 - 0.07 * (1 - sum(distance) / (_D7C_REACH * len(q))))
    radius = math.dist(q, DECOY_7C_CENTRE)
    return 100.0 + 0.1 * (1 + math.cos(2 * math.pi * radius / 5))


DECOY_7C = Problem(
    "decoy7c (a decoy 7% deep on a plateau of concentric ripples)",
    {**{f"q{i}": ss.range(0, 19) for i in range(5)},
     "swizzle": ss.choice([1, 2, 4, 8])},
    _decoy7c,
    40.0,  # at most 13 in the basin, the decoy 93, the ripples 100-100.2
)

# -- a product ridge of K tile, pipeline stages and blocks per SM, nothing failing next to the best ------------------

_P20_RASTER = {"along_m": 1.0, "along_n": 0.993, "swizzle2": 1.003, "swizzle4": 0.999}


def _pridge20k(p: dict[str, Any]) -> Any:
    # K elements in flight per SM, ktile x stages x blocks (best 512): 5% a doubling off it; on the ridge 0.9% a doubling
    # of ktile / stages from 16 and 0.6% a doubling of the blocks from 2; the "along_n" raster is best. Only a product
    # above 16,384 (32 times the best) fails.
    ktile, stages, blocks = p["ktile"], p["stages"], p["blocks"]
    if ktile * stages * blocks > 16384:
        return INVALID_SCORE
    time = 1 + 0.05 * abs(math.log2(ktile * stages * blocks / 512))
    time *= 1 + 0.009 * abs(math.log2(ktile / stages / 16))
    time *= 1 + 0.006 * abs(math.log2(blocks / 2))
    return time * _P20_RASTER[p["raster"]]


PRIDGE_20K_SPACE: dict[str, ss.Param] = {
    "ktile": ss.choice([8, 16, 32, 64, 128, 256, 512]),
    "stages": ss.range(1, 20),
    "blocks": ss.range(1, 10),
    "raster": ss.choice(list(_P20_RASTER)),
}
PRIDGE_20K_BEST = {"ktile": 64, "stages": 4, "blocks": 2, "raster": "along_n"}
PRIDGE_20K_OPTIMUM = 0.993

PRIDGE_20K = Problem(
    "pridge20k (K tile x stages x blocks per SM a product ridge, nothing failing near the best, shape 0.9% a doubling)",
    PRIDGE_20K_SPACE,
    _pridge20k,
    PRIDGE_20K_OPTIMUM * 1.005,  # within 0.5% of the optimum
)

# -- knobs measured with 1.1% lognormal noise, more configurations than the budget -------------------------------

_N20_BLOCK = {64: 1.004, 128: 1.0, 256: 0.991, 512: 0.997, 1024: 1.007}  # absent: 1
_N20_ITEMS = {1: 1.0, 2: 0.995, 4: 0.990, 8: 0.997}  # absent: 1
_N20_CACHE = {"ca": 1.0, "cg": 0.993, "cs": 1.003}  # absent: 1


def noisy_knobs_20_time(p: dict[str, Any]) -> float:
    """The true time of a configuration (defaults 1.0): the split phase pays only with 4 or more items a thread,
    the warp-shuffle and shared-memory reductions each help alone and cost together, flushing denormals pays a
    little, turning unrolling off costs."""
    items = p.get("items")
    time = _N20_BLOCK.get(p.get("block"), 1.0) * _N20_ITEMS.get(items, 1.0) * _N20_CACHE.get(p.get("cache"), 1.0)
    if "split" in p:
        time *= 0.986 if items is not None and items >= 4 else 1.006
    reductions = ("shuffle" in p, "smem" in p)
    time *= {(False, False): 1.0, (True, False): 0.992, (False, True): 0.998, (True, True): 1.004}[reductions]
    time *= 0.994 if "ftz" in p else 1.0
    time *= 1.007 if "nounroll" in p else 1.0
    return time


_N20_SPACE: dict[str, ss.Param] = {"block": ss.choice(list(_N20_BLOCK), knockout_prob=0.5),
                                   "items": ss.choice(list(_N20_ITEMS), knockout_prob=0.5),
                                   "cache": ss.choice(list(_N20_CACHE), knockout_prob=0.5)}
_N20_SPACE |= {name: ss.literal(flag, knockout_prob=0.5) for name, flag in (("split", "-DSPLIT_PHASE"),
                                                                           ("shuffle", "-DWARP_SHUFFLE_REDUCE"),
                                                                           ("smem", "-DSMEM_REDUCE"),
                                                                           ("ftz", "-ftz=true"),
                                                                           ("nounroll", "-DNO_UNROLL"))}
NOISY_KNOBS_20_BEST: dict[str, Any] = {"block": 256, "items": 4, "cache": "cg", "split": "-DSPLIT_PHASE",
                                       "shuffle": "-DWARP_SHUFFLE_REDUCE", "ftz": "-ftz=true"}
NOISY_KNOBS_20_OPTIMUM = 0.991 * 0.990 * 0.993 * 0.986 * 0.992 * 0.994

NOISY_KNOBS_20 = Problem(
    "noisy20 (knobs, 1.1% noise, 3,840 configurations, a flag paying only with 4 or more items, two that clash)",
    _N20_SPACE,
    noisy_knobs_20_time,
    NOISY_KNOBS_20_OPTIMUM * 1.005,  # the pick's true time within 0.5% of the optimum
    noise=0.011,
)

# -- a 42-parameter ACF-like space: a flag needing a choice's value, a pair, a range best low, a flag needing a range -


def _acf42(p: dict[str, Any]) -> Any:
    # 24 flags, 8 choices of 4 and 10 ranges 0-23; 9 matter: h4 costs 0.9% unless m1 = "q" (then 1.6% faster), a pair
    # (h9 with h17: 1.4%; either alone costs 0.4%), t2 best at 5 (1.3% there, 0.02% a step squared away), m3 = "s"
    # (1.1%), h13 helps 1.1% only with t0 at 12 or less (else, or without t0, costs 0.5%), h20 alone (1.2%). Failures:
    # h4 with m0 = "p", h9 with t7 below 4, and a scattered 3%.
    if "h4" in p and p.get("m0") == "p":
        return INVALID_SCORE
    if "h9" in p and p.get("t7", 23) < 4:
        return INVALID_SCORE
    if _stable_fraction(p) < 0.03:
        return INVALID_SCORE
    time = 1.0
    if "h4" in p:
        time *= 0.984 if p.get("m1") == "q" else 1.009
    pair = ("h9" in p) + ("h17" in p)
    time *= 0.986 if pair == 2 else 1 + 0.004 * pair
    t2 = p.get("t2")
    if t2 is not None:
        time *= 0.987 + 0.0002 * (t2 - 5) ** 2
    time *= 0.989 if p.get("m3") == "s" else 1.0
    if "h13" in p:
        time *= 0.989 if p.get("t0", 23) <= 12 else 1.005
    time *= 0.988 if "h20" in p else 1.0
    return time


def _acf42_space() -> dict[str, ss.Param]:
    space: dict[str, ss.Param] = {f"h{i}": ss.literal(f"--acf20a-{i}", knockout_prob=0.5) for i in range(24)}
    space.update({f"m{i}": ss.choice(["p", "q", "r", "s"], knockout_prob=0.5) for i in range(8)})
    space.update({f"t{i}": ss.range(0, 23, knockout_prob=0.5) for i in range(10)})
    return space


ACF42_BEST: dict[str, Any] = {"h4": "--acf20a-4", "m1": "q", "h9": "--acf20a-9", "h17": "--acf20a-17", "t2": 5,
                              "m3": "s", "h13": "--acf20a-13", "t0": 12, "h20": "--acf20a-20"}
ACF42_OPTIMUM = 0.984 * 0.986 * 0.987 * 0.989 * 0.989 * 0.988

ACF_42 = Problem(
    "acf42 (ACF-like, 9 of 42 matter, a flag needing a choice's value, a pair, a range best low, a flag needing a "
    "range low)",
    _acf42_space(),
    _acf42,
    ACF42_OPTIMUM * 1.01,  # within 1% of the optimum
)

# -- knobs where a cluster must divide the grid's row of CTAs, failures next to the best -----------------------------

CLUSTER_20_ROWS = 2304  # the grid has 2304 / row tile CTAs along the rows: 36, 24, 18, 12, 9
_C20_TILE = {64: 1.012, 96: 1.006, 128: 1.0, 192: 0.990, 256: 0.994}  # absent: 128
_C20_CLUSTER = {1: 1.0, 2: 0.994, 3: 0.996, 4: 0.988, 6: 0.992, 8: 0.991}  # absent: 1
_C20_WARPS = {4: 1.0, 8: 0.993, 16: 1.006}  # absent: 4


def _cluster20(p: dict[str, Any]) -> Any:
    # A cluster that does not divide the row of CTAs fails to launch (cluster 4 with tiles of 128 and 256 round the
    # best 192, cluster 8 with 192); TMA multicast needs a power-of-two cluster (3 and 6 fail) and pays only with a
    # cluster of 2 or more; stages best at 4 (0.6% a stage away); the persistent flag costs 0.6%.
    tile, cluster = p.get("tile", 128), p.get("cluster", 1)
    if (CLUSTER_20_ROWS // tile) % cluster:
        return INVALID_SCORE
    if "multicast" in p and cluster in (3, 6):
        return INVALID_SCORE
    time = _C20_TILE[tile] * _C20_CLUSTER[cluster] * _C20_WARPS.get(p.get("warps"), 1.0)
    if "multicast" in p:
        time *= 0.986 if cluster >= 2 else 1.004
    time *= 1 + 0.006 * abs(p["stages"] - 4)
    return time * (1.006 if "persistent" in p else 1.0)


CLUSTER_20_SPACE: dict[str, ss.Param] = {
    "tile": ss.choice(list(_C20_TILE), knockout_prob=0.5),
    "cluster": ss.choice(list(_C20_CLUSTER), knockout_prob=0.5),
    "warps": ss.choice(list(_C20_WARPS), knockout_prob=0.5),
    "stages": ss.range(2, 7),
    "multicast": ss.literal("-DTMA_MULTICAST", knockout_prob=0.5),
    "persistent": ss.literal("-DPERSISTENT", knockout_prob=0.5),
}
CLUSTER_20_BEST: dict[str, Any] = {"tile": 192, "cluster": 4, "warps": 8, "stages": 4, "multicast": "-DTMA_MULTICAST"}
CLUSTER_20_OPTIMUM = 0.990 * 0.988 * 0.993 * 0.986

CLUSTER_20 = Problem(
    "cluster20 (a cluster must divide the row of CTAs: the best cluster fails with both tiles next to the best, "
    "a multicast flag with clusters of 3 and 6)",
    CLUSTER_20_SPACE,
    _cluster20,
    CLUSTER_20_OPTIMUM * 1.005,  # within 0.5% of the optimum
)

HELD_OUT_20 = [DECOY_3L, DECOY_7C, PRIDGE_20K, NOISY_KNOBS_20, ACF_42, CLUSTER_20]
