"""Which candidate source a tune uses, from the target's SEARCH_SPACE / --controls.

`knobs` and `params` are searched by ciq_build's genetic engine; any ACF kind
(`ptxas-acf`, `nvcc-acf`, a `.bin` file) hands the search to NVIDIA's compileiq
engine, with the knobs and params in the same space.
"""

from __future__ import annotations

from pathlib import Path

from ciq_build.build.manifest import Manifest
from ciq_build.compiler.controls import knob_space
from ciq_build.compiler.toolchain import Toolchain, architecture_list
from ciq_build.core.objectives import Objective, times_the_compile
from ciq_build.core.params import parse_params
from ciq_build.core.settings import PLAIN_KINDS, SearchSettings
from ciq_build.core.space import Param
from ciq_build.errors import ConfigError
from ciq_build.search.base import CandidateSource
from ciq_build.search.ga import SearchConfiguration

POOL_PREFIX = "acf-pool:"


def is_acf_kind(kind: str) -> bool:
    return kind.startswith(("ptxas-acf", "nvcc-acf", POOL_PREFIX)) or kind.endswith(".bin")


def search_kinds(settings: SearchSettings) -> list[str]:
    """The resolved SEARCH_SPACE / --controls, checked: known kinds, at most one ACF space."""
    kinds = list(settings.kinds)
    for kind in kinds:
        if kind not in PLAIN_KINDS and not is_acf_kind(kind):
            raise ConfigError(
                f"unknown search space {kind!r}: use knobs, params, ptxas-acf[:VERSION[:VARIANT]], "
                "nvcc-acf[:VERSION[:VARIANT]], the path of a .bin search space, or acf-pool:<folder> "
                "(ACFs sampled ahead with `python -m ciq_build sample-acfs`)")
    if sum(1 for k in kinds if is_acf_kind(k)) > 1:
        raise ConfigError(f"at most one ACF search space per tune, got {kinds}")
    return kinds


# Knobs that trade generated-code quality for compile time: searched only when
# compile time is an objective, or a static objective (registers, say) would
# "win" with code nobody wants to ship. ptxas -O0..2 is such a knob (its only
# other value is the default -O3): a registers tune of cuda-samples' matrixMul
# pinned -Xptxas=-O0 for 32 -> 29 registers before it was listed here.
COMPILE_TIME_KNOBS = ("knob.fast_compile", "knob.ptxas_opt_level")


def build_space(kinds: list[str], manifest: Manifest, toolchain: Toolchain, allow_numerics: bool,
                objectives: list[Objective]) -> dict[str, Param]:
    space: dict[str, Param] = {}
    if "knobs" in kinds:
        arch = _first_arch(manifest.toolchain.architectures)
        knobs = knob_space(toolchain, allow_numerics, arch=arch)
        if not times_the_compile(objectives):
            knobs = {name: param for name, param in knobs.items() if name not in COMPILE_TIME_KNOBS}
        space.update(knobs)
    if "params" in kinds:
        space.update(parse_params(manifest.params))
    return space


def make_candidate_source(settings: SearchSettings, manifest: Manifest, toolchain: Toolchain,
                          objectives: list[Objective], acf_dir: Path) -> CandidateSource:
    kinds = search_kinds(settings)
    space = build_space(kinds, manifest, toolchain, settings.allow_numerics, objectives)
    config = SearchConfiguration(
        generations=settings.generations, pool_size=settings.pool_size, mutate_rate=settings.mutate_rate,
        problem_type=[o.direction for o in objectives], num_objectives=len(objectives), seed=settings.seed,
        max_evaluations=settings.max_evaluations,
    )
    acf_kind = next((k for k in kinds if is_acf_kind(k)), None)
    if acf_kind is not None and acf_kind.startswith(POOL_PREFIX):
        from ciq_build.search.acf_pool import AcfPoolSource

        pool_dir = Path(acf_kind[len(POOL_PREFIX):])
        if not pool_dir.is_absolute():
            pool_dir = manifest.source_dir / pool_dir
        return AcfPoolSource(pool_dir, space, config, [o.spec for o in objectives], toolchain)
    if acf_kind is not None:
        from ciq_build.search.compileiq import make_source

        return make_source(acf_kind, space, config, acf_dir, manifest, toolchain, [o.spec for o in objectives])
    if not space:
        raise ConfigError(
            f"nothing to search for {manifest.target}: SEARCH_SPACE {kinds} gives no parameters "
            "(no PARAMS given, and no knob accepted by this compiler)")
    from ciq_build.search.genetic import GeneticSource

    return GeneticSource(space, config, [o.spec for o in objectives])


def _first_arch(architectures: str) -> str | None:
    """The first named architecture, for probing knobs ("all" and "native" name none)."""
    return next((arch for arch in architecture_list(architectures) if arch not in ("all", "native")), None)

