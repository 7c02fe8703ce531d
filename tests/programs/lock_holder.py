#!/usr/bin/env python3
"""Hold a target's tune lock: `lock_holder.py <lock> <seconds>`; prints "locked" once held."""

import sys
import time

from ciq_build.state.journal import TargetLock

with TargetLock(sys.argv[1], wait=False):
    print("locked", flush=True)
    time.sleep(float(sys.argv[2]))
print("released", flush=True)
