"""What a tune says first: its target, toolchain, objectives and the architectures each candidate builds."""

from __future__ import annotations

from pathlib import Path

from ciq_build.core.objectives import parse_objectives
from ciq_build.project.manifest import Manifest, ManifestToolchain
from ciq_build.tune.driver import _first_line


def _manifest(architectures: str) -> Manifest:
    where = Path("/src")
    return Manifest(
        target="kern", source_dir=where, binary_dir=where, target_source_dir=where, target_binary_dir=where,
        cuda_sources=(), object_dir=where, benchmark=None, metric_regex="", objectives=(), params=(),
        search_space=(), pin_dir=where, pin_file=where / "kern.json", timeout=60.0,
        options_file=where / "kern.nvcc-options", generator="Ninja", allow_numerics=False,
        toolchain=ManifestToolchain(Path("/usr/bin/nvcc"), "13.3.1", architectures))


def test_the_advice_to_tune_one_architecture_is_said_at_the_first_start_only() -> None:
    # A resume said it again, though the tune was started for every architecture and --architecture keeps a journal
    # of its own: taking the advice then drops what the journal holds.
    manifest, objectives = _manifest("75;80;90a"), parse_objectives(["registers"])
    first = _first_line(manifest, "CUDA 13.3", objectives)
    assert first.endswith("architectures: 75, 80, 90a (each candidate builds all 3: --architecture ARCH tunes one, "
                          "faster; the build applies such pins once each of its architectures has one)"), first
    resumed = _first_line(manifest, "CUDA 13.3", objectives, resumed=True)
    assert resumed.endswith("architectures: 75, 80, 90a (each candidate builds all 3)"), resumed
    assert "--architecture" not in _first_line(_manifest("80;90a"), "CUDA 13.3", objectives)  # two: no advice
