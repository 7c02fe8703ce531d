"""The source fingerprint of a tuned target: what its cached measurements depend on.

A journaled measurement is reused only while the target's real inputs are
unchanged: its CUDA sources, every source or header beside them, and the files
CMake itself re-configures from (CMakeLists.txt, `*.cmake`, configure_file
templates). What the build *writes* must not count, or every build would change
the fingerprint and a resumed tune would reuse nothing. Left out:

* build trees inside the source tree: any folder holding a ``CMakeCache.txt``
  (the user's build dir, ciq_build's scratch trees under it, a second build
  dir) and every ``CMakeFiles`` folder; hidden folders (``.git``, ...);
* the pin folder (``ciq/``: records and ACFs are written by `tune`);
* files the build graph declares as outputs (custom commands' OUTPUT and
  BYPRODUCTS, read from ``ninja -t targets``); their declared inputs count
  instead, whatever their suffix (a generator script, a ``.h.in`` template);
* files seen to change while ciq_build configures its scratch trees or builds
  the baseline (configure_file into the source dir, undeclared custom-command
  side effects). They are recorded in the journal and left out from then on.
  Only those short windows count: an edit the user makes during the search is
  a real change and invalidates the cache at the next run.

While candidates run, `TreeWatch` looks at the size and mtime of every file
of the project's source tree (`SourceSet.listing`: any name, the same folders
left out) after each benchmarked candidate, to see whether a run wrote there
(the driver warns: it can change what the next candidate builds).
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from ciq_build.measure import proc
from ciq_build.project.manifest import Manifest
from ciq_build.project.tree_cache import tree_tool

# Sources and headers beside the target (its headers, the benchmark's own code).
SOURCE_SUFFIXES = frozenset({".cu", ".cuh", ".h", ".hh", ".hpp", ".hxx", ".inl", ".c", ".cc", ".cpp", ".cxx"})

_NINJA_TIMEOUT = 60.0
_MISSING = b"<missing>"

Snapshot = dict[Path, bytes]  # file -> sha256 of its bytes (or _MISSING)
Listing = dict[str, tuple[int, int]]  # file -> (size, mtime in ns)
K = TypeVar("K")


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _is_build_tree(folder: Path, names: Iterable[str]) -> bool:
    return folder.name == "CMakeFiles" or "CMakeCache.txt" in names


@dataclass
class SourceSet:
    """Which files of one target's sources count, and their digests."""

    manifest: Manifest
    excluded: set[Path] = field(default_factory=set)  # build-written files seen so far
    # Files of these suffixes anywhere in the project's source tree count too (a setuptools project's .py
    # files: its setup.py makes the nvcc command, its benchmark script measures; CMake's graph covers both).
    project_suffixes: frozenset[str] = frozenset()
    _graph: tuple[frozenset[Path], frozenset[Path]] | None = field(default=None, init=False, repr=False)
    _hashes: dict[Path, tuple[int, int, bytes]] = field(default_factory=dict, init=False, repr=False)

    # -- which files -----------------------------------------------------------

    def _skip_dirs(self) -> set[Path]:
        manifest = self.manifest
        return {Path(os.path.abspath(p)) for p in (manifest.binary_dir, manifest.pin_dir)}

    def build_graph(self) -> tuple[frozenset[Path], frozenset[Path]]:
        """(declared outputs, declared inputs) of the user's Ninja build graph inside the source tree."""
        if self._graph is None:
            self._graph = _ninja_graph(self.manifest)
        return self._graph

    def candidates(self) -> set[Path]:
        """The files the fingerprint covers (existing or not: a deleted source counts as a change)."""
        manifest = self.manifest
        skip = self._skip_dirs()
        outputs, inputs = self.build_graph()
        files = {Path(os.path.abspath(p)) for p in manifest.cuda_sources}
        for here, names in self._folders(Path(os.path.abspath(manifest.target_source_dir))):
            for name in names:
                if Path(name).suffix in SOURCE_SUFFIXES and not name.startswith("."):
                    files.add(here / name)
        files |= {p for p in inputs if not any(_inside(p, s) for s in skip)}
        if self.project_suffixes:
            for here, names in self._folders(Path(os.path.abspath(manifest.source_dir))):
                files |= {here / n for n in names if Path(n).suffix in self.project_suffixes and not n.startswith(".")}
        if ".pyx" in self.project_suffixes:
            # The C/C++ Cython makes of a .pyx, written beside it by a plain build (`build_ext --inplace`, `pip
            # install .`): its .pyx counts, not what it is made into (npcuda-example's wrapper.cpp, appearing with
            # the first build, made a tune's whole journal "another setup.py/.../wrapper.cpp": nothing resumed).
            files = {p for p in files if p.suffix not in (".c", ".cpp") or not p.with_suffix(".pyx").is_file()}
        return {p for p in files if p not in outputs and p not in self.excluded}

    def _folders(self, root: Path) -> Iterator[tuple[Path, list[str]]]:
        """Each folder under `root` that is the user's (not a build tree, a hidden, build or pin folder),
        with its files' names."""
        skip = self._skip_dirs()
        for folder, dirs, names in os.walk(root):  # never follows symlinked folders
            here = Path(folder)
            if here != root and (_is_build_tree(here, names) or here in skip):
                dirs[:] = []
                continue
            dirs[:] = [d for d in dirs if not d.startswith(".") and here / d not in skip]
            yield here, names

    def listing(self) -> Listing:
        """Size and mtime of every file in the project's source tree, any name (a benchmark's output file
        too), in the folders the fingerprint looks in: a look cheap enough to take after each candidate."""
        result: Listing = {}
        for here, names in self._folders(Path(os.path.abspath(self.manifest.source_dir))):
            folder = str(here)
            for name in names:
                path = os.path.join(folder, name)  # a str: a Path per file doubled the time, as measured
                try:
                    info = os.lstat(path)
                except OSError:
                    continue  # gone since the folder was read
                result[path] = (info.st_size, info.st_mtime_ns)
        return result

    # -- hashing -------------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        """sha256 of every candidate file, now (cached by size and mtime within one run)."""
        result: Snapshot = {}
        for path in self.candidates():
            result[path] = self._hash(path)
        return result

    def _hash(self, path: Path) -> bytes:
        try:
            info = path.stat()
        except OSError:
            return _MISSING
        if not path.is_file():
            return _MISSING
        known = self._hashes.get(path)
        if known is not None and known[:2] == (info.st_size, info.st_mtime_ns):
            return known[2]
        try:
            digest = hashlib.sha256(path.read_bytes()).digest()
        except OSError:
            return _MISSING
        self._hashes[path] = (info.st_size, info.st_mtime_ns, digest)
        return digest

    def digest(self, snapshot: Snapshot | None = None) -> str:
        """One hash of the real inputs (of `snapshot`, or taken now)."""
        snapshot = self.snapshot() if snapshot is None else snapshot
        digest = hashlib.sha256()
        for source in sorted(p for p in snapshot if p not in self.excluded):
            digest.update(str(source).encode())
            digest.update(snapshot[source])
        return digest.hexdigest()

    def file_digests(self, snapshot: Snapshot) -> dict[str, str]:
        """A short digest of each file `digest` counts, named relative to the project's source dir: what a journal
        records, so that a later tune can name the files that changed (ciq_build.tune.cache.made_with)."""
        root = Path(os.path.abspath(self.manifest.source_dir))
        return {(p.relative_to(root).as_posix() if _inside(p, root) else str(p)): snapshot[p].hex()[:16]
                for p in sorted(snapshot) if p not in self.excluded}

    def written_between(self, before: Mapping[K, object], after: Mapping[K, object]) -> set[K]:
        """Files that appeared, vanished or changed between two snapshots or listings (something wrote them)."""
        return {p for p in set(before) | set(after) if before.get(p) != after.get(p)}


