"""ciq_build.setuptools_ext with real setuptools, nvcc 13.3 and gcc.

Each build test copies tests/projects/setuptools_ext (setup.py, a .cu kernel
library and a C++ Python module calling it) into a directory whose path has a
space, runs ``python setup.py build_ext --inplace`` there and imports the
module in a fresh interpreter. There is no GPU here, so the kernel is never
launched: the module's ``tile()`` returns CIQ_TILE as the .cu compile saw it
(default 16), which proves whether a pinned ``-D`` reached nvcc.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ciq_build.core.objectives import unknown_objective
from ciq_build.errors import ConfigError
from ciq_build.measure.proc import ProcResult, run
from ciq_build.project.cuda_extension import gencode_flag
from ciq_build.setuptools_ext import CudaExtension
from support import PROJECTS

PROJECT = PROJECTS / "setuptools_ext"
DEFAULT_TILE = 16
BUILD_TIMEOUT = 300


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    dest = tmp_path / "my project"
    shutil.copytree(PROJECT, dest, ignore=shutil.ignore_patterns("build", "*.so", "__pycache__"))
    return dest


def build(project: Path, nvcc_bin: Path, **env: str) -> ProcResult:
    environ = {k: v for k, v in os.environ.items() if k not in ("CIQ_DISABLE", "CIQ_STRICT", "CUDACXX", "CUDAHOSTCXX")}
    environ["CIQ_NVCC"] = str(nvcc_bin / "nvcc")
    environ.update(env)
    result = run([sys.executable, "setup.py", "build_ext", "--inplace"], BUILD_TIMEOUT, cwd=project, env=environ)
    assert not result.timed_out, result.output_tail()
    return result


def built_ok(result: ProcResult) -> str:
    assert result.ok, f"build {result.describe()}:\n{result.output_tail(60)}"
    return result.stderr


def module_call(project: Path, expression: str) -> str:
    result = run([sys.executable, "-c", f"import pkg._kern as k; print({expression})"], 60, cwd=project)
    assert result.ok, result.output_tail()
    return result.stdout.strip()


def extension_files(project: Path) -> list[Path]:
    return sorted((project / "pkg").glob("_kern*.so"))


def write_pin(project: Path, *, flags: list[str], defines: dict[str, str], cuda: str = "13.3",
              acf: bytes | None = None, acf_compiler: str = "ptxas", architectures: tuple[str, ...] = ("90a",),
              ) -> Path:
    """A hand-written record, as a user commits it (docs/ARCHITECTURE.md schema 1)."""
    pin_dir = project / "ciq"
    pin_dir.mkdir(exist_ok=True)
    controls: dict[str, object] = {"flags": flags, "defines": defines}
    if acf is not None:
        (pin_dir / "kern.acf").write_bytes(acf)
        controls["acf"] = {"file": "kern.acf", "sha256": hashlib.sha256(acf).hexdigest(), "compiler": acf_compiler}
    record = {
        "schema": 1,
        "target": "kern",
        "controls": controls,
        "toolchain": {"cuda": cuda, "architectures": list(architectures)},
    }
    path = pin_dir / "kern.json"
    path.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return path


def options_file(project: Path) -> Path:
    found = list((project / "build").glob("temp.*/kern.nvcc-options"))
    assert len(found) == 1, found
    return found[0]


# ---------------------------------------------------------------- builds


@pytest.mark.slow
def test_unpinned_build_links_static_cudart_and_imports(project: Path, cuda133_bin: Path) -> None:
    said = built_ok(build(project, cuda133_bin))
    assert "kern: no pinned controls" in said
    assert module_call(project, "k.tile()") == str(DEFAULT_TILE)
    # The CUDA runtime really is linked in and callable: with no driver it reports an error code, not a crash.
    err, count = map(int, module_call(project, "' '.join(map(str, k.device_count()))").split())
    assert (err == 0 and count > 0) or (err in (35, 100) and count == 0)  # insufficient driver / no device
    assert options_file(project).read_text() == ""
    # Static cudart: the module must not need a libcudart.so (the pip toolkit ships only .so.13).
    (so,) = extension_files(project)
    readelf = shutil.which("readelf")
    if readelf is not None:
        needed = run([readelf, "-d", so], 60)
        assert needed.ok and "libstdc++" in needed.stdout and "libcudart" not in needed.stdout


@pytest.mark.slow
def test_a_toolkit_library_in_libraries_links_though_the_toolkit_has_only_its_soname(
        project: Path, cuda133_bin: Path, tmp_path: Path) -> None:
    # A toolkit as pip lays out cuBLAS's: site-packages/nvidia/cu13/lib holds libnvvm.so.4 and no libnvvm.so. The
    # original setup.py of a project linking cuBLAS with nvcc (libraries=["cublas"]) relied on nvcc passing the
    # toolkit's lib/; the host compiler's link knows no toolkit, and -lcublas finds no soname. Both failed the link.
    site = tmp_path / "site-packages"
    toolkit, real = site / "nvidia" / "cu13", cuda133_bin.parent
    (toolkit / "lib").mkdir(parents=True)
    for entry in real.iterdir():
        if entry.name != "lib":
            (toolkit / entry.name).symlink_to(entry)
    for library in ("libcudart_static.a", "libnvvm.so.4"):
        (toolkit / "lib" / library).symlink_to((real / "lib" / library).resolve())
    built_ok(build(project, toolkit / "bin", KERN_LIBRARIES="nvvm", KERN_CUDA_ONLY="1"))
    (so,) = extension_files(project)
    # Installed by pip, the module finds the library where pip installs the toolkit's package beside it (the
    # isolated build's toolkit is gone by then): its run path names that folder from the module's own.
    installed = site / "pkg" / so.name
    installed.parent.mkdir()
    shutil.copy(so, installed)
    readelf = shutil.which("readelf")
    if readelf is not None:
        dynamic = run([readelf, "-d", str(installed)], 60)
        assert dynamic.ok and re.search(r"runpath: \[(.*:)?\$ORIGIN/\.\./nvidia/cu13/lib[]:]", dynamic.stdout), dynamic.stdout
    loaded = run([sys.executable, "-c", f"import ctypes; print(ctypes.CDLL({str(installed)!r}).kern_tile())"], 60,
                 env={k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"})
    assert loaded.ok and loaded.stdout.strip() == str(DEFAULT_TILE), loaded.output_tail()


@pytest.mark.slow
def test_an_extension_of_cu_files_alone_links_the_cpp_runtime_and_loads(project: Path, cuda133_bin: Path) -> None:
    # cudamat's libraries: .cu files only, loaded with ctypes. With no C++ source setuptools links with the C
    # compiler's driver, and the nvcc objects' C++ (__gxx_personality_v0) was left undefined until loaded.
    built_ok(build(project, cuda133_bin, KERN_CUDA_ONLY="1"))
    (so,) = extension_files(project)
    loaded = run([sys.executable, "-c", f"import ctypes; print(ctypes.CDLL({str(so)!r}).kern_tile())"], 60)
    assert loaded.ok and loaded.stdout.strip() == str(DEFAULT_TILE), loaded.output_tail()


@pytest.mark.slow
def test_the_host_part_can_be_remade_as_cythons_build_ext_remakes_an_extension_with_a_pyx_source(
        project: Path, cuda133_bin: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # py-faster-rcnn's gpu_nms: nms_kernel.cu beside gpu_nms.pyx. With Cython installed, setuptools' build_ext is
    # Cython's, which cythonizes the .pyx by making a new extension of the given one's class from the distutils
    # arguments alone (Cython.Build.Dependencies.default_create_extension); the host part was a CudaExtension, and
    # `python setup.py build_ext` failed: "CudaExtension.__init__() missing ... 'ciq_target'".
    from setuptools import Distribution

    from ciq_build.setuptools_ext import build_ext

    monkeypatch.chdir(project)
    monkeypatch.setenv("CIQ_NVCC", str(cuda133_bin / "nvcc"))
    ext = CudaExtension("pkg._kern", ["pkg/kern.cu", "pkg/mod.pyx"], ciq_target="kern", include_dirs=["pkg"],
                        language="c++", cuda_architectures=["90a"])
    command = build_ext(Distribution({"ext_modules": [ext]}))
    command.ensure_finalized()
    host = command.build_cuda_objects(ext)
    remade = type(host)(name=host.name, sources=["pkg/mod.cpp"], include_dirs=host.include_dirs,
                        extra_objects=host.extra_objects, language=host.language)
    assert remade.sources == ["pkg/mod.cpp"] and remade.language == "c++"
    assert host.sources == ["pkg/mod.pyx"] and any(o.endswith("kern.cu.o") for o in host.extra_objects)


@pytest.mark.slow
def test_pin_reaches_only_the_cuda_compile_and_changes_rebuild(project: Path, cuda133_bin: Path) -> None:
    built_ok(build(project, cuda133_bin))
    assert module_call(project, "k.tile()") == str(DEFAULT_TILE)

    record = write_pin(project, flags=["-maxrregcount=32"], defines={"CIQ_TILE": "64"})
    result = build(project, cuda133_bin)
    said = built_ok(result)
    assert f"kern: pinned controls from {record}: -maxrregcount=32 -DCIQ_TILE=64" in said
    assert "nvcc pkg/kern.cu" in said  # the new pin recompiled the kernel...
    assert module_call(project, "k.tile()") == "64"  # ...and relinked the module
    assert options_file(project).read_text() == "-maxrregcount=32\n-DCIQ_TILE=64\n"
    host_compile = [line for line in result.stdout.splitlines() if "mod.cpp" in line]
    assert host_compile and not any("options-file" in line or "CIQ_TILE" in line for line in host_compile)

    # Nothing changed: no nvcc run, same module.
    said = built_ok(build(project, cuda133_bin))
    assert "nvcc pkg/kern.cu" not in said

    said = built_ok(build(project, cuda133_bin, CIQ_DISABLE="1"))
    assert "kern: pins disabled" in said
    assert module_call(project, "k.tile()") == str(DEFAULT_TILE)
    assert options_file(project).read_text() == ""


@pytest.mark.slow
@pytest.mark.parametrize(
    ("flag", "message"),
    [
        ("-Xcompiler=-fplugin=x", "allow-list"),
        ("--use_fast_math", "allow_numerics=True"),
    ],
)
def test_refused_flag_fails_the_build(project: Path, cuda133_bin: Path, flag: str, message: str) -> None:
    record = write_pin(project, flags=[flag], defines={"CIQ_TILE": "64"})
    result = build(project, cuda133_bin)
    assert not result.ok
    said = " ".join(result.stderr.split())
    assert f"error: pkg._kern: pinned record {record}" in said
    assert message in said and flag in said
    assert extension_files(project) == []


@pytest.mark.slow
def test_toolkit_mismatch_warns_and_skips_the_pin(project: Path, cuda133_bin: Path) -> None:
    write_pin(project, flags=["-maxrregcount=32"], defines={"CIQ_TILE": "64"}, cuda="12.4")
    said = built_ok(build(project, cuda133_bin))
    assert "warning: the pinned record for 'kern' was tuned with CUDA 12.4, but the compiler is CUDA 13.3" in said
    assert "kern: pin skipped" in said
    assert module_call(project, "k.tile()") == str(DEFAULT_TILE)
    assert options_file(project).read_text() == ""


@pytest.mark.slow
def test_a_pin_tuned_for_other_architectures_is_skipped_or_fails_when_strict(project: Path, cuda133_bin: Path,
                                                                             ) -> None:
    write_pin(project, flags=["-maxrregcount=32"], defines={"CIQ_TILE": "64"}, architectures=("75",))
    said = built_ok(build(project, cuda133_bin))  # setup.py builds for 90a
    assert "warning: the pinned record for 'kern' was tuned for 75, but this build compiles for 90a" in said
    assert "kern: pin skipped (tuned for 75, compiling for 90a)" in said
    assert module_call(project, "k.tile()") == str(DEFAULT_TILE)
    assert options_file(project).read_text() == ""

    result = build(project, cuda133_bin, CIQ_STRICT="1")
    assert not result.ok and "tuned for 75, but this build compiles for 90a" in result.stderr


@pytest.mark.slow
def test_strict_toolkit_mismatch_fails(project: Path, cuda133_bin: Path) -> None:
    write_pin(project, flags=["-maxrregcount=32"], defines={"CIQ_TILE": "64"}, cuda="12.4")
    result = build(project, cuda133_bin, CIQ_STRICT="1")
    assert not result.ok
    assert "tuned with CUDA 12.4, but the compiler is CUDA 13.3" in result.stderr
    assert extension_files(project) == []


@pytest.mark.slow
def test_nvcc_acf_refused_below_sm100(project: Path, cuda133_bin: Path) -> None:
    # Refused before nvcc runs, so the ACF's bytes never reach a compiler.
    write_pin(project, flags=[], defines={}, acf=b"not read", acf_compiler="nvcc")
    result = build(project, cuda133_bin)
    assert not result.ok
    assert "sm_100" in result.stderr and "90a" in result.stderr
    assert extension_files(project) == []


@pytest.mark.slow
def test_changed_acf_fails_instead_of_building_with_another(project: Path, cuda133_bin: Path) -> None:
    write_pin(project, flags=[], defines={}, acf=b"measured acf")
    (project / "ciq" / "kern.acf").write_bytes(b"replaced acf")
    result = build(project, cuda133_bin)
    assert not result.ok
    assert "was changed or replaced after it was pinned" in result.stderr
    assert extension_files(project) == []


# ---------------------------------------------------------------- setup.py mistakes


def test_cuda_extension_refuses_what_would_fail_mid_build() -> None:
    with pytest.raises(ConfigError, match="ciq_target"):
        CudaExtension("m", ["k.cu"], ciq_target="../k")
    with pytest.raises(ConfigError, match="not a CUDA architecture"):
        CudaExtension("m", ["k.cu"], ciq_target="k", cuda_architectures=["hopper"])
    with pytest.raises(ConfigError, match="no .cu source"):
        CudaExtension("m", ["k.cpp"], ciq_target="k")
    ext = CudaExtension("m", ["k.cu"], ciq_target="k", cuda_architectures="90a;100a-real")
    assert ext.cuda_architectures == ("90a", "100a-real")


def test_an_argument_cuda_extension_does_not_take_is_refused_by_name_not_dropped() -> None:
    # py-faster-rcnn's trial: ciq_objective= (singular) drew only setuptools' "Unknown Extension options" warning, in
    # a plain build, and nothing at all from `list`/`tune`, which tuned the default objective instead.
    with pytest.raises(ConfigError, match=r"CudaExtension\('m'\): ciq_objective= is not an argument of CudaExtension "
                                          r"\(did you mean ciq_objectives\?\).*ciq_benchmark, "):
        CudaExtension("m", ["k.cu"], ciq_target="k", ciq_objective=["registers"])
    with pytest.raises(ConfigError, match=r"include_dir= .*did you mean include_dirs\?"):
        CudaExtension("m", ["k.cu"], ciq_target="k", include_dir=["inc"])
    # setuptools' own arguments, those of its base (distutils) and its py_limited_api, are taken as before
    ext = CudaExtension("m", ["k.cu"], ciq_target="k", optional=True, py_limited_api=False, swig_opts=[], language="c++")
    assert ext.optional and ext.language == "c++"


def test_a_cuda_extension_remade_without_ciq_target_says_what_remade_it() -> None:
    # cythonize([CudaExtension(...)]) in setup.py: Cython remakes each extension from its setuptools arguments alone,
    # and Python said "missing 1 required keyword-only argument: 'ciq_target'" of a setup.py that gave it.
    with pytest.raises(ConfigError, match=r"CudaExtension\('nms.gpu_nms'\) needs ciq_target=.*cythonize\(\).*list "
                                          r"the \.pyx in the CudaExtension's sources and leave it out of cythonize\(\)"):
        CudaExtension(name="nms.gpu_nms", sources=["nms/nms_kernel.cu", "nms/gpu_nms.cpp"], language="c++")


def test_extra_compile_args_reach_nvcc_only_as_a_dicts_nvcc_list() -> None:
    # cudamat's setup.py gave nvcc's flags as extra_compile_args (its own build_ext ran nvcc for every source):
    # moved to a CudaExtension of .cu files alone they reached no compile, without a word.
    with pytest.raises(ConfigError, match=r"CudaExtension\('m'\): extra_compile_args reach the host compiler only, and "
                                          r"its sources are \.cu files alone: give nvcc's arguments as nvcc_flags"):
        CudaExtension("m", ["k.cu"], ciq_target="k", extra_compile_args=["-O3"])
    # PyTorch's CUDAExtension's form: nvcc's list after nvcc_flags, the host's ("cxx" or "gcc") the host compiles'.
    ext = CudaExtension("m", ["k.cu", "m.cpp"], ciq_target="k", nvcc_flags=["-lineinfo"],
                        extra_compile_args={"cxx": ["-O2"], "nvcc": ["-O3", "--use_fast_math"]})
    assert ext.nvcc_flags == ("-lineinfo", "-O3", "--use_fast_math") and ext.extra_compile_args == ["-O2"]
    assert CudaExtension("m", ["k.cu", "m.cpp"], ciq_target="k", extra_compile_args=["-O2"]).nvcc_flags == ()
    with pytest.raises(ConfigError, match=r"extra_compile_args has 'nvc': its keys are 'nvcc'"):
        CudaExtension("m", ["k.cu"], ciq_target="k", extra_compile_args={"nvc": ["-O3"]})
    with pytest.raises(ConfigError, match=r"extra_compile_args\['nvcc'\] is a list of arguments, not the string"):
        CudaExtension("m", ["k.cu"], ciq_target="k", extra_compile_args={"nvcc": "-O3"})


def test_architectures_follow_cmake_spelling() -> None:
    assert gencode_flag("90a") == "-gencode=arch=compute_90a,code=[compute_90a,sm_90a]"
    assert gencode_flag("100a-real") == "-gencode=arch=compute_100a,code=sm_100a"
    assert gencode_flag("sm_80-virtual") == "-gencode=arch=compute_80,code=compute_80"


def _cubins(project: Path, cuda133_bin: Path, into: Path) -> dict[str, bytes]:
    (obj,) = (project / "build").glob("temp.*/**/kern.cu.o")
    into.mkdir()
    assert run([str(cuda133_bin / "cuobjdump"), "-xelf", "all", str(obj)], 60, cwd=into).ok
    return {f.name.rsplit(".", 2)[-2]: f.read_bytes() for f in into.glob("*.cubin")}


@pytest.mark.slow
def test_a_per_architecture_pin_gives_each_architecture_its_own_controls(project: Path, cuda133_bin: Path,
                                                                          tmp_path: Path) -> None:
    two = {"KERN_ARCHITECTURES": "80-real;90a-real"}
    write_pin(project, flags=[], defines={"CIQ_TILE": "64"}, architectures=("80", "90a"))
    built_ok(build(project, cuda133_bin, **two))
    plain = _cubins(project, cuda133_bin, tmp_path / "plain")
    record = json.loads((project / "ciq" / "kern.json").read_text())
    record["per_architecture"] = {"80": {"controls": {"flags": ["-Xptxas=-O0"], "defines": {"CIQ_TILE": "64"}}}}
    (project / "ciq" / "kern.json").write_text(json.dumps(record))
    said = built_ok(build(project, cuda133_bin, **two))
    assert "pinned controls per architecture" in said and "sm_80: -Xptxas=-O0" in said, said
    assert module_call(project, "k.tile()") == "64"  # the shared -D reached the compile
    assert options_file(project).read_text() == "-DCIQ_TILE=64\n"
    assert options_file(project).with_name("kern.sm_80.nvcc-options").read_text() == "-Xptxas=-O0\n"
    per_arch = _cubins(project, cuda133_bin, tmp_path / "per-arch")
    # sm_80 got its entry's -O0; sm_90a, which has no entry, the record's controls, as in the plain build.
    assert per_arch["sm_80"] != plain["sm_80"] and per_arch["sm_90a"] == plain["sm_90a"]
    # Different -D per architecture cannot be applied (the host compile is shared): refused, saying why.
    record["per_architecture"]["80"]["controls"]["defines"] = {"CIQ_TILE": "32"}
    (project / "ciq" / "kern.json").write_text(json.dumps(record))
    refused = build(project, cuda133_bin, **two)
    assert not refused.ok and "reaches the host compile" in refused.output_tail(60)


def test_cuda_extension_refuses_bad_params_objectives_and_constraints_when_setup_py_is_read() -> None:
    # The setuptools counterpart of configure's checks (issue 22 items 4 and 7): not first at tune.
    with pytest.raises(ConfigError, match=r"CudaExtension\('m'\): PARAMS entry 'T=chioce\(1,2\)'.*did you mean choice"):
        CudaExtension("m", ["k.cu"], ciq_target="k", params=["T=chioce(1,2)"])
    with pytest.raises(ConfigError, match=r"CudaExtension\('m'\): 'regsters' is not an objective \(did you mean registers"):
        CudaExtension("m", ["k.cu"], ciq_target="k", ciq_objectives=["regsters"])
    with pytest.raises(ConfigError, match=r"CudaExtension\('m'\): CONSTRAINTS 'T\*U <= 8'.*'U' is not one of the PARAMS.*"
                                          r"fix it \(ciq_constraints= in its CudaExtension\)"):
        CudaExtension("m", ["k.cu"], ciq_target="k", params=["T=1,2,4"], ciq_constraints=["T*U <= 8"])
    ext = CudaExtension("m", ["k.cu"], ciq_target="k", params=["T=1,2,4", "U=range(1,8)"], ciq_constraints=["T*U <= 8"])
    assert ext.ciq_constraints == ("T*U <= 8",)


@pytest.mark.slow
def test_a_misspelt_objective_in_setup_py_is_refused_by_each_command_in_one_line(tmp_path: Path) -> None:
    # What `python -m ciq_build ... --setuptools` says when it reads such a setup.py: the configure check's
    # "did you mean", one line, exit 2 (a ConfigError), before anything is built.
    (tmp_path / "k.cu").write_text("__global__ void k(float *x) { x[0] = 1; }\n")
    (tmp_path / "setup.py").write_text(
        "from setuptools import setup\n"
        "from ciq_build.setuptools_ext import CudaExtension, build_ext\n"
        "setup(name='m', ext_modules=[CudaExtension('m', ['k.cu'], ciq_target='k', ciq_objectives=['regsters'])],\n"
        "      cmdclass={'build_ext': build_ext})\n")
    for command in (["tune", "k"], ["list"], ["show", "k"]):
        done = subprocess.run([sys.executable, "-m", "ciq_build", *command, "--setuptools", str(tmp_path)],
                              capture_output=True, text=True, cwd=tmp_path)
        said = done.stderr.strip()
        assert done.returncode == 2, said
        assert said.count("\n") == 0 and "Traceback" not in said, said
        # the one message, word for word ciq_tune_target()'s (tests/cmake: "OBJECTIVES " + the same)
        assert f"CudaExtension('m'): {unknown_objective('regsters', 'regsters')}" in said, said
    # and the plain build of that setup.py: setuptools' own one-line "error: ...", no traceback
    done = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"], capture_output=True, text=True,
                          cwd=tmp_path)
    said = done.stderr.strip()
    assert done.returncode == 1 and "Traceback" not in said, said
    assert said == f"error: CudaExtension('m'): {unknown_objective('regsters', 'regsters')}", said
    assert not (tmp_path / "build").exists()


def test_sizes_scores_and_seeds_of_a_cuda_extension_are_checked_when_setup_py_is_read(tmp_path: Path) -> None:
    bench = [sys.executable, "bench.py"]
    ext = CudaExtension("m", ["k.cu"], ciq_target="k", ciq_benchmark=bench, ciq_score="worst",
                        ciq_benchmark_args_sets={"small": ["-n", "1024"], "large": ["-n", "65536"]},
                        ciq_seeds=["../other/ciq", "-Xptxas=-O2"])
    assert ext.ciq_benchmark_args_sets == (("small", ("-n", "1024")), ("large", ("-n", "65536")))
    assert (ext.ciq_score, ext.ciq_seeds) == ("worst", ("../other/ciq", "-Xptxas=-O2"))
    cases: list[tuple[dict[str, Any], str]] = [
        ({"ciq_benchmark_args_sets": {"small": ["-n", "1"]}}, "are arguments of ciq_benchmark; give ciq_benchmark"),
        ({"ciq_benchmark": bench, "ciq_benchmark_args_sets": {".big": []}}, "'.big' is not a size name"),
        ({"ciq_benchmark": bench, "ciq_benchmark_args_sets": {"a": "-n 1"}}, "is a list of arguments, not '-n 1'"),
        ({"ciq_benchmark": bench, "ciq_benchmark_args_sets": ["-n"]}, "maps each size's name to the arguments"),
        ({"ciq_benchmark": bench, "ciq_score": "geomaen"}, "ciq_score 'geomaen' is not one of geomean, worst"),
        ({"ciq_seeds": "pins/"}, "ciq_seeds is a list of strings"),
    ]
    for kwargs, said in cases:
        with pytest.raises(ConfigError, match=re.escape(said)):
            CudaExtension("m", ["k.cu"], ciq_target="k", **kwargs)


def test_ciq_threads_per_block_is_read_by_the_rule_of_cmakes_threads_per_block_when_setup_py_is_read() -> None:
    params = ["BLOCK=choice(128,768)", "TM=4,8"]
    forms: dict[Any, tuple[str, ...]] = {256: ("256",), "BLOCK": ("BLOCK",), ("BLOCK", 768): ("BLOCK", "768"),
                                         "(128/TM)*32": ("(128/TM)*32",)}
    for given, values in forms.items():
        ext = CudaExtension("m", ["k.cu"], ciq_target="k", params=params, ciq_threads_per_block=given)
        assert ext.ciq_threads_per_block == values  # the manifest's threads_per_block, as CMake writes it
    assert CudaExtension("m", ["k.cu"], ciq_target="k").ciq_threads_per_block == ()
    cases: list[tuple[Any, str]] = [
        ("BLOK", "'BLOK' is not one of the PARAMS"),      # THREADS_PER_BLOCK's own words, after the argument's name
        (2048, "is 2048: a block has 1 to 1024 threads"),
        (("BLOCK", 4096), "'4096' is not a number of threads"),
        (("256", "512"), "the second value is the defaults' threads of a declaration over PARAMS names"),
        (True, "is a number, a params name or an expression over them"),
        (["BLOCK", 1.5], "is a number, a params name or an expression over them"),
    ]
    for given, said in cases:
        with pytest.raises(ConfigError, match=r"CudaExtension\('m'\): ciq_threads_per_block.*" + re.escape(said)):
            CudaExtension("m", ["k.cu"], ciq_target="k", params=params, ciq_threads_per_block=given)


def test_ciq_dynamic_shared_memory_is_read_by_the_rule_of_cmakes_dynamic_shared_memory_when_setup_py_is_read() -> None:
    # The bytes of extern __shared__ a block takes at launch (FlashAttention's 64 KB), in THREADS_PER_BLOCK's forms.
    params = ["BM=64,128", "BK=32,64"]
    ext = CudaExtension("m", ["k.cu"], ciq_target="k", params=params, ciq_dynamic_shared_memory=("BM*BK*4", 32768))
    assert ext.ciq_dynamic_shared_memory == ("BM*BK*4", "32768")
    assert CudaExtension("m", ["k.cu"], ciq_target="k").ciq_dynamic_shared_memory == ()
    with pytest.raises(ConfigError, match=r"CudaExtension\('m'\): ciq_dynamic_shared_memory, ciq_tune_target\(\)'s "
                                          r"DYNAMIC_SHARED_MEMORY: DYNAMIC_SHARED_MEMORY: '300000' is not a number of "
                                          r"bytes \(0 to 233472\)"):
        CudaExtension("m", ["k.cu"], ciq_target="k", params=params, ciq_dynamic_shared_memory=("BM", 300000))
