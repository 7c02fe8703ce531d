"""`python -m ciq_build ...`: the command line.

Errors a user can meet (CiqError) are printed as one message, without a
traceback, and turn into a non-zero exit status here and only here.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ciq_build.core.options import HelpFormatter
from ciq_build.errors import CiqError
from ciq_build.measure import guard, processes, stopping
from ciq_build.project.manifest import REGISTERED
from ciq_build.resources import cmake_dir
from ciq_build.tune.executors import add_arguments, read_tune_options
from ciq_build.tune.tune_options import EXECUTION, OUTPUT
from ciq_build.version import __version__

if TYPE_CHECKING:
    from ciq_build.project.backend import BuildBackend

_TARGET_HELP = f"a target {REGISTERED}; `python -m ciq_build list -B <build>` lists them"
_TUNE_EXAMPLES = """examples:
  python -m ciq_build tune kern -B build                      tune one target, pin the winner
  python -m ciq_build tune kern -S . -B build                 configure ./build from . first
  python -m ciq_build tune kern --objective time --objective registers --max-evaluations 200
  python -m ciq_build tune kern --controls ptxas-acf:13.3     search the compiler's own ACF space
  python -m ciq_build tune --all -B build -j 4                every registered target, one after another
  python -m ciq_build tune --all --executor ray --ray-targets 2   several targets at once on a Ray cluster
  python -m ciq_build tune kern --no-pin                      search and report, pin nothing
"""


# The build tree a command uses when no -B names one.
IMPLICIT_BUILD_DIR = "build"
_IMPLICIT_BUILD = f"(-B was not given, so ./{IMPLICIT_BUILD_DIR} was assumed: pass -B <your build dir>)"


class _GivenBuildDir(argparse.Action):
    """-B, noted as given: an error with the ./build that no -B named says it was assumed (_IMPLICIT_BUILD)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        setattr(namespace, self.dest, values)
        namespace.build_dir_given = True


# What -S does, by command: tune and verify configure an unconfigured --build-dir from it (BuildBackend.prepare); the
# commands that read what a tune left configure nothing (show, report and export read its ciq/ pins meanwhile).
_SOURCE_CONFIGURES = "the project's source tree; configures --build-dir first when it is not configured yet"
_SOURCE_PINS_READ = ("the project's source tree, whose ciq/ pins are read while --build-dir is not configured; "
                     "configures nothing (tune -S does)")
_SOURCE_NAMED = "the project's source tree; configures nothing (tune -S does)"


def _add_tree_options(parser: argparse.ArgumentParser, source_help: str) -> None:
    parser.add_argument("--build-dir", "-B", type=Path, default=Path(IMPLICIT_BUILD_DIR), action=_GivenBuildDir,
                        help=f"the project's CMake build tree, or a setuptools project's build folder "
                             f"(default: ./{IMPLICIT_BUILD_DIR})")
    parser.add_argument("--source-dir", "-S", type=Path, default=None, help=source_help)


def _add_journal_choice(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--architecture", default=None, metavar="ARCH",
                        help="the journal of tune --architecture ARCH (each architecture's tune keeps its own; all: "
                             "the tune of every CUDA_ARCHITECTURES); default: the one a tune wrote last")


