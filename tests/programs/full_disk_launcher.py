#!/usr/bin/env python3
"""TEST DOUBLE for a full disk, for machines where a real full file system cannot be made
(mounting a small tmpfs needs root): a CUDA compiler launcher
(CMAKE_CUDA_COMPILER_LAUNCHER) that, while the file named by $CIQ_TEST_FULL_DISK
exists, fails the compile with the message the assembler under nvcc printed on a
real full tmpfs here, and otherwise runs the compiler.
"""

import os
import sys

flag = os.environ.get("CIQ_TEST_FULL_DISK")
if flag and os.path.exists(flag):
    output = sys.argv[sys.argv.index("-o") + 1] if "-o" in sys.argv else "kern.o"
    print("/tmp/ccy3N78Y.s: Assembler messages:", file=sys.stderr)
    print(f"/tmp/ccy3N78Y.s: Fatal error: can't write 258 bytes to section .text of {output}: "
          "'No space left on device'", file=sys.stderr)
    sys.exit(1)
os.execvp(sys.argv[1], sys.argv[1:])
