"""Static metrics of compiled device code, measured without a GPU.

Three sources: ptxas's own report (``-Xptxas=-v``, which the tuning build adds
to every candidate), cuobjdump on the objects (``--dump-resource-usage``,
``--dump-sass``, and ``-elf`` for a kernel's ``__launch_bounds__``, which the
PTX also gives where ptxas alone ran), and the ELF sections themselves: a hash
of each cubin's code sections (`code_hash`) and of the host sections the
program loads (`host_code_hash`). The device hash covers only
the ``.text.*`` sections (bytes and relocations, under names with nvcc's
path-derived module ids zeroed): the ACF's path is embedded in
``.note.nv.tkinfo``, and what has internal linkage is named after the source's
absolute path, so whole-cubin hashes differ for identical code built from
different places.

Architectures are given in CMake form ("90a", "80") throughout.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import shutil
import struct
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ciq_build.compiler import occupancy
from ciq_build.compiler.architectures import arch_number
from ciq_build.compiler.toolchain import Toolchain
from ciq_build.core.objectives import KINDS, PtxasReport
from ciq_build.errors import ToolchainError
from ciq_build.measure import proc

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
    barriers: int = 0  # named barriers ("used 1 barriers")
    threads: int = 0  # threads a block of its launch, where known (ciq_build.tune.runner); 0: not known
    # bytes of dynamic shared memory (extern __shared__) a block of its launch takes, where declared
    # (DYNAMIC_SHARED_MEMORY: ciq_build.tune.runner); no compiled figure holds it
    dynamic_shared: int = 0
    declared_threads: bool = False  # `threads` is THREADS_PER_BLOCK's, the kernel having no __launch_bounds__

    @property
    def spill_bytes(self) -> int:
        return self.spill_stores + self.spill_loads

    @property
    def occupancy(self) -> float | None:
        """Its theoretical occupancy in percent (ciq_build.compiler.occupancy); None where its block size or its
        architecture's limits are not known."""
        if not self.threads or not occupancy.knows(self.arch):
            return None
        return occupancy.occupancy(occupancy.limits(self.arch), self.registers, self.threads,
                                   self.shared + self.dynamic_shared, self.barriers).percent


# ---------------------------------------------------------------- ptxas -v

