"""The ptxas-only path: nvcc's front end once per configuration, ptxas and what follows per candidate.

A candidate that changes only ptxas-level controls (a ptxas ACF, -Xptxas
knobs, -maxrregcount) gets the same front end (host preprocessing, cudafe++,
cicc: source -> PTX) as every other such candidate. `nvcc --dryrun` lists the
steps nvcc runs for one compile; this module keeps the front end's files
once per front-end configuration (a cache entry) and, for a compile whose
front-end steps equal an entry's, runs only the steps after it (ptxas, then
fatbinary and the host compile that embeds it) from that candidate's own
dryrun, so ptxas gets exactly the options nvcc would give it.

What decides reuse is nvcc's own plan, not a list of "ptxas-level" flags: the
entry key is the front-end steps' text (with nvcc's temporary names made
fixed), the nvcc binary and its environment, and an entry holds the stat of
every file the compile read (the line markers of its preprocessed sources).
Any control that reaches the front end (a -D, a numerics flag, an nvcc ACF)
changes those steps and so the key: that compile never uses a stale entry.

One cache serves every scratch tree of a tune (the baseline's and each
worker's), so a front end runs once per configuration, not once per tree:
the key leaves out the compile's working folder (the steps name their files
by absolute paths; an entry whose front end read a file by a relative name,
which could be another file in another tree, is not kept), and entries are
written whole or not at all (filled in a folder of their own, then renamed
into place), so compiles in several trees at once never read half an entry.
An entry is read-only once in place: each compile from it runs its steps
after the front end in a folder of its own, holding links to the entry's
front-end files, so what ptxas and fatbinary write (under nvcc's fixed
temporary names) is that compile's alone. (Written into the entry, two
trees compiling the same front end with different ptxas controls at once,
a candidate and the minimal pin's build without its ACF, swapped cubins: an
object held the other's machine code.)

Same bytes as nvcc: a plain nvcc compile names its temporary files
``$TMPDIR/tmpxft_<pid>_<n>-<k>_<name>``; the host compiler records the
temporary file name in the object (its STT_FILE symbol), so two plain builds
of the same controls already differ in those 8 hex digits of nvcc's process
id (and in the counter after it, where a killed nvcc left a file of that
name). The entry's files keep nvcc's names with both written as zeros, so an
object from this path differs from a plain build in exactly what two plain
builds differ in. With debug information (-g, -G) the
temporary directory's path would be recorded too: such compiles, and
anything else this module does not know (an unknown step, nvlink inside the
compile, a cache path a shell would split), go through nvcc whole.

A .cu file of host code alone is compiled whole for each candidate all the same (its host compile ~0.25 s of
CPU), by choice: no control provably leaves its object as it is. A -D reaches its host code; -maxrregcount
reaches cicc (-maxreg), so its front end differs; and a ptxas control, though it changes no code where the PTX
defines no function, is written into the object (the cubin's .note.nv.tkinfo, fatbinary's --cmdline), so an
object kept from another candidate would not be the bytes nvcc makes for this one. Static tunes never run that
host compile (`ptxas_only`).

Used two ways: as the scratch trees' CUDA compiler launcher (``main``: the
build tool runs it in place of each compile, so it links and relinks as
usual; a new front end is run into the cache, then the rest from it, which
costs what nvcc whole costs), and in process for static objectives (`fill`
where the front end is new, then `ptxas_only`: ptxas and nothing after it).
Either way the entry gets the dependency file the build tool reads, made
from the files the preprocessed sources name (the files nvcc's own lists).
In process, the driver passes the `Start` its processes start under, so that
an interrupt kills them as it kills every other run. Standard library only:
it starts once per compile.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path

# Front-end configurations kept per cache (least recently used go first); an
# entry holds the compile's preprocessed sources (~4 MB for the sample's GEMM).
# One cache serves all of a tune's scratch trees.
CACHE_ENTRIES = 32
ENTRY_TOKEN = "@CIQ_ENTRY@"
# nvcc's temporary names: <dir>/tmpxft_<pid, 8 hex>_<8 hex>-<k>_<name>, or bare (a name cicc #includes).
# The second field counts up where a file of that name is in the temporary folder already (one a killed
# nvcc of a process with the same id left there): both are written as zeros, or such a compile would miss
# the entry of its front end (seen: a kept PTX tmpxft_00000000_00000001-6_reduce.ptx beside ..._00000000-6_...).
_TEMP = re.compile(r"(?P<dir>(?:/[^/\s\"']+)*/)?tmpxft_[0-9a-f]{8}_[0-9a-f]{8}(?=-)")
_FIXED_NAME = "tmpxft_00000000_00000000"
_ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$")
# A cache path every step can take as it is (nvcc's steps leave some paths unquoted,
# and fatbinary's --image3 splits at commas).
_SAFE_PATH = re.compile(r"^[A-Za-z0-9_./+-]+$")
_NVIDIA_FRONT = {"cudafe++", "cicc"}
_NVIDIA_BACK = {"ptxas", "fatbinary"}
# Debug information (-g and the host compiler's -g<level>, -ggdb, -gdwarf-<n>; -G): not line information, which
# names the sources alone (cicc's -generate-line-info from nvcc's --generate-line-info or -lineinfo; a target
# built with it took nvcc whole for every compile, the minimal pin's trials of a static tune whole builds).
_DEBUG = re.compile(r"^(-g(?!enerate-line-info$).*|-G|--device-debug|--debug)$")
_DONE = "front.json"  # written before the entry is renamed into place: an entry without it is not one
_DEPS = "deps.d"  # the dependency file the build tool reads (-MF), where the compile asks for one
# What the front end printed (the preprocessor's warnings: '"TILE" redefined', which the PARAMS probe reads),
# said again by every compile from the entry, so a compile's log is the same whether its front end ran or was kept.
_LOG = "front-end.log"
_ENTRY_NAME = re.compile(r"^[0-9a-f]{24}$")  # an entry's folder (others in the cache are being written or removed)
# A file name a make-style dependency file can hold: its spaces escaped ("\ ", as nvcc writes them and Ninja and
# Make read them); the other characters such a file gives a meaning (# $ : \ and other whitespace) would need
# escapes this module does not write. The target is written as given (as nvcc writes -MT's): no space in it.
_DEPENDENCY_NAME = re.compile(r"^(?:[^\s#$:\\]| )+$")
_DEPENDENCY_TARGET = re.compile(r"^[^\s#$:\\]+$")
# A line marker of the host preprocessor: # <line> "<file name, \\ and \" escaped>" [flags]
_LINE_MARKER = re.compile(rb'^# [0-9]+ "((?:[^"\\]|\\.)*)"', re.MULTILINE)


class Unsupported(Exception):
    """This compile is one the fast path does not handle; nvcc runs it whole."""


@dataclass(frozen=True)
class Plan:
    """nvcc's steps for one compile of one candidate, its temporary files placed in a cache entry."""

    argv: tuple[str, ...]  # the compile command (nvcc ...)
    cwd: Path  # where the build tool runs it
    env: dict[str, str]  # the environment nvcc gives its steps
    front: tuple[str, ...]  # host preprocessing, cudafe++, cicc (shell lines)
    back: tuple[str, ...]  # ptxas, fatbinary, the host compile (shell lines)
    entry: Path  # the cache entry of this front-end configuration
    depfile: Path | None  # the -MF file the build tool reads

    @property
    def ptxas(self) -> tuple[str, ...]:
        return tuple(step for step in self.back if _tool(step) == "ptxas")

    @property
    def output(self) -> str:
        return _option_value(self.argv, "-o") or ""


