"""docs/ARCHITECTURE.md matches the tree, and the import arrows point down its layer list."""

from __future__ import annotations

import ast
from pathlib import Path

from ciq_build.core.causes import Cause

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "ciq_build"
DOC = (REPO / "docs" / "ARCHITECTURE.md").read_text()

# Lower layers first; a module may import its own layer's packages and any lower layer's.
LAYERS = [{"errors", "resources", "__init__"}, {"core"}, {"measure", "state"}, {"compiler"}, {"build"},
          {"pin", "search"}, {"tune"}, {"ray"}, {"reports"}, {"cli", "api", "setuptools_ext", "setuptools_tune", "__main__"}]


def _layer(module: str) -> int:
    part = module.split(".")[1] if "." in module else "__init__"
    return next(i for i, names in enumerate(LAYERS) if part in names)


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(REPO).with_suffix("").parts
        found[".".join(parts).removesuffix(".__init__")] = path
    return found


def _imports(path: Path, modules: dict[str, Path]) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("ciq_build"):
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                out.add(sub if sub in modules else node.module)
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("ciq_build")}
    return out


def test_every_module_is_in_the_architecture_doc() -> None:
    missing = [str(p.relative_to(REPO)) for p in _modules().values() if f"`{p.relative_to(REPO).as_posix()}`" not in DOC]
    assert not missing, f"docs/ARCHITECTURE.md does not list {missing}"


def test_imports_only_point_down_the_layers() -> None:
    modules = _modules()
    upward = []
    for name, path in modules.items():
        for target in _imports(path, modules):
            if target in modules and _layer(target) > _layer(name):
                upward.append(f"{name} -> {target}")
    assert not upward, upward


def test_every_failure_cause_is_documented() -> None:
    assert not [c.value for c in Cause if f"`{c.value}`" not in DOC]


def test_the_wheel_ships_every_sub_package() -> None:
    """pyproject's package list names every folder of ciq_build (ciq_build.ray was left out of wheels once)."""
    import tomllib

    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    folders = {"ciq_build." + p.parent.name for p in PACKAGE.glob("*/__init__.py")} | {"ciq_build"}
    assert folders - listed == set(), "add these to [tool.setuptools] packages in pyproject.toml"
