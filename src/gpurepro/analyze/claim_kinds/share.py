"""``outcome``: more than ``share`` of an arm's valid trials end as ``outcome`` (with ``detail``
in their detail where given), or with ``bound="below"`` fewer; the exact binomial test of the
trials that did."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from scipy import stats as sps

from ...case.model import Claim
from .base import Evidence, Share, Trials, arm_counts, binom_p, count_values, direction, fmt
from .chances import p_matching

if TYPE_CHECKING:
    from ..arm_model import ArmModel

# What other modules use; the rest is this module's own.
__all__ = ["KIND"]


class ShareOfTrials:
    names: tuple[str, ...] = ("outcome",)
    single_arm: bool = True
    timed: bool = False
    allocates: bool = True
    constant_hazard_only: bool = False

    def fields(self, claim: Claim) -> dict[str, Any]:
        return {"outcome": claim.outcome, "detail": claim.detail, "share": claim.share}

    def evidence(self, claim: Claim, reference: str, trials: Trials) -> Evidence:
        a = arm_counts(trials.records, claim.arm, trials.failure_outcomes, claim)
        m = a.outcome_counts["matching"]
        more = binom_p(m, a.n_valid, claim.share, "greater")
        fewer = binom_p(m, a.n_valid, claim.share, "less")
        if claim.bound == "below":
            return Evidence("binomial share (below)", fewer, more,
                            {"count": m, "n": a.n_valid, "share": claim.share})
        return Evidence("binomial share", more, fewer,
                        {"count": m, "n": a.n_valid, "share": claim.share})

    def on_trials(self, claim: Claim) -> bool:
        return True

    def on_exposure(self, claim: Claim) -> bool:
        return False

    def settle(self, claim: Claim, reference: str, failures: Sequence[str],
               share: Share) -> tuple[str, list[str]] | None:
        q = share(claim.arm, lambda r: r["outcome"] == claim.outcome and (
            not claim.detail or claim.detail in str(r.get("detail") or "")))
        if q is None or q == claim.share:
            return None
        decision = "supported" if (q < claim.share) == (claim.bound == "below") else "contradicted"
        return decision, [claim.arm]

    def truth(self, claim: Claim, reference: str | None, models: Mapping[str, ArmModel],
              mode: str, failure_outcomes: Sequence[str]) -> str | None:
        q = p_matching(claim, models[claim.arm], mode)
        if math.isclose(q, claim.share, rel_tol=1e-9, abs_tol=1e-12):
            return None
        return direction(q, claim.share, claim.bound == "below")

    def null_target(self, claim: Claim, baseline: str) -> tuple[str, str | None] | None:
        # A share above 0 is held at that share; a share of 0 has no null to hold.
        return (claim.arm, None) if claim.share > 0 else None

    def margin_edge(self, claim: Claim) -> float | None:
        return None

    def values(self, claim: Claim, numbers: Mapping[str, Any], per: float,
               unit: str) -> dict[str, Any]:
        values = count_values(claim, numbers)
        if numbers.get("n"):
            ci = sps.binomtest(int(numbers["count"]), int(numbers["n"])).proportion_ci(method="exact")
            values["share_ci"] = f"{fmt(ci.low)}–{fmt(ci.high)}"
        return values

    def needed(self, claim: Claim, record: Mapping[str, Any], level: float,
               supported_share: float) -> str | None:
        return None

    def wording(self, claim: Claim, decision: str) -> str:
        what_o = f"ends as {claim.outcome}" + (f" ({claim.detail})" if claim.detail else "")
        if claim.bound == "below":
            return {"supported": f"{{arm}} {what_o} in {{count}} of {{n}} trials (fewer than {claim.share:.0%}; "
                                 f"95% CI of the share {{share_ci}}).",
                    "contradicted": f"{{arm}} {what_o} in {{count}} of {{n}} trials: not fewer than {claim.share:.0%}.",
                    "not_decided": f"Whether fewer than {claim.share:.0%} of {{arm}}'s trials {what_o.replace('ends', 'end')} "
                                   f"is not decided ({{count}} of {{n}} trials)."}[decision]
        return {"supported": f"{{arm}} {what_o} in {{count}} of {{n}} trials (more than {claim.share:.0%}).",
                "contradicted": f"{{arm}} does not {what_o.replace('ends', 'end')}: {{count}} of {{n}} trials.",
                "not_decided": f"Whether {{arm}} {what_o} is not decided ({{count}} of {{n}} trials)."}[decision]


KIND = ShareOfTrials()
