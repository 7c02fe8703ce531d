"""`--executor ray` as the driver sees it: the `Executor` (ciq_build.tune.executor) over Ray's actors, sources
and several targets at once.

Registered by name in ciq_build.tune.executors and imported only when a tune
asks for it. Its own options are declared in ciq_build.ray.options, which the
registry names beside it: their declarations check their values (the sources'
mode, how many targets at once), and the registry refuses them with another
executor; what only this executor refuses is refused here, once: `--gpus` (Ray
assigns each worker its GPU), and a GPU kind for objectives that need no GPU.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager

from ciq_build.errors import ConfigError
from ciq_build.project.worker import WorkerTree
from ciq_build.ray.executor import RayPool, actor_resources, connected
from ciq_build.ray.options import ray_options
from ciq_build.ray.sources import plan_upload
from ciq_build.ray.targets import tune_together
from ciq_build.tune.executor import Executor, SearchPhase, Workers
from ciq_build.tune.progress import LOG
from ciq_build.tune.target_result import TargetResult
from ciq_build.tune.tune_options import TuneOptions, TuneSettings


class RayExecutor(Executor):
    """Candidates evaluated by actors on a Ray cluster, one per --jobs slot, each keeping its scratch tree."""

    name = "ray"
    uses_driver_trees = False  # its actors configure trees of their own, the backend's (BuildBackend.make_tree)

    def validate(self, options: TuneOptions) -> None:
        # --ray-sources' choices and --ray-targets' least are their declarations' (ciq_build.ray.options).
        if options.gpus:
            raise ConfigError("--gpus picks GPUs of this machine; with --executor ray, Ray assigns each worker "
                              "its GPU (use --ray-gpu-resource to ask for a GPU kind)")

    def check(self, settings: TuneSettings) -> None:
        # refuses a GPU kind for static objectives
        actor_resources(settings.objectives, ray_options(settings.executor_options).ray_gpu_resource)

    def local_trees(self, jobs: int, benchmark_slots: int) -> int:
        return 1  # the confirmation's and the minimal pin's: the candidates build in the actors' trees

    def workers(self, phase: SearchPhase, trees: Sequence[WorkerTree]) -> AbstractContextManager[Workers]:
        return _pool(phase)

    def tune_targets(self, options: TuneOptions, targets: list[str],
                     one_after_another: Callable[[], list[TargetResult]]) -> list[TargetResult]:
        own = ray_options(options.executor_options)
        if own.ray_sources == "shared" and len(targets) > 1:
            return tune_together(options, targets)
        # Uploaded sources: one after another (a runtime target's actors hold a GPU each for the whole tune,
        # so targets together could only queue for GPUs), over one connection to the cluster.
        with connected(own.ray_address, lambda text: None if options.quiet else LOG.info("%s", text)):
            return one_after_another()


@contextmanager
def _pool(phase: SearchPhase) -> Iterator[Workers]:
    own = ray_options(phase.executor_options)
    # Uploaded, the workers' copies must hold the files of the fingerprint the search measures.
    upload = plan_upload(phase.manifest, phase.snapshot) if own.ray_sources == "upload" else None
    if upload is not None and upload.left_out:
        # Ray's packer follows links: what these point to would have been shipped to every node.
        LOG.warning("ray: left out of the upload %d path(s) of the source tree %s that are no regular file of it: %s",
                    len(upload.left_out), upload.source_dir,
                    ", ".join(f"{path!r} ({why})" for path, why in upload.left_out.items()))
    with RayPool(phase.backend, phase.manifest, phase.toolchain, phase.objectives, phase.repeats, phase.timeouts,
                 phase.configure_timeout, phase.jobs, own.ray_address, own.ray_gpu_resource, phase.say, upload,
                 own.ray_compile_resource, known=phase.known, writes_sources=phase.writes_sources) as pool:
        yield Workers(pool.runner, pool.slots)
