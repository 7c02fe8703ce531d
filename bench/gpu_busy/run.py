"""How much of a runtime tune the GPU is busy, and how long the tail after the search takes: this checkout
against an earlier one, side by side in one run, on the same project, seed and budget.

Each arm is a real `python -m ciq_build tune` (CMake, Ninja, nvcc, processes) in a build tree of its own,
its `ciq_build` package taken from a checkout: this one ("now") and, for "before", a git revision (its
`ciq_build/` and `cmake/` exported by `git archive`, no worktree made) or a folder holding them. By default
the project is tests/projects/transient's `timer`, a TEST DOUBLE for a GPU benchmark: a real nvcc build and
a real process that sleeps TIMER_SLEEP_MS per run (the "GPU" held) and writes when it slept to a span log,
so the GPU's busy time is measured by the benchmark itself, the same way for both arms:

    python bench/gpu_busy/run.py [--before REV|DIR|none] [--sleep-ms 1500] [--jobs 2] [--repeats 2]
                             [--generations 3] [--pool-size 4] [-- more tune arguments]
    python bench/gpu_busy/run.py --source DIR --target NAME --before none -- ...   # a real GPU project, in place

Prints per arm: wall and CPU time (getrusage of the children), the GPU-busy share from the first benchmark
to the pin, the tail (winner's rebuild, re-measure, minimal pin: from the search's last benchmark to the
pin) as a share of the tune's wall time, the evaluations and the winner; whether both arms evaluated the
same candidates in each generation (the same seed must give the same candidates); and now/before ratios.
Goals (issue 23): GPU busy >= 85% where compiles keep up; re-measure + minimal pin <= 15% of the wall time.
The span log exists only for the test double; on a real project the busy share and the tail are read from
the journal's `gpu_time` record, which only "now" writes.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
PROJECT = REPO / "tests" / "projects" / "transient"
TAIL_PHASES = ("rebuild", "re-measure", "minimize", "pin")


@dataclass
class Arm:
    name: str
    wall_s: float
    cpu_s: float
    returncode: int
    output: str
    evaluations: list[dict[str, Any]] = field(default_factory=list)
    gpu_record: dict[str, Any] | None = None
    busy: float | None = None  # GPU-busy share, from the span log (test double) or the journal
    tail: float | None = None  # the tail's share of the wall time
    tail_idle: float | None = None  # of it, the share no benchmark ran (the rebuilds the re-measure waited for)
    winner: str = "-"

    @property
    def candidates(self) -> list[list[str]]:
        """Each generation's candidates (journaled as they finish, so in an order timing decides: sorted)."""
        generations: dict[int, list[str]] = {}
        for r in self.evaluations:
            generations.setdefault(int(r.get("generation", 0)), []).append(json.dumps(r.get("controls", {}),
                                                                                      sort_keys=True))
        return [sorted(generations[g]) for g in sorted(generations)]


def package_path(checkout: Path, into: Path) -> Path:
    """A folder holding only `ciq_build` (a link to the checkout's): the checkout's cmake/ would shadow pip's."""
    into.mkdir(parents=True, exist_ok=True)
    link = into / "ciq_build"
    if not link.exists():
        link.symlink_to(checkout / "ciq_build")
    return into


def export_revision(revision: str, into: Path) -> Path:
    """`revision`'s ciq_build/ and cmake/, exported into `into` (no git worktree is made)."""
    into.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "-C", str(REPO), "archive", revision, "ciq_build", "cmake"],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def run_arm(name: str, checkout: Path, source: Path, target: str, work: Path, tune_args: list[str],
            env: dict[str, str], out: Path | None = None) -> Arm:
    """One tune with `checkout`'s package; `out`: where its log, journal and pin are copied."""
    build = work / f"build-{name}"
    spans = work / f"spans-{name}.log"
    if source == PROJECT:  # the test double, copied: each arm's pin in its own copy
        arm_source = work / f"src-{name}"
        shutil.copytree(source, arm_source, symlinks=True)
        shutil.rmtree(arm_source / "ciq", ignore_errors=True)
    else:  # a real project may include files by relative paths: tuned in place, its pins put back afterwards
        arm_source = source
    kept = work / f"pins-before-{name}"
    if (arm_source / "ciq").is_dir():
        shutil.copytree(arm_source / "ciq", kept)
        shutil.rmtree(arm_source / "ciq")  # no pin carried in: each arm starts from the compiler's defaults
    try:
        return _tune(name, checkout, arm_source, target, work, build, spans, tune_args, env, out)
    finally:
        if kept.is_dir():
            shutil.rmtree(arm_source / "ciq", ignore_errors=True)
            shutil.copytree(kept, arm_source / "ciq")


