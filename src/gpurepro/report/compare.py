"""Compare result documents of one case: "is it fixed with the new driver?", "does it reproduce
on another GPU?", "what did --jobs 2 change?".

Per arm, each run's failures, exposure and rate (exact Poisson interval, as recorded); each
later run against the first (A) by the exact conditional rate-ratio test (``stats.rate_ratio``),
or by Fisher's exact test on trials where an arm has no exposure; the claims whose decision
changed; the verdict's status and owner; and every recorded difference in environment, toolchain
and options that could explain a change. Everything is derived from the documents alone, in a
fixed order, so the same documents always give the same output.

A *flip* (what ``--fail-on-change`` gates on) is a claim decided in A (supported or contradicted)
whose decision is another in a later run (the other decision, or not decided). A claim a later
document does not carry is reported, not counted as a flip.
"""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..analyze import stats
from ..errors import CompareError
from ..model.design import DesignSpec
from ..model.jsontypes import JSONObject, JSONValue
from ..model.result import ClaimDecision, Result, as_result
from . import families, gfm, gpu_conditions
from .comparison import (
    AgainstA,
    ArmRun,
    ArmTest,
    ChangedClaim,
    ClaimChange,
    ComparedArm,
    ComparedClaims,
    ComparedRun,
    Factor,
    RunComparison,
    VerdictChange,
)
from .figure import save
from .forest import (
    NAME_X,
    ROW_SMALL,
    draw_rate,
    note_height,
    note_left_out,
    note_lines,
    rate_axis,
    x_range,
)
from .numbers import fmt, fmt_ci, fmt_p, per_label, per_superscript, picture_number
from .tables import code, escape, table
from .wrong import per_trial

# What other modules use; the rest is this module's own.
__all__ = [
    "arm_run", "arm_test", "compare", "DECIDED", "design", "factors", "forest_figure", "labels",
    "markdown", "plot", "RIGHT", "RUN_STYLE", "stopping_numbers"
]

DECIDED = ("supported", "contradicted")


