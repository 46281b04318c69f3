"""An arm's allocation prior at a horizon (gpurepro.analyze.horizon): the chance that one of
its trials ends by each way before the horizon, from the Kaplan-Meier estimate of its committed
trials' exposure to any end (scipy.stats.ecdf; survivors censored), and the seconds of a trial
capped there. Above the horizon test, which the rate claim kind reads, and beside the
allocation's priors (analyze.allocate.ArmPrior)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from scipy import stats as sps

from ..model.outcomes import EVIDENCE
from .allocate import ArmPrior

__all__ = ["prior_at"]


def _ends(trials: Sequence[Mapping[str, Any]]) -> list[tuple[float, bool, str, str]]:
    """(exposure, ended by a failure, outcome, detail) of each valid trial."""
    return [(float(t.get("exposure") or 0), t["outcome"] != "survived", str(t["outcome"]),
             str(t.get("detail") or "")) for t in trials if t.get("outcome") in EVIDENCE]


def _survival(ends: Sequence[tuple[float, bool, str, str]]) -> list[tuple[float, float]]:
    """The Kaplan-Meier estimate of surviving every end, as (exposure, survival from there on)
    steps (empty: no end observed, survival 1 throughout)."""
    failed = [x for x, e, _, _ in ends if e]
    if not failed:
        return []
    censored = [x for x, e, _, _ in ends if not e]
    res = sps.ecdf(sps.CensoredData(uncensored=failed, right=censored))
    return [(float(q), float(p)) for q, p in zip(res.sf.quantiles, res.sf.probabilities, strict=True)]


def _at(steps: Sequence[tuple[float, float]], x: float) -> float:
    s = 1.0
    for q, p in steps:
        if q > x:
            break
        s = p
    return s


def _mean_reached(steps: Sequence[tuple[float, float]], horizon: float) -> float:
    """The mean exposure a trial capped at ``horizon`` reaches: the integral of the survival
    estimate from 0 to the horizon."""
    total, s, last = 0.0, 1.0, 0.0
    for q, p in steps:
        if q >= horizon:
            break
        total += s * (q - last)
        s, last = p, q
    return total + s * (horizon - last)


def prior_at(trials: Sequence[Mapping[str, Any]], horizon: float, speed: float,
             overhead_s: float, fallback: ArmPrior | None = None) -> ArmPrior:
    """An arm's allocation prior for trials capped at ``horizon`` (per trial: the chance of each
    way of ending before it; a survivor reaches it), from its committed trials."""
    ends = _ends(trials)
    if not ends:
        if fallback is None:
            raise ValueError("an arm without committed trials needs a fallback prior")
        return fallback
    steps = _survival(ends)
    p_end = 1.0 - _at(steps, horizon)
    before = [(o, d) for x, e, o, d in ends if e and x <= horizon]
    causes: dict[tuple[str, str], float] = {}
    for o, d in before:
        causes[(o, d)] = causes.get((o, d), 0.0) + p_end / len(before)
    mean = _mean_reached(steps, horizon)
    seconds = overhead_s + (mean / speed if speed > 0 else 0.0)
    return ArmPrior(tuple((o, d, p) for (o, d), p in sorted(causes.items())), float(horizon),
                    seconds, speed, overhead_s, per_trial=True)
