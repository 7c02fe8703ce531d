"""Errors a user can meet. Each message says what went wrong and what to do.

The CLI prints these without a traceback and exits non-zero; anything else
escaping is a bug in ciq_build.
"""


class CiqError(Exception):
    """Base class for every error ciq_build reports to a user."""

    exit_code = 2


class ConfigError(CiqError):
    """A search space, search configuration or command line is invalid."""


class SearchError(CiqError):
    """The search cannot go on (for example every candidate of a generation failed)."""


class ToolchainError(CiqError):
    """No usable CUDA compiler, or one that lacks what was asked for."""


class ManifestError(CiqError):
    """The manifest the CMake module wrote for a target is missing or malformed."""


class RecordError(CiqError):
    """A pinned record is malformed, unsafe, or does not fit its ACF or toolchain."""


class UnsafeFlagError(RecordError):
    """A compiler flag outside the allow-list (it could run programs or read files)."""


class JournalError(CiqError):
    """The evaluation journal cannot be used."""


class BuildError(CiqError):
    """Configuring or building the project failed outside of a candidate."""


class DiskFullError(CiqError):
    """A write found the disk full: the tune stops; after freeing space, the same command resumes."""

    exit_code = 75  # EX_TEMPFAIL (sysexits.h): a temporary failure, run it again

    def __init__(self, message: str, *, advised: bool = False) -> None:
        super().__init__(message)
        self.advised = advised  # the message already says which folders to free (ciq_build.project.environment)


class BenchmarkError(CiqError):
    """The benchmark cannot be run or its output cannot be read."""


class NoGpuError(BenchmarkError):
    """A runtime objective was asked for on a machine without a usable GPU."""


class BusyError(CiqError):
    """Another tune of the same target holds its lock."""


class MissingExtraError(CiqError):
    """An optional dependency is not installed."""
