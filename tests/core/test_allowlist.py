"""The pinned-flag allow-list: what it lets through, what it refuses, and that CMake agrees."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from ciq_build.core.allowlist import (
    allowlist_path,
    check_define,
    check_flag,
    is_allowed,
    load_patterns,
    parse_patterns,
)
from ciq_build.errors import RecordError, UnsafeFlagError
from ciq_build.measure import proc
from support import REPO_ROOT

# Every canonical spelling, and the edges of each family. (ARCHITECTURE.md's
# --register-usage-level and -Ofast-compile are refused by nvcc 13.0 and 13.3;
# the working spellings are -Xptxas=--register-usage-level and --Ofast-compile.)
ALLOWED = [
    "-maxrregcount=16", "-maxrregcount=64", "-maxrregcount=128", "-maxrregcount=255",
    "-Xptxas=--register-usage-level=0", "-Xptxas=--register-usage-level=5", "-Xptxas=--register-usage-level=10",
    "-Xptxas=-O0", "-Xptxas=-O1", "-Xptxas=-O2", "-Xptxas=-O3",
    "--extra-device-vectorization",
    "-Xptxas=--allow-expensive-optimizations=true", "-Xptxas=--allow-expensive-optimizations=false",
    *[f"-Xptxas=--def-load-cache={v}" for v in ("ca", "cg", "cs", "lu", "cv")],
    *[f"-Xptxas=--def-store-cache={v}" for v in ("wb", "cg", "cs", "wt")],
    *[f"--Ofast-compile={v}" for v in ("0", "min", "mid", "max")],
    "--use_fast_math",
    "-ftz=true", "-ftz=false", "-prec-div=true", "-prec-div=false",
    "-prec-sqrt=true", "-prec-sqrt=false", "-fmad=true", "-fmad=false",
]

# Flags that run programs, load plugins, read or write files, or smuggle a
# second argument past a naive check. None may match.
ATTACKS = [
    "-Xcompiler=-fplugin=/tmp/evil.so", "-Xcompiler", "-ccbin=/tmp/evil", "-ccbin", "--compiler-bindir=/tmp",
    "-Xlinker=--wrap=main", "--options-file=/etc/passwd", "-optf=/tmp/x", "-include=/etc/passwd",
    "-I/tmp", "-I=/tmp", "-isystem=/tmp", "--apply-controls=/tmp/x.acf", "-Xptxas=--apply-controls=/tmp/x.acf",
    "-Xnvlink=--foo", "--keep-dir=/tmp", "--keep", "-o=/tmp/x", "-odir=/tmp", "-Xptxas=-o=/tmp/x",
    "--output-file=/tmp/x", "-Xarchive=x", "--run", "--dependency-output=/tmp/d", "-DX=1", "-UX",
    "-maxrregcount=32 -Xcompiler=x", "-maxrregcount=32\t-Xcompiler=x", "-maxrregcount=32\n",
    "-maxrregcount=32\n-Xcompiler=x", "\n-maxrregcount=32", "-maxrregcount=32\r", " -maxrregcount=32",
    "-maxrregcount=32 ", "-maxrregcount=32\x00", "-maxrregcount=\x0032", "-Xptxas=-O3,-Xcompiler",
    "-Xptxas=-O3,--apply-controls=/tmp/x", "-Xptxas=-O3;-Xcompiler=x", "-Xptxas=-O3 -Xptxas=-v",
    "-maxrregcount=32\"", "\"-maxrregcount=32\"", "'-maxrregcount=32'", "-maxrregcount=$(id)",
    "-maxrregcount=`id`", "-maxrregcount=3/2", "-maxrregcount=../x",
    "-maxrregcount=\uff13\uff12",  # fullwidth digits
    "-maxrregcount=\u0663\u0662",  # Arabic-Indic digits (Python's \d would match these)
    "\u2010maxrregcount=32",  # Unicode hyphen
    "\u2212maxrregcount=32",  # minus sign
    "-maxrregcount\uff1d32",  # fullwidth equals
    "-Xptxas=-\u039f3",  # Greek capital omicron for O
    "-ftz=tru\u0435",  # Cyrillic e
    "-maxrregcount=0", "-maxrregcount=", "-maxrregcount=1024", "-maxrregcount=1", "-maxrregcount=15",
    "-maxrregcount=-1", "-maxrregcount=0x40",
    "-maxrregcount=256", "-maxrregcount=999",  # outside nvcc's 16..255: ptxas ignores or raises them
    "-maxrregcount=64=1", "-maxrregcount", "-Xptxas=-O4", "-Xptxas=-O", "-Xptxas -O3", "-O3",
    "-Xptxas=--register-usage-level=11", "-ftz=1", "-ftz=TRUE", "-fmad=", "--use_fast_math=true",
    "--USE_FAST_MATH", "--Ofast-compile=fast",
    "--register-usage-level=5", "-Ofast-compile=max",  # spellings nvcc refuses: a pin with them breaks builds
    "-Xptxas=--def-load-cache=ca,cg", "", " ", "-",
    "-Xptxas=--allow-expensive-optimizations=true -Xcompiler=-fplugin=x",
]


@pytest.fixture(scope="module")
def patterns():
    return load_patterns()


def test_the_shipped_allowlist_is_found_and_nonempty(patterns):
    assert allowlist_path() == REPO_ROOT / "cmake" / "ciq_build_rules.txt"
    assert len(patterns) >= 10


@pytest.mark.parametrize("flag", ALLOWED)
def test_canonical_flags_are_allowed(patterns, flag):
    assert is_allowed(flag, patterns)
    check_flag(flag, patterns)


@pytest.mark.parametrize("flag", ATTACKS, ids=[ascii(a) for a in ATTACKS])
def test_dangerous_or_smuggled_flags_are_refused(patterns, flag):
    assert not is_allowed(flag, patterns)
    with pytest.raises(UnsafeFlagError) as info:
        check_flag(flag, patterns)
    assert isinstance(info.value, RecordError)  # callers may catch the record error family
    assert repr(flag) in str(info.value), "the message names the refused flag"


def test_refusal_message_says_why_and_how_to_fix():
    with pytest.raises(UnsafeFlagError) as info:
        check_flag("-Xcompiler=-fplugin=x.so")
    text = str(info.value)
    assert "runs programs" in text and "allow" in text
    assert "tune" in text and "controls.flags" in text


def test_apply_controls_is_pointed_at_the_acf_field():
    with pytest.raises(UnsafeFlagError, match="controls.acf"):
        check_flag("-Xptxas=--apply-controls=x.acf")


@pytest.mark.parametrize("value", [None, 64, b"-Xptxas=-O3", ["-Xptxas=-O3"], 1.5, True])
def test_non_string_flags_are_refused(value):
    with pytest.raises(UnsafeFlagError, match="not a string"):
        check_flag(value)


def test_a_careless_allowlist_edit_still_cannot_admit_separators():
    # Even a pattern that matches everything cannot let through characters that
    # make a second argument: the character check comes first.
    everything = parse_patterns("flag -[a-zA-Z0-9_=-]*\n")
    assert is_allowed("-maxrregcount=7", everything)
    for smuggled in ("-O3,-Xcompiler", "-a -b", "-a\n", "-a/b", "-a\x00"):
        assert not is_allowed(smuggled, everything)


@pytest.mark.parametrize(
    "line",
    [r"-maxrregcount=\d+", "-maxrregcount=.*", "-Xptxas=-O[0-3]{1}", "^-fmad=true$", "-a(?=b)", "-a+?",
     "-a;-b", r"-a\.b"],
)
def test_patterns_outside_the_shared_regex_subset_are_rejected(tmp_path, line):
    path = tmp_path / "allow.txt"
    path.write_text(f"schema 1\n# comment\nflag {line}\n", encoding="utf-8")
    with pytest.raises(UnsafeFlagError, match=r"allow\.txt:3"):
        load_patterns(path)


def test_comments_and_blank_lines_are_skipped(tmp_path):
    path = tmp_path / "allow.txt"
    path.write_text("schema 1\n# -Xcompiler\n   \n  # indented comment\nflag -fmad=(true|false)\n", encoding="utf-8")
    chosen = load_patterns(path)
    assert len(chosen) == 1
    assert is_allowed("-fmad=true", chosen) and not is_allowed("-Xcompiler", chosen)


def test_unreadable_allowlist_is_a_user_error(tmp_path):
    with pytest.raises(UnsafeFlagError, match="reinstall"):
        load_patterns(tmp_path / "missing.txt")


@pytest.mark.parametrize("name,value", [("TILE", "64"), ("_X1", "1.5e-3"), ("MODE", "a+b_c"), ("EMPTY", "")])
def test_plain_defines_are_allowed(name, value):
    check_define(name, value)


@pytest.mark.parametrize(
    "name,value",
    [("1TILE", "1"), ("TI LE", "1"), ("", "1"), ("T-1", "1"), ("TILE", "64 -Xcompiler=x"), ("TILE", "a,b"),
     ("TILE", '"x"'), ("TILE", "/etc/passwd"), ("TILE", "$(id)"), ("TILE", "1\n"), ("TILE", "\uff16\uff14"),
     ("T\u0130LE", "1"), ("TILE", None), (None, "1"), ("TILE", 64)],
)
def test_unsafe_defines_are_refused(name, value):
    with pytest.raises(UnsafeFlagError, match="define"):
        check_define(name, value)


# ----------------------------------------------------------------- CMake agrees

_CMAKE_SCRIPT = r"""
include("${MODULE}")
foreach(_i RANGE 1 ${COUNT})
  _ciq_rules_is_flag(_ok "${CASE_${_i}}")
  if(_ok)
    message(STATUS "CASE ${_i} 1")
  else()
    message(STATUS "CASE ${_i} 0")
  endif()
