"""Real Advanced Controls Files through `tune`: compileiq, the CUDA 13.3 search spaces and toolkit.

tests/projects/spill caps its kernel at 30 registers, so ptxas spills; a
search over ptxas ACFs must find one that spills less, pin it, and the plain
build must apply it. Edited ACFs, other toolkits and nvcc ACFs on sm_90 are
refused with a message saying what to do.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ciq_build.compiler import metrics
from ciq_build.compiler.controls import AcfRef
from ciq_build.measure import proc
from ciq_build.pin.read import read_record
from ciq_build.pin.write import write_record
from support import REPO_ROOT, ensure_ok

pytest.importorskip("compileiq", reason='needs NVIDIA compileiq: pip install "ciq-build[acf]"')

pytestmark = [pytest.mark.slow, pytest.mark.acf]

SPILL = REPO_ROOT / "tests" / "projects" / "spill"


def _ciq(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ciq_build", *args], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=900)


@pytest.fixture(scope="module")
def tuned(tmp_path_factory: pytest.TempPathFactory, cuda133_bin: Path, search_spaces_dir: Path) -> dict:
    """The spill project, tuned once for spill bytes with ptxas ACFs (24 evaluations)."""
    root = tmp_path_factory.mktemp("acf")
    source = root / "spill"
    shutil.copytree(SPILL, source)
    build = root / "build"
    env = {**os.environ, "CIQ_SEARCH_SPACES_DIR": str(search_spaces_dir)}
    result = _ciq("tune", "spill_kernels", "-S", str(source), "-B", str(build), "--generations", "3",
                  "--pool-size", "8", "--seed", "1", "--jobs", "2",
                  f"--cmake-arg=-DCMAKE_CUDA_COMPILER={cuda133_bin / 'nvcc'}", cwd=source, env=env)
    return {"source": source, "build": build, "env": env, "result": result}


def test_a_ptxas_acf_search_brings_spills_below_the_default_and_pins_it(tuned: dict) -> None:
    result = tuned["result"]
    assert result.returncode == 0, result.stderr
    record = json.loads((tuned["source"] / "ciq" / "spill_kernels.json").read_text())
    baseline, winner = record["baseline"]["scores"][0], record["winner"]["scores"][0]
    assert winner < baseline, (baseline, winner)
    acf = record["controls"]["acf"]
    # Pinned under its content name (a new pin never replaces a committed ACF), with .gitattributes beside it.
    assert acf["compiler"] == "ptxas" and acf["file"] == f"spill_kernels.{acf['sha256'][:12]}.acf"
    assert record["toolchain"]["cuda"] == "13.3"
    assert record["provenance"]["search_space"]["acf"]["file"] == "ptxas13.3.bin"
    assert (tuned["source"] / "ciq" / acf["file"]).is_file()
    assert (tuned["source"] / "ciq" / ".gitattributes").read_text() == "*.json -text\n*.acf binary\n"


def test_the_plain_build_applies_the_pinned_acf_and_verify_checks_it(tuned: dict) -> None:
    source, build, env = tuned["source"], tuned["build"], tuned["env"]
    ensure_ok(proc.run(["cmake", str(build)], 600))
    built = ensure_ok(proc.run(["cmake", "--build", str(build), "--verbose"], 600))
    options = (build / "ciq" / "spill_kernels.nvcc-options").read_text()
    pinned_acf = json.loads((source / "ciq" / "spill_kernels.json").read_text())["controls"]["acf"]["file"]
    assert f"--apply-controls={source / 'ciq' / pinned_acf}" in options
    assert "--options-file=" in built.stdout
    verify = _ciq("verify", "spill_kernels", "-B", str(build), cwd=source, env=env)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    # The build's object shows the pinned metric: its own compile command, run
    # again with -Xptxas=-v, spills exactly what the winner spilled.
    commands = ensure_ok(proc.run(["ninja", "-C", str(build), "-t", "commands", "spill_kernels"], 600)).stdout
    compile_line = next(line for line in commands.splitlines() if "spill.cu.o" in line and " -c " in line)
    argv = shlex.split(compile_line)
    argv[argv.index("-o") + 1] = str(build / "again.o")
    again = subprocess.run([*argv, "-Xptxas=-v"], capture_output=True, text=True, cwd=build)
    assert again.returncode == 0, again.stderr
    spills = metrics.summarize(metrics.parse_ptxas_verbose(again.stdout + again.stderr))["spill_bytes"]
    record = json.loads((source / "ciq" / "spill_kernels.json").read_text())
    assert spills == record["winner"]["scores"][0] < record["baseline"]["scores"][0]


def test_an_edited_acf_is_refused_by_verify_and_by_the_build(tuned: dict, tmp_path: Path,
                                                              cuda133_bin: Path) -> None:
    source = tmp_path / "copy"
    shutil.copytree(tuned["source"], source)
    build = tmp_path / "build"
    configure = ["cmake", "-S", str(source), "-B", str(build), "-G", "Ninja",
                 f"-DCMAKE_CUDA_COMPILER={cuda133_bin / 'nvcc'}", f"-Dciq_build_DIR={REPO_ROOT / 'cmake'}"]
    ensure_ok(proc.run(configure, 600))
    ensure_ok(proc.run(["cmake", "--build", str(build)], 600))
    assert _ciq("verify", "spill_kernels", "-B", str(build), cwd=source, env=tuned["env"]).returncode == 0
    pinned_acf = json.loads((source / "ciq" / "spill_kernels.json").read_text())["controls"]["acf"]["file"]
    with (source / "ciq" / pinned_acf).open("ab") as acf:
        acf.write(b"\0")
    verify = _ciq("verify", "spill_kernels", "-B", str(build), cwd=source, env=tuned["env"])
    assert verify.returncode != 0 and "sha256" in verify.stderr and "Traceback" not in verify.stderr
    reconfigure = subprocess.run(configure, capture_output=True, text=True)
    assert reconfigure.returncode != 0
    assert "sha256" in reconfigure.stderr and "retune" in reconfigure.stderr.lower()


def test_an_acf_search_with_another_toolkit_is_refused_up_front(tmp_path: Path, system_nvcc: Path,
                                                                 search_spaces_dir: Path) -> None:
    source = tmp_path / "spill"
    shutil.copytree(SPILL, source)
    env = {**os.environ, "CIQ_SEARCH_SPACES_DIR": str(search_spaces_dir)}
    result = _ciq("tune", "spill_kernels", "-S", str(source), "-B", str(tmp_path / "build"),
                  f"--cmake-arg=-DCMAKE_CUDA_COMPILER={system_nvcc}", cwd=source, env=env)
    assert result.returncode == 2
    assert "accepted only by CUDA 13.3" in result.stderr and "ciq-build[cuda]" in result.stderr
    assert "Traceback" not in result.stderr


def test_an_nvcc_acf_search_for_sm90_is_refused_with_the_ptxas_space_as_the_way_out(
        tmp_path: Path, cuda133_bin: Path, search_spaces_dir: Path) -> None:
    source = tmp_path / "spill"
    shutil.copytree(SPILL, source)
    env = {**os.environ, "CIQ_SEARCH_SPACES_DIR": str(search_spaces_dir)}
    result = _ciq("tune", "spill_kernels", "-S", str(source), "-B", str(tmp_path / "build"),
                  "--controls", "nvcc-acf:13.3", f"--cmake-arg=-DCMAKE_CUDA_COMPILER={cuda133_bin / 'nvcc'}",
                  cwd=source, env=env)
    assert result.returncode == 2
    assert "ptxas-acf" in result.stderr and "Traceback" not in result.stderr


def test_an_acf_pool_sampled_ahead_is_searched_with_the_genetic_engine(tmp_path: Path, cuda133_bin: Path,
                                                                       search_spaces_dir: Path) -> None:
    """sample-acfs where compileiq is, tune --controls acf-pool:DIR where the GPU is."""
    env = {**os.environ, "CIQ_SEARCH_SPACES_DIR": str(search_spaces_dir)}
    pool = tmp_path / "pool"
    sampled = _ciq("sample-acfs", "--space", "ptxas-acf:13.3", "--count", "6", "--out", str(pool), cwd=tmp_path, env=env)
    assert sampled.returncode == 0, sampled.stderr
    assert len(list(pool.glob("*.acf"))) == 6
    source = tmp_path / "spill"
    shutil.copytree(SPILL, source)
    result = _ciq("tune", "spill_kernels", "-S", str(source), "-B", str(tmp_path / "build"), "--controls",
                  f"acf-pool:{pool}", "--generations", "2", "--pool-size", "4", "--no-pin",
                  f"--cmake-arg=-DCMAKE_CUDA_COMPILER={cuda133_bin / 'nvcc'}", cwd=source, env=env)
    assert result.returncode == 0, result.stderr
    journal = tmp_path / "build" / "ciq" / "journal" / "spill_kernels.jsonl"
    acfs = {json.loads(line)["controls"].get("acf", {}).get("sha256") for line in journal.read_text().splitlines()
            if '"evaluation"' in line}
    assert len(acfs - {None}) >= 2  # pooled ACFs were really built and scored
    # An edited pool member is refused.
    victim = next(pool.glob("*.acf"))
    victim.write_bytes(victim.read_bytes() + b"\0")
    again = _ciq("tune", "spill_kernels", "-B", str(tmp_path / "build"), "--controls", f"acf-pool:{pool}",
                 "--fresh", cwd=source, env=env)
    assert again.returncode == 2 and "edited" in again.stderr


def test_a_tune_killed_while_it_pins_an_acf_leaves_a_pin_the_plain_build_accepts(tuned: dict, tmp_path: Path,
                                                                                  cuda133_bin: Path) -> None:
    # The tuned project's pin is swapped for one naming another ACF; the same tune again (its journal makes the
    # search a replay) confirms and pins its winner's ACF, and is killed with SIGKILL the moment that ACF (or
    # its temporary) appears in ciq/. Before issue 21 the old record could be left naming the new ACF, refused
    # by every build. The tuned pin is put back afterwards for the other tests.
    source, env = tuned["source"], tuned["env"]
    pin_dir = source / "ciq"
    kept = tmp_path / "kept"
    shutil.copytree(pin_dir, kept)
    try:
        winner = read_record(pin_dir / "spill_kernels.json")
        other = tmp_path / "other.acf"
        other.write_bytes(Path(winner.controls.acf.path).read_bytes() + b"\n")
        write_record(pin_dir, dataclasses.replace(winner, controls=dataclasses.replace(
            winner.controls, acf=AcfRef(other, "ptxas", ""))), other)
        new_acf = Path(winner.controls.acf.path).name
        assert not (pin_dir / new_acf).exists()
        command = [sys.executable, "-m", "ciq_build", "tune", "spill_kernels", "-S", str(source), "-B",
                   str(tuned["build"]), "--generations", "3", "--pool-size", "8", "--seed", "1", "--jobs", "2",
                   f"--cmake-arg=-DCMAKE_CUDA_COMPILER={cuda133_bin / 'nvcc'}"]
        said = tmp_path / "tune.log"  # a file, not a pipe: a pipe nobody reads would stall the tune when full
        with said.open("wb") as log:
            driver = subprocess.Popen(command, cwd=source, env=env, stdout=log, stderr=subprocess.STDOUT,
                                      start_new_session=True)
        pinning = False
        while driver.poll() is None:
            if any(new_acf in name for name in os.listdir(pin_dir)):
                os.killpg(driver.pid, signal.SIGKILL)
                pinning = True
                break
            time.sleep(0.002)  # a pin's write takes milliseconds (fsyncs); polling finer would only take a core
        driver.wait()
        assert pinning, f"the tune ended before it pinned: {said.read_text()[-2000:]}"
        # The plain configure accepts what the kill left, and so does Python.
        build = tmp_path / "build"
        configure = ["cmake", "-S", str(source), "-B", str(build), "-G", "Ninja",
                     f"-DCMAKE_CUDA_COMPILER={cuda133_bin / 'nvcc'}", f"-Dciq_build_DIR={REPO_ROOT / 'cmake'}"]
        result = ensure_ok(proc.run(configure, 600))
        assert "ciq_build: spill_kernels: pinned controls from" in result.stdout, result.stdout
        left = read_record(pin_dir / "spill_kernels.json")
        old_acf = f"spill_kernels.{hashlib.sha256(other.read_bytes()).hexdigest()[:12]}.acf"
        assert Path(left.controls.acf.path).name in (new_acf, old_acf)
    finally:
        shutil.rmtree(pin_dir)
        shutil.copytree(kept, pin_dir)
