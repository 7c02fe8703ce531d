"""How a target's sources reach Ray workers: a shared filesystem, or an upload through Ray's `working_dir`.

`--ray-sources shared` (the default): actors read the sources, the build tree
and write their scratch trees at the driver's own paths. `--ray-sources
upload`: the driver ships the source tree (not the build tree, not `.git`)
through `runtime_env={"working_dir": ...}`; each actor configures its own
scratch tree, on its node's disk, from its node's copy.

A CMake tree records absolute paths, so a copy elsewhere is only usable when
every path that pointed into the sources points into the copy: the replayed
cache settings (the user's `--cmake-arg`s among them) are remapped, source
paths to the copy and build-tree paths to the scratch tree that mirrors it.
And a copy is only the tree the driver fingerprints if its files are the
same: each actor hashes the fingerprint's file set in its copy before it
configures, and any difference (a file Ray left out: `.gitignore`,
`.rayignore`, a size limit; a source edited mid-upload) stops the tune with
the files named. Nothing is measured on sources the journal's key does not
describe.

Links: Ray's packer follows symbolic links, so a link in the source tree to a
file or folder outside it would ship what it points to (a home folder, a
key), through however many links within the tree lead to it. The tree is
walked as the packer walks it, every link followed, and each path it would
reach that is not a regular file or folder of the tree is left out of the
upload (an exclude of its own, anchored at the root): a link outside, a
loop, a dangling link, a FIFO, socket or device. They are named in a warning
before anything is packed; a fingerprinted source reached through one is
refused (the workers would build without it).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ciq_build.errors import ConfigError
from ciq_build.project.cmake_trees import cmake_escape, initial_cache
from ciq_build.project.manifest import Manifest
from ciq_build.project.sources import _MISSING, Snapshot, _inside

MISSING = "missing"  # the hash of a file that is not there (a deleted source counts as a difference)
# Folders never uploaded, wherever they are (gitignore syntax, as Ray's `excludes` reads it).
ALWAYS_EXCLUDED = (".git/", "CMakeFiles/")


@dataclass(frozen=True)
class SourceUpload:
    """What the driver ships with --ray-sources upload, and what each worker's copy must hold."""

    source_dir: Path  # the driver's source tree: Ray zips it (less `excludes`) as the actors' working_dir
    binary_dir: Path  # the driver's build tree: paths into it are remapped to the worker's scratch tree
    files: dict[str, str]  # the source fingerprint's file set, relative to source_dir: its sha256 (or MISSING)
    replayed_cache: str  # the user's cache settings as a `cmake -C` script, with the driver's paths
    excludes: tuple[str, ...]
    # Paths the packer would reach that are no regular file or folder of the tree (relative path, as the
    # packer reaches it through links -> why): left out (in excludes).
    left_out: dict[str, str] = dataclasses.field(default_factory=dict)

    def runtime_env(self) -> dict[str, Any]:
        """Zip and upload the source tree to the cluster (once per content: Ray names it by its hash).

        Ray takes a local folder as a working_dir only in ray.init, for a whole job; an actor's
        runtime_env needs a package already in the cluster, so the driver uploads it as ray.init would
        (its own function: Ray's default excludes, .gitignore and .rayignore, its size limit).
        """
        import tempfile

        from ray._private import ray_constants
        from ray._private.runtime_env.working_dir import upload_working_dir_if_needed

        include_gitignore = os.environ.get(ray_constants.RAY_RUNTIME_ENV_IGNORE_GITIGNORE, "0") != "1"
        wanted = {"working_dir": str(self.source_dir), "excludes": list(self.excludes)}
        with tempfile.TemporaryDirectory(prefix="ciq-upload-") as scratch:
            try:
                env: dict[str, Any] = upload_working_dir_if_needed(wanted, include_gitignore, scratch)
            except Exception as error:  # its size limit (ValueError), a failed upload (RuntimeEnvSetupError)
                raise ConfigError(
                    f"Ray could not upload the source tree {self.source_dir} ({type(error).__name__}: {error}). "
                    "List what the build does not need in a .rayignore at the source root, or use "
                    "--ray-sources shared") from None
        env.pop("excludes", None)  # used by the upload only
        return env


def plan_upload(manifest: Manifest, snapshot: Snapshot) -> SourceUpload:
    """The upload of `manifest`'s source tree, checked: every fingerprinted file must be inside it, where it
    really is (a link resolved), and links that lead out of it are left out."""
    source_dir = Path(os.path.abspath(manifest.source_dir))
    real_root = Path(os.path.realpath(source_dir))
    files: dict[str, str] = {}
    outside = []
    for path, digest in snapshot.items():
        try:
            relative = Path(os.path.abspath(path)).relative_to(source_dir)
        except ValueError:
            outside.append(str(path))
            continue
        if not _inside(Path(os.path.realpath(path)), real_root):
            outside.append(f"{path} (a link to {os.path.realpath(path)})")
            continue
        files[relative.as_posix()] = digest.hex() if digest != _MISSING else MISSING
    if outside:
        raise ConfigError(
            f"--ray-sources upload ships the source tree {source_dir} only, but the target's sources include "
            f"files outside it: {', '.join(sorted(outside)[:5])}. Use --ray-sources shared (a filesystem the "
            "workers share, at the driver's paths), or move them into the source tree.")
    build_trees, left_out = _walk(source_dir)
    excluded = tuple("/" + glob_escape(name) for name in left_out)  # anchored at the source root, as reached
    return SourceUpload(source_dir, Path(os.path.abspath(manifest.binary_dir)), files,
                        initial_cache(manifest.binary_dir / "CMakeCache.txt"),
                        (*ALWAYS_EXCLUDED, *build_trees, *excluded), left_out)


