#!/usr/bin/env python3
"""TEST DOUBLE for a CUDA compiler launcher that notes which GPUs its compile could see:
CMAKE_CUDA_COMPILER_LAUNCHER="python;gpu_recording_launcher.py;FILE". Each CUDA compile appends one line,
CUDA_VISIBLE_DEVICES as Ray set it for the worker running it ("<unset>" for a worker holding no GPU),
then runs the real compiler.
"""

import os
import sys

record, command = sys.argv[1], sys.argv[2:]
with open(record, "a") as notes:
    notes.write(os.environ.get("CUDA_VISIBLE_DEVICES", "<unset>") + "\n")
os.execvp(command[0], command)
