"""Report: a result document -> GitHub-flavoured Markdown, section by section, and beside it
(``write_report``) the forest plot (forest.py), the survival plot (survival.py), the forest plot
per GPU or host (per_gpu.py).

Everything here is derived from the validated document alone, so anyone can regenerate the
report from an attached JSON with ``nox -s report -- results/<case>/<file>.json``.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ..model import phases
from ..model.files import write_atomic
from . import cluster as cluster_report
from . import families, gfm
from .forest import forest_headline, forest_plot
from .numbers import fmt, fmt_ci, fmt_p
from .per_gpu import per_gpu_headline, per_gpu_plot
from .pyperf_suite import write_suite
from .survival import plot, survival_headline
from .tables import address, code, escape, fence, table
from .timed import clocks_section
from .times_plot import times_headline, times_plot
from .wrong import per_trial
from .wrong import section as wrong_section

# What other modules use; the rest is this module's own.
__all__ = [
    "claims_table", "condition_rows", "environment_rows", "markdown", "python_frames_table",
    "resumes", "runtime_rows", "threads_table", "write_report"
]


def _differs(factors: Mapping[str, Any], base: Mapping[str, Any]) -> str:
    diff = [escape(f"{k}={v}") for k, v in factors.items() if base.get(k) != v]
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
    found = env["repository"].get("manifest") or {}
    if found.get("found") not in (None, "named"):  # the commit record found (record/provenance)
        rows.append(("Repository: the commit", str(found.get("note"))))
    facts = env.get("cuda_python") or {}
    if facts.get("source"):  # what the driver says through cuda.bindings (env/fingerprint.py)
        rows.append((f"Module loading / driver API ({facts['source']})",
                     f"{facts.get('module_loading') or '–'} / "
                     f"{facts.get('driver_api_version') or '–'}"))
    rows += condition_rows(env.get("conditions"))
    for name, version in sorted(doc["toolchain"].get("resolved", {}).items()):
        rows.append((name, str(version)))
    for tool, version in sorted(doc["toolchain"].get("tools", {}).items()):
        rows.append((tool, version))
    # Every value came from the document (a GPU's name, a tool's version string): as text.
    return [(escape(label), escape(value)) for label, value in rows]


def condition_rows(conditions: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """The environment's conditions that change a race's rate (recorded since the fingerprint
    has them; an older document has none)."""
    if not conditions:
        return []
    cpu = conditions.get("cpu") or {}
    virt = conditions.get("virtualization") or {}
    governor = ", ".join(f"{g} ({c})" for g, c in (cpu.get("governor") or {}).items()) or "–"
    rows = [("CPUs usable / affinity / governor",
             f"{cpu.get('usable_cores', '–')} / {cpu.get('affinity') or '–'} / {governor}"),
            ("Hypervisor / container",
             f"{'yes' if virt.get('hypervisor') else 'no'}"
             f"{' (' + str(virt['vendor']) + ')' if virt.get('vendor') else ''} / "
             f"{virt.get('container') or 'none'}")]
    for g in conditions.get("gpus") or []:
        rows.append((f"GPU {g.get('index')} modes",
                     f"persistence {g.get('persistence_mode') or '–'}, compute {g.get('compute_mode') or '–'}, "
                     f"MIG {g.get('mig_mode') or '–'}, ECC {g.get('ecc_mode') or '–'}, application "
                     f"clocks {g.get('application_clock_graphics_mhz') or '–'}/"
                     f"{g.get('application_clock_memory_mhz') or '–'} MHz"))
    return rows


def _claim_rows(claims: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    rows = []
    for c in claims:
        kind = c["kind"] + (f" (×{c['margin']:g})" if c.get("margin") else "") + (
            f" {c['outcome']}" + (f" {c['detail']}" if c.get("detail") else "") if c["kind"] == "outcome" else "") + (
            f" in {c['stratum']}" if c.get("stratum") else "") + (
            f" {'<' if c.get('bound') == 'below' else '>'} {c['share']:.0%}"
            if c["kind"] == "outcome" and c.get("share") is not None else "")
        # An exploratory claim is decided once, at the end: no look of the design; one decided
        # from the case's declared determinism, at no look either.
        when = ("end" if families.is_exploratory(c) else
                "declared determinism" if c.get("deterministic") and c["decision"] != "not_decided"
                else c['look'])
        rows.append([code(c['name']), code(c['arm']), escape(kind),
                     code(c['reference']) if c.get('reference') else '–', escape(c['test']),
                     fmt_p(c['p_value']), fmt(c['threshold']),
                     f"**{escape(families.decision_text(c))}** ({escape(when)})"])
    return rows


def claims_table(doc: Mapping[str, Any]) -> str:
    """The claims, the confirmatory family first under the design's statement, then the
    exploratory one under its own: the family-wise promise counts only the first."""
    claims = doc["claims"]
    if not claims:
        return "### Claims\n\nThis run's arms take part in no claim.\n"
    head = ["claim", "arm", "kind", "reference", "test", "p", "threshold", "decision (look)"]
    lines = ["### Claims\n", escape(families.design_statement(doc), "prose") + "\n"]
    confirmatory = families.confirmatory(claims)
    if confirmatory:
        lines += table(head, _claim_rows(confirmatory))
        lines.append("")
    exploratory_text = families.exploratory_statement(doc)
    if exploratory_text:
        lines += ["#### Exploratory claims\n", escape(exploratory_text, "prose") + "\n"]
        lines += table(head, _claim_rows(families.exploratory(claims)))
        lines.append("")
    return "\n".join(lines)


def _verdict_section(doc: Mapping[str, Any]) -> list[str]:
    case, verdict = doc["case"], doc["verdict"]
    out = [f"## gpurepro: {code(case['name'])} — {escape(verdict['status'])}\n",
           f"**Question.** {escape(case['question'], 'prose')}\n"]
    if case.get("report_url"):
        out.append(f"Report: {address(case['report_url'])}\n")
    out.append("### Verdict\n")
    out += [f"- {escape(s, 'prose')}" for s in verdict["sentences"]]
    if verdict.get("not_decided"):
        out.append("\n**Not decided:**")
        out += [f"- {escape(s, 'prose')}" for s in verdict["not_decided"]]
    if verdict.get("exploratory"):
        out.append("\n**Exploratory** (outside the family-wise error rate; no owner rests on "
                   "them):")
        out += [f"- {escape(s, 'prose')}" for s in verdict["exploratory"]]
    if verdict.get("owner"):
        because = verdict.get("owner_because") or []
        out.append(f"\n**Owner:** {escape(verdict['owner'], 'prose')}"
                   + (f" (decided claims: {', '.join(code(c) for c in because)})" if because else ""))
    if verdict.get("hypotheses"):
        out.append("\n**Hypotheses** (not shown by any arm of this run):")
        out += [f"- {escape(s, 'prose')}" for s in verdict["hypotheses"]]
    if verdict.get("next"):
        out.append("\n**Next:**")
        out += [f"- {escape(s, 'prose')}" for s in verdict["next"]]
    out.append("")
    return out


def _plan_line(doc: Mapping[str, Any]) -> str:
    opts = doc["plan"].get("options", {})
    budget = opts.get("budget", {})
    unit = escape(doc["case"]["exposure"]["unit"])
    budget_exposure = budget.get("max_exposure")
    return (f"Plan: {len(doc['plan']['order'])} trials, shuffled (seed {doc['plan']['seed']}); "
            f"per trial {budget.get('duration_s')} s"
            + (f" or {budget_exposure} {unit}" if budget_exposure else "")
            + f", limit {budget.get('timeout_s')} s; {opts.get('jobs', 1)} trial(s) at a time"
            + (" per Slurm array task and GPU" if doc.get("cluster") else "")
            + (f" on GPUs {escape(', '.join(map(str, opts['gpus'])))}" if opts.get("gpus") else "")
            + (f"; sequential stopping: {escape(opts['stopping'].get('method'))}" if opts.get("stopping") else "")
            + ".\n")


def _errors_by_arm(doc: Mapping[str, Any]) -> dict[str, str]:
    """Per arm, the CUDA errors its trials ended with, and at which call: 'NAME at call ×n'."""
    from collections import Counter

    counts: dict[str, Counter[str]] = {}
    for t in doc["trials"]:
        if t.get("outcome") == "cuda_error":
            where = f" at {t['call']}" if t.get("call") else ""
            counts.setdefault(t["arm"], Counter())[f"{t.get('detail')}{where}"] += 1
    return {arm: "; ".join(f"{escape(k)} ×{n}" for k, n in c.most_common()) for arm, c in counts.items()}


def _arms_section(doc: Mapping[str, Any]) -> list[str]:
    case = doc["case"]
    unit, per = escape(case["exposure"]["unit"]), case["exposure"]["per"]
    base_factors = doc["summary"].get(case["baseline"], {}).get("factors", {})
    # Arms whose claims are about an outcome (they are meant to fail at once): a rate per unit
    # of exposure says nothing there.
    claims = doc.get("claims") or []
    rate_arms = {a for c in claims if c["kind"] not in ("outcome", "concentrated")
                 for a in (c["arm"], c.get("reference"))}
    outcome_arms = {c["arm"] for c in claims if c["kind"] == "outcome"} - rate_arms
    errors = _errors_by_arm(doc)
    trials = per_trial(doc)  # a case that checks its output: proportions, no rates
    head = ["arm", "differs from baseline", "outcomes", "failed / valid", "CUDA errors (at call)",
            "proportion (95% CI)", f"exposure ({unit})", f"failures per {fmt(per)} {unit} (95% CI)",
            f"median {unit} to failure"]
    rows = []
    for arm, s in doc["summary"].items():
        outcomes = escape(", ".join(f"{k} {v}" for k, v in s["outcomes"].items()))
        first = [code(arm), _differs(s['factors'], base_factors), outcomes]
        if s["n_valid"] == 0:
            rows.append([*first, "no valid trial: nothing to measure", "", "", "", "", ""])
            continue
        prop, rate = s["proportion"], s["exposure"]["rate"]
        km = (s.get("time_to_failure") or {}).get("exposure") or {}
        meaningful = arm not in outcome_arms and s["exposure"]["total"] > 0 and not trials
        median = (fmt(km.get('median')) if km.get('median') is not None
                  else 'not reached' if s['failures'] else '–')
        rows.append([*first, f"{s['failures']} / {s['n_valid']}", errors.get(arm, '–'),
                     f"{fmt(prop['estimate'])} {fmt_ci(prop['ci95'])}"]
                    + ([fmt(s['exposure']['total']), f"{fmt(rate['estimate'])} {fmt_ci(rate['ci95'])}",
                        median] if meaningful else
                       ["–", "– (a trial is the unit)" if trials else "– (an outcome arm)", "–"]))
    out = ["### Arms\n", _plan_line(doc), *table(head, rows), ""]
    return out


def _comparisons_section(doc: Mapping[str, Any]) -> list[str]:
    if not doc["comparisons"]:
        return []
    rows = [[code(arm), fmt_p(c['fisher']['p_value']), fmt(c['fisher']['odds_ratio']),
             f"{fmt(c['rate_ratio']['estimate'])} {fmt_ci(c['rate_ratio']['ci95'])}",
             fmt_p(c['rate_ratio']['p_value'])] for arm, c in doc["comparisons"].items()]
    return [f"### Each arm against {code(doc['case']['baseline'])} (descriptive; decisions are the claims')\n",
            *table(["arm", "Fisher exact p (trials)", "odds ratio", "rate ratio (95% CI)", "rate p"],
                   rows), ""]


def _old_stopping_section(doc: Mapping[str, Any]) -> list[str]:
    """Documents from before claims carried per-arm stopping decisions."""
    decisions = ((doc["plan"].get("options", {}).get("stopping")) or {}).get("decisions") or {}
    if not decisions or doc.get("claims"):
        return []
    rows = [[code(arm), escape(f"{d['decision']} ({d.get('test', 'fisher')})"),
             f"{d['at_trials']} ({d['baseline_trials']})", fmt_p(d['p_value']), f"{d['threshold']:.3g}"]
            for arm, d in decisions.items()]
    return ["### Sequential stopping\n",
            *table(["arm", "decision", "at trials (baseline)", "p", "threshold"], rows), ""]


def _per_gpu_section(doc: Mapping[str, Any], per_gpu_name: str | None = None) -> list[str]:
    """The failures per GPU, as a table and (when drawn) the forest plot faceted by GPU."""
    multi = bool(doc.get("per_gpu")) and len(doc["per_gpu"]) > 1
    if not multi and not per_gpu_name:
        return []
    out = ["### Per GPU (failures / valid trials)\n" if multi else "### Per host\n"]
    if per_gpu_name:
        out.append(f"![{_alt(per_gpu_headline(doc))}]({_target(per_gpu_name)})\n")
    if multi:
        arms = list(doc["summary"])
        out += table(["GPU", *(code(a) for a in arms)],
                     [[escape(gpu), *(f"{cells[a]['failures']}/{cells[a]['valid']}" if a in cells else "–"
                              for a in arms)] for gpu, cells in doc["per_gpu"].items()])
    out.append("")
    return out


def _crash_sites_section(doc: Mapping[str, Any]) -> list[str]:
    if not doc["crash_sites"]:
        return []
    rows = []
    for b in doc["crash_sites"]:
        frames = escape(" ← ".join(f"{f['module']}+{f['offset']}" for f in (b.get("frames") or [])[1:4]))
        fault = b.get("fault_in") or {}
        arms = escape(", ".join(f"{a} {n}" for a, n in b["arms"].items()))
        rows.append([b['count'], escape(f"{b.get('signal')} {b.get('code_name') or ''}"),
                     f"{code(str(b.get('pc_module')) + '+' + str(b.get('pc_offset')))} ({escape(b.get('pc_perms') or '?')})",
                     escape(fault.get('module', '–')), frames or '–', arms])
    return ["### Crash sites\n",
            *table(["count", "signal", "faulting PC", "fault address in", "first frames", "arms"],
                   rows), ""]


def _threads_section(doc: Mapping[str, Any]) -> list[str]:
    """Where each thread was at each crash, per arm (drivers that publish their calls)."""
    rows = threads_table(doc["trials"], doc["case"].get("failure_outcomes") or ("crashed",))
    if not rows:
        return []
    return ["### Threads at the crash\n",
            "The driver call each worker thread was in (or last left), from the crash record "
            "(relaxed stores, published around every call). Read at the fault: the crash "
            "handler's copy on entry, before anything slow. Read after the handler's slow work: "
            "a record from before that copy, read after the backtrace and the /proc/self/maps "
            "scan while the other threads ran on, so not the state at the fault.\n",
            *rows, ""]


def threads_table(trials: Iterable[Mapping[str, Any]],
                  failure_outcomes: Sequence[str] = ("crashed",)) -> list[str]:
    """Where each thread was at each crash (gpurepro.model.phases): a row per (arm, when it was
    read, label), most frequent first within an arm, rows read at the fault before those read
    after the handler's slow work; no lines when no failed trial's crash record has threads."""
    trials = list(trials)
    rows = []
    for read_at_fault in (True, False):
        for arm, (counts, without) in phases.by_arm(trials, failure_outcomes,
                                                    read_at_fault=read_at_fault).items():
            total = sum(counts.values())
            for lab, n in counts.most_common():
                fault, others = lab.split(" | ", 1)
                rows.append([code(arm), escape(fault), escape(others), phases.READ[read_at_fault],
                             f"{n} of {total}" + (f" (+{without} without)" if without else "")])
    if not rows:
        return []
    return table(["arm", "faulting thread", "the other threads", "read", "crash records"], rows)


PYTHON_FRAMES_SHOWN = 6  # of the faulting thread's frames, the most recent


def python_frames_table(trials: Iterable[Mapping[str, Any]],
                        failure_outcomes: Sequence[str] = ("crashed",)) -> list[str]:
    """The faulting thread's Python frames at each crash (a Python driver's
    ``crash.python_frames``), most recent call first: a row per arm and stack, the most
    frequent first within an arm; no lines when no failed trial's crash record has them."""
    stacks: dict[str, Counter[str]] = {}
    for t in trials:
        if t.get("outcome") not in failure_outcomes:
            continue
        threads = (t.get("crash") or {}).get("python_frames") or []
        current = next((th for th in threads if th.get("current")), None)
        frames = (current or {}).get("frames") or []
        if not frames:
            continue
        shown = [code(f"{f.get('file')}:{f.get('line') if f.get('line') is not None else '?'} "
                      f"{f.get('function')}") for f in frames[:PYTHON_FRAMES_SHOWN]]
        more = len(frames) - PYTHON_FRAMES_SHOWN
        stack = " ← ".join(shown) + (f" ← {more} more" if more > 0 else "")  # every frame a code span
        stacks.setdefault(str(t.get("arm")), Counter())[stack] += 1
    rows = []
    for arm, counts in stacks.items():
        total = sum(counts.values())
        rows += [[code(arm), stack, f"{n} of {total}"] for stack, n in counts.most_common()]
    if not rows:
        return []
    return table(["arm", "faulting thread's Python frames (most recent call first)",
                  "crash records"], rows)


