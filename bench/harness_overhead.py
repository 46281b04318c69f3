"""Benchmark 2: harness cost per trial vs launching the same process bare (goal <= 5% or <= 20 ms).

The same testdriver command (`ok` for --seconds) is run --reps times bare with
subprocess.run and --reps times through the harness (execute_trial: own process group,
reader threads, parsing, classification, journal append with fsync), interleaved. The value
per repetition is the wall time of one trial.

    python bench/harness_overhead.py --out results/bench
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import time
from pathlib import Path

from common import ROOT, document, median, write

from gpurepro.building.artifacts import build_case
from gpurepro.case import TrialBudget, load_case
from gpurepro.model.plan import PlannedTrial
from gpurepro.run.execute import RunOptions, execute_trial
from gpurepro.run.journal import Journal


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=0.2)
    # 20: the committed runs' repetitions, so that pyperf's test (equal numbers of values)
    # compares a new run's suite with theirs.
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "bench")
    args = ap.parse_args()
    case = load_case(ROOT / "tests" / "fixtures" / "fake_case" / "manifest.py", ROOT)
    index = build_case(case, "host", ROOT, ROOT / "build" / "tests")
    driver = ROOT / index["artifacts"]["testdriver"]["path"]
    argv = [str(driver), "ok", "--seconds", str(args.seconds), "--heartbeat-ms", "50"]
    opts = RunOptions(budget=TrialBudget(args.seconds, 0, 30.0))
    times: dict[str, list[float]] = {"bare": [], "harness": []}
    with tempfile.TemporaryDirectory() as tmp:
        journal = Journal.create(Path(tmp) / "bench.journal.jsonl", {"case": case.name})
        for rep in range(args.reps):
            for label in (("bare", "harness") if rep % 2 == 0 else ("harness", "bare")):
                t0 = time.perf_counter()
                if label == "bare":
                    subprocess.run(argv, capture_output=True, check=True, env=dict(os.environ))
                else:
                    rec = execute_trial(case, PlannedTrial(rep, "ok", rep), {"mode": "ok"}, index,
                                        ROOT, opts, None, 0)
                    journal.append_trial(rec)
                    assert rec["outcome"] == "survived", rec
                times[label].append(time.perf_counter() - t0)
    med = {k: median(v) for k, v in times.items()}
    extra_ms = (med["harness"] - med["bare"]) * 1000
    doc = document(
        name="harness_overhead",
        question="What does the harness add to each trial, against running the same process bare?",
        parameters={"seconds": args.seconds, "reps": args.reps, "command": "testdriver ok",
                    "order": "interleaved ABAB"},
        samples=times,
        unit="second",
        ratio={"name": "harness trial time over bare trial time (medians)",
               "value": med["harness"] / med["bare"], "numerator": med["harness"],
               "denominator": med["bare"], "extra_ms": extra_ms},
        goal={"op": "<=", "value": 1.05, "or": {"what": "extra ms per trial", "op": "<=",
                                                 "value": 20.0, "measured": extra_ms}},
        notes=[f"median extra per trial: {extra_ms:.1f} ms"],
    )
    write(doc, args.out)


if __name__ == "__main__":
    main()
