"""`tune --executor ray`: candidates evaluated by Ray actors that keep their own scratch trees.

The tunes are real (CMake, Ninja, nvcc, processes) on tests/projects/transient,
on a local Ray cluster started here with declared CPUs, one GPU and an `H200`
custom resource: this machine has no GPU, so the runtime test tunes `timer`, a
TEST DOUBLE for a GPU benchmark. Faults are injected by SIGKILLing an actor's
process while it compiles a candidate (a TEST DOUBLE compiler launcher makes
the compile slow enough to be caught).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from ciq_build.cli import build_parser
from ciq_build.core.objectives import parse_objectives
from ciq_build.errors import ConfigError
from ciq_build.project.cmake_backend import CMakeBackend
from ciq_build.project.manifest import Manifest
from ciq_build.ray.executor import RayPool, actor_resources, benchmark_resources
from ciq_build.ray.options import RayOptions
from ciq_build.ray.plugin import RayExecutor
from ciq_build.ray.sources import MISSING, SourceUpload, check_copy, plan_upload, remapped_cache
from ciq_build.tune.driver import run_tune
from ciq_build.tune.executor import Executor
from ciq_build.tune.executors import checked_executor, get_executor, read_tune_options
from ciq_build.tune.finish import TuneOutcome
from ciq_build.tune.timeouts import Timeouts
from ciq_build.tune.tune_options import TuneOptions
from support import REPO_ROOT

ray = pytest.importorskip("ray")

PROJECT = REPO_ROOT / "tests" / "projects" / "transient"
LAUNCHER = REPO_ROOT / "tests" / "programs" / "slow_compile_launcher.py"
GPU_LAUNCHER = REPO_ROOT / "tests" / "programs" / "gpu_recording_launcher.py"
KERN = ["--generations", "2", "--pool-size", "3", "--seed", "7", "--cmake-arg=-DKERN_PARAMS=X=range(0,8)"]


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    """A local Ray cluster: 4 (declared) CPUs, 1 (declared) GPU of kind H200, and `compile` (what compile nodes
    declare) for 2 actors. 4 CPUs: two targets tuned together get 2 compile slots each."""
    # address="local": a cluster of its own, even while another (a `ray start`, a test's Cluster) runs here.
    ray.init(address="local", num_cpus=4, num_gpus=1, resources={"H200": 1, "compile": 2}, include_dashboard=False,
             log_to_driver=False)
    yield
    ray.shutdown()


def _tune(target: str, source: Path, build: Path, *args: str) -> TuneOutcome:
    options = read_tune_options(build_parser().parse_args(
        ["tune", target, "-S", str(source), "-B", str(build), *args]))
    return run_tune(options, CMakeBackend(options.build_dir, options.source_dir, tuple(options.cmake_args)))


def _evaluations(build: Path, target: str) -> list[dict]:
    journal = build / "ciq" / "journal" / f"{target}.jsonl"
    records = [json.loads(line) for line in journal.read_text().splitlines() if line.strip()]
    return [r for r in records if r.get("kind") == "evaluation"]


def _params(outcome: TuneOutcome) -> list[dict]:
    return [e.proposal.params for e in outcome.evaluations if not e.cached]


# -- what each slot asks for, and what is refused (no cluster needed) ----------------------


def test_static_objectives_ask_for_a_cpu_and_runtime_ones_for_a_gpu_of_the_named_kind() -> None:
    assert actor_resources(parse_objectives(["spill_bytes"]), None) == {"num_cpus": 1, "num_gpus": 0}
    # Split (shared sources): a runtime objective's compile actor holds CPUs only; its benchmark a GPU.
    assert actor_resources(parse_objectives(["time"]), "H200", "compile") == {"num_cpus": 1, "num_gpus": 0,
                                                                              "resources": {"compile": 1}}
    assert benchmark_resources("H200") == {"num_cpus": 0, "num_gpus": 1, "resources": {"H200": 1}}
    # Not split (uploaded sources: the built benchmark is on the compile node's disk): one actor holds both.
    assert actor_resources(parse_objectives(["time"]), None, split=False) == {"num_cpus": 1, "num_gpus": 1}
    assert actor_resources(parse_objectives(["time"]), "H200", split=False) == {"num_cpus": 1, "num_gpus": 1,
                                                                                "resources": {"H200": 1}}
    with pytest.raises(ConfigError, match="--ray-compile-resource puts compiles on nodes of their own"):
        actor_resources(parse_objectives(["time"]), None, "compile", split=False)
    with pytest.raises(ConfigError, match="no objective runs a benchmark"):
        actor_resources(parse_objectives(["registers"]), "H200")


def test_a_cluster_without_the_gpu_kind_is_refused_with_what_to_start() -> None:
    pool = RayPool(None, None, None, parse_objectives(["time"]), 1, Timeouts(60, 60), 300, 2, gpu_resource="H100")
    with pytest.raises(ConfigError, match=r"0 H100.*--resources='\{\"H100\""):
        pool._check_cluster({"CPU": 16.0, "GPU": 8.0, "H200": 8.0})
    pool._check_cluster({"CPU": 16.0, "GPU": 8.0, "H100": 8.0})


def test_ray_options_need_the_ray_executor() -> None:
    with pytest.raises(ConfigError, match="^--ray-address needs --executor ray$"):
        checked_executor(TuneOptions("kern", Path("build"), executor_options=RayOptions(ray_address="ray://head:10001")))
    with pytest.raises(ConfigError, match="^--ray-address, --ray-sources need --executor ray$"):
        checked_executor(read_tune_options(build_parser().parse_args(  # as typed
            ["tune", "kern", "--ray-address=ray://head:10001", "--ray-sources=upload"])))
    with pytest.raises(ConfigError, match="--ray-targets needs --executor ray"):
        checked_executor(TuneOptions("", Path("build"), targets=("kern", "timer"),
                                     executor_options=RayOptions(ray_targets=2)))
    with pytest.raises(ConfigError, match="at least 1"):
        checked_executor(TuneOptions("", Path("build"), executor="ray", executor_options=RayOptions(ray_targets=0)))
    with pytest.raises(ConfigError, match="Ray assigns each worker its GPU"):
        checked_executor(TuneOptions("kern", Path("build"), executor="ray", gpus=["0"]))
    with pytest.raises(ConfigError, match="--ray-sources must be one of shared, upload"):
        checked_executor(TuneOptions("kern", Path("build"), executor="ray",
                                     executor_options=RayOptions(ray_sources="rsync")))
    with pytest.raises(ConfigError, match="--executor must be one of local, ray"):
        checked_executor(TuneOptions("kern", Path("build"), executor="slurm"))
    ray_executor: Executor = get_executor("ray")  # mypy: the Ray executor is an Executor
    assert isinstance(ray_executor, RayExecutor)


def test_uploaded_sources_have_the_cache_paths_into_them_remapped_whole_components_only() -> None:
    upload = SourceUpload(Path("/src"), Path("/src/build"), {}, "\n".join([
        'set(DATA "/src/data;/src/build/gen.h" CACHE PATH "")',  # the source and the build tree, in a list
        'set(OTHER "/src2/x" CACHE PATH "")',  # another folder that starts the same: not the sources
        'set(TOOL "/opt/cuda/bin/nvcc" CACHE FILEPATH "")',  # the toolchain: at the same path on workers
        'set(TOP "/src" CACHE PATH "")']), ())
    remapped = remapped_cache(upload, Path("/ray/pkg_1"), Path("/ray/ciq-scratch-pkg_1/kern/ray-0/build"))
    assert remapped.splitlines() == [
        'set(DATA "/ray/pkg_1/data;/ray/ciq-scratch-pkg_1/kern/ray-0/build/gen.h" CACHE PATH "")',
        'set(OTHER "/src2/x" CACHE PATH "")', 'set(TOOL "/opt/cuda/bin/nvcc" CACHE FILEPATH "")',
        'set(TOP "/ray/pkg_1" CACHE PATH "")']


def test_a_workers_copy_that_differs_from_the_fingerprinted_sources_is_refused_naming_the_files() -> None:
    upload = SourceUpload(Path("/src"), Path("/src/build"), {"kern.cu": "aa", "kern.h": "bb", "gone.h": MISSING},
                          "", ())
    check_copy(upload, {"kern.cu": "aa", "kern.h": "bb", "gone.h": MISSING}, "ray-0", "/ray/pkg")
    with pytest.raises(ConfigError, match=r"differs from /src in kern.h \(missing there: .*\.gitignore"):
        check_copy(upload, {"kern.cu": "aa", "kern.h": MISSING, "gone.h": MISSING}, "ray-0", "/ray/pkg")
    with pytest.raises(ConfigError, match=r"in kern.cu \(changed while it was uploaded"):
        check_copy(upload, {"kern.cu": "ff", "kern.h": "bb", "gone.h": MISSING}, "ray-0", "/ray/pkg")


# -- real tunes on a local cluster -----------------------------------------------------------


def test_links_out_of_the_source_tree_are_left_out_of_the_upload_and_a_source_through_one_is_refused(
        tmp_path: Path) -> None:
    source, outside = tmp_path / "src", tmp_path / "outside"
    (outside / "folder").mkdir(parents=True)
    (outside / "secret.txt").write_text("secret")
    source.mkdir()
    (source / "kern.cu").write_text("__global__ void k() {}\n")
    (source / "notes.txt").symlink_to(outside / "secret.txt")
    (source / "data").symlink_to(outside / "folder", target_is_directory=True)
    (source / "same.cu").symlink_to(source / "kern.cu")  # a link within the tree: shipped as any file
    # A stand-in for the manifest: plan_upload reads its two folders only.
    manifest = cast(Manifest, SimpleNamespace(source_dir=source, binary_dir=tmp_path / "build"))
    digest = b"\0" * 32
    upload = plan_upload(manifest, {source / "kern.cu": digest, source / "same.cu": digest})
    assert upload.left_out == {"data": f"a link to {outside / 'folder'}, outside the tree",
                               "notes.txt": f"a link to {outside / 'secret.txt'}, outside the tree"}
    assert {"/data", "/notes.txt"} <= set(upload.excludes) and "/same.cu" not in upload.excludes
    with pytest.raises(ConfigError, match=r"files outside it: .*notes.txt \(a link to .*secret.txt\)"):
        plan_upload(manifest, {source / "kern.cu": digest, source / "notes.txt": digest})


def _packed(source: Path, excludes: tuple[str, ...], package: Path) -> dict[str, bytes]:
    """What Ray's packer zips of `source` with `excludes`, as upload_working_dir_if_needed calls it."""
    from zipfile import ZipFile

    from ray._private import ray_constants
    from ray._private.runtime_env.packaging import create_package

    create_package(str(source), package, include_gitignore=True,
                   excludes=[*ray_constants.get_runtime_env_default_excludes(), *excludes])
    with ZipFile(package) as zipped:
        return {name: zipped.read(name) for name in zipped.namelist() if not name.endswith("/")}


