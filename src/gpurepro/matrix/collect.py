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
from .. import env as envmod
from ..manifest import load_case
from ..record import write_atomic
from . import emitted
from .cell import read_cells
from .document import MATRIX_SCHEMA, cell_results, validate_matrix
from .spec import Spec, build_root, load

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
                entry = out[e["sha256"]] = {"kind": kind, "path": e["path"],
                                            **emitted.facts(root / e["path"]), "emitted_by": []}
            entry["emitted_by"].append({"cell": rec["cell"], "variant": variant})
    return out


def _order(runs: list[dict[str, Any]], spec: Spec, families: dict[str, str]) -> list[dict[str, Any]]:
    """The order the GPU stage runs them in, so that a budget cut drops what matters least:
    Tile IR cubins newest first, each family's control right after the first Tile IR cubin of
    that family, and last the controls of families that exported no Tile IR cubin at all."""
    tile = sorted((r for r in runs if r["artifact"] == spec.tile_artifact),
                  key=lambda r: -spec.rank(r["cells"][0]))
    controls = sorted((r for r in runs if r["artifact"] != spec.tile_artifact),
                      key=lambda r: -spec.rank(r["cells"][0]))
    ordered: list[dict[str, Any]] = []
    for r in tile:
        ordered.append(r)
        family = families[r["cells"][0]]
        ordered += [c for c in controls if families[c["cells"][0]] == family and c not in ordered]
    return ordered + [c for c in controls if c not in ordered]


def _runs(spec: Spec, cubins: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The GPU stage's plan: each distinct Tile IR cubin under the matrix's arms, each distinct
    plain cubin under the control arm (see ``_order``)."""
    newest = spec.newest().id
    runs = []
    for sha, c in cubins.items():
        cells = sorted({b["cell"] for b in c["emitted_by"]}, key=spec.rank, reverse=True)
        tile = c["kind"] == "tile"
        runs.append({
            "id": f"{c['kind']}-{sha[:12]}",
            "artifact": spec.tile_artifact if tile else spec.control_artifact,
            "sha256": sha, "path": c["path"],
            "arms": list(spec.arms) if tile else [spec.control_arm],
            "newest": tile and newest in cells,
            "cells": cells,
            "status": "not run", "reason": NOT_RUN_YET,
        })
    return _order(runs, spec, {c.id: c.family for c in spec.cells()})


def cpu_document(spec: Spec, root: Path, into: Path | None = None) -> dict[str, Any]:
    """The CPU document from the cell records under ``into`` (default: the build root)."""
    root = root.resolve()
    records = read_cells(spec, root, into)
    if not records:
        raise FileNotFoundError(f"no cell records under {build_root(spec)}/cells: run the cells "
                                f"first (nox -s tile_matrix)")
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
    return envmod.portable_value(doc, root, redact=True)


def write_cpu_document(case: str, root: Path, out: Path | None = None,
                       into: Path | None = None) -> Path:
    spec = load(case, root)
    doc = cpu_document(spec, root, into)
    validate_matrix(doc, "the CPU matrix document")
    path = out or ((into or root / build_root(spec)) / "matrix.cpu.json")
    write_atomic(path, json.dumps(doc, indent=1) + "\n")
    return path
