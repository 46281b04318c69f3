"""``lower`` / ``higher`` / ``equivalent``: an arm's failure rate against its reference's.

- On exposure (the default): the exact conditional test, k_arm | k_arm + k_ref ~
  Binomial(k, e_arm r_arm / (e_arm r_arm + e_ref r_ref)), at ratio 1 (lower/higher) or at the
  margin's ratios (equivalence: two one-sided tests, both must reject); where the design has a
  horizon (gpurepro.analyze.horizon), on the trials failing before it instead.
- With ``unit="trial"`` (lower/higher only), or where an arm has no exposure: Fisher's exact
  test on the trials, one-sided (a wrong result is a property of a trial, not an event per unit
  of exposure); what the declared determinism can decide."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from scipy import stats as sps

from ...case.model import Claim
from .. import horizon
from .base import Evidence, Share, Trials, arm_counts, binom_p, count_values, direction, fmt
from .chances import p_failing, rate

if TYPE_CHECKING:
    from ..arm_model import ArmModel

# What other modules use; the rest is this module's own.
__all__ = ["KIND"]


def _share(ratio: float, e_arm: float, e_ref: float) -> float:
    """The conditional probability that a failure is the arm's, at rate ratio ``ratio``."""
    return e_arm * ratio / (e_arm * ratio + e_ref)


