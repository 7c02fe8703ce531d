"""What a running tune says: a progress bar on a terminal, plain lines in logs and CI, levels through logging.

A tune of hundreds of candidates runs for many minutes; a CI log must show it
is alive and how it goes, without a terminal's redrawn line. So:

* on a terminal, a tqdm bar that moves as each evaluation finishes (percent
  done, the time left, the generation, the best so far with its objectives'
  names and units, the failures) and stays on screen when the search ends;
* anywhere else, one line per finished evaluation (the same, and its own
  scores), and, while a resume reads finished evaluations back from the
  journal, at most one line per `REPLAY_INTERVAL` seconds;
* the time left is ciq_build.core.pace's rule: the evaluations still to come at
  the pace of those this run measured (journaled ones cost nothing), and never
  more than a --time-limit leaves the search;
* every message goes through the `ciq_build` logger: `-q` keeps warnings only,
  `-v` adds each evaluation's controls (as an nvcc command line) and metrics.
"""

from __future__ import annotations

import logging
import shlex
import sys
import time
from collections.abc import Callable, Iterator, Sequence, Set
from contextlib import contextmanager
from typing import Any, TextIO

from ciq_build.compiler.controls import nvcc_arguments
from ciq_build.core import pace
from ciq_build.core.objectives import Objective, named_scores
from ciq_build.search.evaluation import Evaluation
from ciq_build.state.live import LiveStatus

LOG = logging.getLogger("ciq_build")
# How the CLI says a message, and so does a tune called as a library (said_to).
LOG_FORMAT = "ciq_build: %(message)s"
REPLAY_INTERVAL = 10.0  # seconds between lines while journaled evaluations are read back


@contextmanager
def said_to(out: TextIO, quiet: bool) -> Iterator[None]:
    """What a tune says goes to `out` meanwhile, as the CLI says it (warnings only when `quiet`), unless the CLI
    already says it: a tune called as a library."""
    if LOG.handlers:  # the CLI's
        yield
        return
    handler = logging.StreamHandler(out)
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    LOG.addHandler(handler)
    level = LOG.level
    LOG.setLevel(logging.WARNING if quiet else logging.INFO)
    try:
        yield
    finally:
        LOG.removeHandler(handler)
        LOG.setLevel(level)