def test_the_upload_ships_nothing_from_outside_the_tree_through_links_in_it_loops_or_odd_names(
        tmp_path: Path) -> None:
    source, outside = tmp_path / "src", tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("SECRET")
    (outside / "folder").mkdir()
    (outside / "folder" / "key").write_text("SECRET")
    source.mkdir()
    (source / "kern.cu").write_text("kernel")
    (source / "a").mkdir()
    (source / "b").mkdir()
    (source / "a" / "link_in").symlink_to("../b", target_is_directory=True)  # in the tree, to a folder...
    (source / "b" / "rel").symlink_to(outside / "secret.txt")  # ...whose link points out
    (source / "b" / "own.h").write_text("header")
    (source / "chain1").symlink_to("chain2")  # a chain of links that ends outside
    (source / "chain2").symlink_to(outside / "folder", target_is_directory=True)
    for name in ("trail ", "two  ", "tab\t", "#hash", "!bang", "star*", "new\nline"):
        (source / name).symlink_to(outside / "secret.txt")
    (source / "loop").symlink_to(".", target_is_directory=True)  # Ray's packer would recurse without end
    (source / "dangling").symlink_to(source / "nothing")
    os.mkfifo(source / "fifo")
    (source / "same.cu").symlink_to("kern.cu")  # within the tree: shipped as any file
    manifest = cast(Manifest, SimpleNamespace(source_dir=source, binary_dir=tmp_path / "build"))
    upload = plan_upload(manifest, {source / "kern.cu": b"\0" * 32})
    shipped = _packed(source, upload.excludes, tmp_path / "package.zip")
    assert [name for name, data in shipped.items() if b"SECRET" in data] == []
    assert sorted(shipped) == ["a/link_in/own.h", "b/own.h", "kern.cu", "same.cu"]
    assert sorted(upload.left_out) == ["!bang", "#hash", "a/link_in/rel", "b/rel", "chain1", "chain2", "dangling",
                                       "fifo", "loop", "new\nline", "star*", "tab\t", "trail ", "two  "]
    assert upload.left_out["fifo"] == "not a regular file (a FIFO, socket or device)"
    assert upload.left_out["loop"] == f"a link to {source}, a folder it is in"


