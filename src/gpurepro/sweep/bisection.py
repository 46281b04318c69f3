"""The bisection document: its schema id, where its stages write, and what follows from it.

One document (``schema/bisect.schema.json``) carries release → requested and resolved versions
→ artifact sha256 → outcome counts → the boundaries. The CPU stage writes it without GPU fields;
``assemble`` adds the GPU stage's runs, each release's result and the boundaries, which follow
from the rest of the document (``results``, ``boundaries``: never recorded apart from it;
``consistency_errors`` recomputes them). Standard library only (validate uses it without
scipy; the GPU stage reads it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..building.sass import diff_listings, parse_instr
from ..case.model import Case
from . import search

# What other modules use; the rest is this module's own.
__all__ = [
    "axis_root", "boundaries", "classes", "consistency_errors", "CPU_FILE", "describe_axis",
    "describe_case",
    "results", "SCHEMA_ID"
]

# Version 2 records the checkout files the axis's build read (``sources``); version 1
# documents, without them, are read and validated as before.
SCHEMA_ID = "gpurepro/bisect/2"
CPU_FILE = "bisect.cpu.json"


def axis_root(case: str, axis: str, target: str) -> Path:
    """Where an axis's CPU stage builds, relative to the repository (inside build/, so a GPU
    node gets the artifacts with the rest of the prebuilt tree)."""
    return Path("build") / "bisect" / case / axis / target


def describe_case(case: Case, root: Path) -> dict[str, Any]:
    """The case as the stages need it: its manifest (relative to the repository: the GPU stage
    runs it by that path), failure outcomes, exposure and output check."""
    import hashlib

    manifest = (str(case.path.resolve().relative_to(root.resolve()))
                if case.path and case.path.resolve().is_relative_to(root.resolve()) else None)
    return {"name": case.name, "manifest": manifest,
            "manifest_sha256": hashlib.sha256(case.path.read_bytes()).hexdigest() if case.path else None,
            "failure_outcomes": list(case.failure_outcomes),
            "exposure": {"counter": case.exposure.counter, "unit": case.exposure.unit,
                         "per": case.exposure.per},
            **({"check": case.check.describe()} if case.check is not None else {})}


def describe_axis(case: Case, name: str) -> dict[str, Any]:
    """The axis as the CPU document records it and ``changed`` compares it: its manifest's
    fields, and for a runtime axis (``RuntimeAxis``) the package its factor's levels are
    releases of."""
    axis = case.axes[name]
    out: dict[str, Any] = {"name": name, **axis.describe()}
    if "runtime" in out and case.runtime is not None:
        out["package"] = case.runtime.releases.get(out["runtime"]["factor"], "")
    return out


def _ran(doc: Mapping[str, Any]) -> dict[int, Mapping[str, Any]]:
    """Point index -> its run, for the points whose run recorded trials."""
    return {r["point"]: r for r in doc.get("runs") or [] if r.get("status") == "ran"}


def classes(doc: Mapping[str, Any]) -> dict[int, str]:
    return {i: r["class"] for i, r in _ran(doc).items()}


def _inferred(doc: Mapping[str, Any], i: int, cls: Mapping[int, str]) -> tuple[str | None, str]:
    """The class a point that did not run takes under the search's assumption, and why."""
    point = doc["points"][i]
    seg = [p["index"] for p in doc["points"] if p.get("segment") == point.get("segment")]
    before = [j for j in seg if j < i and j in cls]
    after = [j for j in seg if j > i and j in cls]
    if before and after and cls[before[-1]] == cls[after[0]] and cls[before[-1]] != "unknown":
        a, b = doc["points"][before[-1]], doc["points"][after[0]]
        return cls[before[-1]], (f"not run: inferred {cls[before[-1]]}, between "
                                 f"{a['releases'][-1]} and {b['releases'][0]} (same segment, "
                                 f"both {cls[before[-1]]})")
    return None, "not run: not needed by the search, and not inferable"


