"""The tile_unload_race verdict: measurements, and status/owner/next from decided claims.

This module computes no statistics. The comparisons between arms are the claims declared in
manifest.py, decided by the harness under one family-wise error rate (gpurepro.analyze.claims); the
harness appends their sentences to the verdict itself. What is written here:

- ``sentences``: measurements only (counts, rates as counted, the Kaplan-Meier median the
  harness computed, crash sites, ELF sections, counters at the crash), each naming its arm;
- ``status``, ``owner``, ``owner_because``, ``next``: from claim decisions (plus the crash site,
  a measurement);
- ``hypotheses``: what no arm of this case isolates, labelled as such.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from typing import Any

from gpurepro.case import Analysis, ArmSummary, CrashSite

PER = "10^6 cycles"

# Claims of manifest.py the verdict reads.
REPRODUCED = ("baseline-crashes", "as-filed-crashes")
TILE = "control-cuda"
# Claims that the same calls without overlap crash less (each supports "two threads calling the
# driver at once" when supported).
OVERLAP = ("one-thread", "serialized", "lock-unload-launch")
LOCKS = ("lock-unload-launch", "lock-unload-load")
POW2_CLAIMS = ("hold-near-pow2", "hold-near-pow2-like-far", "grow-crossings-live",
               "grow-crossings-loads", "primed-crossings-live", "baseline-crossings-live",
               "primed-grow-from-2000")

# Cubin labels of the sections analysis -> the arm that loads that cubin alone.
MODULE_ARMS = {"tile": "baseline", "tile_other": "other-tile-kernel", "cuda": "control-cuda",
               "cuda_globals": "cuda-module-globals"}

# Live modules (loads - unloads) at the crash "near a power of two": within +-0.01 in log2
# (+-0.7%), a window covering 2% of the log2 scale; counts below 64 are left out (every small
# count is near a power of two). A plain count, not a test: the pattern was found in the same
# data, so it is reported as a measurement and the explanation as a hypothesis.
POW2_WINDOW = 0.01
POW2_MIN_LIVE = 64
POW2_MIN_CRASHES = 5


def _f(x: float | None) -> str:
    if x is None:
        return "–"
    if x == 0:
        return "0"
    if abs(x) >= 1e4 or abs(x) < 1e-2:
        return f"{x:.2e}"
    return f"{x:.3g}"


# ---------------------------------------------------------------- measurements


def _instrumented(analysis: Analysis, arm: str) -> bool:
    s = analysis.arms.get(arm)
    return (s.factors.get("driver", "host") if s else "host") == "host"


def _coarse(analysis: Analysis, arm: str) -> bool:
    """The seed program's counters come from a once-a-second printout."""
    return not _instrumented(analysis, arm)


def _rate(s: ArmSummary) -> str:
    r = s.exposure.rate
    if r.estimate is None:
        return "no exposure"
    ci = r.ci95
    return (f"{_f(r.estimate)} per {PER}"
            + (f" (95% CI {_f(ci[0])}–{_f(ci[1])})" if ci else ""))


def km_median(s: ArmSummary) -> str:
    """Which median: the first exposure at which the Kaplan-Meier survival estimate is 0.5 or
    below, as the harness computed it; 'not reached' when it never got there."""
    if s.failures == 0:
        return "no crash, so no median"
    ttf = s.time_to_failure
    cycles = ttf.exposure.median if ttf.exposure else None
    seconds = ttf.seconds.median if ttf.seconds else None
    if cycles is None:
        return ("Kaplan–Meier median not reached (the survival estimate never fell to 0.5: "
                "fewer than half of the trials crashed)")
    return (f"Kaplan–Meier median {_f(cycles)} cycles ({_f(seconds)} s) to the crash (the first "
            f"exposure at which the survival estimate is 0.5 or below)")


