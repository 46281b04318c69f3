"""The verdict: status, owner and next steps from the harness's claim decisions; measurements
as sentences.

``verdict(analysis)`` gets the harness's typed views of the result (gpurepro.case.Analysis): per-arm
counts (``analysis.arms``), the device, the build analyses, and the claims that manifest.py
declares from design.COMPARISONS with their decisions (``analysis.decision(name)``: supported /
contradicted / not_decided). It computes no statistics: every
comparison is a claim the harness decides under one family-wise error rate, and the harness
appends the decided claims' sentences and lists the undecided ones. The sentences written here
are measurements (counts per arm, the build's SASS findings, the documentation audit); what no
arm isolates goes to ``hypotheses``. The one fixed input is DOC_AUDIT, the conclusion of the
documentation audit in README.md, which decides how a reproduced ordering failure is classified.
Standard library and gpurepro.case only.
"""

from __future__ import annotations

from typing import Any

from gpurepro.case import Analysis, ArmSummary, load_sibling

design = load_sibling(__file__, "design")

# Conclusion of the documentation audit (README.md, "Documentation audit") and the status a
# reproduced ordering failure then gets: "documented" (the reproducer breaks a stated rule: usage
# error); "implied" or "arguably_implied" (not stated, but a reader could derive it: documentation
# gap); "absent" (nothing states or implies it: defect against the documentation as written).
STATUS_FOR_AUDIT = {"documented": "usage_error", "implied": "documentation_gap",
                    "arguably_implied": "documentation_gap", "absent": "defect"}
DOC_AUDIT = {
    "conclusion": "arguably_implied",
    "label": "not stated; arguably implied",
    "summary": (
        "Neither the PTX ISA nor CUTLASS's Allocator2Sm states that one CTA of a pair must not "
        "deallocate (or exit) before the peer's tcgen05.alloc.cta_group::2 has completed. It is "
        "arguably implied: the ISA describes the 2-CTA alloc as a collective whose first warp "
        "could block until the peer performs it, and its section 2.2.2 (Cluster of Cooperative "
        "Thread Arrays) requires that the peer CTA not exit before a shared-memory operation with "
        "it completes. Against that reading, the ISA gives the explicit 'peer CTA should not have "
        "exited' rule only to .mma/.cp/.shift/.commit, and says that ensuring no concurrent Tensor "
        "Memory accesses 'suffices' before a 2-CTA dealloc (the reproducer makes none); "
        "CUTLASS's @pre lists name no timing precondition."
    ),
}

OWNER = {
    "usage_error": "the program's author (CUTLASS users writing 2-SM kernels): synchronise the "
                   "CTA pair between tcgen05.alloc.cta_group::2 and dealloc",
    "documentation_gap": "NVIDIA: the PTX ISA tcgen05 sections (Issue Granularity; alloc/dealloc) "
                         "and CUTLASS's Allocator2Sm @pre should state the ordering requirement; "
                         "if it is not intended, the tcgen05.alloc.cta_group::2 lowering (ptxas) "
                         "or the hardware is at fault",
    "defect": "NVIDIA: the tcgen05.alloc.cta_group::2 lowering in ptxas or the hardware behaviour, "
              "or the PTX ISA tcgen05 sections and Allocator2Sm @pre if the ordering is intended",
    "reproduced_not_ordering": "NVIDIA: the driver, ptxas or hardware behind an unspecified launch "
                               "failure that no barrier.cluster placement removes",
}

RUN_HINT = "`python -m gpurepro run tcgen05_alloc_order --until-decided`"


# ----------------------------------------------------------------------------- reading


def _decision(analysis: Analysis, name: str) -> str:
    """The harness's decision on a claim; "absent" when it was not part of this run."""
    return analysis.decision(name) or "absent"


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.0f}%"


def _valid(arm: ArmSummary | None) -> bool:
    return arm is not None and arm.valid


def _fails(arm: ArmSummary) -> tuple[int, int]:
    return arm.failures, arm.n_valid


def _prop(arm: ArmSummary) -> str:
    """'k/n failed (p%, 95% CI a-b%); errors' from the harness's per-arm summary."""
    f, n = _fails(arm)
    prop = arm.proportion
    ci = prop.ci95
    text = f"{f}/{n} failed"
    if prop.estimate is not None:
        text += f" ({_pct(prop.estimate)}" + (f", 95% CI {_pct(ci[0])}-{_pct(ci[1])}" if ci else "") + ")"
    errors = arm.errors
    if errors:
        text += "; " + ", ".join(f"{k} x{v}" for k, v in sorted(errors.items(), key=lambda kv: -kv[1]))
    return text


