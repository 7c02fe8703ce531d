"""Controls -> nvcc options file, the knob catalogue and the record's "controls" JSON.

The quoting and the knob flags are checked against the real nvcc 13.3: what
the options file says must be what nvcc and ptxas receive.
"""

from __future__ import annotations

import hashlib
import shlex
from pathlib import Path

import pytest

import ciq_build.core.space as ss
from ciq_build.compiler.controls import (
    KNOBS,
    AcfRef,
    Controls,
    check_flag,
    controls_from_candidate,
    controls_to_json,
    knob_space,
    knobs_set_by,
    nvcc_arguments,
    options_file_line,
    register_caps,
    write_options_file,
)
from ciq_build.compiler.toolchain import Toolchain, default_cache_dir, find_toolchain
from ciq_build.errors import ConfigError, RecordError, UnsafeFlagError
from ciq_build.measure import proc

# Compiles only when TILE arrives as 64 and SCALE as 1.5 (a -D value with a dot).
KERNEL = """\
#if !defined(TILE) || TILE != 64
#error "TILE must be 64"
#endif
__global__ void scale(float* x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * (float)SCALE + TILE;
}
"""


@pytest.fixture(scope="module")
def toolchain(cuda133_bin: Path) -> Toolchain:
    return find_toolchain(cuda133_bin / "nvcc")


@pytest.fixture(scope="module")
def probe_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("probe-cache")


def _acf(path: Path, compiler: str = "ptxas") -> AcfRef:
    return AcfRef(path=path, compiler=compiler, sha256=hashlib.sha256(path.read_bytes()).hexdigest())


def _compile(toolchain: Toolchain, source: Path, options_file: Path, *extra: str) -> proc.ProcResult:
    return proc.run(
        [toolchain.nvcc, "-cubin", "-arch=sm_90a", source, "-o", source.with_suffix(".cubin"),
         f"--options-file={options_file}", *extra],
        120,
        cwd=source.parent,
    )


# ---------------------------------------------------------------- Controls


def test_equal_controls_are_equal_whatever_the_order() -> None:
    a = Controls(flags=("-Xptxas=-O2", "-maxrregcount=64"), defines=(("TILE", "64"), ("B", "1")))
    b = Controls(flags=("-maxrregcount=64", "-Xptxas=-O2", "-maxrregcount=64"), defines={"B": "1", "TILE": "64"})  # type: ignore[arg-type]  # a mapping is accepted too
    assert a == b and hash(a) == hash(b)
    assert a.flags == ("-Xptxas=-O2", "-maxrregcount=64")
    assert a.defines == (("B", "1"), ("TILE", "64"))
    assert Controls().is_default and not a.is_default


@pytest.mark.parametrize(
    "flag",
    ["-Xcompiler=-fplugin=evil.so", "-ccbin=/tmp/x", "--options-file=/etc/passwd", "-Xptxas=-O3,-v",
     "-maxrregcount=64 -Xcompiler=x", "-Xptxas=--apply-controls=/tmp/x.acf", "--apply-controls=/tmp/x.acf"],
)
def test_flags_outside_the_allow_list_are_refused(flag: str) -> None:
    with pytest.raises(UnsafeFlagError):
        Controls(flags=(flag,))
    with pytest.raises(UnsafeFlagError):
        check_flag(flag)  # re-exported from ciq_build.core.allowlist


def test_two_values_of_one_option_are_refused() -> None:
    with pytest.raises(RecordError, match="same compiler option"):
        Controls(flags=("-maxrregcount=32", "-maxrregcount=64"))
    with pytest.raises(RecordError, match="same compiler option"):
        Controls(flags=("-Xptxas=-O1", "-Xptxas=-O3"))
    # Different ptxas options behind the same -Xptxas are no conflict.
    Controls(flags=("-Xptxas=-O1", "-Xptxas=--def-load-cache=cg", "-Xptxas=--def-store-cache=cs"))


@pytest.mark.parametrize(("name", "value"), [("1TILE", "4"), ("TILE", "4 -Xcompiler"), ("T", "a,b"), ("T", "$(x)")])
def test_unsafe_defines_are_refused(name: str, value: str) -> None:
    with pytest.raises(UnsafeFlagError):
        Controls(defines=((name, value),))


