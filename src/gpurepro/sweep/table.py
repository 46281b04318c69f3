"""The Markdown of a sweep's document: everything comes from the document, so it can be
regenerated (``python -m gpurepro bisect --table DOC.json``, ``python -m gpurepro matrix table
DOC.json``). Standard library only.

- A bisection: release → artifact → SASS facts → trials, and the boundaries with the SASS
  difference at each.
- A matrix: release → what it emits → crash rate with interval, in three tables: each
  combination (cells that fail alike share a row), each distinct cubin once (what it carries
  and how its trials went), and the plain nvcc control per toolchain family; then the
  line-info check.

Every string of a document (a release, a variant, a tool's refusal, a GPU's name, a section or
symbol name) is escaped as report/tables.py escapes a report's, and every row written by its
``row`` or ``table``: a pipe or a line break in one cannot break the table, nor HTML, a link or
a mention get into the comment `issue --matrix` pastes it into.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from ..report.tables import code, escape, row, table
from .matrix import cubin_result
from .model import BISECTION, kind_of
from .reasons import explained, machine_limit
from .runtime_table import runtime_markdown

# What other modules use; the rest is this module's own.
__all__ = ["combinations", "markdown", "matrix_markdown", "verdict_line"]


def markdown(doc: Mapping[str, Any]) -> str:
    """A bisection's or a matrix's Markdown, as its kind is."""
    return bisection_markdown(doc) if kind_of(doc) == BISECTION else matrix_markdown(doc)


# ------------------------------------------------------------------------------ a bisection


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


def bisection_markdown(doc: Mapping[str, Any]) -> str:
    ax = doc["axis"]
    if "runtime" in ax:  # a runtime package's releases: no artifact, no SASS
        return runtime_markdown(doc, counts_cell)
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


# ------------------------------------------------------------------------------ a matrix


def _num(x: float) -> str:
    """Three significant digits, no exponent below 10^6."""
    if x == 0:
        return "0"
    if abs(x) >= 1e6:
        return f"{x:.3g}".replace("e+0", "e").replace("e+", "e")
    return f"{x:.3g}" if abs(x) < 1000 else f"{round(x):,}".replace(",", " ")


def arm_cell(s: Mapping[str, Any] | None) -> str:
    """One arm's trials: failed/valid, and the rate with its interval (an upper bound at 0)."""
    if not s:
        return "–"
    exp = s["exposure"]
    per = f"10^{len(str(int(exp['per']))) - 1}" if exp["per"] >= 10 else _num(exp["per"])
    rate, ci = s["rate"]["estimate"], s["rate"]["ci95"]
    head = f"{escape(s['failures'])}/{escape(s['n_valid'])} crashed"
    unit = escape(exp["unit"])
    if rate is None or ci is None:
        return f"{head}, no exposure"
    if s["failures"] == 0:
        return f"{head} in {_num(exp['total'])} {unit}: < {_num(ci[1])} per {per} (95% upper bound)"
    return f"{head}: **{_num(rate)}** per {per} {unit} (95% CI {_num(ci[0])}–{_num(ci[1])})"


def _result_cell(result: Mapping[str, Any], arm: str | None = None) -> str:
    if result["status"] != "ran":
        return escape(result["reason"])
    arms = result["arms"] or {}
    if arm is not None:
        return arm_cell(arms.get(arm))
    return "; ".join(f"{escape(a)}: {arm_cell(s)}" for a, s in arms.items())


def _emits(c: Mapping[str, Any]) -> str:
    host = c["nv_host"]
    host_txt = f"`.nv.host` {escape(host['size'])} B" if host["present"] else "no `.nv.host`"
    debug = c["debug_sections"]
    debug_txt = (f"{len(debug)} debug sections ({escape(sum(debug.values()))} B)" if debug
                 else "no debug sections")
    return f"{escape(c['size'])} B, {host_txt}, {debug_txt}"


