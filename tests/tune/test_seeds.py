"""Seeds (`tune --seed-from`, SEEDS): pinned records, ACFs, folders of them and controls lists, evaluated first.

The reading is tested on a hand-made space in milliseconds; ACFs are real ones
sampled by compileiq from the CUDA 13.3 ptxas search space, tried on the real
ptxas 13.3 and 13.0. The tunes are real CMake/nvcc tunes of tests/projects/noop
and tests/projects/spill whose journals show the seeds evaluated first, right
after the compiler's defaults, and evaluated again from the journal on resume.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from ciq_build.compiler.controls import Controls, knob
from ciq_build.compiler.toolchain import find_toolchain
from ciq_build.core.params import parse_params
from ciq_build.core.space import Param
from ciq_build.errors import ConfigError
from ciq_build.pin.record import PinnedRecord, RecordObjective, RecordToolchain
from ciq_build.pin.write import write_record
from ciq_build.search.acf_pool import AcfPool, make_pool_source
from ciq_build.search.evolution import SearchConfiguration
from ciq_build.search.seeds import AcfSeeding, Seed, read_seeds
from ciq_build.search.select import compiler_space_seeding
from ciq_build.search.strategies import make_source
from ciq_build.search.strategy import SearchRequest
from ciq_build.state.durable import sha256_file
from support import REPO_ROOT

NOOP = REPO_ROOT / "tests" / "projects" / "noop"
SPILL = REPO_ROOT / "tests" / "projects" / "spill"


def space() -> dict[str, Param]:
    return {"knob.maxrregcount": knob("maxrregcount").param(), "knob.ptxas_opt_level": knob("ptxas_opt_level").param(),
            **parse_params(["TILE=choice(16,32,64)", "VEC=choice(1,2,4)"])}


def pinned(pin_dir: Path, target: str, flags: tuple[str, ...], defines: dict[str, str]) -> Path:
    record = PinnedRecord(target=target, controls=Controls(flags=flags, defines=tuple(defines.items())),
                          toolchain=RecordToolchain("13.3", "13.3.73", "13.3.73", ("90a",)),
                          objectives=(RecordObjective("registers", "min"),))
    write_record(pin_dir, record)
    return pin_dir / f"{target}.json"


def params_of(seeds: list[Seed]) -> list[Mapping[str, Any]]:
    return [seed.params for seed in seeds]


def test_a_controls_list_becomes_the_spaces_knob_and_param_values() -> None:
    seeds = read_seeds(["-maxrregcount=64 -Xptxas=-O2 -DTILE=32", "-D VEC=4", "-DTILE=32 -Xptxas=-O2 -maxrregcount=64"], space())
    # the third is the first again (in another order): each configuration once; a PARAMS value not given is
    # the parameter's first (a PARAMS parameter is never absent)
    assert params_of(seeds) == [{"knob.maxrregcount": 64, "knob.ptxas_opt_level": 2, "param.TILE": 32, "param.VEC": 1},
                     {"param.TILE": 16, "param.VEC": 4}]


def test_a_param_the_seed_does_not_name_keeps_the_sources_default_where_the_space_has_it(
        caplog: pytest.LogCaptureFixture) -> None:
    # An ACF or flags pinned on the defaults must be seeded on the defaults' code (TILE 32 here, the source's
    # #ifndef default), not on the first value of each PARAMS: on the GPU that turned a 0.96x ACF into 1.64x.
    with caplog.at_level(logging.WARNING, logger="ciq_build"):
        seeds = read_seeds(["-maxrregcount=64"], space(), source_defaults={"TILE": "32", "VEC": "8"})
    assert params_of(seeds) == [{"knob.maxrregcount": 64, "param.TILE": 32, "param.VEC": 1}]
    assert ("gives no value for VEC and the sources give no guarded default the search has: VEC=1 taken"
            in caplog.text)  # VEC=8 is not among the searched values: the first, said


@pytest.mark.parametrize(("given", "said"), [
    ("-DTILE", "'-DTILE' needs a value: -DTILE=VALUE"),
    ("no/such/pin.json", "--seed-from no/such/pin.json: no such file or folder"),
])
def test_a_malformed_seed_is_one_clear_error(given: str, said: str) -> None:
    with pytest.raises(ConfigError, match=said.replace("(", r"\(").replace(".", r"\.")):
        read_seeds([given], space())


@pytest.mark.parametrize(("given", "said"), [
    ("-DTILE=48 -DVEC=2", "-DTILE=48 is not among the controls this tune searches"),
    ("--use_fast_math -DVEC=2", "--use_fast_math is not among the controls this tune searches"),
])
def test_a_controls_list_that_does_not_fit_the_space_is_said_and_left_out_whole(
        given: str, said: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="ciq_build"):
        seeds = read_seeds([given, "-DVEC=4"], space())
    assert params_of(seeds) == [{"param.TILE": 16, "param.VEC": 4}]  # not VEC=2 alone: nobody named that
    assert f"--seed-from {given!r}: {said}" in caplog.text and "the seed is left out" in caplog.text


def test_a_seeds_define_outside_the_params_says_the_values_or_the_name_meant(caplog: pytest.LogCaptureFixture) -> None:
    # mini-nbody's trial: --seed-from '-DBLOCK_SIZE=96' and '-DBLOCKSIZE=128' listed 12 knob flags and "...", never
    # BLOCK_SIZE's values nor the name meant.
    with caplog.at_level(logging.WARNING, logger="ciq_build"):
        assert read_seeds(["-DTILE=48", "-DTILEE=32 -DVEC=2", "-DROWS=8"], space()) == []
    assert "PARAMS TILE takes 16, 32, 64 (not 48)" in caplog.text
    assert "TILEE is not a PARAMS name (did you mean TILE?)" in caplog.text
    assert "ROWS is not a PARAMS name (they are TILE, VEC)" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="ciq_build"):  # a target's SEEDS entry, said as such
        read_seeds(["-DTILE=48"], space(), said_as="SEEDS")
    assert caplog.text.count("SEEDS '-DTILE=48': -DTILE=48 is not among") == 1 and "--seed-from" not in caplog.text


def test_another_targets_pin_seeds_what_the_two_share_and_says_what_it_leaves_out(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    pinned(tmp_path / "pins", "other", ("-maxrregcount=96", "-Xptxas=--def-load-cache=cg"), {"TILE": "64", "ROWS": "8"})
    pinned(tmp_path / "pins", "third", (), {"VEC": "2"})
    with caplog.at_level(logging.WARNING, logger="ciq_build"):
        seeds = read_seeds([str(tmp_path / "pins")], space())  # a folder: each record in it, by name
    assert params_of(seeds) == [{"knob.maxrregcount": 96, "param.TILE": 64, "param.VEC": 1}, {"param.TILE": 16, "param.VEC": 2}]
    assert "-Xptxas=--def-load-cache=cg, -DROWS=8 are not among the controls this tune searches" in caplog.text
    with pytest.raises(ConfigError, match=r"holds no pinned record \(\*\.json\) and no ACF"):
        read_seeds([str(tmp_path)], space())


def test_a_record_copied_under_another_name_still_seeds_its_controls(tmp_path: Path) -> None:
    # A winner carried from elsewhere is often renamed (pin.json, a CI artifact): a build finds its pin by the
    # name, a seed only wants the controls, so the name must not make the seed fail silently.
    copied = tmp_path / "carried" / "pin.json"
    copied.parent.mkdir()
    pinned(tmp_path / "pins", "attention_kernels", ("-maxrregcount=96",), {"TILE": "64"}).rename(copied)
    assert params_of(read_seeds([str(copied)], space())) == [{"knob.maxrregcount": 96, "param.TILE": 64,
                                                              "param.VEC": 1}]


def request(seeds: list[Seed], tmp_path: Path | None = None) -> SearchRequest:
    config = SearchConfiguration(generations=2, pool_size=6, seed=3, problem_type=["min"], num_objectives=1)
    return SearchRequest(space(), config, ("registers",), seeds=tuple(seeds), acf_dir=tmp_path)


@pytest.mark.parametrize("strategy", ["portfolio", "ga", "random", "tpe", "nsga2", "compileiq"])
def test_the_seeds_are_the_first_proposals_of_the_first_generation(strategy: str, tmp_path: Path) -> None:
    if strategy == "compileiq":
        pytest.importorskip("compileiq")
    seeds = read_seeds(["-DTILE=64 -DVEC=1", "-maxrregcount=40"], space())
    source = make_source(strategy, request(seeds, tmp_path))
    proposals = source.ask()
    firsts = [p.params for p in proposals if p.params]  # the GA proposes the defaults ({}) before them
    assert firsts[:2] == params_of(seeds) and all(p.generation == 0 for p in proposals)
    for proposal in proposals:  # told like any candidate (compileiq keeps them out of its own engine)
        source.tell(proposal, (float(len(proposal.params)),))
    assert source.ask(), "the search goes on after its seeded first generation"


def test_a_strategy_that_takes_no_seeds_is_refused_naming_those_that_do() -> None:
    class Unseeded:
        name, spaces = "mine", frozenset({"grid"})

        def make(self, request: SearchRequest) -> Any:
            raise AssertionError("not reached")

    with pytest.raises(ConfigError, match="strategy 'mine' takes no seeds .* strategies that do: portfolio, ga, compileiq, random, "
                                          "exhaustive, tpe, nsga2"):
        make_source(Unseeded(), request([Seed({"param.TILE": 16, "param.VEC": 2})]))


@pytest.mark.slow
def test_a_tune_evaluates_its_seeds_first_from_a_record_and_a_controls_list(tmp_path: Path) -> None:
    source, build = tmp_path / "src", tmp_path / "build"
    shutil.copytree(NOOP, source)
    record = pinned(tmp_path / "elsewhere", "other_kernels", ("-maxrregcount=64",), {"X": "2", "ROWS": "8"})
    command = [sys.executable, "-m", "ciq_build", "tune", "noop_kernels", "-S", str(source), "-B", str(build),
               "--generations", "1", "--pool-size", "3", "--no-pin", "--seed-from", str(record),
               "--seed-from=-DX=0 -DUNROLL=8"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=source)
    assert result.returncode == 0, result.stderr
    # noop's SEARCH_SPACE is params: the record's flag and its -DROWS are not searched here, and said so
    assert "-maxrregcount=64, -DROWS=8 are not among the controls this tune searches" in result.stderr
    lines = (build / "ciq" / "journal" / "noop_kernels.jsonl").read_text().splitlines()
    evaluated = [r for r in map(json.loads, filter(str.strip, lines)) if r.get("kind") == "evaluation"]
    defines = [r["controls"]["defines"] for r in evaluated]
    assert defines[:2] == [{}, {"UNROLL": "2", "X": "2"}]  # the baseline, then the seeds in the order given
    assert defines[2] == {"UNROLL": "8", "X": "0"}
    again = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=source)
    assert again.returncode == 0, again.stderr
    # the resume replays the seeded search from the journal: the same candidates, none evaluated again
    assert len([r for r in map(json.loads, filter(str.strip, (build / "ciq" / "journal" / "noop_kernels.jsonl")
                                                  .read_text().splitlines())) if r.get("kind") == "evaluation"]) \
        == len(evaluated)
    assert "(0 run, " in again.stdout, again.stdout


def test_a_seed_the_constraints_refuse_is_left_out_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="ciq_build"):
        seeds = read_seeds(["-DTILE=64 -DVEC=4 -maxrregcount=64", "-DTILE=32"], space(),
                           allows=lambda p: p["param.TILE"] < 64)
    assert params_of(seeds) == [{"param.TILE": 32, "param.VEC": 1}]
    # in the words the user seeds with (mini-nbody's trial read "knob.maxrregcount=32 param.BLOCK_SIZE=64")
    assert ("--seed-from '-DTILE=64 -DVEC=4 -maxrregcount=64': -maxrregcount=64 -DTILE=64 -DVEC=4 is refused by the "
            "target's CONSTRAINTS" in caplog.text)


# ---------------------------------------------------------------- ACFs


@pytest.fixture(scope="module")
def acf_folder(tmp_path_factory: pytest.TempPathFactory, search_spaces_dir: Path) -> Path:
    """Three real ptxas ACFs sampled from the CUDA 13.3 space (a pool), and a file that is no ACF."""
    pytest.importorskip("compileiq")
    folder = tmp_path_factory.mktemp("known") / "acfs"
    env = {**os.environ, "CIQ_SEARCH_SPACES_DIR": str(search_spaces_dir)}
    sampled = subprocess.run([sys.executable, "-m", "ciq_build", "sample-acfs", "--space", "ptxas-acf:13.3",
                              "--count", "3", "--seed", "5", "--out", str(folder)],
                             capture_output=True, text=True, env=env, timeout=600)
    assert sampled.returncode == 0, sampled.stderr
    (folder / "broken.acf").write_bytes(b"not an advanced controls file\n" * 4)
    return folder


def sampled_acfs(folder: Path) -> list[str]:
    """The pool's ACFs' sha256s, in the folder's (file name) order: the order seeds are read in."""
    return [sha256_file(path) for path in sorted(folder.glob("*.acf")) if path.name != "broken.acf"]