def _add_project_options(parser: argparse.ArgumentParser, source_help: str) -> None:
    """The tree options, and --setuptools: for the commands that work through a project's build backend."""
    _add_tree_options(parser, source_help)
    parser.add_argument("--setuptools", type=Path, default=None, metavar="PROJECT",
                        help="a setuptools project instead: the CudaExtension(ciq_target=...) of PROJECT's setup.py, "
                             "without CMake (also chosen by -S PROJECT when PROJECT has a setup.py and no "
                             "CMakeLists.txt)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m ciq_build",
        description="Tune the NVIDIA CUDA compiler for one CMake target or setuptools CUDA extension and pin the "
                    "winner.",
    )
    parser.add_argument("--version", action="version", version=f"ciq_build {__version__}")
    parser.add_argument("--cmake-dir", action="store_true",
                        help="print the folder to pass as -Dciq_build_DIR=... to plain CMake and exit")
    parser.add_argument("--nvcc", action="store_true",
                        help="print the nvcc of the CUDA toolkit installed with ciq_build[cuda], to pass as "
                             "-DCMAKE_CUDA_COMPILER=... to plain CMake, and exit")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    tune = commands.add_parser("tune", help="search compiler controls for a target and pin the best",
                               description="Search compiler controls for a target and pin the best.",
                               epilog=_TUNE_EXAMPLES, formatter_class=HelpFormatter)
    groups = add_arguments(tune)  # tune's own options and each executor's (ciq_build.tune.executors)
    tune.add_argument("--all", action="store_true", dest="all_targets",
                      help=f"tune every target {REGISTERED} in the project, one "
                           "after another (with --executor ray: at the same time, sharing the cluster), with the same "
                           "options; a summary at the end (exit code non-zero if any failed)")
    _add_project_options(tune, _SOURCE_CONFIGURES)
    groups[OUTPUT].add_argument("--verbose", "-v", action="store_true",
                                help="also each evaluation's controls and metrics")
    # A target's own tune started by a tune of several (an executor's tune_targets: ciq_build.ray.targets): the
    # build tree is prepared, and what the tune came to is written to this file
    # (ciq_build.tune.target_result.write_result). How this process reports, not what it tunes: so no option of
    # TuneOptions, and hidden.
    groups[EXECUTION].add_argument("--result-file", type=Path, default=None, help=argparse.SUPPRESS)

    show = commands.add_parser("show", help="print a target's pinned record")
    show.add_argument("target", help=_TARGET_HELP)
    _add_project_options(show, _SOURCE_PINS_READ)
    show.add_argument("--pin-file", type=Path, default=None, help="read this record instead of the target's")

    listing = commands.add_parser("list", help="list the tuned targets of a build tree and their pins")
    _add_project_options(listing, _SOURCE_NAMED)

    verify = commands.add_parser("verify", help="rebuild a target and check that its pin took effect")
    verify.add_argument("target", help=_TARGET_HELP)
    _add_project_options(verify, _SOURCE_CONFIGURES)
    # -- report and export: what a tune did (ciq_build.reports.history) --
    report = commands.add_parser("report", help="what a tune did: one self-contained HTML page (or Markdown)",
                                 description="Reads the target's journal and pinned record; builds nothing.")
    report.add_argument("target", help=_TARGET_HELP)
    _add_tree_options(report, _SOURCE_PINS_READ)
    report.add_argument("--format", choices=["html", "markdown"], default="html",
                        help="html (default: plots embedded, opens offline) or markdown (tables, for CI logs)")
    report.add_argument("--output", "-o", default=None, metavar="FILE",
                        help="where to write it, - for stdout (default: <build>/ciq/report/<target>.html for html, "
                             "stdout for markdown)")
    report.add_argument("--search", type=_search_number, default=None, metavar="N",
                        help="which search of the journal to report (1 the oldest; default: the latest): a tune "
                             "with other objectives or settings starts a new one, each reported in its own objectives")
    _add_journal_choice(report)
    report.add_argument("--watch", action="store_true",
                        help="while a tune of the target runs, write the report again as its journal grows (the "
                             "page reloads itself); ends with a final report when the tune ends, or on Ctrl-C")
    export = commands.add_parser("export", help="one row per evaluation of a target's tune, as CSV or JSON")
    export.add_argument("target", help=_TARGET_HELP)
    _add_tree_options(export, _SOURCE_PINS_READ)
    _add_journal_choice(export)
    export_format = export.add_mutually_exclusive_group(required=True)
    export_format.add_argument("--csv", metavar="FILE", help="write CSV to FILE (- for stdout), safe for spreadsheets: "
                               "a text cell starting like a formula (=, +, -, @, tab, CR: every flag) or with ' "
                               "gets one ' in front (drop it for the value; --json keeps every value exact)")
    export_format.add_argument("--json", metavar="FILE", help="write JSON to FILE (- for stdout)")
    export_format.add_argument("--optuna", metavar="FILE",
                               help="write one search (the latest, or --search N) as an Optuna journal storage "
                                    "FILE: optuna-dashboard FILE, or optuna.storages.JournalStorage (the [optuna] "
                                    "extra)")
    export_format.add_argument("--kernel-tuner", metavar="FILE",
                               help="write one search (the latest, or --search N) as a Kernel Tuner cache file "
                                    "(- for stdout)")
    export.add_argument("--search", type=_search_number, default=None, metavar="N",
                        help="only the evaluations search N journaled (1 the oldest; default: every search's, each "
                             "row with its search and its scores named by that search's objectives)")

    sample = commands.add_parser(
        "sample-acfs", help="draw ACFs from an NVIDIA compiler search space into a pool folder (needs compileiq)",
        description="Sample ACFs with compileiq where it is installed; tune elsewhere with --controls acf-pool:DIR.")
    sample.add_argument("--space", default="ptxas-acf:13.3",
                        help="ptxas-acf[:VER[:VARIANT]], nvcc-acf[:VER[:VARIANT]] or a .bin file (default ptxas-acf:13.3)")
    sample.add_argument("--count", type=int, default=24, help="how many ACFs (default 24)")
    sample.add_argument("--seed", type=int, default=0, help="random seed (same seed, same ACFs; default 0)")
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
              f"{REGISTERED}; `python -m ciq_build list -B <build>` lists them")


