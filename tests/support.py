"""Helpers shared by the tests that drive CMake and Ninja."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from ciq_build.measure.proc import ProcResult

# Where things are, for tests in any folder under tests/.
TESTS = Path(__file__).resolve().parent
REPO_ROOT = TESTS.parent
PROGRAMS = TESTS / "programs"
PROJECTS = TESTS / "projects"


def build_tool(name: str) -> str:
    """A tool installed beside this Python (pip's cmake, ninja), else from PATH; skip without one."""
    # Not `import cmake`: the repository's cmake/ folder shadows the pip package.
    found = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if found is None:
        pytest.skip(f"needs {name} (pip install {name})")
    return found


def ensure_ok(result: ProcResult) -> ProcResult:
    assert result.ok, f"{' '.join(result.args)} {result.describe()}\n{result.output_tail(60)}"
    return result


def said(result: ProcResult) -> str:
    """stdout and stderr with CMake's line wrapping undone."""
    return " ".join((result.stdout + "\n" + result.stderr).split())
