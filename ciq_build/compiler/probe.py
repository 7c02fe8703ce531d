"""What a CUDA toolchain accepts, measured, not guessed from its version.

Each option is tried on a tiny real kernel (``-Xptxas=`` options on ptxas itself, with the kernel's PTX: a
twentieth of a compile), and the answers are cached in a JSON file keyed by the nvcc path, version and mtime,
so a second probe costs a file read. An ACF is opaque: which toolkit and compiler it is for is told only by
applying it (acf_refusals).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ciq_build.compiler.architectures import arch_generation, arch_number, architecture_order
from ciq_build.compiler.toolchain import HOW_TO_FIX, QUERY_TIMEOUT, Toolchain, default_cache_dir
from ciq_build.errors import ToolchainError
from ciq_build.measure import proc
from ciq_build.state.durable import atomic_write, read_json_object

# Seconds for one probe compile of the tiny kernel.
PROBE_TIMEOUT = 120.0

_CACHE_SCHEMA = 1

# A kernel with a little arithmetic, so that front-end (numerics) and ptxas
# options both have something to act on.
_PROBE_SOURCE = """\
__global__ void ciq_probe(float* x, float y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    x[i] = sqrtf(x[i]) / y + x[i] * y;
}
"""

# Output that means "accepted the syntax but ignored the option" or "does not know it".
_REFUSED = re.compile(r"unknown option|option will be ignored|not supported|invalid|unrecognized", re.I)


@dataclass(frozen=True)
class Capabilities:
    """What one toolchain was measured to accept."""

    gpu_archs: tuple[str, ...]  # virtual architectures, CMake form ("75", "90", "100", ...)
    gpu_codes: tuple[str, ...]  # real architectures (SASS), CMake form
    nvcc_apply_controls: bool  # nvcc knows --apply-controls (an nvcc ACF; sm_100+ only)
    ptxas_apply_controls: bool  # ptxas knows --apply-controls (a ptxas ACF)
    probe_arch: str  # the architecture the options were probed with
    options: Mapping[str, bool] = field(default_factory=dict)  # option -> compiled cleanly

    def accepts(self, option: str) -> bool:
        """Whether `option` was probed and accepted (unprobed options count as refused)."""
        return bool(self.options.get(option, False))

    def supports_arch(self, arch: str) -> bool:
        """Whether SASS for `arch` ("90a", "sm_100") can be generated ("90a" counts as 90)."""
        return arch_number(arch) in self.gpu_codes or str(arch_generation(arch)) in self.gpu_codes




def _cache_file(toolchain: Toolchain, cache_dir: Path) -> Path:
    stat = toolchain.nvcc.stat()
    key = f"{toolchain.nvcc}|{toolchain.version}|{stat.st_mtime_ns}"
    return cache_dir / f"toolchain-{hashlib.sha256(key.encode()).hexdigest()[:20]}.json"


def _read_cache(path: Path, toolchain: Toolchain) -> dict[str, Any]:
    try:
        data = read_json_object(path)
    except (OSError, ValueError):
        return {}  # a missing or damaged cache is simply re-probed
    if data.get("schema") != _CACHE_SCHEMA or data.get("nvcc") != str(toolchain.nvcc):
        return {}
    return data


def _write_cache(path: Path, data: dict[str, Any]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps(data, indent=1, sort_keys=True))
    except OSError:
        pass  # the cache only saves time; an unwritable cache dir must not stop a build


def _list(nvcc: Path, option: str) -> tuple[str, ...]:
    result = proc.run([nvcc, option], QUERY_TIMEOUT)
    if not result.ok:
        return ()
    found = {arch_number(token) for token in result.stdout.split() if re.fullmatch(r"(sm|compute)_[0-9]+[a-z]?", token)}
    return tuple(sorted(found, key=architecture_order))


def _compile_probe(toolchain: Toolchain, workdir: Path, arch: str, extra: list[str]) -> proc.ProcResult:
    source = workdir / "ciq_probe.cu"
    output = Path(tempfile.mkdtemp(dir=workdir)) / "probe.cubin"
    # -cubin runs the device front end and ptxas but no host compiler: a third of -c's time.
    return proc.run(
        [toolchain.nvcc, "-cubin", f"-arch=sm_{arch}", *extra, source, "-o", output],
        PROBE_TIMEOUT,
        cwd=workdir,
    )


_XPTXAS = "-Xptxas="


def _make_ptx(toolchain: Toolchain, workdir: Path, arch: str) -> proc.ProcResult:
    """The probe kernel's PTX (ciq_probe.ptx), as nvcc would hand it to ptxas: ptxas options and ACFs are probed on
    ptxas itself with it."""
    return proc.run([toolchain.nvcc, "-ptx", f"-arch=sm_{arch}", "ciq_probe.cu", "-o", "ciq_probe.ptx"],
                    PROBE_TIMEOUT, cwd=workdir)


def _ptxas_probe(toolchain: Toolchain, workdir: Path, arch: str, option: str) -> proc.ProcResult:
    """Run ptxas itself on the probe kernel's PTX with one ptxas option.

    What `nvcc -Xptxas=X` does to ptxas, at a twentieth of the cost (no front end).
    """
    output = Path(tempfile.mkdtemp(dir=workdir)) / "probe.cubin"
    return proc.run(
        [toolchain.ptxas, f"-arch=sm_{arch}", option, workdir / "ciq_probe.ptx", "-o", output],
        PROBE_TIMEOUT,
        cwd=workdir,
    )


def _probe_one(toolchain: Toolchain, workdir: Path, arch: str, option: str) -> bool:
    value = option[len(_XPTXAS):] if option.startswith(_XPTXAS) else None
    if value is not None and "," not in value and (workdir / "ciq_probe.ptx").is_file():
        return _accepted(_ptxas_probe(toolchain, workdir, arch, value))
    return _accepted(_compile_probe(toolchain, workdir, arch, [option]))


def _accepted(result: proc.ProcResult) -> bool:
    return result.ok and _REFUSED.search(result.stdout + result.stderr) is None


def _probe_apply_controls(toolchain: Toolchain, workdir: Path, arch: str) -> tuple[bool, bool]:
    """(nvcc knows --apply-controls, ptxas knows --apply-controls).

    An empty file is never a valid ACF, so both probes fail to compile; what
    tells the cases apart is whether the option itself was recognised.
    Measured: nvcc 13.0 says "Unknown option"; 13.3 says "not supported on this
    target" (sm_90) or "invalid compiler controls file"; ptxas 13.0 and 13.3
    both say "not in expected format".
    """
    empty = workdir / "empty.acf"
    empty.write_bytes(b"")
    nvcc = _compile_probe(toolchain, workdir, arch, [f"--apply-controls={empty}"])
    ptxas = _compile_probe(toolchain, workdir, arch, [f"-Xptxas=--apply-controls={empty}"])

    def known(result: proc.ProcResult) -> bool:
        text = result.stdout + result.stderr
        return not result.timed_out and result.returncode != 127 and not re.search(r"unknown option", text, re.I)

    return known(nvcc), known(ptxas)


def acf_refusals(toolchain: Toolchain, acfs: Iterable[tuple[Path, str]], arch: str) -> dict[Path, str]:
    """What `toolchain` says refusing each ACF ``(path, compiler)`` for sm_`arch`; those it accepts are absent.

    An ACF is opaque: which toolkit (and which compiler) it is for can only be
    told by applying it. A ptxas ACF is tried on ptxas itself with the probe
    kernel's PTX (a twentieth of a compile), an nvcc ACF by nvcc (sm_100 and
    newer only). Measured refusals: 13.0 "not in expected format", 13.4/13.5
    "Invalid compiler controls file".
    """
    wanted = list(acfs)
    if not wanted:
        return {}
    refused: dict[Path, str] = {}
    with tempfile.TemporaryDirectory(prefix="ciq-acf-probe-") as tmp:
        workdir = Path(tmp)
        (workdir / "ciq_probe.cu").write_text(_PROBE_SOURCE, encoding="utf-8")
        if any(compiler == "ptxas" for _, compiler in wanted):
            made = _make_ptx(toolchain, workdir, arch)
            if not made.ok:
                raise ToolchainError(f"{toolchain.nvcc} cannot compile a trivial kernel for sm_{arch} "
                                     f"({made.describe()}):\n{made.output_tail()}\n{HOW_TO_FIX}")
        for path, compiler in wanted:
            result = (_ptxas_probe(toolchain, workdir, arch, f"--apply-controls={path}") if compiler == "ptxas"
                      else _compile_probe(toolchain, workdir, arch, [f"--apply-controls={path}"]))
            if not result.ok:
                said = (result.stderr or result.stdout).strip().splitlines()
                refused[path] = said[-1].strip() if said else result.describe()
    return refused


def probe_capabilities(
    toolchain: Toolchain,
    options: Iterable[str] = (),
    *,
    arch: str | None = None,
    cache_dir: Path | None = None,
) -> Capabilities:
    """Measure what `toolchain` accepts, compiling a tiny kernel per unknown option.

    Each option in `options` (one nvcc argument, e.g. "-Xptxas=-O2") counts as
    accepted when the kernel compiles for `arch` with it and the compiler
    prints no "unknown option"/"ignored" message. ``-Xptxas=X`` options are
    tried on ptxas directly, with the kernel's PTX. Results are cached per
    toolchain and architecture under `cache_dir` (default_cache_dir()).
    """
    cache_path = _cache_file(toolchain, cache_dir if cache_dir is not None else default_cache_dir())
    data = _read_cache(cache_path, toolchain)
    changed = False
    if not data:
        data = {
            "schema": _CACHE_SCHEMA,
            "nvcc": str(toolchain.nvcc),
            "version": toolchain.version,
            "gpu_archs": list(_list(toolchain.nvcc, "--list-gpu-arch")),
            "gpu_codes": list(_list(toolchain.nvcc, "--list-gpu-code")),
            "options": {},
        }
        changed = True
    codes: list[str] = data["gpu_codes"]
    if arch is None:
        if not codes:
            raise ToolchainError(f"{toolchain.nvcc} --list-gpu-code lists no architectures. {HOW_TO_FIX}")
        arch = codes[0]  # the oldest supported: every option is accepted there if anywhere
    arch = arch_number(arch)
    known: dict[str, bool] = data["options"].setdefault(arch, {})
    wanted = [o for o in dict.fromkeys(options) if o not in known]
    need_acf = "apply_controls" not in data
    if wanted or need_acf:
        with tempfile.TemporaryDirectory(prefix="ciq-probe-") as tmp:
            workdir = Path(tmp)
            (workdir / "ciq_probe.cu").write_text(_PROBE_SOURCE, encoding="utf-8")
            baseline = _compile_probe(toolchain, workdir, arch, [])
            if not baseline.ok:
                raise ToolchainError(
                    f"{toolchain.nvcc} cannot compile a trivial kernel for sm_{arch} "
                    f"({baseline.describe()}):\n{baseline.output_tail()}\n{HOW_TO_FIX}"
                )
            if any(o.startswith(_XPTXAS) for o in wanted):
                _make_ptx(toolchain, workdir, arch)  # where it fails, _probe_one compiles with nvcc whole
            workers = max(1, min(4, os.cpu_count() or 1))
            with ThreadPoolExecutor(max_workers=workers) as pool:
                answers = list(pool.map(lambda o: _probe_one(toolchain, workdir, arch, o), wanted))
            known.update(zip(wanted, answers))
            if need_acf:
                nvcc_acf, ptxas_acf = _probe_apply_controls(toolchain, workdir, arch)
                data["apply_controls"] = {"nvcc": nvcc_acf, "ptxas": ptxas_acf}
        changed = True
    if changed:
        _write_cache(cache_path, data)
    return Capabilities(
        gpu_archs=tuple(data["gpu_archs"]),
        gpu_codes=tuple(codes),
        nvcc_apply_controls=bool(data["apply_controls"]["nvcc"]),
        ptxas_apply_controls=bool(data["apply_controls"]["ptxas"]),
        probe_arch=arch,
        options=dict(known),
    )
