"""NVIDIA Advanced Controls Files: writing them, and refusing up front what a compiler would refuse.

An ACF is an encrypted blob that only NVIDIA's compileiq engine writes. Nothing
inside it can be read here, so which compiler ("ptxas" or "nvcc") and which CUDA
version it is for is known only from the search space it was sampled from; the
engine adapter records both. What the compilers accept (measured, see
../shared/search-spaces/README.md):

* an ACF sampled from a CUDA X.Y space is accepted only by ptxas/nvcc X.Y.
  13.0 says "not in expected format", 13.4 and 13.5 "Invalid compiler controls
  file" for 13.3 ACFs;
* a ptxas ACF (``-Xptxas --apply-controls=F``) works for every architecture;
* an nvcc ACF (``nvcc --apply-controls F``) works only for sm_100 and newer;
  for older targets cicc says "-apply-controls is not supported on this target".

The checks here turn those late, cryptic compiler failures into one clear
message before a tune starts or a pin is applied.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

from ciq_build.compiler.architectures import arch_generation, split_architectures
from ciq_build.compiler.controls import ACF_COMPILERS, AcfRef
from ciq_build.compiler.toolchain import major_minor
from ciq_build.errors import ConfigError, ToolchainError
from ciq_build.state.durable import atomic_write, sha256_file

__all__ = [
    "ACF_SUFFIX",
    "NVCC_ACF_MIN_ARCH",
    "acf_bytes",
    "check_nvcc_acf_architectures",
    "check_toolkit_accepts",
    "write_acf",
]

ACF_SUFFIX = ".acf"
# cicc applies nvcc-level controls only from this SM generation on.
NVCC_ACF_MIN_ARCH = 100


def acf_bytes(blob: str | bytes) -> bytes:
    """The bytes of an ACF given as compileiq's hex string (or already as bytes)."""
    if isinstance(blob, (bytes, bytearray)):
        data = bytes(blob)
    else:
        try:
            data = bytes.fromhex(blob)
        except ValueError as exc:
            raise ConfigError(f"an ACF from compileiq must be a hex string: {exc}") from None
    if not data:
        raise ConfigError("an ACF cannot be empty")
    return data


def write_acf(blob: str | bytes, directory: Path, compiler: str) -> AcfRef:
    """Write an ACF as ``<directory>/<sha256>.acf`` (atomically; kept if already there).

    Naming by content makes the file its own cache key: the same ACF asked
    twice is one file, and a file that exists never needs rewriting.
    """
    if compiler not in ACF_COMPILERS:
        raise ConfigError(f"an ACF is read by 'ptxas' or 'nvcc', not {compiler!r}")
    data = acf_bytes(blob)
    digest = hashlib.sha256(data).hexdigest()
    directory = Path(directory).absolute()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{digest}{ACF_SUFFIX}"
    if not (path.is_file() and sha256_file(path) == digest):
        # A concurrent or killed writer never leaves a half-written ACF under the final name.
        atomic_write(path, data)
    return AcfRef(path=path, compiler=compiler, sha256=digest)


def _major_minor(version: str, what: str) -> str:
    have = major_minor(version)
    if not have:
        raise ConfigError(f"{what} {version!r} is not a CUDA version like 13.3 or 13.3.73")
    return have


def check_toolkit_accepts(acf_compiler: str, acf_cuda_version: str, toolchain_major_minor: str) -> None:
    """Refuse (ToolchainError) an ACF that this toolkit's compiler would refuse.

    ACFs are tied to the exact CUDA major.minor of their search space; any
    other version of nvcc/ptxas rejects them with an unhelpful message.
    """
    if acf_compiler not in ACF_COMPILERS:
        raise ConfigError(f"an ACF is read by 'ptxas' or 'nvcc', not {acf_compiler!r}")
    want_text = _major_minor(acf_cuda_version, "the ACF's CUDA version")
    have_text = _major_minor(toolchain_major_minor, "the toolchain's CUDA version")
    if want_text == have_text:
        return
    raise ToolchainError(
        f"{acf_compiler} ACFs from a CUDA {want_text} search space are accepted only by CUDA {want_text} "
        f"compilers, and this build uses CUDA {have_text} (its {acf_compiler} would refuse the file: "
        f"\"not in expected format\" / \"Invalid compiler controls file\"). Either build with a CUDA "
        f"{want_text} toolkit (pip install \"ciq-build[cuda]\" installs one; configure with "
        f"-DCMAKE_CUDA_COMPILER=<site-packages>/nvidia/cu13/bin/nvcc), or retune with a search space "
        f"for CUDA {have_text} ({acf_compiler}-acf:{have_text}) if NVIDIA publishes one."
    )


def check_nvcc_acf_architectures(archs: str | Iterable[str]) -> None:
    """Refuse (ConfigError) an nvcc ACF for architectures older than sm_100.

    ``archs`` is CMAKE_CUDA_ARCHITECTURES as CMake holds it ("90a", "80;100a")
    or a list of such items. "all" and "all-major" include old targets and are
    refused; "native" cannot be judged here and is let through to the compiler.
    """
    items = split_architectures(archs) if isinstance(archs, str) else [str(a) for a in archs]
    too_old: list[str] = []
    for item in items:
        if item.lower() in ("all", "all-major"):
            too_old.append(item)
            continue
        if item.lower() == "native":
            continue
        try:
            generation = arch_generation(item)
        except ToolchainError:
            raise ConfigError(f"cannot read the CUDA architecture {item!r} (expected e.g. 90a, sm_100a, 120)") from None
        if generation < NVCC_ACF_MIN_ARCH:
            too_old.append(item)
    if too_old:
        raise ConfigError(
            f"nvcc ACFs (the nvcc-acf search space) apply only to sm_{NVCC_ACF_MIN_ARCH} and newer; for "
            f"{', '.join(too_old)} the compiler refuses them (\"-apply-controls is not supported on this "
            "target\"). Use the ptxas search space instead (SEARCH_SPACE ptxas-acf, or --controls ptxas-acf), "
            "whose ACFs work for every architecture."
        )
