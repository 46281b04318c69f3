"""The verdict: status, owner and next steps from the harness's claim decisions; measurements
as sentences.

``verdict(analysis)`` gets the harness's typed views of the result (gpurepro.model.result): per-arm
counts (``analysis.arms``), the device, the build analyses, and the claims that manifest.py
declares from design.COMPARISONS with their decisions (``analysis.decision(name)``: supported /
contradicted / not_decided). It computes no statistics: every comparison is a claim the harness
decides under one family-wise error rate, and the harness appends the decided claims' sentences
and lists the undecided ones. The sentences written here are measurements (counts per arm, the
build's SASS readings, the documentation audit); what no arm isolates goes to ``hypotheses``.

The classification (usage error, documentation gap, defect, or not decided) follows from decided
claims (``_classify``): which condition the failure needs, shown by the instrumented arms
(``instr-linger`` against ``instr-follower-baseline``) and the control without tcgen05, and
whether the documentation read (DOC_AUDIT: what the text says, with its version) states a rule
against that condition.
Standard library, gpurepro.model.result and gpurepro.case only.
"""

from __future__ import annotations

from typing import Any

from gpurepro.case import Analysis, ArmSummary, load_sibling

design = load_sibling(__file__, "design")

# ----------------------------------------------------------------------------- the documentation

PTXAS = "ptxas 13.0.88 (CUDA 13.0)"
ISA = "PTX ISA 9.1"  # the text read; see ISA_READ
ISA_READ = (
    "PTX ISA 9.1 is the text read (a copy of the 9.1 page; no copy of the 9.0 text was found). "
    "The report's toolchain, nvcc/ptxas 13.0.88, emits PTX ISA 9.0 (.version 9.0); the release "
    "notes of 9.0 and 9.1 list one change to these sections, the 9.0 rule that all tcgen05 "
    "instructions of a kernel use the same .cta_group, so the 9.1 sentences are taken as 9.0's")
CUTLASS = "CUTLASS 147f5673 (include/cute/arch/tmem_allocator_sm100.hpp)"

# The conditions the instrumented arms separate, and the arm that shows each without the other:
# "exit": a CTA of the pair exits while the peer's tcgen05.alloc.cta_group::2 is still to complete
#         (instr-follower-baseline: the leader deallocates and exits at once);
# "dealloc": a CTA of the pair deallocates before the peer's alloc has completed, and stays resident
#         (instr-linger: it sleeps (2*spin + 1000) x 1 us after its dealloc).
CONDITION = {
    "exit": "a CTA of the pair exiting before the peer's tcgen05.alloc.cta_group::2 has completed",
    "dealloc": "a CTA of the pair deallocating, and staying resident, before the peer's "
               "tcgen05.alloc.cta_group::2 has completed",
}

# What the documentation read says (README.md, "Documentation audit"), with its version. It is the
# reading, not a result: the classification uses it only to ask whether a rule the text states
# forbids the condition that the decided claims show the failure needs.
DOC_AUDIT: dict[str, Any] = {
    "isa": ISA,
    "cutlass": CUTLASS,
    # condition -> (the rule, quoted, and where the text states it), or None: the text read states
    # no rule against that condition
    "stated_rule": {"exit": None, "dealloc": None},
    "summary": (
        f"{ISA} and {CUTLASS} state no rule that one CTA of a pair must not deallocate, or exit, "
        "before the peer's tcgen05.alloc.cta_group::2 has completed. Section 2.2.2 (Cluster of "
        "Cooperative Thread Arrays) states that a peer CTA must not have exited before a "
        "shared-memory operation with it completes, and section 9.7.16.5 (Issue Granularity, "
        "Table 46) gives the rule 'the peer CTA should be active and should not have exited' to "
        ".mma/.cp/.shift/.commit only; no tcgen05 section says that the 2-CTA alloc performs a "
        "shared-memory operation on the peer CTA. Section 9.7.16.7.1 asks of a 2-CTA alloc only "
        "that the peer CTA be launched and its warps eventually participate, and Table 47 says "
        "that ensuring no concurrent Tensor Memory accesses from the peer 'suffices' before a "
        "2-CTA dealloc and that 'Warps can immediately exit after deallocating Tensor Memory' "
        "(the reproducer makes no Tensor Memory access). Allocator2Sm's @pre lists for "
        "allocate() and free() name no timing or ordering precondition."
    ),
}