# ------------------------------------------------------------------ nvcc's plan


def _tool(step: str) -> str:
    if step.startswith("--"):
        return step  # nvcc's own pseudo-step ("-- Filter Dependencies -- > file.d")
    # The first word as shlex.split reads it, without splitting the rest (a host step is ~2 kB of
    # words; every candidate's plan reads each step's tool).
    lexer = shlex.shlex(step, posix=True)
    lexer.whitespace_split, lexer.commenters = True, ""
    first = lexer.get_token()
    return os.path.basename(first) if first else ""


def _option_value(argv: tuple[str, ...] | list[str], name: str) -> str | None:
    """The value of `name` in `argv` ("-o x" or "-o=x"); the last one wins, as in nvcc."""
    value = None
    for index, arg in enumerate(argv):
        if arg == name and index + 1 < len(argv):
            value = argv[index + 1]
        elif arg.startswith(name + "="):
            value = arg[len(name) + 1:]
    return value


# How this module's processes start: `start(popen)` runs `popen` (which starts one in a session of its own,
# so that a timeout ends what it starts too: ptxas under a shell) and holds the process while it runs. The
# launcher just starts them (standard library only); the driver passes proc.started, under which an
# interrupt kills them and none starts after one (its threads must not wait for a ptxas nobody stops).
Start = Callable[[Callable[[], "subprocess.Popen[str]"]], AbstractContextManager["subprocess.Popen[str]"]]


