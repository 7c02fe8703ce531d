"""`python -m ciq_build ...`: the command line.

Errors a user can meet (CiqError) are printed as one message, without a
traceback, and turn into a non-zero exit status here and only here.
"""

from __future__ import annotations

import argparse
import dataclasses
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ciq_build import __version__
from ciq_build.core.objectives import known_spellings
from ciq_build.core.settings import BuildSettings, MeasureSettings, SearchSettings
from ciq_build.errors import CiqError
from ciq_build.measure import proc
from ciq_build.ray.sources import SOURCE_MODES
from ciq_build.resources import cmake_dir
from ciq_build.search.strategies import strategy_names
from ciq_build.tune.executor import executor_names

if TYPE_CHECKING:
    from ciq_build.build.backend import BuildBackend

_SEARCH, _MEASURE, _BUILD = SearchSettings(), MeasureSettings(), BuildSettings()


def _add_tree_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--build-dir", "-B", type=Path, default=Path("build"),
                        help="the project's CMake build tree (default: ./build)")
    parser.add_argument("--source-dir", "-S", type=Path, default=None,
                        help="the project's source tree; configures --build-dir first when it is not configured yet")


def _add_project_options(parser: argparse.ArgumentParser) -> None:
    """The tree options, and --setuptools: for the commands that work through a project's build backend."""
    _add_tree_options(parser)
    parser.add_argument("--setuptools", type=Path, default=None, metavar="PROJECT",
                        help="a setuptools project instead: the CudaExtension(ciq_target=...) of PROJECT's setup.py, "
                             "without CMake (also chosen by -S PROJECT when PROJECT has a setup.py and no "
                             "CMakeLists.txt)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m ciq_build",
        description="Tune the NVIDIA CUDA compiler for one CMake target and pin the winner.",
    )
    parser.add_argument("--version", action="version", version=f"ciq_build {__version__}")
    parser.add_argument("--cmake-dir", action="store_true",
                        help="print the folder to pass as -Dciq_build_DIR=... to plain CMake and exit")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    tune = commands.add_parser("tune", help="search compiler controls for a target and pin the best")
    tune.add_argument("target", nargs="*", default=[],
                      help="a CMake target registered with ciq_tune_target(); several are tuned as --all tunes "
                           "its targets")
    tune.add_argument("--all", action="store_true", dest="all_targets",
                      help="tune every target registered with ciq_tune_target() in the build tree, one after "
                           "another (with --executor ray: at the same time, sharing the cluster), with the same "
                           "options; a summary at the end (exit code non-zero if any failed)")
    _add_project_options(tune)
    tune.add_argument("--generations", type=int, default=_SEARCH.generations,
                      help=f"generations of the genetic search (default {_SEARCH.generations})")
    tune.add_argument("--pool-size", type=int, default=_SEARCH.pool_size,
                      help=f"candidates per generation (default {_SEARCH.pool_size})")
    tune.add_argument("--mutate-rate", type=float, default=_SEARCH.mutate_rate,
                      help=f"probability that a gene mutates (default {_SEARCH.mutate_rate})")
    tune.add_argument("--objective", action="append", default=None, metavar="NAME",
                      help=f"objective, repeatable ({known_spellings()}; prefix max: to maximise); default: the "
                           "target's OBJECTIVES")
    tune.add_argument("--controls", action="append", default=None, metavar="KIND",
                      help="what to search, repeatable: knobs, params, ptxas-acf[:VER[:VARIANT]], nvcc-acf[:VER], "
                           "a .bin search space, or acf-pool:DIR (ACFs sampled ahead with sample-acfs); "
                           "default: the target's SEARCH_SPACE (knobs + params)")
    tune.add_argument("--strategy", default=None, choices=strategy_names(),
                      help=f"how to search: {', '.join(strategy_names())} (ciq_build.search.strategies); default: "
                           "compileiq for a compiler ACF space (only it can sample one), else ga")
    tune.add_argument("--allow-numerics", action="store_true",
                      help="also search flags that change floating-point results (fast-math family)")
    tune.add_argument("--pick", default=_SEARCH.pick, choices=["knee", "first"],
                      help="with several objectives, which Pareto point to pin: knee (closest to the ideal point "
                           "after normalising each objective) or first (best on the first objective)")
    tune.add_argument("--seed", type=int, default=_SEARCH.seed, help="random seed (same seed, same candidates)")
    tune.add_argument("--jobs", "-j", type=int, default=_BUILD.jobs,
                      help=f"candidates built in parallel (default {_BUILD.jobs})")
    tune.add_argument("--gpus", default=None, metavar="LIST",
                      help="GPUs to spread benchmarks over, e.g. 0,1 (one benchmark per GPU at a time; "
                           "default: the default GPU, one benchmark at a time)")
    tune.add_argument("--executor", choices=executor_names(), default="local",
                      help="where candidates are evaluated: local (this machine, default) or ray (one actor per "
                           "--jobs slot on a Ray cluster; needs ciq-build[ray] on the workers), or one registered "
                           "from Python (ciq_build.tune.executor.register_executor)")
    tune.add_argument("--ray-address", default=None, metavar="ADDR",
                      help="the Ray cluster to use (default, as ray.init finds it: $RAY_ADDRESS, else one "
                           "`ray start` started on this machine, else a new one here)")
    tune.add_argument("--ray-gpu-resource", default=None, metavar="NAME",
                      help="a custom resource naming the GPU kind each benchmark slot needs, e.g. H200")
    tune.add_argument("--ray-compile-resource", default=None, metavar="NAME",
                      help="a custom resource of the nodes meant for compiles (e.g. CPU-only nodes started with "
                           "ray start --resources='{\"compile\": 16}'); each compile worker asks for one")
    tune.add_argument("--ray-targets", type=int, default=None, metavar="N",
                      help="with several targets (--all, or several named): how many tune at once on the cluster, "
                           "sharing its GPUs fairly (default: all of them)")
    # A target's own tune started by a tune of several (ciq_build.ray.targets): the build tree is
    # prepared, and what the tune came to is written to this file.
    tune.add_argument("--ray-child-result", type=Path, default=None, help=argparse.SUPPRESS)
    tune.add_argument("--ray-sources", choices=SOURCE_MODES, default="shared",
                      help="how the sources reach Ray workers: shared (a filesystem they share, at the driver's "
                           "paths; default) or upload (shipped through Ray's working_dir, build trees and .git "
                           "left out; each worker checks its copy against the driver's source fingerprint)")
    tune.add_argument("--repeats", type=int, default=_MEASURE.repeats,
                      help=f"benchmark runs per candidate; the median is scored (default {_MEASURE.repeats})")
    tune.add_argument("--timeout", type=float, default=None,
                      help="seconds before a compile or benchmark run is killed, used as given (default: the "
                           f"target's TIMEOUT, {_MEASURE.timeout:g} unless set, or 4x the baseline's when more; "
                           "the baseline itself gets at least 600)")
    tune.add_argument("--max-evaluations", type=int, default=None, help="stop after this many evaluations")
    tune.add_argument("--seed-from", action="append", default=[], metavar="SEED",
                      help="repeatable: known-good configurations evaluated first, entering the search's first "
                           "generation: a pinned record (another target's or architecture's <target>.json), a "
                           "folder of them, or controls as a command line, e.g. --seed-from='-Xptxas=-O2 -DTILE=32' "
                           "(strategies ga and random)")
    tune.add_argument("--time-limit", default=None, metavar="DURATION",
                      help="a wall-clock budget from the tune's start, e.g. 30m, 1h30m, 90s: then no candidate "
                           "starts (those running finish), and the best so far is re-measured and pinned")
    tune.add_argument("--architecture", default=None, metavar="ARCH",
                      help="tune one architecture of a multi-architecture target (e.g. 80 or sm_90a): only it is "
                           "built, and the winner is pinned as its entry of the target's record, beside the other "
                           "architectures' (each applied to its own -gencode)")
    tune.add_argument("--fresh", action="store_true", help="start over instead of resuming the journal")
    tune.add_argument("--wait", action="store_true", help="wait for another tune of the same target to finish")
    tune.add_argument("--no-pin", action="store_true", help="search and report, but write no pinned record")
    tune.add_argument("--quiet", "-q", action="store_true", help="no progress, warnings only")
    tune.add_argument("--verbose", "-v", action="store_true",
                      help="also each evaluation's controls and metrics")
    tune.add_argument("--cmake-arg", action="append", default=[], metavar="ARG",
                      help="extra argument for configuring a new build dir (with --source-dir)")

    show = commands.add_parser("show", help="print a target's pinned record")
    show.add_argument("target")
    _add_project_options(show)
    show.add_argument("--pin-file", type=Path, default=None, help="read this record instead of the target's")

    listing = commands.add_parser("list", help="list the tuned targets of a build tree and their pins")
    _add_project_options(listing)

    verify = commands.add_parser("verify", help="rebuild a target and check that its pin took effect")
    verify.add_argument("target")
    _add_project_options(verify)
    # -- report and export: what a tune did (ciq_build.reports.history) --
    report = commands.add_parser("report", help="what a tune did: one self-contained HTML page (or Markdown)",
                                 description="Reads the target's journal and pinned record; builds nothing.")
    report.add_argument("target")
    _add_tree_options(report)
    report.add_argument("--format", choices=["html", "markdown"], default="html",
                        help="html (default: plots embedded, opens offline) or markdown (tables, for CI logs)")
    report.add_argument("--output", "-o", default=None, metavar="FILE",
                        help="where to write it, - for stdout (default: <build>/ciq/report/<target>.html for html, "
                             "stdout for markdown)")
    export = commands.add_parser("export", help="one row per evaluation of a target's tune, as CSV or JSON")
    export.add_argument("target")
    _add_tree_options(export)
    export_format = export.add_mutually_exclusive_group(required=True)
    export_format.add_argument("--csv", metavar="FILE", help="write CSV to FILE (- for stdout), safe for spreadsheets: "
                               "a text cell starting like a formula (=, +, -, @, tab, CR: every flag) or with ' "
                               "gets one ' in front (drop it for the value; --json keeps every value exact)")
    export_format.add_argument("--json", metavar="FILE", help="write JSON to FILE (- for stdout)")

    sample = commands.add_parser(
        "sample-acfs", help="draw ACFs from an NVIDIA compiler search space into a pool folder (needs compileiq)",
        description="Sample ACFs with compileiq where it is installed; tune elsewhere with --controls acf-pool:DIR.")
    sample.add_argument("--space", default="ptxas-acf:13.3",
                        help="ptxas-acf[:VER[:VARIANT]], nvcc-acf[:VER[:VARIANT]] or a .bin file (default ptxas-acf:13.3)")
    sample.add_argument("--count", type=int, default=24, help="how many ACFs (default 24)")
    sample.add_argument("--seed", type=int, default=0)
    sample.add_argument("--out", type=Path, required=True, help="the pool folder to write")
    for name, command in commands.choices.items():  # tune has its own words for them
        if name != "tune":
            command.add_argument("--quiet", "-q", action="store_true",
                                 help="nothing on stderr but warnings and errors (stdout, the result, stays the same)")
            command.add_argument("--verbose", "-v", action="store_true",
                                 help="also the details of each step (compiler controls as a command line)")
    return parser