def test_a_folder_of_acfs_seeds_each_acf_this_toolkit_applies_and_says_which_it_refuses(
        acf_folder: Path, cuda133_bin: Path, system_nvcc: Path, caplog: pytest.LogCaptureFixture) -> None:
    seeding = {name: compiler_space_seeding("ptxas-acf:13.3", find_toolchain(nvcc), "90a")
               for name, nvcc in (("13.3", cuda133_bin / "nvcc"), ("13.0", system_nvcc))}
    with caplog.at_level(logging.WARNING, logger="ciq_build"):
        seeds = read_seeds([str(acf_folder)], {}, acfs=seeding["13.3"])
    assert [seed.acf.sha256 for seed in seeds if seed.acf] == sampled_acfs(acf_folder) and len(seeds) == 3
    assert "broken.acf cannot be seeded: the ptxas of CUDA 13.3" in caplog.text and "left out" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="ciq_build"):  # 13.3 ACFs on another toolkit: never fatal
        assert read_seeds([str(acf_folder)], {}, acfs=seeding["13.0"]) == []
    assert caplog.text.count("not in expected format") == 4, caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="ciq_build"):  # a tune that searches no ACFs
        assert read_seeds([str(acf_folder)], space()) == []
    assert "this tune searches no ACFs" in caplog.text


