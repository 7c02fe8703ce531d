"""ciq_build.project.sources.TreeWatch: what a candidate's run wrote into the project's source tree, on real files."""

from __future__ import annotations

import math
from pathlib import Path

from test_manifest import valid_manifest, write_manifest

from ciq_build.project.manifest import read_manifest
from ciq_build.project.sources import SourceSet, TreeWatch


def _source_set(tmp_path: Path) -> tuple[SourceSet, Path, Path]:
    build, source = tmp_path / "build", tmp_path / "src"
    manifest = read_manifest(write_manifest(build, valid_manifest(build, "gemm"), "gemm"))
    assert manifest.source_dir == source
    (source / "kernels").mkdir(parents=True)
    (source / "kernels" / "gemm.cu").write_text("__global__ void k() {}\n")
    for folder in (".git", "ciq", "build-in-src"):
        (source / folder).mkdir()
    (source / "build-in-src" / "CMakeCache.txt").write_text("")
    return SourceSet(manifest), source, build


def test_the_watch_sees_any_file_written_into_the_source_tree_and_nothing_outside_it(tmp_path: Path) -> None:
    source_set, source, build = _source_set(tmp_path)
    watch = TreeWatch(source_set, share=math.inf)  # looks every time
    # Where tools and tune write, not the user's files: hidden folders, the pin folder, build trees.
    (source / ".git" / "index").write_text("x")
    (source / "ciq" / "gemm.json").write_text("{}")
    (source / "build-in-src" / "out.o").write_text("")
    (build / "bench-out.txt").write_text("")
    assert watch.look() == set()
    (source / "results.csv").write_text("X=1\n")  # any name, not only sources
    (source / "kernels" / "gemm.cu").write_text("__global__ void k() { /* rewritten */ }\n")
    assert watch.look() == {str(source / "results.csv"), str(source / "kernels" / "gemm.cu")}


def test_a_look_that_would_cost_more_than_its_share_of_the_time_is_put_off(tmp_path: Path) -> None:
    source_set, source, _ = _source_set(tmp_path)
    sparing = TreeWatch(source_set, share=1e-12)  # a listing (microseconds at least) outweighs any time since
    (source / "results.csv").write_text("X=1\n")
    assert sparing.look() == set()
    assert TreeWatch(source_set, share=math.inf).look() == set() and sparing.before != source_set.listing()
