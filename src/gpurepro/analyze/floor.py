"""The floor: the least GPU time in which a design that knew the rates would decide the claims.

STATS.md, "Decidability, allocation and the floor": the oracle knows every arm's rates (the
run's own, from its trials), allocates its trials as well as it can, takes one look at the
run's family-wise alpha (Holm over the claims), and gets the expected outcome of every trial
(each arm's trials end in each way in the expected share, rounded, at the mean exposure of
that way). It adds one trial at a time to the arm whose trial lowers the claims' summed distance
to a decision the most per second (analyze.allocate's rule), until every claim it is asked
about is decided, and its floor is the seconds those trials take. A greedy allocation on
expected counts, so an approximation of the best one from above; the ratio of a run's time to
it is what the time-to-verdict benchmark reports.
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


def oracle_floor(case: Case, claims: Sequence[Claim], priors: Mapping[str, ArmPrior],
                 strata: Mapping[str, Mapping[str, tuple[float, float]]], alpha: float,
                 max_trials: int) -> dict[str, Any]:
    """The floor for ``claims`` (the run's confirmatory family) with these priors (the run's own
    rates): seconds, trials per arm, and whether every claim was reached within ``max_trials``
    trials per arm."""
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
                       "their expected outcome under the rates given")}


def run_floor(case: Case, doc: Mapping[str, Any], root: Any) -> dict[str, Any] | None:
    """The floor of a recorded run: its own rates (its trials), its confirmatory claims that it
    decided, the plan's trial budget; None where the analysis cannot be made."""
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
    out = oracle_floor(case, claims, priors, {a: m.strata for a, m in models.arms.items()}, alpha,
                       max_trials)
    seconds = sum(float(t.get("duration_s") or 0) for t in doc.get("trials") or [])
    out["run_seconds"] = round(seconds, 3)
    out["ratio"] = round(seconds / out["seconds"], 3) if out["seconds"] > 0 else None
    if not math.isfinite(out["ratio"] or 0.0):
        out["ratio"] = None
    return out
