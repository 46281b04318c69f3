"""The CASE_NAME verdict: measurements and decisions, no statistics (the harness decides claims)."""

from __future__ import annotations

from typing import Any

from gpurepro.case import Analysis


def verdict(analysis: Analysis) -> dict[str, Any]:
    """analysis.arms[name] (counts per arm), analysis.decision(claim), analysis.trials, ...:
    the result document's typed views (gpurepro.case.Analysis)."""
    base = analysis.arms[analysis.baseline]
    sentences = [f"{arm}: {', '.join(f'{k} {v}' for k, v in s.outcomes.items())}."
                 for arm, s in analysis.arms.items()]
    status = "reproduced" if base.failures else "not_reproduced"
    return {"status": status, "sentences": sentences, "owner": None, "owner_because": [],
            "next": [] if analysis.supported("trap-is-launch-failure") else
            ["The trap control was not decided: check that the driver reports kernel faults."],
            "hypotheses": []}
