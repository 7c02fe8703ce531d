"""What a running tune says of itself to whoever watches it (`report --watch`): one small JSON file beside its lock.

The tune rewrites it, atomically, at each phase it enters (preparing, baseline, search, rebuild, re-measure,
minimize, pin, then ended) and as the search's evaluations end: how many so far and how many planned, the
best so far as the progress line words it (with several objectives, the front's size and the point the tune
would pin from it), and the time left as the tune's own progress line estimates it, each with when it was
written. The search's first report is written at once, later ones at most once every WRITE_EVERY_S seconds
(each write is a new file, synced and renamed over the old one; a static search can end several evaluations a
second), and the next phase writes the last of them. A reader believes it only while the tune's lock is held
(`TargetLock.held`): a killed tune leaves the file saying what it was doing when it died. Writing it never
stops a tune: a file that cannot be written is left as it was.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ciq_build.state.durable import atomic_write, read_json_object

ENDED = "ended"  # the phase a tune's file says once the tune is over (pinned, or not)
WRITE_EVERY_S = 1.0  # the search's reports, at most this often (report --watch reloads every 5 s)


def live_status_path(lock_path: Path) -> Path:
    """Where the tune holding the lock at `lock_path` says what it is doing."""
    return lock_path.with_name(lock_path.name + ".live")


class LiveStatus:
    """The running tune's side: what it is doing, written to `path` as it changes."""

    def __init__(self, path: Path, target: str, clock: Callable[[], float] = time.time) -> None:
        self.path = Path(path)
        self.clock = clock
        self.state: dict[str, Any] = {"target": target, "phase": "preparing", "phases": [["preparing", clock()]],
                                      "evaluations": 0, "expected": None, "best": "", "left_s": None}
        self._searched_written = False  # whether this phase's search reports were written yet
        self._write()

    def phase(self, name: str) -> None:
        """The tune entered phase `name` (the time left is the search's: unknown outside it)."""
        self.state["phase"] = name
        self.state["phases"].append([name, self.clock()])
        if name != "search":
            self.state["left_s"] = None
        self._searched_written = False
        self._write()

    def searched(self, evaluations: int, expected: int | None, best: str, left_s: float | None) -> None:
        """An evaluation of the search finished: how many so far, of how many, the best so far, the time left."""
        self.state.update(evaluations=evaluations, expected=expected, best=best,
                          left_s=round(left_s, 1) if left_s is not None and math.isfinite(left_s) else None)
        since = self.clock() - self.state["updated"]
        if not self._searched_written or not 0 <= since < WRITE_EVERY_S:  # a clock set back: written
            self._searched_written = True
            self._write()

    def end(self) -> None:
        self.phase(ENDED)

    def _write(self) -> None:
        self.state["updated"] = self.clock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(self.path, json.dumps(self.state) + "\n")
        except OSError:
            pass  # a courtesy to a watcher: the tune goes on without it


def read_live_status(path: Path) -> dict[str, Any] | None:
    """What a tune last wrote of itself at `path`, or None where there is no such file or it cannot be read."""
    try:
        return read_json_object(path)
    except (OSError, ValueError):
        return None
