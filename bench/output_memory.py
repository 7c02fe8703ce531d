"""Peak memory and time of the driver while a benchmark floods its output (issue 8, defect 9).

    python bench/output_memory.py [OLD_CHECKOUT]

Runs proc.run on tests/programs/unruly.py (200 MiB of output, then endless
output under a 3 s timeout) in a fresh process per case, and prints the
driver's own peak resident set (VmHWM). With OLD_CHECKOUT (e.g. a `git
worktree` of an older commit) the same cases run on its ciq_build too, side by
side, with the ratios.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
UNRULY = REPO / "tests" / "programs" / "unruly.py"
CASES = (("200 MiB of output", "60", ["big", "200"]), ("endless output, 3 s timeout", "3", ["endless"]))
PROBE = """
import sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
if Path(sys.argv[1], "ciq_build", "proc.py").is_file():  # before the sub-packages
    from ciq_build import proc
else:
    from ciq_build.measure import proc
assert proc.__file__.startswith(sys.argv[1]), proc.__file__
started = time.monotonic()
proc.run([sys.executable, *sys.argv[4:]], float(sys.argv[2]))
seconds = time.monotonic() - started
peak = next(l for l in Path("/proc/self/status").read_text().splitlines() if l.startswith("VmHWM:")).split()[1]
print(int(peak) // 1024, f"{seconds:.1f}")
"""


def measure(checkout: Path, timeout: str, args: list[str]) -> tuple[int, float]:
    done = subprocess.run([sys.executable, "-c", PROBE, str(checkout), timeout, "-", str(UNRULY), *args],
                          capture_output=True, text=True, timeout=300, check=True)
    mib, seconds = done.stdout.split()
    return int(mib), float(seconds)


def main() -> int:
    old = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else None
    for name, timeout, args in CASES:
        new_mib, new_s = measure(REPO, timeout, args)
        line = f"{name:32} this checkout: {new_mib:6d} MiB peak, {new_s:5.1f} s"
        if old is not None:
            old_mib, old_s = measure(old, timeout, args)
            line += f" | old: {old_mib:6d} MiB, {old_s:5.1f} s | memory ratio old/new {old_mib / new_mib:.1f}x"
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
