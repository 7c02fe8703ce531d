"""The pieces of minimal pins and of the PARAMS probe that need no compiler (the real tunes: test_tune_minimal.py)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from ciq_build.compiler.controls import AcfRef, Controls
from ciq_build.measure import stopping
from ciq_build.project.param_defines import guarded_defaults, identifier_uses, unguarded_defines
from ciq_build.tune import minimize
from ciq_build.tune.minimize import Minimizer, spelled, without
from ciq_build.tune.param_probe import (
    defined_by_flags,
    probe_settings,
    redefined_macros,
    warn_defined_by_flags,
    warn_host_reads,
    warn_presence_tested,
    warn_unguarded,
)
from ciq_build.tune.timeouts import Timeouts


def test_each_compilers_redefinition_warning_names_the_macro() -> None:
    log = ('kern.cu:6: warning: "UNROLL" redefined\n'
           'kern.cu(7): warning #47-D: incompatible redefinition of macro "TILE"\n'
           "kern.cu:8:9: warning: 'DEPTH' macro redefined [-Wmacro-redefined]\n"
           'ptxas info    : Used 10 registers, used 0 barriers\n')
    assert redefined_macros(log) == {"UNROLL", "TILE", "DEPTH"}
    assert redefined_macros("ptxas info    : Compiling entry function '_Z4tinyPfPKf' for 'sm_90a'") == set()


def test_the_macros_a_targets_own_flags_define_are_read_in_each_spelling() -> None:
    # Their redefinition by a candidate's -D is theirs, not the source's (tests/project/test_cmake_trees.py).
    flags = ["-DGPUCC=90", "-DCUBLAS", "-D", "TILE=8", "--define-macro=DEPTH=2", "--define-macro", "WIDE",
             "-O3", "--options-file=x"]
    assert defined_by_flags(flags) == {"GPUCC", "CUBLAS", "TILE", "DEPTH", "WIDE"}
    assert defined_by_flags(["-D"]) == set()


def test_a_params_unguarded_define_and_its_guarded_default_are_read_from_the_sources_and_quoted_headers(
        tmp_path: Path) -> None:
    (tmp_path / "tile.h").write_text('#pragma once\n#ifndef TILE_H\n#define TILE_H\n#define TILE 16\n#endif\n')
    (tmp_path / "kern.cu").write_text(
        '#include "tile.h"\n#include <cuda.h>\n'
        "#ifndef X\n#define X 3\n#endif\n"              # guarded: a -DX wins
        "#if !defined(DEPTH)\n#define DEPTH 2\n#endif\n"  # guarded another way
        "/* #define WIDTH 1 */\n// #define WIDTH 2\n"    # commented out
        "#define UNROLL(n) n\n"                          # a function-like macro of a PARAMS name overrides too
        "#  define OTHER 1\n")                           # not a PARAMS name
    specs = ["X=0,1", "DEPTH=1,2", "WIDTH=1,2", "UNROLL=1,2", "TILE=8,16"]
    assert unguarded_defines(specs, [tmp_path / "kern.cu", tmp_path / "missing.cu"]) == {
        "UNROLL": "kern.cu:11", "TILE": "tile.h:4"}
    # the guarded ones are the source's defaults: what a build without -D compiles (a seed keeps them)
    assert guarded_defaults(specs, [tmp_path / "kern.cu"]) == {"X": "3", "DEPTH": "2"}
    said: list[str] = []
    assert warn_unguarded(specs, [tmp_path / "kern.cu"], "kern", said.append) == ["TILE", "UNROLL"]
    assert said[0] == ("PARAMS TILE of kern does nothing: the source #defines TILE itself (tile.h:4, outside any "
                       "#ifndef TILE), so the compiler overrides every -DTILE=... and every value yields the same "
                       "code. Guard the #define with #ifndef TILE ... #endif, or drop TILE from PARAMS.")


def test_a_params_name_that_host_code_uses_outside_comments_and_strings_is_warned_about_once(tmp_path: Path) -> None:
    # A candidate's -D reaches the target's CUDA compiles alone: a .cpp that reads TILE builds with the default.
    # The shared header's guarded default, included by the host file that uses nothing else, is such a read.
    (tmp_path / "tile.h").write_text("#pragma once\n// UNROLL is kern.cu's\n#ifndef TILE\n#define TILE 16\n#endif\n")
    (tmp_path / "main.cpp").write_text(
        '#include "tile.h"  // BLOCK\n#include <BLOCK.h>\n'
        '/* BLOCK\n   UNROLL */ const char* s = "BLOCK // UNROLL";\n'
        "int tiles = TILE_COUNT + 1'000 + 'B';\n")          # TILE_COUNT is another name
    (tmp_path / "bench.cpp").write_text("#include <cstdio>\nint main() { return DEPTH > 1 ? 0 : UNROLL; }\n")
    specs = ["TILE=8,16", "UNROLL=1,2", "BLOCK=64,128", "DEPTH=1,2"]
    sources = [tmp_path / "main.cpp", tmp_path / "bench.cpp", tmp_path / "missing.cpp"]
    assert identifier_uses(specs, sources) == {"TILE": (tmp_path / "main.cpp", "tile.h:3"),
                                               "DEPTH": (tmp_path / "bench.cpp", "bench.cpp:2"),
                                               "UNROLL": (tmp_path / "bench.cpp", "bench.cpp:2")}
    said: list[str] = []
    named = [(tmp_path / "main.cpp", "a host source of kern", "or compile it as CUDA"),
             (tmp_path / "bench.cpp", "a source of its BENCHMARK bench", "")]
    assert warn_host_reads(specs, named, "kern", said.append) == ["DEPTH", "TILE", "UNROLL"]
    assert len(said) == 3 and said[1].startswith(
        "PARAMS TILE of kern: main.cpp (a host source of kern) reads TILE (tile.h:3, a header it includes), but "
        "each candidate's -DTILE=... reaches the CUDA compiles of kern alone, so that file builds with the default "
        "TILE")
    assert said[1].endswith("(a function in a .cu source that returns TILE) or compile it as CUDA.")
    assert "bench.cpp (a source of its BENCHMARK bench) reads UNROLL (bench.cpp:2)," in said[2]
    assert warn_host_reads(["BLOCK=64,128"], named, "kern", said.append) == [] and len(said) == 3


def test_a_params_name_with_an_off_value_whose_presence_the_source_tests_is_warned_about(tmp_path: Path) -> None:
    # miniBUDE's `#ifdef USE_SHARED`, searched as USE_SHARED=choice(0,1): -DUSE_SHARED=0 defines it too, so both
    # values compiled the USE_SHARED branch (which fails to compile there) and the tune said only that all failed.
    (tmp_path / "fasten.hpp").write_text("#pragma once\n#ifdef USE_SHARED\nextern __shared__ float f[];\n#endif\n")
    (tmp_path / "kern.cu").write_text(
        '#include "fasten.hpp"\n'
        "#if defined(FAST) && X > 1\n#endif\n"        # tested for presence, but no value of FAST is off
        "#if !defined(DEPTH)\n#define DEPTH 2\n#endif\n"  # the guard of a default: fine
        "#elif defined NOVEC\n")                         # presence, another spelling
    specs = ["USE_SHARED=choice(0,1)", "FAST=1,2", "DEPTH=0,1", "NOVEC=range(0,1)", "X=0,1"]
    said: list[str] = []
    assert warn_presence_tested(specs, [tmp_path / "kern.cu"], "bude", said.append) == ["NOVEC", "USE_SHARED"]
    assert said[1] == ("PARAMS USE_SHARED of bude: the source tests whether USE_SHARED is defined (fasten.hpp:2), "
                       "and every -DUSE_SHARED=... defines it, 0 included, so each value takes the same branch there. "
                       "Test its value instead (#if USE_SHARED, where an undefined name is 0), or drop USE_SHARED "
                       "from PARAMS.")


def test_the_probes_set_every_param_to_its_first_then_its_last_value() -> None:
    first, last = probe_settings(["X=range(0,2)", "UNROLL=choice(2,8)", "K=literal(3)"])
    assert dict(first.defines) == {"X": "0", "UNROLL": "2", "K": "3"}
    assert dict(last.defines) == {"X": "2", "UNROLL": "8", "K": "3"}
    assert len(probe_settings(["K=literal(3)"])) == 1  # one value: one probe


def test_a_control_is_taken_out_alone(tmp_path: Path) -> None:
    acf = AcfRef(tmp_path / "w.acf", "ptxas", "0" * 64)
    controls = Controls(flags=("-maxrregcount=208", "-Xptxas=-O1"), defines=(("X", "0"), ("U", "2")), acf=acf)
    assert without(controls, "-maxrregcount=208") == Controls(("-Xptxas=-O1",), (("U", "2"), ("X", "0")), acf)
    assert without(controls, ("U", "2")) == Controls(controls.flags, (("X", "0"),), acf)
    assert without(controls, acf) == Controls(controls.flags, controls.defines, None)
    assert [spelled(c) for c in ("-maxrregcount=208", ("U", "2"), acf)] == ["-maxrregcount=208", "-DU=2",
                                                                            "the ACF w.acf"]


def test_a_build_a_stop_killed_is_not_said_to_fail_without_its_control(monkeypatch: pytest.MonkeyPatch) -> None:
    # A stop during the minimal pin's rebuilds kills them: "does not build without it: kept" was said of them.
    monkeypatch.setattr(minimize, "code_identity", lambda objects, object_dir, toolchain: ({"kern.o": "code"}, {}))

    class StoppedTree:
        """TEST DOUBLE for a scratch tree whose build a stop kills."""

        object_dir = Path("objects")

        def build(self, controls: Controls, timeout: float, static_only: bool = False, *, benchmark: bool = True) -> Any:
            stopping.stop_starting()
            return SimpleNamespace(ok=False, objects=())

    said: list[str] = []
    controls = Controls(flags=("-Xptxas=-O1",))
    try:
        minimizer = Minimizer(controls, [cast(Any, StoppedTree())], cast(Any, None), Timeouts(1.0, 1.0), said.append,
                              benchmark=False)
        minimizer.reference((), cast(Any, StoppedTree()))
        pin = minimizer.result(())
    finally:
        stopping.resume_starting()
    assert pin.controls == controls and pin.dropped == ()
    assert [line for line in said if "without it" in line] == [], said


def test_a_static_tunes_minimal_pin_builds_the_target_alone_as_its_search_did(monkeypatch: pytest.MonkeyPatch) -> None:
    # A newcomer's static tune of a library whose benchmark does not build with CUDA 13 (leimao's GEMM profiler):
    # the minimization linked the benchmark, said "does not build without it: kept" of every control and then
    # failed the tune with "the winner no longer builds".
    monkeypatch.setattr(minimize, "code_identity", lambda objects, object_dir, toolchain: ({"kern.o": "code"}, {}))

    class NoBenchmarkBuilds:
        """TEST DOUBLE for a worker tree whose target builds, the same code whatever the flag, and whose benchmark
        does not."""

        object_dir = Path("objects")

        def build(self, controls: Controls, timeout: float, static_only: bool = False, *, benchmark: bool = True) -> Any:
            return SimpleNamespace(ok=not benchmark, objects=(Path("objects/kern.o"),))

    said: list[str] = []
    tree = cast(Any, NoBenchmarkBuilds())
    minimizer = Minimizer(Controls(flags=("-Xptxas=-O1",)), [tree], cast(Any, None), Timeouts(1.0, 1.0), said.append,
                          benchmark=False)
    minimizer.reference((Path("objects/kern.o"),), tree)
    pin = minimizer.result((Path("objects/kern.o"),))
    assert pin.controls == Controls() and pin.dropped == ("-Xptxas=-O1",)
    assert said[-1] == "minimizing the pin, 1/1: -Xptxas=-O1: same code without it: dropped", said


def test_a_static_tunes_minimal_pin_drops_a_control_that_changes_the_code_but_no_figure_it_scores(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # stdgpu's unordered_map, tuned for registers:insert_neighbors: the pin kept -Xptxas=--def-load-cache=cs and
    # --def-store-cache=cs (streaming cache operators on every load and store: other code, no other register count)
    # beside the cap that made the 44 registers, though no benchmark ever ran that code.
    monkeypatch.setattr(minimize, "code_identity", lambda objects, object_dir, toolchain: ({"kern.o": objects[0].name}, {}))

    class FlagsTree:
        """TEST DOUBLE for a worker tree whose code is its flags: each flag changes it."""

        object_dir = Path("objects")

        def build(self, controls: Controls, timeout: float, static_only: bool = False, *, benchmark: bool = True) -> Any:
            return SimpleNamespace(ok=True, objects=(Path("objects") / ("+".join(controls.flags) + ".o"),))

    def registers(build: Any, controls: Controls) -> tuple[float, ...]:
        return (44.0,) if "-maxrregcount=48" in controls.flags else (49.0,)  # the cap alone sets the figure

    flags = ("-Xptxas=--def-load-cache=cs", "-Xptxas=--def-store-cache=cs", "-maxrregcount=48")
    winner = Controls(flags=flags)
    trees = [cast(Any, FlagsTree()), cast(Any, FlagsTree())]
    said: list[str] = []
    minimizer = Minimizer(winner, trees, cast(Any, None), Timeouts(1.0, 1.0), said.append, benchmark=False,
                          figures=registers, winner_figures=(44.0,))
    objects = FlagsTree().build(winner, 1.0).objects
    minimizer.reference(objects, trees[0])
    pin = minimizer.result(objects)
    assert pin.controls == Controls(flags=("-maxrregcount=48",))
    assert pin.dropped == pin.same_figures == flags[:2] and not pin.same_code  # the pin's objects are to be built
    assert "-Xptxas=--def-load-cache=cs: other code without it, the same figures of this tune's objectives: dropped" \
        in " ".join(said)
    assert pin.describe() == ("dropped from the pin, since this tune's objectives are the same without them (their "
                              "code differs, in nothing the tune measured): " + ", ".join(flags[:2]))
    # A tune a benchmark judges keeps every control that changes the code, as before.
    timed = Minimizer(winner, trees, cast(Any, None), Timeouts(1.0, 1.0), said.append, benchmark=True)
    timed.reference(objects, trees[0])
    kept = timed.result(objects)
    assert kept.controls == winner and kept.dropped == () and kept.same_code


def test_a_static_tunes_minimal_pin_is_decided_by_ptxas_alone_and_its_own_build_says_whether_the_code_changed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # stdgpu's minimal pin rebuilt the whole Thrust-heavy target once per control (about 50 s each) where the search's
    # candidates ran ptxas alone (3-6 s): only the figures decide in a static tune, and ptxas's report holds them.
    monkeypatch.setattr(minimize, "code_identity", lambda objects, object_dir, toolchain: ({"kern.o": objects[0].name}, {}))

    class PtxasTree:
        """TEST DOUBLE for a worker tree: ptxas alone gives no objects; a whole build's code is its cache flags."""

        object_dir = Path("objects")
        whole: list[Controls] = []

        def build(self, controls: Controls, timeout: float, static_only: bool = False, *, benchmark: bool = True) -> Any:
            if static_only:
                return SimpleNamespace(ok=True, objects=())
            self.whole.append(controls)
            cache = [flag for flag in controls.flags if "cache" in flag]
            return SimpleNamespace(ok=True, objects=(Path("objects") / ("+".join(cache) + ".o"),))

    def registers(build: Any, controls: Controls) -> tuple[float, ...]:
        return (44.0,) if "-maxrregcount=48" in controls.flags else (49.0,)

    flags = ("-Xptxas=-O3", "-Xptxas=--def-load-cache=cs", "-maxrregcount=48")
    tree = PtxasTree()
    said: list[str] = []
    minimizer = Minimizer(Controls(flags=flags), [cast(Any, tree)], cast(Any, None), Timeouts(1.0, 1.0), said.append,
                          benchmark=False, figures=registers, winner_figures=(44.0,), static_only=True)
    objects = (Path("objects/-Xptxas=--def-load-cache=cs.o"),)
    minimizer.reference(objects, cast(Any, tree))
    pin = minimizer.result(objects)
    assert tree.whole == [], "no whole build decides a static tune's minimal pin"
    # A configuration the search measured in this run is not built again: its figures are known.
    searched = Minimizer(Controls(flags=flags), [cast(Any, tree)], cast(Any, None), Timeouts(1.0, 1.0), said.append,
                         benchmark=False, figures=lambda build, controls: pytest.fail("built again"),
                         winner_figures=(44.0,), static_only=True,
                         searched={Controls(flags=flags[:i] + flags[i + 1:]): (44.0 if i < 2 else 49.0,)
                                   for i in range(3)} | {Controls(flags=("-maxrregcount=48",)): (44.0,)})
    searched.reference(objects, cast(Any, tree))
    assert searched.result(objects).controls == Controls(flags=("-maxrregcount=48",))
    assert pin.controls == Controls(flags=("-maxrregcount=48",)) and not pin.same_code
    assert ("-Xptxas=-O3: the same figures of this tune's objectives without it (scored as the search's candidates "
            "were): dropped") in " ".join(said)
    # The pin's record is read from its own build: other code than the winner's (the cache operator) ...
    built = minimizer.built_as(pin, tree.build(pin.controls, 1.0).objects, cast(Any, tree))
    assert built.describe().endswith("(their code differs, in nothing the tune measured): "
                                     "-Xptxas=--def-load-cache=cs, -Xptxas=-O3")
    # ... or the winner's, where the dropped controls changed nothing.
    same = minimizer.built_as(pin, objects, cast(Any, tree))
    assert same.same_code and same.describe() == ("dropped from the pin, since the machine code is the same without "
                                                  "them: -Xptxas=--def-load-cache=cs, -Xptxas=-O3")


