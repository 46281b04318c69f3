"""Where each thread was at a fault: the driver calls its workers published (native/events.h,
PhaseSlot), kept in the trial record's crash as `threads`, counted per arm (the report
tabulates them: gpurepro.report.markdown.threads_table).

A label reads "faulting thread | the others": each side "in CALL" (inside the call) or "after
CALL" (between calls, the last one it left), "not started" for a thread that had not made its
first call. Threads are unordered on the right, so the same situation always reads the same.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any


def _one(t: Mapping[str, Any]) -> str:
    if not t.get("call"):
        return "not started"
    return f"{'in' if t.get('inside') else 'after'} {t['call']}"


def label(threads: Sequence[Mapping[str, Any]]) -> str:
    fault = [_one(t) for t in threads if t.get("faulting")]
    others = sorted(_one(t) for t in threads if not t.get("faulting"))
    return f"{fault[0] if fault else 'no worker'} | {', '.join(others) or '–'}"


def by_arm(trials: Iterable[Mapping[str, Any]], failure_outcomes: Sequence[str] = ("crashed",)
           ) -> dict[str, tuple[Counter[str], int]]:
    """Per arm: the labels of its failed trials' crash records that carry threads, and how many
    failed trials carried none."""
    out: dict[str, tuple[Counter[str], int]] = {}
    for t in trials:
        if t.get("outcome") not in failure_outcomes:
            continue
        counts, without = out.get(t["arm"], (Counter(), 0))
        threads = (t.get("crash") or {}).get("threads")
        if threads:
            counts[label(threads)] += 1
        else:
            without += 1
        out[t["arm"]] = (counts, without)
    return {a: v for a, v in out.items() if v[0]}