class _CurrentStderr(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever sys.stderr is when a message is said, not what it was when the handler was made.

    (A handler holding the stderr of its creation keeps writing into a stream
    that was replaced since: a redirect, a capture, a closed pipe.)
    """

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property  # type: ignore[override, unused-ignore]  # needed on some Pythons (typeshed), not others
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, _: TextIO) -> None:
        pass


def configure_logging(verbosity: int, stream: TextIO | None = None) -> None:
    """The CLI's handler: "ciq_build: <message>" on stderr; -1 warnings only (-q), 0 info, 1 debug (-v)."""
    level = logging.WARNING if verbosity < 0 else logging.DEBUG if verbosity > 0 else logging.INFO
    handler = logging.StreamHandler(stream) if stream is not None else _CurrentStderr()
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    reset_logging()
    LOG.addHandler(handler)
    LOG.setLevel(level)
    LOG.propagate = False


def reset_logging() -> None:
    """The logger as a library import leaves it (no handler of ours): what `configure_logging` undoes."""
    for old in list(LOG.handlers):
        LOG.removeHandler(old)
    LOG.setLevel(logging.NOTSET)
    LOG.propagate = True


def scores_text(scores: tuple[float, ...] | None, objectives: Sequence[Objective]) -> str:
    """Scores with their objectives' names and units ("-": none yet); bare numbers where the objectives are not known."""
    if scores is None:
        return "-"
    if objectives:
        return named_scores(objectives, scores)
    return "/".join(f"{s:.6g}" for s in scores)


def outcome(evaluated: Evaluation, objectives: Sequence[Objective]) -> str:
    """One evaluation in a few words: its scores with their names and units, or its failure's cause."""
    if evaluated.ok and evaluated.scores is not None:
        return ("ok, " if objectives else "ok ") + scores_text(evaluated.scores, objectives)
    return f"failed ({evaluated.cause})"


class TuneProgress:
    """The loop's progress reporter (ciq_build.tune.loop.Progress) for one tune."""

    def __init__(self, expected: int | None, generations: int, objectives: Sequence[Objective] = (), *,
                 stream: TextIO | None = None, terminal: bool | None = None,
                 clock: Callable[[], float] = time.monotonic, measured_this_run: Set[str] = frozenset(),
                 deadline: float | None = None, live: LiveStatus | None = None, quiet: bool = False) -> None:
        """`live`: where a watcher reads the same figures (report --watch); `quiet`: told them only, no line or bar."""
        self.expected = expected  # evaluations the search will make at most (None: not known)
        self.deadline = deadline  # on `clock`: the search ends then (--time-limit), whatever the pace says
        self.live = live
        self.quiet = quiet
        if live is not None:  # the search begins: how many it plans, before the first finishes
            live.searched(0, expected, "", None)
        self.generations = generations
        self.objectives = list(objectives)
        self.stream = stream if stream is not None else sys.stderr
        if terminal is None:
            isatty = getattr(self.stream, "isatty", None)
            terminal = bool(isatty and isatty())
        # Keys this run has measured (the cache's live set): a cached result on one of
        # them is the search proposing a candidate again (the baseline's controls, say),
        # not a resume, so it is said as such and not thinned out like a replay.
        self._measured_this_run = measured_this_run
        self._clock = clock
        self._started = clock()
        self._measured = 0  # evaluations this run made (not from the journal): the pace of the time left
        self._last_replay_line = -REPLAY_INTERVAL
        self.bar: Any = None
        self._said_above: list[tuple[logging.Handler, logging.Handler]] = []
        if terminal and not quiet and LOG.isEnabledFor(logging.INFO):
            try:
                from tqdm import tqdm
            except ImportError:  # tqdm missing: plain lines on the terminal too
                pass
            else:
                # Redrawn at every evaluation (mininterval 0: one finishes every few seconds at most, and
                # tqdm's default 0.1 s would skip those that finish together); its own rate and time left
                # are left out, since journaled evaluations would count as instant ones: ours are shown.
                bar_format = ("{percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} evaluations [{elapsed} elapsed{postfix}]"
                              if expected else None)
                self.bar = tqdm(total=expected, unit="eval", file=self.stream, dynamic_ncols=True, leave=True,
                                mininterval=0, bar_format=bar_format)
                self._said_above = _AboveTheBar.install(self.bar, self.stream)

    def _best(self, best: tuple[float, ...] | None, front: int, pinnable: bool = True) -> str:
        """The best so far; with several objectives, a front of points and the one the tune would pin from it
        (a reader takes "best" for what the tune pins: the first objective's best alone is not it), or, where no
        point of it beats the defaults on every objective (`pinnable` false), that nothing would be pinned."""
        if len(self.objectives) < 2 or best is None:
            return f"best {scores_text(best, self.objectives)}"
        points = f"front: {front} point{'s' if front != 1 else ''}"
        if not pinnable:
            return f"{points}; would pin nothing (none beats the defaults on every objective)"
        return f"{points}; would pin {scores_text(best, self.objectives)}"

    def update(self, generation: int, *, evaluations: int = 0, failures: int = 0,
               best: tuple[float, ...] | None = None, front: int = 0, last: Evaluation | None = None,
               pinnable: bool = True) -> None:
        now = self._clock()
        if last is not None and not last.cached:
            self._measured += 1
        left = pace.time_left(now - self._started, self._measured, evaluations, self.expected)
        if self.deadline is not None:  # no candidate starts after it: the time left is at most what it leaves
            left = max(0.0, min(left if left is not None else self.deadline - now, self.deadline - now))
        if self.live is not None:  # in the line's words: with several objectives, the front and what would be pinned
            self.live.searched(evaluations, self.expected, self._best(best, front, pinnable) if best is not None else "", left)
        if self.quiet:
            return
        where = f"generation {generation + 1}/{self.generations}"  # counted from 0 by the search, from 1 here
        if self.bar is not None:
            parts = [f"about {pace.clock(left)} left"] if left is not None else []
            parts += [where, self._best(best, front, pinnable), f"{failures} failed"]
            self.bar.set_postfix_str("; ".join(parts), refresh=False)
            self.bar.update(1)
            return
        repeat = last is not None and last.cached and last.key in self._measured_this_run
        replay = last is not None and last.cached and not repeat
        if replay and now - self._last_replay_line < REPLAY_INTERVAL:
            return
        if replay:
            self._last_replay_line = now
        if self.expected:
            count = f"{evaluations}/{self.expected} ({100 * evaluations // self.expected}%)"
        else:
            count = str(evaluations)
        said = ""
        if last is not None:
            said = outcome(last, self.objectives) + (" (measured earlier in this run)" if repeat else
                                                     " (from the journal)" if replay else "")
            said += f" on {last.worker}" if last.worker else ""
        timing = f"{pace.clock(now - self._started)} elapsed"
        if left is not None:
            timing += f", about {pace.clock(left)} left"
        LOG.info("evaluation %s, %s: %s | %s | %d failed | %s", count, where, said, self._best(best, front, pinnable),
                 failures, timing)
        if last is not None and not last.cached and LOG.isEnabledFor(logging.DEBUG):
            LOG.debug("  controls: %s; metrics: %s", shlex.join(nvcc_arguments(last.controls)) or "(none)",
                      ", ".join(f"{k}={v:g}" for k, v in sorted(last.metrics.items())) or "(none)")

    def close(self) -> None:
        if self.bar is not None:
            _AboveTheBar.remove(self._said_above)
            self._said_above = []
            self.bar.close()
            self.bar = None


class _AboveTheBar(logging.Handler):
    """Says the `ciq_build` logger's messages above the bar while it is drawn, each on a line of its own.

    A message written straight to the bar's stream lands after the bar on its line, and the next redraw
    overwrites it; tqdm.write clears the bar, writes the line and draws the bar again below it.
    """

    def __init__(self, replaced: logging.Handler, bar: Any, stream: TextIO) -> None:
        super().__init__(replaced.level)
        self.setFormatter(replaced.formatter)
        for log_filter in replaced.filters:
            self.addFilter(log_filter)
        self.bar = bar
        self.stream = stream

    def emit(self, record: logging.LogRecord) -> None:
        try:
            type(self.bar).write(self.format(record), file=self.stream)
        except Exception:  # as logging's own handlers do: a message that cannot be said does not stop the tune
            self.handleError(record)

    @classmethod
    def install(cls, bar: Any, stream: TextIO) -> list[tuple[logging.Handler, logging.Handler]]:
        """Replace each handler of the logger that writes to `stream`, where the bar is drawn; (replaced,
        replacement) pairs."""
        swapped: list[tuple[logging.Handler, logging.Handler]] = [
            (handler, cls(handler, bar, stream)) for handler in LOG.handlers
            if isinstance(handler, logging.StreamHandler) and handler.stream is stream]
        for handler, above in swapped:
            LOG.removeHandler(handler)
            LOG.addHandler(above)
        return swapped

    @staticmethod
    def remove(swapped: list[tuple[logging.Handler, logging.Handler]]) -> None:
        for handler, above in swapped:
            LOG.removeHandler(above)
            LOG.addHandler(handler)
