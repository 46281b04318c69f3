"""The chances an arm's simulation model (gpurepro.analyze.arm_model.ArmModel) gives one of its
trials: to end by one of its causes, as a claim's outcome, as one of a claim's failures; and the
failure rate per unit of exposure. What a claim kind's model (its ``truth``) reads."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ...case.model import Claim

if TYPE_CHECKING:  # simulate imports the claims, not the reverse
    from ..arm_model import ArmModel

# What other modules use; the rest is this module's own.
__all__ = ["matches", "p_end", "p_failing", "p_matching", "rate", "SURVIVED", "SURVIVOR_DETAIL"]

SURVIVED = "survived"
SURVIVOR_DETAIL = "budget used up"  # what run.classify gives a trial that ran its budget


def p_end(m: ArmModel, mode: str) -> float:
    """The chance that one of the arm's trials ends by one of its causes within its budget (the
    rest run their budget and survive)."""
    if mode == "per_trial" or m.per_trial:
        return min(1.0, sum(c.rate for c in m.causes))
    if any(math.isinf(c.rate) for c in m.causes):
        return 1.0
    total = sum(c.rate for c in m.causes)
    if m.process is not None and total > 0:  # a crash process: its chance to fail within budget
        return 1.0 - float(m.process.survival(m.budget)) if m.budget > 0 else 0.0
    return -math.expm1(-total * m.budget) if total > 0 and m.budget > 0 else 0.0


def p_matching(claim: Claim, m: ArmModel, mode: str) -> float:
    """The chance that one of the arm's trials ends as the outcome claim says. A survivor is a
    trial that no cause ended within its budget: that is what ``survived`` counts (the model's
    causes are only ways of failing)."""
    if claim.outcome == SURVIVED:
        survives = 1.0 - p_end(m, mode)
        return survives if not claim.detail or claim.detail in SURVIVOR_DETAIL else 0.0
    match = [c for c in m.causes if matches(claim, c.outcome, c.detail)]
    if mode == "per_trial" or m.per_trial:
        return sum(c.rate for c in match)
    total = sum(c.rate for c in m.causes)
    if total <= 0 or not match:
        return 0.0
    if math.isinf(total):
        inf = [c for c in m.causes if math.isinf(c.rate)]
        return sum(1 for c in match if math.isinf(c.rate)) / len(inf)
    return sum(c.rate for c in match) / total * p_end(m, mode)


def p_failing(m: ArmModel, failures: Sequence[str], mode: str) -> float:
    """The chance that one of the arm's trials ends as one of ``failures`` (a share of trials:
    what a claim with ``unit="trial"`` compares)."""
    if mode == "per_trial" or m.per_trial:
        return m.rate_of(failures)
    total = sum(c.rate for c in m.causes)
    if total <= 0:
        return 0.0
    if math.isinf(total):
        inf = [c for c in m.causes if math.isinf(c.rate)]
        return sum(1 for c in inf if c.outcome in failures) / len(inf)
    return m.rate_of(failures) / total * p_end(m, mode)


def matches(claim: Claim, outcome: str, detail: str) -> bool:
    return outcome == claim.outcome and (not claim.detail or claim.detail in detail)


def rate(m: ArmModel, failures: Sequence[str]) -> float:
    """The arm's failure rate per unit of exposure; for an arm modelled per trial, the rate
    that gives its chance of failing within its budget (0 where it has no budget)."""
    if not m.per_trial:
        return m.rate_of(failures)
    p = m.rate_of(failures)
    if m.budget <= 0 or p <= 0:
        return 0.0
    return -math.log1p(-min(p, 1 - 1e-12)) / m.budget