def test_a_static_minimal_pin_of_other_code_records_the_figures_of_its_own_build() -> None:
    # mini-nbody: -DBLOCK_SIZE=512 was dropped at the same occupancy (100%), and the record's winner_metrics kept the
    # search winner's 512 threads and 6144 bytes of shared memory, which the pinned build (256, 3072) never has.
    from ciq_build.search.base import Proposal
    from ciq_build.search.evaluation import Evaluation
    from ciq_build.tune.confirm import Confirmation
    from ciq_build.tune.finish import Finish
    from ciq_build.tune.minimize import MinimalPin

    searched = Controls(flags=("-maxrregcount=32",), defines=(("BLOCK_SIZE", "512"),))
    pinned = Controls(flags=("-maxrregcount=32",))
    winner = Evaluation("w", Proposal(1, 0, {}), searched, True, None, "",
                        {"occupancy": 100.0, "threads_per_block": 512.0, "shared_bytes": 6144.0}, {}, (100.0,), 1.0)
    minimal = MinimalPin(pinned, (), ("-DBLOCK_SIZE=512",), same_code=False)
    built = SimpleNamespace(ok=True, objects=(Path("pin.o"),))
    minimizer = SimpleNamespace(result=lambda objects: minimal, built_as=lambda m, objects, tree: m)
    finish = cast(Any, Finish.__new__(Finish))
    finish.meter, finish.say = SimpleNamespace(enter=lambda name: None), lambda text: None
    finish.runner = SimpleNamespace(
        timeouts=Timeouts(60.0, 60.0), links=False,
        static_metrics=lambda build, controls: ({"occupancy": 100.0, "threads_per_block": 256.0, "shared_bytes": 3072.0}
                                                if build is built and controls == pinned else {}))
    tree = SimpleNamespace(build=lambda controls, timeout, benchmark: built)
    confirmation = Confirmation(winner, winner, True, "better", (75.0,), (100.0,))
    pinned_confirmation = finish._minimal(confirmation, tree, minimizer, tree)
    assert pinned_confirmation.winner.controls == pinned
    assert pinned_confirmation.winner.metrics == {"occupancy": 100.0, "threads_per_block": 256.0,
                                                  "shared_bytes": 3072.0}


def test_a_params_name_the_targets_own_flags_define_is_warned_about_once_with_its_flag() -> None:
    """BabelStream's CMAKE_CUDA_FLAGS hold -DUNROLL_FACTOR=4, searched as UNROLL_FACTOR=choice(1,2,4,8): its pin
    won, but every build with it warned '"UNROLL_FACTOR" redefined', and nothing had said why."""
    said: list[str] = []
    flags = ["-arch=sm_90", "-DUNROLL_FACTOR=4", "-DNDEBUG", "-DCUDA"]
    specs = ["UNROLL_FACTOR=choice(1,2,4,8)", "TILE=choice(8,16)"]
    assert warn_defined_by_flags(specs, flags, "cuda-stream", said.append) == ["UNROLL_FACTOR"]
    assert len(said) == 1 and "own flags define it too (-DUNROLL_FACTOR=4)" in said[0], said
    assert '"UNROLL_FACTOR" redefined' in said[0] and "drop -DUNROLL_FACTOR=4" in said[0], said
    assert warn_defined_by_flags(["TILE=choice(8,16)"], flags, "cuda-stream", said.append) == [] and len(said) == 1