def _cache_entries(cache: Path) -> dict[str, str]:
    entries = {}
    for line in cache.read_text().splitlines():
        name, sep, value = line.partition("=")
        if sep and ":" in name and not line.startswith(("#", "//")):
            entries[name.split(":")[0]] = value
    return entries


@pytest.mark.slow
def test_ray_evaluates_the_same_candidates_as_local_builds_an_upload_of_the_sources_and_pins_the_same_record(
        tmp_path: Path, cluster: None, capsys: pytest.CaptureFixture[str]) -> None:
    # One Ray tune for both: the same search as the local executor's (seed, candidates, winner, record),
    # and sources uploaded to each worker (a Ray tune of each cost 33 s of the suite's CPU).
    source = tmp_path / "transient src"
    shutil.copytree(PROJECT, source)
    # Where the sources are, or a cache entry naming a file, changes nothing of the search.
    local_source = tmp_path / "local src"
    shutil.copytree(PROJECT, local_source)
    local = _tune("kern", local_source, tmp_path / "local", "--jobs", "2", *KERN)
    # A path into the source tree among the user's CMake arguments: remapped into each worker's copy.
    data = f"--cmake-arg=-DCIQ_TEST_DATA={source}/kern.h"
    # The build tree inside the source tree, as is common: it must not be uploaded.
    build = source / "build-ray"
    # Links out of the source tree, to a file and a folder: what they point to must not reach the cluster.
    secret = "not for the cluster: 7d0f"
    outside = tmp_path / "outside"
    (outside / "keys").mkdir(parents=True)
    (outside / "secret.txt").write_text(secret)
    (outside / "keys" / "id.pem").write_text(secret)
    (source / "notes.txt").symlink_to(outside / "secret.txt")
    (source / "keys").symlink_to(outside / "keys", target_is_directory=True)
    on_ray = _tune("kern", source, build, "--jobs", "2", "--executor", "ray", "--ray-sources", "upload", data, *KERN)
    said = capsys.readouterr().err
    assert local.ok and on_ray.ok
    assert _params(on_ray) == _params(local) and len(_params(local)) >= 4
    assert local.winner is not None and on_ray.winner is not None
    assert on_ray.winner.proposal.params == local.winner.proposal.params == {"param.X": 0}
    pinned = [json.loads(p.read_text()) for p in (local.pinned, on_ray.pinned) if p is not None]
    assert len(pinned) == 2 and pinned[0]["controls"] == pinned[1]["controls"]
    assert pinned[0]["winner"] == pinned[1]["winner"]
    # Each actor checked its copy against the fingerprint before configuring, and built from the copy.
    copy = Path(said.split("checked on each worker; scratch trees beside each copy (first: ")[1].split(")")[0])
    assert copy != source and copy.is_dir() and not (copy / "build-ray").exists(), said
    assert (copy / "kern.cu").read_bytes() == (source / "kern.cu").read_bytes()
    assert not (copy / "notes.txt").exists() and not (copy / "keys").exists()
    assert [p for p in copy.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()] == []
    warned = [line for line in said.splitlines() if "left out of the upload" in line]
    assert len(warned) == 1 and "'keys' (a link to " in warned[0] and "'notes.txt' (a link to " in warned[0], said
    for slot in ("ray-0", "ray-1"):
        tree = copy.parent / f"ciq-scratch-{copy.name}" / "kern" / slot / "build"
        cache = _cache_entries(tree / "CMakeCache.txt")
        assert cache["CMAKE_HOME_DIRECTORY"] == str(copy), cache
        assert cache["CIQ_TEST_DATA"] == f"{copy}/kern.h"
        assert list(tree.rglob("kern.cu.o")), f"{slot} built nothing in its tree"
    assert not (build / "ciq" / "scratch" / "kern" / "ray-0").exists()  # nothing built in the shared tree

    # A source that Ray leaves out of the upload (a .gitignore lists it): refused, naming it.
    (source / ".gitignore").write_text("kern.h\n")
    with pytest.raises(ConfigError, match=r"differs from .* in kern.h \(missing there"):
        _tune("kern", source, build, "--jobs", "1", "--executor", "ray", "--ray-sources", "upload", data, *KERN)


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _ray_worker_above(pid: int) -> int | None:
    """The Ray worker process (its title starts with ray::) that `pid` runs under, if any."""
    while pid > 1:
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"ray::"):
                return pid
            pid = _parent(pid)
        except (OSError, ValueError, IndexError):
            return None
    return None


