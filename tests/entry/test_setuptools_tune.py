"""`tune <ciq_target> --setuptools <project>` with real setuptools, nvcc 13.3 and gcc
(ciq_build.project.setuptools_backend).

tests/projects/setuptools_tune: one CudaExtension (a .cu kernel library and a
C++ Python module) whose CIQ_TILE source parameter is 64 by default (32
registers on sm_90a), 8 (10 registers) or 128 (an #error: a candidate that does
not compile). Its bench.py imports the built module and prints the tile the
.cu compile saw; no GPU is needed, so the benchmark path runs here too.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sys
from pathlib import Path

import pytest
from test_manifest_schema import assert_valid_manifest

from ciq_build.cli import _setuptools_project, main
from ciq_build.compiler.controls import Controls
from ciq_build.compiler.toolchain import find_toolchain
from ciq_build.core.causes import Cause
from ciq_build.errors import ConfigError
from ciq_build.measure.bench import BenchSpec, run_once
from ciq_build.measure.gpu_slots import GpuSlots
from ciq_build.measure.proc import run
from ciq_build.pin.record import PinnedRecord, RecordObjective, RecordToolchain
from ciq_build.pin.write import write_record
from ciq_build.project.manifest import manifest_document
from ciq_build.project.per_block import unknown_block_size
from ciq_build.project.setuptools_backend import (
    ExtensionTree,
    SetuptoolsBackend,
    capture_setup,
    extension_manifest,
    load_extension,
)
from ciq_build.search.base import Proposal
from ciq_build.setuptools_ext import CudaExtension
from ciq_build.tune.driver import run_tune
from ciq_build.tune.runner import BuildRunner
from ciq_build.tune.timeouts import Timeouts
from ciq_build.tune.tune_options import TuneOptions
from support import PROJECTS

PROJECT = PROJECTS / "setuptools_tune"
TIMEOUT = 300


@pytest.fixture()
def project(tmp_path: Path, cuda133_bin: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    dest = tmp_path / "my project"  # a space: every path must survive it
    shutil.copytree(PROJECT, dest, ignore=shutil.ignore_patterns("build", "ciq", "*.so", "__pycache__"))
    monkeypatch.setenv("CIQ_NVCC", str(cuda133_bin / "nvcc"))
    for name in ("CIQ_DISABLE", "CIQ_STRICT", "CUDACXX", "CUDAHOSTCXX"):
        monkeypatch.delenv(name, raising=False)
    return dest


def _worker_tree(project: Path) -> ExtensionTree:
    """The example's target `kern` as a tune's first worker builds it (not configured yet)."""
    toolchain = find_toolchain(Path(os.environ["CIQ_NVCC"]))
    manifest = extension_manifest(project, load_extension(project, "kern"), toolchain)
    return ExtensionTree(manifest, project / "build" / "ciq" / "scratch" / "kern" / "worker-0", toolchain)


def test_load_extension_reads_setup_py_without_building(project: Path) -> None:
    before = (os.getcwd(), list(sys.argv), list(sys.path))
    ext = load_extension(project, "kern")
    assert (os.getcwd(), sys.argv, sys.path) == before  # setup.py ran from the project, then all was put back
    assert ext.ciq_objectives == ("registers",) and ext.params == ("CIQ_TILE=choice(8,64,128)",)
    assert ext.ciq_benchmark == (sys.executable, "bench.py")
    assert not (project / "build").exists()  # setup() was captured, nothing ran
    # the .cpp beside the kernels is what setuptools' host compiler builds, which a candidate's -D does not reach
    manifest = _worker_tree(project).manifest
    assert manifest.host_sources == (project / "pkg" / "mod.cpp",) and manifest.benchmark is not None
    assert manifest.benchmark.sources == ()
    with pytest.raises(ConfigError, match=r"no CudaExtension\(ciq_target='gemm'\).*targets: kern"):
        load_extension(project, "gemm")
    with pytest.raises(ConfigError, match="there is no setup.py"):
        load_extension(project / "pkg", "kern")
    # Each candidate is built by setup.py's own build_ext (the backend never imports the setuptools hooks):
    # a setup.py that builds with setuptools' plain build_ext is refused before anything is built.
    setup_py = project / "setup.py"
    setup_py.write_text(setup_py.read_text().replace('cmdclass={"build_ext": build_ext},', ""))
    with pytest.raises(ConfigError, match=r"setup\(\)'s cmdclass has no build_ext from ciq_build, so a plain build "
                                          r"compiles no \.cu file of 'kern' with its pin"):
        load_extension(project, "kern")


def test_ciq_benchmark_must_be_a_command_list() -> None:
    with pytest.raises(ConfigError, match="ciq_benchmark is a list of strings"):
        CudaExtension("m", ["k.cu"], ciq_target="k", ciq_benchmark="python bench.py")
    with pytest.raises(ConfigError, match="ciq_timeout must be a positive"):
        CudaExtension("m", ["k.cu"], ciq_target="k", ciq_timeout=0)


@pytest.mark.parametrize("seconds", [float("inf"), float("nan"), True, False, -1, 0.0, "60", None, 1e999])
@pytest.mark.parametrize("name", ["ciq_timeout", "nvcc_timeout"])
def test_a_timeout_that_is_not_a_finite_positive_number_is_refused_up_front(name: str, seconds: object) -> None:
    # inf once crashed the tune with an OverflowError traceback; True passed as 1 s. The rule is BenchSpec's.
    with pytest.raises(ConfigError, match=rf"{name} must be a positive, finite number of seconds, not "):
        CudaExtension("m", ["k.cu"], ciq_target="k", **{name: seconds})  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="must be a positive, finite number of seconds"):
        BenchSpec(Path(sys.executable), timeout=seconds)  # type: ignore[arg-type]


def test_a_whole_or_fractional_timeout_is_kept_as_seconds() -> None:
    ext = CudaExtension("m", ["k.cu"], ciq_target="k", ciq_timeout=90, nvcc_timeout=2.5)
    assert (ext.ciq_timeout, ext.nvcc_timeout) == (90.0, 2.5)


@pytest.mark.slow
def test_a_candidate_compiles_without_linking_and_a_failing_one_is_recorded(project: Path) -> None:
    tree = _worker_tree(project)
    runner = BuildRunner(tree.manifest, tree.toolchain, tree.manifest.parsed_objectives, 1, Timeouts(TIMEOUT, TIMEOUT),
                         GpuSlots([]))
    tree.configure(0)

    static = runner.evaluate(tree, Proposal(0, 0, {}), Controls(defines=(("CIQ_TILE", "8"),)), "k8")
    assert static.ok and static.scores == (10.0,), static.message
    assert [p.name for p in tree.object_files()] == ["kern.cu.o"]
    assert not tree.lib_dir.exists()  # registers come from ptxas's report: nothing linked, no benchmark run

    broken = runner.evaluate(tree, Proposal(1, 0, {}), Controls(defines=(("CIQ_TILE", "128"),)), "k128")
    assert not broken.ok and broken.cause == Cause.COMPILE_FAILED
    assert "CIQ_TILE above 64 is not supported" in broken.message


@pytest.mark.slow
@pytest.mark.parametrize("packages", ["declared", "left out"])
def test_the_benchmark_imports_the_candidates_module_not_one_built_in_the_project(project: Path, packages: str) -> None:
    # py-faster-rcnn's setup.py names no packages: lib/ held nms/gpu_nms.so alone, a namespace portion, and the
    # project's nms/ (a regular package) was taken instead, with its `build_ext --inplace` module: every candidate's
    # benchmark measured that one. pkg/_kern.py stands in for such an in-place build here.
    (project / "pkg" / "_kern.py").write_text("def tile():\n    return -1\n")
    (project / "pkg" / "helper.py").write_text('NAME = "the project module"\n')
    if packages == "left out":
        setup = (project / "setup.py").read_text()
        (project / "setup.py").write_text(setup.replace('packages=["pkg"],', ""))
    tree = _worker_tree(project)
    tree.configure(0)
    built = tree.build(Controls(defines=(("CIQ_TILE", "8"),)), TIMEOUT)
    assert built.ok, built.message
    measured = run_once(tree.bench_spec(60, ("time_ms",)))
    assert measured.ok and measured.metrics["tile"] == 8, measured.output_tail
    # the package's other modules are still found, in the project
    spec = tree.bench_spec(60, ())
    found = run([sys.executable, "-c", "import pkg.helper; print(pkg.helper.NAME)"], 60, cwd=project, env={
        **os.environ, **(spec.env or {})})
    assert found.ok and found.stdout.strip() == "the project module", found.output_tail()


CYTHON_MODULE = """\
cdef extern from "kern.h":
    int kern_tile()

