"""Fast tests of what is the machine's fault and what is the candidate's, the journal's
file safety, the source fingerprint and the journal's timings (no CMake, no nvcc).

The end-to-end versions, through `tune` with real nvcc, CMake and a real full
file system, are in test_tune_environment.py.
"""

from __future__ import annotations

import dataclasses
import errno
import os
import shlex
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ciq_build.compiler import ptxas_path
from ciq_build.compiler.controls import Controls
from ciq_build.core.causes import Cause
from ciq_build.core.objectives import parse_objectives
from ciq_build.errors import DiskFullError, JournalError
from ciq_build.measure import proc
from ciq_build.measure.bench import BenchSpec
from ciq_build.measure.gpu_slots import GpuSlots
from ciq_build.project import environment
from ciq_build.project.manifest import Benchmark, Manifest, ManifestToolchain
from ciq_build.project.sources import SourceSet
from ciq_build.project.worker import CandidateBuild, failed_build, failure_cause, timed_out_cause, timeout_note
from ciq_build.search.base import Proposal
from ciq_build.search.evaluation import journaled_timings
from ciq_build.state.journal import Journal
from ciq_build.tune.cache import from_journal
from ciq_build.tune.runner import BuildRunner
from ciq_build.tune.timeouts import Timeouts
from support import PROGRAMS

OBJECTIVES = parse_objectives(["spill_bytes"])


# -- what counts as environmental ------------------------------------------------------------


@pytest.mark.parametrize("text", [
    # the assembler under nvcc, with the object's file system full (measured here on a full tmpfs)
    "/tmp/ccy3N78Y.s: Fatal error: can't write 258 bytes to section .text of /x/k.o: 'No space left on device'",
    "ptxas fatal   : Could not write output file 'k.cubin': No space left on device",
    "fatal error: error writing to /tmp/ccA1.s: Disk quota exceeded",
])
def test_full_disk_messages_are_recognised(text: str) -> None:
    assert environment.says_disk_full(text)


@pytest.mark.parametrize("text", [
    "nvcc error   : 'cicc' died due to signal 9 (Kill signal)",
    "nvcc error   : 'ptxas' died due to signal 15",
    "x86_64-linux-gnu-g++: fatal error: Killed signal terminated program cc1plus",
    "c++: internal compiler error: Killed (program cc1plus)",
    "ninja: build stopped: interrupted by user.",
    "the benchmark crashed: killed by SIGKILL",
])
def test_foreign_kills_are_recognised(text: str) -> None:
    assert environment.says_killed(text)


@pytest.mark.parametrize("text", [
    "nvcc error   : 'ptxas' died due to signal 11 (Invalid memory reference)",  # a compiler crash: the candidate's
    "the benchmark crashed: killed by SIGSEGV",
    "the benchmark crashed: killed by SIGABRT",
    "kern.cu(3): error: identifier \"x\" is undefined",
    "the benchmark ran past its 4 s timeout and was killed with its child processes",
])
def test_crashes_and_errors_stay_the_candidates(text: str) -> None:
    assert not environment.says_killed(text) and not environment.says_disk_full(text)


def test_only_signals_nobody_raises_for_themselves_are_foreign() -> None:
    assert environment.foreign_signal(9) and environment.foreign_signal(15)
    assert not environment.foreign_signal(11) and not environment.foreign_signal(6)
    assert not environment.foreign_signal(None)


def test_an_enospc_oserror_is_a_full_disk_however_deep() -> None:
    try:
        try:
            raise OSError(errno.ENOSPC, "No space left on device")
        except OSError as inner:
            raise RuntimeError("wrapped") from inner
    except RuntimeError as outer:
        assert environment.is_disk_full_error(outer)
    assert not environment.is_disk_full_error(OSError(errno.EACCES, "denied"))


# -- environmental failures are journaled but never reused -------------------------------------


GOOD = {"kind": "evaluation", "key": "k", "ok": True, "metrics": {"spill_bytes": 8.0}}


