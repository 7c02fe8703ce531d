"""The compileiq engine adapter, with the real engine, the real search spaces and real compilers.

Facts checked here (compileiq 1.1.0, CUDA 13.3 from PyPI, system CUDA 13.0):
sampled ptxas ACFs are accepted by 13.3 and refused by 13.0; nvcc ACFs are
refused for sm_90a and accepted for sm_100a; a seeded search is repeatable
(same candidates, same generated code); and a short search over ptxas ACFs
brings a spilling kernel's spill stores below the compiler default's.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import ciq_build.core.space as ss
import ciq_build.search.compileiq as compileiq_engine
import ciq_build.search.compileiq_spaces as compileiq_spaces
from ciq_build.cli import build_parser
from ciq_build.compiler.acf import check_nvcc_acf_architectures, check_toolkit_accepts
from ciq_build.compiler.toolchain import find_toolchain
from ciq_build.core.objectives import parse_objectives
from ciq_build.core.settings import SearchSettings
from ciq_build.errors import ConfigError, MissingExtraError, ToolchainError
from ciq_build.measure.proc import run
from ciq_build.project.manifest import Benchmark
from ciq_build.search.compileiq import CompileIqEngine
from ciq_build.search.compileiq_spaces import resolve_space
from ciq_build.search.evolution import SearchConfiguration
from ciq_build.search.select import make_candidate_source
from ciq_build.search.strategy import SearchRequest
from ciq_build.tune.executors import read_tune_options
from ciq_build.tune.loop import planned_budget
from ciq_build.tune.summary import next_without_a_pin
from ciq_build.tune.tune_options import resolve_settings
from support import bare_manifest


def _have_compileiq() -> bool:
    try:
        compileiq_spaces.load_compileiq()
    except MissingExtraError:
        return False
    return True


needs_compileiq = pytest.mark.skipif(not _have_compileiq(), reason='needs compileiq: pip install "ciq-build[acf]"')

# A register-hungry sm_90a kernel: 24 accumulators fed by 8 float4 loads per step. Under
# -maxrregcount=30 ptxas spills; how much depends on scheduling and allocation, which the
# ptxas ACFs control.
SPILL_KERNEL = r"""
#define ACC 24
#define U 8
__global__ void spill(const float4* __restrict__ a, float* __restrict__ out, int n, int stride) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  float acc[ACC];
#pragma unroll
  for (int k = 0; k < ACC; ++k) acc[k] = 0.f;
  for (int j = 0; j < n; j += U) {
    float4 x[U];
#pragma unroll
    for (int u = 0; u < U; ++u) x[u] = a[(j + u) * stride + t];
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int k = 0; k < ACC; ++k) acc[k] = fmaf(acc[k], (k & 1) ? x[u].x : x[u].y, (k & 2) ? x[u].z : x[u].w);
  }
  float s = 0.f;
