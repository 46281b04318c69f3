"""Benchmark: GPU time to a decided tile_unload_race verdict, against the known-rates design.

Each configuration runs on one GPU with one trial at a time (--jobs 1: concurrency changes this
race, so the verdicts that count are taken one trial at a time), 5-second trials:
  decisive-13     the decisive design (the main job's default) over the 13 original arms
  decisive-all    the decisive design over every arm of the case
  until-decided   --until-decided --max-trials N --look-every K over the 13 original arms
  fixed           --fixed --trials N over the 13 original arms
For each: the seconds of its trials, the trials run, the confirmatory claims decided, and the
known-rates design (gpurepro.analyze.known_rates: the fewest trials with which a one-look design
that knew the run's own rates, with its budget and most trials per arm, decides the same claims
in at least 90% of simulated runs; what such a design needs, not a proven lower bound), with the
ratio of the two where that design decides them: the number the design is judged by (goal: at
most 1.5).

Two steps, so the GPU node needs only what the run stage needs (the decisive design decides its
claims as it runs, with scipy, which the GPU node has), and the analysis runs where jsonschema is:

    python bench/time_to_verdict.py run --out DIR [--configs decisive-13,decisive-all]   # GPU
    python bench/time_to_verdict.py report DIR --out results/bench                         # anywhere

`run` skips a configuration whose journal in DIR is complete, so configurations may come from
separate calls on the same machine; each records its wall time in DIR/walls.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from common import ROOT, document, write

ARMS_13 = ("baseline,as-filed,as-filed-cuda,control-cuda,cuda-module-globals,one-thread,"
           "never-unload,always-unload,serialized,context-per-thread,other-tile-kernel,"
           "distinct-cubins,library-api")
CONFIGS = {
    "decisive-13": lambda a: ["--decisive", "--max-trials", str(a.trials), "--arms", ARMS_13],
    "decisive-all": lambda a: ["--decisive", "--max-trials", str(a.trials)],
    "until-decided": lambda a: ["--until-decided", "--max-trials", str(a.trials),
                                "--look-every", str(a.look_every), "--arms", ARMS_13],
    "fixed": lambda a: ["--fixed", "--trials", str(a.trials), "--arms", ARMS_13],
}


def _journal(out: Path, name: str) -> Path:
    return out / f"time_to_verdict_{name}.journal.jsonl"


def run(args: argparse.Namespace) -> None:
    args.out.mkdir(parents=True, exist_ok=True)
    walls_path = args.out / "walls.json"
    walls = json.loads(walls_path.read_text()) if walls_path.exists() else {}
    for name in args.configs.split(","):
        journal = _journal(args.out, name)
        if name in walls and journal.exists():
            print(f"{name}: already run ({walls[name]:.0f} s)", flush=True)
            continue
        journal.unlink(missing_ok=True)
        cmd = [sys.executable, "-m", "gpurepro", "run", "tile_unload_race", "--arch", args.arch,
               "--duration", str(args.duration), "--seed", str(args.seed), "--jobs", "1",
               "--redact", "--no-record", "--journal", str(journal), *CONFIGS[name](args)]
        t0 = time.perf_counter()
        done = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL,
                              env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
        walls[name] = time.perf_counter() - t0
        if done.returncode != 0:
            sys.exit(f"{name}: gpurepro run exited {done.returncode}")
        walls_path.write_text(json.dumps(walls, indent=1) + "\n")
        print(f"{name}: {walls[name]:.0f} s", flush=True)


def report(args: argparse.Namespace) -> None:
    from gpurepro.analyze.known_rates import run_plan
    from gpurepro.case import load_case
    from gpurepro.record.document import build_document
    from gpurepro.run.journal import read

    case = load_case("tile_unload_race", ROOT)
    walls_path = args.dir / "walls.json"
    walls = json.loads(walls_path.read_text()) if walls_path.exists() else {}
    outcome = {}
    ratios = {}
    # Every configuration with a journal; one whose run was stopped before its end (a call's
    # time limit) has no wall time and says so.
    names = [n for n in CONFIGS if _journal(args.dir, n).exists()]
    for name in names:
        path = _journal(args.dir, name)
        contents = read(path)
        doc = build_document(case, contents.header, contents.trials, ROOT)
        claims = [c for c in doc["claims"] if c.get("family") != "exploratory"]
        decided = [c["name"] for c in claims if c["decision"] != "not_decided"]
        known = doc.get("known_rates_plan") or run_plan(case, doc, ROOT) or {}
        trial_s = sum(float(t.get("duration_s") or 0) for t in contents.trials)
        planned = len(contents.header["plan"]["order"])
        finished = name in walls
        outcome[name] = {"wall_s": walls.get(name), "trial_s": trial_s, "trials": len(contents.trials),
                         "planned": planned, "run_to_its_end": finished,
                         "confirmatory": len(claims), "decided": len(decided),
                         "not_decided": [c["name"] for c in claims if c["decision"] == "not_decided"],
                         "exploratory": [c["name"] for c in doc["claims"] if c.get("family") == "exploratory"],
                         "plan_s": known.get("seconds"), "plan_trials": known.get("trials"),
                         "plan_reached": known.get("reached"),
                         "plan_chance": (known.get("chance") or {}).get("decides_every_claim"),
                         # Only against a design that decides the claims (analyze.known_rates).
                         "ratio_to_plan": (trial_s / known["seconds"])
                         if known.get("seconds") and known.get("reached") else None,
                         "stopping": {k: v for k, v in (contents.header["options"].get("stopping") or {}).items()
                                      if k != "priors"}}
        ratios[name] = outcome[name]["ratio_to_plan"]
        wall = f"{walls[name]:.0f} s wall" if name in walls else "stopped before its end"
        print(f"{name}: {trial_s:.0f} s of trials ({wall}), {len(contents.trials)} "
              f"trials, {len(decided)}/{len(claims)} confirmatory claims decided; known-rates "
              f"design {known.get('seconds')} s (reached: {known.get('reached')}), ratio "
              f"{ratios[name]}", flush=True)
    main = "decisive-13" if "decisive-13" in outcome else next(iter(outcome))
    doc = document(
        name="time_to_verdict",
        question="How much GPU time does tile_unload_race's verdict cost, one trial at a time on "
                 "one GPU, against the known-rates design for the same run's rates (the fewest "
                 "trials with which a one-look design that knew them decides every claim in 90% "
                 "of simulated runs)?",
        parameters={"configs": names, "outcome": outcome},
        samples={k: [v["trial_s"]] for k, v in outcome.items()},
        unit="second",
        ratio={"name": f"trial seconds of {main} over the known-rates design for its own rates",
               "value": ratios[main], "per_config": ratios},
        goal={"op": "<=", "value": 1.5},
        notes=["one run per configuration on one GPU, --jobs 1; claims decided by the harness "
               "from the journals (gpurepro.record.document.build_document); the known-rates "
               "design by gpurepro.analyze.known_rates from each run's own trials", *args.note],
    )
    write(doc, args.out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="step", required=True)
    r = sub.add_parser("run")
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--arch", default="sm_90")
    r.add_argument("--trials", type=int, default=10)
    r.add_argument("--look-every", type=int, default=5)
    r.add_argument("--duration", type=float, default=5)
    r.add_argument("--seed", type=int, default=3)
    r.add_argument("--configs", default="decisive-13,decisive-all")
    r.set_defaults(fn=run)
    p = sub.add_parser("report")
    p.add_argument("dir", type=Path)
    p.add_argument("--out", type=Path, default=ROOT / "results" / "bench")
    p.add_argument("--note", action="append", default=[], help="a note for the document")
    p.set_defaults(fn=report)
    args = ap.parse_args()
    args.fn(args)


if __name__ == "__main__":
    main()