class RateComparison:
    names: tuple[str, ...] = ("lower", "higher", "equivalent")
    single_arm: bool = False
    timed: bool = False
    allocates: bool = True
    constant_hazard_only: bool = False

    def fields(self, claim: Claim) -> dict[str, Any]:
        return {"margin": claim.margin} if claim.kind == "equivalent" else {}

    def evidence(self, claim: Claim, reference: str, trials: Trials) -> Evidence:
        records, failure_outcomes = trials.records, trials.failure_outcomes
        if trials.horizon_at is not None and self.on_exposure(claim):
            return self._horizon_evidence(claim, reference, trials, trials.horizon_at)
        a = arm_counts(records, claim.arm, failure_outcomes, claim)
        r = arm_counts(records, reference, failure_outcomes)
        numbers: dict[str, Any] = {"arm": {"failures": a.failures, "n": a.n_valid, "exposure": a.exposure},
                                   "reference": {"failures": r.failures, "n": r.n_valid, "exposure": r.exposure}}
        if a.n_valid == 0 or r.n_valid == 0:
            return Evidence("none (an arm has no valid trial)", 1.0, 1.0, numbers)
        if a.exposure > 0 and r.exposure > 0 and claim.unit != "trial":
            k = a.failures + r.failures
            if claim.kind == "equivalent":
                # Two one-sided tests: the ratio is below the margin AND above its inverse.
                below = binom_p(a.failures, k, _share(claim.margin, a.exposure, r.exposure), "less")
                above = binom_p(a.failures, k, _share(1 / claim.margin, a.exposure, r.exposure), "greater")
                outside_high = binom_p(a.failures, k, _share(claim.margin, a.exposure, r.exposure), "greater")
                outside_low = binom_p(a.failures, k, _share(1 / claim.margin, a.exposure, r.exposure), "less")
                return Evidence("equivalence: two one-sided conditional rate tests",
                                max(below, above), min(1.0, 2 * min(outside_high, outside_low)), numbers)
            share = _share(1.0, a.exposure, r.exposure)
            lower = binom_p(a.failures, k, share, "less")
            higher = binom_p(a.failures, k, share, "greater")
            sup, con = (lower, higher) if claim.kind == "lower" else (higher, lower)
            return Evidence("exact conditional rate test", sup, con, numbers)
        if claim.kind == "equivalent":
            return Evidence("none (equivalence needs exposure)", 1.0, 1.0, numbers)
        table = [[a.failures, a.n_valid - a.failures], [r.failures, r.n_valid - r.failures]]
        lower = float(sps.fisher_exact(table, alternative="less").pvalue)
        higher = float(sps.fisher_exact(table, alternative="greater").pvalue)
        sup, con = (lower, higher) if claim.kind == "lower" else (higher, lower)
        return Evidence("Fisher's exact test on trials", sup, con, numbers)

    def _horizon_evidence(self, claim: Claim, reference: str, trials: Trials,
                          horizon_at: float) -> Evidence:
        """Decided on trials failing before the design's horizon (analyze.horizon)."""
        a = horizon.counts(trials.records, claim.arm, trials.failure_outcomes, horizon_at)
        r = horizon.counts(trials.records, reference, trials.failure_outcomes, horizon_at)
        numbers: dict[str, Any] = {"horizon": horizon_at, "arm": a.to_json(), "reference": r.to_json()}
        if a.n == 0 or r.n == 0:
            return Evidence("none (an arm has no valid trial)", 1.0, 1.0, numbers)
        if claim.kind == "equivalent":
            inside, outside = horizon.equivalence_ps(a, r, claim.margin)
            return Evidence(horizon.EQUIVALENCE_TEST, inside, outside, numbers)
        lower, higher = horizon.p_lower(a, r), horizon.p_higher(a, r)
        sup, con = (lower, higher) if claim.kind == "lower" else (higher, lower)
        return Evidence(horizon.TEST, sup, con, numbers)

    def on_trials(self, claim: Claim) -> bool:
        return claim.unit == "trial"

    def on_exposure(self, claim: Claim) -> bool:
        return claim.unit != "trial"

    def settle(self, claim: Claim, reference: str, failures: Sequence[str],
               share: Share) -> tuple[str, list[str]] | None:
        x = share(claim.arm, lambda r: r["outcome"] in failures)
        y = share(reference, lambda r: r["outcome"] in failures)
        if x is None or y is None or x == y:
            return None
        return ("supported" if (x < y) == (claim.kind == "lower") else "contradicted",
                [claim.arm, reference])

    def truth(self, claim: Claim, reference: str | None, models: Mapping[str, ArmModel],
              mode: str, failure_outcomes: Sequence[str]) -> str | None:
        """Rates per unit of exposure, or with ``unit="trial"`` shares of failing trials."""
        a, ref = models[claim.arm], models[reference or ""]
        failures = claim.failures or failure_outcomes
        if claim.unit == "trial":  # Fisher's exact test on the trials: shares of failing trials
            x, y = p_failing(a, failures, mode), p_failing(ref, failures, mode)
        else:
            x, y = rate(a, failures), rate(ref, failures)
        if (x == 0 and y == 0) or (math.isinf(x) and math.isinf(y)):
            return None
        if claim.kind == "equivalent":
            ratio = math.inf if y == 0 else x / y
            lo, hi = 1 / claim.margin, claim.margin
            if lo < ratio < hi:
                return "supported"
            return None if ratio in (lo, hi) else "contradicted"
        return direction(x, y, claim.kind == "lower")

    def null_target(self, claim: Claim, baseline: str) -> tuple[str, str | None] | None:
        return (claim.arm, claim.reference or baseline)

    def margin_edge(self, claim: Claim) -> float | None:
        return None

    def values(self, claim: Claim, numbers: Mapping[str, Any], per: float,
               unit: str) -> dict[str, Any]:
        if "horizon" in numbers:  # decided with trials as the unit (analyze.horizon)
            return _horizon_values(numbers, unit)
        if "arm" not in numbers:
            return count_values(claim, numbers)
        a, r = numbers["arm"], numbers["reference"]

        def rate_text(c: Mapping[str, Any]) -> str:
            return (f"{fmt(c['failures'] / c['exposure'] * per)} per {per:.0e} {unit}".replace("1e+06", "10^6")
                    if c["exposure"] and claim.unit != "trial" else f"{c['failures']}/{c['n']} trials")

        values: dict[str, Any] = dict(
            rate=rate_text(a), reference_rate=rate_text(r), exposure=fmt(a["exposure"]),
            count=a["failures"], n=a["n"], reference_count=r["failures"], reference_n=r["n"])
        if a["exposure"] and r["exposure"] and (a["failures"] + r["failures"]) and claim.unit != "trial":
            ci = sps.binomtest(a["failures"], a["failures"] + r["failures"]).proportion_ci(method="exact")

            def ratio(p: float) -> str:
                return "∞" if p >= 1 else fmt(p / (1 - p) * r["exposure"] / a["exposure"])

            values.update(ratio=ratio(a["failures"] / (a["failures"] + r["failures"])),
                          ratio_ci=f"{ratio(ci.low)}–{ratio(ci.high)}")
        if a["exposure"] and a["failures"] == 0:
            values["upper"] = fmt(-math.log(0.05) / a["exposure"] * per)
        return values

    def needed(self, claim: Claim, record: Mapping[str, Any], level: float,
               supported_share: float) -> str | None:
        if "horizon" in (record.get("numbers") or {}):
            more_trials = self.trials_needed(claim, record, level, supported_share)
            return f"about {more_trials:.1f}x the present trials of both arms" if more_trials else None
        needed = self.exposure_needed(claim, record, level, supported_share)
        return f"about {needed:.1f}x the present exposure" if needed else None

    def exposure_needed(self, claim: Claim, record: Mapping[str, Any], level: float,
                        supported_share: float) -> float | None:
        """How many times the present exposure would decide the claim at the observed rates,
        with the run's split of the claim's level (None: not within 1000x, or no failure
        anywhere to estimate a rate from)."""
        nums = record.get("numbers") or {}
        if "arm" not in nums or claim.unit == "trial":
            return None
        a, r = nums["arm"], nums["reference"]
        if a["failures"] + r["failures"] == 0 or not a["exposure"] or not r["exposure"]:
            return None
        for i in range(1, 40):
            f = 1.2 ** i
            if f > 1000:
                return None
            recs = ([{"arm": claim.arm, "outcome": "crashed", "exposure": 0}] * round(a["failures"] * f)
                    + [{"arm": claim.arm, "outcome": "survived", "exposure": a["exposure"] * f}]
                    + [{"arm": "ref", "outcome": "crashed", "exposure": 0}] * round(r["failures"] * f)
                    + [{"arm": "ref", "outcome": "survived", "exposure": r["exposure"] * f}])
            ev = self.evidence(claim, "ref", Trials(recs, claim.failures or ("crashed",), 1.0))
            ev.weight = supported_share
            if ev.p_value <= level:
                return f
        return None

    def trials_needed(self, claim: Claim, record: Mapping[str, Any], level: float,
                      supported_share: float) -> float | None:
        """How many times the present trials of both arms, at the shares seen, would decide a
        claim decided on trials failing before the horizon (None: not within 50x)."""
        nums = record.get("numbers") or {}
        h = float(nums["horizon"])
        a, r = nums["arm"], nums["reference"]
        if not a["n"] or not r["n"]:
            return None
        for i in range(1, 40):
            f = 1.2 ** i
            if f > 50:
                return None
            recs = []
            failure = (claim.failures or ("crashed",))[0]
            for arm, c in ((claim.arm, a), ("ref", r)):
                n = round(c["n"] * f)
                k = round(c["failed"] / c["n"] * n)
                recs += [{"arm": arm, "outcome": failure, "exposure": 0}] * k
                recs += [{"arm": arm, "outcome": "survived", "exposure": h}] * (n - k)
            ev = self.evidence(claim, "ref", Trials(recs, claim.failures or (failure,), 1.0,
                                                    horizon_at=h))
            ev.weight = supported_share
            if ev.p_value <= level:
                return f
        return None

    def wording(self, claim: Claim, decision: str) -> str:
        what = {"lower": "fails at a lower rate than", "higher": "fails at a higher rate than",
                "equivalent": f"fails at a rate within {claim.margin:g}x of"}[claim.kind]
        return {"supported": f"{{arm}} {what} {{reference}}: {{rate}} against {{reference_rate}} ({{ratio_name}} {{ratio}}, 95% CI {{ratio_ci}}).",
                "contradicted": f"Contrary to the claim, {{arm}} does not {what.replace('fails', 'fail')} {{reference}}: {{rate}} against {{reference_rate}}.",
                "not_decided": f"Whether {{arm}} {what} {{reference}} is not decided: {{rate}} against {{reference_rate}}; deciding it needs {{needed}}."}[decision]


