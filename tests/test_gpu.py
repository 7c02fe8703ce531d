"""The runtime path on a real GPU: the sample's benchmarks and a `time` tune.

Skipped where no GPU answers (CI); run on a GPU machine with
`python -m pytest tests/test_gpu.py`. Uses whatever CUDA toolkit the machine
has (the pip 13.3 one if installed, else CUDA_HOME / PATH).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.gpu, pytest.mark.slow]

REPO_ROOT = Path(__file__).resolve().parent.parent


def _gpu_present() -> bool:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return False
    listed = subprocess.run([smi, "-L"], capture_output=True, text=True)
    return listed.returncode == 0 and "GPU" in listed.stdout


if not _gpu_present():
    pytest.skip("needs an NVIDIA GPU (nvidia-smi -L lists none)", allow_module_level=True)


def test_a_runtime_tune_measures_checks_and_judges_against_the_noise(tmp_path: Path) -> None:
    source = tmp_path / "sample"
    shutil.copytree(REPO_ROOT / "sample_extension", source, ignore=shutil.ignore_patterns("*.json", "*.acf"))
    build = tmp_path / "build"
    tune = subprocess.run(
        [sys.executable, "-m", "ciq_build", "tune", "reduce_kernels", "-S", str(source), "-B", str(build),
         "--objective", "time", "--generations", "1", "--pool-size", "4", "--repeats", "3", "--jobs", "2",
         "--controls", "params", "--cmake-arg=-DSAMPLE_EXTENSION_PYTHON=OFF"],
        capture_output=True, text=True, timeout=900)
    assert tune.returncode == 0, tune.stdout + tune.stderr
    assert "re-measuring the winner against the baseline, interleaved" in tune.stderr
    assert "verdict:" in tune.stdout
    journal = build / "ciq" / "journal" / "reduce_kernels.jsonl"
    evaluations = [json.loads(line) for line in journal.read_text().splitlines() if '"evaluation"' in line]
    timed = [e for e in evaluations if e["ok"]]
    assert len(timed) >= 3
    for evaluation in timed:
        assert 0 < evaluation["metrics"]["time_ms"] < 100  # a 64 Mi-float sum on a GPU, in ms

    # The benchmark checks its own result on the GPU (tune never builds in the user's tree: build it).
    subprocess.run(["cmake", "--build", str(build), "--target", "reduce_bench"], check=True, capture_output=True)
    bench = subprocess.run([str(build / "reduce_bench"), "--n", "1000003", "--repeats", "3"],
                           capture_output=True, text=True, timeout=120)
    assert bench.returncode == 0 and "CIQ_CHECK PASS" in bench.stdout, bench.stdout + bench.stderr
