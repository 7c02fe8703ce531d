"""The space a tune searches, from the target's SEARCH_SPACE / --controls, and the source that searches it.

`knobs` and `params` are grids, and so is an ACF pool (which ACF, if any);
a compiler ACF space (`ptxas-acf`, `nvcc-acf`, a `.bin` file) is searched
together with the knobs and params in it. Which engine searches is the
strategy's business (ciq_build.search.strategies: `--strategy`, else the
space's default).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import ciq_build.core.space as ss
from ciq_build.compiler.architectures import arch_name, is_keyword, split_architectures
from ciq_build.compiler.controls import (
    FAST_MATH,
    FAST_MATH_IMPLIES,
    KNOB_PREFIX,
    REGISTER_CAP_FLOOR,
    AcfRef,
    knob,
    knob_space,
    knobs_set_by,
    register_caps,
)
from ciq_build.compiler.probe import acf_refusals
from ciq_build.compiler.toolchain import Toolchain
from ciq_build.core.constraints import parse_constraints
from ciq_build.core.objectives import Objective, needs_benchmark, only_benchmark, times_the_compile
from ciq_build.core.params import parse_params
from ciq_build.core.rules import load_rules, nearest
from ciq_build.core.settings import SearchSettings
from ciq_build.core.space import Param, as_space
from ciq_build.errors import ConfigError
from ciq_build.project.manifest import Manifest
from ciq_build.project.param_defines import guarded_defaults
from ciq_build.search.base import CandidateSource
from ciq_build.search.evolution import SearchConfiguration
from ciq_build.search.seeds import AcfSeeding, read_seeds
from ciq_build.search.strategies import make_source
from ciq_build.search.strategy import SearchRequest
from ciq_build.search.strategy_options import split_pairs

POOL_PREFIX = "acf-pool:"


def is_acf_kind(kind: str) -> bool:
    return kind.startswith(("ptxas-acf", "nvcc-acf", POOL_PREFIX)) or kind.endswith(".bin")


def search_kinds(settings: SearchSettings) -> list[str]:
    """The resolved SEARCH_SPACE / --controls, checked: known kinds, at most one ACF space."""
    kinds = list(settings.controls)
    rules = load_rules()
    for kind in kinds:
        if not rules.matches("search_space", kind):
            guess = nearest(kind.partition(":")[0], rules.words["search_space"])
            hint = f" (did you mean {guess}?)" if guess and guess != kind.partition(":")[0] else ""
            raise ConfigError(
                f"unknown search space {kind!r}{hint}: use knobs, params, ptxas-acf[:VERSION[:VARIANT]], "
                "nvcc-acf[:VERSION[:VARIANT]], the path of a .bin search space, or acf-pool:<folder> "
                "(ACFs sampled ahead with `python -m ciq_build sample-acfs`)")
    if sum(1 for k in kinds if is_acf_kind(k)) > 1:
        raise ConfigError(f"at most one ACF search space per tune, got {kinds}")
    return kinds


# Knobs that trade generated-code quality for compile time. A static objective (registers, say) would "win"
# with code nobody wants to ship (a registers tune of cuda-samples' matrixMul pinned -Xptxas=-O0 for 32 -> 29
# registers before these were listed here), so they are searched only where their trade is measured: when
# compile time is an objective, and ptxas -O also when every objective is read from a benchmark run, where the
# running code judges it: under a register cap a lower level can be the faster code (it schedules fewer values
# live at once, so the cap spills less: an mma.sync HGEMM spills at -maxrregcount=128 with -O3, not with -O2).
COMPILE_TIME_KNOBS = ("knob.fast_compile", "knob.ptxas_opt_level")
MEASURED_ON_THE_RUN = ("knob.ptxas_opt_level",)


def _compile_time_knobs_left_out(objectives: list[Objective]) -> tuple[str, ...]:
    if times_the_compile(objectives):
        return ()
    if only_benchmark(objectives):
        return tuple(name for name in COMPILE_TIME_KNOBS if name not in MEASURED_ON_THE_RUN)
    return COMPILE_TIME_KNOBS


REGISTER_CAP = KNOB_PREFIX + "maxrregcount"
# What the journal's header says of a search whose register cap is fitted to the baseline's registers: the values
# follow from the baseline, which the journal holds, so a resumed search gets the same ones.
REGISTER_CAP_RULE = "below the baseline's registers (ciq_build.compiler.controls.register_caps)"


# Among the defaults' build's metrics, where some of the kernels it scores declare __launch_bounds__ (any: a block
# size alone too), for which ptxas ignores -maxrregcount: how many do, and the most registers of those that do not,
# which a cap can lower (ciq_build.tune.runner.BuildRunner.static_metrics). salykova's sgemm.cu: its two GEMMs kept
# 214 and 128 registers under a cap of 104, and the cap, fitted below the 214, was searched for a kernel of 32.
BOUNDED_KERNELS_METRIC = "kernels_with_launch_bounds"
UNBOUNDED_REGISTERS_METRIC = "registers_without_launch_bounds"


def fits_register_cap(settings: SearchSettings) -> bool:
    """Whether the tune's space is made again once the baseline's registers are known: it searches the knobs."""
    return "knobs" in search_kinds(settings)


def fit_register_cap(knobs: dict[str, Param], registers: int | None) -> dict[str, Param]:
    """`knobs` with the register cap's values fitted to the defaults' `registers` (the most of any kernel on
    the scored architecture): left out where no cap lies below it; the catalogue's grid where it is not known."""
    if registers is None or REGISTER_CAP not in knobs:
        return knobs
    caps = register_caps(registers)
    fitted = {name: param for name, param in knobs.items() if name != REGISTER_CAP}
    if caps:
        cap = knob(REGISTER_CAP)
        fitted[REGISTER_CAP] = replace(ss.choice(caps, knockout_prob=cap.knockout_prob), is_ordered=True)
    return fitted


