"""The benchmark: imports the extension the tune built (first on PYTHONPATH) and reports a metric.

No GPU here: it times a host call of the built module (tile()), so it is a CPU
stand-in for a kernel timing, and prints the tile the .cu compile saw.
"""

import importlib
import time

# Imported by name: the module exists only once built (mypy, checking this file, has none to read).
kern = importlib.import_module("pkg._kern")

start = time.perf_counter()
for _ in range(1000):
    tile = kern.tile()
elapsed_ms = (time.perf_counter() - start) * 1000.0
print(f"CIQ_METRIC time_ms={elapsed_ms:.6f}")
print(f"CIQ_METRIC tile={tile}")
print("CIQ_CHECK PASS")
