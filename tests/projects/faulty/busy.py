"""A TEST DOUBLE for a slow configure or compile step: `busy.py FLAG [COMMAND ...]`.

When the file FLAG exists, first write FLAG.started-<pid> and take as many
seconds as FLAG says (60 if it says none); then run COMMAND, if
any, in its place (as a CMAKE_CUDA_COMPILER_LAUNCHER, the compile it wraps).
A FLAG saying "<seconds> candidates" makes only candidates' compiles busy: those
whose --options-file (what ciq_build's CMake module gives the tuned target's
compiles) holds a -D source parameter, which the baseline's never does.

It sleeps through those seconds: a step that spun (even at nice 19) cost the
suite its seconds in CPU and told the tests of interrupted tunes nothing a
sleeping step does not (a stop must end it either way).
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
    time.sleep(float(words[0]) if words else 60.0)
if command:
    os.execvp(command[0], command)