def scored_registers(metrics: dict[str, float], objectives: list[Objective]) -> tuple[int | None, str]:
    """(registers, whose) of the kernels a tune scores, which the register cap is fitted below and the occupancy
    line describes: the most of the kernels the `registers:<kernel regex>` objectives score, where those are all
    the registers scored ("" else: the most of any kernel, the whole target's). A target's other kernels
    (Thrust's and CUB's, say, whose `__launch_bounds__` keep their registers under any cap) would otherwise set
    caps above every scored kernel's registers, which leave its code as it is."""
    registers_scored = [o for o in objectives if o.kind is not None and o.kind.name == "registers"]
    scored = [metrics[o.name] for o in registers_scored if o.kernels is not None and o.name in metrics]
    if scored and all(o.kernels is not None for o in registers_scored):
        return int(max(scored)), ", ".join(o.name for o in registers_scored)
    whole = metrics.get("registers")
    return (int(whole) if whole is not None else None), ""


def cappable_registers(registers: int | None, whose: str, figures: dict[str, float],
                       objectives: list[Objective]) -> tuple[int | None, int]:
    """(the registers the register cap is fitted below, how many kernels declare __launch_bounds__): where the
    defaults' `figures` say some of the whole target's kernels do and the `objectives` are all read from the
    compiler, the most registers of those that do not; else `registers` (those of the kernels `whose` objectives
    score). A cap does not lower a bounded kernel's registers, but below what it would use unbounded it still
    changes its code (a kernel of 254 registers under __launch_bounds__(256): other SASS under a cap of 128,
    the same under 200), which only a benchmark can score."""
    bounded = int(figures.get(BOUNDED_KERNELS_METRIC, 0))
    if whose or not bounded or registers is None or UNBOUNDED_REGISTERS_METRIC not in figures:
        return registers, 0
    if needs_benchmark(objectives):
        return registers, bounded
    return int(figures[UNBOUNDED_REGISTERS_METRIC]), bounded


