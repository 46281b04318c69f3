"""Measurements of a crash case's trials, as sentences a verdict states beside its decided
claims: each arm's crashes with its exposure, rate and Kaplan-Meier median as the harness
computed them; where the crashes fault (one signature per site); where the threads were at the
fault; the hangs; the trials that are no evidence; the ELF sections only one group of cubins
carries. Counts and the harness's own estimates, no statistics. Standard library only.

    from gpurepro.case import crash_measures as cm

    cm.arm_sentence(analysis, "baseline", "the report's loop")   # "... 9 of 10 valid trials crashed ..."
    text, in_libcuda = cm.site_sentence(analysis.crash_sites)
    cm.phase_sentence(analysis, "baseline")                      # threads at the fault
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..model.result import Analysis, ArmSummary, CrashSite

__all__ = [
    "READ_LATE", "arm_sentence", "crashes_by_arm", "fmt", "group_only_sections", "hangs_sentence",
    "km_median", "no_evidence_sentence", "phase_sentence", "rate", "sections_sentence",
    "site_sentence",
]

# Said of thread tables from crash records that predate the handler's snapshot at the fault.
READ_LATE = ("as the crash handler read them after its backtrace and maps scan, not at the fault "
             "(records from before its snapshot on entry; the other threads ran on meanwhile)")


def fmt(x: float | None) -> str:
    """A number as the sentences print it: three significant digits, exponent form when large
    or small, an en dash for none."""
    if x is None:
        return "–"
    if x == 0:
        return "0"
    if abs(x) >= 1e4 or abs(x) < 1e-2:
        return f"{x:.2e}"
    return f"{x:.3g}"


def rate(s: ArmSummary, per: str) -> str:
    """The arm's failure rate per ``per`` with its exact interval, as the harness computed it."""
    r = s.exposure.rate
    if r.estimate is None:
        return "no exposure"
    ci = r.ci95
    return (f"{fmt(r.estimate)} per {per}"
            + (f" (95% CI {fmt(ci[0])}–{fmt(ci[1])})" if ci else ""))


def km_median(s: ArmSummary, unit: str = "cycles") -> str:
    """Which median: the first exposure at which the Kaplan-Meier survival estimate is 0.5 or
    below, as the harness computed it; 'not reached' when it never got there."""
    if s.failures == 0:
        return "no crash, so no median"
    ttf = s.time_to_failure
    exposure = ttf.exposure.median if ttf.exposure else None
    seconds = ttf.seconds.median if ttf.seconds else None
    if exposure is None:
        return ("Kaplan–Meier median not reached (the survival estimate never fell to 0.5: "
                "fewer than half of the trials crashed)")
    return (f"Kaplan–Meier median {fmt(exposure)} {unit} ({fmt(seconds)} s) to the crash (the "
            f"first exposure at which the survival estimate is 0.5 or below)")


def arm_sentence(analysis: Analysis, arm: str, what: str, on: str = "", coarse: bool = False,
                 unit: str = "cycles", per: str = "10^6 cycles") -> str | None:
    """``<on><arm> (<what>): F of N valid trials crashed (signals), E <unit> in all, <rate>;
    <median>.`` None for an arm without valid trials. ``coarse``: the arm's counters come
    from a once-a-second printout (a reporter's program), so no rate and no median."""
    s = analysis.arms.get(arm)
    if not s or s.n_valid == 0:
        return None
    text = f"{on}{arm} ({what}): {s.failures} of {s.n_valid} valid trials crashed"
    signals = sorted({t.detail for t in analysis.trials_of(arm, "crashed") if t.detail})
    if signals:
        text += f" ({', '.join(signals)})"
    if coarse:
        # A survivor's count is its last printout's, a crash within the first second shows 0.
        if s.failures:
            return (text + f"; no rate and no median for it: its {unit.removesuffix('s')} counts come "
                    f"from the program's once-a-second printout, so a crash within the first "
                    f"second shows 0 {unit}.")
        return (text + f", {fmt(s.exposure.total)} {unit} counted up to each trial's last "
                "once-a-second printout (an undercount); no median.")
    return text + f", {fmt(s.exposure.total)} {unit} in all, {rate(s, per)}; {km_median(s, unit)}."


def crashes_by_arm(analysis: Analysis, skip: tuple[str, ...]) -> str | None:
    """``Crashed / valid trials, per arm: a 3/10, ...`` for the arms not in ``skip``."""
    parts = [f"{a} {s.failures}/{s.n_valid}" for a, s in analysis.arms.items()
             if a not in skip and s.n_valid]
    if not parts:
        return None
    return "Crashed / valid trials, per arm: " + ", ".join(parts) + "."


def no_evidence_sentence(arms: Mapping[str, ArmSummary]) -> str | None:
    """The arms' invalid and unsupported trials, which are no evidence either way."""
    counts = {a: {k: v for k, v in s.outcomes.items() if k in ("invalid", "unsupported")}
              for a, s in arms.items()}
    counts = {a: c for a, c in counts.items() if c}
    if not counts:
        return None
    return ("Trials without evidence (invalid: made no launch; unsupported: the device refused the "
            "module): " + "; ".join(f"{a}: " + ", ".join(f"{k} {v}" for k, v in c.items())
                                    for a, c in counts.items()) + ".")