def _arm_sentence(analysis: Analysis, arm: str, what: str, on: str = "") -> str | None:
    s = analysis.arms.get(arm)
    if not s or s.n_valid == 0:
        return None
    text = f"{on}{arm} ({what}): {s.failures} of {s.n_valid} valid trials crashed"
    signals = sorted({t.detail for t in analysis.trials_of(arm, "crashed") if t.detail})
    if signals:
        text += f" ({', '.join(signals)})"
    if _coarse(analysis, arm):
        # The seed program prints its counters once a second: a survivor's cycles are counted up
        # to its last printout, a crash within the first second shows 0 cycles.
        if s.failures:
            return (text + "; no rate and no median for it: its cycle counts come from the program's "
                    "once-a-second printout, so a crash within the first second shows 0 cycles.")
        return (text + f", {_f(s.exposure.total)} cycles counted up to each trial's last "
                "once-a-second printout (an undercount); no median.")
    return (text + f", {_f(s.exposure.total)} cycles in all, {_rate(s)}; {km_median(s)}.")


def crashes_by_arm(analysis: Analysis, skip: tuple[str, ...]) -> str | None:
    parts = [f"{a} {s.failures}/{s.n_valid}" for a, s in analysis.arms.items()
             if a not in skip and s.n_valid]
    if not parts:
        return None
    return "Crashed / valid trials, per arm: " + ", ".join(parts) + "."


def no_evidence_sentence(arms: Mapping[str, ArmSummary]) -> str | None:
    counts = {a: {k: v for k, v in s.outcomes.items() if k in ("invalid", "unsupported")}
              for a, s in arms.items()}
    counts = {a: c for a, c in counts.items() if c}
    if not counts:
        return None
    return ("Trials without evidence (invalid: made no launch; unsupported: the device refused the "
            "module): " + "; ".join(f"{a}: " + ", ".join(f"{k} {v}" for k, v in c.items())
                                    for a, c in counts.items()) + ".")


def site_sentence(sites: tuple[CrashSite, ...]) -> tuple[str | None, bool]:
    """Where it faults, with the arms of each signature; and whether every crash record puts the
    PC inside libcuda."""
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


def tile_only_sections(analysis: Analysis) -> dict[str, Any] | None:
    """Sections every Tile IR cubin carries and no plain one does, from the sections analysis."""
    sec = analysis.analyses.get("sections") or {}
    modules = list(sec.get("modules") or {})
    diffs = sec.get("differences") or {}
    if not modules or not diffs:
        return None
    tile = sorted(m for m in modules if m.startswith("tile"))
    plain = sorted(m for m in modules if not m.startswith("tile"))
    if not tile or not plain:
        return None
    only = sorted(k for k, labels in diffs.items() if sorted(labels) == tile)
    shared = {k: sorted(set(labels) - set(tile)) for k, labels in diffs.items()
              if set(tile) <= set(labels) and set(labels) - set(tile)}
    names = sorted({s for syms in (sec.get("host_symbols") or {}).values() for s in syms})
    return {"tile": tile, "plain": plain, "only": only, "shared": shared, "host_symbols": names}


def _cubins(labels: list[str]) -> str:
    return ", ".join(f"{lb} ({MODULE_ARMS[lb]})" if lb in MODULE_ARMS else lb for lb in labels)


def sections_sentence(found: Mapping[str, Any] | None) -> str | None:
    if not found or not found["only"]:
        return None
    main = [k for k in found["only"] if not k.startswith(".rela")]
    rela = [k for k in found["only"] if k.startswith(".rela")]
    text = (f"ELF sections (the sections analysis of the built cubins, by the arm that loads each): "
            f"only the Tile IR cubins {_cubins(found['tile'])} carry {', '.join(main)}"
            + (f" (and the relocations {', '.join(rela)})" if rela else "")
            + f"; the plain cubins {_cubins(found['plain'])} carry none of them.")
    if ".nv.host" in main:
        text += (" .nv.host holds an embedded host object"
                 + (f" with the symbols {', '.join(found['host_symbols'])}" if found["host_symbols"] else "")
                 + ".")
    also: dict[tuple[str, ...], list[str]] = {}
    for k, v in sorted(found["shared"].items()):
        also.setdefault(tuple(v), []).append(k)
    for where, secs in also.items():
        text += f" The Tile IR cubins share {', '.join(secs)} with {_cubins(list(where))}."
    return text