def labels(n: int) -> list[str]:
    """A, B, C, ... (then A1, B1, ... past Z)."""
    letters = string.ascii_uppercase
    return [letters[i % 26] + (str(i // 26) if i >= 26 else "") for i in range(n)]


# ---------------------------------------------------------------- per run


def _budget(r: Result) -> dict[str, Any]:
    b = r.options.budget
    exposure = b.get("max_exposure")
    return {"duration_s": b.get("duration_s"), "timeout_s": b.get("timeout_s"),
            "max_exposure": exposure}


def design(doc: Result | Mapping[str, Any]) -> str:
    """'fixed, 10 trials per arm', 'until decided (max 10, look every 5, alpha 0.05)' or
    'decisive (max 25 per arm, looks at 12, 18, 27 ... 200 valid trials, alpha 0.05)'."""
    r = as_result(doc)
    spec = r.design
    per_arm = sorted(set(r.plan.trials_per_arm.values()))
    # A journaled design always has its alpha (model/design.py refuses one without).
    alpha = f", alpha {spec.alpha:g}" if spec.sequential else ""
    if spec.decisive:
        look_at = spec.described.get("look_at")
        looks = [str(n) for n in look_at] if isinstance(look_at, list) else []
        at = ", ".join(looks if len(looks) <= 4 else [*looks[:3], "...", looks[-1]])
        most = spec.max_trials if "max_trials" in spec.keys else "?"
        return (f"decisive (max {most} per arm"
                + (f", looks at {at} valid trials" if at else "") + alpha + ")")
    if spec.sequential:
        max_trials, step = design_numbers(spec)
        return (f"until decided (max {max_trials}"
                + (f", look every {step}" if step is not None else "") + alpha + ")")
    return f"fixed, {'/'.join(map(str, per_arm)) or '?'} trials per arm"


def stopping_numbers(stopping: JSONObject | None) -> tuple[int | None, int | None]:
    """(max trials, look every) of a sequential design as journaled (``options.stopping``)."""
    return design_numbers(DesignSpec.from_json(stopping))


def design_numbers(spec: DesignSpec) -> tuple[int | None, int | None]:
    """(max trials, look every) of a sequential design, old (looks: [5, 10]) or new layout."""
    looks = spec.described.get("looks")
    if isinstance(looks, list) and looks:
        return _whole(looks[-1]), _whole(looks[0])
    return spec.max_trials, spec.step


def _whole(x: JSONValue) -> int:
    return int(x) if isinstance(x, (int, float)) else int(str(x))


def _gpu(r: Result) -> tuple[str, str]:
    gpus = r.environment.gpu.gpus
    if not gpus:
        return "none", "–"
    names = sorted({str(g.name) for g in gpus})
    return (f"{', '.join(names)} × {len(gpus)}",
            ", ".join(sorted({str(g.compute_capability) for g in gpus})))


def _scheduler(r: Result) -> str:
    """Where the trials ran: one host, or a cluster's partitions and node count."""
    if r.cluster is None:
        return "one host"
    return (f"{r.cluster.fields['scheduler']}: partitions {', '.join(r.cluster.partitions)}; "
            f"{r.cluster.nodes} node(s)")


def factors(r: Result) -> dict[str, str]:
    """What could explain a difference between runs, one printable value per name."""
    env = r.environment
    gpu, host, repo = env.gpu, env.host, env.repository
    opts = r.options
    budget = _budget(r)
    gpu_name, cc = _gpu(r)
    out = {
        "GPU": gpu_name,
        "compute capability": cc,
        "GPU UUID": ", ".join(sorted(str(g.uuid) for g in gpu.gpus)) or "–",
        "driver": str(gpu.driver_version or "–"),
        "CUDA driver API": str(gpu.cuda_driver_api or "–"),
        "target": str(r.device.target or "–"),
        "jobs (trials at a time per GPU)": str(opts.jobs),
        "GPUs used (--gpus)": ",".join(map(str, opts.gpus or ())) or "default",
        "duration per trial (s)": fmt(budget["duration_s"]),
        "limit per trial (s)": fmt(budget["timeout_s"]),
        f"budget ({r.case.exposure_unit})": str(budget["max_exposure"] or "none"),
        "design": design(r),
        "seed": str(r.plan.seed),
        "gpurepro commit": (str(repo.commit or "–")[:12] + (" (dirty)" if repo.dirty else "")),
        "scheduler": _scheduler(r),
        "OS / kernel": f"{host.os} / {host.kernel}",
        "glibc": str(host.glibc),
    }
    for name, version in sorted(r.toolchain.resolved.items()):
        out[f"pin {name}"] = str(version)
    for name, version in sorted(r.toolchain.tools.items()):
        out[f"tool {name}"] = str(version)
    for name, value in sorted(env.variables.items()):
        out[f"env {name}"] = str(value)
    return out


def arm_run(r: Result, arm: str) -> ArmRun | None:
    s = r.arms.get(arm)
    if s is None:
        return None
    failed = [t.record for t in r.trials if t.arm == arm and t.outcome in r.case.failure_outcomes]
    return ArmRun(n=s.n, n_valid=s.n_valid, failures=s.failures, exposure=s.exposure.total,
                  rate=s.exposure.rate.estimate, rate_ci95=s.exposure.rate.ci95,
                  proportion=s.proportion.estimate, proportion_ci95=s.proportion.ci95,
                  coarse_failures=stats.coarse_counter(failed), per_trial=per_trial(r))


RATE_RATIO = "rate ratio (exact conditional binomial)"


def arm_test(run: ArmRun | None, ref: ArmRun | None) -> ArmTest | None:
    """A later run's arm against the first run's: rate ratio where both have exposure,
    else Fisher's exact test on failing trials; None when either has no valid trial."""
    if not run or not ref or not run.n_valid or not ref.n_valid:
        return None
    coarse = run.coarse_failures or ref.coarse_failures
    trials = run.per_trial or ref.per_trial
    if run.exposure > 0 and ref.exposure > 0 and not coarse and not trials:
        rr = stats.rate_ratio(run.failures, run.exposure, ref.failures, ref.exposure)
        if rr["p_value"] is None:  # no failure in either run: nothing to compare
            return ArmTest(RATE_RATIO, None, None, None, "no failure in either run")
        return ArmTest(RATE_RATIO, rr["estimate"], rr["ci95"], rr["p_value"])
    f = stats.fisher(run.failures, run.n_valid, ref.failures, ref.n_valid)
    why = ("a trial is the unit" if trials else "coarse exposure counter" if coarse
           else "no exposure recorded")
    return ArmTest(f"odds ratio of failing trials (Fisher exact; {why})", f["odds_ratio"], None,
                   f["p_value"])


# ---------------------------------------------------------------- claims and verdict


def _claims_by_name(r: Result) -> dict[str, ClaimDecision] | None:
    if not r.claims_recorded:
        return None
    return {c.name: c for c in r.claims}


def _claim_change(before: str | None, after: str | None) -> str | None:
    if before == after:
        return None
    if after is None:
        return "not in this document"
    if before is None:
        return "new"
    if before in DECIDED:
        return "flipped"
    return "newly decided" if after in DECIDED else "changed"


def _labelled(decision: str | None, family: str | None) -> str:
    return f"{decision} (exploratory)" if family == "exploratory" else str(decision)


def compare(docs: Sequence[Result | Mapping[str, Any]], paths: Sequence[str | Path],
            any_conditions: bool = False) -> RunComparison:
    """The comparison (``markdown`` renders it, ``to_json`` writes it). Timed runs whose GPU
    conditions (clocks, temperature) differ beyond gpu_conditions.TOLERANCES are refused, unless
    ``any_conditions``: then the comparison says so."""
    if len(docs) < 2:
        raise CompareError("compare needs at least two result documents")
    for doc, path in zip(docs, paths, strict=True):
        if isinstance(doc, Result):
            continue
        if str(doc.get("schema", "")).startswith("gpurepro/bench"):
            raise CompareError(f"{path} is a benchmark document; compare takes case results")
        if not isinstance(doc.get("case"), Mapping) or "summary" not in doc:
            raise CompareError(f"{path} is not a gpurepro result document")
    results = [as_result(doc) for doc in docs]  # each document typed once
    cases = [r.case.name for r in results]
    if len(set(cases)) > 1:
        raise CompareError("compare needs documents of one case; these are of "
                           + ", ".join(f"{p} ({c})" for p, c in zip(paths, cases, strict=True)))
    names = labels(len(docs))
    condition_rows, beyond = gpu_conditions.differences(results, names)
    if beyond and not any_conditions:
        raise CompareError("these runs measured times under different GPU conditions: "
                           + "; ".join(beyond) + ". Their times would differ for that reason "
                           "alone; --any-conditions compares them anyway, and says so")
    first = results[0]
    unit, per = first.case.exposure_unit, first.case.exposure_per
    if unit is None or per is None:  # the schema requires both; a document not checked may not
        raise CompareError(f"{paths[0]}: its case records no exposure unit and per (the result "
                           f"schema requires case.exposure); gpurepro validate says what else")

    runs: list[ComparedRun] = []
    for label, r, path in zip(names, results, paths, strict=True):
        gpu_name, cc = _gpu(r)
        runs.append(ComparedRun(
            label=label, path=str(path), started_at=r.started_at, created_at=r.created_at,
            gpu=gpu_name, compute_capability=cc, driver=r.environment.gpu.driver_version,
            jobs=r.options.jobs, design=design(r), trials=len(r.trials),
            claims=len(r.claims) if r.claims_recorded else None,
            exploratory_claims=sum(1 for c in r.claims if families.is_exploratory(c)),
            status=r.verdict.status if r.verdict else None,
            owner=r.verdict.owner if r.verdict else None))

    arm_names: list[str] = []
    for r in results:
        arm_names += [a for a in r.arms if a not in arm_names]
    arms: dict[str, ComparedArm] = {}
    for arm in arm_names:
        per_run = [arm_run(r, arm) for r in results]
        against = [AgainstA(label, arm_test(later, per_run[0])
                            or ArmTest(None, None, None, None, "no valid trial in one of the runs"))
                   for label, later in zip(names[1:], per_run[1:], strict=True)]
        arms[arm] = ComparedArm(per_run, against)

    claim_docs = [_claims_by_name(r) for r in results]
    changed: list[ChangedClaim] = []
    unchanged = 0
    flips: list[str] = []
    if claim_docs[0] is not None:
        all_names: list[str] = []
        for by_name in claim_docs:
            all_names += [n for n in (by_name or {}) if n not in all_names]
        for claim in all_names:
            decisions = [None if c is None or claim not in c else c[claim].decision
                         for c in claim_docs]
            p_values = [None if c is None or claim not in c else c[claim].p_value
                        for c in claim_docs]
            # Each run's family of the claim: an exploratory decision is outside that run's
            # family-wise error rate, and is never shown as a plain one.
            kinds = [None if c is None or claim not in c else
                     ("exploratory" if families.is_exploratory(c[claim]) else "confirmatory")
                     for c in claim_docs]
            changes = []
            for label, by_name, dec, kind in zip(names[1:], claim_docs[1:], decisions[1:],
                                                 kinds[1:], strict=True):
                if by_name is None:
                    continue  # a document without claims: said once, above
                change = _claim_change(decisions[0], dec)
                if change is None and kind and kinds[0] and kind != kinds[0]:
                    change = f"now {kind}"
                if change:
                    changes.append(ClaimChange(label, decisions[0], dec, change))
                    if change == "flipped":
                        flips.append(f"{claim}: {_labelled(decisions[0], kinds[0])} in A, "
                                     f"{_labelled(dec, kind)} in {label}")
            if changes:
                changed.append(ChangedClaim(claim, dict(zip(names, decisions, strict=True)),
                                            dict(zip(names, p_values, strict=True)),
                                            dict(zip(names, kinds, strict=True)), changes))
            else:
                unchanged += 1
    claims = ComparedClaims([n for n, c in zip(names, claim_docs, strict=True) if c is None],
                            changed, unchanged, flips)

    verdict_changes = [VerdictChange(run.label, key, before, after)
                       for run in runs[1:]
                       for key, before, after in (("status", runs[0].status, run.status),
                                                  ("owner", runs[0].owner, run.owner))
                       if before != after]

    facts = [factors(r) for r in results]
    keys: list[str] = []
    for f in facts:
        keys += [k for k in f if k not in keys]
    differs: list[Factor] = []
    same: list[str] = []
    for key in keys:
        values = [f.get(key, "–") for f in facts]
        if len(set(values)) > 1:
            differs.append(Factor(key, values))
        else:
            same.append(key)

    return RunComparison(case=cases[0], exposure_unit=unit, exposure_per=per,
                         baseline=first.case.baseline, runs=runs, arms=arms, claims=claims,
                         verdict_changes=verdict_changes, differs=differs, same=same,
                         conditions_compared=condition_rows, beyond_tolerance=beyond)


# ---------------------------------------------------------------- Markdown


def _rate(r: ArmRun | None) -> str:
    if r is None:
        return "not run"
    if not r.n_valid:
        return "no valid trial"
    if r.exposure <= 0 or r.coarse_failures or r.per_trial:
        why = ("a trial is the unit" if r.per_trial else
               f"coarse counter: {r.coarse_failures} failure(s) without a reading"
               if r.coarse_failures else "no exposure")
        return f"– ({why}; proportion {fmt(r.proportion)} {fmt_ci(r.proportion_ci95)})"
    return f"{fmt(r.rate)} {fmt_ci(r.rate_ci95)}"


def _ratio(c: ArmTest) -> str:
    if c.estimate is None and c.p_value is None:
        return f"– ({c.note})" if c.note else "–"
    what = "OR " if c.odds else ""
    return f"{what}{fmt(c.estimate)}" + (f" {fmt_ci(c.ci95)}" if c.ci95 else "")


def markdown(result: RunComparison) -> str:
    runs = result.runs
    names = result.labels
    unit, per = result.exposure_unit, result.exposure_per
    out = [f"## gpurepro compare: {code(result.case)}\n",
           *table(["run", "document", "started", "GPU (compute capability)", "driver", "jobs",
                   "design", "trials", "claims"],
                  [[escape(r.label), code(Path(r.path).name), escape(r.started_at or "–"),
                    escape(f"{r.gpu} ({r.compute_capability})"), escape(r.driver or "–"),
                    escape(r.jobs), escape(r.design), escape(r.trials),
                    "none recorded" if r.claims is None else escape(r.claims)
                    + (f" ({r.exploratory_claims} exploratory)" if r.exploratory_claims else "")]
                   for r in runs]), ""]
    if result.beyond_tolerance:
        out += ["**GPU conditions differ beyond tolerance** (compared anyway, --any-conditions): "
                + escape("; ".join(result.beyond_tolerance)) + ". Differences in times "
                "below may come from the GPU's state rather than the arms.", ""]
    elif result.conditions_compared:
        out += ["GPU conditions within tolerance: " + escape(", ".join(sorted(
            {str(c["condition"]) for c in result.conditions_compared}))) + " (medians of the "
                "timed trials' readings after their repetitions).", ""]

    base = result.arms.get(result.baseline)
    if base:
        parts = [f"{n}: {_rate(r)}" for n, r in zip(names, base.runs, strict=True)]
        out.append(f"**Baseline {code(result.baseline)}**, failures per {per_label(per)} "
                   f"{escape(unit)} (95% CI): " + "; ".join(parts) + ".")
        for c in base.against_A:
            if c.test.p_value is not None:
                out.append(f"{escape(c.run)} vs A: {escape(_ratio(c.test))}, "
                           f"p = {fmt_p(c.test.p_value)}.")
        out.append("")

    out.append(f"### Arms: failures per {per_label(per)} {escape(unit)} (exact 95% CI)\n")
    head = ["arm"]
    for n in map(escape, names):
        head += [f"{n} failed / valid", f"{n} {escape(unit)}", f"{n} rate"]
    for n in map(escape, names[1:]):
        head += [f"{n} vs A (95% CI)", f"{n} vs A p"]
    arm_rows = []
    for arm, a in result.arms.items():
        cells = [code(arm)]
        for r in a.runs:
            if r is None:
                cells += ["not run", "–", "–"]
            else:
                cells += [f"{r.failures} / {r.n_valid}", fmt(r.exposure), _rate(r)]
        for c in a.against_A:
            cells += [_ratio(c.test), fmt_p(c.test.p_value)]
        arm_rows.append(cells)
    out += table(head, arm_rows)
    out.append("\nRatios are each run's rate over A's (the exact conditional binomial test, "
               "`scipy.stats.binomtest`); `OR`: the odds ratio of failing trials (Fisher's exact "
               "test), used where an arm recorded no exposure or failures without a counter "
               "reading. One test per arm, not adjusted for multiplicity: the claims are the "
               "decisions.\n")

    out.append("### Claims\n")
    claims = result.claims
    for n in claims.without_claims:
        path = Path(runs[names.index(n)].path).name
        out.append(f"- {escape(n)} ({code(path)}) carries no claims: it was recorded before the harness "
                   f"decided claims, so no decision of it can be compared.")
    if claims.without_claims:
        out.append("")
    if not claims.changed:
        if claims.unchanged:
            out.append(f"No claim changed its decision ({claims.unchanged} compared).\n")
    else:
        changed = []
        for claim in claims.changed:
            kinds = list(claim.families.values()) or [None] * len(claim.decisions)
            decisions = [f"{escape(_labelled(d, k).replace('_', ' '))} (p {fmt_p(p)})" if d else "–"
                         for d, p, k in zip(claim.decisions.values(), claim.p_values.values(),
                                            kinds, strict=True)]
            change = escape("; ".join(f"{ch.run}: {ch.change}" for ch in claim.changes))
            changed.append([code(claim.claim), *decisions,
                            "**" + change + "**" if claim.flipped else change])
        out += table(["claim", *map(escape, names), "change"], changed)
        out.append(f"\n{claims.unchanged} other claim(s) unchanged.\n")
    if claims.flips:
        out.append(f"**{len(claims.flips)} decided claim(s) flipped** "
                   f"(`--fail-on-change` exits 1).\n")

    out.append("### Verdict\n")
    if not result.verdict_changes:
        out.append(f"Same status (**{escape(runs[0].status)}**) and owner in every run.\n")
    for v in result.verdict_changes:
        out.append(f"- {escape(v.field)} {escape(v.run)} vs A: {escape(v.before or '–', 'prose')} "
                   f"→ **{escape(v.after or '–', 'prose')}**")
    if result.verdict_changes:
        out.append("")

    out.append("### What differs between the runs (could explain a change)\n")
    if result.differs:
        out += table(["", *map(escape, names)],
                     [[escape(d.name), *(escape(v) for v in d.values)] for d in result.differs])
        out.append("")
    else:
        out.append("Nothing recorded differs.\n")
    out.append("The same in every run: " + escape(", ".join(result.same)) + ".\n")
    # Parsed as GitHub parses it, nothing live: a document string that would be is refused.
    return gfm.check("\n".join(out), f"compare of {result.case!r}")


# ---------------------------------------------------------------- the paired forest plot

# One colour and marker shape per run (Okabe-Ito colours; the shape alone tells runs apart).
RUN_STYLE = [("#0072B2", "o"), ("#D55E00", "s"), ("#009E73", "^"), ("#CC79A7", "D"),
             ("#56B4E9", "v"), ("#E69F00", "P")]


def _drawable(r: ArmRun | None) -> str | None:
    """Why a run's arm has no rate to draw (None: it has one)."""
    if r is None:
        return "not run"
    if not r.n_valid:
        return "no valid trial"
    if r.per_trial:
        return "a trial is the unit"
    if r.exposure <= 0 or not r.rate_ci95:
        return "no exposure"
    if r.coarse_failures:
        return "coarse counter"
    return None


def forest_figure(result: RunComparison) -> Any:
    """Runs side by side per arm: each run's failure rate with its exact 95% interval on one
    log axis, A's baseline interval as a band, each later run's rate ratio against A in a
    column. Returns (figure, rows), a row per run and arm drawn; None if nothing can be drawn."""
    rows_in, left_out = _paired_rows(result)
    if not rows_in:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = result.runs
    names = result.labels
    baseline, unit = result.baseline, result.exposure_unit
    per = per_superscript(result.exposure_per)
    rows, centres, n_lines = _place(rows_in, [baseline] + [a for a in result.arms if a != baseline])
    arrow = 10 ** 0.4
    xmin, xmax = x_range(rows, arrow)

    fig = plt.figure(figsize=(9.0, 1.0), dpi=100)
    note = note_lines(fig, left_out)
    row_in, note_in = 0.34, note_height(note)
    bottom_in = note_in + 0.4 + 0.55  # note, legend, axis
    fig_h = 0.75 + row_in * n_lines + bottom_in
    fig.set_size_inches(9.0, fig_h)
    ax = fig.add_axes((LEFT, bottom_in / fig_h, RIGHT - LEFT, row_in * n_lines / fig_h))
    rate_axis(ax, xmin, xmax, (n_lines - 0.4, -0.6))
    base = next((r for r in rows if r["arm"] == baseline and r["run"] == names[0]), None)
    if base:
        ax.axvspan(base["lo"] if base["lo"] > 0 else xmin, base["hi"], color="#999999",
                   alpha=0.18, lw=0, zorder=0)
    style = {label: RUN_STYLE[i % len(RUN_STYLE)] for i, label in enumerate(names)}
    _draw_runs(fig, ax, rows, style, arrow)
    _draw_arms(fig, ax, result, centres)
    ax.set_xlabel(f"failures per {per} {unit} (log scale; exact Poisson 95% interval)", fontsize=9)
    ax.tick_params(axis="x", labelsize=9)
    flips = len(result.claims.flips)
    fig.text(NAME_X, 1 - 0.1 / fig_h,
             f"{result.case}: " + " vs ".join(names) + " per arm"
             + (f" ({flips} decided claim(s) flipped)" if flips else " (no decided claim flipped)"
                if not result.claims.without_claims else ""),
             ha="left", va="top", fontsize=11.5, fontweight="bold")
    _legend(fig, runs, style, f"A's {baseline} 95% interval" if base else None, note_in / fig_h)
    note_left_out(fig, note, fig_h)
    return fig, rows


# The paired plot's columns, as fractions of its width: the names and counts left of the axes,
# the rate ratios right of them.
LEFT, RIGHT, RATIO_X = 0.25, 0.68, 0.70


def _paired_rows(result: RunComparison) -> tuple[list[dict[str, Any]], list[str]]:
    """A row per run and arm that can be drawn, and a note per arm with a run left out."""
    rows: list[dict[str, Any]] = []
    left_out: list[str] = []
    for arm, a in result.arms.items():
        whys = []
        for label, r in zip(result.labels, a.runs, strict=True):
            why = _drawable(r)
            if why:
                whys.append(f"{label}: {why}")
                continue
            assert r is not None and r.rate_ci95 is not None  # what _drawable draws
            lo, hi = r.rate_ci95
            rows.append({"arm": arm, "run": label, "estimate": r.rate, "lo": lo, "hi": hi,
                         "zero": r.failures == 0, "failures": r.failures,
                         "n_valid": r.n_valid})
        if whys:
            left_out.append(f"{arm} ({'; '.join(whys)})")
    return rows, left_out


def _place(rows_in: list[dict[str, Any]], arms: list[str]
           ) -> tuple[list[dict[str, Any]], dict[str, float], float]:
    """Each row's y: the arms in ``arms``' order (the baseline first), within an arm A, B, ...
    close together. Returns the rows top down, each arm's centre and the number of lines."""
    step = 0.42  # between the runs of one arm
    y, centres = 0.0, {}
    for arm in arms:
        mine = [r for r in rows_in if r["arm"] == arm]
        if not mine:
            continue
        for i, r in enumerate(mine):
            r["y"] = y + i * step
        centres[arm] = y + (len(mine) - 1) * step / 2
        y += (len(mine) - 1) * step + 1.0
    return sorted(rows_in, key=lambda r: r["y"]), centres, y


def _draw_runs(fig: Any, ax: Any, rows: list[dict[str, Any]],
               style: Mapping[str, tuple[str, str]], arrow: float) -> None:
    """Each run's rate in its colour and shape, its failed/valid count left of the axes."""
    from matplotlib.transforms import blended_transform_factory

    lab = blended_transform_factory(fig.transFigure, ax.transData)
    for r in rows:
        colour, shape = style[r["run"]]
        r["artist"] = draw_rate(ax, r["y"], r, colour, shape, arrow, {**ROW_SMALL, "capthick": None})
        ax.text(LEFT - 0.01, r["y"], f"{r['run']} {r['failures']}/{r['n_valid']}", transform=lab,
                va="center", ha="right", color=colour, fontsize=8.5)


def _draw_arms(fig: Any, ax: Any, result: RunComparison, centres: Mapping[str, float]) -> None:
    """Each arm's name, its later runs' rate ratios against A, and the column heads."""
    from matplotlib.transforms import blended_transform_factory

    text: dict[str, Any] = {"transform": blended_transform_factory(fig.transFigure, ax.transData),
                            "va": "center"}
    for arm, cy in centres.items():
        ax.text(NAME_X, cy, arm, **text, ha="left", fontsize=9,
                fontweight="bold" if arm == result.baseline else "normal")
        ratios = []
        for c in result.arms[arm].against_A:
            t = c.test
            if t.note and t.p_value is None:
                ratios.append(f"{c.run}/A – ({t.note})")
            elif t.estimate is not None and not t.odds:
                ratios.append(f"{c.run}/A {picture_number(t.estimate)}"
                              + (f" ({picture_number(t.ci95[0])}–{picture_number(t.ci95[1])})"
                                 if t.ci95 and t.ci95[1] is not None else ""))
        if ratios:
            ax.text(RATIO_X, cy, "; ".join(ratios), **text, ha="left", fontsize=8.5)
    ax.text(RATIO_X, -0.75, "rate ratio vs A (95% CI)", **{**text, "va": "bottom"},
            ha="left", fontsize=8.5, color="#555555")
    ax.text(LEFT - 0.01, -0.75, "run failed/valid", **{**text, "va": "bottom"}, ha="right",
            fontsize=8.5, color="#555555")


def _legend(fig: Any, runs: Sequence[ComparedRun], style: Mapping[str, tuple[str, str]],
            band: str | None, bottom: float) -> None:
    """A marker per run (with its document), the open marker, and A's baseline band."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles: list[Any] = [Line2D([], [], linestyle="none", marker=style[r.label][1],
                                 color=style[r.label][0], markersize=7,
                                 label=f"{r.label}: {Path(r.path).name}") for r in runs]
    handles.append(Line2D([], [], linestyle="none", marker="o", markerfacecolor="white",
                          markeredgecolor="#333333", markersize=7, label="no failure: upper bound"))
    if band:
        handles.append(Patch(facecolor="#999999", alpha=0.35, label=band))
    fig.legend(handles=handles, loc="lower left", bbox_to_anchor=(0.005, bottom),
               ncol=2, fontsize=8, frameon=False, handletextpad=0.3, columnspacing=1.2)


def plot(result: RunComparison, path: Path) -> bool:
    """The paired forest plot as path (PNG) and an SVG beside it; False if nothing to draw."""
    made = forest_figure(result)
    if made is None:
        return False

    fig, _ = made
    save(fig, path, path.with_suffix(".svg"))
    return True
