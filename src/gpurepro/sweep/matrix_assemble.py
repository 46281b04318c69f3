"""Assemble: the CPU matrix document and what the GPU stage left (``matrix-gpu.json`` and one
journal per run) -> one matrix document, ``<results>/<case>/matrix_<stamp>_<gpu>.json``.

Each run's trials are read from its journal (``gpurepro.run.journal.read``), checked to have run the
run's cubin (the journal header records the substitute's sha256), and summarised per arm:
outcome counts, exposure, failures and the failure rate per 10^6 units of exposure with an exact
Poisson 95% interval (``gpurepro.analyze.stats``). The journals are kept beside the document, in a
folder of its name. The document is validated against ``schema/matrix.schema.json`` before it
is written, and an existing one is not replaced unless asked.
"""

from __future__ import annotations

import json
import shutil
import time
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..analyze import stats, tally
from ..build.artifacts import sha256_file
from ..env import privacy
from ..errors import UsageError
from ..record.validation import validate_matrix
from ..run.atomic import write_atomic
from ..run.journal import read
from .matrix import cell_results, document_name
from .matrix_gpu import GPU_FILE, GPU_SCHEMA, read_document
from .matrix_table import markdown


def arm_summary(trials: Sequence[Mapping[str, Any]], failure_outcomes: Sequence[str],
                unit: str, per: float) -> dict[str, Any]:
    """One arm's trials: counts by outcome (and by detail, e.g. the signal), valid trials,
    failures, total exposure of the valid ones, and failures per ``per`` units of exposure."""
    counts = tally.arm_counts(trials, failure_outcomes)
    details: dict[str, Counter[str]] = defaultdict(Counter)
    for t in trials:
        details[t["outcome"]][str(t.get("detail") or "")] += 1
    return {
        "n": counts["n"], "outcomes": counts["outcomes"],
        "details": {o: dict(sorted(c.items())) for o, c in sorted(details.items())},
        "n_valid": counts["n_valid"], "failures": counts["failures"],
        "exposure": {"total": counts["exposure_total"], "unit": unit, "per": per},
        "rate": stats.poisson_rate(counts["failures"], counts["exposure_total"], per),
    }


