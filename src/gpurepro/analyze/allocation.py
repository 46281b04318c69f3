"""The decisive design's choice of each next trial, and what the flow hands the run stage.

``Allocation`` takes the design's look when one is due, then picks the next trial where it brings
a decision nearest per second (``allocate.choose``), with its survivor's exposure capped where
that already decides its arm's claims, and, in a design with a horizon, the trials of its rate
claims' arms run to at most the horizon within a time limit (``allocate.time_limit``).
The run (gpurepro.run.session.execute) and the simulations of a design (``simulate``) both use
it, so a simulated run allocates exactly where a real one does. ``steering_for`` makes a run's
decider and allocation from its journal header: the flow (gpurepro.cli.run) hands them to the
run stage, which never imports the analysis.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ..case.model import Case
from ..model.journal import RunHeader
from ..model.plan import PlannedTrial
from ..run.schedule import Pick
from .allocate import ArmPrior, choose, horizon_arms, time_limit, valid
from .claims import Decider, decider_for


def steering_for(case: Case, run: RunHeader, duration_s: float
                 ) -> tuple[Decider | None, Allocation | None]:
    """A run's decider (its journaled design, continued from the decisions it journaled) and,
    for the decisive design, its allocation; (None, None) for a fixed-size run."""
    design = run.design
    if not design.sequential:
        return None, None
    decider = decider_for(case, run)
    if not design.decisive:
        return decider, None
    return decider, Allocation(decider, design.priors or {}, int(design.max_trials or 0),
                               case.baseline, design.first or (), duration_s)


class Allocation:
    """The decisive design's choice of the next trial, from the priors its journal holds."""

    def __init__(self, decider: Decider, priors: Mapping[str, Mapping[str, Any]],
                 max_trials: int, fallback_arm: str, first: Sequence[str] = (),
                 duration_s: float = 0.0):
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
        at = max(1, math.ceil(self.horizon))
        prior = self.priors.get(planned.arm, self.fallback)
        seconds = (time_limit(at, prior, self.duration_s)
                   if prior is not None and self.duration_s > 0 else None)
        return Pick(planned, at, seconds)

    def next(self, records: Sequence[Mapping[str, Any]], remaining: Sequence[PlannedTrial]
             ) -> Pick | None:
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
