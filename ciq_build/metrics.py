"""Static metrics of compiled device code, measured without a GPU.

Three sources: ptxas's own report (``-Xptxas=-v``, which the tuning build adds
to every candidate), ``cuobjdump --dump-resource-usage`` / ``--dump-sass`` on
the objects, and a hash of each cubin's code sections. The hash covers only
the ``.text.*`` sections: the ACF's path is embedded in ``.note.nv.tkinfo``,
so whole-cubin hashes differ for identical code built from different places.

Architectures are given in CMake form ("90a", "80") throughout.
"""

from __future__ import annotations

import hashlib
import re
import struct
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ciq_build import proc
from ciq_build.errors import ToolchainError
from ciq_build.toolchain import Toolchain, arch_number

CUOBJDUMP_TIMEOUT = 300.0


@dataclass(frozen=True)
class KernelUsage:
    """What ptxas reported for one kernel compiled for one architecture."""

    function: str  # mangled name
    arch: str  # "90a"
    registers: int
    spill_stores: int  # bytes
    spill_loads: int  # bytes
    stack_frame: int  # bytes
    shared: int = 0  # bytes of static shared memory ("smem"), when reported
    object: str | None = None  # the object being built, when the build tool printed it

    @property
    def spill_bytes(self) -> int:
        return self.spill_stores + self.spill_loads


# ---------------------------------------------------------------- ptxas -v

_COMPILING = re.compile(r"Compiling entry function '([^']+)' for '([^']+)'")
_PROPERTIES = re.compile(r"Function properties for (\S+)")
_FRAME = re.compile(
    r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads"
)
_USED = re.compile(r"Used (\d+) registers")
_SMEM = re.compile(r"(\d+) bytes smem")
# Ninja ("[3/7] Building CUDA object CMakeFiles/t.dir/a.cu.o") and Makefile
# ("[ 50%] Building CUDA object ...") progress lines say which object follows.
_BUILDING = re.compile(r"Building CUDA object (\S+)")


def parse_ptxas_verbose(text: str) -> list[KernelUsage]:
    """Every kernel in ``-Xptxas -v`` output, as build tools print it among other lines.

    A kernel reported twice for the same object and architecture (nvcc 13.3
    runs ptxas once more to check the PTX it embeds) is kept once: the last
    report, which is the one for the cubin that ships.
    """
    found: dict[tuple[str | None, str, str], KernelUsage] = {}
    current: dict[str, object] | None = None
    last_properties: str | None = None
    obj: str | None = None

    def finish() -> None:
        nonlocal current
        if current is not None and "registers" in current:
            usage = KernelUsage(
                function=str(current["function"]),
                arch=str(current["arch"]),
                registers=int(current["registers"]),  # type: ignore[arg-type]
                spill_stores=int(current.get("spill_stores", 0)),  # type: ignore[arg-type]
                spill_loads=int(current.get("spill_loads", 0)),  # type: ignore[arg-type]
                stack_frame=int(current.get("stack_frame", 0)),  # type: ignore[arg-type]
                shared=int(current.get("shared", 0)),  # type: ignore[arg-type]
                object=obj,
            )
            key = (obj, usage.function, usage.arch)
            found.pop(key, None)  # re-insert: the order is that of the last report
            found[key] = usage
        current = None

    for line in text.splitlines():
        if match := _BUILDING.search(line):
            finish()
            obj = match.group(1)
        elif match := _COMPILING.search(line):
            finish()
            try:
                arch = arch_number(match.group(2))
            except ToolchainError:
                arch = match.group(2)
            current = {"function": match.group(1), "arch": arch}
            last_properties = None
        elif match := _PROPERTIES.search(line):
            last_properties = match.group(1)
        elif (match := _FRAME.search(line)) and current is not None:
            # Device functions called by the kernel get their own properties
            # block; only the kernel's own counts are the kernel's.
            if last_properties == current["function"]:
                current["stack_frame"], current["spill_stores"], current["spill_loads"] = map(int, match.groups())
        elif (match := _USED.search(line)) and current is not None:
            current["registers"] = int(match.group(1))
            if smem := _SMEM.search(line):
                current["shared"] = int(smem.group(1))
            finish()
    finish()
    return list(found.values())


def summarize(usages: Iterable[KernelUsage]) -> dict[str, int]:
    """Objective values over all kernels: registers (max), spill_bytes and stack_bytes (sums)."""
    usages = list(usages)
    return {
        "registers": max((u.registers for u in usages), default=0),
        "spill_bytes": sum(u.spill_bytes for u in usages),
        "stack_bytes": sum(u.stack_frame for u in usages),
        "kernels": len(usages),
    }


# ---------------------------------------------------------------- cuobjdump


def _cuobjdump(toolchain: Toolchain, args: list[str], cwd: Path | None = None) -> str:
    tool = toolchain.require_cuobjdump()
    result = proc.run([tool, *args], CUOBJDUMP_TIMEOUT, cwd=cwd)
    text = result.stdout + result.stderr
    if not result.ok:
        if "does not contain device code" in text:
            return ""
        raise ToolchainError(f"{tool} {' '.join(args)} {result.describe()}:\n{result.output_tail()}")
    return result.stdout


_ELF_ARCH = re.compile(r"^arch = (\S+)", re.M)
_RESOURCE_FUNCTION = re.compile(r"^\s*Function (\S+):\s*$")
_RESOURCE_FIELDS = re.compile(r"([A-Z_]+(?:\[\d+\])?):(\d+)")


