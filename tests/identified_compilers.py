"""A TEST SHORTCUT: CMake's identification of this machine's compilers, done once a test session.

Nearly every tune in the tests configures a new build tree of a project under tests/projects/, and
CMake's identification of the C++ and CUDA compilers (nvcc run several times) was 3.5-6 s of wall time
of each on two loaded cores (3.1-3.2 s wall, 1.9 s CPU on a quieter one; 0.2 s and 0.1 s seeded).
`identify` configures a probe project once and keeps what CMake found, as a seed folder;
tests/conftest.py names it in CIQ_TEST_COMPILERS for the session, and the test projects include
tests/projects/seed_compilers.cmake, which starts a new tree from it where the configure asks for what
the probe asked for (see there). The seeded tree is the tree an identifying configure makes, cache
entries included (tests/cmake/test_seed_compilers.py checks it), so what ciq_build reads from a user's
tree is as in real use. ciq_build's scratch trees are seeded by ciq_build itself
(ciq_build.project.cmake_trees.seed_compilers); this spares the tests' user trees only.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from ciq_build.project.cmake_trees import cmake_escape, seed_compilers

ENV = "CIQ_TEST_COMPILERS"  # the seed folder; set but empty: the shortcut is off (every tree identifies)
GENERATOR = "Ninja"  # the generator shapes what is identified (C++ `import std` support): only Ninja trees are seeded
SEED_SCRIPT = Path(__file__).resolve().parent / "projects" / "seed_compilers.cmake"
_PROBE = """cmake_minimum_required(VERSION 3.24)
set(CMAKE_CUDA_ARCHITECTURES 90a)  # as in every test project (the seed is for a configure that sets some)
include("$ENV{CIQ_TEST_COMPILERS}/seed_compilers.cmake" OPTIONAL)  # unset or empty: no seed
project(probe LANGUAGES CXX CUDA)
"""
_CACHE_ENTRY = re.compile(r"^([^#/:][^:]*):([A-Z]+)=(.*)$")


def identify(root: Path, nvcc: Path, cmake: str, ninja: str) -> Path | None:
    """Configure the probe in `root` and make `root`/seed from it; None where the probe did not configure."""
    source = root / "probe"
    source.mkdir(parents=True)
    (source / "CMakeLists.txt").write_text(_PROBE)

    def configure(build: Path, seed: str) -> bool:
        args = [cmake, "-S", str(source), "-B", str(build), "-G", GENERATOR, f"-DCMAKE_MAKE_PROGRAM={ninja}",
                f"-DCMAKE_CUDA_COMPILER={nvcc}"]
        return subprocess.run(args, capture_output=True, env={**os.environ, ENV: seed}).returncode == 0

    identified = root / "identified"
    seed = root / "seed"
    # What CMake found about the system and each compiler, in seed/CMakeFiles/<version>/: copied as
    # ciq_build copies it from a user's tree into a scratch tree.
    if not configure(identified, "") or not seed_compilers(identified, seed, nvcc):
        return None
    versions = list((seed / "CMakeFiles").iterdir())  # one: the folder of the version of `cmake`
    shutil.copy2(SEED_SCRIPT, seed / SEED_SCRIPT.name)
    (seed / "asked.cmake").write_text(f'set(_ciq_seed_nvcc "{cmake_escape(str(nvcc))}")\n'
                                      f'set(_ciq_seed_generator "{GENERATOR}")\n')
    # Identifying also leaves cache entries (the C++ compiler, ar, ld, ...), which a tree that reads
    # the files above lacks: a second probe, seeded, shows which; the seed sets them as identifying did.
    seeded = root / "seeded"
    if not configure(seeded, str(seed)):
        return None
    script = _missing_cache_entries(identified / "CMakeCache.txt", seeded / "CMakeCache.txt")
    for version in versions:
        (version / "cache.cmake").write_text(script)
    return seed


def cache_entries(cache: Path) -> dict[str, tuple[str, str, str]]:
    """Each entry of a CMakeCache.txt: name -> (type, value, help text)."""
    entries: dict[str, tuple[str, str, str]] = {}
    doc: list[str] = []
    for line in cache.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("//"):
            doc.append(line[2:])
            continue
        entry = _CACHE_ENTRY.match(line)
        if entry:
            name, kind, value = entry.groups()
            entries[name] = (kind, value, "".join(doc))
        doc = []
    return entries


def _missing_cache_entries(identified: Path, seeded: Path) -> str:
    """A CMake script that gives a seeded tree the cache entries (and their types) identifying gave."""
    have = cache_entries(seeded)
    sets, properties, advanced = [], [], []
    for name, (kind, value, doc) in cache_entries(identified).items():
        if name.endswith("-ADVANCED"):  # not an entry: a property of the one named before the suffix
            if name not in have:
                advanced.append(name.removesuffix("-ADVANCED"))
        elif name not in have:
            sets.append(f'set({name} "{cmake_escape(value)}" CACHE {kind} "{cmake_escape(doc)}")')
        elif have[name][0] != kind:  # given on the command line (UNINITIALIZED), typed by identification
            properties.append(f'set_property(CACHE {name} PROPERTY TYPE {kind})\n'
                              f'set_property(CACHE {name} PROPERTY HELPSTRING "{cmake_escape(doc)}")')
    advanced_line = [f"mark_as_advanced(FORCE {' '.join(advanced)})"] if advanced else []
    return "\n".join(sets + properties + advanced_line) + "\n"
