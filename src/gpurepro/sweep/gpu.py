"""The GPU stage: the case's harness on the fewest distinct artifacts that pin every boundary.

Reads the CPU document, runs the ends of every segment, then bisects between runs that ended
differently (search.py; ``exhaustive``: every point), each run being
``python -m gpurepro run <case> --arms <axis arms> --artifact <artifact>=<path>`` in a process
of its own, so its trials go through the harness's isolation, classification and journal; the
substitute's sha256 goes into the journal header. A run's trials decide its point's class
(fails / passes / unknown), which decides the next run. What it did goes to
``<out>/bisect-gpu.json`` after every run (an interrupted stage keeps what it has);
``assemble`` turns that and the journals into the document. Needs the prebuilt case
(``build/<case>``) and the axis's artifacts (``build/bisect/<case>``), Python and the standard
library; without a GPU nothing runs and the status is 5.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..env import fingerprint as envmod
from ..errors import EXIT_ERROR, EXIT_NO_DRIVER, EXIT_OK, Stopped, UsageError
from ..run.classify import EVIDENCE
from ..run.journal import read
from . import search, timed
from .bisection import GPU_FILE, GPU_SCHEMA, SCHEMA_ID

NO_GPU = "not run: no GPU"


def _stamp() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_document(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise UsageError(f"{path}: not a readable bisection document ({type(exc).__name__}); "
                         f"the CPU stage (gpurepro bisect CASE --axis NAME --stage cpu) writes one") from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA_ID:
        raise UsageError(f"{path}: not a bisection document (schema {SCHEMA_ID} expected)")
    return doc


def _write(out: Path, record: Mapping[str, Any]) -> None:
    tmp = out / f".{GPU_FILE}.tmp"
    tmp.write_text(json.dumps(record, indent=1) + "\n")
    os.replace(tmp, out / GPU_FILE)


def counts(trials: Sequence[Mapping[str, Any]], failure_outcomes: Sequence[str]) -> dict[str, Any]:
    """Per arm: trials, outcomes, valid trials, failures and the valid trials' exposure."""
    out: dict[str, Any] = {}
    for t in trials:
        a = out.setdefault(t["arm"], {"n": 0, "outcomes": {}, "n_valid": 0, "failures": 0,
                                      "exposure": 0.0})
        a["n"] += 1
        a["outcomes"][t["outcome"]] = a["outcomes"].get(t["outcome"], 0) + 1
        valid = t["outcome"] in EVIDENCE
        a["n_valid"] += int(valid)
        a["failures"] += int(valid and t["outcome"] in failure_outcomes)
        a["exposure"] += float(t.get("exposure") or 0) if valid else 0.0
    for a in out.values():
        a["outcomes"] = dict(sorted(a["outcomes"].items()))
    return dict(sorted(out.items()))


def _harness(doc: Mapping[str, Any], path: str, seed: int, journal: Path, log: Path,
             root: Path) -> int:
    ax = doc["axis"]
    argv = [sys.executable, "-m", "gpurepro", "run", doc["case"].get("manifest") or doc["case"]["name"],
            "--build-dir", doc.get("case_build") or "build",
            "--arch", doc["target"],
            # A timed axis times its reference arm beside the point's, in the same run.
            "--arms", ",".join([*ax["arms"], *([ax["timed"]["reference"]] if ax.get("timed") else [])]),
            "--trials", str(ax["trials"]), "--duration", f"{ax['duration_s']:g}",
            "--timeout", f"{ax['timeout_s']:g}", "--jobs", str(ax.get("jobs", 1)),
            "--seed", str(seed), "--no-record", "--redact", "--journal", str(journal),
            "--artifact", f"{ax['artifact']}={path}"]
    package_dir = str(Path(__file__).resolve().parents[2])
    env = {**os.environ,
           "PYTHONPATH": os.pathsep.join(filter(None, (package_dir, os.environ.get("PYTHONPATH"))))}
    with open(log, "w") as fh:
        proc = subprocess.Popen(argv, cwd=root, env=env, stdout=fh, stderr=subprocess.STDOUT)
        try:
            return proc.wait()
        except (Stopped, KeyboardInterrupt):
            proc.terminate()  # the harness kills its own trials and journals what finished
            proc.wait()
            raise