def _stage_summary(arm: ArmSummary) -> dict[str, tuple[str, int]]:
    """cta -> (most common last stage, count) from observations.stages {"cta1:before_alloc": n}."""
    stages = arm.observations.get("stages") or {}
    best: dict[str, tuple[str, int]] = {}
    for key, count in stages.items():
        if ":" not in key:
            continue
        cta, stage = key.split(":", 1)
        if cta not in best or count > best[cta][1]:
            best[cta] = (stage, int(count))
    return best


# ----------------------------------------------------------------------------- measurements


def _measure(analysis: Analysis, out: list[str], arms: list[str], label: str) -> None:
    """One sentence listing the arms of a group that ran, each named, with its counts."""
    data = analysis.arms
    shown = [a for a in arms if _valid(data.get(a))]
    if shown:
        out.append(f"{label}: " + "; ".join(f"{a}: {_prop(data[a])}" for a in shown) + ".")


def _grid(analysis: Analysis, out: list[str]) -> None:
    out.append(f"Baseline {design.BASELINE} (seed binary, follower CTA delayed "
               f"{design.BASE_SPIN} x 1 us, no barrier): {_prop(analysis.arms[design.BASELINE])}.")
    _measure(analysis, out, [f"follower-{m.replace('_', '-')}" for m in design.GRID_MODES[1:]],
             "Follower delayed, with a barrier.cluster (before alloc, after alloc, before dealloc)")
    _measure(analysis, out, [f"{d}-{m.replace('_', '-')}" for d in ("leader", "neither")
                             for m in design.GRID_MODES], "Leader or neither CTA delayed")
    spins = [f"follower-spin-{s}" for s in design.SPINS if s not in (design.BASE_SPIN, 50000)]
    _measure(analysis, out, spins + ["leader-spin-50000"],
             f"Spin sweep (x 1 us; {design.BASE_SPIN} is the baseline)")


def _markers(analysis: Analysis, out: list[str]) -> bool:
    """The instrumented arms and the per-CTA stages; True if CTA1 never returned from alloc."""
    arms = analysis.arms
    _measure(analysis, out, [design.INSTR_BASELINE, "instr-leader-baseline",
                             "instr-follower-barrier-before-dealloc", "instr-no-relinquish",
                             "instr-no-dealloc", "instr-linger"], "Instrumented build (progress markers)")
    ib = arms.get(design.INSTR_BASELINE)
    if ib is None or not ib.valid:
        return False
    stages = _stage_summary(ib)
    if not stages:
        return False
    f, n = _fails(ib)
    out.append(f"Progress markers of {design.INSTR_BASELINE} over {n} trials ({f} failed): "
               + ", ".join(f"{cta.upper()} last reached '{st}' in {c}/{n}"
                           for cta, (st, c) in sorted(stages.items())) + ".")
    st, c = stages.get("cta1", ("", 0))
    if f == n and c == n and st == "before_alloc":
        out.append(f"In every trial of {design.INSTR_BASELINE}, CTA1 entered tcgen05.alloc and did "
                   "not record its return.")
        return True
    return False


def _instruments(analysis: Analysis, out: list[str]) -> list[str]:
    """Instrument arms: counts, or why they did not run. Returns arms whose tool was missing."""
    arms = analysis.arms
    missing_tool: list[str] = []
    for name in (*design.INSTRUMENT_LOWER, *design.CONTROL_INSTRUMENT_LOWER):
        a = arms.get(name)
        if a is None or not a.n:  # not part of this run at all
            continue
        inst = a.factors.get("instrument", "")
        label = design.INSTRUMENT_LABEL.get(inst, inst or "an instrument")
        if a.valid:
            out.append(f"Instrument {label} on {name}: {_prop(a)}.")
            continue
        missing = (a.observations.get("instrument") or {}).get("found:False", 0)
        if missing:
            missing_tool.append(name)
        why = (f"the tool was not found on the GPU node in {missing} of them" if missing
               else "none produced a valid outcome")
        out.append(f"Instrument {label} on {name}: not run; {a.n} trials, {why}.")
    return missing_tool


def _controls(analysis: Analysis, out: list[str]) -> None:
    _measure(analysis, out, ["control-arrive-after-exit", "control-store-after-exit",
                             "control-store-barrier-before-exit"],
             "Controls without tcgen05 (the odd CTA touches the even CTA's shared memory "
             f"{design.BASE_SPIN} x 1 us after the even CTA could exit)")


