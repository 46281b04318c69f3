"""Crash processes (gpurepro.analyze.processes): maximum-likelihood fits recover the parameters
they were drawn with, survivors censored; the likelihood-ratio test against the exponential
rejects it on Weibull data with shape 0.7 and not on exponential data; draws follow each
process's own survival; and the committed H100 baseline trials give the numbers issue 45
quotes."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from gpurepro.analyze import processes as pr

ROOT = Path(__file__).resolve().parents[2]


def _censored(draws: np.ndarray, at: float) -> pr.Observations:
    """Trials run to exposure ``at``: those that got there survive, censored at it."""
    return pr.Observations(tuple(np.minimum(draws, at).tolist()), tuple((draws < at).tolist()))


def _rng(seed: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(seed))


def test_the_exponential_fit_is_failures_over_exposure():
    obs = pr.Observations((100.0, 300.0, 600.0), (True, True, False))
    fit = pr.fit_exponential(obs)
    assert fit.rate == pytest.approx(2 / 1000)
    # log density at the two failures, log survival at the censored one
    assert fit.loglik == pytest.approx(2 * math.log(2e-3) - 2e-3 * 1000)


def test_weibull_fit_recovers_shape_and_scale_with_censored_survivors():
    draws = stats.weibull_min.rvs(0.7, scale=1000.0, size=600, random_state=_rng(1))
    obs = _censored(draws, 4000.0)
    assert 0 < obs.crashes < 600  # some survivors, censored
    fit = pr.fit_weibull(obs)
    assert fit.shape == pytest.approx(0.7, abs=0.07)
    assert fit.scale == pytest.approx(1000.0, rel=0.15)
    # The optimum: scipy's own censored fit finds the same.
    c, _, scale = stats.weibull_min.fit(obs.censored_data(), floc=0)
    assert (fit.shape, fit.scale) == pytest.approx((c, scale), rel=1e-3)


def test_lomax_fit_recovers_the_gamma_frailty():
    draws = stats.lomax.rvs(2.0, scale=3000.0, size=3000, random_state=_rng(2))
    fit = pr.fit_lomax(_censored(draws, 50000.0))
    assert fit.shape == pytest.approx(2.0, rel=0.25)
    assert fit.scale == pytest.approx(3000.0, rel=0.3)
    assert fit.shape / fit.scale == pytest.approx(2.0 / 3000.0, rel=0.1)  # the mean rate


def test_lomax_on_exponential_data_tends_to_the_exponential():
    draws = _rng(3).exponential(1000.0, size=400)
    obs = _censored(draws, 5000.0)
    lomax, expo = pr.fit_lomax(obs), pr.fit_exponential(obs)
    assert lomax.loglik >= expo.loglik - 1e-6
    assert lomax.loglik - expo.loglik < 2.0  # nothing to gain
    assert lomax.shape / lomax.scale == pytest.approx(expo.rate, rel=0.2)


def test_crossing_fit_recovers_the_chance_at_each_power_of_two():
    # Crossings from 2^4 (a failure in its window is the smallest exposure seen, so the fit's
    # range starts there too) to 2^16, trials censored past 2^16.
    truth = pr.Crossing(rate=2e-5, chance=0.1, powers=tuple(range(4, 17)))
    rng = _rng(4)
    draws = np.array([truth.sample(rng) for _ in range(1500)])
    obs = _censored(draws, 100000.0)
    fit = pr.fit_crossing(obs)
    assert fit.powers == truth.powers
    assert fit.chance == pytest.approx(0.1, abs=0.025)
    assert fit.rate == pytest.approx(2e-5, rel=0.25)
    assert pr.likelihood_ratio(fit, pr.fit_exponential(obs)).p_value < 1e-6


@pytest.mark.parametrize("seed", [5, 6, 7])
def test_the_likelihood_ratio_rejects_the_exponential_on_weibull_0_7_data_and_not_on_exponential(seed):
    rng = _rng(seed)
    weibull = pr.Observations.of(
        [{"outcome": "crashed", "exposure": float(x)}
         for x in stats.weibull_min.rvs(0.7, scale=1000.0, size=150, random_state=rng)],
        ("crashed",))
    w = pr.checks(weibull, names=("weibull", "lomax"))
    assert {x.model: x for x in w.lr}["weibull"].p_value < 0.01
    assert w.cv is not None and w.cv > 1.1  # a shape below 1: more spread than the exponential
    expo = pr.Observations.of([{"outcome": "crashed", "exposure": float(x)}
                               for x in rng.exponential(1000.0, size=150)], ("crashed",))
    e = pr.checks(expo, names=("weibull", "lomax"))
    assert {x.model: x for x in e.lr}["weibull"].p_value > 0.01
    assert {x.model: x for x in e.lr}["lomax"].p_value > 0.01


def test_boundary_tests_halve_the_chi_square_p():
    expo = pr.Exponential(1e-3, loglik=-100.0)
    lomax = pr.Lomax(3.0, 3000.0, loglik=-98.0)
    weibull = pr.Weibull(0.8, 1000.0, loglik=-98.0)
    assert pr.likelihood_ratio(lomax, expo).p_value == pytest.approx(0.5 * stats.chi2.sf(4.0, 1))
    assert pr.likelihood_ratio(weibull, expo).p_value == pytest.approx(stats.chi2.sf(4.0, 1))
    assert pr.likelihood_ratio(pr.Lomax(3.0, 3000.0, loglik=-100.5), expo).p_value == 1.0


@pytest.mark.parametrize("process", [
    pr.Exponential(1e-3), pr.Weibull(0.7, 1000.0), pr.Lomax(2.0, 2000.0),
    pr.Crossing(2e-4, 0.2, tuple(range(6, 12))),
    pr.Empirical((100.0, 400.0, 900.0), (0.75, 0.5, 0.25)),
], ids=lambda p: p.name)
def test_draws_follow_the_process_survival(process):
    rng = _rng(8)
    draws = np.array([process.sample(rng) for _ in range(20000)])
    for x in (150.0, 600.0, 1500.0):
        assert np.mean(draws > x) == pytest.approx(float(process.survival(x)), abs=0.015)
    b = 1200.0
    assert np.mean(np.minimum(draws, b)) == pytest.approx(process.expected_min(b), rel=0.03)


def test_the_empirical_process_is_kaplan_meier_and_never_fails_past_its_last_failure():
    obs = pr.Observations((100.0, 200.0, 300.0, 400.0), (True, False, True, False))
    km = pr.empirical(obs)
    # Kaplan-Meier: 3/4 after 100, then 3/4 * 1/2 after 300 (two at risk, one fails).
    assert km.times == (100.0, 300.0) and km.sf == pytest.approx((0.75, 0.375))
    assert km.survival(99.0) == 1.0 and km.survival(350.0) == pytest.approx(0.375)
    rng = _rng(9)
    draws = [km.sample(rng) for _ in range(4000)]
    assert np.mean(np.isinf(draws)) == pytest.approx(0.375, abs=0.03)


def test_too_few_failures_is_one_clear_error():
    obs = pr.Observations((100.0, 200.0), (True, False))
    with pytest.raises(pr.ProcessFitError, match="needs at least 2 failures"):
        pr.fit_weibull(obs)
    checks = pr.checks(obs)
    assert "weibull" in checks.errors and "exponential" in checks.fits


def test_a_censored_sample_has_no_cv_p_value():
    obs = pr.Observations((100.0, 200.0, 300.0), (True, True, False))
    assert pr.checks(obs, _rng(0)).cv_p_value is None


def test_the_committed_h100_baseline_trials_reject_the_constant_hazard():
    """Issue 45's numbers on the 36 baseline trials of the two H100 tile main jobs."""
    trials = []
    for name in ("20261205T101709Z-3d06d7", "20261205T110123Z-c78027"):
        doc = json.loads((ROOT / "results" / "tile_unload_race" /
                          f"{name}_NVIDIA-H100-80GB-HBM3_redacted.json").read_text())
        trials += [t for t in doc["trials"] if t["arm"] == "baseline"]
    c = pr.checks(pr.Observations.of(trials, ("crashed",)), _rng(0))
    assert (c.n, c.failures) == (36, 36)
    assert c.cv == pytest.approx(1.26, abs=0.005)
    assert c.cv_p_value == pytest.approx(0.04, abs=0.015)
    lr = {x.model: x for x in c.lr}
    assert c.fits["weibull"].shape == pytest.approx(0.76, abs=0.01)
    assert lr["weibull"].p_value == pytest.approx(0.027, abs=0.002)
    assert lr["lomax"].p_value == pytest.approx(0.04, abs=0.003)
    assert c.fits["exponential"].survival(1e5) == pytest.approx(0.008, abs=0.0005)
    assert c.best == "crossing" and lr["crossing"].p_value < 1e-10
