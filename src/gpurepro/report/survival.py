"""The survival plot: Kaplan-Meier curves of exposure to failure per arm, and its headline
in words (the alt text).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..model.result import Result, Survival, as_result
from .figure import save
from .forest import coarse_arms
from .numbers import fmt


def _survival_curves(r: Result) -> tuple[list[str], list[str], list[str]]:
    """The survival plot's arms: (drawn, survivors, coarse). Arms that never failed would lie
    on top of each other along 1.0: they are named in the legend instead of drawn. Arms whose
    counter is too coarse to be an exposure axis (a once-a-second printout) would draw crashes
    at 1 cycle: left out, and named."""
    curves = [arm for arm, s in r.arms.items() if s.time_to_failure.exposure]
    survivors = [a for a in curves if not r.arms[a].failures]
    too_coarse = coarse_arms(r)
    coarse = [a for a in curves if a not in survivors and a in too_coarse]
    drawn = [a for a in curves if a not in survivors and a not in coarse]
    return drawn, survivors, coarse


def survival_headline(doc: Result | Mapping[str, Any]) -> str:
    """The survival plot in words (its alt text): which arms fail, and how much exposure the
    baseline and each other failing arm take to fail (the Kaplan-Meier median)."""
    r = as_result(doc)
    unit, baseline, summary = r.case.exposure_unit, r.case.baseline, r.arms
    drawn, survivors, coarse = _survival_curves(r)
    curves = _curves(r)

    def median(arm: str, short: bool = False) -> str:
        km = curves[arm]
        if km.median is None:
            return "median not reached"
        if short:
            return f"median {fmt(km.median)}"
        ci = km.median_ci95
        return (f"median {fmt(km.median)} {unit} to failure"
                + (f" (95% CI {fmt(ci[0])}–{fmt(ci[1]) if ci[1] is not None else '∞'})"
                   if ci and ci[0] is not None else ""))

    def counts(arm: str) -> str:
        return f"{summary[arm].failures}/{summary[arm].n_valid} failed"

    parts = [f"Kaplan–Meier survival, {unit} to failure on a log axis: "
             f"{len(drawn)} of {len(summary)} arms drawn"]
    named = "the baseline" + ("" if baseline == "baseline" else f" {baseline}")
    if baseline in drawn:
        parts.append(f"{named} {counts(baseline)}, {median(baseline)}")
    elif baseline in summary:
        parts.append(f"{named} not drawn ("
                     + ("no failure" if baseline in survivors else "counter too coarse"
                        if baseline in coarse else "no exposure counted") + ")")
    others = [f"{a} ({counts(a)}, {median(a, short=True)})" for a in drawn if a != baseline]
    if others:
        parts.append("also failing: " + ", ".join(others))
    if survivors:
        parts.append(f"no failure ({'named in the legend' if len(survivors) > 1 else 'in the legend'}): "
                     + ", ".join(survivors))
    if coarse:
        parts.append("failing but not drawn, the exposure counter too coarse: "
                     + ", ".join(f"{a} ({counts(a)})" for a in coarse))
    return "; ".join(parts) + "."


def _curves(r: Result) -> dict[str, Survival]:
    return {arm: s.time_to_failure.exposure for arm, s in r.arms.items()
            if s.time_to_failure.exposure}


def draws_survival(doc: Result | Mapping[str, Any]) -> bool:
    """Whether a survival plot says anything for this document, by the kind of its outcomes:
    a failure that comes after some exposure (a crash, a hang, an error late in a trial) has a
    time to failure to draw; a wrong answer (a case that checks each trial's output) and a
    failure at the first unit of exposure (a call that fails when first made) have none, and
    the forest plot alone shows them."""
    r = as_result(doc)
    if r.case.check is not None:
        return False
    curves = _curves(r)
    failing = [arm for arm in curves if r.arms[arm].failures]
    return any(x > 1 for arm in failing for x, y in curves[arm].curve if y < 1)


def plot(doc: Result | Mapping[str, Any], path: Path, svg: Path | None = None) -> bool:
    """Kaplan-Meier survival of exposure-to-failure per arm (PNG, and SVG beside it when
    given); False if there is nothing to plot."""
    r = as_result(doc)
    if not draws_survival(r):
        return False
    curves = _curves(r)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    unit = r.case.exposure_unit
    fig, ax = plt.subplots(figsize=(8, 6), dpi=110)
    colours = [plt.get_cmap("tab10")(i) for i in range(10)]
    styles = ("-", "--", ":", "-.")
    drawn, survivors, coarse = _survival_curves(r)
    for i, arm in enumerate(drawn):
        km = curves[arm]
        xs = [max(x, 1.0) for x, _ in km.curve]
        ys = [y for _, y in km.curve]
        n = r.arms[arm].n_valid
        ax.step(xs, ys, where="post", label=f"{arm} (n={n})", color=colours[i % len(colours)],
                linestyle=styles[(i // len(colours)) % len(styles)], linewidth=1.6)
    if survivors:
        ax.plot([], [], " ", label="no failure: " + ", ".join(survivors))
    if coarse:
        ax.plot([], [], " ", label="not drawn (coarse counter): " + ", ".join(coarse))
    ax.set_xscale("log")
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel(f"{unit} until failure (log scale; survivors censored at their exposure)")
    ax.set_ylabel("fraction of trials not yet failed")
    ax.set_title(f"{r.case.name}: Kaplan–Meier per arm")
    ax.grid(True, which="both", alpha=0.3)
    # The legend below the axes, so it hides no curve.
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, frameon=False)
    fig.tight_layout()
    save(fig, path, svg, dpi=110)
    return True
