"""Finding the CUDA compiler (nvcc, ptxas, cuobjdump, nvdisasm) and its versions.

Search order (first hit wins):

1. an explicit nvcc, e.g. the CMake project's CMAKE_CUDA_COMPILER;
2. a toolkit installed from PyPI (``pip install "ciq-build[cuda]"``), found with
   ``import nvidia.cu13`` (it is never on PATH);
3. ``$CUDA_HOME/bin/nvcc``, then ``$CUDA_PATH/bin/nvcc``;
4. ``nvcc`` on PATH.

cuobjdump and nvdisasm (read-only tools: fingerprints, resource usage, SASS)
that nvcc's own toolkit lacks, as the PyPI toolkit may, are borrowed from
another installed toolkit of the same CUDA major version or newer
(borrow_tool), and `describe()` says so.

What a toolchain accepts is ciq_build.compiler.probe's to measure.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import util as importlib_util
from pathlib import Path

from ciq_build.errors import ToolchainError
from ciq_build.measure import proc

# Seconds for a `--version`-style query.
QUERY_TIMEOUT = 60.0

HOW_TO_FIX = (
    'Install the CUDA 13.3 toolkit from PyPI with: pip install "ciq-build[cuda]", '
    "or point CMake at a toolkit with -DCMAKE_CUDA_COMPILER=/path/to/nvcc "
    "(or set CUDA_HOME)."
)

_VERSION_FULL = re.compile(r"\bV(\d+)\.(\d+)\.(\d+)\b")
_VERSION_RELEASE = re.compile(r"\brelease (\d+)\.(\d+)\b")



def parse_version(text: str) -> str:
    """The full version ("13.3.73") from `nvcc --version` / `ptxas --version` output."""
    match = _VERSION_FULL.search(text)
    if match:
        return ".".join(match.groups())
    match = _VERSION_RELEASE.search(text)
    if match:
        return ".".join(match.groups())
    raise ToolchainError(f"cannot read a CUDA version from:\n{text.strip()}\n{HOW_TO_FIX}")


_MAJOR_MINOR = re.compile(r"([0-9]+)[.]([0-9]+)")


def major_minor(version: str) -> str:
    """ "13.3.73" -> "13.3", canonical ("13.03" is 13.3); "" when `version` does not start with major.minor."""
    match = _MAJOR_MINOR.match(str(version).strip())
    return f"{int(match.group(1))}.{int(match.group(2))}" if match else ""


def default_cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """$CIQ_BUILD_CACHE_DIR, else $XDG_CACHE_HOME/ciq_build, else ~/.cache/ciq_build."""
    environ = os.environ if env is None else env
    if environ.get("CIQ_BUILD_CACHE_DIR"):
        return Path(environ["CIQ_BUILD_CACHE_DIR"])
    base = environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ciq_build"


@dataclass(frozen=True)
class Toolchain:
    """One CUDA toolkit's compiler tools and versions."""

    nvcc: Path
    ptxas: Path
    cuobjdump: Path | None  # absent from some toolkits (the system 13.0 here has none): then borrowed, see below
    nvdisasm: Path | None
    version: str  # nvcc's full version, "13.3.73"
    ptxas_version: str
    source: str  # how it was found: explicit, pip, CUDA_HOME, CUDA_PATH, PATH
    borrowed: str = ""  # which of cuobjdump/nvdisasm came from another toolkit, and from where (for messages)

    @property
    def major_minor(self) -> str:
        return major_minor(self.version)

    def describe(self, chosen_by: str | None = None) -> str:
        """One line for messages: "CUDA 13.3.73 (nvcc /path/nvcc, found via pip)"; `chosen_by` (a build
        backend's toolkit_rule) says instead which rule chose it, so that a message names the rule once."""
        borrowed = f"; {self.borrowed}" if self.borrowed else ""
        return f"CUDA {self.version} (nvcc {self.nvcc}, {chosen_by or f'found via {self.source}'}{borrowed})"

    def roots(self) -> list[Path]:
        """The toolkit's folders: nvcc may be a wrapper (/usr/local/bin/nvcc); ptxas always sits in the real bin/."""
        return list(dict.fromkeys((self.nvcc.parent.parent, self.nvcc.resolve().parent.parent,
                                   self.ptxas.resolve().parent.parent)))

    def library_dirs(self) -> list[Path]:
        """Where the toolkit's libraries may be (lib/, lib64/ or targets/<arch>/lib/ of each root), in that order,
        whether or not each exists."""
        return [root / lib for root in self.roots()
                for lib in ("lib", "lib64", "targets/x86_64-linux/lib", "targets/sbsa-linux/lib")]

    def require_cuobjdump(self) -> Path:
        if self.cuobjdump is None:
            raise ToolchainError(
                f"the CUDA toolkit of {self.nvcc} has no cuobjdump, which static metrics need. "
                + HOW_TO_FIX
            )
        return self.cuobjdump

    def require_nvdisasm(self) -> Path:
        if self.nvdisasm is None:
            raise ToolchainError(
                f"the CUDA toolkit of {self.nvcc} has no nvdisasm, which cuobjdump needs to count SASS "
                "instructions. " + HOW_TO_FIX
            )
        return self.nvdisasm