def _elf_sections(text: str) -> Iterable[tuple[str, str]]:
    """(arch, text) for each "Fatbin elf code" block of cuobjdump output (PTX blocks skipped)."""
    blocks = re.split(r"^Fatbin (elf|ptx) code:\s*$", text, flags=re.M)
    # re.split with a group: [before, kind, block, kind, block, ...]
    for kind, block in zip(blocks[1::2], blocks[2::2]):
        if kind != "elf":
            continue
        match = _ELF_ARCH.search(block)
        if match:
            yield arch_number(match.group(1)), block


def resource_usage(object_file: Path, toolchain: Toolchain) -> dict[tuple[str, str], dict[str, int]]:
    """{(function, arch): {"registers", "stack", "shared", "local"}} of every kernel in an object."""
    text = _cuobjdump(toolchain, ["--dump-resource-usage", str(Path(object_file).absolute())])
    out: dict[tuple[str, str], dict[str, int]] = {}
    for arch, block in _elf_sections(text):
        function: str | None = None
        for line in block.splitlines():
            if match := _RESOURCE_FUNCTION.match(line):
                function = match.group(1)
            elif function is not None and "REG:" in line:
                fields = dict(_RESOURCE_FIELDS.findall(line))
                out[(function, arch)] = {
                    "registers": int(fields.get("REG", 0)),
                    "stack": int(fields.get("STACK", 0)),
                    "shared": int(fields.get("SHARED", 0)),
                    "local": int(fields.get("LOCAL", 0)),
                }
                function = None
    return out


_SASS_FUNCTION = re.compile(r"^\s*Function : (\S+)")
_SASS_INSTRUCTION = re.compile(r"^\s*/\*[0-9a-f]{4,}\*/\s+(.*?);")


def sass_instruction_counts(object_file: Path, toolchain: Toolchain) -> dict[tuple[str, str], int]:
    """{(function, arch): number of SASS instructions}, not counting NOP padding."""
    text = _cuobjdump(toolchain, ["--dump-sass", str(Path(object_file).absolute())])
    out: dict[tuple[str, str], int] = {}
    for arch, block in _elf_sections(text):
        function: str | None = None
        for line in block.splitlines():
            if match := _SASS_FUNCTION.match(line):
                function = match.group(1)
                out.setdefault((function, arch), 0)
            elif function is not None and (match := _SASS_INSTRUCTION.match(line)):
                opcode = match.group(1).lstrip("{").split()
                # Skip a predicate ("@P0") to find the opcode; NOPs only pad to alignment.
                words = [w for w in opcode if not w.startswith("@")]
                if words and words[0] != "NOP":
                    out[(function, arch)] += 1
    return out


def sass_instruction_count(object_file: Path, toolchain: Toolchain) -> int:
    """Total SASS instructions (all kernels, all architectures) of one object: the sass_instructions objective."""
    return sum(sass_instruction_counts(object_file, toolchain).values())


# ---------------------------------------------------------------- code hash


def _text_sections(cubin: bytes) -> list[tuple[str, bytes]]:
    """(name, contents) of every .text.* section of an ELF file, parsed with struct."""
    if cubin[:4] != b"\x7fELF":
        raise ToolchainError("cuobjdump extracted a file that is not an ELF cubin")
    is64 = cubin[4] == 2
    endian = "<" if cubin[5] == 1 else ">"
    if is64:
        shoff, = struct.unpack_from(endian + "Q", cubin, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from(endian + "HHH", cubin, 0x3A)
        header = endian + "IIQQQQIIQQ"
    else:
        shoff, = struct.unpack_from(endian + "I", cubin, 0x20)
        shentsize, shnum, shstrndx = struct.unpack_from(endian + "HHH", cubin, 0x2E)
        header = endian + "IIIIIIIIII"
    sections = [struct.unpack_from(header, cubin, shoff + i * shentsize) for i in range(shnum)]
    _, _, _, _, str_offset, str_size, *_ = sections[shstrndx]
    names = cubin[str_offset:str_offset + str_size]
    out: list[tuple[str, bytes]] = []
    SHT_NOBITS = 8
    for name_offset, sh_type, _flags, _addr, offset, size, *_ in sections:
        name = names[name_offset:names.index(b"\0", name_offset)].decode("utf-8", "replace")
        if name.startswith(".text.") and sh_type != SHT_NOBITS:
            out.append((name, cubin[offset:offset + size]))
    return sorted(out)


def code_hash(object_file: Path, toolchain: Toolchain) -> dict[str, str]:
    """{arch: sha256 hex} over the names and contents of each cubin's .text.* sections.

    Architectures whose cubin holds no code are left out, as are objects
    without device code ({}).
    """
    with tempfile.TemporaryDirectory(prefix="ciq-cubins-") as tmp:
        workdir = Path(tmp)
        _cuobjdump(toolchain, ["-xelf", "all", str(Path(object_file).absolute())], cwd=workdir)
        digests: dict[str, hashlib._Hash] = {}
        for cubin in sorted(workdir.glob("*.cubin")):
            match = re.search(r"\.(sm_[0-9]+[a-z]?)\.cubin$", cubin.name)
            if match is None:
                continue
            sections = _text_sections(cubin.read_bytes())
            if not sections:
                continue  # a cubin without code (host-only sources still get one)
            digest = digests.setdefault(arch_number(match.group(1)), hashlib.sha256())
            for name, data in sections:
                digest.update(name.encode() + b"\0" + len(data).to_bytes(8, "little") + data)
        return {arch: digest.hexdigest() for arch, digest in sorted(digests.items())}
