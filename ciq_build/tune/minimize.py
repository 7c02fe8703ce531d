"""Minimal pins: before pinning, drop each control of the winner that leaves the machine code as it is.

A search hands the winner every control it happened to carry, most of which
may change nothing (``-maxrregcount=208`` on a 10-register kernel, a -D that
the source overrides with a #define of its own). A pin should say only what
matters, so the target is rebuilt whole without each control, these builds
`--jobs` at once in the workers' trees while the winner is re-measured: a
control is dropped when the build without it has the same device code (the
code hash and resource usage that `verify` checks, per object and
architecture) and the same host code (a -D can change only the host side: a
launch's grid, a loop count). It is decided by machine code alone, so no
benchmark waits for it and none is run for it.

A tune of static objectives alone (registers, spills, ...) judges the code by
those figures only: a control whose removal changes the code but not one of
the objectives' figures is dropped too (stdgpu's unordered_map, tuned for one
kernel's registers, pinned `-Xptxas=--def-load-cache=cs` and `--def-store-cache=cs`:
streaming cache operators on every load and store, which changed the code
but no figure the tune scored, and which nothing measured). Its pin's code is
then the minimal controls' own, rebuilt for the record (`same_code` False).
Since only those figures decide there, its builds take the candidates' path
(`static_only`: ptxas alone where the front end is kept, as the search's
candidates did), not whole builds: stdgpu's Thrust-heavy example took about
50 s a control whole, 3-6 s a candidate; and a configuration the search
measured in this run is not built again (its figures are known). Their code
is not compared (no objects): the one build of the pin's controls says
whether that is the winner's code after all (`built_as`).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from ciq_build.compiler import metrics
from ciq_build.compiler.controls import AcfRef, Controls
from ciq_build.compiler.fingerprint import Fingerprints, object_fingerprints
from ciq_build.compiler.toolchain import Toolchain
from ciq_build.measure.stopping import stopped
from ciq_build.project.worker import CandidateBuild, WorkerTree
from ciq_build.tune.timeouts import Timeouts

# What one build's code is: the device fingerprints, and each object's host code hash.
CodeIdentity = tuple[Fingerprints, dict[str, str]]
# A static tune's objective values of a build (the runner's, as the search scored them); None where not read.
Figures = Callable[[CandidateBuild, Controls], tuple[float, ...] | None]
# What a build without some controls is: its code (None: ptxas alone ran), and its objectives' figures where a
# static tune reads them.
Built = tuple[CodeIdentity | None, tuple[float, ...] | None]
# The verdicts of a build without some controls that drop them (the others: "other", "fails").
DROPPED = ("same", "figures", "scored")


@dataclass(frozen=True)
class MinimalPin:
    """The winner's controls with the no-op ones dropped, and its objects rebuilt with exactly those."""

    controls: Controls
    objects: tuple[Path, ...]
    dropped: tuple[str, ...]  # each dropped control, as nvcc reads it ("-maxrregcount=208", "-DUNROLL=8")
    # Those of `dropped` whose removal changed the code but no figure of a static tune's objectives.
    same_figures: tuple[str, ...] = ()
    same_code: bool = True  # the controls build the winner's code (`objects`); else they must be built for the pin

    def describe(self) -> str:
        """One line for the tune's output: what was dropped and why."""
        same = [control for control in self.dropped if control not in self.same_figures]
        parts = []
        if same:
            parts.append(f"since the machine code is the same without them: {', '.join(same)}")
        if self.same_figures:
            parts.append("since this tune's objectives are the same without them (their code differs, in nothing "
                         f"the tune measured): {', '.join(self.same_figures)}")
        return f"dropped from the pin, {'; and, '.join(parts)}" if parts else ""


def without(controls: Controls, control: str | tuple[str, str] | AcfRef) -> Controls:
    """`controls` less one flag, one define or the ACF."""
    if isinstance(control, AcfRef):
        return Controls(controls.flags, controls.defines, None)
    if isinstance(control, tuple):
        return Controls(controls.flags, tuple(d for d in controls.defines if d != control), controls.acf)
    return Controls(tuple(f for f in controls.flags if f != control), controls.defines, controls.acf)


def spelled(control: str | tuple[str, str] | AcfRef) -> str:
    """A control as the user reads it in a pin."""
    if isinstance(control, AcfRef):
        return f"the ACF {control.path.name}"
    if isinstance(control, tuple):
        return f"-D{control[0]}={control[1]}"
    return control


def code_identity(objects: tuple[Path, ...], object_dir: Path, toolchain: Toolchain) -> CodeIdentity:
    """What must not change when a control is dropped: device fingerprints and host code, per object."""
    host = {Path(obj).relative_to(object_dir).as_posix(): metrics.host_code_hash(obj) for obj in sorted(objects)}
    return object_fingerprints(objects, object_dir, toolchain), host