def _setuptools_project(setuptools: Path | None, source_dir: Path | None,
                        build_dir: Path = Path(IMPLICIT_BUILD_DIR)) -> Path | None:
    """The setuptools project a command is pointed at: --setuptools, a -S folder with a setup.py and no
    CMakeLists.txt, or without -S such a folder's build/ as -B (given, or the ./build assumed: `list`, run in the
    project, said "build is not a configured CMake build tree" and told a setuptools user to run cmake).

    Decided here, so that a CMake project never imports setuptools (ciq_build.project.setuptools_backend does).
    """
    from ciq_build.project.backend import setuptools_project_of

    return setuptools_project_of(build_dir, source_dir, setuptools)


def _journal_build_dir(args: argparse.Namespace) -> Path:
    """Where `report` and `export` read a tune's journal: -B, or, where -B is left out and -S names a setuptools
    project, that project's build folder, where its tune journals (`report kern -S proj` run elsewhere read ./build's
    and said to tune again, with a -B that named no setuptools project)."""
    if not getattr(args, "build_dir_given", False) and args.source_dir is not None:
        project = _setuptools_project(None, args.source_dir)
        if project is not None:
            from ciq_build.project.backend import SETUPTOOLS_BUILD_FOLDER

            return project / SETUPTOOLS_BUILD_FOLDER
    return Path(args.build_dir)


def _backend(args: argparse.Namespace) -> BuildBackend:
    """The project the command is pointed at, as the build backend every command below works through."""
    project = _setuptools_project(args.setuptools, args.source_dir, args.build_dir)
    if project is not None:
        from ciq_build.project.setuptools_backend import SetuptoolsBackend

        return SetuptoolsBackend(project)
    from ciq_build.project.cmake_backend import CMakeBackend

    # --cmake-arg is tune's alone (declared as TuneOptions.cmake_args, its dest); other commands have none.
    return CMakeBackend(args.build_dir, args.source_dir, tuple(getattr(args, "cmake_args", None) or ()))


def _search_number(text: str) -> int:
    """--search N: a search's number in the journal, 1 the oldest."""
    try:
        number = int(text)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is no search number: give 1 for the oldest search, 2 for the "
                                         "next, ... (the report names how many the journal holds)")
    return number


def _say_now(text: str) -> None:
    print(text, end="", flush=True)


# The signal that stopped this command; the exit code is 128 + it, as a shell reports a process it killed.
_stopped_by: list[int] = []


