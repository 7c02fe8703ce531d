"""docs/ARCHITECTURE.md is true of the tree: every module listed once, in layers, and imports only point down.

The layout block of the doc is the one source: a line per package, `<layer> <package> <modules>`, the
modules of a package in an order where each imports only those before it. Every import counts, the
deferred ones inside functions too (a deferred import steps around a layer or a cycle just as well),
and so does a module named as a string, `"ciq_build.x.y:attribute"` or `"ciq_build.x.y"`, which is
imported when asked (a registry's entries, a `Lookup`), or imported by code handed to another Python process
(`python -c "from ciq_build.x.y import f; f()"`): only the registries the doc lists may name
modules so, above their layer, and counting those names there is no cycle either.
"""

from __future__ import annotations

import ast
import re
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

from ciq_build.core.causes import Cause

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "ciq_build"
DOC = (REPO / "docs" / "ARCHITECTURE.md").read_text()
TOP = "(top)"  # ciq_build's own modules below every package (errors, resources)
ENTRY = "(entry)"  # ciq_build's own modules above every package (the command line, setuptools, the API)


def _layout() -> dict[str, tuple[int, int]]:
    """Each module's (layer, place in its package) from the doc's layout block."""
    block = DOC.split("```")[1]
    placed: dict[str, tuple[int, int]] = {}
    places: dict[str, int] = {}  # a package's modules may go on over several lines
    for line in block.splitlines():
        match = re.fullmatch(r"\s*(\d+)\s+(\S+)\s+(.+?)\s*", line)
        if not match:
            continue
        layer, package, names = int(match.group(1)), match.group(2), match.group(3)
        prefix = "ciq_build." if package in (TOP, ENTRY) else f"ciq_build.{package}."
        for name in (n.strip() for n in names.split(",") if n.strip()):
            place = places[package] = places.get(package, -1) + 1
            module = "ciq_build" if name == "__init__" else prefix + name
            assert module not in placed, f"{module} is listed twice in the layout block"
            placed[module] = (layer, place)
        if package not in (TOP, ENTRY):
            placed[f"ciq_build.{package}"] = (layer, -1)  # the package's __init__: first of its package
    return placed


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(REPO).with_suffix("").parts
        found[".".join(parts).removesuffix(".__init__")] = path
    return found


def _imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """The ciq_build modules `path` imports anywhere in it, deferred imports included."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("ciq_build"):
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                out.add(sub if sub in modules else node.module)
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("ciq_build")}
    return {target for target in out if target in modules}


_NAMED = re.compile(r"(ciq_build\.[\w.]+)(?::\w+)?")  # a module, or an attribute of one, named as a string
# Python code handed to another process (`python -c "from ciq_build.x import f; f()"`) imports there.
_IMPORTED_IN_CODE = re.compile(r"\b(?:from\s+(ciq_build(?:\.\w+)+)\s+import\b|import\s+(ciq_build(?:\.\w+)+))")


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring constants in `tree` (their examples name modules, but import nothing)."""
    return {id(body[0].value) for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and (body := node.body) and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)}


def _strings_naming(path: Path) -> set[str]:
    """What `path`'s strings name as `ciq_build.<module>:attribute` or `ciq_build.<module>` (not all are modules:
    a logger's or an engine's name reads the same), or import in code for another Python process."""
    tree = ast.parse(path.read_text())
    docstrings = _docstrings(tree)
    named = set()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)) or id(node) in docstrings:
            continue
        if match := _NAMED.fullmatch(node.value):
            named.add(match.group(1))
        named |= {m.group(1) or m.group(2) for m in _IMPORTED_IN_CODE.finditer(node.value)}
    return named


def _named(path: Path, modules: dict[str, Path]) -> set[str]:
    """The ciq_build modules `path` names as strings, to import when asked."""
    return _strings_naming(path) & set(modules)