def _ranges(items: Sequence[str], order: Sequence[str]) -> str:
    """'13.1–13.5' for a run of consecutive items of ``order``, else a list (escaped)."""
    idx = sorted(order.index(i) for i in items)
    if len(idx) > 2 and idx == list(range(idx[0], idx[-1] + 1)):
        return escape(f"{order[idx[0]]}–{order[idx[-1]]}")
    return escape(", ".join(order[i] for i in idx))


def combinations(doc: Mapping[str, Any]) -> list[str]:
    releases, families = doc["matrix"]["releases"], list(doc["matrix"]["families"])
    cells = {c["id"]: c for c in doc["cells"]}
    # (release, variant, what) -> families, in the document's order; rows that say the same
    # for several families of a release, then for several releases, share a row.
    rows: dict[tuple[str, str, str, str], list[str]] = {}
    for res in doc["results"]:
        cell = cells[res["cell"]]
        for r in res["tile"]:
            sha = r.get("sha256")
            what = f"{_short(sha)}: {_emits(doc['cubins'][sha])}" if sha else escape(explained(str(r["reason"])))
            outcome = _result_cell(r, None) if sha else "–"
            rows.setdefault((cell["release"], r.get("variant") or "–", what, outcome), []).append(cell["family"])
    merged: dict[tuple[str, tuple[str, ...], str, str], list[str]] = {}
    for (release, variant, what, outcome), fams in rows.items():
        merged.setdefault((variant, tuple(fams), what, outcome), []).append(release)
    out = ["| cuda-tile | tileiras | export | emits (cubin sha256, size, `.nv.host`, debug sections) | trials on the GPU |",
           "|---|---|---|---|---|"]
    for (variant, row_families, what, outcome), rels in merged.items():
        out.append(row([_ranges(rels, releases), _ranges(row_families, families), escape(variant),
                        what, outcome]))
    return out


def cubins_table(doc: Mapping[str, Any], kind: str) -> list[str]:
    out = ["| cubin | emitted by | size | code (`.text`) | `.nv.host` | debug sections | trials on the GPU |",
           "|---|---|---|---|---|---|---|"]
    for sha, c in doc["cubins"].items():
        if c["kind"] != kind:
            continue
        by = sorted({str(b["cell"]) + (f" ({b['variant']})" if b["variant"] not in (None, "reporter") else "")
                     for b in c["emitted_by"]})
        host = c["nv_host"]
        symbols = [s["name"] for s in ((host.get("object") or {}).get("symbols") or [])]
        host_txt = (f"{escape(host['size'])} B, {_short(host['sha256'])}, {len(symbols)} symbols"
                    if host["present"] else "–")
        debug = ", ".join(f"{code(n)} {escape(s)}" for n, s in c["debug_sections"].items()) or "–"
        trials = _result_cell(cubin_result(doc, sha))
        out.append(row([_short(sha), escape(", ".join(by)), f"{escape(c['size'])} B",
                        _short(c["code_sha256"]), host_txt, debug, trials]))
    return out


def host_objects_table(doc: Mapping[str, Any]) -> list[str]:
    """Each distinct embedded host object (`.nv.host`) once, with its symbols."""
    seen: dict[str, dict[str, Any]] = {}
    for sha, c in doc["cubins"].items():
        host = c["nv_host"]
        if host["present"] and host["sha256"]:
            seen.setdefault(host["sha256"], {"host": host, "cubins": []})["cubins"].append(sha)
    out = ["| `.nv.host` | size | relocations | symbols (binding type, size) | in cubins |",
           "|---|---|---|---|---|"]
    for sha, entry in seen.items():
        obj = entry["host"].get("object") or {}
        symbols = ", ".join(f"{code(s['name'])} ({escape(str(s.get('bind', '')).lower())} "
                            f"{escape(str(s.get('type', '')).lower())}, {escape(s.get('size'))} B)"
                            for s in obj.get("symbols") or [])
        out.append(row([_short(sha), f"{escape(entry['host']['size'])} B",
                        escape(obj.get("relocations", "–")), symbols or "–",
                        ", ".join(_short(c) for c in entry["cubins"])]))
    return out