def _sass(analysis: Analysis) -> list[str]:
    """What the build's SASS analysis found (analyses.sass), in words; nothing if absent."""
    sass = analysis.analyses.get("sass") or {}
    if not sass.get("available"):
        return []
    claims = sass.get("claims") or []
    f = {x["id"]: x["value"] for x in sass.get("findings") or []}
    out = [f"SASS analysis (ptxas {(sass.get('tools') or {}).get('ptxas', '?')}): "
           f"{sum(bool(c.get('verified')) for c in claims)} of {len(claims)} of the report's claims "
           "about the tcgen05.alloc.cta_group::2 lowering are verified."]
    if f.get("leader_waits_after_signalling") is False and f.get("follower_last_peer_access"):
        out.append("In the SASS, the leader's alloc returns without waiting for the follower's "
                   "acknowledgement, and the follower's alloc ends with a remote operation on the "
                   f"leader's shared memory ({f['follower_last_peer_access']}).")
    if f.get("dealloc_synchronises_with_peer") is False:
        out.append("In the SASS, tcgen05.dealloc.cta_group::2 never synchronises with the peer CTA.")
    return out


def _audit() -> str:
    return f"Documentation audit (README.md): the ordering requirement is {DOC_AUDIT['label']}. " \
           f"{DOC_AUDIT['summary']}"


def _hypotheses(analysis: Analysis, cta1_in_alloc: bool) -> list[str]:
    """What the SASS and the markers suggest but no arm isolates."""
    out = []
    support = []
    if _decision(analysis, design.LINGER_LOWER) == "supported":
        support.append("instr-linger shows that the early exit, not the early dealloc alone, is "
                       "needed")
    if _decision(analysis, design.CONTROL_ARRIVE_FAILS) == "supported":
        support.append("control-arrive-after-exit shows that a late remote arrive into an exited "
                       "CTA faults by itself")
    out.append("Hypothesis (from the SASS analysis of the build, sass_analysis.md; no arm removes "
               "the follower's acknowledgement alone): the failure is the follower's remote mbarrier arrive at the end of its "
               "tcgen05.alloc landing in the leader CTA's shared memory after the leader has "
               "exited" + (f"; consistent with it, {' and '.join(support)}." if support else "."))
    if cta1_in_alloc:
        out.append("Hypothesis: the fault is raised inside CTA1's tcgen05.alloc, as the report says; "
                   "the markers show only that CTA1 never recorded the alloc's return before the "
                   "context died.")
    suppressed = [n for n, c in design.INSTRUMENT_LOWER.items() if _decision(analysis, c) == "supported"]
    known = [n for n, c in design.CONTROL_INSTRUMENT_LOWER.items() if _decision(analysis, c) == "supported"]
    if suppressed and known:
        out.append("Hypothesis: the instruments hide the failure by changing its timing, as they hide "
                   f"the known exited-CTA fault of control-store-after-exit ({', '.join(known)}); "
                   "their suppressing it is then no evidence against the failure.")
    return out


# ----------------------------------------------------------------------------- entry points


def _not_run(analysis: Analysis) -> dict[str, Any]:
    dev = analysis.device
    arms = analysis.arms
    outcomes: dict[str, int] = {}
    for a in arms.values():
        for k, v in a.outcomes.items():
            outcomes[k] = outcomes.get(k, 0) + v
    n_total = sum(outcomes.values())
    where = dev.name or "this machine"
    if dev.compute_capability:
        where += f" (compute capability {dev.compute_capability})"
    reason = (dev.reason or "").strip().rstrip(".")
    if len(outcomes) == 1:
        recorded = f"all {n_total} trials were recorded as {next(iter(outcomes))}"
    else:
        recorded = f"of {n_total} trials, " + ", ".join(
            f"{v} were recorded as {k}" for k, v in sorted(outcomes.items(), key=lambda kv: -kv[1]))
    hardware = dev.supported is False or (
        bool(dev.compute_capability) and dev.compute_capability not in ("10.3", "10.0"))
    sentences = [
        f"Not run: none of the {len(arms)} arms ran a valid trial on {where}; "
        f"{recorded if n_total else 'no trial was recorded'}" + (f" ({reason})." if reason else "."),
        ("Why: the hardware. The runtime arms need a GPU with tcgen05, compute capability 10.3 "
         "(the sm_103a build, B300) or 10.0 (the sm_100a build, B200); on any other device there "
         "is no kernel image, so no failure proportion, barrier comparison, spin threshold, marker "
         "or instrument effect was measured, and none of the case's claims could be decided."
         if hardware else
         "No failure proportion, barrier comparison, spin threshold, marker or instrument effect "
         "was measured, and none of the case's claims could be decided."),
        "What did run without such a GPU: the sm_103a and sm_100a builds from the pinned wheels, "
        "the PTX-to-SASS analysis (sass_analysis.md) and the documentation audit (README.md).",
        *_sass(analysis),
        _audit(),
    ]
    return {
        "status": "not_run",
        "sentences": sentences,
        "owner": None,
        "owner_because": [],
        "hypotheses": _hypotheses(analysis, False),
        "next": [
            "Run `make tcgen05-ablation` (nox -s tcgen05_ablation) on a B300 (compute capability "
            "10.3) or a B200 (10.0) and attach the result.",
        ],
    }


