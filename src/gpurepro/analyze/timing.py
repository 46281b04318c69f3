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

That is how a journal without ``options.timing`` is decided. A new run journals its timed test
(``TimedTest``, ``options.timing``), and its claims are decided by it:

- **paired by block.** The plan runs in randomized blocks, each holding one trial of every arm
  in a shuffled order (gpurepro.model.plan; a trial's ``rep`` is its block). The test takes, in
  each block that holds a valid timed trial of both arms, the difference of their log times,
  and a one-sample t-test of those differences against the margin (n - 1 degrees of freedom,
  n the blocks). A drift of the GPU's speed from block to block (clocks, temperature) moves
  both trials of a block alike and cancels in their difference, so it cannot decide a claim;
  a drift within a block falls on the arms in a random order.
- **a floor on the spread from the timer's resolution.** CUDA events resolve about 0.5 us
  (``EVENT_RESOLUTION_S``); a trial's value is the time of ``loops`` launches over ``loops``,
  so its resolution is 0.5 us / loops. Each of the two event timestamps is taken as rounded to
  it, an error uniform over one step: their difference has a standard deviation of
  resolution / sqrt(6). A trial's time (a median of such values) is known no better than that,
  relatively resolution / (sqrt(6) loops t) on the log scale; a block's difference no better
  than the root of the sum of its two trials' squares. The test's standard deviation is the
  larger of the differences' own and the root mean square of those floors, so trials that
  agree to the last digit give a finite p (and an interval of finite width), not p = 0.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scipy import stats as sps

from ..model.design import EVENT_RESOLUTION_S
from ..model.outcomes import EVIDENCE

# What other modules use; the rest is this module's own.
__all__ = [
    "arm_times", "evidence_numbers", "log_floor", "Paired", "paired", "paired_evidence",
    "TimedTest", "trial_time"
]


@dataclass(frozen=True)
class TimedTest:
    """How a run's timed claims are tested, as its journal holds it (``options.timing``; a
    journal without it is decided by Welch's test on the arms' trial times)."""

    resolution_s: float = EVENT_RESOLUTION_S
    test: str = "paired"  # one-sample t-test of the blocks' differences

    def to_json(self) -> dict[str, Any]:
        return {"resolution_s": self.resolution_s, "test": self.test}

    @classmethod
    def from_json(cls, d: Mapping[str, Any] | None) -> TimedTest | None:
        if not d:
            return None
        return cls(resolution_s=float(d.get("resolution_s", EVENT_RESOLUTION_S)),
                   test=str(d.get("test", "paired")))


@dataclass(frozen=True)
class TimedTrial:
    """One valid timed trial: its block (the plan's ``rep``), its time, and the floor of the
    standard deviation of its log time that the timer's resolution sets."""

    block: Any
    seconds: float
    floor: float


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


# ---------------------------------------------------------------- paired by block (new runs)


def log_floor(record: Mapping[str, Any], seconds: float, resolution_s: float) -> float:
    """The floor of the standard deviation of a trial's log time: the timer's resolution over
    ``loops`` (its record's observations.timing; 1 where it records none), over sqrt(6) (the
    difference of two rounded timestamps), relative to the trial's time."""
    timing = (record.get("observations") or {}).get("timing") or {}
    loops = timing.get("loops") if isinstance(timing, Mapping) else None
    loops = int(loops) if isinstance(loops, (int, float)) and loops >= 1 else 1
    return resolution_s / (math.sqrt(6) * loops) / seconds


def arm_trials(records: Sequence[Mapping[str, Any]], arm: str, resolution_s: float
               ) -> list[TimedTrial]:
    """An arm's valid timed trials with their blocks (a record without ``rep``: its place
    among the arm's trials)."""
    out: list[TimedTrial] = []
    for r in records:
        if r.get("arm") == arm and r.get("outcome") in EVIDENCE:
            t = trial_time(r)
            if t is not None:
                out.append(TimedTrial(r.get("rep", len(out)), t,
                                      log_floor(r, t, resolution_s)))
    return out


@dataclass(frozen=True)
class Paired:
    """The blocks' differences of log times of two arms, and their spread with its floor."""

    n: int
    mean: float
    sd: float  # the differences' own standard deviation (0 for one block)
    floor: float  # the root mean square of the blocks' floors
    se: float  # max(sd, floor) / sqrt(n)

    @property
    def df(self) -> int:
        return self.n - 1


def paired(arm: Sequence[TimedTrial], ref: Sequence[TimedTrial]) -> Paired | None:
    """The differences log t_arm - log t_ref of the blocks that hold a trial of both (the
    first of each arm's trials in a block); None for fewer than two such blocks."""
    mine: dict[Any, TimedTrial] = {}
    for t in arm:
        mine.setdefault(t.block, t)
    theirs: dict[Any, TimedTrial] = {}
    for t in ref:
        theirs.setdefault(t.block, t)
    blocks = [b for b in mine if b in theirs]
    if len(blocks) < 2:
        return None
    diffs = [math.log(mine[b].seconds) - math.log(theirs[b].seconds) for b in blocks]
    floors = [mine[b].floor ** 2 + theirs[b].floor ** 2 for b in blocks]
    n = len(diffs)
    sd = statistics.stdev(diffs)
    floor = math.sqrt(statistics.fmean(floors))
    return Paired(n, statistics.fmean(diffs), sd, floor, max(sd, floor) / math.sqrt(n))


def paired_evidence(kind: str, margin: float, records: Sequence[Mapping[str, Any]], arm: str,
                    reference: str, test: TimedTest) -> tuple[str, float, float, dict[str, Any]]:
    """(test, p_supported, p_contradicted, numbers) for a timed claim of a run that journaled
    its timed test: the one-sample t-test of the blocks' log differences, its spread floored
    by the timer's resolution (module docstring)."""
    a = arm_trials(records, arm, test.resolution_s)
    r = arm_trials(records, reference, test.resolution_s)
    numbers: dict[str, Any] = {"times": {"arm": _summary([t.seconds for t in a]),
                                         "reference": _summary([t.seconds for t in r])},
                               "margin": margin}
    d = paired(a, r)
    if d is None:
        return ("none (a timed claim needs two blocks with a timed trial of each arm)", 1.0, 1.0,
                numbers)
    half = float(sps.t.ppf(0.975, d.df)) * d.se
    numbers.update(ratio=math.exp(d.mean), ratio_ci=[math.exp(d.mean - half), math.exp(d.mean + half)],
                   blocks=d.n, sd=d.sd, sd_floor=d.floor)
    edge = math.log1p(margin)

    def above(shift: float) -> float:  # p of "the mean difference is above shift"
        return float(sps.t.sf((d.mean - shift) / d.se, d.df))

    def below(shift: float) -> float:
        return float(sps.t.cdf((d.mean - shift) / d.se, d.df))

    name = ("paired t-test on the blocks' log time differences (spread floored at the timer's "
            "resolution)")
    if kind == "slower":
        return (name, above(edge), below(edge), numbers)
    if kind == "faster":
        return (name, below(-edge), above(-edge), numbers)
    inside = max(below(edge), above(-edge))
    outside = min(1.0, 2 * min(above(edge), below(-edge)))
    return ("equivalence: two one-sided " + name, inside, outside, numbers)
