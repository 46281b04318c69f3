"""Sentences as strong as their tests, for a run that journals options.analysis = 2
(gpurepro.analyze.claims.Wording): a decision that rests on one valid trial of an arm says so,
and the intervals of a sequential design's claims, computed where the run stopped, are
labelled as not adjusted for that look. A journal without it is worded as it was."""

from __future__ import annotations

import pytest

from gpurepro.analyze.claims import UNADJUSTED, Wording, sentence
from gpurepro.analyze.verdict import decide_claims
from gpurepro.case import Claim, load_case
from tests.conftest import ROOT
from tests.headers import run_header

RATE = Claim("one-thread", arm="one-thread", reference="baseline", kind="lower")
NEW = Wording(one_trial=True, stopping_look=True)


def _rate_record(n_arm: int) -> dict:
    return {"decision": "supported", "p_value": 0.003, "test": "exact conditional rate test",
            "look": 2, "numbers": {"arm": {"failures": 0, "n": n_arm, "exposure": 4e5},
                                   "reference": {"failures": 12, "n": 12, "exposure": 4e5}}}


def test_the_wording_follows_what_the_journal_holds():
    assert Wording.of({}) == Wording()  # a journal from before: as it was
    assert Wording.of({"analysis": 2, "stopping": None}) == Wording(one_trial=True)
    assert Wording.of({"analysis": 2, "stopping": {"design": "decisive"}}) == NEW


def test_a_decision_on_one_trial_of_an_arm_says_so():
    one = sentence(RATE, "baseline", _rate_record(1), 1e6, "cycles", 0.05, wording=NEW)
    assert one.endswith("p = 3.00e-03; it rests on one valid trial of one-thread]")
    assert "rests on one" not in sentence(RATE, "baseline", _rate_record(2), 1e6, "cycles", 0.05,
                                          wording=NEW)
    old = sentence(RATE, "baseline", _rate_record(1), 1e6, "cycles", 0.05)
    assert "rests on one" not in old and UNADJUSTED not in old
    undecided = {**_rate_record(1), "decision": "not_decided"}
    assert "rests on one" not in sentence(RATE, "baseline", undecided, 1e6, "cycles", 0.05,
                                          wording=NEW)


def test_intervals_at_a_stopping_look_are_labelled():
    text = sentence(RATE, "baseline", {**_rate_record(3), "numbers": {
        "arm": {"failures": 1, "n": 3, "exposure": 4e5},
        "reference": {"failures": 12, "n": 12, "exposure": 4e5}}}, 1e6, "cycles", 0.05,
        wording=NEW)
    assert f"(rate ratio 0.0833, 95% CI 1.95e-03–0.563, {UNADJUSTED})." in text
    outcome = Claim("x-wrong", arm="x", kind="outcome", outcome="wrong_result", share=0.5,
                    bound="below",
                    supported="x is right: {count} of {n} wrong (95% CI of the share {share_ci}).")
    record = {"decision": "supported", "p_value": 0.14, "test": "binomial share (below)",
              "look": 1, "numbers": {"count": 0, "n": 3, "share": 0.5}}
    assert f"(95% CI of the share 0–0.708, {UNADJUSTED})" in sentence(
        outcome, None, record, 1.0, "launches", 0.05, wording=NEW)
    assert "(95% CI of the share 0–0.708)." in sentence(outcome, None, record, 1.0, "launches",
                                                         0.05)


def _ptxas_header(analysis: int | None, stopping: dict | None) -> tuple:
    case = load_case("ptxas_abs_clamp", ROOT)
    trials = [{"arm": a, "outcome": "wrong_result" if a in ("first-bad", "last-bad") else "survived",
               "exposure": 3.0, "index": i}
              for i, a in enumerate(list(case.resolved_arms()) * 12)]
    options = {"stopping": stopping, **({"analysis": analysis} if analysis else {})}
    return case, run_header(case.resolved_arms(), options), trials


def test_a_recorded_sequential_run_labels_its_intervals_and_an_old_one_does_not():
    stopping = {"alpha": 0.05, "step": 12, "max_trials": 12}
    case, header, trials = _ptxas_header(2, stopping)
    new = decide_claims(case, header, trials)
    wrong = next(c for c in new if c["name"] == "last-bad-wrong")
    assert wrong["decision"] == "supported" and UNADJUSTED in wrong["sentence"]
    case, header, trials = _ptxas_header(None, stopping)
    old = decide_claims(case, header, trials)
    assert not any(UNADJUSTED in c["sentence"] for c in old)
    # A fixed-size run has one look, at its planned end: nothing to label.
    case, header, trials = _ptxas_header(2, None)
    assert not any(UNADJUSTED in c["sentence"] for c in decide_claims(case, header, trials))


@pytest.mark.parametrize("n", [1, 3])
def test_bounded_power_rates(n):
    """calibrate's observed effects give an arm with no failure in n trials the one-sided 95%
    upper bound of its rate: 1 - 0.05^(1/n) per trial, -ln(0.05) / exposure per unit."""
    import math

    from gpurepro.analyze import calibrate as cal
    from gpurepro.analyze import simulate as sim

    case = load_case("ptxas_abs_clamp", ROOT)
    base = sim.ArmModel((sim.Cause("wrong_result", "w", 1.0),), 3.0, 4.0, 0.8, 0.0, per_trial=True)
    never = sim.ArmModel((), 3.0, 4.0, 0.8, 0.0, per_trial=True)
    models = sim.Models("exposure", {"last-bad": base, "last-good": never}, [],
                        {"last-bad": {"n_valid": n, "exposure": 3.0 * n},
                         "last-good": {"n_valid": n, "exposure": 3.0 * n}})
    arms, bounded = cal.bounded_observed(case, models)
    assert arms["last-bad"] is base and set(bounded) == {"last-good"}
    assert arms["last-good"].causes[0].rate == pytest.approx(1 - 0.05 ** (1 / n))
    assert arms["last-good"].causes[0].outcome == "wrong_result"
    exposure = sim.Models("exposure", {"last-bad": sim.ArmModel(
        (sim.Cause("crashed", "SIGSEGV", 1e-3),), 2000.0, 1000.0, 2.0, 0.1),
        "last-good": sim.ArmModel((), 2000.0, 1000.0, 2.0, 0.1)}, [],
        {"last-bad": {"n_valid": n, "exposure": 2000.0 * n},
         "last-good": {"n_valid": n, "exposure": 2000.0 * n}})
    arms, bounded = cal.bounded_observed(case, exposure)
    assert arms["last-good"].causes[0].rate == pytest.approx(-math.log(0.05) / (2000.0 * n))
    # A case that declares its outcomes deterministic keeps them as observed.
    assert cal.bounded_observed(case, models, {"reason": "r", "trials": 3})[1] == {}
