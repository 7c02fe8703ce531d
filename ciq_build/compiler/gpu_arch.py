"""Which GPU a benchmark runs on, and which of the target's architectures the tune's figures describe.

The GPU is read where the benchmark runs (this machine, or a Ray GPU worker): `nvidia-smi
--query-gpu=compute_cap` gives each GPU's compute capability ("9.0"), and the first GPU of
CUDA_VISIBLE_DEVICES in the benchmark's environment is the one its CUDA runtime uses. Where no
nvidia-smi answers (no GPU, no driver) the GPU is unknown and nothing is said of it.

A build carries machine code (SASS) for the GPU when one of its CUDA_ARCHITECTURES is real code
that the GPU runs: sm_XY runs on a GPU of the same major version and a minor at least Y; an
arch-specific sm_XYa only on that very GPU; a `-virtual` entry is PTX alone. Without SASS the
driver JIT-compiles the PTX when the program loads: the benchmark then times code ptxas built at
load time, while static metrics (registers, spills) describe the architectures built.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ciq_build.compiler.architectures import arch_name, architecture_list, is_keyword, split_architectures
from ciq_build.errors import ConfigError
from ciq_build.measure import proc

# The benchmark GPU's architecture among a candidate's metrics (90 for compute capability 9.0).
GPU_ARCH_METRIC = "gpu_sm"
NVIDIA_SMI_TIMEOUT = 30.0
_CAPABILITY = re.compile(r"^\s*(\d+)\.(\d+)\s*$")
_KNOWN: dict[tuple[str, str], int | None] = {}  # (nvidia-smi, device) -> arch, for the life of the process


def read_gpu_arch(env: Mapping[str, str] | None = None) -> int | None:
    """The architecture (90 for compute capability 9.0) of the GPU a benchmark started with `env` uses;
    None where nvidia-smi is missing or does not answer."""
    environ = os.environ if env is None else env
    tool = shutil.which("nvidia-smi", path=environ.get("PATH"))
    if tool is None:
        return None
    visible = environ.get("CUDA_VISIBLE_DEVICES")
    device = visible.split(",")[0].strip() if visible else "0"
    if (tool, device) not in _KNOWN:
        result = proc.run([tool, "--query-gpu=compute_cap", "--format=csv,noheader", "-i", device],
                          NVIDIA_SMI_TIMEOUT, env=dict(environ))
        match = _CAPABILITY.match(result.stdout.splitlines()[0]) if result.ok and result.stdout.strip() else None
        _KNOWN[(tool, device)] = int(match.group(1)) * 10 + int(match.group(2)) if match else None
    return _KNOWN[(tool, device)]


def runs_on(entry: str, gpu: int) -> bool:
    """Whether the machine code of one CUDA_ARCHITECTURES entry ("90a", "80-real", "75-virtual") runs on `gpu`."""
    if is_keyword(entry):
        return True  # every architecture, or the build machine's own GPU: not judged here
    text = entry.strip().lower()
    if text.endswith("-virtual"):
        return False
    name = arch_name(text)
    number = int(name.rstrip("abcdefghijklmnopqrstuvwxyz") or 0)
    if name.endswith("a"):
        return number == gpu
    return number // 10 == gpu // 10 and number % 10 <= gpu % 10


def has_sass_for(architectures: str, gpu: int) -> bool:
    return any(runs_on(entry, gpu) for entry in split_architectures(architectures))


def sm(arch: int | str) -> str:
    return f"sm_{arch}"


def jit_note(target: str, architectures: str, gpu: int) -> str:
    """The one line said before a search whose benchmark GPU has no machine code in the build."""
    built = ", ".join(sm(arch_name(e)) for e in split_architectures(architectures)) or "nvcc's default"
    return (f"{target} is built for {built}, which has no machine code for the benchmark's GPU ({sm(gpu)}): the "
            f"driver JIT-compiles the PTX at load, so the benchmark times code built at load time and static metrics "
            f"describe {built}; set CUDA_ARCHITECTURES to {gpu} (or add it) to tune the code the GPU runs")


def scored_architecture(architectures: str, gpu: int | None, asked: str | None,
                        gpu_is: str = "the benchmark GPU", listed: str = "CUDA_ARCHITECTURES") -> tuple[str | None, str]:
    """(architecture whose static metrics are scored, why) of a target built for `architectures`.

    The one `--architecture` names; else the GPU's (`gpu_is` says which GPU that is), when the build has SASS
    for it; else the first built. None for a build of one architecture or none named (its metrics are all of one).
    """
    names: Sequence[str] = [arch_name(e) for e in split_architectures(architectures)
                            if not is_keyword(e) and not e.strip().lower().endswith("-virtual")]
    if asked:
        return arch_name(asked), "named by --architecture"
    if len(names) <= 1:
        return (names[0] if names else None), "the only architecture built"
    if gpu is not None:
        running = [name for name in names if runs_on(name, gpu)]
        if running:
            return running[0], f"{gpu_is}'s ({sm(gpu)})"
    return names[0], f"the first of {listed}" + (
        "" if gpu is None else f" (none runs on {gpu_is}, {sm(gpu)})") + "; --architecture names another"


@dataclass(frozen=True)
class ArchitecturePlan:
    """What a tune's figures are for: the benchmark's GPU, and the architecture static objectives score."""

    gpu: int | None  # None: no GPU read (no benchmark, or none answers)
    scored: str | None  # None: the build has one architecture's code, or none named
    why: str
    jit: str | None  # the line said before the search when the build has no SASS for the GPU
    native: str | None = None  # the line said before the baseline when the build names "native"
    flags: str | None = None  # the line said before the baseline when the target's own flags build other code
    built: str = ""  # every architecture whose machine code the build has: CUDA_ARCHITECTURES' and its flags'
    default: str | None = None  # the line said before the baseline where the project chose no architectures

    def describe(self) -> str:
        """One line: which architecture each figure is for."""
        parts = []
        if self.gpu is not None:
            parts.append(f"times on a GPU of {sm(self.gpu)}" + (" (JIT-compiled PTX)" if self.jit else ""))
        if self.scored is not None:
            parts.append(f"static metrics of the {sm(self.scored)} machine code ({self.why})")
        return "; ".join(parts)

    def say(self, warn: Callable[[str], None], say: Callable[[str], None]) -> None:
        """What a tune says of it before the baseline: the warnings (architectures the project did not choose, a
        "native" build, JIT-compiled PTX), then which architecture each figure is for."""
        for note in (self.default, self.native, self.flags, self.jit):
            if note:
                warn(note)
        if self.describe():
            say(f"figures: {self.describe()}")

    def provenance(self) -> dict[str, str]:
        """The pinned record's note of it."""
        out = {}
        if self.gpu is not None:
            out["benchmark_gpu"] = sm(self.gpu) + (" (JIT-compiled PTX)" if self.jit else "")
        if self.scored is not None:
            out["static_metrics"] = sm(self.scored)
        return out