def _interrupted(signum: int, frame: object) -> None:
    # SIGINT, SIGTERM and SIGHUP (a closed terminal) end a command the same way: nothing more
    # starts, in any thread, and the driver's killer thread kills what runs (stopping.interrupt: a flag
    # and an event, as this may run while the main thread holds a lock); the KeyboardInterrupt
    # unwinds the main thread, whose joins of threads then find their runs gone. The journal already
    # holds every finished evaluation, so the next `tune` resumes. A second signal while it stops
    # is ignored: it would interrupt the killing of what runs.
    if _stopped_by:
        return
    stopping.interrupt()
    _stopped_by.append(signum)
    raise KeyboardInterrupt


def _quiet_when_stopped(unraisable: sys.UnraisableHookArgs) -> None:
    # Python runs the handler above at whatever bytecode the main thread is at, and some places
    # cannot raise: an at-fork callback (logging's, during a Popen with a preexec_fn) reports the
    # KeyboardInterrupt as "Exception ignored" with a traceback and goes on. That is no fault: the
    # stop is already set, so the next run or wait of the main thread raises `stopping.Stopped`.
    if isinstance(unraisable.exc_value, KeyboardInterrupt) and _stopped_by:
        return
    sys.__unraisablehook__(unraisable)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; its exit code. A reader that goes away (`show | head`) ends it quietly, as SIGPIPE would."""
    try:
        try:
            return _run(argv)
        finally:
            sys.stdout.flush()  # here, not at exit, where a closed pipe is a traceback nothing can catch
    except BrokenPipeError:
        # What is left to write goes nowhere (Python's own recipe): the flush at exit must not fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 128 + signal.SIGPIPE


def parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """`parser`'s reading of `argv`; an option it does not know is refused by the command's own parser (its usage),
    with the option meant where one is close: "unrecognized arguments: --generatoins 2" came from the top-level
    parser, with its usage and nothing of --generations (wangzyon's SGEMM's trial)."""
    args, extras = parser.parse_known_args(argv)
    if extras:
        command = next((action.choices.get(args.command) for action in parser._actions
                        if isinstance(action, argparse._SubParsersAction) and args.command), None)
        own = command if isinstance(command, argparse.ArgumentParser) else parser
        own.error(f"unrecognized arguments: {' '.join(extras)}{_meant(own, extras)}")
    return args


def _meant(parser: argparse.ArgumentParser, extras: Sequence[str]) -> str:
    """" (did you mean --generations?)" for the misspelt options among `extras`, of `parser`'s shown ones."""
    import difflib

    known = [name for action in parser._actions if action.help != argparse.SUPPRESS
             for name in action.option_strings if name.startswith("--")]
    meant = []
    for extra in extras:
        name = extra.split("=", 1)[0]
        if name.startswith("--") and (close := difflib.get_close_matches(name, known, n=1, cutoff=0.75)):
            meant.append((close[0], name))
    if not meant:
        return ""
    if len(meant) == 1:
        return f" (did you mean {meant[0][0]}?)"
    return " (did you mean " + ", ".join(f"{right} for {wrong}" for right, wrong in meant) + "?)"