# ---------------------------------------------------------------- discovery


def pip_nvcc() -> Path | None:
    """bin/nvcc of the PyPI toolkit (package nvidia.cu13), without importing anything else."""
    try:
        spec = importlib_util.find_spec("nvidia.cu13")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for base in spec.submodule_search_locations:
        candidate = Path(base) / "bin" / "nvcc"
        if candidate.is_file():
            return candidate
    return None


def _candidates(
    explicit: Path | None, env: Mapping[str, str], search_pip: bool
) -> Iterable[tuple[str, Path]]:
    if explicit is not None:
        yield "explicit", explicit
        return  # an explicit compiler is never silently replaced by another one
    if search_pip:
        pip = pip_nvcc()
        if pip is not None:
            yield "pip", pip
    for variable in ("CUDA_HOME", "CUDA_PATH"):
        if env.get(variable):
            yield variable, Path(env[variable]) / "bin" / "nvcc"
    on_path = shutil.which("nvcc", path=env.get("PATH", ""))
    if on_path:
        yield "PATH", Path(on_path)


def _file_state(tool: Path) -> tuple[str, int, int, int]:
    """What the answers of a tool are kept under in this process: its path, and its file's inode, mtime and size
    (a toolkit installed over it is asked again)."""
    try:
        stat = tool.stat()
    except OSError as error:
        raise ToolchainError(f"{tool} cannot be run: {error}. {HOW_TO_FIX}") from None
    return str(tool), stat.st_ino, stat.st_mtime_ns, stat.st_size


def _query_version(tool: Path) -> str:
    return _version_of(_file_state(tool))


@functools.lru_cache(maxsize=32)
def _version_of(state: tuple[str, int, int, int]) -> str:
    """`tool --version`, asked once a process per state of the tool's file (a tune, `tune --all`'s every target
    and a test session load one toolchain many times). A failure is not kept."""
    tool = state[0]
    result = proc.run([tool, "--version"], QUERY_TIMEOUT)
    if not result.ok:
        raise ToolchainError(
            f"{tool} --version {result.describe()}:\n{result.output_tail()}\n{HOW_TO_FIX}"
        )
    return parse_version(result.stdout + result.stderr)


def _real_bin_dir(nvcc: Path) -> Path | None:
    return _real_bin_dir_of(_file_state(nvcc))


@functools.lru_cache(maxsize=32)
def _real_bin_dir_of(state: tuple[str, int, int, int]) -> Path | None:
    """The directory nvcc really runs from (nvcc may be a wrapper script, as /usr/local/bin/nvcc); asked once a
    process per state of its file, as _version_of."""
    # -dryrun never reads the input, so a name that does not exist is fine.
    result = proc.run([state[0], "-dryrun", "-cubin", "ciq-build-nonexistent.cu"], QUERY_TIMEOUT)
    match = re.search(r"^#\$ _HERE_=(.+)$", result.stdout + result.stderr, re.M)
    return Path(match.group(1).strip()) if match else None