_TUNE_WHAT = ("tune needs a target or --all (not both): `python -m ciq_build tune <target> -B <build>` tunes one "
              "target (several names: each of them), `python -m ciq_build tune --all -B <build>` every target "
              "registered with ciq_tune_target(); `python -m ciq_build list -B <build>` lists them")


def _setuptools_project(setuptools: Path | None, source_dir: Path | None) -> Path | None:
    """The setuptools project a command is pointed at: --setuptools, or a -S folder with a setup.py and no
    CMakeLists.txt.

    Decided here, so that a CMake project never imports setuptools (ciq_build.setuptools_tune does).
    """
    if setuptools is not None:
        return Path(setuptools).resolve()
    if source_dir is not None and (source_dir / "setup.py").is_file() and not (source_dir / "CMakeLists.txt").exists():
        return Path(source_dir).resolve()
    return None


def _backend(args: argparse.Namespace) -> BuildBackend:
    """The project the command is pointed at, as the build backend every command below works through."""
    project = _setuptools_project(args.setuptools, args.source_dir)
    if project is not None:
        from ciq_build.setuptools_tune import SetuptoolsBackend

        return SetuptoolsBackend(project)
    from ciq_build.build.cmake_backend import CMakeBackend

    return CMakeBackend(args.build_dir, args.source_dir, tuple(getattr(args, "cmake_arg", ())))