def _last_line(log: Path) -> str:
    lines = [ln.strip() for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    return lines[-1] if lines else "no output"


def run_gpu_stage(document: Path, out: Path, root: Path, exhaustive: bool = False, seed: int = 0,
                  say: Callable[[str], None] = lambda _m: None) -> int:
    doc = read_document(document)
    if (out / GPU_FILE).exists():
        raise UsageError(f"{out / GPU_FILE} exists: give the GPU stage a new --out folder")
    missing = [a["path"] for sha, a in doc["artifacts"].items()
               if not (root / a["path"]).is_file() or _sha256(root / a["path"]) != sha]
    if missing:
        raise UsageError(f"{missing[0]} is missing or not the CPU stage's artifact here (carry "
                         f"{Path(missing[0]).parent.parent})")
    out.mkdir(parents=True, exist_ok=True)
    record: dict[str, Any] = {
        "schema": GPU_SCHEMA, "document_sha256": _sha256(document), "started_at": _stamp(),
        "mode": "exhaustive" if exhaustive else "bisect", "seed": seed, "status": "running",
        "reason": None, "detail": None, "device": None, "wall_s": None, "runs": []}
    info = envmod.gpus()
    if not info.get("available"):
        record.update(status="not run", reason=NO_GPU, detail=info.get("reason") or "none found")
        _write(out, record)
        say(f"bisect: {NO_GPU} ({record['detail']}); nothing run ({out / GPU_FILE})")
        return EXIT_NO_DRIVER
    first = (info.get("gpus") or [{}])[0]
    record["device"] = {"name": first.get("name"), "compute_capability": first.get("compute_capability"),
                        "driver_version": info.get("driver_version"),
                        "cuda_driver_api": info.get("cuda_driver_api")}
    points = doc["points"]
    segments: dict[int, list[int]] = {}
    for p in points:
        segments.setdefault(p["segment"], []).append(p["index"])
    todo = search.first_round([segments[k] for k in sorted(segments)], exhaustive)
    classes: dict[int, str] = {}
    by_sha: dict[str, dict[str, Any]] = {}
    started = time.monotonic()
    status = EXIT_OK
    while todo:
        for i, why in todo:
            if i in classes:
                continue
            p = points[i]
            entry: dict[str, Any] = {"point": i, "sha256": p["sha256"], "releases": p["releases"],
                                     "why": why, "seed": seed + len(record["runs"])}
            if p["sha256"] in by_sha:  # an artifact seen again later on the axis: run once
                done = by_sha[p["sha256"]]
                entry.update({k: done[k] for k in ("status", "reason", "journal", "exit",
                                                    "wall_s", "counts", "class", "timing")
                              if k in done},
                             same_as_point=done["point"])
            else:
                name = f"point{i:03d}_{p['sha256'][:12]}"
                journal, log = out / f"{name}.journal.jsonl", out / f"{name}.log"
                say(f"bisect: point {i} ({', '.join(p['releases'])}): {why}")
                t0 = time.monotonic()
                try:
                    rc = _harness(doc, doc["artifacts"][p["sha256"]]["path"], entry["seed"],
                                  journal, log, root)
                except (Stopped, KeyboardInterrupt):
                    entry.update(status="failed", reason="stopped by a signal while it ran",
                                 journal=journal.name if journal.is_file() else None, exit=None,
                                 wall_s=None, counts=None, **{"class": "unknown"})
                    record["runs"].append(entry)
                    record.update(status="stopped", reason=f"stopped by a signal during point {i}")
                    _write(out, record)
                    raise
                entry.update(exit=rc, wall_s=round(time.monotonic() - t0, 1),
                             journal=journal.name if journal.is_file() else None)
                if rc == EXIT_NO_DRIVER:
                    entry.update(status="not run", reason=NO_GPU, counts=None, **{"class": "unknown"})
                elif rc in (EXIT_OK, EXIT_ERROR) and journal.is_file():
                    # 1: some trial was the harness's error; the others still count.
                    trials = read(journal).trials
                    failure_outcomes = doc["case"]["failure_outcomes"]
                    entry.update(status="ran", reason=None if rc == EXIT_OK else _last_line(log),
                                 counts=counts(trials, failure_outcomes))
                    if doc["axis"].get("timed"):
                        entry["class"], entry["timing"] = timed.point_class(
                            trials, doc["axis"]["timed"], doc["axis"]["arms"][0],
                            failure_outcomes, len(points))
                    else:
                        entry["class"] = search.class_of(trials, failure_outcomes, EVIDENCE)
                else:
                    entry.update(status="failed", reason=f"the harness exited {rc}: {_last_line(log)}",
                                 counts=None, **{"class": "unknown"})
                    status = EXIT_ERROR
                by_sha[p["sha256"]] = entry
            classes[i] = entry["class"] if entry["status"] == "ran" else "unknown"
            record["runs"].append(entry)
            _write(out, record)
            if entry.get("exit") == EXIT_NO_DRIVER:
                record.update(status="not run", reason=NO_GPU, detail=_last_line(out / f"{name}.log"))
                _write(out, record)
                return EXIT_NO_DRIVER
        todo = [] if exhaustive else [t for t in search.next_round(len(points), classes)
                                      if t[0] not in classes]
    record.update(status="ran", wall_s=round(time.monotonic() - started, 1))
    _write(out, record)
    ran = sum(1 for r in record["runs"] if r["status"] == "ran" and "same_as_point" not in r)
    say(f"bisect: {ran} of {len(points)} distinct artifacts run in {record['wall_s']:.0f} s "
        f"({out / GPU_FILE})")
    return status
