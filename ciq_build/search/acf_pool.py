"""A pool of ACFs sampled ahead of time, searched like any other parameter.

NVIDIA's compileiq engine (and the ~800 MB it installs) may not be available
where the GPU is, and only compileiq can write an ACF. So `sample-acfs` draws
ACFs from a compiler search space where compileiq is installed, into a folder
with a `pool.json`; `tune --controls acf-pool:<folder>` then searches, with
any strategy over grids (ciq_build's genetic engine by default), which ACF of
the pool (or none: the compiler's default) to use, together with the knobs and
params.

A pool is identified by its content, not by its seed. compileiq encrypts every
ACF with fresh randomness (see ``ciq_build.search.compileiq``), so sampling
again with the same seed writes new bytes: the same controls at every position
(the same machine code from the same compiler), under other sha256s. A pinned
ACF is therefore kept as a file, never re-derived from a seed. ``pool.json``
lists each ACF's sha256 in sampling order and a ``pool_sha256`` over that list
(sha256 of the lines ``<sha256> <file>``), which a tune's record carries in its
provenance; it also names the compileiq build, the seed and the generation
size, which are what fix the controls at each position.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import ciq_build.core.space as ss
from ciq_build.compiler.acf import check_toolkit_accepts
from ciq_build.compiler.controls import AcfRef
from ciq_build.compiler.toolchain import Toolchain, major_minor
from ciq_build.core.rules import load_rules
from ciq_build.core.space import Param
from ciq_build.errors import ConfigError
from ciq_build.search.base import CandidateSource, Proposal, WrappedSource
from ciq_build.search.evolution import SearchConfiguration
from ciq_build.search.seeds import AcfSeeding, Seed
from ciq_build.search.strategies import make_source
from ciq_build.search.strategy import SearchRequest
from ciq_build.state.durable import atomic_write, read_json_object, sha256_file

POOL_FILE = "pool.json"
POOL_PARAM = "acf.pool"
POOL_SCHEMA = 1


def pool_sha256(entries: list[dict[str, Any]]) -> str:
    """The pool's identity: sha256 of the lines ``<sha256> <file>``, in sampling order."""
    listing = "".join(f"{entry['sha256']} {entry['file']}\n" for entry in entries)
    return hashlib.sha256(listing.encode("utf-8")).hexdigest()


def sample_pool(space_spec: str, count: int, out_dir: Path, seed: int | None = 0) -> Path:
    """Draw `count` ACFs from a compiler search space with compileiq; write them and pool.json to out_dir."""
    from ciq_build.search.compileiq import CompileIqEngine
    from ciq_build.search.compileiq_spaces import resolve_space

    if count < 1:
        raise ConfigError("--count must be at least 1")
    identity = resolve_space(space_spec)
    out_dir = Path(out_dir).absolute()
    # One compileiq generation: its size (and the seed) decide which controls each position gets.
    config = SearchConfiguration(generations=1, pool_size=max(count, 6), seed=seed)
    engine = CompileIqEngine(identity, None, config, out_dir / "engine")
    proposals = engine.ask()[:count]
    entries = []
    for proposal in proposals:
        assert proposal.acf is not None
        target = out_dir / proposal.acf.path.name
        atomic_write(target, proposal.acf.path.read_bytes())
        entries.append({"file": target.name, "sha256": sha256_file(target)})
    build = engine.engine_build()
    engine.close()
    shutil.rmtree(out_dir / "engine", ignore_errors=True)  # compileiq's scratch, not part of the pool
    pool = {"schema": POOL_SCHEMA, "compiler": identity.compiler, "cuda": identity.cuda,
            "space": identity.describe(), "seed": seed, "count": count, "generation_size": config.pool_size,
            "engine": build, "pool_sha256": pool_sha256(entries), "acfs": entries,
            "note": ("ACF bytes are encrypted with fresh randomness: sampling again with this seed gives the "
                     "same controls at each position under new sha256s. Keep the files.")}
    atomic_write(out_dir / POOL_FILE, json.dumps(pool, indent=2) + "\n")
    return out_dir / POOL_FILE


