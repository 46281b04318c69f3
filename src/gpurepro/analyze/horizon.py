"""Rate claims decided with trials as the unit: did a trial fail before the horizon?

The exact conditional test of two Poisson rates (claims.evidence) assumes one constant failure
rate per unit of exposure, the same in every trial. A race rarely has one: the tile race's
crashes cluster where the module count crosses a power of two, its hazard falls with exposure
(a Weibull shape below 1) and its tail is heavy, so a control arm's one long survivor counts for
far less than a constant rate says (docs/statistics.md, "Rate claims with a horizon").

A design with a horizon H (an exposure fixed before the first trial, journaled as the decisive
design's ``horizon``) runs every trial of an arm in a rate claim to at most H, and asks of each
valid trial one question: did it fail before H? Trials of one arm are independent and alike
(one process each, in randomized order), so within an arm that answer is a Bernoulli variable
whatever the crash process: Weibull, gamma-frailty, a hazard that jumps at powers of two. A
claim that an arm fails less often (more often) than its reference is then a claim on two
binomial proportions, decided by Boschloo's exact unconditional test (scipy.stats.boschloo_exact,
which is uniformly more powerful than Fisher's), one-sided each way; its size holds for every
crash process, because it assumes none.

A valid trial falls in one of three classes (``counts``):

- **failed**: it ended by one of the claim's failures at an exposure at most H;
- **reached**: it got to H without failing (a survivor capped at H, a trial that ran past H,
  a failure recorded beyond H);
- **unresolved**: it ended before H without failing (a hang, a survivor stopped short by its
  time limit). Its answer is unknown, so each one-sided test counts it the way least favourable
  to its own alternative (a failure of the arm and a reach of the reference when the test is
  that the arm fails less often, and the other way round): the p-value is then at least what
  the trial's true answer would give, and the test's size holds.

Equivalence ("within a factor m"): on the cumulative hazards to the horizon, -ln(1 - p), of the
two arms, two one-sided tests from Clopper-Pearson bounds on each arm's share (Bonferroni over
the two arms): conservative, exact, and again free of any crash process.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from scipy import stats as sps

from ..model.outcomes import EVIDENCE
from .tally import WithTrial, evidence_of

TEST = "Boschloo's exact test on trials failing before the horizon"
EQUIVALENCE_TEST = ("equivalence: two one-sided tests on the cumulative hazards to the horizon "
                    "(Clopper-Pearson bounds, Bonferroni over the two arms)")


@dataclass(frozen=True)
class HorizonCounts:
    """One arm's valid trials against a horizon."""

    failed: int  # failed before the horizon (or at it)
    reached: int  # got to the horizon without failing
    unresolved: int  # ended before the horizon without failing
    failures: int  # every failure of the arm, wherever it fell
    exposure: float  # the arm's whole exposure

    @property
    def n(self) -> int:
        return self.failed + self.reached + self.unresolved

    def to_json(self) -> dict[str, Any]:
        return {"failed": self.failed, "reached": self.reached, "unresolved": self.unresolved,
                "n": self.n, "failures": self.failures, "exposure": self.exposure}


# The counts last taken of one list of records: (that very list, its length then, (arm,
# failure outcomes, horizon) -> its counts). The allocation weighs every arm's next trial
# against the same records, each claim reading its arm's and its reference's counts.
_counted: tuple[Sequence[Mapping[str, Any]] | None, int,
                dict[tuple[str, tuple[str, ...], float], HorizonCounts]] = (None, -1, {})


def counts(records: Sequence[Mapping[str, Any]], arm: str, failure_outcomes: Sequence[str],
           horizon: float) -> HorizonCounts:
    """How ``arm``'s valid trials stand against ``horizon``: taken once per list, length, arm,
    failure outcomes and horizon (records are only ever appended to), and a ``WithTrial``'s
    from its records' counts and its one trial."""
    global _counted
    if isinstance(records, WithTrial):
        before = counts(records.records, arm, failure_outcomes, horizon)
        t = records.trial
        if t.get("arm") != arm or t.get("outcome") not in EVIDENCE:
            return before
        return _count([t], failure_outcomes, horizon, before)
    seen = _counted
    if seen[0] is not records or seen[1] != len(records):
        seen = _counted = (records, len(records), {})
    key = (arm, tuple(failure_outcomes), horizon)
    got = seen[2].get(key)
    if got is None:
        got = seen[2][key] = _count(evidence_of(records, arm), failure_outcomes, horizon)
    return got


def _count(trials: Sequence[Mapping[str, Any]], failure_outcomes: Sequence[str], horizon: float,
           start: HorizonCounts | None = None) -> HorizonCounts:
    """``start`` (none) and ``trials`` (valid, of one arm), counted against ``horizon`` in their
    order (the exposure summed as one pass over them all would)."""
    s = start or HorizonCounts(0, 0, 0, 0, 0.0)
    failed, reached, unresolved, failures, exposure = (s.failed, s.reached, s.unresolved,
                                                       s.failures, s.exposure)
    for r in trials:
        x = float(r.get("exposure") or 0)
        exposure += x
        fails = r["outcome"] in failure_outcomes
        failures += int(fails)
        if fails and x <= horizon:
            failed += 1
        elif x >= horizon:
            reached += 1
        else:
            unresolved += 1
    return HorizonCounts(failed, reached, unresolved, failures, exposure)


