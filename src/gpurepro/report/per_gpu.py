"""The forest plot faceted by GPU (or host): one panel per GPU with the same arms as rows and
one x axis, each panel's rates recomputed from its own trials.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..analyze.stats import poisson_rate
from ..analyze.tally import arm_counts
from ..model.result import Result, as_result
from .figure import save, text_width
from .forest import (
    DECISION_STYLE,
    NAME_X,
    ROW_SMALL,
    band_handle,
    draw_band,
    draw_rate,
    exposure_per,
    forest_rows,
    layout_rows,
    legend_handles,
    note_height,
    note_left_out,
    note_lines,
    place_legend,
    rate_axis,
)
from .numbers import fmt, per_label, per_superscript

# What other modules use; the rest is this module's own.
__all__ = ["facets", "GAP", "per_gpu_figure", "per_gpu_headline", "per_gpu_plot", "WIDTH_IN"]

MAX_PANELS = 8  # small multiples beyond this are unreadable at GitHub's width


def _natural(key: str) -> tuple[tuple[int, int, str], ...]:
    """'GPU 10' after 'GPU 2'."""
    import re

    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"(\d+)", key) if p)


def facets(doc: Result | Mapping[str, Any]) -> tuple[str, dict[str, list[Mapping[str, Any]]]]:
    """What the trials ran on, when more than one took part: (kind, {panel label: the trials'
    records}), kind 'GPU', 'host' or 'host · GPU'. Per host and GPU while that gives at most
    MAX_PANELS panels, else per host. One GPU and one host (or trials that name neither): no
    panel."""
    trials = [t.record for t in as_result(doc).trials]
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


def per_gpu_rows(r: Result) -> tuple[str, list[str], list[dict[str, Any]], list[str]]:
    """The faceted forest plot's content: (kind, panel labels, rows, arms left out). The rows
    are the forest plot's (same arms, groups and order); each carries a cell per panel with
    that panel's trials' failures, valid trials and exposure, and the rate recomputed from
    them with its exact Poisson interval."""
    kind, groups = facets(r)
    if len(groups) <= 1:
        return kind, [], [], []
    rows, left_out = forest_rows(r)
    failure, per = list(r.case.failure_outcomes), exposure_per(r)
    for row in rows:
        row["cells"] = {}
        for label, trials in groups.items():
            c = arm_counts([t for t in trials if t["arm"] == row["arm"]], failure)
            rate = poisson_rate(c["failures"], c["exposure_total"], per) if c["n_valid"] else {}
            lo, hi = rate.get("ci95") or (None, None)
            row["cells"][label] = {"failures": c["failures"], "n_valid": c["n_valid"],
                                 "exposure": c["exposure_total"], "estimate": rate.get("estimate"),
                                 "lo": lo, "hi": hi, "zero": c["failures"] == 0}
    return kind, list(groups), rows, left_out


def _overlap(cells: list[dict[str, Any]]) -> bool:
    """Whether every pair of these intervals overlaps (the largest lower bound is below the
    smallest upper bound)."""
    drawn = [c for c in cells if c["hi"] is not None]
    return len(drawn) < 2 or max(c["lo"] for c in drawn) <= min(c["hi"] for c in drawn)


def per_gpu_headline(doc: Result | Mapping[str, Any]) -> str:
    """The faceted forest plot in words: the baseline's rate on each GPU (or host), which
    arms fail everywhere, somewhere or nowhere, and whether any arm's intervals disagree."""
    result = as_result(doc)
    kind, labels, rows, left_out = per_gpu_rows(result)
    if not rows:
        return ""
    unit, per = result.case.exposure_unit, per_label(exposure_per(result))
    parts = [f"Forest plot per {kind}, one panel each ({', '.join(labels)}) on one x axis: "
             f"failures per {per} {unit} per arm with exact 95% intervals"]

    def cell_text(label: str, c: dict[str, Any]) -> str:
        if not c["n_valid"]:
            return f"{label} no valid trial"
        rate = (f"< {fmt(c['hi'])}" if c["zero"] else
                f"{fmt(c['estimate'])} ({fmt(c['lo'])}–{fmt(c['hi'])})") if c["hi"] is not None else "no exposure"
        return f"{label} {c['failures']}/{c['n_valid']}, {rate}"

    base = next((r for r in rows if r["arm"] == result.case.baseline), None)
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