def lineinfo_sentence(doc: Mapping[str, Any]) -> str:
    li = doc["lineinfo_check"]
    if li["status"] != "ok":
        return f"Line-info check ({escape(li['cell'])}): not run: {escape(li['reason'])}."

    def same(b: object) -> str:
        return "byte-identical" if b else "different"

    only = ", ".join(code(n) for n in li["only_with_lineinfo"]) or "none"
    return (f"Line-info check ({escape(li['cell'])}, {escape(li['variant'])} export): tileiras on the exported Tile IR "
            f"bytecode with `--lineinfo` gives the exported cubin itself "
            f"({'yes' if li['lineinfo_is_export'] else 'no'}); without it, `.text` is "
            f"{same(li['text_identical'])} and `.nv.host` is {same(li['nv_host_identical'])}; "
            f"sections only in the line-info build: {only}; other sections that differ: "
            f"{', '.join(code(n) for n in li['differing']) or 'none'}.")


def verdict_line(doc: Mapping[str, Any]) -> str:
    """The matrix in one sentence: how many combinations exported a Tile IR cubin, how many of
    those distinct cubins crashed on the GPU, and why the others did not export (a limit of the
    exporting machine counted apart from what the releases cannot do)."""
    exported: set[str] = set()
    limits: set[str] = set()
    refused = 0
    for res in doc["results"]:
        tile = res["tile"]
        shas = [r["sha256"] for r in tile if r.get("sha256")]
        if shas:
            exported.update(shas)
        elif any(machine_limit(str(r.get("reason"))) for r in tile):
            limits.add(res["cell"])
        else:
            refused += 1
    ran = {sha: cubin_result(doc, sha) for sha in exported}
    ran = {sha: r for sha, r in ran.items() if r and r.get("status") == "ran"}
    crashed = [sha for sha, r in ran.items()
               if any((s or {}).get("failures") for s in (r.get("arms") or {}).values())]
    total = len(doc["results"])
    parts = [f"{total} combinations of {escape(doc['matrix']['target'])}: {total - len(limits) - refused} "
             f"exported a Tile IR cubin ({len(exported)} distinct), and {len(crashed)} of the "
             f"{len(ran)} that ran on the GPU crashed"]
    if refused:
        parts.append(f"{refused} could not export (the release or its tileiras cannot: see the table)")
    if limits:
        parts.append(f"{len(limits)} did not export for want of a CUDA driver on the exporting "
                     f"machine, a limit of that machine, not of those releases")
    return "; ".join(parts) + "."


def matrix_markdown(doc: Mapping[str, Any]) -> str:
    gpu = doc["gpu"]
    if gpu["status"] == "ran" and gpu.get("device"):
        where = (f"trials on {escape(gpu['device'].get('name'))}, driver "
                 f"{escape(gpu['device'].get('driver_version'))}")
    else:
        where = f"GPU stage {escape(gpu['reason'])}" + (f": {escape(gpu['detail'])}" if gpu.get("detail") else "")
    opts = doc["matrix"]["gpu_defaults"]
    lines = [
        f"Toolchain matrix of {code(doc['case']['name'])} for {escape(doc['matrix']['target'])} "
        f"({len(doc['cells'])} combinations; {where}). Trials: {opts['trials']} per cubin and arm, "
        f"{opts['duration_s']:g} s each, {opts['jobs']} at a time; rates are crashes per 10^6 "
        f"{escape(doc['case']['exposure']['unit'])} with exact Poisson 95% intervals. Identical cubins "
        f"(same sha256) ran once.", "",
        *combinations(doc), "",
        "Distinct Tile IR cubins:", "", *cubins_table(doc, "tile"), "",
        "Embedded host objects (`.nv.host`) of the Tile IR cubins:", "", *host_objects_table(doc), "",
        "Plain nvcc cubins (the `control-cuda` arm), per toolchain family:", "",
        *cubins_table(doc, "cuda"), "",
        lineinfo_sentence(doc), "",
    ]
    if doc.get("missing_cells"):
        lines += [f"Cells with no record: {escape(', '.join(doc['missing_cells']))}.", ""]
    return "\n".join(lines)