def _processes() -> Iterator[tuple[int, bytes, str]]:
    """Every running process but this one: pid, command line (NUL-separated) and working directory."""
    for process in Path("/proc").glob("[0-9]*"):
        try:
            pid, cmdline, cwd = int(process.name), (process / "cmdline").read_bytes(), os.readlink(process / "cwd")
        except (OSError, ValueError):
            continue  # gone while read
        if pid != os.getpid():
            yield pid, cmdline, cwd


def _running_in(folder: Path) -> list[str]:
    """The command lines of running processes that work in `folder` or name it (its compiles)."""
    texts = ((cmdline.replace(b"\0", b" ").decode(errors="replace"), cwd) for _, cmdline, cwd in _processes())
    return [text for text, cwd in texts if str(folder) in text or cwd.startswith(str(folder))]


def _notes_of_ray_workers(compiling: Path) -> Iterator[int]:
    """The Ray worker processes whose compiles the slow launcher is running (each note once)."""
    for note in list(compiling.glob("*")) if compiling.is_dir() else []:
        worker = _ray_worker_above(int(note.name))
        note.unlink(missing_ok=True)
        if worker is not None:
            yield worker


@pytest.mark.slow
def test_a_stopped_driver_and_a_worker_killed_mid_evaluation_lose_nothing_and_count_nothing_twice(
        tmp_path: Path, cluster: None, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "transient src"
    shutil.copytree(PROJECT, source)
    build = tmp_path / "build"
    compiling = tmp_path / "compiling"
    compiling.mkdir()
    launcher = f"--cmake-arg=-DCMAKE_CUDA_COMPILER_LAUNCHER={sys.executable};{LAUNCHER};{compiling}"
    address = ray.get_runtime_context().gcs_address

    # 1. The driver (the command line, on this cluster) gets SIGTERM while a worker compiles: it stops
    #    at once, says how to resume, and leaves nothing running.
    # --no-pin: what is asserted is the search, its losses and its winner, not the record (which the upload
    # test compares with a local tune's).
    command = [sys.executable, "-m", "ciq_build", "tune", "kern", "-S", str(source), "-B", str(build),
               "--jobs", "2", "--executor", "ray", "--ray-address", address, launcher, "--no-pin", *KERN]
    driver = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=source)
    deadline = time.monotonic() + 300
    while driver.poll() is None and time.monotonic() < deadline and not list(_notes_of_ray_workers(compiling)):
        time.sleep(0.05)
    driver.send_signal(signal.SIGTERM)
    stopped = time.monotonic()
    _, err = driver.communicate(timeout=60)
    assert driver.returncode == 128 + signal.SIGTERM, err
    assert time.monotonic() - stopped < 15, "the driver waited for the workers' compiles"
    assert "run the same command to resume" in err
    failed = [r for r in _evaluations(build, "kern") if not r["ok"]]
    assert not failed, (failed, err)  # the stop is nobody's failure
    assert not _running_in(build / "ciq" / "scratch"), "a compile outlived the stopped tune"

    # 2. Resumed (in this process), and an actor SIGKILLed while it compiles a candidate.
    killed: list[int] = []

    def kill_one_worker_mid_compile() -> None:
        deadline = time.monotonic() + 300
        while not killed and time.monotonic() < deadline:
            for worker in _notes_of_ray_workers(compiling):
                os.kill(worker, signal.SIGKILL)
                killed.append(worker)
                shutil.rmtree(compiling, ignore_errors=True)  # later compiles run at full speed
                return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_one_worker_mid_compile, daemon=True)
    killer.start()
    first = _tune("kern", source, build, "--jobs", "2", "--executor", "ray", launcher, "--no-pin", *KERN)
    killer.join(timeout=5)
    said = capsys.readouterr().err
    assert len(killed) == 1, said
    assert first.ok and first.winner is not None and first.winner.proposal.params == {"param.X": 0}
    assert said.count("was lost while evaluating candidate") == 1, said
    assert "1 worker(s) lost mid-evaluation" in said
    assert "each asking for 1 CPU; scratch trees in" in said  # a static objective: a CPU, no benchmark
    # The lost evaluation ran again: never a failure, and journaled once (no double count).
    journaled = _evaluations(build, "kern")
    assert all(r["ok"] for r in journaled), [r for r in journaled if not r["ok"]]
    keys = [r["key"] for r in journaled]
    assert len(keys) == len(set(keys)) == len(_params(first)) + 1  # + the baseline
    # Which worker did what: the slot and the actor's host:pid; the killed actor (caught on its first
    # candidate) finished nothing, its replacement did.
    workers = {r["worker"] for r in journaled if "worker" in r}
    assert {w.split("@")[0] for w in workers} == {"ray-0", "ray-1"}, workers
    assert not any(w.endswith(f":{killed[0]}") for w in workers), (killed, workers)

    # 3. Once more: everything comes from the journal, the same winner.
    again = _tune("kern", source, build, "--jobs", "2", "--executor", "ray", "--no-pin", *KERN)
    assert again.ok and _params(again) == [] and again.winner is not None
    assert again.winner.proposal.params == {"param.X": 0}
    assert len(_evaluations(build, "kern")) == len(journaled)