def per_gpu_figure(doc: Result | Mapping[str, Any]) -> Any:
    """The forest plot faceted by GPU (or host): small multiples, one panel per GPU with the
    same arms as rows and the same x axis, each panel's rates recomputed from its own trials
    and its own baseline's interval as the band. Returns (figure, panels), each panel a dict
    with its label, axes and per-row cells (each drawn cell with its marker artist); None for
    a run on one GPU or with no arm to draw."""
    result = as_result(doc)
    kind, labels, rows, left_out = per_gpu_rows(result)
    if not rows:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    unit, baseline = result.case.exposure_unit, result.case.baseline
    per = per_superscript(exposure_per(result))
    has_claims = bool(result.claims)
    headers, n_lines = layout_rows(rows)

    cells = [c for r in rows for c in r["cells"].values() if c["hi"] is not None]
    ends = [v for c in cells for v in (c["lo"], c["hi"]) if v and v > 0]
    if not ends:
        return None
    grid_rows, grid_cols = _grid(len(labels))
    used = {r["decision"] for r in rows}
    n_handles = len(used) * has_claims + any(c["zero"] for c in cells) + 1
    legend_rows = 1 if n_handles <= 3 else 2
    fig = plt.figure(figsize=(WIDTH_IN, 1.0), dpi=100)
    note = note_lines(fig, left_out)
    size = _Sizes(n_lines, grid_rows, legend_rows, note_height(note))
    fig.set_size_inches(WIDTH_IN, size.fig_h)
    cols = _columns(fig, rows, headers, cells, grid_cols)
    arrow, xmin, xmax = _x_axis(ends, cells, cols["axes_w"])
    panels = [_panel(fig, i, label, rows, headers, baseline, size, cols, grid_cols, arrow, xmin, xmax)
              for i, label in enumerate(labels)]
    fig.text(NAME_X, 1 - 0.1 / size.fig_h,
             f"{result.case.name}: failure rate per arm on each {kind} ({len(labels)} {_plural(kind)})",
             ha="left", va="top", fontsize=11.5, fontweight="bold")
    fig.text(cols["start"] + (0.99 - cols["start"]) / 2,
             (size.legend_in + size.note_in + 0.02) / size.fig_h,
             f"failures per {per} {unit} (log scale, the same in every panel; exact Poisson 95% interval)",
             ha="center", va="bottom", fontsize=9)
    handles = legend_handles(used, has_claims, any(c["zero"] for c in cells),
                             together=f" (all {_plural(kind)} together)")
    handles.append(band_handle(f"{baseline}'s 95% interval on that {kind}"))
    place_legend(fig, handles, legend_rows, size.note_in / size.fig_h)
    note_left_out(fig, note, size.fig_h)
    return fig, panels


WIDTH_IN = 9.0  # 9 in wide at 100 dpi: GitHub's ~900 px
ROW_IN = 0.25  # one arm's row in a panel
GAP, INDENT = 0.008, 0.012  # between a panel's counts and its axes; an arm's name under its group
STRIPE = "#F2F2F2"  # every other arm's row, across every panel


class _Sizes:
    """The layout's heights in inches: the title, each row of panels (its head, its rows, its
    axis) and the space between them, the x axis label, the legend and the note."""

    title_in, panel_head_in, axis_in, between_in, label_in = 0.45, 0.45, 0.3, 0.3, 0.25

    def __init__(self, n_lines: float, grid_rows: int, legend_rows: int, note_in: float):
        self.n_lines = n_lines
        self.legend_in = 0.08 + 0.24 * legend_rows
        self.note_in = note_in
        self.block_in = self.panel_head_in + ROW_IN * n_lines + self.axis_in
        self.fig_h = (self.title_in + grid_rows * self.block_in + (grid_rows - 1) * self.between_in
                      + self.label_in + self.legend_in + self.note_in)


def _grid(n: int) -> tuple[int, int]:
    """The grid of panels: at most four side by side, rows of panels balanced."""
    import math

    grid_rows = math.ceil(n / 4)
    return grid_rows, math.ceil(n / grid_rows)


def _columns(fig: Any, rows: list[dict[str, Any]], headers: list[tuple[float, str]],
             cells: list[dict[str, Any]], grid_cols: int) -> dict[str, Any]:
    """The arm names' column and each panel's width, its counts' column and its axes'."""
    names_w = max(text_width(fig, [r["arm"] for r in rows]) + INDENT,
                  text_width(fig, [f"varies {g}" for _, g in headers], fontweight="bold"))
    count_head = "failed/valid" if grid_cols <= 2 else "k/n"
    count_w = max(text_width(fig, [f"{c['failures']}/{c['n_valid']}" for c in cells]),
                  text_width(fig, [count_head], fontsize=8))
    start = NAME_X + names_w + 0.015
    panel_w = (0.99 - start) / grid_cols
    axes_w = panel_w - count_w - 2 * GAP - 0.02
    return {"count_head": count_head, "count_w": count_w, "start": start, "panel_w": panel_w,
            "axes_w": axes_w,
            "stripe_end": start + (grid_cols - 1) * panel_w + count_w + 2 * GAP + axes_w}


def _x_axis(ends: list[float], cells: list[dict[str, Any]], axes_w: float) -> tuple[float, float, float]:
    """One x axis for every panel: every interval and zero-failure arrow of every panel, the
    arrow about 0.3 in long however many decades the panels span. (arrow, xmin, xmax)"""
    import math

    span = max(math.log10(max(ends)) - math.log10(min(ends)), 1.0) + 0.3
    arrow = 10 ** max(0.4, 0.3 * span / max(axes_w * WIDTH_IN - 0.3, 0.5))
    positives = ends + [c["hi"] / arrow for c in cells if c["zero"]]
    return (arrow, 10 ** (math.log10(min(positives)) - 0.15),
            10 ** (math.log10(max(positives)) + 0.15))


