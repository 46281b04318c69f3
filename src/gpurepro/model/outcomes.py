"""A trial's outcomes (DESIGN.md, "Classify"), and which of them are evidence.

Every trial is classified into exactly one outcome (gpurepro.run.classify); the analysis, the
sweeps and the report count them by these names. Standard library only.
"""

from __future__ import annotations

OUTCOMES = ("survived", "crashed", "cuda_error", "wrong_result", "hung", "invalid", "unsupported",
            "harness_error")

# Outcomes that are evidence: the trial ran the code under test. Those not among a case's
# failure outcomes are right-censored at their exposure (a CUDA error ends a race trial
# without the crash being looked for any longer).
EVIDENCE = ("survived", "crashed", "cuda_error", "wrong_result", "hung")

# A claim's decision (gpurepro.analyze.claims).
DECISIONS = ("supported", "contradicted", "not_decided")
