"""The verdict: the report's tables as sentences, computed from the measured statistics.

``verdict(analysis)`` gets the harness's analysis dict (per-arm counts, Clopper-Pearson intervals,
Fisher tests against the case baseline) and returns ``{"status", "sentences", "owner", "next"}``.
Nothing measured is written here: every number in a sentence comes from ``analysis``. The one
fixed input is DOC_AUDIT, the conclusion of the documentation audit in README.md, which decides
how a reproduced ordering failure is classified (defect vs documentation gap vs usage error).

Comparisons between two non-baseline arms (an instrument vs the instrumented baseline) are not in
``analysis["comparisons"]``; they use scipy's Fisher exact test when scipy is importable and an
exact hypergeometric sum otherwise (the manifest must import on GPU nodes with no scipy).
Standard library only at import time.
"""

from __future__ import annotations

import importlib.util
import math
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def _sibling(name: str):
    """Import a module of this case folder by path, under a name unique to this case."""
    modname = f"gpurepro_case_tcgen05_alloc_order_{name}"
    if modname not in sys.modules:
        spec = importlib.util.spec_from_file_location(modname, Path(__file__).with_name(f"{name}.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[modname] = module
        spec.loader.exec_module(module)
    return sys.modules[modname]


design = _sibling("design")

ALPHA = 0.05

# Conclusion of the documentation audit (README.md, "Documentation audit"). One of
# "documented" (the reproducer breaks a stated rule: usage error), "implied" (a careful reader
# could derive the rule: documentation gap), "absent" (nothing states or implies it, and the
# ISA's own wording says the reproducer's synchronisation suffices: defect as documented).
DOC_AUDIT = {
    "conclusion": "absent",
    "summary": (
        "Neither the PTX ISA nor CUTLASS's Allocator2Sm states that one CTA of a pair must not "
        "deallocate (or exit) before the peer's tcgen05.alloc.cta_group::2 has completed: the ISA "
        "only says the first warp 'could block' until the peer performs the collective, asks the "
        "pair to synchronise Tensor Memory accesses before a 2-CTA dealloc and says that it "
        "'suffices' to ensure there are no concurrent accesses (the reproducer makes none); "
        "CUTLASS's @pre lists name no timing precondition. The requirement is honoured in "
        "practice only because the ISA's examples and CUTLASS's 2-SM kernels put a peer "
        "handshake before dealloc."
    ),
    "documents": (
        "PTX ISA, tcgen05 'Issue Granularity' (#tcgen05-issue-granularity) and "
        "'tcgen05.alloc, tcgen05.dealloc, tcgen05.relinquish_alloc_permit' "
        "(#tcgen05-memory-alloc-manage-instructions)",
        "CUTLASS include/cute/arch/tmem_allocator_sm100.hpp, Allocator2Sm::allocate()/free() @pre",
    ),
}

OWNER_NVIDIA = (
    "NVIDIA: the tcgen05.alloc.cta_group::2 lowering in ptxas / the hardware behaviour, or the "
    "PTX ISA tcgen05 sections and CUTLASS Allocator2Sm documentation if the ordering is intended"
)


# ----------------------------------------------------------------------------- statistics


def _fisher_p(f1: int, n1: int, f2: int, n2: int) -> float | None:
    """Two-sided Fisher exact p for failures f1/n1 vs f2/n2."""
    if n1 <= 0 or n2 <= 0:
        return None
    table = [[f1, n1 - f1], [f2, n2 - f2]]
    try:
        from scipy.stats import fisher_exact  # the analysis stage has scipy

        return float(fisher_exact(table).pvalue)
    except ImportError:
        pass
    # Exact conditional test: sum P(tables as or less likely than the observed one).
    k, n, m = f1 + f2, n1 + n2, n1

    def prob(x: int) -> float:
        return math.comb(m, x) * math.comb(n - m, k - x) / math.comb(n, k)

    lo, hi = max(0, k - (n - m)), min(k, m)
    p_obs = prob(f1)
    return min(1.0, sum(p for x in range(lo, hi + 1) if (p := prob(x)) <= p_obs * (1 + 1e-7)))


# ----------------------------------------------------------------------------- formatting


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.0f}%"


def _valid(arm: Mapping[str, Any] | None) -> bool:
    return bool(arm) and arm.get("n_valid", 0) > 0


def _fails(arm: Mapping[str, Any]) -> tuple[int, int]:
    return int(arm.get("failures", 0)), int(arm.get("n_valid", 0))


def _rate(arm: Mapping[str, Any]) -> float:
    f, n = _fails(arm)
    return f / n if n else 0.0


def _prop(arm: Mapping[str, Any]) -> str:
    f, n = _fails(arm)
    prop = arm.get("proportion") or {}
    ci = prop.get("ci95")
    text = f"{f}/{n} failed ({_pct(prop.get('estimate', f / n if n else None))}"
    if ci:
        text += f", 95% CI {_pct(ci[0])}-{_pct(ci[1])}"
    text += ")"
    errors = arm.get("errors") or {}
    if errors:
        text += "; " + ", ".join(f"{k} x{v}" for k, v in sorted(errors.items(), key=lambda kv: -kv[1]))
    return text


def _p_text(p: float | None) -> str:
    if p is None:
        return "Fisher p n/a"
    return f"Fisher p={p:.2g}" if p >= 1e-4 else f"Fisher p={p:.1e}"


def _compare(analysis: Mapping[str, Any], name: str, ref: str) -> tuple[float | None, str]:
    """(p, 'fewer'|'more'|'same') for arm ``name`` against arm ``ref``."""
    arms = analysis.get("arms", {})
    a, r = arms[name], arms[ref]
    p = None
    comp = (analysis.get("comparisons") or {}).get(name) or {}
    if comp.get("vs") == ref:
        p = (comp.get("fisher") or {}).get("p_value")
    if p is None:
        p = _fisher_p(*_fails(a), *_fails(r))
    if p is not None and p < ALPHA:
        return p, "fewer" if _rate(a) < _rate(r) else "more"
    return p, "same"


def _stage_summary(arm: Mapping[str, Any]) -> dict[str, tuple[str, int]]:
    """cta -> (most common last stage, count) from observations.stages {"cta1:before_alloc": n}."""
    stages = ((arm.get("observations") or {}).get("stages")) or {}
    best: dict[str, tuple[str, int]] = {}
    for key, count in stages.items():
        if ":" not in key:
            continue
        cta, stage = key.split(":", 1)
        if cta not in best or count > best[cta][1]:
            best[cta] = (stage, int(count))
    return best


# ----------------------------------------------------------------------------- the sections


def _sass(analysis: Mapping[str, Any]) -> list[str]:
    """What the build's SASS analysis found (analyses.sass), in words; nothing if absent."""
    sass = (analysis.get("analyses") or {}).get("sass") or {}
    if not sass.get("available"):
        return []
    claims = sass.get("claims") or []
    f = {x["id"]: x["value"] for x in sass.get("findings") or []}
    out = [f"SASS analysis (ptxas {(sass.get('tools') or {}).get('ptxas', '?')}): "
           f"{sum(bool(c.get('verified')) for c in claims)} of {len(claims)} of the report's claims "
           "about the tcgen05.alloc.cta_group::2 lowering are verified."]
    if f.get("leader_waits_after_signalling") is False and f.get("follower_last_peer_access"):
        out.append("The leader's alloc returns without waiting for the follower's acknowledgement, "
                   "and the follower's alloc ends with a remote operation on the leader's shared "
                   f"memory ({f['follower_last_peer_access']}).")
    if f.get("dealloc_synchronises_with_peer") is False:
        out.append("tcgen05.dealloc.cta_group::2 never synchronises with the peer CTA.")
    return out



def _not_run(analysis: Mapping[str, Any]) -> dict[str, Any]:
    dev = analysis.get("device") or {}
    arms = analysis.get("arms") or {}
    n_unsupported = sum((a.get("outcomes") or {}).get("unsupported", 0) for a in arms.values())
    n_total = sum(a.get("n", 0) for a in arms.values())
    where = dev.get("name") or "this machine"
    cc = dev.get("compute_capability")
    if cc:
        where += f" (compute capability {cc})"
    reason = (dev.get("reason") or "").strip().rstrip(".")
    sentences = [
        f"Not run: none of the {len(arms)} arms executed a trial on {where}; {n_unsupported} of "
        f"{n_total} trials were recorded as unsupported" + (f" ({reason})." if reason else "."),
        "The runtime arms need compute capability 10.3 (the sm_103a build, B300) or 10.0 (the "
        "sm_100a build, B200); no failure proportion, barrier comparison, spin threshold or "
        "instrument effect has been measured.",
        "What did run without such a GPU: the sm_103a and sm_100a builds from the pinned wheels, "
        "the PTX-to-SASS analysis (sass_analysis.md) and the documentation audit (README.md).",
        *_sass(analysis),
        f"Documentation audit: the ordering requirement is {DOC_AUDIT['conclusion']} in the "
        f"documents read. {DOC_AUDIT['summary']}",
    ]
    return {
        "status": "not_run",
        "sentences": sentences,
        "owner": "anyone with a B300 (sm_103) or B200 (sm_100) GPU",
        "next": [
            "Run `make tcgen05-ablation` (nox -s tcgen05_ablation) on a B300 or B200 and attach "
            "the result.",
        ],
    }


def _grid(analysis: Mapping[str, Any], out: list[str]) -> dict[str, str]:
    """Baseline vs each barrier placement; returns mode -> 'fewer'|'more'|'same'."""
    arms = analysis["arms"]
    base = arms[design.BASELINE]
    out.append(
        f"Baseline (seed binary, follower CTA delayed {design.BASE_SPIN} x 1 us, no barrier): "
        f"{_prop(base)}."
    )
    effects: dict[str, str] = {}
    for mode in design.GRID_MODES[1:]:
        name = f"follower-{mode.replace('_', '-')}"
        if not _valid(arms.get(name)):
            continue
        p, eff = _compare(analysis, name, design.BASELINE)
        effects[mode] = eff
        word = {"fewer": "fewer failures than the baseline",
                "more": "more failures than the baseline",
                "same": "no detectable difference from the baseline"}[eff]
        out.append(f"With {design.MODE_LABEL[mode]}: {_prop(arms[name])}; {word} ({_p_text(p)}).")
    if effects:
        k = sum(e == "fewer" for e in effects.values())
        out.append(f"A barrier.cluster reduces the failure in {k} of {len(effects)} placements tested.")
    return effects


def _asymmetry(analysis: Mapping[str, Any], out: list[str]) -> None:
    arms = analysis["arms"]
    parts = []
    for delay in ("leader", "neither"):
        name = f"{delay}-baseline"
        if _valid(arms.get(name)):
            parts.append((delay, name))
    if not parts:
        return
    base_rate = _rate(arms[design.BASELINE])
    for delay, name in parts:
        p, eff = _compare(analysis, name, design.BASELINE)
        what = "the leader (rank 0) delayed" if delay == "leader" else "no CTA delayed"
        out.append(f"With {what} instead: {_prop(arms[name])} ({_p_text(p)} vs follower delayed).")
    leader = dict(parts).get("leader")
    if leader:
        _, eff = _compare(analysis, leader, design.BASELINE)
        if eff == "fewer" and base_rate > 0:
            out.append("The failure is asymmetric: a late follower fails, a late leader does "
                       "not fail as often.")
        elif eff == "same" and base_rate > 0:
            out.append("No leader/follower asymmetry was detected at this sample size.")
    if _valid(arms.get("leader-spin-50000")):
        out.append(f"Leader delayed 50000 x 1 us: {_prop(arms['leader-spin-50000'])}.")


def _spin(analysis: Mapping[str, Any], out: list[str]) -> None:
    arms = analysis["arms"]
    points = []
    for spin in design.SPINS:
        name = design.BASELINE if spin == design.BASE_SPIN else f"follower-spin-{spin}"
        if spin != 50000 and _valid(arms.get(name)):
            points.append((spin, arms[name]))
    if len(points) < 2:
        return
    listing = "; ".join(f"spin {s}: {_fails(a)[0]}/{_fails(a)[1]}" for s, a in points)
    failing = [s for s, a in points if _fails(a)[0] > 0]
    if not failing:
        summary = "no failure at any spin tested"
    elif failing[0] == points[0][0]:
        summary = f"it fails already at the smallest spin tested ({points[0][0]})"
    else:
        below = max(s for s, a in points if s < failing[0] and _fails(a)[0] == 0)
        summary = f"failures first appear between spin={below} and spin={failing[0]} (x 1 us)"
        later_zero = [s for s, a in points if s > failing[0] and _fails(a)[0] == 0]
        if later_zero:
            summary += f", but not monotonically (none at spin {', '.join(map(str, later_zero))})"
    out.append(f"Spin sweep, follower delayed: {listing}; {summary}.")


def _markers(analysis: Mapping[str, Any], out: list[str]) -> None:
    arms = analysis["arms"]
    ib = arms.get(design.INSTR_BASELINE)
    if not _valid(ib):
        return
    p, eff = _compare(analysis, design.INSTR_BASELINE, design.BASELINE)
    out.append(
        f"Instrumented build (progress markers), follower delayed: {_prop(ib)}; versus the seed "
        + ("no detectable difference, so the markers do not perturb the race measurably"
           if eff == "same" else f"{eff} failures, so the markers perturb the race")
        + f" ({_p_text(p)})."
    )
    stages = _stage_summary(ib)
    if stages:
        f, n = _fails(ib)
        desc = ", ".join(f"{cta.upper()} last reached '{st}' in {c}/{n}"
                         for cta, (st, c) in sorted(stages.items()))
        out.append(f"Progress markers over its {n} trials ({f} failed): {desc}.")
        order = ["entered", "delay_done", "before_alloc", "alloc_returned", "relinquish", "dealloc", "end"]
        for cta, (st, c) in sorted(stages.items()):
            if f == n and c == n and st == "before_alloc":
                out.append(f"In every trial {cta.upper()} entered tcgen05.alloc and never returned "
                           f"from it: the fault is inside {cta.upper()}'s alloc.")
            elif f == n and c == n and st in order and order.index(st) < order.index("end"):
                out.append(f"In every trial {cta.upper()} stopped after '{st}'.")


def _variants(analysis: Mapping[str, Any], out: list[str]) -> dict[str, str]:
    arms = analysis["arms"]
    effects: dict[str, str] = {}
    ref = design.INSTR_BASELINE
    if not _valid(arms.get(ref)):
        return effects
    for variant in ("no_relinquish", "no_dealloc", "linger"):
        name = f"instr-{variant.replace('_', '-')}"
        if not _valid(arms.get(name)):
            continue
        p, eff = _compare(analysis, name, ref)
        effects[variant] = eff
        a = arms[name]
        label = design.VARIANT_LABEL[variant]
        if eff == "fewer":
            tail = "removes or reduces the failure"
        elif eff == "more":
            tail = "increases failures"
        else:
            tail = "does not change the failure rate detectably"
        ref_err = set(arms[ref].get("errors") or {})
        new_err = set(a.get("errors") or {}) - ref_err
        extra = f"; it fails with a different error ({', '.join(sorted(new_err))})" if new_err else ""
        out.append(f"Instrumented, {label}: {_prop(a)}; {tail} vs the instrumented baseline "
                   f"({_p_text(p)}){extra}.")
    if effects.get("linger") == "fewer":
        out.append("Keeping both CTAs resident after their (early) dealloc removes the failure: the "
                   "trigger is a CTA *exiting* before its peer's alloc has finished, consistent "
                   "with the SASS lowering, where the follower's alloc ends with a remote "
                   "mbarrier arrive on the leader's shared memory.")
    elif effects.get("linger") == "same" and _rate(arms[ref]) > 0:
        out.append("Lingering after dealloc does not help: the early dealloc itself, not the CTA's "
                   "exit, is the trigger.")
    return effects


def _instruments(analysis: Mapping[str, Any], out: list[str], not_run: list[str]) -> None:
    arms = analysis["arms"]
    for name in ("instr-coredump", "instr-compute-sanitizer", "instr-cuda-gdb", "follower-coredump"):
        ref = design.REFERENCE[name]
        a = arms.get(name)
        if a is None or not a.get("n"):  # not part of this run at all
            continue
        inst = name.split("-", 1)[1] if name.startswith("instr-") else "coredump"
        label = design.INSTRUMENT_LABEL.get(inst, inst)
        build = "instrumented build" if name.startswith("instr-") else "seed binary"
        if not _valid(a):
            missing = ((a.get("observations") or {}).get("instrument") or {}).get("found:False", 0)
            if missing:
                not_run.append(name)
            why = (f"the tool was not found on the GPU node in {missing} of them" if missing
                   else "none produced a valid outcome")
            out.append(f"Instrument {label} ({build}): not run; {a.get('n', 0)} trials, {why}.")
            continue
        if not _valid(arms.get(ref)):
            continue
        p, eff = _compare(analysis, name, ref)
        word = {"fewer": "suppresses the failure", "more": "increases failures",
                "same": "does not suppress it detectably"}[eff]
        out.append(f"Instrument {label} ({build}): {_prop(a)} vs {_fails(arms[ref])[0]}/"
                   f"{_fails(arms[ref])[1]} without it; it {word} ({_p_text(p)}).")


def _controls(analysis: Mapping[str, Any], out: list[str]) -> None:
    arms = analysis["arms"]
    arrive, store = "control-arrive-after-exit", "control-store-after-exit"
    negative = "control-store-barrier-before-exit"
    shown = [n for n in (arrive, store, negative, "control-store-coredump", "control-store-cuda-gdb")
             if _valid(arms.get(n))]
    if not shown:
        return
    out.append("Controls without tcgen05 (the odd CTA touches the even CTA's shared memory "
               f"{design.BASE_SPIN} x 1 us after the even CTA could exit): "
               + "; ".join(f"{n}: {_prop(arms[n])}" for n in shown) + ".")
    if _valid(arms.get(store)) and _valid(arms.get(negative)):
        _, eff = _compare(analysis, store, negative)
        if eff == "more":
            out.append("A late remote store into an exited CTA fails and a barrier.cluster before "
                       "exit prevents it: the positive and negative controls behave as expected.")
    if _valid(arms.get(arrive)):
        ref = negative if _valid(arms.get(negative)) else None
        eff = _compare(analysis, arrive, ref)[1] if ref else ("more" if _rate(arms[arrive]) > 0 else "same")
        if _fails(arms[arrive])[0] > 0 and eff == "more":
            out.append("On this GPU a late remote mbarrier arrive into an exited CTA faults too: the "
                       "follower's acknowledgement at the end of its alloc (SYNCS.ARRIVE.TRANS64.RED.A1T0 "
                       "to the leader) is by itself enough to fail once the leader has exited.")
        elif _fails(arms[arrive])[0] == 0:
            out.append("A late remote mbarrier arrive into an exited CTA does not fail on this GPU, so "
                       "the follower's acknowledgement alone does not explain the failure.")
    for inst in ("coredump", "cuda-gdb"):
        name = f"control-store-{inst}"
        if _valid(arms.get(name)) and _valid(arms.get(store)) and _rate(arms[store]) > 0:
            p, eff = _compare(analysis, name, store)
            if eff == "fewer":
                out.append(f"{design.INSTRUMENT_LABEL[inst]} also suppresses this known exited-CTA "
                           f"fault ({_fails(arms[name])[0]}/{_fails(arms[name])[1]} vs "
                           f"{_fails(arms[store])[0]}/{_fails(arms[store])[1]}, {_p_text(p)}): an "
                           "instrument hiding the reported failure is expected of this class of "
                           "bug, not evidence against it.")


# ----------------------------------------------------------------------------- entry point


def verdict(analysis: Mapping[str, Any]) -> dict[str, Any]:
    arms = analysis.get("arms") or {}
    if not any(_valid(a) for a in arms.values()):
        return _not_run(analysis)

    dev = analysis.get("device") or {}
    sentences: list[str] = []
    nxt: list[str] = []
    not_run = [n for n, a in arms.items() if not _valid(a)]
    if dev.get("name"):
        sentences.append(f"Measured on {dev['name']} (compute capability "
                         f"{dev.get('compute_capability') or 'unknown'}).")
    base = arms.get(design.BASELINE)
    if not _valid(base):
        sentences.append("The baseline arm did not run, so nothing can be compared with it.")
        return {"status": "inconclusive", "sentences": sentences, "owner": "gpurepro",
                "next": [f"Run the arm {design.BASELINE}."]}

    barrier = _grid(analysis, sentences)
    _asymmetry(analysis, sentences)
    _spin(analysis, sentences)
    _markers(analysis, sentences)
    _variants(analysis, sentences)
    tool_not_run: list[str] = []
    _instruments(analysis, sentences, tool_not_run)
    _controls(analysis, sentences)
    sentences += _sass(analysis)

    reproduced = _fails(base)[0] > 0
    mitigated = any(e == "fewer" for e in barrier.values())
    audit = DOC_AUDIT["conclusion"]
    if not reproduced:
        status = "not_reproduced"
        sentences.append(
            "Ordering requirement: not decided here. The baseline did not fail on this device, so "
            "the report's failure is not reproduced and the measurements cannot separate a "
            f"defect from a documentation gap (documentation audit: {audit})."
        )
        owner = "reporter and gpurepro: compare device, driver and toolkit with the report"
    elif not barrier:
        status = "inconclusive"
        sentences.append("Ordering requirement: not decided; no barrier arm ran.")
        owner = "gpurepro"
    elif not mitigated:
        status = "reproduced_not_ordering"
        sentences.append(
            "Ordering requirement: the failure reproduces but no barrier.cluster placement reduces "
            "it, so it is not explained by the alloc/dealloc ordering between the CTAs."
        )
        owner = OWNER_NVIDIA
    else:
        sentences.append(f"Documentation audit: the requirement is {audit}. {DOC_AUDIT['summary']}")
        if audit == "documented":
            status = "usage_error"
            sentences.append("Ordering requirement: documented, so the reproducer breaks a stated "
                             "rule; the fix is in the program (synchronise before dealloc).")
            owner = "the program's author (CUTLASS users writing 2-SM kernels)"
        elif audit == "implied":
            status = "documentation_gap"
            sentences.append("Ordering requirement: a documentation gap. The failure reproduces and a "
                             "barrier between alloc and dealloc removes it, and the rule is only "
                             "implied; the PTX ISA and the Allocator2Sm @pre list should state it.")
            owner = OWNER_NVIDIA
        else:
            status = "defect"
            sentences.append("Ordering requirement: a defect against the documentation as written. A "
                             "program meeting every documented precondition fails, and a barrier "
                             "between alloc and dealloc removes it; either the behaviour must change "
                             "or the PTX ISA (Issue Granularity; alloc/dealloc) and CUTLASS's "
                             "Allocator2Sm @pre must state the ordering requirement.")
            owner = OWNER_NVIDIA
        nxt.append("File with NVIDIA, attaching this result and sass_analysis.md.")

    cc = dev.get("compute_capability")
    if cc == "10.3":
        nxt.append("Repeat on a B200 (compute capability 10.0, sm_100a build); the report covers sm_103a only.")
    elif cc == "10.0":
        nxt.append("Repeat on a B300 (compute capability 10.3), the reporter's device.")
    if tool_not_run:
        nxt.append("Install the missing tools on the GPU node and rerun: " + ", ".join(tool_not_run) + ".")
    other = [n for n in not_run if n not in tool_not_run]
    if other:
        nxt.append("Arms with no valid trial: " + ", ".join(other) + ".")
    return {"status": status, "sentences": sentences, "owner": owner, "next": nxt}