def _registries() -> set[str]:
    """The modules the doc lists as registries: the only ones that may name modules as strings."""
    paragraph = next(p for p in DOC.split("\n\n") if p.startswith("Registries"))
    return {_module_of(path) for path in re.findall(r"`(ciq_build/[\w/]+\.py)`", paragraph)}


def _module_of(path: str) -> str:
    return path.removesuffix(".py").replace("/", ".").removesuffix(".__init__")


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 else module


def test_every_module_is_in_the_architecture_doc() -> None:
    missing = [str(p.relative_to(REPO)) for p in _modules().values() if f"`{p.relative_to(REPO).as_posix()}`" not in DOC]
    assert not missing, f"docs/ARCHITECTURE.md does not list {missing}"


def test_the_layout_block_places_every_module_once() -> None:
    placed, modules = _layout(), _modules()
    assert sorted(set(modules) - set(placed)) == [], "add these to the layout block of docs/ARCHITECTURE.md"
    assert sorted(set(placed) - set(modules)) == [], "the layout block lists modules that do not exist"


def test_imports_only_point_down_the_layers_and_back_in_their_package() -> None:
    placed, modules = _layout(), _modules()
    wrong = []
    for name, path in modules.items():
        layer, place = placed[name]
        for target in _imports(path, modules) - {name}:
            target_layer, target_place = placed[target]
            if target_layer > layer:
                wrong.append(f"{name} -> {target} (layer {layer} imports layer {target_layer})")
            elif _package(target) == _package(name) and "." in name.removeprefix("ciq_build.") \
                    and target_place >= place:
                wrong.append(f"{name} -> {target} (listed after it in its package)")
    assert not wrong, "\n".join(wrong)


def test_only_the_registries_name_modules_as_strings() -> None:
    modules, registries = _modules(), _registries()
    assert registries and registries <= set(modules), f"the doc's registries are no modules: {registries - set(modules)}"
    naming = {name: sorted(named) for name, path in modules.items() if (named := _named(path, modules) - {name})}
    assert not {name for name in naming if name not in registries}, \
        f"only the registries ({sorted(registries)}) may name modules as strings: {naming}"
    unknown = {name: sorted(_strings_naming(modules[name]) - set(modules)) for name in registries}
    assert not any(unknown.values()), f"registries naming modules that do not exist: {unknown}"


def test_no_import_cycle_between_modules_deferred_imports_and_named_modules_included() -> None:
    modules = _modules()
    graph = {name: (_imports(path, modules) | _named(path, modules)) - {name} for name, path in modules.items()}
    try:
        tuple(TopologicalSorter(graph).static_order())
    except CycleError as cycle:
        raise AssertionError(f"import cycle: {' -> '.join(cycle.args[1])}") from None


def test_every_failure_cause_is_documented() -> None:
    assert not [c.value for c in Cause if f"`{c.value}`" not in DOC]


def test_the_wheel_ships_every_sub_package() -> None:
    """pyproject's package list names every folder of ciq_build (ciq_build.ray was left out of wheels once)."""
    import tomllib

    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    folders = {"ciq_build." + p.parent.name for p in PACKAGE.glob("*/__init__.py")} | {"ciq_build"}
    assert folders - listed == set(), "add these to [tool.setuptools] packages in pyproject.toml"


def test_no_room_grows_past_its_size() -> None:
    """The consolidation's limits: no module over 600 lines (split one by job when it would be), and TuneRun,
    the tune's composition root, at most 250 (a step that grows goes into a module of its own)."""
    big = {str(p.relative_to(REPO)): n for p in PACKAGE.rglob("*.py") if (n := len(p.read_text().splitlines())) > 600}
    assert big == {}, "split these by job"
    driver = ast.parse((PACKAGE / "tune" / "driver.py").read_text())
    (tune_run,) = [n for n in driver.body if isinstance(n, ast.ClassDef) and n.name == "TuneRun"]
    assert tune_run.end_lineno is not None and tune_run.end_lineno - tune_run.lineno + 1 <= 250