def _python_frames_section(doc: Mapping[str, Any]) -> list[str]:
    rows = python_frames_table(doc["trials"], doc["case"].get("failure_outcomes") or ("crashed",))
    if not rows:
        return []
    return ["### Python frames at the crash\n",
            "A Python driver's faulting thread at the fault, from faulthandler's dump after the "
            "native crash record (`file:line function`, the checkout's paths relative).\n",
            *rows, ""]


def runtime_rows(doc: Mapping[str, Any]) -> list[list[str]]:
    """Per arm that pins runtime packages: requested, resolved, and what the node provided."""
    rows = []
    for arm, r in (doc.get("runtime") or {}).get("arms", {}).items():
        node = "; ".join(f"{n.get('requirement')} (of {n.get('of')}): "
                         f"{n.get('version') or 'not installed'}"
                         + {True: "", False: ", does not meet it", None: ", unknown"}[n.get("met")]
                         for n in r.get("from_node") or [])
        rows.append([arm, ", ".join(map(str, r.get("requested") or [])),
                     ", ".join(f"{k} {v}" for k, v in sorted((r.get("resolved") or {}).items())),
                     node or "–"])
    # Every value came from the document (a package's name, a version the node reported): as text.
    return [[escape(c) for c in r] for r in rows]


def _runtime_section(doc: Mapping[str, Any]) -> list[str]:
    rows = runtime_rows(doc)
    if not rows:
        return []
    python = doc["runtime"].get("python")
    return ["", f"### Runtime packages (wheels for Python {escape(python)}, unpacked on the node)\n",
            *table(["arm", "requested", "resolved", "left to the node"], rows)]


