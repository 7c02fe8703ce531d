"""`sample-acfs`: what a seed reproduces (the controls) and what it cannot (the bytes), and the pool's hashes.

Real compileiq, the real CUDA 13.3 ptxas search space and the real ptxas 13.3.
compileiq encrypts each ACF with fresh randomness, so two pools of one seed
share no sha256; what the seed fixes is what each position tells ptxas, shown
here as the same SASS for the same position. A pool is identified by its
content: pool.json lists every ACF's sha256 and a pool_sha256 over that list.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from ciq_build.errors import ConfigError
from ciq_build.measure import proc
from ciq_build.search.acf_pool import POOL_FILE, load_pool, pool_sha256
from ciq_build.state.durable import sha256_file
from support import SPILL_KERNEL, ensure_ok

pytestmark = pytest.mark.acf
pytest.importorskip("compileiq")



def _sample(out: Path, seed: int, spaces: Path) -> dict:
    env = {**os.environ, "CIQ_SEARCH_SPACES_DIR": str(spaces)}
    result = subprocess.run([sys.executable, "-m", "ciq_build", "sample-acfs", "--space", "ptxas-acf:13.3",
                             "--count", "4", "--seed", str(seed), "--out", str(out)],
                            capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    return json.loads((out / POOL_FILE).read_text())


@pytest.fixture(scope="module")
def ptx(tmp_path_factory: pytest.TempPathFactory, cuda133_bin: Path) -> Path:
    directory = tmp_path_factory.mktemp("ptx")
    (directory / "spill.cu").write_text(SPILL_KERNEL)
    ensure_ok(proc.run([cuda133_bin / "nvcc", "-arch=sm_90a", "-ptx", directory / "spill.cu", "-o",
                        directory / "spill.ptx"], 120))
    return directory / "spill.ptx"


@pytest.fixture(scope="module")
def pools(tmp_path_factory: pytest.TempPathFactory, search_spaces_dir: Path) -> dict[str, tuple[Path, dict]]:
    root = tmp_path_factory.mktemp("pools")
    runs = {"first": 3, "again": 3, "other": 4}
    with ThreadPoolExecutor(2) as executor:
        sampled = dict(zip(runs, executor.map(lambda item: _sample(root / item[0], item[1], search_spaces_dir),
                                              runs.items())))
    return {name: (root / name, pool) for name, pool in sampled.items()}


def _sass(cuda133_bin: Path, ptx: Path, pool_dir: Path, pool: dict) -> list[str]:
    """What each position of the pool makes ptxas emit, in pool order."""
    def one(entry: dict) -> str:
        cubin = pool_dir / (entry["file"] + ".cubin")
        ensure_ok(proc.run([cuda133_bin / "ptxas", "-arch=sm_90a", "--maxrregcount=30",
                            f"--apply-controls={pool_dir / entry['file']}", ptx, "-o", cubin], 120))
        return ensure_ok(proc.run([cuda133_bin / "cuobjdump", "-sass", cubin], 60)).stdout

    with ThreadPoolExecutor(2) as executor:
        return list(executor.map(one, pool["acfs"]))


@pytest.mark.slow
def test_the_pool_index_records_every_acf_hash_and_the_pool_hash(pools: dict) -> None:
    pool_dir, pool = pools["first"]
    assert pool["seed"] == 3 and pool["count"] == 4 and pool["generation_size"] == 6  # the first 4 of a generation of 6
    assert pool["engine"]["compileiq"] and len(pool["engine"]["artifact_sha256"]) == 64
    assert len(pool["acfs"]) == 4
    for entry in pool["acfs"]:
        assert entry["file"] == entry["sha256"] + ".acf"
        assert sha256_file(pool_dir / entry["file"]) == entry["sha256"]
    listing = "".join(f"{e['sha256']} {e['file']}\n" for e in pool["acfs"])
    assert pool["pool_sha256"] == hashlib.sha256(listing.encode()).hexdigest() == pool_sha256(pool["acfs"])
    assert load_pool(pool_dir)["pool_sha256"] == pool["pool_sha256"]


@pytest.mark.slow
def test_same_seed_gives_the_same_controls_in_new_bytes_and_another_seed_other_controls(
        pools: dict, ptx: Path, cuda133_bin: Path) -> None:
    (first_dir, first), (again_dir, again), (other_dir, other) = pools["first"], pools["again"], pools["other"]
    # The bytes cannot be reproduced: compileiq's encryption draws fresh randomness for every ACF ...
    assert {e["sha256"] for e in first["acfs"]}.isdisjoint(e["sha256"] for e in again["acfs"])
    assert first["pool_sha256"] != again["pool_sha256"]
    # ... of the same length at each position (the same plaintext, encrypted anew) ...
    assert [(first_dir / e["file"]).stat().st_size for e in first["acfs"]] == \
           [(again_dir / e["file"]).stat().st_size for e in again["acfs"]]
    # ... and the same controls: each position makes ptxas emit the same machine code.
    reference = _sass(cuda133_bin, ptx, first_dir, first)
    assert _sass(cuda133_bin, ptx, again_dir, again) == reference
    assert _sass(cuda133_bin, ptx, other_dir, other) != reference


@pytest.mark.slow  # its pools fixture samples three pools with compileiq: seconds of CPU
def test_an_edited_pool_index_is_refused(pools: dict, tmp_path: Path) -> None:
    source_dir, pool = pools["first"]
    edited = tmp_path / "edited"
    edited.mkdir()
    for entry in pool["acfs"]:
        (edited / entry["file"]).write_bytes((source_dir / entry["file"]).read_bytes())
    reordered = {**pool, "acfs": list(reversed(pool["acfs"]))}  # every file still matches its own sha256
    (edited / POOL_FILE).write_text(json.dumps(reordered))
    with pytest.raises(ConfigError, match="pool_sha256 differs"):
        load_pool(edited)
    # A pool written before pool_sha256 existed is still read (its files are checked one by one).
    legacy = {key: value for key, value in reordered.items() if key != "pool_sha256"}
    (edited / POOL_FILE).write_text(json.dumps(legacy))
    assert len(load_pool(edited)["acfs"]) == 4
