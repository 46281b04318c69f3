"""Report: a result document -> GitHub-flavoured Markdown, a forest plot of the failure rate per
arm (PNG and SVG), a survival plot, a pyperf suite.

Everything here is derived from the validated document alone, so anyone can regenerate the
report from an attached JSON with ``nox -s report -- results/<case>/<file>.json``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..run import phases
from ..run.atomic import write_atomic
from . import cluster as cluster_report


def _fmt(x: float | None, digits: int = 3) -> str:
    if x is None:
        return "–"
    if x == 0:
        return "0"
    if abs(x) >= 1e5 or abs(x) < 1e-3:
        return f"{x:.{digits - 1}e}"
    return f"{x:.{digits}g}"


def _ci(ci: list[float | None] | None, digits: int = 3) -> str:
    if not ci:
        return "–"
    lo, hi = ci
    return f"[{_fmt(lo, digits)}, {_fmt(hi, digits) if hi is not None else '∞'}]"


def _p(p: float | None) -> str:
    if p is None:
        return "–"
    return "< 1e-12" if p < 1e-12 else f"{p:.2g}"


def _differs(factors: Mapping[str, Any], base: Mapping[str, Any]) -> str:
    diff = [f"{k}={v}" for k, v in factors.items() if base.get(k) != v]
    return ", ".join(diff) if diff else "(baseline)"


def environment_rows(doc: Mapping[str, Any]) -> list[tuple[str, str]]:
    env = doc["environment"]
    gpu = env["gpu"]
    dev = doc["device"]
    host = env["host"]
    gpus = gpu.get("gpus") or []
    g0 = gpus[0] if gpus else {}
    rows = [
        ("GPU", f"{g0.get('name', '–')} × {len(gpus)}" if gpus else f"none ({gpu.get('reason')})"),
        ("Compute capability", str(g0.get("compute_capability", "–"))),
        ("GPU memory", f"{g0['memory_mib']} MiB" if g0.get("memory_mib") else "–"),
        ("GPU UUID / PCI", f"{g0.get('uuid', '–')} / {g0.get('pci_bus_id', '–')}"),
        ("Driver / CUDA driver API", f"{gpu.get('driver_version') or '–'} / {gpu.get('cuda_driver_api') or '–'}"),
        ("Target", f"{dev.get('target')} ({'supported' if dev.get('supported') else 'NOT supported: ' + str(dev.get('reason'))})"),
        ("OS / kernel / glibc", f"{host.get('os')} / {host.get('kernel')} / {host.get('glibc')}"),
        ("CPU", f"{host.get('cpu')} ({host.get('cpu_count')} cores)"),
        ("Python", host.get("python", "–")),
        ("Repository", f"{env['repository'].get('commit') or '–'}{' (dirty)' if env['repository'].get('dirty') else ''}"),
    ]
    for name, version in sorted(doc["toolchain"].get("resolved", {}).items()):
        rows.append((name, str(version)))
    for tool, version in sorted(doc["toolchain"].get("tools", {}).items()):
        rows.append((tool, version))
    return rows


def claims_table(doc: Mapping[str, Any]) -> str:
    claims = doc["claims"]
    first = claims[0]
    stopping = doc["plan"].get("options", {}).get("stopping") or {}
    lines = ["### Claims\n",
             f"Decided under one family-wise error rate alpha = {first['alpha']:g} over "
             f"{len(claims)} claims and {first['looks']} look(s): alpha / {first['looks']} per look "
             f"(Bonferroni), Holm's step-down over the undecided claims at each look"
             + (f"; looks when the slowest arm still needed reaches "
                f"{', '.join(map(str, stopping.get('look_thresholds') or []))} valid trials, "
                f"and at the end" if stopping.get("look_thresholds") else "; one look, at the end")
             + ".\n",
             "| claim | arm | kind | reference | test | p | threshold | decision (look) |",
             "|---|---|---|---|---|---|---|---|"]
    for c in claims:
        kind = c["kind"] + (f" (×{c['margin']:g})" if c.get("margin") else "") + (
            f" {c['outcome']}" + (f" {c['detail']}" if c.get("detail") else "") if c["kind"] == "outcome" else "") + (
            f" in {c['stratum']}" if c.get("stratum") else "")
        lines.append(f"| `{c['name']}` | `{c['arm']}` | {kind} | {('`' + c['reference'] + '`') if c.get('reference') else '–'} | "
                     f"{c['test']} | {_p(c['p_value'])} | {_fmt(c['threshold'])} | "
                     f"**{c['decision'].replace('_', ' ')}** ({c['look']}) |")
    lines.append("")
    return "\n".join(lines)


# ---------------------------------------------------------------- sections of the Markdown report


def _verdict_section(doc: Mapping[str, Any]) -> list[str]:
    case, verdict = doc["case"], doc["verdict"]
    out = [f"## gpurepro: `{case['name']}` — {verdict['status']}\n",
           f"**Question.** {case['question']}\n"]
    if case.get("report_url"):
        out.append(f"Report: {case['report_url']}\n")
    out.append("### Verdict\n")
    out += [f"- {s}" for s in verdict["sentences"]]
    if verdict.get("not_decided"):
        out.append("\n**Not decided:**")
        out += [f"- {s}" for s in verdict["not_decided"]]
    if verdict.get("owner"):
        because = verdict.get("owner_because") or []
        out.append(f"\n**Owner:** {verdict['owner']}"
                   + (f" (decided claims: {', '.join(f'`{c}`' for c in because)})" if because else ""))
    if verdict.get("hypotheses"):
        out.append("\n**Hypotheses** (not shown by any arm of this run):")
        out += [f"- {s}" for s in verdict["hypotheses"]]
    if verdict.get("next"):
        out.append("\n**Next:**")
        out += [f"- {s}" for s in verdict["next"]]
    out.append("")
    return out


def _plan_line(doc: Mapping[str, Any]) -> str:
    opts = doc["plan"].get("options", {})
    budget = opts.get("budget", {})
    unit = doc["case"]["exposure"]["unit"]
    budget_exposure = budget.get("max_exposure")
    return (f"Plan: {len(doc['plan']['order'])} trials, shuffled (seed {doc['plan']['seed']}); "
            f"per trial {budget.get('duration_s')} s"
            + (f" or {budget_exposure} {unit}" if budget_exposure else "")
            + f", limit {budget.get('timeout_s')} s; {opts.get('jobs', 1)} trial(s) at a time"
            + (" per Slurm array task and GPU" if doc.get("cluster") else "")
            + (f" on GPUs {', '.join(opts['gpus'])}" if opts.get("gpus") else "")
            + (f"; sequential stopping: {opts['stopping'].get('method')}" if opts.get("stopping") else "")
            + ".\n")


def _errors_by_arm(doc: Mapping[str, Any]) -> dict[str, str]:
    """Per arm, the CUDA errors its trials ended with, and at which call: 'NAME at call ×n'."""
    from collections import Counter

    counts: dict[str, Counter[str]] = {}
    for t in doc["trials"]:
        if t.get("outcome") == "cuda_error":
            where = f" at {t['call']}" if t.get("call") else ""
            counts.setdefault(t["arm"], Counter())[f"{t.get('detail')}{where}"] += 1
    return {arm: "; ".join(f"{k} ×{n}" for k, n in c.most_common()) for arm, c in counts.items()}


def _arms_section(doc: Mapping[str, Any]) -> list[str]:
    case = doc["case"]
    unit, per = case["exposure"]["unit"], case["exposure"]["per"]
    base_factors = doc["summary"].get(case["baseline"], {}).get("factors", {})
    # Arms whose claims are about an outcome (they are meant to fail at once): a rate per unit
    # of exposure says nothing there.
    claims = doc.get("claims") or []
    rate_arms = {a for c in claims if c["kind"] not in ("outcome", "concentrated")
                 for a in (c["arm"], c.get("reference"))}
    outcome_arms = {c["arm"] for c in claims if c["kind"] == "outcome"} - rate_arms
    errors = _errors_by_arm(doc)
    out = ["### Arms\n", _plan_line(doc),
           f"| arm | differs from baseline | outcomes | failed / valid | CUDA errors (at call) "
           f"| proportion (95% CI) | exposure ({unit}) | failures per {_fmt(per)} {unit} (95% CI) "
           f"| median {unit} to failure |",
           "|---|---|---|---|---|---|---|---|---|"]
    for arm, s in doc["summary"].items():
        outcomes = ", ".join(f"{k} {v}" for k, v in s["outcomes"].items())
        head = f"| `{arm}` | {_differs(s['factors'], base_factors)} | {outcomes} |"
        if s["n_valid"] == 0:
            out.append(f"{head} no valid trial: nothing to measure | | | | | |")
            continue
        prop, rate = s["proportion"], s["exposure"]["rate"]
        km = (s.get("time_to_failure") or {}).get("exposure") or {}
        meaningful = arm not in outcome_arms and s["exposure"]["total"] > 0
        out.append(
            f"{head} {s['failures']} / {s['n_valid']} | {errors.get(arm, '–')} | "
            f"{_fmt(prop['estimate'])} {_ci(prop['ci95'])} | "
            + (f"{_fmt(s['exposure']['total'])} | {_fmt(rate['estimate'])} {_ci(rate['ci95'])} | "
               f"{_fmt(km.get('median')) if km.get('median') is not None else 'not reached' if s['failures'] else '–'} |"
               if meaningful else "– | – (an outcome arm) | – |"))
    out.append("")
    return out


def _comparisons_section(doc: Mapping[str, Any]) -> list[str]:
    if not doc["comparisons"]:
        return []
    out = [f"### Each arm against `{doc['case']['baseline']}` (descriptive; decisions are the claims')\n",
           "| arm | Fisher exact p (trials) | odds ratio | rate ratio (95% CI) | rate p |",
           "|---|---|---|---|---|"]
    for arm, c in doc["comparisons"].items():
        rr = c["rate_ratio"]
        out.append(f"| `{arm}` | {_p(c['fisher']['p_value'])} | {_fmt(c['fisher']['odds_ratio'])} | "
                   f"{_fmt(rr['estimate'])} {_ci(rr['ci95'])} | {_p(rr['p_value'])} |")
    out.append("")
    return out


def _old_stopping_section(doc: Mapping[str, Any]) -> list[str]:
    """Documents from before claims carried per-arm stopping decisions."""
    decisions = ((doc["plan"].get("options", {}).get("stopping")) or {}).get("decisions") or {}
    if not decisions or doc.get("claims"):
        return []
    out = ["### Sequential stopping\n", "| arm | decision | at trials (baseline) | p | threshold |",
           "|---|---|---|---|---|"]
    for arm, d in decisions.items():
        out.append(f"| `{arm}` | {d['decision']} ({d.get('test', 'fisher')}) | "
                   f"{d['at_trials']} ({d['baseline_trials']}) | {_p(d['p_value'])} | {d['threshold']:.3g} |")
    out.append("")
    return out


def _per_gpu_section(doc: Mapping[str, Any], per_gpu_name: str | None = None) -> list[str]:
    """The failures per GPU, as a table and (when drawn) the forest plot faceted by GPU."""
    multi = bool(doc.get("per_gpu")) and len(doc["per_gpu"]) > 1
    if not multi and not per_gpu_name:
        return []
    out = ["### Per GPU (failures / valid trials)\n" if multi else "### Per host\n"]
    if per_gpu_name:
        out.append(f"![{_alt(per_gpu_headline(doc))}]({per_gpu_name})\n")
    if multi:
        arms = list(doc["summary"])
        out += ["| GPU | " + " | ".join(f"`{a}`" for a in arms) + " |", "|---|" + "---|" * len(arms)]
        for gpu, cells in doc["per_gpu"].items():
            row = [f"{cells[a]['failures']}/{cells[a]['valid']}" if a in cells else "–" for a in arms]
            out.append(f"| {gpu} | " + " | ".join(row) + " |")
    out.append("")
    return out


def _crash_sites_section(doc: Mapping[str, Any]) -> list[str]:
    if not doc["crash_sites"]:
        return []
    out = ["### Crash sites\n", "| count | signal | faulting PC | fault address in | first frames | arms |",
           "|---|---|---|---|---|---|"]
    for b in doc["crash_sites"]:
        frames = " ← ".join(f"{f['module']}+{f['offset']}" for f in (b.get("frames") or [])[1:4])
        fault = b.get("fault_in") or {}
        arms = ", ".join(f"{a} {n}" for a, n in b["arms"].items())
        out.append(f"| {b['count']} | {b.get('signal')} {b.get('code_name') or ''} | "
                   f"`{b.get('pc_module')}+{b.get('pc_offset')}` ({b.get('pc_perms') or '?'}) | "
                   f"{fault.get('module', '–')} | {frames or '–'} | {arms} |")
    out.append("")
    return out


def _threads_section(doc: Mapping[str, Any]) -> list[str]:
    """Where each thread was at each crash, per arm (drivers that publish their calls)."""
    rows = phases.table(doc["trials"], doc["case"].get("failure_outcomes") or ("crashed",))
    if not rows:
        return []
    return ["### Threads at the crash\n",
            "The driver call each worker thread was in (or last left), from the crash record "
            "(relaxed stores, published around every call). Read at the fault: the crash "
            "handler's copy on entry, before anything slow. Read after the handler's slow work: "
            "a record from before that copy, read after the backtrace and the /proc/self/maps "
            "scan while the other threads ran on, so not the state at the fault.\n",
            *rows, ""]


def _analyses_section(doc: Mapping[str, Any]) -> list[str]:
    out = []
    for name, analysis in (doc.get("analyses") or {}).items():
        out.append(f"### Analysis: {name}\n")
        if isinstance(analysis, Mapping) and analysis.get("markdown"):
            out.append(str(analysis["markdown"]))
        else:
            out.append("```json\n" + json.dumps(analysis, indent=1)[:4000] + "\n```")
        out.append("")
    return out


def _probe_section(doc: Mapping[str, Any]) -> list[str]:
    p = doc.get("probe")
    if not p:
        return []
    out = ["### Device probe\n",
           f"The case cannot run here; one trial command was run to show what happens: "
           f"`{' '.join(p.get('command', []))}` → {p.get('outcome')} ({p.get('detail')}).\n"]
    if p.get("stdout_tail"):
        out.append("```\n" + p["stdout_tail"][-1500:] + "\n```\n")
    return out


def _environment_section(doc: Mapping[str, Any]) -> list[str]:
    out = ["### Environment\n", "| | |\n|---|---|"]
    out += [f"| {k} | {v} |" for k, v in environment_rows(doc)]
    out += ["", "### Artifacts\n", "| artifact | sha256 |\n|---|---|"]
    out += [f"| `{name}` ({a['path']}) | `{a['sha256'][:16]}…` |" for name, a in doc["artifacts"].items()]
    out += ["", f"_Generated by gpurepro {doc['gpurepro_version']} at {doc['created_at']}._\n"]
    return out


def _alt(text: str) -> str:
    """Text safe inside Markdown image brackets."""
    return " ".join(text.replace("[", "(").replace("]", ")").split())


def markdown(doc: Mapping[str, Any], plot_name: str | None = None,
             forest_name: str | None = None, per_gpu_name: str | None = None) -> str:
    """The report, section by section; each section renders from the document alone. Each
    picture named is referenced with its headline in words as the alt text."""
    out = _verdict_section(doc)
    if forest_name:
        out.append(f"![{_alt(forest_headline(doc))}]({forest_name})\n")
    out += _arms_section(doc)
    if doc.get("claims"):
        out.append(claims_table(doc))
    out += (_old_stopping_section(doc) + _comparisons_section(doc) + _per_gpu_section(doc, per_gpu_name)
            + cluster_report.section(doc) + _crash_sites_section(doc) + _threads_section(doc)
            + _analyses_section(doc) + _probe_section(doc))
    if plot_name:
        out.append(f"![{_alt(survival_headline(doc))}]({plot_name})\n")
    out += _environment_section(doc)
    return "\n".join(out)


def _survival_curves(doc: Mapping[str, Any]) -> tuple[list[str], list[str], list[str]]:
    """The survival plot's arms: (drawn, survivors, coarse). Arms that never failed would lie
    on top of each other along 1.0: they are named in the legend instead of drawn. Arms whose
    counter is too coarse to be an exposure axis (a once-a-second printout) would draw crashes
    at 1 cycle: left out, and named."""
    curves = [arm for arm, s in doc["summary"].items() if (s.get("time_to_failure") or {}).get("exposure")]
    survivors = [a for a in curves if not doc["summary"][a]["failures"]]
    coarse_arms = _coarse_arms(doc)
    coarse = [a for a in curves if a not in survivors and a in coarse_arms]
    drawn = [a for a in curves if a not in survivors and a not in coarse]
    return drawn, survivors, coarse


def survival_headline(doc: Mapping[str, Any]) -> str:
    """The survival plot in words (its alt text): which arms fail, and how much exposure the
    baseline and each other failing arm take to fail (the Kaplan-Meier median)."""
    case = doc["case"]
    unit, baseline, summary = case["exposure"]["unit"], case["baseline"], doc["summary"]
    drawn, survivors, coarse = _survival_curves(doc)

    def median(arm: str, short: bool = False) -> str:
        km = summary[arm]["time_to_failure"]["exposure"]
        if km.get("median") is None:
            return "median not reached"
        if short:
            return f"median {_fmt(km['median'])}"
        ci = km.get("median_ci95")
        return (f"median {_fmt(km['median'])} {unit} to failure"
                + (f" (95% CI {_fmt(ci[0])}–{_fmt(ci[1]) if ci[1] is not None else '∞'})"
                   if ci and ci[0] is not None else ""))

    def counts(arm: str) -> str:
        return f"{summary[arm]['failures']}/{summary[arm]['n_valid']} failed"

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


def plot(doc: Mapping[str, Any], path: Path, svg: Path | None = None) -> bool:
    """Kaplan-Meier survival of exposure-to-failure per arm (PNG, and SVG beside it when
    given); False if there is nothing to plot."""
    curves = {
        arm: s["time_to_failure"]["exposure"]
        for arm, s in doc["summary"].items()
        if (s.get("time_to_failure") or {}).get("exposure")
    }
    if not curves or not any(s["failures"] for s in doc["summary"].values()):
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    unit = doc["case"]["exposure"]["unit"]
    fig, ax = plt.subplots(figsize=(8, 6), dpi=110)
    colours = [plt.get_cmap("tab10")(i) for i in range(10)]
    styles = ("-", "--", ":", "-.")
    drawn, survivors, coarse = _survival_curves(doc)
    for i, arm in enumerate(drawn):
        km = curves[arm]
        xs = [max(x, 1.0) for x, _ in km["curve"]]
        ys = [y for _, y in km["curve"]]
        n = doc["summary"][arm]["n_valid"]
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
    ax.set_title(f"{doc['case']['name']}: Kaplan–Meier per arm")
    ax.grid(True, which="both", alpha=0.3)
    # The legend below the axes, so it hides no curve.
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, frameon=False)
    fig.tight_layout()
    _save(fig, path, svg, dpi=110)
    return True


# ---------------------------------------------------------------- the forest plot

# Each claim decision has a marker shape and a colour (Okabe-Ito, safe for colour blindness);
# the shape alone tells them apart in greyscale. Rows with no claim of their own (a reference
# arm) get a plain square.
DECISION_STYLE: dict[str, dict[str, str]] = {
    "supported": {"marker": "o", "color": "#0072B2", "label": "claim supported"},
    "contradicted": {"marker": "X", "color": "#D55E00", "label": "claim contradicted"},
    "not_decided": {"marker": "D", "color": "#7F7F7F", "label": "claim not decided"},
    "no_claim": {"marker": "s", "color": "#000000", "label": "no claim on the arm"},
}


def per_label(per: float) -> str:
    """1e6 -> '10^6' (as the reports write it); anything else as a number."""
    import math

    exponent = round(math.log10(per)) if per > 0 else None
    return f"10^{exponent}" if exponent is not None and 10 ** exponent == per else _fmt(per)


def per_superscript(per: float) -> str:
    """1e6 -> '10⁶' for a picture's labels (its fonts have the superscript digits); anything
    else as per_label writes it."""
    text = per_label(per)
    if text.startswith("10^"):
        return "10" + text[3:].translate(str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻"))
    return text


def _num(x: float) -> str:
    """A rate in a picture's column: three significant digits, thousands grouped, no
    exponent below a million."""
    if x == 0:
        return "0"
    if 1000 <= abs(x) < 1e6:
        return f"{float(f'{x:.3g}'):,.0f}"
    return f"{x:.3g}"


def _coarse_counter(s: Mapping[str, Any]) -> bool:
    """The run found the arm's exposure counter too coarse to place failures on (a counter
    printed once a second): its exposure, and so its rate, is not a measurement."""
    km = (s.get("time_to_failure") or {}).get("exposure") or {}
    return str(km.get("median_method", "")).startswith("none: the exposure counter is coarse")


def _coarse_arms(doc: Mapping[str, Any]) -> set[str]:
    """The arms whose exposure counter is too coarse: as the summary says, or, for documents
    recorded before summaries said so, as the trials show (a failure with no counter reading
    at all, as stats.coarse_counter counts them)."""
    failure = set(doc["case"]["failure_outcomes"])
    coarse = {a for a, s in doc["summary"].items() if _coarse_counter(s)}
    coarse |= {t["arm"] for t in doc.get("trials") or []
               if t.get("outcome") in failure and not (t.get("exposure") or 0)
               and "counters" in t and not t["counters"]}
    return coarse


def _claim_text(c: Mapping[str, Any], baseline: str) -> str:
    ref = c.get("reference")
    than = "baseline" if ref in (None, baseline) else ref
    kind = c["kind"]
    vs = "" if than == "baseline" else f" than {than}"  # the column head names the baseline
    if kind == "outcome":
        what = f"{c.get('outcome')}" + (f" {c['detail']}" if c.get("detail") else "")
    elif kind == "concentrated":
        what = f"failures in {c.get('stratum')}"
    elif kind == "equivalent":
        what = (f"within ×{c['margin']:g}" if c.get("margin") else "alike") + (f" of {than}" if vs else "")
    else:
        what = f"{kind}{vs}"
    return f"{what}: {c['decision'].replace('_', ' ')}"


def _row_decision(claims: list[Mapping[str, Any]]) -> str:
    """One marker per row: supported if any of the arm's claims is, else contradicted if any
    is, else not decided; the label column spells out every claim."""
    decisions = {c["decision"] for c in claims}
    for d in ("supported", "contradicted", "not_decided"):
        if d in decisions:
            return d
    return "no_claim"


def forest_rows(doc: Mapping[str, Any]) -> tuple[list[dict[str, Any]], list[str]]:
    """The arms the forest plot draws, grouped by the factor(s) they vary from the baseline
    (the baseline first), and a note per arm it leaves out."""
    case = doc["case"]
    baseline = case["baseline"]
    summary = doc["summary"]
    base_factors = summary.get(baseline, {}).get("factors", {})
    claims = doc.get("claims") or []
    rows: list[dict[str, Any]] = []
    left_out: list[str] = []
    coarse_arms = _coarse_arms(doc)
    for arm, s in summary.items():
        arm_claims = [c for c in claims if c["arm"] == arm]
        rate = (s.get("exposure") or {}).get("rate") or {}
        why = None
        if s["n_valid"] == 0:
            why = "no valid trial"
        elif not (s.get("exposure") or {}).get("total") or not rate.get("ci95"):
            why = "no exposure counted"
        elif arm in coarse_arms:
            why = "exposure counter too coarse"
        if why:
            decided = "; ".join(f"{c['name']} {c['decision'].replace('_', ' ')}" for c in arm_claims)
            left_out.append(f"{arm} ({why}" + (f"; claim {decided}" if decided else "") + ")")
            continue
        diff = sorted(k for k, v in s.get("factors", {}).items() if base_factors.get(k) != v)
        lo, hi = rate["ci95"]
        rows.append({
            "arm": arm,
            "group": "baseline" if arm == baseline else (" + ".join(diff) if diff else "same factors"),
            "differs": ", ".join(f"{k}={s['factors'][k]}" for k in diff),
            "estimate": rate["estimate"], "lo": lo, "hi": hi,
            "failures": s["failures"], "n_valid": s["n_valid"],
            "zero": s["failures"] == 0,
            "decision": _row_decision(arm_claims),
            "claims": [_claim_text(c, baseline) for c in arm_claims],
        })
    order: dict[str, int] = {"baseline": -1}
    for r in rows:
        order.setdefault(r["group"], len(order))
    rows.sort(key=lambda r: order[r["group"]])  # stable: arms keep the document's order
    return rows, left_out


def forest_headline(doc: Mapping[str, Any]) -> str:
    """The forest plot in words (its alt text): the reference, the claims, which arms lie
    below, inside or above the reference's interval, and what is not drawn."""
    case = doc["case"]
    unit, per = case["exposure"]["unit"], per_label(case["exposure"]["per"])
    rows, left_out = forest_rows(doc)
    base = next((r for r in rows if r["arm"] == case["baseline"]), None)
    parts = [f"Forest plot: failures per {per} {unit} per arm with exact 95% intervals"
             + (f", against the baseline's {_fmt(base['estimate'])} ({_fmt(base['lo'])}–{_fmt(base['hi'])})"
                if base else " (the baseline is not drawn)")]
    claims = doc.get("claims") or []
    if claims:
        n_sup = sum(c["decision"] == "supported" for c in claims)
        n_con = sum(c["decision"] == "contradicted" for c in claims)
        parts.append(f"{n_sup + n_con} of {len(claims)} claims decided ({n_sup} supported, "
                     f"{n_con} contradicted)")
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