def load_pool(directory: Path) -> dict[str, Any]:
    """pool.json, with every ACF present and unedited (sha256), or a ConfigError saying what to do."""
    path = Path(directory) / POOL_FILE
    try:
        pool = read_json_object(path)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read the ACF pool {path}: {exc}; create one with "
                          "`python -m ciq_build sample-acfs --space ptxas-acf:13.3 --out DIR`") from None
    if pool.get("schema") != POOL_SCHEMA or not isinstance(pool.get("acfs"), list):
        raise ConfigError(f"{path} is not an ACF pool of schema {POOL_SCHEMA}; sample a new one")
    if pool.get("compiler") not in ("ptxas", "nvcc") or not pool["acfs"]:
        raise ConfigError(f"{path} names no compiler or no ACF; sample a new pool")
    for entry in pool["acfs"]:
        name = entry.get("file") if isinstance(entry, dict) else None
        # The rule book's file-name rule: the name reaches nvcc inside a path.
        if not isinstance(name, str) or not load_rules().matches("acf_file", name):
            raise ConfigError(f"{path}: ACF entry {entry!r} must name a file inside the pool folder "
                              "(letters, digits and _ . + -, not starting with '.' or '-')")
        file = Path(directory) / name
        if file.is_symlink() or not file.is_file() or sha256_file(file) != entry.get("sha256"):
            raise ConfigError(f"{path}: {name} is missing or was edited (sha256 differs); sample a new pool")
    # Pools written before pool_sha256 was recorded have none; the list itself is checked above.
    if "pool_sha256" in pool and pool["pool_sha256"] != pool_sha256(pool["acfs"]):
        raise ConfigError(f"{path}: its ACF list was edited (pool_sha256 differs); sample a new pool")
    return pool


class AcfPool:
    """A loaded, checked pool: the choice of which ACF (knocked out: none) and the file each choice names."""

    def __init__(self, directory: Path, toolchain: Toolchain | None):
        self.directory = Path(directory).absolute()
        self.listing = load_pool(self.directory)
        if toolchain is not None:
            reader = toolchain.ptxas_version if self.listing["compiler"] == "ptxas" else toolchain.version
            check_toolkit_accepts(self.listing["compiler"], str(self.listing.get("cuda")), major_minor(reader))
        self.refs = {entry["file"]: AcfRef(self.directory / entry["file"], self.listing["compiler"], entry["sha256"])
                     for entry in self.listing["acfs"]}

    @property
    def param(self) -> Param:
        # Knocked out = no ACF: the compiler's default stays in the running.
        return ss.choice(list(self.refs), knockout_prob=0.5)

    def describe(self) -> dict[str, Any]:
        return {"space": self.listing.get("space"), "seed": self.listing.get("seed"), "size": len(self.refs),
                "pool_sha256": pool_sha256(self.listing["acfs"])}

    def seeding(self) -> AcfSeeding:
        """Seeds' ACFs here: those of the pool (by content), as its choice; any other cannot be searched."""
        names = {ref.sha256: name for name, ref in self.refs.items()}

        def refusals(acfs: list[AcfRef]) -> dict[Path, str]:
            return {acf.path: f"not one of the ACF pool {self.directory}'s (the pool's ACFs are what this tune "
                              "searches; seed from the pool's folder, or sample the ACF into a pool)"
                    for acf in acfs if acf.sha256 not in names}

        return AcfSeeding(str(self.listing["compiler"]), refusals)

    def as_choice(self, seed: Seed) -> Seed:
        """A seed whose ACF is the pool's, as a value of the pool's choice."""
        if seed.acf is None:
            return seed
        name = {ref.sha256: name for name, ref in self.refs.items()}[seed.acf.sha256]
        return replace(seed, params={**seed.params, POOL_PARAM: name}, acf=None)


def make_pool_source(strategy: object, request: SearchRequest, pool: AcfPool) -> AcfPoolSource:
    """`strategy` searching the request's parameters and which pooled ACF (if any) to apply."""
    inner = make_source(strategy, replace(request, space={**request.space, POOL_PARAM: pool.param},
                                          seeds=tuple(pool.as_choice(seed) for seed in request.seeds)))
    return AcfPoolSource(pool, inner)


class AcfPoolSource(WrappedSource):
    """Any strategy's source over the pool's choice, its proposals carrying the chosen ACF."""

    def __init__(self, pool: AcfPool, inner: CandidateSource):
        super().__init__(inner)
        self.pool = pool

    def _wrap(self, proposal: Proposal) -> Proposal:
        params = dict(proposal.params)
        name = params.pop(POOL_PARAM, None)
        return replace(proposal, params=params, acf=self.pool.refs[name] if name is not None else None,
                       extra={**proposal.extra, POOL_PARAM: name})

    def describe(self) -> dict[str, Any]:
        described = self.inner.describe()
        described["engine"] = f"{described['engine']}+acf-pool"
        described["acf_pool"] = self.pool.describe()
        return described
