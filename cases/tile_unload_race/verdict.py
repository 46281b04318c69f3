"""The tile_unload_race verdict: status, owner and next steps from decided claims, beside the
measurements (gpurepro.case.crash_measures) and what the mechanism's arms say (mechanism.py). The
claims are decided by the harness, which appends their sentences; nothing here is a test."""

from __future__ import annotations

from typing import Any

from gpurepro.case import Analysis, load_sibling
from gpurepro.case import crash_measures as cm

_h = load_sibling(__file__, "mechanism")
REPRODUCED = ("baseline-crashes", "as-filed-crashes")
TILE = "control-cuda"
OVERLAP = ("one-thread", "serialized", "lock-unload-launch")  # the same calls without overlap
DRIVER = "NVIDIA CUDA driver (libcuda), "


def _owner(analysis: Analysis, in_libcuda: bool) -> tuple[str | None, list[str], list[str]]:
    """(owner, its claims, next steps) for a reproduced run."""
    decision = analysis.decision
    overlap = [n for n in OVERLAP if decision(n) is not None]
    tile = decision(TILE)
    because = [n for n in REPRODUCED if analysis.supported(n)] + overlap
    if overlap and analysis.supported(*overlap) and in_libcuda and tile in ("supported", "contradicted"):
        calls = f"the same calls without overlap ({', '.join(overlap)})"
        owner = (f"{DRIVER}in its handling of Tile IR modules when two threads call it at once: every "
                 f"crash record has its PC inside libcuda, the plain cubin crashes less ({TILE}) and "
                 f"so do {calls}" if tile == "supported" else
                 f"{DRIVER}when two threads call it at once: every crash record has its PC inside "
                 f"libcuda and {calls.replace(' (', ' crash less (')}; plain CUDA modules crash too "
                 f"({TILE})")
        return owner, because + [TILE] * (tile == "supported"), [
            "Hand the crash signature (libcuda offset and callers) to the CUDA driver team with "
            "this result document attached.", "Rerun on the reporter's driver branch (595.x) and "
            "on sm_120 (--arch sm_120) to see whether the site is the same."]
    needs = [f"{TILE} decided ({tile or 'arm not in this run'})"] * (tile in (None, "not_decided"))
    needs += ["one-thread and serialized supported (arms not in this run)"] * (not overlap)
    needs += [f"{n} supported ({decision(n)})" for n in overlap if decision(n) != "supported"]
    needs += ["every crash record with its PC inside libcuda (measured otherwise)"] * (not in_libcuda)
    nxt = ["Owner not established by this run: naming the CUDA driver needs " + "; ".join(needs) + "."]
    one = analysis.arms.get("one-thread")
    if tile == "supported" and one and one.failures:
        nxt.append(f"one-thread crashed ({one.failures} of {one.n_valid} valid trials): if the Tile "
                   "IR module fails without concurrency, cuda-tile/tileiras would own it; this run "
                   "does not decide that.")
    return None, [], nxt


def _mitigations(analysis: Analysis) -> list[str]:
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


def verdict(analysis: Analysis) -> dict[str, Any]:
    arms, base, dev = analysis.arms, analysis.arms.get(analysis.baseline), analysis.device
    on = f" on {dev.name} (compute capability {dev.compute_capability})" if dev.name else ""
    no_evidence = cm.no_evidence_sentence(arms)
    if base is None or base.n_valid == 0:
        why = ", ".join(f"{k} {v}" for k, v in (base.outcomes if base else {}).items()) or "no trials"
        return {"status": "inconclusive", "owner": None, "owner_because": [],
                "sentences": [f"No valid baseline trial{on} ({why}); nothing can be concluded.",
                              *[no_evidence] * bool(no_evidence)],
                "next": ["Check that the Tile IR cubin loads on this device (invalid trials made no "
                         "launches; unsupported ones were refused by the device)."], "hypotheses": []}
    coarse, seed = _h.coarse(analysis), ("as-filed", "as-filed-cuda")
    site, in_libcuda = cm.site_sentence(analysis.crash_sites)
    sections = cm.group_only_sections(analysis)
    cc = _h.crash_counters(analysis)
    lib = arms.get("library-api")
    sentences = [s for s in (
        cm.arm_sentence(analysis, analysis.baseline, "host.cc, Tile IR cubin, two threads, three "
                        "unloads in four", f"O{on[2:]}, " if on else ""),
        *(cm.arm_sentence(analysis, a, f"seed/repro.cc unchanged, {w} cubin", coarse=coarse.get(a, True))
          for a, w in zip(seed, ("Tile IR", "plain"), strict=True)),
        cm.crashes_by_arm(analysis, (analysis.baseline, *seed)), no_evidence, site,
        cm.sections_sentence(sections, _h.cubins), *_h.counters_sentences(cc),
        cm.phase_sentence(analysis, analysis.baseline), cm.hangs_sentence(analysis),
        f"library-api (cuLibraryLoadData / GetKernel / Unload, the entry points cuda-tile itself "
        f"uses) crashed in {lib.failures} of {lib.n_valid} valid trials." if lib and lib.failures
        else None) if s]
    owner, because, nxt = None, [], ["Raise the cycle budget, or run on the reporter's architecture "
                                     "(sm_120, driver 595.84)."]
    status = "reproduced" if any(analysis.supported(n) for n in REPRODUCED) else "not_reproduced"
    if status == "reproduced":
        owner, because, nxt = _owner(analysis, in_libcuda)
        nxt += _mitigations(analysis)
    nxt += _h.cuda_core_next(analysis)
    if undecided := sorted(analysis.undecided()):
        nxt.append("Add exposure for the claims not decided (" + ", ".join(undecided) + "); each "
                   "not-decided sentence says how much.")
    return {"status": status, "owner": owner, "owner_because": because, "sentences": sentences,
            "next": nxt, "hypotheses": _h.hypotheses(analysis, cc, sections)}
