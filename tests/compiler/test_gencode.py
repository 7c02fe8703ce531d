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

from ciq_build.measure import proc
from ciq_build.reports.history import load_history
from support import REPO_ROOT, ensure_ok

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
    ensure_ok(proc.run([str(cuobjdump), "-xelf", "all", str(obj)], 600, cwd=into))
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


def test_each_architecture_is_tuned_on_its_own_and_merged_into_one_record_that_verify_checks(
        tmp_path: Path, cuda133_bin: Path) -> None:
    source, build = tmp_path / "src", tmp_path / "build"
    shutil.copytree(PROJECT, source)

    def tune(arch: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "ciq_build", "tune", "gencode_kernels", "-S", str(source), "-B", str(build),
             "--generations", "1", "--pool-size", "4", "--controls", "params", "--architecture", arch,
             f"--cmake-arg=-DCMAKE_CUDA_COMPILER={cuda133_bin / 'nvcc'}"],
            capture_output=True, text=True, timeout=300, cwd=source)

    first = tune("sm_80")
    assert first.returncode == 0, first.stderr
    record = json.loads((source / "ciq" / "gencode_kernels.json").read_text())
    assert record["toolchain"]["architectures"] == ["80"] and list(record["per_architecture"]) == ["80"]
    assert list(record["objects"]["kern.cu.o"]) == ["80"]  # the scratch tree built sm_80 alone
    # -DSCALE=1 was judged on registers alone and nothing ran it (no BENCHMARK): said, and kept in the record.
    assert "the winner was not run: gencode_kernels has no BENCHMARK; its PARAMS (-DSCALE=1)" in first.stderr
    assert '"ran": false' in json.dumps(record) and "has no BENCHMARK" in json.dumps(record)
    # The build compiles for 90a too: it skips this pin until sm_90a has its entry, and the summary says so
    # (it said "a plain `cmake --build` applies it" to a newcomer who had tuned one of cuda-samples' 9).
    assert ("next: commit " + str(source / "ciq") + "; a plain `cmake --build` skips this pin until it holds every "
            "architecture the build compiles for: it has 80, the build also compiles for 90a. Tune --architecture "
            "for each") in first.stdout, first.stdout
    # The report shows sm_80's own winner as the pinned one (it showed the record's top-level controls, the
    # compiler's defaults, so "pinned winner" was the baseline's score).
    history = load_history("gencode_kernels", build, source)
    assert history.winner is not None and not history.winner.is_baseline
    assert list(history.winner.scores or ()) == record["per_architecture"]["80"]["winner"]["scores"]
    second = tune("90a")
    assert second.returncode == 0, second.stderr
    assert "then a plain `cmake --build` applies it" in second.stdout, second.stdout
    record = json.loads((source / "ciq" / "gencode_kernels.json").read_text())
    assert record["toolchain"]["architectures"] == ["80", "90a"]
    assert sorted(record["per_architecture"]) == ["80", "90a"]  # sm_80's entry is still there
    for arch in ("80", "90a"):
        assert record["per_architecture"][arch]["controls"]["defines"] == {"SCALE": "1"}
        assert record["per_architecture"][arch]["winner"]["scores"] < record["per_architecture"][arch][
            "baseline"]["scores"]
    assert sorted(record["objects"]["kern.cu.o"]) == ["80", "90a"]
    journals = sorted(p.name for p in (build / "ciq" / "journal").iterdir())
    assert journals == ["gencode_kernels.sm_80.jsonl", "gencode_kernels.sm_90a.jsonl"]
    # A second tune of sm_80 resumes its own journal.
    again = tune("80")
    assert again.returncode == 0, again.stderr
    assert "from the journal" in again.stdout and " 0 from the journal" not in again.stdout, again.stdout
    # An architecture the target is not built for is refused, saying which it has.
    wrong = tune("75")
    assert wrong.returncode != 0 and "built for 80, 90a, not 75" in wrong.stderr, wrong.stderr
    # The plain build applies the record, and verify checks each architecture's code.
    verify = subprocess.run([sys.executable, "-m", "ciq_build", "verify", "gencode_kernels", "-B", str(build)],
                            capture_output=True, text=True, timeout=300, cwd=source)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    show = subprocess.run([sys.executable, "-m", "ciq_build", "show", "gencode_kernels", "-B", str(build)],
                          capture_output=True, text=True, timeout=60, cwd=source)
    assert show.returncode == 0, show.stderr
    assert "sm_80" in show.stdout and "sm_90a" in show.stdout and "-DSCALE=1" in show.stdout, show.stdout


def test_a_refused_shared_step_names_the_words_that_differ() -> None:
    # When one architecture's controls reach a step all architectures share, the refusal says how the step
    # changed, so a user (or a flaky run) can see which word did it.
    from ciq_build.compiler.gencode import _difference
    before = "gcc -E -x c++ -DCUDA_DOUBLE_MATH_FUNCTIONS k.cu -o /tmp/tmpxft_00001a2b_00000000-5_k.cpp4.ii"
    after = "gcc -E -x c++ -DCUDA_DOUBLE_MATH_FUNCTIONS -DSCALE=3 k.cu -o /tmp/tmpxft_00001a2b_00000000-5_k.cpp4.ii"
    assert _difference(before, after) == "adds ['-DSCALE=3'], drops nothing"
    assert _difference(after, before) == "adds nothing, drops ['-DSCALE=3']"
