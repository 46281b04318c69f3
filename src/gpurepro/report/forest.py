"""The forest plot: each arm's failure rate per unit of exposure with its exact interval, on a
log axis against the baseline's band, marked with its claim's decision. Its rows, layout, axis
and markers serve the per-GPU panels and compare's paired plot too. For a case that checks its
output (a trial is the unit: wrong results), each arm's share of failing trials with its exact
Clopper-Pearson interval, on a linear axis from 0 to 1.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..model.result import ArmSummary, ClaimDecision, Result, as_result
from . import families
from .figure import save, text_width
from .numbers import fmt, per_label, per_superscript, picture_number
from .wrong import per_trial

# What other modules use; the rest is this module's own.
__all__ = [
    "band_handle", "coarse_arms", "DECISION_STYLE", "draw_band", "draw_rate", "exposure_per",
    "forest_figure",
    "forest_headline", "forest_plot", "forest_rows", "GAP", "layout_rows", "legend_handles",
    "NAME_X", "note_height", "note_left_out", "note_lines", "place_legend", "rate_axis",
    "ROW_SMALL", "WIDTH_IN", "x_range"
]

# Each claim decision has a marker shape and a colour (Okabe-Ito, safe for colour blindness);
# the shape alone tells them apart in greyscale. Rows with no claim of their own (a reference
# arm) get a plain square.
DECISION_STYLE: dict[str, dict[str, str]] = {
    "supported": {"marker": "o", "color": "#0072B2", "label": "claim supported"},
    "contradicted": {"marker": "X", "color": "#D55E00", "label": "claim contradicted"},
    "not_decided": {"marker": "D", "color": "#7F7F7F", "label": "claim not decided"},
    "no_claim": {"marker": "s", "color": "#000000", "label": "no claim on the arm"},
}


def _coarse_counter(s: ArmSummary) -> bool:
    """The run found the arm's exposure counter too coarse to place failures on (a counter
    printed once a second): its exposure, and so its rate, is not a measurement."""
    km = s.time_to_failure.exposure
    return str((km.method if km else None) or "").startswith("none: the exposure counter is coarse")


def coarse_arms(r: Result) -> set[str]:
    """The arms whose exposure counter is too coarse: as the summary says, or, for documents
    recorded before summaries said so, as the trials show (a failure with no counter reading
    at all, as stats.coarse_counter counts them)."""
    failure = set(r.case.failure_outcomes)
    coarse = {a for a, s in r.arms.items() if _coarse_counter(s)}
    coarse |= {t.arm for t in r.trials
               if t.outcome in failure and not (t.exposure or 0)
               and "counters" in t.record and not t.counters}
    return coarse


def _claim_text(c: ClaimDecision, baseline: str) -> str:
    ref = c.reference
    than = "baseline" if ref in (None, baseline) else ref
    kind = c.kind
    vs = "" if than == "baseline" else f" than {than}"  # the column head names the baseline
    if kind == "outcome":
        what = f"{c.outcome}" + (f" {c.detail}" if c.detail else "")
    elif kind == "concentrated":
        what = f"failures in {c.stratum}"
    elif kind == "equivalent":
        what = (f"within ×{c.margin:g}" if c.margin else "alike") + (f" of {than}" if vs else "")
    else:
        what = f"{kind}{vs}"
    return f"{what}: {families.decision_text(c)}"


def _row_decision(claims: list[ClaimDecision]) -> str:
    """One marker per row: supported if any of the arm's claims is, else contradicted if any
    is, else not decided; the label column spells out every claim."""
    # The confirmatory claims' decisions set the marker; an arm with exploratory claims only
    # gets theirs (its label says they are exploratory).
    confirmatory = families.confirmatory(claims)
    decisions = {c.decision for c in (confirmatory or claims)}
    for d in ("supported", "contradicted", "not_decided"):
        if d in decisions:
            return d
    return "no_claim"


def forest_rows(doc: Result | Mapping[str, Any]) -> tuple[list[dict[str, Any]], list[str]]:
    """The arms the forest plot draws, grouped by the factor(s) they vary from the baseline
    (the baseline first), and a note per arm it leaves out."""
    result = as_result(doc)
    baseline = result.case.baseline
    summary = result.arms
    base = summary.get(baseline)
    base_factors = base.factors if base else {}
    claims = result.claims
    rows: list[dict[str, Any]] = []
    left_out: list[str] = []
    coarse = coarse_arms(result)
    trials = per_trial(result)
    for arm, s in summary.items():
        arm_claims = [c for c in claims if c.arm == arm]
        rate = s.proportion if trials else s.exposure.rate
        why = None
        if s.n_valid == 0:
            why = "no valid trial"
        elif trials:
            pass  # the share of failing trials needs no exposure
        elif not s.exposure.total or not rate.ci95:
            why = "no exposure counted"
        elif arm in coarse:
            why = "exposure counter too coarse"
        if why or rate.ci95 is None:
            decided = "; ".join(f"{c.name} {families.decision_text(c)}" for c in arm_claims)
            left_out.append(f"{arm} ({why}" + (f"; claim {decided}" if decided else "") + ")")
            continue
        diff = sorted(k for k, v in s.factors.items() if base_factors.get(k) != v)
        lo, hi = rate.ci95
        rows.append({
            "arm": arm,
            "group": "baseline" if arm == baseline else (" + ".join(diff) if diff else "same factors"),
            "differs": ", ".join(f"{k}={s.factors[k]}" for k in diff),
            "estimate": rate.estimate, "lo": lo, "hi": hi,
            "failures": s.failures, "n_valid": s.n_valid,
            "zero": s.failures == 0,
            "decision": _row_decision(arm_claims),
            "claims": [_claim_text(c, baseline) for c in arm_claims],
        })
    order: dict[str, int] = {"baseline": -1}
    for r in rows:
        order.setdefault(r["group"], len(order))
    rows.sort(key=lambda r: order[r["group"]])  # stable: arms keep the document's order
    return rows, left_out


def exposure_per(r: Result) -> float:
    """The case's exposure unit's multiple its rates are per (10^6 cycles)."""
    assert r.case.exposure_per is not None, "a case's exposure names its per"
    return r.case.exposure_per


def forest_headline(doc: Result | Mapping[str, Any]) -> str:
    """The forest plot in words (its alt text): the reference, the claims, which arms lie
    below, inside or above the reference's interval, and what is not drawn."""
    result = as_result(doc)
    unit, per = result.case.exposure_unit, per_label(exposure_per(result))
    rows, left_out = forest_rows(result)
    base = next((r for r in rows if r["arm"] == result.case.baseline), None)
    what = "share of failing trials" if per_trial(result) else f"failures per {per} {unit}"
    parts = [f"Forest plot: {what} per arm with exact 95% intervals"
             + (f", against the baseline's {fmt(base['estimate'])} ({fmt(base['lo'])}–{fmt(base['hi'])})"
                if base else " (the baseline is not drawn)")]
    claims = result.claims
    if claims:
        conf = families.confirmatory(claims)
        n_sup = sum(c.decision == "supported" for c in conf)
        n_con = sum(c.decision == "contradicted" for c in conf)
        parts.append(f"{families.decided_count(claims)} ({n_sup} supported, {n_con} "
                     f"contradicted{' confirmatory' if len(conf) < len(claims) else ''})")
    if base:
        below = [r["arm"] for r in rows if r is not base and r["hi"] < base["lo"]]
        above = [r["arm"] for r in rows if r is not base and r["lo"] > base["hi"]]
        within = [r["arm"] for r in rows if r is not base and r["arm"] not in below + above]
        for words, arms in (("entirely below the baseline's interval", below),
                            ("overlapping it", within), ("entirely above it", above)):
            if arms:
                parts.append(f"{words}: {', '.join(arms)}")
    if left_out:
        parts.append(f"not drawn: {', '.join(left_out)}")
    return "; ".join(parts) + "."


