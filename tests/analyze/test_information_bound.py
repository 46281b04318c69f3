"""The information bound (gpurepro.analyze.information_bound) on synthetic data whose answer
follows by hand: the exponential's best survivor runs to the budget, the Weibull's to
k o v / (1 - k), Holm's levels go to the arms so that the total is least, and a whole question
adds its first failures."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest

from gpurepro.analyze import information_bound as ib
from gpurepro.analyze import processes as pr
from gpurepro.case import Claim, load_case

ROOT = Path(__file__).resolve().parents[2]
FAKE = ROOT / "tests" / "fixtures" / "fake_case" / "manifest.py"


def test_under_the_exponential_the_best_survivor_runs_to_the_budget():
    # -log S(c) / (o + c/v) = lam c / (o + c/v) rises with c: the whole budget.
    lam, o, v, b = 5e-5, 0.25, 8000.0, 160000.0
    info = ib.best_survivor_trial(pr.Exponential(lam), ib.TrialCost(o, v, b))
    assert info.exposure == pytest.approx(b)
    assert info.nats == pytest.approx(lam * b)
    assert info.nats_per_second == pytest.approx(lam * b / (o + b / v))


def test_under_a_weibull_below_shape_1_the_best_survivor_is_short():
    # d/dc (c/s)^k / (o + c/v) = 0 at k (o + c/v) = c/v: c* = k o v / (1 - k), where the rate
    # is (c*/s)^k / (o / (1 - k)).
    k, s, o, v = 0.76, 17700.0, 0.25, 8000.0
    info = ib.best_survivor_trial(pr.Weibull(k, s), ib.TrialCost(o, v, 1e6))
    best = k * o * v / (1 - k)
    assert info.exposure == pytest.approx(best, rel=1e-3)
    assert info.nats_per_second == pytest.approx((best / s) ** k / (o / (1 - k)), rel=1e-6)


def test_holm_levels_leave_the_strictest_to_the_claims_a_failure_decides():
    assert ib.holm_levels(0.05, 8, 2) == pytest.approx([0.05 / 6, 0.05 / 5, 0.05 / 4, 0.05 / 3,
                                                        0.05 / 2, 0.05])
    with pytest.raises(ValueError):
        ib.holm_levels(0.05, 2, 3)


def test_the_arm_with_the_most_nats_per_second_takes_the_strictest_level():
    lam, o = 1e-4, 0.5
    fast, slow = ib.TrialCost(o, 4000.0, 40000.0), ib.TrialCost(o, 1000.0, 10000.0)
    bounds = ib.rate_claim_bounds(pr.Exponential(lam), [("slow-lower", "slow", slow),
                                                        ("fast-lower", "fast", fast)],
                                  0.05, 2, 0)
    by = {b.claim: b for b in bounds}
    assert by["fast-lower"].level == pytest.approx(0.025) and by["slow-lower"].level == 0.05

    def seconds(level: float, c: ib.TrialCost) -> float:
        b = c.max_exposure
        return math.log(1 / level) * (o + b / c.speed) / (lam * b)

    assert by["fast-lower"].seconds == pytest.approx(seconds(0.025, fast))
    assert by["slow-lower"].seconds == pytest.approx(seconds(0.05, slow))
    # the other way round costs more
    assert (seconds(0.025, fast) + seconds(0.05, slow)
            < seconds(0.05, fast) + seconds(0.025, slow))


def test_first_failure_of_restarted_exponential_trials():
    lam, o, v, b = 1e-3, 0.5, 1000.0, 2000.0
    p = -math.expm1(-lam * b)
    expected = (o + p / lam / v) / p  # E[min(X, b)] = (1 - e^{-lam b}) / lam
    assert ib.first_failure_s(pr.Exponential(lam), ib.TrialCost(o, v, b)) == pytest.approx(expected)
    assert ib.per_trial_first_failure_s([20.35, 4.74, 2.54], [False, True, True]) == pytest.approx(13.815)
    assert ib.per_trial_first_failure_s([20.0], [False]) is None


def test_a_question_bound_from_trials():
    """The fake case with one rate claim (ok, never failing, against the baseline crash) and one
    claim a first failure decides: by hand from the exponential the crash trials give."""
    case = dataclasses.replace(load_case(FAKE, ROOT), claims=[
        Claim("ok-lower", arm="ok", kind="lower"),
        Claim("crash-crashes", arm="crash", kind="outcome", outcome="crashed", share=0.0)])
    o, v = 0.5, 1000.0  # the least trial time; the baseline's speed
    exposures = [200.0, 500.0, 900.0, 1500.0, 2600.0, 4000.0]
    trials = [{"arm": "crash", "outcome": "crashed", "exposure": x, "duration_s": o + x / v}
              for x in exposures]
    trials += [{"arm": "ok", "outcome": "survived", "exposure": 19000.0, "duration_s": 10.0}
               for _ in range(3)]
    # a survivor capped at one cycle: the least a trial costs is its start, o
    trials.append({"arm": "ok", "outcome": "survived", "exposure": 1.0, "duration_s": o})
    q = ib.question_bound(case, trials, ["ok-lower", "crash-crashes"], 10.0, 0.05,
                          processes=("exponential",))
    b = q.bounds["exponential"]
    lam = len(exposures) / sum(exposures)
    ok_v = 19000.0 / (10.0 - o)
    ok_b = ok_v * (10.0 - o)  # what a 10 s trial reaches
    assert q.costs["ok"].speed == pytest.approx(ok_v) and q.costs["crash"].speed == pytest.approx(v)
    (claim,) = b.claims
    assert claim.level == pytest.approx(0.05)  # m = 2, the outcome claim takes alpha / 2
    assert claim.seconds == pytest.approx(math.log(20) * (o + ok_b / ok_v) / (lam * ok_b))
    crash_b = v * (10.0 - o)
    p = -math.expm1(-lam * crash_b)
    assert b.first_failure["crash"] == pytest.approx((o + p / lam / v) / p)
    assert b.total_s == pytest.approx(claim.seconds + b.first_failure["crash"])