def register_cap_line(registers: int | None, whose: str = "", bounded: int = 0, benchmarked: bool = False) -> str:
    """The tune's line, before the search, on the register cap's values for the defaults' `registers` (those of
    the kernels `whose` objectives score, where given; where `bounded` kernels declare __launch_bounds__, of those
    without them unless the tune is `benchmarked`: `cappable_registers`)."""
    if registers is None:
        start, end, step = knob(REGISTER_CAP).grid or (0, 0, 0)
        return (f"register cap: ptxas reported no registers for the defaults, so -maxrregcount takes the whole grid "
                f"{start}..{end} by {step}")
    kept = (f"the {bounded} kernel(s) declaring __launch_bounds__ keep the registers their bounds allow"
            + ("; a cap can still change their code, which the benchmark scores" if benchmarked else "")
            if bounded else "")
    if bounded and not registers:
        return ("register cap: left out of the search: every kernel declares __launch_bounds__, and ptxas does not "
                "lower their registers under -maxrregcount (tune the bounds instead, as PARAMS)")
    caps = register_caps(registers)
    kernels = (f"the kernels {whose} scores" if whose else
               "the defaults' kernels without __launch_bounds__" if bounded and not benchmarked else
               "the defaults' kernels")
    if not caps:
        return (f"register cap: left out of the search: {kernels} use at most {registers} registers, "
                f"and a cap below {REGISTER_CAP_FLOOR} cannot raise occupancy (it only spills)"
                + (f"; {kept}" if kept else ""))
    below = f"the {registers} registers of {kernels}" if whose or bounded else f"the defaults' {registers} registers"
    return (f"register cap: -maxrregcount {', '.join(map(str, caps))} (below {below}; "
            + (kept if kept else "a cap above what a kernel uses cannot lower its registers") + ")")


def numerics_line(manifest: Manifest, allow_numerics: bool) -> str:
    """The tune's line, before the search, on the numerics knobs left out because the target's own flags already set
    their options ("" where none): llm.c's --use_fast_math made 4 of the 5 repeat it, and the space 16 times larger."""
    set_by = knobs_set_by(manifest.cuda_flags) if allow_numerics else {}
    if not set_by:
        return ""
    setters = sorted(set(set_by.values()))
    implies = " ".join(f"-{option}={value}" for option, value in FAST_MATH_IMPLIES.items())
    said = ", ".join(f"{flag} (which implies {implies})" if flag == FAST_MATH else flag for flag in setters)
    return (f"numerics: {', '.join(knob(name).template for name in set_by)} left out of the search: the target's own "
            f"flags already set {'it' if len(set_by) == 1 else 'them'}: {said}; a candidate with one would repeat the "
            "target's choice or overrule it")


def build_space(kinds: list[str], manifest: Manifest, toolchain: Toolchain, allow_numerics: bool,
                objectives: list[Objective], registers: int | None = None) -> dict[str, Param]:
    """The searched space; with the baseline's `registers`, the register cap fitted to them (`fit_register_cap`)."""
    space: dict[str, Param] = {}
    if "knobs" in kinds:
        arch = _first_arch(manifest.toolchain.architectures)
        knobs = knob_space(toolchain, allow_numerics, arch=arch)
        left_out = _compile_time_knobs_left_out(objectives) + tuple(
            KNOB_PREFIX + name for name in knobs_set_by(manifest.cuda_flags))
        knobs = {name: param for name, param in knobs.items() if name not in left_out}
        space.update(fit_register_cap(knobs, registers))
    if "params" in kinds:
        space.update(parse_params(manifest.params))
    return space