OWNER_REPRODUCED_NOT_ORDERING = (
    "NVIDIA: the driver, ptxas or hardware behind an unspecified launch failure that no "
    "barrier.cluster placement removes")


def _owner_defect(target: str) -> str:
    return (f"NVIDIA: the behaviour of tcgen05.alloc.cta_group::2 / tcgen05.dealloc.cta_group::2 "
            f"on {target} as lowered by {PTXAS}, or the hardware: instr-linger meets every "
            f"precondition that {ISA} sections 2.2.2, 9.7.16.5 (Tables 46 and 47) and 9.7.16.7.1 "
            f"and {CUTLASS} Allocator2Sm::allocate()/free() @pre state, and still fails. If the "
            "ordering is intended, the requirement is new and belongs in those sections")


def _owner_gap() -> str:
    return (f"NVIDIA, the documentation: {ISA} section 9.7.16.7.1 (tcgen05.alloc, tcgen05.dealloc, "
            "tcgen05.relinquish_alloc_permit) and section 9.7.16.5 (Issue Granularity: Table 46, "
            "row .alloc/.dealloc/.relinquish_alloc_permit ::2; Table 47, 'Warps can immediately "
            "exit after deallocating Tensor Memory') do not say that tcgen05.alloc.cta_group::2 "
            "completes through an operation on the peer CTA's shared memory, to which the rule of "
            "section 2.2.2 (the peer CTA must not have exited before the shared memory operation "
            f"completes) would apply; {CUTLASS} Allocator2Sm::allocate()/free() @pre name no such "
            "precondition. If NVIDIA does not intend the requirement, the behaviour (the "
            f"tcgen05.alloc.cta_group::2 lowering in {PTXAS}, or the hardware) is the defect "
            "instead")


def _owner_usage(condition: str, rule: str) -> str:
    return (f"the program's author (the reproducer; CUTLASS users writing 2-SM kernels): "
            f"{CONDITION[condition]} breaks the rule {rule}; synchronise the CTA pair between "
            "tcgen05.alloc.cta_group::2 and the first CTA's dealloc and exit")


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


# SASS opcodes such as UTCATOMSWS, SYNCS.* and STAS have no public semantics: what they do is read
# by differential compilation (sass.py), and every sentence built on them says so.
SASS_READING = ("reading of undocumented SASS opcodes by differential compilation against PTX with "
                "documented semantics, not documented semantics")


def _sass(analysis: Analysis) -> list[str]:
    """What the build's SASS analysis found (analyses.sass), in words; nothing if absent."""
    sass = analysis.analyses.get("sass") or {}
    if not sass.get("available"):
        return []
    claims = sass.get("claims") or []
    f = {x["id"]: x["value"] for x in sass.get("findings") or []}
    out = [f"SASS analysis (ptxas {(sass.get('tools') or {}).get('ptxas', '?')}): "
           f"{sum(bool(c.get('verified')) for c in claims)} of {len(claims)} of the report's claims "
           "about the tcgen05.alloc.cta_group::2 lowering are verified, as opcodes and memory "
           f"targets in the disassembly; what the opcodes do is a {SASS_READING} "
           "(sass_analysis.md)."]
    if f.get("leader_waits_after_signalling") is False and f.get("follower_last_peer_access"):
        out.append(f"Reading of the SASS ({SASS_READING}): the leader's alloc returns without "
                   "waiting for the follower's acknowledgement, and the follower's alloc ends with "
                   "a remote operation on the leader's shared memory "
                   f"({f['follower_last_peer_access']}).")
    if f.get("dealloc_synchronises_with_peer") is False:
        out.append("In the SASS, tcgen05.dealloc.cta_group::2 has no cross-CTA access and no SYNCS "
                   "instruction; read as: it never synchronises with the peer CTA.")
    return out


