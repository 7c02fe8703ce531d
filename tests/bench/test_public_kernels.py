"""bench/public_kernels/ campaign's helpers: the ACF screen, the SASS diff, and the report's winner and arm flags.

Real nvcc/ptxas/cuobjdump 13.3 and real compileiq where they are used; the report's questions are
answered from pin records written here (no GPU: the numbers are the records' own).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ciq_build.measure import proc
from ciq_build.search.acf_pool import POOL_FILE, load_pool, pool_sha256
from support import REPO_ROOT, SPILL_KERNEL, ensure_ok

BENCH = REPO_ROOT / "bench" / "public_kernels"



def _bench(script: str, *args: object, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(BENCH / script), *map(str, args)], capture_output=True, text=True,
                          timeout=timeout)


def _pin(directory: Path, baseline: list[float], winner: list[float], controls: dict) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "pin.json").write_text(json.dumps({
        "controls": controls, "provenance": {"remeasured": {"baseline": baseline, "winner": winner}}}))


def test_the_winner_is_the_arm_whose_pin_re_measured_fastest(tmp_path: Path) -> None:
    kernel = tmp_path / "sgemm"
    assert _bench("report.py", "--winner", kernel).stdout.strip() == ""  # no arm pinned: nothing to confirm
    _pin(kernel / "knobs", [2.0, 2.0, 2.1], [1.8, 1.9, 1.8], {"flags": ["-maxrregcount=128"], "defines": {}})
    _pin(kernel / "acf", [2.0, 2.1, 2.0], [1.9, 1.9, 2.0], {"flags": [], "defines": {},
                                                           "acf": {"sha256": "ab" * 32, "compiler": "ptxas"}})
    (kernel / "both").mkdir()  # searched, pinned nothing
    assert _bench("report.py", "--winner", kernel).stdout.strip() == "knobs"
    _pin(kernel / "both", [2.0, 2.0, 2.0], [1.70, 1.72, 1.71], {"flags": [], "defines": {}})
    assert _bench("report.py", "--winner", kernel).stdout.strip() == "both"


def test_an_arms_pin_becomes_one_cmake_argument_with_its_acf_by_absolute_path(tmp_path: Path) -> None:
    arm = tmp_path / "both"
    _pin(arm, [1.0], [0.9], {"flags": ["-Xptxas=-O2", "-maxrregcount=96"], "defines": {"K10_BM": "64", "K10_BK": "8"},
                             "acf": {"file": "t.cdcdcdcdcdcd.acf", "sha256": "cd" * 32, "compiler": "ptxas"}})
    said = _bench("report.py", "--cmake-flags", arm).stdout.strip()
    assert said == (f"-DCMAKE_CUDA_FLAGS=-Xptxas=-O2 -maxrregcount=96 -DK10_BK=8 -DK10_BM=64 "
                    f"-Xptxas=--apply-controls={(arm / 't.cdcdcdcdcdcd.acf').resolve()}")


def test_the_sass_diff_names_what_a_register_cap_changed(tmp_path: Path, cuda133_bin: Path) -> None:
    (tmp_path / "spill.cu").write_text(SPILL_KERNEL)
    objects = {}
    for name, flags in (("defaults", []), ("capped", ["-maxrregcount=32"]), ("again", [])):
        objects[name] = tmp_path / f"{name}.o"
        ensure_ok(proc.run([cuda133_bin / "nvcc", "-c", "-arch=sm_90a", *flags, tmp_path / "spill.cu", "-o",
                            objects[name]], 300))
    cuobjdump = cuda133_bin / "cuobjdump"
    changed = _bench("sass_diff.py", objects["defaults"], objects["capped"], "--cuobjdump", cuobjdump,
                     "--json", tmp_path / "d.json")
    assert changed.returncode == 0, changed.stderr
    report = json.loads((tmp_path / "d.json").read_text())
    (kernel,) = report["kernels"].values()
    assert kernel["defaults"]["reg"] > 32 >= kernel["pinned"]["reg"]
    assert kernel["pinned"]["stl"] > kernel["defaults"]["stl"] == 0  # the cap spills: STL appears
    assert "1 kernel(s) in both; 0 with identical SASS" in changed.stdout
    same = _bench("sass_diff.py", objects["defaults"], objects["again"], "--cuobjdump", cuobjdump)
    assert "1 kernel(s) in both; 1 with identical SASS and resources" in same.stdout
    missing = _bench("sass_diff.py", objects["defaults"], objects["again"], "--cuobjdump", cuobjdump,
                     "--kernel", "no_such_kernel")
    assert missing.returncode != 0 and "no kernel matching no_such_kernel" in missing.stderr
    absent = _bench("sass_diff.py", objects["defaults"], tmp_path / "none.a", "--cuobjdump", cuobjdump)
    assert absent.returncode != 0 and "none.a does not exist" in absent.stderr


@pytest.mark.acf
def test_the_acf_screen_keeps_one_acf_per_distinct_machine_code_as_a_loadable_pool(
        tmp_path: Path, cuda133_bin: Path, search_spaces_dir: Path) -> None:
    pytest.importorskip("compileiq")
    raw = tmp_path / "raw"
    sampled = subprocess.run([sys.executable, "-m", "ciq_build", "sample-acfs", "--space", "ptxas-acf:13.3",
                              "--count", "6", "--seed", "3", "--out", str(raw)], capture_output=True, text=True,
                             env={**os.environ, "CIQ_SEARCH_SPACES_DIR": str(search_spaces_dir)}, timeout=600)
    assert sampled.returncode == 0, sampled.stderr
    # A seventh entry with the first ACF's bytes under another name: the same controls, so the same SASS.
    pool = json.loads((raw / POOL_FILE).read_text())
    first = pool["acfs"][0]
    shutil.copy(raw / first["file"], raw / "again.acf")
    pool["acfs"].append({"file": "again.acf", "sha256": first["sha256"]})
    pool["pool_sha256"] = pool_sha256(pool["acfs"])
    (raw / POOL_FILE).write_text(json.dumps(pool))
    (tmp_path / "spill.cu").write_text(SPILL_KERNEL)
    screened = _bench("acf_screen.py", "--source", tmp_path / "spill.cu", "--pool", raw, "--out", tmp_path / "out",
                      "--nvcc", cuda133_bin / "nvcc", "--cuobjdump", cuda133_bin / "cuobjdump",
                      "--json", tmp_path / "screen.json")
    assert screened.returncode == 0, screened.stderr
    report = json.loads((tmp_path / "screen.json").read_text())
    verdicts = {row["file"]: row["verdict"] for row in report["acfs"]}
    assert verdicts["again.acf"] == "same SASS as an earlier ACF"
    kept = [row for row in report["acfs"] if row["verdict"] == "kept"]
    assert kept and len({row["sass_sha"] for row in kept}) == len(kept)
    assert report["summary"]["defaults"]["sass_sha"] not in {row["sass_sha"] for row in kept}
    out = load_pool(tmp_path / "out")  # a valid acf-pool folder: every file present and unedited
    assert [entry["file"] for entry in out["acfs"]] == [row["file"] for row in kept]
    assert out["screened_from"]["pool_sha256"] == pool["pool_sha256"]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted([POOL_FILE, *(r["file"] for r in kept)])


TEMPLATED_KERNEL = r"""
#ifndef TILE
#define TILE 4
#endif
namespace gemm {
template <int T> __global__ void warptiled(float* out, const float* in) {
    float acc[T];
    for (int i = 0; i < T; ++i) acc[i] = in[threadIdx.x * T + i] * 2.0f;
    for (int i = 0; i < T; ++i) out[threadIdx.x * T + i] = acc[i];
}
}
template __global__ void gemm::warptiled<TILE>(float*, const float*);
"""


def test_the_sass_diff_pairs_a_templated_kernel_whose_pin_changed_its_template_arguments(
        tmp_path: Path, cuda133_bin: Path) -> None:
    # A tile pinned as -DTILE=8 renames the kernel (gemm::warptiled<4> -> <8>): the GPU campaign's SGEMM
    # diff said "no kernel matching sgemmWarptiling in both".
    (tmp_path / "tiled.cu").write_text(TEMPLATED_KERNEL)
    objects = {}
    for name, flags in (("defaults", []), ("tiled", ["-DTILE=8"])):
        objects[name] = tmp_path / f"{name}.o"
        ensure_ok(proc.run([cuda133_bin / "nvcc", "-c", "-arch=sm_90a", *flags, tmp_path / "tiled.cu", "-o",
                            objects[name]], 300))
    diff = _bench("sass_diff.py", objects["defaults"], objects["tiled"], "--cuobjdump", cuda133_bin / "cuobjdump",
                  "--kernel", "warptiled", "--json", tmp_path / "d.json")
    assert diff.returncode == 0, diff.stderr
    assert "gemm::warptiled<4>" in diff.stdout and "gemm::warptiled<8>" in diff.stdout
    report = json.loads((tmp_path / "d.json").read_text())
    (kernel,) = report["kernels"].values()
    assert kernel["pinned"]["sass"] > kernel["defaults"]["sass"]  # twice the unrolled loads and stores
    assert "1 kernel(s) in both; 0 with identical SASS" in diff.stdout