def test_a_seed_folders_fifo_device_outside_link_and_unreadable_record_are_each_said_in_one_line_and_left_out(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    folder, outside = tmp_path / "seeds", tmp_path / "outside"
    folder.mkdir()
    outside.mkdir()
    (folder / "good.acf").write_bytes(b"an ACF")
    os.mkfifo(folder / "fifo.acf")  # hashed unchecked, it hung the tune
    (folder / "zero.acf").symlink_to("/dev/zero")
    (outside / "secret.acf").write_bytes(b"outside")
    (folder / "outside.acf").symlink_to(outside / "secret.acf")
    (folder / "empty.acf").write_bytes(b"")
    (folder / "newer.json").write_text('{"schema": 99, "target": "newer"}')  # a newer ciq_build's record
    pinned(folder, "kern", ("-Xptxas=-O2",), {})
    seeding = AcfSeeding("ptxas", lambda refs: {})
    found: list[list[Seed]] = []
    with caplog.at_level(logging.WARNING, logger="ciq_build"):
        reader = threading.Thread(target=lambda: found.append(read_seeds([str(folder)], space(), acfs=seeding)),
                                  daemon=True)
        reader.start()
        reader.join(60)
    assert found, "reading the seeds hung"
    (seeds,) = found
    assert [seed.acf.path.name if seed.acf else dict(seed.params) for seed in seeds] == [
        {"knob.ptxas_opt_level": 2, "param.TILE": 16, "param.VEC": 1}, "good.acf"]
    said = [record.getMessage() for record in caplog.records]
    for name in ("fifo.acf", "zero.acf", "outside.acf", "empty.acf", "newer.json"):
        lines = [line for line in said if name in line]
        assert len(lines) == 1 and "left out" in lines[0] and "\n" not in lines[0], (name, said)
    assert "has schema 99" in " ".join(said)


def test_an_acf_pools_own_acfs_seed_its_choice_and_others_are_said_to_be_outside_it(
        acf_folder: Path, tmp_path: Path, cuda133_bin: Path, caplog: pytest.LogCaptureFixture) -> None:
    pool = AcfPool(acf_folder, find_toolchain(cuda133_bin / "nvcc"))
    stranger = tmp_path / "stranger.acf"
    stranger.write_bytes((acf_folder / sorted(pool.refs)[0]).read_bytes() + b"\n")
    with caplog.at_level(logging.WARNING, logger="ciq_build"):
        seeds = read_seeds([str(acf_folder), str(stranger)], space(), acfs=pool.seeding())
    assert "stranger.acf cannot be seeded: not one of the ACF pool" in caplog.text
    source = make_pool_source("ga", request(seeds), pool)
    proposed = [p.acf.sha256 for p in source.ask() if p.acf is not None]
    assert proposed[:3] == sampled_acfs(acf_folder)  # the seeds first, as the pool's choice


@pytest.mark.slow
def test_a_compileiq_tune_evaluates_the_seeds_acfs_first_from_SEEDS_and_again_from_its_journal(
        acf_folder: Path, tmp_path: Path, cuda133_bin: Path, search_spaces_dir: Path) -> None:
    source, build = tmp_path / "spill", tmp_path / "build"
    shutil.copytree(SPILL, source)
    shutil.copytree(acf_folder, source / "known")  # SEEDS known: relative to the CMakeLists.txt
    env = {**os.environ, "CIQ_SEARCH_SPACES_DIR": str(search_spaces_dir)}
    command = [sys.executable, "-m", "ciq_build", "tune", "spill_kernels", "-S", str(source), "-B", str(build),
               "--generations", "1", "--pool-size", "6", "--seed", "1", "--no-pin",
               f"--cmake-arg=-DCMAKE_CUDA_COMPILER={cuda133_bin / 'nvcc'}", "--cmake-arg=-DSPILL_SEEDS=known"]
    first = subprocess.run(command, capture_output=True, text=True, timeout=900, cwd=source, env=env)
    assert first.returncode == 0, first.stderr
    assert "broken.acf cannot be seeded: the ptxas of CUDA 13.3" in first.stderr
    manifest = json.loads((build / "ciq" / "targets" / "spill_kernels.json").read_text())
    assert manifest["seeds"] == [str(source / "known")]
    journal = build / "ciq" / "journal" / "spill_kernels.jsonl"

    def evaluated() -> list[dict[str, Any]]:
        return [r for r in map(json.loads, filter(str.strip, journal.read_text().splitlines()))
                if r.get("kind") == "evaluation"]

    acfs = [(r["controls"].get("acf") or {}).get("sha256") for r in evaluated()]
    assert acfs[:4] == [None, *sampled_acfs(acf_folder)]  # the defaults, then the seeds, then compileiq's
    assert len(acfs) == 4 + 6
    again = subprocess.run(command, capture_output=True, text=True, timeout=900, cwd=source, env=env)
    assert again.returncode == 0, again.stderr
    assert len(evaluated()) == len(acfs)  # the resume replays every evaluation from the journal: none again
