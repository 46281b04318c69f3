"""The fa3_wgmma_wait verdict: status and next steps from the decided claims.

No statistics here: the timed claims (each release against ptxas 13.3.73's `overlap`, the
hand-serialized control and `overlap-again` against it) and the output claims are decided by
the harness, which appends their sentences (the geometric means' ratio and its interval).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from gpurepro.case import Analysis

NOISE = "overlap-again-same"
INJECTED = ("ptxas-12-5-82", "ptxas-12-6-20")  # print C7517, inject the wait (the CPU facts)
RIGHT_SUFFIX = "-right"
CONTROL = "serialized"  # the hand-serialized kernel by the pinned release; its controls below
NEXT = ("Bisect the ptxas axis on the time ratio to 13.3.73 (every release between 12.4.131 and "
        "12.6.20), with the SASS of each side of the boundary beside the C7517 facts.")


def verdict(analysis: Analysis) -> dict[str, Any]:
    decision = analysis.decision
    on = f" on {analysis.device.name}" if analysis.device.name else ""
    wrong = [c for c in analysis.claims if c.endswith(RIGHT_SUFFIX)
             and decision(c) == "contradicted"]
    if wrong:
        return {"status": "inconclusive", "owner": None, "owner_because": [],
                "sentences": [f"An arm did not return numpy's attention{on} ({', '.join(wrong)}):"
                              f" a time of a wrong kernel says nothing (the output claims below)."],
                "next": ["Read the trials' check: the first mismatches name the elements."]}
    if decision(NOISE) != "supported":
        return {"status": "inconclusive", "owner": None, "owner_because": [],
                "sentences": [f"Two timings of one cubin{on} were not decided the same within "
                              f"the margin (`{NOISE}`): the noise is larger than the margin, or "
                              f"the trials too few."],
                "next": ["Set the margins from the measured noise (README), or run more trials."]}
    injected = {arm: (decision(f"{arm}-slower"), decision(f"{arm}-same")) for arm in INJECTED}
    slow = [arm for arm, (slower, same) in injected.items() if slower == "supported"]
    fast = [arm for arm, (slower, same) in injected.items() if same == "supported"]
    status = ("reproduced" if len(slow) == len(INJECTED) else
              "not_reproduced" if fast else "inconclusive")
    supported = [c for c in analysis.claims if c.startswith("ptxas-")
                 and c.endswith(("-slower", "-same")) and decision(c) == "supported"]
    slower_arms = [c.removesuffix("-slower") for c in supported if c.endswith("-slower")]
    same_arms = [c.removesuffix("-same") for c in supported if c.endswith("-same")]
    sentences = []
    if slower_arms:
        sentences.append(f"Slower than ptxas 13.3.73's `overlap`{on} by more than the margin: "
                         + ", ".join(f"`{a}`" for a in slower_arms) + " (their `-slower` claims).")
    if same_arms:
        sentences.append("The same as it within the margin: "
                         + ", ".join(f"`{a}`" for a in same_arms) + " (their `-same` claims).")
    if status == "not_reproduced":
        sentences.append(
            "A release that prints C7517 and injects the wait (" + ", ".join(f"`{a}`" for a in fast)
            + ") times the same as the pinned release: on this kernel the injected wait is not "
              "what makes a release slower; what else in the slower releases' SASS does is a "
              "hypothesis no arm isolates.")
    sentences += _control(analysis) + _outputs(analysis)
    return {"status": status,
            "owner": "NVIDIA ptxas (nvidia-cuda-nvcc-cu12 12.5 and 12.6)"
            if status == "reproduced" else None,
            "owner_because": [f"{a}-slower" for a in INJECTED] if status == "reproduced" else [],
            "sentences": sentences, "next": [NEXT]}


def _control(analysis: Analysis) -> list[str]:
    """What the hand-serialized kernel through each release says: the `serialized-<release>-same`
    claims against the pinned release's `serialized`."""
    controls = {c.removesuffix("-same"): analysis.decision(c) for c in analysis.claims
                if c.startswith(f"{CONTROL}-") and c.endswith("-same")}
    if not controls:
        return []
    same = [a for a, d in controls.items() if d == "supported"]
    other = [a for a, d in controls.items() if d != "supported"]
    out = []
    if same:
        out.append("The hand-serialized kernel times the same through "
                   + ", ".join(f"`{a}`" for a in same) + f" as through the pinned release "
                   f"(`{CONTROL}`; their `-same` claims).")
    if other:
        out.append("The hand-serialized kernel does not time the same through "
                   + ", ".join(f"`{a}` ({controls[a]})" for a in other)
                   + f" as through the pinned release (`{CONTROL}`; their `-same` claims): such a "
                     f"release changes the time of a kernel that has no overlap to lose and no "
                     f"wait to inject, so what it changes is not only the overlap.")
    return out


def _outputs(analysis: Analysis) -> list[str]:
    """Arms grouped by the sha256 of their output bytes (the driver's `output_sha256`)."""
    digests: dict[str, set[str]] = defaultdict(set)
    for t in analysis.trials:
        digest = (t.record.get("observations") or {}).get("output_sha256")
        if digest:
            digests[t.arm].add(digest)
    if not digests:
        return []
    groups: dict[frozenset[str], list[str]] = defaultdict(list)
    for arm, seen in sorted(digests.items()):
        groups[frozenset(seen)].append(arm)
    if len(groups) == 1:
        (seen,) = groups
        return [f"Every trial of the {len(digests)} arms returned the same output bytes "
                f"({len(seen)} sha256 over all of them): each time compared is the time of one "
                f"function."]
    return ["The arms' output bytes differ (each within numpy's tolerance, the `-right` claims): "
            + "; ".join(", ".join(f"`{a}`" for a in arms) + f" ({len(seen)} sha256)"
                        for seen, arms in groups.items()) + "."]