# The signal that stopped this command; the exit code is 128 + it, as a shell reports a process it killed.
_stopped_by: list[int] = []


def _interrupted(signum: int, frame: object) -> None:
    # SIGINT, SIGTERM and SIGHUP (a closed terminal) end a command the same way: nothing more
    # starts, in any thread (a flag: this may run while the main thread holds a lock); the
    # KeyboardInterrupt unwinds the main thread, which kills what runs. The journal already
    # holds every finished evaluation, so the next `tune` resumes. A second signal while it stops
    # is ignored: it would interrupt the killing of what runs.
    if _stopped_by:
        return
    proc.stop_starting()
    _stopped_by.append(signum)
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.cmake_dir:
        print(cmake_dir())
        return 0
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _interrupted)
    from ciq_build.tune.progress import configure_logging

    configure_logging(-1 if args.quiet else 1 if args.verbose else 0)
    if args.command in ("tune", "verify", "sample-acfs"):
        proc.guard_driver()  # nothing these start outlives them, even when they are SIGKILLed
    try:
        if args.command == "tune":
            from ciq_build.tune.settings import TuneOptions

            if (not args.target) != args.all_targets:
                print(f"ciq_build: error: {_TUNE_WHAT}", file=sys.stderr)
                return 2
            backend = _backend(args)
            # The project's own build dir: a setuptools project keeps its state in <project>/build.
            options = dataclasses.replace(TuneOptions.from_args(args), build_dir=backend.build_dir)
            if args.ray_child_result is not None:
                from ciq_build.ray.targets import run_child

                return run_child(options, backend, args.ray_child_result)
            if args.all_targets or len(args.target) > 1:
                from ciq_build.tune.all_targets import run_tune_all

                return run_tune_all(options, backend).exit_code
            from ciq_build.tune.driver import run_tune

            outcome = run_tune(options, backend)
            return 0 if outcome.ok else 1
        if args.command == "show":
            from ciq_build.reports.show import show

            print(show(args.target, _backend(args), args.pin_file))
            return 0
        if args.command == "list":
            from ciq_build.reports.show import list_targets

            print(list_targets(_backend(args)))
            return 0
        if args.command == "sample-acfs":
            from ciq_build.search.acf_pool import sample_pool

            print(sample_pool(args.space, args.count, args.out, args.seed))
            return 0
        if args.command == "report":
            from ciq_build.reports.page import report

            print(report(args.target, args.build_dir, args.source_dir, args.format, args.output), end="")
            return 0
        if args.command == "export":
            from ciq_build.reports.export import export

            print(export(args.target, args.build_dir, args.source_dir, csv_file=args.csv, json_file=args.json),
                  end="")
            return 0
        if args.command == "verify":
            from ciq_build.pin.verify import verify

            verified = verify(args.target, _backend(args))
            print(verified.text)
            return 0 if verified.ok else 1
    except CiqError as error:
        print(f"ciq_build: error: {error}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        proc.stop_all()
        stopped_by = signal.Signals(_stopped_by[0] if _stopped_by else signal.SIGINT)
        print(f"ciq_build: stopped by {stopped_by.name}; the journal keeps every finished evaluation: run the "
              "same command to resume", file=sys.stderr)
        return 128 + stopped_by
    parser.error(f"unknown command {args.command}")
    return 2
