"""Every tool a tune will run, checked before the baseline is built.

A tune that finds out at the end that it cannot fingerprint its winner (no
cuobjdump) has spent its whole search for nothing. So before anything is
built: the build tool and the generator's make program (every candidate),
cuobjdump (the pinned winner's fingerprints, which `verify` compares, and SASS
counts), nvdisasm (which cuobjdump runs to disassemble, for the
sass_instructions objective; either may come from another installed toolkit,
ciq_build.compiler.toolchain.borrow_tool), and that the benchmark is built inside the build
tree (the scratch trees can only rebuild what is). nvcc and ptxas themselves are
checked when the toolchain is loaded.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ciq_build.compiler.toolchain import TOOLS_PATH_VARIABLE, Toolchain
from ciq_build.core.objectives import Objective, Tool, tools_needed
from ciq_build.errors import ConfigError, ToolchainError
from ciq_build.project.manifest import Manifest
from ciq_build.project.tree_cache import cache_value, tree_tool

# Where ciq_build.compiler.toolchain.tool_dirs looks for a cuobjdump/nvdisasm nvcc's toolkit lacks.
TOOL_PLACES = (f"${TOOLS_PATH_VARIABLE} when set, else $CUDA_HOME/bin, $CUDA_PATH/bin, PATH, /usr/local/cuda*/bin "
               "and the PyPI toolkit")


@dataclass(frozen=True)
class Missing:
    """A tool the run needs and cannot find."""

    tool: str
    why: str


def _executable(name_or_path: str) -> bool:
    return shutil.which(name_or_path) is not None


def missing_tools(manifest: Manifest, toolchain: Toolchain, *, pin: bool, objectives: Iterable[Objective],
                  cmake: bool = True) -> list[Missing]:
    """What a tune of `manifest`'s target with these settings needs and does not find, in the order it needs it.

    `cmake=False`: a target that CMake does not build (a setuptools extension, ciq_build.project.setuptools_backend).
    """
    needed = tools_needed(objectives)
    missing: list[Missing] = []
    if cmake and not _executable(tree_tool(manifest.binary_dir, "cmake")):
        missing.append(Missing("cmake", "configures and builds every candidate (pip install cmake)"))
    make_program = cache_value(manifest.binary_dir / "CMakeCache.txt", "CMAKE_MAKE_PROGRAM")
    if make_program and not make_program.endswith("-NOTFOUND") and not _executable(make_program):
        missing.append(Missing(make_program, f"the {manifest.generator} build tool the build dir was configured with"))
    if pin:
        needed["cuobjdump"] = ["fingerprints the pinned winner's objects, which `verify` checks",
                               *needed.get("cuobjdump", [])]
    found: dict[Tool, Path | None] = {"cuobjdump": toolchain.cuobjdump, "nvdisasm": toolchain.nvdisasm}
    missing += [Missing(tool, "; ".join(needed[tool])) for tool, path in found.items() if tool in needed and path is None]
    return missing


def check_tune(manifest: Manifest, toolchain: Toolchain, *, pin: bool, objectives: list[Objective],
               needs_benchmark: bool, cmake: bool = True) -> None:
    """Raise one error naming everything missing (ToolchainError) or misplaced (ConfigError); nothing is built."""
    missing = missing_tools(manifest, toolchain, pin=pin, objectives=objectives, cmake=cmake)
    if missing:
        cuda = {"cuobjdump", "nvdisasm"} & {m.tool for m in missing}
        raise ToolchainError(missing_message(f"tuning {manifest.target}", missing, toolchain, manifest.binary_dir,
                                             no_pin_helps=pin and cuda == {"cuobjdump"}
                                             and "cuobjdump" not in tools_needed(objectives)))
    outside = benchmark_outside(manifest) if cmake else None  # a setuptools benchmark is a command
    if needs_benchmark and outside:
        raise ConfigError(outside)


def target_outside(manifest: Manifest, benchmark_links: bool) -> str | None:
    """Why a scratch tree must not build `manifest`'s target whole, where CMake writes it outside the build tree: the
    build would write a candidate's executable or library over the user's own there (wangzyon's SGEMM, its
    EXECUTABLE_OUTPUT_PATH the source folder, under Unix Makefiles: every candidate's sgemm). None where it is inside,
    or unknown (a manifest of before `target_file`). `benchmark_links`: the build is the benchmark's, which links it."""
    built = manifest.target_file
    if built is None:
        return None
    try:
        Path(built).relative_to(manifest.binary_dir)
    except ValueError:
        why = (f"the benchmark's build links {manifest.target}" if benchmark_links else
               f"the {manifest.generator} generator cannot compile {manifest.target}'s objects alone")
        return (f"{manifest.target} is built at {built}, outside the build tree {manifest.binary_dir}, and a "
                f"candidate's build in a scratch copy of the tree builds {manifest.target} itself ({why}): it would "
                f"write a candidate's {manifest.target} over yours. Configure a build tree with -G Ninja (a static "
                "tune then compiles the objects alone), or drop the EXECUTABLE_OUTPUT_PATH or "
                "RUNTIME_/LIBRARY_/ARCHIVE_OUTPUT_DIRECTORY that moves it out")
    return None


def benchmark_outside(manifest: Manifest) -> str | None:
    """Why a scratch tree cannot build `manifest`'s benchmark, where CMake writes it outside the build tree
    (EXECUTABLE_OUTPUT_PATH set to the source folder, as wangzyon's SGEMM has it); None where it is inside or there
    is none. A scratch tree's build of it would write the user's own file there."""
    bench = manifest.benchmark
    if bench is None:
        return None
    try:
        Path(bench.path).relative_to(manifest.binary_dir)
    except ValueError:
        return (f"the benchmark {bench.target} of {manifest.target} is built at {bench.path}, outside the build "
                f"tree {manifest.binary_dir}: ciq_build rebuilds it in scratch copies of the build tree, so it must "
                "be built inside it (drop the EXECUTABLE_OUTPUT_PATH or RUNTIME_OUTPUT_DIRECTORY that moves it out)")
    return None


def check_verify(toolchain: Toolchain, target: str, build_dir: Path) -> None:
    """`verify` fingerprints the rebuilt objects: cuobjdump, before it builds anything."""
    if toolchain.cuobjdump is None:
        raise ToolchainError(missing_message(
            f"verifying {target}", [Missing("cuobjdump", "reads the rebuilt objects' code and resource usage")],
            toolchain, build_dir, no_pin_helps=False))


def missing_message(what: str, missing: list[Missing], toolchain: Toolchain, build_dir: Path, *,
                    no_pin_helps: bool) -> str:
    """One message: what is missing and why, then what to do; nothing has been built yet."""
    lines = [f"{what} needs {', '.join(m.tool for m in missing)}, not found; nothing was built:"]
    lines += [f"  {m.tool}: {m.why}" for m in missing]
    cuda = [m.tool for m in missing if m.tool in ("cuobjdump", "nvdisasm")]
    if cuda:
        lines.append(f"The CUDA toolkit of {toolchain.nvcc} (CUDA {toolchain.version}) has no {' or '.join(cuda)}, "
                     f"nor does another installed toolkit of CUDA {toolchain.major_minor.split('.')[0]} or newer "
                     f"(looked in {TOOL_PLACES}). " + cuda_tools_fix(toolchain, cuda, build_dir))
    if no_pin_helps:
        lines.append("Or search without pinning: --no-pin.")
    return "\n".join(lines)


def cuda_tools_fix(toolchain: Toolchain, tools: list[str], build_dir: Path) -> str:
    """How to get cuobjdump/nvdisasm: into this toolkit, or by building with one that has them."""
    them = "it" if len(tools) == 1 else "them"
    other = (f"configure the build with a toolkit that has {them}: cmake -DCMAKE_CUDA_COMPILER=/path/to/bin/nvcc "
             f"{build_dir} (a fresh build dir if it was configured with another compiler)")
    if toolchain.source == "pip" or "site-packages" in toolchain.nvcc.parts:
        return (f'Add {them} to this PyPI toolkit: pip install "cuda-toolkit[{",".join(tools)}]=='
                f'{toolchain.major_minor}.*"; or {other}.')
    return (f"Add {them} to that toolkit (NVIDIA's full CUDA toolkit has both), or {other}; for example the PyPI "
            f'toolkit: pip install "cuda-toolkit[nvcc,cccl,cuobjdump,nvdisasm]=={toolchain.major_minor}.*" puts '
            "nvcc in <site-packages>/nvidia/cu13/bin.")
