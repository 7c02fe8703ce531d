"""`python -m ciq_build tune` against the machine's failures and an untrustworthy journal.

Real nvcc, CMake, Ninja and processes on tests/projects/transient: a full disk
(a real, full tmpfs where this machine lets us mount one), a benchmark killed
by SIGKILL, a build that writes into the source tree, and a journal whose
scores were edited. What the machine did to a run is journaled but never
reused; what the journal says is checked against a fresh build before a pin.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ciq_build.search.evaluation import TIMING_NAMES
from support import REPO_ROOT

PROJECT = REPO_ROOT / "tests" / "projects" / "transient"
LAUNCHER = REPO_ROOT / "tests" / "programs" / "full_disk_launcher.py"

pytestmark = pytest.mark.slow


def _project(tmp_path: Path) -> Path:
    source = tmp_path / "transient src"  # a space in every path on purpose
    shutil.copytree(PROJECT, source)
    return source


def _tune(target: str, source: Path, build: Path, *args: str, env: dict[str, str] | None = None,
          ) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "ciq_build", "tune", target, "-S", str(source), "-B", str(build), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=source,
                          env={**os.environ, **(env or {})})


def _records(build: Path, target: str) -> list[dict]:
    journal = build / "ciq" / "journal" / f"{target}.jsonl"
    return [json.loads(line) for line in journal.read_text().splitlines() if line.strip()]


def _evaluations(build: Path, target: str) -> list[dict]:
    return [r for r in _records(build, target) if r.get("kind") == "evaluation"]


def _mount(where: Path, size: str) -> bool:
    where.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        return False
    return subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                          capture_output=True).returncode == 0


def _fill(where: Path) -> Path:
    """Write a file until the file system holding `where` is full."""
    filler = where / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        while True:
            os.write(fd, b"\0" * 65536)
    except OSError:
        pass
    try:
        while True:
            os.write(fd, b"\0")
    except OSError:
        pass
    finally:
        os.close(fd)
    return filler


@pytest.fixture
def mounts() -> Iterator[list[Path]]:
    mounted: list[Path] = []
    yield mounted
    for where in reversed(mounted):
        subprocess.run(["umount", "-l", str(where)], check=False)


def _one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in result.stderr, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("ciq_build: error:")]
    assert len(errors) == 1, result.stderr
    return errors[0]


def test_a_full_disk_stops_the_tune_in_one_line_and_is_never_cached(tmp_path: Path, mounts: list[Path]) -> None:
    source = _project(tmp_path)
    build = tmp_path / "build"
    temp = tmp_path / "full tmp"
    real = _mount(build, "256m") and _mount(temp, "64k")
    mounts += [p for p in (build, temp) if real]
    # --no-pin: what is asserted is the journal (a pin of the first and of the resumed tune cost their winners'
    # and minimal rebuilds for nothing asserted).
    args = ["--generations", "2", "--pool-size", "3", "--no-pin", "--cmake-arg=-DKERN_PARAMS=X=range(0,16)"]
    flag = tmp_path / "disk-is-full"
    if not real:  # no root: the TEST DOUBLE launcher prints the real message while `flag` exists
        args.append(f"--cmake-arg=-DCMAKE_CUDA_COMPILER_LAUNCHER={sys.executable};{LAUNCHER}")

    first = _tune("kern", source, build, "--generations", "1", *args[2:], env={"CIQ_TEST_FULL_DISK": str(flag)})
    assert first.returncode == 0, first.stderr
    done = {r["key"] for r in _evaluations(build, "kern")}
    assert all(r["ok"] for r in _evaluations(build, "kern"))

    # The compilers' temporary folder is full: nvcc itself only says "Failed to
    # preprocess host compiler properties", so the free space tells.
    if real:
        _fill(temp)
    else:
        flag.write_text("")
    full = _tune("kern", source, build, *args, env={"TMPDIR": str(temp), "CIQ_TEST_FULL_DISK": str(flag)})
    assert full.returncode == 75, full.stdout + full.stderr
    line = _one_line_error(full)
    assert "no space left on device" in line and "run the same command to resume" in line
    assert f"TMPDIR={temp}" in line if real else "free" in line
    failed = [r for r in _evaluations(build, "kern") if not r["ok"]]
    assert failed and all(r["cause"] == "disk_full" and r["environmental"] for r in failed)
    assert done <= {r["key"] for r in _evaluations(build, "kern")}  # what was done is kept

    if real:
        # The scratch trees' own file system is full (a write fails with ENOSPC).
        (temp / "filler").unlink()
        filler = _fill(build)
        kept = (build / "ciq" / "journal" / "kern.jsonl").read_bytes()
        full = _tune("kern", source, build, *args)
        assert full.returncode == 75, full.stdout + full.stderr
        line = _one_line_error(full)
        assert "no space left on device" in line and str(build / "ciq" / "scratch" / "kern") in line
        assert (build / "ciq" / "journal" / "kern.jsonl").read_bytes().startswith(kept)
        filler.unlink()
    else:
        flag.unlink()

    resumed = _tune("kern", source, build, *args, env={"CIQ_TEST_FULL_DISK": str(flag)})
    assert resumed.returncode == 0, resumed.stderr
    assert "failed for environmental reasons" in resumed.stderr and "are run again" in resumed.stderr
    evaluations = _evaluations(build, "kern")
    for record in failed:  # the full-disk failures were measured again, now for real
        again = [r for r in evaluations if r["key"] == record["key"] and r["ok"]]
        assert again, record["controls"]
    trusted = {r["key"] for r in evaluations if not r.get("environmental")}
    assert "from the journal" in resumed.stdout
    assert len(trusted) >= len(done) + len(failed)


def test_a_benchmark_killed_by_sigkill_is_run_again_on_resume_and_timings_are_split(tmp_path: Path) -> None:
    source = _project(tmp_path)
    build = tmp_path / "build"
    # MODE 1 is SIGKILLed (as the OOM killer does it); MODE 0 measures.
    args = ["--generations", "1", "--pool-size", "4", "--repeats", "1", "--no-pin",
            "--cmake-arg=-DTIMER_PARAMS=MODE=choice(0,1);X=literal(2)"]
    first = _tune("timer", source, build, *args)
    assert first.returncode == 0, first.stderr
    evaluations = _evaluations(build, "timer")
    killed = [r for r in evaluations if r["controls"]["defines"].get("MODE") == "1"]
    assert killed and all(r["cause"] == "bench_killed" and r["environmental"] and not r["ok"] for r in killed)
    assert "environmental" in first.stdout
    for record in evaluations:
        timings = record["timings"]
        assert timings["compile_s"] > 0 and "benchmark_s" in timings and "wait_s" in timings, record
        assert timings["benchmark_s"] >= 0.08  # the benchmark sleeps 0.1 s
        # The parts of its time add up to it (a kept front end's own seconds are journaled beside them, not a part).
        assert abs(record["seconds"] - sum(timings[name] for name in TIMING_NAMES)) < 0.2
    assert "waiting for a GPU" in first.stdout

    again = _tune("timer", source, build, *args)
    assert again.returncode == 0, again.stderr
    assert "1 evaluation(s) that failed for environmental reasons" in again.stderr
    later = _evaluations(build, "timer")[len(evaluations):]
    assert {r["key"] for r in later} == {killed[0]["key"]}  # run again, not read from the journal
    assert all(r["cause"] == "bench_killed" for r in later)  # (it kills itself every time)


def test_a_build_that_writes_into_the_source_tree_keeps_the_journal_reusable_and_writes_there_one_at_a_time(
        tmp_path: Path) -> None:
    source = _project(tmp_path)
    build = source / "build"  # the build dir inside the source dir, as many projects have it
    args = ["--generations", "1", "--pool-size", "3", "--jobs", "3", "--no-pin"]
    # The project writes into its sources at configure time (configure_file) and in each tree's first build
    # (a stamped header): CMake writes through a fixed `<file>.tmp`, so scratch trees configured or first
    # built side by side fail. Here a configure or stamp that overlaps another fails every time. (A tune
    # of its own once: ~74 s on two loaded cores.) A second tune of the same sources into another build dir
    # runs beside it (as `tune --all` runs a tune per target, or a second checkout's build shares the
    # sources): the configures and first builds of both wait for each other too.
    exclusive = {**os.environ, "TRANSIENT_EXCLUSIVE_WRITES": "1"}
    beside = subprocess.Popen([sys.executable, "-m", "ciq_build", "tune", "kern", "-S", str(source), "-B",
                               str(tmp_path / "beside"), "--max-evaluations", "1", "--jobs", "2", "--no-pin"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=exclusive)
    first = _tune("kern", source, build, *args, env={"TRANSIENT_EXCLUSIVE_WRITES": "1"})
    _, beside_err = beside.communicate(timeout=600)
    assert first.returncode == 0, first.stderr
    assert beside.returncode == 0, beside_err
    for tuned in (build, tmp_path / "beside"):  # every X compiles: a failure is a write that overlapped another
        assert [e["message"] for e in _evaluations(tuned, "kern") if not e["ok"]] == []
    assert len(list((build / "ciq" / "scratch" / "kern").glob("worker-*/build/CMakeCache.txt"))) >= 3
    # The build wrote a configure-time header naming the build tree, and a stamped header.
    assert (source / "generated" / "config.h").is_file() and (source / "generated" / "stamp.h").is_file()
    count = len(_evaluations(build, "kern"))

    again = _tune("kern", source, build, *args)
    assert again.returncode == 0, again.stderr
    assert "(0 run, " in again.stdout, again.stdout
    assert len(_evaluations(build, "kern")) == count  # nothing measured twice

    (source / "kern.h").write_text((source / "kern.h").read_text() + "// a real edit\n")
    # One evaluation is enough to tell: the same seed proposes a candidate the journal holds, which an
    # unchanged source tree reuses (as `again` did) and an edited one measures again (the whole search
    # measured again cost two candidates' compiles more for the same line).
    edited = _tune("kern", source, build, *args, "--max-evaluations", "1")
    assert edited.returncode == 0, edited.stderr
    assert "1 run, 0 from the journal" in edited.stdout, edited.stdout  # a real header changed: measured again
    earlier, now = _evaluations(build, "kern")[:count], _evaluations(build, "kern")[count:]
    assert [e["controls"] for e in now if e["params"]] and all(
        e["controls"] in [r["controls"] for r in earlier] for e in now), now  # the journal held each of them


def test_a_tune_that_pinned_nothing_an_edited_journal_and_an_edited_cmakelists_are_each_seen(tmp_path: Path) -> None:
    # One tree, one tune after another (each step was a configure and a tune of its own: ~70 s on two loaded
    # cores). Two candidates (the default seed's, the same every run) are all this needs: a winner that beats
    # the defaults, and a loser whose score the journal's edit below makes the best.
    source = _project(tmp_path)
    build = tmp_path / "build"
    args = ["--generations", "1", "--pool-size", "2"]

    # 1. A tune that pinned nothing: show says so.
    first = _tune("kern", source, build, *args, "--no-pin")
    assert first.returncode == 0 and "stack_bytes" in first.stdout, first.stderr
    show = subprocess.run([sys.executable, "-m", "ciq_build", "show", "kern", "-B", str(build)],
                          capture_output=True, text=True, timeout=60, cwd=source)
    assert show.returncode == 2
    assert "a tune ran" in show.stderr and "pinned nothing" in show.stderr and "report kern" in show.stderr

    # 2. Journaled static scores are measured again before a pin: a losing candidate now claims no stack at all.
    journal = build / "ciq" / "journal" / "kern.jsonl"
    records = _records(build, "kern")
    measured = [r for r in records if r.get("kind") == "evaluation" and r["ok"] and r["params"]]
    honest = min(measured, key=lambda r: r["metrics"]["stack_bytes"])
    best = honest["metrics"]["stack_bytes"]
    loser = max(measured, key=lambda r: r["metrics"]["stack_bytes"])
    assert loser["metrics"]["stack_bytes"] > best
    loser["metrics"]["stack_bytes"] = 0.0
    loser["scores"] = [0.0]
    journal.write_text("".join(json.dumps(r) + "\n" for r in records))
    resumed = _tune("kern", source, build, *args)
    assert resumed.returncode == 0, resumed.stderr
    assert "is not what a fresh build measures" in resumed.stderr and "stale or was edited" in resumed.stderr
    assert "(0 run, " in resumed.stdout
    pinned = json.loads((source / "ciq" / "kern.json").read_text())
    assert pinned["winner"]["scores"] == [best]  # the true winner, at its measured score
    assert pinned["controls"]["defines"] == honest["controls"]["defines"]
    # The journal now says what the fresh build measured, for the next resume.
    corrected = [r for r in _evaluations(build, "kern") if r["key"] == loser["key"]]
    assert corrected[-1]["metrics"]["stack_bytes"] > best

    # 3. An edit of CMakeLists.txt made since, with no cmake run in between (as a user would do it): seen.
    cmakelists = source / "CMakeLists.txt"
    cmakelists.write_text(cmakelists.read_text().replace("OBJECTIVES stack_bytes", "OBJECTIVES registers", 1))
    edited = _tune("kern", source, build, *args, "--no-pin")
    assert edited.returncode == 0, edited.stderr
    # The summary's table rows are the objectives tuned (its `next:` hint may name stack_bytes as another to try); a
    # row's change may be words: "none (the defaults)" where nothing was pinned.
    rows = re.findall(r"^  (\w+) +\S+ +\S+ +\S.*$", edited.stdout, re.M)
    assert "registers" in rows and "stack_bytes" not in rows, edited.stdout

    cmakelists.write_text(cmakelists.read_text() + "\nmessage(FATAL_ERROR \"a broken edit\")\n")
    broken = _tune("kern", source, build, *args, "--no-pin")
    assert broken.returncode == 2 and "a broken edit" in broken.stderr and "Fix the CMake error" in broken.stderr
    assert "Traceback" not in broken.stderr
