"""What a tune says first: its target, toolchain, objectives and the architectures each candidate builds."""

from __future__ import annotations

from pathlib import Path

from ciq_build.core.objectives import parse_objectives
from ciq_build.project.manifest import Manifest, ManifestToolchain
from ciq_build.tune.driver import _first_line
from support import bare_manifest


def _manifest(architectures: str) -> Manifest:
    manifest: Manifest = bare_manifest(Path("/src"),
                                       toolchain=ManifestToolchain(Path("/usr/bin/nvcc"), "13.3.1", architectures))
    return manifest


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
