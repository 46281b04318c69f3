"""The GPU stage: the case's harness on every distinct cubin of a matrix document, one run each.

Each run is ``python -m gpurepro run <case> --artifact NAME=PATH ...`` in a process of its own,
so its trials go through the harness's isolation, classification and journal like any run's;
the substitute's sha256 goes into the journal header. It needs the prebuilt case (``build/<case>``)
and the matrix's cubins (``build/matrix/<case>``) and nothing but the standard library. What it
did goes to ``<out>/matrix-gpu.json`` after every run (an interrupted stage keeps what it has);
``gpurepro matrix assemble`` turns that and the journals into the matrix document.

Runs go newest first (the plan's order) under a wall-clock budget: a run whose trials would not
fit is not started, and says so. Without a GPU nothing runs and the status is 5.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..case.load import load_case
from ..env import fingerprint as envmod
from ..errors import EXIT_ERROR, EXIT_NO_DRIVER, EXIT_OK, Stopped, UsageError
from ..run.atomic import write_atomic
from .matrix import MATRIX_SCHEMA

GPU_FILE = "matrix-gpu.json"
GPU_SCHEMA = "gpurepro/matrix-gpu/1"
# Per trial beyond its duration (process start, module loads, teardown), and per run (the
# harness's start-up and fingerprint): what the budget check counts on. In the committed H200
# run of 5 s trials (20261130T031305Z), survivors took at most 5.27 s; baseline trials mostly
# end sooner, by crashing.
TRIAL_OVERHEAD_S = 1.5
RUN_OVERHEAD_S = 5.0
NO_GPU = "not run: no GPU"


@dataclass(frozen=True)
class Options:
    arms: tuple[str, ...] | None = None  # for every Tile IR cubin (default: the matrix's)
    newest_arms: tuple[str, ...] | None = None  # for the newest cell's cubin (default: arms)
    budget_s: float = 420.0
    seed: int = 0


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _stamp() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_document(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise UsageError(f"{path}: not a readable matrix document ({type(exc).__name__})") from None
    if not isinstance(doc, dict) or doc.get("schema") != MATRIX_SCHEMA:
        raise UsageError(f"{path}: not a matrix document (schema {MATRIX_SCHEMA} expected); "
                         f"`gpurepro matrix collect` writes one")
    return doc


def _write(out: Path, record: dict[str, Any]) -> None:
    write_atomic(out / GPU_FILE, json.dumps(record, indent=1) + "\n")


def _arms_for(run: dict[str, Any], control_arm: str, opts: Options,
              defaults: tuple[str, ...]) -> tuple[str, ...]:
    """The run's arms: the matrix's (or --arms; --newest-arms for the newest cell's cubin), and
    the control arm where the run carries a plain cubin."""
    arms = opts.arms or defaults
    if run["newest"]:
        arms = opts.newest_arms or arms
    return (*arms, *(a for a in run["arms"] if a == control_arm and a not in arms))


def _check_arms(doc: dict[str, Any], wanted: list[tuple[str, ...]], root: Path) -> None:
    case = load_case(doc["case"]["name"], root)
    known = case.resolved_arms()
    unknown = sorted({a for arms in wanted for a in arms if a not in known})
    if unknown:
        raise UsageError(f"--arms/--newest-arms: {case.name} has no arm {', '.join(unknown)} "
                         f"(known: {', '.join(known)})")


def _harness(doc: dict[str, Any], run: dict[str, Any], arms: tuple[str, ...], seed: int,
             journal: Path, log: Path, root: Path) -> int:
    d = doc["matrix"]["gpu_defaults"]
    argv = [sys.executable, "-m", "gpurepro", "run", doc["case"]["name"],
            "--arch", doc["matrix"]["target"], "--arms", ",".join(arms),
            "--trials", str(d["trials"]), "--duration", f"{d['duration_s']:g}",
            "--timeout", f"{d['trial_timeout_s']:g}", "--jobs", str(d["jobs"]),
            "--seed", str(seed), "--no-record", "--redact", "--journal", str(journal)]
    for artifact, sub in run["substitutes"].items():
        argv += ["--artifact", f"{artifact}={sub['path']}"]
    # The harness is this very package, wherever it was imported from (PYTHONPATH=src on a node).
    package_dir = str(Path(__file__).resolve().parents[2])
    env = {**os.environ,
           "PYTHONPATH": os.pathsep.join(filter(None, (package_dir, os.environ.get("PYTHONPATH"))))}
    with open(log, "w") as fh:
        proc = subprocess.Popen(argv, cwd=root, env=env, stdout=fh, stderr=subprocess.STDOUT)
        try:
            return proc.wait()
        except (Stopped, KeyboardInterrupt):
            # The harness kills its own trials on SIGTERM and journals what finished.
            proc.terminate()
            proc.wait()
            raise


def _last_line(log: Path) -> str:
    lines = [ln.strip() for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    return lines[-1] if lines else "no output"


def run_gpu_stage(document: Path, out: Path, root: Path, opts: Options) -> int:
    doc = read_document(document)
    control_arm = doc["matrix"]["control_arm"]
    defaults = tuple(doc["matrix"]["gpu_defaults"]["arms"])
    plan = [(r, _arms_for(r, control_arm, opts, defaults)) for r in doc["runs"]]
    _check_arms(doc, [arms for _, arms in plan], root)
    if (out / GPU_FILE).exists():
        raise UsageError(f"{out / GPU_FILE} exists: give the GPU stage a new --out folder")
    out.mkdir(parents=True, exist_ok=True)
    record: dict[str, Any] = {
        "schema": GPU_SCHEMA, "document_sha256": _sha256(document), "started_at": _stamp(),
        "options": {"arms": list(opts.arms or defaults),
                    "newest_arms": list(opts.newest_arms or opts.arms or defaults),
                    "budget_s": opts.budget_s, "seed": opts.seed,
                    **doc["matrix"]["gpu_defaults"]},
        "status": "running", "reason": None, "detail": None, "device": None, "wall_s": None,
        "runs": [],
    }
    info = envmod.gpus()
    if not info.get("available"):
        record.update(status="not run", reason=NO_GPU, detail=info.get("reason") or "none found")
        _write(out, record)
        _say(f"matrix: {NO_GPU} ({record['detail']}); {len(plan)} runs planned, none run "
             f"({out / GPU_FILE})")
        return EXIT_NO_DRIVER
    first = (info.get("gpus") or [{}])[0]
    record["device"] = {"name": first.get("name"), "compute_capability": first.get("compute_capability"),
                        "driver_version": info.get("driver_version"),
                        "cuda_driver_api": info.get("cuda_driver_api")}
    started = time.monotonic()
    d = doc["matrix"]["gpu_defaults"]
    status = EXIT_OK
    for i, (run, arms) in enumerate(plan):
        entry: dict[str, Any] = {"id": run["id"], "substitutes": run["substitutes"],
                                 "arms": list(arms), "seed": opts.seed + i, "journal": None,
                                 "exit": None, "wall_s": None}
        spent = time.monotonic() - started
        need = len(arms) * d["trials"] * (d["duration_s"] + TRIAL_OVERHEAD_S) + RUN_OVERHEAD_S
        absent = [s["path"] for s in run["substitutes"].values()
                  if not (root / s["path"]).is_file() or _sha256(root / s["path"]) != s["sha256"]]
        if spent + need > opts.budget_s:
            entry.update(status="not run", reason=f"not run: the GPU stage's budget of "
                         f"{opts.budget_s:g} s would be exceeded ({spent:.0f} s spent, about "
                         f"{need:.0f} s more needed)")
        elif absent:
            entry.update(status="not run", reason=f"not run: {absent[0]} is missing or not the "
                         f"CPU stage's cubin here (carry build/matrix/{doc['case']['name']})")
        else:
            journal, log = out / f"{run['id']}.journal.jsonl", out / f"{run['id']}.log"
            _say(f"matrix: {run['id']} ({', '.join(run['cells'][:3])}"
                 f"{', ...' if len(run['cells']) > 3 else ''}): {', '.join(arms)}")
            t0 = time.monotonic()
            try:
                rc = _harness(doc, run, arms, opts.seed + i, journal, log, root)
            except (Stopped, KeyboardInterrupt):
                # Said in the record too: assemble then reports the runs done and this one.
                entry.update(status="failed", reason="stopped by a signal while it ran",
                             journal=journal.name if journal.is_file() else None)
                record["runs"].append(entry)
                record.update(status="stopped", reason=f"stopped by a signal during {run['id']}")
                _write(out, record)
                raise
            entry.update(exit=rc, wall_s=round(time.monotonic() - t0, 1),
                         journal=journal.name if journal.is_file() else None)
            if rc == EXIT_OK and journal.is_file():
                entry.update(status="ran", reason=None)
            elif rc == EXIT_NO_DRIVER:
                entry.update(status="not run", reason=NO_GPU)
            else:
                entry.update(status="failed", reason=f"the harness exited {rc}: {_last_line(log)}")
                status = EXIT_ERROR
        record["runs"].append(entry)
        _write(out, record)
        if entry.get("exit") == EXIT_NO_DRIVER:
            record.update(status="not run", reason=NO_GPU, detail=_last_line(out / f"{run['id']}.log"))
            _write(out, record)
            return EXIT_NO_DRIVER
    record.update(status="ran", wall_s=round(time.monotonic() - started, 1))
    _write(out, record)
    ran = sum(1 for r in record["runs"] if r["status"] == "ran")
    _say(f"matrix: {ran} of {len(plan)} runs done in {record['wall_s']:.0f} s ({out / GPU_FILE}); "
         f"next, where the analysis packages are: python -m gpurepro matrix assemble "
         f"{document} {out}")
    return status
