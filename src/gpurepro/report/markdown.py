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
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ..model import phases
from ..model.files import write_atomic
from ..model.jsontypes import JSONValue
from ..model.result import ClaimDecision, Estimate, Result, Resume, Verdict, as_result
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
    "Resumed", "resumes", "runtime_rows", "threads_table", "write_report"
]


def _differs(factors: Mapping[str, Any], base: Mapping[str, Any]) -> str:
    diff = [escape(f"{k}={v}") for k, v in factors.items() if base.get(k) != v]
    return ", ".join(diff) if diff else "(baseline)"


def _known(value: object) -> object:
    """A fact the document does not name, as the reports write it: "–"."""
    return "–" if value is None else value


def _verdict(r: Result) -> Verdict:
    """The run's verdict (a validated document has one)."""
    assert r.verdict is not None
    return r.verdict


def environment_rows(doc: Result | Mapping[str, Any]) -> list[tuple[str, str]]:
    r = as_result(doc)
    env = r.environment
    gpu, dev, host, repo = env.gpu, r.device, env.host, env.repository
    g0 = gpu.gpus[0] if gpu.gpus else None
    rows: list[tuple[str, object]] = [
        ("GPU", f"{_known(g0.name)} × {len(gpu.gpus)}" if g0 else f"none ({gpu.reason})"),
        ("Compute capability", str(_known(g0.compute_capability if g0 else None))),
        ("GPU memory", f"{g0.memory_mib} MiB" if g0 and g0.memory_mib else "–"),
        ("GPU UUID / PCI", f"{_known(g0.uuid if g0 else None)} / "
                           f"{_known(g0.pci_bus_id if g0 else None)}"),
        ("Driver / CUDA driver API", f"{gpu.driver_version or '–'} / {gpu.cuda_driver_api or '–'}"),
        ("Target", f"{dev.target} ({'supported' if dev.supported else 'NOT supported: ' + str(dev.reason)})"),
        ("OS / kernel / glibc", f"{host.os} / {host.kernel} / {host.glibc}"),
        ("CPU", f"{host.cpu} ({host.cpu_count} cores)"),
        ("Python", _known(host.python)),
        ("Repository", f"{repo.commit or '–'}{' (dirty)' if repo.dirty else ''}"),
    ]
    if repo.manifest_found not in (None, "named"):  # the commit record found (record/provenance)
        rows.append(("Repository: the commit", str(repo.manifest_note)))
    facts = env.cuda_python
    if facts.source:  # what the driver says through cuda.bindings (env/fingerprint.py)
        rows.append((f"Module loading / driver API ({facts.source})",
                     f"{facts.module_loading or '–'} / {facts.driver_api_version or '–'}"))
    rows += condition_rows(env.conditions)
    for name, version in sorted(r.toolchain.resolved.items()):
        rows.append((name, str(version)))
    for tool, version in sorted(r.toolchain.tools.items()):
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


def _claim_rows(claims: Sequence[ClaimDecision]) -> list[list[str]]:
    rows = []
    for c in claims:
        kind = str(c.kind) + (f" (×{c.margin:g})" if c.margin else "") + (
            f" {c.outcome}" + (f" {c.detail}" if c.detail else "") if c.kind == "outcome" else "") + (
            f" in {c.stratum}" if c.stratum else "") + (
            f" {'<' if c.bound == 'below' else '>'} {c.share:.0%}"
            if c.kind == "outcome" and c.share is not None else "")
        # An exploratory claim is decided once, at the end: no look of the design; one decided
        # from the case's declared determinism, at no look either.
        when = ("end" if families.is_exploratory(c) else
                "declared determinism" if c.deterministic and c.decision != "not_decided"
                else c.look)
        rows.append([code(c.name), code(c.arm), escape(kind),
                     code(c.reference) if c.reference else '–', escape(c.test),
                     fmt_p(c.p_value), fmt(c.threshold),
                     f"**{escape(families.decision_text(c))}** ({escape(when)})"])
    return rows