def _walk(source_dir: Path) -> tuple[list[str], dict[str, str]]:
    """What the upload leaves out, found by walking the tree as Ray's packer does (every link followed):
    build trees inside the source tree (any folder holding a CMakeCache.txt) as excludes, and each path that
    is no regular file or folder of the tree (relative path, as reached -> why)."""
    real_root = Path(os.path.realpath(source_dir))
    build_trees: list[str] = []
    left_out: dict[str, str] = {}

    def visit(folder: Path, within: frozenset[str]) -> None:
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            return  # unreadable: the packer cannot read it either
        if folder != source_dir and "CMakeCache.txt" in names:
            build_trees.append("/" + glob_escape(folder.relative_to(source_dir).as_posix()) + "/")
            return
        for name in names:
            path = folder / name
            if name in (".git", "CMakeFiles") and path.is_dir():
                continue  # ALWAYS_EXCLUDED
            relative, real = path.relative_to(source_dir).as_posix(), os.path.realpath(path)
            why = _not_of_the_tree(path, real, real_root, within)
            if why:
                left_out[relative] = why
            elif path.is_dir():
                visit(path, within | {real})

    visit(source_dir, frozenset({str(real_root)}))
    return sorted(build_trees), dict(sorted(left_out.items()))


def _not_of_the_tree(path: Path, real: str, real_root: Path, within: frozenset[str]) -> str:
    """Why the packer must not take `path` (its real path `real`; `within`: the real folders it is in), or ""."""
    if path.is_symlink() and not _inside(Path(real), real_root):
        return f"a link to {real}, outside the tree"
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return "a link to nothing" if path.is_symlink() else "unreadable"
    if stat.S_ISDIR(mode):
        return f"a link to {real}, a folder it is in" if real in within else ""
    return "" if stat.S_ISREG(mode) else "not a regular file (a FIFO, socket or device)"


def glob_escape(name: str) -> str:
    """`name` as a gitignore pattern that matches it alone (Ray reads excludes in gitignore syntax): its
    special characters escaped, and each whitespace character it ends with as a class of its own (Ray's
    pathspec strips a pattern's whitespace, an escaped space's too: "trail " would exclude "trail")."""
    escaped = re.sub(r"([\\*?\[\]!#])", r"\\\1", name)
    stripped = escaped.rstrip()
    return stripped + "".join(f"[{space}]" for space in escaped[len(stripped):])


# -- on the worker ---------------------------------------------------------------------


def worker_manifest(manifest: Manifest, copy: Path) -> Manifest:
    """`manifest` with its source paths in `copy`; its build-tree paths stay (a scratch tree mirrors them)."""
    source_dir = Path(os.path.abspath(manifest.source_dir))

    def moved(path: Path) -> Path:
        return copy / Path(os.path.abspath(path)).relative_to(source_dir)

    return dataclasses.replace(manifest, source_dir=copy, target_source_dir=moved(manifest.target_source_dir),
                               cuda_sources=tuple(moved(p) for p in manifest.cuda_sources))


def remapped_cache(upload: SourceUpload, copy: Path, build_dir: Path) -> str:
    """The replayed cache settings with the driver's source paths in `copy`, its build-tree paths in `build_dir`.

    The build tree first: it is often inside the source tree, and the longer prefix is the right one.
    Only whole path components match (`/src` is not a prefix of `/src2`).
    """
    text = upload.replayed_cache
    for driver, worker in ((upload.binary_dir, build_dir), (upload.source_dir, copy)):
        # The script holds values escaped for CMake: match and write them so.
        pattern = re.compile(re.escape(cmake_escape(str(driver))) + r'(?=$|[/;"\s])', re.MULTILINE)
        text = pattern.sub(cmake_escape(str(worker)).replace("\\", "\\\\"), text)  # a template: \ escaped
    return text


def file_hashes(copy: Path, files: list[str]) -> dict[str, str]:
    """sha256 of each of `files` (relative) in `copy`, MISSING where there is no file: as the driver hashes."""
    hashes = {}
    for name in files:
        path = copy / name
        try:
            hashes[name] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else MISSING
        except OSError:
            hashes[name] = MISSING
    return hashes


def check_copy(upload: SourceUpload, theirs: dict[str, str], where: str, copy: str) -> None:
    """Refuse a worker's copy whose fingerprinted files differ from the driver's: it is not the same sources."""
    differ = sorted(name for name, digest in upload.files.items() if theirs.get(name) != digest)
    if not differ:
        return
    missing = [name for name in differ if theirs.get(name) == MISSING and upload.files[name] != MISSING]
    shown = ", ".join(differ[:5]) + (f" and {len(differ) - 5} more" if len(differ) > 5 else "")
    why = (" (missing there: Ray's working_dir upload leaves out what a .gitignore or .rayignore at the source "
           "root lists, so take the file out of it, or use --ray-sources shared)" if missing else
           " (changed while it was uploaded? run the same command again once the sources are still)")
    raise ConfigError(f"the Ray worker {where} got a copy of the sources ({copy}) that differs from "
                      f"{upload.source_dir} in {shown}{why}; nothing was measured on it")
