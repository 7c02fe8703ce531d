"""scripts/bootstrap says what it does: a `step` line before each command that takes time.

Running the script itself here would reinstall the test run's own .venv under the running tests,
so this reads the script: each command that creates the venv, runs pip, runs Python or installs
packages must come after a `step "..."` line of its own (pip runs with -q and its install takes
1 to 5 minutes the first time: before, the set-up printed nothing for that long).
"""
from __future__ import annotations

import re
import subprocess

from support import REPO_ROOT

BOOTSTRAP = REPO_ROOT / "scripts" / "bootstrap"
# Commands that take time, as the script spells them.
SLOW = re.compile(r'(-m venv|-m pip install|^\.venv/bin/python - <<|apt-get install)')


def test_each_slow_command_of_bootstrap_is_announced_by_a_step_line() -> None:
    lines = [line.strip() for line in BOOTSTRAP.read_text().splitlines()]
    announced = False
    slow_seen = 0
    for number, line in enumerate(lines, 1):
        if line.startswith("#"):
            continue
        if re.match(r'step "[^"]+"', line):
            announced = True
        elif SLOW.search(line):
            slow_seen += 1
            assert announced, f"scripts/bootstrap:{number} runs {line!r} with no `step` line before it"
            announced = False
    assert slow_seen >= 4, "the venv, pip (twice) and the library links should each be a step"


def test_the_step_function_prints_a_prefixed_line_with_the_elapsed_time() -> None:
    # The script's own definition of `step`, run by bash: what a user sees.
    definition = next(line for line in BOOTSTRAP.read_text().splitlines() if line.startswith("step()"))
    said = subprocess.run(["bash", "-c", f'{definition}\nstep "upgrading pip"'], capture_output=True,
                          text=True, check=True).stdout
    assert re.fullmatch(r"bootstrap: \[0m\d+s\] upgrading pip\n", said), said
