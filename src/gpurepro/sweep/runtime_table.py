"""A runtime axis's bisection document as Markdown: per release its pins and how it ended on
the GPU, and each boundary with the pins that changed across it (a toolchain axis's table, with
its artifacts and SASS, is table.py's)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..report.tables import code, escape, table

# What other modules use; the rest is this module's own.
__all__ = ["runtime_markdown"]


def _gpu_cell(res: Mapping[str, Any], counts_cell: Any) -> str:
    if res.get("status") == "ran":
        return f"**{escape(res['class'])}**: {counts_cell(res['counts'])}"
    if res.get("status") == "inferred":
        return escape(f"{res['class']} (inferred, not run)")
    return "–" if res.get("status") == "not built" else escape(res.get("reason") or "–")


def _pins(doc: Mapping[str, Any]) -> dict[str, list[str]]:
    return {r["requested"]: list(r.get("pins") or []) for r in doc["releases"]}


def runtime_markdown(doc: Mapping[str, Any], counts_cell: Any) -> str:
    """The document's Markdown (``counts_cell``: table.py's cell of a run's counts)."""
    ax = doc["axis"]
    gpu = doc.get("gpu") or {}
    runs = [r for r in doc.get("runs") or [] if r["status"] == "ran"]
    ready = sum(1 for r in doc["releases"] if r.get("sha256"))
    where = (f"trials on {gpu['device'].get('name')}, driver {gpu['device'].get('driver_version')}"
             if gpu.get("status") == "ran" and gpu.get("device") else
             f"GPU stage {gpu.get('reason') or 'not run'}")
    lines = [
        f"Bisection of {code(doc['case']['name'])} over the releases of "
        f"{code(ax['package'] + ax['versions'])} (each in place of the level of "
        f"{code(ax['runtime']['factor'])} in {', '.join(code(a) for a in ax['arms'])}, with its "
        f"own dependencies, for Python {escape(doc.get('python') or '–')}): "
        + escape(f"{len(doc['releases'])} releases, {ready} resolved, {len(runs)} run on the GPU "
                 f"({gpu.get('mode') or '–'}; {where}); {ax['trials']} trial(s) per arm and "
                 f"release."), ""]
    pins = _pins(doc)
    by_release = {r["release"]: r for r in doc.get("results") or []}
    rows = []
    for r in doc["releases"]:
        b = r.get("build") or {}
        resolved = ("ok" if r.get("sha256") else
                    escape(b.get("status", "–") + (f": {b['stderr_first_line']}"
                                                   if b.get("stderr_first_line") else "")))
        rows.append([escape(r["requested"]), resolved,
                     escape(", ".join(pins[r["requested"]][1:]) or "–"),
                     _gpu_cell(by_release.get(r["requested"]) or {}, counts_cell)])
    lines += [*table(["release", "resolved", "its dependencies", "on the GPU"], rows), ""]
    b = doc.get("boundaries") or {"pinned": [], "open": []}
    rows = []
    for x in b["pinned"]:
        before, after = (set(pins[v]) for v in x["between"])
        moved = ", ".join(f"{p}" for p in sorted(after - before)) or "–"
        rows.append([escape(f"{x['between'][0]} → {x['between'][1]}"
                            + (f" (not resolved between: {', '.join(x['not_built_between'])})"
                               if x["not_built_between"] else "")),
                     escape(f"{x['classes'][0]} → {x['classes'][1]}"), escape(moved)])
    if rows:
        lines += ["Boundaries (adjacent releases that ended differently on the GPU):", "",
                  *table(["between", "on the GPU", "pins after it"], rows), ""]
    elif not b["open"]:
        lines += ["No boundary: every release run ended alike." if runs else
                  "No boundary yet: the GPU stage has not run.", ""]
    for x in b["open"]:
        lines.append(escape(f"Not pinned: between {x['between'][0]} ({x['classes'][0]}) and "
                            f"{x['between'][1]} ({x['classes'][1]}), "
                            f"{len(x['unrun_points'])} release(s) not run."))
    excluded = doc["listing"]["excluded"]
    lines += [*([""] if b["open"] else []), escape(f"Search: {doc['search']['assumption']}.")
              + (escape(" Left out: " + ", ".join(f"{e['version']} ({e['reason']})"
                                                   for e in excluded) + ".") if excluded else ""),
              ""]
    return "\n".join(lines)
