"""Minimal pins: before pinning, drop each control of the winner that leaves the machine code as it is.

A search hands the winner every control it happened to carry, most of which
may change nothing (``-maxrregcount=208`` on a 10-register kernel, a -D that
the source overrides with a #define of its own). A pin should say only what
matters, so each control is taken out in turn (greedy, one at a time) and the
target rebuilt whole in the winner's tree: a control is dropped when the build
without it has the same device code (the code hash and resource usage that
`verify` checks, per object and architecture) and the same host code (a -D can
change only the host side: a launch's grid, a loop count).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ciq_build.compiler import metrics
from ciq_build.compiler.controls import AcfRef, Controls, nvcc_arguments
from ciq_build.compiler.fingerprint import Fingerprints, object_fingerprints
from ciq_build.compiler.toolchain import Toolchain
from ciq_build.errors import SearchError
from ciq_build.project.cmake_trees import ScratchTree

# What one build's code is: the device fingerprints, and each object's host code hash.
CodeIdentity = tuple[Fingerprints, dict[str, str]]


@dataclass(frozen=True)
class MinimalPin:
    """The winner's controls with the no-op ones dropped, and its objects rebuilt with exactly those."""

    controls: Controls
    objects: tuple[Path, ...]
    dropped: tuple[str, ...]  # each dropped control, as nvcc reads it ("-maxrregcount=208", "-DUNROLL=8")

    def describe(self) -> str:
        """One line for the tune's output: what was dropped and why."""
        if not self.dropped:
            return ""
        return (f"dropped from the pin, since the machine code is the same without them: {', '.join(self.dropped)}")


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


def minimize(controls: Controls, objects: tuple[Path, ...], tree: ScratchTree, toolchain: Toolchain,
             timeout: float, say: Callable[[str], None]) -> MinimalPin:
    """`controls` without every control whose removal leaves the code identical; `objects` are its build in `tree`.

    Full builds (never the ptxas-only path): the objects themselves are compared.
    On return the tree holds the build of the returned controls.
    """
    candidates: list[str | tuple[str, str] | AcfRef] = [*controls.flags, *controls.defines]
    if controls.acf is not None:
        candidates.append(controls.acf)
    if not candidates:
        return MinimalPin(controls, objects, ())
    object_dir = tree.mirror(tree.manifest.object_dir)
    reference = code_identity(objects, object_dir, toolchain)
    if not reference[0]:  # no device code to compare: every removal would look like a no-op
        say("the pin is not minimized: the winner's build has no object with device code to compare")
        return MinimalPin(controls, objects, ())
    say(f"minimizing the pin: rebuilding without each of its {len(candidates)} controls in turn")
    current, current_objects, dropped = controls, objects, []
    in_tree = controls  # whose build the tree holds
    for tried, control in enumerate(candidates, 1):
        trial = without(current, control)
        built = tree.build(trial, timeout)
        in_tree = trial
        if not built.ok:  # it does not build without it: the control matters
            found = "does not build without it: kept"
        elif code_identity(built.objects, object_dir, toolchain) == reference:
            current, current_objects = trial, built.objects
            dropped.append(spelled(control))
            found = "same code without it: dropped"
        else:
            found = "other code without it: kept"
        # A rebuild of the whole target each: a large one takes minutes, each said as it ends.
        say(f"minimizing the pin, {tried}/{len(candidates)}: {spelled(control)}: {found}")
    if in_tree != current:
        rebuilt = tree.build(current, timeout)
        if not rebuilt.ok:  # built a moment ago: only the machine can make it fail now
            raise SearchError(f"the minimal pin {nvcc_arguments(current)} no longer builds: {rebuilt.message}")
        current_objects = rebuilt.objects
    return MinimalPin(current, current_objects, tuple(dropped))