def claims_table(doc: Result | Mapping[str, Any]) -> str:
    """The claims, the confirmatory family first under the design's statement, then the
    exploratory one under its own: the family-wise promise counts only the first."""
    r = as_result(doc)
    claims = r.claims
    if not claims:
        return "### Claims\n\nThis run's arms take part in no claim.\n"
    head = ["claim", "arm", "kind", "reference", "test", "p", "threshold", "decision (look)"]
    lines = ["### Claims\n", escape(families.design_statement(r), "prose") + "\n"]
    confirmatory = families.confirmatory(claims)
    if confirmatory:
        lines += table(head, _claim_rows(confirmatory))
        lines.append("")
    exploratory_text = families.exploratory_statement(r)
    if exploratory_text:
        lines += ["#### Exploratory claims\n", escape(exploratory_text, "prose") + "\n"]
        lines += table(head, _claim_rows(families.exploratory(claims)))
        lines.append("")
    return "\n".join(lines)


def _verdict_section(r: Result) -> list[str]:
    case, verdict = r.case, _verdict(r)
    out = [f"## gpurepro: {code(case.name)} — {escape(verdict.status)}\n",
           f"**Question.** {escape(case.question, 'prose')}\n"]
    if case.report_url:
        out.append(f"Report: {address(case.report_url)}\n")
    out.append("### Verdict\n")
    out += [f"- {escape(s, 'prose')}" for s in verdict.sentences]
    if verdict.not_decided:
        out.append("\n**Not decided:**")
        out += [f"- {escape(s, 'prose')}" for s in verdict.not_decided]
    if verdict.exploratory:
        out.append("\n**Exploratory** (outside the family-wise error rate; no owner rests on "
                   "them):")
        out += [f"- {escape(s, 'prose')}" for s in verdict.exploratory]
    if verdict.owner:
        because = verdict.owner_because or ()
        out.append(f"\n**Owner:** {escape(verdict.owner, 'prose')}"
                   + (f" (decided claims: {', '.join(code(c) for c in because)})" if because else ""))
    if verdict.hypotheses:
        out.append("\n**Hypotheses** (not shown by any arm of this run):")
        out += [f"- {escape(s, 'prose')}" for s in verdict.hypotheses]
    if verdict.next:
        out.append("\n**Next:**")
        out += [f"- {escape(s, 'prose')}" for s in verdict.next]
    out.append("")
    return out


def _plan_line(r: Result) -> str:
    opts = r.options
    budget = opts.budget
    unit = escape(r.case.exposure_unit)
    budget_exposure = budget.get("max_exposure")
    return (f"Plan: {len(r.plan.order)} trials, shuffled (seed {r.plan.seed}); "
            f"per trial {budget.get('duration_s')} s"
            + (f" or {budget_exposure} {unit}" if budget_exposure else "")
            + f", limit {budget.get('timeout_s')} s; {opts.jobs} trial(s) at a time"
            + (" per Slurm array task and GPU" if r.cluster else "")
            + (f" on GPUs {escape(', '.join(map(str, opts.gpus)))}" if opts.gpus else "")
            + (f"; sequential stopping: {escape(r.design.described.get('method'))}"
               if r.design.sequential else "")
            + ".\n")


def _errors_by_arm(r: Result) -> dict[str, str]:
    """Per arm, the CUDA errors its trials ended with, and at which call: 'NAME at call ×n'."""
    counts: dict[str, Counter[str]] = {}
    for t in r.trials:
        if t.outcome == "cuda_error":
            where = f" at {t.call}" if t.call else ""
            counts.setdefault(t.arm, Counter())[f"{t.detail}{where}"] += 1
    return {arm: "; ".join(f"{escape(k)} ×{n}" for k, n in c.most_common()) for arm, c in counts.items()}