def _run(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parse(parser, argv)
    if args.cmake_dir:
        print(cmake_dir())
        return 0
    if args.nvcc:
        # The pip toolkit is never on PATH: without this, a new user searched site-packages for it (BabelStream).
        from ciq_build.compiler.toolchain import pip_nvcc
        nvcc = pip_nvcc()
        if nvcc is None:
            print("ciq_build: error: no CUDA toolkit installed with ciq_build (the [cuda] extra: pip install "
                  "'ciq_build[cuda]'); or give CMake your own toolkit's nvcc", file=sys.stderr)
            return 2
        print(nvcc)
        return 0
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    build_dir_implicit = hasattr(args, "build_dir") and not getattr(args, "build_dir_given", False)
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _interrupted)
    sys.unraisablehook = _quiet_when_stopped
    from ciq_build.tune.progress import configure_logging

    configure_logging(-1 if args.quiet else 1 if args.verbose else 0)
    if args.command in ("tune", "verify", "sample-acfs"):
        guard.guard_driver()  # nothing these start outlives them, even when they are SIGKILLed
    command = _COMMANDS.get(args.command)
    if command is None:
        parser.error(f"unknown command {args.command}")
    try:
        return command(args)
    except CiqError as error:
        print(f"ciq_build: error: {error}", file=sys.stderr)
        if build_dir_implicit and not (args.build_dir / "CMakeCache.txt").is_file() and not _setuptools_project(
                getattr(args, "setuptools", None), args.source_dir, args.build_dir):
            print(f"ciq_build: {_IMPLICIT_BUILD}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        processes.stop_all()
        stopped_by = signal.Signals(_stopped_by[0] if _stopped_by else signal.SIGINT)
        # The same command of a `tune --fresh` would start over and throw the journal away.
        again = "the same command without --fresh" if getattr(args, "fresh", False) else "the same command"
        print(f"ciq_build: stopped by {stopped_by.name}; the journal keeps every finished evaluation: run "
              f"{again} to resume", file=sys.stderr)
        return 128 + stopped_by


def _tune(args: argparse.Namespace) -> int:
    if (not args.target) != args.all_targets:
        print(f"ciq_build: error: {_TUNE_WHAT}", file=sys.stderr)
        return 2
    backend = _backend(args)
    # The project's own build dir: a setuptools project keeps its state in <project>/build.
    options = dataclasses.replace(read_tune_options(args), build_dir=backend.build_dir)
    if args.result_file is not None:  # its options are the parent's, checked there
        from ciq_build.tune.all_targets import tune_one
        from ciq_build.tune.target_result import write_result

        result = tune_one(options, backend)
        write_result(result, args.result_file)
        return result.exit_code
    if args.all_targets or len(args.target) > 1:
        from ciq_build.tune.all_targets import run_tune_all

        return run_tune_all(options, backend).exit_code
    from ciq_build.tune.driver import run_tune

    return 0 if run_tune(options, backend).ok else 1


def _show(args: argparse.Namespace) -> int:
    from ciq_build.reports.show import show

    backend = _backend(args)
    if args.pin_file is None:  # a copied build tree's manifests name the other tree's pins: that one's was shown
        backend.check_buildable()
    text, applies = show(args.target, backend, args.pin_file)
    print(text)
    return 0 if applies else 1


def _list(args: argparse.Namespace) -> int:
    from ciq_build.reports.show import list_targets

    backend = _backend(args)
    backend.check_buildable()  # before its manifests, whose pins may be another tree's
    print(list_targets(backend))
    return 0


def _sample_acfs(args: argparse.Namespace) -> int:
    from ciq_build.search.acf_pool import sample_pool

    print(sample_pool(args.space, args.count, args.out, args.seed))
    return 0


def _report(args: argparse.Namespace) -> int:
    from ciq_build.reports.page import report, watch

    build_dir = _journal_build_dir(args)
    if args.watch:
        print(watch(args.target, build_dir, args.source_dir, _say_now, args.format, args.output, args.search,
                    args.architecture), end="")
        return 0
    print(report(args.target, build_dir, args.source_dir, args.format, args.output, args.search,
                 architecture=args.architecture), end="")
    return 0


def _export(args: argparse.Namespace) -> int:
    from ciq_build.reports.export import export

    print(export(args.target, _journal_build_dir(args), args.source_dir, csv_file=args.csv, json_file=args.json,
                 search=args.search, optuna_file=args.optuna, kernel_tuner_file=args.kernel_tuner,
                 architecture=args.architecture), end="")
    return 0


def _verify(args: argparse.Namespace) -> int:
    from ciq_build.pin.verify import verify
    from ciq_build.reports.show import require_pin

    backend = _backend(args)
    backend.check_buildable()  # before its manifest, whose paths may be another tree's
    if args.source_dir is not None:  # -S: configure --build-dir first where it is not yet, as tune does
        backend.prepare()
    require_pin(args.target, backend)  # why there is none, as show says it
    verified = verify(args.target, backend)
    print(verified.text)
    return 0 if verified.ok else 1


# Each command's body, by name: what `_run` calls once the command line is read.
_COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "tune": _tune, "show": _show, "list": _list, "sample-acfs": _sample_acfs, "report": _report,
    "export": _export, "verify": _verify,
}