def make_candidate_source(settings: SearchSettings, manifest: Manifest, toolchain: Toolchain,
                          objectives: list[Objective], acf_dir: Path, registers: int | None = None) -> CandidateSource:
    """The source of `settings.strategy` (else the space's default) over the target's space (the register cap
    fitted to the baseline's `registers` where given)."""
    kinds = search_kinds(settings)
    space = build_space(kinds, manifest, toolchain, settings.allow_numerics, objectives, registers)
    config = SearchConfiguration(
        generations=settings.generations, pool_size=settings.pool_size, mutate_rate=settings.mutate_rate,
        problem_type=[o.direction for o in objectives], num_objectives=len(objectives), seed=settings.seed,
        max_evaluations=settings.max_evaluations,
    )
    acf_kind = next((k for k in kinds if is_acf_kind(k)), None)
    constraints = None
    if manifest.constraints and "params" in kinds:
        if acf_kind is not None and not acf_kind.startswith(POOL_PREFIX):
            raise ConfigError(
                f"CONSTRAINTS are honoured by the ga and random strategies over knobs, params and ACF pools, "
                f"not with the compiler search space {acf_kind}; sample an ACF pool with `python -m ciq_build "
                "sample-acfs` and search acf-pool:<folder>, or leave params out of this tune (their values stay "
                "fixed), or remove CONSTRAINTS")
        constraints = parse_constraints(manifest.constraints, space, setuptools=manifest.setuptools)
    # CONSTRAINTS over PARAMS this tune does not search: every candidate keeps the same values (the
    # source's own, which the baseline builds and runs), so they rule out nothing here.
    pool = None
    acf_seeding = None
    if acf_kind is not None and acf_kind.startswith(POOL_PREFIX):
        from ciq_build.search.acf_pool import AcfPool

        pool_dir = Path(acf_kind[len(POOL_PREFIX):])
        if not pool_dir.is_absolute():
            pool_dir = manifest.source_dir / pool_dir
        pool = AcfPool(pool_dir, toolchain)
        acf_seeding = pool.seeding()
    elif acf_kind is not None and settings.seed_from:
        acf_seeding = compiler_space_seeding(acf_kind, toolchain, manifest.toolchain.architectures)
    allows = constraints.allows if constraints is not None else None
    defaults = guarded_defaults(manifest.params, manifest.cuda_sources) if settings.seed_from else {}
    request = SearchRequest(space, config, tuple(o.spec for o in objectives), toolchain=toolchain,
                            architectures=manifest.toolchain.architectures, acf_dir=acf_dir, allows=allows,
                            seeds=tuple(read_seeds(settings.seed_from, space, allows, acf_seeding, defaults,
                                                   settings.seeds_said_as)),
                            strategy_options=split_pairs(settings.strategy_options),
                            pool_size_explicit=settings.pool_size_explicit)
    if pool is not None:
        from ciq_build.search.acf_pool import make_pool_source

        return make_pool_source(settings.strategy, request, pool)
    if acf_kind is not None:
        return make_source(settings.strategy, replace(request, acf_space=acf_kind))
    if not space:
        raise ConfigError(nothing_to_search(kinds, manifest, toolchain))
    return make_source(settings.strategy, request)


def nothing_to_search(kinds: list[str], manifest: Manifest, toolchain: Toolchain) -> str:
    """Why the space of `kinds` is empty, in the words of the front end the target is declared in, and what to do:
    `params` without PARAMS (the usual case: `--controls params` on a target that declares none), or `knobs` of
    which this compiler accepts none."""
    why = []
    if "params" in kinds and not manifest.params:
        where, add = (("its CudaExtension", 'params=["NAME=a,b,c"] (docs/setuptools.md)') if manifest.setuptools else
                      ("ciq_tune_target()", "PARAMS NAME=a,b,c (docs/cmake.md: PARAMS) and configure again"))
        why.append(f"params searches the target's PARAMS, and {where} declares none: add {add}")
    if "knobs" in kinds:
        why.append(f"the nvcc of CUDA {toolchain.version} accepts none of the compiler knobs")
    instead = ", or search the compiler's knobs (--controls knobs)" if "knobs" not in kinds else ""
    return f"nothing to search for {manifest.target}: " + "; ".join(why) + instead


