"""A TEST DOUBLE for a slow configure or compile step: `busy.py FLAG [COMMAND ...]`.

When the file FLAG exists, first write FLAG.started-<pid> and keep a CPU busy
for as many seconds as FLAG says (60 if it says none); then run COMMAND, if
any, in its place (as a CMAKE_CUDA_COMPILER_LAUNCHER, the compile it wraps).
A FLAG saying "<seconds> candidates" makes only candidates' compiles busy: those
whose --options-file (what ciq_build's CMake module gives the tuned target's
compiles) holds a -D source parameter, which the baseline's never does.

The busy loop runs in a child at the lowest priority (nice 19): it takes only
CPU time nothing else wants, as a step that waits would, so the compiles and
the driver it runs beside are not starved of a two-core machine's CPUs (two
busy steps at full priority held both and slowed the test beside them; the
COMMAND after it runs at the priority the step was started with).
"""

import os
import sys
import time

flag, command = sys.argv[1], sys.argv[2:]
try:
    with open(flag) as handle:
        text = handle.read().strip()
except OSError:
    text = None


def _a_candidates_compile(argv: list[str]) -> bool:
    for word in argv:
        if word.startswith("--options-file="):
            with open(word.split("=", 1)[1]) as options:
                return any(line.startswith("-D") for line in options.read().split())
    return False


words = text.split() if text is not None else []
if text is not None and ("candidates" not in words[1:] or _a_candidates_compile(command)):
    with open(f"{flag}.started-{os.getpid()}", "w"):
        pass
    end = time.monotonic() + (float(words[0]) if words else 60.0)
    child = os.fork()
    if child == 0:
        os.nice(19)
        while time.monotonic() < end:
            pass
        os._exit(0)
    os.waitpid(child, 0)
if command:
    os.execvp(command[0], command)
