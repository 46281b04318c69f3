"""Benchmark: GPU time to a decided verdict, against the information bound and the known-rates
design for the same rates.

Each configuration runs on one GPU; the tile race one trial at a time (its main job's default,
and --jobs 1 in the earlier designs: concurrency changes the race, so the verdicts that count
are taken one trial at a time):
  tile-main       tile_unload_race's main job as a user runs it: its default design (the decisive
                  design with the case's main question served first), arms and trial budget
  ptxas           ptxas_abs_clamp's main job likewise: its declared deterministic outcomes and
                  its default of four trials at a time (a miscompile's answer does not race);
                  its trial seconds are summed over the four
and, over tile_unload_race's 13 original arms with 5-second trials, the earlier designs:
  decisive-13     the decisive design
  decisive-all    the decisive design over every arm of the case
  until-decided   --until-decided --max-trials N --look-every K
  fixed           --fixed --trials N
For each: the seconds of its trials, to the case's main question (the claims it serves first)
and to the whole confirmatory verdict, the trials run, the confirmatory claims decided, and the
known-rates design (gpurepro.analyze.known_rates: the fewest trials with which a one-look design
that knew the run's own rates, with its budget and most trials per arm, decides the same claims
in at least 90% of simulated runs, that chance stated; what such a design needs, not a proven
lower bound), with the ratio of the two only where that design decides them; and, for a main
question with rate claims, the information bound (gpurepro.analyze.information_bound: the least
expected GPU time any design holding the family-wise rate could need, under each crash process
fitted to the committed baseline trials on the run's GPU model), whose ratio under the process
the baseline's trials fit best is the number the design is judged by (goal: at most 1.5); the
known-rates design stays as a second yardstick.

Two steps, so the GPU node needs only what the run stage needs, and the analysis runs where
jsonschema is:

    python bench/time_to_verdict.py run --out DIR [--configs tile-main,ptxas]     # GPU
    python bench/time_to_verdict.py report DIR --out results/bench                 # anywhere

`report` also takes main jobs' journals run elsewhere (a pack's, bench/pack_job.sh):
``--journal tile-main=PATH``. `run` skips a configuration whose journal in DIR is complete, so
configurations may come from separate calls on the same machine; each records its wall time in
DIR/walls.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from common import ROOT, document, write

ARMS_13 = ("baseline,as-filed,as-filed-cuda,control-cuda,cuda-module-globals,one-thread,"
           "never-unload,always-unload,serialized,context-per-thread,other-tile-kernel,"
           "distinct-cubins,library-api")
# Each configuration: the case it runs and the flags of `gpurepro run` beside --redact,
# --no-record and --journal (the main jobs' flags are their defaults: none).
CONFIGS = {
    "tile-main": ("tile_unload_race", lambda a: []),
    "ptxas": ("ptxas_abs_clamp", lambda a: []),
    "decisive-13": ("tile_unload_race", lambda a: [
        *_tile_5s(a), "--decisive", "--max-trials", str(a.trials), "--arms", ARMS_13]),
    "decisive-all": ("tile_unload_race", lambda a: [
        *_tile_5s(a), "--decisive", "--max-trials", str(a.trials)]),
    "until-decided": ("tile_unload_race", lambda a: [
        *_tile_5s(a), "--until-decided", "--max-trials", str(a.trials),
        "--look-every", str(a.look_every), "--arms", ARMS_13]),
    "fixed": ("tile_unload_race", lambda a: [
        *_tile_5s(a), "--fixed", "--trials", str(a.trials), "--arms", ARMS_13]),
}


def _tile_5s(a: argparse.Namespace) -> list[str]:
    """The earlier configurations' shared flags: 5-second trials, seeded, built for --arch."""
    return ["--arch", a.arch, "--duration", str(a.duration), "--seed", str(a.seed), "--jobs", "1"]


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
        case, flags = CONFIGS[name]
        cmd = [sys.executable, "-m", "gpurepro", "run", case, "--redact", "--no-record",
               "--journal", str(journal), *flags(args)]
        t0 = time.perf_counter()
        done = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL,
                              env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
        walls[name] = time.perf_counter() - t0
        if done.returncode != 0:
            sys.exit(f"{name}: gpurepro run exited {done.returncode}")
        walls_path.write_text(json.dumps(walls, indent=1) + "\n")
        print(f"{name}: {walls[name]:.0f} s", flush=True)


