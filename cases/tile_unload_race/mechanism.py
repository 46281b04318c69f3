"""What tile_unload_race's mechanism arms say beyond their claims: the counters at each crash
(a plain count near powers of two), the hypotheses no arm isolates, labelled as such, the workaround
the lock arms' decided claims offer, and what the cuda-python arms' decided claims say to
cuda.core. Counts and decisions, no statistics."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from gpurepro.case import Analysis, load_sibling
from gpurepro.case.crash_measures import READ_LATE
from gpurepro.case.hypotheses import Hypothesis, Said, stated

_strata = load_sibling(__file__, "strata")
TILE = "control-cuda"
OVERLAP = ("one-thread", "serialized", "lock-unload-launch")
LOCKS = ("lock-unload-launch", "lock-unload-load")
POW2_CLAIMS = ("hold-near-pow2", "hold-near-pow2-like-far", "grow-crossings-live",
               "grow-crossings-loads", "primed-crossings-live", "baseline-crossings-live",
               "primed-grow-from-2000")
# Cubin labels of the sections analysis -> the arm that loads that cubin alone.
MODULE_ARMS = {"tile": "baseline", "tile_other": "other-tile-kernel", "cuda": "control-cuda",
               "cuda_globals": "cuda-module-globals"}
# Live modules at a crash "near a power of two" (strata.py: within +-0.01 in log2, at least 64):
# a plain count, not a test, the pattern having been found in the same data; counted once at
# least POW2_MIN_CRASHES crashes had that many modules loaded.
POW2_MIN_CRASHES = 5
# The cuda-python arms' claims, read for cuda.core's question: is unloading safe?
CUDA_CORE_RACE = "cuda-python-library-crashes"
CUDA_CORE_PLAIN = "cuda-python-library-cuda"
CUDA_CORE_LOCK = "cuda-python-library-lock"
LIFETIME_CLAIMS = ("lifetime-primary-reset-survives", "lifetime-primary-reset-kernel-survives",
                   "lifetime-primary-reset-retain-survives", "lifetime-ctx-destroy-survives",
                   "lifetime-ctx-destroy-kernel-survives")


# What no arm isolates, declared (gpurepro.case.hypotheses): stated where the decisions are so.
NOT_RUN = Hypothesis(
    "serialising only unloads against launches, with loads and launches still concurrent, avoids "
    "the crash. The serialized arm put one mutex around each whole iteration, which removes all "
    "overlap.", label="not run", when_run=OVERLAP, unless_run=LOCKS)
_PER_CONTEXT = ("the state that races is per context. context-per-thread gives each thread its own "
                "context, so every context also has a single thread; the arm cannot tell separate "
                "contexts from one thread per context. Two threads in each of two contexts "
                "(two-contexts-two-threads) separate them")
PER_CONTEXT = tuple(
    Hypothesis(_PER_CONTEXT + end, label="confounded",
               when={"context-per-thread": "supported", "two-contexts-two-threads": d})
    for d, end in (("absent", "."), ("not_decided", " but did not decide it in this run.")))
POW2_TABLE = Hypothesis(
    "a per-context table of module records, resized as the live module count crosses a power of "
    "two while a launch in another thread reads it.",
    label="for the driver team; no arm shows the structure itself", predictions=POW2_CLAIMS,
    when_run=tuple(n for n in POW2_CLAIMS if n != "baseline-crossings-live"),  # the interventions
    then=(Said("Crashes still fall at the crossings after the count had been to 9000 "
               "(primed-crossings-live), which a table that only grows would not do; one that also "
               "shrinks, or is rebuilt, as the count falls would.",
               {"primed-crossings-live": "supported"}),
          Said("The live count (loads − unloads), not the number of modules ever loaded "
               "(grow-crossings-loads), is the count whose crossings the crashes follow.",
               {"grow-crossings-live": "supported", "grow-crossings-loads": "!supported"})))


def cubins(labels: list[str]) -> str:
    return ", ".join(f"{lb} ({MODULE_ARMS[lb]})" if lb in MODULE_ARMS else lb for lb in labels)


def coarse(analysis: Analysis) -> dict[str, bool]:
    """Arms whose counters come from a once-a-second printout (not host.cc's own)."""
    return {a: s.factors.get("driver", "host") != "host" for a, s in analysis.arms.items()}


def crash_counters(analysis: Analysis) -> dict[str, Any] | None:
    """The last counter snapshot before each crash of the instrumented (host.cc) arms: the
    crash handler's copy at the fault where the record has one (`at_fault` of them)."""
    printed = coarse(analysis)
    rows = []
    at_fault = 0
    for t in analysis.trials:
        c = t.counters
        if (t.outcome == "crashed" and not printed.get(t.arm, False)
                and all(k in c for k in ("loads", "launches", "unloads"))):
            rows.append((t.arm, c["loads"], c["launches"], c["unloads"]))
            at_fault += "snapshot_ns" in (t.record.get("crash") or {})
    if not rows:
        return None
    gaps: dict[int, int] = {}
    for _, loads, launches, _ in rows:
        gaps[loads - launches] = gaps.get(loads - launches, 0) + 1
    lives = [loads - unloads for _, loads, _, unloads in rows]
    big = [v for v in lives if v >= _strata.MIN_COUNT]
    near = [v for v in big if _strata.near_power_of_two(v)]
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
            f"with at least {_strata.MIN_COUNT} modules loaded came within ±0.7% of a power of two"
            + (f" ({', '.join(str(p) for p in cc['powers'])})" if cc["powers"] else "")
            + f", {cc['big'] - cc['near']} did not (a plain count: the window covers 2% of the log2 scale; "
              f"no test is made).")
    if cc["always_unload_max_live"] is not None:
        out.append(f"always-unload crashed {cc['always_unload_crashes']} times with at most "
                   f"{cc['always_unload_max_live']} modules loaded at the snapshot.")
    return out


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
    out += [s for s in [stated(NOT_RUN, decision)] if s]
    # The interventions' claims (baseline-crossings-live is decided whenever the baseline runs).
    mechanism_run = any(decision(n) is not None for n in POW2_TABLE.when_run)
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
    out += [s for h in (*PER_CONTEXT, POW2_TABLE) if (s := stated(h, decision))]
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