def _horizon_values(nums: Mapping[str, Any], unit: str) -> dict[str, Any]:
    """A sentence's values for a claim decided on trials failing before the horizon: each arm's
    share in words (what {rate} says of a constant-rate claim), the ratio of the shares with its
    exact interval."""
    h = float(nums["horizon"])
    at = f"{int(h):,}" if h.is_integer() else fmt(h)
    a, r = (horizon.HorizonCounts(int(c["failed"]), int(c["reached"]), int(c["unresolved"]),
                                  int(c["failures"]), float(c["exposure"]))
            for c in (nums["arm"], nums["reference"]))

    def share(c: horizon.HorizonCounts) -> str:
        short = f"; {c.unresolved} ended before it without failing" if c.unresolved else ""
        return f"{c.failed} of {c.n} trials failed before {at} {unit}{short}"

    values: dict[str, Any] = {
        "rate": share(a), "reference_rate": share(r), "exposure": fmt(a.exposure),
        "count": a.failures, "n": a.n, "reference_count": r.failures, "reference_n": r.n,
        "horizon": at,
        "ratio_name": f"ratio of the shares failing before {at} {unit}"}
    ratio, ci = horizon.share_ratio(a, r)
    if ratio is not None and ci is not None:
        values.update(ratio=fmt(ratio), ratio_ci=f"{fmt(ci[0])}–{'∞' if math.isinf(ci[1]) else fmt(ci[1])}")
    return values


KIND = RateComparison()
