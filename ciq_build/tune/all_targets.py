"""`tune --all`: every target of a build tree registered with ciq_tune_target, one after another, same options.

Each target is tuned exactly as `tune <target>` tunes it (ciq_build.tune.driver):
its own lock, journal and scratch trees, so a stopped `tune --all` resumes
every target from its own journal and a target another process is tuning is
refused (or queued with --wait) on its own. One target's failure (a CiqError:
a bad objective for it, a failing baseline, a lock held elsewhere) is said
with its exit code and the next target runs; a full disk stops the rest,
since every later target would write to the same disk. The summary at the
end says what each target came to.

With --executor ray the driver connects to the cluster once for all targets
(ciq_build.tune.ray_executor.connected); each target still starts actors of
its own, see RayPool.
"""

from __future__ import annotations

import dataclasses
import sys
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Literal

from ciq_build.build.manifest import manifest_dir, tuned_targets
from ciq_build.errors import CiqError, DiskFullError, ManifestError
from ciq_build.tune.driver import prepare_build_tree, tune_configured
from ciq_build.tune.progress import LOG
from ciq_build.tune.settings import TuneOptions

Status = Literal["pinned", "nothing pinned", "failed", "not run"]


@dataclass(frozen=True)
class TargetResult:
    """What one target's tune came to: its pin, the verdict that pinned nothing, or why it failed."""

    target: str
    status: Status
    detail: str  # the pinned record's path, the verdict, or the error's message
    exit_code: int = 0  # the exit code `tune <target>` would have returned


@dataclass(frozen=True)
class AllOutcome:
    results: tuple[TargetResult, ...]

    @property
    def exit_code(self) -> int:
        """0 when no target failed; the failures' exit code when they agree (75: a full disk), else 1."""
        codes = {r.exit_code for r in self.results if r.exit_code}
        return 0 if not codes else codes.pop() if len(codes) == 1 else 1


def run_tune_all(options: TuneOptions) -> AllOutcome:
    """`python -m ciq_build tune --all`: configure (or refresh) the build tree once, then tune each target."""
    options.validate()
    prepare_build_tree(options)
    targets = tuned_targets(options.build_dir)
    if not targets:
        raise ManifestError(
            f"tune --all: {options.build_dir} has no tuned targets (no manifests in "
            f"{manifest_dir(options.build_dir)}): add ciq_tune_target(<target> ...) to CMakeLists.txt and "
            "configure the project (or pass --source-dir)")
    results: list[TargetResult] = []
    with _cluster(options):
        for number, target in enumerate(targets, 1):
            if results and results[-1].exit_code == DiskFullError.exit_code:
                results.append(TargetResult(target, "not run", "the disk is full (above)", DiskFullError.exit_code))
                continue
            if not options.quiet:
                LOG.info("tune --all: %s (%d of %d)", target, number, len(targets))
            results.append(_tune_one(dataclasses.replace(options, target=target)))
    print(all_summary(results), file=sys.stdout)
    return AllOutcome(tuple(results))


def _cluster(options: TuneOptions) -> AbstractContextManager[None]:
    """One connection to the Ray cluster for every target's pool; nothing for local tunes."""
    if options.executor != "ray":
        return nullcontext()
    from ciq_build.tune.ray_executor import connected

    return connected(options.ray_address, lambda text: None if options.quiet else LOG.info("%s", text))


def _tune_one(options: TuneOptions) -> TargetResult:
    try:
        outcome = tune_configured(options)
    except CiqError as error:
        # Said now, in full, as `tune <target>` would say it; the summary repeats its first line.
        LOG.error("error: %s failed (exit code %d): %s", options.target, error.exit_code, error)
        return TargetResult(options.target, "failed", str(error), error.exit_code)
    if not outcome.ok:
        return TargetResult(options.target, "failed", outcome.message, 1)
    if outcome.pinned is not None:
        return TargetResult(options.target, "pinned", str(outcome.pinned))
    return TargetResult(options.target, "nothing pinned", outcome.message)


def all_summary(results: list[TargetResult]) -> str:
    """One line per target: pinned (where), nothing pinned (why), failed (exit code, the error's first line)."""
    failed = sum(1 for r in results if r.exit_code)
    lines = [f"tune --all: {len(results)} target(s), {failed} failed"]
    width = max(len(r.target) for r in results)
    for result in results:
        status = f"{result.status} (exit code {result.exit_code})" if result.exit_code else result.status
        detail = result.detail.splitlines()[0] if result.detail else ""
        lines.append(f"  {result.target.ljust(width)}  {status}: {detail}")
    return "\n".join(lines)