@pytest.mark.slow
def test_a_runtime_objective_is_measured_on_workers_holding_a_gpu_and_actors_take_the_code_measured_already(
        tmp_path: Path, cluster: None, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "transient src"
    shutil.copytree(PROJECT, source)
    # The defaults (X=3) time 1.5; X=4 and 5 are behind them, X=0..2 ahead. Y is a parameter the source never
    # reads: candidates that differ in Y alone build the same code, and X=3 builds the defaults' code. With
    # seed 3 the search (the GA, named: the candidates described are its) tries X=3 (the defaults' code), X=0 twice
    # (Y=0, Y=1) and X=4, 5 (behind).
    # --no-pin: what is asserted is the search and the winner, not the record (a pin's minimal rebuilds and
    # the winner's benchmark check, twice, cost CPU for nothing here). Runs of 10 ms: the times raced on are
    # computed from X, not from how long a run sleeps.
    search = ["--generations", "2", "--pool-size", "3", "--repeats", "3", "--seed", "3", "--no-pin", "--strategy", "ga",
              "--cmake-arg=-DTIMER_PARAMS=X=range(0,5);Y=range(0,1)", "--cmake-arg=-DTIMER_SLEEP_MS=10"]
    local = _tune("timer", source, tmp_path / "local", "--jobs", "2", *search)
    # Each compile notes the GPUs it could see: Ray sets CUDA_VISIBLE_DEVICES in a worker holding one.
    compiles = tmp_path / "compiles.txt"
    launcher = f"--cmake-arg=-DCMAKE_CUDA_COMPILER_LAUNCHER={sys.executable};{GPU_LAUNCHER};{compiles}"
    build = tmp_path / "build"
    outcome = _tune("timer", source, build, "--jobs", "2", "--executor", "ray",
                    "--ray-gpu-resource", "H200", "--ray-compile-resource", "compile", launcher, *search)
    said = capsys.readouterr().err
    # Compile actors hold CPUs (and the compile nodes' resource) only; each benchmark is a task on a GPU.
    assert "each asking for 1 CPU + 1 compile; benchmarks as tasks asking for 0 CPU + 1 GPU + 1 H200" in said, said
    assert outcome.ok and outcome.winner is not None and outcome.winner.proposal.params["param.X"] == 1
    assert local.winner is not None and _params(outcome) == _params(local)  # the same seed, the same search
    notes = compiles.read_text().splitlines()
    assert notes and [n for n in notes if n != "<unset>"] == [], notes  # no compile held a GPU
    # The actors race against what the driver knows (the defaults before any candidate): every candidate
    # behind them stops after its first run, on Ray as locally, though no actor measured the defaults itself.
    for tuned in (tmp_path / "local", build):
        candidates = [r for r in _evaluations(tuned, "timer") if r["params"]]
        behind = [r for r in candidates if r["ok"] and r["metrics"]["time_ms"] > 1.5]
        assert behind and all(r["raced"] and r["runs"] == 1 for r in behind), (tuned.name, candidates)
    # Actors take the measurement of machine code the tune has measured already: the defaults' code, which the
    # driver measured, is shared with the candidate that builds it, never measured again by an actor (told by
    # the driver: no actor measured it itself). A resumed tune's journaled codes are told the same way (the
    # driver remembers the baseline and the journal's evaluations alike). Code first seen on Ray is measured
    # at most once per actor.
    journaled = _evaluations(build, "timer")
    defaults = next(r for r in journaled if not r["params"])
    on_ray = [r for r in journaled if r.get("worker")]
    again = [r for r in on_ray if r["code"] == defaults["code"]]
    assert again and all(r["same_code_as"] and r["runs"] == 0 for r in again), on_ray
    measured = [r["code"] for r in on_ray if not r.get("same_code_as")]
    assert all(measured.count(code) <= 2 for code in measured), on_ray


# -- several targets tuned together on one cluster ------------------------------------------------------

# timer's benchmark sleeps 200 ms a run, slow_timer's (the same program) 600 ms: 3x longer. 8 candidates each:
# with 4, timer's whole search could end before slow_timer's first candidate (compiles of ~1 s of CPU), so the
# stop found timer past its search and the resume gave it nothing to benchmark (failed 3 of 6 runs alone).
TOGETHER = ["--generations", "1", "--pool-size", "8", "--repeats", "2", "--seed", "5",
            "--cmake-arg=-DTIMER_PARAMS=X=range(0,8)", "--cmake-arg=-DTIMER_SLEEP_MS=200",
            "--cmake-arg=-DTRANSIENT_SLOW_TIMER_MS=600"]


def _used(grants: list[dict], target: str, now: float) -> float:
    """GPU-seconds `target` had used at `now`, from the share's log: given-back grants, and held ones so far."""
    return sum(min(g["released"], now) - g["granted"] for g in grants
               if g["target"] == target and g["granted"] is not None and g["granted"] < now)


@pytest.mark.slow
def test_targets_tuned_together_share_the_gpu_fairly_stop_together_and_resume_from_their_own_journals(
        tmp_path: Path, cluster: None) -> None:
    source = tmp_path / "transient src"
    shutil.copytree(PROJECT, source)
    build = tmp_path / "build"
    # --jobs 3 each: 6 compile actors for 4 CPUs, so each target gets 2.
    command = [sys.executable, "-m", "ciq_build", "tune", "timer", "slow_timer", "-S", str(source), "-B", str(build),
               "--executor", "ray", "--ray-address", ray.get_runtime_context().gcs_address, "--jobs", "3", *TOGETHER]

    # 1. SIGTERM to the parent once both targets have journaled a candidate: every child stops, nothing failed.
    parent = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=source)
    deadline = time.monotonic() + 300
    journals = [build / "ciq" / "journal" / f"{t}.jsonl" for t in ("timer", "slow_timer")]
    while parent.poll() is None and time.monotonic() < deadline and not all(
            j.is_file() and len(_evaluations(build, j.stem)) >= 2 for j in journals):
        time.sleep(0.1)
    parent.send_signal(signal.SIGTERM)
    out, err = parent.communicate(timeout=120)
    assert parent.returncode == 128 + signal.SIGTERM, out + err
    children = [int(line.rsplit("process ", 1)[1].rstrip(")")) for line in err.splitlines() if " started (" in line]
    assert len(children) == 2, err
    assert not [pid for pid in children if Path(f"/proc/{pid}").exists()], "a target's tune outlived the parent"
    assert err.count("stopped by SIGTERM; the journal keeps every finished evaluation") == 3, err  # each child, the parent
    # An actor stopped between two steps of its work (a configure, then its first build) may start the next
    # one as it is killed: its watchdog kills what it started once the actor is gone, a moment later.
    settled = time.monotonic() + 10
    while _running_in(build / "ciq" / "scratch") and time.monotonic() < settled:
        time.sleep(0.2)
    assert not _running_in(build / "ciq" / "scratch"), "a compile or benchmark outlived the stopped tune"
    stopped = {t: _evaluations(build, t) for t in ("timer", "slow_timer")}
    assert all(r["ok"] for records in stopped.values() for r in records), stopped

    # 2. The same command: each target resumes from its own journal and pins its own record. Here another
    #    `tune` of several (this test) holds the cluster's share, with a benchmark of its own before ours:
    #    the resume joins that share, reports only the grants asked since it joined, and leaves it up. (The
    #    stopped run ended its own share: a share still up, dying with its owner, was joined by the resume
    #    and its reclaimed grants reported as the resume's.)
    other, holder = _others_share()
    result = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=source)
    said = result.stdout + result.stderr
    assert result.returncode == 0, said
    assert ray.get(other.joined.remote(), timeout=30)[0] == "another tune", "a tune ended a share it had joined"
    ray.kill(other)
    ray.kill(holder)
    assert "ray: 2 target(s) at once with --jobs 3 each need 6 CPUs" in result.stderr and "each with --jobs 2" in said
    for target in ("timer", "slow_timer"):
        summary = [line for line in result.stdout.splitlines() if line.startswith(f"[{target.ljust(10)}]")]
        resumed = [line for line in summary if "from the journal" in line]
        assert resumed and int(resumed[0].split(" run, ")[1].split()[0]) >= 1, summary
    assert "tune --all: 2 target(s), 0 failed" in result.stdout
    # The parent connects once, and each target's tune (its output prefixed with the target) once, with a pool
    # of its own asking for what its objectives need: a CPU for each compile actor, a GPU for each benchmark.
    # (A `tune --all` of its own, kern and timer, cost a tune of two targets more; a static target's pool is
    # the stopped driver's test's, each objective's resources test_static_objectives_ask_for_a_cpu_...'s.)
    lines = result.stderr.splitlines()
    assert sum(line.startswith("ciq_build: ray: connected to the cluster at") for line in lines) == 1, result.stderr
    for target in ("timer", "slow_timer"):
        prefix = f"[{target.ljust(10)}] ciq_build: ray: "
        assert sum(line.startswith(prefix + "connected") for line in lines) == 1, result.stderr
        assert any(line.startswith(prefix) and "benchmarks as tasks asking for 0 CPU + 1 GPU, one per GPU" in line
                   for line in lines), result.stderr

    # 3. The share's log: never more grants than GPUs, none leaked, and every grant made while another target
    #    waited went to the target that had used the fewest GPU-seconds (ties: the one waiting longest). So
    #    while a target waits, no other is ahead of it by more than the one benchmark it is running.
    grants = [json.loads(line) for line in (build / "ciq" / "gpu-share.jsonl").read_text().splitlines()]
    assert {g["target"] for g in grants} == {"timer", "slow_timer"}, grants
    assert all(g["granted"] is not None and g["released"] is not None and not g["reclaimed"] for g in grants), grants
    for g in grants:
        assert sum(1 for h in grants if h["granted"] <= g["granted"] < h["released"]) == 1, g  # capacity 1
    for g in grants:
        waiting = [h for h in grants if h["asked"] < g["granted"] < h["granted"] and h["target"] != g["target"]]
        for other in waiting:
            mine, theirs = _used(grants, g["target"], g["granted"]), _used(grants, other["target"], g["granted"])
            assert mine < theirs + 1e-9 or (mine <= theirs + 1e-9 and g["asked"] <= other["asked"]), (g, other)
            assert (_used(grants, g["target"], g["released"]) - _used(grants, other["target"], g["released"])
                    <= g["released"] - g["granted"] + 1e-9), (g, other)
    assert "GPU share (1 GPU(s)" in result.stdout and "benchmark(s)" in result.stdout
    # A journaled benchmark_s is the task's own runs, inside its grant; the wait for the grant is wait_s. So
    # no target's benchmarks in this run add up to more than the GPU time it was granted.
    for target in ("timer", "slow_timer"):
        earlier = {r["key"] for r in stopped[target]}
        timings = [r["timings"] for r in _evaluations(build, target) if r.get("worker") and r["key"] not in earlier]
        held = sum(g["released"] - g["granted"] for g in grants if g["target"] == target)
        assert timings and sum(t.get("benchmark_s", 0) for t in timings) <= held + 0.001 * len(timings), (
            target, held, timings)
    # Which worker did what: each grant names its worker as the journal does.
    workers = {r["worker"].split("@")[0] for t in ("timer", "slow_timer") for r in _evaluations(build, t)
               if "worker" in r}
    assert {g["worker"].split("@")[0] for g in grants} <= workers == {"ray-0", "ray-1"}
    # Same seed, same candidates as a local tune: each target is tuned by a plain `tune` process, whose
    # equality with the local executor
    # test_ray_evaluates_the_same_candidates_as_local_builds_an_upload_of_the_sources_and_pins_the_same_record
    # shows; tuning them one after another locally here as well cost 50 s of the suite.