def _layout_rows(rows: list[dict[str, Any]]) -> tuple[list[tuple[float, str]], float]:
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


def _save(fig: Any, png: Path, svg: Path | None, dpi: float = 200) -> None:
    """PNG (byte-stable: no software stamp) and SVG beside it (stable ids, text as text)."""
    import matplotlib.pyplot as plt

    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=dpi, metadata={"Software": None})
    if svg is not None:
        with plt.rc_context({"svg.hashsalt": "gpurepro", "svg.fonttype": "none"}):
            fig.savefig(svg, metadata={"Date": None})
    plt.close(fig)


def text_width(fig: Any, strings: list[str], **kw: Any) -> float:
    """The widest of strings at 9 pt (or as ``kw`` says), as a fraction of the figure's width,
    measured on the figure's own (Agg) renderer: layouts size their columns by it."""
    renderer = fig.canvas.get_renderer()
    widest = 0.0
    for string in strings:
        t = fig.text(0, 0, string, **{"fontsize": 9, **kw})
        widest = max(widest, t.get_window_extent(renderer).width / fig.bbox.width)
        t.remove()
    return widest


def rate_axis(ax: Any, xmin: float, xmax: float, ylim: tuple[float, float]) -> None:
    """A forest plot's axis: log scale of rates, rows top down, no y ticks, light grid."""
    from matplotlib.ticker import FuncFormatter, LogLocator

    ax.set_xscale("log")
    ax.set_xlim(xmin, xmax)
    ax.set_ylim(*ylim)
    ax.set_yticks([])
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    ax.xaxis.set_major_locator(LogLocator(base=10))
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