def test_a_define_given_twice_is_refused() -> None:
    with pytest.raises(RecordError, match="TILE"):
        Controls(defines=(("TILE", "32"), ("TILE", "64")))


def test_controls_over_a_base_keep_what_they_leave_unset_and_replace_what_they_set(tmp_path: Path) -> None:
    acf = tmp_path / "base.acf"
    acf.write_bytes(b"acf")
    base = Controls(flags=("-maxrregcount=128", "-Xptxas=--def-load-cache=cg"), defines={"TILE": "8", "B": "1"},  # type: ignore[arg-type]
                    acf=AcfRef.from_file(acf, "ptxas"))
    on_top = Controls(flags=("-Xptxas=--def-load-cache=cs", "-Xptxas=-O2"), defines={"TILE": "16"}).over(base)  # type: ignore[arg-type]
    assert on_top.flags == ("-Xptxas=--def-load-cache=cs", "-Xptxas=-O2", "-maxrregcount=128")
    assert on_top.defines == (("B", "1"), ("TILE", "16")) and on_top.acf == base.acf
    assert Controls().over(base) == base and base.over(Controls()) == base
    with pytest.raises(RecordError, match="Conflicting|refuses"):  # ptxas refuses the pair: a bad candidate
        Controls(flags=("--Ofast-compile=max",)).over(Controls(flags=("-Xptxas=-O2",)))


def test_nvcc_arguments_order_and_acf_spelling(tmp_path: Path) -> None:
    acf_file = tmp_path / "gemm.acf"
    acf_file.write_bytes(b"acf")
    ptxas = Controls(flags=("-maxrregcount=64",), defines=(("TILE", "64"),), acf=_acf(acf_file))
    assert nvcc_arguments(ptxas) == ["-maxrregcount=64", "-DTILE=64", f"-Xptxas=--apply-controls={acf_file}"]
    nvcc = Controls(acf=_acf(acf_file, "nvcc"))
    assert nvcc_arguments(nvcc) == [f"--apply-controls={acf_file}"]


@pytest.mark.parametrize("folder", ["pin dir", "p;touch PWNED", "p&touch PWNED&", "p$(touch PWNED)", "a,b",
                                    "p|touch PWNED", "p(x)", "q\"u'o`te"])
