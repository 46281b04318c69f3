"""Assemble: a sweep's CPU document and what its GPU stage left (``sweep-gpu.json`` and one
journal per run) -> one document, ``<results>/<case>/<name>.json``, with its Markdown beside it.

Each run's journal is checked to have run the run's artifacts (the journal header records each
substitute's sha256), kept beside the document in a folder of its name, and its trials counted
per arm. Then what the kind adds: a bisection's runs with the share of failing trials (exact
Clopper-Pearson 95% interval) and the failures per unit of exposure (exact Poisson), each
release's result and the boundaries (bisection.py); a matrix's runs with each arm's outcome
counts, exposure and rate, each cubin's trials pooled over the runs that used it and each cell's
result (matrix.py). The document is validated against its schema before it is written, and an
existing one is not replaced unless asked. Needs the analysis packages (scipy).
"""

from __future__ import annotations

import copy
import json
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..analyze import stats
from ..case.axis import RUNTIME_SUBSTITUTE
from ..env import privacy
from ..errors import UsageError
from ..model.files import sha256_file, write_atomic
from ..run.journal import Contents, read
from . import timed
from .bisection import boundaries, results
from .matrix import cell_results
from .model import (
    BISECTION,
    GPU_FILE,
    ArmCounts,
    GpuRecord,
    document_name,
    kind_of,
    read_document,
    stamp,
)
from .table import markdown
from .validation import validate_sweep

# What other modules use; the rest is this module's own.
__all__ = ["assemble", "pool", "write_document"]

NO_OUTPUT = "not run: no GPU stage output was given"


def _journal(source: Path, expected: Mapping[str, str], what: str) -> Contents:
    """A run's journal, which must have run the run's artifacts (artifact -> sha256)."""
    contents = read(source)
    recorded = contents.header.get("artifacts") or {}
    for artifact, sha in expected.items():
        got = ((contents.header.get("runtime") or {}).get("index") or {}).get("sha256") \
            if artifact == RUNTIME_SUBSTITUTE else (recorded.get(artifact) or {}).get("sha256")
        if got != sha:
            raise UsageError(f"{source}: its trials ran {artifact} with sha256 {str(got)[:12]}…, "
                             f"not {what} {sha[:12]}…")
    return contents


def _keep(source: Path, journals_dir: Path, root: Path) -> dict[str, str]:
    """The journal copied beside the document: its path (in the repository) and sha256."""
    journals_dir.mkdir(parents=True, exist_ok=True)
    kept = journals_dir / source.name
    shutil.copyfile(source, kept)
    at = kept.resolve()
    return {"journal": str(at.relative_to(root.resolve())) if at.is_relative_to(root.resolve())
            else f"{journals_dir.name}/{kept.name}", "journal_sha256": sha256_file(kept)}


def _gpu_section(gpu: GpuRecord | None, header: Mapping[str, Any] | None, none: str,
                 extra: str) -> dict[str, Any]:
    """The document's ``gpu``: where the trials ran, or why none did. A stage stopped part way
    ran what it ran; its reason says where it stopped. ``extra``: the kind's own field (a
    bisection's search ``mode``, a matrix's ``options``)."""
    if gpu is None:
        return {"status": "not run", "reason": none, "device": None, "environment": None,
                extra: None, "started_at": None, "wall_s": None}
    ran = gpu.status == "ran" or any(r.status == "ran" for r in gpu.runs)
    return {"status": "ran" if ran else "not run",
            "reason": None if gpu.status == "ran" else gpu.reason or f"not run ({gpu.status})",
            "detail": gpu.detail, "device": gpu.device,
            "environment": (header or {}).get("environment"),
            extra: gpu.mode if extra == "mode" else gpu.options,
            "started_at": gpu.started_at, "wall_s": gpu.wall_s}


def _with_shares(counts: Mapping[str, ArmCounts] | None, per: float) -> dict[str, Any] | None:
    """Each arm's counts with the share of failing trials (exact Clopper-Pearson interval) and
    the failures per ``per`` units of exposure (exact Poisson interval)."""
    if counts is None:
        return None
    return {arm: {**c.to_json(), "proportion": stats.proportion(c.failures, c.n_valid),
                  "rate": stats.poisson_rate(c.failures, c.exposure, float(per))}
            for arm, c in counts.items()}


def _bisection(cpu: Mapping[str, Any], gpu: GpuRecord | None, gpu_out: Path | None,
               journals_dir: Path, root: Path) -> dict[str, Any]:
    doc: dict[str, Any] = copy.deepcopy(dict(cpu))
    doc["stage"] = "assembled"
    axis, case = cpu["axis"], cpu["case"]
    runs = []
    header = None
    for g in gpu.runs if gpu is not None else []:
        assert g.point is not None
        run: dict[str, Any] = {"point": g.point, "sha256": g.sha256, "releases": list(g.releases),
                               "why": g.why, "seed": g.seed, "status": g.status,
                               "reason": g.reason, "exit": g.exit, "wall_s": g.wall_s,
                               "class": g.klass}
        if g.same_as is not None:
            run["same_as_point"] = g.same_as
        if g.timing is not None:
            run["timing"] = g.timing
        run["counts"] = _with_shares(g.counts, case["exposure"]["per"])
        if g.journal and gpu_out is not None and g.same_as is None:
            sha = cpu["points"][g.point]["sha256"]
            contents = _journal(gpu_out / g.journal, {axis["artifact"]: sha}, f"point {g.point}'s")
            header = header or contents.header
            if axis.get("timed"):  # the class decided again from the journal's trials
                run["class"], run["timing"] = timed.point_class(
                    contents.trials, axis["timed"], axis["arms"][0], case["failure_outcomes"],
                    len(cpu["points"]))
            run.update(_keep(gpu_out / g.journal, journals_dir, root))
        else:
            run.update(journal=None, journal_sha256=None)
        runs.append(run)
    doc["runs"] = runs
    doc["gpu"] = _gpu_section(gpu, header, "nothing to run: no release built an artifact"
                              if not cpu["points"] else NO_OUTPUT, "mode")
    doc["created_at"] = stamp()
    # Redacted before results and boundaries are derived: validate derives them again from it.
    doc = privacy.portable_value(doc, root, redact=True)
    doc["results"] = results(doc)
    doc["boundaries"] = boundaries(doc)
    return doc


