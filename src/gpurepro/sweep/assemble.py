"""Assemble: the CPU document and what the GPU stage left (``bisect-gpu.json`` and one journal
per run) -> one bisection document, ``<results>/<case>/bisect_<axis>_<stamp>_<gpu>.json``.

Each run's trials are read from its journal, checked to have run the run's artifact (the
journal header records the substitute's sha256), and counted per arm with the share of failing
trials and its exact (Clopper-Pearson) 95% interval; then each release's result and the
boundaries follow (document.py). The journals are kept beside the document, in a folder of its
name; the document is validated against ``schema/bisect.schema.json`` before it is written,
with its Markdown (table.py) beside it, and an existing one is not replaced unless asked.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..build.artifacts import sha256_file
from ..env import privacy
from ..errors import UsageError
from ..record.validation import validate_document
from ..run.atomic import write_atomic
from ..run.journal import read
from . import timed
from .bisection import GPU_FILE, GPU_SCHEMA, boundaries, document_name, results
from .gpu import read_document
from .table import markdown


def _read_gpu(gpu_out: Path) -> dict[str, Any]:
    path = gpu_out / GPU_FILE
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: the GPU stage's record is missing or unreadable "
                         f"({type(exc).__name__}); give the folder the GPU stage's --out wrote") from None
    if not isinstance(record, dict) or record.get("schema") != GPU_SCHEMA:
        raise UsageError(f"{path}: not a bisection GPU stage record ({GPU_SCHEMA} expected)")
    return record


def _with_shares(counts: Mapping[str, Any] | None, exposure: Mapping[str, Any]) -> dict[str, Any] | None:
    """Each arm's counts with the share of failing trials (exact Clopper-Pearson interval) and
    the failures per ``per`` units of exposure (exact Poisson interval)."""
    if counts is None:
        return None
    from ..analyze import stats

    return {arm: {**c, "proportion": stats.proportion(c["failures"], c["n_valid"]),
                  "rate": stats.poisson_rate(c["failures"], float(c.get("exposure") or 0),
                                             float(exposure["per"]))}
            for arm, c in counts.items()}


def assemble(cpu: Mapping[str, Any], gpu: Mapping[str, Any] | None, gpu_out: Path | None,
             journals_dir: Path, root: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(json.dumps(cpu))  # a deep copy
    doc["stage"] = "assembled"
    runs = []
    header = None
    for g in (gpu or {}).get("runs") or []:
        run = {k: g.get(k) for k in ("point", "sha256", "releases", "why", "seed", "status",
                                     "reason", "exit", "wall_s", "class")}
        if "same_as_point" in g:
            run["same_as_point"] = g["same_as_point"]
        if "timing" in g:
            run["timing"] = g["timing"]
        run["counts"] = _with_shares(g.get("counts"), cpu["case"]["exposure"])
        if g.get("journal") and gpu_out is not None and "same_as_point" not in g:
            source = gpu_out / g["journal"]
            contents = read(source)
            got = ((contents.header.get("artifacts") or {}).get(cpu["axis"]["artifact"]) or {}).get("sha256")
            if got != g["sha256"]:
                raise UsageError(f"{source}: its trials ran {cpu['axis']['artifact']} with sha256 "
                                 f"{str(got)[:12]}…, not point {g['point']}'s {g['sha256'][:12]}…")
            header = header or contents.header
            if cpu["axis"].get("timed"):  # the class decided again from the journal's trials
                run["class"], run["timing"] = timed.point_class(
                    contents.trials, cpu["axis"]["timed"], cpu["axis"]["arms"][0],
                    cpu["case"]["failure_outcomes"], len(cpu["points"]))
            journals_dir.mkdir(parents=True, exist_ok=True)
            kept = journals_dir / source.name
            shutil.copyfile(source, kept)
            kept_at = kept.resolve()
            run.update(journal=str(kept_at.relative_to(root.resolve()))
                       if kept_at.is_relative_to(root.resolve()) else f"{journals_dir.name}/{kept.name}",
                       journal_sha256=sha256_file(kept))
        else:
            run.update(journal=None, journal_sha256=None)
        runs.append(run)
    doc["runs"] = runs
    none = ("nothing to run: no release built an artifact" if not cpu["points"] else
            "not run: no GPU stage output was given")
    doc["gpu"] = ({"status": "not run", "reason": none,
                   "device": None, "environment": None, "mode": None, "started_at": None,
                   "wall_s": None} if gpu is None else
                  {"status": "ran" if any(r["status"] == "ran" for r in runs) else "not run",
                   "reason": gpu.get("reason"), "detail": gpu.get("detail"),
                   "device": gpu.get("device"), "environment": (header or {}).get("environment"),
                   "mode": gpu.get("mode"), "started_at": gpu.get("started_at"),
                   "wall_s": gpu.get("wall_s")})
    doc["created_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    # Redacted before results and boundaries are derived: validate derives them again from it.
    doc = privacy.portable_value(doc, root, redact=True)
    doc["results"] = results(doc)
    doc["boundaries"] = boundaries(doc)
    return doc


def write_document(document: Path, gpu_out: Path | None, root: Path, out_dir: Path,
                   force: bool = False) -> Path:
    """Assemble and write the document (and its Markdown, ``<name>.md``, beside it)."""
    cpu = read_document(document)
    gpu = _read_gpu(gpu_out) if gpu_out is not None else None
    if gpu is not None and gpu_out is not None and gpu.get("document_sha256") != sha256_file(document):
        raise UsageError(f"{gpu_out / GPU_FILE}: its GPU stage ran another CPU document than "
                         f"{document} (sha256 {str(gpu.get('document_sha256'))[:12]}…); assemble "
                         f"it with the CPU document its artifacts came from")
    name = document_name(cpu["axis"]["name"],
                         (gpu or {}).get("started_at") or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                         ((gpu or {}).get("device") or {}).get("name"))
    folder = out_dir / cpu["case"]["name"]
    path = folder / f"{name}.json"
    if path.exists() and not force:
        raise UsageError(f"{path} exists; give --force to replace it")
    journals_dir = folder / name
    if journals_dir.exists():
        shutil.rmtree(journals_dir)
    doc = assemble(cpu, gpu, gpu_out, journals_dir, root)
    validate_document(doc, str(path))
    write_atomic(path, json.dumps(doc, indent=1) + "\n")
    write_atomic(path.with_suffix(".md"), markdown(doc))
    return path
