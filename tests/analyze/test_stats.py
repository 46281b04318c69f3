"""Statistics against values computed independently (closed forms, hand calculations)."""

from __future__ import annotations

import math

import pytest

from gpurepro.analyze import stats


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
    assert km["median"] == 2.0  # S reaches 0.5 exactly at 2: the first time S <= 0.5
    assert "Kaplan-Meier" in km["median_method"]


def test_kaplan_meier_median_and_interval_closed_form():
    # No censoring, failures at 1..10: S(k) = 1 - k/10 and Greenwood's variance reduces to
    # S(1 - S)/n, so the linear band is S -/+ z sqrt(S(1 - S)/10). The median is 5 (S = 0.5,
    # the lower of the two middle values); the interval runs from the first time the lower
    # band is <= 0.5 to the first time the upper band is.
    z = 1.959963984540054
    times = list(range(1, 11))
    s = [1 - k / 10 for k in times]
    low = next(t for t, v in zip(times, s, strict=True) if v - z * math.sqrt(v * (1 - v) / 10) <= 0.5)
    high = next(t for t, v in zip(times, s, strict=True) if v + z * math.sqrt(v * (1 - v) / 10) <= 0.5)
    km = stats.kaplan_meier(times, [])
    assert km["median"] == 5.0
    assert km["median_ci95"] == [low, high] == [3.0, 8.0]


def test_kaplan_meier_median_at_a_rounded_half():
    # 24 at risk after one censoring at 0.5; S after the 12th failure is 12/24 = 0.5, which
    # the running product gives as 0.5000000000000001: still the median.
    km = stats.kaplan_meier(list(range(1, 25)), [0.5])
    assert km["median"] == 12.0


def test_kaplan_meier_median_not_reached():
    # One failure of four, the rest censored later: S = 3/4 throughout, so no median. The
    # lower band at 1 is 3/4 - z sqrt((3/4)(1/4)/4) = 0.326 <= 0.5: the interval starts at 1
    # and is open above.
    km = stats.kaplan_meier([1], [2, 3, 4])
    assert km["median"] is None and km["median_ci95"] == [1.0, None]
    km = stats.kaplan_meier([], [2, 3, 4])
    assert km["median"] is None and km["median_ci95"] is None


def test_duration_median_is_the_midpoint_and_coarse_counters_give_no_median():
    trials = [{**_trial("a", "crashed", 0), "duration_s": d, "counters": {}} for d in (1, 2, 3, 4)]
    s = stats.arm_summary(trials, {}, ("crashed",), "cycles", 1e6)
    assert s["duration_s"]["median"] == 2.5  # (2 + 3) / 2, not the upper middle value 3
    ttf = s["time_to_failure"]
    assert ttf["exposure"]["median"] is None and ttf["exposure"]["median_method"].startswith("none")
    assert ttf["seconds"]["median"] == 2.0  # seconds are a time axis


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
