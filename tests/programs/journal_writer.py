#!/usr/bin/env python3
"""Append numbered records to a journal until killed: `journal_writer.py <journal> <seed>`.

Record sizes vary up to ~2 MB so that a SIGKILL can land inside a write.
"""

import random
import sys
from pathlib import Path

from ciq_build.state.journal import Journal

journal = Journal(Path(sys.argv[1]))
rng = random.Random(int(sys.argv[2]))
index = 0
while True:
    size = rng.choice([10, 1_000, 100_000, 2_000_000])
    journal.append({"i": index, "payload": "x" * size})
    index += 1
