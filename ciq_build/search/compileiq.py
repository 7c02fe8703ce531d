"""Adapter from NVIDIA's compileiq engine to the driver's candidates, each carrying an ACF.

Only compileiq can turn an opaque compiler search space (a ``.bin``) into
Advanced Controls Files: encrypted blobs, handed out as hex strings. This
module drives compileiq in-process through its manual ask/tell API
(``compileiq.ciq.Search`` with ``WorkerTypes.MANUAL``): no Ray cluster is
started (``ray`` is imported by compileiq, which costs about a second, but
never initialised), no worker processes, no network when the space is local.

One compileiq search covers both halves of a candidate: the compiler space
(the ``.bin``) and ciq_build's own ``knob.*``/``param.*`` parameters, given to
compileiq as ``ss.range/choice/literal`` next to the ``.bin`` (compileiq then
issues ``[dict, hex]`` pairs). Each parameter is handed over as a grid of
*indices* and mapped back through :mod:`ciq_build.core.space`, so values keep their
exact Python types (compileiq turns bools into ints and re-derives floats).

Facts about compileiq 1.1.0 this relies on (measured; tests/search/test_compileiq.py):

* ``EngineConfig(name="amber", options={"seed": N})`` makes the *search*
  deterministic: the same seed and the same told scores give the same
  candidates, and each ACF compiles to the same SASS. The ACF *bytes* differ on
  every run, so an ACF's sha256 is not stable across runs: the closed native
  runtime (``compileiq_native_runtime._native``, with a statically linked
  OpenSSL) encrypts each ACF with fresh randomness from its own generator,
  seeded from ``getentropy`` and the process (a constant ``getentropy`` still
  gives new bytes every run), and no API takes a nonce or an encryption seed.
  Resume therefore reuses the ACF file written for the same position in the
  ask sequence (see "Resume" below); an ACF pool (``acf_pool``) records every
  file's sha256.
* The engine cannot propose "no ACF": every compiler-space candidate carries
  one. The compiler's default is measured by the driver as its baseline.
* ``Search.save_checkpoint`` / ``Search.from_checkpoint`` seal the engine state;
  this adapter does not use them: resume replays the journal (see "Resume").
* ``ask()`` keeps working past the configured generation count (only
  compileiq's own ``start()`` stops there); this adapter stops itself.

Resume: the driver resumes by replaying its journal into a fresh search with
the same seed (cached results are told again, nothing is rebuilt). For that to
find its cache, a replayed candidate must carry the very ACF file it carried
before. The adapter keeps a ledger (``issued.jsonl`` in ``acf_dir``) of the
ACF issued at each position of the ask sequence, and on replay hands out the
recorded file instead of the freshly encrypted equivalent. The ledger is used
only with a seed, only for the same engine build, space and settings, and only
while the replay matches it (same ciq_build parameters, same ACF length);
from the first mismatch on it is rewritten.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ciq_build.compiler.acf import check_nvcc_acf_architectures, check_toolkit_accepts, write_acf
from ciq_build.compiler.controls import AcfRef
from ciq_build.compiler.toolchain import major_minor
from ciq_build.core.space import Literal, Param, Range, as_space
from ciq_build.errors import ConfigError, SearchError
from ciq_build.search.base import Proposal
from ciq_build.search.compileiq_spaces import (
    SpaceIdentity,
    check_space_exists_for,
    load_compileiq,
    parse_space_spec,
    resolve_space,
)
from ciq_build.search.evolution import SearchConfiguration
from ciq_build.search.strategy import COMPILER_ACF, GRID, SearchRequest, configured
from ciq_build.search.strategy_options import strategy_option
from ciq_build.state.durable import atomic_write

if TYPE_CHECKING:
    from ciq_build.search.seeds import Seed

__all__ = [
    "ENGINE_NAME",
    "CompileIqEngine",
    "CompileIqStrategy",
]

ENGINE_NAME = "compileiq"
LEDGER_NAME = "issued.jsonl"
# compileiq refuses smaller pools (SearchConfiguration.pool_size > 5), and keeps 1 + 2 x objectives survivors
# after culling at least 2 a generation: with two objectives a pool of 6 is refused (survivors 4 < 5).
MIN_POOL_SIZE = 6


def min_pool_size(objectives: int) -> int:
    """The smallest pool compileiq's engine takes for this many objectives."""
    return max(MIN_POOL_SIZE, 1 + 2 * objectives + 2)


