"""The matrix document: its schema id, its name, each cell's result, and its checks.

A cell's result follows from the rest of the document (never recorded apart from it): a cell
whose pins did not install, or whose export failed, could not run, with that reason; an export
whose cubin's run ran has that run's per-arm counts and rates; any other has its run's reason
for not running (no GPU, a spent budget, ...). Standard library only up to validation.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

MATRIX_SCHEMA = "gpurepro/matrix/1"
SCHEMA_FILE = "matrix.schema.json"


def document_name(started_at: str | None, gpu_name: str | None) -> str:
    """``matrix_<UTC stamp>_<gpu>``: the GPU stage's start and GPU, or ``no-gpu``."""
    stamp = re.sub(r"[-:]", "", started_at or "")
    gpu = re.sub(r"[^A-Za-z0-9]+", "-", gpu_name or "no-gpu").strip("-") or "no-gpu"
    return f"matrix_{stamp}_{gpu}"


def _could_not(reason: str) -> dict[str, Any]:
    return {"status": "could not run", "reason": reason, "run": None, "arms": None}


def _from_run(run: Mapping[str, Any] | None, sha: str) -> dict[str, Any]:
    if run is None:
        return {"status": "not run", "reason": f"no run planned for cubin {sha[:12]}",
                "run": None, "arms": None}
    if run["status"] == "ran":
        return {"status": "ran", "reason": None, "run": run["id"], "arms": run.get("summary")}
    return {"status": run["status"], "reason": run["reason"], "run": run["id"], "arms": None}


def _result(built: Mapping[str, Any] | None, cell: Mapping[str, Any],
            runs: Mapping[str, Mapping[str, Any]], what: str) -> dict[str, Any]:
    if cell["install"]["status"] != "ok":
        return _could_not(f"install failed: {cell['install']['reason']}")
    if built is None:
        return _could_not(f"no {what} built")
    if built["status"] != "ok":
        return _could_not(f"{what} failed: {built['reason']}")
    return {"sha256": built["sha256"], **_from_run(runs.get(built["sha256"]), built["sha256"])}


def cell_results(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per cell: each export's and the control's result (see the module docstring)."""
    runs = {r["sha256"]: r for r in doc["runs"]}
    out = []
    for cell in doc["cells"]:
        exports = cell["exports"] or [None]
        out.append({
            "cell": cell["id"],
            "tile": [{"variant": e["variant"] if e else None,
                      **_result(e, cell, runs, "export")} for e in exports],
            "control": _result(cell["control"], cell, runs, "control build"),
        })
    return out


def consistency_errors(doc: Any) -> list[str]:
    """What the schema cannot say, as 'path: expected, found': every cubin a cell or run names is
    listed under ``cubins``, every run's cubin is one, and ``results`` is what the rest gives."""
    if not isinstance(doc, Mapping) or not all(isinstance(doc.get(k), list) for k in ("cells", "runs")) \
            or not isinstance(doc.get("cubins"), Mapping):
        return []  # the schema reports it
    out = []
    cubins = doc["cubins"]
    for i, cell in enumerate(doc["cells"]):
        built = [(f"exports/{j}", e) for j, e in enumerate(cell.get("exports") or [])]
        built.append(("control", cell.get("control")))
        for where, e in built:
            if isinstance(e, Mapping) and e.get("status") == "ok" and e.get("sha256") not in cubins:
                out.append(f"cells/{i}/{where}/sha256: a cubin listed under cubins expected, "
                           f"found {str(e.get('sha256'))[:12]}… listed nowhere")
    for i, run in enumerate(doc["runs"]):
        if isinstance(run, Mapping) and run.get("sha256") not in cubins:
            out.append(f"runs/{i}/sha256: a cubin listed under cubins expected, found "
                       f"{str(run.get('sha256'))[:12]}… listed nowhere")
    if not out:
        try:
            want = cell_results(doc)
        except (KeyError, TypeError) as exc:
            return [f"results: recomputable from cells and runs expected, found {exc!r}"]
        if doc.get("results") != want:
            out.append("results: what cells and runs give expected, found something else "
                       "(recompute with gpurepro.matrix.document.cell_results)")
    return out


def validate_matrix(doc: Any, where: str = "matrix document") -> None:
    """Raise RecordError naming every violation (schema, then consistency)."""
    from ..record import RecordError, validation_errors

    errors = validation_errors(doc)
    if errors:
        raise RecordError(f"{where} does not match the schema:\n  " + "\n  ".join(errors[:20]))
