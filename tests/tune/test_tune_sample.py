"""The product's main path on sample_extension: tune, pin, plain build, verify.

Real CMake, Ninja and nvcc 13.3; static objectives (this machine has no GPU),
and the runtime objective's clear refusal without one.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ciq_build.compiler import metrics
from ciq_build.compiler.occupancy import limits, occupancy
from ciq_build.measure import proc
from support import REPO_ROOT, ensure_ok

pytestmark = pytest.mark.slow

SAMPLE = REPO_ROOT / "sample_extension"


def _ciq(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ciq_build", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=900)


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory, cuda133_bin: Path) -> dict:
    root = tmp_path_factory.mktemp("sample")
    source = root / "sample_extension"
    shutil.copytree(SAMPLE, source, ignore=shutil.ignore_patterns("build", "*.json", "*.acf"))
    build = root / "build"
    tune = _ciq("tune", "gemm_kernels", "-S", str(source), "-B", str(build), "--objective", "spill_bytes",
                "--objective", "registers", "--generations", "2", "--pool-size", "6", "--jobs", "2", "--seed", "3",
                f"--cmake-arg=-DCMAKE_CUDA_COMPILER={cuda133_bin / 'nvcc'}",
                "--cmake-arg=-DSAMPLE_EXTENSION_PYTHON=OFF", cwd=source)
    return {"source": source, "build": build, "tune": tune}


def test_tune_pins_a_winner_that_beats_the_defaults_on_every_objective(sample: dict) -> None:
    tune = sample["tune"]
    assert tune.returncode == 0, tune.stderr
    assert "pinned:" in tune.stdout and "evaluations: 12" in tune.stdout
    record = json.loads((sample["source"] / "ciq" / "gemm_kernels.json").read_text())
    assert [o["name"] for o in record["objectives"]] == ["spill_bytes", "registers"]
    base, best = record["baseline"]["scores"], record["winner"]["scores"]
    assert best[0] <= base[0] and best[1] <= base[1] and best != base
    # Knobs that trade code quality for compile time are not offered when compile time is no objective.
    assert "knob.fast_compile" not in record["provenance"]["search_space"]
    # THREADS_PER_BLOCK "(128/CIQ_GEMM_TM)*(128/CIQ_GEMM_TN)": each evaluation's occupancy is the calculator's at its
    # registers, static shared memory and block size (the defaults' TM = TN = 8 from gemm.cu's #ifndef: 256
    # threads), though no objective here is the occupancy; the summary says where the winner's steps lie.
    seen = set()
    for line in (sample["build"] / "ciq" / "journal" / "gemm_kernels.jsonl").read_text().splitlines():
        entry = json.loads(line)
        if not entry.get("ok") or "metrics" not in entry:
            continue
        params, figures = entry.get("params") or {}, entry["metrics"]
        threads = (128 // params.get("param.CIQ_GEMM_TM", 8)) * (128 // params.get("param.CIQ_GEMM_TN", 8))
        expected = occupancy(limits("90a"), int(figures["registers"]), threads, int(figures["shared_bytes"]), 1)
        assert figures["occupancy"] == expected.percent, (params, figures)
        seen.add(threads)
    assert 256 in seen and len(seen) > 1
    steps = next(line for line in tune.stdout.splitlines() if line.startswith("  occupancy (winner): "))
    assert re.fullmatch(r"  occupancy \(winner\): sm_90a, \d+ registers at (64|128|256|1024) threads: \d+ blocks? an SM "
                        r"\([0-9.]+%, limited by [a-z ]+\).*", steps), steps


def test_the_next_plain_build_compiles_the_target_with_the_pin_and_only_that_target(sample: dict) -> None:
    source, build = sample["source"], sample["build"]
    record = json.loads((source / "ciq" / "gemm_kernels.json").read_text())
    ensure_ok(proc.run(["cmake", str(build)], 600))
    ensure_ok(proc.run(["cmake", "--build", str(build)], 600))
    commands = ensure_ok(proc.run(["ninja", "-C", str(build), "-t", "commands"], 600)).stdout.splitlines()
    gemm = next(line for line in commands if "gemm.cu.o" in line and " -c " in line)
    reduce = next(line for line in commands if "reduce.cu.o" in line and " -c " in line)
    options_file = build / "ciq" / "gemm_kernels.nvcc-options"
    assert f"--options-file={options_file}" in gemm
    applied = shlex.split(options_file.read_text())
    for flag in record["controls"]["flags"]:
        assert flag in applied
    for name, value in record["controls"]["defines"].items():
        assert f"-D{name}={value}" in applied
    assert shlex.split((build / "ciq" / "reduce_kernels.nvcc-options").read_text()) == []
    assert "gemm_kernels.nvcc-options" not in reduce

    # The rebuilt object shows the pinned winner's registers, and `verify` agrees.
    toolchain_nvcc = shlex.split(gemm)[0]
    from ciq_build.compiler.toolchain import find_toolchain

    toolchain = find_toolchain(Path(toolchain_nvcc))
    objects = list((build / "CMakeFiles" / "gemm_kernels.dir").rglob("*.o"))
    usage = metrics.resource_usage(objects[0], toolchain)
    assert max(u["registers"] for u in usage.values()) == record["winner"]["scores"][1]
    verify = _ciq("verify", "gemm_kernels", "-B", str(build), cwd=source)
    assert verify.returncode == 0, verify.stdout + verify.stderr

    listing = _ciq("list", "-B", str(build), cwd=source)
    assert "gemm_kernels" in listing.stdout and "reduce_kernels" in listing.stdout
    gemm_row = next(line for line in listing.stdout.splitlines() if line.startswith("gemm_kernels "))
    tuned = ",".join(o["name"] for o in record["objectives"])  # what the pin was tuned for, not what is registered
    assert tuned in gemm_row.split(), gemm_row
    show = _ciq("show", "gemm_kernels", "-B", str(build), cwd=source)
    assert show.returncode == 0 and "registers" in show.stdout


def test_a_runtime_objective_without_a_gpu_is_a_clear_error_naming_the_static_objectives(sample: dict) -> None:
    if shutil.which("nvidia-smi"):
        pytest.skip("this machine may have a GPU")
    result = _ciq("tune", "reduce_kernels", "-B", str(sample["build"]), "--objective", "time",
                  "--generations", "1", "--pool-size", "2", cwd=sample["source"])
    assert result.returncode == 2
    assert "no usable GPU" in result.stderr and "spill_bytes" in result.stderr
    assert "Traceback" not in result.stderr


def test_the_report_of_the_static_tune_marks_the_pinned_point_on_its_front(sample: dict) -> None:
    source, build = sample["source"], sample["build"]
    record = json.loads((source / "ciq" / "gemm_kernels.json").read_text())
    report = _ciq("report", "gemm_kernels", "-B", str(build), "--format", "markdown", cwd=source)
    assert report.returncode == 0, report.stderr
    text = report.stdout
    base, best = record["baseline"]["scores"], record["winner"]["scores"]
    assert "## Pareto front: spill_bytes and registers" in text
    # the record's controls were found: "pinned", or "pinned (minimized)" where the pin dropped controls that changed
    # nothing (which the search's winner decides)
    pinned = next(line for line in text.splitlines() if "| pinned |" in line or "| pinned (minimized) |" in line)
    assert pinned.split(" | ")[1:3] == [f"{best[0]:.6g}", f"{best[1]:.6g}"]
    assert f"| registers | min | {base[1]:.6g} |" in text
    assert "re-measured" not in text  # static scores are exact: nothing to re-measure
    page = _ciq("report", "gemm_kernels", "-B", str(build), cwd=source)
    assert page.returncode == 0, page.stderr
    html = (build / "ciq" / "report" / "gemm_kernels.html").read_text()
    assert "static objectives are deterministic" in html and 'id="plot-pareto"' in html
