"""The forest plot faceted by GPU (or host): one panel per GPU with the same arms as rows and
one x axis, each panel's rates recomputed from its own trials.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .figure import save, text_width
from .forest import DECISION_STYLE, ROW_SMALL, draw_rate, forest_rows, layout_rows, rate_axis
from .numbers import fmt, per_label, per_superscript

MAX_PANELS = 8  # small multiples beyond this are unreadable at GitHub's width


def _natural(key: str) -> tuple[tuple[int, int, str], ...]:
    """'GPU 10' after 'GPU 2'."""
    import re

    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"(\d+)", key) if p)


def facets(doc: Mapping[str, Any]) -> tuple[str, dict[str, list[Mapping[str, Any]]]]:
    """What the trials ran on, when more than one took part: (kind, {panel label: trials}),
    kind 'GPU', 'host' or 'host · GPU'. Per host and GPU while that gives at most MAX_PANELS
    panels, else per host. One GPU and one host (or trials that name neither): no panel."""
    trials = doc.get("trials") or []
    hosts = {str(t["host"]) for t in trials if t.get("host") is not None}
    gpus = {str(t["gpu"]) for t in trials if t.get("gpu") is not None}

    def by(label: Any) -> dict[str, list[Mapping[str, Any]]]:
        groups: dict[str, list[Mapping[str, Any]]] = {}
        for t in trials:
            key = label(t)
            if key is not None:
                groups.setdefault(key, []).append(t)
        return dict(sorted(groups.items(), key=lambda kv: _natural(kv[0])))

    if len(hosts) > 1:
        pairs = by(lambda t: f"{t['host']} · GPU {t['gpu']}"
                   if t.get("host") is not None and t.get("gpu") is not None else None)
        if len(pairs) > len(hosts) and len(pairs) <= MAX_PANELS:
            return "host · GPU", pairs
        return "host", by(lambda t: str(t["host"]) if t.get("host") is not None else None)
    if len(gpus) > 1:
        return "GPU", by(lambda t: f"GPU {t['gpu']}" if t.get("gpu") is not None else None)
    return "GPU", {}


def _plural(kind: str) -> str:
    return {"host · GPU": "GPUs and hosts"}.get(kind, kind + "s")


def per_gpu_rows(doc: Mapping[str, Any]) -> tuple[str, list[str], list[dict[str, Any]], list[str]]:
    """The faceted forest plot's content: (kind, panel labels, rows, arms left out). The rows
    are the forest plot's (same arms, groups and order); each carries a cell per panel with
    that panel's trials' failures, valid trials and exposure, and the rate recomputed from
    them with its exact Poisson interval."""
    from ..analyze.stats import poisson_rate
    from ..analyze.tally import arm_counts

    kind, groups = facets(doc)
    if len(groups) <= 1:
        return kind, [], [], []
    rows, left_out = forest_rows(doc)
    case = doc["case"]
    failure, per = case["failure_outcomes"], case["exposure"]["per"]
    for r in rows:
        r["cells"] = {}
        for label, trials in groups.items():
            c = arm_counts([t for t in trials if t["arm"] == r["arm"]], failure)
            rate = poisson_rate(c["failures"], c["exposure_total"], per) if c["n_valid"] else {}
            lo, hi = rate.get("ci95") or (None, None)
            r["cells"][label] = {"failures": c["failures"], "n_valid": c["n_valid"],
                                 "exposure": c["exposure_total"], "estimate": rate.get("estimate"),
                                 "lo": lo, "hi": hi, "zero": c["failures"] == 0}
    return kind, list(groups), rows, left_out


def _overlap(cells: list[dict[str, Any]]) -> bool:
    """Whether every pair of these intervals overlaps (the largest lower bound is below the
    smallest upper bound)."""
    drawn = [c for c in cells if c["hi"] is not None]
    return len(drawn) < 2 or max(c["lo"] for c in drawn) <= min(c["hi"] for c in drawn)


def per_gpu_headline(doc: Mapping[str, Any]) -> str:
    """The faceted forest plot in words: the baseline's rate on each GPU (or host), which
    arms fail everywhere, somewhere or nowhere, and whether any arm's intervals disagree."""
    kind, labels, rows, left_out = per_gpu_rows(doc)
    if not rows:
        return ""
    case = doc["case"]
    unit, per = case["exposure"]["unit"], per_label(case["exposure"]["per"])
    parts = [f"Forest plot per {kind}, one panel each ({', '.join(labels)}) on one x axis: "
             f"failures per {per} {unit} per arm with exact 95% intervals"]

    def cell_text(label: str, c: dict[str, Any]) -> str:
        if not c["n_valid"]:
            return f"{label} no valid trial"
        rate = (f"< {fmt(c['hi'])}" if c["zero"] else
                f"{fmt(c['estimate'])} ({fmt(c['lo'])}–{fmt(c['hi'])})") if c["hi"] is not None else "no exposure"
        return f"{label} {c['failures']}/{c['n_valid']}, {rate}"

    base = next((r for r in rows if r["arm"] == case["baseline"]), None)
    if base:
        parts.append(f"the baseline{'' if base['arm'] == 'baseline' else ' ' + base['arm']}: "
                     + ", ".join(cell_text(lab, base["cells"][lab]) for lab in labels))
    everywhere, somewhere, nowhere = [], [], []
    for r in rows:
        if r is base:
            continue
        failed = [lab for lab in labels if r["cells"][lab]["failures"]]
        if not failed:
            nowhere.append(r["arm"])
        elif len(failed) == sum(bool(r["cells"][lab]["n_valid"]) for lab in labels):
            everywhere.append(r["arm"])
        else:
            somewhere.append(f"{r['arm']} (on {', '.join(failed)} only)")
    for words, arms in ((f"failing on every {kind}", everywhere), ("failing on some", somewhere),
                        ("no failure anywhere", nowhere)):
        if arms:
            parts.append(f"{words}: {', '.join(arms)}")
    apart = [r["arm"] for r in rows if not _overlap(list(r["cells"].values()))]
    parts.append(f"intervals that do not overlap between {_plural(kind)}: {', '.join(apart)}" if apart
                 else f"every arm's intervals overlap across {_plural(kind)}")
    if left_out:
        parts.append(f"not drawn: {', '.join(left_out)}")
    return "; ".join(parts) + "."