def layout_rows(rows: list[dict[str, Any]]) -> tuple[list[tuple[float, str]], float]:
    """Rows top to bottom: the baseline first, then a header line before each group. Sets
    each row's y; returns the headers (y, group) and the number of lines."""
    y, headers, last_group = 0.0, [], None
    for r in rows:
        if r["group"] != last_group and r["group"] != "baseline":
            y += 0.3 if last_group is not None else 0.0
            headers.append((y, r["group"]))
            y += 1.0
        last_group = r["group"]
        r["y"] = y
        y += 1.0
    return headers, y


def rate_axis(ax: Any, xmin: float, xmax: float, ylim: tuple[float, float], log: bool = True) -> None:
    """A forest plot's axis: log scale of rates (or, ``log=False``, a linear one of shares),
    rows top down, no y ticks, light grid."""
    from matplotlib.ticker import FuncFormatter, LogLocator, MultipleLocator

    ax.set_xscale("log" if log else "linear")
    ax.set_xlim(xmin, xmax)
    ax.set_ylim(*ylim)
    ax.set_yticks([])
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    ax.xaxis.set_major_locator(LogLocator(base=10) if log else MultipleLocator(0.25))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.grid(True, axis="x", which="major", alpha=0.4)
    ax.grid(True, axis="x", which="minor", alpha=0.12)


