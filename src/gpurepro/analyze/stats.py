"""Analyze: per-arm statistics, arm-vs-baseline comparisons and crash sites, with scipy.stats.

- proportions of failing trials with exact (Clopper-Pearson) 95% intervals;
- arm vs baseline: Fisher's exact test on the 2x2 table of trials;
- failures per unit of exposure (e.g. per 10^6 load/launch/unload cycles) with exact Poisson
  intervals; survivors contribute their exposure and are right-censored. The rate ratio against
  the baseline uses the exact conditional (binomial) test;
- exposure-to-failure (cycles and seconds) as Kaplan-Meier curves (scipy.stats.ecdf on
  CensoredData), with the Kaplan-Meier median and its 95% interval (none where it is not
  reached, nor for an exposure counter too coarse to be a time axis);
- trial durations: their median (statistics.median: the mean of the two middle values).
Trials that are invalid, unsupported or harness errors are counted but carry no evidence.
"""

from __future__ import annotations

import math
import statistics
import warnings
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from scipy import stats

from ..model.outcomes import EVIDENCE  # noqa: F401  (re-exported: the outcomes that are evidence)
from .tally import arm_counts, split_trials, trials_by_arm  # noqa: F401  (re-exported)

# What other modules use; the rest is this module's own.
__all__ = [
    "analyze", "arm_summary", "coarse_counter", "crash_signature", "crash_sites", "fisher",
    "kaplan_meier", "per_gpu", "poisson_rate", "proportion", "rate_ratio"
]

CONFIDENCE = 0.95


def proportion(k: int, n: int) -> dict[str, Any]:
    if n == 0:
        return {"estimate": None, "ci95": None, "method": "clopper-pearson"}
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=CONFIDENCE, method="exact")
    return {"estimate": k / n, "ci95": [ci.low, ci.high], "method": "clopper-pearson"}


def poisson_rate(k: int, exposure: float, per: float) -> dict[str, Any]:
    """Events per `per` units of exposure, exact (Garwood) two-sided 95% interval."""
    if exposure <= 0:
        return {"estimate": None, "ci95": None, "method": "exact-poisson"}
    alpha = 1 - CONFIDENCE
    low = stats.chi2.ppf(alpha / 2, 2 * k) / 2 if k > 0 else 0.0
    high = stats.chi2.ppf(1 - alpha / 2, 2 * (k + 1)) / 2
    scale = per / exposure
    return {"estimate": k * scale, "ci95": [low * scale, high * scale], "method": "exact-poisson"}


def fisher(k1: int, n1: int, k0: int, n0: int) -> dict[str, Any]:
    if n1 == 0 or n0 == 0:
        return {"odds_ratio": None, "p_value": None}
    res = stats.fisher_exact([[k1, n1 - k1], [k0, n0 - k0]])
    odds = float(res.statistic)
    # An infinite or undefined odds ratio (a zero cell) is reported as null; the p-value stands.
    return {"odds_ratio": odds if math.isfinite(odds) else None, "p_value": float(res.pvalue)}


def rate_ratio(k1: int, e1: float, k0: int, e0: float) -> dict[str, Any]:
    """Rate ratio arm/baseline by the exact conditional test: k1 | k1+k0 ~ Bin(k1+k0, e1/(e1+e0))."""
    if e1 <= 0 or e0 <= 0 or k1 + k0 == 0:
        return {"estimate": None, "ci95": None, "p_value": None, "method": "conditional-binomial"}
    share = e1 / (e1 + e0)
    test = stats.binomtest(k1, k1 + k0, p=share)
    ci = test.proportion_ci(confidence_level=CONFIDENCE, method="exact")

    def to_ratio(p: float) -> float | None:
        if p >= 1.0:
            return None  # unbounded above
        return (p / (1 - p)) * (e0 / e1)

    estimate = to_ratio(k1 / (k1 + k0))
    return {"estimate": estimate, "ci95": [to_ratio(ci.low), to_ratio(ci.high)],
            "p_value": float(test.pvalue), "method": "conditional-binomial"}


KM_MEDIAN_METHOD = (
    "Kaplan-Meier: the first time the survival estimate is 0.5 or below, null if never (not "
    "reached); ci95: the first times the 95% Greenwood band (scipy ecdf sf.confidence_interval, "
    "linear) is 0.5 or below, lower band then upper band, null end: never")