def searched_configuration(request: SearchRequest) -> SearchConfiguration:
    """The configuration compileiq searches with: a pool nobody chose (the tune's default of 8) raised to the
    smallest the engine takes for the objectives, so that a tune of 3 objectives that sets nothing runs; one
    chosen (--pool-size, --strategy-option pool_size=, a configuration from Python) is kept as given, and the
    engine refuses it where smaller. Its describe()'s budget says the pool used."""
    config = configured(request)
    chosen = request.pool_size_explicit or "pool_size" in request.strategy_options
    least = min_pool_size(config.num_objectives)
    return config if chosen or config.pool_size >= least else replace(config, pool_size=least)


# --------------------------------------------------------------------------- ciq_build params <-> compileiq


def _seed_bounds(param: Range) -> tuple[int | None, int | None]:
    """A range's seed bounds as grid indices (compileiq samples indices here)."""
    low = None if param.seed_low is None else max(0, math.ceil((param.seed_low - param.start) / param.step - 1e-9))
    high = None if param.seed_high is None else min(param.size - 1,
                                                    math.floor((param.seed_high - param.start) / param.step + 1e-9))
    return low, high


def _to_compileiq(param: Param, ss: Any) -> Any:
    """The compileiq parameter over ``param``'s grid indices (same order, same knockout)."""
    knockout = param.knockout_prob
    if isinstance(param, Literal) or param.size == 1:
        return ss.literal(0, knockout_prob=knockout)
    if param.ordered:  # ranges and log_sampling: neighbouring indices are neighbouring values
        low, high = _seed_bounds(param) if isinstance(param, Range) else (None, None)
        return ss.range(0, param.size - 1, 1, knockout_prob=knockout, seed_low=low, seed_high=high)
    return ss.choice(list(range(param.size)), knockout_prob=knockout)


def _from_compileiq(space: Mapping[str, Param], issued: Mapping[str, Any]) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for name, param in space.items():
        if name in issued:
            index = int(round(float(issued[name])))
            if not 0 <= index < param.size:
                raise SearchError(f"compileiq issued index {issued[name]!r} for {name!r}, outside its grid")
            params[name] = param.value(index)
    return params


# --------------------------------------------------------------------------- the engine


@dataclass
class _Issued:
    param_id: str
    ordinal: int