def forest_figure(doc: Mapping[str, Any]):
    """The forest plot as a matplotlib figure, and its rows (each with the y it is drawn at
    and the marker artist that carries its decision); None if no arm can be drawn."""
    import math

    rows, left_out = forest_rows(doc)
    if not rows:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    from matplotlib.transforms import blended_transform_factory

    case = doc["case"]
    unit = case["exposure"]["unit"]
    per = per_superscript(case["exposure"]["per"])
    has_claims = bool(doc.get("claims"))
    baseline = case["baseline"]

    headers, n_lines = _layout_rows(rows)

    # The x range: every interval and every zero-failure arrow, with a margin.
    arrow = 10 ** 0.4
    positives = [v for r in rows for v in (r["lo"], r["hi"], r["hi"] / arrow if r["zero"] else None)
                 if v and v > 0]
    xmin = 10 ** (math.log10(min(positives)) - 0.2)
    xmax = 10 ** (math.log10(max(positives)) + 0.2)
    base = next((r for r in rows if r["arm"] == baseline), None)

    # The text columns, measured so that none runs into the next.
    for r in rows:
        r["rate_text"] = (f"< {_num(r['hi'])}" if r["zero"]
                          else f"{_num(r['estimate'])} ({_num(r['lo'])}–{_num(r['hi'])})")
        r["claim_text"] = "; ".join(r["claims"]) if r["claims"] else (
            "(the reference)" if r["arm"] == baseline else "no claim")
    used = {r["decision"] for r in rows}
    n_handles = len(used) * bool(doc.get("claims")) + any(r["zero"] for r in rows) + (base is not None)
    legend_rows = 1 if n_handles <= 4 else 2

    # Layout in inches, 9 in wide at 100 dpi: GitHub's ~900 px.
    width, row_in = 9.0, 0.27
    top_in, note_in = 0.75, (0.3 if left_out else 0.0)
    legend_in, axis_in = 0.1 + 0.24 * legend_rows, 0.55
    bottom_in = note_in + legend_in + axis_in
    fig_h = top_in + row_in * n_lines + bottom_in
    fig = plt.figure(figsize=(width, fig_h), dpi=100)

    gap, name_x = 0.012, 0.012
    names_w = max(text_width(fig, [r["arm"] for r in rows]) + 0.012,
                  text_width(fig, [f"varies {g}" for _, g in headers], fontweight="bold"))
    count_w = text_width(fig, ["failed/valid"], fontsize=8.5)
    count_x = name_x + names_w + gap + count_w
    left = count_x + gap
    rate_w = max(text_width(fig, [r["rate_text"] for r in rows]), text_width(fig, [f"per {per} (95% CI)"], fontsize=8.5))
    claim_head = f"claim vs {baseline}: decision"
    claim_w = (min(max(text_width(fig, [r["claim_text"] for r in rows]), text_width(fig, [claim_head], fontsize=8.5)),
                   0.3) if has_claims else -gap)  # a document without claims: no such column
    right = max(1 - 0.01 - claim_w - gap - rate_w - gap, left + 0.3)
    rate_x = right + gap
    claim_x = rate_x + rate_w + gap
    room = 0.995 - claim_x
    for r in rows:  # a claim column that does not fit is cut, with an ellipsis
        while len(r["claim_text"]) > 4 and text_width(fig, [r["claim_text"]]) > room:
            r["claim_text"] = r["claim_text"][:-2] + "…"
    ax = fig.add_axes((left, bottom_in / fig_h, right - left, row_in * n_lines / fig_h))
    rate_axis(ax, xmin, xmax, (n_lines - 0.4, -0.6))

    band = "#E69F00"
    if base:
        ax.axvspan(base["lo"] if base["lo"] > 0 else xmin, base["hi"], color=band, alpha=0.2,
                   lw=0, zorder=0)
        if base["estimate"] > 0:
            ax.axvline(base["estimate"], color=band, lw=1.2, ls="--", zorder=1)

    lab = blended_transform_factory(fig.transFigure, ax.transData)
    text: dict[str, Any] = {"transform": lab, "va": "center", "fontsize": 9}
    for hy, group in headers:
        ax.text(name_x, hy, f"varies {group}", **text, ha="left", fontweight="bold",
                color="#333333")
    for r in rows:
        style = DECISION_STYLE[r["decision"]]
        colour, yy = style["color"], r["y"]
        r["artist"] = draw_rate(ax, yy, r, colour, style["marker"], arrow, ROW_LARGE)
        ax.text(name_x + (0.0 if r["arm"] == baseline else 0.012), yy, r["arm"], **text, ha="left",
                fontweight="bold" if r["arm"] == baseline else "normal")
        ax.text(count_x, yy, f"{r['failures']}/{r['n_valid']}", **text, ha="right", color="#555555")
        ax.text(rate_x, yy, r["rate_text"], **text, ha="left")
        if has_claims:
            ax.text(claim_x, yy, r["claim_text"], **text, ha="left",
                    color=colour if r["claims"] else "#555555")
    head = {**text, "va": "bottom", "fontsize": 8.5, "color": "#555555"}
    hy = -0.75
    ax.text(count_x, hy, "failed/valid", **head, ha="right")
    ax.text(rate_x, hy, f"per {per} (95% CI)", **head, ha="left")
    if has_claims:
        ax.text(claim_x, hy, claim_head, **head, ha="left")

    ax.set_xlabel(f"failures per {per} {unit} (log scale; exact Poisson 95% interval)", fontsize=9)
    ax.tick_params(axis="x", labelsize=9)
    claims = doc.get("claims") or []
    decided = sum(c["decision"] in ("supported", "contradicted") for c in claims)
    fig.text(name_x, 1 - 0.1 / fig_h, f"{case['name']}: failure rate per arm against {baseline}"
             + (f" ({decided} of {len(claims)} claims decided)" if claims else ""),
             ha="left", va="top", fontsize=11.5, fontweight="bold")

    handles: list[Any] = [Line2D([], [], linestyle="none", marker=s["marker"], color=s["color"], markersize=7,
                      label=s["label"]) for d, s in DECISION_STYLE.items() if d in used and has_claims]
    if not has_claims:  # a document without claims: every row is drawn in the no-claim style
        handles.append(Line2D([], [], linestyle="none", marker=DECISION_STYLE["no_claim"]["marker"],
                              color=DECISION_STYLE["no_claim"]["color"], markersize=7,
                              label="rate with its exact 95% interval"))
    if any(r["zero"] for r in rows):
        open_marker = "o" if has_claims else DECISION_STYLE["no_claim"]["marker"]
        handles.append(Line2D([], [], linestyle="none", marker=open_marker, markerfacecolor="white",
                              markeredgecolor="#333333", markeredgewidth=1.5, markersize=7,
                              label="no failure: upper bound (arrow toward 0)"))
    if base:
        handles.append(Patch(facecolor=band, alpha=0.35, label=f"{baseline}'s 95% interval"))
    fig.legend(handles=handles, loc="lower left", bbox_to_anchor=(name_x - 0.005, note_in / fig_h),
               ncol=len(handles) if legend_rows == 1 else 3, fontsize=8.5, frameon=False, handletextpad=0.3,
               columnspacing=1.2, borderaxespad=0.2)
    if left_out:
        note = "Not drawn: " + "; ".join(left_out)
        if len(note) > 160:
            note = note[:159] + "…"
        fig.text(name_x, 0.08 / fig_h, note, fontsize=8.5, ha="left", va="bottom", color="#555555")
    return fig, rows