def run_trials(journal: Path, run: Mapping[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(trials, header) of one run's journal, which must have run the run's cubins."""
    contents = read(journal)
    recorded = contents.header.get("artifacts") or {}
    for artifact, sub in run["substitutes"].items():
        got = (recorded.get(artifact) or {}).get("sha256")
        if got != sub["sha256"]:
            raise UsageError(f"{journal}: its trials ran {artifact} with sha256 {str(got)[:12]}…, "
                             f"not the run's cubin {sub['sha256'][:12]}…")
    return contents.trials, contents.header


def summarize(trials: Sequence[Mapping[str, Any]], arms: Sequence[str],
              case: Mapping[str, Any]) -> dict[str, Any]:
    exposure = case["exposure"]
    return {arm: arm_summary(ts, case["failure_outcomes"], exposure["unit"], exposure["per"])
            for arm, ts in tally.trials_by_arm(trials, list(arms)).items() if ts}


def pool(doc: Mapping[str, Any], trials_by_run: Mapping[str, list[dict[str, Any]]]) -> None:
    """Each cubin's trials over every run that used it, per arm: the control arm's trials count
    for the plain cubin a run substituted, every other arm's for its Tile IR cubin."""
    m = doc["matrix"]
    for sha, cubin in doc["cubins"].items():
        artifact = m["tile_artifact"] if cubin["kind"] == "tile" else m["control_artifact"]
        wants_control = artifact == m["control_artifact"]
        pooled: list[dict[str, Any]] = []
        runs = []
        for run in doc["runs"]:
            if run["id"] not in trials_by_run or \
                    (run["substitutes"].get(artifact) or {}).get("sha256") != sha:
                continue
            mine = [t for t in trials_by_run[run["id"]] if (t["arm"] == m["control_arm"]) == wants_control]
            if mine:
                pooled += mine
                runs.append(run["id"])
        arms = dict.fromkeys(t["arm"] for t in pooled)
        cubin["trials"] = {"runs": runs, "arms": summarize(pooled, list(arms), doc["case"])} if runs else None


def _read_gpu(gpu_out: Path) -> dict[str, Any]:
    path = gpu_out / GPU_FILE
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: the GPU stage's record is missing or unreadable "
                         f"({type(exc).__name__}); give the folder `gpurepro matrix run --out` wrote") from None
    if not isinstance(record, dict) or record.get("schema") != GPU_SCHEMA:
        raise UsageError(f"{path}: not a GPU stage record ({GPU_SCHEMA} expected)")
    return record


def _gpu_section(gpu: Mapping[str, Any] | None, header: Mapping[str, Any] | None) -> dict[str, Any]:
    if gpu is None:
        return {"status": "not run", "reason": "not run: no GPU stage output was given",
                "device": None, "environment": None, "options": None, "started_at": None,
                "wall_s": None}
    # A stage stopped part way ran what it ran; its reason says where it stopped.
    ran = gpu["status"] == "ran" or any(r.get("status") == "ran" for r in gpu.get("runs") or [])
    reason = None if gpu["status"] == "ran" else gpu.get("reason") or f"not run ({gpu['status']})"
    return {"status": "ran" if ran else "not run",
            "reason": reason,
            "detail": gpu.get("detail"),
            "device": gpu.get("device"),
            "environment": (header or {}).get("environment"),
            "options": gpu.get("options"), "started_at": gpu.get("started_at"),
            "wall_s": gpu.get("wall_s")}


def assemble(cpu: Mapping[str, Any], gpu: Mapping[str, Any] | None, gpu_out: Path | None,
             journals_dir: Path, root: Path) -> dict[str, Any]:
    """The matrix document; each run's journal copied into ``journals_dir``."""
    doc = json.loads(json.dumps(cpu))  # a deep copy
    by_id = {r["id"]: r for r in (gpu or {}).get("runs", [])}
    header = None
    trials_by_run: dict[str, list[dict[str, Any]]] = {}
    for run in doc["runs"]:
        g = by_id.get(run["id"])
        if gpu is None or (gpu["status"] != "ran" and g is None):
            run.update(status="not run", reason=_gpu_section(gpu, None)["reason"])
            continue
        if g is None:
            run.update(status="not run", reason="not run: the GPU stage did not reach it")
            continue
        run.update(arms=g["arms"], seed=g.get("seed"), exit=g.get("exit"), wall_s=g.get("wall_s"))
        if g["status"] != "ran":
            run.update(status=g["status"], reason=g["reason"])
            continue
        assert gpu_out is not None
        source = gpu_out / g["journal"]
        trials, run_header = run_trials(source, run)
        header = header or run_header
        journals_dir.mkdir(parents=True, exist_ok=True)
        kept = journals_dir / source.name
        shutil.copyfile(source, kept)
        trials_by_run[run["id"]] = trials
        run.update(status="ran", reason=None, summary=summarize(trials, run["arms"], doc["case"]),
                   journal=str(kept.resolve().relative_to(root.resolve())),
                   journal_sha256=sha256_file(kept))
    pool(doc, trials_by_run)
    doc["gpu"] = _gpu_section(gpu, header)
    doc["created_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    doc["results"] = cell_results(doc)
    return privacy.portable_value(doc, root, redact=True)


def write_document(document: Path, gpu_out: Path | None, root: Path, out_dir: Path,
                   force: bool = False) -> Path:
    """Assemble and write the document (and its table, ``<name>.md``, beside it)."""
    cpu = read_document(document)
    gpu = _read_gpu(gpu_out) if gpu_out is not None else None
    name = document_name((gpu or {}).get("started_at") or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                         ((gpu or {}).get("device") or {}).get("name"))
    folder = out_dir / cpu["case"]["name"]
    path = folder / f"{name}.json"
    if path.exists() and not force:
        raise UsageError(f"{path} exists; give --force to replace it")
    journals_dir = folder / name
    if journals_dir.exists():
        shutil.rmtree(journals_dir)
    doc = assemble(cpu, gpu, gpu_out, journals_dir, root)
    validate_matrix(doc, str(path))
    write_atomic(path, json.dumps(doc, indent=1) + "\n")
    write_atomic(path.with_suffix(".md"), markdown(doc))
    return path
