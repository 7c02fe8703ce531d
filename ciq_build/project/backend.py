"""What a kind of project (CMake, setuptools) does for ciq_build: the `BuildBackend` protocol.

The tune itself (search, journal, lock, baseline, confirmation, minimal pin,
record) is the same for every kind of project (ciq_build.tune.driver), as are
`verify`'s checks, `list` and `show`. What differs is asked of a backend: where
its targets and their manifests come from, which tools it needs, its scratch
trees (each a `WorkerTree`: its configure, build and benchmark command, on this
machine or a Ray worker), the files its source fingerprint covers, and the
build that applies a pin. CMake implements it in
ciq_build.project.cmake_backend, setuptools in
ciq_build.project.setuptools_backend; neither uses the other's classes. The
command line (or `tune_target(backend=...)`) picks one, and everything below
it receives it (composition, as scikit-build-core's setuptools command holds
its CMake builder).
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from ciq_build.compiler.toolchain import Toolchain
from ciq_build.core.objectives import Objective
from ciq_build.measure.proc import ProcResult
from ciq_build.project.manifest import Manifest
from ciq_build.project.sources import SourceSet
from ciq_build.project.worker import WorkerTree, scratch_root

# Where a setuptools project's state goes (setuptools' own default build folder): <project>/build/ciq/.
SETUPTOOLS_BUILD_FOLDER = "build"


def is_setuptools_project(folder: Path) -> bool:
    """A folder with a setup.py and no CMakeLists.txt: a setuptools project (`-S` names it so), not a CMake one."""
    return (folder / "setup.py").is_file() and not (folder / "CMakeLists.txt").exists()


def setuptools_project_of(build_dir: Path, source_dir: Path | None, setuptools: Path | None = None) -> Path | None:
    """The setuptools project a command reading its state names: `--setuptools PROJECT` where given, else `-S
    PROJECT`, or `-B PROJECT/build` (where such a project keeps its journal) when no -S is given and that folder is
    no CMake build tree; None for a CMake project."""
    if setuptools is not None:
        return Path(setuptools).resolve()
    if source_dir is not None:
        return Path(source_dir).resolve() if is_setuptools_project(Path(source_dir)) else None
    build = Path(build_dir).absolute()
    if build.name == SETUPTOOLS_BUILD_FOLDER and not (build / "CMakeCache.txt").exists() \
            and is_setuptools_project(build.parent):
        return build.parent.resolve()
    return None


class BuildBackend(Protocol):
    """How one project builds its tuned targets: read by `tune`, `tune --all`, `verify`, `list` and `show`."""

    @property
    def kind(self) -> str:
        """The kind of project, as messages name it: "CMake", "setuptools"."""
        ...

    @property
    def build_dir(self) -> Path:
        """Where ciq_build keeps the project's state: journals, locks and scratch trees in ``<build_dir>/ciq/``."""
        ...

    @property
    def applied_by(self) -> str:
        """What applies a pin (the summary's last words), e.g. "a plain `cmake --build`"."""
        ...

    @property
    def remote_builds(self) -> bool:
        """Whether workers elsewhere (a Ray cluster's actors, each asking `make_tree` for its tree) can build
        its candidates."""
        ...

    def prepare(self) -> None:
        """Make the project's targets readable (CMake: configure or refresh the build tree); once per command."""
        ...

    def check_buildable(self) -> None:
        """Refuse, in one line, a project that cannot be built where it is (CMake: a build tree copied from
        another folder), before its manifests are read."""
        ...

    def targets(self) -> list[str]:
        """The project's tuned targets, sorted; empty when it has none."""
        ...

    def no_targets(self) -> str:
        """Why `targets()` is empty, and what to add so that it is not."""
        ...

    def manifest(self, target: str) -> Manifest:
        """`target` described for the driver (a ManifestError or ConfigError naming what to fix, when it cannot be)."""
        ...

    def pin_file(self, target: str) -> Path:
        """Where `target`'s pinned record is, even where its manifest cannot be read yet."""
        ...

    def toolchain(self, manifest: Manifest) -> Toolchain:
        """The CUDA compiler the project builds `manifest`'s target with."""
        ...

    def check_tools(self, manifest: Manifest, toolchain: Toolchain, *, pin: bool, objectives: list[Objective],
                    needs_benchmark: bool) -> None:
        """Every tool a tune of `manifest`'s target will run, checked before anything is built."""
        ...

    def make_tree(self, manifest: Manifest, root: Path, toolchain: Toolchain, *, fast_path: bool,
                  replayed_cache: str | None = None) -> WorkerTree:
        """One worker's tree under `root` (ciq_build.project.worker): its configure, its build of a candidate, its
        benchmark command. `fast_path`: compiles may take the ptxas-only path where the backend has one;
        `replayed_cache`: the user's build settings, given where the tree is made away from the user's build
        tree (a Ray worker building from an uploaded copy of the sources: ciq_build.ray.sources)."""
        ...

    def source_set(self, manifest: Manifest) -> SourceSet:
        """The files whose content the target's measurements depend on (the journal's cache key)."""
        ...

    def build_pinned(self, manifest: Manifest, timeout: float) -> ProcResult:
        """Build the target as the user does, so that its pin applies (`verify` checks what this built)."""
        ...

    def toolkit_rule(self) -> tuple[str, str]:
        """Which rule chose the project's CUDA toolkit ("chosen by ..."), and what chooses another (`tune`'s first
        line says the one, its second, when another toolkit is found here, the other)."""
        ...

    def rebuild_hint(self, manifest: Manifest) -> str:
        """What to do when the build's options file does not carry the pinned controls."""
        ...

    def command(self, name: str, target: str) -> str:
        """The `python -m ciq_build <name> <target>` command line of this project (its -B folder, or its
        --setuptools project), quoted for a shell, for messages that say what to run next."""
        ...


def make_trees(backend: BuildBackend, manifest: Manifest, toolchain: Toolchain, count: int, timeout: float, *,
               fast_path: bool) -> list[WorkerTree]:
    """`count` workers' scratch trees, configured; `fast_path=False` where compile time is measured (the
    ptxas-only path would time only ptxas and after)."""
    trees = [backend.make_tree(manifest, scratch_root(manifest) / f"worker-{index}", toolchain, fast_path=fast_path)
             for index in range(count)]
    # One after another: configures of one source tree take turns anyway (cmake_trees.source_tree_turn
    # says why), and a configure costs ~1.5 s.
    for tree in trees:
        tree.configure(timeout)
    return trees