def crash_counters(analysis: Analysis) -> dict[str, Any] | None:
    """The last counter snapshot before each crash of the instrumented (host.cc) arms: the
    crash handler's copy at the fault where the record has one (`at_fault` of them)."""
    rows = []
    at_fault = 0
    for t in analysis.trials:
        c = t.counters
        if (t.outcome == "crashed" and _instrumented(analysis, t.arm)
                and all(k in c for k in ("loads", "launches", "unloads"))):
            rows.append((t.arm, c["loads"], c["launches"], c["unloads"]))
            at_fault += "snapshot_ns" in (t.record.get("crash") or {})
    if not rows:
        return None
    gaps: dict[int, int] = {}
    for _, loads, launches, _ in rows:
        gaps[loads - launches] = gaps.get(loads - launches, 0) + 1
    lives = [loads - unloads for _, loads, _, unloads in rows]
    big = [v for v in lives if v >= POW2_MIN_LIVE]
    near = [v for v in big if abs(math.log2(v) - round(math.log2(v))) <= POW2_WINDOW]
    always = [loads - unloads for arm, loads, _, unloads in rows if arm == "always-unload"]
    return {"records": len(rows), "gaps": dict(sorted(gaps.items())), "big": len(big),
            "near": len(near), "powers": sorted({2 ** round(math.log2(v)) for v in near}),
            "always_unload_max_live": max(always) if always else None,
            "always_unload_crashes": len(always), "at_fault": at_fault}


def counters_sentences(cc: Mapping[str, Any] | None) -> list[str]:
    if not cc:
        return []
    gaps = ", ".join(f"{g} in {n}" for g, n in cc["gaps"].items())
    if cc["at_fault"] == cc["records"]:
        out = [f"Counters at the fault, as the crash handler copied them on entry, in each crash of "
               f"the host.cc arms ({cc['records']} crash records): loads − launches was {gaps}."]
    else:
        out = [f"Counters at the last snapshot before each crash of the host.cc arms ({cc['records']} "
               f"crash records; a snapshot may lag the crash): loads − launches was {gaps}."]
    if cc["big"] >= POW2_MIN_CRASHES:
        out.append(
            f"Loaded modules (loads − unloads) at that snapshot: {cc['near']} of {cc['big']} crashes "
            f"with at least {POW2_MIN_LIVE} modules loaded came within ±0.7% of a power of two"
            + (f" ({', '.join(str(p) for p in cc['powers'])})" if cc["powers"] else "")
            + f", {cc['big'] - cc['near']} did not (a plain count: the window covers 2% of the log2 scale; "
              f"no test is made).")
    if cc["always_unload_max_live"] is not None:
        out.append(f"always-unload crashed {cc['always_unload_crashes']} times with at most "
                   f"{cc['always_unload_max_live']} modules loaded at the snapshot.")
    return out


# Said of thread tables from crash records that predate the handler's snapshot at the fault.
READ_LATE = ("as the crash handler read them after its backtrace and maps scan, not at the fault "
             "(records from before its snapshot on entry; the other threads ran on meanwhile)")


def phase_sentence(analysis: Analysis, arm: str) -> str | None:
    pairs, without = analysis.thread_phases(arm)
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


# ---------------------------------------------------------------- hypotheses


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