def _arms_section(r: Result) -> list[str]:
    case = r.case
    unit, per = escape(case.exposure_unit), case.exposure_per
    base = r.arms.get(case.baseline)
    base_factors = base.factors if base else {}
    # Arms whose claims are about an outcome (they are meant to fail at once): a rate per unit
    # of exposure says nothing there.
    claims = r.claims
    rate_arms = {a for c in claims if c.kind not in ("outcome", "concentrated")
                 for a in (c.arm, c.reference)}
    outcome_arms = {c.arm for c in claims if c.kind == "outcome"} - rate_arms
    errors = _errors_by_arm(r)
    trials = per_trial(r)  # a case that checks its output: proportions, no rates
    head = ["arm", "differs from baseline", "outcomes", "failed / valid", "CUDA errors (at call)",
            "proportion (95% CI)", f"exposure ({unit})", f"failures per {fmt(per)} {unit} (95% CI)",
            f"median {unit} to failure"]
    rows = []
    for arm, s in r.arms.items():
        outcomes = escape(", ".join(f"{k} {v}" for k, v in s.outcomes.items()))
        first = [code(arm), _differs(s.factors, base_factors), outcomes]
        if s.n_valid == 0:
            rows.append([*first, "no valid trial: nothing to measure", "", "", "", "", ""])
            continue
        prop, rate = s.proportion, s.exposure.rate
        km = s.time_to_failure.exposure
        to_failure = km.median if km else None
        meaningful = arm not in outcome_arms and s.exposure.total > 0 and not trials
        median = (fmt(to_failure) if to_failure is not None
                  else 'not reached' if s.failures else '–')
        rows.append([*first, f"{s.failures} / {s.n_valid}", errors.get(arm, '–'),
                     f"{fmt(prop.estimate)} {fmt_ci(prop.ci95)}"]
                    + ([fmt(s.exposure.total), f"{fmt(rate.estimate)} {fmt_ci(rate.ci95)}",
                        median] if meaningful else
                       ["–", "– (a trial is the unit)" if trials else "– (an outcome arm)", "–"]))
    out = ["### Arms\n", _plan_line(r), *table(head, rows), ""]
    return out


_NO_RATIO = Estimate(None, None)


def _comparisons_section(r: Result) -> list[str]:
    if not r.comparisons:
        return []
    rows = [[code(arm), fmt_p(c.fisher_p), fmt(c.odds_ratio),
             f"{fmt((c.rate_ratio or _NO_RATIO).estimate)} {fmt_ci((c.rate_ratio or _NO_RATIO).ci95)}",
             fmt_p(c.rate_ratio_p)] for arm, c in r.comparisons.items()]
    return [f"### Each arm against {code(r.case.baseline)} (descriptive; decisions are the claims')\n",
            *table(["arm", "Fisher exact p (trials)", "odds ratio", "rate ratio (95% CI)", "rate p"],
                   rows), ""]


def _number(x: JSONValue) -> float | None:
    return x if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def _old_stopping_section(r: Result) -> list[str]:
    """Documents from before claims carried per-arm stopping decisions (kept in the design's
    ``described``, as journaled)."""
    decisions = r.design.described.get("decisions")
    if not isinstance(decisions, dict) or not decisions or r.claims:
        return []
    rows = [[code(arm), escape(f"{d['decision']} ({d.get('test', 'fisher')})"),
             f"{d['at_trials']} ({d['baseline_trials']})", fmt_p(_number(d['p_value'])),
             f"{d['threshold']:.3g}"]
            for arm, d in decisions.items() if isinstance(d, dict)]
    return ["### Sequential stopping\n",
            *table(["arm", "decision", "at trials (baseline)", "p", "threshold"], rows), ""]


def _per_gpu_section(r: Result, per_gpu_name: str | None = None) -> list[str]:
    """The failures per GPU, as a table and (when drawn) the forest plot faceted by GPU."""
    multi = len(r.per_gpu) > 1
    if not multi and not per_gpu_name:
        return []
    out = ["### Per GPU (failures / valid trials)\n" if multi else "### Per host\n"]
    if per_gpu_name:
        out.append(f"![{_alt(per_gpu_headline(r))}]({_target(per_gpu_name)})\n")
    if multi:
        arms = list(r.arms)
        out += table(["GPU", *(code(a) for a in arms)],
                     [[escape(gpu), *(f"{cells[a].failures}/{cells[a].valid}" if a in cells else "–"
                              for a in arms)] for gpu, cells in r.per_gpu.items()])
    out.append("")
    return out


def _crash_sites_section(r: Result) -> list[str]:
    if not r.crash_sites:
        return []
    rows = []
    for b in r.crash_sites:
        frames = escape(" ← ".join(f"{f.module}+{f.offset}" for f in b.frames[1:4]))
        arms = escape(", ".join(f"{a} {n}" for a, n in b.arms.items()))
        rows.append([b.count, escape(f"{b.signal} {b.code_name or ''}"),
                     f"{code(str(b.pc_module) + '+' + str(b.pc_offset))} ({escape(b.pc_perms or '?')})",
                     escape(b.fault_module or '–'), frames or '–', arms])
    return ["### Crash sites\n",
            *table(["count", "signal", "faulting PC", "fault address in", "first frames", "arms"],
                   rows), ""]


