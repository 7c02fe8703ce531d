"""The ptxas-only path gives the objects (and the ptxas report) a full nvcc build gives.

Real CMake, Ninja and nvcc 13.3, real ptxas ACFs sampled by compileiq from the
CUDA 13.3 search space, on the sample's gemm_kernels (one .cu), reduce_kernels
(two .cu, separable compilation) and tests/projects/spill (-maxrregcount=30).
Each candidate is built in a scratch tree (through the launcher: the kept
PTX, then ptxas, fatbinary and the host compile), then the same compile
command is run by nvcc itself, and the two objects are compared byte for byte.

What two full builds of the same controls already disagree on: nvcc names
its temporary files after its process id (tmpxft_<8 hex digits>_...), and
the host compiler records that file name in the object. Those 8 digits are
written as 0 in both objects before comparing. Where an object differs from
nvcc's, nvcc builds it a second time to tell which it is: a fast path that
built other code, or nvcc disagreeing with itself beyond those digits (a
comparison that can no longer tell). Checked up front for every tree, that
cost two full nvcc builds a tree on every run for what only a failure reads.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ciq_build.compiler import metrics, ptxas_path
from ciq_build.compiler.controls import AcfRef, Controls
from ciq_build.compiler.toolchain import load_toolchain
from ciq_build.core.causes import Cause
from ciq_build.measure import proc, processes, stopping
from ciq_build.project import cmake_trees
from ciq_build.project.manifest import load_manifest
from ciq_build.project.worker import CandidateBuild
from support import REPO_ROOT, ensure_ok, in_thread

pytestmark = pytest.mark.slow

SAMPLE = REPO_ROOT / "sample_extension"
SPILL = REPO_ROOT / "tests" / "projects" / "spill"
# CI checks a representative sample; CIQ_THOROUGH_TESTS=1 checks all 24 ACFs (as the fast path was
# accepted on: 24 ACFs + 6 knobs + 3 caps on gemm, 12 ACFs on spill for two architectures, all identical).
THOROUGH = os.environ.get("CIQ_THOROUGH_TESTS") == "1"
ACF_COUNT = 24 if THOROUGH else 4
SPILL_ACFS = 12 if THOROUGH else 1
PTXAS_KNOBS = [
    ("-Xptxas=-O1",), ("-Xptxas=-O2",), ("-Xptxas=--register-usage-level=2",), ("-Xptxas=--register-usage-level=9",),
    ("-Xptxas=--def-load-cache=cg",), ("-Xptxas=--allow-expensive-optimizations=false",),
]
if not THOROUGH:  # an optimisation level and a valued option (every -Xptxas knob reaches ptxas the same way)
    PTXAS_KNOBS = [PTXAS_KNOBS[1], PTXAS_KNOBS[3]]
# The ACFs gemm builds in CI: two show the --apply-controls path (each ACF reaches ptxas the same way, and the
# cap-with-an-ACF candidate a third time); 4 ACFs and 4 knobs cost ~16 s of CPU more and showed nothing more.
GEMM_ACFS = ACF_COUNT if THOROUGH else 2
# nvcc 13.3 hands -maxrregcount to cicc too ("-maxreg 64"): a front-end configuration of its own,
# run into the cache the first time, then from its own kept PTX.
REGISTER_CAPS = [("-maxrregcount=64",), ("-maxrregcount=128",), ("-maxrregcount=64", "-Xptxas=-O2")]
if not THOROUGH:  # a cap alone, and a cap with a ptxas knob (one front-end configuration each)
    REGISTER_CAPS = [REGISTER_CAPS[0], REGISTER_CAPS[2]]
# nvcc's temporary names (tmpxft_<pid>_<counter>-N_...) land in the object: the pid always differs, and
# the second field when another nvcc's temporary file of that name exists (two compiles at once).
_PID = re.compile(rb"tmpxft_[0-9a-f]{8}_[0-9a-f]{8}")


def _same_as_nvcc_agrees(a: bytes, b: bytes) -> bool:
    return _PID.sub(b"tmpxft_00000000_00000000", a) == _PID.sub(b"tmpxft_00000000_00000000", b)


@pytest.fixture(scope="module")
def acfs(tmp_path_factory: pytest.TempPathFactory, search_spaces_dir: Path) -> list[Path]:
    pytest.importorskip("compileiq", reason='needs NVIDIA compileiq: pip install "ciq-build[acf]"')
    pool = tmp_path_factory.mktemp("pool") / "acfs"
    env = {**os.environ, "CIQ_SEARCH_SPACES_DIR": str(search_spaces_dir)}
    sampled = subprocess.run([sys.executable, "-m", "ciq_build", "sample-acfs", "--count", str(ACF_COUNT),
                              "--seed", "11", "--out", str(pool)], capture_output=True, text=True, env=env, timeout=600)
    assert sampled.returncode == 0, sampled.stderr
    found = sorted(pool.glob("*.acf"))
    assert len(found) >= max(2, ACF_COUNT - 4)
    return found


def _user_tree(root: Path, source: Path, nvcc: Path, *cmake_args: str) -> Path:
    user = root / "user-build"
    ensure_ok(proc.run(["cmake", "-S", str(source), "-B", str(user), "-G", "Ninja", f"-DCMAKE_CUDA_COMPILER={nvcc}",
                        f"-Dciq_build_DIR={REPO_ROOT / 'cmake'}", *cmake_args], 600))
    return user


def _configured(user: Path, target: str, root: Path, nvcc: Path) -> cmake_trees.ScratchTree:
    """A scratch tree of `target` at `root`/scratch (its front-end cache `root`/front-ends), configured."""
    tree = cmake_trees.ScratchTree(load_manifest(user, target), root / "scratch", load_toolchain(nvcc))
    tree.configure(300)
    return tree


def _scratch_tree(root: Path, source: Path, target: str, nvcc: Path, *cmake_args: str) -> cmake_trees.ScratchTree:
    return _configured(_user_tree(root, source, nvcc, *cmake_args), target, root, nvcc)


@pytest.fixture(scope="module")
def sample_user_tree(tmp_path_factory: pytest.TempPathFactory, cuda133_bin: Path) -> Path:
    """The sample configured once (its gemm_kernels and reduce_kernels each get scratch trees of their own)."""
    root = tmp_path_factory.mktemp("sample")
    shutil.copytree(SAMPLE, root / "src", ignore=shutil.ignore_patterns("build", "*.json", "*.acf"))
    return _user_tree(root, root / "src", cuda133_bin / "nvcc", "-DSAMPLE_EXTENSION_PYTHON=OFF")


@pytest.fixture(scope="module")
def gemm(tmp_path_factory: pytest.TempPathFactory, sample_user_tree: Path,
         cuda133_bin: Path) -> cmake_trees.ScratchTree:
    return _configured(sample_user_tree, "gemm_kernels", tmp_path_factory.mktemp("gemm"), cuda133_bin / "nvcc")


@pytest.fixture(scope="module")
def spill(tmp_path_factory: pytest.TempPathFactory, cuda133_bin: Path) -> cmake_trees.ScratchTree:
    root = tmp_path_factory.mktemp("spill")
    shutil.copytree(SPILL, root / "src")
    # Two architectures: one ptxas run each, both cubins in one fatbinary.
    return _scratch_tree(root, root / "src", "spill_kernels", cuda133_bin / "nvcc",
                         "-DCMAKE_CUDA_ARCHITECTURES=90a;80")


def _nvcc_commands(tree: cmake_trees.ScratchTree) -> list[list[str]]:
    listed = ensure_ok(proc.run(["ninja", "-C", str(tree.build_dir), "-t", "commands", tree.manifest.target],
                                600)).stdout
    return ptxas_path.compile_commands(listed, tree.options_file)


def _full_nvcc(tree: cmake_trees.ScratchTree) -> tuple[dict[str, bytes], str]:
    """Each object as nvcc itself compiles it from the options file now in place, and nvcc's report."""
    objects, report = {}, ""
    for argv in _nvcc_commands(tree):
        done = subprocess.run(argv, cwd=tree.build_dir, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        output = argv[argv.index("-o") + 1]
        objects[output] = (tree.build_dir / output).read_bytes()
        report += f"Building CUDA object {output}\n{done.stdout}{done.stderr}"
    return objects, report


def _kept_ptx(tree: cmake_trees.ScratchTree) -> dict[Path, int]:
    return {p: p.stat().st_mtime_ns for p in tree.front_end_cache.rglob("*.ptx")}


def _candidates(acfs: list[Path], knobs: int = len(PTXAS_KNOBS), caps: int = len(REGISTER_CAPS)) -> list[Controls]:
    """ptxas-level candidates first (ACFs, the first `knobs` -Xptxas knobs), then ones with a register cap."""
    out = [Controls(acf=AcfRef.from_file(acf, "ptxas")) for acf in acfs]
    out += [Controls(flags=flags) for flags in PTXAS_KNOBS[:knobs]]
    out += [Controls(flags=flags) for flags in REGISTER_CAPS[:caps]]
    out.append(Controls(flags=("-maxrregcount=64",), acf=AcfRef.from_file(acfs[0], "ptxas")))
    return out


def _front_end_level(controls: Controls) -> bool:
    return any(flag.startswith("-maxrregcount") for flag in controls.flags)


def _assert_as_nvcc_builds(tree: cmake_trees.ScratchTree, controls: Controls, fast: dict[str, bytes],
                           reference: dict[str, bytes]) -> None:
    differ = [name for name in reference if not _same_as_nvcc_agrees(fast[name], reference[name])]
    if not differ:
        return
    twice, _ = _full_nvcc(tree)  # what two full builds of the same controls agree on: the reference of "identical"
    unstable = [name for name in differ if not _same_as_nvcc_agrees(reference[name], twice.get(name, b""))]
    why = (f"; nvcc's own two builds of {unstable} differ too (beyond its temporary names): the comparison "
           "cannot tell" if unstable else "; nvcc's own two builds agree: the fast path built other code")
    pytest.fail(f"{controls}: {differ} differ from nvcc's{why}")


def _check_bit_identity(tree: cmake_trees.ScratchTree, candidates: list[Controls]) -> None:
    first = tree.build(Controls(), 300)  # the first build, which keeps the front end
    assert first.ok, first.message
    kept = _kept_ptx(tree)
    assert kept, "the first build kept no PTX"
    distinct = set()
    for controls in candidates:
        built = tree.build(controls, 300)
        assert built.ok, (controls, built.message)
        fast = {str(p.relative_to(tree.build_dir)): p.read_bytes() for p in built.objects}
        now = _kept_ptx(tree)
        assert all(now.get(ptx) == stamp for ptx, stamp in kept.items()), f"{controls}: the kept front end ran again"
        if not _front_end_level(controls):
            assert now.keys() == kept.keys(), f"{controls}: a ptxas-level candidate got a front end of its own"
        reference, report = _full_nvcc(tree)
        assert reference.keys() <= fast.keys()  # fast: also what the build tool linked (a device link)
        _assert_as_nvcc_builds(tree, controls, fast, reference)
        # The static path (ptxas alone) reports what nvcc reports.
        static = tree.build(controls, 300, static_only=True)
        assert static.ok, static.message
        if not _front_end_level(controls):  # ptxas alone: no objects, no benchmark
            assert static.objects == () and static.benchmark is None, controls
        assert (metrics.summarize(metrics.parse_ptxas_verbose(static.compiler_output))
                == metrics.summarize(metrics.parse_ptxas_verbose(report)))
        distinct.add(tuple(sorted(_PID.sub(b"", v) for v in fast.values())))
    # The candidates really changed the code (the comparison is not vacuous).
    assert len(distinct) >= len(candidates) // 2, len(distinct)


@pytest.mark.acf
def test_gemm_objects_from_the_kept_ptx_are_those_nvcc_builds(gemm: cmake_trees.ScratchTree, acfs: list[Path]) -> None:
    _check_bit_identity(gemm, _candidates(acfs[:GEMM_ACFS]))


@pytest.mark.acf
def test_two_architectures_under_a_register_cap_are_those_nvcc_builds(spill: cmake_trees.ScratchTree,
                                                                       acfs: list[Path]) -> None:
    # Two architectures multiply each build: the sample gemm covers every kind of knob, this the second cubin,
    # for one candidate of each kind in CI (an ACF, a ptxas knob, a register cap, a cap with an ACF).
    _check_bit_identity(spill, _candidates(acfs[:SPILL_ACFS], knobs=len(PTXAS_KNOBS) if THOROUGH else 1,
                                           caps=len(REGISTER_CAPS) if THOROUGH else 1))


def test_a_front_end_change_is_kept_at_once_as_a_second_configuration(gemm: cmake_trees.ScratchTree) -> None:
    assert gemm.build(Controls(), 300).ok
    before = set(_kept_ptx(gemm))
    # A -D define reaches the front end: its compile may not use the kept PTX.
    tiled = Controls(defines=(("CIQ_GEMM_TM", "4"),))
    # Run into the cache, then ptxas and the rest from it: what nvcc whole costs, and kept.
    built = gemm.build(tiled, 300)
    assert built.objects != ()
    # The new configuration is kept beside the first (where not, the launcher said why in the build's log).
    assert len(set(_kept_ptx(gemm)) - before) == 1, built.compiler_output[-4000:]
    kept = _kept_ptx(gemm)
    again = gemm.build(tiled, 300)  # from the kept front end: it does not run again
    assert _kept_ptx(gemm) == kept
    reference, _ = _full_nvcc(gemm)
    assert all(_same_as_nvcc_agrees(p.read_bytes(), reference[str(p.relative_to(gemm.build_dir))])
               for built_now in (built, again) for p in built_now.objects)


def test_another_scratch_tree_of_the_tune_builds_from_the_kept_front_end_what_nvcc_builds_there(
        gemm: cmake_trees.ScratchTree) -> None:
    """The trees beside each other share the cache: a worker's first compile runs no front end."""
    assert gemm.build(Controls(), 300).ok
    kept = _kept_ptx(gemm)
    other = cmake_trees.ScratchTree(gemm.manifest, gemm.root.parent / "scratch-other", gemm.toolchain)
    assert other.front_end_cache == gemm.front_end_cache
    other.configure(300)
    controls = Controls(flags=("-Xptxas=-O2",))
    built = other.build(controls, 300)
    assert built.ok, built.message
    assert _kept_ptx(gemm) == kept  # the front end did not run again, nor was a new one kept
    reference, _ = _full_nvcc(other)  # nvcc whole, in the other tree's own folder
    assert reference and all(_same_as_nvcc_agrees(p.read_bytes(), reference[str(p.relative_to(other.build_dir))])
                             for p in built.objects)


def _build_into(built: list[CandidateBuild | None], i: int, tree: cmake_trees.ScratchTree,
                controls: Controls) -> None:
    built[i] = tree.build(controls, 300)


def test_trees_compiling_one_front_end_at_once_with_other_ptxas_controls_each_get_their_own_code(
        spill: cmake_trees.ScratchTree) -> None:
    """The minimal pin builds the winner less its ACF in one tree while the winner is rebuilt in another, and
    builds ahead run beside the search's: each object must hold its own tree's code. The kept front end is
    only read: each compile's cubin and fatbinary are its own (written into the shared entry under nvcc's
    fixed names, one tree's fatbinary took the other's cubin, and the minimal pin dropped a winning ACF)."""
    other = cmake_trees.ScratchTree(spill.manifest, spill.root.parent / "scratch-beside", spill.toolchain)
    other.configure(300)
    assert spill.build(Controls(), 300).ok
    [argv] = _nvcc_commands(spill)
    entry = ptxas_path.plan(argv, spill.build_dir, spill.front_end_cache).entry
    kept = {f.name: f.stat().st_mtime_ns for f in entry.iterdir() if f.name != "front.json"}
    runs = [(spill, Controls()), (other, Controls(flags=("-Xptxas=-O1",)))]  # ptxas alone differs
    for _ in range(3):
        built: list[CandidateBuild | None] = [None, None]
        threads = [threading.Thread(target=_build_into, args=(built, i, *runs[i])) for i in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for (tree, _controls), result in zip(runs, built):
            assert result is not None and result.ok, result
            reference, _ = _full_nvcc(tree)  # nvcc whole, with this tree's options file
            assert all(_same_as_nvcc_agrees(o.read_bytes(), reference[str(o.relative_to(tree.build_dir))])
                       for o in result.objects), f"{tree.root.name}: another tree's code"
        codes = {_PID.sub(b"", o.read_bytes()) for r in built if r is not None for o in r.objects}
        assert len(codes) == 2, "-Xptxas=-O1 made the same code: the test would show nothing"
        assert all(tree.build(c, 300, static_only=True).ok for tree, c in runs)  # ptxas alone too
        assert {f.name: f.stat().st_mtime_ns for f in entry.iterdir() if f.name != "front.json"} == kept


def test_a_dependency_file_names_files_under_a_folder_with_a_space_as_nvcc_writes_them(tmp_path: Path) -> None:
    # Each space escaped (nvcc writes "/my\ src/kern.cu"; Ninja and Make read it so), read back as the same files;
    # a name that would need an escape the fast path does not write sends its compile to nvcc whole.
    names = [f"{tmp_path}/my src/kern.cu", f"{tmp_path}/my src/two words.h", "/usr/include/stdio.h"]
    depfile = tmp_path / "deps.d"
    ptxas_path._write_dependency_file(depfile, "CMakeFiles/kern.dir/kern.cu.o", names)
    assert depfile.read_text().startswith(f"CMakeFiles/kern.dir/kern.cu.o : {tmp_path}/my\\ src/kern.cu \\\n")
    assert ptxas_path._dependencies(depfile) == names
    for target, name in (("kern .o", names[0]), ("kern.o", "/a#b.h"), ("kern.o", "/a\tb.h"), ("kern.o", "/a\\b.h")):
        with pytest.raises(ptxas_path.Unsupported, match="would need escapes"):
            ptxas_path._write_dependency_file(depfile, target, [name])


def test_a_static_evaluation_keeps_a_new_front_end_at_once_and_gives_nvcc_its_objects_after(
        gemm: cmake_trees.ScratchTree) -> None:
    assert gemm.build(Controls(), 300).ok
    [argv] = _nvcc_commands(gemm)
    baseline = ptxas_path.plan(argv, gemm.build_dir, gemm.front_end_cache)
    # The dependency file kept for the build tool (made from the files the preprocessed sources name)
    # lists the files nvcc's own lists.
    _full_nvcc(gemm)
    assert baseline.depfile is not None
    assert (set(ptxas_path._dependencies(baseline.entry / "deps.d"))
            == set(ptxas_path._dependencies(baseline.depfile)))
    before = set(_kept_ptx(gemm))
    capped = Controls(flags=("-maxrregcount=40",))  # nvcc hands it to cicc too: a front end of its own
    static = gemm.build(capped, 300, static_only=True)
    assert static.ok and static.objects == ()  # its front end run here, then ptxas alone: no object
    assert static.kept_front_end_seconds == 0.0  # it ran: its time is in the build's
    assert len(set(_kept_ptx(gemm)) - before) == 1  # kept the first time (it cost nothing more)
    [argv] = _nvcc_commands(gemm)
    plan = ptxas_path.plan(argv, gemm.build_dir, gemm.front_end_cache)
    assert ptxas_path.ready(plan) and ptxas_path.has_dependency_file(plan)
    # Taken as kept, the front end's own seconds (recorded when it ran) are said beside the build's: a candidate
    # whose options reach cicc spends them again (the compile limit counts them, ciq_build.tune.timeouts).
    ran_before = ptxas_path.front_end_seconds(plan)
    assert ran_before > 0.1 and gemm.build(capped, 300, static_only=True).kept_front_end_seconds == ran_before
    reference, report = _full_nvcc(gemm)
    assert (metrics.summarize(metrics.parse_ptxas_verbose(static.compiler_output))
            == metrics.summarize(metrics.parse_ptxas_verbose(report)))
    # Objects wanted: from the kept front end (with its dependency file), which does not run again.
    kept = _kept_ptx(gemm)
    for _ in range(2):
        built = gemm.build(capped, 300)
        assert built.ok and _kept_ptx(gemm) == kept and built.kept_front_end_seconds == ran_before  # the launcher's
        assert all(_same_as_nvcc_agrees(p.read_bytes(), reference[str(p.relative_to(gemm.build_dir))])
                   for p in built.objects)
    header = next(Path(gemm.manifest.source_dir).glob("src/*.h"))
    os.utime(header)  # an entry kept without nvcc tells when it is stale too
    assert not ptxas_path.ready(plan)
    assert gemm.build(capped, 300, static_only=True).ok and ptxas_path.ready(plan)


def test_a_static_evaluation_says_the_front_ends_warnings_as_a_whole_build_does(tmp_path: Path,
                                                                              cuda133_bin: Path) -> None:
    # The PARAMS probe reads "redefined" from them (ciq_build.tune.param_probe), through ptxas alone: noop's
    # kern.cu #defines UNROLL unguarded. The first build runs the front end, the second reads it kept.
    shutil.copytree(REPO_ROOT / "tests" / "projects" / "noop", tmp_path / "src")
    tree = _scratch_tree(tmp_path, tmp_path / "src", "noop_kernels", cuda133_bin / "nvcc")
    for _ in range(2):
        static = tree.build(Controls(defines=(("UNROLL", "2"),)), 300, static_only=True)
        assert static.ok and static.objects == ()  # ptxas alone: no object
        assert '"UNROLL" redefined' in static.compiler_output and "Used " in static.compiler_output


def test_a_static_evaluation_whose_front_end_runs_past_the_timeout_is_the_candidates_timeout(
        gemm: cmake_trees.ScratchTree) -> None:
    assert gemm.build(Controls(), 300).ok
    before = set(gemm.front_end_cache.iterdir())
    # A new front end (cicc gets the cap) takes about a second here: 0.2 s cannot hold it.
    built = gemm.build(Controls(flags=("-maxrregcount=56",)), 0.2, static_only=True)
    # Whose timeout it was is the machine's load to decide, not the candidate's (worker.timed_out_cause: a compile
    # that waited for a CPU more than half its limit is compile_starved, which a resume builds again; a loaded CI
    # machine waited 0.1 s of the 0.2): either way a timeout, said as such.
    assert not built.ok and built.cause in (Cause.COMPILE_TIMEOUT, Cause.COMPILE_STARVED), built.message
    said = "limit was 0.2 s" if built.cause == Cause.COMPILE_TIMEOUT else "of its 0.2 s limit for a CPU"
    assert "timed out" in built.message and said in built.message, built.message
    assert set(gemm.front_end_cache.iterdir()) == before  # no unfinished entry left behind
    assert gemm.build(Controls(flags=("-maxrregcount=56",)), 300, static_only=True).ok  # not kept as a failure


def test_a_changed_header_is_not_served_from_the_kept_front_end(gemm: cmake_trees.ScratchTree) -> None:
    assert gemm.build(Controls(), 300).ok
    [argv] = _nvcc_commands(gemm)
    plan = ptxas_path.plan(argv, gemm.build_dir, gemm.front_end_cache)
    assert ptxas_path.ready(plan)
    header = next(Path(gemm.manifest.source_dir).glob("src/*.h"))
    os.utime(header)  # what the compile read changed (its stat): the kept front end is stale
    assert not ptxas_path.ready(plan)
    rebuilt = gemm.build(Controls(), 300)
    assert rebuilt.ok and ptxas_path.ready(plan)


def test_device_debug_information_is_left_to_nvcc(gemm: cmake_trees.ScratchTree) -> None:
    [argv] = _nvcc_commands(gemm)
    with pytest.raises(ptxas_path.Unsupported, match="debug"):
        ptxas_path.plan([*argv, "-G"], gemm.build_dir, gemm.front_end_cache)


def test_line_information_takes_the_ptxas_only_path_and_gives_the_object_nvcc_builds(
        gemm: cmake_trees.ScratchTree, tmp_path: Path) -> None:
    # --generate-line-info (cuda-ground-up's own flags, by generator expression) runs cicc with
    # -generate-line-info, once read as debug information: every compile went to nvcc whole, and a static tune's
    # minimal pin rebuilt its 11 files whole for each control (80 s each, a candidate 25 s). Line information
    # names the sources, not nvcc's temporary folder: the kept front end gives nvcc's object and report.
    [argv] = _nvcc_commands(gemm)
    argv = [*argv, "--generate-line-info", "-Xptxas=-v"]
    argv[argv.index("-o") + 1] = str(tmp_path / "gemm.o")  # the tree's own object left as the other tests built it
    argv[argv.index("-MF") + 1] = str(tmp_path / "gemm.o.d")
    plan = ptxas_path.plan(argv, gemm.build_dir, gemm.front_end_cache)
    ptxas_path.fill(plan, 300)
    report = ptxas_path.ptxas_only(plan, 300)
    assert report.returncode == 0 and "Used" in report.stdout, report.stdout
    assert ptxas_path.back_end(plan, 300).returncode == 0
    fast = (tmp_path / "gemm.o").read_bytes()
    whole = subprocess.run(argv, cwd=gemm.build_dir, capture_output=True, text=True)
    assert whole.returncode == 0, whole.stderr
    assert _same_as_nvcc_agrees(fast, (tmp_path / "gemm.o").read_bytes()), "other bytes than nvcc's"
    assert "Used" in whole.stdout + whole.stderr


def test_a_compile_whose_temporary_names_count_up_shares_the_entry_of_its_front_end(tmp_path: Path,
                                                                                    cuda133_bin: Path) -> None:
    # nvcc counts the second field of its temporary names up where a file of that name is in the temporary
    # folder already (one a killed nvcc of a process with the same id left there); the entry is the same.
    (tmp_path / "k.cu").write_text("__global__ void k(float* p) { p[threadIdx.x] *= 2.0f; }\n")
    argv = [str(cuda133_bin / "nvcc"), "--generate-code=arch=compute_90a,code=[compute_90a,sm_90a]", "-c", "k.cu",
            "-o", "k.o"]
    _, steps = ptxas_path.dryrun(argv, tmp_path)
    counted_up = [re.sub(r"(tmpxft_[0-9a-f]{8}_)00000000-", r"\g<1>00000001-", step) for step in steps]
    assert counted_up != steps
    assert ptxas_path._fixed_names(counted_up) == ptxas_path._fixed_names(steps)


def test_separable_compilation_of_two_sources_relinks_from_the_kept_ptx(tmp_path: Path, cuda133_bin: Path,
                                                                       sample_user_tree: Path,
                                                                       acfs: list[Path]) -> None:
    # The sample's user tree is gemm's (configured once); the scratch tree and its front-end cache are its own.
    tree = _configured(sample_user_tree, "reduce_kernels", tmp_path, cuda133_bin / "nvcc")
    # One candidate of each level (what the relink must follow): an ACF, a ptxas knob, a front-end cap.
    _check_bit_identity(tree, _candidates(acfs[:1])[:1] + [Controls(flags=("-Xptxas=-O1",)),
                                                          Controls(flags=("-maxrregcount=32",))])
    # The build tool device-links (nvcc -dlink over both objects) and relinks the benchmark after the fast path.
    built = tree.build(Controls(flags=("-Xptxas=-O2",)), 300)
    device_link = tree.build_dir / "CMakeFiles" / "reduce_kernels.dir" / "cmake_device_link.o"
    newest_object = max(p.stat().st_mtime_ns for p in built.objects if p != device_link)
    assert device_link.stat().st_mtime_ns >= newest_object
    assert built.benchmark is not None and built.benchmark.stat().st_mtime_ns >= newest_object


def test_the_launcher_leaves_compiles_of_other_targets_to_nvcc(gemm: cmake_trees.ScratchTree) -> None:
    listed = ensure_ok(proc.run(["ninja", "-C", str(gemm.build_dir), "-t", "commands", "gemm_bench"], 600)).stdout
    bench_compile = next(shlex.split(line) for line in listed.splitlines() if "gemm_bench.cu" in line)
    assert "--" in bench_compile  # the launcher wraps it, and execs nvcc for it (no options file of ours)
    assert ptxas_path.compile_commands(listed, gemm.options_file) == _nvcc_commands(gemm)


def test_a_tree_switched_to_nvcc_whole_is_configured_again_without_the_launcher(tmp_path: Path,
                                                                              cuda133_bin: Path) -> None:
    shutil.copytree(SPILL, tmp_path / "src")
    tree = _scratch_tree(tmp_path, tmp_path / "src", "spill_kernels", cuda133_bin / "nvcc")
    assert _nvcc_commands(tree)
    # Where compile time is measured, the driver asks for nvcc whole (make_trees(..., fast_path=False)).
    whole = cmake_trees.ScratchTree(tree.manifest, tree.root, tree.toolchain, fast_path=False)
    whole.configure(300)
    listed = ensure_ok(proc.run(["ninja", "-C", str(whole.build_dir), "-t", "commands", "spill_kernels"], 600)).stdout
    assert "ptxas_path" not in listed and "--options-file=" in listed
    assert whole.build(Controls(), 300, static_only=True).objects  # no ptxas-only shortcut either


def test_a_front_end_that_fails_on_its_own_says_that_the_error_after_it_is_nvcc_wholes(tmp_path: Path,
                                                                                     cuda133_bin: Path) -> None:
    # flash_attention_inference's v1 kernels crash nvcc 13.3's front end (an internal error): the launcher said
    # "(the front end failed when run on its own:)" and nvcc whole's error followed, read as the launcher's own
    # doing. The note must say the error below is nvcc whole's, which the build would get without ciq_build.
    (tmp_path / "k.cu").write_text('#error "this source does not compile"\n__global__ void k() {}\n')
    options = tmp_path / "k.nvcc-options"
    options.write_text("")
    nvcc = [str(cuda133_bin / "nvcc"), "--generate-code=arch=compute_90a,code=[compute_90a,sm_90a]",
            f"--options-file={options}", "-c", "k.cu", "-o", "k.o"]
    launched = subprocess.run([sys.executable, ptxas_path.__file__, f"--cache={tmp_path / 'cache'}",
                               f"--options-file={options}", "--", *nvcc], cwd=tmp_path, capture_output=True, text=True)
    assert launched.returncode != 0 and not (tmp_path / "k.o").exists()
    note, _, after = launched.stderr.partition("\n")
    assert note == ("ciq_build: the front end is not kept for the ptxas-only path (the front end failed when run on "
                    "its own); nvcc whole compiles it, as the build does without ciq_build:"), launched.stderr
    assert after.count("error: #error") == 1  # nvcc whole's error, said once


# -- a stopped tune: the path's own processes -------------------------------------------------------

_BUSY = "import sys, time\nopen(sys.argv[1], 'a').close()\nend = time.monotonic() + 120\nwhile time.monotonic() < end: pass"


def test_a_stop_kills_the_steps_a_driver_thread_runs_itself_and_none_starts_after_it(tmp_path: Path) -> None:
    # A static tune's workers run the front end and ptxas themselves, not under the build tool: a stop
    # killed every run it knew of but not these, so the stopped tune waited for each one (a CPU-busy
    # TEST DOUBLE for a front end here, 120 s).
    flag = tmp_path / "started"
    busy = shlex.join([sys.executable, "-c", _BUSY, str(flag)])
    plan = ptxas_path.Plan(("nvcc",), tmp_path, dict(os.environ), (busy,), (), tmp_path / "entry", None)
    worker, outcome = in_thread(lambda: ptxas_path.fill(plan, 600, start=proc.started))
    try:
        deadline = time.monotonic() + 120
        while not flag.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        stopped = time.monotonic()
        processes.stop_all()
        worker.join(timeout=60)
        assert time.monotonic() - stopped < 15, "the stop waited for the step"
        assert isinstance(outcome[0], ptxas_path.Unsupported), outcome  # killed: no front end
        assert not plan.entry.exists() and not list(tmp_path.glob("entry.new-*"))  # nothing half-filled is kept
        with pytest.raises(stopping.Stopped):
            ptxas_path.fill(plan, 600, start=proc.started)
    finally:
        stopping.resume_starting()  # this test process goes on after its "interrupt"