def _tool_next_to(nvcc: Path, name: str, real_dir: Path | None) -> Path | None:
    for directory in (nvcc.parent, nvcc.resolve().parent, real_dir):
        if directory is not None and (directory / name).is_file():
            return directory / name
    return None


# Where tune and verify take nvcc from, said in their messages.
PROJECT_COMPILER = "the project's CMAKE_CUDA_COMPILER"


def load_toolchain(nvcc: Path, source: str = "explicit", env: Mapping[str, str] | None = None) -> Toolchain:
    """The Toolchain of one nvcc; ToolchainError when it is missing or does not run.

    cuobjdump and nvdisasm that nvcc's own toolkit lacks are borrowed from another installed one
    (borrow_tool; `env` stands in for os.environ there).
    """
    nvcc = Path(nvcc).absolute()
    if not nvcc.is_file() or not os.access(nvcc, os.X_OK):
        raise ToolchainError(f"nvcc not found at {nvcc} (from {source}). {HOW_TO_FIX}")
    version = _query_version(nvcc)
    real_dir = None
    if not (nvcc.parent / "ptxas").is_file() or not (nvcc.parent / "cuobjdump").is_file():
        real_dir = _real_bin_dir(nvcc)
    ptxas = _tool_next_to(nvcc, "ptxas", real_dir)
    if ptxas is None:
        raise ToolchainError(f"no ptxas beside {nvcc}; the CUDA toolkit is incomplete. {HOW_TO_FIX}")
    cuobjdump = _tool_next_to(nvcc, "cuobjdump", real_dir)
    # cuobjdump --dump-sass runs nvdisasm; cuobjdump itself looks beside its own file.
    nvdisasm = _tool_next_to(nvcc, "nvdisasm", real_dir) or (
        _tool_next_to(cuobjdump, "nvdisasm", None) if cuobjdump is not None else None)
    borrowed = ""
    if cuobjdump is None or nvdisasm is None:
        cuobjdump, nvdisasm, borrowed = _complete(cuobjdump, nvdisasm, version, tool_dirs(env))
    return Toolchain(
        nvcc=nvcc,
        ptxas=ptxas,
        cuobjdump=cuobjdump,
        nvdisasm=nvdisasm,
        version=version,
        ptxas_version=_query_version(ptxas),
        source=source,
        borrowed=borrowed,
    )


# ---------------------------------------------------------------- cuobjdump and nvdisasm from another toolkit

# Directories (os.pathsep between them) to borrow a missing cuobjdump/nvdisasm from instead of the
# usual places; set and empty: borrow nothing (a missing tool is then refused up front, ciq_build.project.preflight).
TOOLS_PATH_VARIABLE = "CIQ_CUDA_TOOLS_PATH"


def tool_dirs(env: Mapping[str, str] | None = None) -> list[Path]:
    """Where a missing cuobjdump or nvdisasm is looked for, in order.

    $CIQ_CUDA_TOOLS_PATH when set; else $CUDA_HOME/bin, $CUDA_PATH/bin, the
    directories on PATH, /usr/local/cuda*/bin and the PyPI toolkit's bin: the
    places a full toolkit is installed beside, say, a PyPI one without them.
    """
    environ = os.environ if env is None else env
    if TOOLS_PATH_VARIABLE in environ:
        return [Path(d) for d in environ[TOOLS_PATH_VARIABLE].split(os.pathsep) if d]
    dirs = [Path(environ[v]) / "bin" for v in ("CUDA_HOME", "CUDA_PATH") if environ.get(v)]
    dirs += [Path(d) for d in environ.get("PATH", "").split(os.pathsep) if d]
    dirs += sorted(Path("/usr/local").glob("cuda*/bin"), reverse=True)
    pip = pip_nvcc()
    if pip is not None:
        dirs.append(pip.parent)
    return dirs


def _version_key(version: str) -> tuple[int, int]:
    text = major_minor(version)
    major, _, minor = text.partition(".")
    return (int(major), int(minor)) if text else (0, 0)


