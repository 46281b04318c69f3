"""Benchmark 1: loop rate of host.cc vs seed/repro.cc on the same plain cubin (goal >= 0.95).

Both programs run the same load -> launch -> synchronize -> unload loop for --seconds, one at a
time, interleaved ABAB so drift hits both. The rate is taken from counter deltas between the
first and last heartbeat (launches per second), which leaves process start and CUDA
initialisation out of both. The seed runs bare (no crash-handler preload): it is the reference.
Value recorded per repetition: seconds per cycle (pyperf's unit is time).

    python bench/loop_rate.py --build-index build/tile_unload_race/sm_90/artifacts.json --out results/bench
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
from pathlib import Path

from common import ROOT, document, median, write

SEED_LINE = re.compile(r"launches=(\d+)")


def seed_rate(repro: Path, cubin: Path, seconds: int) -> float:
    out = subprocess.run([str(repro), str(cubin), str(seconds)], capture_output=True, text=True,
                         timeout=seconds + 30, check=True).stdout
    counts = [int(m[1]) for m in SEED_LINE.finditer(out)]
    # One heartbeat per second (sleep(1) between them).
    return (counts[-1] - counts[0]) / (len(counts) - 1)


def host_rate(host: Path, cubin: Path, seconds: int) -> float:
    out = subprocess.run([str(host), "--cubin", str(cubin), "--seconds", str(seconds)],
                         capture_output=True, text=True, timeout=seconds + 30, check=True).stdout
    beats = [json.loads(line) for line in out.splitlines() if '"heartbeat"' in line]
    first, last = beats[0], beats[-1]
    return (last["counters"]["launches"] - first["counters"]["launches"]) / (last["t"] - first["t"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build-index", required=True, type=Path)
    ap.add_argument("--cubin-artifact", default="cuda_cubin")
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "bench")
    args = ap.parse_args()
    index = json.loads(args.build_index.read_text())["artifacts"]
    path = lambda name: ROOT / index[name]["path"]  # noqa: E731
    cubin = path(args.cubin_artifact)
    rates: dict[str, list[float]] = {"host": [], "seed": []}
    for rep in range(args.reps):
        for label in (("host", "seed") if rep % 2 == 0 else ("seed", "host")):
            fn = host_rate if label == "host" else seed_rate
            exe = path("host") if label == "host" else path("seed_repro")
            rates[label].append(fn(exe, cubin, args.seconds))
            print(f"rep {rep} {label}: {rates[label][-1]:.0f} cycles/s", flush=True)
    med = {k: median(v) for k, v in rates.items()}
    ratio = med["host"] / med["seed"]
    doc = document(
        name="loop_rate",
        question="Does the instrumented host.cc run the reporter's loop as fast as seed/repro.cc?",
        parameters={"cubin": args.cubin_artifact, "cubin_sha256": index[args.cubin_artifact]["sha256"],
                    "seconds": args.seconds, "reps": args.reps, "order": "interleaved ABAB"},
        samples={k: [1.0 / r for r in v] for k, v in rates.items()},
        unit="second",
        ratio={"name": "host cycles/s over seed cycles/s (medians)", "value": ratio,
               "numerator": med["host"], "denominator": med["seed"]},
        goal={"op": ">=", "value": 0.95},
        notes=["samples are seconds per load/launch/unload cycle, one per repetition"],
    )
    write(doc, args.out)


if __name__ == "__main__":
    main()
