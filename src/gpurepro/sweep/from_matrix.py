"""A toolchain matrix document (a sweep's matrix kind) read as bisections: one axis per toolchain
family and export variant, over the front-end's releases (cuda-tile).

The matrix is the first instance of a bisection: each of its cells is a release of one axis
(``cuda-tile`` within one tileiras family), requested and resolved, with the artifact it built
or why it could not (the install, or the export), and the trials of each distinct cubin on the
GPU. ``bisections(doc)`` gives those axes as documents of the bisection's shape (releases,
artifacts by sha256, points, runs with their counts; ``bisection.results`` and
``bisection.boundaries`` apply), and ``combinations(doc)`` writes the matrix's own table from
them alone, row for row and cell for cell (``tests/test_bisect.py`` compares it with
``table.combinations`` on the committed H200 matrix). Standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import search
from .bisection import SCHEMA_ID
from .reasons import explained
from .table import _emits, _ranges, _short, arm_cell


def _counts(arms: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A matrix cubin's per-arm summaries as a bisection run's counts."""
    if not arms:
        return None
    return {arm: {"n": s["n"], "outcomes": s["outcomes"], "n_valid": s["n_valid"],
                  "failures": s["failures"], "exposure": s["exposure"]["total"], "rate": s["rate"]}
            for arm, s in arms.items()}


def _release(cell: Mapping[str, Any], export: Mapping[str, Any] | None) -> dict[str, Any]:
    rec: dict[str, Any] = {"requested": cell["release"],
                           "resolved": (cell.get("resolved") or {}).get("cuda-tile")}
    if cell["install"]["status"] != "ok":
        rec["build"] = {"status": "unavailable", "stderr_first_line": str(cell["install"]["reason"])}
    elif export is None or export["status"] != "ok":
        rec["build"] = {"status": "failed",
                        "stderr_first_line": str((export or {}).get("reason") or "no export built")}
    else:
        rec["build"] = {"status": "ok", "sha256": export["sha256"]}
        rec["sha256"] = export["sha256"]
    return rec


def bisections(doc: Mapping[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """(family, variant) -> the axis over the matrix's releases as a bisection document."""
    from .matrix import cubin_result

    m = doc["matrix"]
    cells = {(c["release"], c["family"]): c for c in doc["cells"]}
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for family in m["families"]:
        for v in m["variants"]:
            releases = []
            for release in m["releases"]:
                cell = cells.get((release, family))
                if cell is None:
                    continue
                exports = {e["variant"]: e for e in cell["exports"] or []}
                if v["name"] not in exports and cell["install"]["status"] == "ok":
                    continue  # the variant is not tried with this release
                if v.get("releases") is not None and release not in v["releases"]:
                    continue
                releases.append(_release(cell, exports.get(v["name"])))
            if not releases:
                continue
            artifacts: dict[str, dict[str, Any]] = {}
            for r in releases:
                if r.get("sha256"):
                    c = doc["cubins"][r["sha256"]]
                    a = artifacts.setdefault(r["sha256"], {
                        "path": c["path"], "size": c["size"], "releases": [],
                        "sass": {"read_by": None, "attempts": {}, "kernels": {}}, "signature": None,
                        "elf": {"size": c["size"], "nv_host": c["nv_host"],
                                "debug_sections": c["debug_sections"]}})
                    a["releases"].append(r["requested"])
            points = search.points_of(releases)
            for p in points:
                p["segment"] = 0
            runs = []
            for p in points:
                res = cubin_result(doc, p["sha256"])
                counts = _counts(res["arms"])
                runs.append({"point": p["index"], "sha256": p["sha256"], "releases": p["releases"],
                             "why": "the matrix's GPU stage", "status": "ran" if res["status"] == "ran" else "not run",
                             "reason": res["reason"], "counts": counts,
                             "class": ("unknown" if not counts else
                                       "fails" if any(c["failures"] for c in counts.values()) else "passes")})
            out[(family, v["name"])] = {
                "schema": SCHEMA_ID, "stage": "assembled", "case": doc["case"],
                "axis": {"name": f"cuda-tile@{family}/{v['name']}", "package": "cuda-tile",
                         "versions": "", "tool": "cuda.tile export_kernel", "watch": [],
                         "artifact": m["tile_artifact"], "arms": list(m["gpu_defaults"]["arms"])},
                "target": m["target"], "releases": releases, "artifacts": artifacts,
                "points": points, "runs": runs}
    return out


def _outcome(doc: Mapping[str, Any], axis: Mapping[str, Any], release: str) -> tuple[str, str]:
    """(what the release emitted, its trials) as the matrix table writes them."""
    case = doc["case"]
    rec = next(r for r in axis["releases"] if r["requested"] == release)
    sha = rec.get("sha256")
    if not sha:
        b = rec["build"]
        what = ("install failed: " if b["status"] == "unavailable" else "export failed: ") \
            + b["stderr_first_line"]
        if b["stderr_first_line"] == "no export built":
            what = "no export built"
        return explained(what), "–"
    elf = axis["artifacts"][sha]["elf"]
    what = f"{_short(sha)}: {_emits(elf)}"
    run = next(r for r in axis["runs"] if r["sha256"] == sha)
    if run["status"] != "ran":
        return what, str(run["reason"])
    unit, per = case["exposure"]["unit"], case["exposure"]["per"]
    cells = [f"{arm}: " + arm_cell({"failures": c["failures"], "n_valid": c["n_valid"],
                                    "exposure": {"total": c["exposure"], "unit": unit, "per": per},
                                    "rate": c["rate"]})
             for arm, c in (run["counts"] or {}).items()]
    return what, "; ".join(cells)


def combinations(doc: Mapping[str, Any]) -> list[str]:
    """The matrix's combinations table, from its bisections alone (the order of the matrix's:
    release, then family, then variant; rows that say the same for several families of a
    release, then for several releases, share a row)."""
    m = doc["matrix"]
    releases, families = m["releases"], list(m["families"])
    axes = bisections(doc)
    rows: dict[tuple[str, str, str, str], list[str]] = {}
    for release in releases:
        for family in families:
            for v in m["variants"]:
                axis = axes.get((family, v["name"]))
                if axis is None or not any(r["requested"] == release for r in axis["releases"]):
                    continue
                what, outcome = _outcome(doc, axis, release)
                rows.setdefault((release, v["name"], what, outcome), []).append(family)
    merged: dict[tuple[str, tuple[str, ...], str, str], list[str]] = {}
    for (release, variant, what, outcome), fams in rows.items():
        merged.setdefault((variant, tuple(fams), what, outcome), []).append(release)
    out = ["| cuda-tile | tileiras | export | emits (cubin sha256, size, `.nv.host`, debug sections) | trials on the GPU |",
           "|---|---|---|---|---|"]
    for (variant, row_families, what, outcome), rels in merged.items():
        out.append(f"| {_ranges(rels, releases)} | {_ranges(row_families, families)} | {variant} | "
                   f"{what} | {outcome} |")
    return out
