"""The ptxas_abs_clamp verdict: measurements, and status/owner from decided claims.

No statistics here: the claims of manifest.py are decided by the harness, which appends their
sentences. Written here: per arm what its trials ended as, the SASS of each arm's cubin
(nvdisasm's reading, from the build: is there an IABS, what does the clamp read), the status
and the owner from the decisions, and what no arm isolates as a hypothesis.
"""

from __future__ import annotations

from typing import Any

from gpurepro.analyze.views import Analysis

WRONG = ("first-bad-wrong", "last-bad-wrong")
RIGHT = ("last-good-right", "first-fixed-right")
CONTROLS = ("control-abs-only-right", "control-clamp-only-right")
BOUNDARIES = ("breaks-at-12-5", "fixed-at-12-6-85")


def _sass_sentences(analysis: Analysis) -> list[str]:
    out = []
    for release, s in sorted((analysis.analyses.get("sass") or {}).get("by_ptxas", {}).items()):
        k = (s.get("kernels") or {}).get("abs_clamp")
        if not k:
            continue
        iabs = ", ".join(k["iabs"]) or "no IABS"
        clamp = "; ".join(k["clamp"]) or "no min/max"
        out.append(f"SASS of abs_clamp from ptxas {release} (nvdisasm {s.get('version')}): {iabs}; "
                   f"clamp {clamp}, reading the result of {k.get('clamp_reads') or 'unknown'}.")
    return out


def _arm_sentences(analysis: Analysis) -> list[str]:
    out = []
    for arm, s in analysis.arms.items():
        counts = ", ".join(f"{k} {v}" for k, v in s.outcomes.items() if v) or "no trials"
        out.append(f"{arm}: {counts}.")
    return out


def verdict(analysis: Analysis) -> dict[str, Any]:
    decided = [n for n in (*WRONG, *RIGHT, *BOUNDARIES) if analysis.decision(n) is not None]
    if not decided:
        status = "not_decided"
    elif analysis.supported(*WRONG, *BOUNDARIES):
        status = "reproduced"
    elif any(analysis.decision(n) == "contradicted" for n in WRONG):
        status = "not_reproduced"
    else:
        status = "not_decided"
    owner, because = None, []
    if status == "reproduced" and analysis.supported(*RIGHT, *CONTROLS):
        owner = ("NVIDIA ptxas: nvidia-cuda-nvcc-cu12 12.5.40 through 12.6.77 (CUDA 12.5.0 to "
                 "12.6.2) miscompile clamp(abs(m), 0, 5) for sm_90; 12.6.85 (CUDA 12.6.3) does not")
        because = [*WRONG, *RIGHT, *CONTROLS, *BOUNDARIES]
    nxt = []
    if not decided:
        nxt.append("This run could decide none of the case's claims: they are about wrong "
                   "results, an outcome the harness that recorded it does not know.")
    return {
        "status": status,
        "sentences": [*_arm_sentences(analysis), *_sass_sentences(analysis)],
        "owner": owner,
        "owner_because": because,
        "next": nxt,
        "hypotheses": [
            "Releases before 12.5 lower the clamp as two VIMNMX (min with 5, max with RZ); from "
            "12.5.40 on it is one VIMNMX.RELU (clamp_only too, rightly). In 12.5.40 to 12.6.77 "
            "the IABS before it is gone, in 12.6.85 it is back: that the fold is where the abs "
            "is lost is read from the SASS (releases.cpu.json), not isolated by an arm.",
        ],
    }
