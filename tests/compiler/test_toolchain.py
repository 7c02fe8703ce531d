"""Finding the CUDA compiler and measuring what it accepts, with the real toolkits here.

Two real toolkits are used: CUDA 13.3 from PyPI (nvidia.cu13, not on PATH)
and the system's CUDA 13.0 (/usr/local/bin/nvcc, a wrapper script).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ciq_build.compiler.architectures import arch_number
from ciq_build.compiler.probe import probe_capabilities
from ciq_build.compiler.toolchain import Toolchain, find_toolchain, load_toolchain, major_minor, parse_version
from ciq_build.errors import ToolchainError

NVCC_133_VERSION_TEXT = """nvcc: NVIDIA (R) Cuda compiler driver
Copyright (c) 2005-2026 NVIDIA Corporation
Built on Tue_Jun_09_02:43:40_PM_PDT_2026
Cuda compilation tools, release 13.3, V13.3.73
Build cuda_13.3.r13.3/compiler.38244171_0
"""


@pytest.fixture(scope="module")
def pip_toolchain(cuda133_bin: Path) -> Toolchain:
    return find_toolchain(cuda133_bin / "nvcc")


@pytest.fixture(scope="module")
def system_toolchain(system_nvcc: Path) -> Toolchain:
    found = find_toolchain(system_nvcc)
    if found.major_minor == "13.3":
        pytest.skip("the system nvcc is 13.3 too; these tests need a different toolkit on PATH")
    return found


@pytest.fixture(scope="module")
def probe_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("probe-cache")


# ---------------------------------------------------------------- versions


def test_version_parsing_reads_the_full_version_and_major_minor() -> None:
    assert parse_version(NVCC_133_VERSION_TEXT) == "13.3.73"
    assert major_minor("13.3.73") == "13.3"
    # An nvcc that prints only the release line still yields major.minor.
    assert parse_version("Cuda compilation tools, release 12.8") == "12.8"
    with pytest.raises(ToolchainError, match=r'pip install "ciq-build\[cuda\]"'):
        parse_version("gcc (GCC) 12.2.0")


@pytest.mark.parametrize(
    ("given", "expected"),
    [("sm_90a", "90a"), ("compute_90", "90"), ("90a-real", "90a"), ("100", "100"), ("SM_80", "80")],
)
def test_arch_number_accepts_nvcc_and_cmake_spellings(given: str, expected: str) -> None:
    assert arch_number(given) == expected


def test_arch_number_rejects_non_architectures() -> None:
    with pytest.raises(ToolchainError, match="90a"):
        arch_number("native")


# ---------------------------------------------------------------- discovery


def test_without_explicit_compiler_the_pip_toolkit_is_found_first(cuda133_bin: Path) -> None:
    # PATH holds the system 13.0 nvcc here; the pip toolkit must still win.
    found = find_toolchain()
    assert found.source == "pip"
    assert found.nvcc == cuda133_bin / "nvcc"
    assert found.version == "13.3.73" and found.major_minor == "13.3"
    assert found.ptxas == cuda133_bin / "ptxas" and found.ptxas_version == "13.3.73"
    assert found.cuobjdump == cuda133_bin / "cuobjdump"
    assert found.nvdisasm == cuda133_bin / "nvdisasm"


def test_an_explicit_compiler_wins_over_the_pip_toolkit(
    system_toolchain: Toolchain, system_nvcc: Path
) -> None:
    assert system_toolchain.source == "explicit"
    assert system_toolchain.nvcc == system_nvcc.absolute()
    assert system_toolchain.major_minor == "13.0"
    # /usr/local/bin/nvcc is a wrapper script; ptxas is the same toolkit's.
    assert system_toolchain.ptxas_version.startswith("13.0.")
    assert "13.0" in system_toolchain.describe() and "explicit" in system_toolchain.describe()


def test_a_missing_explicit_compiler_is_an_error_not_a_fallback(tmp_path: Path) -> None:
    with pytest.raises(ToolchainError) as info:
        find_toolchain(tmp_path / "no" / "nvcc")
    message = str(info.value)
    assert str(tmp_path / "no" / "nvcc") in message
    assert 'pip install "ciq-build[cuda]"' in message and "-DCMAKE_CUDA_COMPILER" in message


def test_cuda_home_comes_before_path_when_pip_is_skipped(cuda133_bin: Path, system_nvcc: Path) -> None:
    env = {"CUDA_HOME": str(cuda133_bin.parent), "PATH": str(system_nvcc.parent)}
    found = find_toolchain(env=env, search_pip=False)
    assert (found.source, found.version) == ("CUDA_HOME", "13.3.73")


def test_cuda_path_is_used_when_cuda_home_has_no_nvcc(
    cuda133_bin: Path, system_nvcc: Path, tmp_path: Path
) -> None:
    env = {"CUDA_HOME": str(tmp_path), "CUDA_PATH": str(cuda133_bin.parent), "PATH": str(system_nvcc.parent)}
    found = find_toolchain(env=env, search_pip=False)
    assert (found.source, found.version) == ("CUDA_PATH", "13.3.73")


def test_path_is_the_last_resort(system_nvcc: Path, system_toolchain: Toolchain) -> None:
    found = find_toolchain(env={"PATH": str(system_nvcc.parent)}, search_pip=False)
    assert found.source == "PATH"
    assert found.version == system_toolchain.version


def test_no_compiler_anywhere_says_how_to_install(tmp_path: Path) -> None:
    with pytest.raises(ToolchainError) as info:
        find_toolchain(env={"CUDA_HOME": str(tmp_path), "PATH": str(tmp_path)}, search_pip=False)
    message = str(info.value)
    assert f"CUDA_HOME: {tmp_path / 'bin' / 'nvcc'}" in message
    assert 'pip install "ciq-build[cuda]"' in message


def test_a_file_that_is_not_nvcc_is_refused(tmp_path: Path) -> None:
    fake = tmp_path / "nvcc"
    fake.write_text("#!/bin/sh\necho hello\n")
    fake.chmod(0o755)
    with pytest.raises(ToolchainError, match="cannot read a CUDA version"):
        load_toolchain(fake)


def test_a_process_asks_a_tool_its_version_once_until_the_file_changes(tmp_path: Path) -> None:
    # Every tune loads its toolchain (tune --all: one a target; a test session: hundreds): nvcc --version and
    # ptxas --version are asked once per process and state of the file. Test doubles that count the asking.
    bin_dir, asked = tmp_path / "bin", tmp_path / "asked"
    bin_dir.mkdir()

    def tool(name: str, release: str) -> None:
        text = NVCC_133_VERSION_TEXT.replace("13.3", release)
        (bin_dir / name).write_text(f"#!/bin/sh\necho {name} >> {asked}\ncat <<'EOF'\n{text}EOF\n")
        (bin_dir / name).chmod(0o755)

    for name in ("nvcc", "ptxas", "cuobjdump", "nvdisasm"):
        tool(name, "13.3")
    assert load_toolchain(bin_dir / "nvcc").version == load_toolchain(bin_dir / "nvcc").version == "13.3.73"
    assert asked.read_text().split() == ["nvcc", "ptxas"]
    os.unlink(bin_dir / "nvcc")  # another toolkit installed over it: a new file
    tool("nvcc", "13.4")
    assert load_toolchain(bin_dir / "nvcc").version == "13.4.73"
    assert asked.read_text().split() == ["nvcc", "ptxas", "nvcc"]


# ---------------------------------------------------------------- capabilities


@pytest.mark.slow
def test_probe_measures_the_apply_controls_options(
    pip_toolchain: Toolchain, system_toolchain: Toolchain, probe_cache: Path
) -> None:
    new = probe_capabilities(pip_toolchain, cache_dir=probe_cache)
    old = probe_capabilities(system_toolchain, cache_dir=probe_cache)
    # Measured: nvcc 13.3 knows --apply-controls; nvcc 13.0 says "Unknown option".
    assert new.nvcc_apply_controls is True
    assert old.nvcc_apply_controls is False
    # Both ptxas versions know the option (13.0 then refuses 13.3's ACF format).
    assert new.ptxas_apply_controls is True
    assert old.ptxas_apply_controls is True


def test_probe_lists_the_supported_architectures(pip_toolchain: Toolchain, probe_cache: Path) -> None:
    caps = probe_capabilities(pip_toolchain, cache_dir=probe_cache)
    assert {"80", "90", "100"} <= set(caps.gpu_codes)
    assert {"80", "90", "100"} <= set(caps.gpu_archs)
    assert caps.supports_arch("sm_90a") and caps.supports_arch("90")
    assert not caps.supports_arch("35")


@pytest.mark.slow
def test_probe_tells_accepted_options_from_refused_ones(pip_toolchain: Toolchain, probe_cache: Path) -> None:
    options = [
        "-Xptxas=-O2",
        "-maxrregcount=64",
        "-Xptxas=--register-usage-level=5",
        "--Ofast-compile=max",
        # Measured refusals of nvcc 13.3:
        "--register-usage-level=5",  # "Unknown option": a ptxas option only
        "-Ofast-compile=max",  # read as -O with value "fast-compile=max"
        "-Xptxas=--register-usage-level=11",  # compiles, but "option will be ignored"
        "-Xptxas=--def-load-cache=zz",  # ptxas error
        "--no-such-option",
    ]
    caps = probe_capabilities(pip_toolchain, options, arch="90a", cache_dir=probe_cache)
    assert caps.probe_arch == "90a"
    assert {o for o in options if caps.accepts(o)} == set(options[:4])
    assert not caps.accepts("-Xptxas=-O1")  # never probed counts as refused


@pytest.mark.slow
def test_probe_results_are_cached_per_toolchain(pip_toolchain: Toolchain, tmp_path: Path) -> None:
    probe_capabilities(pip_toolchain, ["-Xptxas=-O1"], arch="90a", cache_dir=tmp_path)
    files = list(tmp_path.glob("toolchain-*.json"))
    assert len(files) == 1
    data = json.loads(files[0].read_text())
    assert data["version"] == "13.3.73" and data["options"]["90a"] == {"-Xptxas=-O1": True}
    # The second call is answered from the file: an answer planted there is
    # returned although nvcc would refuse the option.
    data["options"]["90a"]["--planted-option"] = True
    files[0].write_text(json.dumps(data))
    assert probe_capabilities(pip_toolchain, ["--planted-option"], arch="90a", cache_dir=tmp_path).accepts(
        "--planted-option"
    )


@pytest.mark.slow
def test_a_damaged_cache_is_probed_again(pip_toolchain: Toolchain, tmp_path: Path) -> None:
    probe_capabilities(pip_toolchain, cache_dir=tmp_path)
    (cache_file,) = tmp_path.glob("toolchain-*.json")
    cache_file.write_text("{ not json")
    caps = probe_capabilities(pip_toolchain, ["-Xptxas=-O3"], arch="90a", cache_dir=tmp_path)
    assert caps.accepts("-Xptxas=-O3") and caps.nvcc_apply_controls
    assert json.loads(cache_file.read_text())["schema"] == 1


def test_two_toolchains_never_share_a_cache_entry(
    pip_toolchain: Toolchain, system_toolchain: Toolchain, probe_cache: Path
) -> None:
    probe_capabilities(pip_toolchain, cache_dir=probe_cache)
    probe_capabilities(system_toolchain, cache_dir=probe_cache)
    versions = sorted(json.loads(p.read_text())["version"] for p in probe_cache.glob("toolchain-*.json"))
    assert versions == sorted([pip_toolchain.version, system_toolchain.version])


def test_default_cache_dir_follows_the_environment(tmp_path: Path) -> None:
    from ciq_build.compiler.toolchain import default_cache_dir

    assert default_cache_dir({"CIQ_BUILD_CACHE_DIR": str(tmp_path)}) == tmp_path
    assert default_cache_dir({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "ciq_build"
    assert default_cache_dir({}) == Path(os.path.expanduser("~")) / ".cache" / "ciq_build"


def test_other_toolkits_are_those_the_search_order_finds_beside_the_chosen_one(tmp_path: Path) -> None:
    from ciq_build.compiler.toolchain import other_toolkits, pip_nvcc

    home = tmp_path / "cuda"
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "nvcc").write_text("")  # only its path is looked at
    env = {"CUDA_HOME": str(home), "CUDA_PATH": str(home), "PATH": ""}  # the same one twice: listed once
    pip = pip_nvcc()
    others = other_toolkits(home / "bin" / "nvcc", env)
    assert others == ([("pip", pip)] if pip is not None and pip.is_file() else [])
    if pip is not None and pip.is_file():
        assert other_toolkits(pip, env) == [("CUDA_HOME", home / "bin" / "nvcc")]


def test_python_m_ciq_build_nvcc_prints_the_pip_toolkits_nvcc_for_cmake() -> None:
    """The pip toolkit's nvcc is never on PATH: a new user (BabelStream) searched site-packages for the path that
    README asks them to configure CMAKE_CUDA_COMPILER with; `--nvcc` prints it, as `--cmake-dir` the module's."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "ciq_build", "--nvcc"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    nvcc = Path(done.stdout.strip())
    assert nvcc.name == "nvcc" and nvcc.parent.name == "bin" and "nvidia" in nvcc.parts, nvcc
    version = subprocess.run([str(nvcc), "--version"], capture_output=True, text=True, timeout=60)
    assert "Cuda compilation tools, release 13." in version.stdout, version.stdout
