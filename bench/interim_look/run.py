"""The re-measure before a pin, with and without its look, on simulated samples.

    python bench/interim_look/run.py [--trials 2000] [--rounds 10] [--noise 0.02] [--seed 0]

ciq_build.tune.confirm re-measures the winner against the defaults, interleaved,
`rounds` a side, and looks once (ciq_build.measure.bench.interim_look: half-way, or the first
round after it where the look's level can be reached, 5 of 6 to 9 rounds) at INTERIM_ALPHA:
a winner already better there ends the re-measure; otherwise the end decides at
FINAL_ALPHA. Against one look at the end at 5%, per true effect (candidate time /
defaults' time, Gaussian noise of `--noise` a run): how often each pins, and the
runs the look saves. Printed side by side from the same samples; a rate at
effect 1.0 is the chance of pinning a candidate no better than the defaults.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from ciq_build.testing import FINAL_ALPHA, INTERIM_ALPHA, beats_baseline, interim_look  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--noise", type=float, default=0.02)
    parser.add_argument("--seed", type=int, default=0)
    options = parser.parse_args()
    rng = random.Random(options.seed)
    looked = interim_look(options.rounds)
    print(f"{options.trials} trials, {options.rounds} rounds a side, "
          + (f"look after {looked} " if looked else "no look (too few rounds for its level) ") +
          f"(p <= {INTERIM_ALPHA}), end at p <= {FINAL_ALPHA}; one look: the end at p <= 0.05")
    print("| effect | pins, two looks | pins, one look | ended at the look | runs, two looks / one look |")
    print("|---|---|---|---|---|")
    for effect in (1.0, 0.99, 0.98, 0.95, 0.9, 0.8):
        two = one = early = runs = 0
        for _ in range(options.trials):
            base = [rng.gauss(1.0, options.noise) for _ in range(options.rounds)]
            cand = [rng.gauss(effect, options.noise) for _ in range(options.rounds)]
            ended = looked is not None and beats_baseline(base[:looked], cand[:looked], "min",
                                                          alpha=INTERIM_ALPHA).better
            early += ended
            two += ended or beats_baseline(base, cand, "min", alpha=FINAL_ALPHA).better
            one += beats_baseline(base, cand, "min").better
            runs += 2 * (looked if looked and ended else options.rounds)
        n = options.trials
        print(f"| {effect:g} | {two / n:.3f} | {one / n:.3f} | {early / n:.3f} | "
              f"{runs / (2 * options.rounds * n):.3f} |")


if __name__ == "__main__":
    main()