def hypotheses(analysis: Analysis, cc: Mapping[str, Any] | None,
               sections: Mapping[str, Any] | None) -> list[str]:
    out = []
    decision, supported = analysis.decision, analysis.supported
    locks_run = any(decision(n) is not None for n in LOCKS)
    if supported("never-unload") and any(supported(n) for n in OVERLAP) and not locks_run:
        gap = ""
        if cc and cc["gaps"]:
            gap = (f" At the crash snapshots loads − launches was "
                   f"{', '.join(f'{g} in {n}' for g, n in cc['gaps'].items())} of {cc['records']} records "
                   f"(a gap of 2: both threads between load-return and launch-return, neither inside an "
                   f"unload; the snapshot may lag).")
        out.append("Hypothesis (no arm isolates it): cuModuleUnload is the call that races with the "
                   "other thread's load or launch. never-unload shows that unloads are needed and "
                   "one-thread/serialized that overlapping threads are; no arm serialises the unload "
                   "alone." + gap)
    if sections and sections["only"] and decision(TILE) == "supported":
        main = [k for k in sections["only"] if not k.startswith(".rela")]
        others = ", ".join(k for k in main if k != ".nv.host")
        arms = analysis.arms
        nodebug, lineinfo = arms.get("tile-nodebug"), arms.get("control-cuda-lineinfo")
        if nodebug and nodebug.n_valid:
            ruled_out = (f"The line tables are not needed: tile-nodebug (no line tables, same .text "
                         f"and .nv.host) crashed in {nodebug.failures} of {nodebug.n_valid} valid "
                         f"trials (its claim that it crashes: {decision('tile-nodebug-crashes')})"
                         + (f", and a plain cubin with line tables (control-cuda-lineinfo) in "
                            f"{lineinfo.failures} of {lineinfo.n_valid}" if lineinfo else "") + "; ")
        else:
            ruled_out = f"The Tile IR cubins alone also carry {others}; "
        out.append("Hypothesis (no arm isolates it): of what the Tile IR cubins add, the .nv.host host "
                   "object (by its symbol names, callbacks the driver runs on the CPU before load and "
                   "when arguments change) is what the race involves. " + ruled_out +
                   "no arm removes .nv.host: tileiras has no option to omit it (--host-arch and "
                   "--host-os only change what it holds) and binutils do not rewrite CUDA ELF files.")
    if any(decision(n) is not None for n in OVERLAP) and not locks_run:
        out.append("Hypothesis (not run): serialising only unloads against launches, with loads and "
                   "launches still concurrent, avoids the crash. The serialized arm put one mutex "
                   "around each whole iteration, which removes all overlap.")
    # The interventions' claims (baseline-crossings-live is decided whenever the baseline runs).
    mechanism_run = any(decision(n) is not None for n in POW2_CLAIMS
                        if n != "baseline-crossings-live")
    if cc and cc["big"] >= POW2_MIN_CRASHES and cc["near"] and not mechanism_run:
        against = f"{cc['big'] - cc['near']} of {cc['big']} such crashes were off powers of two"
        if cc["always_unload_max_live"] is not None:
            against += (f", and always-unload crashed with at most {cc['always_unload_max_live']} "
                        f"modules loaded")
        out.append("Hypothesis (a correlation found in the same data it was looked for in, not tested "
                   "on independent data): crashes cluster where the number of loaded modules crosses a "
                   "power of two, as a per-context table of module records resized at powers of two "
                   "while another thread still reads the old copy would make them. It cannot be the "
                   f"whole story: {against}.")
    if (decision("context-per-thread") == "supported"
            and decision("two-contexts-two-threads") in (None, "not_decided")):
        out.append("Hypothesis (confounded): the state that races is per context. context-per-thread "
                   "gives each thread its own context, so every context also has a single thread; "
                   "the arm cannot tell separate contexts from one thread per context. Two threads "
                   "in each of two contexts (two-contexts-two-threads) separate them"
                   + (" but did not decide it in this run." if decision("two-contexts-two-threads")
                      else "."))
    if mechanism_run:
        out += pow2_hypothesis(analysis)
    if locks_run:
        out += race_pair_hypothesis(analysis)
    return out


def race_pair_hypothesis(analysis: Analysis) -> list[str]:
    """Which pair of calls races, as far as the lock arms bound it."""
    decision = analysis.decision
    if decision("lock-unload-launch") != "supported":
        return []
    arms = analysis.arms
    lul = arms.get("lock-unload-launch")
    lul_failures, lul_valid = (lul.failures, lul.n_valid) if lul else (0, 0)
    parts = ["Hypothesis (bounded by the lock arms; no arm shows the state itself): the racing "
             "pair is cuModuleUnload in one thread against cuModuleGetFunction + cuLaunchKernel "
             "in the other, and the launch faults on what the unload left: with one mutex around "
             f"exactly those (lock-unload-launch) {lul_failures} of {lul_valid} valid trials "
             "crashed (its claim of a lower rate supported), while its loads still overlapped "
             "launches"]
    ll = arms.get("lock-launch")
    if ll and ll.n_valid and decision("lock-launch") != "supported":
        parts.append(f"a mutex around get-function + launch alone, so that launches never overlap "
                     f"but unloads run free (lock-launch), did not lower it in a decided claim "
                     f"({ll.failures} crashes in {ll.n_valid} valid trials; claim "
                     f"{decision('lock-launch')})")
    if decision("lock-unload-load") == "contradicted":
        parts.append("and a mutex around unload and load (lock-unload-load) raised the rate "
                     "(its claim contradicted)")
    text = "; ".join(parts) + "."
    return [text + baseline_threads(analysis) + lock_launch_threads(analysis)]


