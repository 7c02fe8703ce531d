"""What one target's tune came to in a tune of several (`tune --all`, `tune A B`), whichever executor ran it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ciq_build.errors import DiskFullError

Status = Literal["pinned", "nothing pinned", "failed", "not run"]
STATUSES: tuple[Status, ...] = ("pinned", "nothing pinned", "failed", "not run")


@dataclass(frozen=True)
class TargetResult:
    """What one target's tune came to: its pin, the verdict that pinned nothing, or why it failed."""

    target: str
    status: Status
    detail: str  # the pinned record's path, the verdict, or the error's message
    exit_code: int = 0  # the exit code `tune <target>` would have returned


def stops_the_rest(results: list[TargetResult]) -> bool:
    """A full disk: every later target would write to the same disk, so none is started."""
    return any(r.exit_code == DiskFullError.exit_code for r in results)


def not_run(target: str) -> TargetResult:
    return TargetResult(target, "not run", "the disk is full (above)", DiskFullError.exit_code)
