"""Collect: every cell record of a matrix, what each cubin emits, identical cubins grouped, the
line-info check, and the GPU stage's plan (one run per distinct cubin) -> the CPU document.

The CPU document is a matrix document (``schema/matrix.schema.json``) whose GPU stage has not
run: the GPU stage reads its plan from it, and ``assemble`` adds what the GPU stage measured.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from .. import __version__
from ..case.load import load_case
from ..env import fingerprint as envmod
from ..env import privacy
from ..model.files import write_atomic
from . import emitted
from .cells import read_cells
from .matrix import MATRIX_SCHEMA, cell_results
from .spec import Spec, build_root, load
from .validation import validate_sweep

# What other modules use; the rest is this module's own.
__all__ = ["cpu_document", "write_cpu_document"]

NOT_RUN_YET = "not run: the GPU stage has not run on this document"
# The CPU stage needs no GPU and does not look for one.
CPU_STAGE_GPU = {"available": False, "reason": "not queried: the CPU stage needs no GPU", "gpus": []}


def _spec_json(spec: Spec, root: Path) -> dict[str, Any]:
    return {
        "file": str(spec.path.relative_to(root.resolve())),
        "target": spec.target,
        "releases": list(spec.releases),
        "families": {f: list(p) for f, p in spec.families.items()},
        "variants": [{"name": v.name, "script": v.script, "description": v.description,
                      "releases": list(v.releases) if v.releases is not None else None}
                     for v in spec.variants],
        "tile_artifact": spec.tile_artifact,
        "control_artifact": spec.control_artifact,
        "control_arm": spec.control_arm,
        "gpu_defaults": {"arms": list(spec.arms), "trials": spec.trials,
                         "duration_s": spec.duration_s, "trial_timeout_s": spec.trial_timeout_s,
                         "jobs": spec.jobs},
    }


def _cell_json(rec: dict[str, Any]) -> dict[str, Any]:
    """A cell as the document lists it: versions, installer outcome, each export and control
    by its cubin's sha256 (the cubin's facts are listed once, under ``cubins``)."""
    def built(e: dict[str, Any] | None) -> dict[str, Any] | None:
        if e is None:
            return None
        out = {"status": e["status"], "reason": e["reason"], "sha256": e.get("sha256")}
        if "variant" in e:
            out = {"variant": e["variant"], **out,
                   "bytecode_sha256": (e.get("bytecode") or {}).get("sha256")}
        return out

    return {
        "id": rec["cell"], "release": rec["release"], "family": rec["family"],
        "requested": rec["requested"], "resolved": rec["resolved"], "tools": rec["tools"],
        "python": rec["python"], "install": rec["install"], "declared": rec.get("declared"),
        "exports": [built(e) for e in rec["exports"]],
        "control": built(rec["control"]),
    }


def _cubins(records: list[dict[str, Any]], root: Path) -> dict[str, dict[str, Any]]:
    """Every distinct cubin (by sha256) once: where one copy is, what it emits, who emitted it."""
    out: dict[str, dict[str, Any]] = {}
    for rec in records:
        built = [("tile", e, e["variant"]) for e in rec["exports"]]
        if rec["control"] is not None:
            built.append(("cuda", rec["control"], None))
        for kind, e, variant in built:
            if e["status"] != "ok":
                continue
            entry = out.get(e["sha256"])
            if entry is None:
                # "trials": the GPU stage's, pooled per arm over its runs (assemble fills it).
                entry = out[e["sha256"]] = {"kind": kind, "path": e["path"],
                                            **emitted.facts(root / e["path"]), "emitted_by": [],
                                            "trials": None}
            entry["emitted_by"].append({"cell": rec["cell"], "variant": variant})
    return out


def _run(spec: Spec, i: int, subs: dict[str, tuple[str, dict[str, Any]]], arms: list[str],
         newest: bool) -> dict[str, Any]:
    cells = sorted({b["cell"] for _, c in subs.values() for b in c["emitted_by"]},
                   key=spec.rank, reverse=True)
    return {
        # Plain characters only: the id names journal files that are copied between machines.
        "id": f"{i:02d}-" + "_and_".join(f"{c['kind']}-{sha[:12]}" for sha, c in subs.values()),
        "substitutes": {art: {"sha256": sha, "path": c["path"]} for art, (sha, c) in subs.items()},
        "arms": arms, "newest": newest, "cells": cells,
        "status": "not run", "reason": NOT_RUN_YET,
    }


def _runs(spec: Spec, cubins: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The GPU stage's plan, one harness run each: every distinct Tile IR cubin as the case's
    Tile IR artifact under the matrix's arms, newest first (a budget cut drops the oldest);
    each family's plain cubin under the control arm in the run of that family's first Tile IR
    cubin. The harness runs no plan without the baseline arm, so the plain cubin of a family
    that exported no Tile IR cubin runs, last, beside the newest Tile IR cubin's baseline."""
    family = {c.id: c.family for c in spec.cells()}

    def newest_cell(c: dict[str, Any]) -> int:
        return max(spec.rank(b["cell"]) for b in c["emitted_by"])

    tiles = sorted(((sha, c) for sha, c in cubins.items() if c["kind"] == "tile"),
                   key=lambda sc: -newest_cell(sc[1]))
    controls = sorted(((sha, c) for sha, c in cubins.items() if c["kind"] == "cuda"),
                      key=lambda sc: -newest_cell(sc[1]))
    pending = list(controls)
    runs: list[dict[str, Any]] = []
    for sha, c in tiles:
        fams = {family[b["cell"]] for b in c["emitted_by"]}
        subs = {spec.tile_artifact: (sha, c)}
        arms = list(spec.arms)
        ctl = next((x for x in pending if fams & {family[b["cell"]] for b in x[1]["emitted_by"]}), None)
        if ctl is not None:
            pending.remove(ctl)
            subs[spec.control_artifact] = ctl
            arms.append(spec.control_arm)
        newest = spec.newest().id in {b["cell"] for b in c["emitted_by"]}
        runs.append(_run(spec, len(runs) + 1, subs, arms, newest))
    for ctl in pending:
        subs = {spec.control_artifact: ctl}
        if tiles:
            subs = {spec.tile_artifact: tiles[0], **subs}
        runs.append(_run(spec, len(runs) + 1, subs, [*spec.arms, spec.control_arm], False))
    return runs