def mitigations(analysis: Analysis) -> list[str]:
    """The workaround and mitigation the lock arms' decided claims offer, for a reproduced run."""
    arms, decision, out = analysis.arms, analysis.decision, []
    lul, ll = arms.get("lock-unload-launch"), arms.get("lock-launch")
    if analysis.supported("lock-unload-launch") and lul:
        # lock-launch is named for what it showed only where it ran valid trials.
        shown = (f": {ll.failures} crashes in {ll.n_valid} valid trials, claim "
                 f"{str(decision('lock-launch')).replace('_', ' ')}" if ll and ll.n_valid else
                 ", and had no valid trial in this run" if ll else ", and was not in this run")
        out.append("A workaround users can adopt (claim lock-unload-launch): one mutex around "
                   "cuModuleUnload and around cuModuleGetFunction + cuLaunchKernel, loads and "
                   f"synchronizes left concurrent, lowered the crash rate ({lul.failures} crashes in "
                   f"{lul.n_valid} valid trials). Its mutex also keeps the two threads' launches "
                   f"apart; lock-launch (launches apart, unloads free) is the arm that separates the "
                   f"two{shown}. Whether it holds with other cuda-tile / tileiras releases is what the "
                   "toolchain matrix (nox -s tile_matrix) runs.")
    if analysis.supported("serialized"):
        out.append("A mitigation this run supports (claim serialized): one mutex around each whole "
                   "load/launch/synchronise/unload iteration lowered the crash rate, at the cost of "
                   "all concurrency in the context.")
    return out


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
