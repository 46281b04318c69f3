"""Which planned trial runs next under --until-decided (standard library only).

The run stage and the simulations of a design (gpurepro.simulate) both call ``still_needed``,
so a simulated run skips and looks exactly where a real one does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .classify import EVIDENCE


def still_needed(decider: Any, records: Sequence[Mapping[str, Any]], arm: str, max_trials: int) -> bool:
    """Before a planned trial of ``arm``: take the decider's look if one is due, then say whether
    the trial still runs (its arm serves an undecided claim of the confirmatory family and has
    not reached the maximum)."""
    if decider.look_due(records):
        decider.look(records)
    done = sum(1 for r in records if r["arm"] == arm and r["outcome"] in EVIDENCE)
    return arm in decider.arms_needed() and done < max_trials
