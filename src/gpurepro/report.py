"""Report: a result document -> GitHub-flavoured Markdown, a survival plot, a pyperf suite.

Everything here is derived from the validated document alone, so anyone can regenerate the
report from an attached JSON with ``nox -s report -- results/<case>/<file>.json``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .record import write_atomic


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
            f" {c['outcome']}" + (f" {c['detail']}" if c.get("detail") else "") if c["kind"] == "outcome" else "")
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
    rate_arms = {a for c in claims if c["kind"] != "outcome" for a in (c["arm"], c.get("reference"))}
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


def _per_gpu_section(doc: Mapping[str, Any]) -> list[str]:
    if not doc.get("per_gpu") or len(doc["per_gpu"]) <= 1:
        return []
    arms = list(doc["summary"])
    out = ["### Per GPU (failures / valid trials)\n",
           "| GPU | " + " | ".join(f"`{a}`" for a in arms) + " |", "|---|" + "---|" * len(arms)]
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


def markdown(doc: Mapping[str, Any], plot_name: str | None = None) -> str:
    """The report, section by section; each section renders from the document alone."""
    out = _verdict_section(doc) + _arms_section(doc)
    if doc.get("claims"):
        out.append(claims_table(doc))
    out += (_old_stopping_section(doc) + _comparisons_section(doc) + _per_gpu_section(doc)
            + _crash_sites_section(doc) + _analyses_section(doc) + _probe_section(doc))
    if plot_name:
        out.append(f"![survival curves per arm]({plot_name})\n")
    out += _environment_section(doc)
    return "\n".join(out)


def plot(doc: Mapping[str, Any], path: Path) -> bool:
    """Kaplan-Meier survival of exposure-to-failure per arm; False if there is nothing to plot."""
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
    # Arms that never failed would lie on top of each other along 1.0: they are named in the
    # legend instead of drawn.
    survivors = [a for a in curves if not doc["summary"][a]["failures"]]
    # Arms whose counter is too coarse to be an exposure axis (a once-a-second printout) would
    # draw crashes at 1 cycle: left out, and named.
    coarse = [a for a in curves
              if str(curves[a].get("median_method", "")).startswith("none: the exposure counter is coarse")]
    drawn = [a for a in curves if a not in survivors and a not in coarse]
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
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
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
    png = stem.with_suffix(".png")
    has_plot = plot(doc, png)
    if has_plot:
        written["plot"] = png
    md = stem.with_suffix(".md")
    write_atomic(md, markdown(doc, png.name if has_plot else None))
    written["markdown"] = md
    perf = Path(str(stem) + ".pyperf.json")
    if pyperf_suite(doc, perf):
        written["pyperf"] = perf
    else:
        perf.unlink(missing_ok=True)  # a suite from an earlier rendering no longer applies
    return written
