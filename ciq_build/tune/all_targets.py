"""`tune --all` (or `tune A B C`): every target of a build tree registered with ciq_tune_target (or those
named), one after another, same options; with --executor ray at the same time (ciq_build.ray.targets).

Each target is tuned exactly as `tune <target>` tunes it (ciq_build.tune.driver):
its own lock, journal and scratch trees, so a stopped `tune --all` resumes
every target from its own journal and a target another process is tuning is
refused (or queued with --wait) on its own. One target's failure (a CiqError:
a bad objective for it, a failing baseline, a lock held elsewhere) is said
with its exit code and the next target runs; a full disk stops the rest,
since every later target would write to the same disk. The summary at the
end says what each target came to.

With --executor ray the targets tune together, each in a `tune` process of
its own on one cluster, sharing its GPUs fairly (ciq_build.ray.targets);
with --ray-sources upload one after another as locally, over one connection
(a runtime target's actors there hold a GPU each for the whole tune, so
targets together could only queue for GPUs, not share them).
"""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass

from ciq_build.errors import CiqError, ManifestError
from ciq_build.project.backend import BuildBackend
from ciq_build.tune.driver import check_options, tune_configured
from ciq_build.tune.progress import LOG
from ciq_build.tune.target_result import TargetResult, not_run, stops_the_rest
from ciq_build.tune.tune_options import TuneOptions


@dataclass(frozen=True)
class AllOutcome:
    results: tuple[TargetResult, ...]

    @property
    def exit_code(self) -> int:
        """0 when no target failed; the failures' exit code when they agree (75: a full disk), else 1."""
        codes = {r.exit_code for r in self.results if r.exit_code}
        return 0 if not codes else codes.pop() if len(codes) == 1 else 1


def run_tune_all(options: TuneOptions, backend: BuildBackend) -> AllOutcome:
    """`python -m ciq_build tune --all` (or several targets): prepare the project once (CMake: configure or
    refresh the build tree), then tune each target."""
    executor = check_options(options, backend)
    backend.prepare()
    targets = list(options.targets) or backend.targets()
    if not targets:
        raise ManifestError(f"tune --all: {backend.no_targets()}")
    for target in options.targets:  # a misspelt name is said now, not after the tunes of those before it
        backend.manifest(target)
    # The executor decides: one after another here (local), or at once, each in a process of its own (Ray).
    results = executor.tune_targets(options, targets, lambda: _one_after_another(options, backend, targets))
    print(all_summary(results), file=sys.stdout)
    return AllOutcome(tuple(results))


def _one_after_another(options: TuneOptions, backend: BuildBackend, targets: list[str]) -> list[TargetResult]:
    results: list[TargetResult] = []
    for number, target in enumerate(targets, 1):
        if stops_the_rest(results):
            results.append(not_run(target))
            continue
        if not options.quiet:
            LOG.info("tune --all: %s (%d of %d)", target, number, len(targets))
        results.append(tune_one(dataclasses.replace(options, target=target, targets=()), backend))
    return results


def tune_one(options: TuneOptions, backend: BuildBackend) -> TargetResult:
    """Tune one target as `tune <target>` does; what it came to, a CiqError said and returned, not raised."""
    try:
        outcome = tune_configured(options, backend)
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