def baseline_threads(analysis: Analysis) -> str:
    """What the baseline's records read at the fault say about the pair: the faulting thread's
    call, and which call the other thread was inside (an unload still running, or already its
    next load)."""
    pairs, _ = analysis.thread_phases(analysis.baseline)
    total = sum(pairs.values())
    if not total:
        return ""
    def others(call: str) -> int:
        return sum(n for label, n in pairs.items()
                   if f"in {call}" in label.split(" | ", 1)[1].split(", "))
    in_launch = sum(n for label, n in pairs.items() if label.startswith("in cuLaunchKernel |"))
    unload, load = others("cuModuleUnload"), others("cuModuleLoadData")
    return (f" At the fault (the crash handler's copy on entry) the faulting thread was inside "
            f"cuLaunchKernel in {in_launch} of the baseline's {total} crash records, and the other "
            f"thread inside cuModuleUnload in {unload} and inside cuModuleLoadData in {load}: "
            f"where the unload races, the launch mostly faults after it has returned.")


def lock_launch_threads(analysis: Analysis) -> str:
    """Where the other thread was at lock-launch's faults; what follows from it only where the
    records' threads were read at the fault."""
    pairs, _ = analysis.thread_phases("lock-launch")
    if pairs:
        top, n = pairs.most_common(1)[0]
        fault, other = top.split(" | ", 1)
        text = (f" Under lock-launch the faulting thread was {fault} while the other was {other} "
                f"in {n} of {sum(pairs.values())} crash records")
        if any(o.startswith("in cu") for o in other.split(", ")):
            return text + " at the fault."
        return text + (": no other driver call was running at those faults, so what the launch "
                       "faults on was left by a call that had returned.")
    late, _ = analysis.thread_phases("lock-launch", at_fault=False)
    if not late:
        return ""
    top, n = late.most_common(1)[0]
    fault, other = top.split(" | ", 1)
    return (f" Under lock-launch the faulting thread was {fault} and the other {other} in {n} of "
            f"{sum(late.values())} crash records, {READ_LATE}, so they do not show what was "
            f"running at the fault.")


def pow2_hypothesis(analysis: Analysis) -> list[str]:
    """What is left of the power-of-two table hypothesis once its arms have been run: which of
    its predictions were supported, contradicted or not decided (their sentences are in the
    verdict), and what no arm shows."""
    d = {n: analysis.decision(n) for n in POW2_CLAIMS}

    def names(v: str) -> str:
        return ", ".join(n for n, x in d.items() if x == v) or "none"

    text = ("Hypothesis (for the driver team; no arm shows the structure itself): a per-context "
            "table of module records, resized as the live module count crosses a power of two "
            "while a launch in another thread reads it. Its predictions, as claims of this run: "
            f"supported {names('supported')}; contradicted {names('contradicted')}; not decided "
            f"{names('not_decided')}.")
    if d.get("primed-crossings-live") == "supported":
        text += (" Crashes still fall at the crossings after the count had been to 9000 "
                 "(primed-crossings-live), which a table that only grows would not do; one that "
                 "also shrinks, or is rebuilt, as the count falls would.")
    if d.get("grow-crossings-live") == "supported" and d.get("grow-crossings-loads") != "supported":
        text += (" The live count (loads − unloads), not the number of modules ever loaded "
                 "(grow-crossings-loads), is the count whose crossings the crashes follow.")
    return [text]


# ---------------------------------------------------------------- verdict


# The cuda-python arms' claims (manifest.py), read for cuda.core's question: is unloading safe?
CUDA_CORE_RACE = "cuda-python-library-crashes"
CUDA_CORE_PLAIN = "cuda-python-library-cuda"
CUDA_CORE_LOCK = "cuda-python-library-lock"
LIFETIME_CLAIMS = ("lifetime-primary-reset-survives", "lifetime-primary-reset-kernel-survives",
                   "lifetime-primary-reset-retain-survives", "lifetime-ctx-destroy-survives",
                   "lifetime-ctx-destroy-kernel-survives")