def seconds_to_look(doc: dict[str, Any], trials: list[dict[str, Any]], claims: list[str]) -> float | None:
    """The trial seconds until the look that decided the last of ``claims`` (None: one is not
    decided): the trials in the journal's order (one at a time: the order they ran) up to the
    look's count of valid trials, or the run's end where it took that look there."""
    from gpurepro.model.outcomes import EVIDENCE

    looks = [c.get("look") for c in doc["claims"] if c["name"] in claims]
    if not looks or any(c["decision"] == "not_decided" for c in doc["claims"] if c["name"] in claims):
        return None
    stopping = doc["plan"]["options"].get("stopping") or {}
    schedule = stopping.get("look_at") or []
    last = max(int(x) for x in looks if x is not None) if any(looks) else len(schedule)
    need = schedule[last - 1] if 0 < last <= len(schedule) else len(trials)
    seconds, valid = 0.0, 0
    for t in trials:
        if valid >= need:
            break
        seconds += float(t.get("duration_s") or 0)
        valid += t.get("outcome") in EVIDENCE
    return seconds


def _journals(args: argparse.Namespace) -> dict[str, Path]:
    """Each configuration's journal: DIR's, then --journal NAME=PATH (a main job run elsewhere)."""
    found = {n: _journal(args.dir, n) for n in CONFIGS
             if args.dir is not None and _journal(args.dir, n).exists()}
    for given in args.journal:
        name, _, path = given.partition("=")
        if name not in CONFIGS or not path:
            sys.exit(f"--journal {given}: give NAME=PATH, NAME one of {', '.join(CONFIGS)}")
        found[name] = Path(path)
    if not found:
        sys.exit("no journal: give DIR with a `run`'s journals, or --journal NAME=PATH")
    return found


