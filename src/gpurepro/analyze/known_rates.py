"""The known-rates design: a one-look design that knew the run's rates, and what it needs.

STATS.md, "Decidability, allocation and the floor". The design knows every arm's rates (the
run's own, from its trials), takes one look at the run's family-wise alpha (Holm over the
claims), runs survivors to the run's own exposure budget and at most the run's most trials per
arm. Two steps:

- the expected-outcome allocation (``plan_for``, also the decisive design's first look): trials
  added one at a time to the arm whose trial lowers the claims' summed distance to a decision
  the most per second (analyze.allocate's rule), every trial counted at its expected outcome,
  until every claim would be decided (``reached``) or an arm is at its most trials;
- the design that decides (``design_that_decides``): real trials do not end at their expected
  outcome, so that allocation's trials are drawn at random from the same rates
  (analyze.simulate.draw, CHANCE_RUNS runs, one look), and the fewest trials in that
  allocation's proportions (``allocations``, fewer or more than it) whose simulated runs decide
  every claim in at least DECIDES of them is found by bisection.

A run's time is set against the design (``ratio``) only where it decides (``reached``). It is
not a proven lower bound: another allocation could do with fewer trials, and a design that caps
its survivors (as the decisive design does) with less exposure; it is what a one-look design
with the same rates, budget and caps needs, with its chance of deciding stated.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..case.model import Case, Claim
from ..model.result import Result
from .allocate import ArmPrior, distance, horizon_arms
from .claim_kinds import reference_of
from .claims import Decider, Design
from .horizon_prior import prior_at
from .recorded import RecordedRun
from .simulate import draw, models_from

# What other modules use; the rest is this module's own.
__all__ = [
    "allocations", "chance_of_plan", "DECIDES", "design_that_decides", "plan_for", "run_plan"
]

MAX_STEPS = 2000


def expected_trials(arm: str, prior: ArmPrior, n: int,
                    strata: Mapping[str, tuple[float, float]] | None = None) -> list[dict[str, Any]]:
    """``n`` trials of an arm as their expected outcome: each way of ending in its share
    (rounded, the rounding remainder given to survival), at that way's mean exposure."""
    out: list[dict[str, Any]] = []
    ends = prior.ends()
    failing = [(p, o, d, x) for p, o, d, x in ends if o != "survived"]
    for p, outcome, detail, exposure in failing:
        out += [{"arm": arm, "outcome": outcome, "detail": detail, "exposure": exposure}
                for _ in range(round(p * n))]
    out += [{"arm": arm, "outcome": "survived", "detail": "budget used up", "exposure": prior.budget}
            for _ in range(max(0, n - len(out)))]
    out = out[:n]
    for name, (share, inside) in (strata or {}).items():
        k_in = round(inside * sum(1 for r in out if r["outcome"] != "survived"))
        seen = 0
        for r in out:
            failed = r["outcome"] != "survived"
            r.setdefault("_strata", {})[name] = (share * r["exposure"], failed and seen < k_in)
            seen += int(failed)
    return out


def plan_for(case: Case, claims: Sequence[Claim], priors: Mapping[str, ArmPrior],
                 strata: Mapping[str, Mapping[str, tuple[float, float]]], alpha: float,
                 max_trials: int, supported_share: float = 0.5,
                 horizon: float | None = None) -> dict[str, Any]:
    """The known-rates plan for ``claims`` (the run's confirmatory family) with these priors
    (the run's own rates): seconds, trials per arm, and whether every claim was reached within
    ``max_trials`` trials per arm."""
    arms = list(priors)
    sim_strata = {name: (lambda r, _f, _n=name: tuple(r["_strata"][_n])) for name in case.strata}
    decider = Decider(claims, case.baseline,
                      Design(alpha=alpha, supported_share=supported_share, horizon=horizon),
                      case.failure_outcomes, case.exposure.per, arms, sim_strata)
    family = decider.claims
    if not family:
        return {"seconds": 0.0, "trials": {}, "decided": [], "reached": True}
    n = dict.fromkeys(arms, 0)

    def data(counts: Mapping[str, int]) -> list[dict[str, Any]]:
        return [t for a in arms for t in expected_trials(a, priors[a], counts[a], strata.get(a))]

    def distances(records: list[dict[str, Any]]) -> list[float]:
        # Holm at one look: sorted p-values against alpha / (m - rank).
        ps = sorted(decider.evidence(c, records).p_value for c in family)
        return [distance(p, alpha / (len(ps) - i)) for i, p in enumerate(ps)]

    # In the arms' order, so that ties between arms break the same way in every process.
    in_claims = {a for c in family for a in (c.arm, decider.reference(c)) if a}
    used = [a for a in arms if a in in_claims]
    for a in used:
        n[a] = 1
    records = data(n)
    for _ in range(MAX_STEPS):
        now = distances(records)
        if not any(now):
            break
        best, best_gain = None, 0.0
        for a in used:
            if n[a] >= max_trials:
                continue
            trial = {**n, a: n[a] + 1}
            gain = (sum(now) - sum(distances(data(trial)))) / max(priors[a].trial_seconds(), 1e-3)
            if gain > best_gain:
                best, best_gain = a, gain
        if best is None:  # no single trial helps: give one to the arm with the most distance
            open_arms = [a for a in used if n[a] < max_trials]
            if not open_arms:
                break
            best = min(open_arms, key=lambda a: n[a])
        n[best] += 1
        records = data(n)
    unreached = [c.name for c in family
                 if distance(decider.evidence(c, records).p_value, alpha / len(family)) > 0]
    reached = not any(distances(records))
    seconds = sum(n[a] * priors[a].trial_seconds() for a in arms)
    return {"seconds": round(seconds, 3), "trials": {a: k for a, k in n.items() if k},
            "reached": reached, "claims": [c.name for c in family],
            "unreached": [] if reached else unreached,
            "method": ("one look at alpha (Holm), trials added one at a time where they lower the "
                       "claims' distance to a decision most per second, each arm's trials at "
                       "their expected outcome under the rates given: an estimate, not a lower "
                       "bound")}