# -- a benchmark task's worker lost; compiles and benchmarks on nodes of their own ---------------------


def _pids_titled(title: bytes) -> list[int]:
    """The processes whose command line (a Ray worker's is its title: ray::<task>) starts with `title`."""
    return [pid for pid, cmdline, _ in _processes() if cmdline.startswith(title)]


@pytest.mark.slow
def test_candidates_get_the_timeouts_derived_from_the_baseline_and_a_benchmark_tasks_lost_worker_is_no_failure(
        tmp_path: Path, cluster: None, capsys: pytest.CaptureFixture[str]) -> None:
    # One Ray tune for both (a tune of each cost a tune of timer's 1.5 s runs more).
    # TIMEOUT 1 s, each run sleeping 1.5 s: under the bare TIMEOUT every candidate's run (and a scratch
    # tree's configure, limited by 5x it) is killed; the derived limits (4x the baseline's, at least
    # TIMEOUT; a configure at least 600 s) let them all finish, on Ray as locally (tests/tune/test_tune_timeouts.py).
    source = tmp_path / "transient src"
    shutil.copytree(PROJECT, source)
    build = tmp_path / "build"
    killed: list[int] = []

    def kill_the_first_benchmark_task() -> None:
        deadline = time.monotonic() + 300
        while not killed and time.monotonic() < deadline:
            for pid in _pids_titled(b"ray::benchmark_on_gpu"):
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
                return
            time.sleep(0.02)

    killer = threading.Thread(target=kill_the_first_benchmark_task, daemon=True)
    killer.start()
    # Each run sleeps 1.5 s: the task is caught while it runs, however late a loaded machine lets Ray title it.
    outcome = _tune("timer", source, build, "--jobs", "1", "--executor", "ray", "--generations", "1",
                    "--pool-size", "2", "--repeats", "1", "--seed", "3", "--cmake-arg=-DTIMER_PARAMS=X=range(0,3)",
                    "--cmake-arg=-DTRANSIENT_TIMEOUT=1", "--cmake-arg=-DTIMER_SLEEP_MS=1500",
                    "--no-pin")  # a pin's re-measure: 10 more runs of 1.5 s each, for nothing asserted here
    killer.join(timeout=5)
    said = capsys.readouterr().err
    limit = float(said.split("timeouts from the baseline: compile ")[1].split(", benchmark run ")[1].split(" s")[0])
    assert limit >= 6.0, said  # 4x the baseline's 1.5 s run
    assert len(killed) == 1, said
    assert outcome.ok and outcome.winner is not None  # any X of 0..2 beats the defaults' X = 3
    assert said.count("was lost while evaluating candidate") == 1, said
    assert "the benchmark of worker 0" in said and "evaluating it again on the same worker" in said, said
    assert "1 worker(s) lost mid-evaluation" in said
    journaled = _evaluations(build, "timer")
    # Never the candidate's failure, nor a run cut by the bare TIMEOUT.
    assert all(r["ok"] for r in journaled), [(r["params"], r.get("cause"), r.get("message")) for r in journaled]
    assert [r for r in journaled if r["params"]], said
    keys = [r["key"] for r in journaled]
    assert len(keys) == len(set(keys)) == len(_params(outcome)) + 1  # once each, + the baseline


