"""Per-arm tallies of trials: which are evidence, which failed, how much exposure.

Standard library only, so that `validate` and `report` can recompute a document's summary
without importing scipy (the statistics themselves are in stats.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, overload

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


class WithTrial(Sequence[Mapping[str, Any]]):
    """``records`` and one more trial after them, not copied: the decisive design's allocation
    weighs each way an arm's next trial could end against the same records, and a list copied
    for each was grouped anew by evidence_of (a third of the tile main job's planning time)."""

    __slots__ = ("records", "trial")

    def __init__(self, records: Sequence[Mapping[str, Any]], trial: Mapping[str, Any]) -> None:
        self.records = records
        self.trial = trial

    def __len__(self) -> int:
        return len(self.records) + 1

    @overload
    def __getitem__(self, i: int) -> Mapping[str, Any]: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[Mapping[str, Any]]: ...

    def __getitem__(self, i: int | slice) -> Mapping[str, Any] | Sequence[Mapping[str, Any]]:
        if isinstance(i, slice):
            return list(self)[i]
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(i)
        return self.trial if i == n - 1 else self.records[i]

    def __iter__(self) -> Iterator[Mapping[str, Any]]:
        yield from self.records
        yield self.trial


# The records last grouped by evidence_of: (that very list, its length then, arm -> its
# evidence trials). One tuple, swapped whole, so a reader never sees half of an update.
_grouped: tuple[Sequence[Mapping[str, Any]] | None, int, dict[Any, list[Mapping[str, Any]]]] = (
    None, -1, {})


def evidence_of(records: Sequence[Mapping[str, Any]], arm: str) -> Sequence[Mapping[str, Any]]:
    """``arm``'s trials that are evidence, in their order in ``records``. A look tests every open
    claim on the same records, and the decisive design's allocation asks again for each arm it
    weighs, each test reading its arm's and its reference's trials: grouped once per list and
    length (records are only ever appended to), not scanned whole for every arm each time; a
    ``WithTrial`` adds its one trial to its records' group."""
    global _grouped
    if isinstance(records, WithTrial):
        before = evidence_of(records.records, arm)
        t = records.trial
        if t.get("arm") == arm and t.get("outcome") in EVIDENCE:
            return [*before, t]
        return before
    seen = _grouped
    if seen[0] is not records or seen[1] != len(records):
        groups: dict[Any, list[Mapping[str, Any]]] = {}
        for r in records:
            if r.get("outcome") in EVIDENCE:
                groups.setdefault(r.get("arm"), []).append(r)
        seen = _grouped = (records, len(records), groups)
    return seen[2].get(arm, ())