def _started(popen: Callable[[], subprocess.Popen[str]]) -> AbstractContextManager[subprocess.Popen[str]]:
    return popen()  # a Popen is the context manager: its exit closes the pipes and waits


def _run(argv: Sequence[str], cwd: Path, env: Mapping[str, str] | None, timeout: float | None,
         start: Start = _started) -> subprocess.CompletedProcess[str]:
    def popen() -> subprocess.Popen[str]:
        return subprocess.Popen(list(argv), cwd=cwd, env=env, text=True, start_new_session=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    with start(popen) as process:
        try:
            output, errors = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            raise
        return subprocess.CompletedProcess(process.args, process.returncode, output or "", errors or "")


def dryrun(argv: list[str], cwd: Path, timeout: float = 60.0,
           start: Start = _started) -> tuple[dict[str, str], list[str]]:
    """nvcc's environment settings and steps for `argv`, as ``--dryrun`` prints them."""
    result = _run([*argv, "--dryrun"], cwd, None, timeout, start)
    if result.returncode != 0:
        raise Unsupported(f"nvcc --dryrun failed: {result.stderr.strip()[-500:]}")
    env: dict[str, str] = {}
    steps: list[str] = []
    for line in (result.stdout + result.stderr).splitlines():
        if not line.startswith("#$ "):
            continue
        text = line[3:].strip()
        match = _ASSIGNMENT.match(text)
        if match and not text.startswith("--"):
            env[match.group(1)] = match.group(2).strip()  # nvcc sets these literally (no shell)
        else:
            steps.append(text)
    return env, steps


def _fixed_names(steps: list[str]) -> list[str]:
    """Steps with nvcc's temporary directory as ENTRY_TOKEN and its process id as 00000000."""
    dirs = {m.group("dir") for step in steps for m in _TEMP.finditer(step) if m.group("dir")}
    if len(dirs) != 1:
        raise Unsupported(f"nvcc's temporary files are not in one directory ({sorted(dirs)})")
    out = [_TEMP.sub(lambda m: (ENTRY_TOKEN + "/" if m.group("dir") else "") + _FIXED_NAME, step) for step in steps]
    if any(re.search(r"tmpxft_(?!00000000_00000000-)", step) for step in out):
        raise Unsupported("a temporary file name of nvcc's could not be placed in the cache")
    return out


def _split(steps: list[str], output: str) -> tuple[list[str], list[str]]:
    """The front-end steps and the steps after cicc; Unsupported for a step this module does not know."""
    front: list[str] = []
    back: list[str] = []
    for step in steps:
        words = shlex.split(step) if not step.startswith("--") else []
        tool = os.path.basename(words[0]) if words else step
        if any(_DEBUG.match(word) for word in words):
            raise Unsupported("debug information would record the temporary directory")
        if step.startswith("-- Filter Dependencies --"):
            front.append(step)
        elif tool in _NVIDIA_FRONT:
            front.append(step)
        elif tool in _NVIDIA_BACK:
            back.append(step)
        elif tool == "rm" and len(words) == 2 and words[1].endswith(".fatbin"):
            # nvcc's clean-up of a file fatbinary may not have written; nvcc ignores its failure.
            back.append("rm -f " + step[3:])
        elif tool.startswith(("-", "nv")) or tool in ("rm", "bin2c", "cudafe"):
            raise Unsupported(f"nvcc runs {tool!r}, which the ptxas-only path does not know")
        elif "-E" in words:
            front.append(step)  # the host compiler preprocessing for cudafe++/cicc
        elif "-c" in words and _option_value(words, "-o") == output:
            back.append(step)  # the host compile that embeds the fatbinary: the object
        else:
            raise Unsupported(f"nvcc runs a step the ptxas-only path does not know: {step[:200]}")
    if not any(_tool(s) == "ptxas" for s in back) or not any(_tool(s) == "cicc" for s in front):
        raise Unsupported("no cicc -> ptxas in this compile")
    return front, back


def plan(argv: list[str], cwd: Path, cache: Path, start: Start = _started) -> Plan:
    """nvcc's plan for one compile, placed in the cache entry of its front-end configuration."""
    cwd = Path(cwd)
    if not _SAFE_PATH.match(str(cache.absolute())):
        raise Unsupported(f"the cache path {cache} holds characters nvcc's steps would split")
    output = _option_value(argv, "-o")
    if output is None or "-c" not in argv:
        raise Unsupported("not a compile to one object (-c ... -o FILE)")
    env, steps = dryrun(argv, cwd, start=start)
    front, back = _split(_fixed_names(steps), output)
    nvcc = Path(shutil.which(argv[0]) or argv[0])
    stat = nvcc.stat()
    # No working folder in the key: every scratch tree's compile of this configuration shares the entry.
    key_text = json.dumps([str(nvcc), stat.st_size, stat.st_mtime_ns, sorted(env.items()), front])
    entry = cache.absolute() / hashlib.sha256(key_text.encode()).hexdigest()[:24]

    def place(steps: Sequence[str]) -> tuple[str, ...]:
        return tuple(s.replace(ENTRY_TOKEN, str(entry)) for s in steps)

    depfile = _option_value(argv, "-MF")
    return Plan(tuple(argv), cwd, {**os.environ, **env}, place(front), place(back), entry,
                (cwd / depfile) if depfile else None)


# ------------------------------------------------------------------ the cache entry


def _dependencies(depfile: Path) -> list[str]:
    """The files a make-style dependency file lists (after the first colon)."""
    text = depfile.read_text(encoding="utf-8", errors="surrogateescape").replace("\\\n", " ")
    _, _, deps = text.partition(": ")
    names: list[str] = []
    for word in re.findall(r"(?:\\ |[^\s])+", deps):
        names.append(word.replace("\\ ", " "))
    return names


def _stat(path: str, cwd: Path) -> list[int]:
    try:
        stat = (cwd / path).stat()
    except OSError:
        return [-1, -1]
    return [stat.st_size, stat.st_mtime_ns]


def _preprocessed_inputs(entry: Path, cwd: Path) -> list[str]:
    """The files the host preprocessor read for the entry's front end: its line markers' file names.

    The same files nvcc's dependency file lists (measured on the sample's GEMM:
    191 of 191), so an entry tells when it is stale. Unsupported where a name
    is not a file (an escape this does not read): a header change there could
    not be seen; and where a name is relative: the entry is shared by scratch
    trees whose working folders differ, where it could name another file.
    """
    names: set[str] = set()
    for source in sorted(entry.glob("*.ii")):
        for raw in _LINE_MARKER.findall(source.read_bytes()):
            name = re.sub(rb"\\(.)", rb"\1", raw).decode("utf-8", "surrogateescape")
            if not name.startswith("<"):  # <built-in>, <command-line>
                names.add(name)
    if not names:
        raise Unsupported("the preprocessed sources name no file they read")
    relative = [name for name in names if not os.path.isabs(name)]
    if relative:
        raise Unsupported(f"the preprocessor read {relative[0]!r}, named relative to the build folder: an entry "
                          "shared by the scratch trees could not tell one tree's file from another's")
    missing = [name for name in names if not Path(name).is_file()]
    if missing:
        raise Unsupported(f"the preprocessor read {missing[0]!r}, which is not a file here")
    return sorted(names)


def ready(p: Plan) -> bool:
    """The entry holds this configuration's front end, and no file the compile read has changed since."""
    try:
        meta = json.loads((p.entry / _DONE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(meta.get("files"), list):
        return False  # an entry of an earlier ciq_build, its front-end files not listed: filled again
    return all(_stat(name, p.cwd) == stat for name, stat in meta["inputs"].items())


def has_dependency_file(p: Plan) -> bool:
    """The entry can give the build tool the dependency file nvcc writes (where the compile asks for one)."""
    return p.depfile is None or (p.entry / _DEPS).is_file()


def fill(p: Plan, timeout: float | None = None, start: Start = _started) -> None:
    """Run the front-end steps into the entry, with the dependency file the build tool reads.

    Filled in a folder of its own beside the entry, then renamed into place
    whole: another tree's compile of the same configuration, at the same time,
    sees no entry or all of one. Where another compile put the same
    configuration in place first, that one stays (and this one is dropped).
    """
    cache = p.entry.parent
    cache.mkdir(parents=True, exist_ok=True)
    new = Path(tempfile.mkdtemp(prefix=f"{p.entry.name}.new-", dir=cache))
    # The steps name the entry's folder (the placed temporary names): here, the new one's.
    steps = [s.replace(str(p.entry), str(new)) for s in p.front if not s.startswith("--")]
    try:
        began = time.monotonic()
        result = _run_steps(steps, p, timeout, capture=True, start=start)
        seconds = time.monotonic() - began
        if result.returncode != 0:
            raise Unsupported(f"the front end failed when run on its own\n{result.stdout[-2000:]}")
        files = sorted(f.name for f in new.iterdir() if f.is_file())  # the front end's own: what a compile links
        (new / _LOG).write_text(result.stdout, encoding="utf-8")
        read = _preprocessed_inputs(new, p.cwd)
        if p.depfile is not None:
            _write_dependency_file(new / _DEPS, _option_value(p.argv, "-MT") or p.output, read)
        # Read after the run, as after nvcc's own: a file changed while the front end ran is missed either way.
        stats = {name: _stat(name, p.cwd) for name in [p.argv[0], *read]}
        (new / _DONE).write_text(json.dumps({"argv": list(p.argv), "inputs": stats, "files": files,
                                             "seconds": round(seconds, 3)}), encoding="utf-8")
        _publish(new, p)
    except BaseException:  # a timeout too: nothing unfinished is left
        shutil.rmtree(new, ignore_errors=True)
        raise
    _evict(cache, keep=p.entry)


def _write_dependency_file(path: Path, target: str, names: list[str]) -> None:
    """A make-style dependency file (what nvcc -MF writes): `target` depends on `names`."""
    unwritable = [target] if not _DEPENDENCY_TARGET.match(target) else []
    unwritable += [name for name in names if not _DEPENDENCY_NAME.match(name)]
    if unwritable:
        raise Unsupported(f"{unwritable[0]!r} would need escapes in the build tool's dependency file")
    escaped = [name.replace(" ", "\\ ") for name in names]
    path.write_text(f"{target} : " + " \\\n    ".join(escaped) + "\n", encoding="utf-8")


def _publish(new: Path, p: Plan) -> None:
    """Rename the filled folder `new` to the plan's entry; an entry already there stays if it serves the
    plan (another compile filled it meanwhile), else (stale: a file it read has changed) is replaced."""
    try:
        new.rename(p.entry)
        return
    except OSError:  # the entry is there
        pass
    if ready(p) and has_dependency_file(p):
        shutil.rmtree(new, ignore_errors=True)
        return
    old = Path(tempfile.mkdtemp(prefix=f"{p.entry.name}.old-", dir=p.entry.parent))
    try:
        p.entry.rename(old / "entry")
        new.rename(p.entry)
    except OSError:  # another compile replaced it first: its entry stays
        shutil.rmtree(new, ignore_errors=True)
    shutil.rmtree(old, ignore_errors=True)


def _evict(cache: Path, keep: Path) -> None:
    entries = sorted((e for e in cache.iterdir() if _ENTRY_NAME.match(e.name) and e.is_dir() and e != keep),
                     key=lambda e: _mtime(e / _DONE), reverse=True)
    for old in entries[CACHE_ENTRIES - 1:]:
        shutil.rmtree(old, ignore_errors=True)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _run_steps(steps: list[str] | tuple[str, ...], p: Plan, timeout: float | None,
               capture: bool, start: Start = _started) -> subprocess.CompletedProcess[str]:
    """The steps as nvcc runs them: one shell line each, in order, stopping at the first failure; captured:
    stdout and stderr as one text, in the order written."""
    script = "set -e\n" + "\n".join(steps) + "\n"
    if capture:
        return _run(["/bin/sh", "-c", "exec 2>&1\n" + script], p.cwd, p.env, timeout, start)
    # Passed through (the launcher's back end): a session of its own, so that a timeout ends ptxas too.
    with subprocess.Popen(["/bin/sh", "-c", script], cwd=p.cwd, env=p.env, text=True,
                          start_new_session=True) as process:
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            raise
        return subprocess.CompletedProcess(process.args, process.returncode, "", None)


@contextmanager
def _own_folder(p: Plan) -> Iterator[Callable[[Sequence[str]], list[str]]]:
    """A folder for one compile's steps after the front end, with links to the entry's front-end files; what
    the steps write there (the cubin, the fatbinary) no other compile reads. Gives the steps re-placed in it."""
    try:
        files = json.loads((p.entry / _DONE).read_text(encoding="utf-8"))["files"]
    except (ValueError, KeyError) as error:
        raise OSError(f"the kept front end {p.entry} cannot be read: {error}") from None
    own = Path(tempfile.mkdtemp(prefix=f"{p.entry.name}.run-", dir=p.entry.parent))
    try:
        for name in files:
            try:
                os.link(p.entry / name, own / name)  # the steps only read these
            except OSError:  # a file system without hard links
                shutil.copyfile(p.entry / name, own / name)
        os.utime(p.entry / _DONE)  # recently used
        yield lambda steps: [step.replace(str(p.entry), str(own)) for step in steps]
    finally:
        shutil.rmtree(own, ignore_errors=True)


def back_end(p: Plan, timeout: float | None = None, capture: bool = False) -> subprocess.CompletedProcess[str]:
    """ptxas, fatbinary and the host compile from the kept front end: the object, as nvcc makes it."""
    with _own_folder(p) as placed:
        result = _run_steps(placed(p.back), p, timeout, capture)
    if result.returncode == 0 and p.depfile is not None:
        shutil.copyfile(p.entry / _DEPS, p.depfile)  # the build tool reads (and may delete) it
    return result


def front_end_log(p: Plan) -> str:
    """What the kept front end printed when it ran (its warnings: a compile from the entry says them again, as
    nvcc whole would each time); "" for an entry kept by an earlier ciq_build, without the log."""
    try:
        return (p.entry / _LOG).read_text(encoding="utf-8")
    except OSError:
        return ""


def front_end_ptx(p: Plan) -> list[str]:
    """The PTX texts the kept front end wrote (what ptxas compiles: its .maxntid are the kernels' launch bounds)."""
    return [path.read_text(encoding="utf-8", errors="replace") for path in sorted(p.entry.glob("*.ptx"))]


def front_end_seconds(p: Plan) -> float:
    """How long the kept front end took when it ran (what a compile from the entry does not spend again); 0.0
    for an entry kept by an earlier ciq_build, which did not record it."""
    try:
        seconds = json.loads((p.entry / _DONE).read_text(encoding="utf-8")).get("seconds", 0.0)
    except (OSError, ValueError, AttributeError):
        return 0.0
    return float(seconds) if isinstance(seconds, (int, float)) else 0.0


def kept_front_ends(options_file: Path) -> Path:
    """Where the launcher notes, a line each, the seconds of a kept front end a compile of the tree with
    `options_file` took (front_end_seconds): the tree's build sums them (CandidateBuild.kept_front_end_seconds)."""
    return options_file.with_name(options_file.name + ".kept-front-ends")


def _note_kept(p: Plan, options_file: Path) -> None:
    with open(kept_front_ends(options_file), "a", encoding="utf-8") as notes:  # one short write: compiles at once
        notes.write(f"{front_end_seconds(p)}\n")


def ptxas_only(p: Plan, timeout: float | None = None, start: Start = _started) -> subprocess.CompletedProcess[str]:
    """Only the ptxas steps (its -v report is all a static objective reads); no object is written."""
    with _own_folder(p) as placed:
        return _run_steps(placed(p.ptxas), p, timeout, capture=True, start=start)


# ------------------------------------------------------------------ the launcher


def launcher(cache: Path, options_file: Path) -> list[str]:
    """The CUDA compiler launcher command (a CMake list's items) for a scratch tree."""
    return [sys.executable, "-I", "-S", str(Path(__file__).resolve()), f"--cache={cache}",
            f"--options-file={options_file}", "--"]


def _after_launcher(words: list[str]) -> list[str] | None:
    """The compile command our launcher wraps in `words`, or None."""
    if "--" not in words or not any(w.endswith("ptxas_path.py") for w in words[:words.index("--")]):
        return None
    return words[words.index("--") + 1:]


def compile_commands(launcher_commands: str, options_file: Path) -> list[list[str]]:
    """The tuned compiles in `ninja -t commands` output: the nvcc command after our launcher."""
    marker = f"--options-file={options_file}"
    found = []
    for line in launcher_commands.splitlines():
        try:
            words = shlex.split(line)
        except ValueError:
            continue
        if launched := _after_launcher(words):
            if marker in launched:  # the tuned target's compiles read the candidate's options file
                found.append(launched)
    return found


def main(args: list[str]) -> int:
    """Compile one CUDA source from its kept front end, keeping a new one first; nvcc whole where the
    ptxas-only path cannot take the compile."""
    split = args.index("--")
    ours = dict(a.removeprefix("--").split("=", 1) for a in args[:split])
    argv = args[split + 1:]
    if f"--options-file={ours['options-file']}" not in argv:
        os.execvp(argv[0], argv)  # not a tuned compile: nvcc as it is
    cwd = Path.cwd()
    try:
        p = plan(argv, cwd, Path(ours["cache"]))
    except (Unsupported, OSError, subprocess.SubprocessError) as exc:
        print(f"ciq_build: nvcc whole ({exc})", file=sys.stderr)
        os.execvp(argv[0], argv)
    kept = ready(p) and has_dependency_file(p)
    if not kept:
        # A new front end: run into the cache, then the rest from it (what nvcc whole costs), so that every
        # later compile of this configuration, in any scratch tree, runs only ptxas and what follows.
        try:
            fill(p)
        except (Unsupported, OSError, subprocess.SubprocessError) as exc:
            # nvcc whole (where the front end itself failed, nvcc says why: only the first line here). The note
            # says whose output follows: an error there (nvcc's own internal error, say) is not the launcher's.
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            print(f"ciq_build: the front end is not kept for the ptxas-only path ({reason}); nvcc whole "
                  "compiles it, as the build does without ciq_build:", file=sys.stderr)
            os.execvp(argv[0], argv)
    sys.stderr.write(front_end_log(p))
    sys.stderr.flush()
    try:
        result = back_end(p)
    except OSError:
        result = None
    if result is not None and (result.returncode == 0 or ready(p)):
        if kept and result.returncode == 0:
            _note_kept(p, Path(ours["options-file"]))
        return result.returncode
    # The entry went while it was read (evicted, or replaced as stale by another tree's compile): nvcc whole.
    print("ciq_build: the kept front end changed during the compile; nvcc whole", file=sys.stderr)
    os.execvp(argv[0], argv)
    return 1  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