class CompileIqEngine:
    """compileiq's ask/tell as a CandidateSource: proposals carry ``params`` and, over a compiler space, an ``acf``.

    Over a compiler space (``space``) the compiler's default (no ACF) is never
    proposed: compileiq cannot issue it, so the driver measures it as its
    baseline. Without one (``space`` None) compileiq searches the grid
    parameters alone, as any grid strategy does.
    """

    include_default = False

    def __init__(self, space: SpaceIdentity | None, extra_space: Mapping[str, Param] | None,
                 config: SearchConfiguration, acf_dir: Path, objective_names: Sequence[str] = (),
                 seeds: Sequence[Seed] = ()):
        if space is None and not extra_space:
            raise ConfigError("the compileiq engine needs a compiler search space or parameters to search")
        self.ciq = load_compileiq()
        self.identity = space
        self.extra = as_space(extra_space) if extra_space else None
        self.config = config
        self.acf_dir = Path(acf_dir).absolute()
        self.objective_names = list(objective_names)
        directions = config.directions
        least = min_pool_size(len(directions))
        if config.pool_size < least:
            raise ConfigError(f"the compileiq engine needs pool_size >= {least} with {len(directions)} objective(s) "
                              f"(it keeps 1 + 2 x objectives survivors a generation and culls at least 2), got "
                              f"{config.pool_size}: set --pool-size {least} or more")
        # compileiq optimises every objective one way; mixed directions are sent as "min" with
        # the "max" objectives negated.
        self._problem = directions[0] if len(set(directions)) == 1 else "min"
        self._negate = tuple(d != self._problem for d in directions)
        self._search = self._new_search()
        self._issued: dict[int, _Issued] = {}  # proposal id -> compileiq id, for asked and not yet flushed
        self._told: dict[int, Any] = {}  # proposal id -> compileiq Score, until the batch is complete
        self._next_id = 0
        self._asked_total = 0
        # tune --seed-from / SEEDS: proposed before compileiq's first generation. compileiq's engine takes
        # no candidate it did not issue (its tell refuses unknown ids), so seeds compete for the pin but
        # are not told to it: they do not steer its sampling, as they do the GA's, random's and Optuna's.
        self._seeds = list(seeds)
        self._seed_ids: set[int] = set()
        self._any_success = False
        self._started = time.monotonic()
        # The ledger keeps ACF files for replays: only a compiler space issues them.
        self._ledger = (_Ledger(self.acf_dir / LEDGER_NAME, self._fingerprint())
                        if config.seed is not None and space is not None else None)

    # -- set-up ---------------------------------------------------------------

    def _compileiq_space(self) -> Any:
        grid = {name: _to_compileiq(p, self.ciq.ss) for name, p in self.extra.items()} if self.extra else None
        if self.identity is None:
            return grid
        binary = self.identity.path
        return binary if grid is None else [grid, binary]

    def _engine(self) -> Any:
        options = {} if self.config.seed is None else {"seed": int(self.config.seed)}
        return self.ciq.EngineConfig(name="amber", options=options)

    def _ciq_config(self) -> Any:
        try:
            return self.ciq.Configuration(
                problem_type=self._problem, num_objectives=self.config.num_objectives,
                generations=self.config.generations, pool_size=self.config.pool_size,
                init_with_true_random_threshold=self.config.init_with_true_random_threshold)
        except ValueError as exc:  # pydantic's ValidationError is a ValueError
            raise ConfigError(f"compileiq refuses this search configuration: {exc}") from None

    def _new_search(self) -> Any:
        cache = self.acf_dir / "compileiq-cache"  # compileiq's scratch: ours, not ~/.cache
        cache.mkdir(parents=True, exist_ok=True)
        return self.ciq.Search(
            objective_function=_never_called, search_space=self._compileiq_space(),
            search_config=self._ciq_config(), worker_type=self.ciq.WorkerTypes.MANUAL,
            engine=self._engine(), disable_progress_bar=True, exit_on_failure=False, cache_folder=cache)

    def engine_build(self) -> dict[str, str]:
        """Which compileiq build samples: what a seed's candidates are reproducible for."""
        artifact = self.ciq.registration("amber").artifact
        return {"compileiq": self.ciq.version, "backend_version": artifact.backend_version,
                "artifact_sha256": artifact.artifact_sha256}

    def _fingerprint(self) -> str:
        build = self.engine_build()
        payload = {"describe": self.describe(), "artifact": build["artifact_sha256"],
                   "backend": build["backend_version"]}
        return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()

    # -- CandidateSource ------------------------------------------------------

    @property
    def generation(self) -> int:
        return int(self._search.current_generation)

    def ask(self) -> list[Proposal]:
        """The next batch (a generation, or a refill of failed ones); [] when the search is over."""
        self._flush()
        # Failed candidates are replaced one-for-one in the same generation (refill batches);
        # the evaluations a user asked for (generations x pool_size, at most max_evaluations) bound those too.
        budget = self.config.evaluations
        if self.generation >= self.config.generations or self._asked_total >= budget:
            return []
        if self.config.time_limit is not None and time.monotonic() - self._started >= self.config.time_limit:
            return []
        left = budget - self._asked_total
        if left <= 0:
            return []
        count = left if left < self.config.pool_size else None
        generation = self.generation
        seeded = self._seed_proposals()
        try:
            with _quiet():
                candidates = self._search.ask(num_samples=count) if count else self._search.ask()
        except ValueError as exc:  # compileiq's SearchSpaceExhaustedError is a ValueError
            if "unique candidates" in str(exc) or type(exc).__name__ == "SearchSpaceExhaustedError":
                return []
            raise
        proposals = []
        for candidate in candidates:
            ordinal = self._asked_total
            self._asked_total += 1
            issued, blob = self._split(candidate.params)
            params = _from_compileiq(self.extra, issued) if self.extra is not None else {}
            acf = self._acf_for(ordinal, params, blob) if self.identity is not None else None
            proposal = Proposal(id=self._next_id, generation=generation, params=params, acf=acf,
                                extra={"compileiq_id": str(candidate.param_id), "ordinal": ordinal})
            self._issued[self._next_id] = _Issued(str(candidate.param_id), ordinal)
            self._next_id += 1
            proposals.append(proposal)
        return seeded + proposals

    def _seed_proposals(self) -> list[Proposal]:
        """The seeds, once, ahead of compileiq's first candidates."""
        proposals = []
        for seed in self._seeds:
            proposals.append(Proposal(id=self._next_id, generation=0, params=dict(seed.params), acf=seed.acf,
                                      extra={"seed": seed.origin}))
            self._seed_ids.add(self._next_id)
            self._next_id += 1
        self._seeds = []
        return proposals

    def tell(self, proposal: Proposal, scores: tuple[float, ...] | None, reason: str | None = None) -> None:
        """Record one outcome (``scores`` None: the candidate failed; ``reason`` says why)."""
        if proposal.id in self._seed_ids:
            self._seed_ids.discard(proposal.id)  # not compileiq's: see __init__
            return
        issued = self._issued.get(proposal.id)
        if issued is None or proposal.id in self._told:
            raise SearchError(f"candidate {proposal.id} was not asked, or was told already")
        n = self.config.num_objectives
        value: Any
        if scores is None or len(scores) != n or not all(math.isfinite(float(s)) for s in scores):
            value = self.ciq.INVALID if n == 1 else [self.ciq.INVALID] * n
        else:
            self._any_success = True
            signed = [-float(s) if neg else float(s) for s, neg in zip(scores, self._negate)]
            value = signed[0] if n == 1 else signed
        self._told[proposal.id] = self.ciq.Score(score=value, param_id=issued.param_id, num_objectives=n,
                                                 metadata=(reason or "")[:1000])
        if len(self._told) == len(self._issued):
            self._flush()

    def describe(self) -> dict[str, Any]:
        """Provenance for the pinned record and the journal header (stable across runs)."""
        return {
            "engine": ENGINE_NAME,
            "engine_version": self.ciq.version,
            "search_space": {"acf": self.identity.describe() if self.identity is not None else None,
                             "params": self.extra.describe() if self.extra is not None else {}},
            "seed": self.config.seed,
            "budget": {"generations": self.config.generations, "pool_size": self.config.pool_size,
                       "max_evaluations": self.config.max_evaluations},
        }

    def close(self) -> None:
        """Release compileiq's engine and its scratch folder."""
        backend = getattr(self._search, "_backend_impl", None)
        if backend is not None:
            backend.close()

    # -- internals ------------------------------------------------------------

    def _split(self, issued: Any) -> tuple[Mapping[str, Any], str]:
        if self.identity is None:
            return issued, ""
        if self.extra is None:
            return {}, issued
        params, blob = issued
        return params, blob

    def _acf_for(self, ordinal: int, params: dict[str, Any], blob: str) -> AcfRef:
        assert self.identity is not None  # only a compiler space issues ACFs
        if self._ledger is not None:
            reused = self._ledger.reuse(ordinal, params, len(blob), self.acf_dir)
            if reused is not None:
                return AcfRef(path=reused[0], compiler=self.identity.compiler, sha256=reused[1])
        ref = write_acf(blob, self.acf_dir, self.identity.compiler)
        if self._ledger is not None:
            self._ledger.record(ordinal, params, len(blob), ref.sha256)
        return ref

    def _flush(self) -> None:
        """Tell compileiq the scores gathered so far, in ask order (deterministic replays)."""
        if not self._told:
            return
        told = sorted(self._told.items(), key=lambda item: self._issued[item[0]].ordinal)
        first_generation = self.generation == 0
        with _quiet():
            self._search.tell([score for _, score in told])
        if first_generation and not self._any_success and len(told) == len(self._issued):
            reasons = sorted({s.metadata for _, s in told if s.metadata})
            raise SearchError(
                "every candidate of the first compileiq generation failed, so the search cannot learn anything. "
                f"First reasons: {'; '.join(reasons[:3]) or 'none given'}. Check that the ACFs fit this "
                "compiler (ciq_build.compiler.acf.check_toolkit_accepts) and that the build works with the defaults.")
        if self._ledger is not None:
            # Replayed ACFs stay valid only while the replay tells exactly what was told before.
            self._ledger.told([(self._issued[pid].ordinal, score.score) for pid, score in told], self._asked_total)
        for proposal_id, _ in told:
            del self._issued[proposal_id]
        self._told.clear()