def tile():
    return kern_tile()
"""


@pytest.mark.slow
def test_a_cython_module_beside_the_kernels_builds_in_the_candidates_tree_and_not_in_the_project(project: Path) -> None:
    # py-faster-rcnn's gpu_nms (nms_kernel.cu beside gpu_nms.pyx): each worker's candidate wrote nms/gpu_nms.cpp into
    # the project at once, and the tune warned that the source tree changed under it.
    pytest.importorskip("Cython")
    (project / "pkg" / "mod.cpp").unlink()
    (project / "pkg" / "mod.pyx").write_text(CYTHON_MODULE)
    setup = (project / "setup.py").read_text()
    (project / "setup.py").write_text(setup.replace('"pkg/mod.cpp"', '"pkg/mod.pyx"').replace(
        'depends=["pkg/kern.h"],', 'depends=["pkg/kern.h"], include_dirs=["pkg"], language="c++",'))
    tree = _worker_tree(project)
    tree.configure(0)
    built = tree.build(Controls(defines=(("CIQ_TILE", "8"),)), TIMEOUT)
    assert built.ok, built.message
    assert sorted(p.name for p in (project / "pkg").iterdir()) == ["__init__.py", "kern.cu", "kern.h", "mod.pyx"]
    loaded = run([sys.executable, "-c", "import pkg._kern as k; print(k.tile())"], 60, cwd=tree.lib_dir)
    assert loaded.ok and loaded.stdout.strip() == "8", loaded.output_tail()


def test_minus_s_picks_the_setuptools_route_only_without_a_cmakelists(project: Path, tmp_path: Path) -> None:
    assert _setuptools_project(None, project) == project.resolve()
    assert _setuptools_project(tmp_path / "elsewhere", None) == (tmp_path / "elsewhere").resolve()
    # -B <project>/build (or the ./build assumed, in the project) without -S: py-faster-rcnn's trial ran `list` in
    # the project and was told "build is not a configured CMake build tree ... configure it first (cmake ...)"
    assert _setuptools_project(None, None, project / "build") == project.resolve()
    assert main(["list", "-B", str(project / "build")]) == 0
    (project / "build").mkdir(exist_ok=True)
    (project / "build" / "CMakeCache.txt").write_text("")
    assert _setuptools_project(None, None, project / "build") is None  # a configured CMake tree stays CMake's
    (project / "CMakeLists.txt").write_text("project(x)\n")
    assert _setuptools_project(None, project) is None  # a CMake project that also has a setup.py: CMake's


# A second tuned extension (static objectives only): its own copy of the kernel, so its own objects, and a module.
TWICE = """        CudaExtension(
            "pkg._twice",
            sources=["pkg/twice.cu", "pkg/twice.cpp"],
            depends=["pkg/kern.h"],
            ciq_target="twice",
            cuda_architectures=["90a"],
            params=["CIQ_TILE=choice(8,64,128)"],
            ciq_objectives=["registers"],
        ),
