"""The tile_unload_race verdict: status, owner and its claims as declared rows (ROWS, evaluated
by gpurepro.case.declared.first_row), next steps from decided claims, beside the
measurements (gpurepro.case.crash_measures) and what the mechanism's arms say (mechanism.py). The
claims are decided by the harness, which appends their sentences; nothing here is a test."""

from __future__ import annotations

from typing import Any

from gpurepro.case import Analysis, load_sibling
from gpurepro.case import crash_measures as cm
from gpurepro.case.declared import Branch, Supported, first_row

_h = load_sibling(__file__, "mechanism")
REPRODUCED = ("baseline-crashes", "as-filed-crashes")
TILE = "control-cuda"
OVERLAP = ("one-thread", "serialized", "lock-unload-launch")  # the same calls without overlap
DRIVER = "NVIDIA CUDA driver (libcuda), "
CALLS = "the same calls without overlap"
RAN = "{supported[" + ", ".join(OVERLAP) + "]}"  # every one in the run is supported in these rows
# The decision table: the first row that holds gives status, owner and its claims. The driver
# is named on the reproduction, every overlap claim in the run supported, control-cuda decided
# and every crash record's PC inside libcuda (in_libcuda, measured by cm.site_sentence).
def _owned(tile: str, because: tuple[str, ...], owner: str) -> Branch:
    return Branch("reproduced", when={**{n: ("supported", "absent") for n in OVERLAP}, TILE: tile},
                  any_of=(REPRODUCED, OVERLAP), facts={"in_libcuda": True}, because=because,
                  owner=owner, next=(
        "Hand the crash signature (libcuda offset and callers) to the CUDA driver team with this "
        "result document attached.", "Rerun on the reporter's driver branch (595.x) and on "
        "sm_120 (--arch sm_120) to see whether the site is the same."))


ROWS = (
    _owned("supported", (*REPRODUCED, *OVERLAP, TILE),
           f"{DRIVER}in its handling of Tile IR modules when two threads call it at once: every "
           f"crash record has its PC inside libcuda, the plain cubin crashes less ({TILE}) and so "
           f"do {CALLS} ({RAN})"),
    _owned("contradicted", (*REPRODUCED, *OVERLAP),
           f"{DRIVER}when two threads call it at once: every crash record has its PC inside "
           f"libcuda and {CALLS} crash less ({RAN}); plain CUDA modules crash too ({TILE})"),
    Branch("reproduced", any_of=(REPRODUCED,)),
    Branch("not_reproduced", next="Raise the cycle budget, or run on the reporter's architecture "
                                  "(sm_120, driver 595.84)."))


def _owner(analysis: Analysis, in_libcuda: bool) -> tuple[str, str | None, list[str], list[str]]:
    """(status, owner, its claims, next steps): the row's, or why no owner is named."""
    decision = analysis.decision
    b = first_row(ROWS, decision, {"in_libcuda": in_libcuda}) or ROWS[-1]
    if b.owner or b.status != "reproduced":
        owner = b.owner.format(supported=Supported(decision)) or None
        return b.status, owner, b.rests_on(decision) if owner else [], list(b.steps())
    overlap, tile = [n for n in OVERLAP if decision(n) is not None], decision(TILE)
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
    return b.status, None, [], nxt


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
    status, owner, because, nxt = _owner(analysis, in_libcuda)
    if status == "reproduced":
        nxt += _h.mitigations(analysis)
    nxt += _h.cuda_core_next(analysis)
    if undecided := sorted(analysis.undecided()):
        nxt.append("Add exposure for the claims not decided (" + ", ".join(undecided) + "); each "
                   "not-decided sentence says how much.")
    return {"status": status, "owner": owner, "owner_because": because, "sentences": sentences,
            "next": nxt, "hypotheses": _h.hypotheses(analysis, cc, sections)}
