"""Stopping: after an interrupt, nothing new starts.

An interrupt stops runs, not only the ones in flight: after `stop_starting`
(what the CLI's signal handlers call) or inside a `cancellable` scope whose
event is set, `run` starts nothing and raises `Stopped`, and `wait_or_stop`
gives up a wait, so worker threads that were about to start a compile, a
benchmark's next repeat or a GPU slot's benchmark end at once instead of
running it to completion while the interrupted driver joins them. Waiting
on a run (and `wait_or_stop`) comes back to Python every ``STOP_POLL`` at
least: the kernel may hand a signal to any thread of the process, and
Python runs its handler in the main thread only, once that thread runs
Python code again.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager


class Stopped(KeyboardInterrupt):
    """Raised by `run` (and `wait_or_stop`) instead of starting or waiting once runs were stopped.

    A KeyboardInterrupt: whatever a Ctrl-C unwinds, this unwinds too, in a worker thread as in the main one.
    """


_stopping = False  # set by stop_starting, for the rest of this process: a plain flag, safe in a signal handler
_scope = threading.local()  # .cancelled: the Event of the `cancellable` scope this thread runs in, if any
# How often a wait that `wait_or_stop` bounds looks at the stop: a stopped tune ends this much later at most.
STOP_POLL = 0.1


def stop_starting() -> None:
    """From now on, in this process, `run` starts nothing and raises Stopped (an interrupted driver).

    Only sets a flag: safe in a signal handler, which may interrupt the main thread while it holds a lock.
    """
    global _stopping
    _stopping = True


# Set by `interrupt`: the driver's killer thread (ciq_build.measure.guard) then kills what runs.
INTERRUPT_REQUESTED = threading.Event()


def interrupt() -> None:
    """What a signal handler that stops the driver calls: nothing more starts (`stop_starting`), and in a
    driver (`guard_driver`) its killer thread kills what runs at once, before the main thread unwinds.

    Not the kill itself: the handler may run while the main thread holds the lock the kill takes. And not
    left to the unwinding: it joins threads (a build beside the baseline's, the search's workers) whose
    runs nobody would kill until it is done (a stopped tune waited for a 120 s compile beside its baseline).
    """
    stop_starting()
    INTERRUPT_REQUESTED.set()


def resume_starting() -> None:
    """Undo `stop_starting`, for a process that goes on after an interrupt (a test, a notebook)."""
    global _stopping
    _stopping = False


@contextmanager
def cancellable(cancelled: threading.Event) -> Iterator[None]:
    """Runs started in this thread inside the block raise Stopped once `cancelled` is set (a search loop
    ending: its worker threads must not start their candidates' next steps)."""
    outer = getattr(_scope, "cancelled", None)
    _scope.cancelled = cancelled
    try:
        yield
    finally:
        _scope.cancelled = outer


def stopped() -> bool:
    """Whether runs in this thread must not start: the process is stopping, or this thread's scope is."""
    cancelled: threading.Event | None = getattr(_scope, "cancelled", None)
    return _stopping or (cancelled is not None and cancelled.is_set())


def raise_if_stopped(what: str = "starting a process") -> None:
    if stopped():
        raise Stopped(f"stopped before {what}")


def wait_or_stop(attempt: Callable[[float], bool], what: str) -> None:
    """Call `attempt(timeout)` until it returns True (what was waited for came), raising Stopped when runs
    stop meanwhile: a blocking wait (a GPU slot, a lock) cannot be woken by an interrupt otherwise."""
    while True:
        raise_if_stopped(what)
        if attempt(STOP_POLL):
            return
