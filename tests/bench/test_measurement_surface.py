"""bench/'s experiments import ciq_build only through its public API and ciq_build.testing, whose every name
is documented in its docstring."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from ciq_build import testing
from support import REPO_ROOT

BENCH = REPO_ROOT / "bench"
ALLOWED = {"ciq_build", "ciq_build.testing"}


def _imported_modules(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "ciq_build":
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.split(".")[0] == "ciq_build"}
    return found


def test_the_experiments_import_only_the_public_api_and_the_measurement_surface() -> None:
    scripts = sorted(BENCH.rglob("*.py"))
    assert len(scripts) >= 10, scripts  # the experiments were found: not a vacuous check
    wrong = {str(p.relative_to(REPO_ROOT)): sorted(_imported_modules(p) - ALLOWED) for p in scripts}
    assert {path: modules for path, modules in wrong.items() if modules} == {}


def test_every_name_of_the_surface_is_documented_and_resolves() -> None:
    documented = set(re.findall(r"``(\w+)", testing.__doc__ or ""))
    assert set(testing.__all__) - documented == set()
    assert all(getattr(testing, name) is not None for name in testing.__all__)
