"""What every registered strategy must do for the driver, on every kind of space it says it searches.

The table is built from the registry (ciq_build.search.strategies), as Optuna's
shared sampler tests run over every sampler: each strategy over plain params
and over an ACF pool (a pool folder written here) when it searches grids, and
over the real compiler search space (compileiq, real; skipped where compileiq
or the spaces are absent) when it searches those. A strategy's source proposes
candidates inside its space, repeats itself exactly for the same seed and the
same scores told (so a resume that replays its journal carries on where it
stopped), does not depend on the order of tells within a batch, takes failures
and several objectives, and ends within its budget.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from ciq_build.compiler.controls import Controls
from ciq_build.compiler.toolchain import find_toolchain, major_minor
from ciq_build.core.objectives import parse_objectives
from ciq_build.core.params import parse_params
from ciq_build.core.settings import SearchSettings
from ciq_build.core.space import as_space
from ciq_build.errors import ConfigError, MissingExtraError, SearchError
from ciq_build.search.acf_pool import POOL_FILE, POOL_PARAM, POOL_SCHEMA, AcfPool, make_pool_source, pool_sha256
from ciq_build.search.base import CandidateSource, Proposal
from ciq_build.search.evolution import SearchConfiguration
from ciq_build.search.on_top import on_top_of
from ciq_build.search.select import make_candidate_source
from ciq_build.search.strategies import make_source, resolve_strategy, strategy_names
from ciq_build.search.strategy import COMPILER_ACF, GRID, SearchRequest
from ciq_build.tune.loop import planned_budget, space_line
from support import REPO_ROOT, bare_manifest

PARAMS = ["TILE=8,16,32,64", "UNROLL=1,2,4,8"]


def _params_in_space(params: dict[str, Any]) -> bool:
    space = as_space(parse_params(PARAMS))
    try:
        space.to_genome(params)
    except ConfigError:
        return False
    return True


def _request(config: SearchConfiguration, names: list[str], **more: Any) -> SearchRequest:
    return SearchRequest(parse_params(PARAMS), config, tuple(names), **more)


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


def _pool_in_space(proposal: Proposal) -> bool:
    acf_ok = proposal.acf is None or (proposal.acf.path.is_file() and proposal.acf.path.parent.name == "pool"
                                      and proposal.extra.get(POOL_PARAM) == proposal.acf.path.name)
    return acf_ok and _params_in_space(proposal.params)


def _spaces_dir() -> Path:
    """Where the NVIDIA search spaces are (as the search_spaces_dir fixture looks)."""
    value = os.environ.get("CIQ_SEARCH_SPACES_DIR")
    return Path(value) if value else REPO_ROOT.parent / "shared" / "search-spaces"


def _compileiq_available() -> str | None:
    """Why the compileiq source cannot be tested here, or None."""
    if not (_spaces_dir() / "ptxas13.3.bin").is_file():
        return f"needs the CUDA 13.3 search spaces (set CIQ_SEARCH_SPACES_DIR; looked in {_spaces_dir()})"
    try:
        from ciq_build.search.compileiq_spaces import load_compileiq

        load_compileiq()
    except (ImportError, MissingExtraError):
        return 'needs compileiq: pip install "ciq-build[acf]"'
    return None


# Where compileiq is absent, its cases skip (saying why) instead of failing.
# slow: compileiq's engine takes seconds a search, so its contract runs in the whole suite, not the fast subset.
COMPILEIQ_MARKS = (pytest.mark.acf, pytest.mark.slow, pytest.mark.skipif(_compileiq_available() is not None,
                                                                          reason=str(_compileiq_available())))


@dataclass
class Space:
    """One kind of space a strategy may search: how to ask a strategy for it, and what "in it" means."""

    name: str
    make: Callable[[str, Path, SearchConfiguration, list[str]], CandidateSource]
    in_space: Callable[[Proposal], bool]
    identity: Callable[[Proposal], Any]  # what the same seed must reproduce (compileiq re-encrypts ACF bytes)
    marks: tuple[Any, ...] = ()


def _params(strategy: str, tmp: Path, config: SearchConfiguration, names: list[str]) -> CandidateSource:
    return make_source(strategy, _request(config, names, acf_dir=tmp / "acf"))


def _pool(strategy: str, tmp: Path, config: SearchConfiguration, names: list[str]) -> CandidateSource:
    toolchain = find_toolchain()
    pool = AcfPool(_pool_dir(tmp, "ptxas", major_minor(toolchain.ptxas_version)), toolchain)
    return make_pool_source(strategy, _request(config, names, toolchain=toolchain, acf_dir=tmp / "acf"), pool)


def _compiler_acf(strategy: str, tmp: Path, config: SearchConfiguration, names: list[str]) -> CandidateSource:
    return make_source(strategy, _request(config, names, acf_space=str(_spaces_dir() / "ptxas13.3.bin"),
                                          acf_dir=tmp / "acf"))


SPACES = {
    GRID: [
        Space("params", _params, lambda p: p.acf is None and _params_in_space(p.params), lambda p: p.params),
        Space("acf-pool", _pool, _pool_in_space, lambda p: (p.params, p.acf.sha256 if p.acf else None)),
    ],
    COMPILER_ACF: [
        Space("compiler-acf", _compiler_acf,
              lambda p: p.acf is not None and p.acf.path.is_file() and _params_in_space(p.params),
              lambda p: p.params, marks=COMPILEIQ_MARKS),
    ],
}


@dataclass
class Kind:
    """One registered strategy over one kind of space it says it searches."""

    strategy: str
    space: Space

    def make(self, tmp: Path, config: SearchConfiguration, names: list[str]) -> CandidateSource:
        return self.space.make(self.strategy, tmp, config, names)

    def in_space(self, proposal: Proposal) -> bool:
        return self.space.in_space(proposal)

    def identity(self, proposal: Proposal) -> Any:
        return self.space.identity(proposal)


KINDS = [
    pytest.param(Kind(name, space), id=f"{name}-{space.name}",
                 marks=COMPILEIQ_MARKS if name == "compileiq" else space.marks)
    for name in strategy_names()
    for kind in sorted(resolve_strategy(name).spaces)
    for space in SPACES[kind]
]


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> Kind:
    value = request.param
    assert isinstance(value, Kind)
    return value


def test_every_registered_strategy_searches_some_space_and_is_tested_on_it() -> None:
    assert {p.values[0].strategy for p in KINDS} == set(strategy_names())  # type: ignore[union-attr]


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
          rounds: int = 50, plan: bool = True, order: Callable[[list[Proposal]], list[Proposal]] = list
          ) -> Iterator[list[Proposal]]:
    """Ask and tell until the source says it is over, or, for one the search loop ends (random search, Optuna's:
    `ended_by_the_loop`), until the loop's plan is proposed, as the loop does (`plan=False`: to the source's own
    end); bounded: a source that never ends fails."""
    left = (planned_budget(source.describe(), SearchSettings())[0]
            if plan and getattr(source, "ended_by_the_loop", False) else None)
    for _ in range(rounds):
        batch = source.ask()[:left]
        if not batch:
            return
        if left is not None:
            left -= len(batch)
        for proposal in order(batch):
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


def test_a_resume_that_replays_the_journal_carries_on_as_the_uninterrupted_search(kind: Kind, tmp_path: Path) -> None:
    # The driver resumes by telling a fresh source (same seed, same folder) the journaled scores of
    # what it proposes again, then goes on measuring: the whole run must be the uninterrupted one.
    whole = [[kind.identity(p) for p in batch] for batch in drive(kind.make(tmp_path / "whole", _config(), ["time"]),
                                                                   _scored)]
    assert len(whole) >= 2
    journal: dict[str, tuple[float, ...]] = {}

    def controls(proposal: Proposal) -> str:
        """What the driver's cache keys a measurement by: the parameters and the very ACF file."""
        return repr((proposal.params, proposal.acf.sha256 if proposal.acf else None))

    def measured(proposal: Proposal) -> tuple[tuple[float, ...] | None, str | None]:
        journal[controls(proposal)] = score(proposal)
        return score(proposal), None

    interrupted = drive(kind.make(tmp_path / "run", _config(), ["time"]), measured)
    for _ in range(len(whole) // 2):
        next(interrupted)
    replayed: list[bool] = []

    def replay(proposal: Proposal) -> tuple[tuple[float, ...] | None, str | None]:
        cached = journal.get(controls(proposal))
        replayed.append(cached is not None)
        return cached if cached is not None else score(proposal), None

    resumed = [[kind.identity(p) for p in batch] for batch in drive(kind.make(tmp_path / "run", _config(), ["time"]),
                                                                     replay)]
    assert resumed == whole
    assert replayed[:len(journal)] == [True] * len(journal) and not any(replayed[len(journal):])


def test_the_order_of_tells_within_a_batch_does_not_change_what_comes_next(kind: Kind, tmp_path: Path) -> None:
    def run(folder: str, order: Callable[[list[Proposal]], list[Proposal]]) -> list[Any]:
        source = kind.make(tmp_path / folder, _config(), ["time"])
        return [kind.identity(p) for batch in drive(source, _scored, order=order) for p in batch]

    assert run("reversed", lambda batch: batch[::-1]) == run("in-order", list)


def test_failed_candidates_are_accepted_and_the_search_goes_on(kind: Kind, tmp_path: Path) -> None:
    def half_fail(proposal: Proposal) -> tuple[tuple[float, ...] | None, str | None]:
        return (None, "compile_failed: error") if proposal.id % 2 else (score(proposal), None)

    batches = list(drive(kind.make(tmp_path, _config(), ["time"]), half_fail))
    assert len(batches) >= 2  # failures did not end the search


def test_a_first_generation_that_all_fails_stops_the_search_saying_why(kind: Kind, tmp_path: Path) -> None:
    with pytest.raises(SearchError, match="bench_exit: crashed"):
        list(drive(kind.make(tmp_path, _config(), ["time"]), lambda p: (None, "bench_exit: crashed")))


def test_the_budget_bounds_the_proposals_and_an_ended_search_stays_ended(kind: Kind, tmp_path: Path) -> None:
    endless = kind.make(tmp_path / "endless", _config(generations=1, pool_size=6), ["time"])
    if getattr(endless, "ended_by_the_loop", False):  # random search, Optuna's: the loop's plan ends them
        assert kind.strategy in ("random", "tpe", "nsga2")  # (tests/tune/test_loop.py), not their own
        proposed = 0
        for batch in drive(endless, _scored, plan=False):  # a batch past what it would have stopped at is enough
            proposed += len(batch)
            if proposed > 1 * 6:
                return
        pytest.fail(f"{kind.strategy} ended by itself after {proposed} proposals")
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


def test_a_wrapper_refuses_a_tell_of_a_candidate_it_never_handed_out_or_told_already(tmp_path: Path) -> None:
    # A pool's source and a stage's (search.base.WrappedSource): passed on, a second tell would reach the inner
    # search with the changed proposal, and an unknown id would fail there as a bare KeyError.
    wrappers = [_pool("ga", tmp_path, _config(), ["time"]),
                on_top_of(_params("ga", tmp_path, _config(), ["time"]), Controls(flags=("-maxrregcount=64",)))]
    for source in wrappers:
        first = source.ask()[0]
        with pytest.raises(SearchError, match="^candidate 999 was not asked, or was told already$"):
            source.tell(replace(first, id=999), score(first))
        source.tell(first, score(first))
        with pytest.raises(SearchError, match=f"^candidate {first.id} was not asked, or was told already$"):
            source.tell(first, score(first))


# -- choosing a strategy ------------------------------------------------------------------------


def test_a_strategy_that_cannot_search_a_space_is_refused_naming_those_that_can(tmp_path: Path) -> None:
    request = _request(_config(), ["time"], acf_space="ptxas-acf:13.3", acf_dir=tmp_path)
    able = [name for name in strategy_names() if COMPILER_ACF in resolve_strategy(name).spaces]
    with pytest.raises(ConfigError, match=f"strategy 'ga' cannot search the compiler search space ptxas-acf:13.3; "
                                          f"strategies that can: {', '.join(able)}$"):
        make_source("ga", request)


def test_an_unknown_strategy_is_refused_naming_the_registered_ones() -> None:
    with pytest.raises(ConfigError, match=f"unknown strategy 'annealing': use one of {', '.join(strategy_names())}"):
        make_source("annealing", _request(_config(), ["time"]))
    with pytest.raises(ConfigError, match="a strategy is a registered name"):
        make_source(42, _request(_config(), ["time"]))


def test_a_users_own_strategy_object_is_used_as_given_over_its_spaces(tmp_path: Path) -> None:
    class EveryOther:
        """A user's strategy (Optuna's injected sampler): the GA's source, every other proposal dropped."""

        name = "every-other"
        spaces = frozenset({GRID})

        def make(self, request: SearchRequest) -> CandidateSource:
            inner = make_source("ga", request)
            user = self

            class Source:
                def ask(self) -> list[Proposal]:
                    batch = inner.ask()
                    for dropped in batch[1::2]:
                        inner.tell(dropped, None, "dropped by the user's strategy")
                    return batch[::2]

                def tell(self, proposal: Proposal, scores: tuple[float, ...] | None, reason: str | None = None) -> None:
                    inner.tell(proposal, scores, reason)

                def describe(self) -> dict[str, Any]:
                    return {**inner.describe(), "engine": user.name}

            return Source()

    source = make_source(EveryOther(), _request(_config(), ["time"]))
    ga = [p.params for batch in drive(make_source("ga", _request(_config(), ["time"])), _scored) for p in batch]
    ours = [p.params for batch in drive(source, _scored) for p in batch]
    assert ours and ours[0] == ga[0] and len(ours) < len(ga)
    assert source.describe()["engine"] == "every-other"
    with pytest.raises(ConfigError, match="strategy 'every-other' cannot search the compiler search space"):
        make_source(EveryOther(), _request(_config(), ["time"], acf_space="ptxas-acf:13.3", acf_dir=tmp_path))


def test_a_tunes_strategy_setting_picks_the_source_and_the_space_is_checked_against_it(tmp_path: Path) -> None:
    manifest = bare_manifest(tmp_path, params=tuple(PARAMS))
    objectives = parse_objectives(["spill_bytes"])

    def source(**settings: Any) -> CandidateSource:
        return make_candidate_source(SearchSettings(**settings), manifest, find_toolchain(), objectives, tmp_path)

    # The space's default: the portfolio, unless the grid fits its budget (16 configurations, 4 x 8 = 32
    # evaluations): then each configuration once, in a listing that says it stands in for the portfolio.
    listed = source(controls=("params",))
    assert listed.describe()["engine"] == "ciq_build.exhaustive"
    assert listed.describe()["instead_of"] == {"strategy": "portfolio", "configurations": 16}
    proposed = [p.params for batch in drive(listed, _scored) for p in batch]
    assert len(proposed) == 16 and {tuple(sorted(p.items())) for p in proposed} == {
        (("param.TILE", t), ("param.UNROLL", u)) for t in (8, 16, 32, 64) for u in (1, 2, 4, 8)}
    assert source(controls=("params",), generations=1).describe()["engine"] == "ciq_build.portfolio"  # 8 < 16
    assert source(controls=("params",), strategy="ga").describe()["engine"] == "ciq_build.ga"  # named: as named
    said = space_line("16 PARAMS combinations", 16, 32, None, listed.describe())
    assert said == ("search space: 16 PARAMS combinations; budget 32 evaluations: the space fits the budget, so "
                    "each of its 16 configurations is evaluated once (exhaustive) instead of sampled by the portfolio "
                    "(--strategy portfolio samples it anyway)")
    grid = [name for name in strategy_names() if GRID in resolve_strategy(name).spaces
            and (name != "compileiq" or _compileiq_available() is None)]
    engines = {source(controls=("params",), strategy=name).describe()["engine"] for name in grid}
    assert len(engines) == len(grid) > 1  # each strategy's own source
    with pytest.raises(ConfigError, match="strategy 'ga' cannot search the compiler search space ptxas-acf:13.3"):
        source(controls=("params", "ptxas-acf:13.3"), strategy="ga")
