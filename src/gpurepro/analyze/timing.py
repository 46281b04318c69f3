"""Claims on times: is one arm slower than, faster than, or the same as another, by a margin.

A timed arm's driver measures per-launch times (CUDA events around many launches, warm-up
launches discarded) and puts them in its final record as ``observations.timing``:
``{"unit": "s", "values": [...], "warmups": N, "loops": L}``, each value the mean time of one
launch over ``loops`` launches (pyperf's convention). A trial is one process, so trials are the
independent replicates: each trial's time is the median of its values, and a claim compares
the logarithms of the trials' times of two arms with Welch's t-test (scipy.stats.ttest_ind,
unequal variances), shifted by the margin:

- ``slower``: supported when log(t_arm) - log(t_ref) > log(1 + margin), contradicted when it
  is below (one-sided each);
- ``faster``: supported when the difference is below -log(1 + margin);
- ``same``: two one-sided tests, supported when the difference is inside
  (-log(1 + margin), log(1 + margin)) by both, contradicted when it is outside on either side.

The ratio reported is exp of the difference of the mean logs (the ratio of the geometric means
of the trials' times), with its 95 % Welch interval. The p-values enter the claims' design as
every other claim's do (gpurepro.analyze.claims: Holm within a look, alpha split over looks).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from scipy import stats as sps

from .stats import EVIDENCE


def trial_time(record: Mapping[str, Any]) -> float | None:
    """A trial's time (seconds): the median of its driver's measured values, or None where it
    measured none (a failed trial, or one of an untimed arm)."""
    timing = (record.get("observations") or {}).get("timing")
    if not isinstance(timing, Mapping):
        return None
    values = [v for v in timing.get("values") or [] if isinstance(v, (int, float)) and v > 0
              and math.isfinite(v)]
    return statistics.median(values) if values else None


def arm_times(records: Sequence[Mapping[str, Any]], arm: str) -> list[float]:
    """The times of an arm's valid trials that measured any."""
    out = []
    for r in records:
        if r.get("arm") == arm and r.get("outcome") in EVIDENCE:
            t = trial_time(r)
            if t is not None:
                out.append(t)
    return out


def _one_sided(a: list[float], b: list[float], shift: float, alternative: str) -> float:
    """p of Welch's test that mean(log a) - mean(log b) is ``alternative`` than ``shift``."""
    res = sps.ttest_ind([x - shift for x in a], b, equal_var=False, alternative=alternative)
    p = float(res.pvalue)
    return 1.0 if math.isnan(p) else p


def evidence_numbers(kind: str, margin: float, arm: list[float], ref: list[float]
                     ) -> tuple[str, float, float, dict[str, Any]]:
    """(test, p_supported, p_contradicted, numbers) for a timed claim."""
    numbers: dict[str, Any] = {"times": {"arm": _summary(arm), "reference": _summary(ref)},
                               "margin": margin}
    if len(arm) < 2 or len(ref) < 2:
        return ("none (a timed claim needs two timed trials of each arm)", 1.0, 1.0, numbers)
    la, lr = [math.log(x) for x in arm], [math.log(x) for x in ref]
    diff = statistics.fmean(la) - statistics.fmean(lr)
    ci = sps.ttest_ind(la, lr, equal_var=False).confidence_interval(0.95)
    numbers.update(ratio=math.exp(diff), ratio_ci=[math.exp(ci.low), math.exp(ci.high)])
    edge = math.log1p(margin)
    test = "Welch's t-test on log trial times"
    if kind == "slower":
        return (test, _one_sided(la, lr, edge, "greater"), _one_sided(la, lr, edge, "less"), numbers)
    if kind == "faster":
        return (test, _one_sided(la, lr, -edge, "less"), _one_sided(la, lr, -edge, "greater"), numbers)
    inside = max(_one_sided(la, lr, edge, "less"), _one_sided(la, lr, -edge, "greater"))
    outside = min(1.0, 2 * min(_one_sided(la, lr, edge, "greater"), _one_sided(la, lr, -edge, "less")))
    return ("equivalence: two one-sided Welch t-tests on log trial times", inside, outside, numbers)


def _summary(times: list[float]) -> dict[str, Any]:
    return {"n": len(times), "median_s": statistics.median(times) if times else None,
            "geomean_s": math.exp(statistics.fmean(math.log(x) for x in times)) if times else None}