def _panel(fig: Any, i: int, label: str, rows: list[dict[str, Any]],
           headers: list[tuple[float, str]], baseline: str, size: _Sizes,
           cols: Mapping[str, Any], grid_cols: int, arrow: float, xmin: float,
           xmax: float) -> dict[str, Any]:
    """Panel ``i``: its axes, its name and trials, its baseline's band, each arm's count and
    rate; the first panel of a row of panels also draws the arm names and the stripes."""
    from matplotlib.transforms import blended_transform_factory

    n_lines = size.n_lines
    gr, gc = divmod(i, grid_cols)
    top_in = size.title_in + gr * (size.block_in + size.between_in) + size.panel_head_in
    x0 = cols["start"] + gc * cols["panel_w"] + cols["count_w"] + 2 * GAP
    ax = fig.add_axes((x0, 1 - (top_in + ROW_IN * n_lines) / size.fig_h, cols["axes_w"],
                       ROW_IN * n_lines / size.fig_h))
    rate_axis(ax, xmin, xmax, (n_lines - 0.5, -0.5))
    ax.patch.set_visible(False)  # the row stripes, drawn from the first panel, show through
    ax.tick_params(axis="x", labelsize=9)
    _panel_title(fig, ax, label, rows, cols, n_lines)
    base = next((r["cells"][label] for r in rows if r["arm"] == baseline), None)
    if base and base["hi"] is not None:
        draw_band(ax, base, xmin)
    count = blended_transform_factory(fig.transFigure, ax.transData)
    ax.text(x0 - GAP, -0.5, cols["count_head"], transform=count, ha="right", va="bottom",
            fontsize=8, color="#555555")
    drawn: dict[str, dict[str, Any]] = {}
    for r in rows:
        yy, c = r["y"], r["cells"][label]
        style = DECISION_STYLE[r["decision"]]
        ax.text(x0 - GAP, yy, f"{c['failures']}/{c['n_valid']}" if c["n_valid"] else "–",
                transform=count, ha="right", va="center", fontsize=9, color="#555555")
        if not c["n_valid"] or c["hi"] is None:
            ax.text(xmin * 1.15, yy, "no valid trial" if not c["n_valid"] else "no exposure",
                    va="center", ha="left", fontsize=8, color="#777777", style="italic")
            continue
        marker = draw_rate(ax, yy, c, style["color"], style["marker"], arrow, ROW_SMALL)
        drawn[r["arm"]] = {**c, "y": yy, "artist": marker}
    if gc == 0:
        _arm_names(fig, ax, rows, headers, baseline, cols["stripe_end"])
    return {"label": label, "ax": ax, "rows": drawn}


def _panel_title(fig: Any, ax: Any, label: str, rows: list[dict[str, Any]],
                 cols: Mapping[str, Any], n_lines: float) -> None:
    """The panel's name, shrunk to the panel's width if need be, and its trials below it."""
    trials = sum(c["n_valid"] for r in rows for lab, c in r["cells"].items() if lab == label)
    room = cols["axes_w"] + cols["count_w"]
    size = min(10.0, 10.0 * room / max(text_width(fig, [label], fontsize=10, fontweight="bold"), 1e-9))
    ax.text(0.5, 1.0 + 0.22 / (ROW_IN * n_lines), label, transform=ax.transAxes, ha="center",
            va="bottom", fontsize=size, fontweight="bold")
    ax.text(0.5, 1.0 + 0.06 / (ROW_IN * n_lines), f"{trials} valid trials", transform=ax.transAxes,
            ha="center", va="bottom", fontsize=8, color="#555555")


def _arm_names(fig: Any, ax: Any, rows: list[dict[str, Any]], headers: list[tuple[float, str]],
               baseline: str, stripe_end: float) -> None:
    """The arm names, once per row of panels, and a stripe on every other arm (drawn in the
    figure's coordinates across, the panel's down, to follow its rows)."""
    from matplotlib.patches import Rectangle
    from matplotlib.transforms import blended_transform_factory

    names = blended_transform_factory(fig.transFigure, ax.transData)
    for k, r in enumerate(rows):
        if k % 2 == 1:
            ax.add_patch(Rectangle((NAME_X / 2, r["y"] - 0.5), stripe_end - NAME_X / 2, 1.0,
                                   transform=names, color=STRIPE, lw=0, zorder=-5, clip_on=False))
    for hy, group in headers:
        ax.text(NAME_X, hy, f"varies {group}", transform=names, va="center", ha="left",
                fontsize=9, fontweight="bold", color="#333333")
    for r in rows:
        ax.text(NAME_X + (0.0 if r["arm"] == baseline else INDENT), r["y"], r["arm"],
                transform=names, va="center", ha="left", fontsize=9,
                fontweight="bold" if r["arm"] == baseline else "normal")


def per_gpu_plot(doc: Result | Mapping[str, Any], png: Path, svg: Path | None = None) -> bool:
    """Write the forest plot faceted by GPU or host (PNG, and SVG beside it); False for a run
    on one GPU, or with no arm to draw."""
    made = per_gpu_figure(doc)
    if made is None:
        return False
    fig, _ = made
    save(fig, png, svg)
    return True