def native_note(target: str, architectures: str, gpu: int | None) -> str | None:
    """The one line said before a tune of a target built for "native", or None: nvcc builds for the GPU of
    whichever machine runs it (none: nvcc's default), so the figures describe this machine's only, and a pin
    tuned for "native" fits, by name, a build for any GPU."""
    if not any(entry.strip().lower() == "native" for entry in split_architectures(architectures)):
        return None
    here = f"here {sm(gpu)}" if gpu is not None else "nvcc's default architecture on a machine without one"
    return (f"{target} is built for CUDA_ARCHITECTURES native, the GPU of whichever machine builds it ({here}): "
            f"the figures describe this machine's code, but the pin, tuned for \"native\", is applied by a build on "
            f"any GPU. Set CUDA_ARCHITECTURES to the architectures you run on (e.g. 90a) to tune and pin those")


def default_note(target: str, architectures: str, defaulted: bool, gpu: int | None, build_dir: str | None,
                 flags_too: bool = False) -> str | None:
    """The one line said before a tune of a CMake target (built in `build_dir`; None: not a CMake tree) whose
    architectures the project did not choose, or None:
    `defaulted`, CMake's default for its nvcc (the manifest's `architectures_default`: 75 with CUDA 13, 52 before),
    or none at all (nvcc's own default). A user who tunes on an H100 without CMAKE_CUDA_ARCHITECTURES would
    otherwise read "architectures: 75" and "the only architecture built", as if sm_75 were the project's choice.
    `flags_too`: the target's own nvcc flags build other architectures beside it (flags_note says which)."""
    if build_dir is None or (architectures.strip() and not defaulted):
        return None
    built = ", ".join(sm(arch_name(e)) for e in split_architectures(architectures))
    whose = f"{built}, CMake's default for this nvcc," if built else "nvcc's default architecture,"
    example = str(gpu) if gpu is not None else "90a"
    alone = " (and for what its own nvcc flags build, said below)" if flags_too else " alone"
    return (f"{target} is built for {whose} as the project sets no CMAKE_CUDA_ARCHITECTURES: the candidates are "
            f"compiled for it{alone}, and the pin is checked against it. To tune for the GPUs you run on, set them "
            f"and configure again (e.g. cmake -DCMAKE_CUDA_ARCHITECTURES={example} {build_dir}, or "
            f"set(CMAKE_CUDA_ARCHITECTURES {example}) before project() in CMakeLists.txt)")


