"""What every candidate source must do for the driver (as Optuna's shared sampler tests do for its samplers).

Each test runs against every source: ciq_build's genetic search (`GeneticSource`),
the ACF pool (`AcfPoolSource`, over a pool folder written here) and NVIDIA's
compileiq engine (`CompileIqEngine`, real, with the real search spaces; skipped
where compileiq or the spaces are absent). A source proposes candidates inside
its space, repeats itself exactly for the same seed and the same scores told,
takes failures and several objectives, and ends within its budget.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ciq_build.compiler.toolchain import find_toolchain, major_minor
from ciq_build.core.params import parse_params
from ciq_build.core.space import as_space
from ciq_build.errors import ConfigError, MissingExtraError, SearchError
from ciq_build.search.acf_pool import POOL_FILE, POOL_PARAM, POOL_SCHEMA, AcfPoolSource, pool_sha256
from ciq_build.search.base import CandidateSource, Proposal
from ciq_build.search.ga import SearchConfiguration
from ciq_build.search.genetic import GeneticSource

PARAMS = ["TILE=8,16,32,64", "UNROLL=1,2,4,8"]


@dataclass
class Kind:
    """How to make one kind of source, and what "in its space" means for it."""

    name: str
    make: Callable[[Path, SearchConfiguration, list[str]], CandidateSource]
    in_space: Callable[[Proposal], bool]
    identity: Callable[[Proposal], Any]  # what the same seed must reproduce (compileiq re-encrypts ACF bytes)


def _params_in_space(params: dict[str, Any]) -> bool:
    space = as_space(parse_params(PARAMS))
    try:
        space.to_genome(params)
    except ConfigError:
        return False
    return True


def _genetic(tmp: Path, config: SearchConfiguration, names: list[str]) -> CandidateSource:
    return GeneticSource(parse_params(PARAMS), config, names)


def _pool_dir(tmp: Path, compiler: str, cuda: str) -> Path:
    """A pool folder as `sample-acfs` writes it; the ACF bytes are opaque to the source (no compiler reads them)."""
    directory = tmp / "pool"
    if not (directory / POOL_FILE).exists():
        directory.mkdir(parents=True, exist_ok=True)
        entries = []
        for i in range(4):
            data = f"acf {i}\n".encode()
            sha = hashlib.sha256(data).hexdigest()
            (directory / f"{sha}.acf").write_bytes(data)
            entries.append({"file": f"{sha}.acf", "sha256": sha})
        pool = {"schema": POOL_SCHEMA, "compiler": compiler, "cuda": cuda, "space": {"name": "test"}, "seed": 0,
                "count": len(entries), "generation_size": 6, "engine": {}, "pool_sha256": pool_sha256(entries),
                "acfs": entries}
        (directory / POOL_FILE).write_text(json.dumps(pool))
    return directory


def _pool(tmp: Path, config: SearchConfiguration, names: list[str]) -> CandidateSource:
    toolchain = find_toolchain()
    directory = _pool_dir(tmp, "ptxas", major_minor(toolchain.ptxas_version))
    return AcfPoolSource(directory, parse_params(PARAMS), config, names, toolchain)


def _pool_in_space(proposal: Proposal) -> bool:
    acf_ok = proposal.acf is None or (proposal.acf.path.is_file() and proposal.acf.path.parent.name == "pool"
                                      and proposal.extra.get(POOL_PARAM) == proposal.acf.path.name)
    return acf_ok and _params_in_space(proposal.params)


def _spaces_dir() -> Path:
    """Where the NVIDIA search spaces are (as the search_spaces_dir fixture looks)."""
    value = os.environ.get("CIQ_SEARCH_SPACES_DIR")
    return Path(value) if value else Path(__file__).resolve().parents[2] / "shared" / "search-spaces"


def _compileiq_available() -> str | None:
    """Why the compileiq source cannot be tested here, or None."""
    if not (_spaces_dir() / "ptxas13.3.bin").is_file():
        return f"needs the CUDA 13.3 search spaces (set CIQ_SEARCH_SPACES_DIR; looked in {_spaces_dir()})"
    try:
        from ciq_build.search.compileiq import load_compileiq

        load_compileiq()
    except (ImportError, MissingExtraError):
        return 'needs compileiq: pip install "ciq-build[acf]"'
    return None


def _compileiq(tmp: Path, config: SearchConfiguration, names: list[str]) -> CandidateSource:
    from ciq_build.search.compileiq import CompileIqEngine, resolve_space

    identity = resolve_space("ptxas-acf:13.3", spaces_dir=_spaces_dir())
    return CompileIqEngine(identity, parse_params(PARAMS), config, tmp / "acf", names)


def _compileiq_in_space(proposal: Proposal) -> bool:
    return proposal.acf is not None and proposal.acf.path.is_file() and _params_in_space(proposal.params)


KINDS = [
    pytest.param(Kind("genetic", _genetic, lambda p: p.acf is None and _params_in_space(p.params),
                      lambda p: p.params), id="genetic"),
    pytest.param(Kind("acf-pool", _pool, _pool_in_space, lambda p: (p.params, p.acf.sha256 if p.acf else None)),
                 id="acf-pool"),
    pytest.param(Kind("compileiq", _compileiq, _compileiq_in_space, lambda p: p.params), id="compileiq",
                 marks=[pytest.mark.acf, pytest.mark.skipif(_compileiq_available() is not None,
                                                            reason=str(_compileiq_available()))]),
]


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> Kind:
    value = request.param
    assert isinstance(value, Kind)
    return value


def _config(n_objectives: int = 1, *, seed: int = 7, generations: int = 3, pool_size: int = 6,
            max_evaluations: int | None = None, directions: tuple[str, ...] = ("min",)) -> SearchConfiguration:
    return SearchConfiguration(generations=generations, pool_size=pool_size, seed=seed,
                               problem_type=list(directions[:n_objectives]), num_objectives=n_objectives,
                               max_evaluations=max_evaluations)


def score(proposal: Proposal) -> tuple[float, ...]:
    """A deterministic stand-in for a measurement: depends only on what the candidate is."""
    tile = int(proposal.params.get("param.TILE", 16))
    unroll = int(proposal.params.get("param.UNROLL", 1))
    return (abs(tile - 32) + abs(unroll - 4) + (0.5 if proposal.acf is None else 0.0),)


def drive(source: CandidateSource, tell: Callable[[Proposal], tuple[tuple[float, ...] | None, str | None]],
          rounds: int = 50) -> Iterator[list[Proposal]]:
    """Ask and tell until the source says it is over (bounded: a source that never ends fails)."""
    for _ in range(rounds):
        batch = source.ask()
        if not batch:
            return
        for proposal in batch:
            source.tell(proposal, *tell(proposal))
        yield batch
    pytest.fail(f"the source still proposed candidates after {rounds} batches")


def _scored(proposal: Proposal) -> tuple[tuple[float, ...] | None, str | None]:
    return score(proposal), None


def test_proposals_stay_in_the_space_with_unique_ids(kind: Kind, tmp_path: Path) -> None:
    proposals = [p for batch in drive(kind.make(tmp_path, _config(), ["time"]), _scored) for p in batch]
    assert proposals
    assert all(kind.in_space(p) for p in proposals), [p for p in proposals if not kind.in_space(p)][:3]
    assert len({p.id for p in proposals}) == len(proposals)
    generations = [p.generation for p in proposals]
    assert generations == sorted(generations)


def test_the_same_seed_and_the_same_tells_give_the_same_proposals(kind: Kind, tmp_path: Path) -> None:
    def run(folder: str, seed: int) -> list[Any]:
        source = kind.make(tmp_path / folder, _config(seed=seed), ["time"])
        return [kind.identity(p) for batch in drive(source, _scored) for p in batch]

    first = run("a", 7)
    assert run("b", 7) == first
    assert run("c", 8) != first


def test_failed_candidates_are_accepted_and_the_search_goes_on(kind: Kind, tmp_path: Path) -> None:
    def half_fail(proposal: Proposal) -> tuple[tuple[float, ...] | None, str | None]:
        return (None, "compile_failed: error") if proposal.id % 2 else (score(proposal), None)

    batches = list(drive(kind.make(tmp_path, _config(), ["time"]), half_fail))
    assert len(batches) >= 2  # failures did not end the search


def test_a_first_generation_that_all_fails_stops_the_search_saying_why(kind: Kind, tmp_path: Path) -> None:
    with pytest.raises(SearchError, match="bench_exit: crashed"):
        list(drive(kind.make(tmp_path, _config(), ["time"]), lambda p: (None, "bench_exit: crashed")))


def test_the_budget_bounds_the_proposals_and_an_ended_search_stays_ended(kind: Kind, tmp_path: Path) -> None:
    capped = kind.make(tmp_path / "capped", _config(max_evaluations=7), ["time"])
    assert sum(len(batch) for batch in drive(capped, _scored)) <= 7
    assert capped.ask() == []
    bounded = kind.make(tmp_path / "bounded", _config(generations=2, pool_size=6), ["time"])
    assert 0 < sum(len(batch) for batch in drive(bounded, _scored)) <= 2 * 6
    assert bounded.ask() == []


def test_several_objectives_in_both_directions_are_accepted(kind: Kind, tmp_path: Path) -> None:
    # compileiq keeps fewer survivors per generation with two objectives: a pool of 8 leaves it enough.
    config = _config(2, pool_size=8, directions=("min", "max"))
    source = kind.make(tmp_path, config, ["time", "max:metric:gflops"])

    def two(proposal: Proposal) -> tuple[tuple[float, ...] | None, str | None]:
        return (score(proposal)[0], float(proposal.params.get("param.UNROLL", 1))), None

    proposals = [p for batch in drive(source, two) for p in batch]
    assert proposals and all(kind.in_space(p) for p in proposals)


def test_describe_is_json_provenance_naming_the_engine_and_seed(kind: Kind, tmp_path: Path) -> None:
    described = kind.make(tmp_path, _config(seed=11), ["time"]).describe()
    assert json.loads(json.dumps(described)) == described
    assert isinstance(described["engine"], str) and described["seed"] == 11
