"""The peer kernels' upstream sources stay unmodified copies (bench/peers/)."""
import hashlib
import re
from pathlib import Path

import pytest

from ciq_build.measure.proc import run
from ciq_build.project.manifest import load_manifest
from support import REPO_ROOT, build_tool, ensure_ok, said

PEERS = REPO_ROOT / "bench" / "peers" / "cuda-samples"
# Every peer: a folder under bench/peers/ with upstream/ copies listed in UPSTREAM.sha256.
ALL_PEERS = sorted(p.parent for p in (REPO_ROOT / "bench" / "peers").glob("*/UPSTREAM.sha256"))


def _manifest(peer: Path) -> list[tuple[str, str, str]]:
    rows = []
    for line in (peer / "UPSTREAM.sha256").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            digest, local, upstream = line.split()
            rows.append((digest, local, upstream))
    return rows


def test_the_peers_are_found():
    assert {p.name for p in ALL_PEERS} >= {"cuda-samples", "sgemm", "flash-attention-minimal", "cuda_hgemm", "flashinfer"}


@pytest.mark.parametrize("peer", ALL_PEERS, ids=lambda p: p.name)
def test_every_upstream_file_is_listed(peer: Path):
    listed = {local for _, local, _ in _manifest(peer)}
    present = {str(p.relative_to(peer / "upstream")) for p in (peer / "upstream").rglob("*") if p.is_file()}
    assert present == listed


@pytest.mark.parametrize("peer,digest,local,upstream", [(p, *row) for p in ALL_PEERS for row in _manifest(p)],
                         ids=lambda v: v.name if isinstance(v, Path) else (v if "/" in str(v) else None))
def test_upstream_copy_unmodified(peer: Path, digest, local, upstream):
    assert hashlib.sha256((peer / "upstream" / local).read_bytes()).hexdigest() == digest, (
        f"{peer.name}: {local} differs from upstream's {upstream} (UPSTREAM.sha256); keep upstream copies unmodified"
    )


def test_flash_attention_kernel_is_upstreams_byte_for_byte():
    """flash_kernel.cuh is upstream flash.cu's kernel without its PyTorch binding, nothing else changed."""
    peer = REPO_ROOT / "bench" / "peers" / "flash-attention-minimal"
    upstream = (peer / "upstream" / "flash.cu").read_bytes()
    kernel = (peer / "flash_kernel.cuh").read_bytes()
    assert kernel.startswith(b"__global__") and kernel in upstream
    assert upstream[upstream.index(kernel) + len(kernel):].startswith(b"torch::Tensor forward(")


@pytest.mark.slow
def test_fdtd3d_peer_builds_and_its_premise_holds(tmp_path: Path, cuda133_bin: Path) -> None:
    """FDTD3d_kernels configures as a tuned target with its PARAM, builds, and its benchmark says no GPU here.

    The premise of the prediction docs/results/LOG.md made for it (measured since: docs/RESULTS.md): at the
    defaults the kernel needs more than 64 registers, so a 512-thread block (upstream's default) leaves room for only one per SM.
    """
    build = tmp_path / "build"
    configured = ensure_ok(run([
        build_tool("cmake"), "-S", PEERS, "-B", build, "-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={build_tool('ninja')}",
        f"-DCMAKE_CUDA_COMPILER={cuda133_bin / 'nvcc'}", f"-Dciq_build_DIR={PEERS.parent.parent.parent / 'cmake'}",
    ], timeout=300))
    assert "ciq_build: FDTD3d_kernels: no pinned controls" in said(configured)
    manifest = load_manifest(build, "FDTD3d_kernels")
    assert list(manifest.params) == ["FDTD3D_BLOCK_SIZE=choice(128,256,384,512)"]
    assert manifest.threads_per_block == ("FDTD3D_BLOCK_SIZE", "512")  # the occupancy objective's block size
    assert manifest.benchmark is not None and "--dim" in manifest.benchmark.args
    ensure_ok(run([build_tool("cmake"), "--build", build, "--target", "FDTD3d_bench"], timeout=600))
    result = run([build / "FDTD3d_bench"], timeout=60)
    if result.returncode != 0:  # no GPU on this machine (CI): the runtime says so, nothing else runs
        assert result.returncode == 2 and result.stdout.splitlines() == ["CIQ_ERROR no-gpu"], result.describe()
    usage = ensure_ok(run([cuda133_bin / "cuobjdump", "--dump-resource-usage", build / "libFDTD3d_kernels.a"],
                          timeout=60)).stdout
    assert max(int(n) for n in re.findall(r"REG:(\d+)", usage)) > 64
