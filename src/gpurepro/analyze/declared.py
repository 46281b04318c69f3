"""The verdict a case declares with ``Conclusion.declared`` (gpurepro.case.declared), evaluated
from the run's decisions and counts: status, owner and the claims it rests on, next steps,
measurement sentences, build-analysis readings, evidence and hypotheses, each labelled. No
statistics: the claims are decided by the harness (claims.py) and composed after these
sentences (verdict.compose_verdict).
"""

from __future__ import annotations

from typing import Any

from ..case.declared import (
    Branch,
    Condition,
    Declared,
    Evidence,
    InstrumentMeasure,
    Measure,
    NotRun,
    Reading,
    StageMeasure,
    Supported,
    first_row,
)
from ..case.hypotheses import holds as _holds
from ..case.hypotheses import stated
from ..case.model import Case
from ..model.result import Analysis, ArmSummary

# What other modules use; the rest is this module's own.
__all__ = ["conclude", "holds", "proportion"]


def _decision(analysis: Analysis, name: str) -> str:
    return analysis.decision(name) or "absent"


def holds(analysis: Analysis, when: Condition) -> bool:
    """Every claim of ``when`` has a decision it allows in the run (case.hypotheses.holds)."""
    return _holds(when, analysis.decision)


class _Words(dict[str, str]):
    """``{decision[NAME]}`` in a template: the claim's decision in words."""

    def __init__(self, analysis: Analysis) -> None:
        super().__init__()
        self.analysis = analysis

    def __missing__(self, name: str) -> str:
        return _decision(self.analysis, name).replace("_", " ")


def _fill(text: str, case: Case, analysis: Analysis, d: Declared, **more: Any) -> str:
    return text.format(device=analysis.device.name or "this machine",
                       target=analysis.device.target or d.target,
                       rerun=f"`python -m gpurepro run {case.name} --until-decided`",
                       decision=_Words(analysis), supported=Supported(analysis.decision), **more)


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.0f}%"


def proportion(arm: ArmSummary) -> str:
    """'k/n failed (p%, 95% CI a-b%); error xN' from the harness's per-arm summary."""
    prop, text = arm.proportion, f"{arm.failures}/{arm.n_valid} failed"
    if prop.estimate is not None:
        ci = prop.ci95
        text += f" ({_pct(prop.estimate)}" + (f", 95% CI {_pct(ci[0])}-{_pct(ci[1])}" if ci else "") + ")"
    if arm.errors:
        text += "; " + ", ".join(f"{k} x{v}" for k, v in sorted(arm.errors.items(), key=lambda kv: -kv[1]))
    return text


def _measure(m: Measure, analysis: Analysis) -> list[str]:
    shown = [a for a in m.arms if a in analysis.arms and analysis.arms[a].valid]
    if "{prop}" in m.label:
        return [m.label.format(arm=a, prop=proportion(analysis.arms[a])) for a in shown]
    return [f"{m.label}: " + "; ".join(f"{a}: {proportion(analysis.arms[a])}" for a in shown)
            + "."] if shown else []


def _instruments(m: InstrumentMeasure, analysis: Analysis) -> tuple[list[str], list[str]]:
    """Sentences, and the arms whose tool was missing on the node."""
    out, missing_tool = [], []
    for name in m.arms:
        a = analysis.arms.get(name)
        if a is None or not a.n:  # not part of this run at all
            continue
        inst = str(a.factors.get(m.factor, ""))
        label = m.labels.get(inst, inst or "an instrument")
        if a.valid:
            out.append(f"Instrument {label} on {name}: {proportion(a)}.")
            continue
        missing = (a.observations.get("instrument") or {}).get("found:False", 0)
        if missing:
            missing_tool.append(name)
        why = (f"the tool was not found on the GPU node in {missing} of them" if missing
               else "none produced a valid outcome")
        out.append(f"Instrument {label} on {name}: not run; {a.n} trials, {why}.")
    return out, missing_tool


def _stages(m: StageMeasure, analysis: Analysis) -> tuple[list[str], list[str]]:
    """Sentences and hypotheses: each CTA's most common last stage, and ``m.stuck``'s."""
    arm = analysis.arms.get(m.arm)
    best: dict[str, tuple[str, int]] = {}
    for key, count in ((arm.observations.get("stages") or {}) if arm and arm.valid else {}).items():
        cta, _, stage = key.partition(":")
        if stage and (cta not in best or count > best[cta][1]):
            best[cta] = (stage, int(count))
    if arm is None or not best:
        return [], []
    f, n = arm.failures, arm.n_valid
    out = [f"Progress markers of {m.arm} over {n} trials ({f} failed): " + ", ".join(
        f"{cta.upper()} last reached '{st}' in {c}/{n}" for cta, (st, c) in sorted(best.items())) + "."]
    if m.stuck and f == n and best.get(m.stuck[0], ("", 0)) == (m.stuck[1], n):
        return [*out, m.stuck[2]], [m.stuck[3]]
    return out, []


