"""Benchmark 4: trials per second with 1 vs 2 GPUs (goal >= 1.8x).

The same short plan (a crashing and a surviving arm of tile_unload_race, --duration seconds
each) runs with --gpus 0 and with --gpus 0,1, interleaved ABBA; trials/s = planned trials over
the wall time of the whole `gpurepro run` (process start, journal and all).

    python bench/gpu_scaling.py --out results/bench
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import ROOT, document, median, write


def one_run(gpus: str, args: argparse.Namespace, journal: Path) -> float:
    cmd = [sys.executable, "-m", "gpurepro", "run", "tile_unload_race", "--arch", args.arch,
           "--arms", args.arms, "--trials", str(args.trials), "--duration", str(args.duration),
           "--gpus", gpus, "--seed", "1", "--no-record", "--journal", str(journal)]
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, check=True, env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
                   stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    trials = len(args.arms.split(",")) * args.trials
    print(f"gpus {gpus}: {trials} trials in {wall:.1f} s", flush=True)
    return trials / wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--arms", default="baseline,control-cuda")
    ap.add_argument("--trials", type=int, default=8)
    ap.add_argument("--duration", type=float, default=1.0)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "bench")
    args = ap.parse_args()
    rates: dict[str, list[float]] = {"1gpu": [], "2gpu": []}
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(args.reps):
            order = ("1gpu", "2gpu") if rep % 2 == 0 else ("2gpu", "1gpu")
            for label in order:
                rates[label].append(one_run("0" if label == "1gpu" else "0,1", args,
                                            Path(tmp) / f"{label}-{rep}.jsonl"))
    med = {k: median(v) for k, v in rates.items()}
    doc = document(
        name="gpu_scaling",
        question="How much faster does a plan run on two GPUs than on one?",
        parameters={"arms": args.arms, "trials_per_arm": args.trials, "duration_s": args.duration,
                    "reps": args.reps, "order": "interleaved ABBA"},
        samples={k: [1.0 / r for r in v] for k, v in rates.items()},
        unit="second",
        ratio={"name": "trials/s with 2 GPUs over trials/s with 1 GPU (medians)",
               "value": med["2gpu"] / med["1gpu"], "numerator": med["2gpu"], "denominator": med["1gpu"]},
        goal={"op": ">=", "value": 1.8},
        notes=["samples are wall seconds per trial for the whole run"],
    )
    write(doc, args.out)


if __name__ == "__main__":
    main()
