"""What a journaled evaluation is keyed by (ciq_build.tune.cache.cache_key): what its measurement depends on."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import cast

from ciq_build.compiler.controls import Controls
from ciq_build.compiler.toolchain import Toolchain
from ciq_build.project.manifest import Manifest, ManifestToolchain
from ciq_build.tune.cache import cache_key, made_with, part_digests, what_changed
from support import bare_manifest

TOOLCHAIN = cast(Toolchain, SimpleNamespace(version="13.3.73", ptxas_version="13.3.73", nvcc=Path("/usr/bin/nvcc")))


def _manifest(*cuda_flags: str) -> Manifest:
    return cast(Manifest, bare_manifest(Path("/src"), cuda_flags=cuda_flags,
                                        toolchain=ManifestToolchain(Path("/usr/bin/nvcc"), "13.3.73", "75")))


def test_the_targets_own_nvcc_flags_are_part_of_the_key() -> None:
    # cuda-api-wrappers' trial: reconfigured with -DCMAKE_CUDA_FLAGS=-Xptxas=-O0, the next tune said "resuming: 6
    # finished evaluation(s)" of the -O3 code, each then "not what a fresh build measures" (43 registers, not 36).
    controls = Controls(flags=("-maxrregcount=32",))
    plain = cache_key(_manifest(), TOOLCHAIN, controls, "sources")
    gencode = cache_key(_manifest("-gencode", "arch=compute_80,code=sm_80"), TOOLCHAIN, controls, "sources")
    o0 = cache_key(_manifest("-gencode", "arch=compute_80,code=sm_80", "-Xptxas=-O0"), TOOLCHAIN, controls, "sources")
    assert len({plain, gencode, o0}) == 3
    assert gencode == cache_key(_manifest("-gencode", "arch=compute_80,code=sm_80"), TOOLCHAIN, controls, "sources")
    # A target without flags of its own keeps the key it had before the flags counted (its journals still resume).
    assert plain == "6d171f7ecf2b43c083d8e1c02018320c471bffac240bf7447ccd481a5c75d394"


def test_the_per_block_declarations_are_part_of_the_key_where_declared() -> None:
    # The tune said to add DYNAMIC_SHARED_MEMORY (FlashAttention's 64 KB a block); the next tune, with it, must
    # measure again, not take the journal's occupancy that counted none.
    plain = _manifest()
    keys = {cache_key(replace(plain, **changes), TOOLCHAIN, Controls(), "sources")  # type: ignore[arg-type]
            for changes in ({}, {"threads_per_block": ("128",)}, {"dynamic_shared_memory": ("65536",)},
                            {"dynamic_shared_memory": ("32768",)})}
    assert len(keys) == 4


def test_each_part_of_the_key_is_told_apart_from_the_others() -> None:
    # What a journal records beside its evaluations, so that a tune whose keys differ names what changed (the
    # flash_attention_inference trial: THREADS_PER_BLOCK added to CMakeLists.txt, told as "other sources,
    # toolchain ... or benchmark").
    plain = part_digests(_manifest(), TOOLCHAIN)
    declared = part_digests(replace(_manifest(), threads_per_block=("128",)), TOOLCHAIN)
    flagged = part_digests(_manifest("-Xptxas=-O0"), TOOLCHAIN)
    assert [name for name in plain if plain[name] != declared[name]] == ["per-block declarations"]
    assert [name for name in plain if plain[name] != flagged[name]] == ["nvcc flags"]
    files = {"CMakeLists.txt": "1", "kern.cu": "2"}
    assert what_changed(made_with(plain, files), made_with(plain, files)) == ([], [])
    assert what_changed(made_with(plain, files), made_with(declared, {**files, "CMakeLists.txt": "3"})) == (
        ["sources", "per-block declarations"], ["CMakeLists.txt"])
    # A file added or removed is a change; a part one record does not have (another version's) is not compared.
    assert what_changed(made_with(plain, files), made_with({**plain, "new": "x"}, {"kern.cu": "2", "k.h": "4"})) == (
        ["sources"], ["CMakeLists.txt", "k.h"])
