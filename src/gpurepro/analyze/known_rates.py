"""The known-rates plan: the trials a design that knew the run's rates would plan for its claims.

STATS.md, "Decidability, allocation and the floor". The plan knows every arm's rates (the run's
own, from its trials), takes one look at the run's family-wise alpha (Holm over the claims), and
plans as if every trial ended as expected (each arm's trials end in each way in the expected
share, rounded, at the mean exposure of that way). It adds one trial at a time to the arm whose
trial lowers the claims' summed distance to a decision the most per second (analyze.allocate's
rule) until every claim it is asked about would be decided, or an arm reaches the run's most
trials per arm (``reached`` false); its seconds are what those trials take.

What it is not: a lower bound. Real trials do not end at their expected outcome, and the plan
is greedy; so its trials are also drawn at random from the same rates (``chance``: the share of
simulated runs of exactly that allocation, one look at alpha, that decide every one of its
claims). A run's time is set against it (``ratio``) only where it is ``reached``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ..case.model import Case, Claim
from .allocate import ArmPrior, distance
from .claims import Decider, Design

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
                 max_trials: int) -> dict[str, Any]:
    """The known-rates plan for ``claims`` (the run's confirmatory family) with these priors
    (the run's own rates): seconds, trials per arm, and whether every claim was reached within
    ``max_trials`` trials per arm."""
    arms = list(priors)
    sim_strata = {name: (lambda r, _f, _n=name: tuple(r["_strata"][_n])) for name in case.strata}
    decider = Decider(claims, case.baseline, Design(alpha=alpha), case.failure_outcomes,
                      case.exposure.per, arms, sim_strata)
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
CHANCE_SEED = 0  # fixed: the document's number is recomputed by validate


def chance_of_plan(case: Case, claims: Sequence[Claim], models: Any, trials: Mapping[str, int],
                   alpha: float, runs: int = CHANCE_RUNS, seed: int = CHANCE_SEED) -> float:
    """The share of ``runs`` simulated runs of exactly ``trials`` per arm, each trial drawn at
    random from ``models`` (analyze.simulate.draw) and decided at one look at ``alpha`` (Holm),
    that decide every one of ``claims``."""
    import numpy as np

    from .simulate import draw

    arms = list(models.arms)
    sim_strata = {name: (lambda r, _f, _n=name: tuple(r["_strata"][_n])) for name in case.strata}
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed)))
    every = 0
    for _ in range(runs):
        records = [draw(models.arms[a], models.mode, rng, a) for a in arms
                   for _ in range(int(trials.get(a, 0)))]
        decider = Decider(claims, case.baseline, Design(alpha=alpha), case.failure_outcomes,
                          case.exposure.per, arms, sim_strata)
        decider.final(records)
        every += all(decider.decisions[c.name]["decision"] != "not_decided"
                     for c in decider.claims)
    return every / runs


def run_plan(case: Case, doc: Mapping[str, Any], root: Any) -> dict[str, Any] | None:
    """The known-rates plan of a recorded run: its own rates (its trials), its confirmatory
    claims that it decided, the plan's most trials per arm; the chance that its allocation
    decides them all; the run's trial seconds against it where it is reached. None where the
    analysis cannot be made."""
    from pathlib import Path

    from .simulate import models_from

    budget = ((doc.get("plan") or {}).get("options") or {}).get("budget") or {}
    arms = list(doc["plan"]["arms"])
    try:
        models = models_from(case, [(Path("."), doc)], Path(root), arms, budget.get("duration_s"),
                             budget.get("max_exposure"))
    except (KeyError, ValueError, ZeroDivisionError):
        return None
    priors = {a: ArmPrior.of_model(m) for a, m in models.arms.items()}
    decided = {c["name"] for c in doc.get("claims") or []
               if c.get("decision") in ("supported", "contradicted") and c.get("family") != "exploratory"}
    claims = [c for c in case.claims if c.name in decided and c.arm in priors
              and (c.kind in ("outcome", "concentrated") or (c.reference or case.baseline) in priors)]
    if not claims:
        return None
    stopping = ((doc.get("plan") or {}).get("options") or {}).get("stopping") or {}
    alpha = float(stopping.get("alpha") or 0.05)
    max_trials = int(stopping.get("max_trials") or max(doc["plan"]["trials_per_arm"].values()))
    out = plan_for(case, claims, priors, {a: m.strata for a, m in models.arms.items()}, alpha,
                   max_trials)
    out["chance"] = {"decides_every_claim": chance_of_plan(case, claims, models, out["trials"],
                                                           alpha),
                     "runs": CHANCE_RUNS, "seed": CHANCE_SEED,
                     "how": ("the plan's trials per arm drawn at random from the same rates "
                             "(gpurepro.analyze.simulate.draw), one look at alpha (Holm)")}
    seconds = sum(float(t.get("duration_s") or 0) for t in doc.get("trials") or [])
    out["run_seconds"] = round(seconds, 3)
    # A ratio only against a plan that decides its claims: against one that does not, the
    # run's time over its seconds says nothing.
    ratio = seconds / out["seconds"] if out["reached"] and out["seconds"] > 0 else None
    out["ratio"] = round(ratio, 3) if ratio is not None and math.isfinite(ratio) else None
    return out