class _quiet(warnings.catch_warnings):
    """Silence compileiq's per-generation chatter (refills of failed candidates are expected here)."""

    def __enter__(self) -> None:
        super().__enter__()
        warnings.filterwarnings("ignore", message=r".*failed evaluation\(s\) left unfilled", category=UserWarning)


def _never_called(params: Any) -> float:
    """compileiq requires an objective; with the manual worker it is never run."""
    raise RuntimeError("the ciq_build driver evaluates candidates itself")


class _Ledger:
    """Which ACF file was issued at each position of the ask sequence, for deterministic replays."""

    def __init__(self, path: Path, fingerprint: str):
        self.path = path
        self.fingerprint = fingerprint
        self.entries: dict[int, dict[str, Any]] = {}
        self.scores: dict[int, Any] = {}  # ordinal -> score told for it
        self.valid_until: int | None = None  # first ordinal that did not replay; nothing reused from there
        lines = []
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError:
            pass
        records = []
        for line in lines:
            try:
                records.append(json.loads(line))
            except ValueError:
                break  # a torn last line from a kill: everything before it stands
        if records and records[0].get("fingerprint") == fingerprint:
            for record in records[1:]:
                if isinstance(record.get("ordinal"), int):
                    self.entries[record["ordinal"]] = record
                elif isinstance(record.get("told"), int):
                    self.scores[record["told"]] = record.get("score")
        else:
            self._rewrite()

    def _rewrite(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        keep = [self.entries[k] for k in sorted(self.entries)]
        keep += [{"told": k, "score": self.scores[k]} for k in sorted(self.scores)]
        text = "".join(json.dumps(r, sort_keys=True) + "\n" for r in [{"fingerprint": self.fingerprint}, *keep])
        atomic_write(self.path, text)

    def reuse(self, ordinal: int, params: dict[str, Any], length: int, acf_dir: Path) -> tuple[Path, str] | None:
        entry = self.entries.get(ordinal)
        if entry is None or (self.valid_until is not None and ordinal >= self.valid_until):
            return None
        path = acf_dir / f"{entry.get('sha256')}.acf"
        if entry.get("params") == json.loads(json.dumps(params)) and entry.get("length") == length and path.is_file():
            return path, str(entry["sha256"])
        # The replay went another way: forget this and every later position.
        self._diverge(ordinal)
        return None

    def _diverge(self, ordinal: int) -> None:
        self.valid_until = ordinal if self.valid_until is None else min(self.valid_until, ordinal)
        self.entries = {k: v for k, v in self.entries.items() if k < self.valid_until}
        self.scores = {k: v for k, v in self.scores.items() if k < self.valid_until}
        self._rewrite()

    def told(self, scores: list[tuple[int, Any]], next_ordinal: int) -> None:
        """Record the scores told; a score unlike the one recorded ends reuse from ``next_ordinal`` on."""
        normal = [(ordinal, json.loads(json.dumps(score))) for ordinal, score in scores]
        ahead = any(k >= next_ordinal for k in self.entries)
        if ahead and any(self.scores.get(ordinal, object()) != score for ordinal, score in normal):
            self._diverge(next_ordinal)
        fresh = [(o, s) for o, s in normal if self.scores.get(o, object()) != s]
        for ordinal, score in fresh:
            self.scores[ordinal] = score
        if fresh:
            with self.path.open("a", encoding="utf-8") as handle:
                for ordinal, score in fresh:
                    handle.write(json.dumps({"told": ordinal, "score": score}) + "\n")

    def record(self, ordinal: int, params: dict[str, Any], length: int, sha256: str) -> None:
        entry = {"ordinal": ordinal, "params": params, "length": length, "sha256": sha256}
        self.entries[ordinal] = entry
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry, sort_keys=True, default=str) + "\n")