#pragma unroll
  for (int k = 0; k < ACC; ++k) s += acc[k] * (float)(k + 1);
  out[t] = s;
}
"""
MAXRREG = "-maxrregcount=30"


@pytest.fixture
def kernel(tmp_path: Path) -> Path:
    path = tmp_path / "spill.cu"
    path.write_text(SPILL_KERNEL)
    return path


def _spill_stores(output: str) -> int:
    found = re.findall(r"(\d+) bytes spill stores", output)
    assert found, f"no spill line in ptxas -v output:\n{output}"
    return sum(int(v) for v in found)


def _nvcc_compile(nvcc: Path, source: Path, out: Path, *extra: str) -> tuple[int | None, str]:
    result = run([nvcc, "-arch=sm_90a", "-c", source, "-o", out, *extra], timeout=120)
    return result.returncode, result.stdout + result.stderr


def _engine(spaces: Path, acf_dir: Path, *, spec: str = "ptxas-acf:13.3", extra=None, seed: int | None = 7,
            generations: int = 2, pool_size: int = 6, **config) -> CompileIqEngine:
    identity = resolve_space(spec, spaces_dir=spaces)
    cfg = SearchConfiguration(generations=generations, pool_size=pool_size, seed=seed, **config)
    return CompileIqEngine(identity, extra, cfg, acf_dir)


# ----------------------------------------------------------------------------- resolving spaces


def test_resolve_space_specs(search_spaces_dir: Path) -> None:
    ptxas = resolve_space("ptxas-acf", spaces_dir=search_spaces_dir)
    assert (ptxas.compiler, ptxas.cuda, ptxas.variant, ptxas.path.name) == ("ptxas", "13.3", "default", "ptxas13.3.bin")
    assert ptxas.tag == "local-mirror"
    att = resolve_space("ptxas-acf:13.3:att", spaces_dir=search_spaces_dir)
    assert (att.variant, att.path.name) == ("att", "ptxas13.3_att.bin")
    assert att.sha256 != ptxas.sha256 and len(att.sha256) == 64
    nvcc = resolve_space("nvcc-acf", default_version="13.3.73", spaces_dir=search_spaces_dir)
    assert (nvcc.compiler, nvcc.cuda, nvcc.path.name) == ("nvcc", "13.3", "nvcc13.3.bin")
    # The provenance names the file, not this machine's path.
    assert att.describe() == {"compiler": "ptxas", "cuda": "13.3", "variant": "att", "file": "ptxas13.3_att.bin",
                              "sha256": att.sha256, "tag": "local-mirror"}


def test_resolve_space_reads_the_environment_mirror(search_spaces_dir: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CIQ_SEARCH_SPACES_DIR", str(search_spaces_dir))
    assert resolve_space("ptxas-acf:13.3").path == (search_spaces_dir / "ptxas13.3.bin").absolute()


def test_resolve_space_missing_version_lists_what_exists(search_spaces_dir: Path) -> None:
    with pytest.raises(ConfigError, match=r"no ptxas search space for CUDA 13\.0.*ptxas-acf:13\.3:att"):
        resolve_space("ptxas-acf", default_version="13.0.88", spaces_dir=search_spaces_dir)


def test_resolve_space_from_a_bin_file(search_spaces_dir: Path, tmp_path: Path) -> None:
    beside_manifest = resolve_space(str(search_spaces_dir / "ptxas13.3_att.bin"))
    assert (beside_manifest.compiler, beside_manifest.variant, beside_manifest.tag) == ("ptxas", "att", "local-mirror")
    alone = tmp_path / "nvcc13.3_x.bin"
    shutil.copy(search_spaces_dir / "nvcc13.3.bin", alone)
    by_name = resolve_space(str(alone))
    assert (by_name.compiler, by_name.cuda, by_name.variant, by_name.tag) == ("nvcc", "13.3", "x", None)
    anonymous = tmp_path / "space.bin"
    shutil.copy(search_spaces_dir / "ptxas13.3.bin", anonymous)
    with pytest.raises(ConfigError, match="cannot tell which compiler"):
        resolve_space(str(anonymous))


def test_resolve_space_refuses_a_damaged_mirror(search_spaces_dir: Path, tmp_path: Path) -> None:
    mirror = tmp_path / "mirror"
    shutil.copytree(search_spaces_dir, mirror)
    (mirror / "ptxas13.3.bin").write_bytes(b"damaged")
    with pytest.raises(ConfigError, match="does not match its sha256"):
        resolve_space("ptxas-acf:13.3", spaces_dir=mirror)


@pytest.mark.parametrize("spec", ["ptxas", "ptxas-acf:13", "cicc-acf", "ptxas-acf:13.3:att:x"])
def test_resolve_space_refuses_unknown_specs(spec: str) -> None:
    with pytest.raises(ConfigError, match="unknown ACF search space"):
        resolve_space(spec)


def test_missing_compileiq_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "compileiq", None)  # what an environment without the extra looks like
    with pytest.raises(MissingExtraError, match=re.escape('pip install "ciq-build[acf]"')):
        compileiq_spaces.load_compileiq()


# ----------------------------------------------------------------------------- the engine


@pytest.mark.acf
@needs_compileiq
@pytest.mark.slow
def test_one_search_carries_params_and_acfs(search_spaces_dir: Path, tmp_path: Path) -> None:
    extra = {
        "knob.maxrregcount": ss.range(32, 255, 8, knockout_prob=0.5),
        "param.FAST": ss.choice([True, False]),
        "param.SCALE": ss.log_sampling(1, 100, 5),
    }
    engine = _engine(search_spaces_dir, tmp_path / "acf", extra=extra, generations=2, pool_size=6)
    seen = []
    while proposals := engine.ask():
        for proposal in proposals:
            assert proposal.acf is not None and proposal.acf.compiler == "ptxas"
            assert proposal.acf.path == tmp_path / "acf" / f"{proposal.acf.sha256}.acf"
            assert proposal.acf.path.stat().st_size > 1000
            assert set(proposal.params) <= set(extra)
            assert isinstance(proposal.params["param.FAST"], bool)  # compileiq alone would give 0/1
            assert proposal.params["param.SCALE"] in extra["param.SCALE"].values()
            if "knob.maxrregcount" in proposal.params:
                assert proposal.params["knob.maxrregcount"] in range(32, 256, 8)
            seen.append(proposal)
        for proposal in proposals:
            engine.tell(proposal, (float(proposal.params.get("knob.maxrregcount", 0)),))
    assert len(seen) == 12  # generations x pool_size, then ask() says the search is over
    assert len({p.acf.sha256 for p in seen}) == 12
    assert any("knob.maxrregcount" not in p.params for p in seen)  # knockout reaches the candidates
    assert engine.ask() == []
    described = engine.describe()
    assert described["engine"] == "compileiq" and described["seed"] == 7
    assert described["search_space"]["acf"]["sha256"] == resolve_space(
        "ptxas-acf:13.3", spaces_dir=search_spaces_dir).sha256
    assert set(described["search_space"]["params"]) == set(extra)


@pytest.mark.acf
@needs_compileiq
def test_failed_candidates_are_refilled_within_the_budget(search_spaces_dir: Path, tmp_path: Path) -> None:
    engine = _engine(search_spaces_dir, tmp_path, generations=2, pool_size=6)
    batches = []
    while proposals := engine.ask():
        batches.append(len(proposals))
        for i, proposal in enumerate(proposals):
            engine.tell(proposal, None if i == 0 else (float(i),), "compile_failed: test")
    assert sum(batches) == 12  # refills of failed candidates count against generations x pool_size
    assert len(batches) > 2


@pytest.mark.acf
@needs_compileiq
def test_pool_size_below_compileiq_minimum_is_refused(search_spaces_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="pool_size >= 6"):
        _engine(search_spaces_dir, tmp_path, pool_size=4)
    # Two objectives: compileiq keeps 5 survivors and culls 2, so 6 is refused up front with what to set, not by
    # the engine's own validation error mid-tune.
    with pytest.raises(ConfigError, match=r"pool_size >= 7 with 2 objective\(s\).*--pool-size 7"):
        _engine(search_spaces_dir, tmp_path, pool_size=6, num_objectives=2)
    _engine(search_spaces_dir, tmp_path, pool_size=7, num_objectives=2)


@pytest.mark.acf
@needs_compileiq
def test_a_tune_that_sets_no_pool_searches_with_the_least_compileiq_takes(
        search_spaces_dir: Path, cuda133_bin: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`tune --controls ptxas-acf` for time, registers and spills with no pool given: the default pool (8) was refused
    (compileiq takes 9 with three objectives), an error for a user who set nothing. Now the pool is raised to 9, and
    the budget the tune and its `next:` line show is the one searched; a pool given below it is still refused."""
    monkeypatch.setenv(compileiq_spaces.SPACES_DIR_ENV, str(search_spaces_dir))
    manifest = bare_manifest(tmp_path, benchmark=Benchmark(target="bench", path=tmp_path / "bench", args=()))
    toolchain = find_toolchain(cuda133_bin / "nvcc", explicit_from="the test")

    def source(*given: str) -> compileiq_engine.CompileIqEngine:
        argv = ["tune", "kern", "--controls", "ptxas-acf", "--objective", "time", "--objective", "registers",
                "--objective", "spill_bytes", "--generations", "1", *given]
        settings = resolve_settings(read_tune_options(build_parser().parse_args(argv)), manifest)
        made = make_candidate_source(settings.search, manifest, toolchain, list(settings.objectives), tmp_path / "acf")
        assert isinstance(made, compileiq_engine.CompileIqEngine)
        return made

    assert compileiq_engine.min_pool_size(3) == 9
    engine = source()
    try:
        described = engine.describe()
        assert engine.config.pool_size == described["budget"]["pool_size"] == 9
        assert len(engine.ask()) == 9
    finally:
        engine.close()
    search = dataclasses.replace(SearchSettings(), controls=("ptxas-acf",))
    assert planned_budget(described, search) == (9, 1)
    said = next_without_a_pin(parse_objectives(["time", "registers", "spill_bytes"]), search, pin=True,
                              better=False, described=described)
    assert "this tune: 1 generation of 9)" in said
    # Chosen, on the command line or as the strategy's option: used as given, and refused below the least.
    for given in (["--pool-size", "8"], ["--strategy-option", "pool_size=8"]):
        with pytest.raises(ConfigError, match=r"pool_size >= 9 with 3 objective\(s\).*got 8"):
            source(*given)
    larger = source("--pool-size", "12")
    assert larger.describe()["budget"]["pool_size"] == 12
    larger.close()


