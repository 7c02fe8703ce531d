"""The baseline: the compiler's defaults, measured (or journaled), what every candidate is compared with."""

from __future__ import annotations

import logging
import re
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

from ciq_build.compiler.architectures import architecture_list
from ciq_build.compiler.controls import Controls
from ciq_build.compiler.gpu_arch import GPU_ARCH_METRIC, sm
from ciq_build.core.causes import Cause
from ciq_build.core.objectives import (
    Objective,
    metric_key,
    named_scores,
    needs_benchmark,
    unbenchmarked_names,
    with_unit,
)
from ciq_build.errors import BenchmarkError, BuildError, DiskFullError, NoGpuError
from ciq_build.project.per_block import COUNTED_DYNAMIC_METRIC, DYNAMIC_SHARED, DYNAMIC_SHARED_METRIC, how_to_declare
from ciq_build.project.sources import Snapshot
from ciq_build.project.worker import WorkerTree
from ciq_build.search.base import Proposal
from ciq_build.search.evaluation import Evaluation
from ciq_build.tune.cache import EvaluationCache
from ciq_build.tune.runner import DECLARED_SIZE_METRIC, SAYS_WHAT_TO_DO, THREADS_METRIC, BuildRunner
from ciq_build.tune.source_watch import SourceWatch
from ciq_build.tune.timeouts import baseline_limits

LOG = logging.getLogger("ciq_build")


def measure_baseline(runner: BuildRunner, cache: EvaluationCache, tree: WorkerTree, target: str,
                     key_of: Callable[[Controls], str], sources: SourceWatch, before: Snapshot,
                     disk_full: Callable[[str], DiskFullError], say: Callable[[str], None]) -> Evaluation:
    """The baseline of `target`, built and measured in `tree` unless journaled ok; a CiqError where nothing can be
    compared with it. What its build writes into the source tree (since `before`) is left out of the fingerprint."""
    proposal = Proposal(id=-1, generation=0, params={})
    controls = Controls()
    evaluated = cache.lookup(proposal, controls, key_of(controls))
    if evaluated is None or not evaluated.ok:  # a failed baseline is always tried again
        limits = baseline_limits(runner.timeouts, runner.needs_benchmark)
        say(f"building and measuring the baseline (the compiler's defaults; {limits})")
        evaluated = runner.evaluate(tree, proposal, controls, key_of(controls))
        built = sources.snapshot()
        if sources.note(before, built, "building the baseline"):
            sources.fingerprint(built)
            evaluated.key = key_of(controls)
        if evaluated.cause == Cause.DISK_FULL:
            cache.record_environmental(evaluated)
            raise disk_full("building the baseline")
        if evaluated.environmental:
            cache.record(evaluated)
            raise BuildError(
                f"the baseline of {target} (no compiler controls) failed for a reason outside "
                f"the candidate ({evaluated.cause}): {evaluated.message}\nNothing was cached; run the same "
                "command again once the machine is fine (memory, other processes, the build tool).")
        if evaluated.cause == Cause.NO_GPU:
            raise NoGpuError(
                f"the benchmark of {target} found no usable GPU, so runtime objectives cannot be "
                f"measured here. Tune one measured without a GPU instead: --objective, one of {unbenchmarked_names()}."
                f"\n{evaluated.message}")
        cache.record(evaluated, reuse=True)
    if not evaluated.ok:
        library_dirs = runner.toolchain.library_dirs() if runner.toolchain is not None else []
        raise BenchmarkError(failed_baseline_text(target, evaluated, library_dirs))
    assert evaluated.scores is not None
    say(f"baseline: {named_scores(runner.objectives, evaluated.scores)} "
        + ("(from the journal)" if evaluated.cached else f"(built and measured in {evaluated.seconds:.1f} s)"))
    if note := dynamic_shared_note(evaluated.metrics, declared=runner.dynamic_shared_memory is not None,
                                   setuptools=runner.manifest is not None and runner.manifest.setuptools):
        say(note)
    if note := declared_size_note(target, runner, evaluated.metrics):
        LOG.warning("%s", note)
    if note := no_gpu_seen_note(target, runner.objectives, evaluated):
        LOG.warning("%s", note)  # about the tune's results: said even with --quiet
    return evaluated