def test_acf_paths_a_shell_would_read_reach_nvcc_only_as_a_plain_copy(tmp_path: Path, folder: str,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # Issue 8, defect 5: nvcc hands -Xptxas values to ptxas through sh, so every
    # path that reaches nvcc is allow-listed; anything else goes through a copy
    # named by its sha256 in the cache directory.
    monkeypatch.setenv("CIQ_BUILD_CACHE_DIR", str(tmp_path / "cache"))
    unsafe = tmp_path / folder / "gemm.acf"
    unsafe.parent.mkdir()
    unsafe.write_bytes(b"acf bytes")
    for compiler, prefix in (("ptxas", "-Xptxas=--apply-controls="), ("nvcc", "--apply-controls=")):
        (argument,) = nvcc_arguments(Controls(acf=_acf(unsafe, compiler)))
        copy = tmp_path / "cache" / "acf-copies" / f"{hashlib.sha256(b'acf bytes').hexdigest()}.acf"
        assert argument == prefix + str(copy)
        assert copy.read_bytes() == b"acf bytes"


def test_an_acf_changed_after_it_was_chosen_is_not_copied(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CIQ_BUILD_CACHE_DIR", str(tmp_path / "cache"))
    unsafe = tmp_path / "a b" / "x.acf"
    unsafe.parent.mkdir()
    unsafe.write_bytes(b"x")
    acf = _acf(unsafe)
    unsafe.write_bytes(b"y")
    with pytest.raises(ConfigError, match="changed after it was chosen"):
        nvcc_arguments(Controls(acf=acf))


def test_acf_ref_validates_its_fields(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="ptxas"):
        AcfRef(path=tmp_path / "x.acf", compiler="cicc", sha256="")
    with pytest.raises(ConfigError, match="absolute"):
        AcfRef(path=Path("x.acf"), compiler="ptxas", sha256="")
    with pytest.raises(ConfigError, match="hex"):
        AcfRef(path=tmp_path / "x.acf", compiler="ptxas", sha256="XYZ")
    (tmp_path / "x.acf").write_bytes(b"abc")
    ref = AcfRef.from_file(tmp_path / "x.acf", "nvcc")
    assert ref.sha256 == hashlib.sha256(b"abc").hexdigest()


# ---------------------------------------------------------------- options file


@pytest.mark.parametrize(
    ("argument", "line"),
    [
        ("-maxrregcount=64", "-maxrregcount=64"),
        ("-I/a dir/x", '"-I/a dir/x"'),
        ('-Xptxas=--apply-controls=\\"/p q/x.acf\\"', '"-Xptxas=--apply-controls=\\\\\\"/p q/x.acf\\\\\\""'),
        ("-I/tmp/b\\s", '"-I/tmp/b\\\\s"'),
        ("", '""'),
    ],
)
def test_options_file_lines_quote_what_nvcc_would_split(argument: str, line: str) -> None:
    assert options_file_line(argument) == line
    # What verify (and a user) reads back with shell rules is the argument itself.
    assert shlex.split(line) == [argument]


def test_options_file_refuses_newlines() -> None:
    with pytest.raises(ConfigError):
        options_file_line("-DX=1\n--bad")


def test_write_options_file_content_and_extra(tmp_path: Path) -> None:
    path = tmp_path / "ciq" / "t.nvcc-options"
    write_options_file(path, Controls(flags=("-Xptxas=-O2",), defines=(("TILE", "64"),)), extra=("-Xptxas=-v",))
    assert path.read_text() == "-Xptxas=-O2\n-DTILE=64\n-Xptxas=-v\n"
    write_options_file(path, Controls())
    assert path.read_text() == ""
    assert [p.name for p in path.parent.iterdir()] == ["t.nvcc-options"]  # no temporary left


def test_write_options_file_always_moves_the_mtime_forward(tmp_path: Path) -> None:
    path = tmp_path / "t.nvcc-options"
    controls = Controls(flags=("-maxrregcount=64",))
    write_options_file(path, controls)
    first = path.stat()
    write_options_file(path, controls)  # same content, at once: must still look newer to ninja
    second = path.stat()
    assert second.st_mtime_ns > first.st_mtime_ns
    assert second.st_ino != first.st_ino  # replaced, never edited in place


def test_real_nvcc_reads_the_options_file_from_a_path_with_spaces(toolchain: Toolchain, tmp_path: Path) -> None:
    where = tmp_path / "my project" / "build dir"
    where.mkdir(parents=True)
    source = where / "scale kernel.cu"
    source.write_text(KERNEL)
    options = where / "scale.nvcc-options"
    write_options_file(options, Controls(flags=("-maxrregcount=32",), defines=(("TILE", "64"), ("SCALE", "1.5"))),
                       extra=("-Xptxas=-v",))
    result = _compile(toolchain, source, options)
    assert result.ok, result.output_tail()
    # The flag reached ptxas, not only nvcc.
    assert "with  32 of maxrregcount option" in result.stderr
    # Without the options file the #error fires: the defines came from it.
    assert not proc.run([toolchain.nvcc, "-cubin", "-arch=sm_90a", source, "-o", tmp_path / "x.cubin"], 120).ok


@pytest.mark.parametrize("pin_dir", ["pin dir", "pins"])
@pytest.mark.slow
def test_a_ptxas_acf_path_reaches_ptxas_whole(toolchain: Toolchain, tmp_path: Path, pin_dir: str) -> None:
    where = tmp_path / pin_dir
    where.mkdir()
    acf = where / "scale.acf"
    acf.write_bytes(b"")  # ptxas opens it, then names it in its complaint (when empty)
    source = tmp_path / "k.cu"
    source.write_text(KERNEL)
    controls = Controls(defines=(("TILE", "64"), ("SCALE", "2")), acf=_acf(acf))
    options = tmp_path / "opts"
    write_options_file(options, controls)
    # A path a shell would split reaches ptxas as the plain copy named by its sha256.
    shown = acf if pin_dir == "pins" else default_cache_dir() / "acf-copies" / f"{_acf(acf).sha256}.acf"
    through_file = _compile(toolchain, source, options)
    assert f"Input file '{shown}' not in expected format" in through_file.stderr, through_file.output_tail()
    # The same arguments given directly on the command line behave the same.
    direct = proc.run([toolchain.nvcc, "-cubin", "-arch=sm_90a", source, "-o", tmp_path / "d.cubin",
                       *nvcc_arguments(controls)], 120)
    assert f"Input file '{shown}' not in expected format" in direct.stderr, direct.output_tail()


def test_an_nvcc_acf_path_with_spaces_reaches_nvcc_as_a_plain_copy(toolchain: Toolchain, tmp_path: Path) -> None:
    acf = tmp_path / "pin dir" / "scale.acf"
    acf.parent.mkdir()
    acf.write_bytes(b"")
    source = tmp_path / "k.cu"
    source.write_text(KERNEL)
    options = tmp_path / "opts"
    write_options_file(options, Controls(defines=(("TILE", "64"), ("SCALE", "2")), acf=_acf(acf, "nvcc")))
    # nvcc ACFs are for sm_100+; libnvvm names the whole path when it refuses the file.
    result = proc.run([toolchain.nvcc, "-cubin", "-arch=sm_100a", source, "-o", tmp_path / "k.cubin",
                       f"--options-file={options}"], 120)
    copy = default_cache_dir() / "acf-copies" / f"{_acf(acf).sha256}.acf"
    assert f"invalid compiler controls file {copy}" in result.stderr, result.output_tail()


# ---------------------------------------------------------------- knob catalogue


def test_every_catalogue_flag_is_pinnable() -> None:
    # A winner the allow-list refuses could never be pinned or applied by CMake.
    for knob in KNOBS:
        for value in knob.domain():
            check_flag(knob.flag(value))


@pytest.mark.slow
def test_knob_space_offers_every_public_knob_on_cuda_13_3(toolchain: Toolchain, probe_cache: Path) -> None:
    space = knob_space(toolchain, cache_dir=probe_cache)
    public = {f"knob.{k.name}" for k in KNOBS if not k.numerics}
    assert set(space) == public
    for name, param in space.items():
        assert param.can_knockout, f"{name} must be able to be absent (compiler default)"
    assert space["knob.maxrregcount"].values()[0] == 32 and space["knob.maxrregcount"].values()[-1] == 248
    assert set(space["knob.def_load_cache"].values()) == {"ca", "cg", "cs", "cv"}
    assert ss.SearchSpace(space).cardinality > 1000


@pytest.mark.slow
def test_numerics_knobs_only_when_allowed(toolchain: Toolchain, probe_cache: Path) -> None:
    numerics = {f"knob.{k.name}" for k in KNOBS if k.numerics}
    assert numerics == {"knob.use_fast_math", "knob.ftz", "knob.prec_div", "knob.prec_sqrt", "knob.fmad"}
    assert not numerics & set(knob_space(toolchain, cache_dir=probe_cache))
    assert numerics <= set(knob_space(toolchain, allow_numerics=True, cache_dir=probe_cache))


def test_knob_space_leaves_out_what_the_compiler_refuses(toolchain: Toolchain, probe_cache: Path,
                                                         tmp_path: Path) -> None:
    import json

    knob_space(toolchain, cache_dir=probe_cache)
    (cached,) = probe_cache.glob("toolchain-*.json")
    # Plant refusals in a copy of the probe cache, as an older compiler would answer.
    data = json.loads(cached.read_text())
    (arch,) = data["options"]
    data["options"][arch] |= {"-Xptxas=--def-load-cache=cv": False, "--extra-device-vectorization": False}
    (tmp_path / cached.name).write_text(json.dumps(data))
    space = knob_space(toolchain, arch=arch, cache_dir=tmp_path)
    assert "knob.extra_device_vectorization" not in space
    assert set(space["knob.def_load_cache"].values()) == {"ca", "cg", "cs"}


def test_sampled_knob_candidates_compile_with_real_nvcc(toolchain: Toolchain, probe_cache: Path,
                                                          tmp_path: Path) -> None:
    import random

    space = ss.SearchSpace(knob_space(toolchain, allow_numerics=True, cache_dir=probe_cache))
    rng = random.Random(7)
    source = tmp_path / "k.cu"
    source.write_text(KERNEL)
    # Every knob at once, plus one random candidate: the flags combine.
    everything = {name: param.value(param.size - 1) for name, param in space.items()}
    for params in (everything, space.to_params(space.sample(rng))):
        controls = controls_from_candidate({**params, "param.TILE": 64, "param.SCALE": 1.5})
        options = tmp_path / "opts"
        write_options_file(options, controls)
        result = _compile(toolchain, source, options)
        assert result.ok, f"{controls}: {result.output_tail()}"


# ---------------------------------------------------------------- candidates


def test_candidate_parameters_map_to_flags_and_defines(tmp_path: Path) -> None:
    acf_file = tmp_path / "c.acf"
    acf_file.write_bytes(b"x")
    acf = _acf(acf_file)
    controls = controls_from_candidate(
        {"knob.maxrregcount": 64, "knob.ptxas_opt_level": 2, "knob.def_load_cache": "cg",
         "knob.extra_device_vectorization": True, "knob.fmad": True,
         "param.TILE": 64, "param.SCALE": 1.5, "param.MODE": "fast"},
        acf,
    )
    assert controls.flags == ("--extra-device-vectorization", "-Xptxas=--def-load-cache=cg", "-Xptxas=-O2",
                              "-fmad=false", "-maxrregcount=64")
    assert controls.defines == (("MODE", "fast"), ("SCALE", "1.5"), ("TILE", "64"))
    assert controls.acf == acf
    # The engine may put the ACF among the parameters instead.
    assert controls_from_candidate({"acf": acf}) == Controls(acf=acf)
    # No parameters: the compiler's defaults.
    assert controls_from_candidate({}) == Controls()


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"maxrregcount": 64}, "knob.<name>"),
        ({"knob.no_such_knob": 1}, "unknown compiler knob"),
        ({"knob.maxrregcount": 7.5}, "integer"),
        ({"knob.maxrregcount": "64"}, "integer"),
        ({"knob.def_load_cache": "lu"}, "one of"),
        ({"knob.extra_device_vectorization": False}, "switch"),
        ({"param.TILE": "6 4"}, "TILE"),
        ({"param.1X": 3}, "1X"),
    ],
)
def test_bad_candidates_are_config_errors(params: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        controls_from_candidate(params)


# ---------------------------------------------------------------- JSON


def test_controls_json_round_trip_with_the_acf_in_the_pin_dir(tmp_path: Path) -> None:
    acf_file = tmp_path / "gemm.acf"
    acf_file.write_bytes(b"acf bytes")
    controls = Controls(flags=("-maxrregcount=128", "-Xptxas=-O3"), defines=(("TILE", "64"),), acf=_acf(acf_file))
    obj = controls_to_json(controls, tmp_path)
    assert obj == {
        "flags": ["-Xptxas=-O3", "-maxrregcount=128"],
        "defines": {"TILE": "64"},
        "acf": {"file": "gemm.acf", "sha256": hashlib.sha256(b"acf bytes").hexdigest(), "compiler": "ptxas"},
    }
    # Reading it back is the record reader's job (tests/pin/test_record.py: round trip, unsafe content, ACF names).
    assert controls_to_json(Controls(), tmp_path) == {"flags": [], "defines": {}}
    # Journals have no pin dir: the ACF is named by its absolute path.
    assert controls_to_json(controls, None)["acf"]["file"] == str(acf_file)


def test_an_acf_outside_the_pin_dir_cannot_be_written(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    acf_file = tmp_path / "elsewhere" / "x.acf"
    acf_file.write_bytes(b"x")
    with pytest.raises(RecordError, match="pin directory"):
        controls_to_json(Controls(acf=_acf(acf_file)), tmp_path / "pins")


def test_flag_pairs_ptxas_refuses_are_refused_in_controls() -> None:
    with pytest.raises(RecordError, match="Conflicting"):
        Controls(flags=("--Ofast-compile=max", "-Xptxas=-O3"))
    with pytest.raises(RecordError, match="Conflicting"):
        Controls(flags=("--Ofast-compile=min", "-Xptxas=--allow-expensive-optimizations=false"))
    Controls(flags=("--Ofast-compile=mid", "-Xptxas=--allow-expensive-optimizations=false"))


def test_overridden_knobs_are_dropped_from_candidates() -> None:
    fast = controls_from_candidate({"knob.fast_compile": "max", "knob.ptxas_opt_level": 3})
    assert fast == controls_from_candidate({"knob.fast_compile": "max"})
    fast_min = controls_from_candidate({"knob.fast_compile": "min", "knob.allow_expensive_optimizations": "false"})
    assert fast_min.flags == ("--Ofast-compile=min",)
    o0 = controls_from_candidate({"knob.ptxas_opt_level": 0, "knob.register_usage_level": 7})
    assert o0.flags == ("-Xptxas=-O0",)
    kept = controls_from_candidate({"knob.ptxas_opt_level": 2, "knob.register_usage_level": 7})
    assert kept.flags == ("-Xptxas=--register-usage-level=7", "-Xptxas=-O2")


@pytest.mark.slow
def test_every_pair_of_knob_values_compiles_cleanly(toolchain: Toolchain, probe_cache: Path,
                                                    tmp_path: Path) -> None:
    """Each pair of catalogue knobs at their extreme values: no error and no "ignored" warning.

    A candidate sets many knobs at once, so the compiles do too: each sets every knob, rows chosen until
    every pair of extreme values has met in one (a covering array of strength 2; ~10 compiles where one
    compile a pair took ~200, 61 s of CPU in the suite)."""
    import itertools
    import random
    from concurrent.futures import ThreadPoolExecutor

    space = knob_space(toolchain, allow_numerics=True, cache_dir=probe_cache)
    source = tmp_path / "k.cu"
    source.write_text(KERNEL)
    extremes = {name: sorted({p.value(0), p.value(p.size - 1)}, key=str) for name, p in space.items()}
    names = sorted(extremes)
    pairs = list(itertools.combinations(names, 2))

    def met(row: dict) -> set:
        return {((a, row[a]), (b, row[b])) for a, b in pairs}

    uncovered = {((a, va), (b, vb)) for a, b in pairs for va in extremes[a] for vb in extremes[b]}
    rng = random.Random(0)
    rows: list[dict] = []
    while uncovered:  # greedy: of 50 random rows, the one meeting the most pairs not met yet
        options = [{name: rng.choice(extremes[name]) for name in names} for _ in range(50)]
        best = max(options, key=lambda row: len(met(row) & uncovered))
        uncovered -= met(best)
        rows.append(best)
    candidates = [controls_from_candidate(row) for row in rows]

    def compile_one(index_controls: tuple[int, Controls]) -> tuple[Controls, proc.ProcResult]:
        index, controls = index_controls
        return controls, proc.run(
            [toolchain.nvcc, "-cubin", "-arch=sm_90a", "-DTILE=64", "-DSCALE=2", source,
             "-o", tmp_path / f"{index}.cubin", *nvcc_arguments(controls)], 120)

    with ThreadPoolExecutor(max_workers=3) as pool:
        bad = [(c.flags, r.output_tail(2)) for c, r in pool.map(compile_one, enumerate(candidates))
               if not r.ok or "warning" in r.stderr]
    assert len(names) >= 2 and len(candidates) < 30
    assert bad == []


@pytest.mark.parametrize("objectives, offered", [
    (["registers"], set()), (["spill_bytes", "registers"], set()), (["time", "registers"], set()),
    (["time"], {"knob.ptxas_opt_level"}), (["time", "energy"], {"knob.ptxas_opt_level"}),
    (["time", "compile_time"], {"knob.fast_compile", "knob.ptxas_opt_level"}),
])
def test_code_quality_knobs_only_where_their_trade_is_measured(
        toolchain: Toolchain, objectives: list[str], offered: set[str]) -> None:
    # ptxas -O0..2 and --Ofast-compile give worse code for a faster compile: a registers tune would
    # otherwise pin -Xptxas=-O0 (it did, on cuda-samples' matrixMul). Where every objective is the running
    # code's, ptxas -O is judged by the run (with a register cap, -O2 can spill less than -O3).
    from types import SimpleNamespace

    from ciq_build.core.objectives import parse_objectives
    from ciq_build.search.select import COMPILE_TIME_KNOBS, build_space

    manifest = SimpleNamespace(toolchain=SimpleNamespace(architectures="90a"), params=[], cuda_flags=())
    space = build_space(["knobs"], manifest, toolchain, False, parse_objectives(objectives))  # type: ignore[arg-type]
    assert set(COMPILE_TIME_KNOBS) == {"knob.fast_compile", "knob.ptxas_opt_level"}
    assert {name for name in COMPILE_TIME_KNOBS if name in space} == offered
    assert "knob.maxrregcount" in space


@pytest.mark.parametrize(("flags", "set_by"), [
    ([], {}), (["-O3", "-lineinfo"], {}),
    # nvcc's documentation: --use_fast_math implies -ftz=true -prec-div=false -prec-sqrt=false -fmad=true. The
    # knobs of those values repeat it; -fmad=false overrules what it implies (other code, measured): searched.
    (["-O3", "--use_fast_math"], {"use_fast_math": "--use_fast_math", "ftz": "--use_fast_math",
                                  "prec_div": "--use_fast_math", "prec_sqrt": "--use_fast_math"}),
    (["-use_fast_math"], {"use_fast_math": "--use_fast_math", "ftz": "--use_fast_math",
                          "prec_div": "--use_fast_math", "prec_sqrt": "--use_fast_math"}),
    # An option the target sets itself is its choice: the knob would repeat it or overrule it, whichever value.
    (["-ftz=false", "--fmad", "true"], {"ftz": "-ftz=false", "fmad": "-fmad=true"}),
    (["--use_fast_math", "-ftz=false"], {"use_fast_math": "--use_fast_math", "ftz": "-ftz=false",
                                         "prec_div": "--use_fast_math", "prec_sqrt": "--use_fast_math"}),
    (["SHELL:--prec-sqrt true", "-fmad=false"], {"prec_sqrt": "-prec-sqrt=true", "fmad": "-fmad=false"}),
])
def test_numerics_knobs_whose_option_the_targets_own_flags_set(flags: list[str], set_by: dict[str, str]) -> None:
    assert knobs_set_by(flags) == set_by


@pytest.mark.parametrize(("registers", "caps"), [
    # cuda_reduction_sum's kernel: of the old grid (32..248 by 8) one value lay below its 40 registers, which a
    # 24-candidate search never drew; every cap at or above them is the same code. Now it is the knob's one value.
    (40, (32,)),
    # A 168-register HGEMM: steps of 8 (registers are allocated 8 a thread), from half its registers.
    (168, (80, 88, 96, 104, 112, 120, 128, 136, 144, 152, 160)),
    (80, (40, 48, 56, 64, 72)), (33, (32,)),
    # 26 registers: no cap below them can raise occupancy (32 a thread fill the largest SM), so none.
    (26, ()), (32, ()),
])
def test_the_register_caps_lie_below_the_kernels_registers(toolchain: Toolchain, registers: int,
                                                           caps: tuple[int, ...]) -> None:
    from types import SimpleNamespace

    from ciq_build.core.objectives import parse_objectives
    from ciq_build.search.select import build_space, register_cap_line

    assert register_caps(registers) == caps
    manifest = SimpleNamespace(toolchain=SimpleNamespace(architectures="90a"), params=[], cuda_flags=())
    space = build_space(["knobs"], manifest, toolchain, False, parse_objectives(["registers"]),  # type: ignore[arg-type]
                        registers=registers)
    line = register_cap_line(registers)
    if caps:
        assert space["knob.maxrregcount"].values() == list(caps) and space["knob.maxrregcount"].can_knockout
        assert f"-maxrregcount {', '.join(map(str, caps))} (below the defaults' {registers} registers" in line
    else:  # left out, and said
        assert "knob.maxrregcount" not in space and "knob.register_usage_level" in space
        assert line.startswith(f"register cap: left out of the search: the defaults' kernels use at most {registers}")
    # Registers unknown (no ptxas report): the catalogue's grid.
    whole = build_space(["knobs"], manifest, toolchain, False, parse_objectives(["registers"]))  # type: ignore[arg-type]
    assert whole["knob.maxrregcount"].values() == list(range(32, 249, 8))