# Marker and line sizes of one forest row: the single plot's, and the smaller panels' (per GPU,
# or several runs per arm in compare).
ROW_LARGE = {"markersize": 8, "arrow_lw": 1.5, "mutation_scale": 11, "edge": 1.7,
             "elinewidth": 1.8, "capsize": 4, "capthick": 1.5}
ROW_SMALL = {"markersize": 7, "arrow_lw": 1.4, "mutation_scale": 10, "edge": 1.6,
             "elinewidth": 1.6, "capsize": 3, "capthick": 1.4}


def draw_rate(ax: Any, y: float, cell: Mapping[str, Any], colour: Any, marker: str, arrow: float,
              size: Mapping[str, Any]) -> Any:
    """One row's rate: the estimate with its interval, or, with no failure, an open marker at
    the upper bound and an arrow toward 0. Returns the marker's artist."""
    if cell["zero"]:
        ax.annotate("", xy=(cell["hi"] / arrow, y), xytext=(cell["hi"], y),
                    arrowprops={"arrowstyle": "-|>", "color": colour, "lw": size["arrow_lw"],
                                "shrinkA": 0, "shrinkB": 0, "mutation_scale": size["mutation_scale"]})
        (artist,) = ax.plot([cell["hi"]], [y], linestyle="none", marker=marker,
                            markersize=size["markersize"], markerfacecolor="white",
                            markeredgecolor=colour, markeredgewidth=size["edge"], zorder=3)
    else:
        est = cell["estimate"]
        ax.errorbar([est], [y], xerr=[[est - cell["lo"]], [cell["hi"] - est]], fmt="none",
                    ecolor=colour, elinewidth=size["elinewidth"], capsize=size["capsize"],
                    capthick=size["capthick"])
        (artist,) = ax.plot([est], [y], linestyle="none", marker=marker,
                            markersize=size["markersize"], color=colour, markeredgecolor=colour,
                            zorder=3)
    return artist