_COMPILING = re.compile(r"Compiling entry function '([^']+)' for '([^']+)'")
_PROPERTIES = re.compile(r"Function properties for (\S+)")
_FRAME = re.compile(
    r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads"
)
_USED = re.compile(r"Used (\d+) registers")
_SMEM = re.compile(r"(\d+) bytes smem")
_BARRIERS = re.compile(r"used (\d+) barriers")
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
    current: dict[str, str | int] | None = None
    last_properties: str | None = None
    obj: str | None = None

    def finish() -> None:
        nonlocal current
        if current is not None and "registers" in current:
            usage = KernelUsage(
                function=str(current["function"]),
                arch=str(current["arch"]),
                registers=int(current["registers"]),
                spill_stores=int(current.get("spill_stores", 0)),
                spill_loads=int(current.get("spill_loads", 0)),
                stack_frame=int(current.get("stack_frame", 0)),
                shared=int(current.get("shared", 0)),
                object=obj,
                barriers=int(current.get("barriers", 0)),
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
            if barriers := _BARRIERS.search(line):
                current["barriers"] = int(barriers.group(1))
            finish()
    finish()
    return list(found.values())


def summarize(usages: Iterable[KernelUsage]) -> dict[str, float]:
    """Every ptxas-report objective's value over all kernels, by metric key (registers: the most, spill_bytes:
    the sum, occupancy: the least, ..., as the objective table says), and the number of kernels. A value some
    kernel lacks (occupancy without its block size) is left out."""
    usages = list(usages)
    values = {kind.metric_key: _combined(kind.extractor, usages)
              for kind in KINDS if isinstance(kind.extractor, PtxasReport)}
    return {**{k: v for k, v in values.items() if v is not None}, "kernels": len(usages)}


def _combined(report: PtxasReport, usages: list[KernelUsage]) -> float | None:
    found: list[float | None] = [getattr(usage, report.field) for usage in usages]
    counts = [count for count in found if count is not None]
    if len(counts) < len(found):
        return None
    if report.combine == "sum":
        return sum(counts)
    return (max if report.combine == "max" else min)(counts, default=0)


def kernel_values(usages: Iterable[KernelUsage], objectives: Mapping[str, tuple[str, str]]) -> dict[str, float]:
    """Per-kernel objective values: {name: value} for each {name: (metric, kernel regex)} of `objectives`.

    A kernel counts when the regex is found in its mangled or its demangled name;
    its value combines those kernels (over every architecture) as summarize does
    over all. A name whose regex finds no kernel is left out (its objective has no value).
    """
    usages = list(usages)
    out: dict[str, float] = {}
    for name, (metric, pattern) in objectives.items():
        matched = found_by(usages, [pattern])
        if matched and metric in (values := summarize(matched)):
            out[name] = values[metric]
    return out


def found_by(usages: Iterable[KernelUsage], patterns: Iterable[str]) -> list[KernelUsage]:
    """The kernels in whose mangled or demangled name one of the `patterns` (a per-kernel objective's regex) is found."""
    usages, regexes = list(usages), [re.compile(pattern) for pattern in patterns]
    names = demangled({u.function for u in usages}) if regexes else {}
    return [u for u in usages if any(r.search(u.function) or r.search(names.get(u.function, "")) for r in regexes)]


_DEMANGLED: dict[str, str] = {}  # mangled -> demangled, for the life of the process (names do not change)


def demangled(functions: Iterable[str]) -> dict[str, str]:
    """{mangled: demangled} through c++filt, where there is one; a name it cannot read is kept as it is."""
    wanted = sorted(set(functions) - set(_DEMANGLED))
    tool = shutil.which("c++filt")
    if wanted and tool is not None:
        result = proc.run([tool], CUOBJDUMP_TIMEOUT, stdin_text="\n".join(wanted) + "\n")
        lines = result.stdout.splitlines()
        if result.ok and len(lines) == len(wanted):
            _DEMANGLED.update(zip(wanted, lines))
    return {f: _DEMANGLED.get(f, f) for f in functions}


# ---------------------------------------------------------------- cuobjdump


def _cuobjdump(toolchain: Toolchain, args: list[str], cwd: Path | None = None) -> str:
    tool = toolchain.require_cuobjdump()
    env = None
    if "--dump-sass" in args:
        # cuobjdump disassembles with nvdisasm, found beside itself, on PATH or in NVDISASM_PATH.
        env = {**os.environ, "NVDISASM_PATH": str(toolchain.require_nvdisasm().parent)}
    result = proc.run([tool, *args], CUOBJDUMP_TIMEOUT, cwd=cwd, env=env)
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


def as_linked(usages: Iterable[KernelUsage], linked: Mapping[tuple[str, str], Mapping[str, int]]) -> list[KernelUsage]:
    """ptxas's reports of relocatable kernels with the registers and stack the device link gave them (`linked`:
    resource_usage of the linked executable), which adds those of the functions each calls in other files:
    code-samples' advanceParticles, 24 registers and no stack in ptxas's report, 52 and 32 bytes linked. Spills stay
    ptxas's (the link reports none); a kernel the executable lacks stays as reported."""
    found = []
    for usage in usages:
        figures = linked.get((usage.function, usage.arch))
        found.append(usage if figures is None else dataclasses.replace(
            usage, registers=max(usage.registers, figures["registers"]),
            stack_frame=max(usage.stack_frame, figures["stack"])))
    return found


# `__launch_bounds__(N)` is PTX's .maxntid N, 1, 1 (.reqntid: an exact block shape), which ptxas records in each
# kernel's .nv.info section (EIATTR_MAX_THREADS / EIATTR_REQNTID); the kernel never runs larger blocks.
_PTX_ENTRY = re.compile(r"\.entry\s+([^\s(]+)\s*\(")
_PTX_BOUND = re.compile(r"^\s*\.(?:maxntid|reqntid)\s+([0-9][0-9,\s]*)")
_NV_INFO = re.compile(r"^\.nv\.info\.(\S+)\s*$")
_BOUND_ATTRIBUTE = re.compile(r"Attribute:\s*EIATTR_(?:MAX_THREADS|REQNTID)\b")
_HEX_VALUES = re.compile(r"Value:\s*((?:0x[0-9a-fA-F]+\s*)+)$")


def _threads(dimensions: Iterable[int]) -> int:
    product = 1
    for size in dimensions:
        product *= size
    return product


def ptx_launch_bounds(text: str) -> dict[str, int]:
    """{kernel: the most threads a block of it has} of the kernels a PTX text bounds (`__launch_bounds__`)."""
    found: dict[str, int] = {}
    entry: str | None = None
    for line in text.splitlines():
        if match := _PTX_ENTRY.search(line):
            entry = match.group(1)
        elif entry is not None and (match := _PTX_BOUND.match(line)):
            found[entry] = _threads(int(n) for n in re.findall(r"[0-9]+", match.group(1)))
        elif line.lstrip().startswith("{"):
            entry = None
    return found


def launch_bounds(object_file: Path, toolchain: Toolchain) -> dict[str, int]:
    """{kernel: the most threads a block of it has} of the kernels an object's cubins bound (`__launch_bounds__`),
    from cuobjdump -elf's .nv.info attributes."""
    text = _cuobjdump(toolchain, ["-elf", str(Path(object_file).absolute())])
    found: dict[str, int] = {}
    function: str | None = None
    bound_next = False
    for line in text.splitlines():
        if match := _NV_INFO.match(line):
            function, bound_next = match.group(1), False
        elif _BOUND_ATTRIBUTE.search(line):
            bound_next = True
        elif bound_next and function is not None and (match := _HEX_VALUES.search(line)):
            found[function] = _threads(int(value, 16) for value in match.group(1).split())
            bound_next = False
    return found


# A kernel's dynamic shared memory (`extern __shared__`) is sized by its launch, so no compiled figure holds it (ptxas
# reports static `smem` only): in PTX, a module-level `.extern .shared` array that the kernel's body names.
_PTX_EXTERN_SHARED = re.compile(r"^\s*\.extern\s+\.shared\b[^;]*?([A-Za-z_$%][\w$]*)\s*\[\s*\]\s*;", re.MULTILINE)


def ptx_dynamic_shared(text: str) -> set[str]:
    """The kernels of a PTX text that use dynamic shared memory (`extern __shared__`)."""
    names = set(_PTX_EXTERN_SHARED.findall(text))
    if not names:
        return set()
    named = re.compile(r"(?<![\w$%])(?:" + "|".join(map(re.escape, sorted(names))) + r")(?![\w$])")
    found: set[str] = set()
    entry: str | None = None
    for line in text.splitlines():
        if match := _PTX_ENTRY.search(line):
            entry = match.group(1)
        elif line.startswith("}"):  # a function's closing brace is the only one in column 0
            entry = None
        elif entry is not None and named.search(line):
            found.add(entry)
    return found


def dynamic_shared(object_file: Path, toolchain: Toolchain) -> set[str]:
    """The kernels of an object that use dynamic shared memory, from the PTX it embeds (none where it embeds none)."""
    return ptx_dynamic_shared(_cuobjdump(toolchain, ["-ptx", str(Path(object_file).absolute())]))


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

# nvcc names what has internal linkage (an anonymous namespace, `static`) after
# the translation unit's "module id", <8 hex>_<n>_<file name, n chars>_<8 hex>
# ("cbfaf43b_4_k_cu_572212f9" in _ZN36_GLOBAL__N__cbfaf43b_4_k_cu_572212f911kernEPf,
# _INTERNAL_..., __nv_static_25__...). The first hash is of the source's
# absolute path, so the same code built in another checkout has other names.
_MODULE_ID = re.compile(r"(?<=_)[0-9a-f]{8}_([0-9]+)_")
_MODULE_ID_NORMAL = "00000000"


def normalise_symbol(name: str) -> str:
    """`name` with every nvcc module id's hashes zeroed: the same in every checkout.

    The length-prefixed file name inside the id must be followed by the
    second hash, so unrelated hex digits in a name are left alone.
    """
    out: list[str] = []
    position = 0
    for match in _MODULE_ID.finditer(name):
        if match.start() < position:
            continue  # inside an id already normalised
        end_of_file_name = match.end() + int(match.group(1))
        tail = name[end_of_file_name:end_of_file_name + 9]
        if re.fullmatch(r"_[0-9a-f]{8}", tail):
            out += [name[position:match.start()], _MODULE_ID_NORMAL, name[match.start() + 8:end_of_file_name],
                    "_", _MODULE_ID_NORMAL]
            position = end_of_file_name + 9
    out.append(name[position:])
    return "".join(out)


@dataclass(frozen=True)
class CodeSection:
    """One ELF section a code hash covers (a cubin's .text.*, an object's loaded host section): its normalised name,
    its bytes and what they refer to."""

    name: str  # normalised (normalise_symbol)
    data: bytes
    # (offset, relocation type, normalised symbol name, addend), by offset: which
    # function a call or which variable a load reaches is not in the bytes themselves.
    relocations: tuple[tuple[int, int, str, int], ...] = ()


_SHT_NOBITS = 8
_SHF_ALLOC = 0x2


def _is_device_code(name: str, sh_type: int, sh_flags: int) -> bool:
    return name.startswith(".text.") and sh_type != _SHT_NOBITS


def _text_sections(cubin: bytes) -> list[CodeSection]:
    """Every .text.* section of an ELF file with its relocations, sorted by normalised name (parsed with struct)."""
    try:
        return _parse_sections(cubin, _is_device_code)
    except (struct.error, ValueError, IndexError) as error:
        raise ToolchainError(f"cuobjdump extracted a cubin that cannot be read as ELF ({error})") from None


def _parse_sections(cubin: bytes, keep: Callable[[str, int, int], bool]) -> list[CodeSection]:
    """The sections `keep(normalised name, sh_type, sh_flags)` selects, with the relocations that apply to them."""
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

    def contents(index: int) -> bytes:
        _, _, _, _, offset, size, *_ = sections[index]
        return cubin[offset:offset + size]

    def string(table: bytes, offset: int) -> str:
        return table[offset:table.index(b"\0", offset)].decode("utf-8", "replace")

    section_names = contents(shstrndx)
    names = [normalise_symbol(string(section_names, s[0])) for s in sections]

    symbol_names: dict[int, list[str]] = {}  # symbol table section -> normalised name of each symbol

    def symbol(table: int, index: int) -> str:
        if table not in symbol_names:
            data, strings = contents(table), contents(sections[table][6])  # sh_link: its string table
            entry = endian + ("IBBHQQ" if is64 else "IIIBBH")
            width = struct.calcsize(entry)
            found = []
            for start in range(0, len(data) - width + 1, width):
                fields = struct.unpack_from(entry, data, start)
                st_name, st_info, st_shndx = (fields[0], fields[1], fields[3]) if is64 else (fields[0], fields[3], fields[5])
                if st_name == 0 and st_info & 0xF == 3 and st_shndx < len(names):  # STT_SECTION: the section's name
                    found.append(names[st_shndx])
                else:
                    found.append(normalise_symbol(string(strings, st_name)))
            symbol_names[table] = found
        return symbol_names[table][index]

    SHT_RELA, SHT_REL = 4, 9
    relocations: dict[int, list[tuple[int, int, str, int]]] = {}
    for _sh_name, sh_type, _flags, _addr, _offset, _size, sh_link, sh_info, *_ in sections:
        if sh_type not in (SHT_RELA, SHT_REL) or not 0 < sh_info < len(sections):
            continue
        if not keep(names[sh_info], sections[sh_info][1], sections[sh_info][2]):
            continue
        entry = endian + ("QQq" if is64 else "IIi")[: 3 if sh_type == SHT_RELA else 2]
        width = struct.calcsize(entry)
        data = cubin[_offset:_offset + _size]
        for start in range(0, len(data) - width + 1, width):
            fields = struct.unpack_from(entry, data, start)
            r_offset, r_info = fields[0], fields[1]
            addend = fields[2] if len(fields) > 2 else 0
            sym, kind = (r_info >> 32, r_info & 0xFFFFFFFF) if is64 else (r_info >> 8, r_info & 0xFF)
            relocations.setdefault(sh_info, []).append((r_offset, kind, symbol(sh_link, sym), addend))

    out: list[CodeSection] = []
    for index, (_, sh_type, sh_flags, *_rest) in enumerate(sections):
        if keep(names[index], sh_type, sh_flags):
            out.append(CodeSection(names[index], contents(index), tuple(sorted(relocations.get(index, [])))))
    return sorted(out, key=lambda s: (s.name, s.data, s.relocations))


def _digest_sections(digest: hashlib._Hash, sections: list[CodeSection]) -> None:
    for section in sections:
        digest.update(section.name.encode() + b"\0" + len(section.data).to_bytes(8, "little") + section.data)
        digest.update(len(section.relocations).to_bytes(8, "little"))
        for offset, kind, target, addend in section.relocations:
            digest.update(b"%d %d %d " % (offset, kind, addend) + target.encode() + b"\0")


def code_hash(object_file: Path, toolchain: Toolchain) -> dict[str, str]:
    """{arch: sha256 hex} over each cubin's .text.* sections: names, bytes and relocations.

    The same in every checkout: names are normalised (normalise_symbol) and
    sections taken in the order of their normalised names; the ACF's path and
    ptxas's options (in .note.nv.tkinfo) are not hashed. Architectures whose
    cubin holds no code are left out, as are objects without device code ({}).
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
            _digest_sections(digests.setdefault(arch_number(match.group(1)), hashlib.sha256()), sections)
        return {arch: digest.hexdigest() for arch, digest in sorted(digests.items())}


def _is_host_image(name: str, sh_type: int, sh_flags: int) -> bool:
    # What the program loads (code, constants, initialisers), but not the embedded
    # device code: code_hash covers that, and its notes name the ACF's path.
    return bool(sh_flags & _SHF_ALLOC) and sh_type != _SHT_NOBITS and name != ".nv_fatbin"


def host_code_hash(object_file: Path) -> str:
    """sha256 over an object's host sections that the program loads (bytes and relocations), .nv_fatbin excluded.

    A -D parameter can change only host code and constants (a launch size, a
    literal in .rodata) and leave every cubin as it was: the device code hash
    alone would call two such builds the same.
    """
    data = Path(object_file).read_bytes()
    try:
        sections = _parse_sections(data, _is_host_image)
    except (struct.error, ValueError, IndexError) as error:
        raise ToolchainError(f"{object_file} cannot be read as an ELF object ({error})") from None
    digest = hashlib.sha256()
    _digest_sections(digest, sections)
    return digest.hexdigest()