def _audit() -> str:
    return f"Documentation audit (README.md): {DOC_AUDIT['summary']} {ISA_READ}."


def _hypotheses(analysis: Analysis, cta1_in_alloc: bool) -> list[str]:
    """What the SASS and the markers suggest but no arm isolates."""
    out = []
    support = []
    lingers_fail = _decision(analysis, design.LINGER_FAILS) == "supported"
    if _decision(analysis, design.LINGER_LOWER) == "supported" and not lingers_fail:
        support.append("instr-linger shows that the early exit, not the early dealloc alone, is "
                       "needed")
    if _decision(analysis, design.CONTROL_ARRIVE_FAILS) == "supported":
        support.append("control-arrive-after-exit shows that a late remote arrive into an exited "
                       "CTA faults by itself")
    against = (f"; against it, instr-linger fails in most trials with the leader CTA resident "
               f"(claim {design.LINGER_FAILS} supported)") if lingers_fail else ""
    out.append("Hypothesis (from the SASS analysis of the build, sass_analysis.md, a "
               f"{SASS_READING}; no arm removes the follower's acknowledgement alone): the failure "
               "is the follower's remote mbarrier arrive at the end of its tcgen05.alloc landing "
               "in the leader CTA's shared memory after the leader has exited"
               + (f"; consistent with it, {' and '.join(support)}" if support else "")
               + against + ".")
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


# ----------------------------------------------------------------------------- classification


def _classify(analysis: Analysis, ordering: list[str]) -> tuple[str, list[str], str, str]:
    """(status, the decided claims the owner rests on, the owner or "", one sentence saying why)
    for a failure that reproduces and that a barrier.cluster removes (the claims in ``ordering``).

    instr-linger deallocates as early as the baseline but keeps its CTA resident until after the
    peer's alloc: it meets every precondition the documentation read states. It failing in most
    trials (linger-fails supported) shows the failure with every stated precondition met: a defect
    against the documentation as written, unless a stated rule forbids the early dealloc. It not
    failing in most trials and failing less than the instrumented baseline (linger-fails
    contradicted, linger-lower supported) shows that the failure needs the exit; with
    control-arrive-fails supported (a late remote arrive into an exited CTA, which the rule of
    PTX ISA section 2.2.2 forbids, faults by itself), what is missing is the documentation that
    the 2-CTA alloc completes through such an operation, unless a stated rule forbids the exit.
    """
    fails = _decision(analysis, design.LINGER_FAILS)
    lower = _decision(analysis, design.LINGER_LOWER)
    control = _decision(analysis, design.CONTROL_ARRIVE_FAILS)
    target = analysis.device.target or "sm_103a/sm_100a"
    rules = DOC_AUDIT["stated_rule"]
    if fails == "supported":
        because = [*ordering, design.LINGER_FAILS]
        if rules.get("dealloc"):
            return ("usage_error", because, _owner_usage("dealloc", rules["dealloc"]),
                    f"Classification: usage error: instr-linger still fails (claim "
                    f"{design.LINGER_FAILS} supported) with its CTA resident after its early "
                    f"dealloc, and the documentation read states a rule against "
                    f"{CONDITION['dealloc']}: {rules['dealloc']}.")
        return ("defect", because, _owner_defect(target),
                f"Classification: defect against the documentation as written: instr-linger "
                f"(dealloc early, CTA exit late) meets every precondition {ISA} and {CUTLASS} "
                f"state and still fails in most trials (claim {design.LINGER_FAILS} supported).")
    if fails == "contradicted" and lower == "supported":
        because = [*ordering, design.LINGER_FAILS, design.LINGER_LOWER]
        needs = (f"instr-linger does not fail in most trials (claim {design.LINGER_FAILS} "
                 f"contradicted) and fails less often than {design.INSTR_BASELINE} (claim "
                 f"{design.LINGER_LOWER} supported), so the failure needs {CONDITION['exit']}")
        if rules.get("exit"):
            return ("usage_error", because, _owner_usage("exit", rules["exit"]),
                    f"Classification: usage error: {needs}, which the documentation read "
                    f"forbids: {rules['exit']}.")
        if control == "supported":
            return ("documentation_gap", [*because, design.CONTROL_ARRIVE_FAILS], _owner_gap(),
                    f"Classification: documentation gap: {needs}; a late "
                    "remote mbarrier arrive into an exited CTA, an operation the rule of "
                    f"{ISA} section 2.2.2 covers, faults by itself (claim "
                    f"{design.CONTROL_ARRIVE_FAILS} supported); no section of {ISA} says that "
                    "tcgen05.alloc.cta_group::2 completes through such an operation.")
        return ("class_not_decided", [], "",
                f"Classification not decided: {needs}, but claim {design.CONTROL_ARRIVE_FAILS} "
                f"(a late remote arrive into an exited CTA faults by itself) is "
                f"{control.replace('_', ' ')}, so it is not shown that the rule of {ISA} section "
                "2.2.2 covers it.")
    return ("class_not_decided", [], "",
            f"Classification not decided: claim {design.LINGER_FAILS} is {fails.replace('_', ' ')} "
            f"and claim {design.LINGER_LOWER} is {lower.replace('_', ' ')}; together they say "
            "whether the failure needs the early exit (documentation gap) or happens with every "
            "stated precondition met (defect).")


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
        f"So the classification (usage error, documentation gap or defect) is not decided either: "
        f"it follows from claims {design.BASELINE_FAILS}, the barrier claims, "
        f"{design.LINGER_FAILS}, {design.LINGER_LOWER} and {design.CONTROL_ARRIVE_FAILS} "
        "(README.md, \"Classification\"), none of which this run decided.",
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


