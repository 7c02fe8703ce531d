"""ACF files and the up-front refusals of ACFs a compiler would refuse.

The compiler facts behind the refusals (a 13.3 ACF refused by 13.0, nvcc
ACFs refused for sm_90) are checked with the real compilers in
test_engine_compileiq.py, where real ACFs are sampled.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from ciq_build.compiler.acf import (
    check_nvcc_acf_architectures,
    check_toolkit_accepts,
    write_acf,
)
from ciq_build.compiler.controls import AcfRef
from ciq_build.errors import ConfigError, ToolchainError
from ciq_build.state.durable import sha256_file

BLOB = bytes(range(256)) * 3


def test_write_acf_names_the_file_by_its_sha256(tmp_path: Path) -> None:
    ref = write_acf(BLOB.hex(), tmp_path / "acf", "ptxas")
    digest = hashlib.sha256(BLOB).hexdigest()
    assert ref == AcfRef(path=tmp_path / "acf" / f"{digest}.acf", compiler="ptxas", sha256=digest)
    assert ref.path.read_bytes() == BLOB
    assert sha256_file(ref.path) == digest
    # No temporary files are left behind.
    assert sorted(p.name for p in (tmp_path / "acf").iterdir()) == [f"{digest}.acf"]


def test_write_acf_is_idempotent_and_repairs_a_damaged_file(tmp_path: Path) -> None:
    first = write_acf(BLOB, tmp_path, "nvcc")
    assert write_acf(BLOB.hex(), tmp_path, "nvcc") == first
    first.path.write_bytes(b"truncated")
    again = write_acf(BLOB, tmp_path, "nvcc")
    assert again.path.read_bytes() == BLOB


@pytest.mark.parametrize("blob", ["not hex", "", b""])
def test_write_acf_refuses_what_is_not_an_acf(tmp_path: Path, blob: str | bytes) -> None:
    with pytest.raises(ConfigError):
        write_acf(blob, tmp_path, "ptxas")


def test_write_acf_refuses_an_unknown_compiler(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="ptxas' or 'nvcc"):
        write_acf(BLOB, tmp_path, "cicc")


@pytest.mark.parametrize("toolchain", ["13.3", "13.3.73", "13.3.1"])
def test_matching_toolkit_is_accepted(toolchain: str) -> None:
    check_toolkit_accepts("ptxas", "13.3", toolchain)
    check_toolkit_accepts("nvcc", "13.3", toolchain)


@pytest.mark.parametrize("toolchain", ["13.0", "13.0.88", "13.4", "13.5.1", "12.9"])
def test_other_toolkits_are_refused_with_what_to_do(toolchain: str) -> None:
    with pytest.raises(ToolchainError) as info:
        check_toolkit_accepts("ptxas", "13.3", toolchain)
    message = str(info.value)
    assert "CUDA 13.3" in message and f"CUDA {'.'.join(toolchain.split('.')[:2])}" in message
    assert 'pip install "ciq-build[cuda]"' in message
    assert "retune" in message


def test_unreadable_versions_are_config_errors() -> None:
    with pytest.raises(ConfigError):
        check_toolkit_accepts("ptxas", "thirteen", "13.3")
    with pytest.raises(ConfigError):
        check_toolkit_accepts("cicc", "13.3", "13.3")


@pytest.mark.parametrize("archs", ["100a", "100a;120", ["sm_100a", "compute_120"], "103f", "native"])
def test_nvcc_acfs_are_allowed_from_sm_100_on(archs: str | list[str]) -> None:
    check_nvcc_acf_architectures(archs)


@pytest.mark.parametrize(("archs", "named"), [("90a", "90a"), ("80;100a", "80"), (["sm_90"], "sm_90"),
                                              ("all", "all"), ("75-real", "75-real")])
def test_nvcc_acfs_are_refused_before_sm_100_pointing_at_ptxas(archs: str | list[str], named: str) -> None:
    with pytest.raises(ConfigError) as info:
        check_nvcc_acf_architectures(archs)
    message = str(info.value)
    assert named in message
    assert "ptxas-acf" in message
    assert "not supported on this target" in message


def test_unreadable_architecture_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="cannot read the CUDA architecture"):
        check_nvcc_acf_architectures("hopper")