def _ptxas_sass(cuda133_bin: Path, ptx: Path, acf: Path, out: Path) -> str:
    result = run([cuda133_bin / "ptxas", "-arch=sm_90a", MAXRREG, "--apply-controls", acf, ptx, "-o", out],
                 timeout=120)
    assert result.ok, result.output_tail()
    return run([cuda133_bin / "cuobjdump", "-sass", out], timeout=60).stdout


@pytest.mark.acf
@needs_compileiq
@pytest.mark.slow
def test_same_seed_same_candidates_same_code(search_spaces_dir: Path, cuda133_bin: Path, tmp_path: Path,
                                             kernel: Path) -> None:
    ptx = tmp_path / "spill.ptx"
    assert run([cuda133_bin / "nvcc", "-arch=sm_90a", "-ptx", kernel, "-o", ptx], timeout=120).ok

    def two_generations(acf_dir: Path, seed: int) -> list:
        engine = _engine(search_spaces_dir, acf_dir, extra={"param.N": ss.range(1, 50)}, seed=seed)
        out = []
        for _ in range(2):
            proposals = engine.ask()
            for proposal in proposals:
                engine.tell(proposal, (float(proposal.params.get("param.N", 0)),))
            out.extend(proposals)
        return out

    first, second = two_generations(tmp_path / "a", 11), two_generations(tmp_path / "b", 11)
    assert [p.params for p in first] == [p.params for p in second]
    # The ACF bytes differ (compileiq's encryption is randomised) ...
    assert {p.acf.sha256 for p in first}.isdisjoint({p.acf.sha256 for p in second})
    # ... but what they tell ptxas does not: the same position compiles to the same SASS.
    sample = [0, 5, 9]
    with ThreadPoolExecutor(2) as pool:
        a = list(pool.map(lambda i: _ptxas_sass(cuda133_bin, ptx, first[i].acf.path, tmp_path / f"a{i}.cubin"), sample))
        b = list(pool.map(lambda i: _ptxas_sass(cuda133_bin, ptx, second[i].acf.path, tmp_path / f"b{i}.cubin"), sample))
    assert a == b
    other = two_generations(tmp_path / "c", 12)
    assert [p.params for p in other] != [p.params for p in first]


