#!/usr/bin/env python3
"""TEST DOUBLE for a slow compile, as a CUDA compiler launcher:
CMAKE_CUDA_COMPILER_LAUNCHER="python;slow_compile_launcher.py;FOLDER". While FOLDER exists,
each CUDA compile first leaves a file named by its pid there, then waits a second and a half,
so that a test can kill the Ray worker mid-evaluation; then it runs the real compiler.
"""

import os
import sys
import time

folder, command = sys.argv[1], sys.argv[2:]
if os.path.isdir(folder):
    with open(os.path.join(folder, str(os.getpid())), "w") as note:
        note.write(" ".join(command))
    time.sleep(1.5)
os.execvp(command[0], command)