def results(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per release, oldest first: its artifact, its point, and how it ended on the GPU (its
    artifact's run), or the class the search infers for it, or why it has none."""
    cls = classes(doc)
    ran = _ran(doc)
    point_of = {rel: p["index"] for p in doc["points"] for rel in p["releases"]}
    out = []
    for r in doc["releases"]:
        row: dict[str, Any] = {"release": r["requested"], "resolved": r.get("resolved"),
                               "sha256": r.get("sha256"), "point": point_of.get(r["requested"])}
        if not r.get("sha256"):
            b = r.get("build") or {}
            why = b.get("signal") or (f"exit status {b['exit_status']}" if b.get("exit_status") is not None else None)
            row.update(status="not built", **{"class": None},
                       reason=f"{b.get('status')}" + (f" ({why})" if why else "")
                       + (f": {b['stderr_first_line']}" if b.get("stderr_first_line") else ""),
                       counts=None)
        elif row["point"] in ran:
            run = ran[row["point"]]
            row.update(status="ran", **{"class": run["class"]}, reason=None, counts=run["counts"])
            if "timing" in run:
                row["timing"] = run["timing"]
        else:
            inferred, why = _inferred(doc, row["point"], cls) if doc.get("runs") is not None else (
                None, "not run: no GPU stage")
            row.update(status="inferred" if inferred else "not run", **{"class": inferred},
                       reason=why, counts=None)
        out.append(row)
    return out


def _kernels(doc: Mapping[str, Any], sha: str) -> dict[str, list[Any]]:
    kernels = ((doc["artifacts"].get(sha) or {}).get("sass") or {}).get("kernels") or {}
    return {k: [parse_instr(0, t) for t in texts] for k, texts in kernels.items()}


def sass_difference(doc: Mapping[str, Any], before: str, after: str) -> dict[str, Any]:
    """The watched facts that changed and every kernel's instruction diff, from the CPU
    stage's listings of the two artifacts."""
    a, b = doc["artifacts"][before], doc["artifacts"][after]
    sa, sb = a.get("signature") or {}, b.get("signature") or {}
    watched = [{"fact": k, "before": sa.get(k), "after": sb.get(k)}
               for k in sa if doc["axis"]["watch"] and sa.get(k) != sb.get(k)]
    readers = (a["sass"].get("read_by"), b["sass"].get("read_by"))
    return {"read_by": list(readers), "watched": watched,
            "kernels": {k: d for k, d in diff_listings(_kernels(doc, before), _kernels(doc, after)).items()
                        if not d["same"]}}


def boundaries(doc: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """``pinned``: adjacent points that ended differently on the GPU, each as the two
    adjacent releases that built on either side, what did not build between them, the
    classes and counts and the SASS difference; ``open``: differing runs the search could not
    bring together (with the points left between them)."""
    cls = classes(doc)
    ran = _ran(doc)
    pinned, unresolved = search.boundaries(doc["points"], cls)
    order = [r["requested"] for r in doc["releases"]]
    out: dict[str, list[dict[str, Any]]] = {"pinned": [], "open": []}
    for a, b in pinned:
        pa, pb = doc["points"][a], doc["points"][b]
        last, first = pa["releases"][-1], pb["releases"][0]
        between = order[order.index(last) + 1:order.index(first)]
        out["pinned"].append({
            "between": [last, first], "not_built_between": between,
            "points": [a, b], "sha256": [pa["sha256"], pb["sha256"]],
            "classes": [cls[a], cls[b]],
            "counts": [ran[a]["counts"], ran[b]["counts"]],
            "sass": sass_difference(doc, pa["sha256"], pb["sha256"])})
    for a, b in unresolved:
        pa, pb = doc["points"][a], doc["points"][b]
        out["open"].append({"between": [pa["releases"][-1], pb["releases"][0]], "points": [a, b],
                            "classes": [cls[a], cls[b]],
                            "unrun_points": [p["index"] for p in doc["points"] if a < p["index"] < b]})
    return out


def consistency_errors(doc: Any) -> list[str]:
    """What the schema cannot say: every release's sha256 is an artifact listed with that
    release, the points are the releases that built, and ``results``/``boundaries`` are what
    the rest gives."""
    if not isinstance(doc, Mapping) or not isinstance(doc.get("releases"), list) \
            or not isinstance(doc.get("artifacts"), Mapping) or not isinstance(doc.get("points"), list):
        return []  # the schema reports it
    out = []
    for i, r in enumerate(doc["releases"]):
        sha = r.get("sha256") if isinstance(r, Mapping) else None
        if sha and r.get("requested") not in (doc["artifacts"].get(sha) or {}).get("releases", []):
            out.append(f"releases/{i}/sha256: an artifact listing {r.get('requested')} expected, "
                       f"found {str(sha)[:12]}… without it")
    try:
        if search.points_of(doc["releases"]) != [{k: p[k] for k in ("index", "sha256", "releases")}
                                                 for p in doc["points"]]:
            out.append("points: the releases that built, grouped by artifact, expected; found others")
        if doc.get("stage") == "assembled":
            if doc.get("results") != results(doc):
                out.append("results: what releases and runs give expected, found something else "
                           "(recompute with gpurepro.sweep.bisection.results)")
            if doc.get("boundaries") != boundaries(doc):
                out.append("boundaries: what the runs give expected, found something else "
                           "(recompute with gpurepro.sweep.bisection.boundaries)")
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        out.append(f"(document): recomputable points, results and boundaries expected, found {exc!r}")
    return out


def release_order(doc: Mapping[str, Any]) -> Sequence[str]:
    return [r["requested"] for r in doc["releases"]]
