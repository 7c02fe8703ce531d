"""One worker's tree, whatever kind of project builds in it: the `WorkerTree` protocol the driver works through.

A tune builds each candidate in a worker's tree of its own, made by the
project's `BuildBackend` (ciq_build.project.backend): a scratch CMake build
tree (ciq_build.project.cmake_trees), an extension folder that build_ext
builds into (ciq_build.project.setuptools_backend). The driver, its
runners, the confirmation and the minimal pin ask a tree for three things
only: configure it once, build a candidate in it (a `CandidateBuild`: built,
or failed and why), and how its benchmark runs (a `BenchSpec`). What both
kinds of tree share is here too: where a target's trees live, and what a
finished compile step made of the candidate (`compile_verdict`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ciq_build.compiler.controls import Controls
from ciq_build.compiler.toolchain import Toolchain
from ciq_build.core.causes import Cause
from ciq_build.core.settings import timeout_advice
from ciq_build.measure import proc
from ciq_build.measure.bench import BenchSpec
from ciq_build.project import environment
from ciq_build.project.manifest import Manifest

# Reading -Xptxas -v output does not change the generated code (only the PTX
# section's recorded ptxas options), so what is measured is what ships.
VERBOSE_PTXAS = ("-Xptxas=-v",)
# The compile log is kept whole up to this (the static metrics are parsed from it).
COMPILER_OUTPUT_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class CandidateBuild:
    """The outcome of rebuilding the tuned target with one candidate's controls."""

    ok: bool
    cause: Cause | None  # compile_failed / compile_timeout, or an environmental cause (ciq_build.project.environment)
    message: str
    compile_seconds: float
    compiler_output: str
    objects: tuple[Path, ...] = ()
    benchmark: Path | None = None
    # The front ends this build took as kept from an earlier compile (ciq_build.compiler.ptxas_path): the
    # seconds they took when they ran, not spent in `compile_seconds`.
    kept_front_end_seconds: float = 0.0
    # (kernel, the most threads a block of it has) of the kernels whose `__launch_bounds__` the build read where it has
    # no objects (ptxas alone, from the kept front end's PTX); with objects, their cubins say it.
    launch_bounds: tuple[tuple[str, int], ...] = ()
    # The kernels that use dynamic shared memory (`extern __shared__`), read with the launch bounds from the PTX.
    dynamic_shared: tuple[str, ...] = ()
    # The executable this build linked (the benchmark, or the tuned target where it is the benchmark); None where it
    # linked none. A relocatable target's kernels get their registers and stack there, at the device link.
    linked: Path | None = None


class WorkerTree(Protocol):
    """One worker's private place to build the tuned target: what a tune asks of it."""

    manifest: Manifest
    root: Path  # the tree's folder, under scratch_root(manifest)
    toolchain: Toolchain
    # The project writes into its source tree, as the tune has seen (ciq_build.tune.source_watch): a tree's
    # first build then takes the source tree's turn.
    writes_sources: bool

    @property
    def build_dir(self) -> Path:
        """Where the tree builds: the folder its objects' code keys are relative to."""
        ...

    @property
    def object_dir(self) -> Path:
        """This tree's copy of the manifest's object folder (`manifest.object_dir`): where a build's objects are."""
        ...

    def configure(self, timeout: float) -> None:
        """Make the tree ready to build (once: reused while it is)."""
        ...

    def build(self, controls: Controls, timeout: float, static_only: bool = False, *,
              benchmark: bool = True) -> CandidateBuild:
        """Build the tuned target with `controls`, and the benchmark where one runs and `benchmark` (static
        objectives need none); `static_only`: only the compiler's report is read (no objects, no benchmark)."""
        ...

    def bench_spec(self, timeout: float, required: tuple[str, ...]) -> BenchSpec:
        """How this tree's build of the benchmark runs once."""
        ...


