"""Which compiler search space a tune samples, and NVIDIA's compileiq engine, imported only when needed.

A space is named ``ptxas-acf[:VERSION[:VARIANT]]`` / ``nvcc-acf[...]`` or given as the path of a ``.bin``;
it is found in a local mirror (a directory with compileiq's ``manifest.json``, ``$CIQ_SEARCH_SPACES_DIR``)
or fetched by compileiq from NVIDIA's releases, and identified by its sha256 (`SpaceIdentity`, the pinned
record's provenance). A CUDA older than the first NVIDIA publishes spaces for is refused up front.
The engine that searches a space is ``ciq_build.search.compileiq``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from ciq_build.compiler.toolchain import major_minor, pip_nvcc
from ciq_build.errors import ConfigError, MissingExtraError, ToolchainError
from ciq_build.state.durable import read_json_object, sha256_file

if TYPE_CHECKING:
    from ciq_build.compiler.toolchain import Toolchain

INSTALL_HINT = 'pip install "ciq-build[acf]"'
# compileiq's own default compiler version for PtxasSearchSpace/NvccSearchSpace.
DEFAULT_CUDA_VERSION = "13.3"
SPACES_DIR_ENV = "CIQ_SEARCH_SPACES_DIR"  # compileiq's name for a local mirror (manifest.json + .bin)

# A variant needs a version before it: "ptxas-acf:13" is an error, not variant "13".
_SPEC = re.compile(r"^(ptxas|nvcc)-acf(?::([0-9]+\.[0-9]+)(?::([A-Za-z0-9._-]+))?)?$")
_BIN_NAME = re.compile(r"^(ptxas|nvcc)([0-9]+\.[0-9]+)(?:_([A-Za-z0-9.-]+))?\.bin$")


def load_compileiq() -> SimpleNamespace:
    """The compileiq names this adapter uses; MissingExtraError when it is not installed."""
    try:
        from importlib.metadata import version

        from compileiq import ciq
        from compileiq.backends import EngineConfig, get_backend_registration
        from compileiq.search_spaces import base as ss
        from compileiq.types import SearchConfiguration as CiqConfiguration
        from compileiq.types import WorkerTypes
        from compileiq.utils.validation import INVALID_SCORE, Score
    except ImportError as exc:
        raise MissingExtraError(
            f"ACF search spaces need NVIDIA's compileiq engine, which is not installed ({exc}). "
            f"Install it with: {INSTALL_HINT}"
        ) from None
    return SimpleNamespace(
        Search=ciq.Search, EngineConfig=EngineConfig, WorkerTypes=WorkerTypes, Configuration=CiqConfiguration,
        Score=Score, INVALID=INVALID_SCORE, ss=ss, registration=get_backend_registration,
        version=version("compileiq"),
    )


@dataclass(frozen=True)
class SpaceIdentity:
    """Which compiler search space a tune sampled: goes into the pinned record's provenance."""

    compiler: str  # "ptxas" or "nvcc": the compiler that reads its ACFs
    cuda: str  # CUDA major.minor the ACFs are for, e.g. "13.3"
    variant: str  # "default", "att", ...
    sha256: str  # of the .bin
    path: Path  # where it was read from (machine-specific: not part of describe())
    tag: str | None = None  # search-space release tag, when it came through a manifest

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"compiler": self.compiler, "cuda": self.cuda, "variant": self.variant,
                               "file": self.path.name, "sha256": self.sha256}
        if self.tag is not None:
            out["tag"] = self.tag
        return out


def parse_space_spec(spec: str) -> tuple[str, str | None, str | None] | Path:
    """("ptxas", "13.3", "att") for ``ptxas-acf:13.3:att``; a Path for a ``.bin`` file name."""
    text = spec.strip()
    match = _SPEC.fullmatch(text)
    if match:
        return match.group(1), match.group(2), match.group(3)
    if text.endswith(".bin"):
        return Path(text).expanduser()
    raise ConfigError(
        f"unknown ACF search space {spec!r}: use ptxas-acf[:VERSION[:VARIANT]] (e.g. ptxas-acf:13.3:att), "
        "nvcc-acf[:VERSION[:VARIANT]], or the path of a compiler search space .bin"
    )


def _read_manifest(directory: Path) -> dict[str, Any] | None:
    path = directory / "manifest.json"
    if not path.is_file():
        return None
    try:
        data = read_json_object(path)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read the search-space manifest {path}: {exc}") from None
    if not isinstance(data.get("entries"), list):
        raise ConfigError(f"{path} is not a compileiq search-space manifest (no 'entries' list)")
    return data