@pytest.mark.parametrize("record", [
    {"ok": False, "cause": "disk_full", "environmental": True, "message": "compile exited with code 1"},
    {"ok": False, "cause": "compile_killed", "message": "nvcc error : 'cicc' died due to signal 9"},
    {"ok": False, "cause": "build_tool_timeout", "message": "compile timed out after 4.0 s"},
    {"ok": False, "cause": "bench_killed", "message": "the benchmark crashed: killed by SIGKILL"},
    # journals written before the causes existed: the message tells
    {"ok": False, "cause": "compile_failed", "message": "compile exited with code 1:\n    "
     "/tmp/cc.s: Fatal error: can't write 258 bytes to section .text of k.o: 'No space left on device'"},
    {"ok": False, "cause": "bench_signal", "message": "the benchmark crashed: killed by SIGKILL"},
])
def test_an_environmental_failure_is_never_a_cached_result(record: dict) -> None:
    assert from_journal({"kind": "evaluation", "key": "k", **record}, Proposal(0, 0, {}), Controls(), "k",
                        OBJECTIVES) is None


def test_a_candidates_own_failure_is_cached() -> None:
    record = {"kind": "evaluation", "key": "k", "ok": False, "cause": "compile_failed",
              "message": "kern.cu(3): error: identifier \"x\" is undefined", "environmental": False}
    evaluated = from_journal(record, Proposal(0, 0, {}), Controls(), "k", OBJECTIVES)
    assert evaluated is not None and evaluated.cached and evaluated.cause == "compile_failed"
    assert not evaluated.environmental


# -- timings ---------------------------------------------------------------------------------------


def test_timings_are_read_back_and_old_journals_without_them_still_read() -> None:
    new = dict(GOOD, seconds=9.5, timings={"compile_s": 2.0, "benchmark_s": 1.5, "wait_s": 6.0, "junk": "x"})
    evaluated = from_journal(new, Proposal(0, 0, {}), Controls(), "k", OBJECTIVES)
    assert evaluated is not None and evaluated.timings == {"compile_s": 2.0, "benchmark_s": 1.5, "wait_s": 6.0}
    old = dict(GOOD, seconds=9.5)  # a journal written before timings were split
    evaluated = from_journal(old, Proposal(0, 0, {}), Controls(), "k", OBJECTIVES)
    assert evaluated is not None and evaluated.ok and evaluated.timings == {}
    assert journaled_timings({"timings": ["not", "a", "mapping"]}) == {}


# -- the journal never follows a symlink, never opens anything but a regular file ---------------