def _records(r: Result) -> list[Mapping[str, Any]]:
    """The trials' records as the drivers wrote them (their crash records are the drivers')."""
    return [t.record for t in r.trials]


def _threads_section(r: Result) -> list[str]:
    """Where each thread was at each crash, per arm (drivers that publish their calls)."""
    rows = threads_table(_records(r), r.case.failure_outcomes or ("crashed",))
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


def _python_frames_section(r: Result) -> list[str]:
    rows = python_frames_table(_records(r), r.case.failure_outcomes or ("crashed",))
    if not rows:
        return []
    return ["### Python frames at the crash\n",
            "A Python driver's faulting thread at the fault, from faulthandler's dump after the "
            "native crash record (`file:line function`, the checkout's paths relative).\n",
            *rows, ""]


_MET = {True: "", False: ", does not meet it", None: ", unknown"}


def runtime_rows(r: Result) -> list[list[str]]:
    """Per arm that pins runtime packages: requested, resolved, and what the node provided."""
    rows = []
    for arm, packages in (r.runtime.arms if r.runtime else {}).items():
        node = "; ".join(f"{n.requirement} (of {n.of}): {n.version or 'not installed'}"
                         + _MET[n.met] for n in packages.from_node)
        rows.append([arm, ", ".join(packages.requested),
                     ", ".join(f"{k} {v}" for k, v in sorted(packages.resolved.items())),
                     node or "–"])
    # Every value came from the document (a package's name, a version the node reported): as text.
    return [[escape(c) for c in row] for row in rows]


def _runtime_section(r: Result) -> list[str]:
    rows = runtime_rows(r)
    if not rows or r.runtime is None:
        return []
    return ["", f"### Runtime packages (wheels for Python {escape(r.runtime.python)}, unpacked on the node)\n",
            *table(["arm", "requested", "resolved", "left to the node"], rows)]


def _analyses_section(r: Result) -> list[str]:
    out = []
    for name, analysis in r.analysis.analyses.items():
        out.append(f"### Analysis: {escape(name)}\n")
        if isinstance(analysis, Mapping) and analysis.get("markdown"):
            out.append(escape(analysis["markdown"], "markdown"))
        else:
            out.append("\n".join(fence(json.dumps(analysis, indent=1)[:4000], "json")))
        out.append("")
    return out


def _probe_section(r: Result) -> list[str]:
    p = r.probe
    if not p:
        return []
    out = ["### Device probe\n",
           f"The case cannot run here; one trial command was run to show what happens: "
           f"{code(' '.join(map(str, p.command)))} → {escape(p.outcome)} "
           f"({escape(p.detail)}).\n"]
    if p.stdout_tail:
        out.append("\n".join(fence(str(p.stdout_tail)[-1500:])) + "\n")
    return out


