"""Statistics against values computed independently (closed forms, hand calculations)."""

from __future__ import annotations

import math

import pytest

from gpurepro import stats


def test_clopper_pearson_closed_forms():
    # For 0/n and n/n the exact interval has closed forms: 1-(a/2)^(1/n) and (a/2)^(1/n).
    p = stats.proportion(0, 25)
    assert p["ci95"][0] == 0 and p["ci95"][1] == pytest.approx(1 - 0.025 ** (1 / 25), rel=1e-9)
    p = stats.proportion(25, 25)
    assert p["ci95"][0] == pytest.approx(0.025 ** (1 / 25), rel=1e-9) and p["ci95"][1] == 1
    assert stats.proportion(0, 0)["estimate"] is None


def test_fisher_extreme_table():
    # 25/25 vs 0/25: one-table-as-extreme hypergeometric, two-sided = 2 / C(50, 25).
    res = stats.fisher(25, 25, 0, 25)
    assert res["p_value"] == pytest.approx(2 / math.comb(50, 25), rel=1e-9)
    assert res["odds_ratio"] is None  # infinite: reported as null


def test_poisson_zero_events_upper_bound():
    # Exact 97.5% one-sided upper limit for 0 events is -ln(0.025) = 3.689 events.
    r = stats.poisson_rate(0, 1e6, 1e6)
    assert r["estimate"] == 0 and r["ci95"][1] == pytest.approx(-math.log(0.025), rel=1e-9)


def test_poisson_interval_for_a_few_events():
    # Garwood interval for k=3: [0.6187, 8.7673] (standard tables).
    r = stats.poisson_rate(3, 1.0, 1.0)
    assert r["ci95"][0] == pytest.approx(0.6187, abs=1e-4)
    assert r["ci95"][1] == pytest.approx(8.7673, abs=1e-4)


def test_rate_ratio_conditional_test():
    # Equal exposure, 0 vs 10 events: k1 | 10 ~ Bin(10, 1/2); two-sided p = 2 * 0.5^10.
    rr = stats.rate_ratio(0, 1000.0, 10, 1000.0)
    assert rr["estimate"] == 0 and rr["p_value"] == pytest.approx(2 * 0.5**10)
    # No exposure in the arm: nothing can be said.
    assert stats.rate_ratio(0, 0.0, 10, 1000.0)["p_value"] is None


def test_kaplan_meier_by_hand():
    # Failures at 1, 2, 3; one censored at 2.5: S = 3/4, then 3/4*2/3 = 1/2, then 0.
    km = stats.kaplan_meier([1, 2, 3], [2.5])
    curve = dict((x, s) for x, s in km["curve"])
    assert curve[1.0] == pytest.approx(0.75) and curve[2.0] == pytest.approx(0.5)
    assert curve[3.0] == pytest.approx(0.0)
    assert km["median"] == 2.0


def _trial(arm, outcome, exposure):
    return {"arm": arm, "outcome": outcome, "exposure": exposure, "duration_s": 1.0,
            "detail": "", "crash": None}


def test_analyze_censors_survivors_and_ignores_invalid():
    trials = ([_trial("base", "crashed", 100)] * 4 + [_trial("base", "survived", 1000)]
              + [_trial("ctl", "survived", 10_000)] * 5 + [_trial("ctl", "invalid", 0)] * 3)
    a = stats.analyze(trials, {"base": {}, "ctl": {}}, "base", ("crashed",), "cycles")
    base, ctl = a["arms"]["base"], a["arms"]["ctl"]
    assert (base["failures"], base["n_valid"], base["exposure"]["total"]) == (4, 5, 1400)
    assert (ctl["n"], ctl["n_valid"], ctl["outcomes"]["invalid"]) == (8, 5, 3)
    assert a["comparisons"]["ctl"]["rate_ratio"]["estimate"] == 0
