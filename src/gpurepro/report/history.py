"""A case's history: every committed run of it, oldest first, with what changed between them.

``history(docs, paths)`` reads result documents of one case (each its own run: a driver, a GPU,
a toolchain, a commit) and gives a ``History``: per run its environment, per arm its failure
rate with the exact interval as recorded (or, where a trial is the unit, its share of failing
trials), per timed pair (an arm and the reference its timed claims name) the ratio of the
geometric means of their trial times with its 95 % Welch interval, and every claim's decision
in every run. ``markdown`` and ``terminal`` render it as tables, ``plot`` as a picture.

The regression check sets the newest run against an earlier one (the run just before it that
has the arm, or the first run, or the newest earlier run on the same GPU; ``against``):

- a failure rate regressed where the newest run's rate is above ``rate_factor`` times the
  earlier run's and the exact conditional rate-ratio test (``stats.rate_ratio``; Fisher's exact
  test on failing trials where a trial is the unit, or an arm's exposure cannot place its
  failures) gives p below alpha over the number of arms compared (Bonferroni);
- a time ratio regressed where the arm became slower against its reference by more than
  ``time_factor``: the difference of the two runs' log ratios, each the difference of mean log
  trial times, tested one-sided above log(time_factor) with Welch's standard error and
  Satterthwaite's degrees of freedom, at alpha over the number of pairs compared.

``gpurepro history --fail-on-regression`` exits 1 when any did, so CI can gate on it. Every
figure is derived from the documents alone, in a fixed order.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..analyze.timing import arm_times
from ..errors import CompareError
from ..model.result import ClaimDecision, Result, as_result
from . import gfm
from .compare import arm_run, arm_test, design, labels
from .comparison import ArmRun
from .figure import save
from .numbers import fmt, fmt_ci, fmt_p, per_label, per_superscript
from .tables import code, escape, table

# What other modules use; the rest is this module's own.
__all__ = [
    "Check", "figure", "history", "markdown", "MARKERS", "plot", "Rate", "Run", "terminal",
    "TIMED_KINDS"
]

AGAINST = ("previous", "first", "same-gpu")
TIMED_KINDS = ("slower", "faster", "same")


@dataclass(frozen=True)
class Run:
    """One document of the history: where and how its run ran."""

    label: str
    path: str
    started_at: str
    gpu: str
    driver: str
    toolchain: dict[str, str]
    commit: str
    design: str
    trials: int
    status: str
    complete: bool


@dataclass(frozen=True)
class Rate:
    """One arm in one run: its failures, valid trials and exposure, and the rate (per trial:
    the share of failing trials) with its exact 95 % interval; None where it has none."""

    failures: int
    n_valid: int
    exposure: float
    estimate: float | None
    ci95: tuple[float | None, float | None] | None
    per_trial: bool


@dataclass(frozen=True)
class TimeRatio:
    """An arm's time against its reference in one run: the ratio of the geometric means of
    their trial times with its 95 % Welch interval, and what the regression test needs."""

    ratio: float
    ci95: tuple[float, float]
    n_arm: int
    n_reference: int
    log_ratio: float
    variance: float  # of log_ratio: s_arm^2/n_arm + s_ref^2/n_ref
    df_terms: tuple[float, float]  # (s^2/n)^2/(n-1) of each side, for Satterthwaite's df


@dataclass(frozen=True)
class Check:
    """One comparison of the regression check: the newest run against an earlier one."""

    kind: str  # "rate" (in exposure), "share" (of failing trials) or "time" (a time ratio)
    name: str  # the arm, or "arm / reference"
    run: str
    against: str
    before: float | None
    after: float | None
    factor: float
    test: str
    p_value: float | None
    alpha: float  # the level each comparison is held at (alpha over the comparisons)
    regressed: bool


@dataclass
class History:
    case: str
    unit: str
    per: float
    baseline: str
    runs: list[Run]
    arms: list[str]
    rates: dict[str, list[Rate | None]]
    pairs: list[str]
    times: dict[str, list[TimeRatio | None]]
    claims: list[str]
    decisions: dict[str, list[str | None]]
    same_toolchain: dict[str, str]
    against: str
    checks: list[Check] = field(default_factory=list)

    @property
    def regressions(self) -> list[Check]:
        return [c for c in self.checks if c.regressed]

    def as_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["regressions"] = [asdict(c) for c in self.regressions]
        return out


# ---------------------------------------------------------------- reading the documents


def _gpu(result: Result) -> str:
    gpus = result.environment.gpu.gpus
    names = result.environment.gpu.names
    return ", ".join(names) + (f" × {len(gpus)}" if len(gpus) > 1 else "") if names else "no GPU"


def _run(label: str, result: Result, path: str | Path) -> Run:
    repo = result.environment.repository
    toolchain = {str(k): str(v) for k, v in sorted(result.toolchain.resolved.items())}
    return Run(label=label, path=str(path), started_at=str(result.started_at or "–"),
               gpu=_gpu(result), driver=str(result.environment.gpu.driver_version or "–"),
               toolchain=toolchain,
               commit=str(repo.commit or "–")[:12] + (" (dirty)" if repo.dirty else ""),
               design=design(result), trials=len(result.trials),
               status=str((result.verdict.status if result.verdict else None) or "–"),
               complete=result.completion.complete is not False)


def _rate(result: Result, arm: str) -> tuple[Rate | None, ArmRun | None]:
    r = arm_run(result, arm)
    if r is None or not r.n_valid:
        return None, r
    unit_trial = r.per_trial or bool(r.coarse_failures) or not r.exposure
    if unit_trial:
        return Rate(r.failures, r.n_valid, r.exposure, r.proportion, r.proportion_ci95, True), r
    return Rate(r.failures, r.n_valid, r.exposure, r.rate, r.rate_ci95, False), r


def _timed_pairs(result: Result) -> list[tuple[str, str]]:
    pairs = []
    for c in result.claims:
        if c.kind in TIMED_KINDS and c.reference:
            pair = (str(c.arm), str(c.reference))
            if pair not in pairs:
                pairs.append(pair)
    return pairs


def _time_ratio(result: Result, arm: str, reference: str) -> TimeRatio | None:
    from scipy import stats as sps

    records = [t.record for t in result.trials]  # the drivers' records, with their times
    a = [math.log(t) for t in arm_times(records, arm)]
    r = [math.log(t) for t in arm_times(records, reference)]
    if len(a) < 2 or len(r) < 2:
        return None
    va, vr = statistics.variance(a) / len(a), statistics.variance(r) / len(r)
    diff = statistics.fmean(a) - statistics.fmean(r)
    ci = sps.ttest_ind(a, r, equal_var=False).confidence_interval(0.95)
    return TimeRatio(ratio=math.exp(diff), ci95=(math.exp(ci.low), math.exp(ci.high)),
                     n_arm=len(a), n_reference=len(r), log_ratio=diff, variance=va + vr,
                     df_terms=(va * va / (len(a) - 1), vr * vr / (len(r) - 1)))


def _decision(claim: ClaimDecision) -> str:
    d = str(claim.decision or "not_decided")
    return f"{d} (exploratory)" if claim.family == "exploratory" else d


# ---------------------------------------------------------------- the history


def history(docs: Sequence[Result | Mapping[str, Any]], paths: Sequence[str | Path],
            arms: Sequence[str] | None = None, against: str = "previous",
            rate_factor: float = 1.0, time_factor: float = 1.05,
            alpha: float = 0.05) -> History:
    """The runs of one case, oldest first (``arms``: the arms shown and checked, default the
    newest run's), and the newest run checked against an earlier one (module docstring)."""
    if len(docs) < 2:
        raise CompareError("history needs at least two result documents of the case"
                           + (f" ({paths[0]} is the only one)" if paths else ""))
    for doc, path in zip(docs, paths, strict=True):
        if isinstance(doc, Result):
            continue
        if not str(doc.get("schema", "")).startswith("gpurepro/result") \
                or not isinstance(doc.get("case"), Mapping) or "summary" not in doc:
            raise CompareError(f"{path} is not a gpurepro result document")
    results = [as_result(doc) for doc in docs]  # each document typed once
    cases = sorted({r.case.name for r in results})
    if len(cases) > 1:
        raise CompareError(f"history reads the documents of one case; these are of {', '.join(cases)}")
    if against not in AGAINST:
        raise CompareError(f"against {against!r}: one of {', '.join(AGAINST)}")
    if rate_factor <= 0 or time_factor <= 0 or not 0 < alpha < 1:
        raise CompareError("the factors must be above 0 and alpha between 0 and 1")
    order = sorted(range(len(results)), key=lambda i: (str(results[i].started_at or ""),
                                                       Path(paths[i]).name))
    results = [results[i] for i in order]
    paths = [paths[i] for i in order]
    names = labels(len(results))
    runs = [_run(n, r, p) for n, r, p in zip(names, results, paths, strict=True)]
    newest = results[-1]
    if arms:
        unknown = [a for a in arms if not any(a in r.arms for r in results)]
        if unknown:
            raise CompareError(f"no run of {cases[0]} has the arm(s) {', '.join(unknown)}")
        shown = list(arms)
    else:
        shown = list(newest.arms)
    rates: dict[str, list[Rate | None]] = {}
    raw: dict[str, list[ArmRun | None]] = {}
    for arm in shown:
        got = [_rate(r, arm) for r in results]
        rates[arm] = [g[0] for g in got]
        raw[arm] = [g[1] for g in got]
    pairs = [p for p in _timed_pairs(newest) if not arms or p[0] in shown]
    times = {f"{a} / {ref}": [_time_ratio(r, a, ref) for r in results] for a, ref in pairs}
    claims: list[str] = []
    for r in reversed(results):  # the newest run's claims first, then older ones' in turn
        claims += [c.name for c in r.claims if c.name not in claims]
    decisions = {c: [next((_decision(x) for x in r.claims if x.name == c), None)
                     for r in results] for c in claims}
    pins = [r.toolchain for r in runs]
    same = {k: v for k, v in pins[-1].items() if all(p.get(k) == v for p in pins)}
    out = History(case=cases[0], unit=str(newest.case.exposure_unit),
                  per=float(newest.case.exposure_per or 0), baseline=newest.case.baseline,
                  runs=runs, arms=shown, rates=rates, pairs=list(times), times=times, claims=claims,
                  decisions=decisions, same_toolchain=same, against=against)
    out.checks = _check(out, raw, rate_factor, time_factor, alpha)
    return out


def _earlier(h: History, have: Sequence[Any]) -> int | None:
    """The index of the earlier run the newest is set against, among those with a value."""
    last = len(h.runs) - 1
    earlier = [i for i in range(last) if have[i] is not None]
    if h.against == "same-gpu":
        earlier = [i for i in earlier if h.runs[i].gpu == h.runs[last].gpu]
    if not earlier:
        return None
    return earlier[0] if h.against == "first" else earlier[-1]


def _check(h: History, raw: Mapping[str, list[ArmRun | None]], rate_factor: float,
           time_factor: float, alpha: float) -> list[Check]:
    last = len(h.runs) - 1
    rate_pairs = []
    for arm in h.arms:
        if h.rates[arm][last] is None:
            continue
        i = _earlier(h, h.rates[arm])
        if i is not None:
            rate_pairs.append((arm, i))
    checks = []
    for arm, i in rate_pairs:
        new, old = raw[arm][last], raw[arm][i]
        assert new is not None and old is not None
        test = arm_test(new, old)
        p = test.p_value if test is not None else None
        each = alpha / len(rate_pairs)
        # The two runs in the test's own unit: rates in exposure, or shares of failing trials
        # where Fisher's test compares trials (a trial is the unit, or a counter too coarse).
        share = test is not None and test.odds
        before, after = (old.proportion, new.proportion) if share else (old.rate, new.rate)
        worse = (after or 0.0) > rate_factor * (before or 0.0)
        checks.append(Check("share" if share else "rate", arm, h.runs[last].label,
                            h.runs[i].label, before, after, rate_factor,
                            (test.test if test is not None else None) or "–", p, each,
                            bool(worse and p is not None and p < each)))
    time_pairs = []
    for name in h.pairs:
        if h.times[name][last] is None:
            continue
        i = _earlier(h, h.times[name])
        if i is not None:
            time_pairs.append((name, i))
    from scipy import stats as sps

    for name, i in time_pairs:
        new_t, old_t = h.times[name][last], h.times[name][i]
        assert new_t is not None and old_t is not None
        variance = new_t.variance + old_t.variance
        terms = sum(new_t.df_terms) + sum(old_t.df_terms)
        df = variance * variance / terms if terms > 0 else float("inf")
        shift = new_t.log_ratio - old_t.log_ratio - math.log(time_factor)
        if variance > 0:
            p = float(sps.t.sf(shift / math.sqrt(variance), df))
        else:
            p = 0.0 if shift > 0 else 1.0
        each = alpha / len(time_pairs)
        checks.append(Check("time", name, h.runs[last].label, h.runs[i].label, old_t.ratio,
                            new_t.ratio, time_factor,
                            "Welch's t on the change of log time ratio (one-sided)", p, each,
                            p < each))
    return checks


# ---------------------------------------------------------------- rendering


def _cell_rate(r: Rate | None) -> str:
    if r is None:
        return "–"
    if r.per_trial:
        return f"{r.failures}/{r.n_valid}" + (f" {fmt_ci(list(r.ci95))}" if r.ci95 else "")
    return f"{fmt(r.estimate)} {fmt_ci(list(r.ci95))}" if r.ci95 else fmt(r.estimate)


def _cell_time(t: TimeRatio | None) -> str:
    return "–" if t is None else f"{t.ratio:.3f} [{t.ci95[0]:.3f}, {t.ci95[1]:.3f}]"


SHORT = {"supported": "S", "contradicted": "C", "not_decided": "?", "open": "?"}


def _short(decision: str | None) -> str:
    if decision is None:
        return ""
    base = decision.split(" ")[0]
    mark = SHORT.get(base, "?")
    return mark.lower() if "exploratory" in decision else mark


def _varying_pins(h: History) -> list[str]:
    keys: list[str] = []
    for r in h.runs:
        keys += [k for k in r.toolchain if k not in keys and k not in h.same_toolchain]
    return keys


def _check_sentence(c: Check, h: History) -> str:
    what = {"rate": f"failure rate of `{c.name}`", "share": f"share of failing trials of `{c.name}`",
            "time": f"time ratio `{c.name}`"}[c.kind]
    change = f"{fmt(c.before)} → {fmt(c.after)}"
    verdict = ("**regressed**" if c.regressed else "no regression")
    return (f"{escape(what, 'prose')} {escape(c.run)} against {escape(c.against)}: {escape(change)}, "
            f"factor {c.factor:g}, p = {fmt_p(c.p_value)} against {fmt_p(c.alpha)} "
            f"({escape(c.test)}): {verdict}")


def per_unit(h: History, picture: bool = False) -> str:
    """'per 10^6 cycles' ('10⁶' in a picture), or 'per call' where the unit is one call."""
    if h.per == 1:
        return f"per {h.unit[:-1] if h.unit.endswith('s') else h.unit}"
    return f"per {(per_superscript if picture else per_label)(h.per)} {h.unit}"


def markdown(h: History) -> str:
    out = [f"## gpurepro history: {code(h.case)} ({len(h.runs)} runs)\n"]
    pins = _varying_pins(h)
    out += table(["run", "started", "GPU", "driver", *[escape(p) for p in pins], "commit", "design",
                  "trials", "verdict"],
                 [[escape(r.label) + ("" if r.complete else " (stopped)"), escape(r.started_at),
                   escape(r.gpu), escape(r.driver), *[escape(r.toolchain.get(p, "–")) for p in pins],
                   code(r.commit), escape(r.design), str(r.trials), escape(r.status.replace("_", " "))]
                  for r in h.runs])
    out.append("")
    if h.same_toolchain:
        out.append("The same in every run: " + escape(", ".join(
            f"{k} {v}" for k, v in h.same_toolchain.items())) + ".\n")
    out.append("Documents: " + "; ".join(f"{escape(r.label)} {code(Path(r.path).name)}"
                                          for r in h.runs) + ".\n")
    per_trial = any(r is not None and r.per_trial for rs in h.rates.values() for r in rs)
    out.append(f"### Failures per arm: {escape(per_unit(h))} (exact 95% CI)"
               + ("; failing / valid trials (exact 95% CI of the share) where a trial is the unit"
                  if per_trial else "") + "\n")
    out += table(["run", *[code(a) for a in h.arms]],
                 [[escape(r.label), *[escape(_cell_rate(h.rates[a][i])) for a in h.arms]]
                  for i, r in enumerate(h.runs)])
    out.append("")
    if h.pairs:
        out.append("### Time ratios: arm / reference, geometric means of trial times (95% CI)\n")
        out += table(["run", *[code(p) for p in h.pairs]],
                     [[escape(r.label), *[escape(_cell_time(h.times[p][i])) for p in h.pairs]]
                      for i, r in enumerate(h.runs)])
        out.append("")
    if h.claims:
        out.append("### Claims: S supported, C contradicted, ? not decided (lower case: exploratory; "
                   "blank: not in that run)\n")
        out += table(["claim", *[escape(r.label) for r in h.runs]],
                     [[code(c), *[_short(d) for d in h.decisions[c]]] for c in h.claims])
        out.append("")
    newest = h.runs[-1].label
    out.append(f"### Regression check: {escape(newest)} against "
               + {"previous": "the run before it", "first": "the first run",
                  "same-gpu": "the run before it on the same GPU"}[h.against] + "\n")
    if not h.checks:
        out.append("Nothing to check: no earlier run has the newest run's arms with valid trials.\n")
    for c in h.checks:
        out.append(f"- {_check_sentence(c, h)}")
    if h.checks:
        n = len(h.regressions)
        out.append("\n" + (f"**{n} regression(s)** (`--fail-on-regression` exits 1)." if n
                           else "No regression."))
    # Parsed as GitHub parses it, nothing live: a document string that would be is refused.
    return gfm.check("\n".join(out) + "\n", f"history of {h.case!r}")


def terminal(h: History) -> Any:
    """The history as rich tables (what a terminal shows), one renderable."""
    from rich.console import Group
    from rich.table import Table

    runs = Table(title=f"{h.case}: {len(h.runs)} runs", title_justify="left")
    for head in ("run", "started", "GPU", "driver", "commit", "design", "trials", "verdict"):
        runs.add_column(head)
    for r in h.runs:
        runs.add_row(r.label, r.started_at, r.gpu, r.driver, r.commit, r.design, str(r.trials),
                     r.status.replace("_", " "))
    rates = Table(title=f"failures {per_unit(h)} (95% CI)", title_justify="left")
    rates.add_column("run")
    for a in h.arms:
        rates.add_column(a, overflow="fold")
    for i, r in enumerate(h.runs):
        rates.add_row(r.label, *[_cell_rate(h.rates[a][i]) for a in h.arms])
    parts: list[Any] = [runs, rates]
    if h.pairs:
        times = Table(title="time ratios, arm / reference (95% CI)", title_justify="left")
        times.add_column("run")
        for p in h.pairs:
            times.add_column(p, overflow="fold")
        for i, r in enumerate(h.runs):
            times.add_row(r.label, *[_cell_time(h.times[p][i]) for p in h.pairs])
        parts.append(times)
    checks = Table(title=f"regression check: {h.runs[-1].label} against {h.against}",
                   title_justify="left")
    for head in ("what", "against", "before", "after", "p", "level", "regressed"):
        checks.add_column(head)
    for c in h.checks:
        checks.add_row(f"{c.kind} {c.name}", c.against, fmt(c.before), fmt(c.after),
                       fmt_p(c.p_value), fmt_p(c.alpha), "yes" if c.regressed else "no")
    parts.append(checks)
    return Group(*parts)


# ---------------------------------------------------------------- the plot

COLOURS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#56B4E9", "#E69F00", "#000000", "#F0E442"]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]


def _style(k: int) -> tuple[str, str]:
    """The k-th series' colour and marker: no two of the first 64 alike."""
    return COLOURS[k % len(COLOURS)], MARKERS[(k + k // len(COLOURS)) % len(MARKERS)]


def figure(h: History) -> Any:
    """Each shown arm's rate (or failing share) run by run, and each time ratio in a panel
    below where the case is timed; None where nothing can be drawn."""
    points = [r for a in h.arms for r in h.rates[a] if r is not None and r.ci95]
    # One axis, one unit: rates in exposure, or (where every arm's trials are the unit) shares
    # of failing trials; a run whose arm is counted the other way is left out of the picture.
    per_trial = bool(points) and all(r.per_trial for r in points)
    drawn = {a: [r if r is not None and r.ci95 and r.per_trial == per_trial else None
                 for r in h.rates[a]] for a in h.arms}
    drawable = [a for a in h.arms if any(drawn[a])]
    if h.pairs and not any(r.estimate for a in drawable for r in drawn[a] if r is not None):
        drawable = []  # a timed case whose arms never failed: its times are the picture
    if not drawable and not h.pairs:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = (1 if drawable else 0) + (1 if h.pairs else 0)
    series = len(drawable) + len(h.pairs)
    legend_rows = math.ceil(series / 3)
    ticks_in = 0.9 if len(h.runs) > 8 else 0.45  # the runs' names and dates, turned when many
    fig_h = 0.7 + 3.0 * panels + 0.25 * legend_rows + ticks_in + 0.2
    fig, axes = plt.subplots(panels, 1, figsize=(9.0, fig_h), dpi=100, squeeze=False, sharex=True)
    x = list(range(len(h.runs)))
    handles = []
    k = 0
    ax_row = 0
    if drawable:
        ax = axes[ax_row][0]
        for a in drawable:
            colour, marker = _style(k)
            offset = (k - (len(drawable) - 1) / 2) * 0.06
            pts = [(i + offset, r) for i, r in zip(x, drawn[a], strict=True) if r is not None]
            lo = [max(p.estimate or 0.0, 0) - (p.ci95[0] or 0.0) for _, p in pts]  # type: ignore[index]
            hi = [(p.ci95[1] or 0.0) - (p.estimate or 0.0) for _, p in pts]  # type: ignore[index]
            ax.errorbar([i for i, _ in pts], [p.estimate or 0.0 for _, p in pts], yerr=[lo, hi],
                        fmt="none", ecolor=colour, elinewidth=1.2, capsize=2, alpha=0.8)
            handles.append(ax.plot([i for i, _ in pts], [p.estimate or 0.0 for _, p in pts],
                                   marker=marker, color=colour, linestyle="-", linewidth=0.8,
                                   markersize=5, label=a)[0])
            k += 1
        positive = [p.estimate for a in drawable for p in drawn[a] if p and p.estimate]
        if not per_trial and positive:
            # Rates span decades, and a run without failures sits at 0: log above, linear near 0.
            ax.set_yscale("symlog", linthresh=min(positive) / 2)
        ax.set_ylabel("share of trials failing" if per_trial
                      else f"failures {per_unit(h, picture=True)}", fontsize=9)
        ax.grid(True, axis="y", alpha=0.3)
        ax_row += 1
    if h.pairs:
        ax = axes[ax_row][0]
        for p in h.pairs:
            colour, marker = _style(k)
            ratios = [(i, t) for i, t in zip(x, h.times[p], strict=True) if t is not None]
            ax.errorbar([i for i, _ in ratios], [t.ratio for _, t in ratios],
                        yerr=[[t.ratio - t.ci95[0] for _, t in ratios],
                              [t.ci95[1] - t.ratio for _, t in ratios]],
                        fmt="none", ecolor=colour, elinewidth=1.2, capsize=2)
            handles.append(ax.plot([i for i, _ in ratios], [t.ratio for _, t in ratios], marker=marker,
                                   color=colour, linestyle="-", linewidth=0.8, markersize=5,
                                   label=p)[0])
            k += 1
        ax.axhline(1.0, color="#999999", lw=0.8, ls="--")
        ax.set_ylabel("time ratio, arm / reference", fontsize=9)
        ax.grid(True, axis="y", alpha=0.3)
    bottom = axes[-1][0]
    bottom.set_xticks(x)
    if len(h.runs) > 8:
        bottom.set_xticklabels([f"{r.label} {r.started_at[:10]}" for r in h.runs], fontsize=7,
                               rotation=60, ha="right", rotation_mode="anchor")
    else:
        bottom.set_xticklabels([f"{r.label}\n{r.started_at[:10]}" for r in h.runs], fontsize=7.5)
    for row in axes:
        row[0].tick_params(axis="y", labelsize=8)
        for side in ("top", "right"):
            row[0].spines[side].set_visible(False)
    fig.suptitle(f"{h.case}: {len(h.runs)} runs, oldest first"
                 + (f" ({len(h.regressions)} regression(s) in {h.runs[-1].label})"
                    if h.regressions else ""), x=0.012, ha="left", fontsize=11.5, fontweight="bold")
    legend_in = 0.25 * legend_rows + 0.15
    fig.legend(handles=handles, loc="lower left", bbox_to_anchor=(0.005, 0.0), ncol=3, fontsize=8,
               frameon=False)
    fig.subplots_adjust(left=0.09, right=0.98, top=1 - 0.55 / fig_h,
                        bottom=(legend_in + ticks_in) / fig_h, hspace=0.15)
    return fig


def plot(h: History, path: Path) -> bool:
    """The history's picture as path (PNG) and an SVG beside it; False where nothing to draw."""
    fig = figure(h)
    if fig is None:
        return False

    save(fig, path, path.with_suffix(".svg"))
    return True
