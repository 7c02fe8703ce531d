"""Helpers shared by the tests that drive CMake and Ninja."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from ciq_build.measure.proc import ProcResult


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


def checked(args: Sequence[str | os.PathLike[str]], *, cwd: str | os.PathLike[str] | None = None,
            env: Mapping[str, str] | None = None, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """Run a tool (cmake, ninja, nvcc) as `subprocess.run(check=True)` would, but fail the test with
    its command line and what it printed: a bare CalledProcessError says neither."""
    argv = [os.fspath(a) for a in args]
    result = subprocess.run(argv, capture_output=True, text=True, cwd=cwd, env=env, timeout=timeout)
    assert result.returncode == 0, (f"{shlex.join(argv)} exited {result.returncode}\n"
                                    f"{(result.stdout + result.stderr)[-6000:]}")
    return result
