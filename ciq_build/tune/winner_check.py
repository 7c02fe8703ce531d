"""Before a static tune pins PARAMS: the winner's benchmark run once, for its own check (CIQ_CHECK).

A static objective (registers, shared memory, instructions) never runs the program, yet a source parameter can
change what a kernel computes (a tile too small for its data). Where the target has a BENCHMARK, the winner's is
built and run once before it is pinned: a failed check (or a crash) pins nothing. Where the benchmark finds no
GPU, or fails (or does not build) with the compiler's defaults too (a library the loader or the linker cannot
find, say), the pin is written and
says that its code was never run; where the target has no BENCHMARK, too (`unchecked`: nothing could run it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from ciq_build.compiler.controls import Controls
from ciq_build.core.causes import Cause
from ciq_build.measure.bench import BenchRun, run_once
from ciq_build.measure.protocol import clip
from ciq_build.project.preflight import benchmark_outside
from ciq_build.project.worker import WorkerTree
from ciq_build.tune.runner import BuildRunner


@dataclass(frozen=True)
class WinnerCheck:
    """What the winner's one benchmark run said."""

    ran: bool  # False: no GPU here (or the benchmark did not build)
    failed: bool  # it ran and failed (its check, a crash, an exit status): nothing is pinned
    text: str  # for the summary and the record
    scratch: tuple[str, ...] = ()  # the scratch trees' folders the text may quote (the benchmark's path)

    def to_record(self) -> dict[str, Any]:
        """As the pinned record keeps it: the record is committed, so this machine's scratch folders are not."""
        says = self.text
        for folder in self.scratch:
            says = says.replace(folder, "<scratch tree>")
        return {"ran": self.ran, "failed": self.failed, "says": says}


def wants_check(runner: BuildRunner, controls: Controls) -> bool:
    """A static tune whose winner sets PARAMS, of a target with a benchmark."""
    return runner.manifest.benchmark is not None and not runner.needs_benchmark and bool(controls.defines)


def unchecked(runner: BuildRunner, controls: Controls) -> WinnerCheck | None:
    """What a static tune's winner that sets PARAMS says of its code where the target has no BENCHMARK to run
    it: that nothing ran it (None where it sets no PARAMS, or a benchmark runs it)."""
    if runner.manifest.benchmark is not None or runner.needs_benchmark or not controls.defines:
        return None
    params = " ".join(f"-D{name}={value}" for name, value in controls.defines)
    # In the words the user declared them in: a setuptools project has no BENCHMARK, its CudaExtension a ciq_benchmark=.
    bench, defines = ("ciq_benchmark=", "params=") if runner.manifest.setuptools else ("BENCHMARK", "PARAMS")
    return WinnerCheck(False, False, f"not run: {runner.manifest.target} has no {bench}; its {defines} ({params}) "
                                     "were judged by static objectives alone, and may change what the kernels "
                                     f"compute: run the program with them before relying on the pin (a {bench} "
                                     "that prints CIQ_CHECK is run once before pinning)")


def check_winner(runner: BuildRunner, tree: WorkerTree, controls: Controls, timeout: float,
                 say: Callable[[str], None], defaults_tree: WorkerTree | None = None) -> WinnerCheck:
    """Build the winner's benchmark in `tree` and run it once, on a GPU slot; where it fails, the defaults' once
    in `defaults_tree` (a tree nothing reads after), to tell the PARAMS' failure from the benchmark's own."""
    check = _check(runner, tree, controls, timeout, say, defaults_tree)
    trees = (tree, defaults_tree) if defaults_tree is not None else (tree,)
    return replace(check, scratch=tuple(str(t.root) for t in trees))


