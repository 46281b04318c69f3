"""Which planned trial runs next, as a sequential design says (standard library only).

The design's decisions are the analysis's (gpurepro.analyze.claims.Decider): the flow hands the
run stage a ``Decider`` and, for the decisive design, an ``Allocator``
(gpurepro.analyze.allocation.Allocation); the run and the simulations of a design
(gpurepro.analyze.simulate) both call these, so a simulated run skips, allocates and looks
exactly where a real one does:

- ``still_needed`` (--until-decided): the plan's order, a trial skipped once its arm serves no
  undecided claim or has its maximum; looks when the slowest needed arm reaches each step;
- an ``Allocator`` (the decisive design): a look after any trial once one is due, then the next
  trial where it brings a decision nearest per second, as a ``Pick`` with its survivor's
  exposure capped where that already decides its arm's claims.

Where the case declares its outcomes deterministic, both first settle what that decides
(``Decider.settle``), and the decisive design gives the arms that establish an outcome their
trials first, in the plan's order (the main question's first).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple, Protocol

from ..model.outcomes import EVIDENCE
from ..model.plan import PlannedTrial


class Decider(Protocol):
    """What the run asks a sequential design's decider (gpurepro.analyze.claims.Decider)."""

    def settle(self, records: Sequence[Mapping[str, Any]]) -> list[str]: ...

    def look_due(self, records: Sequence[Mapping[str, Any]]) -> bool: ...

    def look(self, records: Sequence[Mapping[str, Any]], final: bool = False) -> list[str]: ...

    def arms_needed(self) -> set[str]: ...

    def final(self, records: Sequence[Mapping[str, Any]]) -> None: ...

    def to_json(self) -> dict[str, Any]: ...


class Pick(NamedTuple):
    """The decisive design's next trial: which, its exposure cap (None: the run's budget) and
    its time limit (None: the run's duration)."""

    trial: PlannedTrial
    max_exposure: int | None = None
    max_seconds: float | None = None


class Allocator(Protocol):
    """The decisive design's choice of the next trial (gpurepro.analyze.allocation)."""

    def next(self, records: Sequence[Mapping[str, Any]], remaining: Sequence[PlannedTrial]
             ) -> Pick | None: ...


def still_needed(decider: Decider, records: Sequence[Mapping[str, Any]], arm: str, max_trials: int) -> bool:
    """Before a planned trial of ``arm``: take the decider's look if one is due, then say whether
    the trial still runs (its arm serves an undecided claim of the confirmatory family and has
    not reached the maximum)."""
    decider.settle(records)
    if decider.look_due(records):
        decider.look(records)
    done = sum(1 for r in records if r["arm"] == arm and r["outcome"] in EVIDENCE)
    return arm in decider.arms_needed() and done < max_trials


def trials_open(decider: Decider, order: Sequence[PlannedTrial], records: Sequence[Mapping[str, Any]],
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