@pytest.mark.acf
@needs_compileiq
@pytest.mark.slow
def test_replay_with_the_same_seed_reuses_the_acf_files(search_spaces_dir: Path, tmp_path: Path) -> None:
    """What makes a resumed tune hit the driver's journal cache (keyed by the ACF's sha256)."""

    def replay(seed: int, score_of=lambda p, i: float(i)) -> list[str]:
        engine = _engine(search_spaces_dir, tmp_path / "acf", extra={"param.N": ss.range(1, 50)}, seed=seed)
        shas: list[str] = []
        while proposals := engine.ask():
            for i, proposal in enumerate(proposals):
                engine.tell(proposal, (score_of(proposal, i),))
            shas.extend(p.acf.sha256 for p in proposals)
        return shas

    first = replay(3)
    assert replay(3) == first
    files_before = set((tmp_path / "acf").glob("*.acf"))
    # Other scores told in generation 0: generation 0 is reused, generation 1 is new.
    changed = replay(3, lambda p, i: float(-p.params.get("param.N", 0)))
    assert changed[:6] == first[:6] and set(changed[6:]).isdisjoint(first[6:])
    assert set((tmp_path / "acf").glob("*.acf")) > files_before
    # Another seed: nothing reused.
    assert set(replay(4)).isdisjoint(first)


