"""Pinned records: atomic write, strict read, ACF containment and hashing, toolchain check."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ciq_build.compiler.controls import AcfRef, Controls
from ciq_build.compiler.fingerprint import ObjectInfo, compare
from ciq_build.core.metric_unit import relative_change
from ciq_build.errors import RecordError, UnsafeFlagError
from ciq_build.pin.apply import check_architectures, check_defines, check_toolchain
from ciq_build.pin.display import format_record
from ciq_build.pin.read import read_record
from ciq_build.pin.record import (
    PinnedRecord,
    RecordObjective,
    RecordToolchain,
    ScoreSummary,
    architecture_set,
    record_path,
)
from ciq_build.pin.write import write_record

ACF_BYTES = b"0123456789abcdef" * 64  # stands in for compileiq's opaque ACF blob
# Where write_record pins it: under its content name (issue 21: a new pin never replaces a committed ACF).
PINNED_ACF = f"gemm.{hashlib.sha256(ACF_BYTES).hexdigest()[:12]}.acf"


def make_record(target: str = "gemm", acf: AcfRef | None = None) -> PinnedRecord:
    return PinnedRecord(
        target=target,
        controls=Controls(
            flags=("-maxrregcount=128", "-Xptxas=-O3"),
            defines=(("TILE", "64"), ("UNROLL", "4")),
            acf=acf,
        ),
        toolchain=RecordToolchain(cuda="13.3", nvcc_version="13.3.73", ptxas_version="13.3.73",
                                  architectures=("90a",)),
        provenance={"engine": "ciq_build.ga", "seed": 1, "budget": {"generations": 4, "pool_size": 8},
                    "created": "2026-12-02T10:00:00+0000", "ciq_build_version": "0.1.0",
                    "search_space": {"knob.maxrregcount": "choice(64,128)"}},
        objectives=(RecordObjective("time", "min"), RecordObjective("metric:gflops", "max")),
        baseline=ScoreSummary((1.25, 812.0), (0.01, 3.5)),
        winner=ScoreSummary((1.1, 901.5), (0.01, 2.0)),
        objects={"CMakeFiles/gemm.dir/gemm.cu.o": {"90a": ObjectInfo(64, 0, "ab" * 32)}},
    )


@pytest.fixture
def acf_source(tmp_path: Path) -> Path:
    path = tmp_path / "scratch" / "candidate-17.acf"
    path.parent.mkdir()
    path.write_bytes(ACF_BYTES)
    return path


@pytest.fixture
def pinned(tmp_path: Path, acf_source: Path) -> Path:
    """A pin dir holding a valid gemm.json + its ACF; returns the record path."""
    acf = AcfRef(acf_source, "ptxas", hashlib.sha256(ACF_BYTES).hexdigest())
    write_record(tmp_path / "pins", make_record(acf=acf), acf_source)
    return tmp_path / "pins" / "gemm.json"


def edit(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


# ------------------------------------------------------------------ writing


def test_write_then_read_gives_the_same_record(tmp_path, acf_source):
    acf = AcfRef(acf_source, "ptxas", "")  # sha filled in by write_record
    written = write_record(tmp_path / "pins", make_record(acf=acf), acf_source)
    pinned_acf = tmp_path / "pins" / PINNED_ACF
    assert written.controls.acf == AcfRef(pinned_acf.resolve(), "ptxas", hashlib.sha256(ACF_BYTES).hexdigest())
    assert pinned_acf.read_bytes() == ACF_BYTES
    assert read_record(tmp_path / "pins" / "gemm.json") == written
    # Everything else is what the caller gave.
    assert replace(written, controls=replace(written.controls, acf=acf)) == make_record(acf=acf)


def test_record_file_matches_the_documented_schema(pinned):
    data = json.loads(pinned.read_text())
    assert data["schema"] == 1 and data["target"] == "gemm"
    assert data["controls"] == {
        "flags": ["-Xptxas=-O3", "-maxrregcount=128"],  # Controls keeps flags sorted
        "defines": {"TILE": "64", "UNROLL": "4"},
        "acf": {"file": PINNED_ACF, "sha256": hashlib.sha256(ACF_BYTES).hexdigest(), "compiler": "ptxas"},
    }
    assert data["toolchain"]["cuda"] == "13.3"
    assert data["objectives"] == [{"name": "time", "direction": "min"}, {"name": "metric:gflops", "direction": "max"}]
    assert data["winner"] == {"scores": [1.1, 901.5], "spread": [0.01, 2.0]}
    assert data["objects"]["CMakeFiles/gemm.dir/gemm.cu.o"]["90a"]["registers"] == 64


def test_write_without_acf_round_trips_and_drops_a_stale_acf(pinned):
    pin_dir = pinned.parent
    written = write_record(pin_dir, make_record())
    assert not (pin_dir / PINNED_ACF).exists()
    assert read_record(pinned) == written == make_record()
    assert sorted(os.listdir(pin_dir)) == [".gitattributes", "gemm.json"]  # no temp files left


def test_write_accepts_the_record_path_too(tmp_path):
    written = write_record(record_path(tmp_path, "gemm"), make_record())
    assert read_record(tmp_path / "gemm.json") == written


def test_rewriting_with_the_pinned_acf_itself_keeps_it(pinned):
    record = read_record(pinned)
    again = write_record(pinned.parent, record)
    assert again == record and read_record(pinned) == record


def test_acf_changed_since_measurement_is_refused(tmp_path, acf_source):
    acf = AcfRef(acf_source, "ptxas", "0" * 64)
    with pytest.raises(RecordError, match="changed after it was measured"):
        write_record(tmp_path / "pins", make_record(acf=acf), acf_source)
    assert not (tmp_path / "pins" / "gemm.json").exists()


def test_acf_source_without_acf_controls_is_refused(tmp_path, acf_source):
    with pytest.raises(RecordError, match="controls.acf"):
        write_record(tmp_path / "pins", make_record(), acf_source)


def test_invalid_record_is_never_written_and_the_old_pin_survives(pinned):
    before = pinned.read_bytes()
    with pytest.raises(UnsafeFlagError):  # controls refuse unsafe flags as soon as they are made
        replace(make_record(), controls=Controls(flags=("-Xcompiler=-fplugin=/tmp/x.so",)))
    for bad in (
        replace(make_record(), objectives=(RecordObjective("latency", "min"),)),
        replace(make_record(), objects={"../../outside.o": {}}),
        replace(make_record(), toolchain=RecordToolchain("13")),
    ):
        with pytest.raises(RecordError):
            write_record(pinned.parent, bad)
    assert pinned.read_bytes() == before
    assert sorted(os.listdir(pinned.parent)) == [".gitattributes", PINNED_ACF, "gemm.json"]


def test_non_finite_scores_are_not_written(tmp_path):
    bad = replace(make_record(), winner=ScoreSummary((float("nan"), 1.0), (0.0, 0.0)))
    with pytest.raises(RecordError, match="finite"):
        write_record(tmp_path, bad)


def test_unwritable_pin_dir_is_a_record_error(tmp_path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the pin dir should be")
    with pytest.raises(RecordError, match="PIN_DIR"):
        write_record(blocker / "ciq", make_record())


def test_provenance_must_be_json(tmp_path):
    with pytest.raises(RecordError, match="provenance"):
        write_record(tmp_path, replace(make_record(), provenance={"note": float("inf")}))
    with pytest.raises(RecordError, match="provenance"):
        write_record(tmp_path, replace(make_record(), provenance={"seen": {1, 2}}))
    assert not (tmp_path / "gemm.json").exists()


def test_written_files_are_readable_by_others(pinned):
    assert pinned.stat().st_mode & 0o044 == 0o044
    assert (pinned.parent / PINNED_ACF).stat().st_mode & 0o044 == 0o044


# ------------------------------------------------------------------ reading: syntax


def test_missing_record_says_tune(tmp_path):
    with pytest.raises(RecordError, match="tune"):
        read_record(tmp_path / "gemm.json")


def test_truncated_record_is_named_truncated(pinned):
    text = pinned.read_bytes()
    for cut in (1, len(text) // 3, len(text) // 2, len(text) - 3):
        pinned.write_bytes(text[:cut])
        with pytest.raises(RecordError, match="truncated"):
            read_record(pinned)


@pytest.mark.parametrize("content", [b"", b"   \n", b"not json", b"\xff\xfe{}", b'{"schema": 1} trailing',
                                     b"[" * 50000, b'{"schema": 1, "x": 1e999999}'])
def test_garbage_is_a_record_error(tmp_path, content):
    path = tmp_path / "gemm.json"
    path.write_bytes(content)
    with pytest.raises(RecordError):
        read_record(path)


def test_duplicate_keys_are_refused(pinned):
    # CMake and Python could pick different copies of a repeated key.
    text = pinned.read_text().replace('"flags": [', '"flags": ["-Xptxas=-O0"], "flags": [', 1)
    pinned.write_text(text)
    with pytest.raises(RecordError, match="twice"):
        read_record(pinned)


def test_nan_is_refused(pinned):
    pinned.write_text(pinned.read_text().replace("1.1,", "NaN,", 1))
    with pytest.raises(RecordError, match="comments or bare words"):
        read_record(pinned)


# ------------------------------------------------------------------ reading: schema


def test_newer_schema_says_upgrade_or_retune(pinned):
    edit(pinned, lambda d: d.update(schema=2))
    with pytest.raises(RecordError) as info:
        read_record(pinned)
    assert "newer ciq_build" in str(info.value) and "Upgrade" in str(info.value) and "retune" in str(info.value)


@pytest.mark.parametrize("schema", [0, -1, "1", 1.0, True, None])
def test_other_schemas_are_refused(pinned, schema):
    edit(pinned, lambda d: d.update(schema=schema))
    with pytest.raises(RecordError, match="schema"):
        read_record(pinned)


def _set(path_in_doc: list[Any], value: Any):
    def change(data: dict[str, Any]) -> None:
        node = data
        for key in path_in_doc[:-1]:
            node = node[key]
        if value is _DELETE:
            del node[path_in_doc[-1]]
        else:
            node[path_in_doc[-1]] = value
    return change


_DELETE = object()


@pytest.mark.parametrize(
    "where,value,message",
    [
        (["target"], "conv", "file is named"),
        (["target"], "../gemm", "target"),
        (["target"], 1, "target"),
        (["controls"], [], "controls"),
        (["controls", "flags"], "-Xptxas=-O3", "controls.flags"),
        (["controls", "extra_flags"], ["-Xcompiler=x"], "controls.extra_flags"),
        (["controls", "defines"], ["TILE=64"], "controls.defines"),
        (["controls", "acf", "compiler"], "clang", "controls.acf.compiler"),
        (["controls", "acf", "compiler"], ["ptxas"], "controls.acf.compiler"),
        (["controls", "acf", "sha256"], "ABC", "controls.acf.sha256"),
        (["controls", "acf", "sha256"], "A" * 64, "controls.acf.sha256"),
        (["controls", "acf", "path"], "/tmp/x.acf", "controls.acf.path"),
        (["controls", "acf", "file"], _DELETE, "controls.acf.file"),
        (["toolchain", "cuda"], "13", "toolchain.cuda"),
        (["toolchain", "cuda"], 13.3, "toolchain.cuda"),
        (["toolchain"], _DELETE, "toolchain"),
        (["toolchain", "architectures"], "90a", "toolchain.architectures"),
        (["toolchain", "architectures"], ["90a;80"], "toolchain.architectures[0]"),
        (["provenance"], "ga", "provenance"),
        (["provenance", "seed"], "1", "provenance.seed"),
        (["objectives", 0, "name"], "latency", "objectives[0].name"),
        (["objectives", 0, "name"], "spills", "objective rule"),
        (["objectives", 0, "direction"], "down", "objectives[0].direction"),
        (["objectives", 1, "name"], "time", "twice"),
        (["winner", "scores"], [1.0], "one score and one spread per objective"),
        (["winner", "scores"], [1.0, "fast"], "winner.scores[1]"),
        (["winner", "scores"], [1.0, True], "winner.scores[1]"),
        (["baseline"], [1.0, 2.0], "baseline"),
        (["objects"], [], "objects"),
        (["objects", "../../etc/x.o"], {}, "object_path rule"),
        (["objects", "/abs/x.o"], {}, "object_path rule"),
        (["objects", "CMakeFiles/gemm.dir/gemm.cu.o", "90a", "registers"], -1, "registers"),
        (["objects", "CMakeFiles/gemm.dir/gemm.cu.o", "90a", "stack"], 1.5, "stack"),
        (["objects", "CMakeFiles/gemm.dir/gemm.cu.o", "90a", "code_sha256"], "xyz", "code_sha256"),
        (["objects", "CMakeFiles/gemm.dir/gemm.cu.o", "sm 90"], {}, "arch rule"),
        (["surprise"], 1, "surprise"),
    ],
)
def test_invalid_fields_are_named_with_a_fix(pinned, where, value, message):
    edit(pinned, _set(where, value))
    with pytest.raises(RecordError) as info:
        read_record(pinned)
    assert message in str(info.value)
    assert str(pinned) in str(info.value)


@pytest.mark.parametrize("flag", ["-Xcompiler=-fplugin=/tmp/x.so", "--options-file=/etc/passwd",
                                  "-Xptxas=--apply-controls=/tmp/evil.acf", "-maxrregcount=32 -ccbin=/tmp", 7])
def test_unsafe_flags_in_a_record_are_refused(pinned, flag):
    edit(pinned, lambda d: d["controls"]["flags"].append(flag))
    with pytest.raises(UnsafeFlagError) as info:
        read_record(pinned)
    assert "controls.flags[2]" in str(info.value)


def test_an_undeclared_define_is_refused_in_words_for_cmake_and_setuptools_alike():
    # py-faster-rcnn's trial, a setuptools project: a -D hand-added to the record was refused with "Add it to PARAMS",
    # ciq_tune_target()'s keyword, which a CudaExtension spells params=.
    with pytest.raises(UnsafeFlagError, match=r"controls\.defines\.TILE is refused: only the PARAMS of "
                                              r"ciq_tune_target\(gemm\) \(params= of its CudaExtension\) may be "
                                              r"defined \(declared: UNROLL\)\. Add TILE to PARAMS \(params=\)"):
        check_defines(make_record(), ["UNROLL=range(1,8)"], Path("ciq/gemm.json"))
    # npcuda-example's trial: a value outside the domain said "set a value that PARAMS allows" of a CudaExtension.
    with pytest.raises(UnsafeFlagError, match=r"outside its declared domain 'choice\(8,16\)'\. Retune, or set a "
                                              r"value that PARAMS \(params=\) allows\."):
        check_defines(make_record(), ["TILE=choice(8,16)"], Path("ciq/gemm.json"))


def test_two_flags_setting_one_option_are_refused(pinned):
    # nvcc would take one of them silently; which one is not something to leave to chance.
    edit(pinned, lambda d: d["controls"]["flags"].append("-maxrregcount=64"))
    with pytest.raises(RecordError) as info:
        read_record(pinned)
    assert "controls" in str(info.value) and "-maxrregcount=64" in str(info.value)


@pytest.mark.parametrize("name,value", [("TILE", "64 -Xcompiler=x"), ("1X", "1"), ("TILE", 64), ("TILE", None)])
def test_unsafe_defines_in_a_record_are_refused(pinned, name, value):
    edit(pinned, lambda d: d["controls"]["defines"].update({name: value}))
    with pytest.raises(UnsafeFlagError, match="define"):
        read_record(pinned)


def test_acf_and_defines_may_be_absent(pinned):
    edit(pinned, lambda d: (d["controls"].pop("acf"), d["controls"].pop("defines")))
    record = read_record(pinned)
    assert record.controls.acf is None and record.controls.defines == ()
    edit(pinned, lambda d: d["controls"].update(acf=None, defines={}))
    assert read_record(pinned).controls == Controls(flags=("-maxrregcount=128", "-Xptxas=-O3"))


def test_minimal_record(tmp_path):
    path = tmp_path / "k.json"
    path.write_text(json.dumps({"schema": 1, "target": "k", "controls": {}, "toolchain": {"cuda": "13.3"}}))
    record = read_record(path)
    assert record.controls == Controls() and record.objectives == () and record.winner is None


# ------------------------------------------------------------------ reading: the ACF


@pytest.mark.parametrize("name", ["../gemm.acf", "/etc/passwd", "sub/gemm.acf", "", ".", "..", ".gemm.acf",
                                  "-gemm.acf", "gemm..acf",
                                  "gemm.acf\x00", "C:\\gemm.acf", "..\\gemm.acf", 5])
def test_acf_names_that_are_not_bare_are_refused(pinned, name):
    edit(pinned, lambda d: d["controls"]["acf"].update(file=name))
    with pytest.raises(RecordError, match="controls.acf.file|NUL"):
        read_record(pinned)


def test_acf_symlink_escaping_the_pin_dir_is_refused(pinned, tmp_path):
    outside = tmp_path / "outside.acf"
    outside.write_bytes(ACF_BYTES)  # same bytes: only the containment check can refuse it
    acf = pinned.parent / PINNED_ACF
    acf.unlink()
    acf.symlink_to(outside)
    with pytest.raises(RecordError, match="symbolic link"):
        read_record(pinned)


def test_acf_symlink_inside_the_pin_dir_is_refused_too(pinned):
    # A link is refused wherever it points: CMake and Python cannot both check
    # containment the same way, and a pin never needs one.
    pin_dir = pinned.parent
    (pin_dir / PINNED_ACF).rename(pin_dir / "real.acf")
    (pin_dir / PINNED_ACF).symlink_to("real.acf")
    with pytest.raises(RecordError, match="symbolic link"):
        read_record(pinned)


def test_missing_acf_says_restore_it(pinned):
    (pinned.parent / PINNED_ACF).unlink()
    with pytest.raises(RecordError, match="does not exist; restore it"):
        read_record(pinned)


def test_acf_whose_hash_changed_is_refused(pinned):
    (pinned.parent / PINNED_ACF).write_bytes(ACF_BYTES + b"x")
    with pytest.raises(RecordError, match="changed or replaced after it was pinned"):
        read_record(pinned)


def test_acf_that_is_a_directory_is_refused(pinned):
    acf = pinned.parent / PINNED_ACF
    acf.unlink()
    acf.mkdir()
    with pytest.raises(RecordError, match="not a regular file"):
        read_record(pinned)


# ------------------------------------------------------------------ toolchain


@pytest.mark.parametrize("spellings", [("90a",), ("sm_90a",), ("90a-real",), ("90A", "90a-real"), (" 90a ",)])
def test_a_build_for_the_tuned_architecture_in_any_spelling_fits(pinned, spellings):
    assert check_architectures(read_record(pinned), spellings, strict=True) is None


@pytest.mark.parametrize("building", [("75",), ("90",), ("90a", "80"), ()])
def test_a_build_for_other_architectures_warns_or_fails_in_strict_mode(pinned, building):
    record = read_record(pinned)  # tuned for 90a
    warning = check_architectures(record, building, strict=False)
    assert warning is not None and "tuned for 90a" in warning and "skipped" in warning
    with pytest.raises(RecordError, match="retune for these architectures"):
        check_architectures(record, building, strict=True)


def test_a_record_naming_no_architectures_fits_any_build(tmp_path):
    record = replace(make_record(), toolchain=RecordToolchain(cuda="13.3", architectures=()))
    assert check_architectures(record, ("75",), strict=True) is None
    assert architecture_set(["sm_80", "90a-real", "compute_80", "90a"]) == ("80", "90a")
    assert architecture_set(["100", "90a", "75", "90"]) == ("75", "90", "90a", "100")  # by number, not as text


def test_matching_toolchain_passes(pinned):
    record = read_record(pinned)
    assert check_toolchain(record, "13.3", strict=True) is None
    assert check_toolchain(record, "13.3.73", strict=True) is None


def test_toolchain_mismatch_warns_or_fails_in_strict_mode(pinned):
    record = read_record(pinned)
    warning = check_toolchain(record, "13.0.88", strict=False)
    assert warning is not None and "13.3" in warning and "13.0" in warning
    assert "retune" in warning and "skipped" in warning
    with pytest.raises(RecordError) as info:
        check_toolchain(record, "13.0", strict=True)
    assert "retune" in str(info.value) and "toolkit" in str(info.value)


def test_unreadable_compiler_version_is_an_error(pinned):
    with pytest.raises(RecordError, match="major.minor"):
        check_toolchain(read_record(pinned), "unknown", strict=False)


# ------------------------------------------------------------------ show


def test_format_record_shows_what_is_pinned(pinned):
    text = format_record(read_record(pinned))
    assert "gemm" in text
    assert "-Xptxas=-O3 -maxrregcount=128" in text
    assert "-DTILE=64 -DUNROLL=4" in text
    assert f"{PINNED_ACF} (ptxas" in text
    assert "CUDA 13.3" in text and "90a" in text
    assert "min time" in text and "max metric:gflops" in text
    assert "-12.0%" in text  # 1.1 / 1.25
    assert "seed 1" in text and "generations=4" in text
    assert "registers 64" in text


def test_show_of_a_record_tuned_for_nvccs_default_architecture_says_so() -> None:
    # A new user's static tune for nvcc's default architecture: show said "arch ?".
    record = replace(make_record(), toolchain=RecordToolchain(cuda="13.3", nvcc_version="13.3.73"))
    assert ("toolchain   CUDA 13.3 (nvcc 13.3.73, ptxas ?), arch nvcc's default (the record names none: applied to "
            "any)") in format_record(record).splitlines()


def test_show_aligns_the_objectives_and_gives_no_spread_to_static_metrics(tmp_path):
    record = replace(make_record(), objectives=(RecordObjective("time", "min"), RecordObjective("registers", "min")),
                     baseline=ScoreSummary((1.25, 128.0), (0.01, 0.0)), winner=ScoreSummary((1.1, 96.0), (0.02, 0.0)))
    lines = format_record(record).splitlines()
    start = lines.index("objectives")
    header, time_row, registers_row = lines[start + 1:start + 4]
    assert time_row.split() == ["min", "time", "1.25", "±", "0.01", "1.1", "±", "0.02", "-12.0%"]
    assert registers_row.split() == ["min", "registers", "128", "96", "-25.0%"]  # no "± 0"
    for column in ("baseline", "winner", "change"):  # every row's cells start under their heading
        at = header.index(column)
        assert time_row[at - 1] == " " and time_row[at] != " " and registers_row[at] != " ", column
    assert relative_change(2.0, 2.0) == "+0.0%" and relative_change(0.0, 1.0) == "-"


def test_show_gives_a_time_read_from_a_rate_as_the_rate_the_benchmark_printed() -> None:
    # The tune pinned time = 1000 / TFLOPS; show says TFLOPS, its spread as a share, and both changes.
    record = replace(make_record(), objectives=(RecordObjective("time", "min"),),
                     baseline=ScoreSummary((10.0,), (0.1,)), winner=ScoreSummary((1e3 / 110,), (0.0,)),
                     provenance={"time_rate_unit": "TFLOPS"})
    lines = format_record(record).splitlines()
    row = lines[lines.index("objectives") + 2]
    assert row.split() == ["min", "time", "100", "TFLOPS", "±", "1.0%", "110", "TFLOPS", "-9.1%", "(+10.0%", "TFLOPS)"]
    for hostile in ("ms", "TFLOPS\x1b[2J", 7):  # a record is untrusted: only a rate the rule book takes is shown
        shown = format_record(replace(record, provenance={"time_rate_unit": hostile}))
        assert "TFLOPS" not in shown and "min time   10 ± 0.1   9.09091   -9.1%" in shown


def test_format_minimal_record(tmp_path):
    assert "flags       (none)" in format_record(make_record().__class__(
        target="k", controls=Controls(), toolchain=RecordToolchain("13.3")))


def test_a_new_pin_writes_gitattributes_but_never_replaces_the_users_own(tmp_path, acf_source):
    acf = AcfRef(acf_source, "ptxas", "")
    write_record(tmp_path / "pins", make_record(acf=acf), acf_source)
    assert (tmp_path / "pins" / ".gitattributes").read_text() == "*.json -text\n*.acf binary\n"
    own = tmp_path / "own"
    own.mkdir()
    (own / ".gitattributes").write_text("* text=auto\n")
    write_record(own / "ciq", make_record())  # a pin dir inside: its own, new
    write_record(own, make_record())  # the user's existing dir: left as it is
    assert (own / ".gitattributes").read_text() == "* text=auto\n"


def test_a_repin_deletes_the_old_acf_only_after_the_new_record_names_the_new_one(pinned, tmp_path):
    other = tmp_path / "other.acf"
    other.write_bytes(b"another ACF")
    written = write_record(pinned.parent, make_record(acf=AcfRef(other, "ptxas", "")), other)
    new_name = f"gemm.{hashlib.sha256(b'another ACF').hexdigest()[:12]}.acf"
    assert Path(written.controls.acf.path).name == new_name
    assert sorted(os.listdir(pinned.parent)) == sorted([".gitattributes", "gemm.json", new_name])
    assert read_record(pinned) == written


def test_a_pin_dir_that_is_a_symlink_is_neither_read_nor_written(tmp_path, acf_source):
    elsewhere = tmp_path / "elsewhere"
    write_record(elsewhere, make_record())
    (tmp_path / "ciq").symlink_to(elsewhere)
    with pytest.raises(RecordError, match="pin directory .* is a symbolic link"):
        read_record(tmp_path / "ciq" / "gemm.json")
    with pytest.raises(RecordError, match="pin directory .* is a symbolic link"):
        write_record(tmp_path / "ciq", make_record())


def test_verify_of_a_pin_whose_architecture_the_build_no_longer_compiles_names_what_it_compiles() -> None:
    # A new user reconfigured with -DCMAKE_CUDA_ARCHITECTURES=80 after pinning for nvcc's default (sm_75): the build
    # applied the pin (it names no architecture), and verify said only "test.cu.o [sm_75]: no code for this
    # architecture in the build", not what the build compiles nor what to do.
    info = ObjectInfo(registers=24, stack=0, code_sha256="a" * 64)
    problems = compare({"test.cu.o": {"75": info}}, {"test.cu.o": {"80": info}})
    assert problems == ["test.cu.o [sm_75]: no code for this architecture in the build, which compiles it for sm_80 "
                        "(the architectures changed since tuning? tune again for them)"]
