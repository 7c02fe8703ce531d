"""What test files cost before and after a change: wall time and CPU time, the two arms side by side.

    python bench/suite_time/run.py [--before REV] [--rounds N] [-m MARKEXPR] [--workers N] TEST_FILE_OR_DIR...

Each round runs pytest on the given tests twice, once with the code of git
revision `--before` (exported to a temporary folder) and once with this
checkout's, in alternating order (so a machine whose load changes slows both
alike), and prints per round and in total the wall seconds, the CPU seconds of
pytest and everything it waited for (getrusage of the children: compilers,
CMake, benchmarks, tunes; a Ray cluster's daemons are not waited for and not
counted) and the after/before ratios (lower is better: these are costs).

Both arms use this checkout's virtual environment; PYTHONPATH names a folder
holding only a link to the arm's `ciq_build` package (the repository root itself
would shadow pip's cmake with its cmake/ folder), so `python -m ciq_build` in the
tests' subprocesses runs the arm's code too. A failing run is said, with its output.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _export(revision: str, into: Path) -> Path:
    """The tree of `revision`, as git stores it, in a folder of its own."""
    archive = into / "tree.tar"
    with archive.open("wb") as out:
        subprocess.run(["git", "-C", str(REPO), "archive", revision], stdout=out, check=True)
    tree = into / "tree"
    with tarfile.open(archive) as tar:
        tar.extractall(tree, filter="tar")
    archive.unlink()
    return tree


def _package_path(tree: Path, into: Path) -> Path:
    """A folder with only `ciq_build` in it (a link to the tree's), for PYTHONPATH."""
    into.mkdir()
    (into / "ciq_build").symlink_to(tree / "ciq_build", target_is_directory=True)
    return into


def _run(tree: Path, path: Path, tests: list[str], args: argparse.Namespace) -> tuple[float, float, str]:
    """One pytest run of `tests` on the code in `tree`: wall seconds, CPU seconds, its last line."""
    command = [sys.executable, "-m", "pytest", *tests, "-q", "-p", "no:cacheprovider"]
    if args.markexpr:
        command += ["-m", args.markexpr]
    if args.workers:
        command += ["-n", str(args.workers), "--dist", "loadfile", "--no-loadscope-reorder"]
    env = {**os.environ, "PYTHONPATH": str(path), "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    # Bytecode written and kept for both arms alike (scripts/test compiles first): with PYTHONDONTWRITEBYTECODE set,
    # every Python process of an arm without cached bytecode compiled the package again (~0.5 s each), a bias
    # against the exported arm.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "ciq_build")], env=env, check=True)
    cpu, wall = _children_cpu(), time.monotonic()
    done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True)
    wall, cpu = time.monotonic() - wall, _children_cpu() - cpu
    last = (done.stdout.strip().splitlines() or ["(no output)"])[-1]
    if done.returncode != 0:
        print(done.stdout[-3000:] + done.stderr[-2000:], file=sys.stderr)
    return wall, cpu, last


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tests", nargs="+", help="test files or folders, relative to the repository root")
    parser.add_argument("--before", default="main", help="the git revision to compare with (default: main)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("-m", dest="markexpr", default="", help="a pytest marker expression for both arms")
    parser.add_argument("--workers", type=int, default=0, help="pytest-xdist workers (0: one process)")
    args = parser.parse_args()
    totals = {"before": [0.0, 0.0], "after": [0.0, 0.0]}
    with tempfile.TemporaryDirectory(prefix="ciq-test-time-") as scratch:
        trees = {"before": _export(args.before, Path(scratch)), "after": REPO}
        paths = {arm: _package_path(tree, Path(scratch) / f"path-{arm}") for arm, tree in trees.items()}
        failed = False
        for round_ in range(args.rounds):
            for arm in (("before", "after") if round_ % 2 == 0 else ("after", "before")):
                wall, cpu, last = _run(trees[arm], paths[arm], args.tests, args)
                failed = failed or last.startswith("(") or " failed" in last or " error" in last
                totals[arm][0] += wall
                totals[arm][1] += cpu
                print(f"round {round_ + 1} {arm:6}: wall {wall:7.1f} s, CPU {cpu:7.1f} s  ({last})", flush=True)
    (wall_b, cpu_b), (wall_a, cpu_a) = totals["before"], totals["after"]
    print(f"total before ({args.before}): wall {wall_b:.1f} s, CPU {cpu_b:.1f} s")
    print(f"total after (this checkout): wall {wall_a:.1f} s, CPU {cpu_a:.1f} s")
    print(f"after/before: wall {wall_a / wall_b:.2f}, CPU {cpu_a / cpu_b:.2f} (costs: lower is better)")
    if failed:
        print("some runs failed (their output is above): their times are not comparable", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