_HALF = 0.5 + 1e-9  # a product of fractions that is 0.5 exactly may round just above it


def _first_at_or_below_half(xs: Sequence[float], ps: Sequence[float]) -> float | None:
    return next((x for x, p in zip(xs, ps, strict=True) if p <= _HALF), None)


def kaplan_meier(failed_at: Sequence[float], censored_at: Sequence[float]) -> dict[str, Any] | None:
    """Survival curve of exposure-to-failure and its median; None when there is no valid trial.

    ``median`` is null when the estimate never falls to 0.5 ("not reached", e.g. fewer than
    half failed); ``median_ci95`` is [low, high] with null for an end the band never reaches,
    or null when neither is reached (see ``KM_MEDIAN_METHOD``)."""
    if not failed_at and not censored_at:
        return None
    if not failed_at:
        return {"median": None, "median_ci95": None, "median_method": KM_MEDIAN_METHOD,
                "curve": [[0.0, 1.0], [max(censored_at), 1.0]], "censored": len(censored_at)}
    data = stats.CensoredData(uncensored=list(failed_at), right=list(censored_at))
    sf = stats.ecdf(data).sf
    xs = [float(x) for x in sf.quantiles]
    ps = [float(p) for p in sf.probabilities]
    with warnings.catch_warnings():
        # Greenwood's variance is undefined where the estimate reaches 0 (nan): there the
        # band is the estimate itself.
        warnings.simplefilter("ignore", RuntimeWarning)
        band = sf.confidence_interval(confidence_level=CONFIDENCE)
    low = [p if math.isnan(b) else float(b) for b, p in zip(band.low.probabilities, ps, strict=True)]
    high = [p if math.isnan(b) else float(b) for b, p in zip(band.high.probabilities, ps, strict=True)]
    median = _first_at_or_below_half(xs, ps)
    ci_low, ci_high = _first_at_or_below_half(xs, low), _first_at_or_below_half(xs, high)
    return {"median": median,
            "median_ci95": None if ci_low is None else [ci_low, ci_high],
            "median_method": KM_MEDIAN_METHOD,
            "curve": [[0.0, 1.0]] + [[x, p] for x, p in zip(xs, ps, strict=True)],
            "censored": len(censored_at)}


def coarse_counter(failed: Sequence[Mapping[str, Any]]) -> int:
    """How many failed trials have no counter reading at the failure (exposure 0 and no
    counters: the driver's counter is only a periodic printout, not a time axis)."""
    return sum(1 for t in failed if not (t.get("exposure") or 0)
               and "counters" in t and not t["counters"])


def _exposure_km(failed: Sequence[Mapping[str, Any]], censored: Sequence[Mapping[str, Any]]
                 ) -> dict[str, Any] | None:
    km = kaplan_meier([float(t.get("exposure") or 0) for t in failed],
                      [float(t.get("exposure") or 0) for t in censored])
    coarse = coarse_counter(failed)
    if km is not None and coarse:
        km.update(median=None, median_ci95=None,
                  median_method=f"none: the exposure counter is coarse ({coarse} of "
                                f"{len(failed)} failures have no counter reading at the failure)")
    return km


