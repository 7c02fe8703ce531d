"""Parameters that do nothing: a PARAMS name the source #defines again, unguarded, so every -D is overridden
(after the search, one whose values never changed a candidate's machine code is ciq_build.tune.without_effect's).

Such a name costs the whole search a dimension and yields the same code for
every value. The preprocessor says so ("warning: "TILE" redefined"), but in the
middle of a build log nobody reads it. So first, before anything is built, the
target's CUDA sources and the headers they include by quotes are read for a
`#define` of a PARAMS name outside any `#if`/`#ifdef`/`#ifndef` naming it
(`ciq_build.project.param_defines.unguarded_defines`: milliseconds, so the warning comes before the baseline's
build, which may take minutes); then, beside the baseline (in a worker's tree,
while the baseline builds and runs), the target is built once with every
parameter at its first value and once at its last (one value may be the
source's own, which draws no warning), and each name the compiler reports as
redefined (a #define the reading cannot see: a header found through -I, a
generated one) is warned about too. Each name once, with the fix. A name with an "off" value (0) whose
presence alone the sources test (`#ifdef NAME`) does nothing as the user meant it either: warned about with
the first, from the same reading (`warn_presence_tested`).

The -D reaches the target's CUDA compiles alone: its C/C++ sources (the host code that sizes a launch grid from
TILE) and its BENCHMARK's own sources (one that checks the results assuming TILE) build with the default, while
every candidate's kernels build with its value: wrong launches, wrong results, or a benchmark timing something
else, unsaid. Each PARAMS name such a source, or a header it includes by quotes, uses at all is warned about
before anything is built, once, naming the file and the fix (`warn_host_reads`; the rule of what counts as a use
is `ciq_build.project.param_defines.identifier_uses`). A warning, not a refusal: the use may be harmless (a
printout of the default).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from ciq_build.compiler.controls import Controls, define_value
from ciq_build.core.params import PARAM_PREFIX, parse_params
from ciq_build.project.manifest import Manifest
from ciq_build.project.param_defines import identifier_uses, presence_tests, unguarded_defines
from ciq_build.project.worker import WorkerTree

# gcc/cpp ('warning: "TILE" redefined'), EDG/cudafe ('incompatible redefinition of macro "TILE"'),
# clang ("'TILE' macro redefined").
_REDEFINED = (
    re.compile(r'"([A-Za-z_][A-Za-z0-9_]*)" redefined'),
    re.compile(r'redefinition of macro "([A-Za-z_][A-Za-z0-9_]*)"'),
    re.compile(r"'([A-Za-z_][A-Za-z0-9_]*)' macro redefined"),
)


def defined_by_flags(flags: Iterable[str]) -> set[str]:
    """The macro names a target's own nvcc flags define (`-DNAME`, `-DNAME=VALUE`, `-D NAME`, `--define-macro`)."""
    names: set[str] = set()
    flags = list(flags)
    for i, flag in enumerate(flags):
        spelled = next((flag[len(prefix):] for prefix in ("--define-macro=", "-D") if flag.startswith(prefix)), None)
        if spelled == "" or flag == "--define-macro":
            spelled = flags[i + 1] if i + 1 < len(flags) else ""
        if spelled:
            names.add(spelled.split("=", 1)[0])
    return names


def warn_defined_by_flags(specs: Sequence[str], own_flags: Iterable[str], target: str,
                          warn: Callable[[str], None]) -> list[str]:
    """The PARAMS names the target's own nvcc flags define too, each warned about before anything is built: a
    candidate's (and the pin's) -D comes after the project's and wins, but the host compiler then says
    '"NAME" redefined' at every compile (BabelStream's CMAKE_CUDA_FLAGS hold -DUNROLL_FACTOR=4: every build with
    its pin warned twice, and one with -Werror would stop)."""
    flags = list(own_flags)
    names = {name[len(PARAM_PREFIX):] for name in parse_params(specs)} & defined_by_flags(flags)
    for name in sorted(names):
        spelled = next((f for f in flags if f.startswith((f"-D{name}", f"--define-macro={name}"))), f"-D{name}")
        warn(f"PARAMS {name} of {target}: the target's own flags define it too ({spelled}), so the defaults "
             f"build with that value, and each candidate's -D{name}=..., and the pin's, comes after it and wins; "
             f'but every compile with a pin then warns "{name}" redefined (an error under -Werror). Once '
             f"pinned, set the default in the source instead (#ifndef {name} / #define {name} ... / #endif) and "
             f"drop {spelled} from the target's flags.")
    return sorted(names)


def redefined_macros(compiler_output: str) -> set[str]:
    """Every macro name a compile log reports as redefined."""
    return {match.group(1) for pattern in _REDEFINED for match in pattern.finditer(compiler_output)}


def probe_settings(specs: Iterable[str]) -> list[Controls]:
    """The probe builds' controls: every parameter at its first value, then at its last (when it has two)."""
    space = parse_params(specs)
    first = {name[len(PARAM_PREFIX):]: define_value(p.value(0)) for name, p in space.items()}
    last = {name[len(PARAM_PREFIX):]: define_value(p.value(p.size - 1)) for name, p in space.items()}
    probes = [Controls(defines=tuple(first.items()))]
    if last != first:
        probes.append(Controls(defines=tuple(last.items())))
    return probes


def overridden_warning(name: str, target: str, evidence: str) -> str:
    """The one warning for a PARAMS name the source overrides, `evidence` saying how it was seen."""
    return (f"PARAMS {name} of {target} does nothing: the source #defines {name} itself ({evidence}), so the "
            f"compiler overrides every -D{name}=... and every value yields the same code. Guard the #define with "
            f"#ifndef {name} ... #endif, or drop {name} from PARAMS.")