def site_sentence(sites: tuple[CrashSite, ...]) -> tuple[str | None, bool]:
    """Where it faults, with the arms of the most frequent signature; and whether every crash
    record puts the PC inside libcuda."""
    if not sites:
        return None, False
    total = sum(b.count for b in sites)
    recorded = [b for b in sites if b.pc_module]
    in_libcuda = bool(recorded) and all(str(b.pc_module).startswith("libcuda") for b in recorded)
    top = sites[0]
    arms = ", ".join(f"{a} {n}" for a, n in sorted(top.arms.items()))
    share = f"{top.count} of {total} crashes" if len(sites) > 1 else f"all {total} crashes"
    module = top.pc_module
    if module is None:
        text = f"Crash site: {share} ({arms}) died of {top.signal} without a crash record."
    else:
        if str(module).startswith("libcuda"):
            where = f"inside the driver library {module} at offset {top.pc_offset}"
        elif module == "[anonymous]":
            where = "in anonymous executable memory (code mapped at run time, from no file)"
        elif module == "[unmapped]":
            where = "at an address mapped nowhere"
        else:
            where = f"in {module}+{top.pc_offset}"
        fault = top.fault_module
        frames = " <- ".join(f"{f.module}+{f.offset}" for f in top.frames[1:4])
        text = (f"Crash site: {share} ({arms}) share one signature, {top.signal} "
                f"({top.code_name or 'code ?'}) with the PC {where}"
                + (f"; the faulting address lies in {fault}" if fault else "")
                + (f"; callers {frames}" if frames else "") + ".")
    if len(sites) > 1:
        text += f" {len(sites)} distinct signatures in all" + (
            "; every crash record has its PC inside libcuda." if in_libcuda else ".")
    return text, in_libcuda


def phase_sentence(analysis: Analysis, arm: str) -> str | None:
    """Where an arm's threads were at its crashes (``faulting thread | the others``, the four
    most frequent), from the records read at the fault; from the older records read late,
    labelled so, where none was read at the fault."""
    pairs, without = analysis.thread_phases(arm)
    late: Counter[str] | None
    late, _ = analysis.thread_phases(arm, at_fault=False)
    when = "at the fault"
    if not pairs:
        pairs, when, late = late, READ_LATE, None
    total = sum(pairs.values())
    if not total:
        return None
    top = "; ".join(f"{label} in {n}" for label, n in pairs.most_common(4))
    more = f" ({len(pairs) - 4} other combinations)" if len(pairs) > 4 else ""
    older = f", {sum(late.values())} older records read late left out" if late else ""
    return (f"Where the threads were {when}, {arm} ({total} crash records with every "
            f"thread's call{f', {without} without' if without else ''}{older}; faulting thread | "
            f"the others): {top}{more}.")


def hangs_sentence(analysis: Analysis) -> str | None:
    """Hangs per arm, with where the workers were stuck (the hung record's threads, read when the
    driver gave up waiting for them): a failure of its own, which the crash rates censor."""
    parts = []
    for arm, s in analysis.arms.items():
        hung = list(analysis.trials_of(arm, "hung"))
        if not hung:
            continue
        stuck: Counter[str] = Counter()
        for t in hung:
            for th in (t.record.get("observations") or {}).get("threads") or []:
                if th.get("inside") and th.get("call"):
                    stuck[str(th["call"])] += 1
        where = (" (workers stuck inside " + ", ".join(f"{c} {n}x" for c, n in stuck.most_common())
                 + ")") if stuck else ""
        parts.append(f"{arm} {len(hung)} of {s.n_valid}{where}")
    if not parts:
        return None
    return ("Hangs (a trial whose workers were still inside a driver call after the stop; counted "
            "apart from the crashes, whose rates treat them as censored): " + "; ".join(parts) + ".")


def group_only_sections(analysis: Analysis, name: str = "sections",
                        prefix: str = "tile") -> dict[str, Any] | None:
    """From an ELF sections analysis (gpurepro.building.elf.compare, under ``name``): the sections
    every cubin labelled ``prefix...`` carries and no other does (``only``), those it shares
    with some others (``shared``), and the host object's symbol names."""
    sec = analysis.analyses.get(name) or {}
    modules = list(sec.get("modules") or {})
    diffs = sec.get("differences") or {}
    if not modules or not diffs:
        return None
    group = sorted(m for m in modules if m.startswith(prefix))
    rest = sorted(m for m in modules if not m.startswith(prefix))
    if not group or not rest:
        return None
    only = sorted(k for k, labels in diffs.items() if sorted(labels) == group)
    shared = {k: sorted(set(labels) - set(group)) for k, labels in diffs.items()
              if set(group) <= set(labels) and set(labels) - set(group)}
    names = sorted({s for syms in (sec.get("host_symbols") or {}).values() for s in syms})
    return {"tile": group, "plain": rest, "only": only, "shared": shared, "host_symbols": names}


def sections_sentence(found: Mapping[str, Any] | None, label: Callable[[list[str]], str],
                      group: str = "Tile IR") -> str | None:
    """What group_only_sections found, in words; ``label`` names a list of cubin labels (with
    the arm that loads each, say)."""
    if not found or not found["only"]:
        return None
    main = [k for k in found["only"] if not k.startswith(".rela")]
    rela = [k for k in found["only"] if k.startswith(".rela")]
    text = (f"ELF sections (the sections analysis of the built cubins, by the arm that loads each): "
            f"only the {group} cubins {label(found['tile'])} carry {', '.join(main)}"
            + (f" (and the relocations {', '.join(rela)})" if rela else "")
            + f"; the plain cubins {label(found['plain'])} carry none of them.")
    if ".nv.host" in main:
        text += (" .nv.host holds an embedded host object"
                 + (f" with the symbols {', '.join(found['host_symbols'])}" if found["host_symbols"] else "")
                 + ".")
    also: dict[tuple[str, ...], list[str]] = {}
    for k, v in sorted(found["shared"].items()):
        also.setdefault(tuple(v), []).append(k)
    for where, secs in also.items():
        text += f" The {group} cubins share {', '.join(secs)} with {label(list(where))}."
    return text
