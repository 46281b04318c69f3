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

The failure exposures and Kaplan-Meier estimates come from the committed trials pooled over
every complete result of the case run at the same trials at a time on the GPU model the run is
on (``pooled_trials``; any GPU model where the run's is not known), not from the newest
document alone: the chance of failing before H moves between machines of one model (the tile
race's baseline failed before 33,402 cycles in 31 of 36 trials on two H100s and in 12 of 25,
15 of 22 and 11 of 25 on three others), and a horizon chosen just past a step of 11 trials'
estimate plans from the luckiest of them. Trials capped at an earlier run's horizon are
censored there, so the pooled estimate past it rests on the uncapped runs.

Nothing of the run's own trials enters: the horizon, like the priors, is fixed and journaled
before the first trial, so a resumed run keeps it; its rerun chooses it by the same rule from
the same commit's results on the GPU model it runs on.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..case.model import Case, Claim
from ..model.outcomes import EVIDENCE
from .allocate import ArmPrior, horizon_arms, rate_claims
from .horizon_prior import prior_at
from .known_rates import plan_for
from .recorded import recorded_runs

# What other modules use; the rest is this module's own.
__all__ = ["POOL_RULE", "candidates", "choose_horizon", "pooled_trials", "prior_at"]

HORIZON_PAST = 1.02  # a candidate this far past the failure exposure it is drawn from
MAX_CANDIDATES = 24  # at most this many candidates (spread over the failures' quantiles)
REACH = 0.8  # a candidate at most this share of the exposure every arm reaches in a trial
HEADROOM = 0.5  # a candidate's plan may give an arm at most this share of its trials


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


POOL_RULE = ("the valid trials of the horizon's arms in every complete committed result of the "
             "case run at the same trials at a time on the run's GPU model")


@dataclass(frozen=True)
class PooledTrials:
    """The committed trials a horizon is chosen from: per arm, pooled over ``documents``."""

    trials: Mapping[str, Sequence[Mapping[str, Any]]]
    documents: tuple[str, ...]  # relative to the repository
    gpu: str | None  # the GPU model they were run on (None: any)


def pooled_trials(case: Case, root: Path, arms: Sequence[str], jobs: int,
                  gpu: str | None) -> PooledTrials:
    """The valid trials of ``arms`` in every committed result of the case (POOL_RULE): run at
    ``jobs`` trials at a time (concurrency changes a race's rates), not a stopped run, on the
    GPU model ``gpu`` where it is known."""
    pooled: dict[str, list[Mapping[str, Any]]] = {a: [] for a in arms}
    used: list[str] = []
    for r in recorded_runs(case.name, root):
        if r.stopped or r.jobs != jobs or (gpu is not None and r.gpu != gpu):
            continue
        took = False
        for t in r.trials:
            if isinstance(t, Mapping) and t.get("arm") in pooled and t.get("outcome") in EVIDENCE:
                pooled[str(t["arm"])].append(t)
                took = True
        if took:
            resolved, top = r.path.resolve(), root.resolve()
            used.append(str(resolved.relative_to(top)) if resolved.is_relative_to(top)
                        else str(r.path))
    return PooledTrials(pooled, tuple(used), gpu)


@dataclass(frozen=True)
class HorizonChoice:
    """The horizon chosen, and what each candidate's known-rates plan took."""

    horizon: float
    seconds: float
    tried: tuple[tuple[float, float, bool], ...]  # (horizon, seconds, every claim reached)
    pooled: PooledTrials | None = None  # where the trials came from, when pooled

    def to_json(self) -> dict[str, Any]:
        return {"horizon": self.horizon, "seconds": round(self.seconds, 3),
                "tried": [{"horizon": h, "seconds": round(s, 3), "reached": r}
                          for h, s, r in self.tried],
                "how": ("the candidate whose known-rates plan (one look at alpha, trials at their "
                        "expected outcome from the committed trials' Kaplan-Meier estimates) "
                        "takes the fewest seconds, giving no arm of the horizon more than "
                        f"{HEADROOM:g} of the trials it may run; candidates just past each "
                        "failure exposure of the references' committed trials"),
                **({"trials_from": list(self.pooled.documents), "trials_rule": POOL_RULE,
                    "gpu": self.pooled.gpu} if self.pooled is not None else {})}


def choose_horizon(case: Case, claims: Sequence[Claim], trials: Mapping[str, Sequence[Mapping[str, Any]]],
                   priors: Mapping[str, ArmPrior], alpha: float, max_trials: int,
                   supported_share: float, duration_s: float, pooled: PooledTrials | None = None
                   ) -> tuple[HorizonChoice, dict[str, ArmPrior]] | None:
    """The horizon for ``claims`` (the run's confirmatory family) and every arm's prior at it;
    None where no claim is a rate claim on exposure, or the committed trials give no candidate.
    ``pooled``: the trials to choose from (pooled_trials) in place of ``trials``, for the arms
    it has trials of."""
    rated = rate_claims(claims)
    if not rated:
        return None
    arms = horizon_arms(rated, case.baseline)
    if pooled is not None:
        trials = {**trials, **{a: ts for a, ts in pooled.trials.items() if ts}}
    if any(a not in priors or a not in trials for a in arms):
        return None
    reach = min((priors[a].speed * duration_s if priors[a].speed > 0 else math.inf) for a in arms)
    references = [t for c in rated for t in trials[c.reference or case.baseline]]
    tried: list[tuple[float, float, bool]] = []
    # The fastest candidate reached with room, else the fastest reached at all (a horizon
    # still beats a constant rate the data reject), else none.
    best: tuple[float, float, dict[str, ArmPrior]] | None = None
    tight: tuple[float, float, dict[str, ArmPrior]] | None = None
    fallback = priors.get(case.baseline)
    for h in candidates(references, REACH * reach, rated[0].failures or case.failure_outcomes):
        at = dict(priors)
        for a in arms:
            at[a] = prior_at(trials[a], h, priors[a].speed, priors[a].overhead_s, fallback)
        plan = plan_for(case, claims, at, {}, alpha, max_trials, supported_share, horizon=h)
        # Reached with room: a plan at expected outcomes that needs nearly every trial an arm
        # may run decides in about half of the runs it describes; half the cap is left to
        # the outcomes' chance.
        most = max((int(plan["trials"].get(a, 0)) for a in arms), default=0)
        reached = bool(plan["reached"]) and most <= HEADROOM * max_trials
        tried.append((h, float(plan["seconds"]), reached))
        seconds = float(plan["seconds"])
        if reached and (best is None or seconds < best[1]):
            best = (h, seconds, at)
        if plan["reached"] and (tight is None or seconds < tight[1]):
            tight = (h, seconds, at)
    best = best or tight
    if best is None:
        return None
    return HorizonChoice(best[0], best[1], tuple(tried), pooled), best[2]


