"""``concentrated``: an arm's failures fall inside one of the case's strata (a named part of each
trial's exposure) more often than the share of its exposure spent there predicts. With a
constant hazard each failure falls inside with probability (exposure inside) / (all exposure),
summed along every trial's own trajectory; the exact binomial test of the failures that did."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ...case.model import Claim, Stratum
from ...model.outcomes import EVIDENCE
from .base import Evidence, Share, Trials, binom_p, count_values

if TYPE_CHECKING:
    from ..arm_model import ArmModel

# What other modules use; the rest is this module's own.
__all__ = ["KIND", "stratum_counts"]


def stratum_counts(records: Sequence[Mapping[str, Any]], arm: str, failure_outcomes: Sequence[str],
                   inside: Stratum,
                   factors: Mapping[str, Any]) -> dict[str, Any]:
    """An arm's failures and exposure, all and inside one stratum (valid trials only)."""
    k = k_in = 0
    e = e_in = 0.0
    for r in records:
        if r.get("arm") != arm or r.get("outcome") not in EVIDENCE:
            continue
        exposed_in, failed_in = inside(r, factors)
        failed = r["outcome"] in failure_outcomes
        k += int(failed)
        k_in += int(failed and failed_in)
        e += float(r.get("exposure") or 0)
        e_in += float(exposed_in)
    return {"count": k_in, "n": k, "exposure_inside": e_in, "exposure": e,
            "share": e_in / e if e else 0.0}


class Concentrated:
    names: tuple[str, ...] = ("concentrated",)
    single_arm: bool = True
    timed: bool = False
    allocates: bool = False  # where a failure falls is not predicted
    # Where another crash process draws the failures, the strata's draw (a failure inside a
    # stratum as often as the exposure spent there) is not what that process says.
    constant_hazard_only: bool = True

    def fields(self, claim: Claim) -> dict[str, Any]:
        return {"stratum": claim.stratum}

    def evidence(self, claim: Claim, reference: str, trials: Trials) -> Evidence:
        strata = trials.strata
        if not strata or claim.stratum is None or claim.stratum not in strata:
            return Evidence(f"none (the case defines no stratum {claim.stratum!r})", 1.0, 1.0, {})
        c = stratum_counts(trials.records, claim.arm, trials.failure_outcomes,
                           strata[claim.stratum], (trials.factors or {}).get(claim.arm, {}))
        if not c["exposure"]:
            return Evidence("none (the arm has no exposure)", 1.0, 1.0, c)
        return Evidence("binomial share of failures inside the stratum (constant-hazard null)",
                        binom_p(c["count"], c["n"], c["share"], "greater"),
                        binom_p(c["count"], c["n"], c["share"], "less"), c)

    def on_trials(self, claim: Claim) -> bool:
        return False

    def on_exposure(self, claim: Claim) -> bool:
        return False

    def settle(self, claim: Claim, reference: str, failures: Sequence[str],
               share: Share) -> tuple[str, list[str]] | None:
        return None

    def truth(self, claim: Claim, reference: str | None, models: Mapping[str, ArmModel],
              mode: str, failure_outcomes: Sequence[str]) -> str | None:
        a = models[claim.arm]
        share, inside = a.strata.get(claim.stratum or "", (0.0, 0.0))
        if a.rate_of(claim.failures or failure_outcomes) == 0 or math.isclose(
                share, inside, rel_tol=1e-9, abs_tol=1e-12):
            return None
        return "supported" if inside > share else "contradicted"

    def null_target(self, claim: Claim, baseline: str) -> tuple[str, str | None] | None:
        return (claim.arm, None)

    def margin_edge(self, claim: Claim) -> float | None:
        return None

    def values(self, claim: Claim, numbers: Mapping[str, Any], per: float,
               unit: str) -> dict[str, Any]:
        return count_values(claim, numbers)

    def needed(self, claim: Claim, record: Mapping[str, Any], level: float,
               supported_share: float) -> str | None:
        return None

    def wording(self, claim: Claim, decision: str) -> str:
        return {"supported": ("{arm}'s failures concentrate in {stratum}: {count} of {n} fell there, "
                              "where it spent {share} of its exposure."),
                "contradicted": ("{arm}'s failures avoid {stratum}: {count} of {n} fell there, "
                                 "where it spent {share} of its exposure."),
                "not_decided": ("Whether {arm}'s failures concentrate in {stratum} is not decided: "
                                "{count} of {n} fell there, where it spent {share} of its exposure.")}[decision]


KIND = Concentrated()
