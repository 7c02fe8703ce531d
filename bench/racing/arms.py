"""What bench/racing/run.py and bench/racing/gpu.py share: one tune with racing and dedupe on or off, and a table.

Each arm is a real `tune` (ciq_build.tune.driver.TuneRun) of an already
configured build tree; switching racing (ciq_build.measure.racing) or dedupe
(ciq_build.tune.dedupe) off gives the tune as it was before them. What an arm
cost is read from its journal, the record the tune itself keeps.
"""

from __future__ import annotations

import io
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ciq_build.compiler.toolchain import find_toolchain
from ciq_build.project.cmake_backend import CMakeBackend
from ciq_build.project.manifest import load_manifest
from ciq_build.tune.driver import TuneOutcome, TuneRun
from ciq_build.tune.tune_options import TuneOptions, resolve_settings


@dataclass
class ArmRun:
    """One arm's outcome and the evaluation lines of its journal."""

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
        return sum(1 for r in self.evaluations if r.get("same_code_as"))

    @property
    def benchmark_s(self) -> float:
        return sum(float((r.get("timings") or {}).get("benchmark_s", 0.0)) for r in self.evaluations)


def run_arm(options: TuneOptions, *, racing: bool, dedupe: bool) -> ArmRun:
    """Tune `options.target` in `options.build_dir` (configured already), quietly, racing and dedupe as asked."""
    manifest = load_manifest(options.build_dir, options.target or "")
    tune = TuneRun(resolve_settings(options, manifest), manifest, find_toolchain(manifest.toolchain.cuda_compiler),
                   CMakeBackend(options.build_dir), out=io.StringIO())
    if not racing:
        tune.runner.racing = None
    if not dedupe:
        tune.runner.dedupe = None
    started = time.monotonic()
    stdout, sys.stdout = sys.stdout, io.StringIO()  # the summary a tune prints; the bench prints its own table
    try:
        outcome = tune.run()
    finally:
        sys.stdout = stdout
    seconds = time.monotonic() - started
    journal = [json.loads(line) for line in tune.cache.path.read_text().splitlines() if line.strip()]
    return ArmRun(outcome, [r for r in journal if r.get("kind") == "evaluation"], seconds)


def print_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """Columns as wide as their widest cell, two spaces apart."""
    table = [tuple(header), *map(tuple, rows)]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)))
