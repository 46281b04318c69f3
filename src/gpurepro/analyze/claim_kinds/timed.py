"""``slower`` / ``faster`` / ``same``: an arm's time against its reference's, by the ratio of
the geometric means of the trials' times, with ``margin`` a fraction (0.05: 5 %). Decided by
the run's journaled timed test (paired by block, gpurepro.analyze.timing.TimedTest) or, for a
journal that names none, Welch's t-test on the trials' log times."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ...case.model import Claim
from .. import timing
from .base import Evidence, Share, Trials

if TYPE_CHECKING:
    from ..arm_model import ArmModel

# What other modules use; the rest is this module's own.
__all__ = ["KIND"]

_WHAT = {"slower": "is slower than {reference} by more than {margin}",
         "faster": "is faster than {reference} by more than {margin}",
         "same": "takes the same time as {reference} within {margin}"}


def _seconds(x: float | None) -> str:
    """A time as people read one: microseconds below a millisecond, milliseconds below a
    second."""
    if x is None:
        return "–"
    return f"{x * 1e6:.4g} µs" if x < 1e-3 else f"{x * 1e3:.4g} ms" if x < 1 else f"{x:.4g} s"


class TimeRatio:
    names: tuple[str, ...] = ("slower", "faster", "same")
    single_arm: bool = False
    timed: bool = True
    allocates: bool = True
    constant_hazard_only: bool = False

    def fields(self, claim: Claim) -> dict[str, Any]:
        return {"margin": claim.margin}

    def evidence(self, claim: Claim, reference: str, trials: Trials) -> Evidence:
        if trials.timed is not None:  # a run that journaled its timed test
            test, sup, con, nums = timing.paired_evidence(claim.kind, claim.margin, trials.records,
                                                          claim.arm, reference, trials.timed)
            return Evidence(test, sup, con, nums)
        test, sup, con, nums = timing.evidence_numbers(
            claim.kind, claim.margin, timing.arm_times(trials.records, claim.arm),
            timing.arm_times(trials.records, reference))
        return Evidence(test, sup, con, nums)

    def on_trials(self, claim: Claim) -> bool:
        return False

    def on_exposure(self, claim: Claim) -> bool:
        return False

    def settle(self, claim: Claim, reference: str, failures: Sequence[str],
               share: Share) -> tuple[str, list[str]] | None:
        return None

    def truth(self, claim: Claim, reference: str | None, models: Mapping[str, ArmModel],
              mode: str, failure_outcomes: Sequence[str]) -> str | None:
        """The right decision from the two arms' log mean times (the ratio of their geometric
        means, as gpurepro.analyze.timing decides it); None at a margin's edge or where either
        arm has no times."""
        a, ref = models[claim.arm], models[reference or ""]
        if a.log_time is None or ref.log_time is None:
            return None
        d, edge = a.log_time[0] - ref.log_time[0], math.log1p(claim.margin)
        if math.isclose(abs(d), edge, rel_tol=1e-9, abs_tol=1e-12):
            return None  # at the margin's edge (the margin scenario): a decision either way is false
        if claim.kind == "same":
            inside, outside = abs(d) < edge, abs(d) > edge
        elif claim.kind == "slower":
            inside, outside = d > edge, d < edge
        else:  # faster
            inside, outside = d < -edge, d > -edge
        return "supported" if inside else "contradicted" if outside else None

    def null_target(self, claim: Claim, baseline: str) -> tuple[str, str | None] | None:
        return None  # its null is the margin scenario (margin_edge)

    def margin_edge(self, claim: Claim) -> float | None:
        return math.log1p(claim.margin) * (-1 if claim.kind == "faster" else 1)

    def values(self, claim: Claim, numbers: Mapping[str, Any], per: float,
               unit: str) -> dict[str, Any]:
        t_a, t_r = numbers["times"]["arm"], numbers["times"]["reference"]
        values: dict[str, Any] = dict(
            n=t_a["n"], reference_n=t_r["n"], margin=f"{numbers['margin']:.0%}",
            time=_seconds(t_a["geomean_s"]), reference_time=_seconds(t_r["geomean_s"]))
        if numbers.get("ratio") is not None:
            values.update(ratio=f"{numbers['ratio']:.3f}",
                          ratio_ci=f"{numbers['ratio_ci'][0]:.3f}–{numbers['ratio_ci'][1]:.3f}")
        return values

    def needed(self, claim: Claim, record: Mapping[str, Any], level: float,
               supported_share: float) -> str | None:
        return None

    def wording(self, claim: Claim, decision: str) -> str:
        what = _WHAT[claim.kind]
        times = ("{time} against {time_ref} per launch (ratio {ratio}, 95% CI {ratio_ci}; "
                 "{n} and {reference_n} trials)").replace("{time_ref}", "{reference_time}")
        return {"supported": f"{{arm}} {what}: {times}.",
                "contradicted": f"Contrary to the claim, {{arm}} is not: {times}.",
                "not_decided": f"Whether {{arm}} {what} is not decided: {times}."}[decision]


KIND = TimeRatio()
