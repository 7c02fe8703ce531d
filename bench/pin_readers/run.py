"""The two pin readers on thousands of generated hostile records: do they judge each alike?

    python bench/pin_readers/run.py [--count 2400] [--seed 36] [--batch 400]

Generates ``--count`` hostile records (hostile.py: text CMake would evaluate, odd versions and
architecture spellings, NUL bytes, byte mutations, hostile values in every field), writes each into a
pin dir of its own, and judges each with Python's reader (``resolve_build_pin``) and the CMake module's
(``_ciq_resolve_pin`` in ``cmake -P``, ``--batch`` records per process; where CMake stops on a record,
that record counts as a CMake error and the batch goes on after it). CIQ_PROBE is defined for CMake as
a variable, a cache entry and in the environment. Prints:

- the verdicts (applied / skipped / refused ...) and how many records both readers judged alike
  (status and nvcc arguments), with the first disagreements;
- refused by both: how many with the same reason (the message without the words around it);
- CMake errors (a record that stopped CMake instead of being judged) and expanded variables (a CMake
  message holding CIQ_PROBE's value or the cmake path behind ``${CMAKE_COMMAND}``).

The CI test (tests/core/test_rule_book_agreement.py) judges a sample of the same generator. No GPU, no
CUDA compiler: the readers only read.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

if __package__ in (None, ""):  # run as a script: the repository root on the path, for bench.*
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.pin_readers.hostile import PROBE_VALUE, hostile_cases  # noqa: E402
from bench.pin_readers.readers import Verdict, cmake_verdicts, prepare, python_verdict, reason  # noqa: E402


def judge_with_cmake(prepared: list, tmp: Path, cmake: str, batch: int) -> tuple[list[Verdict | None], int]:
    """CMake's verdicts, `batch` records per cmake -P; None (and one error counted) for a record CMake stopped at."""
    verdicts: list[Verdict | None] = []
    errors = 0
    start = 0
    while start < len(prepared):
        chunk = prepared[start:start + batch]
        found, _ = cmake_verdicts(chunk, tmp, cmake, probe=PROBE_VALUE)
        judged = [v for v in found if v is not None]
        verdicts.extend(judged)
        start += len(judged)
        if len(judged) < len(chunk):  # CMake stopped at this record: an error, then on after it
            verdicts.append(None)
            errors += 1
            start += 1
    return verdicts, errors


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=2400)
    parser.add_argument("--seed", type=int, default=36)
    parser.add_argument("--batch", type=int, default=400)
    parser.add_argument("--cmake", default=shutil.which("cmake", path=str(Path(sys.executable).parent))
                        or shutil.which("cmake"))
    args = parser.parse_args()
    cases = hostile_cases(args.count, args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        prepared = prepare(cases, Path(tmp) / "pins")
        started = time.monotonic()
        python = [python_verdict(p) for p in prepared]
        python_s = time.monotonic() - started
        started = time.monotonic()
        cmake, errors = judge_with_cmake(prepared, Path(tmp), args.cmake, args.batch)
        cmake_s = time.monotonic() - started
    cmake_path = str(Path(args.cmake).resolve())
    alike = same_reason = both_refused = expanded = 0
    differ = []
    for case, py, cm in zip(cases, python, cmake):
        if cm is None:
            continue
        if PROBE_VALUE in cm[2] or cmake_path in cm[2]:
            expanded += 1
        if py[:2] == cm[:2]:
            alike += 1
        else:
            differ.append(f"  {case.name}: python {py[0]} {list(py[1])[:3]} / cmake {cm[0]} {list(cm[1])[:3]}\n"
                          f"    python: {py[2][:160]}\n    cmake:  {cm[2][:160]}")
        if py[0] == cm[0] == "refused":
            both_refused += 1
            same_reason += reason(py[2]) == reason(cm[2])
    print(f"records: {len(cases)} (seed {args.seed}); Python {python_s:.1f} s, CMake {cmake_s:.1f} s "
          f"in batches of {args.batch}")
    print("python verdicts: " + ", ".join(f"{k} {v}" for k, v in sorted(Counter(v[0] for v in python).items())))
    print(f"identical verdict and arguments: {alike} of {len(cases)}; differing: {len(differ)}")
    print(f"refused by both: {both_refused}, with the same reason: {same_reason}")
    print(f"CMake errors (a record that stopped CMake): {errors}")
    print(f"expanded variables in CMake's messages: {expanded}")
    for line in differ[:10]:
        print(line)
    return 0 if not differ and not errors and not expanded else 1


if __name__ == "__main__":
    sys.exit(main())