def forest_figure(doc: Result | Mapping[str, Any]) -> Any:
    """The forest plot as a matplotlib figure, and its rows (each with the y it is drawn at
    and the marker artist that carries its decision); None if no arm can be drawn."""
    result = as_result(doc)
    rows, left_out = forest_rows(result)
    if not rows:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    case = result.case
    per = per_superscript(exposure_per(result))
    has_claims = bool(result.claims)
    baseline = case.baseline
    headers, n_lines = layout_rows(rows)
    trials = per_trial(result)
    arrow = 4.0 if trials else 10 ** 0.4
    xmin, xmax = (-0.03, 1.03) if trials else x_range(rows, arrow)
    base = next((r for r in rows if r["arm"] == baseline), None)
    _row_texts(rows, baseline)
    used = {r["decision"] for r in rows}
    n_handles = len(used) * has_claims + any(r["zero"] for r in rows) + (base is not None)
    legend_rows = 1 if n_handles <= 4 else 2

    claims = result.claims
    title = (f"{case.name}: failing trials per arm against {baseline}" if trials
             else f"{case.name}: failure rate per arm against {baseline}")
    counted = f"({families.decided_count(claims)})" if claims and not trials else ""
    # 9 in wide at 100 dpi: GitHub's ~900 px; wider where the claims column needs it, so that
    # no text is cut (GitHub scales a wider picture down to its column).
    row_in = 0.27
    fig = plt.figure(figsize=(WIDTH_IN, 1.0), dpi=100)
    width = max(WIDTH_IN, _width_needed(fig, rows, headers, per, baseline, has_claims))
    fig.set_size_inches(width, 1.0)
    note = note_lines(fig, left_out)
    note_in = note_height(note)
    bottom_in = note_in + (0.1 + 0.24 * legend_rows) + 0.55  # note, legend, axis
    # The title on one line where it fits, else its count of decided claims on a second.
    one_line = f"{title} {counted}".strip()
    fits = text_width(fig, [one_line], fontsize=11.5, fontweight="bold") <= 1 - 2 * NAME_X
    lines = [one_line] if fits or not counted else [title, counted]
    top_in = 0.75 + 0.22 * (len(lines) - 1)
    fig_h = top_in + row_in * n_lines + bottom_in
    fig.set_size_inches(width, fig_h)
    cols = _columns(fig, rows, headers, per, baseline, has_claims)
    if trials:
        cols["per"] = "trial"
    ax = fig.add_axes((cols["left"], bottom_in / fig_h, cols["right"] - cols["left"],
                       row_in * n_lines / fig_h))
    rate_axis(ax, xmin, xmax, (n_lines - 0.4, -0.6), log=not trials)
    if base:
        draw_band(ax, base, xmin)
    _draw_rows(fig, ax, rows, headers, cols, baseline, has_claims, arrow)
    ax.set_xlabel("share of valid trials that failed (exact Clopper-Pearson 95% interval)" if trials
                  else f"failures per {per} {case.exposure_unit} (log scale; exact Poisson 95% "
                  f"interval)", fontsize=9)
    ax.tick_params(axis="x", labelsize=9)
    fig.text(NAME_X, 1 - 0.1 / fig_h, "\n".join(lines), ha="left", va="top", fontsize=11.5,
             fontweight="bold", linespacing=1.3)
    handles = legend_handles(used, has_claims, any(r["zero"] for r in rows))
    if base:
        handles.append(band_handle(f"{baseline}'s 95% interval"))
    place_legend(fig, handles, legend_rows, note_in / fig_h)
    note_left_out(fig, note, fig_h)
    return fig, rows


# The left margin of a forest plot's names, title, legend and note, as a fraction of its width.
NAME_X = 0.012
# A forest plot's width (inches) where its columns fit in it, and the least its axes get.
WIDTH_IN, AXES_MIN_IN = 9.0, 2.7
# The gap between two columns, and the margin right of the last, as fractions of 9 in.
GAP, RIGHT_MARGIN = 0.012, 0.01
# The baseline's interval, drawn behind every row (and its estimate as a dashed line).
BAND = "#E69F00"


def x_range(rows: list[dict[str, Any]], arrow: float) -> tuple[float, float]:
    """The x axis's ends: every interval and every zero-failure arrow, with a margin."""
    import math

    positives = [v for r in rows for v in (r["lo"], r["hi"], r["hi"] / arrow if r["zero"] else None)
                 if v and v > 0]
    return (10 ** (math.log10(min(positives)) - 0.2), 10 ** (math.log10(max(positives)) + 0.2))


def _row_texts(rows: list[dict[str, Any]], baseline: str) -> None:
    """Each row's rate and claim, as its text columns write them."""
    for r in rows:
        r["rate_text"] = (f"< {picture_number(r['hi'])}" if r["zero"]
                          else f"{picture_number(r['estimate'])} ({picture_number(r['lo'])}–{picture_number(r['hi'])})")
        r["claim_text"] = "; ".join(r["claims"]) if r["claims"] else (
            "(the reference)" if r["arm"] == baseline else "no claim")