CHANCE_RUNS = 200  # simulated runs of the plan's allocation: its chance to about +-0.035
DECIDES = 0.9  # a design decides its claims where at least this share of its runs decide them all
CHANCE_SEED = 0  # fixed: the document's number is recomputed by validate


def chance_of_plan(case: Case, claims: Sequence[Claim], models: Any, trials: Mapping[str, int],
                   alpha: float, runs: int = CHANCE_RUNS, seed: int = CHANCE_SEED,
                   supported_share: float = 0.5, horizon: float | None = None) -> float:
    """The share of ``runs`` simulated runs of exactly ``trials`` per arm, each trial drawn at
    random from ``models`` (analyze.simulate.draw) and decided at one look at ``alpha`` (Holm),
    that decide every one of ``claims``."""
    import numpy as np


    arms = list(models.arms)
    sim_strata = {name: (lambda r, _f, _n=name: tuple(r["_strata"][_n])) for name in case.strata}
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed)))
    every = 0
    for _ in range(runs):
        # A horizon design runs every trial to at most its horizon (analyze.horizon).
        records = [draw(models.arms[a], models.mode, rng, a, horizon) for a in arms
                   for _ in range(int(trials.get(a, 0)))]
        decider = Decider(claims, case.baseline,
                          Design(alpha=alpha, supported_share=supported_share, horizon=horizon),
                          case.failure_outcomes, case.exposure.per, arms, sim_strata)
        decider.final(records)
        every += all(decider.decisions[c.name]["decision"] != "not_decided"
                     for c in decider.claims)
    return every / runs


def allocations(base: Mapping[str, int], max_trials: int) -> list[dict[str, int]]:
    """Allocations nested around ``base`` (trials per arm), one per total from one trial per arm
    to ``max_trials`` per arm: below it trials taken one at a time from the arm with the most
    per trial of its own in ``base``, above it added one at a time to the arm with the fewest,
    so every allocation keeps ``base``'s proportions as near as whole trials do. Ties go by the
    arms' order."""
    arms = [a for a, n in base.items() if n]
    order = {a: i for i, a in enumerate(arms)}
    down, n = [], {a: min(max_trials, base[a]) for a in arms}
    while True:
        down.append(dict(n))
        can = [a for a in arms if n[a] > 1]
        if not can:
            break
        a = max(can, key=lambda x: (n[x] / base[x], -order[x]))
        n[a] -= 1
    up, n = [], dict(down[0])
    while True:
        can = [a for a in arms if n[a] < max_trials]
        if not can:
            break
        a = min(can, key=lambda x: ((n[x] + 1) / base[x], order[x]))
        n[a] += 1
        up.append(dict(n))
    return [*reversed(down), *up]