def _analyses_section(doc: Mapping[str, Any]) -> list[str]:
    out = []
    for name, analysis in (doc.get("analyses") or {}).items():
        out.append(f"### Analysis: {escape(name)}\n")
        if isinstance(analysis, Mapping) and analysis.get("markdown"):
            out.append(escape(analysis["markdown"], "markdown"))
        else:
            out.append("\n".join(fence(json.dumps(analysis, indent=1)[:4000], "json")))
        out.append("")
    return out


def _probe_section(doc: Mapping[str, Any]) -> list[str]:
    p = doc.get("probe")
    if not p:
        return []
    out = ["### Device probe\n",
           f"The case cannot run here; one trial command was run to show what happens: "
           f"{code(' '.join(map(str, p.get('command', []))))} → {escape(p.get('outcome'))} "
           f"({escape(p.get('detail'))}).\n"]
    if p.get("stdout_tail"):
        out.append("\n".join(fence(str(p["stdout_tail"])[-1500:])) + "\n")
    return out


def _when(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def resumes(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each resume of the run's journal with the trials that started after it (before the next
    resume): which trials ran on the device that resume found, which may not be the one the
    document's device and environment name (``--other-device``)."""
    found = list(doc.get("resumed") or [])
    starts = [(_when(t["started_at"]), int(t["index"])) for t in doc.get("trials") or []
              if t.get("started_at")]
    out = []
    for i, r in enumerate(found):
        begin = _when(r["at"])
        end = _when(found[i + 1]["at"]) if i + 1 < len(found) else None
        after = sorted(n for when, n in starts if when >= begin and (end is None or when < end))
        out.append({**r, "trials": after})
    return out


def _trial_span(indices: Sequence[int]) -> str:
    """How many trials, and their plan indices (a range where they run unbroken)."""
    if not indices:
        return "none"
    if list(indices) == list(range(indices[0], indices[-1] + 1)) and len(indices) > 2:
        return f"{len(indices)}: indices {indices[0]}–{indices[-1]}"
    return f"{len(indices)}: {'index' if len(indices) == 1 else 'indices'} {', '.join(map(str, indices))}"


def _resumed_section(doc: Mapping[str, Any]) -> list[str]:
    found = resumes(doc)
    if not found:
        return []
    rows = []
    for r in found:
        d = r.get("device") or {}
        rows.append([escape(r["at"]),
                     f"{escape(d.get('name'))} {code(d.get('uuid'))}, driver {escape(d.get('driver_version'))}",
                     "**another device**: " + "; ".join(escape(x) for x in r.get("differs") or [])
                     if r.get("other_device") else "the journal's",
                     _trial_span(r["trials"])])
    out = ["### Resumed\n", *table(["resumed at", "device found", "device", "trials started after"], rows), ""]
    if any(r.get("other_device") for r in found):
        out.append("Trials journaled after a resume with `--other-device` ran on the device that "
                   "resume found, not on the one the Environment names.\n")
    return out


def _environment_section(doc: Mapping[str, Any]) -> list[str]:
    out = ["### Environment\n", *table(["", ""], environment_rows(doc))]
    out += ["", "### Artifacts\n",
            *table(["artifact", "sha256"], [[f"{code(name)} ({escape(a['path'])})", code(f"{a['sha256'][:16]}…")]
                                            for name, a in doc["artifacts"].items()])]
    out += _runtime_section(doc)
    out += ["", f"_Generated by gpurepro {escape(doc['gpurepro_version'])} at {escape(doc['created_at'])}._\n"]
    return out


def _alt(text: str) -> str:
    """Text safe inside Markdown image brackets."""
    return escape(" ".join(text.replace("[", "(").replace("]", ")").split()))


def _target(name: str) -> str:
    """A picture's file name as a link target: percent-encoded, so that a document named with
    markup ends no link and opens no HTML (a plain name is written as it is)."""
    return quote(name, safe="")


def markdown(doc: Mapping[str, Any], plot_name: str | None = None,
             forest_name: str | None = None, per_gpu_name: str | None = None,
             times_name: str | None = None) -> str:
    """The report, section by section; each section renders from the document alone. Each
    picture named is referenced with its headline in words as the alt text."""
    out = _verdict_section(doc)
    if times_name:
        out.append(f"![{_alt(times_headline(doc))}]({_target(times_name)})\n")
    if forest_name:
        out.append(f"![{_alt(forest_headline(doc))}]({_target(forest_name)})\n")
    out += _arms_section(doc)
    if doc.get("claims"):
        out.append(claims_table(doc))
    out += clocks_section(doc)
    out += (_old_stopping_section(doc) + _comparisons_section(doc) + _per_gpu_section(doc, per_gpu_name)
            + cluster_report.section(doc) + wrong_section(doc) + _crash_sites_section(doc)
            + _threads_section(doc) + _python_frames_section(doc)
            + _analyses_section(doc) + _probe_section(doc) + _resumed_section(doc))
    if plot_name:
        out.append(f"![{_alt(survival_headline(doc))}]({_target(plot_name)})\n")
    out += _environment_section(doc)
    # Parsed as GitHub parses it, the report holds nothing live but its own pictures and the
    # case's report link; a document string that would be is refused, not written (gfm.py).
    own = {doc["case"]["report_url"]} if doc["case"].get("report_url") else set()
    return gfm.check("\n".join(out), f"the report of {doc['case'].get('name')!r}", own)


def write_report(doc: Mapping[str, Any], result_path: Path) -> dict[str, Path]:
    stem = result_path.with_suffix("")
    written: dict[str, Path] = {}
    drawn: dict[str, str | None] = {}
    for kind, suffix, draw in (("plot", "", plot), ("forest", ".forest", forest_plot),
                               ("forest_per_gpu", ".forest-per-gpu", per_gpu_plot),
                               ("times", ".times", times_plot)):
        png, svg = Path(f"{stem}{suffix}.png"), Path(f"{stem}{suffix}.svg")
        if draw(doc, png, svg):
            written[kind], written[f"{kind}_svg"] = png, svg
            drawn[kind] = png.name
        else:  # pictures from an earlier rendering no longer apply
            png.unlink(missing_ok=True)
            svg.unlink(missing_ok=True)
            drawn[kind] = None
    md = stem.with_suffix(".md")
    write_atomic(md, markdown(doc, drawn["plot"], drawn["forest"], drawn["forest_per_gpu"],
                              drawn["times"]))
    written["markdown"] = md
    # The timed trials' pyperf suite (report/pyperf_suite.py); a document without timed trials
    # has none, and a suite an earlier rendering left (once the seconds to failure of failed
    # trials, docs/format.md) goes.
    suite = write_suite(doc, stem)
    if suite is not None:
        written["pyperf"] = suite
    return written
