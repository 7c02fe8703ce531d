"""Evaluation cost of a static tune: ptxas ACF candidates, then knob candidates, each against its limit.

    python bench/throughput/run.py [--count 24] [--knobs 24] [--parts acf,knobs,racing,fixed,minimize] [--acfs POOL_DIR]
                               [--nvcc PATH] [--keep DIR] [--baseline REV] [--rounds 3]
                               [--fixed-project shared|noop|thrust]

Both parts run on the sample's gemm_kernels (sm_90a) with the CUDA 13.3 nvcc,
every flow of a candidate side by side with the others (so a loaded machine
slows them alike), and every flow must report the same registers/spills per
candidate.

ACF part: on the PTX nvcc's front end produced in a scratch tree, each of
`--count` ptxas ACFs (a pool folder, or sampled with compileiq from the
CUDA 13.3 search space) is evaluated four ways:

  (a) NVIDIA's ptxas example flow: write the ACF, run
      `ptxas -v --apply-controls <acf>` on the PTX, parse the report;
  (b) ciq_build's candidate evaluation with the ptxas-only path
      (ScratchTree.build(static_only=True) + the driver's metric parsing);
  (c) the same without it: today's full rebuild through CMake/Ninja/nvcc
      (target and benchmark, as the driver builds a candidate);
  (d) one raw ptxas run per candidate (the limit);
  (b') for reference, the ptxas-only path when objects are needed
      (ptxas, fatbinary, host compile, then Ninja's archive and relink).

Printed: evaluations/minute of each, the ratios b/a, b/d, b/c, and where (b)'s
time goes (the nvcc --dryrun that gives ptxas its exact options, ptxas itself,
the rest).

Timing: every flow is timed twice, in wall seconds and in CPU seconds (this
process's and the children's it waited for, from getrusage): on a loaded
machine wall time measures the scheduler as much as the work. ciq_build starts
its compile steps in sessions of their own, and Linux's scheduler shares the
CPU between sessions (autogroups), so a step in its own session can get a
bigger share than one started in the bench's; the raw flows (a), (d) and (k2)
are started in their own sessions too, and the ratios are given in CPU time
first. Evaluations/minute and b/a, b/d, b/c are throughputs (higher is better);
seconds per evaluation and k1/k2 are costs (lower is better).

Racing part: the runtime goal (>= 3x fewer benchmark runs for the same
winner), bench/racing/run.py's plain and racing+dedupe arms with its defaults
(a real tune of the `timer` test double of a GPU benchmark; its GPU
counterpart is bench/racing/run.py --gpu).

Knob part: the first `--knobs` distinct candidates that ciq_build's genetic
search proposes for `tune --controls knobs --objective registers --objective
spill_bytes` (seed `--seed`, pool 12, told each candidate's scores as the
driver tells them; a proposal whose controls equal an earlier one's is served
from the driver's cache and costs nothing in either flow), each evaluated

  (k1) as the driver evaluates it in a static tune (BuildRunner.evaluate on a
       scratch tree whose baseline was built: ptxas alone where the front end
       is kept, else the build);
  (k2) the raw compile of the distinct work it needs: `nvcc` on the .cu with
       the candidate's flags when its front end (nvcc's --dryrun steps before
       ptxas) differs from every earlier candidate's and the baseline's, else
       only the ptxas step of its --dryrun, on the PTX the earlier compile left
       (the limit: no tool can know the PTX without running the front end).

Printed: per-evaluation seconds of both, k1/k2 against the goal 1.05, and
k1's time split by the path it took, with the fixed costs it pays (nvcc
--dryrun, a CMake/Ninja build that has nothing to do, the launcher's start).

Fixed part (`--parts fixed`, not in the default parts): what a whole static
tune costs outside its candidates, this checkout against `--baseline REV`
(its ciq_build/ and cmake/ exported by git archive), side by side: `python -m
ciq_build tune shared_kernels` of tests/projects/shared (3 PARAMS values,
each evaluated once; the PARAMS probe beside the baseline, the winner's
rebuild, the minimal pin, the pin), in a fresh copy configured beforehand
(untimed) with the arm's CMake module, `--rounds` times each, the arms
alternating. Printed: CPU seconds of the tune's process and its children
(getrusage), wall seconds, and each phase's wall seconds from the tune's live
status file; both arms must pin the same controls. `--fixed-project noop`
tunes tests/projects/noop over knobs and params instead (a winner with
controls to drop: the minimal pin's trials), `--fixed-project thrust` the
Thrust-heavy bench/throughput/thrust_project (whole builds of some 20 s
here: what the minimal pin's trials cost where they are whole builds).

Minimize part (`--parts minimize`): the minimal pin of stdgpu's winner
(STDGPU_WINNER: cache operators and a register-usage level beside the cap)
on the Thrust project, tuned for registers:scale, its trials whole builds
(before: the Minimizer as it was) against the candidates' builds (now), in
fresh scratch trees prepared alike (the baseline and the winner built as a
tune has them, untimed), `--rounds` times each, alternating. Printed: CPU
seconds of this process and its children (getrusage) and wall seconds of
the minimization and the pin's own build; both arms must pin the same.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.gpu_busy.run import export_revision, package_path  # noqa: E402
from bench.racing import run as racing  # noqa: E402
from ciq_build import SearchConfiguration  # noqa: E402
from ciq_build.testing import (  # noqa: E402
    VERBOSE_PTXAS,
    AcfRef,
    BuildRunner,
    CandidateBuild,
    Controls,
    GeneticSource,
    GpuSlots,
    Manifest,
    Minimizer,
    Proposal,
    ScratchTree,
    Timeouts,
    Toolchain,
    build_space,
    cmake_dir,
    controls_from_candidate,
    load_manifest,
    load_toolchain,
    metrics,
    parse_objectives,
    ptxas_path,
    write_options_file,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
SAMPLE = REPO_ROOT / "sample_extension"
TARGET = "gemm_kernels"
KNOB_OBJECTIVES = ("registers", "spill_bytes")
KNOB_GOAL = 1.05
_USED = re.compile(r"Used (\d+) registers")
_SPILLS = re.compile(r"(\d+) bytes spill stores, (\d+) bytes spill loads")


def _default_nvcc() -> Path:
    try:
        import nvidia.cu13

        for base in nvidia.cu13.__path__:
            if (Path(base) / "bin" / "nvcc").is_file():
                return Path(base) / "bin" / "nvcc"
    except ImportError:
        pass
    sys.exit('needs the CUDA 13.3 toolkit (pip install "ciq-build[cuda]") or --nvcc PATH')


def _acf_pool(args: argparse.Namespace, work: Path) -> list[Path]:
    pool = Path(args.acfs) if args.acfs else work / "acfs"
    if not args.acfs:
        sampled = subprocess.run([sys.executable, "-m", "ciq_build", "sample-acfs", "--count", str(args.count),
                                  "--seed", str(args.seed), "--out", str(pool)], capture_output=True, text=True)
        if sampled.returncode != 0:
            sys.exit(f"sampling ACFs failed (set CIQ_SEARCH_SPACES_DIR; or pass --acfs):\n{sampled.stderr}")
    found = sorted(pool.glob("*.acf"))[: args.count]
    if not found:
        sys.exit(f"no .acf files in {pool}")
    return found


def _user_tree(work: Path, nvcc: Path) -> tuple[Manifest, Toolchain]:
    """The sample configured as a user would (a copy, so that nothing of the repository's changes)."""
    source = work / "sample_extension"
    shutil.copytree(SAMPLE, source, ignore=shutil.ignore_patterns("build", "*.json", "*.acf"))
    user = work / "user-build"
    subprocess.run(["cmake", "-S", str(source), "-B", str(user), "-G", "Ninja", f"-DCMAKE_CUDA_COMPILER={nvcc}",
                    f"-Dciq_build_DIR={cmake_dir()}", "-DSAMPLE_EXTENSION_PYTHON=OFF"], check=True,
                   capture_output=True)
    return load_manifest(user, TARGET), load_toolchain(nvcc)


def _scratch_tree(manifest: Manifest, toolchain: Toolchain, root: Path, fast_path: bool = True) -> ScratchTree:
    """A configured scratch tree with the baseline built, as the driver has it before the first candidate
    (the fast tree keeps the baseline's front end)."""
    tree = ScratchTree(manifest, root, toolchain, fast_path=fast_path)
    tree.configure(300)
    if not tree.build(Controls(), 600).ok:
        sys.exit(f"the baseline build of {TARGET} failed in {tree.root}")
    return tree


def _ciq_static(build: CandidateBuild) -> tuple[int, int]:
    """What the driver's static metrics read from a build (registers, spill bytes)."""
    summary = metrics.summarize(metrics.parse_ptxas_verbose(build.compiler_output))
    return int(summary["registers"]), int(summary["spill_bytes"])


def _raw_report(text: str) -> tuple[int, int]:
    """Registers and spill bytes from a ptxas -v report, read as a user of ptxas would (one kernel)."""
    spills = _SPILLS.search(text)
    return int(_USED.search(text).group(1)), int(spills.group(1)) + int(spills.group(2)) if spills else 0


@dataclass(frozen=True)
class Cost:
    """What one flow spent on one evaluation."""

    wall: float  # seconds on the clock
    cpu: float  # CPU seconds of this process and of the children it waited for (user + system)


def _cpu_seconds() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _timed(fn, *args, **kwargs):
    """fn's result and its Cost (the children it starts are waited for inside it, so their CPU counts)."""
    wall, cpu = time.perf_counter(), _cpu_seconds()
    result = fn(*args, **kwargs)
    return result, Cost(time.perf_counter() - wall, _cpu_seconds() - cpu)


def _raw_run(command: list[str], **kwargs) -> subprocess.CompletedProcess:
    """A raw flow's process, in a session of its own as ciq_build's compile steps are (see the docstring)."""
    return subprocess.run(command, capture_output=True, text=True, start_new_session=True, **kwargs)


# ------------------------------------------------------------------ ACF part


def acf_part(args: argparse.Namespace, work: Path, manifest: Manifest, toolchain: Toolchain, nvcc: Path) -> None:
    acfs = _acf_pool(args, work)
    print(f"ACF part: {len(acfs)} ptxas ACFs on {TARGET} (sm_90a), {os.cpu_count()} CPUs; work folder {work}",
          flush=True)
    fast = _scratch_tree(manifest, toolchain, work / "scratch-fast")
    full = _scratch_tree(manifest, toolchain, work / "scratch-full", fast_path=False)

    [argv] = fast._tuned_compiles(300)
    plan = ptxas_path.plan(argv, fast.build_dir, fast.front_end_cache)
    [ptxas_step] = plan.ptxas
    ptx = next(plan.entry.glob("*.ptx"))
    ptxas = nvcc.parent / "ptxas"
    arch = re.search(r"-arch=(sm_\w+)", ptxas_step).group(1)
    flow_dir = work / "example-flow"
    flow_dir.mkdir(exist_ok=True)

    costs: dict[str, list[Cost]] = {k: [] for k in ("a", "b", "b'", "c", "d", "dryrun")}

    def example_flow(index: int, acf: Path) -> tuple[int, int]:
        """(a) NVIDIA's example flow: write the ACF the engine produced, ptxas -v on the PTX, parse."""
        written = flow_dir / f"candidate_{index}.acf"
        written.write_bytes(acf.read_bytes())
        ran = _raw_run([str(ptxas), f"-arch={arch}", "-m64", "-v", f"--apply-controls={written}", str(ptx),
                        "-o", str(flow_dir / "out.cubin")])
        return _raw_report(ran.stdout + ran.stderr)

    for index, acf in enumerate(acfs):
        results = {}
        results["a"], cost = _timed(example_flow, index, acf)
        costs["a"].append(cost)
        # (d) one raw ptxas run.
        _, cost = _timed(_raw_run, [str(ptxas), f"-arch={arch}", "-m64", "-v", f"--apply-controls={acf}", str(ptx),
                                    "-o", str(flow_dir / "raw.cubin")])
        costs["d"].append(cost)
        # (b) ciq_build, ptxas-only path, static objective.
        controls = Controls(acf=AcfRef.from_file(acf, "ptxas"))
        built, cost = _timed(fast.build, controls, 600, static_only=True)
        results["b"] = _ciq_static(built)
        costs["b"].append(cost)
        if built.objects:
            sys.exit(f"candidate {acf.name}: the ptxas-only path was not taken")
        # What (b) spends on asking nvcc for ptxas's exact options (part of b).
        costs["dryrun"].append(_timed(ptxas_path.dryrun, argv, fast.build_dir)[1])
        # (b') the ptxas-only path with objects and relink.
        built, cost = _timed(fast.build, controls, 600)
        results["b'"] = _ciq_static(built)
        costs["b'"].append(cost)
        # (c) today's full rebuild.
        built, cost = _timed(full.build, controls, 600)
        results["c"] = _ciq_static(built)
        costs["c"].append(cost)
        if len(set(results.values())) != 1:
            sys.exit(f"candidate {acf.name}: the flows disagree: {results}")
        print(f"  {index + 1:2d}/{len(acfs)} {acf.name[:12]} registers {results['a'][0]:3d} spills "
              f"{results['a'][1]:5d}  " + "  ".join(f"{k} {costs[k][-1].cpu:.3f}s CPU {costs[k][-1].wall:.3f}s wall"
                                                      for k in ("a", "b", "b'", "c", "d")), flush=True)

    def per_minute(key: str, clock: str) -> float:
        """A throughput: evaluations per minute of `clock` ("cpu" or "wall") seconds."""
        return 60.0 / statistics.mean(getattr(cost, clock) for cost in costs[key])

    def median(key: str, clock: str) -> float:
        return statistics.median(getattr(cost, clock) for cost in costs[key])

    print()
    print("costs: s/eval (lower is better); throughputs: evals/min (higher is better); CPU: getrusage of this "
          "process and its children")
    print(f"{'flow':52s} {'CPU s/eval':>10s} {'wall s/eval':>11s} {'evals/CPU-min':>13s} {'evals/min':>10s}")
    names = {"a": "(a) NVIDIA example flow (write ACF, ptxas -v, parse)",
             "b": "(b) ciq_build, ptxas-only path (static objective)",
             "b'": "(b') ciq_build, ptxas-only path, objects + relink",
             "c": "(c) ciq_build, full nvcc rebuild (today)",
             "d": "(d) one raw ptxas run (the limit)"}
    for key, name in names.items():
        print(f"{name:52s} {median(key, 'cpu'):10.3f} {median(key, 'wall'):11.3f} {per_minute(key, 'cpu'):13.1f} "
              f"{per_minute(key, 'wall'):10.1f}")
    print()

    def ratio(top: str, bottom: str) -> str:
        return (f"{per_minute(top, 'cpu') / per_minute(bottom, 'cpu'):.2f}x in CPU time "
                f"({per_minute(top, 'wall') / per_minute(bottom, 'wall'):.2f}x in wall time)")

    print("throughput ratios (evaluations per minute; higher is better):")
    print(f"b/a = {ratio('b', 'a')}   (goal >= 3x; b cannot beat a, which is one ptxas run)")
    print(f"b/d = {ratio('b', 'd')}   (goal >= 0.5x, i.e. within 2x of the limit)")
    with_objects = ratio("b'", "c")
    print(f"b/c = {ratio('b', 'c')}   (b'/c = {with_objects})")
    b, d, dry = (statistics.mean(cost.cpu for cost in costs[k]) for k in ("b", "d", "dryrun"))
    print(f"(b) per evaluation, CPU: {b * 1000:.0f} ms = ptxas {d * 1000:.0f} ms + nvcc --dryrun {dry * 1000:.0f} ms "
          f"+ the rest {max(b - d - dry, 0) * 1000:.0f} ms (options file, ACF hash, stat of the compile's inputs, "
          "shell, report parsing)")


# ------------------------------------------------------------------ knob part


def knob_candidates(manifest: Manifest, toolchain: Toolchain, seed: int,
                    scores: dict[Controls, tuple[float, ...]]) -> Iterator[tuple[Proposal, Controls, int]]:
    """What a `tune --controls knobs` with the static objectives proposes, in order, each with how many
    proposals before it repeated earlier controls or the defaults (the driver's cache serves those).

    `scores` holds the defaults' scores and is given by the caller each yielded candidate's before the
    next is asked for: the search is told them as the driver tells it, so its later generations are the
    tune's.
    """
    objectives = parse_objectives(list(KNOB_OBJECTIVES))
    space = build_space(["knobs"], manifest, toolchain, False, objectives)
    config = SearchConfiguration(generations=50, pool_size=12, problem_type=[o.direction for o in objectives],
                                 num_objectives=len(objectives), seed=seed)
    source = GeneticSource(space, config, [o.spec for o in objectives])
    repeated = 0
    while proposals := source.ask():
        for proposal in proposals:
            controls = controls_from_candidate(proposal.params)
            if controls not in scores:
                yield proposal, controls, repeated
                repeated = 0
            else:
                repeated += 1
            source.tell(proposal, scores[controls])


@dataclass
class DistinctWork:
    """k2's accounting: which front ends the raw compiles already ran, and the PTX each left.

    A candidate whose front end (nvcc's --dryrun steps before ptxas, its temporary names aside) is one
    of these needs only ptxas on that PTX; any other needs the whole compile.
    """

    ptx: dict[tuple[str, ...], Path] = field(default_factory=dict)

    def kept(self, front: tuple[str, ...]) -> Path | None:
        return self.ptx.get(front)

    def ran(self, front: tuple[str, ...], ptx: Path) -> None:
        self.ptx[front] = ptx


@dataclass(frozen=True)
class RawWork:
    """What (k2) did for one candidate."""

    report: tuple[int, int]  # registers, spill bytes
    cost: Cost
    kind: str  # "nvcc" (the whole compile) or "ptxas" (only its ptxas step)
    ptx: Path  # the PTX ptxas read


class RawCompiler:
    """(k2): the candidate's compile as a user runs it by hand, doing only the distinct work."""

    def __init__(self, tree: ScratchTree, work: Path) -> None:
        [self.argv] = tree._tuned_compiles(300)  # the build's own command, options file and all
        self.cwd = tree.build_dir
        self.nvcc = Path(self.argv[0])
        self.work = work
        self.work.mkdir(parents=True, exist_ok=True)
        self.options = work / "raw.nvcc-options"
        self.argv = [f"--options-file={self.options}" if a == f"--options-file={tree.options_file}" else a
                     for a in self.argv]
        self.argv[self.argv.index("-o") + 1] = str(work / "raw.o")
        self.argv[self.argv.index("-MF") + 1] = str(work / "raw.o.d")
        self.distinct = DistinctWork()
        self.compiles = 0

    def front_end(self) -> tuple[tuple[str, ...], str]:
        """The compile's front-end steps and its ptxas step, from nvcc --dryrun (bookkeeping, not timed)."""
        plan = ptxas_path.plan(self.argv, self.cwd, self.work / "plans")
        [step] = plan.ptxas
        return plan.front, step

    def evaluate(self, controls: Controls) -> RawWork:
        write_options_file(self.options, controls, extra=VERBOSE_PTXAS)
        front, step = self.front_end()
        kept = self.distinct.kept(front)
        if kept is None:
            keep = self.work / f"front-{self.compiles}"
            keep.mkdir()
            self.compiles += 1
            ran, took = _timed(_raw_run, [*self.argv, "--keep", f"--keep-dir={keep}"], cwd=self.cwd)
            [ptx] = keep.glob("*.ptx")
            self.distinct.ran(front, ptx)
            kind, ptx_used = "nvcc", ptx
        else:
            # nvcc's exact ptxas arguments, on the PTX the earlier compile of this front end left.
            words = shlex.split(step)
            words[0] = str(self.nvcc.parent / "ptxas")
            words = [str(kept) if w.endswith(".ptx") else w for w in words]
            words[words.index("-o") + 1] = str(self.work / "raw.cubin")
            ran, took = _timed(_raw_run, words, cwd=self.cwd)
            kind, ptx_used = "ptxas", kept
        if ran.returncode != 0:
            sys.exit(f"the raw compile of {controls} failed:\n{ran.stderr[-2000:]}")
        return RawWork(_raw_report(ran.stdout + ran.stderr), took, kind, ptx_used)


class _WatchedTree(ScratchTree):
    """The driver's scratch tree, noting each build (did it take the ptxas-only path?)."""

    last: CandidateBuild | None = None

    def build(self, controls: Controls, timeout: float, static_only: bool = False, *,
              benchmark: bool = True) -> CandidateBuild:
        self.last = super().build(controls, timeout, static_only, benchmark=benchmark)
        return self.last


def _driver_evaluation(runner: BuildRunner, tree: ScratchTree, proposal: Proposal,
                       controls: Controls) -> tuple[tuple[float, ...], tuple[int, int], Cost]:
    """(k1): the driver's evaluation of one candidate; its scores, (registers, spill bytes) and cost."""
    evaluated, took = _timed(runner.evaluate, tree, proposal, controls, f"knob-{proposal.id}")
    if not evaluated.ok or evaluated.scores is None:
        sys.exit(f"candidate {controls.flags}: {evaluated.message}")
    return evaluated.scores, (int(evaluated.metrics["registers"]), int(evaluated.metrics["spill_bytes"])), took


def _fixed_costs(tree: ScratchTree, argv: list[str]) -> dict[str, float]:
    """Median seconds of what k1 pays besides the compiler's own work."""
    def median(command: list[str], **kwargs: object) -> float:
        return statistics.median(_timed(subprocess.run, command, capture_output=True, **kwargs)[1].wall
                                 for _ in range(5))

    return {
        "nvcc --dryrun": statistics.median(_timed(ptxas_path.dryrun, argv, tree.build_dir)[1].wall
                                           for _ in range(5)),
        "cmake --build with nothing to do": median(tree._build_args(TARGET)),
        "the launcher's python start": median([sys.executable, "-I", "-S", "-c", "pass"]),
    }


def knob_part(args: argparse.Namespace, work: Path, manifest: Manifest, toolchain: Toolchain) -> None:
    print(f"knob part: {args.knobs} distinct knob candidates of a seeded `tune --controls knobs "
          f"--objective registers --objective spill_bytes` (seed {args.seed}) on {TARGET} (sm_90a), "
          f"{os.cpu_count()} CPUs", flush=True)
    tree = _WatchedTree(manifest, work / "scratch-knobs", toolchain)
    tree.configure(300)
    if not tree.build(Controls(), 600).ok:
        sys.exit(f"the baseline build of {TARGET} failed in {tree.root}")
    runner = BuildRunner(manifest, toolchain, parse_objectives(list(KNOB_OBJECTIVES)), 1, Timeouts(600, 600),
                         GpuSlots())
    raw = RawCompiler(tree, work / "raw")
    # The driver measured the defaults first (the baseline, built above): so did the raw flow, untimed.
    defaults = Proposal(id=0, generation=0, params={})
    scores = {Controls(): _driver_evaluation(runner, tree, defaults, Controls())[0]}
    raw.evaluate(Controls())

    rows: list[tuple[str, str, Cost, Cost]] = []  # (k1's path, k2's work, k1's cost, k2's)
    repeats = 0
    for index, (proposal, controls, repeated) in enumerate(knob_candidates(manifest, toolchain, args.seed, scores)):
        if index == args.knobs:
            break
        repeats += repeated
        # Interleaved, the order alternating, so neither flow always finds the files cached.
        if index % 2:
            k2 = raw.evaluate(controls)
            scores[controls], k1_result, k1_cost = _driver_evaluation(runner, tree, proposal, controls)
        else:
            scores[controls], k1_result, k1_cost = _driver_evaluation(runner, tree, proposal, controls)
            k2 = raw.evaluate(controls)
        if k1_result != k2.report:
            sys.exit(f"candidate {controls.flags}: k1 reports {k1_result}, the raw compile {k2.report}")
        assert tree.last is not None
        path = "ptxas only" if not tree.last.objects else "build"
        # Where the driver kept this front end, its PTX is the one the raw flow reused or made.
        [argv] = tree._tuned_compiles(300)
        kept = next(ptxas_path.plan(argv, tree.build_dir, tree.front_end_cache).entry.glob("*.ptx"), None)
        if kept is not None and kept.read_bytes() != k2.ptx.read_bytes():
            sys.exit(f"candidate {controls.flags}: the driver's kept PTX is not the raw compile's")
        rows.append((path, k2.kind, k1_cost, k2.cost))
        print(f"  {index + 1:2d} {' '.join(controls.flags)[:70]:70s} registers {k1_result[0]:3d} spills "
              f"{k1_result[1]:5d}  k1 {k1_cost.cpu:.3f}s CPU {k1_cost.wall:.3f}s wall ({path})  "
              f"k2 {k2.cost.cpu:.3f}s CPU {k2.cost.wall:.3f}s wall ({k2.kind})", flush=True)

    def mean(group: list[tuple[str, str, Cost, Cost]], column: int, clock: str) -> float:
        return statistics.mean(getattr(r[column], clock) for r in group)

    print()
    print(f"{len(rows)} candidates evaluated ({repeats} more proposals repeated earlier controls: served from "
          f"the driver's cache, no work in either flow); raw work: "
          f"{sum(r[1] == 'nvcc' for r in rows)} whole nvcc compiles, {sum(r[1] == 'ptxas' for r in rows)} ptxas only")
    print("costs (seconds per evaluation; k1/k2 lower is better); CPU: getrusage of this process and its children")
    print(f"{'k1 path / k2 work':28s} {'count':>5s} {'k1 CPU s':>9s} {'k2 CPU s':>9s} {'k1/k2':>6s} "
          f"{'k1 wall s':>10s} {'k2 wall s':>10s} {'k1/k2':>6s}")
    groups = [(f"{a} / {b}", [r for r in rows if (r[0], r[1]) == (a, b)]) for a, b in sorted({(r[0], r[1]) for r in rows})]
    for name, group in [*groups, ("all", rows)]:
        cpu = (mean(group, 2, "cpu"), mean(group, 3, "cpu"))
        wall = (mean(group, 2, "wall"), mean(group, 3, "wall"))
        print(f"{name:28s} {len(group):5d} {cpu[0]:9.3f} {cpu[1]:9.3f} {cpu[0] / cpu[1]:6.2f} "
              f"{wall[0]:10.3f} {wall[1]:10.3f} {wall[0] / wall[1]:6.2f}")
    print()
    ratio = mean(rows, 2, "cpu") / mean(rows, 3, "cpu")
    print(f"k1/k2 = {ratio:.3f}x in CPU time, {mean(rows, 2, 'wall') / mean(rows, 3, 'wall'):.3f}x in wall time "
          f"(a cost: goal <= {KNOB_GOAL}x in CPU time: {'met' if ratio <= KNOB_GOAL else 'NOT met'})")
    [argv] = tree._tuned_compiles(300)
    print("k1's fixed costs (median of 5): " + ", ".join(
        f"{name} {seconds * 1000:.0f} ms" for name, seconds in _fixed_costs(tree, argv).items()))


def racing_part() -> None:
    """The runtime goal's ratio: bench/racing/run.py's plain and racing+dedupe arms, with that bench's defaults."""
    print("racing part: benchmark runs of a runtime tune, plain against racing + dedupe (bench/racing/run.py)")
    same = racing.compare(racing.options([]), (racing.ARMS[0], racing.ARMS[-1]))
    if not same:
        raise SystemExit("racing part: the arms pinned different winners")


# --fixed-project: (its folder, the target tuned, the tune's own arguments). noop: a static tune over knobs and
# params whose winner carries controls that change nothing (most of the minimal pin's rebuilds drop one);
# thrust: a Thrust-heavy file (sort, reduce, copy_if: CUB's kernels beside the user's), whose whole builds are long.
FIXED_PROJECTS = {
    "shared": (REPO_ROOT / "tests" / "projects" / "shared", "shared_kernels", ()),
    "noop": (REPO_ROOT / "tests" / "projects" / "noop", "noop_kernels",
             ("--generations", "2", "--pool-size", "4", "--strategy", "ga", "--controls", "knobs", "--controls",
              "params")),
    "thrust": (Path(__file__).resolve().parent / "thrust_project", "thrust_kernels",
               ("--generations", "2", "--pool-size", "4", "--strategy", "ga")),
}


def _fixed_tune(checkout: Path, path: Path, nvcc: Path, work: Path, project: str) -> tuple[Cost, dict[str, float], str]:
    """One whole tune of FIXED_PROJECTS[project] with `checkout`'s package (found through `path`): its cost, each
    phase's wall seconds, and the controls it pinned."""
    folder, target, tune_args = FIXED_PROJECTS[project]
    source, build = work / "src", work / "build"
    shutil.copytree(folder, source)
    subprocess.run(["cmake", "-S", str(source), "-B", str(build), "-G", "Ninja", f"-DCMAKE_CUDA_COMPILER={nvcc}",
                    f"-Dciq_build_DIR={checkout / 'cmake'}"], check=True, capture_output=True)
    env = {**os.environ, "PYTHONPATH": str(path)}
    done, cost = _timed(subprocess.run, [sys.executable, "-m", "ciq_build", "tune", target, "-B", str(build),
                                         *tune_args], capture_output=True, text=True, cwd=work, env=env)
    if done.returncode != 0:
        sys.exit(f"the tune with {checkout} failed:\n{done.stderr[-3000:]}")
    live = json.loads((build / "ciq" / "locks" / f"{target}.lock.live").read_text())
    starts = live["phases"]
    phases = {name: later - start for (name, start), (_, later) in zip(starts, starts[1:])}
    pinned = json.loads((source / "ciq" / f"{target}.json").read_text())["controls"]
    return cost, phases, json.dumps(pinned, sort_keys=True)


def fixed_part(args: argparse.Namespace, work: Path, nvcc: Path) -> None:
    """A whole static tune's cost, this checkout against --baseline, side by side (see the docstring)."""
    checkouts = {"before": export_revision(args.baseline, work / "fixed-before"), "now": REPO_ROOT}
    paths = {arm: package_path(checkout, work / f"fixed-path-{arm}") for arm, checkout in checkouts.items()}
    runs: dict[str, list[tuple[Cost, dict[str, float], str]]] = {"before": [], "now": []}
    folder, target, tune_args = FIXED_PROJECTS[args.fixed_project]
    print(f"fixed part: a whole static tune of {target} ({folder.relative_to(REPO_ROOT)} {' '.join(tune_args)}), "
          f"before = {args.baseline}, "
          f"now = this checkout, {args.rounds} rounds, alternating")
    for round_ in range(args.rounds):
        for arm in (("before", "now") if round_ % 2 == 0 else ("now", "before")):
            runs[arm].append(_fixed_tune(checkouts[arm], paths[arm], nvcc, work / f"fixed-{arm}-{round_}",
                                         args.fixed_project))
            cost = runs[arm][-1][0]
            print(f"  round {round_ + 1} {arm:6s} CPU {cost.cpu:6.2f} s  wall {cost.wall:6.2f} s", flush=True)
    if {r[2] for r in runs["before"]} != {r[2] for r in runs["now"]}:
        sys.exit(f"the arms pinned other controls: {runs}")
    names = list(dict.fromkeys(name for arm in runs.values() for r in arm for name in r[1]))
    rows = [("CPU s (tune + children)", [statistics.mean(r[0].cpu for r in runs[a]) for a in ("before", "now")]),
            ("wall s", [statistics.mean(r[0].wall for r in runs[a]) for a in ("before", "now")])]
    rows += [(f"  phase {name} (wall s)", [statistics.mean(r[1].get(name, 0.0) for r in runs[a])
                                           for a in ("before", "now")]) for name in names]
    print(f"{'mean of ' + str(args.rounds):32s} {'before':>8s} {'now':>8s} {'now/before':>10s}")
    for name, (before, now) in rows:
        print(f"{name:32s} {before:8.2f} {now:8.2f} {now / before if before else float('nan'):10.2f}")
    print(f"pinned (both arms): {runs['now'][0][2]}")


# stdgpu's winner (docs/results/newcomer-trial-stdgpu.md, step 3c): cache operators and a register-usage level beside
# the register cap that made the figure; the cap's value is one below the Thrust project's scale kernel's 56.
STDGPU_WINNER = ("-Xptxas=--def-load-cache=cs", "-Xptxas=--def-store-cache=cs", "-Xptxas=--register-usage-level=0",
                 "-maxrregcount=40")


def _minimal_pin(arm: str, work: Path, manifest: Manifest, toolchain: Toolchain) -> tuple[Cost, str, str]:
    """The minimal pin of STDGPU_WINNER in a tune of registers:scale, its trials whole builds (`before`: the
    Minimizer as it was) or the candidates' (`now`), as Finish runs it: the trials in the baseline's tree, then
    the pin's own controls built whole where its code is not the winner's; its cost, pin and line."""
    runner = BuildRunner(manifest, toolchain, parse_objectives(["registers:scale"]), 1, Timeouts(600.0, 600.0),
                         GpuSlots())
    winner = Controls(flags=STDGPU_WINNER)
    base = _scratch_tree(manifest, toolchain, work / "base")  # the baseline built, its front end kept
    tree = ScratchTree(manifest, work / "winner", toolchain)
    tree.configure(300)
    searched = tree.build(winner, 600, static_only=True)  # as the search scored it: ptxas alone
    figures = runner.static_figures(searched, winner)
    confirmed = tree.build(winner, 600)  # the confirmation's whole rebuild, whose objects a pin records
    if not (searched.ok and confirmed.ok and figures):
        sys.exit(f"the winner {' '.join(STDGPU_WINNER)} does not build in {tree.root}")

    def minimal() -> tuple[str, str]:
        minimizer = Minimizer(winner, [base], toolchain, runner.timeouts, lambda line: None, benchmark=False,
                              figures=runner.static_figures, winner_figures=figures, static_only=arm == "now")
        minimizer.reference(confirmed.objects, tree)
        pin = minimizer.result(confirmed.objects)
        if not pin.same_code:  # Finish: the pin's objects, its own controls built whole
            built = tree.build(pin.controls, 600)
            pin = minimizer.built_as(pin, built.objects, tree) if arm == "now" else pin
        return " ".join(pin.controls.flags), pin.describe()

    (controls, line), cost = _timed(minimal)
    return cost, controls, line


def minimize_part(args: argparse.Namespace, work: Path, nvcc: Path) -> None:
    """A stdgpu-like winner's minimal pin on the Thrust project, before and now, side by side (see the docstring)."""
    folder, target, _ = FIXED_PROJECTS["thrust"]
    source, user = work / "minimize-src", work / "minimize-user"
    shutil.copytree(folder, source)
    subprocess.run(["cmake", "-S", str(source), "-B", str(user), "-G", "Ninja", f"-DCMAKE_CUDA_COMPILER={nvcc}",
                    f"-Dciq_build_DIR={cmake_dir()}"], check=True, capture_output=True)
    manifest, toolchain = load_manifest(user, target), load_toolchain(nvcc)
    print(f"minimize part: the minimal pin of {' '.join(STDGPU_WINNER)} on {target} (registers:scale), trials as "
          f"whole builds (before) and as the candidates' (now), {args.rounds} rounds, alternating")
    runs: dict[str, list[tuple[Cost, str, str]]] = {"before": [], "now": []}
    for round_ in range(args.rounds):
        for arm in (("before", "now") if round_ % 2 == 0 else ("now", "before")):
            runs[arm].append(_minimal_pin(arm, work / f"minimize-{arm}-{round_}", manifest, toolchain))
            cost, controls, line = runs[arm][-1]
            print(f"  round {round_ + 1} {arm:6s} CPU {cost.cpu:6.2f} s  wall {cost.wall:6.2f} s  pinned {controls}; "
                  f"{line}", flush=True)
    if {r[1] for r in runs["before"]} != {r[1] for r in runs["now"]}:
        sys.exit("the arms pinned other controls")
    print(f"{'mean of ' + str(args.rounds):32s} {'before':>8s} {'now':>8s} {'now/before':>10s}")
    for name, clock in (("CPU s (process + children)", "cpu"), ("wall s", "wall")):
        before, now = (statistics.mean(getattr(r[0], clock) for r in runs[a]) for a in ("before", "now"))
        print(f"{name:32s} {before:8.2f} {now:8.2f} {now / before:10.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=24, help="ptxas ACFs (ACF part)")
    parser.add_argument("--knobs", type=int, default=24, help="distinct knob candidates (knob part)")
    parser.add_argument("--parts", default="acf,knobs,racing",
                        help="which parts to run, comma-separated (default: acf,knobs,racing)")
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--acfs", help="a pool folder of ptxas ACFs (default: sample --count with compileiq)")
    parser.add_argument("--nvcc", help="nvcc 13.3 (default: the pip toolkit)")
    parser.add_argument("--keep", help="work folder to keep (default: a temporary one)")
    parser.add_argument("--baseline", default="main", help="the git revision the fixed part compares with")
    parser.add_argument("--rounds", type=int, default=3, help="tunes per arm (fixed part)")
    parser.add_argument("--fixed-project", default="shared", choices=sorted(FIXED_PROJECTS),
                        help="the project the fixed part tunes (default: shared)")
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    if not parts or parts - {"acf", "knobs", "racing", "fixed", "minimize"}:
        parser.error("--parts takes acf, knobs, racing, fixed and minimize, comma-separated")
    nvcc = Path(args.nvcc) if args.nvcc else _default_nvcc()
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="ciq-throughput-"))
    work.mkdir(parents=True, exist_ok=True)
    if "fixed" in parts:
        fixed_part(args, work, nvcc)
        print()
    if "minimize" in parts:
        minimize_part(args, work, nvcc)
        print()
    if parts & {"acf", "knobs"}:
        manifest, toolchain = _user_tree(work, nvcc)
    if "acf" in parts:
        acf_part(args, work, manifest, toolchain, nvcc)
        print()
    if "knobs" in parts:
        knob_part(args, work, manifest, toolchain)
        print()
    if "racing" in parts:
        racing_part()
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