# ----------------------------------------------------------------------------- what the compilers accept


@pytest.fixture(scope="module")
def sampled_acfs(tmp_path_factory: pytest.TempPathFactory, search_spaces_dir: Path) -> dict[str, Path]:
    if not _have_compileiq():
        pytest.skip('needs compileiq: pip install "ciq-build[acf]"')
    out = {}
    for spec in ("ptxas-acf:13.3", "nvcc-acf:13.3"):
        engine = _engine(search_spaces_dir, tmp_path_factory.mktemp("acf"), spec=spec, seed=1)
        out[spec.split("-")[0]] = engine.ask()[0].acf.path
    return out


@pytest.mark.acf
@pytest.mark.slow
def test_ptxas_acf_accepted_by_13_3_and_refused_by_13_0(sampled_acfs: dict[str, Path], cuda133_bin: Path,
                                                       system_nvcc: Path, kernel: Path, tmp_path: Path) -> None:
    acf = sampled_acfs["ptxas"]
    code, output = _nvcc_compile(cuda133_bin / "nvcc", kernel, tmp_path / "ok.o", f"-Xptxas=--apply-controls={acf}")
    assert code == 0, output
    version = run([system_nvcc, "--version"], timeout=30).stdout
    system_major_minor = re.search(r"release (\d+\.\d+)", version).group(1)
    if system_major_minor == "13.3":
        pytest.skip("the system nvcc is 13.3 too: no mismatch to show")
    code, output = _nvcc_compile(system_nvcc, kernel, tmp_path / "no.o", "-Xptxas", f"--apply-controls={acf}")
    assert code != 0 and "not in expected format" in output
    # ciq_build refuses this pairing before nvcc is ever run.
    with pytest.raises(ToolchainError, match=re.escape('pip install "ciq-build[cuda]"')):
        check_toolkit_accepts("ptxas", "13.3", system_major_minor)


@pytest.mark.acf
@pytest.mark.slow
def test_nvcc_acf_refused_for_sm_90_accepted_for_sm_100(sampled_acfs: dict[str, Path], cuda133_bin: Path,
                                                       kernel: Path, tmp_path: Path) -> None:
    nvcc = cuda133_bin / "nvcc"
    acf = sampled_acfs["nvcc"]
    result = run([nvcc, "-arch=sm_90a", "-c", kernel, "-o", tmp_path / "90.o", "--apply-controls", acf], timeout=120)
    assert not result.ok and "-apply-controls is not supported on this target" in result.stdout + result.stderr
    with pytest.raises(ConfigError, match="ptxas-acf"):
        check_nvcc_acf_architectures("90a")
    result = run([nvcc, "-arch=sm_100a", "-c", kernel, "-o", tmp_path / "100.o", "--apply-controls", acf], timeout=120)
    assert result.ok, result.output_tail()
    check_nvcc_acf_architectures("100a")