endforeach()
"""


def _cmakes() -> list[str]:
    found = []
    for candidate in (shutil.which("cmake"), str(Path(sys.executable).parent / "cmake")):
        if candidate and Path(candidate).is_file() and candidate not in found:
            found.append(candidate)
    return found


def _cmake_quoted(text: str) -> str:
    """`text` as a CMake quoted argument (so no command-line transport can alter it)."""
    escapes = {"\\": "\\\\", '"': '\\"', "$": "\\$", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
    return '"' + "".join(escapes.get(ch, ch) for ch in text) + '"'


@pytest.mark.parametrize("cmake", _cmakes() or [pytest.param(None, marks=pytest.mark.skip("no cmake"))])
def test_cmake_reads_the_allowlist_exactly_like_python(tmp_path, cmake, patterns):
    # The CMake module's own rule-book reader (_ciq_rules_is_flag); a flag
    # that one reader accepts and the other refuses would make the builds differ.
    # A CMake string cannot hold NUL, so that case is left to the Python side.
    cases = [c for c in ALLOWED + ATTACKS if "\x00" not in c]
    script = tmp_path / "check.cmake"
    lines = [f"set(CASE_{i} {_cmake_quoted(case)})" for i, case in enumerate(cases, start=1)]
    script.write_text("\n".join(lines) + _CMAKE_SCRIPT, encoding="utf-8")
    args = [cmake, f"-DMODULE={REPO_ROOT / 'cmake' / 'ciq_build.cmake'}", f"-DCOUNT={len(cases)}", "-P", str(script)]
    result = proc.run(args, timeout=60)
    assert result.ok, result.output_tail()
    verdicts = {}
    for line in (result.stdout + result.stderr).splitlines():
        if "CASE " in line:
            index, ok = line.split("CASE ", 1)[1].split()
            verdicts[int(index)] = ok == "1"
    assert len(verdicts) == len(cases)
    for i, case in enumerate(cases, start=1):
        assert verdicts[i] == is_allowed(case, patterns), f"CMake and Python disagree on {case!r}"
    assert sum(verdicts.values()) == len(ALLOWED)
