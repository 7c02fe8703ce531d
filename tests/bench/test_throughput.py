"""bench/throughput/run.py's knob part: the raw flow (k2) does each candidate's distinct work, and only that.

Real CMake, Ninja and nvcc 13.3 on the sample's gemm_kernels: a front end
is compiled by nvcc once; a later candidate with the same front end runs
only ptxas on that PTX, and ptxas says there what nvcc's whole compile says.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.throughput import run as tp  # the repository root is on sys.path (pyproject.toml)
from ciq_build.compiler.controls import Controls
from ciq_build.measure import proc
from support import ensure_ok

pytestmark = pytest.mark.slow



def test_the_raw_flow_compiles_each_front_end_once_and_then_runs_only_ptxas(tmp_path: Path,
                                                                           cuda133_bin: Path) -> None:
    manifest, toolchain = tp._user_tree(tmp_path, cuda133_bin / "nvcc")
    raw = tp.RawCompiler(tp._scratch_tree(manifest, toolchain, tmp_path / "scratch"), tmp_path / "raw")
    # Two front ends, each with a second candidate that differs in a ptxas option only (a third front end and
    # a third ptxas-only candidate cost ~6 s of CPU more and showed the same two rules).
    candidates = [(), ("-Xptxas=-O2",), ("-maxrregcount=64",), ("-Xptxas=-O2", "-maxrregcount=64")]
    done = [raw.evaluate(Controls(flags=flags)) for flags in candidates]
    # -maxrregcount reaches cicc (a front end of its own); -Xptxas options only ptxas.
    assert [work.kind for work in done] == ["nvcc", "ptxas", "nvcc", "ptxas"]
    assert done[3].ptx == done[2].ptx and done[1].ptx == done[0].ptx != done[2].ptx
    # What ptxas alone reported is what nvcc's whole compile of that candidate reports.
    for flags, work in zip(candidates, done):
        if work.kind == "ptxas":
            tp.write_options_file(raw.options, Controls(flags=flags), extra=tp.VERBOSE_PTXAS)
            whole = ensure_ok(proc.run(raw.argv, 600, cwd=raw.cwd))
            assert tp._raw_report(whole.stdout + whole.stderr) == work.report, flags
    assert len({work.report for work in done}) > 1  # the candidates changed the code: not a vacuous check
