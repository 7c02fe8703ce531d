"""`show` and `list`: what is pinned, in words."""

from __future__ import annotations

from pathlib import Path

from ciq_build.errors import ManifestError
from ciq_build.pin.record import format_record, read_record
from ciq_build.build.manifest import list_manifests, load_manifest


def pin_file_for(target: str, build_dir: Path, source_dir: Path | None) -> Path:
    """Where `target`'s record is: <source>/ciq/ while the build tree is not configured, else the manifest's."""
    if source_dir is not None and not (build_dir / "ciq").is_dir():
        return source_dir / "ciq" / f"{target}.json"
    return load_manifest(build_dir, target).pin_file


def show(target: str, build_dir: Path, source_dir: Path | None, pin_file: Path | None) -> str:
    if pin_file is None:
        pin_file = pin_file_for(target, build_dir, source_dir)
    if not pin_file.is_file():
        raise ManifestError(f"{target} has no pinned record at {pin_file}; run `python -m ciq_build tune {target}`")
    return format_record(read_record(pin_file))


def list_targets(build_dir: Path) -> str:
    manifests = list_manifests(build_dir)
    if not manifests:
        return (f"no tuned targets in {build_dir}: add ciq_tune_target(<target> ...) to CMakeLists.txt "
                "and configure the project")
    rows = [("target", "benchmark", "objectives", "pin")]
    for manifest in manifests:
        pin = str(manifest.pin_file) if manifest.pin_file.is_file() else "(none)"
        bench = manifest.benchmark.target if manifest.benchmark else "(static only)"
        rows.append((manifest.target, bench, ",".join(manifest.objectives), pin))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)
