"""What scikit-build-core gives CMake, given too when `tune -S` configures a package that it builds.

pip's build of such a package configures CMake with the Python environment's packages on
`CMAKE_PREFIX_PATH` (its `search.site-packages`, on by default), the building Python as
`Python_EXECUTABLE`, and the package's own `cmake.build-type` and `cmake.define` settings, so its
CMakeLists.txt says `find_package(nanobind CONFIG REQUIRED)` (or pybind11's) and nothing more. A plain
configure of it found none of them: curadon's `tune -S . -B build` stopped at "Could not find a package
configuration file provided by nanobind".
"""

from __future__ import annotations

import os
import sys
import sysconfig
import tomllib
from pathlib import Path
from typing import Any

# Where FindPython looks for the interpreter first (each setting given here is left to a user who passes it).
_PYTHON_NAMES = ("Python_EXECUTABLE", "Python3_EXECUTABLE")


def _pyproject(source_dir: Path) -> dict[str, Any]:
    try:
        with open(source_dir / "pyproject.toml", "rb") as file:
            return tomllib.load(file)
    except (OSError, tomllib.TOMLDecodeError):
        return {}


def is_scikit_build_core_project(source_dir: Path) -> bool:
    """Whether the project's pyproject.toml names scikit-build-core as its build backend."""
    backend = _pyproject(source_dir).get("build-system", {}).get("build-backend", "")
    return isinstance(backend, str) and backend.startswith("scikit_build_core")


def _defined(value: object) -> str | None:
    """A `[tool.scikit-build.cmake.define]` value as scikit-build-core passes it (None: one not read here)."""
    if isinstance(value, dict) and isinstance(value.get("env"), str):  # {env = "NAME", default = ...}
        value = os.environ.get(value["env"], value.get("default"))
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, list):
        return ";".join(str(item) for item in value)
    return value if isinstance(value, str) else None


def _package_settings(source_dir: Path) -> dict[str, str]:
    """What the package's own pyproject.toml tells scikit-build-core to give CMake: its build type (Release
    unless it says another; a plain configure has none, and -DNDEBUG changes a kernel's asserts) and its
    `cmake.define` table (CMAKE_CUDA_ARCHITECTURES there, unread, would tune code pip's build never makes)."""
    cmake = _pyproject(source_dir).get("tool", {}).get("scikit-build", {}).get("cmake", {})
    settings = {}
    build_type = cmake.get("build-type", "Release")
    if isinstance(build_type, str) and build_type:
        settings["CMAKE_BUILD_TYPE"] = build_type
    for name, value in (cmake.get("define") or {}).items():
        if (text := _defined(value)) is not None:
            settings[name] = text
    return settings


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
    folders = site_packages() if packages is None else packages
    settings = {"CMAKE_PREFIX_PATH": ";".join(str(folder) for folder in folders),
                **{name: sys.executable for name in _PYTHON_NAMES}, **_package_settings(source_dir)}
    return [f"-D{name}={value}" for name, value in settings.items() if name not in given]
