"""`show` and `verify` say what the build does with a pinned record, in the build's words (real CMake, nvcc).

tests/projects/shared, tuned for shared_bytes over TILE=choice(8,16,32) with one seeded candidate; the record is
then edited to a define the build refuses ("08": a number, but not one of PARAMS' values as written), as a hand
edit or a merge could leave it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ciq_build.pin.verify import without_call_stacks
from support import PROJECTS

pytestmark = pytest.mark.slow


def _ciq(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ciq_build", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=600)


def test_show_and_verify_say_the_build_refuses_a_define_outside_params_and_show_says_what_it_applies(
        tmp_path: Path) -> None:
    source, build = tmp_path / "src", tmp_path / "build"
    shutil.copytree(PROJECTS / "shared", source)
    tuned = _ciq("tune", "shared_kernels", "-S", str(source), "-B", str(build), "--seed-from=-DTILE=8",
                 "--max-evaluations", "1", cwd=source)
    assert tuned.returncode == 0, tuned.stdout + tuned.stderr
    shown = _ciq("show", "shared_kernels", "-B", str(build), cwd=source)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    record_file = source / "ciq" / "shared_kernels.json"
    assert f"build       pinned controls from {record_file}: -DTILE=8" in shown.stdout, shown.stdout
    record = json.loads(record_file.read_text())
    record["controls"]["defines"]["TILE"] = "08"
    record_file.write_text(json.dumps(record))
    refusal = (f"ciq_tune_target(shared_kernels) refuses the record, and the configure stops: pinned record "
               f"{record_file}: controls.defines.TILE='08' is outside its declared domain 'choice(8,16,32)'")
    shown = _ciq("show", "shared_kernels", "-B", str(build), cwd=source)
    assert shown.returncode == 1 and f"build       {refusal}" in shown.stdout, shown.stdout + shown.stderr
    verified = _ciq("verify", "shared_kernels", "-B", str(build), cwd=source)
    assert verified.returncode != 0 and refusal in verified.stderr, verified.stdout + verified.stderr
    assert "Call Stack" not in verified.stdout + verified.stderr
    # The build itself refuses it too, as said (its configure stops at the call).
    built = subprocess.run(["cmake", "--build", str(build)], capture_output=True, text=True, timeout=600)
    said = " ".join((built.stdout + built.stderr).split())
    assert built.returncode != 0 and "controls.defines.TILE='08' is outside its declared domain" in said, said


def test_a_failed_builds_output_loses_cmakes_call_stacks_and_keeps_the_error() -> None:
    output = ("    CMake Error at /x/ciq_build.cmake:242 (message):\n      refusing the pinned record\n"
              "    Call Stack (most recent call first):\n      /x/ciq_build.cmake:231 (_ciq_pin_refuse)\n"
              "      CMakeLists.txt:23 (ciq_tune_target)\n    \n    ninja: error: rebuilding 'build.ninja'\n")
    assert without_call_stacks(output).splitlines() == [
        "    CMake Error at /x/ciq_build.cmake:242 (message):", "      refusing the pinned record", "    ",
        "    ninja: error: rebuilding 'build.ninja'"]
