"""The summary a tune prints: one spelling of a change, and what "from the journal" counts."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ciq_build.compiler.controls import Controls
from ciq_build.core.objectives import parse_objectives, read_from
from ciq_build.core.settings import SearchSettings
from ciq_build.pin.record import PinnedRecord, RecordObjective, RecordToolchain, ScoreSummary
from ciq_build.search.base import Proposal
from ciq_build.search.evaluation import Evaluation
from ciq_build.tune.confirm import Confirmation
from ciq_build.tune.finish import occupancy_steps
from ciq_build.tune.old_pin import compare
from ciq_build.tune.summary import improved_objectives, next_without_a_pin, replacement_note, run_summary
from ciq_build.tune.without_effect import knobs_without_effect, params_without_effect, without_effect_lines


def evaluated(key: str, cached: bool = False) -> Evaluation:
    return Evaluation(key, Proposal(0, 0, {}), Controls(), True, None, "", {"registers": 10.0}, {}, (10.0,), 1.0,
                      cached=cached)


def summary(evaluations: list[Evaluation], measured: set[str], base: float, best: float) -> str:
    return run_summary("kern", parse_objectives(["registers"]), (base,), (best,), evaluations, False, "pinned",
                       None, Path("journal.jsonl"), measured)


def test_a_candidate_proposed_again_in_a_first_run_is_not_said_to_come_from_the_journal() -> None:
    first = [evaluated("a"), evaluated("b"), evaluated("a", cached=True)]
    text = summary(first, {"a", "b"}, 10.0, 10.0)
    assert "evaluations: 3 (2 run, 0 from the journal, 1 proposed again (measured once))" in text

    resumed = [replace(e, cached=True) for e in first[:2]] + [evaluated("c")]
    text = summary(resumed, {"c"}, 10.0, 10.0)
    assert "evaluations: 3 (1 run, 2 from the journal)" in text


def test_a_params_value_that_failed_in_every_candidate_is_named_with_what_to_declare() -> None:
    # The FlashInfer hd64 tune on an H100: the KV tile of 1 failed in 62 of 193 candidates (a static_assert), the
    # tiles of 2, 4 and 8 worked; the summary said only "failures: compile_failed 62".
    def tile(value: str, ok: bool, number: int) -> Evaluation:
        controls = Controls(defines=(("FI_CTA_TILE_Q", "128"), ("FI_NUM_MMA_KV", value)))
        return replace(evaluated(f"k{number}"), controls=controls, ok=ok, scores=(10.0,) if ok else None)

    failing = [tile("1", False, n) for n in range(6)]
    text = summary([*failing, tile("8", True, 6), tile("4", False, 7)], set(), 10, 10)
    assert "never worked: -DFI_NUM_MMA_KV=1 failed in all 6 candidates that set it" in text
    assert "CONSTRAINTS" in text and "FI_NUM_MMA_KV=4" not in text  # one failure of 4 says nothing
    assert "FI_CTA_TILE_Q" not in text.split("never worked")[1]  # 128 worked once
    assert "never worked" not in summary(failing[:4] + [tile("8", True, 6)], set(), 10, 10)  # four are too few
    assert "never worked" not in summary(failing, set(), 10, 10)  # nothing worked at all: the target, not a value


def test_changes_are_spelt_one_way() -> None:
    assert summary([evaluated("a")], {"a"}, 10.0, 10.0).count("+0.0%") == 1
    assert "-20.0%" in summary([evaluated("a")], {"a"}, 10.0, 8.0)
    row = next(line for line in summary([evaluated("a")], {"a"}, 0.0, 0.0).splitlines() if "registers" in line)
    assert row.split()[-1] == "-"  # no change to speak of from zero


def test_a_tune_without_a_winner_shows_what_the_build_keeps_not_the_searchs_best() -> None:
    # llm.c's layernorm: "registers 23 22 -4.3%" in the table over a verdict that pinned nothing (22 and 23 registers
    # are the same allocation). The search's best is the verdict's to tell; the table shows what the build keeps.
    verdict = "registers: 23 -> 22 (registers are allocated 8 a thread at a time, ...; nothing pinned)"
    text = run_summary("kern", parse_objectives(["registers"]), (23.0,), (22.0,), [evaluated("a")], False, verdict,
                       None, Path("journal.jsonl"), {"a"}, winner=False)
    table = [line.split() for line in text.splitlines()[1:3]]
    assert table == [["objective", "baseline", "kept", "change"], ["registers", "23", "23", "none", "(the", "defaults)"]]
    # A winner: the table shows it, and its change.
    text = run_summary("kern", parse_objectives(["registers"]), (23.0,), (16.0,), [evaluated("a")], False,
                       "registers: 23 -> 16", None, Path("journal.jsonl"), {"a"})
    assert [line.split() for line in text.splitlines()[1:3]] == [["objective", "baseline", "best", "change"],
                                                               ["registers", "23", "16", "-30.4%"]]
    # A winner that beat the defaults but not the pin already there, which the build keeps: the table said "kept 214,
    # none (the defaults)" under sgemm.cu's retune whose pin of 202 registers stayed. It shows the search's best.
    kept = ("registers: 214 -> 208; the pin already there is better (registers old 202 against new 208 (+3.0%)): "
            "kept, not replaced (--force replaces it)")
    text = run_summary("kern", parse_objectives(["registers"]), (214.0,), (208.0,), [evaluated("a")], False, kept,
                       None, Path("journal.jsonl"), {"a"}, winner=False, kept_pin=True, occupancy="sm_90, 208 ...")
    assert [line.split() for line in text.splitlines()[1:3]] == [["objective", "baseline", "best", "change"],
                                                               ["registers", "214", "208", "-2.8%"]]
    assert "  occupancy (the search's best, not pinned: the pin already there stays): sm_90, 208 ..." in text


def coded(flags: tuple[str, ...], code: str, defines: tuple[tuple[str, str], ...] = ()) -> Evaluation:
    return replace(evaluated("+".join(flags)), controls=Controls(flags=flags, defines=defines), code=code)


def test_a_knob_whose_values_never_changed_the_code_is_named_with_the_likely_reason() -> None:
    # FlashInfer's kernels declare __launch_bounds__: every register cap built the same code (251 registers at
    # caps 104..144), which only the machine-code dedupe noticed.
    baseline = coded((), "A")
    searched = [coded(("-maxrregcount=104",), "A"), coded(("-maxrregcount=144",), "A"),
                coded(("-Xptxas=-O2",), "B"), coded(("-Xptxas=-O2", "-maxrregcount=104"), "B"),
                coded(("-Xptxas=-O1",), "C", (("TILE", "8"),)), coded(("-Xptxas=-O1",), "C", (("TILE", "16"),))]
    idle = knobs_without_effect([baseline, *searched])
    assert [k.name for k in idle] == ["maxrregcount"]  # -Xptxas=-O told apart from the baseline: not named
    text = run_summary("kern", parse_objectives(["time"]), (1.0,), (1.0,), searched, True, "no better", None,
                       Path("journal.jsonl"), set(), without_effect=without_effect_lines(
                           params_without_effect(["TILE=8,16"], searched), idle))
    lines = [line for line in text.splitlines() if "changed no candidate's code" in line]
    assert lines[0].startswith("  PARAMS TILE changed no candidate's code: is it used in the sources?")
    assert lines[1].startswith("  knob.maxrregcount (-maxrregcount) changed no candidate's code: its kernels likely "
                               "declare __launch_bounds__")
    # One cap against none is not enough to tell (the value may be the default); a cap that changed the code is
    # not named; a switch shows its one value.
    assert knobs_without_effect([baseline, coded(("-maxrregcount=104",), "A")]) == []
    assert knobs_without_effect([baseline, *searched, coded(("-maxrregcount=32",), "D")]) == []
    assert [k.name for k in knobs_without_effect([baseline, coded(("--extra-device-vectorization",), "A")])] == [
        "extra_device_vectorization"]


def test_the_table_shows_each_objectives_unit() -> None:
    text = run_summary("kern", parse_objectives(["time", "spill_bytes", "registers"]), (4.25, 16.0, 40.0),
                       (3.5, 0.0, 32.0), [evaluated("a")], True, "better", None, Path("journal.jsonl"), {"a"})
    rows = {line.split()[0]: line.split() for line in text.splitlines()[2:5]}
    assert rows["time"][1:5] == ["4.25", "ms", "3.5", "ms"]
    assert rows["spill_bytes"][1:5] == ["16", "bytes", "0", "bytes"]
    assert rows["registers"][1:3] == ["40", "32"]  # the name says the unit


def test_when_nothing_is_pinned_next_says_what_to_try() -> None:
    objectives = parse_objectives(["registers"])
    search = SearchSettings(generations=2, pool_size=4, controls=("params",))
    hint = next_without_a_pin(objectives, search, pin=True, better=False)
    text = run_summary("kern", objectives, (40.0,), (40.0,), [evaluated("a")], False, "no better", None,
                       Path("journal.jsonl"), {"a"}, next_without_pin=hint)
    said = next(line for line in text.splitlines() if line.startswith("  next: "))
    # other objectives, a wider space, a bigger budget, each as the option that asks for it
    assert "--objective, one of time, energy, compile_time, spill_bytes" in said and "registers," not in said
    assert "--controls knobs beside params" in said and "more values in PARAMS in ciq_tune_target())" in said
    # A setuptools target's PARAMS are its CudaExtension's params= (the cudamat trial's line named
    # ciq_tune_target(), which a setuptools project has not).
    setuptools = next_without_a_pin(objectives, search, pin=True, better=False, setuptools=True)
    assert "more values in params= in its CudaExtension)" in setuptools and "ciq_tune_target" not in setuptools
    assert "this tune: 2 generations of 4" in said and "--generations" in said
    one = next_without_a_pin(objectives, replace(search, generations=1, max_evaluations=1), pin=True, better=False)
    assert "this tune: 1 generation of 4, at most 1 evaluation)" in one
    assert "without --no-pin" in next_without_a_pin(objectives, search, pin=False, better=True)
    # --no-pin on a search that found nothing better: running it again without --no-pin would pin nothing either
    assert next_without_a_pin(objectives, search, pin=False, better=False) == hint
    # stdgpu's unordered_map: 28 kernels, CUB's set the most registers (64, under __launch_bounds__): nothing a
    # knob does moves them, and the line offered other objectives and a bigger budget, not the kernel regex.
    several = next_without_a_pin(objectives, search, pin=True, better=False, kernels=28)
    assert several.startswith("registers is a figure of all 28 kernels of the target together, which one a "
                              "control cannot move may set") and "--objective registers:<kernel regex>" in several
    assert several.endswith(hint.removeprefix("nothing beat the compiler's defaults here; try "))
    mine = next_without_a_pin(parse_objectives(["registers:mine"]), search, pin=True, better=False, kernels=28)
    assert mine == next_without_a_pin(parse_objectives(["registers:mine"]), search, pin=True, better=False)
    # cuda_hgemv's 12 kernels, 0 spills and 28 registers at the defaults: the line offered spill_bytes:<kernel regex>,
    # which is 0 for every kernel; it says the 0 and offers the per-kernel figure of what is left to lower.
    both = parse_objectives(["spill_bytes", "registers"])
    floored = next_without_a_pin(both, search, pin=True, better=False, kernels=12, baseline=(0.0, 28.0))
    assert floored.startswith("spill_bytes is 0 at the compiler's defaults, nothing to lower; registers is a figure "
                              "of all 12 kernels") and "spill_bytes:<kernel regex>" not in floored
    assert next_without_a_pin(both, search, pin=True, better=False, baseline=(0.0, 28.0)).startswith(
        "spill_bytes is 0 at the compiler's defaults, nothing to lower; try other objectives")
    # llm.c's layernorm_forward: 8 kernels, all at 100% occupancy at 256 threads: the line offered
    # occupancy:<kernel regex>, which is 100 for each.
    full = next_without_a_pin(parse_objectives(["max:occupancy"]), search, pin=True, better=False, kernels=8,
                              baseline=(100.0,))
    assert full.startswith("occupancy is 100% at the compiler's defaults, nothing to raise; try other objectives")
    assert next_without_a_pin(parse_objectives(["max:occupancy"]), search, pin=True, better=False, kernels=8,
                              baseline=(75.0,)).startswith("occupancy is a figure of all 8 kernels")
    pinned = run_summary("kern", objectives, (40.0,), (32.0,), [evaluated("a")], False, "better",
                         Path("ciq/kern.json"), Path("journal.jsonl"), {"a"}, next_without_pin=hint)
    assert "nothing beat" not in pinned and "next: commit ciq" in pinned


def test_a_tune_whose_objectives_traded_against_each_other_says_so_not_that_a_kernel_held_the_figure() -> None:
    # flash_attention_inference's FA2 kernels (33 of them), registers and spill_bytes: register caps took the
    # registers from 255 to 120, each with more spills than the defaults' 5296 bytes. The line said registers was a
    # figure one kernel a control cannot move may set (score your kernels by a regex), when the search had moved it.
    objectives = parse_objectives(["registers", "spill_bytes"])
    search = SearchSettings(generations=3, pool_size=8, controls=("knobs",))

    def scored(registers: float, spills: float) -> Evaluation:
        return Evaluation("k", Proposal(0, 1, {}), Controls(), True, None, "", {}, {}, (registers, spills), 1.0)

    tried = [scored(255.0, 5296.0), scored(176.0, 50648.0), scored(120.0, 161264.0), scored(255.0, 6404.0)]
    improved = improved_objectives(objectives, (255.0, 5296.0), tried)
    assert improved == {"registers"}
    said = next_without_a_pin(objectives, search, pin=True, better=False, kernels=33, baseline=(255.0, 5296.0),
                              improved=improved)
    assert said.startswith("spill_bytes never beat the compiler's defaults, and registers did only in candidates no "
                           "better on spill_bytes: a pin must beat the defaults on every objective"), said
    assert "cannot move" not in said and "try other objectives" in said
    # Where the search never moved the target's figure (stdgpu's CUB kernel), the kernel regex is still offered.
    held = next_without_a_pin(objectives, search, pin=True, better=False, kernels=28, baseline=(64.0, 0.0),
                              improved=set())
    assert "registers is a figure of all 28 kernels" in held and "cannot move" in held


def test_a_time_read_from_a_rate_shows_the_rate_as_printed_and_both_changes_the_right_way_round() -> None:
    # METRIC "TFLOPS: ([0-9.]+)" UNIT TFLOPS: time holds 1000 / rate ms; 10% more TFLOPS is 0.909x the time.
    objectives = read_from(parse_objectives(["time", "registers"]), r"TFLOPS: ([0-9.]+)", "TFLOPS")
    text = run_summary("kern", objectives, (1e3 / 100, 40.0), (1e3 / 110, 32.0), [evaluated("a")], True, "better",
                       None, Path("journal.jsonl"), {"a"})
    rows = {line.split()[0]: line for line in text.splitlines()[2:4]}
    assert rows["time"].split() == ["time", "100", "TFLOPS", "110", "TFLOPS", "-9.1%", "(+10.0%", "TFLOPS)"]
    assert rows["registers"].split() == ["registers", "40", "32", "-20.0%"]  # only time is read from METRIC
    # A time METRIC, or none, is shown as it was.
    assert read_from(parse_objectives(["time"]), r"t=([0-9.]+)", "us")[0].rate_unit == ""
    assert read_from(parse_objectives(["time"]), "", "TFLOPS")[0].rate_unit == ""


def test_a_pin_replacing_one_read_from_a_rate_shows_both_as_the_rate_the_benchmark_printed() -> None:
    # Pins whose time is 1000 / TFLOPS: the note and the old-against-new comparison say TFLOPS, not milliseconds.
    def record(base: float, best: float, rate: str, flags: tuple[str, ...] = ("-Xptxas=-O3",)) -> PinnedRecord:
        return PinnedRecord(target="kern", controls=Controls(flags=flags), toolchain=RecordToolchain("13.3"),
                            provenance={"evaluations": 8, "time_rate_unit": rate} if rate else {"evaluations": 8},
                            objectives=(RecordObjective("time", "min"),), baseline=ScoreSummary((1e3 / base,), (0.0,)),
                            winner=ScoreSummary((1e3 / best,), (0.0,)))

    # Other controls than the old pin's: the same ones are the same build, not re-measured (the test below).
    old, new = record(100, 110, "TFLOPS"), record(100, 120, "TFLOPS", ("-Xptxas=-O3", "-maxrregcount=64"))
    objectives = read_from(parse_objectives(["time"]), r"TFLOPS: ([0-9.]+)", "TFLOPS")
    faster = [1e3 / r for r in (120, 121, 119, 120.5, 119.5)], [1e3 / r for r in (110, 111, 109, 110.5, 109.5)]
    standing = compare(old, new, objectives, lambda controls: ({"time_ms": faster[1]}, {"time_ms": faster[0]}))
    assert standing.new_better and standing.text.startswith(
        "time old 110 TFLOPS against new 120 TFLOPS (-8.3% (+9.1% TFLOPS); re-measured side by side")
    note = replacement_note(Path("ciq/kern.json"), old, new, standing)
    assert "old: 8 evaluation(s); time 100 TFLOPS -> 110 TFLOPS (-9.1% (+10.0% TFLOPS)); -Xptxas=-O3" in note
    assert "new: 8 evaluation(s); time 100 TFLOPS -> 120 TFLOPS (-16.7% (+20.0% TFLOPS)); -Xptxas=-O3" in note
    # The pin's own controls found again: built now they are the winner's very build, so nothing is built or run to
    # re-measure them (a build and 2x5 benchmark runs that could only find noise), and neither is better.
    def never(controls: Controls) -> str:
        raise AssertionError(f"re-measured {controls}")

    same = compare(old, record(100, 120, "TFLOPS"), objectives, never)
    assert same.comparable and not same.old_better and not same.new_better, same
    assert same.text == "time: the same controls, so the same build: not re-measured"
    assert not compare(old, record(100, 120, "TFLOPS"), objectives, None).text.startswith("not compared")
    # A time is shown as it was measured.
    timed = replacement_note(Path("ciq/kern.json"), record(100, 110, ""), record(100, 120, ""))
    assert "old: 8 evaluation(s); time 10 -> 9.09091 (-9.1%); -Xptxas=-O3" in timed


def test_the_occupancy_line_of_a_tune_that_pinned_nothing_describes_the_defaults_it_keeps() -> None:
    # An occupancy tune whose best (32 registers) did not beat the defaults (40): the line described the search's
    # best under a bare "occupancy:", as if the build now ran it, beside a table of the defaults kept.
    objectives = parse_objectives(["occupancy"])

    def configuration(registers: float, percent: float) -> Evaluation:
        return replace(evaluated("a"), metrics={"registers": registers, "threads_per_block": 256.0,
                                                "shared_bytes": 0.0, "kernels": 1.0, "occupancy": percent},
                       scores=(percent,))

    defaults, best = configuration(40, 75.0), configuration(32, 100.0)
    kept = Confirmation(defaults, best, False, "occupancy: 75% -> 100% (not beyond the noise); nothing pinned",
                        (75.0,), (100.0,))
    said = occupancy_steps(kept, objectives, "90a")
    assert said.startswith("sm_90a, 40 registers at 256 threads: ")
    text = run_summary("kern", objectives, (75.0,), (100.0,), [best], False, kept.verdict, None,
                       Path("journal.jsonl"), {"a"}, winner=False, occupancy=said)
    assert f"  occupancy (the defaults, kept): {said}" in text.splitlines()
    # A winner: its own steps, said to be the winner's.
    won = replace(kept, better=True)
    said = occupancy_steps(won, objectives, "90a")
    assert said.startswith("sm_90a, 32 registers at 256 threads: ")
    text = run_summary("kern", objectives, (75.0,), (100.0,), [best], False, "better", None, Path("journal.jsonl"),
                       {"a"}, occupancy=said)
    assert f"  occupancy (winner): {said}" in text.splitlines()