def arm_summaries(trials: Sequence[Mapping[str, Any]], arms: Sequence[str],
                  case: Mapping[str, Any]) -> dict[str, Any]:
    """Per arm of a matrix run: counts by outcome and by detail, valid trials, failures, the
    valid ones' exposure, and failures per ``per`` units of it (exact Poisson interval)."""
    unit, per = case["exposure"]["unit"], case["exposure"]["per"]
    return {arm: {"n": c.n, "outcomes": c.outcomes, "details": c.details, "n_valid": c.n_valid,
                  "failures": c.failures, "exposure": {"total": c.exposure, "unit": unit, "per": per},
                  "rate": stats.poisson_rate(c.failures, c.exposure, per)}
            for arm, c in ArmCounts.by_arm(trials, case["failure_outcomes"], arms).items()}


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
        arms = list(dict.fromkeys(t["arm"] for t in pooled))
        cubin["trials"] = {"runs": runs, "arms": arm_summaries(pooled, arms, doc["case"])} if runs else None


def _matrix(cpu: Mapping[str, Any], gpu: GpuRecord | None, gpu_out: Path | None,
            journals_dir: Path, root: Path) -> dict[str, Any]:
    doc: dict[str, Any] = copy.deepcopy(dict(cpu))
    by_id = {r.id: r for r in gpu.runs} if gpu is not None else {}
    header = None
    trials_by_run: dict[str, list[dict[str, Any]]] = {}
    for run in doc["runs"]:
        g = by_id.get(run["id"])
        if gpu is None or (gpu.status != "ran" and g is None):
            run.update(status="not run", reason=_gpu_section(gpu, None, NO_OUTPUT, "options")["reason"])
            continue
        if g is None:
            run.update(status="not run", reason="not run: the GPU stage did not reach it")
            continue
        run.update(arms=list(g.arms), seed=g.seed, exit=g.exit, wall_s=g.wall_s)
        if g.status != "ran" or gpu_out is None or g.journal is None:
            run.update(status=g.status, reason=g.reason)
            continue
        contents = _journal(gpu_out / g.journal, {a: s["sha256"] for a, s in run["substitutes"].items()},
                            "the run's cubin")
        header = header or contents.header
        trials_by_run[run["id"]] = contents.trials
        run.update(status="ran", reason=g.reason,
                   summary=arm_summaries(contents.trials, run["arms"], doc["case"]),
                   **_keep(gpu_out / g.journal, journals_dir, root))
    pool(doc, trials_by_run)
    doc["gpu"] = _gpu_section(gpu, header, NO_OUTPUT, "options")
    doc["created_at"] = stamp()
    doc["results"] = cell_results(doc)
    portable: dict[str, Any] = privacy.portable_value(doc, root, redact=True)
    return portable


def assemble(cpu: Mapping[str, Any], gpu: GpuRecord | None, gpu_out: Path | None,
             journals_dir: Path, root: Path) -> dict[str, Any]:
    """The document of ``cpu``'s kind; each run's journal copied into ``journals_dir``."""
    build = _bisection if kind_of(cpu) == BISECTION else _matrix
    return build(cpu, gpu, gpu_out, journals_dir, root)


def write_document(document: Path, gpu_out: Path | None, root: Path, out_dir: Path,
                   force: bool = False) -> Path:
    """Assemble and write the document (and its Markdown, ``<name>.md``, beside it)."""
    cpu = read_document(document)
    kind = kind_of(cpu)
    assert kind is not None
    gpu = GpuRecord.read(gpu_out, kind) if gpu_out is not None else None
    if gpu is not None and gpu_out is not None and gpu.document_sha256 != sha256_file(document):
        raise UsageError(f"{gpu_out / GPU_FILE}: its GPU stage ran another CPU document than "
                         f"{document} (sha256 {gpu.document_sha256[:12]}…); assemble it with the "
                         f"CPU document its artifacts came from")
    prefix = f"bisect_{cpu['axis']['name']}" if kind == BISECTION else "matrix"
    name = document_name(prefix, gpu.started_at if gpu is not None else stamp(),
                         ((gpu.device if gpu is not None else None) or {}).get("name"))
    folder = out_dir / cpu["case"]["name"]
    path: Path = folder / f"{name}.json"
    if path.exists() and not force:
        raise UsageError(f"{path} exists; give --force to replace it")
    journals_dir = folder / name
    if journals_dir.exists():
        shutil.rmtree(journals_dir)
    doc = assemble(cpu, gpu, gpu_out, journals_dir, root)
    validate_sweep(doc, str(path))
    write_atomic(path, json.dumps(doc, indent=1) + "\n")
    write_atomic(path.with_suffix(".md"), markdown(doc))
    return path
