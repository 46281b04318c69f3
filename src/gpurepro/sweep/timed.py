"""A timed axis's class for one point: a claim on the ratio of its trial times to a reference's.

Each GPU run of a timed axis times the point's arm (the release's artifact standing in for the
case's) and the axis's ``reference`` arm (the case's own artifact) in one run, interleaved, so
drift hits both alike. The class is a decision, made with the claims' test for times
(gpurepro.analyze.timing: Welch's t-test on the logarithms of the trials' times):

- ``fails``: a valid trial of the point's arm failed (a wrong output is not a faster kernel), or
  the point is decided slower than the reference by at least ``slower``;
- ``passes``: the point is decided within ``same`` of the reference (two one-sided tests);
- ``unknown``: neither is decided, or too few trials measured a time.

Each decision is made at ``alpha`` divided by the axis's number of distinct artifacts, so the
chance that any point of the bisection is given a wrong decided class stays at most ``alpha``
(Bonferroni over every point the search could run). Needs scipy (the analysis packages; the
GPU nodes' images carry it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..model.outcomes import EVIDENCE


def point_class(trials: Sequence[Mapping[str, Any]], timed: Mapping[str, Any], arm: str,
                failure_outcomes: Sequence[str], n_points: int) -> tuple[str, dict[str, Any]]:
    """(class, what decided it) for one run's trials."""
    alpha = float(timed["alpha"]) / max(1, n_points)
    record: dict[str, Any] = {"reference": timed["reference"], "alpha": alpha,
                              "slower": timed["slower"], "same": timed["same"]}
    failed = [t for t in trials if t.get("arm") == arm and t.get("outcome") in EVIDENCE
              and t["outcome"] in failure_outcomes]
    if failed:
        record["decided"] = f"{len(failed)} valid trial(s) of {arm} failed ({failed[0]['outcome']})"
        return "fails", record
    try:
        from ..analyze.timing import arm_times, evidence_numbers
    except ImportError as exc:  # a node without scipy: the search cannot decide this point
        record["decided"] = f"not decided: the timing test needs scipy ({exc.name} missing)"
        return "unknown", record
    a, r = arm_times(trials, arm), arm_times(trials, timed["reference"])
    _test, p_slower, _c, numbers = evidence_numbers("slower", float(timed["slower"]), a, r)
    _test, p_same, _c, _n = evidence_numbers("same", float(timed["same"]), a, r)
    record.update(n=[len(a), len(r)], ratio=numbers.get("ratio"), ratio_ci=numbers.get("ratio_ci"),
                  p_slower=p_slower, p_same=p_same)
    if p_slower <= alpha:
        record["decided"] = f"slower than {timed['reference']} by at least {timed['slower']:.0%}"
        return "fails", record
    if p_same <= alpha:
        record["decided"] = f"within {timed['same']:.0%} of {timed['reference']}"
        return "passes", record
    record["decided"] = (f"not decided: neither slower by {timed['slower']:.0%} nor within "
                         f"{timed['same']:.0%} of {timed['reference']} at alpha {alpha:.2g}")
    return "unknown", record
