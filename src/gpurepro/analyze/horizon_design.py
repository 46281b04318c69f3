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

from ..case.model import Case, Claim
from .allocate import ArmPrior, horizon_arms, rate_claims
from .horizon import prior_at
from .known_rates import plan_for

# What other modules use; the rest is this module's own.
__all__ = ["candidates", "choose_horizon", "prior_at"]

HORIZON_PAST = 1.02  # a candidate this far past the failure exposure it is drawn from
MAX_CANDIDATES = 24  # at most this many candidates (spread over the failures' quantiles)
REACH = 0.8  # a candidate at most this share of the exposure every arm reaches in a trial


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


