"""What a CMake build tree's cache says: an entry's value, and the cmake and ninja the tree was made with."""

from __future__ import annotations

import os
import re
from pathlib import Path

from ciq_build.resources import build_tool


def cache_value(cache_file: Path, name: str) -> str | None:
    """A CMakeCache.txt entry's value (`NAME:TYPE=value`), or None."""
    try:
        text = cache_file.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    match = re.search(rf"^{re.escape(name)}:[A-Z]+=(.*)$", text, re.M)
    return match.group(1).strip() if match else None


# The cache entry naming each build tool a CMake tree was made with.
_TREE_TOOL_ENTRIES = {"cmake": "CMAKE_COMMAND", "ninja": "CMAKE_MAKE_PROGRAM"}


def tree_tool(build_dir: Path, name: str) -> str:
    """The cmake or ninja that made `build_dir` (its cache says which), else the one build_tool finds.

    A tree's cache, compiler files and Ninja logs belong to the versions that wrote them: a scratch tree
    configured from the user's cache by another cmake (the first on PATH, where the user configured with
    another, e.g. a venv's not activated) identifies every compiler again and may configure the project
    differently, or not at all (a cmake older than the project requires); an older ninja starts the tree's
    deps log over. So the user's tree's tools configure its scratch trees and query it, and each tree is
    built by its own. Where the cache names none, or one that is not here (a Ray worker on another
    machine): build_tool's choice.
    """
    recorded = cache_value(Path(build_dir) / "CMakeCache.txt", _TREE_TOOL_ENTRIES[name])
    if recorded and os.path.isfile(recorded) and os.access(recorded, os.X_OK):
        return recorded
    return build_tool(name)