def _tune(name: str, checkout: Path, arm_source: Path, target: str, work: Path, build: Path, spans: Path,
          tune_args: list[str], env: dict[str, str], out: Path | None) -> Arm:
    path = package_path(checkout, work / f"path-{name}")
    arm_env = {**os.environ, **env, "PYTHONPATH": str(path), "TIMER_SPAN_LOG": str(spans)}
    command = [sys.executable, "-m", "ciq_build", "tune", target, "-S", str(arm_source), "-B", str(build),
               "--fresh", *tune_args]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.time()
    done = subprocess.run(command, capture_output=True, text=True, cwd=arm_source, env=arm_env)
    ended = time.time()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    arm = Arm(name, ended - started, cpu, done.returncode, done.stdout + done.stderr)
    journal = build / "ciq" / "journal" / f"{target}.jsonl"
    if journal.is_file():
        records = [json.loads(line) for line in journal.read_text().splitlines() if line.strip()]
        arm.evaluations = [r for r in records if r.get("kind") == "evaluation"]
        arm.gpu_record = next((r for r in reversed(records) if r.get("kind") == "gpu_time"), None)
    pin = arm_source / "ciq" / f"{target}.json"
    if pin.is_file():
        controls = json.loads(pin.read_text()).get("controls", {})
        arm.winner = " ".join([*controls.get("flags", []), *(f"-D{k}={v}" for k, v in
                                                              sorted(controls.get("defines", {}).items()))]) or "-"
    pinned_at = pin.stat().st_mtime if pin.is_file() else ended
    measure_from_spans(arm, spans, pinned_at)
    if out is not None:  # what the arm journaled and said, for docs/RESULTS.md
        out.mkdir(parents=True, exist_ok=True)
        (out / f"tune-{name}.log").write_text(arm.output)
        if journal.is_file():
            shutil.copy(journal, out / f"{target}-{name}.jsonl")
        if pin.is_file():
            shutil.copy(pin, out / f"{target}-{name}.json")
    return arm


def measure_from_spans(arm: Arm, spans: Path, pinned_at: float) -> None:
    """The busy share and the tail, from the test double's own span log, else the journal's gpu_time record."""
    runs = []
    if spans.is_file():
        runs = sorted(tuple(map(float, line.split())) for line in spans.read_text().splitlines() if line.strip())
    if runs:
        first = runs[0][0]
        busy = sum(min(end, pinned_at) - start for start, end in runs if start < pinned_at)
        arm.busy = busy / max(pinned_at - first, 1e-9)
        search_runs = sum(int(r.get("runs", 0)) for r in arm.evaluations)  # the baseline's and the candidates'
        if 0 < search_runs <= len(runs):
            last_search = runs[search_runs - 1][1]
            arm.tail = (pinned_at - last_search) / arm.wall_s
            ran = sum(min(end, pinned_at) - start for start, end in runs[search_runs:] if start < pinned_at)
            arm.tail_idle = (pinned_at - last_search - ran) / arm.wall_s
        return
    record = arm.gpu_record
    if record is not None:
        arm.busy = float(record["busy_fraction"])
        phases = record.get("phases", {})
        arm.tail = sum(float(phases.get(p, {}).get("wall_s", 0.0)) for p in TAIL_PHASES) / arm.wall_s
        arm.tail_idle = sum(float(phases.get(p, {}).get("wall_s", 0.0)) - float(phases.get(p, {}).get("busy_s", 0.0))
                            for p in TAIL_PHASES) / arm.wall_s


def percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", default="none",
                        help="a git revision or a folder holding ciq_build/ and cmake/ to compare with; none: "
                             "this checkout alone")
    parser.add_argument("--source", type=Path, default=PROJECT, help="the CMake project (default: the test double)")
    parser.add_argument("--target", default="timer")
    parser.add_argument("--sleep-ms", type=int, default=1500, help="the test double's run length (its GPU time)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--generations", type=int, default=3)
    parser.add_argument("--pool-size", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", action="store_true", help="keep the build trees (their path is printed)")
    parser.add_argument("--out", type=Path, help="copy each arm's tune log, journal and pin here")
    parser.add_argument("tune_args", nargs="*", help="more tune arguments, after --")
    args = parser.parse_args(argv)
    tune_args = ["--generations", str(args.generations), "--pool-size", str(args.pool_size), "--repeats",
                 str(args.repeats), "--jobs", str(args.jobs), "--seed", str(args.seed), *args.tune_args]
    if args.source.resolve() == PROJECT:
        tune_args.append("--cmake-arg=-DTIMER_PARAMS=X=range(0,6);Y=range(0,4)")
    env = {"TIMER_SLEEP_MS": str(args.sleep_ms), "TIMER_NOISE": "0.01"}
    work = Path(tempfile.mkdtemp(prefix="ciq-gpu-busy-"))
    arms: list[Arm] = []
    try:
        checkouts = [("now", REPO)]
        if args.before != "none":
            given = Path(args.before)
            checkouts.insert(0, ("before", given.resolve() if given.is_dir()
                                 else export_revision(args.before, work / "before-checkout")))
        for name, checkout in checkouts:
            arm = run_arm(name, checkout, args.source.resolve(), args.target, work, tune_args, env, args.out)
            arms.append(arm)
            if arm.returncode != 0:
                print(f"arm {name} failed ({arm.returncode}):\n{arm.output[-4000:]}", file=sys.stderr)
                return 1
    finally:
        if args.keep:
            print(f"build trees kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print(f"{args.target}: {args.generations} generations x {args.pool_size}, --repeats {args.repeats}, "
          f"--jobs {args.jobs}, seed {args.seed}" + (f", benchmark double {args.sleep_ms} ms a run"
                                                     if args.source.resolve() == PROJECT else ""))
    print(f"{'arm':8} {'wall s':>8} {'CPU s':>8} {'GPU busy':>9} {'tail':>6} {'idle':>6} {'evals':>6}  winner")
    for arm in arms:
        print(f"{arm.name:8} {arm.wall_s:8.1f} {arm.cpu_s:8.1f} {percent(arm.busy):>9} {percent(arm.tail):>6} "
              f"{percent(arm.tail_idle):>6} {len(arm.evaluations):6d}  {arm.winner}")
    print("(tail: from the search's last benchmark to the pin, the re-measure included, as a share of the wall "
          "time; idle: of it, no benchmark running)")
    now = arms[-1]
    line = next((text for text in now.output.splitlines() if text.strip().startswith("GPU:")), None)
    print(f"now's summary: {line.strip() if line else '(no GPU line)'}")
    if len(arms) == 2:
        before = arms[0]
        print(f"now/before: wall {now.wall_s / before.wall_s:.2f}x, CPU {now.cpu_s / max(before.cpu_s, 1e-9):.2f}x"
              + (f", GPU busy {now.busy / before.busy:.2f}x" if now.busy and before.busy else "")
              + (f", tail share {now.tail / before.tail:.2f}x" if now.tail and before.tail else ""))
        same = now.candidates == before.candidates and now.winner == before.winner
        print(f"same candidates in each generation, same winner: {'yes' if same else 'NO'}")
    print(f"goals: GPU busy >= 85%: {'met' if now.busy is not None and now.busy >= 0.85 else 'not met'}; "
          f"tail <= 15% of the wall time: {'met' if now.tail is not None and now.tail <= 0.15 else 'not met'} "
          "(the re-measure's own runs are GPU time: the tail share depends on how long the search was)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
