"""What the experiments under bench/ measure ciq_build with, beside the public API.

The public API (``ciq_build``: ``Search``, ``space``, ``tune_target``; ``python -m ciq_build``) tunes; an
experiment also takes a tune apart to time or count one piece of it. bench/ imports the package only
from ``ciq_build`` and from here, so that a refactor of the package's internals changes this module
(and mypy says where), not the experiments. Nothing here is a promise to users: it follows the
package. Every name below is the package's own object, re-exported, unless it says *wrapper*.

A tune as one arm of an experiment (bench/racing, bench/streaming):
    ``tune_arm(options, racing=, dedupe=)``  *wrapper*: one tune of a configured tree, quietly, with racing
        and/or dedupe switched off (as the tune was before them); its ``ArmRun``: the outcome, the journal's
        evaluation records, the wall time, and the benchmark runs, raced and deduped candidates they count
    ``configure_tree(source, build, cmake_args, nvcc=None)``  *wrapper*: a user's tree configured as
        ``tune -S`` configures one
    ``print_table(header, rows)``  *wrapper*: the experiments' tables, columns as wide as their widest cell
    ``TuneOptions``, ``TuneOutcome``, ``MeasureSettings``: the options of ``tune``, what it returns, the
        measurement's settings (``confirm_rounds``)

Benchmarks and the statistics a tune decides with (bench/interim_look, bench/sample_kernels,
bench/public_kernels): ``BenchSpec`` (one benchmark run's command), ``interleaved`` (two benchmarks in
alternating rounds), ``beats_baseline`` (the noise test a pin must pass), ``interim_look``,
``INTERIM_ALPHA``, ``FINAL_ALPHA`` (the re-measure's look and its levels), ``parse_output`` (the line
protocol read out of a benchmark's output), ``GpuSlots``, ``load_manifest``/``Manifest`` (what a
configured target declares: benchmark, METRIC, UNIT).

Compiler controls and ACF pools (bench/public_kernels, bench/throughput): ``Controls``, ``AcfRef``,
``KNOBS`` (the public nvcc/ptxas knobs and their values), ``controls_from_candidate``,
``write_options_file``, ``find_toolchain``, ``load_toolchain``, ``Toolchain``; ``POOL_FILE``,
``load_pool``, ``pool_sha256`` (an ``acf-pool:`` folder); ``atomic_write``; ``build_tool``,
``cmake_dir`` (the cmake and ninja ciq_build runs, and its CMake package).

Pins (bench/pin_readers): ``resolve_build_pin`` (the Python pin reader: the pin a build applies, as the
CMake module's ``_ciq_resolve_pin`` decides it), ``CiqError`` (what the readers raise on a record they refuse).

Processes (bench/stop_signal, bench/pin_readers): ``run_process`` (``proc.run``: a process with a timeout, its tree killed
at the end), ``wait_or_stop`` (a wait that hears a signal within ``STOP_POLL``).

The evaluation pipeline, piece by piece, for white-box experiments that time each piece
(bench/throughput) or put a TEST DOUBLE in place of the compile and benchmark (bench/ray_scaling):
``ScratchTree``, ``CandidateBuild``, ``VERBOSE_PTXAS``, ``ptxas_path``, ``metrics`` (modules),
``BuildRunner``, ``SearchLoop``, ``EvaluationCache``, ``Journal``, ``controls_id``, ``Timeouts``,
``RayPool``, ``RaySlot``, ``Proposal``, ``Evaluation``, ``GeneticSource``, ``build_space``,
``parse_objectives``, ``parse_params``, ``SearchSettings``; ``Minimizer`` (a minimal pin's builds without each
control of a winner).

The search engines side by side (bench/search_quality): ``SearchRequest``, ``make_source``
(a registered strategy as a source of proposals), ``interpret`` (an objective's return value as
scores), ``hypervolume_2d``, ``non_dominated``.
"""

from __future__ import annotations

import io
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ciq_build.compiler import metrics, ptxas_path
from ciq_build.compiler.controls import KNOBS, AcfRef, Controls, controls_from_candidate, write_options_file
from ciq_build.compiler.toolchain import Toolchain, find_toolchain, load_toolchain
from ciq_build.core.objectives import parse_objectives
from ciq_build.core.params import parse_params
from ciq_build.core.pareto import hypervolume_2d, non_dominated
from ciq_build.core.settings import USER_CONFIGURE_TIMEOUT, MeasureSettings, SearchSettings
from ciq_build.errors import CiqError
from ciq_build.measure.bench import BenchSpec
from ciq_build.measure.gpu_slots import GpuSlots
from ciq_build.measure.proc import run as run_process
from ciq_build.measure.protocol import parse_output
from ciq_build.measure.stats import FINAL_ALPHA, INTERIM_ALPHA, beats_baseline, interim_look, interleaved
from ciq_build.measure.stopping import wait_or_stop
from ciq_build.pin.apply import resolve_build_pin
from ciq_build.project.cmake_backend import CMakeBackend
from ciq_build.project.cmake_trees import ScratchTree, configure_user_tree
from ciq_build.project.manifest import Manifest, load_manifest
from ciq_build.project.worker import VERBOSE_PTXAS, CandidateBuild
from ciq_build.ray.executor import RayPool, RaySlot
from ciq_build.resources import build_tool, cmake_dir
from ciq_build.search.acf_pool import POOL_FILE, load_pool, pool_sha256
from ciq_build.search.base import Proposal
from ciq_build.search.evaluation import Evaluation
from ciq_build.search.evolution import interpret
from ciq_build.search.genetic import GeneticSource
from ciq_build.search.select import build_space
from ciq_build.search.strategies import make_source
from ciq_build.search.strategy import SearchRequest
from ciq_build.state.durable import atomic_write
from ciq_build.state.journal import Journal
from ciq_build.tune.cache import EvaluationCache
from ciq_build.tune.driver import TuneRun
from ciq_build.tune.finish import TuneOutcome
from ciq_build.tune.loop import SearchLoop
from ciq_build.tune.minimize import Minimizer
from ciq_build.tune.replay import controls_id
from ciq_build.tune.runner import BuildRunner
from ciq_build.tune.timeouts import Timeouts
from ciq_build.tune.tune_options import TuneOptions, resolve_settings

