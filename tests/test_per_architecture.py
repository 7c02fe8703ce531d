"""Per-architecture pins in real CMake/Ninja/nvcc builds (tests/projects/gencode, sm_80 and sm_90a).

Each architecture's cubin in a build whose record gives the architectures
different controls must be the cubin a single-architecture build with that
entry's controls embeds (cuobjdump -xelf), and a per-architecture tune merges
its winner into the record beside the other architecture's.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
PROJECT = REPO_ROOT / "tests" / "projects" / "gencode"
OBJECT = "CMakeFiles/gencode_kernels.dir/kern.cu.o"

pytestmark = pytest.mark.slow


def _record(architectures: list[str], controls: dict, entries: dict | None = None) -> dict:
    record = {"schema": 1, "target": "gencode_kernels", "controls": controls,
              "toolchain": {"cuda": "13.3", "architectures": architectures}}
    if entries is not None:
        record["per_architecture"] = entries
    return record


def _build(tmp_path: Path, name: str, record: dict, architectures: str,
           nvcc: Path) -> tuple[subprocess.CompletedProcess, Path]:
    source, build = tmp_path / name / "src", tmp_path / name / "build"
    shutil.copytree(PROJECT, source)
    (source / "ciq").mkdir()
    (source / "ciq" / "gencode_kernels.json").write_text(json.dumps(record))
    configure = subprocess.run(
        ["cmake", "-S", str(source), "-B", str(build), "-G", "Ninja",
         f"-DCMAKE_CUDA_ARCHITECTURES={architectures}",
         f"-Dciq_build_DIR={REPO_ROOT / 'cmake'}", f"-DCMAKE_CUDA_COMPILER={nvcc}",
         f"-DCIQ_PYTHON={sys.executable}", "-DCIQ_STRICT=ON"],
        capture_output=True, text=True, timeout=300)
    if configure.returncode != 0:
        return configure, build
    return subprocess.run(["cmake", "--build", str(build)], capture_output=True, text=True, timeout=300), build


def _cubins(obj: Path, cuobjdump: Path, into: Path) -> dict[str, bytes]:
    into.mkdir(parents=True)
    subprocess.run([str(cuobjdump), "-xelf", "all", str(obj)], cwd=into, check=True, capture_output=True)
    return {f.name.rsplit(".", 2)[-2]: f.read_bytes() for f in into.glob("*.cubin")}


ENTRY_80 = {"flags": ["-maxrregcount=24"], "defines": {"SCALE": "2"}}
ENTRY_90A = {"flags": ["-Xptxas=-O1"], "defines": {"SCALE": "2"}}


def test_each_architecture_embeds_the_cubin_of_a_single_architecture_build_with_its_entry(
        tmp_path: Path, cuda133_bin: Path) -> None:
    both = _record(["80", "90a"], {}, {"80": {"controls": ENTRY_80}, "90a": {"controls": ENTRY_90A}})
    result, build = _build(tmp_path, "both", both, "80-real;90a-real", cuda133_bin / "nvcc")
    assert result.returncode == 0, result.stdout + result.stderr
    ninja = (build / "build.ninja").read_text()
    assert "gencode.py" in ninja  # the launcher, set for this target only
    per_arch = _cubins(build / OBJECT, cuda133_bin / "cuobjdump", tmp_path / "x-both")
    assert sorted(per_arch) == ["sm_80", "sm_90a"]
    for arch, entry in (("80", ENTRY_80), ("90a", ENTRY_90A)):
        result, single = _build(tmp_path, arch, _record([arch], entry), f"{arch}-real", cuda133_bin / "nvcc")
        assert result.returncode == 0, result.stdout + result.stderr
        assert "gencode.py" not in (single / "build.ninja").read_text()
        (reference,) = _cubins(single / OBJECT, cuda133_bin / "cuobjdump", tmp_path / f"x-{arch}").values()
        assert per_arch[f"sm_{arch}"] == reference, f"sm_{arch}'s cubin is not its entry's"
    # And the controls matter: without the pin, sm_80's cubin is another one.
    result, plain = _build(tmp_path, "plain", _record(["80", "90a"], {"defines": {"SCALE": "2"}}),
                           "80-real;90a-real", cuda133_bin / "nvcc")
    assert result.returncode == 0, result.stdout + result.stderr
    assert _cubins(plain / OBJECT, cuda133_bin / "cuobjdump", tmp_path / "x-plain")["sm_80"] != per_arch["sm_80"]


def test_identical_entries_are_plain_nvcc_and_a_launcher_of_the_users_own_is_refused(
        tmp_path: Path, cuda133_bin: Path) -> None:
    same = _record(["80", "90a"], {}, {"80": {"controls": ENTRY_80}, "90a": {"controls": ENTRY_80}})
    result, build = _build(tmp_path, "same", same, "80-real;90a-real", cuda133_bin / "nvcc")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "gencode.py" not in (build / "build.ninja").read_text()
    options = (build / "ciq" / "gencode_kernels.nvcc-options").read_text().split()
    assert options == ["-maxrregcount=24", "-DSCALE=2"]
    differ = _record(["80", "90a"], {}, {"80": {"controls": ENTRY_80}, "90a": {"controls": ENTRY_90A}})
    source = tmp_path / "same" / "src"
    (source / "ciq" / "gencode_kernels.json").write_text(json.dumps(differ))
    own = subprocess.run(["cmake", str(build), "-DCMAKE_CUDA_COMPILER_LAUNCHER=ccache"], capture_output=True,
                         text=True, timeout=300)
    assert own.returncode != 0
    said = " ".join(own.stderr.split())
    assert "already compiles through 'ccache'" in said and "pin one winner for all its architectures" in said