def warn_unguarded(specs: Sequence[str], sources: Iterable[Path], target: str,
                   warn: Callable[[str], None]) -> list[str]:
    """The PARAMS names `unguarded_defines` finds, each warned about with the fix, before anything is built."""
    found = unguarded_defines(specs, sources)
    for name, where in sorted(found.items()):
        warn(overridden_warning(name, target, f"{where}, outside any #ifndef {name}"))
    return sorted(found)


def warn_presence_tested(specs: Sequence[str], sources: Iterable[Path], target: str,
                         warn: Callable[[str], None]) -> list[str]:
    """The PARAMS names with an "off" value (0, false) whose presence the sources test (`presence_tests`), each
    warned about with the fix, before anything is built: -DNAME=0 defines NAME, so `#ifdef NAME` takes its branch
    for 0 too (miniBUDE's `#ifdef USE_SHARED`, searched as USE_SHARED=choice(0,1): both values failed to compile
    in the USE_SHARED branch)."""
    off = {name[len(PARAM_PREFIX):] for name, p in parse_params(specs).items()
           if any(define_value(p.value(i)).lower() in ("0", "false") for i in range(min(p.size, 4096)))}
    found = {name: where for name, where in presence_tests(specs, sources).items() if name in off}
    for name, where in sorted(found.items()):
        warn(f"PARAMS {name} of {target}: the source tests whether {name} is defined ({where}), and every "
             f"-D{name}=... defines it, 0 included, so each value takes the same branch there. Test its value "
             f"instead (#if {name}, where an undefined name is 0), or drop {name} from PARAMS.")
    return sorted(found)


def unreached_sources(manifest: Manifest) -> list[tuple[Path, str, str]]:
    """The sources a candidate's -D does not reach, in the manifest's order, each with what compiles it and the fix
    beside moving the use: the target's host sources, then its benchmark's own (never the target's CUDA sources)."""
    as_cuda = ("or make it a .cu source of the extension" if manifest.setuptools else
               "or compile it as CUDA (set_source_files_properties(... PROPERTIES LANGUAGE CUDA))")
    found = [(path, f"a host source of {manifest.target}", f"{as_cuda}, which the -D reaches")
             for path in manifest.host_sources]
    if manifest.benchmark is not None:  # its sources leave out the target's CUDA ones already (Benchmark.sources)
        found += [(path, f"a source of its BENCHMARK {manifest.benchmark.target}", "")
                  for path in manifest.benchmark.sources]
    unique: dict[Path, tuple[Path, str, str]] = {}
    for entry in found:
        unique.setdefault(entry[0], entry)
    return list(unique.values())


def warn_host_reads(specs: Sequence[str], sources: Sequence[tuple[Path, str, str]], target: str,
                    warn: Callable[[str], None]) -> list[str]:
    """The PARAMS names that a source the candidates' -D does not reach uses (`sources`: each file, what compiles
    it and a fix of its own, as `unreached_sources`; `identifier_uses`), each warned about once, before anything is
    built, with the file and the fix."""
    known = {path: (what, fix) for path, what, fix in sources}
    found = identifier_uses(specs, list(known))
    for name, (source, where) in sorted(found.items()):
        what, fix = known[source]
        through = "" if where.startswith(f"{source.name}:") else ", a header it includes"
        warn(f"PARAMS {name} of {target}: {source.name} ({what}) reads {name} ({where}{through}), but each "
             f"candidate's -D{name}=... reaches the CUDA compiles of {target} alone, so that file builds with the "
             f"default {name} while the kernels build with the candidate's: a launch, check or buffer sized by it "
             f"there is wrong for every other value, and the benchmark may measure something else. Move the use "
             f"into the .cu sources of {target}, or have the host code take the value from the device side (a function "
             f"in a .cu source that returns {name}){' ' + fix if fix else ''}.")
    return sorted(found)


def warn_before_building(manifest: Manifest, warn: Callable[[str], None]) -> list[str]:
    """Every warning on the target's PARAMS that reading its sources and flags can give before anything is built
    (unguarded #defines, presence tests, names its own flags define too, names host code reads); the unguarded
    names, which the probe beside the baseline need not say again (`overridden_params`'s `said`)."""
    specs, target, sources = manifest.params, manifest.target, list(manifest.cuda_sources)
    said = warn_unguarded(specs, sources, target, warn)
    warn_presence_tested(specs, sources, target, warn)
    warn_defined_by_flags(specs, manifest.cuda_flags, target, warn)
    warn_host_reads(specs, unreached_sources(manifest), target, warn)
    return said


def overridden_params(specs: tuple[str, ...], tree: WorkerTree, timeout: float, target: str,
                      warn: Callable[[str], None], said: Iterable[str] = (), own_flags: Iterable[str] = ()) -> list[str]:
    """The PARAMS names the source redefines (warned about, each with the fix, but for those already `said`);
    builds in `tree`. A name the target's `own_flags` define draws the warning from them, not from the source, and
    each candidate's -D comes after them and wins: salykova's sgemm.cu's -DGPUCC=90 (its compile options), searched
    as GPUCC=choice(75,90), was said to do nothing while 75 took its registers from 214 to 128."""
    if not specs:
        return []
    names = {name[len(PARAM_PREFIX):] for name in parse_params(specs)} - defined_by_flags(own_flags)
    found: set[str] = set()
    for controls in probe_settings(specs):
        # The preprocessor's warnings are all it reads: the front end alone where the tree can (kept for the
        # search, which evaluates these values too), without the host compile and the archive of a whole build.
        built = tree.build(controls, timeout, static_only=True)
        found |= redefined_macros(built.compiler_output) & names
    for name in sorted(found - set(said)):
        warn(overridden_warning(name, target, f'the compiler\'s log says "{name}" redefined'))
    return sorted(found | set(said))
