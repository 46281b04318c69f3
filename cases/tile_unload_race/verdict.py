"""The tile_unload_race verdict: sentences computed from one run's statistics.

Every sentence follows from the numbers in the analysis (per-arm rates with exposure, rate
ratios against the baseline, crash sites, ELF sections); change the data and the verdict
changes. Arms absent from a run are simply not discussed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

ALPHA = 0.05
PER = "10^6 cycles"


def _f(x: float | None) -> str:
    if x is None:
        return "–"
    if x == 0:
        return "0"
    if abs(x) >= 1e4 or abs(x) < 1e-2:
        return f"{x:.2e}"
    return f"{x:.3g}"


def effect(analysis: Mapping[str, Any], arm: str) -> str | None:
    """How an arm's crash rate compares with the baseline's, judged on exposure.

    'none': no crash, and its exposure makes the baseline's rate implausible (exact
    conditional rate test, p < ALPHA) — the factor removes the crash;
    'unexposed': no crash, but too little exposure to tell;
    'lower' / 'higher' / 'same': it crashes, at a rate below / above / not distinguishable
    from the baseline's; None: the arm has no valid trial.
    """
    s = analysis["arms"].get(arm)
    if not s or s["n_valid"] == 0:
        return None
    c = analysis["comparisons"].get(arm)
    if c is None:
        return "same"
    rr = c["rate_ratio"]
    p = rr.get("p_value")
    if s["failures"] == 0:
        return "none" if p is not None and p < ALPHA else "unexposed"
    if p is None or p >= ALPHA or rr.get("estimate") is None:
        return "same"
    return "lower" if rr["estimate"] < 1 else "higher"


def _rate(s: Mapping[str, Any]) -> str:
    r = s["exposure"]["rate"]
    if r["estimate"] is None:
        return "no exposure"
    return f"{_f(r['estimate'])} per {PER} (95% CI {_f(r['ci95'][0])}–{_f(r['ci95'][1])})"


def _no_crash(s: Mapping[str, Any]) -> str:
    r = s["exposure"]["rate"]
    return (f"no crash in {_f(s['exposure']['total'])} cycles over {s['n_valid']} trials "
            f"(95% upper bound {_f(r['ci95'][1]) if r['ci95'] else '–'} per {PER})")


def _p(analysis: Mapping[str, Any], arm: str) -> str:
    c = analysis["comparisons"][arm]
    rr, fi = c["rate_ratio"], c["fisher"]
    return (f"rate ratio {_f(rr['estimate'])}, p = {_f(rr['p_value'])}; "
            f"Fisher on trials p = {_f(fi['p_value'])}")


def _describe(analysis: Mapping[str, Any], arm: str, what: str) -> str | None:
    e = effect(analysis, arm)
    if e is None:
        return None
    s = analysis["arms"][arm]
    if e == "none":
        return f"{what}: {_no_crash(s)}, against the baseline's {_rate(analysis['arms'][analysis['baseline']])} ({_p(analysis, arm)})."
    if e == "unexposed":
        return f"{what}: {_no_crash(s)}, too little exposure to rule out the baseline's rate ({_p(analysis, arm)}); inconclusive."
    word = {"same": "crashes at a rate not distinguishable from the baseline's",
            "lower": "crashes, but less often than the baseline",
            "higher": "crashes more often than the baseline"}[e]
    return f"{what}: {word}: {s['failures']}/{s['n_valid']} trials, {_rate(s)} ({_p(analysis, arm)})."


def _site_sentence(sites: list[Mapping[str, Any]]) -> tuple[str | None, str | None]:
    """A sentence on where it faults, and the kind of place ('libcuda', 'jit', 'unmapped', other)."""
    if not sites:
        return None, None
    total = sum(b["count"] for b in sites)
    top = sites[0]
    module = top.get("pc_module")
    share = f"{top['count']} of {total} crashes" if len(sites) > 1 else f"all {total} crashes"
    fault = (top.get("fault_in") or {}).get("module")
    if module is None:
        return f"{share} died of {top.get('signal')} without a crash record.", None
    if module.startswith("libcuda"):
        kind = "libcuda"
        where = f"inside the driver library {module} at offset {top.get('pc_offset')}"
    elif module == "[anonymous]":
        kind = "jit"
        where = ("in anonymous executable memory: code mapped at run time, not from any file "
                 "(the driver loads the Tile IR module's .nv.host callbacks this way)")
    elif module == "[unmapped]":
        kind = "unmapped"
        where = "at an address that is mapped nowhere: a jump through a stale code pointer"
    else:
        kind = "other"
        where = f"in {module}+{top.get('pc_offset')}"
    frames = " <- ".join(f"{f['module']}+{f['offset']}" for f in (top.get("frames") or [])[1:4])
    text = (f"Crash site: {share} share one signature, {top.get('signal')} "
            f"({top.get('code_name') or 'code ?'}) with the PC {where}"
            + (f"; the faulting address lies in {fault}" if fault else "")
            + (f"; callers {frames}" if frames else "") + ".")
    if len(sites) > 1:
        text += f" {len(sites)} distinct signatures in all."
    return text, kind


# Live modules (loads - unloads) at the crash: how close to a power of two. A window of
# +-0.01 in log2 (+-0.7%) around each integer covers 2% of log space, the chance level for a
# count spread smoothly over the range; small counts are excluded (all are near a power of 2).
POW2_WINDOW = 0.01
POW2_MIN_LIVE = 64


def live_module_pattern(trials: list[Mapping[str, Any]]) -> dict[str, Any] | None:
    """Do crashes cluster where the count of loaded modules crosses a power of two?"""
    import math

    from scipy import stats

    lives = []
    for t in trials:
        c = t.get("counters") or {}
        if t.get("outcome") == "crashed" and "cycles" in c and "unloads" in c:
            live = c.get("loads", 0) - c["unloads"]
            if live >= POW2_MIN_LIVE:
                lives.append(live)
    if len(lives) < 5:
        return None
    near = [v for v in lives if abs(math.log2(v) - round(math.log2(v))) <= POW2_WINDOW]
    chance = 2 * POW2_WINDOW
    p = float(stats.binomtest(len(near), len(lives), chance, alternative="greater").pvalue)
    return {"crashes": len(lives), "near_power_of_two": len(near), "chance": chance, "p_value": p,
            "powers": sorted({2 ** round(math.log2(v)) for v in near})}


def _live_sentence(pattern: Mapping[str, Any] | None) -> str | None:
    if not pattern or pattern["p_value"] >= ALPHA:
        return None
    return (f"{pattern['near_power_of_two']} of {pattern['crashes']} crashes (instrumented arms, "
            f"at least {POW2_MIN_LIVE} modules loaded) came when the number of modules loaded in "
            f"the context (loads - unloads) was within 0.7% of a power of two "
            f"({', '.join(str(x) for x in pattern['powers'])}), against {pattern['chance']:.0%} "
            f"expected by chance (binomial p = {_f(pattern['p_value'])}).")


def _host_object_sentence(analysis: Mapping[str, Any]) -> str | None:
    sec = (analysis.get("analyses") or {}).get("sections") or {}
    diffs = sec.get("differences") or {}
    host = diffs.get(".nv.host")
    if host is None:
        return None
    symbols = sec.get("host_symbols", {})
    names = sorted({s for syms in symbols.values() for s in syms})
    return (f"Only the Tile IR cubins ({', '.join(host)}) carry a .nv.host section, an embedded "
            f"host object whose functions the driver runs on the CPU at load and launch"
            + (f" ({', '.join(names)})" if names else "") + "; the plain cubins have none.")


def _no_evidence_sentence(arms: Mapping[str, Any]) -> str | None:
    counts = {a: {k: v for k, v in s["outcomes"].items() if k in ("invalid", "unsupported")}
              for a, s in arms.items()}
    counts = {a: c for a, c in counts.items() if c}
    if not counts:
        return None
    return ("Trials without evidence (invalid: made no launch; unsupported: the device refused the "
            "module): " + "; ".join(f"{a}: " + ", ".join(f"{k} {v}" for k, v in c.items())
                                    for a, c in counts.items()) + ".")


def verdict(analysis: Mapping[str, Any]) -> dict[str, Any]:
    arms = analysis["arms"]
    base_name = analysis["baseline"]
    base = arms.get(base_name)
    sentences: list[str] = []
    nxt: list[str] = []
    device = analysis.get("device") or {}
    on = f" on {device.get('name')} (compute capability {device.get('compute_capability')})" if device.get("name") else ""

    if base is None or base["n_valid"] == 0:
        why = ", ".join(f"{k} {v}" for k, v in (base or {}).get("outcomes", {}).items()) or "no trials"
        no_evidence = _no_evidence_sentence(arms)
        return {"status": "inconclusive", "owner": None,
                "sentences": [f"No valid baseline trial{on} ({why}); nothing can be concluded."]
                + ([no_evidence] if no_evidence else []),
                "next": ["Check that the Tile IR cubin loads on this device (invalid trials made no launches)."]}

    reproduced = base["failures"] > 0
    signals = sorted({b.get("signal") for b in analysis.get("crash_sites", []) if b.get("signal")})
    if reproduced:
        km = (base.get("time_to_failure") or {}).get("exposure") or {}
        kms = (base.get("time_to_failure") or {}).get("seconds") or {}
        sentences.append(
            f"Reproduced{on}: the baseline (Tile IR cubin, two threads, three unloads in four) failed in "
            f"{base['failures']}/{base['n_valid']} trials ({', '.join(signals) or 'crashes'}), "
            f"{_rate(base)}; median {_f(km.get('median'))} cycles ({_f(kms.get('median'))} s) to the crash.")
    else:
        sentences.append(f"Not reproduced{on}: the baseline had {_no_crash(base)}.")
    if "as-filed" in arms and arms["as-filed"]["n_valid"]:
        s = arms["as-filed"]
        sentences.append(f"The reporter's repro.cc, unchanged, failed in {s['failures']}/{s['n_valid']} trials.")
    no_evidence = _no_evidence_sentence(arms)
    if no_evidence:
        sentences.append(no_evidence)

    tile_only = None
    for arm, what in (("control-cuda", "Plain CUDA cubin, same loop"),
                      ("as-filed-cuda", "The reporter's repro.cc with the plain CUDA cubin"),
                      ("cuda-module-globals", "Plain CUDA cubin with initialised __device__ data (.nv.global.init)")):
        text = _describe(analysis, arm, what)
        if text:
            sentences.append(text)
    control = effect(analysis, "control-cuda")
    if reproduced and control == "none":
        tile_only = True
        sentences.append("So the crash needs Tile IR modules: the same loop on plain CUDA modules survives far more cycles than the baseline needs.")
    elif reproduced and control in ("same", "higher", "lower"):
        tile_only = False
        sentences.append("Plain CUDA modules crash too: the failure is not specific to Tile IR.")
    elif reproduced and control == "unexposed":
        nxt.append("Run the control-cuda arm with a larger cycle budget: its exposure cannot yet rule out the baseline's rate.")

    concurrency = {}
    for arm, what in (("one-thread", "One thread"), ("serialized", "Two threads, whole iteration under one mutex"),
                      ("context-per-thread", "A context per thread"), ("never-unload", "Never unloading"),
                      ("always-unload", "Unloading every module"), ("distinct-cubins", "Each thread a different Tile IR cubin"),
                      ("other-tile-kernel", "A different Tile IR kernel"),
                      ("library-api", "cuLibraryLoadData/GetKernel/Unload (the API cuda-tile itself uses)")):
        text = _describe(analysis, arm, what)
        if text:
            sentences.append(text)
            concurrency[arm] = effect(analysis, arm)

    needs_overlap = reproduced and concurrency.get("one-thread") == "none" and concurrency.get("serialized", "none") == "none"
    needs_unload = reproduced and concurrency.get("never-unload") == "none"
    if needs_overlap:
        sentences.append("It needs two threads overlapping in their calls: the same calls made one at a time do not crash.")
    if needs_unload:
        sentences.append("It needs cuModuleUnload running concurrently with the other thread's load/launch.")
    if reproduced and concurrency.get("context-per-thread") in ("same", "higher", "lower"):
        sentences.append("Separate contexts do not protect: the shared state is process-wide, not per context.")
    elif reproduced and concurrency.get("context-per-thread") == "none":
        sentences.append("Separate contexts per thread remove it: the race is on state shared within one context.")

    site, kind = _site_sentence(list(analysis.get("crash_sites") or []))
    if site:
        sentences.append(site)
    host = _host_object_sentence(analysis)
    if host:
        sentences.append(host)
    pattern = live_module_pattern(list(analysis.get("trials") or []))
    live = _live_sentence(pattern)
    if live:
        sentences.append(live)

    owner = None
    if not reproduced:
        status = "not_reproduced"
        nxt.append("Raise the cycle budget or run on the reporter's architecture (sm_120, driver 595.84).")
    elif tile_only is False:
        status = "reproduced"
        owner = "NVIDIA CUDA driver (module unload racing with launch; not specific to Tile IR)"
    elif tile_only and concurrency.get("one-thread") in ("same", "higher", "lower"):
        status = "reproduced"
        owner = "cuda-tile / tileiras (the Tile IR module fails without any concurrency)"
    elif tile_only and needs_overlap and kind in ("libcuda", "jit", "unmapped"):
        status = "reproduced"
        owner = ("NVIDIA CUDA driver: its support for Tile IR modules (the .nv.host host callbacks) "
                 "is not safe when cuModuleUnload runs concurrently with a launch; not cuda-tile's "
                 "Python package, and not the reporter's code (each thread unloads only its own, "
                 "synchronised module, and the same calls made one at a time are fine)")
        nxt.append("Hand the crash signature (libcuda offset and callers) to the CUDA driver team; ask how the "
                   "driver maps, shares and frees .nv.host callback code and data across modules.")
        if live:
            nxt.append("The crashes track the live-module count crossing powers of two: look in the driver for a "
                       "per-context table of Tile IR module (host-callback) records that is resized at powers of "
                       "two while cuLaunchKernel in another thread still reads the old one (a freed, unmapped "
                       "block fits the SEGV_MAPERR at an unmapped address).")
        if concurrency.get("distinct-cubins") == "none":
            nxt.append("Distinct cubins do not crash: look for host-callback state shared between modules loaded from identical images.")
        if concurrency.get("library-api") in ("same", "higher", "lower"):
            nxt.append("cuda-tile's own cuLibrary* path crashes too, so cuda-tile users are exposed; a workaround in cuda-tile is to serialise unloads against launches.")
        nxt.append("Rerun on the reporter's driver branch (595.x) and on sm_120 to confirm the same site.")
    else:
        status = "reproduced"
        owner = None
        nxt.append("Ownership not established by this run: add exposure to the arms marked inconclusive.")
    if not nxt and owner:
        nxt.append("Report the signature upstream with this result document attached.")
    return {"status": status, "owner": owner, "sentences": sentences, "next": nxt}