def compile_verdict(what: str, step: proc.ProcResult, witness: environment.CompileWitness, timeout: float,
                    tree: Path, objects: tuple[Path, ...], benchmark: Path | None) -> CandidateBuild:
    """What a finished compile step (`what`: "compile", "build_ext") in the tree at `tree` made of the
    candidate: built (its `objects` and `benchmark`), or failed and why (failed_build)."""
    output = step.stdout + step.stderr
    if step.ok and step.truncated:
        # The static metrics are read from this log: a cut one would score the kernels it lost as 0.
        return CandidateBuild(False, Cause.COMPILE_FAILED,
                              f"{what} printed more than ciq_build keeps ({step.truncation}); "
                              "its resource usage cannot be read from a cut log", step.seconds, output)
    if not step.ok:
        return failed_build(what, step, witness, timeout, tree, step.seconds, output)
    return CandidateBuild(True, None, "", step.seconds, output, objects, benchmark)


def failed_build(what: str, step: proc.ProcResult, witness: environment.CompileWitness, timeout: float, tree: Path,
                 compile_seconds: float, compiler_output: str) -> CandidateBuild:
    """A failed step's CandidateBuild: its cause, and its log's tail with timeout advice where it hung."""
    cause = failure_cause(step, witness, tree)
    advice = f" ({timeout_note(cause, witness, timeout)})" if step.timed_out else ""
    return CandidateBuild(False, cause, f"{what} {step.describe()}{advice}:\n{step.output_tail()}",
                          compile_seconds, compiler_output)


def failure_cause(step: proc.ProcResult, witness: environment.CompileWitness, tree: Path) -> Cause:
    """The candidate's own failure (compile_failed/compile_timeout) or the machine's (not cached)."""
    output = step.stdout + step.stderr
    if environment.says_disk_full(output):
        return environment.DISK_FULL
    if step.timed_out:
        if not witness.hang_was_the_candidates():
            return environment.BUILD_TOOL_TIMEOUT
        return timed_out_cause(witness)
    if environment.foreign_signal(step.signal) or environment.says_killed(output):
        return environment.COMPILE_KILLED
    # nvcc does not always say why a write failed ("Failed to preprocess host
    # compiler properties" with a full TMPDIR): look at the disks themselves.
    if environment.full_file_systems([tree, environment.compiler_temp_dir()]):
        return environment.DISK_FULL
    return Cause.COMPILE_FAILED


def timed_out_cause(witness: environment.CompileWitness) -> Cause:
    """A compile of the candidate's that ran past its limit: the machine's where it had waited for a CPU for more
    than half the limit (compile_starved: a resumed tune builds it again), else the candidate's (compile_timeout).
    Every path that compiles a candidate decides by this: a build step (failure_cause), ptxas alone."""
    return environment.COMPILE_STARVED if witness.starved() else Cause.COMPILE_TIMEOUT


def timeout_note(cause: Cause, witness: environment.CompileWitness, timeout: float) -> str:
    """What a failure message says of a step that ran past its `timeout`, by its `cause`."""
    if cause == environment.COMPILE_STARVED:
        return (f"it waited {witness.waited:.1f} s of its {timeout:g} s limit for a CPU: the machine was loaded, so "
                "the timeout is not the candidate's; a resumed tune builds it again")
    return timeout_advice(timeout)


def existing_objects(paths: Iterable[Path]) -> tuple[Path, ...]:
    """The object files of a target's manifest that a build produced, in the manifest's order."""
    return tuple(path for path in paths if path.is_file())


def scratch_root(manifest: Manifest) -> Path:
    """Where the worker trees of one target live (inside the user's build dir, apart from it)."""
    return manifest.binary_dir / "ciq" / "scratch" / tune_name(manifest)


def tune_name(manifest: Manifest) -> str:
    """What names one tune's scratch trees and journal: the target, and the architecture of a tune
    --architecture (each architecture's tune resumes its own journal, in its own trees)."""
    suffix = f".sm_{manifest.tune_architecture}" if manifest.tune_architecture else ""
    return safe_name(manifest.target) + suffix


def options_file(root: Path, manifest: Manifest) -> Path:
    """A worker tree's nvcc options file: the candidate's controls, which its compiles read."""
    return root / f"{safe_name(manifest.target)}.nvcc-options"


def safe_name(name: str) -> str:
    """A file-system-safe rendering of a target name (names may hold spaces or punctuation)."""
    return re.sub(r"[^A-Za-z0-9_.+-]", "_", name)
