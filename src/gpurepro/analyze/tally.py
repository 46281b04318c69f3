"""Per-arm tallies of trials: which are evidence, which failed, how much exposure.

Standard library only, so that `validate` and `report` can recompute a document's summary
without importing scipy (the statistics themselves are in stats.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from ..model.outcomes import EVIDENCE


def split_trials(trials: Sequence[Mapping[str, Any]], failure_outcomes: Sequence[str]
                 ) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]], list[Mapping[str, Any]]]:
    """(valid, failed, censored): the trials that are evidence, and of those the failures and
    the right-censored rest."""
    valid = [t for t in trials if t["outcome"] in EVIDENCE]
    failed = [t for t in valid if t["outcome"] in failure_outcomes]
    censored = [t for t in valid if t["outcome"] not in failure_outcomes]
    return valid, failed, censored


def arm_counts(trials: Sequence[Mapping[str, Any]], failure_outcomes: Sequence[str]) -> dict[str, Any]:
    """The counts of an arm's summary: n, outcomes, n_valid, failures, exposure total."""
    valid, failed, _ = split_trials(trials, failure_outcomes)
    return {"n": len(trials), "outcomes": dict(sorted(Counter(t["outcome"] for t in trials).items())),
            "n_valid": len(valid), "failures": len(failed),
            "exposure_total": float(sum(t.get("exposure") or 0 for t in valid))}


def trials_by_arm(trials: Sequence[Mapping[str, Any]], arms: Sequence[str]
                  ) -> dict[str, list[Mapping[str, Any]]]:
    """Trials grouped by arm: every arm in ``arms`` (maybe with none), then any other arm met."""
    by_arm: dict[str, list[Mapping[str, Any]]] = {a: [] for a in arms}
    for t in trials:
        by_arm.setdefault(t["arm"], []).append(t)
    return by_arm
