"""The search-quality bench's seventh held-out set: problems for the claim after held_out_6.py, never tuned on.

held_out_2.py to held_out_5.py were read while the portfolio was changed and
held_out_6.py judges the change made after them; the portfolio still reached
the ACF-like spaces' targets less often than compileiq (held-out-4 and -5),
and on a real HGEMM's knobs neither it nor the GA made the pair move a kernel
writer made (a register cap at the occupancy step with ptxas -O lowered one
notch, docs/RESULTS.md section 1). The change that answers those is judged
here, on problems written before it from the issue's descriptions and those
findings, with other shapes, sizes and constants than the tuning set's and
the six earlier held-out sets'. Budget: 640 evaluations (20 generations of
32) for every problem and engine; 100 seeds for a claim.

* three ACF-like spaces of 41, 57 and 67 parameters, mostly flags with a few
  small choices and ranges, each with interactions of several kinds: a pair
  of flags that helps only together, a flag that hurts unless another is set,
  a triple, a range whose best value depends on a flag; and failing
  combinations;
* an HGEMM's knobs: a register cap whose values below what the kernel needs
  spill (1.2-40x slower), but where the cap that lets two blocks share an SM
  is met without spilling once ptxas -O is lowered one notch, and then ~4.5%
  faster (the finding of docs/RESULTS.md section 1); two neutral cache
  modifiers and a neutral flag; two tile parameters (stages, which also decide
  whether two blocks fit in shared memory, and a block stride);
* decoys 4% and 6% deep on plateaus of textures not in sets 1-6: a shallow
  dimple (0.4%) around a third point far from the basin and the decoy, and
  sparse pits (2% of the plateau 0.5% below the rest, isolated);
* a knob space measured with 1.0% lognormal noise, one interaction, judged by
  the true value of the pick.

Their constants (optima, decoy points, which parameters matter) were chosen
once, by hand, and are not to be changed to suit a result.
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

# -- a 41-parameter ACF-like space: 8 parameters matter -----------------------------------------------------


def _acf41(p: dict[str, Any]) -> Any:
    # 32 flags, 5 choices of 3 and 4 ranges; 8 matter: a pair of flags that helps only together (either alone
    # costs 0.6%), a flag that costs 1.5% unless another is set (which helps a little alone), a range whose best
    # value is 3 with a flag and 12 without it, a choice alone. Failures: a flag of the pair with one value of a
    # choice, and a scattered 2% "compiler bug".
    if "f23" in p and p.get("g0") == 2:
        return INVALID_SCORE
    if _stable_fraction(p) < 0.02:
        return INVALID_SCORE
    time = {0: 1.0, 1: 1.006, 2: 0.965}[("f6" in p) + ("f23" in p)]
    time *= 0.99 if "f2" in p else 1.0
    if "f14" in p:
        time *= 0.985 if "f2" in p else 1.015
    k1 = p.get("k1")
    if k1 is not None:
        time *= 0.96 + 0.0006 * (k1 - 3) ** 2 if "f29" in p else 0.985 + 0.0006 * (k1 - 12) ** 2
    return time * (0.98 if p.get("g3") == 1 else 1.0)


def _acf41_space() -> dict[str, ss.Param]:
    space: dict[str, ss.Param] = {f"f{i}": ss.literal(f"--acf7a-{i}", knockout_prob=0.5) for i in range(32)}
    space.update({f"g{i}": ss.choice([0, 1, 2], knockout_prob=0.5) for i in range(5)})
    space.update({f"k{i}": ss.range(0, 15, knockout_prob=0.5) for i in range(4)})
    return space


ACF41_BEST: dict[str, Any] = {"f6": "--acf7a-6", "f23": "--acf7a-23", "f2": "--acf7a-2", "f14": "--acf7a-14",
                              "f29": "--acf7a-29", "k1": 3, "g3": 1}
ACF41_OPTIMUM = 0.965 * 0.99 * 0.985 * 0.96 * 0.98

ACF_41 = Problem(
    "acf41 (ACF-like, 8 of 41 matter, a pair, a flag needing another, a range set by a flag)",
    _acf41_space(),
    _acf41,
    ACF41_OPTIMUM * 1.01,  # within 1% of the optimum
)

# -- a 57-parameter ACF-like space: 10 parameters matter ----------------------------------------------------


def _acf57(p: dict[str, Any]) -> Any:
    # 42 flags, 9 choices of 4 and 6 ranges; 10 matter: a triple that helps only all together (one or two of it
    # cost 0.4% each), a pair that helps only together (either alone costs 0.5%), a flag that costs 2% unless
    # another (neutral alone) is set, a range whose best value is 8 with a flag (neutral itself) and 2 without it.
    # Failures: a flag beside the triple with one of it, a flag of the pair with a range at 0, and a scattered 2.5%.
    if "f19" in p and "f40" in p:
        return INVALID_SCORE
    if "f4" in p and p.get("k5") == 0:
        return INVALID_SCORE
    if _stable_fraction(p) < 0.025:
        return INVALID_SCORE
    triple = ("f8" in p) + ("f19" in p) + ("f37" in p)
    time = 0.955 if triple == 3 else 1 + 0.004 * triple
    time *= {0: 1.0, 1: 1.005, 2: 0.97}[("f4" in p) + ("f30" in p)]
    if "f12" in p:
        time *= 0.97 if "f26" in p else 1.02
    k2 = p.get("k2")
    if k2 is not None:
        time *= 0.97 + 0.0008 * (k2 - 8) ** 2 if "f33" in p else 0.99 + 0.0008 * (k2 - 2) ** 2
    return time


def _acf57_space() -> dict[str, ss.Param]:
    space: dict[str, ss.Param] = {f"f{i}": ss.literal(f"--acf7b-{i}", knockout_prob=0.5) for i in range(42)}
    space.update({f"g{i}": ss.choice([0, 1, 2, 3], knockout_prob=0.5) for i in range(9)})
    space.update({f"k{i}": ss.range(0, 9, knockout_prob=0.5) for i in range(6)})
    return space


ACF57_BEST: dict[str, Any] = {"f8": "--acf7b-8", "f19": "--acf7b-19", "f37": "--acf7b-37", "f4": "--acf7b-4",
                              "f30": "--acf7b-30", "f12": "--acf7b-12", "f26": "--acf7b-26", "f33": "--acf7b-33",
                              "k2": 8}
ACF57_OPTIMUM = 0.955 * 0.97 * 0.97 * 0.97

ACF_57 = Problem(
    "acf57 (ACF-like, 10 of 57 matter, a triple, a pair, flags needing others)",
    _acf57_space(),
    _acf57,
    ACF57_OPTIMUM * 1.01,  # within 1% of the optimum
)

# -- a 67-parameter ACF-like space: 11 parameters matter ----------------------------------------------------


def _acf67(p: dict[str, Any]) -> Any:
    # 52 flags, 9 choices of 3 and 6 ranges; 11 matter: a pair that helps only together (either alone costs 0.7%),
    # a flag that costs 1.2% unless another is set (which costs 0.3% alone), a triple whose flags each help a
    # little and all three much more, a range whose best value is 11 with a flag and 4 without it, a choice alone.
    # Failures: a flag of the triple with one value of a choice, two flags together (one of them the best's), and
    # a scattered 3%.
    if "f21" in p and p.get("g2") == 0:
        return INVALID_SCORE
    if "f9" in p and "f44" in p:
        return INVALID_SCORE
    if _stable_fraction(p) < 0.03:
        return INVALID_SCORE
    time = {0: 1.0, 1: 1.007, 2: 0.965}[("f15" in p) + ("f38" in p)]
    time *= 1.003 if "f47" in p else 1.0
    if "f9" in p:
        time *= 0.97 if "f47" in p else 1.012
    time *= {0: 1.0, 1: 0.995, 2: 0.99, 3: 0.95}[("f5" in p) + ("f21" in p) + ("f50" in p)]
    k3 = p.get("k3")
    if k3 is not None:
        time *= 0.965 + 0.0005 * (k3 - 11) ** 2 if "f30" in p else 0.985 + 0.0005 * (k3 - 4) ** 2
    return time * (0.985 if p.get("g6") == 2 else 1.0)


def _acf67_space() -> dict[str, ss.Param]:
    space: dict[str, ss.Param] = {f"f{i}": ss.literal(f"--acf7c-{i}", knockout_prob=0.5) for i in range(52)}
    space.update({f"g{i}": ss.choice([0, 1, 2], knockout_prob=0.5) for i in range(9)})
    space.update({f"k{i}": ss.range(0, 13, knockout_prob=0.5) for i in range(6)})
    return space


ACF67_BEST: dict[str, Any] = {"f15": "--acf7c-15", "f38": "--acf7c-38", "f47": "--acf7c-47", "f9": "--acf7c-9",
                              "f5": "--acf7c-5", "f21": "--acf7c-21", "f50": "--acf7c-50", "f30": "--acf7c-30",
                              "k3": 11, "g6": 2}
ACF67_OPTIMUM = 0.965 * 1.003 * 0.97 * 0.95 * 0.965 * 0.985

ACF_67 = Problem(
    "acf67 (ACF-like, 11 of 67 matter, a pair, a triple, a flag needing another)",
    _acf67_space(),
    _acf67,
    ACF67_OPTIMUM * 1.01,  # within 1% of the optimum
)

# -- an HGEMM's knobs: a register cap at the occupancy step with ptxas -O lowered one notch ------------------

# The registers a thread needs without spilling at each ptxas -O level (absent: 3); uncapped, the kernel holds
# max(168, that) whatever the level.
HGEMM_7_FLOOR = {3: 168, 2: 128, 1: 144, 0: 208}
_H7_LEVEL = {3: 1.0, 2: 1.006, 1: 1.03, 0: 2.2}  # the code's own speed at each level, without spills
_H7_STAGES = {2: 1.05, 3: 1.0, 4: 0.993, 5: 0.997}  # the source's default: 3
_H7_STRIDE = {1: 1.04, 2: 1.015, 4: 1.004, 8: 0.996, 16: 1.0}  # the source's default: 16
_H7_STAGE_KB = 24.5  # shared memory a block takes per stage; an SM has 228 KB


def hgemm_7_blocks(p: dict[str, Any]) -> int:
    """How many 256-thread blocks an SM keeps: the register file (65,536) and shared memory decide."""
    level, cap = p.get("O", 3), p.get("maxrregcount")
    held = max(168, HGEMM_7_FLOOR[level]) if cap is None else min(max(168, HGEMM_7_FLOOR[level]), cap)
    return min(65536 // (held * 256), int(228 // (_H7_STAGE_KB * p["stages"])))


def _hgemm7(p: dict[str, Any]) -> float:
    # A cap below the level's floor spills: 1.2x slower 8 registers short, exponentially more to 40x. Two blocks
    # an SM (or more) are 4.5% faster; only a cap of 128 at -O2 gets there without spilling, and only with at most
    # 4 stages (5 do not fit twice in shared memory). The cache modifiers and -lineinfo change nothing.
    level, cap = p.get("O", 3), p.get("maxrregcount")
    short = 0 if cap is None else max(0, HGEMM_7_FLOOR[level] - cap)
    time = _H7_LEVEL[level] * (1.0 if short == 0 else min(40.0, 1.2 * math.exp(0.0274 * (short - 8))))
    time *= 0.955 if hgemm_7_blocks(p) >= 2 else 1.0
    return time * _H7_STAGES[p["stages"]] * _H7_STRIDE[p["block_stride"]]


HGEMM_7_SPACE: dict[str, ss.Param] = {
    "maxrregcount": ss.range(32, 248, 8, knockout_prob=0.5),
    "O": ss.choice([0, 1, 2, 3], knockout_prob=0.5),
    "dlcm": ss.choice(["ca", "cg", "cs"], knockout_prob=0.5),
    "dscm": ss.choice(["wb", "cg", "cs", "wt"], knockout_prob=0.5),
    "lineinfo": ss.literal("-lineinfo", knockout_prob=0.5),
    "stages": ss.range(2, 5),
    "block_stride": ss.choice([1, 2, 4, 8, 16]),
}
HGEMM_7_BEST = {"maxrregcount": 128, "O": 2, "stages": 4, "block_stride": 8}  # any cache modifiers, -lineinfo
HGEMM_7_OPTIMUM = 1.006 * 0.955 * 0.993 * 0.996

HGEMM_7 = Problem(
    "hgemm7 (register cap and -O lowered together at the occupancy step)",
    HGEMM_7_SPACE,
    _hgemm7,
    HGEMM_7_OPTIMUM * 1.01,  # within 1% of the optimum: only with the cap and the level moved together
)

# -- decoys 4% and 6% deep on a dimpled and on a pitted plateau ---------------------------------------------

# 6 ranges of 14, basin within 2 of an interior optimum: (5/14)**6 = 0.21% of the space; a shallow dimple.
DECOY_4D_OPT, DECOY_4D_POINT, DECOY_4D_DIMPLE = [9, 3, 10, 5, 8, 11], [2, 12, 1, 12, 1, 3], [12, 9, 4, 1, 13, 12]
# 7 ranges of 13, basin within 2: (5/13)**7 = 0.13%; sparse pits.
DECOY_6S_OPT, DECOY_6S_POINT = [4, 9, 7, 2, 10, 6, 8], [11, 1, 0, 11, 2, 12, 0]


def _dimple(r: Sequence[int]) -> float:
    # 0 at the dimple's point, rising with the distance from it to 0.4 (%) 12 steps away and beyond
    return 0.4 * min(1.0, sum(abs(v - d) for v, d in zip(r, DECOY_4D_DIMPLE, strict=True)) / 12)


def _pits(r: Sequence[int]) -> float:
    # 0.5 (%) everywhere but on 2% of the plateau's points, scattered and isolated: pits
    return 0.0 if _stable_fraction({"pit": list(r)}) < 0.02 else 0.5


DECOY_4D = Problem(
    "decoy4d (4%-deep decoy, a shallow dimple elsewhere)",
    _decoy_space(6, 14, ["a", "b", "c"]),
    _shaped(_decoy_plateau(DECOY_4D_OPT, 2, DECOY_4D_POINT, 4, 0.04, "c"), _dimple),
    40.0,  # the basin found: at most 6 * 2 + 4 = 16 in it, the decoy 96, the plateau 100-100.4
)

DECOY_6S = Problem(
    "decoy6s (6%-deep decoy, sparse pits in the plateau)",
    _decoy_space(7, 13, ["a", "b", "c", "d", "e"]),
    _shaped(_decoy_plateau(DECOY_6S_OPT, 2, DECOY_6S_POINT, 4, 0.06, "e"), _pits),
    40.0,  # at most 7 * 2 + 4 = 18 in the basin, the decoy 94, the plateau 100.5 with pits at 100
)

# -- a knob space measured with 1.0% lognormal noise -------------------------------------------------------

_N7_BLOCK = {64: 1.012, 128: 1.0, 256: 0.994, 512: 1.004}  # absent: 128
_N7_LEVEL = {1: 1.01, 2: 1.0, 3: 0.996}  # absent: 2
_N7_VECTOR = {1: 1.0, 2: 0.993, 4: 0.985}  # absent: 1


def noisy_knobs_7_time(p: dict[str, Any]) -> float:
    """The true time of a configuration (defaults 1.0): effects of 0.2-1.5%, one interaction."""
    block, vector = p.get("block", 128), p.get("vector", 1)
    time = _N7_BLOCK[block] * _N7_LEVEL[p.get("O", 2)] * _N7_VECTOR[vector]
    if vector == 4 and block == 512:  # the widest loads with the biggest block run out of registers
        time *= 1.02
    time *= 0.996 if "fmad" in p else 1.0
    time *= 0.998 if "ftz" in p else 1.0
    time *= 0.997 if p.get("prec_sqrt") is False else 1.0
    return time


_N7_SPACE: dict[str, ss.Param] = {name: ss.choice(values, knockout_prob=0.5) for name, values in
                                  (("block", list(_N7_BLOCK)), ("O", list(_N7_LEVEL)), ("vector", list(_N7_VECTOR)),
                                   ("prec_sqrt", [True, False]))}
_N7_SPACE |= {name: ss.literal(flag, knockout_prob=0.5) for name, flag in (("fmad", "-fmad=true"),
                                                                          ("ftz", "-ftz=true"))}
NOISY_KNOBS_7_OPTIMUM = 0.994 * 0.996 * 0.985 * 0.996 * 0.998 * 0.997  # block 256, O3, vector 4, fmad, ftz, sqrt

NOISY_KNOBS_7 = Problem(
    "noisy7 (knobs, 1.0% noise, one interaction)",
    _N7_SPACE,
    noisy_knobs_7_time,
    NOISY_KNOBS_7_OPTIMUM * 1.005,  # the pick's true time within 0.5% of the optimum
    noise=0.010,
)

HELD_OUT_7 = [ACF_41, ACF_57, ACF_67, HGEMM_7, DECOY_4D, DECOY_6S, NOISY_KNOBS_7]
