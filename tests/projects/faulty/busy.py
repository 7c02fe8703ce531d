"""A TEST DOUBLE for a slow configure or compile step: `busy.py FLAG [COMMAND ...]`.

When the file FLAG exists, first write FLAG.started-<pid> and keep a CPU busy
for as many seconds as FLAG says (60 if it says none); then run COMMAND, if
any, in its place (as a CMAKE_CUDA_COMPILER_LAUNCHER, the compile it wraps).
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
if text is not None:
    with open(f"{flag}.started-{os.getpid()}", "w"):
        pass
    end = time.monotonic() + (float(text) if text else 60.0)
    while time.monotonic() < end:
        pass
if command:
    os.execvp(command[0], command)
