"""Where each thread was at a fault: the driver calls its workers published (native/events.h,
PhaseSlot), kept in the trial record's crash as `threads`, counted per arm (the report
tabulates them: gpurepro.report.markdown.threads_table).

A crash record with `snapshot_ns` carries the crash handler's copy taken on entry, before its
backtrace and /proc/self/maps scan: `threads` at the fault. A record without it comes from a
handler that read the threads after that slow work, while the other threads ran on (about
0.2 ms on the H200 host): its rows say "read after the handler's slow work", never "at the fault".

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


def at_fault(crash: Mapping[str, Any]) -> bool:
    """Whether the record's threads are the handler's snapshot at the fault (it says how long
    after entry it was taken), not a read after its slow work."""
    return "snapshot_ns" in crash


def by_arm(trials: Iterable[Mapping[str, Any]], failure_outcomes: Sequence[str] = ("crashed",),
           *, read_at_fault: bool = True) -> dict[str, tuple[Counter[str], int]]:
    """Per arm: the labels of its failed trials' crash records whose threads were read at the
    fault (or, with read_at_fault False, only after the handler's slow work), and how many
    failed trials carried no threads."""
    out: dict[str, tuple[Counter[str], int]] = {}
    for t in trials:
        if t.get("outcome") not in failure_outcomes:
            continue
        counts, without = out.get(t["arm"], (Counter(), 0))
        crash = t.get("crash") or {}
        threads = crash.get("threads")
        if not threads:
            without += 1
        elif at_fault(crash) == read_at_fault:
            counts[label(threads)] += 1
        out[t["arm"]] = (counts, without)
    return {a: v for a, v in out.items() if v[0]}


# The threads table's "read" column (the report draws the table).
READ = {True: "at the fault", False: "after the handler's slow work"}
