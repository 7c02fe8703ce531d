"""The search-quality bench's eighth held-out set: problems for the claim after held_out_7.py, never tuned on.

held_out_7.py judged the portfolio's diverse arm and its failing-pair index
(docs/results/LOG.md, "The diverse arm and the failing pairs"), both only on a
flag space (at least half the parameters flags). What that change risks and
held-out-7 did not test is here, written before the next change, with other
shapes, sizes and constants than the tuning set's and the seven earlier
held-out sets'. Budget: 640 evaluations (20 generations of 32) for every
problem and engine; 100 seeds for a claim.

* acf48t: failures that come of three flags at once, any two of them fine --
  two of one failing triple are in the optimum, so the move that adds the third
  to the best fails while each pair of the three works (the failing-pair index
  assumes pairs); and a flag, a choice's value and a high range failing only
  together;
* acf44r: a space just above half flags (23 of 44) whose gain is mostly in
  ranges with interior optima -- four ranges with their best values inside
  their grids, two whose sum is what matters (a ridge) -- and a pair of flags
  (where halving the GA's share cost most while tuning: held-out-1's acf52);
* acf62q: a quadruple of flags that helps only whole (any one to three of it
  costs), two flags each costing unless the other is set, a range whose best
  value a choice sets; failures: two flags together and a triple of flags.

Their constants (optima, which parameters matter) were chosen once, by hand,
and are not to be changed to suit a result.
"""

from __future__ import annotations

from typing import Any

from bench.search_quality.problems import Problem, _stable_fraction
from ciq_build import INVALID_SCORE
from ciq_build import space as ss

# -- a 48-parameter flag space whose failures are triples ---------------------------------------------------


def _acf48t(p: dict[str, Any]) -> Any:
    # 30 flags, 6 choices of 3 and 12 ranges 0-11; 9 matter: two flags of the best (f3, f17) each helping alone,
    # a pair that helps only together (f8, f27: either alone costs 0.5%), a range with its best value at 7 (k2),
    # a range whose best value is 3 with a flag (f11, neutral alone) and 9 without it (k5), a choice's value (g4).
    # Failures: f3, f17 and f25 together (any two of them work), f11 with g1 = 2 and k9 above 8 (any two work),
    # and a scattered 2%.
    if "f3" in p and "f17" in p and "f25" in p:
        return INVALID_SCORE
    if "f11" in p and p.get("g1") == 2 and p.get("k9", 0) > 8:
        return INVALID_SCORE
    if _stable_fraction(p) < 0.02:
        return INVALID_SCORE
    time = (0.975 if "f3" in p else 1.0) * (0.98 if "f17" in p else 1.0)
    time *= {0: 1.0, 1: 1.005, 2: 0.965}[("f8" in p) + ("f27" in p)]
    k2 = p.get("k2")
    time *= 1.0 if k2 is None else 0.975 + 0.0006 * (k2 - 7) ** 2
    k5 = p.get("k5")
    if k5 is not None:
        time *= 0.97 + 0.0005 * (k5 - 3) ** 2 if "f11" in p else 0.985 + 0.0005 * (k5 - 9) ** 2
    return time * (0.985 if p.get("g4") == 0 else 1.0)


def _acf48t_space() -> dict[str, ss.Param]:
    space: dict[str, ss.Param] = {f"f{i}": ss.literal(f"--acf8a-{i}", knockout_prob=0.5) for i in range(30)}
    space.update({f"g{i}": ss.choice([0, 1, 2], knockout_prob=0.5) for i in range(6)})
    space.update({f"k{i}": ss.range(0, 11, knockout_prob=0.5) for i in range(12)})
    return space


ACF48T_BEST: dict[str, Any] = {"f3": "--acf8a-3", "f17": "--acf8a-17", "f8": "--acf8a-8", "f27": "--acf8a-27",
                               "k2": 7, "f11": "--acf8a-11", "k5": 3, "g4": 0}
ACF48T_OPTIMUM = 0.975 * 0.98 * 0.965 * 0.975 * 0.97 * 0.985

ACF_48T = Problem(
    "acf48t (ACF-like, 9 of 48 matter, failing triples: any two of them work)",
    _acf48t_space(),
    _acf48t,
    ACF48T_OPTIMUM * 1.01,  # within 1% of the optimum
)

# -- a 44-parameter space, just above half flags, its gain mostly in ranges ---------------------------------


