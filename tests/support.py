"""Helpers shared by the tests that drive CMake and Ninja."""

from __future__ import annotations

import shutil
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ciq_build.measure.proc import ProcResult

# Where things are, for tests in any folder under tests/.
TESTS = Path(__file__).resolve().parent
REPO_ROOT = TESTS.parent
PROGRAMS = TESTS / "programs"
PROJECTS = TESTS / "projects"


def build_tool(name: str) -> str:
    """A tool installed beside this Python (pip's cmake, ninja), else from PATH; skip without one."""
    # Not `import cmake`: the repository's cmake/ folder shadows the pip package.
    found = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if found is None:
        pytest.skip(f"needs {name} (pip install {name})")
    return found


def ensure_ok(result: ProcResult) -> ProcResult:
    assert result.ok, f"{' '.join(result.args)} {result.describe()}\n{result.output_tail(60)}"
    return result


def said(result: ProcResult) -> str:
    """stdout and stderr with CMake's line wrapping undone."""
    return " ".join((result.stdout + "\n" + result.stderr).split())


# A register-hungry kernel: how ptxas spills it under a register cap depends on the controls, an ACF's
# included (tests/search/test_acf_pool.py, tests/bench/test_public_kernels.py).
SPILL_KERNEL = r"""
__global__ void spill(const float4* __restrict__ a, float* __restrict__ out, int n, int stride) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  float acc[24];
#pragma unroll
  for (int k = 0; k < 24; ++k) acc[k] = 0.f;
  for (int j = 0; j < n; j += 8) {
    float4 x[8];
#pragma unroll
    for (int u = 0; u < 8; ++u) x[u] = a[(j + u) * stride + t];
#pragma unroll
    for (int u = 0; u < 8; ++u)
#pragma unroll
      for (int k = 0; k < 24; ++k) acc[k] = fmaf(acc[k], (k & 1) ? x[u].x : x[u].y, (k & 2) ? x[u].z : x[u].w);
  }
  float s = 0.f;
#pragma unroll
  for (int k = 0; k < 24; ++k) s += acc[k] * (float)(k + 1);
  out[t] = s;
}
"""


def in_thread(call: Callable[[], object]) -> tuple[threading.Thread, list[object]]:
    """`call` started in a thread of its own; the list gets what it returned, or what it raised (a stop's
    Stopped included), once it ends."""
    outcome: list[object] = []

    def run() -> None:
        try:
            outcome.append(call())
        except BaseException as error:  # noqa: BLE001 - what the thread saw, for the test to judge
            outcome.append(error)

    thread = threading.Thread(target=run)
    thread.start()
    return thread, outcome


def assert_optimum_needs_each_parameter(problem: Any, best: dict[str, object], optimum: float) -> None:
    """A search-quality problem's stated optimum (bench/search_quality) scores `optimum`, on target, and every value of
    its parameters matters: another value of any one of them (or leaving it out, where it can be) misses the target."""
    from ciq_build import INVALID_SCORE

    def missed(score: object) -> bool:
        return score == INVALID_SCORE or float(score) > problem.target  # type: ignore[arg-type]

    assert problem.objective(best) == pytest.approx(optimum) and optimum <= problem.target
    for name in best:
        others = [best | {name: v} for v in problem.space[name].values() if v != best[name]]
        others += [{k: v for k, v in best.items() if k != name}] if problem.space[name].can_knockout else []
        assert any(missed(problem.objective(p)) for p in others), name


def draws_on_target(problem: Any, draws: int, seed: int) -> tuple[int, int]:
    """How many of `draws` uniform draws of a search-quality problem's space (each knockout at its probability) are
    on target, and how many fail: how rare its optimum is to a search that only draws."""
    import random

    from ciq_build import INVALID_SCORE
    rng, values = random.Random(seed), {name: param.values() for name, param in problem.space.items()}
    on = failed = 0
    for _ in range(draws):
        p = {name: rng.choice(values[name]) for name, param in problem.space.items()
             if param.knockout_prob is None or rng.random() >= param.knockout_prob}
        score = problem.objective(p)
        failed += score == INVALID_SCORE
        on += score != INVALID_SCORE and score <= problem.target
    return on, failed


def whole_space_on_target(problem: Any) -> tuple[list[dict[str, Any]], int]:
    """Every configuration of a small search-quality problem's space that is on target, and how many of them fail."""
    import itertools

    from ciq_build import INVALID_SCORE
    names = list(problem.space)
    options = [[*param.values(), *([None] if param.can_knockout else [])] for param in problem.space.values()]
    on, failed = [], 0
    for combo in itertools.product(*options):
        p = {name: v for name, v in zip(names, combo, strict=True) if v is not None}
        score = problem.objective(p)
        failed += score == INVALID_SCORE
        if score != INVALID_SCORE and score <= problem.target:
            on.append(p)
    return on, failed


def bare_manifest(where: Path, **fields: Any) -> Any:
    """A target `kern`'s manifest with nothing in it (no sources, benchmark, objectives or PARAMS), every folder
    `where`, CUDA 13.3.1 for sm_90a, for tests of what reads one; `fields` set what a test needs."""
    from ciq_build.project.manifest import Manifest, ManifestToolchain

    defaults: dict[str, Any] = {
        "target": "kern", "source_dir": where, "binary_dir": where, "target_source_dir": where,
        "target_binary_dir": where, "cuda_sources": (), "object_dir": where, "benchmark": None, "metric_regex": "",
        "objectives": (), "params": (), "search_space": (), "pin_dir": where, "pin_file": where / "kern.json",
        "timeout": 60.0, "options_file": where / "kern.nvcc-options", "generator": "Ninja", "allow_numerics": False,
        "toolchain": ManifestToolchain(Path("/usr/bin/nvcc"), "13.3.1", "90a")}
    return Manifest(**(defaults | fields))