def cpu_document(spec: Spec, root: Path, into: Path | None = None) -> dict[str, Any]:
    """The CPU document from the cell records under ``into`` (default: the build root)."""
    root = root.resolve()
    records = read_cells(spec, root, into)
    if not records:
        where = (into or root / build_root(spec)).resolve().relative_to(root)
        raise FileNotFoundError(f"no cell records under {where}/cells: run the cells first "
                                f"(nox -s tile_matrix)")
    case = load_case(spec.case, root)
    cubins = _cubins(records, root)
    newest = next((r for r in records if r["cell"] == spec.newest().id), None)
    check = (newest or {}).get("lineinfo_check")
    if check and check.get("status") == "ok":
        lineinfo = {"cell": spec.newest().id, "status": "ok", **emitted.lineinfo_comparison(check, root)}
    else:
        lineinfo = {"cell": spec.newest().id, "status": "not run",
                    "reason": (check or {}).get("reason") or "the newest cell exported nothing"}
    doc: dict[str, Any] = {
        "schema": MATRIX_SCHEMA,
        "gpurepro_version": __version__,
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "case": {"name": case.name, "question": case.question, "report_url": case.report_url,
                 "exposure": {"counter": case.exposure.counter, "unit": case.exposure.unit,
                              "per": 1e6},
                 "failure_outcomes": list(case.failure_outcomes)},
        "matrix": _spec_json(spec, root),
        # The CPU stage's machine (the GPU stage's is under "gpu"), redacted: this goes public.
        "environment": envmod.fingerprint(root, redact=True, gpu_info=CPU_STAGE_GPU),
        "cells": [_cell_json(r) for r in records],
        "missing_cells": [c.id for c in spec.cells() if c.id not in {r["cell"] for r in records}],
        "cubins": cubins,
        "lineinfo_check": lineinfo,
        "gpu": {"status": "not run", "reason": NOT_RUN_YET, "device": None, "environment": None,
                "options": None, "started_at": None, "wall_s": None},
        "runs": _runs(spec, cubins),
    }
    doc["results"] = cell_results(doc)
    portable: dict[str, Any] = privacy.portable_value(doc, root, redact=True)
    return portable


def write_cpu_document(case: str, root: Path, out: Path | None = None,
                       into: Path | None = None) -> Path:
    spec = load(case, root)
    doc = cpu_document(spec, root, into)
    validate_sweep(doc, "the CPU matrix document")
    path = out or ((into or root / build_root(spec)) / "matrix.cpu.json")
    write_atomic(path, json.dumps(doc, indent=1) + "\n")
    return path