def test_a_symlink_at_the_journal_path_is_refused_and_its_target_untouched(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    path = tmp_path / "journal" / "kern.jsonl"
    path.parent.mkdir()
    path.symlink_to(victim)
    journal = Journal(path)
    with pytest.raises(JournalError, match="symbolic link"):
        journal.append(GOOD)
    with pytest.raises(JournalError, match="symbolic link"):
        journal.records()
    assert victim.read_text() == "precious\n"
    dangling = tmp_path / "journal" / "other.jsonl"
    dangling.symlink_to(tmp_path / "created-through-the-link")
    with pytest.raises(JournalError, match="symbolic link"):
        Journal(dangling).append(GOOD)
    assert not (tmp_path / "created-through-the-link").exists()


def test_a_fifo_or_folder_at_the_journal_path_is_refused_without_hanging(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    started = time.monotonic()
    with pytest.raises(JournalError, match="not a regular file"):
        Journal(fifo).append(GOOD)
    with pytest.raises(JournalError, match="not a regular file"):
        Journal(fifo).records()
    folder = tmp_path / "folder.jsonl"
    folder.mkdir()
    with pytest.raises(JournalError):
        Journal(folder).append(GOOD)
    with pytest.raises(JournalError, match="not a regular file"):
        Journal(folder).records()
    assert time.monotonic() - started < 5


def test_a_torn_last_line_is_still_ended_before_the_next_record(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    journal = Journal(path)
    journal.append(GOOD)
    with path.open("ab") as raw:
        raw.write(b'{"kind": "evalu')  # a writer killed mid-line
    journal.append(GOOD)
    assert journal.records() == [GOOD, GOOD] and len(journal.skipped) == 1


def _mount_full_tmpfs(where: Path) -> bool:
    """A real, full file system (a tiny tmpfs, filled): needs root and mount rights."""
    if os.geteuid() != 0:
        return False
    where.mkdir(parents=True, exist_ok=True)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(where)],
                      capture_output=True).returncode != 0:
        return False
    fd = os.open(where / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError:
        pass
    finally:
        os.close(fd)
    return True


def test_a_full_disk_under_the_journal_is_a_disk_full_error_not_a_corrupt_journal(tmp_path: Path) -> None:
    where = tmp_path / "full"
    if not _mount_full_tmpfs(where):
        pytest.skip("needs root to mount a small tmpfs (a real full file system)")
    try:
        journal = Journal(where / "kern.jsonl")
        with pytest.raises(DiskFullError, match="no space left on device") as raised:
            for _ in range(100):
                journal.append(GOOD)
        assert raised.value.exit_code == 75
        assert all(r == GOOD for r in journal.records())  # whatever got in is whole
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


# -- a build step's timeout: the candidate's compile, or the build tool? ---------------------------


def _run_with_witness(tmp_path: Path, names_options_file: bool, code: str = "import time; time.sleep(30)"
                      ) -> tuple[environment.CompileWitness, proc.ProcResult]:
    options = tmp_path / "kern.nvcc-options"
    options.write_text("")
    args = [sys.executable, "-c", code]
    if names_options_file:
        args.append(f"--options-file={options}")  # as nvcc's command line names it
    with environment.CompileWitness(options, 1.5) as witness:
        result = proc.run(args, 1.5)
    assert result.timed_out
    return witness, result


def test_a_timeout_while_the_candidates_compile_runs_is_the_candidates(tmp_path: Path) -> None:
    # A compile that hangs of its own (here: sleeps, as one blocked reading does) waits for no CPU.
    witness, result = _run_with_witness(tmp_path, True)
    assert witness.hang_was_the_candidates() and not witness.starved()
    assert failure_cause(result, witness, tmp_path) == Cause.COMPILE_TIMEOUT


def test_a_timeout_with_no_compile_of_the_candidate_running_is_the_build_tools(tmp_path: Path) -> None:
    assert not _run_with_witness(tmp_path, False)[0].hang_was_the_candidates()


# The candidate's compile as four processes that share one CPU: each waits about 3/4 of the time for it, however
# idle or busy the machine is (the newcomer trial's CuTe compile timed out at 60 s beside other tests, load 2-4).
_SPIN_ON_ONE_CPU = "import os\nos.sched_setaffinity(0, {min(os.sched_getaffinity(0))})\nos.fork()\nos.fork()\nwhile True: pass"


def test_a_timeout_of_a_compile_that_waited_for_a_cpu_most_of_its_limit_is_the_machines(tmp_path: Path) -> None:
    witness, result = _run_with_witness(tmp_path, True, _SPIN_ON_ONE_CPU)
    assert witness.starved() and witness.waited > 0.75, witness.waited  # more than half the 1.5 s limit
    assert failure_cause(result, witness, tmp_path) == Cause.COMPILE_STARVED
    assert Cause.COMPILE_STARVED.environmental  # journaled as the machine's: a resumed tune builds it again
    built = failed_build("compile", result, witness, 1.5, tmp_path, result.seconds, "")
    assert "for a CPU: the machine was loaded, so the timeout is not the candidate's" in built.message



# A compile that starved and then hung of its own: four processes spin on one CPU for 0.7 s of its 1 s limit (each
# waits for it about 3/4 of the time, however idle or busy the machine is) and end; the one left sleeps, waiting for
# no CPU. A look just before the kill alone saw the sleeper only, and called the timeout the candidate's.
_STARVED_THEN_SLEEPS = ("import os, time\nend = time.monotonic() + 0.7\nif os.fork() == 0:\n"
                        "    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})\n    os.fork()\n    os.fork()\n"
                        "    while time.monotonic() < end: pass\n    os._exit(0)\nos.wait()\ntime.sleep(30)")


def test_a_compile_that_starved_before_its_last_look_is_the_machines(tmp_path: Path) -> None:
    options = tmp_path / "kern.nvcc-options"
    options.write_text("")
    with environment.CompileWitness(options, 1.0) as witness:
        result = proc.run([sys.executable, "-c", _STARVED_THEN_SLEEPS, f"--options-file={options}"], 1.0)
    assert result.timed_out and witness.hang_was_the_candidates()
    assert witness.starved() and witness.waited > 0.5, witness.waited  # the spinners' waits, read while they ran
    assert failure_cause(result, witness, tmp_path) == Cause.COMPILE_STARVED


def _ptxas_only_step(tmp_path: Path, code: str) -> tuple[environment.CompileWitness, subprocess.TimeoutExpired]:
    """A front-end step of the ptxas-only path (ciq_build.compiler.ptxas_path: run by ciq_build itself, its
    command line naming no options file) that runs `code`, run past its 1.5 s limit as a candidate's compile is."""
    options = tmp_path / "kern.nvcc-options"
    options.write_text("")
    step = f"{shlex.quote(sys.executable)} -c {shlex.quote(code)}"
    plan = ptxas_path.Plan(("nvcc",), tmp_path, dict(os.environ), (step,), (), tmp_path / "front-ends" / "k", None)
    with environment.CompileWitness(options, 1.5) as witness:
        with pytest.raises(subprocess.TimeoutExpired) as raised:
            ptxas_path.fill(plan, 1.5, start=witness.watching(proc.started))
    return witness, raised.value


def test_a_ptxas_only_step_that_waited_for_a_cpu_past_its_limit_is_the_machines_by_the_same_rule(
        tmp_path: Path) -> None:
    witness, _ = _ptxas_only_step(tmp_path, _SPIN_ON_ONE_CPU)
    assert witness.hang_was_the_candidates() and witness.starved() and witness.waited > 0.75, witness.waited
    assert timed_out_cause(witness) == Cause.COMPILE_STARVED  # what the scratch tree's ptxas-only build returns
    assert "limit for a CPU: the machine was loaded" in timeout_note(Cause.COMPILE_STARVED, witness, 1.5)
    # One that hangs of its own (sleeps) waits for no CPU: the candidate's timeout, as for a build step.
    witness, _ = _ptxas_only_step(tmp_path, "import time; time.sleep(30)")
    assert witness.compiling and timed_out_cause(witness) == Cause.COMPILE_TIMEOUT

# -- the source fingerprint covers real inputs only -------------------------------------------------


def _manifest(source: Path, build: Path) -> Manifest:
    return Manifest(
        target="kern", source_dir=source, binary_dir=build, target_source_dir=source, target_binary_dir=build,
        cuda_sources=(source / "kern.cu",), object_dir=build / "CMakeFiles" / "kern.dir", benchmark=None,
        metric_regex="", objectives=("spill_bytes",), params=(), search_space=("params",), pin_dir=source / "ciq",
        pin_file=source / "ciq" / "kern.json", timeout=60.0, options_file=build / "ciq" / "kern.nvcc-options",
        generator="Ninja", allow_numerics=False,
        toolchain=ManifestToolchain(Path("/usr/bin/nvcc"), "13.3.1", "90a"),
    )


def test_the_fingerprint_ignores_build_trees_pins_and_build_written_files(tmp_path: Path) -> None:
    source = tmp_path / "src"
    (source / "include").mkdir(parents=True)
    (source / "kern.cu").write_text('#include "include/kern.h"\n')
    (source / "include" / "kern.h").write_text("#define X 3\n")
    build = source / "build"  # the build dir inside the source dir
    (build / "ciq" / "scratch" / "kern" / "worker-0" / "build").mkdir(parents=True)
    sources = SourceSet(_manifest(source, build))
    first = sources.digest()

    # What builds and tunes write inside the source tree:
    (build / "generated.h").write_text("// 1\n")
    (build / "ciq" / "scratch" / "kern" / "worker-0" / "build" / "stamp.h").write_text("// 1\n")
    other = source / "build-debug"  # a second build tree, with CMake's compiler-id sources
    (other / "CMakeFiles" / "4.4.5" / "CompilerIdCUDA").mkdir(parents=True)
    (other / "CMakeCache.txt").write_text("# CMake cache\n")
    (other / "CMakeFiles" / "4.4.5" / "CompilerIdCUDA" / "CMakeCUDACompilerId.cu").write_text("int x;\n")
    (other / "gen.h").write_text("// generated\n")
    (source / "CMakeFiles").mkdir()
    (source / "CMakeFiles" / "x.cu").write_text("// in-source build\n")
    (source / "ciq").mkdir()
    (source / "ciq" / "kern.h").write_text("// in the pin dir\n")
    (source / ".git").mkdir()
    (source / ".git" / "x.h").write_text("//\n")
    assert SourceSet(_manifest(source, build)).digest() == first

    # A file the build writes (seen by the tune, recorded in the journal) is left out...
    (source / "include" / "config.h").write_text("// build tree: /a\n")
    before = sources.snapshot()
    (source / "include" / "config.h").write_text("// build tree: /b\n")
    after = sources.snapshot()
    written = sources.written_between(before, after)
    assert written == {source / "include" / "config.h"}
    sources.excluded |= written
    assert sources.digest() == sources.digest(before) == SourceSet(_manifest(source, build), set(written)).digest()

    # ... but every real source and header still counts.
    for edited in (source / "include" / "kern.h", source / "kern.cu"):
        reference = sources.digest()
        edited.write_text(edited.read_text() + "// edited\n")
        assert sources.digest() != reference, edited
    reference = sources.digest()
    (source / "include" / "new.cuh").write_text("// a new header\n")
    assert sources.digest() != reference
    reference = sources.digest()
    (source / "include" / "new.cuh").unlink()
    assert sources.digest() != reference


def test_the_fingerprint_never_follows_a_symlinked_folder_out_of_the_tree(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "huge.h").write_text("// not ours\n")
    source = tmp_path / "src"
    source.mkdir()
    (source / "kern.cu").write_text("//\n")
    (source / "linked").symlink_to(outside, target_is_directory=True)
    sources = SourceSet(_manifest(source, tmp_path / "build"))
    assert outside / "huge.h" not in sources.candidates()
    assert source / "linked" / "huge.h" not in sources.candidates()


# -- compile, benchmark and the wait for a GPU are timed apart ---------------------------------------


def test_waiting_for_the_gpu_is_timed_apart_from_compiling_and_benchmarking(tmp_path: Path) -> None:
    bench = Benchmark("bench", PROGRAMS / "fault_bench.py", ("good", "1.25"))
    manifest = dataclasses.replace(_manifest(tmp_path, tmp_path / "build"), benchmark=bench)

    class CompiledTree:
        """TEST DOUBLE for a scratch tree: its "build" is a short sleep; the benchmark is a real process."""

        build_dir = tmp_path
        benchmark_path = bench.path

        def build(self, controls: Controls, timeout: float, static_only: bool = False, *,
                  benchmark: bool = True) -> CandidateBuild:
            time.sleep(0.3)
            return CandidateBuild(True, None, "", 0.3, "", (), bench.path)

        def bench_spec(self, timeout: float, required: tuple[str, ...]) -> BenchSpec:
            return BenchSpec(path=bench.path, args=tuple(bench.args), timeout=timeout, cwd=tmp_path, required=required)

    slots = GpuSlots()
    evaluator = BuildRunner(manifest, None, parse_objectives(["time"]), 2, Timeouts(30.0, 30.0), slots)
    held = threading.Event()

    def another_benchmark_holds_the_gpu() -> None:
        with slots.slot():
            held.set()
            time.sleep(1.5)

    holder = threading.Thread(target=another_benchmark_holds_the_gpu)
    holder.start()
    held.wait()
    evaluated = evaluator.evaluate(CompiledTree(), Proposal(0, 0, {}), Controls(), "k")  # type: ignore[arg-type]
    holder.join()
    assert evaluated.ok, evaluated.message
    timings = evaluated.timings
    assert set(timings) == {"compile_s", "benchmark_s", "wait_s"}
    assert 0.25 <= timings["compile_s"] < 1.0
    assert timings["wait_s"] >= 0.8  # the other benchmark's GPU time, not this candidate's work
    assert 0.0 < timings["benchmark_s"] < timings["wait_s"] + 5
    assert abs(evaluated.seconds - sum(timings.values())) < 0.1
