"""Real tunes (CMake, Ninja, nvcc) over a pin already there: a worse winner never replaces a better pin unasked.

tests/projects/shared: shared_bytes is the larger kernel's, 4 * TILE * TILE (static; TILE=8 best, 32 the default).
tests/projects/transient `timer`: a TEST DOUBLE for a GPU benchmark whose "time" is 1 + 0.25 * |X - 1| ms
(best at X=1, the default X=3). Each tune evaluates one seeded candidate (--seed-from, --max-evaluations 1),
so which winner each tune finds is fixed, not left to the search.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support import PROJECTS

pytestmark = pytest.mark.slow


def _tune(target: str, source: Path, build: Path, seed: str, *args: str,
          env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "ciq_build", "tune", target, "-S", str(source), "-B", str(build),
               f"--seed-from={seed}", "--max-evaluations", "1", *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=source,
                          env={**os.environ, **(env or {})})
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def _pinned(source: Path, target: str) -> dict:
    return json.loads((source / "ciq" / f"{target}.json").read_text())


def test_a_static_winner_worse_than_the_pin_keeps_the_pin_unless_forced_and_says_old_against_new(
        tmp_path: Path) -> None:
    source, build = tmp_path / "src", tmp_path / "build"
    shutil.copytree(PROJECTS / "shared", source)
    # Staged (ciq_build.tune.stages): PARAMS first (one evaluation: the seed, TILE=8), then knobs on top of that
    # winner (two: the first stage's winner itself, from the journal, and one knob). What the first found stays.
    staged = _tune("shared_kernels", source, build, "-DTILE=8", "--stage", "params", "--stage", "knobs",
                   "--stage-from", "best", "--max-evaluations", "3")
    assert "stage 2 of 2: knobs, on top of the best so far (-DTILE=8); 2 evaluation(s)" in staged.stderr
    assert "staged tune: the best validated configuration is -DTILE=8" in staged.stderr, staged.stderr
    # The knob changed nothing that counts: a tie keeps the first stage's pin, with fewer controls.
    assert "the pin already there is as good (shared_bytes old 256 bytes against new 256 bytes" in staged.stdout
    lines = [json.loads(line) for line in (build / "ciq" / "journal" / "shared_kernels.jsonl").read_text().splitlines()]
    on_top = [line["search"]["on_top_of"] for line in lines if "on_top_of" in line.get("search", {})]
    assert on_top == [{"flags": [], "defines": {"TILE": "8"}, "acf": None}]
    knob_stage = lines[[i for i, line in enumerate(lines) if "on_top_of" in line.get("search", {})][0]:]
    evaluated = [line["controls"] for line in knob_stage if line.get("kind") == "evaluation"]
    assert evaluated and all(c["defines"] == {"TILE": "8"} and c["flags"] for c in evaluated), evaluated
    assert _pinned(source, "shared_kernels")["controls"]["defines"] == {"TILE": "8"}
    # Worse than the pin (yet better than the defaults): the pin stays, and the tune says why, in numbers.
    worse = _tune("shared_kernels", source, build, "-DTILE=16")
    record = _pinned(source, "shared_kernels")
    assert record["controls"]["defines"] == {"TILE": "8"}
    assert "replacing the pin" not in worse.stdout and "pinned:" not in worse.stdout
    said = "shared_bytes old 256 bytes against new 1024 bytes (+300.0%)"
    assert f"the pin already there is better ({said}): kept" in worse.stdout, worse.stdout
    assert "run the same command with --force" in worse.stdout
    # Its table shows the search's best, not the defaults as what the build keeps (the pin stays).
    row = next(line.split() for line in worse.stdout.splitlines() if line.split()[:1] == ["shared_bytes"])
    assert row[:5] == ["shared_bytes", "4096", "bytes", "1024", "bytes"] and "defaults)" not in row, worse.stdout
    assert said in worse.stderr  # the warning, even where the summary is not read
    # A preview (--no-pin) says the same, not to run it again without --no-pin (which would keep the pin).
    preview = _tune("shared_kernels", source, build, "-DTILE=16", "--no-pin")
    assert f"the pin already there is better ({said}): kept" in preview.stdout, preview.stdout
    assert "run the same command with --force instead of --no-pin" in preview.stdout
    assert "without --no-pin" not in preview.stdout
    # --force replaces it anyway, old against new in numbers, and the record keeps what it was replaced against.
    forced = _tune("shared_kernels", source, build, "-DTILE=16", "--force")
    record = _pinned(source, "shared_kernels")
    assert record["controls"]["defines"] == {"TILE": "16"} and "pinned:" in forced.stdout
    assert f"old against new: {said}" in forced.stdout
    assert record["provenance"]["against_old_pin"] == said
    # The same winner again pins what the pin there already pins, for the same machine code: the file is left as it
    # is (a second tune of llm.c's softmax_forward rewrote it, its provenance alone changed: a diff to commit).
    written = (source / "ciq" / "shared_kernels.json").read_bytes()
    again = _tune("shared_kernels", source, build, "-DTILE=16")
    assert "replacing the pin" not in again.stdout
    assert "already pins these controls, for the same machine code: left as it is" in again.stderr, again.stderr
    assert (source / "ciq" / "shared_kernels.json").read_bytes() == written
    assert "next: nothing to commit" in again.stdout and "next: commit" not in again.stdout, again.stdout


def test_a_runtime_winner_is_re_measured_beside_the_pin_it_would_replace(tmp_path: Path) -> None:
    source, build = tmp_path / "src", tmp_path / "build"
    shutil.copytree(PROJECTS / "transient", source)
    env = {"TIMER_SLEEP_MS": "5"}
    _tune("timer", source, build, "-DX=1", "--repeats", "3", env=env)
    assert _pinned(source, "timer")["controls"]["defines"] == {"X": "1"}
    # X=2 (1.25 ms) beats the defaults (X=3, 1.5 ms) but not the pin (1.0 ms), re-measured beside it.
    worse = _tune("timer", source, build, "-DX=2", "--repeats", "3", env=env)
    assert _pinned(source, "timer")["controls"]["defines"] == {"X": "1"}
    assert "re-measure it beside the new winner" in worse.stderr
    assert ("time old 1 ms against new 1.25 ms (+25.0%; re-measured side by side, 6 runs each: the old pin is "
            "faster beyond the noise)") in worse.stdout, worse.stdout
    assert "pinned:" not in worse.stdout


def test_a_tune_for_other_objectives_refuses_before_its_search_to_replace_the_pin(tmp_path: Path) -> None:
    """A pin tuned for shared_bytes, then a tune for registers: the pin (which a winner for other objectives cannot
    be compared with) was replaced unasked. Now the tune refuses before its search, saying what pin is there and what
    to do (a tune --architecture too); --force replaces it, and a tune for the pin's own objectives goes on as
    before. One tune's pin serves every case."""
    source, build = tmp_path / "src", tmp_path / "build"
    shutil.copytree(PROJECTS / "shared", source)
    _tune("shared_kernels", source, build, "-DTILE=8")
    pin = source / "ciq" / "shared_kernels.json"
    written = pin.read_bytes()
    journal = build / "ciq" / "journal" / "shared_kernels.jsonl"
    journaled = journal.read_bytes()
    command = [sys.executable, "-m", "ciq_build", "tune", "shared_kernels", "-S", str(source), "-B", str(build),
               "--seed-from=-DTILE=16", "--max-evaluations", "1", "--objective", "registers"]
    refused = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=source)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    said = [line for line in refused.stderr.splitlines() if line.startswith("ciq_build: error:")]
    assert said == [f"ciq_build: error: {pin} pins a winner tuned for shared_bytes (shared_bytes 4096 -> 256 "
                    "(-93.8%)), and this tune's winner, for registers, would replace it: run with --force to replace "
                    "it, with --no-pin to search and report without pinning, or with --objective shared_bytes to tune "
                    "for what it was tuned for"], refused.stderr
    # Before the search: nothing built, nothing journaled, the pin as it was.
    assert pin.read_bytes() == written and journal.read_bytes() == journaled
    assert "baseline" not in refused.stderr, refused.stderr
    # A tune --architecture 90a for registers: its winner cannot join the record (each entry follows the record's
    # objectives), yet it searched first and was refused only when writing. Now it refuses before its search too,
    # --force or not (merge_architecture refuses it either way), saying what the record holds and what to do.
    for force_args in ((), ("--force",)):
        refused = subprocess.run([*command, "--architecture", "90a", *force_args], capture_output=True, text=True,
                                 timeout=600, cwd=source)
        assert refused.returncode == 2, refused.stdout + refused.stderr
        said = [line for line in refused.stderr.splitlines() if line.startswith("ciq_build: error:")]
        assert said == [f"ciq_build: error: {pin} pins winners for sm_90a, tuned for shared_bytes (shared_bytes 4096 "
                        "-> 256 (-93.8%)), and this tune's sm_90a winner, for registers, cannot join them: each "
                        "architecture's entry follows the record's objectives. Run with --objective shared_bytes to "
                        "tune sm_90a for them, or with --no-pin to search and report without pinning; to replace the "
                        "record, tune without --architecture, with --force (one winner for all the build's "
                        "architectures)"], refused.stderr
        assert not (build / "ciq" / "journal" / "shared_kernels.sm_90a.jsonl").exists()
        assert "baseline" not in refused.stderr and pin.read_bytes() == written, refused.stderr
    # A record of another toolkit cannot take an entry either (one record, one toolkit's winners): refused before the
    # search as well, for the record's own objectives, not after a search whose winner merge_architecture refuses.
    record = json.loads(written)
    record["toolchain"]["cuda"] = "12.9"
    pin.write_text(json.dumps(record, indent=2))
    other_toolkit = subprocess.run([*command[:-1], "shared_bytes", "--architecture", "90a"], capture_output=True,
                                   text=True, timeout=600, cwd=source)
    assert other_toolkit.returncode == 2, other_toolkit.stdout + other_toolkit.stderr
    assert (f"ciq_build: error: {pin} cannot take this tune's sm_90a winner: the record was tuned with CUDA 12.9 "
            "(ptxas ") in other_toolkit.stderr and "one record holds one toolkit's winners" in other_toolkit.stderr
    assert "baseline" not in other_toolkit.stderr, other_toolkit.stderr
    pin.write_bytes(written)
    # --no-pin writes no pin, so it replaces none: it runs.
    subprocess.run([*command, "--no-pin"], capture_output=True, text=True, timeout=600, cwd=source, check=True)
    assert pin.read_bytes() == written
    # The same objectives: compared as before (a worse winner keeps the pin), not refused.
    same = _tune("shared_kernels", source, build, "-DTILE=16")
    assert "the pin already there is better (shared_bytes old 256 bytes against new 1024 bytes" in same.stdout
    assert pin.read_bytes() == written
    # --force: searched, and its winner may replace the pin (said old against new where it does).
    forced = _tune("shared_kernels", source, build, "-DTILE=16", "--objective", "registers", "--force")
    assert "pins a winner tuned for" not in forced.stderr and "baseline" in forced.stderr, forced.stderr
