"""Which planned trial runs next (standard library at import; the decisions are analyze's).

The run stage and the simulations of a design (gpurepro.analyze.simulate) both call these, so a
simulated run skips, allocates and looks exactly where a real one does:

- ``still_needed`` (--until-decided): the plan's order, a trial skipped once its arm serves no
  undecided claim or has its maximum; looks when the slowest needed arm reaches each step;
- ``Allocation`` (the decisive design): a look after any trial once one is due, then the next
  trial where it brings a decision nearest per second (analyze.allocate), with its survivor's
  exposure capped where that already decides its arm's claims.

Where the case declares its outcomes deterministic, both first settle what that decides
(``Decider.settle``), and the decisive design gives the arms that establish an outcome their
trials first, in the plan's order (the main question's first); a declaration journaled checked
keeps an arm it decided needed until its later check trial has run (``Decider.arms_needed``,
``Decider.establishing``), which comes first the same way.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from ..model.outcomes import EVIDENCE
from ..model.plan import PlannedTrial


class Pick(NamedTuple):
    """The decisive design's next trial: which, its exposure cap (None: the run's budget) and
    its time limit (None: the run's duration)."""

    trial: PlannedTrial
    max_exposure: int | None = None
    max_seconds: float | None = None


def still_needed(decider: Any, records: Sequence[Mapping[str, Any]], arm: str, max_trials: int) -> bool:
    """Before a planned trial of ``arm``: take the decider's look if one is due, then say whether
    the trial still runs (its arm serves an undecided claim of the confirmatory family and has
    not reached the maximum)."""
    decider.settle(records)
    if decider.look_due(records):
        decider.look(records)
    done = sum(1 for r in records if r["arm"] == arm and r["outcome"] in EVIDENCE)
    return arm in decider.arms_needed() and done < max_trials


class Allocation:
    """The decisive design's choice of the next trial, from the priors its journal holds."""

    def __init__(self, decider: Any, priors: Mapping[str, Mapping[str, Any]], max_trials: int,
                 fallback_arm: str, first: Sequence[str] = (), duration_s: float = 0.0):
        from ..analyze.allocate import ArmPrior
        from ..analyze.horizon_design import horizon_arms

        self.first = tuple(first)  # the main question's claims: served while one is open
        self.decider = decider
        self.priors = {a: ArmPrior.from_json(p) for a, p in priors.items()}
        self.fallback = self.priors.get(fallback_arm) or next(iter(self.priors.values()), None)
        self.max_trials = max_trials
        # A design with a horizon runs every trial of its rate claims' arms to at most it
        # (analyze.horizon), within a time limit from the arm's speed where the run's duration
        # is known (a driver that cannot stop at an exposure stops near it).
        self.horizon = getattr(decider.design, "horizon", None)
        self.to_horizon = set(horizon_arms([*decider.claims, *decider.exploratory],
                                           decider.baseline)) if self.horizon else set()
        self.duration_s = duration_s

    def _capped(self, planned: PlannedTrial, cap: int | None) -> Pick:
        if self.horizon is None or planned.arm not in self.to_horizon:
            return Pick(planned, cap)
        from ..analyze.horizon_design import time_limit

        at = max(1, math.ceil(self.horizon))
        prior = self.priors.get(planned.arm, self.fallback)
        seconds = (time_limit(at, prior, self.duration_s)
                   if prior is not None and self.duration_s > 0 else None)
        return Pick(planned, at, seconds)

    def next(self, records: Sequence[Mapping[str, Any]], remaining: Sequence[PlannedTrial]
             ) -> Pick | None:
        from ..analyze.allocate import choose, valid

        valid_records = valid(records)
        self.decider.settle(valid_records)
        if self.decider.look_due(valid_records):
            self.decider.look(valid_records)
        needed = self.decider.arms_needed()
        done: dict[str, int] = {}
        for r in valid_records:
            done[r["arm"]] = done.get(r["arm"], 0) + 1
        candidates = [t for t in remaining
                      if t.arm in needed and done.get(t.arm, 0) < self.max_trials]
        if not candidates:
            return None
        establishing = self.decider.establishing(valid_records)
        if establishing:  # the declared determinism: its arms' trials first, the main question's first
            main = {a for c in self.decider.claims if c.name in self.first
                    and c.name not in self.decider.decisions
                    for a in (c.arm, self.decider.reference(c)) if a}
            first = ([t for t in candidates if t.arm in establishing & main]
                     or [t for t in candidates if t.arm in establishing])
            if first:
                return self._capped(first[0], None)
        if self.fallback is None:  # no committed rates for any arm: the plan's order
            return self._capped(candidates[0], None)
        planned, cap = choose(self.decider, valid_records, candidates, self.priors, self.fallback,
                              self.first)
        return self._capped(planned, None if cap is None else max(1, math.ceil(cap)))


def trials_open(decider: Any, order: Sequence[PlannedTrial], records: Sequence[Mapping[str, Any]],
                max_trials: int) -> int:
    """How many of the planned trials not yet run the arms still open may still run: each arm
    that serves an undecided claim, its planned trials left, at most its maximum less the
    evidence it has (the progress's time left, gpurepro.run.progress)."""
    needed = decider.arms_needed()
    ran = {r["index"] for r in records}
    evidence: dict[str, int] = {}
    for r in records:
        if r["outcome"] in EVIDENCE:
            evidence[r["arm"]] = evidence.get(r["arm"], 0) + 1
    planned: dict[str, int] = {}
    for t in order:
        if t.index not in ran and t.arm in needed:
            planned[t.arm] = planned.get(t.arm, 0) + 1
    return sum(min(n, max(0, max_trials - evidence.get(arm, 0))) for arm, n in planned.items())
