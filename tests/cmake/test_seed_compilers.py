"""The tests' shortcut past CMake's compiler identification (tests/identified_compilers.py,
tests/projects/seed_compilers.cmake) changes nothing a test sees: a seeded tree is the tree an
identifying configure makes, and a configure that asks for anything else is not seeded.

Real CMake, Ninja and nvcc on tests/projects/transient, with the cmake the tunes run.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

import identified_compilers
from ciq_build import resources
from ciq_build.measure.proc import ProcResult, run
from support import PROJECTS, REPO_ROOT, ensure_ok

pytestmark = pytest.mark.slow

PROJECT = PROJECTS / "transient"


@pytest.fixture
def seed() -> Path:
    value = os.environ.get(identified_compilers.ENV)
    if value == "":
        pytest.skip(f"{identified_compilers.ENV} is set empty: the shortcut is off")
    assert value, "the session's probe did not configure (tests/conftest.py): every tree identifies its compilers"
    return Path(value)


def _configure(build: Path, nvcc: Path, seed: str, *args: str) -> ProcResult:
    """Configure a copy of the project (it writes into its sources) into `build` (with Ninja unless `args`
    name another generator)."""
    source = build.with_name(f"{build.name} src")
    shutil.copytree(PROJECT, source)
    ninja = shutil.which(resources.build_tool("ninja"))
    assert ninja, "no ninja"
    generator = args if "-G" in args else ("-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={ninja}", *args)
    return ensure_ok(run([resources.build_tool("cmake"), "-S", source, "-B", build, f"-DCMAKE_CUDA_COMPILER={nvcc}",
                          f"-Dciq_build_DIR={REPO_ROOT / 'cmake'}", *generator],
                         timeout=300, env={**os.environ, identified_compilers.ENV: seed}))


def _identified(build: Path) -> bool:
    """Whether this configure identified the compilers (CMake leaves the identifying compile's folder)."""
    return any(build.glob("CMakeFiles/*/CompilerIdCUDA"))


def _cache(build: Path) -> dict[str, tuple[str, str, str]]:
    """The tree's cache entries, its own folders named alike (<source>, <build>) in every tree."""
    def alike(value: str) -> str:
        return value.replace(f"{build} src", "<source>").replace(str(build), "<build>")
    entries = identified_compilers.cache_entries(build / "CMakeCache.txt")
    return {name: (kind, alike(value), doc) for name, (kind, value, doc) in entries.items()}


def test_a_seeded_tree_has_the_cache_of_an_identifying_configure_without_identifying(
        cuda133_bin: Path, seed: Path, tmp_path: Path) -> None:
    seeded, identifying = tmp_path / "seeded", tmp_path / "identifying"
    _configure(seeded, cuda133_bin / "nvcc", str(seed))
    _configure(identifying, cuda133_bin / "nvcc", "")
    assert not _identified(seeded) and _identified(identifying)
    # The cache is what ciq_build reads of a user's tree and replays into its scratch trees: the C++
    # compiler, ar, ld and the rest as identifying found them, each with its type and help text.
    seeded_cache, identifying_cache = _cache(seeded), _cache(identifying)
    assert seeded_cache.keys() == identifying_cache.keys()
    assert {n: e for n, e in seeded_cache.items() if identifying_cache[n] != e} == {}


@pytest.mark.parametrize("asked", ["other CUDA flags", "another generator", "another nvcc"])
def test_a_configure_that_asks_for_anything_else_identifies_its_compilers(
        asked: str, cuda133_bin: Path, seed: Path, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    build = tmp_path / "build"
    if asked == "other CUDA flags":
        _configure(build, cuda133_bin / "nvcc", str(seed), "-DCMAKE_CUDA_FLAGS=-lineinfo")
    elif asked == "another generator":
        _configure(build, cuda133_bin / "nvcc", str(seed), "-G", "Unix Makefiles")
    else:
        _configure(build, request.getfixturevalue("system_nvcc"), str(seed))
    assert _identified(build)
