"""The peer kernels' upstream sources stay unmodified copies (bench/peers/)."""
import hashlib
from pathlib import Path

import pytest

PEERS = Path(__file__).resolve().parent.parent / "bench" / "peers" / "cuda-samples"


def _manifest() -> list[tuple[str, str, str]]:
    rows = []
    for line in (PEERS / "UPSTREAM.sha256").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            digest, local, upstream = line.split()
            rows.append((digest, local, upstream))
    return rows


def test_every_upstream_file_is_listed():
    listed = {local for _, local, _ in _manifest()}
    present = {str(p.relative_to(PEERS / "upstream")) for p in (PEERS / "upstream").rglob("*") if p.is_file()}
    assert present == listed


@pytest.mark.parametrize("digest,local,upstream", _manifest(), ids=lambda v: v if "/" in str(v) else None)
def test_upstream_copy_unmodified(digest, local, upstream):
    assert hashlib.sha256((PEERS / "upstream" / local).read_bytes()).hexdigest() == digest, (
        f"{local} differs from cuda-samples c94ff366:{upstream}; keep upstream copies unmodified"
    )
