#!/usr/bin/env python3
"""Issue 25's helper for bench/multi_gpu/run.sh: run a tune on a local Ray cluster holding N GPUs, and
read what each arm of the campaign left behind (journal, pin, the benchmarks' own run log) into one
report.

    multi_gpu.py ray-tune --gpus N --cpus C -- <tune arguments>
        starts a local Ray cluster with N GPUs (fake ones on a CPU machine: Ray only counts them and
        sets CUDA_VISIBLE_DEVICES), runs `python3 -m ciq_build tune <arguments> --executor ray
        --ray-address <it>` and exits with the tune's status.

    multi_gpu.py report --gpu-map FILE --json OUT ARM.json [ARM.json ...]
        ARM.json (written by multi_gpu.sh): {"name", "gpus": ["0", "1"], "wall_s", "rc", "journal", "pin",
        "bench_log"} (file names relative to ARM.json's folder). Arms are named <executor>-<GPUs>
        (gpus-0, gpus-01, ray-0, ...); the first is the reference for candidates and winner (one GPU,
        local), and each arm's speed is compared with its own executor's one-GPU arm. Prints per arm:
        evaluations per minute (over the wall to the pin, and in the search alone), each GPU's busy
        fraction, the wall time to the pin, whether it evaluated the same candidates and pinned the same
        winner as the reference; checks that every benchmark run used the GPU it was given and that no
        two runs overlapped on one GPU; prints the speed-up ratios (goals: 2 GPUs >= 1.8x, 4 GPUs
        >= 3.5x). Exit status 1 when a check fails (a tune's exit, a run on the wrong GPU, a GPU shared).

The run log has one line per benchmark run, appended by the benchmark itself when CIQ_BENCH_LOG is set
(sample_extension/bench/bench_common.h): `<pid> <start_ns> <end_ns> visible=<CUDA_VISIBLE_DEVICES>
bus=<PCI bus id>`. The GPU map (`nvidia-smi --query-gpu=index,pci.bus_id --format=csv,noheader`) says
which bus each CUDA index is: a run given index 1 must report index 1's bus.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

GOALS = {2: 1.8, 4: 3.5, 8: 7.0}  # evaluations per minute against one GPU (issue 25)


def bus_key(bus: str) -> str:
    """nvidia-smi prints 00000000:19:00.0, cudaDeviceGetPCIBusId 0000:19:00.0: compare bus:device.function."""
    return bus.strip().lower().split(":", 1)[-1] if bus.count(":") >= 2 else bus.strip().lower()


def read_gpu_map(path: Path) -> dict[str, str]:
    """CUDA index -> bus key, from nvidia-smi's csv (index, pci.bus_id)."""
    mapping = {}
    for line in path.read_text().splitlines():
        if "," in line:
            index, bus = (part.strip() for part in line.split(",", 1))
            mapping[index] = bus_key(bus)
    return mapping


def read_runs(path: Path) -> list[dict[str, Any]]:
    runs: list[dict[str, Any]] = []
    if not path.is_file():
        return runs
    for line in path.read_text().splitlines():
        fields = line.split()
        if len(fields) != 5:
            continue
        words = dict(field.split("=", 1) for field in fields[3:] if "=" in field)
        runs.append({"pid": fields[0], "start": int(fields[1]) / 1e9, "end": int(fields[2]) / 1e9,
                     "visible": words.get("visible", "-"), "bus": bus_key(words.get("bus", "?"))})
    return runs