def _status(analysis: Analysis) -> tuple[str, list[str], str]:
    """(status, the supported claims the owner rests on, a next step) from the decisions."""
    base = _decision(analysis, design.BASELINE_FAILS)
    barriers = {c: _decision(analysis, c) for c in design.BARRIER_LOWER.values()}
    removes = [c for c, d in barriers.items() if d == "supported"]
    if base == "contradicted":
        return ("not_reproduced", [],
                f"Compare device, driver and toolkit with the report: {design.BASELINE} did not end "
                f"as {design.LAUNCH_FAILURE} in most trials.")
    if base != "supported":
        return ("inconclusive", [],
                f"Decide claim {design.BASELINE_FAILS}: run {design.BASELINE} with more trials "
                f"({RUN_HINT}).")
    if removes:
        status = STATUS_FOR_AUDIT[DOC_AUDIT["conclusion"]]
        return (status, [design.BASELINE_FAILS, *removes],
                "File with NVIDIA, attaching this result and sass_analysis.md, and ask whether the "
                "ordering is intended: if so, the PTX ISA and Allocator2Sm @pre should state it; "
                "if not, the lowering is the defect.")
    if barriers and all(d == "contradicted" for d in barriers.values()):
        return ("reproduced_not_ordering", [design.BASELINE_FAILS],
                "File with NVIDIA: the failure reproduces and no barrier.cluster placement "
                "removes it.")
    return ("reproduced_ordering_not_decided", [],
            "Decide the barrier claims (" + ", ".join(barriers) + "): run the follower-barrier-* "
            f"arms with more trials ({RUN_HINT}).")


def verdict(analysis: Analysis) -> dict[str, Any]:
    arms = analysis.arms
    if not any(a.valid for a in arms.values()):
        return _not_run(analysis)

    dev = analysis.device
    sentences: list[str] = []
    if dev.name:
        sentences.append(f"Measured on {dev.name} (compute capability "
                         f"{dev.compute_capability or 'unknown'}).")
    if not _valid(arms.get(design.BASELINE)):
        sentences.append(f"The baseline arm {design.BASELINE} ran no valid trial, so nothing can be "
                         "compared with it.")
        return {"status": "inconclusive", "sentences": sentences, "owner": None,
                "owner_because": [], "hypotheses": [], "next": [f"Run the arm {design.BASELINE}."]}

    _grid(analysis, sentences)
    cta1_in_alloc = _markers(analysis, sentences)
    missing_tool = _instruments(analysis, sentences)
    _controls(analysis, sentences)
    sentences += _sass(analysis)
    sentences.append(_audit())

    status, because, step = _status(analysis)
    nxt = [step]
    cc = dev.compute_capability
    if cc == "10.3":
        nxt.append("Repeat on a B200 (compute capability 10.0, sm_100a build); the report covers "
                   "sm_103a only.")
    elif cc == "10.0":
        nxt.append("Repeat on a B300 (compute capability 10.3), the reporter's device.")
    if missing_tool:
        nxt.append("Install the missing tools on the GPU node and rerun: " + ", ".join(missing_tool) + ".")
    idle = [n for n, a in arms.items() if not a.valid and n not in missing_tool]
    if idle:
        nxt.append("Arms with no valid trial: " + ", ".join(idle) + ".")
    undecided = analysis.undecided()
    if undecided and status not in ("inconclusive", "reproduced_ordering_not_decided"):
        nxt.append(f"Claims not decided: {', '.join(undecided)}; rerun their arms ({RUN_HINT}).")
    return {"status": status, "sentences": sentences,
            "owner": OWNER.get(status) if because else None, "owner_because": because,
            "hypotheses": _hypotheses(analysis, cta1_in_alloc), "next": nxt}