def cuda_core_next(analysis: Analysis) -> list[str]:
    """What the decided cuda-python claims say to cuda.core, whose library unloading is off
    (NVIDIA/cuda-python issue 1670): one item, or none when the run has none of those claims."""
    decision = analysis.decision
    arms = analysis.arms
    parts = []

    def crashes(arm: str) -> str:
        a = arms.get(arm)
        return f"{a.failures} crashes in {a.n_valid} valid trials" if a else "not run"

    if decision(CUDA_CORE_RACE) == "supported":
        parts.append("cuLibraryUnload racing a launch in another thread of the same primary context "
                     f"crashes with Tile IR modules (claim {CUDA_CORE_RACE}: "
                     f"{crashes('cuda-python-library')})")
    for name, what in ((CUDA_CORE_PLAIN, "with plain cubins"),
                       (CUDA_CORE_LOCK, "under one lock around unload and get-kernel + launch")):
        d = decision(name)
        if d in ("supported", "contradicted"):
            parts.append(f"{what} it crashes {'less' if d == 'supported' else 'more'} (claim {name}: "
                         f"{crashes(name)}; fewer is not none)")
    lifetimes = [n for n in LIFETIME_CLAIMS if decision(n) in ("supported", "contradicted")]
    if lifetimes:
        safe = [n for n in lifetimes if decision(n) == "supported"]
        unsafe = [n for n in lifetimes if decision(n) == "contradicted"]
        parts.append("unloading a library after its context is gone "
                     + (f"ran clean ({', '.join(safe)})" if safe else "")
                     + ("; " if safe and unsafe else "")
                     + (f"failed ({', '.join(unsafe)})" if unsafe else ""))
    if not parts:
        return []
    return ["For cuda.core (NVIDIA/cuda-python issue 1670, which turned library unloading off), "
            "through cuda.bindings: " + "; ".join(parts) + "."]