def flags_note(target: str, architectures: str, extra: Mapping[str, str], setuptools: bool = False) -> str | None:
    """The one line said before a tune of a target whose own nvcc flags (`extra`: arch -> the flag) build machine
    code that CUDA_ARCHITECTURES does not name, or None: each candidate compiles it too, and a pin is applied by
    CUDA_ARCHITECTURES alone; where those name none, the flags' code is all a build has, and the pin names none."""
    if not extra:
        return None
    named = ", ".join(sorted(set(extra.values())))
    if not architectures:  # the flags' machine code is all there is: scored, yet no pin names it
        return (f"{target}'s own nvcc flags ({named}) build {', '.join(sm(a) for a in extra)}, and no architecture "
                f"list names it: the figures are of that code, but the pin will name no architecture, so a build for "
                f"any other applies it too. List the architectures in CMAKE_CUDA_ARCHITECTURES (setuptools: "
                f"cuda_architectures=) in place of the flags, or write them where configure reads them: "
                f"CMAKE_CUDA_FLAGS, or target_compile_options without a generator expression")
    # In the words the user wrote them in: a CudaExtension's (npcuda-example's -arch beside cuda_architectures=, was
    # told to edit CMAKE_CUDA_FLAGS) or CMake's.
    listed, flags, where = (("cuda_architectures=", "nvcc_flags= or extra_compile_args['nvcc']", "cuda_architectures=")
                            if setuptools else ("CUDA_ARCHITECTURES", "CMAKE_CUDA_FLAGS, target_compile_options",
                                                "CMAKE_CUDA_ARCHITECTURES"))
    return (f"{target}'s own nvcc flags ({named}) build {', '.join(sm(a) for a in extra)} machine code too, which "
            f"{listed} ({architectures or 'none'}) does not name: every candidate compiles it as well, its "
            f"figures are the 'not scored' ones, and a pin is checked against {listed} alone. To tune "
            f"only what you run, take {named} out of the flags ({flags}) and list "
            f"the architectures in {where}")


def plan_architectures(target: str, architectures: str, gpu: int | None, asked: str | None,
                       static: Sequence[str], timed: bool, flag_archs: Mapping[str, str] | None = None, *,
                       defaulted: bool = False, build_dir: str | None = None, setuptools: bool = False
                       ) -> ArchitecturePlan:
    """The plan of a tune of `target`, or a ConfigError when a static objective (of `static`) would describe
    other machine code than the benchmark's GPU runs (`timed`: some objective is a benchmark's). Without one,
    `gpu` is this machine's GPU (None: none here): a tune of static objectives alone scores its architecture too,
    since the code a user tunes on a machine with a GPU is the code that GPU runs. `flag_archs`: the architectures
    the target's own nvcc flags build (architectures.flag_architectures), CUDA_ARCHITECTURES' first among them.
    `defaulted`: `architectures` are CMake's default (default_note, said of a CMake tree, `build_dir`);
    `setuptools`: the target is a CudaExtension, whose notes name its arguments."""
    named = architecture_list(architectures)
    extra = {arch: flag for arch, flag in (flag_archs or {}).items() if arch not in named}
    built = ";".join(part for part in (architectures, *extra) if part)
    scored, why = scored_architecture(built, gpu, asked,
                                      "the benchmark GPU" if timed else "this machine's GPU",
                                      "cuda_architectures=" if setuptools else "CUDA_ARCHITECTURES")
    jit = None
    if gpu is not None and timed and not has_sass_for(built, gpu):
        jit = jit_note(target, built, gpu)
        if static:
            raise ConfigError(
                f"{', '.join(static)} would be read from the {sm(scored or arch_name(built))} machine code "
                f"of {target}, but the benchmark's GPU ({sm(gpu)}) runs PTX JIT-compiled for it at load: the "
                f"figures would describe two different programs. Add {gpu} to CUDA_ARCHITECTURES (or tune "
                f"--architecture {gpu} once it is built), or tune the benchmark's objectives alone.")
    # The plan's GPU is the one the times are of: none without a benchmark.
    return ArchitecturePlan(gpu if timed else None, scored if static else None, why, jit,
                            native_note(target, architectures, gpu), flags_note(target, architectures, extra, setuptools), built,
                            None if extra and not architectures else default_note(target, architectures, defaulted,
                                                                                  gpu, build_dir, bool(extra)))