def _from_local_dir(directory: Path, compiler: str, version: str, variant: str) -> SpaceIdentity:
    manifest = _read_manifest(directory)
    if manifest is None:
        raise ConfigError(
            f"{directory} has no manifest.json; a search-space directory ({SPACES_DIR_ENV}) holds "
            "manifest.json and the .bin files it lists")
    available = []
    for entry in manifest["entries"]:
        key = (entry.get("compiler"), str(entry.get("compiler_version")), entry.get("variant", "default"))
        available.append("{}-acf:{}:{}".format(*key))
        if key != (compiler, version, variant):
            continue
        name = str(entry.get("filename", ""))
        if not name or "/" in name or "\\" in name or name in (".", ".."):
            raise ConfigError(f"{directory / 'manifest.json'} names an unsafe file {name!r}")
        path = directory / name
        if not path.is_file():
            raise ConfigError(f"{directory / 'manifest.json'} lists {name}, which is missing from {directory}")
        digest = sha256_file(path)
        if entry.get("sha256") and digest != entry["sha256"]:
            raise ConfigError(f"{path} does not match its sha256 in manifest.json: the file is damaged or replaced")
        return SpaceIdentity(compiler, version, variant, digest, path.absolute(), manifest.get("tag"))
    raise ConfigError(
        f"no {compiler} search space for CUDA {version} (variant {variant}) in {directory}; "
        f"available: {', '.join(available) or 'none'}")


def _from_bin(path: Path) -> SpaceIdentity:
    if not path.is_file():
        raise ConfigError(f"the search space {path} does not exist")
    path = path.absolute()
    digest = sha256_file(path)
    manifest = _read_manifest(path.parent) or {}
    for entry in manifest.get("entries", []):
        if entry.get("filename") == path.name and entry.get("sha256") == digest:
            return SpaceIdentity(str(entry["compiler"]), str(entry["compiler_version"]),
                                 str(entry.get("variant", "default")), digest, path, manifest.get("tag"))
    match = _BIN_NAME.fullmatch(path.name)
    if match is None:
        raise ConfigError(
            f"cannot tell which compiler and CUDA version {path.name} is for: keep it beside its manifest.json, "
            "or name it <compiler><major.minor>[_<variant>].bin (e.g. ptxas13.3.bin, ptxas13.3_att.bin)")
    return SpaceIdentity(match.group(1), match.group(2), match.group(3) or "default", digest, path)


def space_compiler(spec: str) -> str:
    """Which compiler reads the ACFs of a compiler search space (no network: a named one says it)."""
    parsed = parse_space_spec(spec)
    return _from_bin(parsed).compiler if isinstance(parsed, Path) else parsed[0]


def resolve_space(spec: str, *, default_version: str | None = None, spaces_dir: Path | None = None) -> SpaceIdentity:
    """Find the compiler search space a spec names.

    ``spec`` is ``ptxas-acf``, ``ptxas-acf:13.3``, ``ptxas-acf:13.3:att``,
    ``nvcc-acf[:VERSION[:VARIANT]]`` or the path of a ``.bin``. Without a
    version, ``default_version`` (the toolchain's major.minor) is used, else
    compileiq's default (13.3). Spaces are looked up in ``spaces_dir``, else in
    ``$CIQ_SEARCH_SPACES_DIR``, else fetched by compileiq from NVIDIA's releases.
    """
    parsed = parse_space_spec(spec)
    if isinstance(parsed, Path):
        return _from_bin(parsed)
    compiler, version, variant = parsed
    version = version or major_minor(default_version or "") or DEFAULT_CUDA_VERSION
    variant = variant or "default"
    local = spaces_dir if spaces_dir is not None else (Path(os.environ[SPACES_DIR_ENV]) if os.environ.get(SPACES_DIR_ENV) else None)
    if local is not None:
        return _from_local_dir(Path(local).expanduser(), compiler, version, variant)
    load_compileiq()  # a clear MissingExtraError before anything else
    from compileiq.search_spaces.resolver import resolve_with_metadata

    try:
        resolved = resolve_with_metadata(compiler=compiler, compiler_version=version, variant=variant)
    except Exception as exc:  # network, missing entry, checksum: all mean "no such space here"
        raise ConfigError(
            f"cannot get the {compiler} search space for CUDA {version} (variant {variant}) from NVIDIA's "
            f"releases: {exc}. Offline, point {SPACES_DIR_ENV} at a directory with manifest.json and the .bin "
            "files, or give the path of a .bin") from None
    meta = resolved.metadata
    return SpaceIdentity(compiler, version, variant, meta.sha256, Path(resolved.path).absolute(), meta.resolved_tag)


def check_space_exists_for(compiler: str, cuda: str, toolchain: Toolchain) -> None:
    """Refuse (ToolchainError) a search space for a CUDA older than the first NVIDIA publishes spaces for.

    Asked for one, compileiq goes to NVIDIA's releases and fails there with a
    raw network error (measured with the system nvcc 13.0: "api.github.com ...
    NameResolutionError" offline); the cause is the toolkit, so say that.
    """
    if _version_key(cuda) >= _version_key(DEFAULT_CUDA_VERSION):
        return
    pip = pip_nvcc()
    configure = (f"-DCMAKE_CUDA_COMPILER={pip}" if pip is not None
                 else 'a CUDA 13.3 nvcc (pip install "ciq-build[cuda]" installs one)')
    raise ToolchainError(
        f"NVIDIA publishes {compiler} ACF search spaces from CUDA {DEFAULT_CUDA_VERSION} on, and this build "
        f"compiles with {toolchain.describe()}. Configure the build with {configure} (a fresh build folder, or "
        "delete CMAKE_CUDA_COMPILER from its CMakeCache.txt), or tune the public knobs and PARAMS instead "
        "(SEARCH_SPACE knobs params, or tune --controls knobs).")


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in major_minor(version).split(".")) if major_minor(version) else (0,)
