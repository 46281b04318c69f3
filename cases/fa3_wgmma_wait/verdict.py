"""The fa3_wgmma_wait verdict: status and next steps from the decided claims.

No statistics here: the timed claims (``overlap-again-same``, ``serialized-slower``) and the
output claims are decided by the harness (gpurepro.analyze.timing and claims), whose sentences,
with the ratio of the geometric means and its interval, the harness appends.
"""

from __future__ import annotations

from typing import Any

from gpurepro.analyze.views import Analysis

NOISE, COST = "overlap-again-same", "serialized-slower"
RIGHT = ("overlap-right", "serialized-right", "overlap-again-right")
NEXT_STAGE = ("Time the overlap PTX compiled by each ptxas release (toolchain releases as arms): "
              "the releases that print C7517 against those that do not.")


def verdict(analysis: Analysis) -> dict[str, Any]:
    decision = analysis.decision
    on = f" on {analysis.device.name}" if analysis.device.name else ""
    if any(decision(c) == "contradicted" for c in RIGHT):
        return {"status": "inconclusive", "owner": None, "owner_because": [],
                "sentences": [f"An arm did not return numpy's attention{on}: a time of a wrong "
                              f"kernel says nothing (the output claims below)."],
                "next": ["Read the trials' check: the first mismatches name the elements."]}
    if decision(NOISE) != "supported":
        return {"status": "inconclusive", "owner": None, "owner_because": [],
                "sentences": [f"Two timings of one cubin{on} were not decided the same within "
                              f"the margin: the noise is larger than the margin, or the trials "
                              f"too few (the claims below)."],
                "next": ["Set the margins from the measured noise (README), or run more "
                         "trials.", NEXT_STAGE]}
    slower = decision(COST)
    status = {"supported": "reproduced", "contradicted": "not_reproduced"}.get(slower,
                                                                               "inconclusive")
    said = {"supported": "costs more than the margin", "contradicted": "costs less than the margin"}
    return {"status": status, "owner": None, "owner_because": [],
            "sentences": [f"Serializing the softmax behind both wgmma groups{on} "
                          f"{said.get(slower, 'is not decided against the margin')}; two timings "
                          f"of one cubin agree within theirs."],
            "next": [NEXT_STAGE]}
