"""The matrix document: its schema id, its name, each cell's result, and its checks.

A cell's result follows from the rest of the document (never recorded apart from it): a cell
whose pins did not install, or whose export failed, could not run, with that reason; an export
whose cubin ran has the cubin's per-arm counts and rates (``cubins.<sha>.trials``: its trials
pooled over the runs that used it); any other has the reason of the run planned for it (no GPU,
a spent budget, ...). Standard library only (validate uses it without scipy).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MATRIX_SCHEMA = "gpurepro/matrix/1"


def _could_not(reason: str) -> dict[str, Any]:
    return {"status": "could not run", "reason": reason, "runs": [], "arms": None}


def _artifact(doc: Mapping[str, Any], sha: str) -> str:
    kind = doc["cubins"][sha]["kind"] if sha in doc["cubins"] else "tile"
    return str(doc["matrix"]["tile_artifact"] if kind == "tile" else doc["matrix"]["control_artifact"])


def cubin_result(doc: Mapping[str, Any], sha: str) -> dict[str, Any]:
    """One cubin on the GPU: its trials, pooled over the runs that used it, or why there are
    none (the reason of the first run planned for it)."""
    trials = (doc["cubins"].get(sha) or {}).get("trials")
    artifact = _artifact(doc, sha)
    planned = [r for r in doc["runs"] if (r["substitutes"].get(artifact) or {}).get("sha256") == sha]
    if trials:
        return {"status": "ran", "reason": None, "runs": list(trials["runs"]), "arms": trials["arms"]}
    if not planned:
        return {"status": "not run", "reason": f"no run planned for cubin {sha[:12]}", "runs": [],
                "arms": None}
    first = planned[0]
    reason = first["reason"] if first["status"] != "ran" else \
        "not run: its run recorded no trial of the arms that use it"
    return {"status": "failed" if first["status"] == "failed" else "not run", "reason": reason,
            "runs": [r["id"] for r in planned], "arms": None}


def _result(doc: Mapping[str, Any], built: Mapping[str, Any] | None, cell: Mapping[str, Any],
            what: str) -> dict[str, Any]:
    if cell["install"]["status"] != "ok":
        return _could_not(f"install failed: {cell['install']['reason']}")
    if built is None:
        return _could_not(f"no {what} built")
    if built["status"] != "ok":
        return _could_not(f"{what} failed: {built['reason']}")
    return {"sha256": built["sha256"], **cubin_result(doc, built["sha256"])}


def cell_results(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per cell: each export's and the control's result (see the module docstring)."""
    out = []
    for cell in doc["cells"]:
        exports = cell["exports"] or [None]
        out.append({
            "cell": cell["id"],
            "tile": [{"variant": e["variant"] if e else None, **_result(doc, e, cell, "export")}
                     for e in exports],
            "control": _result(doc, cell["control"], cell, "control build"),
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
        subs = run.get("substitutes") if isinstance(run, Mapping) else None
        for artifact, sub in (subs.items() if isinstance(subs, Mapping) else ()):
            sha = sub.get("sha256") if isinstance(sub, Mapping) else None
            if sha not in cubins:
                out.append(f"runs/{i}/substitutes/{artifact}/sha256: a cubin listed under cubins "
                           f"expected, found {str(sha)[:12]}… listed nowhere")
    if not out:
        try:
            want = cell_results(doc)
        except (KeyError, TypeError) as exc:
            return [f"results: recomputable from cells and runs expected, found {exc!r}"]
        if doc.get("results") != want:
            out.append("results: what cells and runs give expected, found something else "
                       "(recompute with gpurepro.sweep.matrix.cell_results)")
    return out
