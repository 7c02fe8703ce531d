"""Benchmark runs a runtime tune needs, with racing and dedupe against without, side by side in one run.

The tune is real (CMake, Ninja, nvcc, processes) on tests/projects/transient's
`timer`, a TEST DOUBLE for a GPU benchmark: its "time" is 1 ms + STEP per step
of -D X away from 1, times Gaussian noise (a GPU's run-to-run scatter), and it
appends a line to a log each run, so the runs are counted by the benchmark
itself. Y is a parameter the source never reads (like a knob that changes no
code): its values build the same code. Both arms run the same search (seed,
space, budget, repeats) in their own build trees, one after the other; the
"plain" arm has racing (ciq_build.measure.racing) and dedupe
(ciq_build.tune.dedupe) switched off, as the tune was before them; two more
arms have one of them each, to show what each saves.

    python bench/racing/run.py [--noise 0.015] [--step 0.05] [--repeats 5] [--generations 5] [--pool-size 12]

Prints per arm the benchmark runs of the search (baseline included; the final
interleaved re-measure before the pin is the same in both and shown apart),
evaluations, candidates raced out and sharing code, the winner, and the ratio
of benchmark runs against the plain arm (goal: >= 3x fewer for the same winner).
Wall time is shown but is not the point here: compiles dominate this test double.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ciq_build.compiler.toolchain import find_toolchain
from ciq_build.core.settings import USER_CONFIGURE_TIMEOUT
from ciq_build.project.cmake_trees import configure_user_tree
from ciq_build.tune.tune_options import TuneOptions

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bench/racing/arms.py, run as a script from anywhere
from bench.racing.arms import print_table  # noqa: E402
from bench.racing.arms import run_arm as run_tune_arm  # noqa: E402

PROJECT = Path(__file__).resolve().parents[2] / "tests" / "projects" / "transient"


@dataclass
class Arm:
    """One tune's counts."""

    name: str
    search_runs: int  # benchmark runs of the baseline and the candidates
    confirm_runs: int  # of the interleaved re-measure before the pin (both sides)
    evaluations: int
    raced: int
    same_code: int
    winner_x: str | None
    pinned: bool
    seconds: float


def run_arm(name: str, work: Path, options: argparse.Namespace, *, racing: bool, dedupe: bool) -> Arm:
    source, build, log = work / name / "src", work / name / "build", work / name / "runs.log"
    shutil.copytree(PROJECT, source)
    params = f"X=range(0,{options.x_values});Y=range(0,{options.y_values})"
    configure_user_tree(source, build, find_toolchain(), None, [f"-DTIMER_PARAMS={params}"], USER_CONFIGURE_TIMEOUT)
    os.environ.update({"TIMER_RUN_LOG": str(log), "TIMER_NOISE": str(options.noise),
                       "TIMER_STEP": str(options.step), "TIMER_SLEEP_MS": str(options.sleep_ms)})
    arm = run_tune_arm(TuneOptions(target="timer", build_dir=build, generations=options.generations,
                                   pool_size=options.pool_size, repeats=options.repeats, seed=options.seed,
                                   objectives=["time"], quiet=True), racing=racing, dedupe=dedupe)
    logged = len(log.read_text().splitlines())
    winner = arm.outcome.winner.controls.defines if arm.outcome.winner is not None else ()
    return Arm(name, arm.search_runs, logged - arm.search_runs, len(arm.evaluations), arm.raced, arm.same_code,
               dict(winner).get("X"), arm.outcome.pinned is not None, arm.seconds)


def parser() -> argparse.ArgumentParser:
    """This bench's options (bench/throughput/run.py runs its racing part with their defaults)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--noise", type=float, default=0.015, help="relative noise of a run (sigma)")
    parser.add_argument("--step", type=float, default=0.05, help="ms slower per step of X away from the best")
    parser.add_argument("--x-values", type=int, default=12)
    parser.add_argument("--y-values", type=int, default=4, help="values of the parameter that changes no code")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--generations", type=int, default=5)
    parser.add_argument("--pool-size", type=int, default=12)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sleep-ms", type=int, default=20, help="how long one benchmark run takes")
    return parser


ARMS = (("plain", False, False), ("dedupe only", False, True), ("racing only", True, False),
        ("racing+dedupe", True, True))


def compare(options: argparse.Namespace, arms: Sequence[tuple[str, bool, bool]] = ARMS) -> bool:
    """Run `arms` (name, racing, dedupe; the first is the reference) and print their table and ratios;
    True when every arm pinned the reference's winner."""
    with tempfile.TemporaryDirectory(prefix="ciq-bench-racing-") as tmp:
        done = [run_arm(name, Path(tmp), options, racing=racing, dedupe=dedupe) for name, racing, dedupe in arms]
    print(f"timer test double: time = 1 ms + {options.step} ms x |X-1|, noise {options.noise:.1%}, "
          f"X in 0..{options.x_values - 1}, Y (no code change) in 0..{options.y_values - 1}, "
          f"--repeats {options.repeats}, {options.generations} generations x {options.pool_size}, seed {options.seed}")
    header = ("arm", "benchmark runs", "confirm runs", "evaluations", "raced", "same code", "winner X", "pinned",
              "wall s")
    rows = [(a.name, str(a.search_runs), str(a.confirm_runs), str(a.evaluations), str(a.raced),
             str(a.same_code), str(a.winner_x), str(a.pinned), f"{a.seconds:.1f}") for a in done]
    print_table(header, rows)
    plain = done[0]
    for arm in done[1:]:
        ratio = plain.search_runs / max(1, arm.search_runs)
        with_confirm = (plain.search_runs + plain.confirm_runs) / max(1, arm.search_runs + arm.confirm_runs)
        print(f"benchmark runs, plain / {arm.name}: {ratio:.2f}x fewer "
              f"({'same' if arm.winner_x == plain.winner_x else 'DIFFERENT'} winner), "
              f"{with_confirm:.2f}x counting the confirm re-measure")
    print("goal: >= 3x fewer for the same winner (racing+dedupe)")
    return all(arm.winner_x == plain.winner_x for arm in done)


def main() -> int:
    return 0 if compare(parser().parse_args()) else 1


if __name__ == "__main__":
    sys.exit(main())