def read_evaluations(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    records = (json.loads(line) for line in path.read_text().splitlines() if line.strip())
    return [record for record in records if record.get("kind") == "evaluation"]


def candidates(evaluations: list[dict[str, Any]]) -> list[tuple[int, str]]:
    """What was evaluated, in the search's order per generation (completion order differs with more GPUs)."""
    return sorted((int(e.get("generation", -1)), json.dumps([e.get("params"), e.get("controls")], sort_keys=True))
                  for e in evaluations)


def search_rate(evaluations: list[dict[str, Any]]) -> float:
    """Evaluations per minute between the first and the last journaled one: the search alone, without the
    configure, the baseline and the final re-measure that every arm pays once (journal times: 1 s steps)."""
    stamps = sorted(datetime.strptime(e["time"], "%Y-%m-%dT%H:%M:%S%z").timestamp() for e in evaluations if e.get("time"))
    if len(stamps) < 2 or stamps[-1] <= stamps[0]:
        return 0.0
    return (len(stamps) - 1) / ((stamps[-1] - stamps[0]) / 60)


def winner(pin: Path) -> str | None:
    if not pin.is_file():
        return None
    return json.dumps(json.loads(pin.read_text()).get("controls"), sort_keys=True)


def overlaps(runs: list[dict[str, Any]]) -> list[str]:
    """Pairs of runs that held one GPU (bus) at the same time."""
    found = []
    by_bus: dict[str, list[dict[str, Any]]] = {}
    for run in runs:
        by_bus.setdefault(run["bus"], []).append(run)
    for bus, held in by_bus.items():
        held.sort(key=lambda run: run["start"])
        for before, after in zip(held, held[1:], strict=False):
            if after["start"] < before["end"]:
                found.append(f"bus {bus}: pid {before['pid']} until {before['end']:.3f}, "
                             f"pid {after['pid']} from {after['start']:.3f}")
    return found


def wrong_gpu(runs: list[dict[str, Any]], gpu_map: dict[str, str], given: list[str]) -> list[str]:
    """Runs that report another GPU than the one CUDA_VISIBLE_DEVICES gave them, or none of the arm's."""
    found = []
    allowed = {gpu_map.get(index) for index in given} if given else set(gpu_map.values())
    for run in runs:
        first = run["visible"].split(",")[0]
        expected = gpu_map.get(first) if run["visible"] != "-" else None
        if run["visible"] == "-":
            found.append(f"pid {run['pid']} ran with no CUDA_VISIBLE_DEVICES (on bus {run['bus']})")
        elif expected != run["bus"]:
            found.append(f"pid {run['pid']} was given {run['visible']} (bus {expected}) but ran on bus {run['bus']}")
        elif run["bus"] not in allowed:
            found.append(f"pid {run['pid']} ran on bus {run['bus']}, not one of the arm's GPUs {given}")
    return found


def summarize(arm_file: Path, gpu_map: dict[str, str]) -> dict[str, Any]:
    arm = json.loads(arm_file.read_text())
    here = arm_file.parent  # the files' names are relative to arm.json: the report re-runs on the unpacked tarball
    evaluations = read_evaluations(here / arm["journal"])
    runs = read_runs(here / arm["bench_log"])
    wall = float(arm["wall_s"])
    busy: dict[str, float] = {}
    for run in runs:
        busy[run["bus"]] = busy.get(run["bus"], 0.0) + (run["end"] - run["start"])
    index_of = {bus: index for index, bus in gpu_map.items()}
    journal_benchmark_s = sum(float(e.get("timings", {}).get("benchmark_s", 0.0)) for e in evaluations)
    return {
        "name": arm["name"], "gpus": arm["gpus"], "rc": arm.get("rc"), "wall_s": round(wall, 1),
        "evaluations": len(evaluations),
        "measured": sum(1 for e in evaluations if e.get("runs")),
        "evaluations_per_min": round(len(evaluations) / (wall / 60), 2) if wall > 0 else 0.0,
        "search_evaluations_per_min": round(search_rate(evaluations), 2),
        "benchmark_runs": len(runs),
        "busy_fraction": {f"gpu{index_of.get(bus, bus)}": round(seconds / wall, 3) for bus, seconds in
                          sorted(busy.items(), key=lambda item: index_of.get(item[0], item[0]))},
        "journal_benchmark_s": round(journal_benchmark_s, 1),
        "wrong_gpu": wrong_gpu(runs, gpu_map, arm["gpus"]),
        "overlaps": overlaps(runs),
        "candidates": candidates(evaluations),
        "winner": winner(here / arm["pin"]),
    }


def report(arm_files: list[Path], gpu_map_file: Path, json_out: Path) -> int:
    gpu_map = read_gpu_map(gpu_map_file)
    arms = [summarize(path, gpu_map) for path in arm_files]
    reference = arms[0]  # candidates and winner: every arm against the first (one GPU, local)
    failed = []
    print("evals/min: over the wall to the pin; search/min: between the first and last evaluation (the search "
          "alone);\nx1: both against the same executor's one-GPU arm")
    print(f"{'arm':<12}{'rc':>4}{'evals':>6}{'measured':>9}{'runs':>5}{'wall s':>8}{'evals/min':>10}{'x1':>6}"
          f"{'search/min':>11}{'x1':>6}  busy fraction per GPU (benchmark-s / wall)")
    for arm in arms:
        # The one-GPU arm of the same executor (gpus-0 for gpus-*, ray-0 for ray-*).
        base = next(a for a in arms if a["name"].split("-")[0] == arm["name"].split("-")[0])
        arm["base"] = base["name"]
        arm["ratio"] = round(arm["evaluations_per_min"] / base["evaluations_per_min"], 2) \
            if base["evaluations_per_min"] else 0.0
        arm["search_ratio"] = round(arm["search_evaluations_per_min"] / base["search_evaluations_per_min"], 2) \
            if base["search_evaluations_per_min"] else 0.0
        busy = " ".join(f"{gpu}={fraction:.2f}" for gpu, fraction in arm["busy_fraction"].items())
        print(f"{arm['name']:<12}{arm['rc']!s:>4}{arm['evaluations']:>6}{arm['measured']:>9}{arm['benchmark_runs']:>5}"
              f"{arm['wall_s']:>8.1f}{arm['evaluations_per_min']:>10.2f}{arm['ratio']:>6.2f}"
              f"{arm['search_evaluations_per_min']:>11.2f}{arm['search_ratio']:>6.2f}  {busy}")
    print()
    for arm in arms:
        same_candidates = arm["candidates"] == reference["candidates"]
        first = min((g for g, _ in reference["candidates"]), default=0)
        same_first = ([c for c in arm["candidates"] if c[0] == first]
                      == [c for c in reference["candidates"] if c[0] == first])
        same_winner = arm["winner"] is not None and arm["winner"] == reference["winner"]
        arm.update(same_candidates=same_candidates, same_first_generation=same_first, same_winner=same_winner)
        print(f"{arm['name']}: same candidates as {reference['name']}: {same_candidates} "
              f"(first generation: {same_first}); same winner: {same_winner}"
              f"{'' if arm['winner'] else ' (no pin)'}; every run on its given GPU: {not arm['wrong_gpu']}; "
              f"no GPU shared: {not arm['overlaps']}")
        for problem in (arm["wrong_gpu"] + arm["overlaps"])[:10]:
            print(f"    {problem}")
        if arm["rc"] != 0 or arm["wrong_gpu"] or arm["overlaps"] or not arm["benchmark_runs"]:
            failed.append(arm["name"])
    print()
    for arm in arms:
        goal = GOALS.get(len(arm["gpus"]))
        base = next(a for a in arms if a["name"] == arm["base"])
        if goal is None or base is arm:
            continue
        met = "met" if arm["ratio"] >= goal else "NOT met"
        print(f"ratio {arm['name']} / {base['name']}: {arm['ratio']:.2f}x evaluations per minute to the pin "
              f"(goal >= {goal}x: {met}), {arm['search_ratio']:.2f}x in the search alone, "
              f"wall to the pin {arm['wall_s']:.0f} s vs {base['wall_s']:.0f} s")
    json_out.write_text(json.dumps({"arms": [{k: v for k, v in arm.items() if k != "candidates"} for arm in arms]},
                                   indent=1))
    if failed:
        print(f"checks FAILED in: {', '.join(failed)}")
    return 1 if failed else 0


def ray_tune(gpus: int, cpus: int, tune_args: list[str]) -> int:
    import ray  # only this subcommand needs Ray (carried: bench/multi_gpu/carry_ray.sh)

    # The cluster starts from this process: its workers, so the benchmarks, inherit CIQ_BENCH_LOG.
    ray.init(address="local", num_cpus=cpus, num_gpus=gpus, include_dashboard=False, log_to_driver=False)
    try:
        address = ray.get_runtime_context().gcs_address
        tune = subprocess.Popen([sys.executable, "-m", "ciq_build", "tune", *tune_args, "--executor", "ray",
                                 "--ray-address", address])
        try:
            return tune.wait()
        except KeyboardInterrupt:  # the arm's cap (timeout -s INT): the tune stops as on Ctrl-C, then the cluster
            tune.send_signal(signal.SIGINT)
            tune.wait()
            return 130
    finally:
        ray.shutdown()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    on_ray = commands.add_parser("ray-tune")
    on_ray.add_argument("--gpus", type=int, required=True)
    on_ray.add_argument("--cpus", type=int, required=True)
    on_ray.add_argument("tune_args", nargs=argparse.REMAINDER)
    summary = commands.add_parser("report")
    summary.add_argument("--gpu-map", type=Path, required=True)
    summary.add_argument("--json", type=Path, required=True)
    summary.add_argument("arms", type=Path, nargs="+")
    args = parser.parse_args()
    if args.command == "ray-tune":
        tune_args = args.tune_args[1:] if args.tune_args[:1] == ["--"] else args.tune_args
        return ray_tune(args.gpus, args.cpus, tune_args)
    return report(args.arms, args.gpu_map, args.json)


if __name__ == "__main__":
    sys.exit(main())