def _readings(readings: tuple[Reading, ...], analysis: Analysis) -> list[str]:
    out = []
    for r in readings:
        record = analysis.analyses.get(r.analysis) or {}
        if not record.get("available"):
            continue
        found = {f["id"]: f["value"] for f in record.get("findings") or []}
        if all((bool(found.get(k)) if v == "*" else k in found and found[k] == v)
               for k, v in r.when.items()):
            out.append(r.text.format(finding=found, tools=record.get("tools") or {},
                                     verified=sum(bool(c.get("verified"))
                                                  for c in record.get("claims") or []),
                                     claims=len(record.get("claims") or [])))
    return out


def _evidence(e: Evidence) -> str:
    return f"{e.label}: {e.text}" + (f" (read at {'; '.join(e.sources)})." if e.sources else "")


def _hypotheses(case: Case, analysis: Analysis, d: Declared) -> list[str]:
    arms = {c.name: c.arm for c in case.claims}
    return [h for h in (stated(x, analysis.decision, arms) for x in d.hypotheses) if h]


def _not_run(case: Case, analysis: Analysis, d: Declared, nr: NotRun) -> dict[str, Any]:
    dev = analysis.device
    outcomes: dict[str, int] = {}
    for a in analysis.arms.values():
        for k, v in a.outcomes.items():
            outcomes[k] = outcomes.get(k, 0) + v
    total = sum(outcomes.values())
    where = dev.name or "this machine"
    if dev.compute_capability:
        where += f" (compute capability {dev.compute_capability})"
    reason = (dev.reason or "").strip().rstrip(".")
    if len(outcomes) == 1:
        recorded = f"all {total} trials were recorded as {next(iter(outcomes))}"
    else:
        recorded = f"of {total} trials, " + ", ".join(
            f"{v} were recorded as {k}" for k, v in sorted(outcomes.items(), key=lambda kv: -kv[1]))
    hardware = dev.supported is False or (
        bool(dev.compute_capability) and dev.compute_capability not in case.devices.targets)
    return {"status": "not_run",
            "sentences": [
                f"Not run: none of the {len(analysis.arms)} arms ran a valid trial on {where}; "
                f"{recorded if total else 'no trial was recorded'}"
                + (f" ({reason})." if reason else "."),
                nr.hardware if hardware else nr.otherwise, *nr.sentences,
                *_readings(d.readings, analysis), *(_evidence(e) for e in d.evidence)],
            "owner": None, "owner_because": [], "hypotheses": _hypotheses(case, analysis, d),
            "next": list(nr.next)}


def conclude(case: Case, analysis: Analysis, d: Declared) -> dict[str, Any]:
    """The declared verdict of one run (before the decided claims' sentences are added)."""
    if d.not_run is not None and not any(a.valid for a in analysis.arms.values()):
        return _not_run(case, analysis, d, d.not_run)
    dev, sentences = analysis.device, []
    if dev.name:
        sentences.append(f"Measured on {dev.name} (compute capability "
                         f"{dev.compute_capability or 'unknown'}).")
    base = analysis.arms.get(case.baseline)
    if base is None or not base.valid:
        sentences.append(f"The baseline arm {case.baseline} ran no valid trial, so nothing can "
                         "be compared with it.")
        return {"status": "inconclusive", "sentences": sentences, "owner": None,
                "owner_because": [], "hypotheses": [], "next": [f"Run the arm {case.baseline}."]}
    hypotheses: list[str] = []
    missing_tool: list[str] = []
    for m in d.measures:
        if isinstance(m, Measure):
            sentences += _measure(m, analysis)
        elif isinstance(m, InstrumentMeasure):
            said, missing = _instruments(m, analysis)
            sentences, missing_tool = sentences + said, missing_tool + missing
        elif isinstance(m, StageMeasure):
            said, guessed = _stages(m, analysis)
            sentences, hypotheses = sentences + said, hypotheses + guessed
        else:
            said, guessed = m(analysis)
            sentences, hypotheses = sentences + said, hypotheses + guessed
    sentences += _readings(d.readings, analysis)
    sentences += [_evidence(e) for e in d.evidence]
    facts = {name: measured(analysis) for name, measured in d.facts.items()}
    b = first_row(d.branches, analysis.decision, facts) or Branch("inconclusive", open=True)
    because = b.rests_on(analysis.decision)
    if b.sentence:
        sentences.append(_fill(b.sentence, case, analysis, d))
    nxt = [_fill(step, case, analysis, d) for step in b.steps()]
    if dev.compute_capability and dev.compute_capability in d.next_on:
        nxt.append(d.next_on[dev.compute_capability])
    if missing_tool:
        nxt.append("Install the missing tools on the GPU node and rerun: "
                   + ", ".join(missing_tool) + ".")
    idle = [n for n, a in analysis.arms.items() if not a.valid and n not in missing_tool]
    if idle:
        nxt.append("Arms with no valid trial: " + ", ".join(idle) + ".")
    undecided = analysis.undecided()
    if undecided and not b.open:
        nxt.append(f"Claims not decided: {', '.join(undecided)}; rerun their arms "
                   f"(`python -m gpurepro run {case.name} --until-decided`).")
    owner = _fill(b.owner, case, analysis, d) if b.owner and because else None
    return {"status": b.status, "sentences": sentences, "owner": owner,
            "owner_because": because if owner else [],
            "hypotheses": _hypotheses(case, analysis, d) + hypotheses, "next": nxt}