__all__ = [
    # a tune as one arm of an experiment
    "ArmRun", "tune_arm", "configure_tree", "print_table", "TuneOptions", "TuneOutcome", "MeasureSettings",
    # benchmarks and the statistics a tune decides with
    "BenchSpec", "interleaved", "beats_baseline", "interim_look", "INTERIM_ALPHA", "FINAL_ALPHA", "parse_output",
    "GpuSlots", "load_manifest", "Manifest",
    # compiler controls and ACF pools
    "Controls", "AcfRef", "KNOBS", "controls_from_candidate", "write_options_file", "find_toolchain",
    "load_toolchain", "Toolchain", "POOL_FILE", "load_pool", "pool_sha256", "atomic_write", "build_tool",
    "cmake_dir",
    # pins
    "resolve_build_pin", "CiqError",
    # processes
    "run_process", "wait_or_stop",
    # the evaluation pipeline, piece by piece
    "ScratchTree", "CandidateBuild", "VERBOSE_PTXAS", "ptxas_path", "metrics", "BuildRunner", "SearchLoop",
    "EvaluationCache", "Journal", "controls_id", "Timeouts", "RayPool", "RaySlot", "Proposal", "Evaluation",
    "GeneticSource", "build_space", "parse_objectives", "parse_params", "SearchSettings", "Minimizer",
    # the search engines side by side
    "SearchRequest", "make_source", "interpret", "hypervolume_2d", "non_dominated",
]


@dataclass
class ArmRun:
    """One arm's tune: its outcome, the evaluation records of its journal, its wall seconds."""

    outcome: TuneOutcome
    evaluations: list[dict[str, Any]]
    seconds: float

    @property
    def search_runs(self) -> int:
        """Benchmark runs of the baseline and the candidates (not the re-measure before the pin)."""
        return sum(int(r.get("runs", 0)) for r in self.evaluations)

    @property
    def raced(self) -> int:
        """Candidates stopped early by racing (a candidate sharing earlier code ran no benchmark of its own)."""
        return sum(1 for r in self.evaluations if r.get("raced") and not r.get("same_code_as"))

    @property
    def same_code(self) -> int:
        """Candidates that built the machine code of an earlier one (dedupe measured them once)."""
        return sum(1 for r in self.evaluations if r.get("same_code_as"))

    @property
    def benchmark_s(self) -> float:
        """Seconds the search spent in benchmark processes, by the driver's timings."""
        return sum(float((r.get("timings") or {}).get("benchmark_s", 0.0)) for r in self.evaluations)


def tune_arm(options: TuneOptions, *, racing: bool = True, dedupe: bool = True) -> ArmRun:
    """Tune `options.target` in `options.build_dir` (configured already), quietly, with racing and dedupe
    as asked: off, the tune runs as it did before them."""
    manifest = load_manifest(options.build_dir, options.target or "")
    tune = TuneRun(resolve_settings(options, manifest), manifest, find_toolchain(manifest.toolchain.cuda_compiler),
                   CMakeBackend(options.build_dir), out=io.StringIO())
    if not racing:
        tune.runner.racing = None
    if not dedupe:
        tune.runner.dedupe = None
    started = time.monotonic()
    stdout, sys.stdout = sys.stdout, io.StringIO()  # the summary a tune prints; the experiment prints its own table
    try:
        outcome = tune.run()
    finally:
        sys.stdout = stdout
    seconds = time.monotonic() - started
    journal = [json.loads(line) for line in tune.cache.path.read_text().splitlines() if line.strip()]
    return ArmRun(outcome, [r for r in journal if r.get("kind") == "evaluation"], seconds)


def configure_tree(source: Path, build: Path, cmake_args: Sequence[str], nvcc: Path | None = None) -> None:
    """Configure the CMake project `source` into `build` as `tune -S` does (Ninja, ciq_build's CMake package,
    `nvcc` or the CUDA compiler tune finds)."""
    configure_user_tree(source, build, find_toolchain(nvcc), None, list(cmake_args), USER_CONFIGURE_TIMEOUT)


def print_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """Columns as wide as their widest cell, two spaces apart."""
    table = [tuple(header), *map(tuple, rows)]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)))
