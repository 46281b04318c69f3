"""Where the next trial goes: the arm whose next trial brings a decision nearest, per second.

Used by the decisive design (analyze.claims.DecisiveDesign) in a run, by its simulation
(analyze.simulate) and by the known-rates plan (analyze.known_rates), so all three allocate the
same way.

For every confirmatory claim still open, its distance to a decision is how far its p-value is
above the threshold it needs, in log units: ``max(0, ln p - ln threshold)`` (0: decided at the
next look). One more trial of an arm changes the p-values of the claims it takes part in; what
it is expected to change is the mean over the ways the trial can end (each way with the chance
the arm's prior gives it: a failure of the claim's kind, with the exposure a failing trial
reaches on average; a survival, with the whole budget) of the distance after it. An arm's score
is the expected drop of the summed distance per expected second of its trial; the next trial
is the best arm's next planned one (ties, and a run where no trial would move any distance,
follow the plan's order). A survivor's exposure can also be capped: where a surviving trial of
the arm would decide every claim the arm still serves before its budget is used up, it runs
only to that exposure (with a margin).

The priors are what the committed results say of each arm (analyze.simulate's models), fixed
before the run and journaled, so a resumed run allocates as the first would have.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..case.model import Claim
from ..model.outcomes import EVIDENCE

# A module, not its names: the rate kind reads analyze.horizon, which reads this one.
from . import claim_kinds
from .tally import WithTrial

# What other modules use; the rest is this module's own.
__all__ = [
    "ArmPrior", "choose", "distance", "horizon_arms", "open_claims", "rate_claims",
    "survivor_cap", "time_limit", "valid"
]

CAP_MARGIN = 1.2  # a capped survivor runs this much past the exposure that would decide
MIN_P = 1e-300
CAP_TIME_MARGIN = 1.5  # a capped trial's time limit: this many times its time to the cap, + 1 s


@dataclass(frozen=True)
class ArmPrior:
    """What one more trial of an arm is expected to do (from its committed rates)."""

    causes: tuple[tuple[str, str, float], ...]  # (outcome, detail, rate per unit of exposure)
    budget: float  # the exposure a survivor reaches
    seconds: float  # a survivor's wall time, start and stop included
    speed: float  # exposure per second (0: not known)
    overhead_s: float
    # The causes are chances per trial (an arm whose counter cannot time its failures,
    # analyze.simulate.untimed); ``seconds`` is then any trial's wall time.
    per_trial: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"causes": [list(c) for c in self.causes], "budget": self.budget,
                "seconds": self.seconds, "speed": self.speed, "overhead_s": self.overhead_s,
                **({"per_trial": True} if self.per_trial else {})}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ArmPrior:
        return cls(tuple((str(o), str(dt), float(r)) for o, dt, r in d["causes"]),
                   float(d["budget"]), float(d["seconds"]), float(d["speed"]),
                   float(d["overhead_s"]), bool(d.get("per_trial", False)))

    @classmethod
    def of_model(cls, m: Any) -> ArmPrior:
        if getattr(m, "per_trial", False):
            return cls(tuple((c.outcome, c.detail, c.rate) for c in m.causes), m.budget,
                       m.seconds, m.speed, 0.0, per_trial=True)
        return cls(tuple((c.outcome, c.detail, c.rate) for c in m.causes), m.budget,
                   m.overhead_s + (m.seconds or 0.0), m.speed, m.overhead_s)

    def ends(self, budget: float | None = None) -> list[tuple[float, str, str, float]]:
        """The ways one trial ends within ``budget`` exposure: (chance, outcome, detail,
        exposure reached), survival last."""
        b = self.budget if budget is None else budget
        if self.per_trial:
            failing = [(p, o, d, 0.0) for o, d, p in self.causes if p > 0]
            return [*failing, (max(0.0, 1 - sum(p for p, *_ in failing)), "survived",
                               "budget used up", b)]
        total = sum(r for _, _, r in self.causes if math.isfinite(r))
        if any(not math.isfinite(r) for _, _, r in self.causes):  # a coarse counter: at once
            inf = [(o, d) for o, d, r in self.causes if not math.isfinite(r)]
            return [(1 / len(inf), o, d, 0.0) for o, d in inf]
        if total <= 0 or b <= 0:
            return [(1.0, "survived", "budget used up", b)]
        p_end = -math.expm1(-total * b)
        # The mean exposure of a trial that ends by a failure before b (truncated exponential).
        mean_end = 1 / total - b * math.exp(-total * b) / p_end if p_end > 0 else 0.0
        out = [(p_end * r / total, o, d, mean_end) for o, d, r in self.causes if r > 0]
        return [*out, (1 - p_end, "survived", "budget used up", b)]

    def trial_seconds(self, budget: float | None = None) -> float:
        """The expected wall time of one trial."""
        if self.speed <= 0 or self.per_trial:
            return self.seconds
        return sum(p * (self.overhead_s + x / self.speed)
                   for p, _, _, x in self.ends(budget)) or self.seconds


def distance(p: float, threshold: float) -> float:
    return max(0.0, math.log(max(p, MIN_P)) - math.log(threshold))


def _arms_of(decider: Any, claim: Claim) -> set[str]:
    ref = decider.reference(claim)
    return {claim.arm, *([ref] if ref else [])}


def open_claims(decider: Any) -> list[Claim]:
    # A kind whose evidence a trial's prior does not predict (where a failure falls) is left
    # to the trials the others draw.
    return [c for c in decider.claims if c.name not in decider.decisions
            and claim_kinds.kind_of(c).allocates]


def _threshold(decider: Any, records: Sequence[Mapping[str, Any]], n_open: int) -> float:
    """The strictest threshold an open claim may need at the next look (Holm's first)."""
    return float(decider.next_level(records)) / max(1, n_open)


def expected_gain(decider: Any, records: list[dict[str, Any]], arm: str, prior: ArmPrior,
                  claims: Sequence[Claim], threshold: float,
                  now_by_claim: Mapping[str, float] | None = None) -> float:
    """The expected drop of the claims' summed distance from one more trial of ``arm``
    (``now_by_claim``: each claim's distance now, where the caller has it)."""
    mine = [c for c in claims if arm in _arms_of(decider, c)]
    if now_by_claim is not None:
        mine = [c for c in mine if now_by_claim[c.name] > 0]
    if not mine:
        return 0.0
    now = sum(now_by_claim[c.name] if now_by_claim is not None
              else distance(decider.evidence(c, records).p_value, threshold) for c in mine)
    if now == 0:
        return 0.0
    after = 0.0
    for p, outcome, detail, exposure in prior.ends():
        trial = {"arm": arm, "outcome": outcome, "detail": detail, "exposure": exposure}
        with_trial = WithTrial(records, trial)
        after += p * sum(distance(decider.evidence(c, with_trial).p_value, threshold)
                         for c in mine)
    return max(0.0, now - after)


def counts_trials(claim: Claim) -> bool:
    """Whether a claim is decided on how whole trials ended (a share of trials: an outcome
    claim, or a rate claim with ``unit="trial"``), not on failures per unit of exposure."""
    return claim_kinds.kind_of(claim).on_trials(claim)


def survivor_cap(decider: Any, records: list[dict[str, Any]], arm: str, prior: ArmPrior,
                 claims: Sequence[Claim], threshold: float) -> float | None:
    """The exposure at which a survivor of ``arm`` would decide every open claim the arm takes
    part in (with a margin), where that is below its budget; else None (the whole budget).

    Only claims on rates in exposure are served by a shorter survivor. Where an open claim of
    the arm counts whole trials (``counts_trials``), there is no cap: a trial cut short is not
    the trial that claim's share is about (a survival in one launch of three is no evidence
    that three return the reference), and its decision does not depend on the exposure, so a
    cap would be bought by nothing."""
    mine = [c for c in claims if arm in _arms_of(decider, c)]
    if not mine or prior.per_trial:  # a failure's exposure is not known: no cap
        return None
    if any(counts_trials(c) for c in mine):
        return None

    def decides(x: float) -> bool:
        trial = {"arm": arm, "outcome": "survived", "detail": "budget used up", "exposure": x}
        with_trial = WithTrial(records, trial)
        return all(distance(decider.evidence(c, with_trial).p_value, threshold) == 0
                   for c in mine)

    if not decides(prior.budget):
        return None
    lo, hi = 0.0, prior.budget
    for _ in range(20):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if decides(mid) else (mid, hi)
    cap = hi * CAP_MARGIN
    return cap if cap < prior.budget else None


def choose(decider: Any, records: list[dict[str, Any]], candidates: Sequence[Any],
           priors: Mapping[str, ArmPrior], fallback: ArmPrior,
           first: Sequence[str] = ()) -> tuple[Any, float | None]:
    """The next trial among ``candidates`` (planned trials, in plan order, each of an arm still
    needed) and the exposure cap of its survivor (None: the budget). While a claim named in
    ``first`` (the case's main question) is open, only its claims and arms are served."""
    claims = open_claims(decider)
    threshold = _threshold(decider, records, len(claims))
    main = [c for c in claims if c.name in first]
    if main:
        main_arms = set().union(*(_arms_of(decider, c) for c in main))
        serving = [t for t in candidates if t.arm in main_arms]
        if serving:
            claims, candidates = main, serving
    now = {c.name: distance(decider.evidence(c, records).p_value, threshold) for c in claims}
    first_of_arm: dict[str, Any] = {}
    for t in candidates:
        first_of_arm.setdefault(t.arm, t)
    best, best_score = None, 0.0
    for arm, planned in first_of_arm.items():
        prior = priors.get(arm, fallback)
        score = expected_gain(decider, records, arm, prior, claims, threshold, now) / max(
            prior.trial_seconds(), 1e-3)
        if score > best_score:
            best, best_score = planned, score
    if best is None:  # nothing moves a distance: the plan's order
        best = candidates[0]
    cap = survivor_cap(decider, records, best.arm, priors.get(best.arm, fallback), claims,
                       threshold)
    return best, cap


def valid(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [dict(r) for r in records if r.get("outcome") in EVIDENCE]



# ---------------------------------------------------------------- trials capped at a horizon
# A design with a horizon (analyze.horizon, analyze.horizon_design) runs the trials of its rate
# claims' arms to at most it: their arms, priors and time limits.


def rate_claims(claims: Sequence[Claim]) -> list[Claim]:
    """The claims a horizon decides: rates compared on exposure (not per trial)."""
    return [c for c in claims if claim_kinds.kind_of(c).on_exposure(c)]


def horizon_arms(claims: Sequence[Claim], baseline: str) -> list[str]:
    """The arms whose trials run to the horizon: those of its claims, references included."""
    out: list[str] = []
    for c in rate_claims(claims):
        for a in (c.arm, c.reference or baseline):
            if a not in out:
                out.append(a)
    return out


def time_limit(cap: float, prior: ArmPrior, duration_s: float) -> float | None:
    """The time limit of a trial capped at ``cap``: CAP_TIME_MARGIN times its time to the cap
    at its arm's committed speed, plus its start and a second (so a driver that cannot stop at
    an exposure, a reporter's program that takes seconds, stops near it), at most the run's
    duration; None where the speed is not known."""
    if prior.speed <= 0:
        return None
    return min(duration_s, math.ceil(CAP_TIME_MARGIN * cap / prior.speed + prior.overhead_s + 1))