"""
TWICE_MODULE = """#include <Python.h>
static PyModuleDef module = {PyModuleDef_HEAD_INIT, "_twice", nullptr, -1, nullptr};
PyMODINIT_FUNC PyInit__twice(void) { return PyModule_Create(&module); }
"""


def _two_targets(project: Path) -> None:
    """The project's setup() given a second tuned extension, twice, after kern."""
    shutil.copy(project / "pkg" / "kern.cu", project / "pkg" / "twice.cu")
    (project / "pkg" / "twice.cpp").write_text(TWICE_MODULE)
    setup_py = project / "setup.py"
    setup_py.write_text(setup_py.read_text().replace("        )\n    ],", "        ),\n" + TWICE + "    ],", 1))
    assert [e.ciq_target for e in capture_setup(project)["ext_modules"]] == ["kern", "twice"]


def test_list_shows_the_targets_of_setup_py_and_refuses_a_project_without_any(project: Path, tmp_path: Path,
                                                                            capsys: pytest.CaptureFixture[str]) -> None:
    _two_targets(project)
    # twice without ciq_objectives: the column shows what a tune of it scores (it said "(tune picks)").
    setup_py = project / "setup.py"
    setup_py.write_text(setup_py.read_text().replace(TWICE, TWICE.replace('ciq_objectives=["registers"],', "")))
    assert main(["list", "-S", str(project)]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()]
    assert rows == [["target", "benchmark", *"objectives (the pin's; no pin: the target's)".split(), "pin"],
                    ["kern", "ciq_benchmark", "registers", "(none)"],
                    ["twice", "(static", "only)", "spill_bytes", "(the", "default)", "(none)"]], rows
    assert main(["show", "twice", "--setuptools", str(project)]) == 2
    # What to run next is this project's tune, quoted (the copy's path has a space), not a CMake build folder's.
    said = capsys.readouterr().err
    assert f"twice has no pinned record at {project / 'ciq' / 'twice.json'}; run `python -m ciq_build tune twice " \
           f"--setuptools {shlex.quote(str(project))}` first" in said, said
    # A pin tuned for other objectives than the target's: the column shows the pin's, as its header says.
    write_record(project / "ciq", PinnedRecord(
        target="kern", controls=Controls(flags=("-maxrregcount=32",)), toolchain=RecordToolchain("13.3"),
        objectives=(RecordObjective("spill_bytes"), RecordObjective("occupancy", "max"))))
    assert main(["list", "-S", str(project)]) == 0
    assert capsys.readouterr().out.splitlines()[1].split()[:3] == ["kern", "ciq_benchmark", "spill_bytes,max:occupancy"]

    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "setup.py").write_text("from setuptools import setup\nsetup(name='bare')\n")
    assert main(["list", "-S", str(bare)]) == 0
    assert "setup.py has no CudaExtension with a ciq_target" in capsys.readouterr().out
    assert main(["tune", "--all", "-S", str(bare)]) == 2
    assert "tune --all: " in capsys.readouterr().err


