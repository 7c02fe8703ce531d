"""What one target's tune came to in a tune of several (`tune --all`, `tune A B`), whichever executor ran it, and
how a target's own `tune` process hands it to the tune that started it."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ciq_build.errors import DiskFullError

Status = Literal["pinned", "nothing pinned", "failed", "not run"]


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


def write_result(result: TargetResult, path: Path) -> None:
    """What a target's own tune came to, for the tune of several that started it (`tune --result-file`)."""
    path.write_text(json.dumps(dataclasses.asdict(result)), encoding="utf-8")


def read_result(path: Path) -> TargetResult:
    """What `write_result` wrote (OSError, ValueError or TypeError where nothing whole was written)."""
    return TargetResult(**json.loads(path.read_text(encoding="utf-8")))
