"""Which distinct artifacts the GPU runs: the fewest that pin down every boundary.

The releases that built, in version order, form *points*: each a run of consecutive releases
with one artifact (identical artifacts, by sha256, are one point and run once). The CPU stage
gives each point a *signature*, the SASS facts the axis watches; consecutive points with one
signature form a *segment*. The GPU stage runs the two ends of every segment (both sides of
every change the SASS shows, and the ends of the axis), then, between any two run points that
ended differently with points between them, the middle one, until every pair of run points that
differ is adjacent: a binary search inside each segment. Its assumption, recorded in every
document: inside a segment whose two ends end alike, no point ends otherwise. ``exhaustive``
runs every point instead. Pure functions, standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

# What other modules use; the rest is this module's own.
__all__ = [
    "ASSUMPTION", "boundaries", "class_of", "first_round", "next_round", "points_of",
    "segments_of"
]

ASSUMPTION = ("inside a segment (consecutive distinct artifacts with the same watched SASS "
              "facts) whose two ends ran and ended alike, every artifact ends alike; the ends "
              "of every segment run, and between two runs that ended differently the middle "
              "artifact runs, until the two are adjacent")
CLASSES = ("fails", "passes", "unknown")


def points_of(releases: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Consecutive built releases with one artifact sha256, as points (oldest first)."""
    points: list[dict[str, Any]] = []
    for r in releases:
        sha = r.get("sha256")
        if not sha:
            continue
        if points and points[-1]["sha256"] == sha:
            points[-1]["releases"].append(r["requested"])
        else:
            points.append({"index": len(points), "sha256": sha, "releases": [r["requested"]]})
    return points


def segments_of(points: Sequence[Mapping[str, Any]], signature: Mapping[str, Any]
                ) -> list[list[int]]:
    """Point indices grouped into runs of one signature (``signature``: sha256 -> facts)."""
    out: list[list[int]] = []
    last: Any = object()
    for p in points:
        sig = signature.get(p["sha256"])
        if out and sig == last:
            out[-1].append(p["index"])
        else:
            out.append([p["index"]])
        last = sig
    return out


def first_round(segments: Sequence[Sequence[int]], exhaustive: bool = False) -> list[tuple[int, str]]:
    """(point, why) to run first: the ends of every segment, or every point."""
    if exhaustive:
        return [(i, "exhaustive: every distinct artifact") for seg in segments for i in seg]
    out: list[tuple[int, str]] = []
    for k, seg in enumerate(segments):
        for i in dict.fromkeys((seg[0], seg[-1])):
            out.append((i, f"an end of segment {k + 1} of {len(segments)}"))
    return out


def next_round(n_points: int, classes: Mapping[int, str]) -> list[tuple[int, str]]:
    """(point, why) to run next: the middle point between each pair of consecutive run
    points that ended differently (neither unknown) with unrun points between them."""
    ran = sorted(i for i in classes if 0 <= i < n_points)
    out = []
    for a, b in zip(ran, ran[1:], strict=False):
        ca, cb = classes[a], classes[b]
        if ca != cb and "unknown" not in (ca, cb) and b - a > 1:
            out.append(((a + b) // 2, f"bisect: point {a} {ca}, point {b} {cb}"))
    return out


def class_of(trials: Sequence[Mapping[str, Any]], failure_outcomes: Sequence[str],
             evidence: Sequence[str]) -> str:
    """``fails`` when a valid trial failed, ``passes`` when valid trials ran and none failed,
    ``unknown`` without a valid trial."""
    valid = [t for t in trials if t.get("outcome") in evidence]
    if not valid:
        return "unknown"
    return "fails" if any(t["outcome"] in failure_outcomes for t in valid) else "passes"


def boundaries(points: Sequence[Mapping[str, Any]], classes: Mapping[int, str]
               ) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """(pinned, open): consecutive run points that ended differently, adjacent (pinned) or
    with unrun points between them (open: the search did not finish, or an unknown stopped it)."""
    ran = sorted(classes)
    pinned, unresolved = [], []
    for a, b in zip(ran, ran[1:], strict=False):
        if classes[a] != classes[b]:
            if "unknown" in (classes[a], classes[b]) or b - a > 1:
                unresolved.append((a, b))
            else:
                pinned.append((a, b))
    return pinned, unresolved
