"""The times of a timed case's arms: one row per arm, every value its trials measured (a dot
each, the mean of one launch over the driver's loops), each trial's time (the median of its
values, a ring) and the arm's geometric mean (a bar), against the baseline's band (its trials'
times, lowest to highest) and the margins its timed claims decide against. The right column
gives each arm's ratio to the baseline (95% CI) and the decision of its claim.

Drawn from the document alone (gpurepro.analyze.timing, the numbers the claims are decided
on); byte-stable through figure.save.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..case.model import TIMED_KINDS
from ..model.outcomes import EVIDENCE
from ..model.result import ClaimDecision, Result, as_result
from .figure import save
from .timed import ratio_to_baseline

# What other modules use; the rest is this module's own.
__all__ = ["times_headline", "times_plot"]

ROW_H = 0.42  # inches per arm


def _values(r: Result, arm: str) -> list[list[float]]:
    """Each valid timed trial's values, in seconds (as its driver's record observed them)."""
    out = []
    for t in r.trials:
        timing = (t.record.get("observations") or {}).get("timing") or {}
        vals = [float(v) for v in timing.get("values") or []
                if isinstance(v, (int, float)) and v > 0 and math.isfinite(v)]
        if t.arm == arm and t.outcome in EVIDENCE and vals:
            out.append(vals)
    return out


def times_figure(doc: Result | Mapping[str, Any]) -> Any | None:
    """The figure, or None where no arm measured a time."""
    import statistics

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt


    r = as_result(doc)
    base = r.case.baseline
    arms = [a for a in r.arms if _values(r, a)]
    if base not in arms:
        return None
    claims: dict[str | None, ClaimDecision] = {c.arm: c for c in r.claims
                                               if c.kind in TIMED_KINDS and c.reference == base}
    fig, ax = plt.subplots(figsize=(9, 1.2 + ROW_H * len(arms)))
    base_times = [statistics.median(v) * 1e6 for v in _values(r, base)]
    ax.axvspan(min(base_times), max(base_times), color="#d9e6f2", zorder=0,
               label=f"{base}: its trials, lowest to highest")
    ref = math.exp(statistics.fmean(math.log(x) for x in base_times))
    margins = sorted({(str(c.kind), float(c.margin or 0)) for c in claims.values()})
    for kind, m in margins:
        edges = [ref * (1 + m)] if kind == "slower" else [ref / (1 + m)] if kind == "faster" else \
            [ref / (1 + m), ref * (1 + m)]
        for x in edges:
            ax.axvline(x, color="#888888", lw=0.8, ls="--" if kind == "same" else ":", zorder=1)
    labels = []
    for row, arm in enumerate(reversed(arms)):
        trials = _values(r, arm)
        for i, vals in enumerate(trials):
            y = row + (i - (len(trials) - 1) / 2) * min(0.5 / max(len(trials), 1), 0.06)
            ax.scatter([v * 1e6 for v in vals], [y] * len(vals), s=3, color="#999999", zorder=2,
                       linewidths=0)
            ax.scatter([statistics.median(vals) * 1e6], [y], s=14, facecolors="none",
                       edgecolors="#1f4e79", linewidths=0.7, zorder=3)
        geo = math.exp(statistics.fmean(math.log(statistics.median(v)) for v in trials)) * 1e6
        ax.plot([geo, geo], [row - 0.3, row + 0.3], color="#c0392b", lw=1.6, zorder=4)
        numbers = ratio_to_baseline(r, arm) if arm != base else None
        claim = claims.get(arm)
        text = "baseline" if arm == base else (
            f"{numbers['ratio']:.3f}× ({numbers['ratio_ci'][0]:.3f}–{numbers['ratio_ci'][1]:.3f})"
            if numbers else "–")
        labels.append(text + (f"  {claim.decision}" if claim and claim.decision else ""))
    ax.set_yticks(range(len(arms)), list(reversed(arms)), fontsize=9)
    ax.set_ylim(-0.6, len(arms) - 0.4)
    right = ax.twinx()
    right.set_ylim(ax.get_ylim())
    right.set_yticks(range(len(arms)), labels, fontsize=8.5)
    ax.set_xlabel("time per launch (µs): dots, every value; rings, each trial; bar, the arm's "
                  "geometric mean", fontsize=9)
    ax.set_title(f"{r.case.name}: times against {base} (band: its trials; dashed: the "
                 f"'same' margins, dotted: 'slower'/'faster')", fontsize=9.5)
    ax.grid(axis="x", color="#eeeeee", zorder=0)
    fig.tight_layout()
    return fig


def times_headline(doc: Result | Mapping[str, Any]) -> str:
    """The picture in words (its alt text): each arm's ratio to the baseline."""
    r = as_result(doc)
    base = r.case.baseline
    parts = [f"{a} {n['ratio']:.3f}x" for a in r.arms if a != base
             for n in [ratio_to_baseline(r, a)] if n]
    return f"Times per launch against {base}: " + ", ".join(parts) + "."


def times_plot(doc: Result | Mapping[str, Any], png: Path, svg: Path | None = None) -> bool:
    """Write the times plot (PNG, and SVG beside it); False for a document with no timed arm."""
    fig = times_figure(doc)
    if fig is None:
        return False
    save(fig, png, svg)
    return True
