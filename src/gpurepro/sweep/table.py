"""The Markdown of a bisection document: release → artifact → SASS facts → trials, and the
boundaries with the SASS difference at each. Everything comes from the document, so it can be
regenerated: ``python -m gpurepro bisect --table DOC.json``. Standard library only.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from ..report.tables import code, escape, table


def _short(sha: str | None) -> str:
    return code(sha[:12]) if sha else "–"


def counts_cell(counts: Mapping[str, Any] | None) -> str:
    """Per arm: failed/valid and the outcomes, e.g. ``last-bad: 3/3 failed (wrong_result 3)``."""
    if not counts:
        return "–"
    parts = []
    for arm, c in counts.items():
        outcomes = ", ".join(f"{k} {v}" for k, v in c["outcomes"].items())
        parts.append(escape(f"{arm}: {c['failures']}/{c['n_valid']} failed ({outcomes})"))
    return "; ".join(parts)


def timing_cell(t: Mapping[str, Any]) -> str:
    """A timed point: its ratio to the reference with the 95% interval, and what decided it."""
    if t.get("ratio") is None:
        return escape(t["decided"])
    lo, hi = t["ratio_ci"]
    return escape(f"{t['ratio']:.3f}x {t['reference']} (95% CI {lo:.3f}-{hi:.3f}; "
                  f"{t['n'][0]} and {t['n'][1]} trials): {t['decided']}")


def _facts(doc: Mapping[str, Any], sha: str | None) -> str:
    if not sha:
        return "–"
    a = doc["artifacts"][sha]
    sig = a.get("signature")
    if sig is None:
        return "no disassembler read it"
    if not doc["axis"]["watch"]:
        return escape(f"read by {a['sass']['read_by']}")
    return escape(", ".join(f"{k.replace(':', ' ', 1)} {_fact(v) if v is not None else '–'}"
                     for k, v in sig.items()))


def releases_table(doc: Mapping[str, Any]) -> list[str]:
    number = {sha: i + 1 for i, sha in enumerate(doc["artifacts"])}
    rows = []
    by_release = {r["release"]: r for r in doc.get("results") or []}
    for r in doc["releases"]:
        sha = r.get("sha256")
        res = by_release.get(r["requested"]) or {}
        b = r.get("build") or {}
        built = "ok" if sha else escape(b.get("status", "–") + (f" ({b['signal']})" if b.get("signal") else
                                                         f" (exit {b['exit_status']})" if b.get("exit_status") else "")
                                  + (f": {b['stderr_first_line']}" if b.get("stderr_first_line") else ""))
        if res.get("status") == "ran" and res.get("timing"):
            gpu = f"**{escape(res['class'])}**: {timing_cell(res['timing'])}"
        elif res.get("status") == "ran":
            gpu = f"**{escape(res['class'])}**: {counts_cell(res['counts'])}"
        elif res.get("status") == "inferred":
            gpu = escape(f"{res['class']} (inferred, not run)")
        elif res.get("status") == "not built":
            gpu = "–"
        else:
            gpu = escape(res.get("reason") or "–")
        rows.append([escape(r["requested"]), escape(r.get("resolved") or "–"), built,
                     f"#{number[sha]} {_short(sha)}" if sha else "–", _facts(doc, sha), gpu])
    return table(["release", "resolved", "build", "artifact (sha256)", "SASS", "on the GPU"], rows)


def _instrs(lines: list[str]) -> str:
    return " · ".join(code(x) for x in lines) or "(none)"


def boundaries_section(doc: Mapping[str, Any]) -> list[str]:
    b = doc.get("boundaries") or {"pinned": [], "open": []}
    if not b["pinned"] and not b["open"]:
        return ["No boundary: every artifact run ended alike." if doc.get("runs") else
                "No boundary: no release built an artifact." if not doc["artifacts"] else
                "No boundary yet: the GPU stage has not run.", ""]
    out = []
    rows = []
    for x in b["pinned"]:
        s = x["sass"]
        watched = escape("; ".join(f"{w['fact'].replace(':', ' ', 1)}: {_fact(w['before'])} → "
                            f"{_fact(w['after'])}" for w in s["watched"]) or "–")
        changed = []
        for kernel, d in s["kernels"].items():
            removed = Counter(x for c in d["changes"] for x in c["a"])
            added = Counter(x for c in d["changes"] for x in c["b"])
            if removed == added:  # the same instructions, some in another place
                changed.append(escape(f"{kernel}: the same instructions, {sum(added.values())} "
                                      f"moved: ") + _instrs(sorted(added)))
                continue
            changes = d["changes"]
            for c in changes[:2]:
                changed.append(f"{escape(kernel)}: {_instrs(c['a'])} → {_instrs(c['b'])}")
            if len(changes) > 2:
                changed.append(escape(f"{kernel}: {len(changes) - 2} more change(s) in the document"))
        rows.append([escape(f"{x['between'][0]} → {x['between'][1]}"
                            + (f" (not built between: {', '.join(x['not_built_between'])})"
                               if x["not_built_between"] else "")),
                     escape(f"{x['classes'][0]} → {x['classes'][1]}"), watched,
                     "<br>".join(changed) or "same instructions"])
    if rows:
        out += ["Boundaries (adjacent releases whose artifacts ended differently on the GPU):", "",
                *table(["between", "on the GPU", "watched SASS", "instructions that changed (before → after)"],
                       rows), ""]
    for x in b["open"]:
        out.append(escape(f"Not pinned: between {x['between'][0]} ({x['classes'][0]}) and "
                          f"{x['between'][1]} ({x['classes'][1]}), {len(x['unrun_points'])} artifact(s) not run."))
    if b["open"]:
        out.append("")
    return out


def _range(ax: Mapping[str, Any]) -> str:
    """The axis's range: one package's, or each family's in release order (an axis may span
    the packages a toolchain was renamed across, e.g. nvidia-cuda-nvcc-cu12 then nvidia-cuda-nvcc)."""
    families = ax.get("families") or [{"package": ax["package"], "versions": ax["versions"]}]
    return " then ".join(code(str(f["package"]) + str(f["versions"])) for f in families)


def markdown(doc: Mapping[str, Any]) -> str:
    ax = doc["axis"]
    n_built = sum(1 for r in doc["releases"] if r.get("sha256"))
    runs = [r for r in doc.get("runs") or [] if r["status"] == "ran" and "same_as_point" not in r]
    gpu = doc.get("gpu") or {}
    where = escape(f"trials on {gpu['device'].get('name')}, driver {gpu['device'].get('driver_version')}"
             if gpu.get("status") == "ran" and gpu.get("device") else
             f"GPU stage {gpu.get('reason') or 'not run'}")
    lines = [
        f"Bisection of {code(doc['case']['name'])} over {_range(ax)} "
        f"({code(ax['tool'])} from each release's wheel, standing in for {code(ax['artifact'])} in "
        f"{', '.join(code(a) for a in ax['arms'])}) for {escape(doc['target'])}: "
        f"{len(doc['releases'])} releases PyPI lists in the range, {n_built} built, "
        f"{len(doc['artifacts'])} distinct artifacts (by sha256), {len(runs)} run on the GPU "
        f"({escape(gpu.get('mode') or '–')}; {where}); {escape(ax['trials'])} trial(s) per arm and artifact."
        + (escape(f" Timed against {ax['timed']['reference']}, the case's own artifact, in the same "
                  f"runs: a point fails when decided slower by at least {ax['timed']['slower']:.0%} "
                  f"(or an output was wrong), passes when decided within {ax['timed']['same']:.0%}, "
                  f"each at alpha {ax['timed']['alpha']:g} over {len(doc['points'])} distinct "
                  f"artifacts (Welch's t-test on log trial times).") if ax.get("timed") else ""), "",
        *releases_table(doc), "", *boundaries_section(doc),
        (escape(f"SASS read by {doc.get('common_reader') or 'each artifact’s first reader'} "
                f"({', '.join(f'{k} {v}' for k, v in doc['disassemblers'].items() if v)}). ")
         if doc["artifacts"] else "")
        + escape(f"Search: {doc['search']['assumption']}."), ""]
    excluded = doc["listing"]["excluded"]
    if excluded:
        lines += [escape("Left out of the range: " + ", ".join(f"{e['version']} ({e['reason']})" for e in excluded)
                         + "."), ""]
    return "\n".join(lines)


def _fact(value: object) -> str:
    """A watched fact in words: present/absent, or a count (``#PATTERN``)."""
    if isinstance(value, bool) or value is None:
        return "present" if value else "absent"
    return str(value)
