"""Per -gencode controls: each architecture's cicc and ptxas run with that architecture's own pin.

nvcc has no per-gencode option: a compile for sm_80 and sm_90a gets one set of
flags. But nvcc runs cicc and ptxas once per architecture (``nvcc --dryrun``
lists the steps), so a per-architecture record (``per_architecture`` in the
pinned record) is applied by this launcher, which CMake sets as the
CUDA_COMPILER_LAUNCHER of such targets only:

    gencode.py --arch=80=<options file> --arch=90a=<options file> -- nvcc ... -c x.cu -o x.o

For each architecture it asks nvcc for its plan with that architecture's
options file added, and takes from it that architecture's cicc and ptxas
steps; every other step comes from nvcc's plan without them (the compile's own
options file holds what the architectures share: the -D parameters). What may
differ is decided by nvcc's plans, not by a list of flags: a step other than
the architecture's own cicc and ptxas (and fatbinary's note of ptxas' command
line) that the architecture's options change means those options reach what
every architecture shares (host preprocessing, cudafe++, the host compile),
and the compile is refused with a message, never compiled with the wrong
controls. fatbinary keeps the shared plan's note (it is the ptxas command line
a driver JIT would use for embedded PTX; the machine code is each
architecture's own).

The dependency file (-MD) is nvcc's own: nvcc writes it in-process (a "--
Filter Dependencies --" pseudo-step), so it is made by ``nvcc -M`` on the same
command line, which writes the same bytes.

Standard library only: it starts once per compile, in builds where ciq_build
may not be importable; nvcc's plan is read by its sibling
ciq_build.compiler.ptxas_path (also standard library only), found beside this
file when it runs as a script.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

try:
    from ciq_build.compiler import ptxas_path
except ImportError:  # run as a script (python -I -S gencode.py): the sibling file, not the package
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import ptxas_path  # type: ignore[no-redef, import-not-found]

# nvcc's temporary names carry its process id: tmpxft_<pid, 8 hex>_<8 hex>-<k>_<name>.
_PID = re.compile(r"tmpxft_([0-9a-f]{8})_")


class Refused(Exception):
    """This compile cannot take per-architecture controls; the message says what to do."""


def dryrun(argv: list[str], cwd: Path) -> tuple[dict[str, str], list[str]]:
    """nvcc's environment settings and steps for `argv` (ciq_build.compiler.ptxas_path reads them)."""
    try:
        return ptxas_path.dryrun(argv, cwd, timeout=300)
    except ptxas_path.Unsupported as exc:
        raise Refused(str(exc)) from None


def _pid(steps: list[str]) -> str:
    pids = {m.group(1) for step in steps for m in _PID.finditer(step)}
    if len(pids) != 1:
        raise Refused(f"nvcc's temporary files do not carry one process id ({sorted(pids)})")
    return pids.pop()


def _tool(step: str) -> str:
    if step.startswith("--"):
        return step
    words = shlex.split(step)
    return os.path.basename(words[0]) if words else ""


def _step_arch(step: str) -> str | None:
    """The architecture of a cicc or ptxas step (nvcc names it in each), else None."""
    tool = _tool(step)
    words = shlex.split(step)
    if tool == "cicc" and "-arch" in words:
        return words[words.index("-arch") + 1].removeprefix("compute_")
    if tool == "ptxas":
        return next((w.removeprefix("-arch=sm_") for w in words if w.startswith("-arch=sm_")), None)
    return None


def _difference(before: str, after: str, most: int = 4) -> str:
    """What `after` says that `before` does not, and the reverse, a few words each: why two steps differ."""
    words_before, words_after = shlex.split(before), shlex.split(after)
    added = [w for w in words_after if w not in words_before][:most]
    removed = [w for w in words_before if w not in words_after][:most]
    return f"adds {added or 'nothing'}, drops {removed or 'nothing'}"


def plan(argv: list[str], architectures: dict[str, Path], cwd: Path) -> tuple[dict[str, str], list[str]]:
    """The steps of one compile with each architecture's own cicc and ptxas (see the module's docstring)."""
    env, shared = dryrun(argv, cwd)
    pid = _pid(shared)
    composed = list(shared)
    for arch, options in architectures.items():
        arch_env, steps = dryrun([*argv, f"--options-file={options}"], cwd)
        steps = [s.replace(f"tmpxft_{_pid(steps)}_", f"tmpxft_{pid}_") for s in steps]
        if arch_env != env or len(steps) != len(shared):
            raise Refused(f"the controls for sm_{arch} ({options}) change which steps nvcc runs, not only sm_{arch}'s "
                          "cicc and ptxas")
        own = 0
        for index, (before, after) in enumerate(zip(shared, steps)):
            step_arch = _step_arch(after)
            if step_arch == arch:
                own += 1
                composed[index] = after
            elif before != after and step_arch is None and _tool(after) != "fatbinary":
                # (Another architecture's cicc or ptxas changes too: its own plan decides it.)
                raise Refused(
                    f"the controls for sm_{arch} ({options}) change a step that every architecture shares "
                    f"({_tool(after)}: {_difference(before, after)}), so they cannot be applied to sm_{arch} "
                    "alone. Pin the same such controls for every architecture (tune them together), or build "
                    "this target for one architecture")
        if own == 0:
            raise Refused(f"this compile has no cicc or ptxas step for sm_{arch}: is {arch} one of its "
                          "CUDA_ARCHITECTURES? Reconfigure (the pin was resolved for other architectures)")
    return env, composed


def _dependency_command(argv: list[str]) -> list[str] | None:
    """`argv` as ``nvcc -M``: the dependency file -MD would write, and nothing else; None without -MD/-MMD."""
    if "-MD" not in argv and "-MMD" not in argv:
        return None
    out: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg in ("-o", "--output-file"):
            skip = True
        elif arg in ("-c", "--compile") or arg.startswith(("-o=", "--output-file=")):
            pass
        elif arg == "-MD":
            out.append("-M")
        elif arg == "-MMD":
            out.append("-MM")
        else:
            out.append(arg)
    return out


def compile_one(argv: list[str], architectures: dict[str, Path], cwd: Path) -> int:
    env, steps = plan(argv, architectures, cwd)
    depend = _dependency_command(argv)
    if depend is not None:
        result = subprocess.run(depend, cwd=cwd)
        if result.returncode != 0:
            return result.returncode
    lines = []
    for step in steps:
        if step.startswith("--"):
            continue  # nvcc's in-process dependency filter: written above by nvcc -M
        words = shlex.split(step)
        if _tool(step) == "rm" and len(words) == 2:
            step = "rm -f " + step[3:]  # nvcc ignores a failed clean-up
        lines.append(step)
    script = "set -e\n" + "\n".join(lines) + "\n"
    return subprocess.run(["/bin/sh", "-c", script], cwd=cwd, env={**os.environ, **env}).returncode


def main(args: list[str]) -> int:
    if "--" not in args:
        print("ciq_build gencode: usage: gencode.py --arch=<arch>=<options file>... -- <nvcc command>",
              file=sys.stderr)
        return 2
    split = args.index("--")
    architectures: dict[str, Path] = {}
    for arg in args[:split]:
        arch, _, options = arg.removeprefix("--arch=").partition("=")
        architectures[arch] = Path(options)
    argv = args[split + 1:]
    if "-c" not in argv:
        os.execvp(argv[0], argv)  # not a compile (CMake's compiler checks): nvcc as it is
    try:
        return compile_one(argv, architectures, Path.cwd())
    except (Refused, OSError, subprocess.SubprocessError) as exc:
        print(f"ciq_build: cannot apply the per-architecture pin to this compile: {exc}.", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
