"""Why a candidate's evaluation failed: one enum, whose values are the strings the journal and reports carry.

The candidate's own failures are cached in the journal (a resumed tune does not
run them again); the environmental ones are the machine's doing and never are
(ciq_build.project.environment says how each is recognised).
"""

from __future__ import annotations

from enum import StrEnum


class Cause(StrEnum):
    """A failure cause. A str: journals, records and summaries hold its value, as they always did."""

    # the candidate's build
    COMPILE_FAILED = "compile_failed"
    COMPILE_TIMEOUT = "compile_timeout"
    INVALID_CONTROLS = "invalid_controls"  # its search parameters make no valid compiler controls
    # the candidate's benchmark (ciq_build.measure.bench)
    BENCH_TIMEOUT = "bench_timeout"
    BENCH_SIGNAL = "bench_signal"
    BENCH_EXIT = "bench_exit"
    NO_METRIC = "no_metric"
    BAD_METRIC = "bad_metric"
    CHECK_FAILED = "check_failed"
    CUDA_ERROR = "cuda_error"  # it printed the CUDA runtime's words for a kernel that failed to launch or faulted
    NO_GPU = "no_gpu"
    # the machine's (environmental: never cached)
    DISK_FULL = "disk_full"
    COMPILE_KILLED = "compile_killed"
    BENCH_KILLED = "bench_killed"
    BUILD_TOOL_TIMEOUT = "build_tool_timeout"
    COMPILE_STARVED = "compile_starved"  # a compile timeout where the compile waited for a CPU most of the limit
    # the genetic search run on its own objective (ciq_build.search.evolution): the objective said the
    # candidate is not valid (INVALID_SCORE, a non-finite or wrong number of scores)
    INVALID = "invalid"
    # the objective raised; or a journaled failure whose cause is missing or not one of these
    ERROR = "error"

    @property
    def environmental(self) -> bool:
        return self in ENVIRONMENTAL

    @classmethod
    def read(cls, value: object) -> Cause:
        """The cause a journal line names; ERROR for anything else."""
        try:
            return cls(value) if isinstance(value, str) else cls.ERROR
        except ValueError:
            return cls.ERROR


ENVIRONMENTAL = frozenset({Cause.DISK_FULL, Cause.COMPILE_KILLED, Cause.BENCH_KILLED, Cause.BUILD_TOOL_TIMEOUT,
                           Cause.COMPILE_STARVED})