def report(args: argparse.Namespace) -> None:
    from gpurepro.analyze.known_rates import run_plan
    from gpurepro.case import load_case
    from gpurepro.model.result import Result
    from gpurepro.record.document import build_document
    from gpurepro.run.journal import read

    walls_path = args.dir / "walls.json" if args.dir is not None else None
    walls = json.loads(walls_path.read_text()) if walls_path and walls_path.exists() else {}
    outcome = {}
    ratios = {}
    journals = _journals(args)
    for name, path in journals.items():
        case = load_case(CONFIGS[name][0], ROOT)
        contents = read(path)
        doc = build_document(case, contents.header, contents.trials, ROOT)
        claims = [c for c in doc["claims"] if c.get("family") != "exploratory"]
        decided = [c["name"] for c in claims if c["decision"] != "not_decided"]
        main_question = list((doc["plan"]["options"].get("stopping") or {}).get("first") or ())
        known = doc.get("known_rates_plan") or run_plan(case, Result.of(doc), ROOT) or {}
        trial_s = sum(float(t.get("duration_s") or 0) for t in contents.trials)
        planned = len(contents.header["plan"]["order"])
        # A `run` here records its wall time once it ended; a journal from elsewhere ran to
        # its end where the document says it is complete.
        from_dir = args.dir is not None and path == _journal(args.dir, name)
        finished = name in walls if from_dir else bool(doc["completion"].get("complete"))
        outcome[name] = {"case": case.name, "journal": _rel(path), "wall_s": walls.get(name),
                         "trial_s": trial_s, "trials": len(contents.trials),
                         "planned": planned, "run_to_its_end": finished,
                         "main_question": main_question,
                         "main_question_s": seconds_to_look(doc, contents.trials, main_question),
                         "verdict_s": seconds_to_look(doc, contents.trials,
                                                      [c["name"] for c in claims]),
                         "jobs": contents.header["options"].get("jobs"),
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
        bound = information_bound(case, path, doc, main_question)
        if bound is not None:
            run_s = outcome[name]["main_question_s"]
            outcome[name]["information_bound"] = bound
            outcome[name]["ratio_to_bound"] = run_s / bound["seconds"] if run_s else None
            outcome[name]["ratio_to_bound_per_process"] = {
                k: run_s / b["seconds"] if run_s else None for k, b in bound["processes"].items()}
        ratios[name] = outcome[name]["ratio_to_plan"]
        wall = f"{walls[name]:.0f} s wall" if name in walls else "its own wall time in its log"
        print(f"{name}: {trial_s:.0f} s of trials ({wall}), {len(contents.trials)} "
              f"trials, {len(decided)}/{len(claims)} confirmatory claims decided; known-rates "
              f"design {known.get('seconds')} s (reached: {known.get('reached')}, chance "
              f"{outcome[name]['plan_chance']}), ratio {ratios[name]}", flush=True)
        if bound is not None:
            per = ", ".join(f"{k} {b['seconds']:.1f} s" for k, b in bound["processes"].items())
            run_s = outcome[name]["main_question_s"]
            # A run that ended before its main question was decided (stopped) has no time to it.
            against = (f"the run's {run_s:.1f} s are {outcome[name]['ratio_to_bound']:.2f}x it"
                       if run_s else "the run ended before its main question was decided: no ratio")
            print(f"  information bound of its main question: {bound['seconds']:.1f} s under the "
                  f"{bound['process']} process (the baseline's best fit; {per}); {against}",
                  flush=True)
    names = list(outcome)
    main = next((n for n in ("tile-main", "decisive-13") if n in outcome), names[0])
    to_bound = {n: o["ratio_to_bound"] for n, o in outcome.items() if o.get("ratio_to_bound")}
    if main in to_bound:
        ratio = {"name": f"trial seconds of {main}'s main question over its information bound "
                         f"under the baseline's best-fitting crash process "
                         f"({outcome[main]['information_bound']['process']})",
                 "value": to_bound[main], "per_config": to_bound,
                 "known_rates": {"name": "trial seconds over the known-rates design for each "
                                         "run's own rates (the second yardstick)",
                                 "per_config": ratios}}
    else:
        ratio = {"name": f"trial seconds of {main} over the known-rates design for its own rates",
                 "value": ratios[main], "per_config": ratios}
    doc = document(
        name="time_to_verdict",
        question="How much GPU time do the verdicts cost on one GPU (the tile race one trial at "
                 "a time), against the information bound (the least expected GPU time any "
                 "design holding the family-wise rate could need, under each crash process "
                 "fitted to the committed baseline trials) and the known-rates design for the "
                 "same run's rates (the fewest trials with which a one-look design that knew "
                 "them decides every claim in 90% of simulated runs)?",
        parameters={"configs": names, "outcome": outcome},
        samples={k: [v["trial_s"]] for k, v in outcome.items()},
        unit="second",
        ratio=ratio,
        goal={"op": "<=", "value": 1.5},
        notes=["one run per configuration on one GPU, --jobs 1; claims decided by the harness "
               "from the journals (gpurepro.record.document.build_document); the known-rates "
               "design by gpurepro.analyze.known_rates from each run's own trials; the "
               "information bound by gpurepro.analyze.information_bound from the committed "
               "trials on the run's GPU model (the baseline's fit the null crash processes, "
               "each arm's give its trial cost): Wald's log(1/level)/(nats per second) per rate "
               "claim at its Holm level, plus the expected seconds to each first failure a "
               "claim needs", *args.note],
    )
    write(doc, args.out)


def information_bound(case: Any, journal: Path, doc: dict[str, Any],
                      main_question: list[str]) -> dict[str, Any] | None:
    """The information bound of a run's main question (gpurepro.analyze.information_bound)
    under every crash process fitted to the committed baseline trials on the run's GPU model
    (gpurepro.analyze.calibrate.process_documents: the run's own document and the committed
    results beside it), the headline under the process the baseline's trials fit best; None
    where the question has no claim the bound covers."""
    from gpurepro.analyze.calibrate import process_documents
    from gpurepro.analyze.information_bound import question_bound
    from gpurepro.analyze.processes import ProcessFitError
    from gpurepro.analyze.recorded import RecordedRun

    if not main_question:
        return None
    path = journal.with_name(journal.name.replace(".journal.jsonl", ".json"))
    runs = process_documents(case, ROOT, RecordedRun.of(path, doc))
    trials = [t for r in runs for t in r.trials]
    stopping = doc["plan"]["options"].get("stopping") or {}
    duration = float((doc["plan"]["options"].get("budget") or {}).get("duration_s") or 0)
    confirmatory = [c["name"] for c in doc["claims"] if c.get("family") != "exploratory"]
    try:
        q = question_bound(case, trials, [n for n in main_question if n in confirmatory],
                           duration, float(stopping.get("alpha") or 0.05))
    except (ProcessFitError, ValueError):
        return None
    if not q.bounds or not any(b.claims for b in q.bounds.values()):
        return None
    best = q.best_fit if q.best_fit in q.bounds else next(iter(q.bounds))
    out = q.to_json()
    return {"process": best, "seconds": q.bounds[best].total_s,
            "range_s": [min(b.total_s for b in q.bounds.values()),
                        max(b.total_s for b in q.bounds.values())],
            "fitted_to": [_rel(r.path) for r in runs], **out}


def _rel(path: Path) -> str:
    path = path.resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name


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
    r.add_argument("--configs", default="tile-main,ptxas")
    r.set_defaults(fn=run)
    p = sub.add_parser("report")
    p.add_argument("dir", type=Path, nargs="?", help="a `run`'s --out")
    p.add_argument("--journal", action="append", default=[], metavar="NAME=PATH",
                   help="a configuration's journal run elsewhere (a main job's, from its pack)")
    p.add_argument("--out", type=Path, default=ROOT / "results" / "bench")
    p.add_argument("--note", action="append", default=[], help="a note for the document")
    p.set_defaults(fn=report)
    args = ap.parse_args()
    args.fn(args)


if __name__ == "__main__":
    main()