def removable(controls: Controls) -> list[str | tuple[str, str] | AcfRef]:
    """Each control of `controls` a minimal pin may leave out: flags, defines, the ACF."""
    return [*controls.flags, *controls.defines, *([controls.acf] if controls.acf is not None else [])]


class Minimizer:
    """The minimal pin of `controls`, decided by machine code (in a tune of static objectives alone, by their
    figures too: `figures`), its rebuilds `len(trees)` at once.

    Started as soon as the winner is known: the builds without each control run
    in `trees` (never the winner's own, which the re-measure benchmarks meanwhile)
    while the winner is rebuilt; `reference` then gives them the winner's code to
    compare with, and `result` waits for the verdict. The controls each found a
    no-op alone are then dropped together when that build is the same code too;
    when it is not (two controls that stand in for each other), one at a time, in
    order.
    """

    def __init__(self, controls: Controls, trees: Sequence[WorkerTree], toolchain: Toolchain, timeouts: Timeouts,
                 say: Callable[[str], None], *, benchmark: bool, figures: Figures | None = None,
                 winner_figures: tuple[float, ...] | None = None, static_only: bool = False,
                 searched: Mapping[Controls, tuple[float, ...]] | None = None, spills_last: bool = False) -> None:
        if not trees:
            raise ValueError("the minimal pin needs at least one tree to build in")
        self.controls = controls
        # A static tune's objectives and the winner's figures of them: a build whose figures are the winner's is as
        # good a pin, whatever its code (None: a benchmark judges the code, so only the same code is).
        self.figures = figures if winner_figures is not None else None
        self.winner_figures = winner_figures
        # The figures' last is spill bytes (scores.with_spills): a build without a control may spill as much or less,
        # never more (the objectives' figures must be the winner's).
        self.spills_last = spills_last
        # Figures alone decide, and ptxas's report holds them all (BuildRunner.static_only): each build is a
        # candidate's, ptxas alone after a kept front end, with no objects to compare.
        self.static_only = static_only and self.figures is not None
        # The figures of the configurations the search measured in this run: where figures decide, one of them
        # is not built again.
        self.searched = searched if self.figures is not None and searched is not None else {}
        self._same_code = True  # the decided controls build the winner's code
        self._verdicts: list[str] = []  # each candidate's trial's, once all ended
        # Whether each build links the benchmark too, as the search's did: a static tune never built it, so a
        # benchmark that does not build must not read as "does not build without" each control.
        self.benchmark = benchmark
        self.toolchain = toolchain
        self.timeouts = timeouts  # the candidates': each trial is a candidate's build
        self.say = say
        self.candidates = removable(controls)
        self._trees: queue.Queue[WorkerTree] = queue.Queue()
        for tree in trees:
            self._trees.put(tree)
        self._reference: Future[CodeIdentity | None] = Future()
        self._cancelled = threading.Event()
        self._told = 0  # trials said so far, for their numbering in the order they end
        self._lock = threading.Lock()
        # A thread per trial and one for the decision; the trees bound how many build at once.
        self._pool = ThreadPoolExecutor(max_workers=len(self.candidates) + 1, thread_name_prefix="ciq-minimize")
        self._trials: list[Future[str]] = []
        self._decision: Future[Controls] | None = None
        if self.candidates:
            say(f"minimizing the pin: rebuilding without each of its {len(self.candidates)} controls, "
                f"{min(len(trees), len(self.candidates))} at once")
            self._trials = [self._pool.submit(self._trial, control) for control in self.candidates]
            self._decision = self._pool.submit(self._decide)

    def reference(self, objects: tuple[Path, ...], tree: WorkerTree) -> None:
        """The winner's build, `objects` in `tree`: what each build without a control is compared with."""
        identity = code_identity(objects, tree.object_dir, self.toolchain)
        self._reference.set_result(identity if identity[0] else None)

    def cancel(self) -> None:
        """Nothing is pinned: start no more builds, and wait for those running."""
        self._cancelled.set()
        if not self._reference.done():
            self._reference.set_result(None)
        self._pool.shutdown(wait=True, cancel_futures=True)

    def result(self, objects: tuple[Path, ...]) -> MinimalPin:
        """The minimal pin; `objects` are the winner's (the minimal pin's code is theirs, by construction)."""
        try:
            current = self.controls if self._decision is None else self._decision.result()
            if self.candidates and self._reference.result() is None:
                self.say("the pin is not minimized: the winner's build has no object with device code to compare")
            dropped = tuple(spelled(c) for c in self.candidates if c not in removable(current))
            figures = tuple(spelled(c) for c, verdict in zip(self.candidates, self._verdicts)
                            if verdict in ("figures", "scored") and spelled(c) in dropped)
            return MinimalPin(current, objects, dropped, figures, self._same_code or not dropped)
        finally:
            self._pool.shutdown(wait=True)

    def _decide(self) -> Controls:
        """In the background, once every trial has ended: the controls the pin keeps."""
        self._verdicts = [trial.result() for trial in self._trials]
        reference = self._reference.result()
        if reference is None or self._cancelled.is_set():
            return self.controls
        return self._drop_together([c for c, v in zip(self.candidates, self._verdicts) if v in DROPPED], reference)

    def built_as(self, minimal: MinimalPin, objects: tuple[Path, ...], tree: WorkerTree) -> MinimalPin:
        """`minimal` with the objects of its own build in `tree`, which the pin records; where those are the winner's
        code after all (a static tune's builds without each control compared figures, not code), its dropped
        controls are said to leave the code as it is."""
        reference = self._reference.result() if self._reference.done() else None
        if reference is not None and code_identity(objects, tree.object_dir, self.toolchain) == reference:
            return MinimalPin(minimal.controls, objects, minimal.dropped)
        return MinimalPin(minimal.controls, objects, minimal.dropped, minimal.same_figures, same_code=False)

    def _build(self, controls: Controls) -> Built | None:
        """The code of a build of `controls` in a free tree (None where it has no objects: ptxas alone ran), and
        its figures where a static tune reads them; None when it does not build."""
        if controls in self.searched:
            return None, self.searched[controls]
        tree = self._trees.get()
        try:
            built = tree.build(controls, self.timeouts.compile, self.static_only, benchmark=self.benchmark)
            if not built.ok:
                return None
            figures = self.figures(built, controls) if self.figures is not None else None
            code = code_identity(built.objects, tree.object_dir, self.toolchain) if built.objects else None
            return code, figures
        finally:
            self._trees.put(tree)

    def _verdict(self, built: Built | None, reference: CodeIdentity) -> str:
        """"same" (the winner's code), "figures" (other code, the winner's figures), "scored" (the winner's figures,
        the code not compared: ptxas alone ran, or the search measured them), "other" or "fails"."""
        if built is None:
            return "fails"
        code, figures = built
        if code is not None and code == reference:
            return "same"
        if self.figures is None or not self._as_good(figures):
            return "other"
        return "figures" if code is not None else "scored"

    def _as_good(self, figures: tuple[float, ...] | None) -> bool:
        """Whether a build's `figures` make it as good a pin as the winner: its objectives' figures, and no more spill
        bytes where the last figure is theirs."""
        winner = self.winner_figures
        if not self.spills_last or figures is None or winner is None or len(figures) != len(winner):
            return figures == winner
        return figures[:-1] == winner[:-1] and figures[-1] <= winner[-1]

    def _trial(self, control: str | tuple[str, str] | AcfRef) -> str:
        """The verdict on the build without `control` against the winner's (_verdict: "same", "figures", "scored",
        "other" or "fails"; "cancelled" where a stop ended it)."""
        if self._cancelled.is_set():
            return "cancelled"
        built = self._build(without(self.controls, control))
        reference = self._reference.result()  # the winner's rebuild, in its own tree meanwhile
        if reference is None or self._cancelled.is_set() or stopped():
            return "cancelled"  # a build a stop killed says nothing of the control: nothing said
        verdict = self._verdict(built, reference)
        found = {"fails": "does not build without it: kept", "same": "same code without it: dropped",
                 "figures": "other code without it, the same figures of this tune's objectives: dropped",
                 "scored": "the same figures of this tune's objectives without it (scored as the search's candidates "
                           "were): dropped",
                 "other": "other code without it: kept"}[verdict]
        with self._lock:
            self._told += 1
            # A rebuild of the whole target each: a large one takes minutes, each said as it ends.
            self.say(f"minimizing the pin, {self._told}/{len(self.candidates)}: {spelled(control)}: {found}")
        return verdict

    def _drop_together(self, same: list[str | tuple[str, str] | AcfRef], reference: CodeIdentity) -> Controls:
        """`controls` less every control in `same`, if that is still the winner's code (or, in a static tune, its
        figures); else one at a time."""
        together = self.controls
        for control in same:
            together = without(together, control)
        if not same:
            return together
        if len(same) == 1:  # its own trial built exactly this
            self._same_code = self._verdicts[self.candidates.index(same[0])] == "same"
            return together
        verdict = self._verdict(self._build(together), reference)
        if verdict in DROPPED:
            self._same_code = verdict == "same"
            return together
        self.say(f"minimizing the pin: without all {len(same)} of them at once the code differs; "
                 "dropping them one at a time")
        current = self.controls
        for control in same:
            trial = without(current, control)
            verdict = self._verdict(self._build(trial), reference)
            if verdict in DROPPED:
                current = trial
                self._same_code = self._same_code and verdict == "same"
        return current