def verdict(analysis: Analysis) -> dict[str, Any]:
    arms = analysis.arms
    decision, supported = analysis.decision, analysis.supported
    base_name = analysis.baseline
    base = arms.get(base_name)
    device = analysis.device
    on = (f" on {device.name} (compute capability {device.compute_capability})"
          if device.name else "")
    no_evidence = no_evidence_sentence(arms)

    if base is None or base.n_valid == 0:
        why = ", ".join(f"{k} {v}" for k, v in (base.outcomes if base else {}).items()) or "no trials"
        return {"status": "inconclusive", "owner": None, "owner_because": [],
                "sentences": [f"No valid baseline trial{on} ({why}); nothing can be concluded."]
                + ([no_evidence] if no_evidence else []),
                "next": ["Check that the Tile IR cubin loads on this device (invalid trials made no "
                         "launches; unsupported ones were refused by the device)."],
                "hypotheses": []}

    sentences = [s for s in (
        _arm_sentence(analysis, base_name, "host.cc, Tile IR cubin, two threads, three unloads in four",
                      f"O{on[2:]}, " if on else ""),
        _arm_sentence(analysis, "as-filed", "seed/repro.cc unchanged, Tile IR cubin"),
        _arm_sentence(analysis, "as-filed-cuda", "seed/repro.cc unchanged, plain cubin"),
        crashes_by_arm(analysis, (base_name, "as-filed", "as-filed-cuda")),
        no_evidence,
    ) if s]
    site, in_libcuda = site_sentence(analysis.crash_sites)
    if site:
        sentences.append(site)
    sections = tile_only_sections(analysis)
    text = sections_sentence(sections)
    if text:
        sentences.append(text)
    cc = crash_counters(analysis)
    sentences += counters_sentences(cc)
    phases = phase_sentence(analysis, base_name)
    if phases:
        sentences.append(phases)
    hangs = hangs_sentence(analysis)
    if hangs:
        sentences.append(hangs)
    lib = arms.get("library-api")
    if lib and lib.failures:
        sentences.append(f"library-api (cuLibraryLoadData / GetKernel / Unload, the entry points "
                         f"cuda-tile itself uses) crashed in {lib.failures} of {lib.n_valid} valid "
                         f"trials.")

    reproduced = any(supported(n) for n in REPRODUCED)
    overlap = [n for n in OVERLAP if decision(n) is not None]
    overlap_needed = bool(overlap) and supported(*overlap)
    undecided = sorted(analysis.undecided())
    nxt: list[str] = []
    owner = None
    because: list[str] = []

    if not reproduced:
        status = "not_reproduced"
        nxt.append("Raise the cycle budget, or run on the reporter's architecture (sm_120, driver 595.84).")
    else:
        status = "reproduced"
        repro = [n for n in REPRODUCED if supported(n)]
        if overlap_needed and in_libcuda and decision(TILE) in ("supported", "contradicted"):
            because = [*repro, *overlap]
            if decision(TILE) == "supported":
                because.append(TILE)
                owner = ("NVIDIA CUDA driver (libcuda), in its handling of Tile IR modules when two "
                         "threads call it at once: every crash record has its PC inside libcuda, the "
                         f"plain cubin crashes less ({TILE}) and so do the same calls without overlap "
                         f"({', '.join(overlap)})")
            else:
                owner = ("NVIDIA CUDA driver (libcuda), when two threads call it at once: every crash "
                         "record has its PC inside libcuda and the same calls without overlap crash "
                         f"less ({', '.join(overlap)}); plain CUDA modules crash too ({TILE})")
            nxt.append("Hand the crash signature (libcuda offset and callers) to the CUDA driver team "
                       "with this result document attached.")
            nxt.append("Rerun on the reporter's driver branch (595.x) and on sm_120 (--arch sm_120) "
                       "to see whether the site is the same.")
        else:
            needs = []
            if decision(TILE) in (None, "not_decided"):
                needs.append(f"{TILE} decided ({decision(TILE) or 'arm not in this run'})")
            if not overlap:
                needs.append("one-thread and serialized supported (arms not in this run)")
            needs += [f"{n} supported ({decision(n)})" for n in overlap
                      if decision(n) != "supported"]
            if not in_libcuda:
                needs.append("every crash record with its PC inside libcuda (measured otherwise)")
            nxt.append("Owner not established by this run: naming the CUDA driver needs "
                       + "; ".join(needs) + ".")
            one = arms.get("one-thread")
            if decision(TILE) == "supported" and one and one.failures:
                nxt.append(f"one-thread crashed ({one.failures} of {one.n_valid} valid trials): if "
                           "the Tile IR module fails without concurrency, cuda-tile/tileiras would own "
                           "it; this run does not decide that.")
        lul = arms.get("lock-unload-launch")
        if supported("lock-unload-launch") and lul:
            # lock-launch is named for what it showed only where it ran valid trials.
            ll = arms.get("lock-launch")
            apart = ("lock-launch (launches apart, unloads free) is the arm that separates the two"
                     + (f": {ll.failures} crashes in {ll.n_valid} valid trials, claim "
                        f"{str(decision('lock-launch')).replace('_', ' ')}" if ll and ll.n_valid else
                        ", and had no valid trial in this run" if ll else
                        ", and was not in this run"))
            nxt.append(f"A workaround users can adopt (claim lock-unload-launch): one mutex around "
                       f"cuModuleUnload and around cuModuleGetFunction + cuLaunchKernel, loads and "
                       f"synchronizes left concurrent, lowered the crash rate ({lul.failures} crashes "
                       f"in {lul.n_valid} valid trials). Its mutex also keeps the two threads' "
                       f"launches apart; {apart}. Whether it holds with other cuda-tile / tileiras "
                       f"releases is what the toolchain matrix (nox -s tile_matrix) runs.")
        if supported("serialized"):
            nxt.append("A mitigation this run supports (claim serialized): one mutex around each whole "
                       "load/launch/synchronise/unload iteration lowered the crash rate, at the cost of "
                       "all concurrency in the context.")
    nxt += cuda_core_next(analysis)
    if undecided:
        nxt.append("Add exposure for the claims not decided (" + ", ".join(undecided) + "); each "
                   "not-decided sentence says how much.")
    return {"status": status, "owner": owner, "owner_because": because, "sentences": sentences,
            "next": nxt, "hypotheses": hypotheses(analysis, cc, sections)}