def design_that_decides(case: Case, claims: Sequence[Claim], models: Any,
                        priors: Mapping[str, ArmPrior], base: Mapping[str, int], alpha: float,
                        max_trials: int, supported_share: float = 0.5,
                        horizon: float | None = None, decides: float = DECIDES) -> dict[str, Any]:
    """The fewest trials, among ``allocations`` nested around ``base``, whose trials drawn at
    random from ``models`` decide every one of ``claims`` at one look in at least ``decides``
    (DECIDES) of CHANCE_RUNS simulated runs: a galloping search and bisection over the allocations' totals
    (the chance grows with the trials; the runs' seed is fixed, so the result is too). Returns its trials, expected seconds and chance,
    ``reached`` whether one decides within ``max_trials`` per arm (where none does, the largest
    and its chance), and every allocation tried."""
    candidates = allocations(base, max_trials)
    at_base = next(i for i, c in enumerate(candidates) if c == {a: min(max_trials, n)
                                                                 for a, n in base.items() if n})
    tried: dict[int, float] = {}

    def chance(i: int) -> float:
        if i not in tried:
            tried[i] = chance_of_plan(case, claims, models, candidates[i], alpha,
                                      supported_share=supported_share, horizon=horizon)
        return tried[i]

    # A galloping search from the base (steps of 1, 2, 4, ... trials away from it, down while
    # the allocation still decides, else up until it does), then a bisection inside the last
    # step: few allocations simulated, most of them near the base.
    last = len(candidates) - 1
    if chance(at_base) >= decides:
        hi, step = at_base, 1
        while hi > 0 and chance(max(0, hi - step)) >= decides:
            hi, step = max(0, hi - step), step * 2
        lo = max(0, hi - step) + 1 if hi > 0 else 0
    else:
        lo, step = at_base + 1, 1
        while lo <= last and chance(min(last, lo + step - 1)) < decides:
            lo, step = min(last, lo + step - 1) + 1, step * 2
        hi = min(last, lo + step - 1)
        if lo > last:
            lo = hi = last  # none decides: the largest, with its chance
    while lo < hi:
        mid = (lo + hi) // 2
        if chance(mid) >= decides:
            hi = mid
        else:
            lo = mid + 1
    trials = candidates[hi]
    c = chance(hi)
    seconds = sum(n * priors[a].trial_seconds() for a, n in trials.items())
    return {"trials": trials, "seconds": round(seconds, 3), "chance": c, "reached": c >= decides,
            "tried": [{"trials_total": sum(candidates[i].values()), "chance": v}
                      for i, v in sorted(tried.items())]}


def run_plan(case: Case, result: Result, root: Path) -> dict[str, Any] | None:
    """The known-rates plan of a recorded run: its own rates (its trials), its confirmatory
    claims that it decided, the plan's most trials per arm; the chance that its allocation
    decides them all; the run's trial seconds against it where it is reached. None where the
    analysis cannot be made."""
    run = RecordedRun.of(Path("."), result.fields)
    arms = list(result.plan.arms)
    try:
        models = models_from(case, [run], root, arms, run.budget.get("duration_s"),
                             run.budget.get("max_exposure"))
    except (KeyError, ValueError, ZeroDivisionError):
        return None
    priors = {a: ArmPrior.of_model(m) for a, m in models.arms.items()}
    spec = result.design  # plan.options.stopping, as journaled (None: a fixed design)
    horizon = spec.horizon
    if horizon is not None:  # trials to the run's horizon, each arm at its own trials' estimate
        for a in horizon_arms(case.claims, case.baseline):
            if a in priors:
                priors[a] = prior_at([t.record for t in result.trials if t.arm == a],
                                     float(horizon), priors[a].speed, priors[a].overhead_s,
                                     priors[a])
    decided = {c.name for c in result.claims
               if c.decision in ("supported", "contradicted") and c.family != "exploratory"}
    claims = [c for c in case.claims if c.name in decided and c.arm in priors
              and reference_of(c, case.baseline) in (None, *priors)]
    if not claims:
        return None
    alpha = float(spec.alpha or 0.05)
    max_trials = int(spec.max_trials or max(result.plan.trials_per_arm.values()))
    # The same tests as the run's (a share of each claim's level for its stated direction,
    # where the run journaled one).
    share = float(spec.supported_share if spec.supported_share is not None else 0.5)
    h = None if horizon is None else float(horizon)
    expected = plan_for(case, claims, priors, {a: m.strata for a, m in models.arms.items()},
                        alpha, max_trials, share, horizon=h)
    design = design_that_decides(case, claims, models, priors, expected["trials"], alpha,
                                 max_trials, share, horizon=h)
    seconds = sum(float(t.record.get("duration_s") or 0) for t in result.trials)
    # A ratio only against a design that decides its claims: against one that does not, the
    # run's time over its seconds says nothing.
    ratio = seconds / design["seconds"] if design["reached"] and design["seconds"] > 0 else None
    return {"seconds": design["seconds"], "trials": design["trials"], "reached": design["reached"],
            "claims": expected["claims"], "run_seconds": round(seconds, 3),
            "ratio": round(ratio, 3) if ratio is not None and math.isfinite(ratio) else None,
            "chance": {"decides_every_claim": design["chance"], "target": DECIDES,
                       "runs": CHANCE_RUNS, "seed": CHANCE_SEED,
                       "how": ("the design's trials per arm drawn at random from the run's rates "
                               "(gpurepro.analyze.simulate.draw), survivors at the run's exposure "
                               "budget, one look at alpha (Holm)")},
            "tried": design["tried"],
            "expected_outcome": {"seconds": expected["seconds"], "trials": expected["trials"],
                                 "reached": expected["reached"],
                                 "unreached": expected["unreached"]},
            "method": (f"one look at alpha (Holm), at most the run's most trials per arm "
                       f"({max_trials}), survivors at the run's exposure budget: the "
                       f"expected-outcome allocation (trials added where they lower the claims' "
                       f"distance to a decision most per second, each at its expected outcome), "
                       f"then the fewest trials in those proportions that decide "
                       f"every claim in at least {DECIDES:.0%} of {CHANCE_RUNS} simulated runs: "
                       f"what such a design needs, not a proven lower bound")}