def declared_size_note(target: str, runner: BuildRunner, figures: dict[str, float]) -> str:
    """Where an occupancy of the whole target takes THREADS_PER_BLOCK as the block size of several kernels, that it
    does, and how to score the kernels it is of ("" elsewhere): wangzyon's SGEMM's eight kernels launch blocks of
    1024, 512 or 256 threads, and a declaration over kernel 7's tile PARAMS sized them all, each candidate's PARAMS
    changing the blocks of kernels whose code they do not touch."""
    sized = int(figures.get(DECLARED_SIZE_METRIC, 0))
    declared = runner.threads_per_block
    if sized < 2 or declared is None:
        return ""
    setuptools = runner.manifest is not None and runner.manifest.setuptools
    varies = "" if declared.expression.isdigit() else ", and each candidate's PARAMS change it for every one of them"
    return (f"warning: {sized} kernels of {target} have no __launch_bounds__, so the occupancy takes "
            f"{declared.setting.declaration(declared.expression, setuptools)} as the block size of each{varies}, and "
            "scores the least of their occupancies: where they launch blocks of other sizes, that figure is of blocks "
            "they never run. Score the kernels the declaration is of with occupancy:<kernel regex> (--objective or "
            "OBJECTIVES), or give the others __launch_bounds__")


def dynamic_shared_note(figures: dict[str, float], *, declared: bool = False, setuptools: bool = False) -> str:
    """Where the occupancy is scored or described and some kernels use dynamic shared memory, what it counted of it,
    or, undeclared, what it leaves out and what to add ("" elsewhere): flash_attention_inference's FA2 kernels hold
    64 KB of it a block, two blocks an SM on sm_80 whatever their registers, while an occupancy without it counted
    three at a lower register cap. `declared`: DYNAMIC_SHARED_MEMORY is, which counts for no kernel where none uses
    it (said, not silent). `setuptools`: the target is a CudaExtension's."""
    dynamic = int(figures.get(DYNAMIC_SHARED_METRIC, 0))
    keyword = DYNAMIC_SHARED.argument if setuptools else DYNAMIC_SHARED.keyword
    if not dynamic:
        # The kernels that use it are read from PTX: objects built for `-real` architectures alone embed none,
        # so "none uses it" may be "none could be read" (said, not taken as known).
        return (f"{keyword} is declared, but no kernel's PTX uses dynamic shared memory (extern __shared__), or "
                "the objects embed no PTX to read it from (architectures built -real only: add one with PTX, e.g. "
                "90 for 90-real): the occupancy counts it for none" if declared and THREADS_METRIC in figures else "")
    kernels = int(figures.get("kernels", dynamic))
    said = f"{dynamic} of the {kernels} kernels use dynamic shared memory (extern __shared__)"
    if counted := figures.get(COUNTED_DYNAMIC_METRIC):
        return f"{said}: their occupancy counts {int(counted)} bytes of it a block ({keyword})"
    return (f"{said}, which their launch sizes and no compiled figure holds: their occupancy here counts registers "
            "and static shared memory only, so it can be more than they get, and fewer registers gain nothing where "
            f"their shared memory already limits the blocks an SM holds. {how_to_declare(DYNAMIC_SHARED, setuptools=setuptools)}"
            "; or leave them out of the occupancy (occupancy:<kernel regex>)")


def baseline_for_search(runner: BuildRunner, trusted: Callable[[Evaluation, WorkerTree, Sequence[str]], Evaluation],
                        baseline: Evaluation, tree: WorkerTree, fitting: bool, built_architectures: str,
                        say: Callable[[str], None]) -> Evaluation:
    """The baseline the search goes on from, and the static figures of the architectures built but not scored.

    A journaled baseline is rebuilt now (in `tree`, its static figures checked: `trusted`, the confirmation's
    Confirmer.trusted_baseline, once a run: the winner's confirmation would do it anyway) where the register cap is
    `fitting` to its registers, or where other architectures are described: those figures are read from the first
    build, so a resume that took the baseline from the journal said none (stdgpu, built for 80;90) while a fresh
    tune says them after the baseline. A build of the scored architecture alone (`built_architectures`, the
    target's CMAKE_CUDA_ARCHITECTURES) describes no other, and its journaled baseline is not rebuilt: a resume
    builds nothing it did not need (a full disk is then said by the first candidate that meets it).
    """
    scored = runner.scored_architecture
    if fitting or (scored is not None and set(architecture_list(built_architectures)) != {scored}):
        baseline = trusted(baseline, tree, ("registers",) if fitting else ())
    if runner.other_architectures:
        static = [o for o in runner.objectives if o.source == "static"]
        say("not scored: " + "; ".join(
            f"{sm(arch)} " + ", ".join(f"{o.spec} {with_unit(o, figures[metric_key(o)])}" for o in static
                                       if metric_key(o) in figures)
            for arch, figures in runner.other_architectures.items()))
    return baseline