def _observation_counts(trials: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for t in trials:
        for key, value in (t.get("observations") or {}).items():
            if isinstance(value, Mapping):
                for sub, v in value.items():
                    if isinstance(v, str | int | float | bool):
                        counts[key][f"{sub}:{v}"] += 1
            elif isinstance(value, str | int | float | bool):
                counts[key][str(value)] += 1
    return {k: dict(sorted(v.items())) for k, v in counts.items()}


def arm_summary(trials: Sequence[Mapping[str, Any]], factors: Mapping[str, Any],
                failure_outcomes: Sequence[str], exposure_unit: str, per: float) -> dict[str, Any]:
    counts = arm_counts(trials, failure_outcomes)
    outcomes = counts["outcomes"]
    valid, failed, censored = split_trials(trials, failure_outcomes)
    exposure = counts["exposure_total"]
    errors: Counter[str] = Counter()
    for t in trials:
        if t["outcome"] == "cuda_error":
            errors[t["detail"]] += 1
    survivors = [t for t in valid if t["outcome"] == "survived"]
    durations = [t["duration_s"] for t in trials if t.get("duration_s")]
    return {
        "factors": dict(factors),
        "n": len(trials),
        "outcomes": outcomes,
        "n_valid": len(valid),
        "failures": len(failed),
        "proportion": proportion(len(failed), len(valid)),
        "exposure": {
            "total": exposure,
            "unit": exposure_unit,
            "per": per,
            "rate": poisson_rate(len(failed), exposure, per),
            "min_survivor": min((t.get("exposure") or 0 for t in survivors), default=None),
        },
        "time_to_failure": {
            "exposure": _exposure_km(failed, censored),
            "seconds": kaplan_meier([float(t["duration_s"]) for t in failed],
                                    [float(t["duration_s"]) for t in censored]),
        },
        "errors": dict(errors),
        "observations": _observation_counts(trials),
        "duration_s": {"median": statistics.median(durations) if durations else None,
                       "total": sum(durations)},
    }


def crash_signature(crash: Mapping[str, Any], frames: int = 3) -> str:
    head = f"{crash.get('signal')} at {crash.get('pc_module')}+{crash.get('pc_offset')}"
    tail = [f"{f.get('module')}+{f.get('offset')}" for f in (crash.get("frames") or [])[1 : 1 + frames]]
    return head + (" <- " + " <- ".join(tail) if tail else "")


def crash_sites(trials: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Bucket crashed trials by signature: faulting module+offset and the first frames."""
    buckets: dict[str, dict[str, Any]] = {}
    for t in trials:
        crash = t.get("crash")
        if t["outcome"] != "crashed":
            continue
        if not crash or "pc_module" not in crash:
            sig = f"{t['detail']} (no crash record)"
            crash = {}
        else:
            sig = crash_signature(crash)
        b = buckets.setdefault(sig, {"signature": sig, "signal": crash.get("signal", t["detail"]),
                                     "pc_module": crash.get("pc_module"),
                                     "pc_offset": crash.get("pc_offset"),
                                     "pc_perms": crash.get("pc_perms"),
                                     "code_name": crash.get("code_name"),
                                     "fault_in": crash.get("fault_in"),
                                     "frames": (crash.get("frames") or [])[:8],
                                     "count": 0, "arms": {}})
        b["count"] += 1
        b["arms"][t["arm"]] = b["arms"].get(t["arm"], 0) + 1
    return sorted(buckets.values(), key=lambda b: -b["count"])


def per_gpu(trials: Sequence[Mapping[str, Any]], failure_outcomes: Sequence[str]) -> dict[str, Any]:
    table: dict[str, dict[str, dict[str, int]]] = defaultdict(lambda: defaultdict(lambda: {"failures": 0, "valid": 0}))
    for t in trials:
        if t.get("gpu") is None:
            continue
        cell = table[str(t["gpu"])][t["arm"]]
        if t["outcome"] in EVIDENCE:
            cell["valid"] += 1
            cell["failures"] += int(t["outcome"] in failure_outcomes)
    return {g: dict(arms) for g, arms in sorted(table.items())}


def analyze(trials: Sequence[Mapping[str, Any]], arms: Mapping[str, Mapping[str, Any]],
            baseline: str, failure_outcomes: Sequence[str], exposure_unit: str,
            per: float = 1e6) -> dict[str, Any]:
    by_arm = trials_by_arm(trials, list(arms))
    summaries = {a: arm_summary(ts, arms.get(a, {}), failure_outcomes, exposure_unit, per)
                 for a, ts in by_arm.items()}
    comparisons = {}
    base = summaries.get(baseline)
    for arm, s in summaries.items():
        if arm == baseline or base is None:
            continue
        comparisons[arm] = {
            "vs": baseline,
            "fisher": fisher(s["failures"], s["n_valid"], base["failures"], base["n_valid"]),
            "rate_ratio": rate_ratio(s["failures"], s["exposure"]["total"],
                                     base["failures"], base["exposure"]["total"]),
        }
    return {"baseline": baseline, "arms": summaries, "comparisons": comparisons,
            "crash_sites": crash_sites(trials), "per_gpu": per_gpu(trials, failure_outcomes)}