@pytest.mark.slow
def test_compiles_run_on_compile_nodes_benchmarks_on_the_gpu_node_and_a_lost_node_requeues_its_candidate(
        tmp_path: Path, cluster: None) -> None:
    from ray.cluster_utils import Cluster

    source = tmp_path / "transient src"
    shutil.copytree(PROJECT, source)
    compiling = tmp_path / "compiling"
    compiling.mkdir()
    launcher = f"--cmake-arg=-DCMAKE_CUDA_COMPILER_LAUNCHER={sys.executable};{LAUNCHER};{compiling}"
    # Each node's workers append their benchmark runs to a file of that node's (TIMER_RUN_LOG, in its raylet's
    # environment); the driver's own runs (the baseline, the final re-measure) go to none of them.
    runs = {node: tmp_path / f"{node}-runs.txt" for node in ("gpu", "compile-a", "compile-b")}
    two_kinds = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 0, "num_gpus": 1, "env_vars": {"TIMER_RUN_LOG": str(runs["gpu"])}})
    removed: list[str] = []
    seen: list[tuple[int, int]] = []  # (Ray worker, its parent) of each candidate compile
    try:
        compile_nodes = {two_kinds.add_node(num_cpus=1, resources={"compile": 1},
                                            env_vars={"TIMER_RUN_LOG": str(runs[name])}): name
                         for name in ("compile-a", "compile-b")}
        raylets = {node.all_processes["raylet"][0].process.pid: node for node in compile_nodes}

        def remove_the_node_compiling_a_candidate() -> None:
            # The first candidate compile (not a configure's try-compile) under a Ray worker: its node goes.
            deadline = time.monotonic() + 300
            while not removed and time.monotonic() < deadline:
                for note in list(compiling.glob("*")):
                    worker = _ray_worker_above(int(note.name))
                    command = note.read_text(errors="replace")
                    if worker is None or "CMakeScratch" in command or "CMakeTmp" in command:
                        note.unlink(missing_ok=True)
                        continue
                    node = raylets.get(_parent(worker))
                    seen.append((worker, _parent(worker)))
                    if node is not None:
                        removed.append(node.node_id)
                        shutil.rmtree(compiling, ignore_errors=True)  # later compiles run at full speed
                        two_kinds.remove_node(node, allow_graceful=False)
                        return
                time.sleep(0.05)

        remover = threading.Thread(target=remove_the_node_compiling_a_candidate, daemon=True)
        remover.start()
        build = tmp_path / "b"
        command = [sys.executable, "-m", "ciq_build", "tune", "timer", "-S", str(source), "-B", str(build),
                   "--executor", "ray", "--ray-address", two_kinds.address, "--ray-compile-resource", "compile",
                   "--jobs", "1", "--generations", "1", "--pool-size", "2", "--repeats", "1", launcher,
                   "--cmake-arg=-DTIMER_SLEEP_MS=10", "--cmake-arg=-DTIMER_PARAMS=X=range(0,3)"]
        result = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=source)
        remover.join(timeout=5)
    finally:
        two_kinds.shutdown()
    said = result.stdout + result.stderr
    assert result.returncode == 0, said
    assert len(removed) == 1, (seen, sorted(raylets), said)
    # The compile worker on a CPU-only node; every benchmark on the GPU node, none on a compile node.
    assert "each asking for 1 CPU + 1 compile; benchmarks as tasks" in result.stderr, result.stderr
    assert any(f"(node(s) {node.node_id[:12]})" in result.stderr for node in compile_nodes), result.stderr
    assert runs["gpu"].read_text().count("X=") >= 1
    assert not runs["compile-a"].exists() and not runs["compile-b"].exists()
    # The lost node's candidate ran again on a worker on the other node: a loss, never a failure, journaled once.
    assert result.stderr.count("was lost while evaluating candidate") == 1, result.stderr
    assert "evaluating it again on a new worker" in result.stderr and "1 worker(s) lost mid-evaluation" in said
    journaled = _evaluations(build, "timer")
    assert all(r["ok"] for r in journaled), [r for r in journaled if not r["ok"]]
    keys = [r["key"] for r in journaled]
    assert len(keys) == len(set(keys)) >= 2  # the baseline and the candidates, each once