def _acf44r(p: dict[str, Any]) -> Any:
    # 23 flags, 6 choices of 4 and 15 ranges 0-15; 8 matter: ranges with interior best values (k1 at 5, k6 at 10,
    # k9 at 12), two ranges whose sum should be 15 (k3, k12: a ridge, each alone neutral), a pair of flags that
    # helps only together (f5, f19: either alone costs 0.4%). Failures: f5 with k9 above 13, and a scattered 3%.
    if "f5" in p and p.get("k9", 0) > 13:
        return INVALID_SCORE
    if _stable_fraction(p) < 0.03:
        return INVALID_SCORE
    time = 1.0
    for name, best, weight in (("k1", 5, 0.0004), ("k6", 10, 0.0003), ("k9", 12, 0.0005)):
        value = p.get(name)
        time *= 1.0 if value is None else 0.98 + weight * (value - best) ** 2
    if "k3" in p and "k12" in p:
        time *= 0.96 + 0.002 * abs(p["k3"] + p["k12"] - 15)
    return time * {0: 1.0, 1: 1.004, 2: 0.975}[("f5" in p) + ("f19" in p)]


def _acf44r_space() -> dict[str, ss.Param]:
    space: dict[str, ss.Param] = {f"f{i}": ss.literal(f"--acf8b-{i}", knockout_prob=0.5) for i in range(23)}
    space.update({f"g{i}": ss.choice([0, 1, 2, 3], knockout_prob=0.5) for i in range(6)})
    space.update({f"k{i}": ss.range(0, 15, knockout_prob=0.5) for i in range(15)})
    return space


ACF44R_BEST: dict[str, Any] = {"k1": 5, "k6": 10, "k9": 12, "k3": 7, "k12": 8, "f5": "--acf8b-5",
                               "f19": "--acf8b-19"}
ACF44R_OPTIMUM = 0.98 ** 3 * 0.96 * 0.975

ACF_44R = Problem(
    "acf44r (ACF-like, 23 of 44 flags, the gain in ranges: interior optima, a sum ridge)",
    _acf44r_space(),
    _acf44r,
    ACF44R_OPTIMUM * 1.01,  # within 1% of the optimum
)

# -- a 62-parameter flag space with a quadruple ------------------------------------------------------------


def _acf62q(p: dict[str, Any]) -> Any:
    # 44 flags, 10 choices of 4 and 8 ranges 0-9; 10 matter: a quadruple that helps only whole (f2, f13, f31, f40:
    # each one to three of it costs 0.3% a flag), two flags each costing 1% unless the other is set (f7, f22), a
    # range whose best value is 2 with g5 = 3 and 7 otherwise (k4), a flag alone (f36). Failures: f7 with f29, f13
    # with f18 and f36 (any two work), and a scattered 2.5%.
    if "f7" in p and "f29" in p:
        return INVALID_SCORE
    if "f13" in p and "f18" in p and "f36" in p:
        return INVALID_SCORE
    if _stable_fraction(p) < 0.025:
        return INVALID_SCORE
    quad = ("f2" in p) + ("f13" in p) + ("f31" in p) + ("f40" in p)
    time = 0.95 if quad == 4 else 1 + 0.003 * quad
    both = ("f7" in p) + ("f22" in p)
    time *= {0: 1.0, 1: 1.01, 2: 0.975}[both]
    k4 = p.get("k4")
    if k4 is not None:
        time *= 0.97 + 0.0008 * (k4 - 2) ** 2 if p.get("g5") == 3 else 0.985 + 0.0008 * (k4 - 7) ** 2
    return time * (0.985 if "f36" in p else 1.0)


def _acf62q_space() -> dict[str, ss.Param]:
    space: dict[str, ss.Param] = {f"f{i}": ss.literal(f"--acf8c-{i}", knockout_prob=0.5) for i in range(44)}
    space.update({f"g{i}": ss.choice([0, 1, 2, 3], knockout_prob=0.5) for i in range(10)})
    space.update({f"k{i}": ss.range(0, 9, knockout_prob=0.5) for i in range(8)})
    return space


ACF62Q_BEST: dict[str, Any] = {"f2": "--acf8c-2", "f13": "--acf8c-13", "f31": "--acf8c-31", "f40": "--acf8c-40",
                               "f7": "--acf8c-7", "f22": "--acf8c-22", "g5": 3, "k4": 2, "f36": "--acf8c-36"}
ACF62Q_OPTIMUM = 0.95 * 0.975 * 0.97 * 0.985

ACF_62Q = Problem(
    "acf62q (ACF-like, 10 of 62 matter, a quadruple, two flags needing each other, failing triples)",
    _acf62q_space(),
    _acf62q,
    ACF62Q_OPTIMUM * 1.01,  # within 1% of the optimum
)

HELD_OUT_8 = [ACF_48T, ACF_44R, ACF_62Q]