def _status(analysis: Analysis) -> tuple[str, list[str], str, str, str]:
    """(status, the decided claims the owner rests on, the owner or "", a next step, a sentence
    saying which claims gave the status, or "") from the decisions."""
    base = _decision(analysis, design.BASELINE_FAILS)
    barriers = {c: _decision(analysis, c) for c in design.BARRIER_LOWER.values()}
    removes = [c for c, d in barriers.items() if d == "supported"]
    if base == "contradicted":
        return ("not_reproduced", [], "",
                f"Compare device, driver and toolkit with the report: {design.BASELINE} did not end "
                f"as {design.LAUNCH_FAILURE} in most trials.", "")
    if base != "supported":
        return ("inconclusive", [], "",
                f"Decide claim {design.BASELINE_FAILS}: run {design.BASELINE} with more trials "
                f"({RUN_HINT}).", "")
    if removes:
        status, because, owner, why = _classify(analysis, [design.BASELINE_FAILS, *removes])
        if status == "class_not_decided":
            step = (f"Decide the claims that classify the failure ({design.LINGER_FAILS}, "
                    f"{design.LINGER_LOWER}, {design.CONTROL_ARRIVE_FAILS}): run instr-linger, "
                    f"{design.INSTR_BASELINE} and control-arrive-after-exit with more trials "
                    f"({RUN_HINT}).")
        else:
            step = ("File with NVIDIA, attaching this result and sass_analysis.md, naming the "
                    "owner below and the claims it rests on.")
        return status, because, owner, step, why
    if barriers and all(d == "contradicted" for d in barriers.values()):
        return ("reproduced_not_ordering", [design.BASELINE_FAILS], OWNER_REPRODUCED_NOT_ORDERING,
                "File with NVIDIA: the failure reproduces and no barrier.cluster placement "
                "removes it.", "")
    return ("reproduced_ordering_not_decided", [], "",
            "Decide the barrier claims (" + ", ".join(barriers) + "): run the follower-barrier-* "
            f"arms with more trials ({RUN_HINT}).", "")


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

    status, because, owner, step, why = _status(analysis)
    if why:
        sentences.append(why)
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
    if undecided and status not in ("inconclusive", "reproduced_ordering_not_decided",
                                    "class_not_decided"):
        nxt.append(f"Claims not decided: {', '.join(undecided)}; rerun their arms ({RUN_HINT}).")
    return {"status": status, "sentences": sentences,
            "owner": owner if because else None, "owner_because": because if owner else [],
            "hypotheses": _hypotheses(analysis, cta1_in_alloc), "next": nxt}