def _holder() -> Any:
    """A stand-in for a compile actor, as the GPU share sees one: something to ping."""

    class _Holder:  # defined here, so that Ray ships it by value (workers cannot import this test module)
        def alive(self) -> bool:
            return True

    return ray.remote(_Holder).options(num_cpus=0).remote()


def _others_share() -> tuple[Any, Any]:
    """The cluster's GPU share as another `tune` of several would hold it, one benchmark of its own done."""
    from ciq_build.ray.gpu_share import NAMESPACE, SHARE_NAME, GpuShare

    holder = _holder()
    deadline = time.monotonic() + 60
    while True:
        try:  # a share ended a moment ago may still hold the name
            share = ray.remote(GpuShare).options(name=SHARE_NAME, namespace=NAMESPACE, num_cpus=0).remote(
                1, "another tune")
            ray.get(share.joined.remote(), timeout=30)
            break
        except ValueError:
            assert time.monotonic() < deadline, "the stopped tune's GPU share never ended"
            time.sleep(0.2)
    ray.get(share.release.remote(ray.get(share.acquire.remote("other", "ray-0@other", holder), timeout=30)))
    return share, holder


@pytest.mark.slow
def test_the_share_actor_reclaims_the_grant_of_a_holder_that_died_holding_it(cluster: None) -> None:
    from ciq_build.ray.gpu_share import GpuShare

    share = ray.remote(GpuShare).options(num_cpus=0).remote(1)
    dead, alive = _holder(), _holder()
    assert ray.get(share.acquire.remote("a", "ray-0@dead", dead), timeout=30) == 0
    waiting = share.acquire.remote("b", "ray-0@alive", alive)
    assert not ray.wait([waiting], timeout=3)[0]  # the one GPU is held (and its holder answers pings)
    ray.kill(dead, no_restart=True)  # dies holding its grant, never giving it back
    assert ray.get(waiting, timeout=30) == 1  # reclaimed by the share's ping, and granted to the waiting one
    grants = ray.get(share.log.remote())
    assert grants[0]["reclaimed"] and grants[0]["released"] is not None and not grants[1]["reclaimed"]
    ray.get(share.release.remote(1))
    assert [s.benchmarks for s in ray.get(share.shares.remote())] == [1, 1]
    ray.kill(share)


def test_more_slots_than_the_cluster_has_cpus_are_refused_not_waited_for_forever() -> None:
    # --jobs 4 on a 2-CPU cluster: each actor fits, but the pool waits for all four, which Ray never places.
    pool = RayPool(None, None, None, parse_objectives(["spill_bytes"]), 1, Timeouts(60, 60), 300, 4)
    with pytest.raises(ConfigError, match=r"has 2 CPU, and the 4 evaluation slot\(s\) \(--jobs\) ask for 4.*"
                                          r"lower --jobs to 2"):
        pool._check_cluster({"CPU": 2.0})
    pool._check_cluster({"CPU": 4.0})
