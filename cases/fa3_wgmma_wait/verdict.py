"""The fa3_wgmma_wait verdict: status and next steps from the decided claims.

No statistics here: the timed claims (each release against 12.4.131, the hand-serialized
control against `overlap`, `overlap-again` against `overlap`) and the output claims are decided
by the harness (gpurepro.analyze.timing and claims), whose sentences, with the ratio of the
geometric means and its interval, the harness appends.
"""

from __future__ import annotations

from typing import Any

from gpurepro.analyze.views import Analysis

NOISE = "overlap-again-same"
INJECTED = ("ptxas-12-5-82-slower", "ptxas-12-6-20-slower")
RIGHT_SUFFIX = "-right"
NEXT = ("Bisect the ptxas axis on the time ratio to 12.4.131 for the first and last release "
        "that injects the wait (the CPU stage: wait_placement.py's C7517 and SASS facts).")


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
    slower = [decision(c) for c in INJECTED]
    status = ("reproduced" if all(d == "supported" for d in slower) else
              "not_reproduced" if all(d == "contradicted" for d in slower) else "inconclusive")
    said = {"reproduced": "are slower than 12.4.131 by more than the margin",
            "not_reproduced": "are not slower than 12.4.131 by the margin",
            "inconclusive": "are not both decided slower than 12.4.131"}[status]
    return {"status": status,
            "owner": "NVIDIA ptxas (nvidia-cuda-nvcc-cu12 12.5 and 12.6)" if status == "reproduced"
            else None,
            "owner_because": list(INJECTED) if status == "reproduced" else [],
            "sentences": [f"The kernels ptxas 12.5.82 and 12.6.20 compiled{on} {said} "
                          f"(`{INJECTED[0]}`, `{INJECTED[1]}`); two timings of one cubin agree "
                          f"within theirs (`{NOISE}`)."],
            "next": [NEXT]}
