"""Where ciq_build's own files are, in a source checkout or an installed wheel."""

from __future__ import annotations

from pathlib import Path

_CHECKOUT_CMAKE_DIR = Path(__file__).resolve().parent.parent / "cmake"


def cmake_dir() -> Path:
    """The folder holding ciq_build-config.cmake, for -Dciq_build_DIR=... / find_package(ciq_build CONFIG)."""
    if (_CHECKOUT_CMAKE_DIR / "ciq_build-config.cmake").is_file():
        return _CHECKOUT_CMAKE_DIR
    import ciq_build.cmake as package  # an installed wheel ships cmake/ as the package ciq_build.cmake

    return Path(package.__path__[0])


def build_tool(name: str) -> str:
    """A build tool (cmake, ninja) from PATH, else the one installed beside this Python (a venv not activated)."""
    import shutil
    import sys

    found = shutil.which(name)
    if found:
        return found
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.is_file() else name
