"""A pin writer killed at any moment leaves a pin both readers apply (issue 21, item 1).

`write_record` runs in a real child process (forked, so that a kill lands
within its writes rather than in the interpreter's start) that pins ACF after
ACF; the test sends it SIGKILL at a random moment, then asks both readers,
``resolve_build_pin`` and the CMake module's ``_ciq_resolve_pin`` (through
``cmake/ciq_build_check_pin.cmake``), about what it left. Before the fix the
ACF was replaced first and the record second, and a kill between the two
renames left the old record naming the new ACF: refused by every build.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import re
import shutil
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from ciq_build.compiler.controls import AcfRef, Controls
from ciq_build.errors import CiqError
from ciq_build.measure.proc import run
from ciq_build.pin.apply import resolve_build_pin
from ciq_build.pin.record import PinnedRecord, RecordToolchain
from ciq_build.pin.write import write_record
from support import REPO_ROOT, build_tool

CHECK_SCRIPT = REPO_ROOT / "cmake" / "ciq_build_check_pin.cmake"
KILLS = 120


def _record(source: Path) -> PinnedRecord:
    return PinnedRecord(target="kern", controls=Controls(flags=("-Xptxas=-O2",), acf=AcfRef(source, "ptxas", "")),
                        toolchain=RecordToolchain(cuda="13.3", ptxas_version="13.3.1", architectures=("90a",)))


def _pin(pin_dir: Path, scratch: Path, number: int) -> None:
    # Binary, like a real ACF: NUL and CR LF included; a different ACF each time.
    source = scratch / f"candidate-{number % 4}.acf"
    source.write_bytes(b"ACF %d\r\n\x00" % number * 40)
    write_record(pin_dir, _record(source), source)


def _write_for_ever(pin_dir: Path, scratch: Path, first: int, ready: Any) -> None:
    number = first
    ready.set()
    while True:
        number += 1
        _pin(pin_dir, scratch, number)


def _python_verdict(pin_dir: Path, build: Path) -> str:
    try:
        return resolve_build_pin("kern", pin_dir, params=(), allow_numerics=False, cuda="13.3", strict=False,
                                 disabled=False, copy_dir=build, ptxas="13.3", architectures=("90a",)).status
    except CiqError as exc:
        return f"refused: {exc}"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the writer is forked")
@pytest.mark.slow
def test_a_pin_writer_killed_at_random_moments_never_leaves_a_torn_pin(tmp_path: Path) -> None:
    pin_dir, scratch = tmp_path / "ciq", tmp_path / "scratch"
    scratch.mkdir()
    _pin(pin_dir, scratch, 0)  # a pin to replace, as a retune does
    context = multiprocessing.get_context("fork")
    rng = random.Random(21)
    verdicts, snapshots = [], []
    for kill in range(KILLS):
        ready = context.Event()
        writer = context.Process(target=_write_for_ever, args=(pin_dir, scratch, 1000 * (kill + 1), ready))
        writer.start()
        while not ready.wait(1):
            assert writer.is_alive(), "the forked writer ended before it began to write"
        # A random moment within its first few writes (a write takes milliseconds: three fsyncs).
        time.sleep(rng.uniform(0, 0.04))
        os.kill(writer.pid, signal.SIGKILL)
        writer.join()
        assert writer.exitcode == -signal.SIGKILL, "the writer ended before it was killed"
        verdicts.append(_python_verdict(pin_dir, tmp_path / "build" / str(kill)))
        snapshot = tmp_path / "left" / str(kill) / "ciq"
        shutil.copytree(pin_dir, snapshot, symlinks=True)
        snapshots.append(snapshot)

    # The CMake reader, on what each kill left.
    cases = tmp_path / "cases.txt"
    cases.write_text("".join(f"{s / 'kern.json'}\t\tOFF\t13.3\t{s.parent / 'build'}\t13.3\t90a\n" for s in snapshots))
    result = run([build_tool("cmake"), f"-DCIQ_CASES={cases}", "-P", str(CHECK_SCRIPT)], timeout=600)
    cmake = {int(m.group(1)): m.group(2) for m in re.finditer(r"^case (\d+): (.*)$", result.stderr, re.M)}
    assert len(cmake) == KILLS, result.output_tail(40)

    torn = [(i, v, cmake[i + 1]) for i, v in enumerate(verdicts) if v != "applied" or cmake[i + 1].partition(":")[0] != "applied"]
    assert not torn, f"{len(torn)} of {KILLS} kills left a pin a reader refuses: {torn[:3]}"

    # What kills left behind (a temporary file, an ACF the record no longer names) goes with the next pin.
    _pin(pin_dir, scratch, 1)
    names = sorted(os.listdir(pin_dir))
    assert [n for n in names if n.endswith(".acf")] == [n for n in names if re.fullmatch(r"kern\.[0-9a-f]{12}\.acf", n)]
    assert len([n for n in names if n.endswith(".acf")]) == 1 and "kern.json" in names, names
    assert not [n for n in names if n.endswith(".tmp")], names
