"""The fa3_wgmma_wait verdict: status and next steps from the decided claims.

No statistics here: the timed claims (each release against ptxas 13.3.73's `overlap`, the
hand-serialized control and `overlap-again` against it) and the output claims are decided
by the harness (gpurepro.analyze.timing and claims), whose sentences, with the ratio of the
geometric means and its interval, the harness appends.
"""

from __future__ import annotations

from typing import Any

from gpurepro.analyze.views import Analysis

NOISE = "overlap-again-same"
INJECTED = ("ptxas-12-5-82", "ptxas-12-6-20")  # print C7517, inject the wait (the CPU facts)
RIGHT_SUFFIX = "-right"
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
    decided = {c: decision(c) for c in analysis.claims if c.endswith(("-slower", "-same"))
               and c.startswith("ptxas-")}
    slower_arms = [c.removesuffix("-slower") for c, d in decided.items()
                   if c.endswith("-slower") and d == "supported"]
    same_arms = [c.removesuffix("-same") for c, d in decided.items()
                 if c.endswith("-same") and d == "supported"]
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
    return {"status": status,
            "owner": "NVIDIA ptxas (nvidia-cuda-nvcc-cu12 12.5 and 12.6)"
            if status == "reproduced" else None,
            "owner_because": [f"{a}-slower" for a in INJECTED] if status == "reproduced" else [],
            "sentences": sentences, "next": [NEXT]}