# ----------------------------------------------------------------------------- end to end


@pytest.mark.acf
@pytest.mark.slow
@needs_compileiq
def test_short_ptxas_acf_search_reduces_spills(search_spaces_dir: Path, cuda133_bin: Path, kernel: Path,
                                               tmp_path: Path) -> None:
    nvcc = cuda133_bin / "nvcc"
    # The front end runs once; each candidate is nvcc driving ptxas only (a .ptx input), the
    # ACF passed exactly as a tuning build passes it.
    ptx = tmp_path / "spill.ptx"
    assert run([nvcc, "-arch=sm_90a", "-ptx", kernel, "-o", ptx], timeout=120).ok

    def spill_stores(acf: Path | None, name: str) -> float | None:
        extra = ["-Xptxas=-v", MAXRREG] + ([f"-Xptxas=--apply-controls={acf}"] if acf else [])
        result = run([nvcc, "-arch=sm_90a", "-cubin", ptx, "-o", tmp_path / f"{name}.cubin", *extra], timeout=120)
        return float(_spill_stores(result.stdout + result.stderr)) if result.ok else None

    default = spill_stores(None, "default")
    assert default and default > 0, "the kernel must spill at the default for this test to mean anything"
    engine = _engine(search_spaces_dir, tmp_path / "acf", seed=1, generations=3, pool_size=8)
    scores: list[float] = []
    with ThreadPoolExecutor(2) as pool:
        while proposals := engine.ask():
            results = list(pool.map(lambda p: spill_stores(p.acf.path, str(p.id)), proposals))
            for proposal, value in zip(proposals, results):
                engine.tell(proposal, None if value is None else (value,), "compile_failed")
            scores.extend(v for v in results if v is not None)
    assert len(scores) >= 16
    assert min(scores) < default, f"best {min(scores)} vs default {default}"


@pytest.mark.acf
def test_an_acf_space_for_a_toolkit_without_spaces_is_refused_before_any_network(
        system_nvcc: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--controls ptxas-acf` on the system's CUDA 13.0: one line naming the toolkit and what to configure.

    Before, compileiq was asked for a 13.0 space and failed with a raw network error from NVIDIA's releases.
    """
    from ciq_build.compiler import toolchain as toolchains

    toolchain = toolchains.find_toolchain(system_nvcc, explicit_from="the test")
    if toolchains.major_minor(toolchain.version) >= "13.3":
        pytest.skip("the system nvcc has ACF search spaces: nothing to refuse")
    monkeypatch.delenv(compileiq_spaces.SPACES_DIR_ENV, raising=False)
    asked: list[object] = []
    from compileiq.search_spaces import resolver

    monkeypatch.setattr(resolver, "resolve_with_metadata", lambda **kw: asked.append(kw))
    for spec in ("ptxas-acf", "nvcc-acf", "ptxas-acf:13.3"):
        with pytest.raises(ToolchainError) as refused:
            compileiq_engine.CompileIqStrategy().make(SearchRequest(
                {}, SearchConfiguration(generations=1), ("spill_bytes",), acf_space=spec, acf_dir=tmp_path,
                toolchain=toolchain))
        message = str(refused.value)
        assert f"CUDA {toolchain.version}" in message or f"CUDA {toolchain.major_minor}" in message, message
        pip = getattr(toolchains, "pip_nvcc", lambda: None)()
        if spec != "ptxas-acf:13.3" and pip is not None:
            assert f"-DCMAKE_CUDA_COMPILER={pip}" in message, message
    assert not asked, "compileiq was asked for a search space (network) before the toolkit was refused"
