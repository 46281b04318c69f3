"""Benchmark: GPU time to a decided tile_unload_race verdict, fixed design against --until-decided.

Both configurations run on one GPU with one trial at a time (--jobs 1: concurrency changes
this race, so the verdicts that count are taken one trial at a time):
  fixed           --trials N, every arm N trials of D seconds; its claims decided at one look
  until-decided   --until-decided --max-trials N --look-every K, the same D
For each: wall-clock seconds of the whole run, trials run, and how many of the case's claims
were decided (supported or contradicted) by the harness's family-wise procedure.

Two steps, so the GPU node needs only the standard library (the run stage) and the analysis
runs where scipy and jsonschema are installed:

    python bench/time_to_verdict.py run --out DIR [--configs fixed,until-decided]   # GPU node
    python bench/time_to_verdict.py report DIR --out results/bench                  # anywhere

`run` skips a configuration whose journal in DIR is complete, so the configurations may come
from separate calls on the same machine; each records its own wall time in DIR/walls.json.
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

CONFIGS = {
    "fixed": lambda a: ["--trials", str(a.trials)],
    "until-decided": lambda a: ["--until-decided", "--max-trials", str(a.trials),
                                "--look-every", str(a.look_every)],
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
    from gpurepro.analyze.verdict import decide_claims
    from gpurepro.case import load_case
    from gpurepro.run.journal import read

    case = load_case("tile_unload_race", ROOT)
    walls = json.loads((args.dir / "walls.json").read_text())
    outcome = {}
    for name in walls:
        contents = read(_journal(args.dir, name))
        claims = decide_claims(case, contents.header, contents.trials)
        decided = [c["name"] for c in claims if c["decision"] != "not_decided"]
        outcome[name] = {"trials": len(contents.trials), "claims": len(claims),
                         "decided": len(decided),
                         "not_decided": [c["name"] for c in claims if c["decision"] == "not_decided"],
                         "options": contents.header["options"]}
        print(f"{name}: {walls[name]:.0f} s, {len(contents.trials)} trials, "
              f"{len(decided)}/{len(claims)} claims decided", flush=True)
    seq = "until-decided"
    doc = document(
        name="time_to_verdict",
        question="How much GPU time do tile_unload_race's claims cost to decide, one trial at a "
                 "time on one GPU: fixed design against --until-decided?",
        parameters={"configs": list(walls), "outcome": outcome},
        samples={k: [v] for k, v in walls.items()},
        unit="second",
        ratio={"name": "wall seconds of --until-decided (all claims decided or maximum reached)",
               "value": walls[seq],
               "versus_fixed": walls[seq] / walls["fixed"] if "fixed" in walls else None},
        goal={"op": "<=", "value": 90.0},
        notes=["one run per configuration on one GPU, --jobs 1; the case's trials are the "
               "repetitions; claims decided by gpurepro.analyze.verdict.decide_claims from the journals",
               *args.note],
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
    r.add_argument("--configs", default="fixed,until-decided")
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