def per_gpu_figure(doc: Mapping[str, Any]):
    """The forest plot faceted by GPU (or host): small multiples, one panel per GPU with the
    same arms as rows and the same x axis, each panel's rates recomputed from its own trials
    and its own baseline's interval as the band. Returns (figure, panels), each panel a dict
    with its label, axes and per-row cells (each drawn cell with its marker artist); None for
    a run on one GPU or with no arm to draw."""
    import math

    kind, labels, rows, left_out = per_gpu_rows(doc)
    if not rows:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch, Rectangle
    from matplotlib.transforms import blended_transform_factory

    case = doc["case"]
    unit, baseline = case["exposure"]["unit"], case["baseline"]
    per = per_superscript(case["exposure"]["per"])
    has_claims = bool(doc.get("claims"))
    headers, n_lines = layout_rows(rows)

    cells = [c for r in rows for c in r["cells"].values() if c["hi"] is not None]
    ends = [v for c in cells for v in (c["lo"], c["hi"]) if v and v > 0]
    if not ends:
        return None

    # The grid of panels: at most four side by side, rows of panels balanced.
    n = len(labels)
    grid_rows = math.ceil(n / 4)
    grid_cols = math.ceil(n / grid_rows)

    # Layout in inches, 9 in wide at 100 dpi: GitHub's ~900 px.
    width, row_in = 9.0, 0.25
    title_in, panel_head_in, axis_in, between_in = 0.45, 0.45, 0.3, 0.3
    used = {r["decision"] for r in rows}
    n_handles = len(used) * has_claims + any(c["zero"] for c in cells) + 1
    legend_rows = 1 if n_handles <= 3 else 2
    label_in, legend_in = 0.25, 0.08 + 0.24 * legend_rows
    note_in = 0.3 if left_out else 0.0
    block_in = panel_head_in + row_in * n_lines + axis_in
    fig_h = title_in + grid_rows * block_in + (grid_rows - 1) * between_in + label_in + legend_in + note_in
    fig = plt.figure(figsize=(width, fig_h), dpi=100)

    name_x, gap, indent = 0.012, 0.008, 0.012
    names_w = max(text_width(fig, [r["arm"] for r in rows]) + indent,
                  text_width(fig, [f"varies {g}" for _, g in headers], fontweight="bold"))
    count_head = "failed/valid" if grid_cols <= 2 else "k/n"
    count_w = max(text_width(fig, [f"{c['failures']}/{c['n_valid']}" for c in cells]),
                  text_width(fig, [count_head], fontsize=8))
    start = name_x + names_w + 0.015
    panel_w = (0.99 - start) / grid_cols
    axes_w = panel_w - count_w - 2 * gap - 0.02

    # One x axis for every panel: every interval and zero-failure arrow of every panel, the
    # arrow about 0.3 in long however many decades the panels span.
    span = max(math.log10(max(ends)) - math.log10(min(ends)), 1.0) + 0.3
    arrow = 10 ** max(0.4, 0.3 * span / max(axes_w * width - 0.3, 0.5))
    positives = ends + [c["hi"] / arrow for c in cells if c["zero"]]
    xmin = 10 ** (math.log10(min(positives)) - 0.15)
    xmax = 10 ** (math.log10(max(positives)) + 0.15)

    band = "#E69F00"
    stripe = "#F2F2F2"
    stripe_end = start + (grid_cols - 1) * panel_w + count_w + 2 * gap + axes_w
    panels: list[dict[str, Any]] = []
    for i, label in enumerate(labels):
        gr, gc = divmod(i, grid_cols)
        top_in = title_in + gr * (block_in + between_in) + panel_head_in
        x0 = start + gc * panel_w + count_w + 2 * gap
        ax = fig.add_axes((x0, 1 - (top_in + row_in * n_lines) / fig_h, axes_w, row_in * n_lines / fig_h))
        rate_axis(ax, xmin, xmax, (n_lines - 0.5, -0.5))
        ax.patch.set_visible(False)  # the row stripes, drawn from the first panel, show through
        ax.tick_params(axis="x", labelsize=9)
        trials = sum(c["n_valid"] for r in rows for lab, c in r["cells"].items() if lab == label)
        # The panel's name, shrunk to the panel's width if need be, and its trials below it.
        room = axes_w + count_w
        size = min(10.0, 10.0 * room / max(text_width(fig, [label], fontsize=10, fontweight="bold"), 1e-9))
        ax.text(0.5, 1.0 + 0.22 / (row_in * n_lines), label, transform=ax.transAxes, ha="center",
                va="bottom", fontsize=size, fontweight="bold")
        ax.text(0.5, 1.0 + 0.06 / (row_in * n_lines), f"{trials} valid trials", transform=ax.transAxes,
                ha="center", va="bottom", fontsize=8, color="#555555")
        base = next((r["cells"][label] for r in rows if r["arm"] == baseline), None)
        if base and base["hi"] is not None:
            ax.axvspan(base["lo"] if base["lo"] > 0 else xmin, base["hi"], color=band, alpha=0.2, lw=0, zorder=0)
            if base["estimate"]:
                ax.axvline(base["estimate"], color=band, lw=1.2, ls="--", zorder=1)
        count = blended_transform_factory(fig.transFigure, ax.transData)
        ax.text(x0 - gap, -0.5, count_head, transform=count, ha="right", va="bottom", fontsize=8,
                color="#555555")
        drawn: dict[str, dict[str, Any]] = {}
        for r in rows:
            yy, c = r["y"], r["cells"][label]
            style = DECISION_STYLE[r["decision"]]
            colour = style["color"]
            ax.text(x0 - gap, yy, f"{c['failures']}/{c['n_valid']}" if c["n_valid"] else "–",
                    transform=count, ha="right", va="center", fontsize=9, color="#555555")
            if not c["n_valid"] or c["hi"] is None:
                ax.text(xmin * 1.15, yy, "no valid trial" if not c["n_valid"] else "no exposure",
                        va="center", ha="left", fontsize=8, color="#777777", style="italic")
                continue
            marker = draw_rate(ax, yy, c, colour, style["marker"], arrow, ROW_SMALL)
            drawn[r["arm"]] = {**c, "y": yy, "artist": marker}
        if gc == 0:  # the arm names, once per row of panels, and a stripe on every other arm
            names = blended_transform_factory(fig.transFigure, ax.transData)  # to follow it across
            for k, r in enumerate(rows):
                if k % 2 == 1:
                    ax.add_patch(Rectangle((name_x / 2, r["y"] - 0.5), stripe_end - name_x / 2, 1.0,
                                           transform=names, color=stripe, lw=0, zorder=-5,
                                           clip_on=False))
            for hy, group in headers:
                ax.text(name_x, hy, f"varies {group}", transform=names, va="center", ha="left",
                        fontsize=9, fontweight="bold", color="#333333")
            for r in rows:
                ax.text(name_x + (0.0 if r["arm"] == baseline else indent), r["y"], r["arm"],
                        transform=names, va="center", ha="left", fontsize=9,
                        fontweight="bold" if r["arm"] == baseline else "normal")
        panels.append({"label": label, "ax": ax, "rows": drawn})

    fig.text(name_x, 1 - 0.1 / fig_h,
             f"{case['name']}: failure rate per arm on each {kind} ({n} {_plural(kind)})",
             ha="left", va="top", fontsize=11.5, fontweight="bold")
    fig.text(start + (0.99 - start) / 2, (legend_in + note_in + 0.02) / fig_h,
             f"failures per {per} {unit} (log scale, the same in every panel; exact Poisson 95% interval)",
             ha="center", va="bottom", fontsize=9)
    handles: list[Any] = []
    if has_claims:
        handles += [Line2D([], [], linestyle="none", marker=s["marker"], color=s["color"], markersize=7,
                           label=s["label"] + (f" (all {_plural(kind)} together)" if d != "no_claim" else ""))
                    for d, s in DECISION_STYLE.items() if d in used]
    else:  # a document without claims: every cell is drawn in the no-claim style
        handles.append(Line2D([], [], linestyle="none", marker=DECISION_STYLE["no_claim"]["marker"],
                              color=DECISION_STYLE["no_claim"]["color"], markersize=7,
                              label="rate with its exact 95% interval"))
    if any(c["zero"] for c in cells):
        open_marker = "o" if has_claims else DECISION_STYLE["no_claim"]["marker"]
        handles.append(Line2D([], [], linestyle="none", marker=open_marker, markerfacecolor="white",
                              markeredgecolor="#333333", markeredgewidth=1.5, markersize=7,
                              label="no failure: upper bound (arrow toward 0)"))
    handles.append(Patch(facecolor=band, alpha=0.35, label=f"{baseline}'s 95% interval on that {kind}"))
    fig.legend(handles=handles, loc="lower left", bbox_to_anchor=(name_x - 0.005, note_in / fig_h),
               ncol=len(handles) if legend_rows == 1 else 3, fontsize=8.5, frameon=False,
               handletextpad=0.3, columnspacing=1.2, borderaxespad=0.2)
    if left_out:
        note = "Not drawn: " + "; ".join(left_out)
        if len(note) > 160:
            note = note[:159] + "…"
        fig.text(name_x, 0.08 / fig_h, note, fontsize=8.5, ha="left", va="bottom", color="#555555")
    return fig, panels


def per_gpu_plot(doc: Mapping[str, Any], png: Path, svg: Path | None = None) -> bool:
    """Write the forest plot faceted by GPU or host (PNG, and SVG beside it); False for a run
    on one GPU, or with no arm to draw."""
    made = per_gpu_figure(doc)
    if made is None:
        return False
    fig, _ = made
    save(fig, png, svg)
    return True
