"""Benchmark 3: GPU time to a decisive tile_unload_race verdict over all its arms.

Three configurations of the same case, run one after the other on one GPU:
  fixed           --trials N (every arm N trials)
  until-decided   --until-decided --max-trials N --look-every 5
  until-decided+jobs  the same with --jobs J (J trial processes at a time on the GPU)
For each: wall-clock seconds of the whole run, and whether its verdict is decisive (every arm
either crashes or is decisively crash-free against the baseline; none "inconclusive").
Goal: the best decisive configuration under 180 s on one H200. Needs scipy (the H200 image has
it); the journals are written under --out for `gpurepro record`.

    python bench/time_to_verdict.py --arch sm_90 --trials 25 --duration 8 --jobs 2 --out results/bench
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from common import ROOT, document, write

from gpurepro import stats
from gpurepro.journal import Journal
from gpurepro.manifest import load_case, load_sibling


def decisive(journal: Path) -> tuple[bool, list[str]]:
    case = load_case("tile_unload_race", ROOT)
    header, trials = Journal(journal).read()
    analysis = stats.analyze(trials, header["plan"]["arms"], case.baseline, case.failure_outcomes,
                             case.exposure.unit)
    verdict = load_sibling(case.path, "verdict")
    open_arms = [a for a in analysis["arms"] if a != case.baseline
                 and verdict.effect(analysis, a) in (None, "unexposed")]
    return not open_arms, open_arms


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--trials", type=int, default=25)
    ap.add_argument("--duration", type=float, default=8)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--configs", default="fixed,until-decided,until-decided+jobs")
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "bench")
    args = ap.parse_args()
    configs = {
        "fixed": ["--trials", str(args.trials)],
        "until-decided": ["--until-decided", "--max-trials", str(args.trials), "--look-every", "5"],
        "until-decided+jobs": ["--until-decided", "--max-trials", str(args.trials), "--look-every", "5",
                               "--jobs", str(args.jobs)],
    }
    wall: dict[str, list[float]] = {}
    outcome: dict[str, dict] = {}
    args.out.mkdir(parents=True, exist_ok=True)
    for name in args.configs.split(","):
        journal = args.out / f"time_to_verdict_{name.replace('+', '_plus_')}.journal.jsonl"
        if journal.exists():
            journal.unlink()
        cmd = [sys.executable, "-m", "gpurepro", "run", "tile_unload_race", "--arch", args.arch,
               "--duration", str(args.duration), "--seed", "3", "--redact", "--no-record",
               "--journal", str(journal), *configs[name]]
        t0 = time.perf_counter()
        subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL,
                       env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
        wall[name] = [time.perf_counter() - t0]
        ok, open_arms = decisive(journal)
        outcome[name] = {"decisive": ok, "inconclusive_arms": open_arms,
                         "trials": len(Journal(journal).read()[1])}
        print(f"{name}: {wall[name][0]:.0f} s, decisive={ok} {open_arms or ''}", flush=True)
    good = {k: v[0] for k, v in wall.items() if outcome[k]["decisive"]}
    best = min(good, key=good.get) if good else min(wall, key=lambda k: wall[k][0])
    doc = document(
        name="time_to_verdict",
        question="How much GPU time does a decisive tile_unload_race verdict cost, by stopping policy?",
        parameters={**vars(args), "out": None, "configs": list(wall), "outcome": outcome},
        samples=wall,
        unit="second",
        ratio={"name": f"wall seconds to a decisive verdict, best configuration ({best})",
               "value": wall[best][0],
               "versus_fixed": {k: v[0] / wall["fixed"][0] for k, v in wall.items()} if "fixed" in wall else None},
        goal={"op": "<=", "value": 180.0},
        notes=["one run per configuration on one GPU; the case's trials are the repetitions"],
    )
    write(doc, args.out)


if __name__ == "__main__":
    main()