def borrow_tool(name: str, version: str, dirs: Iterable[Path]) -> tuple[Path, str] | None:
    """`name` (cuobjdump, nvdisasm) of another toolkit for code from nvcc `version`: the path and its version.

    Only a tool of the same CUDA major version or newer: an older major may not know the compiler's
    architectures and ELF. The closest version at or above nvcc's is preferred (it knows every
    architecture nvcc does), then the newest one below it of the same major; on a tie, the first in `dirs`.
    """
    own = _version_key(version)
    found: list[tuple[tuple[int, tuple[int, int]], int, Path, str]] = []
    seen: set[Path] = set()
    for order, directory in enumerate(dirs):
        tool = directory / name
        try:
            real = tool.resolve()
            if real in seen or not tool.is_file() or not os.access(tool, os.X_OK):
                continue
        except OSError:
            continue
        seen.add(real)
        try:
            tool_version = _query_version(tool)
        except ToolchainError:
            continue  # it does not run here: not a tool to borrow
        key = _version_key(tool_version)
        if key[0] < own[0]:
            continue
        rank = (0, key) if key >= own else (1, (-key[0], -key[1]))
        found.append((rank, order, tool, tool_version))
    if not found:
        return None
    _, _, tool, tool_version = min(found)
    return tool, tool_version


def _complete(cuobjdump: Path | None, nvdisasm: Path | None, version: str,
              dirs: list[Path]) -> tuple[Path | None, Path | None, str]:
    """cuobjdump and nvdisasm with the missing ones borrowed (borrow_tool), and a note of what came from where."""
    notes = []
    if cuobjdump is None and (found := borrow_tool("cuobjdump", version, dirs)) is not None:
        cuobjdump, names = found[0], "cuobjdump"
        if nvdisasm is None and (beside := _tool_next_to(cuobjdump, "nvdisasm", None)) is not None:
            nvdisasm, names = beside, "cuobjdump and nvdisasm"  # the nvdisasm that cuobjdump itself would run
        notes.append(f"{names} from {cuobjdump.parent} (CUDA {found[1]}; nvcc's toolkit has none)")
    if nvdisasm is None and (found := borrow_tool("nvdisasm", version, dirs)) is not None:
        nvdisasm = found[0]
        notes.append(f"nvdisasm from {nvdisasm.parent} (CUDA {found[1]}; nvcc's toolkit has none)")
    return cuobjdump, nvdisasm, "; ".join(notes)


def find_toolchain(
    explicit_nvcc: Path | None = None,
    *,
    env: Mapping[str, str] | None = None,
    search_pip: bool = True,
    explicit_from: str = "explicit",
) -> Toolchain:
    """The first usable toolchain in the search order (see the module docstring).

    `env` stands in for os.environ (CUDA_HOME, CUDA_PATH, PATH); `search_pip`
    False skips the PyPI toolkit. `explicit_from` says where `explicit_nvcc`
    came from, for messages ("found via the project's CMAKE_CUDA_COMPILER").
    """
    environ = os.environ if env is None else env
    tried: list[str] = []
    for source, nvcc in _candidates(Path(explicit_nvcc) if explicit_nvcc else None, environ, search_pip):
        if source == "explicit":
            return load_toolchain(nvcc, explicit_from, environ)
        if nvcc.is_file():
            return load_toolchain(nvcc, source, environ)
        tried.append(f"{source}: {nvcc}")
    where = "; ".join(tried) if tried else "no PyPI toolkit (nvidia.cu13), CUDA_HOME, CUDA_PATH or nvcc on PATH"
    raise ToolchainError(f"no CUDA compiler found (looked at {where}). {HOW_TO_FIX}")


def other_toolkits(chosen: Path, env: Mapping[str, str] | None = None) -> list[tuple[str, Path]]:
    """The nvccs the search order finds here beside `chosen` (where each was found, its path): what a tune's
    first line offers when the project's compiler is not the toolkit a user expected."""
    environ = os.environ if env is None else env
    seen = {chosen.resolve()}
    found: list[tuple[str, Path]] = []
    for source, nvcc in _candidates(None, environ, True):
        if nvcc.is_file() and nvcc.resolve() not in seen:
            seen.add(nvcc.resolve())
            found.append((source, nvcc))
    return found
