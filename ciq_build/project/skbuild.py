"""What scikit-build-core gives CMake, given too when `tune -S` configures a package that it builds.

pip's build of such a package configures CMake with the Python environment's packages on
`CMAKE_PREFIX_PATH` (its `search.site-packages`, on by default) and the building Python as
`Python_EXECUTABLE`, so its CMakeLists.txt says `find_package(nanobind CONFIG REQUIRED)` (or pybind11's)
and nothing more. A plain configure of it found neither: curadon's `tune -S . -B build` stopped at
"Could not find a package configuration file provided by nanobind".
"""

from __future__ import annotations

import sys
import sysconfig
import tomllib
from pathlib import Path

# The settings given here, each left to the user who passes it (--cmake-arg=-D<NAME>=...).
_PYTHON_NAMES = ("Python_EXECUTABLE", "Python3_EXECUTABLE")


def is_scikit_build_core_project(source_dir: Path) -> bool:
    """Whether the project's pyproject.toml names scikit-build-core as its build backend."""
    try:
        with open(source_dir / "pyproject.toml", "rb") as file:
            backend = tomllib.load(file).get("build-system", {}).get("build-backend", "")
    except (OSError, tomllib.TOMLDecodeError):
        return False
    return isinstance(backend, str) and backend.startswith("scikit_build_core")


def site_packages() -> list[Path]:
    """This Python's package folders, as scikit-build-core puts them on CMAKE_PREFIX_PATH."""
    paths = sysconfig.get_paths()
    return list(dict.fromkeys(Path(paths[key]) for key in ("purelib", "platlib")))


def scikit_build_core_args(source_dir: Path, cmake_args: list[str],
                           packages: list[Path] | None = None) -> list[str]:
    """The -D settings scikit-build-core would give `source_dir`'s configure that `cmake_args` does not set
    (none for a project it does not build)."""
    if not is_scikit_build_core_project(source_dir):
        return []
    given = {arg[2:].split("=", 1)[0].split(":", 1)[0] for arg in cmake_args if arg.startswith("-D")}
    args = []
    if "CMAKE_PREFIX_PATH" not in given:
        folders = site_packages() if packages is None else packages
        args.append(f"-DCMAKE_PREFIX_PATH={';'.join(str(folder) for folder in folders)}")
    args += [f"-D{name}={sys.executable}" for name in _PYTHON_NAMES if name not in given]
    return args
