"""Benchmark 4: trials per second with 1, 2, 4, 8 ... GPUs (goal >= 0.9 x the number of GPUs).

The same short plan (by default a crashing and a surviving arm of tile_unload_race,
--duration seconds each) runs with --gpus 0, --gpus 0,1, --gpus 0,1,2,3 ... (one count per
entry of --counts; default: every power of two up to the GPUs present), the counts
interleaved in every repetition (ascending in even repetitions, descending in odd ones);
trials/s = planned trials over the wall time of the whole `gpurepro run` (process start,
journal and all). Each count's ratio is its median trials/s over 1 GPU's.

Where the time goes, per run, from the journal and the wall clock: `startup_s` (launch until
the journal exists: interpreter, imports, GPU query, fingerprint, plan), `trial_overhead_ms`
(the mean duration beyond its budget of the trials that survived it: process start, context
creation, teardown), `gap_ms_per_trial` (GPU-seconds of the trial phase in no trial process, per trial:
spawning, classification, journal writes, GPUs idle at the end) and `imbalance_s` (the
busiest GPU's trial time over the mean GPU's).

    python bench/gpu_scaling.py --out results/bench                  # every power of two present
    python bench/gpu_scaling.py --counts 1,2,4,8 --out results/bench

On a machine without GPUs, the harness's scheduling alone (NOT GPU scaling) with the fake
case, whose trials need no GPU; the GPU ids are labels, and the document says so:

    python bench/gpu_scaling.py --case tests/fixtures/fake_case/manifest.py --arms crash,ok \\
        --fake-gpus 4 --build-dir build/tests --out /tmp/gpu_scaling
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import ROOT, document, median, write

DEFAULT_CASE = "tile_unload_race"
DEFAULT_ARMS = {DEFAULT_CASE: "baseline,control-cuda"}
GOAL_PER_GPU = 0.9


def label(count: int) -> str:
    return f"{count}gpu"


def parse_counts(text: str) -> list[int]:
    try:
        counts = sorted({int(s) for s in text.split(",") if s.strip()})
    except ValueError:
        raise SystemExit(f"--counts {text}: give GPU counts like 1,2,4,8") from None
    if not counts or counts[0] < 1:
        raise SystemExit(f"--counts {text}: GPU counts are positive integers")
    if counts[0] != 1:
        raise SystemExit(f"--counts {text}: must include 1 (every ratio is against 1 GPU)")
    if len(counts) < 2:
        raise SystemExit(f"--counts {text}: give at least one count above 1")
    return counts


def powers_of_two(n: int) -> list[int]:
    out, c = [], 1
    while c <= n:
        out.append(c)
        c *= 2
    return out


def breakdown(journal: Path, wall: float, startup: float | None, count: int,
              budget_s: float) -> dict[str, Any]:
    """Where one run's wall time went, from its journal's per-trial durations."""
    from gpurepro.run.journal import read

    trials = read(journal).trials
    durations = [float(t["duration_s"]) for t in trials]
    busy: dict[str, float] = {}
    for t in trials:
        busy[str(t.get("gpu"))] = busy.get(str(t.get("gpu")), 0.0) + float(t["duration_s"])
    phase = wall - (startup or 0.0)  # trial phase: journal created -> harness exited
    n = max(len(trials), 1)
    full = [float(t["duration_s"]) - budget_s for t in trials if t.get("outcome") == "survived"]
    mean_busy = sum(busy.values()) / count
    return {
        "wall_s": round(wall, 4),
        "startup_s": None if startup is None else round(startup, 4),
        "trials": len(trials),
        "trial_s": round(sum(durations), 4),
        "trial_overhead_ms": round(1000 * sum(full) / len(full), 2) if full else None,
        "gap_ms_per_trial": round(1000 * (count * phase - sum(durations)) / n, 2),
        "busy_fraction": round(sum(durations) / (count * wall), 4) if wall > 0 else None,
        "imbalance_s": round(max(busy.values(), default=0.0) - mean_busy, 4),
    }


def one_run(count: int, gpu_ids: list[str], args: argparse.Namespace, journal: Path) -> tuple[float, dict[str, Any]]:
    cmd = [sys.executable, "-m", "gpurepro", "run", args.case, "--arms", args.arms,
           "--trials", str(args.trials), "--duration", str(args.duration),
           "--gpus", ",".join(gpu_ids[:count]), "--seed", "1", "--no-record",
           "--journal", str(journal)]
    for flag, value in (("--arch", args.arch), ("--jobs", args.jobs), ("--build-dir", args.build_dir)):
        if value is not None:
            cmd += [flag, str(value)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH")) if p)}
    startup = None
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
    while proc.poll() is None:
        if startup is None and journal.exists():
            startup = time.perf_counter() - t0
        time.sleep(0.002)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)}: exit status {proc.returncode}")
    trials = len(args.arms.split(",")) * args.trials
    where = breakdown(journal, wall, startup, count, args.duration)
    print(f"{label(count)}: {trials} trials in {wall:.2f} s (startup {where['startup_s']} s, "
          f"gap {where['gap_ms_per_trial']} ms/trial, busy {where['busy_fraction']})", flush=True)
    return trials / wall, where


def median_breakdown(runs: list[dict[str, Any]]) -> dict[str, Any]:
    keys = [k for k in runs[0] if k != "trials"]
    out: dict[str, Any] = {}
    for k in keys:
        values = [r[k] for r in runs if r[k] is not None]
        out[k] = round(median(values), 4) if values else None
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", default=DEFAULT_CASE, help="case name or path to its manifest.py")
    ap.add_argument("--arch", help="build target (default: sm_90 for tile_unload_race, "
                                   "else from the machine)")
    ap.add_argument("--arms", help="arms to run (default for tile_unload_race: baseline,control-cuda)")
    ap.add_argument("--trials", type=int, default=8, help="trials per arm (default 8)")
    ap.add_argument("--duration", type=float, default=1.0, help="seconds per trial (default 1)")
    ap.add_argument("--reps", type=int, default=2, help="repetitions of every count (default 2)")
    ap.add_argument("--counts", help="GPU counts, e.g. 1,2,4,8 (must include 1; default: every "
                                     "power of two up to the GPUs present, or up to --fake-gpus)")
    ap.add_argument("--jobs", type=int, help="trials at a time per GPU (default: the case's)")
    ap.add_argument("--build-dir", help="prebuilt artifacts inside the repository (default: build/)")
    ap.add_argument("--fake-gpus", type=int, metavar="N",
                    help="no GPU: pass labels 0..N-1 to --gpus (for a case whose trials need no "
                         "GPU, e.g. the fake case); measures the harness's scheduling on the CPU only")
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "bench")
    args = ap.parse_args()

    from gpurepro.case import load_case
    from gpurepro.env import fingerprint as envmod

    case = load_case(args.case, ROOT)
    if args.arms is None:
        if case.name not in DEFAULT_ARMS:
            raise SystemExit(f"--arms: give the arms of {case.name} to run (include its baseline "
                             f"{case.baseline!r})")
        args.arms = DEFAULT_ARMS[case.name]
    if args.arch is None and case.name == DEFAULT_CASE:
        args.arch = "sm_90"
    listed = envmod.gpus().get("gpus") or []
    if args.fake_gpus is not None:
        if args.fake_gpus < 2:
            raise SystemExit("--fake-gpus: give 2 or more")
        if listed:
            raise SystemExit(f"--fake-gpus: this machine has {len(listed)} GPU(s); gpurepro "
                             f"checks --gpus against them. Measure them for real instead.")
        if case.devices.requires_gpu:
            raise SystemExit(f"--fake-gpus: {case.name} needs a GPU; use a case whose trials "
                             f"need none (tests/fixtures/fake_case/manifest.py)")
        out = args.out.resolve()
        if out.is_relative_to((ROOT / "results").resolve()):
            raise SystemExit(f"--out {args.out}: a --fake-gpus document measures the harness on "
                             f"the CPU, not GPU scaling; write it outside results/")
        gpu_ids = [str(i) for i in range(args.fake_gpus)]
    else:
        gpu_ids = [str(g["index"]) for g in listed]
    if not gpu_ids:
        raise SystemExit("no GPU listed on this machine; on the CPU, use --fake-gpus N with a case "
                         "whose trials need no GPU (tests/fixtures/fake_case/manifest.py)")
    counts = parse_counts(args.counts) if args.counts else powers_of_two(len(gpu_ids))
    if len(counts) < 2:
        raise SystemExit(f"only {len(gpu_ids)} GPU here: scaling needs 2 or more")
    if counts[-1] > len(gpu_ids):
        raise SystemExit(f"--counts {args.counts}: {counts[-1]} GPUs asked, "
                         f"{len(gpu_ids)} {'faked' if args.fake_gpus else 'present'}")

    rates: dict[str, list[float]] = {label(c): [] for c in counts}
    where: dict[str, list[dict[str, Any]]] = {label(c): [] for c in counts}
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(args.reps):
            for c in (counts if rep % 2 == 0 else counts[::-1]):
                rate, w = one_run(c, gpu_ids, args, Path(tmp) / f"{label(c)}-{rep}.jsonl")
                rates[label(c)].append(rate)
                where[label(c)].append(w)

    med = {k: median(v) for k, v in rates.items()}
    # trials/s over the trial phase only: what the ratio would be if the harness started instantly
    phase = {k: median([w["trials"] / (w["wall_s"] - w["startup_s"]) for w in v
                        if w["startup_s"] is not None and w["wall_s"] > w["startup_s"]] or [0.0])
             for k, v in where.items()}
    ratios = {}
    for c in counts[1:]:
        value = med[label(c)] / med["1gpu"]
        ratios[label(c)] = {"value": value, "numerator": med[label(c)], "denominator": med["1gpu"],
                            "goal": round(GOAL_PER_GPU * c, 4), "met": value >= GOAL_PER_GPU * c,
                            "without_startup": (phase[label(c)] / phase["1gpu"]) if phase["1gpu"] else None}
    top = label(counts[-1])
    notes = ["samples are wall seconds per trial for the whole run (one list per GPU count); "
             "ratios: median trials/s at each count over 1 GPU's, goal 0.9 x the count; "
             "`met` is true only if every count meets its goal",
             "where_time_goes: medians per count; startup_s = launch until the journal exists, "
             "trial_overhead_ms = mean duration beyond the budget of the trials that survived it "
             "(process start, context creation, teardown), gap_ms_per_trial = "
             "GPU-seconds of the trial phase outside any trial process per trial (spawn, "
             "classification, journal writes, idle GPUs at the end), imbalance_s = busiest GPU's "
             "trial seconds over the mean GPU's, busy_fraction = trial seconds over count x wall; "
             "ratios[*].without_startup = the same ratio over the trial phase only (wall minus "
             "startup_s)"]
    if args.fake_gpus is not None:
        notes.insert(0, f"NOT A GPU MEASUREMENT: --fake-gpus {args.fake_gpus} on a machine with no "
                        f"GPU; --gpus values are labels (gpurepro accepts any when none is listed; "
                        f"each worker set gets CUDA_VISIBLE_DEVICES=label, which {case.name}'s "
                        f"trials ignore). These numbers measure the harness's scheduling of "
                        f"concurrent trial processes on this CPU, not GPU scaling; do not commit "
                        f"this document under results/.")
    doc = document(
        name="gpu_scaling",
        question=f"How much faster does a plan run on {', '.join(map(str, counts[1:]))} GPUs than on one?",
        parameters={"case": case.name, "arch": args.arch, "arms": args.arms,
                    "trials_per_arm": args.trials, "duration_s": args.duration, "reps": args.reps,
                    "jobs": args.jobs, "counts": counts, "gpus": {label(c): gpu_ids[:c] for c in counts},
                    "fake_gpus": args.fake_gpus,
                    "order": "counts interleaved: ascending in even repetitions, descending in odd"},
        samples={k: [1.0 / r for r in v] for k, v in rates.items()},
        unit="second",
        ratio={"name": f"trials/s with {counts[-1]} GPUs over trials/s with 1 GPU (medians)",
               **{k: v for k, v in ratios[top].items() if k in ("value", "numerator", "denominator")}},
        goal={"op": ">=", "value": ratios[top]["goal"]},
        notes=notes,
    )
    doc["met"] = all(r["met"] for r in ratios.values())
    doc["ratios"] = ratios
    doc["where_time_goes"] = {k: median_breakdown(v) for k, v in where.items()}
    doc["runs"] = where
    write(doc, args.out)


if __name__ == "__main__":
    main()