def _widths(fig: Any, rows: list[dict[str, Any]], headers: list[tuple[float, str]], per: str,
            baseline: str, has_claims: bool) -> dict[str, float]:
    """Each text column's width, in inches: the names, the counts, the rates, the claims (0
    for a document without claims), each its widest text, every claim written whole."""
    inches = fig.get_size_inches()[0]
    names_w = max(text_width(fig, [r["arm"] for r in rows]) + 0.012,
                  text_width(fig, [f"varies {g}" for _, g in headers], fontweight="bold"))
    rate_w = max(text_width(fig, [r["rate_text"] for r in rows]),
                 text_width(fig, [f"per {per} (95% CI)"], fontsize=8.5))
    claim_w = max(text_width(fig, [r["claim_text"] for r in rows]),
                  text_width(fig, [f"claim vs {baseline}: decision"], fontsize=8.5)) \
        if has_claims else 0.0
    return {"names": names_w * inches, "count": text_width(fig, ["failed/valid"], fontsize=8.5) * inches,
            "rate": rate_w * inches, "claim": claim_w * inches}


def _width_needed(fig: Any, rows: list[dict[str, Any]], headers: list[tuple[float, str]], per: str,
                  baseline: str, has_claims: bool) -> float:
    """The figure width (inches) at which every column fits whole beside axes of AXES_MIN_IN."""
    w = _widths(fig, rows, headers, per, baseline, has_claims)
    gap = GAP * WIDTH_IN
    return (NAME_X * WIDTH_IN + w["names"] + gap + w["count"] + gap + AXES_MIN_IN + gap
            + w["rate"] + (gap + w["claim"] if has_claims else 0.0) + RIGHT_MARGIN * WIDTH_IN)


def _columns(fig: Any, rows: list[dict[str, Any]], headers: list[tuple[float, str]], per: str,
             baseline: str, has_claims: bool) -> dict[str, Any]:
    """The text columns, measured so that none runs into the next and none runs past the
    figure's edge: the names, the counts, the axes between them and the rates, the rates, the
    claims, each written whole (the figure is made wide enough: ``_width_needed``). Fractions
    of the figure's width."""
    inches = fig.get_size_inches()[0]
    w = {k: v / inches for k, v in _widths(fig, rows, headers, per, baseline, has_claims).items()}
    gap, margin = GAP * WIDTH_IN / inches, RIGHT_MARGIN * WIDTH_IN / inches
    count_x = NAME_X + w["names"] + gap + w["count"]
    left = count_x + gap
    claim_w = w["claim"] if has_claims else -gap  # a document without claims: no such column
    right = max(1 - margin - claim_w - gap - w["rate"] - gap, left + AXES_MIN_IN / inches)
    rate_x = right + gap
    claim_x = rate_x + w["rate"] + gap
    return {"count_x": count_x, "left": left, "right": right, "rate_x": rate_x,
            "claim_x": claim_x, "claim_head": f"claim vs {baseline}: decision", "per": per}


def _draw_rows(fig: Any, ax: Any, rows: list[dict[str, Any]], headers: list[tuple[float, str]],
               cols: Mapping[str, Any], baseline: str, has_claims: bool, arrow: float) -> None:
    """The group headers, then each row (its rate, name, count, rate and claim texts), then
    the column heads."""
    from matplotlib.transforms import blended_transform_factory

    lab = blended_transform_factory(fig.transFigure, ax.transData)
    text: dict[str, Any] = {"transform": lab, "va": "center", "fontsize": 9}
    for hy, group in headers:
        ax.text(NAME_X, hy, f"varies {group}", **text, ha="left", fontweight="bold",
                color="#333333")
    for r in rows:
        style = DECISION_STYLE[r["decision"]]
        colour, yy = style["color"], r["y"]
        r["artist"] = draw_rate(ax, yy, r, colour, style["marker"], arrow, ROW_LARGE)
        ax.text(NAME_X + (0.0 if r["arm"] == baseline else 0.012), yy, r["arm"], **text, ha="left",
                fontweight="bold" if r["arm"] == baseline else "normal")
        ax.text(cols["count_x"], yy, f"{r['failures']}/{r['n_valid']}", **text, ha="right",
                color="#555555")
        ax.text(cols["rate_x"], yy, r["rate_text"], **text, ha="left")
        if has_claims:
            ax.text(cols["claim_x"], yy, r["claim_text"], **text, ha="left",
                    color=colour if r["claims"] else "#555555")
    head = {**text, "va": "bottom", "fontsize": 8.5, "color": "#555555"}
    hy = -0.75
    ax.text(cols["count_x"], hy, "failed/valid", **head, ha="right")
    ax.text(cols["rate_x"], hy, f"per {cols['per']} (95% CI)", **head, ha="left")
    if has_claims:
        ax.text(cols["claim_x"], hy, cols["claim_head"], **head, ha="left")