def compiler_space_seeding(acf_kind: str, toolchain: Toolchain, architectures: str) -> AcfSeeding:
    """Seeds' ACFs over a compiler search space: of its compiler, and applied by this toolkit (tried on it)."""
    from ciq_build.search.compileiq_spaces import space_compiler

    compiler = space_compiler(acf_kind)
    # nvcc ACFs apply from sm_100 on (compiler/acf.py); a ptxas ACF's acceptance does not depend on the arch.
    arch = _first_arch(architectures) or ("100" if compiler == "nvcc" else "90")

    def refusals(acfs: list[AcfRef]) -> dict[Path, str]:
        said = acf_refusals(toolchain, [(acf.path, acf.compiler) for acf in acfs], arch)
        return {path: f"the {compiler} of CUDA {toolchain.version} refuses it ({reason}): an ACF for another "
                      "CUDA version, or not an ACF" for path, reason in said.items()}

    return AcfSeeding(compiler, refusals)


def _first_arch(architectures: str) -> str | None:
    """The first named architecture, for probing knobs (CMake's keywords, "all", "native"..., name none)."""
    return next((arch_name(item) for item in split_architectures(architectures) if not is_keyword(item)), None)



# Spaces up to this many configurations have their CONSTRAINTS counted exactly when the size is said.
_COUNT_LIMIT = 200_000


def space_size_text(settings: SearchSettings, manifest: Manifest, toolchain: Toolchain,
                    objectives: list[Objective], registers: int | None = None) -> tuple[str, int | None]:
    """How big the searched grid is, said at a tune's start: "3 of 12 PARAMS combinations (CONSTRAINTS) x 2,048
    knob settings = 6,144 configurations", and that number (None where not known: an ACF pool); ("", None) for
    a compiler ACF space (sampled, never enumerated)."""
    kinds = search_kinds(settings)
    if any(is_acf_kind(k) and not k.startswith(POOL_PREFIX) for k in kinds):
        return "", None
    space = build_space(kinds, manifest, toolchain, settings.allow_numerics, objectives, registers)
    params = {name: p for name, p in space.items() if name.startswith("param.")}
    knobs = {name: p for name, p in space.items() if name.startswith("knob.")}
    parts: list[str] = []
    total = 1
    if params:
        every = as_space(params).cardinality
        # In the words the user declared them in: a CudaExtension's params= and ciq_constraints= (npcuda-example's
        # trial read "4 PARAMS combinations" of a setup.py).
        declared, constrained = ("params=", "ciq_constraints=") if manifest.setuptools else ("PARAMS", "CONSTRAINTS")
        count, said = every, f"{every:,} {declared} combinations"
        constraints = parse_constraints(manifest.constraints, space, setuptools=manifest.setuptools) if manifest.constraints else None
        if constraints is not None and every <= _COUNT_LIMIT:
            allowed = as_space(params, constraints.allows)
            count = sum(1 for i in range(every) if allowed.allows(allowed.genome_at(i)))
            if count == 0:  # GPUSorting's trial: "0 of 2 PARAMS combinations ... each of its 0 configurations is
                # evaluated once (exhaustive)", then "CONSTRAINTS allow none of the configurations ... (25200 in all)"
                where = "its CudaExtension" if manifest.setuptools else "ciq_tune_target()"
                raise ConfigError(
                    f"{constrained} allow none of the {every:,} {declared} combinations ({declared} "
                    f"{'; '.join(manifest.params)}; {constrained} {'; '.join(manifest.constraints)}): nothing to "
                    f"search. Loosen {constrained} or widen {declared} in {where}")
            said = (f"{count:,} of {every:,} {declared} combinations ({constrained})" if count < every else
                    f"{every:,} {declared} combinations ({constrained} rule out none of them)")
        parts.append(said)
        total *= count
    if knobs:
        count = as_space(knobs).cardinality
        parts.append(f"{count:,} knob settings")
        total *= count
    if any(k.startswith(POOL_PREFIX) for k in kinds):
        parts.append("an ACF pool's ACFs")
    if not parts:
        return "", None
    pooled = any(k.startswith(POOL_PREFIX) for k in kinds)
    text = " x ".join(parts) + (f" = {total:,} configurations" if len(parts) > 1 and not pooled else "")
    return text, None if pooled else total
