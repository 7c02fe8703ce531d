"""The search's own time per candidate: what ask/tell costs beyond the objective, at a long run's length.

    python bench/search_quality/overhead.py [--evaluations 6400] [--seeds 3] [--strategies portfolio,ga]
                                            [--baseline REV]

Runs each strategy through the Search API on the held-out 52-parameter ACF-like problem (held_out.ACF_LIKE)
for the given number of evaluations (pool 32), timing the objective apart, and prints the search's overhead
per candidate (the run's CPU time less the objective's, over the evaluations: process time, so that other
work on a shared machine does not count): median over the seeds.
Goal (issue 38): at most 0.2 ms a candidate at 6,400 evaluations. ``--baseline REV`` adds the genetic
search of a git revision (run.py's ``ga@REV``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.search_quality.held_out import ACF_LIKE  # noqa: E402
from bench.search_quality.run import baseline_module  # noqa: E402
from ciq_build import Search, SearchConfiguration  # noqa: E402


class Timed:
    """The objective, with the CPU time spent in it."""

    def __init__(self) -> None:
        self.seconds = 0.0

    def __call__(self, params: dict[str, Any]) -> Any:
        started = time.process_time()
        try:
            return ACF_LIKE.objective(params)
        finally:
            self.seconds += time.process_time() - started


def overhead_ms(make: Any, evaluations: int, seed: int) -> tuple[float, int]:
    """(milliseconds of search per candidate, evaluations made) for one run."""
    objective = Timed()
    config = SearchConfiguration(generations=evaluations // 32, pool_size=32, seed=seed)
    started = time.process_time()
    results = make(objective, config).start()
    wall = time.process_time() - started
    return 1000 * (wall - objective.seconds) / len(results), len(results)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--evaluations", type=int, default=6400)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--strategies", default="portfolio,ga")
    parser.add_argument("--baseline", metavar="REV", default=None)
    args = parser.parse_args(argv)
    makers: dict[str, Any] = {
        name: (lambda objective, config, name=name: Search(objective, ACF_LIKE.space, config, strategy=name,
                                                            progress=False))
        for name in args.strategies.split(",") if name
    }
    if args.baseline:
        module = baseline_module(args.baseline)
        makers[f"ga@{args.baseline}"] = lambda objective, config: module.Search(
            objective, ACF_LIKE.space, module.SearchConfiguration(generations=config.generations, pool_size=32,
                                                                  seed=config.seed), progress=False)
    print(f"search overhead per candidate on {ACF_LIKE.name}, {args.evaluations} evaluations, pool 32, "
          f"median of {args.seeds} seeds")
    for name, make in makers.items():
        runs = [overhead_ms(make, args.evaluations, seed) for seed in range(args.seeds)]
        ms = statistics.median(r[0] for r in runs)
        print(f"{name:12} {ms:7.3f} ms a candidate  (runs: {', '.join(f'{r[0]:.3f}' for r in runs)}; "
              f"{runs[0][1]} evaluations)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
