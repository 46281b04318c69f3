"""The horizon of a new decisive run: chosen before the first trial, from the committed trials.

A design with a horizon H decides its rate claims on whether each trial failed before H
(analyze.horizon) and runs every trial of their arms to at most H. H trades two costs: a short
horizon makes trials short, but fewer reference trials fail before it, and a claim that its arm
fails less often needs the reference to fail before H in most of its trials; a long one makes
every survivor long. So H is the candidate whose known-rates plan (analyze.known_rates.plan_for:
trials added where they bring the claims nearest a decision per second, each at its expected
outcome) takes the fewest seconds:

- candidates: just past each distinct exposure at which a committed trial of a horizon claim's
  reference failed (a race's failures cluster below round counts: 2048, 4096, ... modules for
  the tile race; just past a cluster buys its failures at the least exposure), at most what
  every arm of those claims reaches in the run's trial duration at its committed speed;
- each arm's prior at H (``prior_at``): the chance that one of its trials ends by each way
  before H, from the Kaplan-Meier estimate of its committed trials' exposure to any end
  (scipy.stats.ecdf; survivors censored), and the seconds of a trial capped at H: its start
  and stop plus the mean exposure it reaches, the integral of that estimate up to H, at its
  speed.

Nothing of the run's own trials enters: the horizon, like the priors, is fixed and journaled
before the first trial, so a resumed run and its rerun keep it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scipy import stats as sps

from ..case.model import Case, Claim
from ..model.outcomes import EVIDENCE
from .allocate import ArmPrior

HORIZON_PAST = 1.02  # a candidate this far past the failure exposure it is drawn from
MAX_CANDIDATES = 24  # at most this many candidates (spread over the failures' quantiles)
REACH = 0.8  # a candidate at most this share of the exposure every arm reaches in a trial
CAP_TIME_MARGIN = 1.5  # a capped trial's time limit: this many times its time to the cap, + 1 s


def rate_claims(claims: Sequence[Claim]) -> list[Claim]:
    """The claims a horizon decides: rates compared on exposure (not per trial)."""
    return [c for c in claims if c.kind in ("lower", "higher", "equivalent") and c.unit != "trial"]


def horizon_arms(claims: Sequence[Claim], baseline: str) -> list[str]:
    """The arms whose trials run to the horizon: those of its claims, references included."""
    out: list[str] = []
    for c in rate_claims(claims):
        for a in (c.arm, c.reference or baseline):
            if a not in out:
                out.append(a)
    return out


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


def candidates(reference_trials: Sequence[Mapping[str, Any]], reach: float,
               failure_outcomes: Sequence[str]) -> list[float]:
    """The horizons to try: just past each distinct failure exposure of the references'
    committed trials, within ``reach`` (spread over their quantiles where there are many)."""
    xs = sorted({float(t.get("exposure") or 0) for t in reference_trials
                 if t.get("outcome") in failure_outcomes and float(t.get("exposure") or 0) > 0})
    hs = sorted({float(math.ceil(x * HORIZON_PAST)) for x in xs if x * HORIZON_PAST <= reach})
    if len(hs) > MAX_CANDIDATES:
        step = (len(hs) - 1) / (MAX_CANDIDATES - 1)
        hs = sorted({hs[round(i * step)] for i in range(MAX_CANDIDATES)})
    return hs


@dataclass(frozen=True)
class HorizonChoice:
    """The horizon chosen, and what each candidate's known-rates plan took."""

    horizon: float
    seconds: float
    tried: tuple[tuple[float, float, bool], ...]  # (horizon, seconds, every claim reached)

    def to_json(self) -> dict[str, Any]:
        return {"horizon": self.horizon, "seconds": round(self.seconds, 3),
                "tried": [{"horizon": h, "seconds": round(s, 3), "reached": r}
                          for h, s, r in self.tried],
                "how": ("the candidate whose known-rates plan (one look at alpha, trials at their "
                        "expected outcome from the committed trials' Kaplan-Meier estimates) "
                        "takes the fewest seconds; candidates just past each failure exposure "
                        "of the references' committed trials")}


def choose_horizon(case: Case, claims: Sequence[Claim], trials: Mapping[str, Sequence[Mapping[str, Any]]],
                   priors: Mapping[str, ArmPrior], alpha: float, max_trials: int,
                   supported_share: float, duration_s: float) -> tuple[HorizonChoice, dict[str, ArmPrior]] | None:
    """The horizon for ``claims`` (the run's confirmatory family) and every arm's prior at it;
    None where no claim is a rate claim on exposure, or the committed trials give no candidate."""
    from .known_rates import plan_for

    rated = rate_claims(claims)
    if not rated:
        return None
    arms = horizon_arms(rated, case.baseline)
    if any(a not in priors or a not in trials for a in arms):
        return None
    reach = min((priors[a].speed * duration_s if priors[a].speed > 0 else math.inf) for a in arms)
    references = [t for c in rated for t in trials[c.reference or case.baseline]]
    tried: list[tuple[float, float, bool]] = []
    best: tuple[float, float, dict[str, ArmPrior]] | None = None
    fallback = priors.get(case.baseline)
    for h in candidates(references, REACH * reach, rated[0].failures or case.failure_outcomes):
        at = dict(priors)
        for a in arms:
            at[a] = prior_at(trials[a], h, priors[a].speed, priors[a].overhead_s, fallback)
        plan = plan_for(case, claims, at, {}, alpha, max_trials, supported_share, horizon=h)
        tried.append((h, float(plan["seconds"]), bool(plan["reached"])))
        if plan["reached"] and (best is None or plan["seconds"] < best[1]):
            best = (h, float(plan["seconds"]), at)
    if best is None:
        return None
    return HorizonChoice(best[0], best[1], tuple(tried)), best[2]


def time_limit(cap: float, prior: ArmPrior, duration_s: float) -> float | None:
    """The time limit of a trial capped at ``cap``: CAP_TIME_MARGIN times its time to the cap
    at its arm's committed speed, plus its start and a second (so a driver that cannot stop at
    an exposure, a reporter's program that takes seconds, stops near it), at most the run's
    duration; None where the speed is not known."""
    if prior.speed <= 0:
        return None
    return min(duration_s, math.ceil(CAP_TIME_MARGIN * cap / prior.speed + prior.overhead_s + 1))