def forest_plot(doc: Mapping[str, Any], png: Path, svg: Path | None = None) -> bool:
    """Write the forest plot (PNG, and SVG beside it); False if no arm can be drawn."""
    made = forest_figure(doc)
    if made is None:
        return False
    fig, _ = made
    # Twice GitHub's width in pixels, so it stays sharp when shown at ~900 px.
    _save(fig, png, svg)
    return True


# ---------------------------------------------------------------- the forest plot per GPU or host

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
        rate = (f"< {_fmt(c['hi'])}" if c["zero"] else
                f"{_fmt(c['estimate'])} ({_fmt(c['lo'])}–{_fmt(c['hi'])})") if c["hi"] is not None else "no exposure"
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
    headers, n_lines = _layout_rows(rows)

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
    _save(fig, png, svg)
    return True


def pyperf_suite(doc: Mapping[str, Any], path: Path) -> bool:
    """Per arm, the seconds to failure of its failed trials, as a pyperf suite
    (`python -m pyperf stats|compare_to` read it). Survivors are left out: their durations are
    the budget, not a measurement of the bug, and mixing the two is not one distribution."""
    import pyperf

    failure = set(doc["case"]["failure_outcomes"])
    benchmarks = []
    for arm in doc["summary"]:
        durations = [t["duration_s"] for t in doc["trials"]
                     if t["arm"] == arm and t["outcome"] in failure and t["duration_s"] > 0]
        if not durations:
            continue
        name = f"{doc['case']['name']}/{arm}/seconds-to-failure"
        runs = [pyperf.Run([d], metadata={"name": name, "unit": "second"}, collect_metadata=False)
                for d in durations]
        benchmarks.append(pyperf.Benchmark(runs))
    if not benchmarks:
        return False
    pyperf.BenchmarkSuite(benchmarks).dump(str(path), replace=True)
    return True


def write_report(doc: Mapping[str, Any], result_path: Path) -> dict[str, Path]:
    stem = result_path.with_suffix("")
    written: dict[str, Path] = {}
    drawn: dict[str, str | None] = {}
    for kind, suffix, draw in (("plot", "", plot), ("forest", ".forest", forest_plot),
                               ("forest_per_gpu", ".forest-per-gpu", per_gpu_plot)):
        png, svg = Path(f"{stem}{suffix}.png"), Path(f"{stem}{suffix}.svg")
        if draw(doc, png, svg):
            written[kind], written[f"{kind}_svg"] = png, svg
            drawn[kind] = png.name
        else:  # pictures from an earlier rendering no longer apply
            png.unlink(missing_ok=True)
            svg.unlink(missing_ok=True)
            drawn[kind] = None
    md = stem.with_suffix(".md")
    write_atomic(md, markdown(doc, drawn["plot"], drawn["forest"], drawn["forest_per_gpu"]))
    written["markdown"] = md
    perf = Path(str(stem) + ".pyperf.json")
    if pyperf_suite(doc, perf):
        written["pyperf"] = perf
    else:
        perf.unlink(missing_ok=True)  # a suite from an earlier rendering no longer applies
    return written
