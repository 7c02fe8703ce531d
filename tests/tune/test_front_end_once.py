"""A tune runs each front-end configuration once, however many scratch trees it has (issue 23 item 6).

nvcc's front end (cicc: source -> PTX) is the expensive part of a compile that
every ptxas ACF candidate shares. The tune's scratch trees (the baseline's and
each worker's) share one cache of front ends, so a ptxas ACF tune runs cicc on
the kernel as often as one plain compile of it does, whether it evaluates one
candidate or several on several workers.

Real CMake, Ninja, compileiq and the CUDA 13.3 toolkit, whose cicc is wrapped
by a script that logs each run's source file before running the real cicc (a
copy of the toolkit: nvcc finds cicc beside itself, so nvcc is copied too and
the rest linked).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ciq_build.measure import proc
from support import REPO_ROOT, ensure_ok

pytest.importorskip("compileiq", reason='needs NVIDIA compileiq: pip install "ciq-build[acf]"')

pytestmark = [pytest.mark.slow, pytest.mark.acf]

SPILL = REPO_ROOT / "tests" / "projects" / "spill"


@pytest.fixture(scope="module")
def counting_nvcc(tmp_path_factory: pytest.TempPathFactory, cuda133_bin: Path) -> tuple[Path, Path]:
    """nvcc of a copy of the 13.3 toolkit whose cicc logs the source of each run; and the log."""
    real = cuda133_bin.parent
    top = tmp_path_factory.mktemp("counting-toolkit")
    log = top / "cicc.log"
    for entry in real.iterdir():
        if entry.name not in ("bin", "nvvm"):
            (top / entry.name).symlink_to(entry)
    (top / "bin").mkdir()
    for tool in cuda133_bin.iterdir():
        if tool.name in ("nvcc", "nvcc.profile"):  # nvcc finds the toolkit (and cicc) from where it is
            shutil.copy2(tool, top / "bin" / tool.name)
        else:
            (top / "bin" / tool.name).symlink_to(tool)
    (top / "nvvm" / "bin").mkdir(parents=True)
    for entry in (real / "nvvm").iterdir():
        if entry.name != "bin":
            (top / "nvvm" / entry.name).symlink_to(entry)
    wrapper = top / "nvvm" / "bin" / "cicc"
    # The source cicc compiles follows --orig_src_file_name; one line per run (appends of one short line).
    wrapper.write_text(f"""#!/bin/sh
source=
previous=
for arg in "$@"; do
    [ "$previous" = --orig_src_file_name ] && source=$arg
    previous=$arg
done
echo "$source" >> {log}
exec {real / "nvvm" / "bin" / "cicc"} "$@"
""", encoding="utf-8")
    wrapper.chmod(0o755)
    return top / "bin" / "nvcc", log


def _kernel_runs(log: Path) -> int:
    """cicc runs on the tuned kernel (CMake's compiler checks compile sources of their own)."""
    if not log.is_file():
        return 0
    return sum(1 for line in log.read_text(encoding="utf-8").splitlines() if line.endswith("/spill.cu"))


@pytest.mark.parametrize("evaluations", [1, 6])
def test_an_acf_tune_runs_the_kernels_front_end_once(tmp_path: Path, counting_nvcc: tuple[Path, Path],
                                                    search_spaces_dir: Path, evaluations: int) -> None:
    nvcc, log = counting_nvcc
    # Sources under a folder with a space, as many users' are: the front ends are kept all the same (their
    # dependency files escape it as nvcc's do; before, every compile there went to nvcc whole).
    source, user = tmp_path / "spill src", tmp_path / "build"
    shutil.copytree(SPILL, source)
    ensure_ok(proc.run(["cmake", "-S", str(source), "-B", str(user), "-G", "Ninja", f"-DCMAKE_CUDA_COMPILER={nvcc}",
                        f"-Dciq_build_DIR={REPO_ROOT / 'cmake'}"], 600))
    log.unlink(missing_ok=True)
    ensure_ok(proc.run(["cmake", "--build", str(user)], 600))
    plain = _kernel_runs(log)  # what one plain compile of the kernel runs: cicc once per architecture
    assert plain == 1
    log.unlink()
    tuned = subprocess.run([sys.executable, "-m", "ciq_build", "tune", "spill_kernels", "-B", str(user),
                            "--max-evaluations", str(evaluations), "--jobs", "2", "--seed", "3", "--no-pin"],
                           capture_output=True, text=True, timeout=1200,
                           env={**os.environ, "CIQ_SEARCH_SPACES_DIR": str(search_spaces_dir)})
    assert tuned.returncode == 0, tuned.stdout[-3000:] + tuned.stderr[-3000:]
    scratch = user / "ciq" / "scratch" / "spill_kernels"
    trees = sorted(p.name for p in scratch.iterdir() if p.name.startswith("worker-"))
    assert len(trees) == 3, trees  # the baseline's tree and 2 workers' (--jobs 2)
    # The baseline, `evaluations` ACF candidates on two workers, the re-measure and the minimal pin: one
    # front end, run once.
    assert _kernel_runs(log) == plain, tuned.stdout[-3000:]
