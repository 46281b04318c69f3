"""The information bound: the least expected GPU time any design could need for a question.

STATS.md, "Medians and curves" and "Decidability, allocation and the floor": time to verdict is
judged against a lower bound, not against another design. For a rate claim "arm X crashes less
often than the baseline", where X never crashed, and a null in which X crashes as the
baseline's fitted crash process does (gpurepro.analyze.processes), a trial of X run to
exposure c and surviving is evidence of -log S_null(c) nats (the log-likelihood ratio of a
survivor, which is all X's trials are under its observed behaviour: the Kullback-Leibler
divergence of one such trial). It costs overhead + c / speed seconds of GPU time, so an arm
yields at most max over c of -log S_null(c) / (overhead + c / speed) nats per second, with c
at most what one trial of the run's duration reaches. By Wald's inequality, a sequential test
that rejects the null at level t with high power needs an expected log-likelihood ratio of at
least log(1 / t); so any design needs at least log(1 / t) / (nats per second) seconds of the
arm's trials, whatever its looks, caps and allocation.

What the bound assumes, and so what it is not:
- the baseline's process is known (a design must also run baseline trials to learn it: those
  seconds are not counted, which keeps it a lower bound), and the arm never crashes;
- each claim is tested at its Holm level alpha / (m - k + 1), the claims ordered so that the
  sum is least (the outcome claims a single failure decides, p = 0, take the strictest levels
  for free); a design that tests its claims in a fixed sequence, each at the whole alpha, is
  not bound by that: its bound (``at_alpha_s``) is printed beside it;
- a trial's cost is its start (``overhead_s``: the least wall time any trial took) plus its
  exposure at the arm's speed; the power asked is 1 (log(1 / t), not Wald's (1 - beta) term);
- it holds under the process it is computed for: each fitted process gives its own bound.
Beside the rate claims, a claim decided by a first failure needs that failure: for the
baseline, the expected time to the first crash of trials run to the run's budget, restarted
until one crashes (``first_failure_s``, under the process); for another arm (the reporter's
own program), its trials' seconds over its failures.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import optimize

from ..model.outcomes import EVIDENCE
from . import processes as pr
from .simulate import untimed

# What other modules use; the rest is this module's own.
__all__ = [
    "best_survivor_trial", "first_failure_s", "holm_levels", "MIN_SPEED_S",
    "per_trial_first_failure_s", "question_bound", "rate_claim_bounds", "TrialCost"
]

GRID = 400  # exposures tried per arm (log-spaced), before the optimizer refines the best


@dataclass(frozen=True)
class TrialCost:
    """What one trial of an arm costs: ``overhead_s`` to start and stop, ``speed`` units of
    exposure per second, at most ``max_exposure`` (what a trial of the run's duration reaches)."""

    overhead_s: float
    speed: float
    max_exposure: float

    def seconds(self, exposure: float) -> float:
        return self.overhead_s + exposure / self.speed


@dataclass(frozen=True)
class ArmInformation:
    """The most informative survivor trial of an arm against a null process."""

    exposure: float  # the best c
    nats: float  # -log S_null(c): the evidence of one survivor run to c
    seconds: float  # its cost

    @property
    def nats_per_second(self) -> float:
        return self.nats / self.seconds if self.seconds > 0 else math.inf


def _nats(process: Any, c: float) -> float:
    s = float(process.survival(c))
    return -math.log(s) if s > 0 else math.inf


def best_survivor_trial(process: Any, cost: TrialCost) -> ArmInformation:
    """The exposure c in (0, cost.max_exposure] that maximizes -log S(c) / cost(c): a grid
    (log-spaced from one unit of exposure, with the process's own breakpoints: the
    Kaplan-Meier's failure exposures, the crossings' windows), refined by scipy's bounded
    scalar minimizer. An exposure where the null's survival is 0 (past the Kaplan-Meier's last
    failure) is not taken: its evidence would be infinite, which says more of the estimate
    than of the race."""
    top = float(cost.max_exposure)
    if top <= 0 or cost.speed <= 0:
        raise ValueError("best_survivor_trial: needs a positive speed and exposure budget")
    candidates = set(np.geomspace(min(1.0, top), top, GRID).tolist())
    for attr in ("times",):  # the Kaplan-Meier's jumps
        candidates |= {float(t) for t in getattr(process, attr, ()) if 0 < t <= top}
    if getattr(process, "powers", None):  # the crossings: just past each window's top
        candidates |= {float(2.0 ** k) for k in process.powers if 2.0 ** k <= top}

    def rate(c: float) -> float:
        n = _nats(process, c)
        return n / cost.seconds(c) if math.isfinite(n) else -math.inf

    best = max(sorted(candidates), key=rate)
    if not math.isfinite(rate(best)):
        raise ValueError("best_survivor_trial: the null's survival is 0 at every exposure")
    if not getattr(process, "times", None):  # a continuous survival: refine around the best
        grid = sorted(candidates)
        i = grid.index(best)
        lo, hi = grid[max(0, i - 1)], grid[min(len(grid) - 1, i + 1)]
        if hi > lo:
            res = optimize.minimize_scalar(lambda c: -rate(c), bounds=(lo, hi), method="bounded",
                                           options={"xatol": 1e-6 * hi})
            if res.success and rate(float(res.x)) > rate(best):
                best = float(res.x)
    return ArmInformation(best, _nats(process, best), cost.seconds(best))


def holm_levels(alpha: float, m: int, free: int) -> list[float]:
    """The Holm levels left to the claims that need evidence, strictest first: alpha / (m - k
    + 1) for k = free + 1 .. m, the ``free`` claims (decided at p = 0 by a first failure)
    taking the strictest."""
    if not 0 <= free <= m:
        raise ValueError(f"holm_levels: {free} free claims of {m}")
    return [alpha / (m - k + 1) for k in range(free + 1, m + 1)]


@dataclass(frozen=True)
class ClaimBound:
    claim: str
    arm: str
    level: float
    information: ArmInformation
    seconds: float  # log(1 / level) / nats per second
    at_alpha_s: float  # the same at the whole alpha (a fixed-sequence design)

    def to_json(self) -> dict[str, Any]:
        i = self.information
        return {"claim": self.claim, "arm": self.arm, "level": self.level,
                "best_exposure": i.exposure, "nats_per_trial": i.nats,
                "seconds_per_trial": i.seconds, "nats_per_second": i.nats_per_second,
                "seconds": self.seconds, "at_alpha_s": self.at_alpha_s}


def rate_claim_bounds(process: Any, claims: Sequence[tuple[str, str, TrialCost]], alpha: float,
                      m: int, free: int) -> list[ClaimBound]:
    """Each rate claim's bound (``claims``: its name, its arm, the arm's trial cost) at its Holm
    level among ``m`` claims of which ``free`` are decided by a first failure; the levels go to
    the claims so that the total is least (rearrangement: the arm that yields the most nats per
    second takes the strictest level)."""
    levels = holm_levels(alpha, m, free)
    if len(levels) < len(claims):
        raise ValueError(f"rate_claim_bounds: {len(claims)} rate claims but {len(levels)} Holm "
                         f"levels left")
    info = [(name, arm, best_survivor_trial(process, cost)) for name, arm, cost in claims]
    info.sort(key=lambda x: -x[2].nats_per_second)
    out = []
    for (name, arm, i), level in zip(info, levels, strict=False):
        out.append(ClaimBound(name, arm, level, i, math.log(1 / level) / i.nats_per_second,
                              math.log(1 / alpha) / i.nats_per_second))
    return out


def first_failure_s(process: Any, cost: TrialCost) -> float:
    """The expected GPU time to a first failure with trials run to ``cost.max_exposure`` and
    restarted until one fails: (overhead + E[min(X, B)] / speed) / P(X < B)."""
    b = float(cost.max_exposure)
    p = 1.0 - float(process.survival(b))
    if p <= 0:
        return math.inf
    return (cost.overhead_s + float(process.expected_min(b)) / cost.speed) / p


def per_trial_first_failure_s(seconds: Sequence[float], failed: Sequence[bool]) -> float | None:
    """The expected time to a first failure of an arm whose counter cannot time its failures:
    its trials' seconds over its failures (the total time on test per failure)."""
    k = sum(1 for f in failed if f)
    return sum(seconds) / k if k else None


@dataclass(frozen=True)
class InformationBound:
    """The bound of one question under one null process."""

    process: str
    alpha: float
    m: int  # the claims of the family
    claims: tuple[ClaimBound, ...]
    first_failure: Mapping[str, float]  # arm -> expected seconds to its first failure

    @property
    def rate_claims_s(self) -> float:
        return sum(c.seconds for c in self.claims)

    @property
    def at_alpha_s(self) -> float:
        return sum(c.at_alpha_s for c in self.claims) + sum(self.first_failure.values())

    @property
    def total_s(self) -> float:
        return self.rate_claims_s + sum(self.first_failure.values())

    def to_json(self) -> dict[str, Any]:
        return {"process": self.process, "alpha": self.alpha, "claims_in_family": self.m,
                "seconds": self.total_s, "rate_claims_s": self.rate_claims_s,
                "first_failure_s": dict(self.first_failure),
                "fixed_sequence_at_alpha_s": self.at_alpha_s,
                "claims": [c.to_json() for c in self.claims]}


# ---------------------------------------------------------------- a case's question


@dataclass(frozen=True)
class QuestionBound:
    """The bound of a question (its confirmatory claims) under every fitted null process, and
    what it was computed from."""

    bounds: Mapping[str, InformationBound]  # process name -> its bound
    best_fit: str | None  # the parametric process the baseline's trials fit best (least AIC)
    costs: Mapping[str, TrialCost]
    left_out: Mapping[str, str]  # a claim of the question the bound does not cover, and why
    checks: Any  # gpurepro.analyze.processes.ModelChecks of the baseline's trials

    def to_json(self) -> dict[str, Any]:
        return {"processes": {k: b.to_json() for k, b in self.bounds.items()},
                "best_fit": self.best_fit,
                "costs": {a: {"overhead_s": c.overhead_s, "speed": c.speed,
                              "max_exposure": c.max_exposure} for a, c in self.costs.items()},
                **({"left_out": dict(self.left_out)} if self.left_out else {}),
                "baseline_checks": self.checks.to_json() if self.checks is not None else None}


MIN_SPEED_S = 1.0  # a trial shorter than this is mostly its start: its speed is not counted


def trial_costs(trials: Sequence[Mapping[str, Any]], arms: Sequence[str],
                duration_s: float) -> dict[str, TrialCost]:
    """Each arm's trial cost from its valid trials: the start and stop, the least wall time of
    any valid trial (of any arm: the same harness starts them all); the speed, the median of
    exposure / (seconds - start) over its trials of at least MIN_SPEED_S; at most what a trial
    of ``duration_s`` reaches."""
    valid = [t for t in trials if t.get("outcome") in EVIDENCE and float(t.get("duration_s") or 0) > 0]
    if not valid:
        return {}
    overhead = min(float(t["duration_s"]) for t in valid)
    out = {}
    for arm in arms:
        speeds = sorted(float(t["exposure"]) / (float(t["duration_s"]) - overhead)
                        for t in valid if t.get("arm") == arm and float(t.get("exposure") or 0) > 0
                        and float(t["duration_s"]) >= MIN_SPEED_S)
        if speeds:
            v = float(np.median(speeds))
            out[arm] = TrialCost(overhead, v, v * (duration_s - overhead))
    return out


def question_bound(case: Any, trials: Sequence[Mapping[str, Any]], claims: Sequence[str],
                   duration_s: float, alpha: float, processes: Sequence[str] | None = None
                   ) -> QuestionBound:
    """The bound of ``claims`` (a question's confirmatory claims, names of ``case``'s) from
    ``trials`` (valid trials of the committed documents: the baseline's fit the null processes,
    every arm's give its trial cost), for trials of ``duration_s`` at family-wise ``alpha``.

    - a rate claim (lower/higher, per unit of exposure) whose arm never failed in ``trials``:
      its survivor trials' evidence against the baseline's process (rate_claim_bounds);
    - an outcome claim at share 0 ("it happens at all"): its arm's first failure, for the
      baseline under the process (first_failure_s), for another arm (the reporter's program)
      its own trials' seconds per failure (per_trial_first_failure_s);
    - any other claim is left out (and named)."""
    valid = [t for t in trials if t.get("outcome") in EVIDENCE]
    failures = tuple(case.failure_outcomes)
    by_name = {c.name: c for c in case.claims}
    family = [by_name[n] for n in claims if n in by_name]
    base_trials = [t for t in valid if t.get("arm") == case.baseline]
    checks = pr.checks(pr.Observations.of(base_trials, failures),
                       names=processes or pr.PROCESSES)
    arms = sorted({c.arm for c in family} | {case.baseline})
    costs = trial_costs(valid, arms, duration_s)
    left_out: dict[str, str] = {}
    rate: list[tuple[str, str, TrialCost]] = []
    first: list[tuple[str, str]] = []  # (claim, arm) decided by a first failure
    for c in family:
        ts = [t for t in valid if t.get("arm") == c.arm]
        if c.kind in ("lower", "higher") and c.unit != "trial" and (
                c.reference or case.baseline) == case.baseline:
            if any(t.get("outcome") in failures for t in ts):
                left_out[c.name] = f"{c.arm} failed in its trials: not a survivor's evidence"
            elif c.arm not in costs:
                left_out[c.name] = f"{c.arm} has no trial long enough to time its speed"
            else:
                rate.append((c.name, c.arm, costs[c.arm]))
        elif c.kind == "outcome" and c.share == 0 and c.outcome in failures:
            first.append((c.name, c.arm))
        else:
            left_out[c.name] = f"a {c.kind} claim: no bound computed for its kind"
    bounds: dict[str, InformationBound] = {}
    for name, process in checks.fits.items():
        ff: dict[str, float] = {}
        for claim_name, arm in first:
            ts = [t for t in valid if t.get("arm") == arm]
            if arm == case.baseline and arm in costs and not untimed(ts, case.exposure):
                v: float | None = first_failure_s(process, costs[arm])
            else:  # another program than the baseline's: its own trials' time per failure
                v = per_trial_first_failure_s([float(t.get("duration_s") or 0) for t in ts],
                                              [t.get("outcome") in failures for t in ts])
            if v is None or not math.isfinite(v):
                left_out.setdefault(claim_name, f"{arm}: no failure to time")
                continue
            ff[arm] = v
        try:
            cb = rate_claim_bounds(process, rate, alpha, len(family),
                                   len(family) - len(rate))
        except ValueError as exc:
            left_out.setdefault(f"@{name}", str(exc))
            continue
        bounds[name] = InformationBound(name, alpha, len(family), tuple(cb), ff)
    return QuestionBound(bounds, checks.best, costs, left_out, checks)