def test_report_of_a_setuptools_project_reads_its_pin_from_its_build_folder(
        project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # py-faster-rcnn's trial: `report nms -B build` (as docs/setuptools.md says) asked CMake where the pin was, found
    # no CMakeCache.txt, and reported "pinned record: none (nothing pinned yet)" beside the project's ciq/nms.json.
    (project / "ciq").mkdir()
    (project / "ciq" / "kern.json").write_text(json.dumps({
        "schema": 1, "target": "kern", "controls": {"flags": ["-maxrregcount=32"], "defines": {}},
        "toolchain": {"cuda": "13.3", "architectures": ["90a"]}}))
    for build_dir, source in ((project / "build", []), (project / "elsewhere", ["-S", str(project)])):
        assert main(["report", "kern", "-B", str(build_dir), *source, "--format", "markdown"]) == 0
        assert f"- pinned record: {project / 'ciq' / 'kern.json'}" in capsys.readouterr().out



def test_report_and_export_with_minus_s_read_the_setuptools_projects_journal_from_anywhere(
        project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    # `tune kern -S proj` journals in proj/build/ciq/; `report kern -S proj`, run elsewhere, read ./build's journal and
    # said to run `tune kern -B build` again, a -B naming no setuptools project from there.
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    journal = project / "build" / "ciq" / "journal" / "kern.jsonl"
    for command in (["report", "kern"], ["export", "kern", "--json", str(tmp_path / "out.json")]):
        assert main([*command, "-S", str(project)]) == 2
        said = capsys.readouterr().err
        assert f"its journal {journal} does not exist" in said, said
        assert f"tune kern -B {project / 'build'}` first" in said, said

def test_ray_is_refused_for_a_setuptools_project_before_anything_is_built(project: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tune", "kern", "--setuptools", str(project), "--executor", "ray"]) == 2
    assert "a setuptools project tunes with the local executor only" in capsys.readouterr().err
    assert not (project / "build").exists()


@pytest.mark.slow
def test_tune_all_pins_each_target_the_next_plain_build_applies_it_and_list_show_verify_work(project: Path) -> None:
    # One `tune --all` for what a tune of kern alone was run for as well (the pin, the report, the resume, the
    # plain build that applies it: ~12 s of CPU more), kern tuned with the same options as it would be alone.
    _two_targets(project)
    tuned = run([sys.executable, "-m", "ciq_build", "tune", "--all", "--setuptools", str(project), "--controls",
                 "params", "--generations", "2", "--pool-size", "3", "--seed", "2"], TIMEOUT, cwd=project.parent)
    assert tuned.ok, tuned.output_tail(60)
    assert "tune --all: kern (1 of 2)" in tuned.stderr and "tune --all: twice (2 of 2)" in tuned.stderr
    summary = tuned.stdout[tuned.stdout.index("tune --all:"):].splitlines()
    assert summary[0] == "tune --all: 2 target(s), 0 failed", summary
    assert [row.split()[:2] for row in summary[1:]] == [["kern", "pinned:"], ["twice", "pinned:"]], summary
    assert "registers  32        10" in tuned.stdout, tuned.stdout
    assert "then the next `pip install .`" in tuned.stdout
    record = json.loads((project / "ciq" / "kern.json").read_text())
    assert record["controls"]["defines"] == {"CIQ_TILE": "8"}
    assert record["toolchain"]["architectures"] == ["90a"]
    journal = (project / "build" / "ciq" / "journal" / "kern.jsonl").read_text().splitlines()
    assert any('"CIQ_TILE": "128"' in line and "compile_failed" in line for line in journal)

    report = run([sys.executable, "-m", "ciq_build", "report", "kern", "-B", str(project / "build"), "--format",
                  "markdown"], 60, cwd=project)
    assert report.ok and "| registers | min | 32 | 10 |" in report.stdout, report.output_tail()

    again = run([sys.executable, "-m", "ciq_build", "tune", "kern", "-S", str(project), "--controls", "params",
                 "--generations", "2", "--pool-size", "3", "--seed", "2", "--no-pin"], TIMEOUT, cwd=project.parent)
    assert again.ok and "(0 run, " in again.stdout, again.output_tail(60)  # resumed: every evaluation journaled

    listed = run([sys.executable, "-m", "ciq_build", "list", "-S", str(project)], 60, cwd=project.parent)
    assert listed.ok, listed.output_tail()
    rows = listed.stdout.splitlines()[1:]
    assert [row.split()[0] for row in rows] == ["kern", "twice"], rows
    assert all(row.endswith(str(project / "ciq" / f"{row.split()[0]}.json")) for row in rows), rows
    shown = run([sys.executable, "-m", "ciq_build", "show", "twice", "-S", str(project)], 60, cwd=project.parent)
    assert shown.ok and "CIQ_TILE" in shown.stdout, shown.output_tail()

    # verify builds as the user does (setup.py build_ext) and checks the options file and objects it wrote.
    for target in ("kern", "twice"):
        verified = run([sys.executable, "-m", "ciq_build", "verify", target, "-S", str(project)], TIMEOUT,
                       cwd=project.parent)
        assert verified.ok, verified.output_tail(60)
        assert "1 object(s)" in verified.stdout and "ok: the pinned controls are applied" in verified.stdout
    options = list((project / "build").glob("temp*/kern.nvcc-options"))
    assert len(options) == 1 and options[0].read_text().splitlines() == ["-DCIQ_TILE=8"]

    # The plain build applies the pin: the module verify's plain build (setup.py build_ext, as above) made was
    # compiled with the winner's tile. (Imported from its build_lib: a `build_ext --inplace` more compiled both
    # extensions again, ~5 s of CPU, through the same build_ext and options file.)
    [built_lib] = {p.parent.parent for p in (project / "build").glob("lib*/pkg/_kern*.so")}
    module = run([sys.executable, "-c", "import os, pkg._kern as k; print(os.path.abspath(k.__file__)); print(k.tile())"],
                 60, cwd=built_lib)
    assert module.ok and module.stdout.splitlines() == [str(next(built_lib.glob("pkg/_kern*.so"))), "8"], \
        module.output_tail()

    # A build that skips the pin (CIQ_DISABLE=1) is caught, and said as such, not as a mismatch of the code.
    skipped = run([sys.executable, "-m", "ciq_build", "verify", "kern", "-S", str(project)], TIMEOUT,
                  cwd=project.parent, env={**os.environ, "CIQ_DISABLE": "1"})
    assert not skipped.ok and "FAILED" in skipped.stdout, skipped.output_tail(60)
    assert "this build applies no pin: pins disabled (CIQ_DISABLE); unset CIQ_DISABLE to apply it" in skipped.stdout


def test_a_runtime_objective_without_ciq_benchmark_says_what_to_add(project: Path) -> None:
    setup_py = project / "setup.py"
    setup_py.write_text(setup_py.read_text().replace('ciq_benchmark=[sys.executable, "bench.py"],', ""))
    options = TuneOptions(target="kern", build_dir=project / "build", objectives=["time"])
    with pytest.raises(ConfigError, match=r'CudaExtension\(ciq_target="kern"\) gives none: add ciq_benchmark='):
        run_tune(options, SetuptoolsBackend(project))
    assert not (project / "build").exists()  # refused before anything was built


def test_the_benchmark_program_is_found_on_path_or_in_the_project(project: Path) -> None:
    toolchain = find_toolchain(Path(os.environ["CIQ_NVCC"]))
    ext = load_extension(project, "kern")
    ext.ciq_benchmark = ("sh", "-c", "true")
    assert extension_manifest(project, ext, toolchain).benchmark.path == Path(shutil.which("sh") or "")
    ext.ciq_benchmark = ("tools/bench", "--quick")
    manifest = extension_manifest(project, ext, toolchain)
    assert manifest.benchmark is not None and manifest.benchmark.path == project / "tools" / "bench"
    assert_valid_manifest(manifest_document(manifest))  # the setuptools writer's manifest passes the schema
    # Its own nvcc flags, as a tune reads a CMake target's (the numerics knobs they set are left out).
    ext.nvcc_flags = ("-O3", "--use_fast_math")
    assert extension_manifest(project, ext, toolchain).cuda_flags == ("-O3", "--use_fast_math")
    ext.ciq_dynamic_shared_memory = ("65536",)  # what the occupancy adds a block, as CMake's manifest carries it
    assert extension_manifest(project, ext, toolchain).dynamic_shared_memory == ("65536",)
    ext.ciq_benchmark = ("no-such-benchmark-program",)
    with pytest.raises(ConfigError, match="'no-such-benchmark-program', which is not on PATH"):
        extension_manifest(project, ext, toolchain)


def test_the_source_fingerprint_covers_setup_py_and_the_benchmark(project: Path) -> None:
    toolchain = find_toolchain(Path(os.environ["CIQ_NVCC"]))
    backend = SetuptoolsBackend(project)
    sources = backend.source_set(extension_manifest(project, load_extension(project, "kern"), toolchain))
    files = sources.candidates()
    assert {project / "setup.py", project / "bench.py", project / "pkg" / "kern.cu"} <= files
    before = sources.digest()
    (project / "bench.py").write_text((project / "bench.py").read_text() + "# measured differently\n")
    edited = sources.digest()
    assert edited != before  # journaled measurements of the old benchmark are not reused
    # A Cython source counts; the C++ a plain build makes of it beside it (npcuda-example's wrapper.cpp) does not.
    (project / "pkg" / "wrap.pyx").write_text("def tile():\n    return 8\n")
    (project / "pkg" / "wrap.pxd").write_text("")
    with_pyx = sources.digest()
    assert with_pyx != edited and {project / "pkg" / "wrap.pyx", project / "pkg" / "wrap.pxd"} <= sources.candidates()
    (project / "pkg" / "wrap.cpp").write_text("/* Generated by Cython */\n")
    assert sources.digest() == with_pyx and project / "pkg" / "wrap.cpp" not in sources.candidates()
    (project / "pkg" / "mod.c").write_text("/* a C source of the user's own, no .pyx beside it */\n")
    assert sources.digest() != with_pyx


# A TEST DOUBLE for a GPU benchmark with two problem sizes: its "time" is computed on the host from the tile
# the built module reports and the size it is given. The defaults (tile 64) take 1.0 ms on both sizes; tile 8
# wins on the small size and loses on the large one (0.5 and 1.2 ms: geometric mean of the ratios 0.775,
# worst 1.2); tile 128 does not compile.
SIZED_BENCH = '''\
import importlib
import sys

tile = importlib.import_module("pkg._kern").tile()
small = sys.argv[1:] == ["--size", "small"]
print(f"CIQ_METRIC time_ms={(0.5 if small else 1.2) if tile == 8 else 1.0:.6f}")
print(f"CIQ_METRIC tile={tile}")
'''


def _sized(project: Path, score: str) -> None:
    """setup.py's extension with SIZED_BENCH's two sizes, scored by `score`."""
    (project / "bench_sizes.py").write_text(SIZED_BENCH)
    setup = (project / "setup.py").read_text()
    sized = (f'ciq_benchmark=[sys.executable, "bench_sizes.py"], ciq_score="{score}",\n'
             '            ciq_benchmark_args_sets={"small": ["--size", "small"], "large": ["--size", "large"]},')
    (project / "setup.py").write_text(setup.replace('ciq_benchmark=[sys.executable, "bench.py"],', sized))


def test_a_runtime_tune_benchmarks_each_candidates_module_and_scores_ciq_benchmark_args_sets_together(
        project: Path) -> None:
    # One tune, by the geometric mean; each SCORE's rule is tested where it is decided (tests/measure/test_sizes.py),
    # and what reaches it from setup.py below (a second tune, by the worst ratio, cost ~8 s of CPU). The same tune
    # shows that each candidate's benchmark imports that candidate's module (a tune of its own for it, of
    # metric:tile with bench.py, cost ~15 s of CPU more; a metric: objective is read as any other, tests/core).
    _sized(project, "geomean")
    options = TuneOptions(target="kern", build_dir=project / "build", objectives=["time"], controls=["params"],
                          generations=1, pool_size=3, seed=2, repeats=1, pin=False, quiet=True)
    outcome = run_tune(options, SetuptoolsBackend(project))
    assert outcome.ok and outcome.winner is not None
    # tile is what the module the benchmark imported was compiled with: the worker's lib/, not an installed copy.
    assert outcome.baseline.metrics["tile@small"] == outcome.baseline.metrics["tile@large"] == 64
    assert outcome.winner.metrics["tile@small"] == outcome.winner.metrics["tile@large"] == 8
    assert outcome.winner.runs >= 1
    assert not (project / "ciq").exists()  # --no-pin
    assert outcome.baseline.metrics["time_ms@small"] == outcome.baseline.metrics["time_ms@large"] == 1.0
    assert outcome.winner.controls.defines == (("CIQ_TILE", "8"),), outcome.winner
    # each size's figure is kept, and the score is the geometric mean of the ratios
    assert (outcome.winner.metrics["time_ms@small"], outcome.winner.metrics["time_ms@large"]) == (0.5, 1.2)
    assert outcome.winner.scores == pytest.approx([(0.5 * 1.2) ** 0.5])


def test_ciq_score_and_the_args_sets_reach_each_candidates_benchmark(project: Path) -> None:
    _sized(project, "worst")
    tree = _worker_tree(project)
    spec = tree.bench_spec(60, ())
    assert spec.score == "worst"
    assert [(size, args[-2:]) for size, args in spec.args_sets] == [("small", ("--size", "small")),
                                                                    ("large", ("--size", "large"))]


def test_a_benchmark_printing_its_own_format_is_read_through_ciq_metric_and_ciq_unit(project: Path) -> None:
    # CMake's METRIC and UNIT, which a CudaExtension lacked (py-faster-rcnn's trial): ciq_metric= was dropped by
    # setuptools with a warning, and a benchmark printing "nms: 2.5 TFLOPS" could not be tuned for time.
    (project / "own_format.py").write_text('print("nms: 2.5 TFLOPS")\n')
    setup = (project / "setup.py").read_text()
    (project / "setup.py").write_text(setup.replace(
        'ciq_benchmark=[sys.executable, "bench.py"],',
        'ciq_benchmark=[sys.executable, "own_format.py"], ciq_metric=r"nms: ([0-9.]+) TFLOPS", ciq_unit="TFLOPS",'))
    tree = _worker_tree(project)
    assert (tree.manifest.metric_regex, tree.manifest.metric_unit) == (r"nms: ([0-9.]+) TFLOPS", "TFLOPS")
    measured = run_once(tree.bench_spec(60, ("time_ms",)))
    assert measured.ok and measured.metrics["time_ms"] == pytest.approx(1000 / 2.5), measured.message
    with pytest.raises(ConfigError, match=r"CudaExtension\('m'\): the ciq_metric regex 'took [^']*' has no group"):
        CudaExtension("m", ["k.cu"], ciq_target="k", ciq_benchmark=["b"], ciq_metric=r"took [0-9.]+ ms")
    with pytest.raises(ConfigError, match=r"ciq_metric reads the benchmark's output; add ciq_benchmark"):
        CudaExtension("m", ["k.cu"], ciq_target="k", ciq_metric=r"took ([0-9.]+) ms")
    with pytest.raises(ConfigError, match=r"ciq_unit 'hours' is neither a time nor a rate"):
        CudaExtension("m", ["k.cu"], ciq_target="k", ciq_unit="hours")
    # the user's own text is quoted as written, though it holds the words METRIC and UNIT
    with pytest.raises(ConfigError, match=r"the ciq_metric regex 'UNIT: [^']*' has no group; .*\(in ciq_unit, default"):
        CudaExtension("m", ["k.cu"], ciq_target="k", ciq_benchmark=["b"], ciq_metric=r"UNIT: [0-9.]+ ms")
    with pytest.raises(ConfigError, match=r"ciq_unit 'METRIC/h' is neither a time nor a rate"):
        CudaExtension("m", ["k.cu"], ciq_target="k", ciq_benchmark=["b"], ciq_metric="t ([0-9]+)", ciq_unit="METRIC/h")


def test_ciq_unit_without_ciq_metric_is_refused_as_configure_refuses_unit_without_metric() -> None:
    # Taken alone, ciq_unit="TFLOPS" made the benchmark's CIQ_METRIC time_ms lines a whole run's milliseconds, not
    # the rate's: every candidate read as printing no time. CMake's UNIT without METRIC stops configure.
    for unit in ("TFLOPS", "ms"):
        with pytest.raises(ConfigError, match=r"CudaExtension\('m'\): ciq_unit is the unit of ciq_metric's number; "
                                              r"give ciq_metric=r'<regex>' too, or leave ciq_unit out"):
            CudaExtension("m", ["k.cu"], ciq_target="k", ciq_benchmark=["b"], ciq_unit=unit)
    assert CudaExtension("m", ["k.cu"], ciq_target="k", ciq_benchmark=["b"]).ciq_unit == "ms"


def _blocks(project: Path, declared: str) -> None:
    """The example's kernel launched in blocks of CIQ_BLOCK threads (the source's default 768), a params entry
    for it, and setup.py's declaration of the block size, `declared` (ciq_threads_per_block=...)."""
    kern = project / "pkg" / "kern.cu"
    kern.write_text(kern.read_text().replace("int threads = 128;", "int threads = CIQ_BLOCK;")
                    .replace('#include "kern.h"\n', '#include "kern.h"\n\n#ifndef CIQ_BLOCK\n#define CIQ_BLOCK 768\n#endif\n'))
    setup_py = project / "setup.py"
    setup_py.write_text(setup_py.read_text().replace('params=["CIQ_TILE=choice(8,64,128)"],',
                                                     f'params=["CIQ_BLOCK=choice(128,768)"], {declared},'))


@pytest.mark.slow
def test_occupancy_of_a_cuda_extension_is_at_the_block_size_ciq_threads_per_block_declares(project: Path) -> None:
    # The kernel has no __launch_bounds__: its block size is the host code's launch, which only the
    # declaration tells. 32 registers a thread on sm_90a: blocks of 768 leave 2 an SM (48 of 64 warps, 75%),
    # blocks of 128 fill it (100%).
    _blocks(project, 'ciq_threads_per_block="CIQ_BLOCK"')  # the defaults' 768: the source's own #define
    options = TuneOptions(target="kern", build_dir=project / "build", objectives=["occupancy"], controls=["params"],
                          generations=1, pool_size=2, seed=1, quiet=True)
    outcome = run_tune(options, SetuptoolsBackend(project))
    assert outcome.ok and outcome.winner is not None, outcome
    assert outcome.baseline.scores == (75.0,) and outcome.winner.scores == (100.0,)
    assert outcome.winner.controls.defines == (("CIQ_BLOCK", "128"),)
    # pinned where the next plain build applies it: the -D changes only the launch, which the minimal pin keeps
    assert json.loads((project / "ciq" / "kern.json").read_text())["controls"]["defines"] == {"CIQ_BLOCK": "128"}


def test_an_occupancy_tune_says_what_to_add_to_the_cuda_extension(project: Path) -> None:
    # A name whose defaults' value nothing gives: refused before anything is built, in setup.py's spelling.
    _blocks(project, 'ciq_threads_per_block="CIQ_BLOCK"')
    kern = project / "pkg" / "kern.cu"
    kern.write_text(kern.read_text().replace("#define CIQ_BLOCK 768", "#define CIQ_BLOCK BLOCK_OF_THE_BUILD"))
    options = TuneOptions(target="kern", build_dir=project / "build", objectives=["occupancy"])
    with pytest.raises(ConfigError, match=re.escape('give the defaults\' threads a block after it '
                                                    '(ciq_threads_per_block=("CIQ_BLOCK", <threads>))')):
        run_tune(options, SetuptoolsBackend(project))
    assert not list((project / "build").rglob("*.o"))  # before the baseline's build
    # Nothing declared: the evaluation that has no block size says what to add, as CudaExtension's argument.
    said = unknown_block_size(None, Controls(), setuptools=True)
    assert "add ciq_threads_per_block to it (ciq_threads_per_block=256, " in said


def test_tune_target_tunes_a_setuptools_project_named_as_the_command_line_names_it(project: Path) -> None:
    """`tune_target(source_dir=<project>)` is `tune kern -S <project>`: npcuda-example's trial ran cmake on its
    setup.py project ("does not appear to contain CMakeLists.txt"), and `build_dir=<project>/build` was "not a
    configured CMake build tree"."""
    from ciq_build import tune_target

    outcome = tune_target("kern", source_dir=project, controls=["params"], max_evaluations=2, pin=False, quiet=True)
    assert outcome.ok and outcome.pinned is None and (project / "build" / "ciq" / "journal" / "kern.jsonl").is_file()
    assert outcome.winner is not None and outcome.winner.metrics["registers"] < outcome.baseline.metrics["registers"]
    again = tune_target("kern", build_dir=project / "build", controls=["params"], max_evaluations=2, pin=False,
                        quiet=True)
    assert again.ok and len(again.evaluations) == len(outcome.evaluations)  # the same journal, resumed
    with pytest.raises(ConfigError, match="backend= or setuptools=, not both"):
        tune_target("kern", setuptools=project, backend=SetuptoolsBackend(project))


def test_a_static_winner_never_run_names_ciq_benchmark_and_params_not_cmakes_keywords(project: Path) -> None:
    """npcuda-example's trial: "gpuadder has no BENCHMARK; its PARAMS (-DGPUADDER_UNROLL=1) ... (a BENCHMARK that
    prints CIQ_CHECK ...)", of a CudaExtension, which declares ciq_benchmark= and params=."""
    from types import SimpleNamespace
    from typing import cast

    from ciq_build.tune.winner_check import unchecked

    ext = load_extension(project, "kern")
    ext.ciq_benchmark = None
    manifest = extension_manifest(project, ext, find_toolchain(Path(os.environ["CIQ_NVCC"])))
    check = unchecked(cast(BuildRunner, SimpleNamespace(manifest=manifest, needs_benchmark=False)),
                      Controls(defines=(("CIQ_TILE", "8"),)))
    assert check is not None and check.text.startswith("not run: kern has no ciq_benchmark=; its params= "
                                                       "(-DCIQ_TILE=8) were judged"), check
    assert "BENCHMARK" not in check.text and "PARAMS" not in check.text
