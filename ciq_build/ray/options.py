"""`--executor ray`'s own options, declared beside what they configure.

Each is a field made by `option` (ciq_build.core.options), as `tune`'s own are
in ciq_build.tune.tune_options; the executor registry (ciq_build.tune.executors)
names `RayOptions` as the ray executor's, so `tune` parses them, lists them in
their --help group, writes them on a child's command line, checks them and
refuses them with another executor, and `ciq_build.tune_target` takes them as
keywords. A tune carries them as its `executor_options`; the ray executor
reads them with `ray_options`. This module is light on purpose: `tune --help`
imports it, and it imports nothing of Ray.
"""

from __future__ import annotations

from dataclasses import dataclass

from ciq_build.core.options import at_least, option

RAY = "Ray"  # their section of `tune --help`: "Ray options"
SOURCE_MODES = ("shared", "upload")  # how the sources reach the workers (ciq_build.ray.sources)


@dataclass(frozen=True)
class RayOptions:
    """Where on a Ray cluster a tune runs, and how: `tune --ray-*`, refused with another executor."""

    ray_address: str | None = option(
        "--ray-address", group=RAY, metavar="ADDR",
        help="the Ray cluster to use (default, as ray.init finds it: $RAY_ADDRESS, else one `ray start` started on "
             "this machine, else a new one here)")
    ray_gpu_resource: str | None = option(
        "--ray-gpu-resource", group=RAY, metavar="NAME",
        help="a custom resource naming the GPU kind each benchmark slot needs, e.g. H200")
    ray_compile_resource: str | None = option(
        "--ray-compile-resource", group=RAY, metavar="NAME",
        help="a custom resource of the nodes meant for compiles (e.g. CPU-only nodes started with ray start "
             "--resources='{\"compile\": 16}'); each compile worker asks for one")
    ray_sources: str = option(
        "--ray-sources", group=RAY, choices=SOURCE_MODES, default="shared",
        help="how the sources reach Ray workers: shared (a filesystem they share, at the driver's paths; default) "
             "or upload (shipped through Ray's working_dir, build trees and .git left out; each worker checks its "
             "copy against the driver's source fingerprint)")
    ray_targets: int | None = option(
        "--ray-targets", group=RAY, parse=int, check=at_least(1), metavar="N",
        help="with several targets (--all, or several named): how many tune at once on the cluster, sharing its "
             "GPUs fairly (default: all of them)")


def ray_options(given: object) -> RayOptions:
    """A tune's Ray options: those it was given (its `executor_options`), else the defaults."""
    return given if isinstance(given, RayOptions) else RayOptions()