def _when(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


@dataclass(frozen=True)
class Resumed:
    """A resume of the run's journal, and the plan indices of the trials that started after it
    (before the next resume)."""

    resume: Resume
    trials: list[int]


def resumes(doc: Result | Mapping[str, Any]) -> list[Resumed]:
    """Each resume of the run's journal with the trials that started after it (before the next
    resume): which trials ran on the device that resume found, which may not be the one the
    document's device and environment name (``--other-device``)."""
    r = as_result(doc)
    found = r.resumed
    starts = [(_when(t.started_at), int(t.index or 0)) for t in r.trials if t.started_at]
    out = []
    for i, resume in enumerate(found):
        begin = _when(resume.at)
        end = _when(found[i + 1].at) if i + 1 < len(found) else None
        after = sorted(n for when, n in starts if when >= begin and (end is None or when < end))
        out.append(Resumed(resume, after))
    return out


def _trial_span(indices: Sequence[int]) -> str:
    """How many trials, and their plan indices (a range where they run unbroken)."""
    if not indices:
        return "none"
    if list(indices) == list(range(indices[0], indices[-1] + 1)) and len(indices) > 2:
        return f"{len(indices)}: indices {indices[0]}–{indices[-1]}"
    return f"{len(indices)}: {'index' if len(indices) == 1 else 'indices'} {', '.join(map(str, indices))}"


def _resumed_section(r: Result) -> list[str]:
    found = resumes(r)
    if not found:
        return []
    rows = []
    for x in found:
        d = x.resume.device
        rows.append([escape(x.resume.at),
                     f"{escape(d.name if d else None)} {code(d.uuid if d else None)}, "
                     f"driver {escape(d.driver_version if d else None)}",
                     "**another device**: " + "; ".join(escape(y) for y in x.resume.differs)
                     if x.resume.other_device else "the journal's",
                     _trial_span(x.trials)])
    out = ["### Resumed\n", *table(["resumed at", "device found", "device", "trials started after"], rows), ""]
    if any(x.resume.other_device for x in found):
        out.append("Trials journaled after a resume with `--other-device` ran on the device that "
                   "resume found, not on the one the Environment names.\n")
    return out


def _environment_section(r: Result) -> list[str]:
    out = ["### Environment\n", *table(["", ""], environment_rows(r))]
    out += ["", "### Artifacts\n",
            *table(["artifact", "sha256"], [[f"{code(name)} ({escape(a.path)})", code(f"{a.sha256[:16]}…")]
                                            for name, a in r.artifacts.items()])]
    out += _runtime_section(r)
    out += ["", f"_Generated by gpurepro {escape(r.gpurepro_version)} at {escape(r.created_at)}._\n"]
    return out


def _alt(text: str) -> str:
    """Text safe inside Markdown image brackets."""
    return escape(" ".join(text.replace("[", "(").replace("]", ")").split()))


def _target(name: str) -> str:
    """A picture's file name as a link target: percent-encoded, so that a document named with
    markup ends no link and opens no HTML (a plain name is written as it is)."""
    return quote(name, safe="")


def markdown(doc: Result | Mapping[str, Any], plot_name: str | None = None,
             forest_name: str | None = None, per_gpu_name: str | None = None,
             times_name: str | None = None) -> str:
    """The report, section by section; each section renders from the document alone. Each
    picture named is referenced with its headline in words as the alt text."""
    r = as_result(doc)
    out = _verdict_section(r)
    if times_name:
        out.append(f"![{_alt(times_headline(r))}]({_target(times_name)})\n")
    if forest_name:
        out.append(f"![{_alt(forest_headline(r))}]({_target(forest_name)})\n")
    out += _arms_section(r)
    if r.claims:
        out.append(claims_table(r))
    out += clocks_section(r)
    out += (_old_stopping_section(r) + _comparisons_section(r) + _per_gpu_section(r, per_gpu_name)
            + cluster_report.section(r) + wrong_section(r) + _crash_sites_section(r)
            + _threads_section(r) + _python_frames_section(r)
            + _analyses_section(r) + _probe_section(r) + _resumed_section(r))
    if plot_name:
        out.append(f"![{_alt(survival_headline(r))}]({_target(plot_name)})\n")
    out += _environment_section(r)
    # Parsed as GitHub parses it, the report holds nothing live but its own pictures and the
    # case's report link; a document string that would be is refused, not written (gfm.py).
    own = {r.case.report_url} if r.case.report_url else set()
    return gfm.check("\n".join(out), f"the report of {r.case.name!r}", own)


def write_report(doc: Result | Mapping[str, Any], result_path: Path) -> dict[str, Path]:
    r = as_result(doc)
    stem = result_path.with_suffix("")
    written: dict[str, Path] = {}
    drawn: dict[str, str | None] = {}
    for kind, suffix, draw in (("plot", "", plot), ("forest", ".forest", forest_plot),
                               ("forest_per_gpu", ".forest-per-gpu", per_gpu_plot),
                               ("times", ".times", times_plot)):
        png, svg = Path(f"{stem}{suffix}.png"), Path(f"{stem}{suffix}.svg")
        if draw(r, png, svg):
            written[kind], written[f"{kind}_svg"] = png, svg
            drawn[kind] = png.name
        else:  # pictures from an earlier rendering no longer apply
            png.unlink(missing_ok=True)
            svg.unlink(missing_ok=True)
            drawn[kind] = None
    md = stem.with_suffix(".md")
    write_atomic(md, markdown(r, drawn["plot"], drawn["forest"], drawn["forest_per_gpu"],
                              drawn["times"]))
    written["markdown"] = md
    # The timed trials' pyperf suite (report/pyperf_suite.py); a document without timed trials
    # has none, and a suite an earlier rendering left (once the seconds to failure of failed
    # trials, docs/format.md) goes.
    suite = write_suite(r, stem)
    if suite is not None:
        written["pyperf"] = suite
    return written
