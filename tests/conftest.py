"""Shared fixtures: the real CUDA toolchains on this machine, and sample projects."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
SAMPLE_EXTENSION = REPO_ROOT / "sample_extension"


def _pip_cuda_bin() -> Path | None:
    try:
        import nvidia.cu13
    except ImportError:
        return None
    for base in nvidia.cu13.__path__:
        candidate = Path(base) / "bin" / "nvcc"
        if candidate.is_file():
            return candidate.parent
    return None


@pytest.fixture(scope="session")
def cuda133_bin() -> Path:
    """bin/ of the pip-installed CUDA 13.3 toolkit (nvcc, ptxas, cuobjdump)."""
    found = _pip_cuda_bin()
    if found is None:
        pytest.skip('needs the CUDA 13.3 toolkit from PyPI: pip install "ciq-build[cuda]"')
    return found


@pytest.fixture(scope="session")
def system_nvcc() -> Path:
    """A second, different toolkit (the system's), for version-mismatch tests."""
    found = shutil.which("nvcc")
    if found is None:
        pytest.skip("needs a system nvcc on PATH (a toolkit other than the pip one)")
    return Path(found)


@pytest.fixture(scope="session")
def search_spaces_dir() -> Path:
    """The real NVIDIA compiler search spaces (never committed; CI points at them)."""
    value = os.environ.get("CIQ_SEARCH_SPACES_DIR")
    path = Path(value) if value else REPO_ROOT.parent / "shared" / "search-spaces"
    if not (path / "ptxas13.3.bin").is_file():
        pytest.skip(f"needs the CUDA 13.3 search spaces (set CIQ_SEARCH_SPACES_DIR; looked in {path})")
    return path


@pytest.fixture(autouse=True)
def _working_directory_left_as_found() -> Iterator[None]:
    """A test (or the code it runs in this process) that leaves the process in another directory breaks
    every later test of its worker that starts a tool without cwd= (CMake cannot even start in a folder
    since deleted): this names the test that did it, and puts the directory back."""
    before = os.getcwd()
    yield
    try:
        after = os.getcwd()
    except FileNotFoundError:
        after = "(a directory since deleted)"
    if after != before:
        os.chdir(before)
        pytest.fail(f"the test left the process's working directory at {after}, not {before}")