# A benchmark's failures that a machine without a GPU explains (a program that aborts on its first CUDA call without
# printing the runtime's words, as stdgpu's examples do: "terminate called without an active exception"). Not a run
# that ended well without the metric: its message says why (a METRIC regex that matched no line, say).
# A time of 0 too (bad_metric): a benchmark that checks no CUDA call times launches that all failed at once (GPUSorting's
# OneSweep benchmark printed "Total time elapsed: 0.000000", and the tune said only to fix the benchmark).
_BENCHMARK_FAILURES = (Cause.BENCH_SIGNAL, Cause.BENCH_EXIT, Cause.BENCH_TIMEOUT, Cause.BAD_METRIC)


# The dynamic loader's words for a shared library it cannot find (glibc's ld.so), printed before main() runs.
_MISSING_LIBRARY = re.compile(r"error while loading shared libraries: (\S+): cannot open shared object file")


def no_gpu_seen() -> str:
    """Why no GPU was seen, in words true of this machine: "nvidia-smi reported no GPU" was said where there is no
    nvidia-smi (wangzyon's SGEMM's trial, on a machine without one)."""
    if shutil.which("nvidia-smi") is None:
        return "no GPU was seen (there is no nvidia-smi on PATH, and so most likely no NVIDIA driver)"
    return "nvidia-smi reported no GPU"


def no_gpu_seen_note(target: str, objectives: Sequence[Objective], baseline: Evaluation) -> str:
    """Where a baseline measured for a benchmark objective ran where nvidia-smi reported no GPU, the warning that its
    figures may measure no GPU work ("" elsewhere): a benchmark that checks no CUDA call (mini-nbody's) prints a
    time, or a rate, of launches that all failed, and a pin from such figures is noise."""
    if not needs_benchmark(objectives) or GPU_ARCH_METRIC in baseline.metrics:
        return ""
    return (f"warning: {no_gpu_seen()} where the benchmark of {target} ran, yet it printed its figures: "
            "a benchmark that does not check its CUDA calls times launches that failed, not its kernels, and a pin "
            f"from such figures is noise. Tune one measured without a GPU here instead: --objective, one of "
            f"{unbenchmarked_names()}; or run the tune on a machine with a GPU.")


def failed_baseline_text(target: str, evaluated: Evaluation, library_dirs: Sequence[Path] = ()) -> str:
    """What a failed baseline says: its cause and, where its benchmark could not start for a shared library the
    loader did not find, which and where it is (of `library_dirs`, the toolkit's); where it failed with no GPU seen
    where it ran (nvidia-smi answered none), that this is the likely reason and which objectives need none."""
    text = f"the baseline of {target} (no compiler controls) failed: {evaluated.cause}: {evaluated.message}\n"
    missing = _MISSING_LIBRARY.search(evaluated.message) if evaluated.cause == Cause.BENCH_EXIT else None
    if missing:  # before the GPU: a benchmark that never started says nothing of one (cuda_hgemv and cuBLAS)
        text += missing_library_text(missing.group(1), library_dirs)
    elif evaluated.cause in _BENCHMARK_FAILURES and GPU_ARCH_METRIC not in evaluated.metrics:
        text += (f"{no_gpu_seen()} where the benchmark ran, which is likely why it failed: runtime "
                 f"objectives need one. Tune one measured without a GPU instead: --objective, one of "
                 f"{unbenchmarked_names()}; or run the tune on a machine with a GPU.")
    elif not any(said in evaluated.message for said in SAYS_WHAT_TO_DO):
        text += "Fix the build or benchmark first; nothing can be compared to a failing baseline."
    return text.rstrip("\n")  # a message that says all ends the text: no blank line after it


def missing_library_text(library: str, library_dirs: Sequence[Path]) -> str:
    """What to do for a benchmark the loader could not start, `library` not found: the folder of `library_dirs`
    that holds it on LD_LIBRARY_PATH (a pip toolkit's libraries are on no default path), or where to get it."""
    found = next((folder for folder in library_dirs if (folder / library).is_file()), None)
    text = (f"The benchmark did not start: the dynamic loader found no {library}, a shared library it links (with "
            "or without a GPU). ")
    if found is None:
        return text + ("Install it (the toolkit's libraries: docs/toolkit.md) and put its folder on "
                       "LD_LIBRARY_PATH for the tune, or link the benchmark with an RPATH there.")
    return text + (f"It is in {found}, the CUDA toolkit's, on no default path: run the tune with "
                   f"LD_LIBRARY_PATH={found}, or link the benchmark with an RPATH there (CMake: "
                   f"set_target_properties(<benchmark> PROPERTIES BUILD_RPATH {found})).")