@lru_cache(maxsize=65536)
def _boschloo_less(x1: int, n1: int, x2: int, n2: int) -> float:
    """p of Boschloo's one-sided test that the first share (x1 of n1) is below the second (x2 of
    n2). scipy's table has one binomial experiment per column. Cached: the allocation asks for
    the same small tables many times."""
    if n1 == 0 or n2 == 0:
        return 1.0
    res = sps.boschloo_exact([[x1, x2], [n1 - x1, n2 - x2]], alternative="less")
    p = float(res.pvalue)
    return 1.0 if math.isnan(p) else min(1.0, max(0.0, p))


def p_lower(arm: HorizonCounts, ref: HorizonCounts) -> float:
    """p that the arm fails before the horizon less often than the reference, its unresolved
    trials counted as failures and the reference's as reached."""
    return _boschloo_less(arm.failed + arm.unresolved, arm.n, ref.failed, ref.n)


def p_higher(arm: HorizonCounts, ref: HorizonCounts) -> float:
    """p that the arm fails before the horizon more often than the reference, its unresolved
    trials counted as reached and the reference's as failures."""
    return _boschloo_less(ref.failed + ref.unresolved, ref.n, arm.failed, arm.n)


def _bound(k: int, n: int, level: float, upper: bool) -> float:
    """A one-sided Clopper-Pearson bound on a share at confidence 1 - level."""
    if upper:
        return 1.0 if k >= n else float(sps.beta.ppf(1 - level, k + 1, n - k))
    return 0.0 if k <= 0 else float(sps.beta.ppf(level, k, n - k + 1))


def _hazard(p: float) -> float:
    return math.inf if p >= 1 else -math.log1p(-p)


def _ratio(num: float, den: float) -> float:
    if den == 0:
        return math.inf if num > 0 else math.nan
    return num / den


def _smallest_level(holds: Any) -> float:
    """The smallest level in (0, 1] at which ``holds(level)`` is true (it is monotone: a larger
    level gives narrower bounds), by bisection on the log scale; 1.0 where it never holds."""
    if not holds(1.0):
        return 1.0
    lo, hi = 1e-12, 1.0
    if holds(lo):
        return lo
    for _ in range(60):
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if holds(mid) else (mid, hi)
    return hi


def equivalence_ps(arm: HorizonCounts, ref: HorizonCounts, margin: float) -> tuple[float, float]:
    """(p that the cumulative-hazard ratio is inside (1/margin, margin), p that it is outside).

    Inside: both one-sided tests reject, each from an upper bound on one arm's share and a lower
    bound on the other's at level gamma / 2 (the two bounds fail together with chance at most
    gamma); the p-value is the larger of the two smallest such gammas. Outside: either side
    rejected at gamma / 2 each (so 2 x the smaller). Unresolved trials count against the side
    being tested."""

    def upper_inside(g: float) -> bool:  # the ratio is below the margin
        a = _bound(arm.failed + arm.unresolved, arm.n, g / 2, upper=True)
        r = _bound(ref.failed, ref.n, g / 2, upper=False)
        return _ratio(_hazard(a), _hazard(r)) < margin

    def lower_inside(g: float) -> bool:  # the ratio is above 1 / margin
        a = _bound(arm.failed, arm.n, g / 2, upper=False)
        r = _bound(ref.failed + ref.unresolved, ref.n, g / 2, upper=True)
        return _ratio(_hazard(a), _hazard(r)) > 1 / margin

    def above(g: float) -> bool:  # the ratio is above the margin
        a = _bound(arm.failed, arm.n, g / 2, upper=False)
        r = _bound(ref.failed + ref.unresolved, ref.n, g / 2, upper=True)
        return _ratio(_hazard(a), _hazard(r)) > margin

    def below(g: float) -> bool:  # the ratio is below 1 / margin
        a = _bound(arm.failed + arm.unresolved, arm.n, g / 2, upper=True)
        r = _bound(ref.failed, ref.n, g / 2, upper=False)
        return _ratio(_hazard(a), _hazard(r)) < 1 / margin

    if arm.n == 0 or ref.n == 0:
        return 1.0, 1.0
    inside = max(_smallest_level(upper_inside), _smallest_level(lower_inside))
    outside = min(1.0, 2 * min(_smallest_level(above), _smallest_level(below)))
    return inside, outside


def share_ratio(arm: HorizonCounts, ref: HorizonCounts, confidence: float = 0.95
                ) -> tuple[float | None, tuple[float, float] | None]:
    """The ratio of the two shares failing before the horizon, and an exact interval for it at
    ``confidence`` (Clopper-Pearson bounds on each share, Bonferroni over the two): None where
    the reference has no failure before the horizon."""
    if arm.n == 0 or ref.n == 0 or ref.failed == 0:
        return None, None
    level = (1 - confidence) / 2  # each of the two shares' two-sided bounds
    lo = _bound(arm.failed, arm.n, level / 2, upper=False) / _bound(ref.failed, ref.n, level / 2,
                                                                    upper=True)
    hi_ref = _bound(ref.failed, ref.n, level / 2, upper=False)
    hi = (_bound(arm.failed, arm.n, level / 2, upper=True) / hi_ref) if hi_ref > 0 else math.inf
    return (arm.failed / arm.n) / (ref.failed / ref.n), (lo, hi)