def _check(runner: BuildRunner, tree: WorkerTree, controls: Controls, timeout: float,
           say: Callable[[str], None], defaults_tree: WorkerTree | None) -> WinnerCheck:
    params = " ".join(f"-D{name}={value}" for name, value in controls.defines)
    say(f"running the winner's benchmark once for its check: its PARAMS ({params}) may change what the kernels "
        "compute, which the static objectives do not see")
    outside = None if runner.manifest.setuptools else benchmark_outside(runner.manifest)
    if outside:  # a scratch tree's build of it would write over the user's own executable
        return WinnerCheck(False, False, f"not run: {outside}; its PARAMS ({params}) were judged by static "
                                         "objectives alone: run its benchmark with them")
    built = tree.build(controls, timeout, benchmark=True)
    if not built.ok:
        # BabelStream's benchmark links libnvidia-ml, which a machine without a driver lacks: a static tune never
        # links, so the link failed first at the winner's check and was blamed on -DUNROLL_FACTOR=1.
        if defaults_tree is not None and defaults_tree is not tree:
            say("the winner's benchmark did not build: building the defaults' one, to see whether the PARAMS are why")
            base = defaults_tree.build(Controls(), timeout, benchmark=True)
            if not base.ok:
                return WinnerCheck(False, False, f"not run: the benchmark does not build with the compiler's "
                                                 f"defaults either ({_first_error(base.message)}), so its failure "
                                                 f"with {params} says nothing of them; its PARAMS were judged by "
                                                 "static objectives alone: fix the benchmark's build and run it "
                                                 "with them")
        return WinnerCheck(False, True, f"the winner's benchmark did not build: {built.message}")
    run = _run(runner, tree)
    check = f"CIQ_CHECK {run.check}" if run.check else "no CIQ_CHECK printed"
    if run.cause == Cause.NO_GPU:
        return WinnerCheck(False, False, f"not run: no GPU here ({run.message}); its PARAMS ({params}) were "
                                         "judged by static objectives alone: run its benchmark on a GPU")
    if _passed(run):
        return WinnerCheck(True, False, f"ran once with {params}: {check}, exit 0")
    if defaults_tree is not None and defaults_tree is not tree:
        # cuda_hgemv's benchmark links cuBLAS, which the loader did not find (exit 127): the failure was blamed on
        # -DHGEMV_UNROLL=1 and the user told to keep that value out of the search.
        say("the winner's benchmark failed: running the defaults' once, to see whether the PARAMS are why")
        base = defaults_tree.build(Controls(), timeout, benchmark=True)
        if base.ok and not _passed(same := _run(runner, defaults_tree)):
            return WinnerCheck(False, False, f"not run: the benchmark fails with the compiler's defaults too "
                                             f"({_said(same)}), so its failure with {params} says nothing of them; "
                                             f"its PARAMS were judged by static objectives alone: fix the benchmark "
                                             "and run it with them")
    return WinnerCheck(True, True, f"ran once with {params} and failed: {_said(run)}")


def _run(runner: BuildRunner, tree: WorkerTree) -> BenchRun:
    """The benchmark built in `tree`, run once on a GPU slot."""
    with runner.slots.slot() as env:
        return run_once(runner.bench_spec(tree).with_env(env))


def _passed(run: BenchRun) -> bool:
    """A check run reads no metric: a benchmark that printed none but passed (exit 0) passed."""
    return run.ok or run.cause == Cause.NO_METRIC


def _first_error(message: str) -> str:
    """A failed build's first line that says why (the linker's "cannot find -lnvidia-ml", "undefined reference",
    a compiler's "error"), clipped; else its first line: the whole of a link's output is tens of lines, and its
    "collect2: error: ld returned 1 exit status" says nothing of why."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    # In this order: a link's lines before "undefined reference" name the function (BabelStream's `nvml_error`).
    why = ("cannot find", "undefined reference", "error:")
    said = next((line for word in why for line in lines
                 if word in line.lower() and not line.startswith(("collect2", "ninja", "FAILED"))), None)
    return clip(said or (lines[0] if lines else message), 240)


def _said(run: BenchRun) -> str:
    """A failed run's message and, where the output ended with a line it does not hold, that line (the loader's
    'error while loading shared libraries: ...', an assertion), clipped."""
    last = run.output_tail.strip().splitlines()[-1:] if run.output_tail.strip() else []
    if not last or last[0].strip() in run.message:
        return run.message
    return f"{run.message}: {clip(last[0].strip(), 240)}"