# --------------------------------------------------------------------------- the strategy


@dataclass(frozen=True)
class CompileIqOptions:
    """compileiq's own options (tune --strategy-option KEY=VALUE; --generations and --pool-size too)."""

    generations: int = strategy_option(4, "generations the engine breeds")
    pool_size: int = strategy_option(8, "candidates per generation (at least 6, and 3 + 2 x objectives; a pool not "
                                        "given is raised to that)")


class CompileIqStrategy:
    """`--strategy compileiq`: the default (and only strategy) for a compiler search space; grids too."""

    name = ENGINE_NAME
    spaces = frozenset({COMPILER_ACF, GRID})
    takes_seeds = True  # evaluated first, not told to compileiq (CompileIqEngine.__init__)
    options = CompileIqOptions

    def make(self, request: SearchRequest) -> CompileIqEngine:
        """The compileiq engine for a tune, after refusing up front what the compiler would refuse."""
        if request.acf_dir is None:
            raise ConfigError("the compileiq strategy needs SearchRequest.acf_dir: a folder for its ACFs and scratch")
        if request.acf_space is None:
            return CompileIqEngine(None, request.space, searched_configuration(request), request.acf_dir,
                                   request.objective_names, request.seeds)
        toolchain = request.toolchain
        parsed = parse_space_spec(request.acf_space)
        if toolchain is not None and not isinstance(parsed, Path):
            # A named space: refuse before compileiq may go to the network for it.
            compiler, version, _ = parsed
            check_space_exists_for(compiler, version or toolchain.major_minor, toolchain)
            check_toolkit_accepts(compiler, version or toolchain.major_minor,
                                  major_minor(toolchain.ptxas_version if compiler == "ptxas" else toolchain.version))
        identity = resolve_space(request.acf_space, default_version=toolchain.major_minor if toolchain else None)
        if toolchain is not None:
            # A ptxas ACF is read by ptxas alone, so it is ptxas's version that must match.
            reader_version = toolchain.ptxas_version if identity.compiler == "ptxas" else toolchain.version
            check_toolkit_accepts(identity.compiler, identity.cuda, major_minor(reader_version))
        if identity.compiler == "nvcc":
            check_nvcc_acf_architectures(request.architectures)
        return CompileIqEngine(identity, request.space or None, searched_configuration(request), request.acf_dir,
                               request.objective_names, request.seeds)