def _ninja_graph(manifest: Manifest) -> tuple[frozenset[Path], frozenset[Path]]:
    """Outputs the user's build graph declares inside the source tree, and the inputs that make them.

    Inputs are those of the custom commands behind the outputs and of the
    re-configure step (CMakeLists.txt, included .cmake files, configure_file
    templates), inside the project's source tree. Empty without Ninja.
    """
    binary = Path(manifest.binary_dir)
    if not (binary / "build.ninja").is_file():
        return frozenset(), frozenset()
    source_root = Path(os.path.abspath(manifest.source_dir))
    ninja = tree_tool(binary, "ninja")
    listing = proc.run([ninja, "-C", str(binary), "-t", "targets", "all"], _NINJA_TIMEOUT)
    if not listing.ok:
        return frozenset(), frozenset()
    outputs: set[Path] = set()
    for line in listing.stdout.splitlines():
        name, sep, rule = line.rpartition(": ")
        if not sep or rule.strip() == "phony":
            continue
        path = Path(os.path.abspath(binary / name))
        if _inside(path, source_root) and not _inside(path, Path(os.path.abspath(binary))):
            outputs.add(path)
    inputs: set[Path] = set()
    query = proc.run([ninja, "-C", str(binary), "-t", "query", "build.ninja", *map(str, sorted(outputs))],
                     _NINJA_TIMEOUT)
    if query.ok:
        section = ""
        for line in query.stdout.splitlines():
            stripped = line.strip()
            if not line.startswith(" "):
                section = ""
            elif stripped.startswith("input:"):
                section = "input"
            elif stripped == "outputs:":
                section = "outputs"
            elif section == "input":
                name = stripped.lstrip("|").strip()
                path = Path(os.path.abspath(binary / name))
                if _inside(path, source_root) and path.is_file():
                    inputs.add(path)
    return frozenset(outputs), frozenset(inputs - outputs)


def source_digest(manifest: Manifest, excluded: Iterable[Path] = ()) -> str:
    """One hash of the sources a measurement depends on."""
    return SourceSet(manifest, set(excluded)).digest()


__all__ = ["SOURCE_SUFFIXES", "SourceSet", "Snapshot", "source_digest"]


# The share of a tune's time TreeWatch may spend looking. A listing, measured on a 2-core machine at load
# 9-11: 35-50 us a file, so 14 ms for ciq_build's own tree (275 files), 69 ms for 2,007 (a CUDA toolkit),
# 0.26 s for 7,935 (/usr/include); a candidate takes seconds. A small tree is looked at after every
# benchmarked candidate, a large one after every few.
TREE_LOOK_SHARE = 0.02


class TreeWatch:
    """Whether the project's source tree changed since the watch began, looked at sparingly.

    `look()` lists the tree again unless the last listing cost more than TREE_LOOK_SHARE of the time
    since (then it says nothing new, and a later call looks: written files stay written).
    """

    def __init__(self, source_set: SourceSet, share: float = TREE_LOOK_SHARE) -> None:
        self.source_set = source_set
        self.share = share
        started = time.monotonic()
        self.before = source_set.listing()
        self.looked_at = time.monotonic()
        self.cost = self.looked_at - started

    def look(self) -> set[str]:
        """The files that appeared, vanished or changed since the watch began (empty when not looked)."""
        started = time.monotonic()
        if (started - self.looked_at) * self.share < self.cost:
            return set()
        after = self.source_set.listing()
        self.looked_at = time.monotonic()
        self.cost = self.looked_at - started
        return self.source_set.written_between(self.before, after)