def draw_band(ax: Any, base: Mapping[str, Any], xmin: float) -> None:
    """The baseline's interval behind the rows, and its estimate as a dashed line."""
    ax.axvspan(base["lo"] if base["lo"] > 0 else xmin, base["hi"], color=BAND, alpha=0.2,
               lw=0, zorder=0)
    if base["estimate"] > 0:
        ax.axvline(base["estimate"], color=BAND, lw=1.2, ls="--", zorder=1)


def legend_handles(used: set[str], has_claims: bool, zero: bool, together: str = "") -> list[Any]:
    """A forest plot's legend: a marker per claim decision drawn (``together`` after each, e.g.
    " (all GPUs together)"), or the plain marker of a document without claims; the open
    marker where an arm had no failure."""
    from matplotlib.lines import Line2D

    handles: list[Any] = []
    if has_claims:
        handles += [Line2D([], [], linestyle="none", marker=s["marker"], color=s["color"], markersize=7,
                           label=s["label"] + (together if d != "no_claim" else ""))
                    for d, s in DECISION_STYLE.items() if d in used]
    else:  # a document without claims: every row is drawn in the no-claim style
        handles.append(Line2D([], [], linestyle="none", marker=DECISION_STYLE["no_claim"]["marker"],
                              color=DECISION_STYLE["no_claim"]["color"], markersize=7,
                              label="rate with its exact 95% interval"))
    if zero:
        open_marker = "o" if has_claims else DECISION_STYLE["no_claim"]["marker"]
        handles.append(Line2D([], [], linestyle="none", marker=open_marker, markerfacecolor="white",
                              markeredgecolor="#333333", markeredgewidth=1.5, markersize=7,
                              label="no failure: upper bound (arrow toward 0)"))
    return handles


def band_handle(label: str) -> Any:
    from matplotlib.patches import Patch

    return Patch(facecolor=BAND, alpha=0.35, label=label)


def place_legend(fig: Any, handles: list[Any], legend_rows: int, bottom: float) -> None:
    """The legend below the axes, from the left margin, in one row or in rows of three."""
    fig.legend(handles=handles, loc="lower left", bbox_to_anchor=(NAME_X - 0.005, bottom),
               ncol=len(handles) if legend_rows == 1 else 3, fontsize=8.5, frameon=False,
               handletextpad=0.3, columnspacing=1.2, borderaxespad=0.2)


NOTE_SIZE, NOTE_LINE_IN = 8.5, 0.16


def note_lines(fig: Any, left_out: list[str]) -> list[str]:
    """What the plot leaves out ("Not drawn: ..."), whole, in lines as wide as the figure
    (measured on its renderer: none runs past its right edge); no line where nothing is."""
    if not left_out:
        return []
    room = 1 - 2 * NAME_X
    lines: list[str] = []
    line = ""
    for word in ("Not drawn: " + "; ".join(left_out)).split(" "):
        wider = f"{line} {word}" if line else word
        if line and text_width(fig, [wider], fontsize=NOTE_SIZE) > room:
            lines.append(line)
            line = word
        else:
            line = wider
    return [*lines, line]


def note_height(lines: list[str]) -> float:
    """The inches the note's lines take at the bottom of a figure (0 for none)."""
    return 0.1 + NOTE_LINE_IN * len(lines) if lines else 0.0


def note_left_out(fig: Any, lines: list[str], fig_h: float) -> None:
    """The note's lines (``note_lines``) at the bottom of the figure."""
    if lines:
        fig.text(NAME_X, 0.08 / fig_h, "\n".join(lines), fontsize=NOTE_SIZE, ha="left",
                 va="bottom", color="#555555", linespacing=1.25)


def forest_plot(doc: Result | Mapping[str, Any], png: Path, svg: Path | None = None) -> bool:
    """Write the forest plot (PNG, and SVG beside it); False if no arm can be drawn."""
    made = forest_figure(doc)
    if made is None:
        return False
    fig, _ = made
    # Twice GitHub's width in pixels, so it stays sharp when shown at ~900 px.
    save(fig, png, svg)
    return True
