"""Claims on times (slower / faster / same by a margin): decided from the trials' measured
times with Welch's t-test on their logarithms, refused where the margin is not a fraction, and
run fixed-size (the decisive design allocates by failure rates)."""

from __future__ import annotations

import argparse
import random

import pytest

from gpurepro.analyze import timing
from gpurepro.analyze.claims import evidence, sentence
from gpurepro.case.model import Claim


def _trials(arm: str, seconds: float, n: int, noise: float, rng: random.Random) -> list[dict]:
    """Timed trials of one arm: each with 20 per-launch values around its own level (a
    trial's level varies by ``noise``, as separate processes' clocks and placement do)."""
    out = []
    for _ in range(n):
        level = seconds * (1 + rng.gauss(0, noise))
        out.append({"arm": arm, "outcome": "survived", "exposure": 200,
                    "observations": {"timing": {"unit": "s", "loops": 10, "warmups": 3,
                                                "values": [level * (1 + rng.gauss(0, 0.002))
                                                           for _ in range(20)]}}})
    return out


def _decide(kind: str, margin: float, arm_s: float, ref_s: float, n: int = 8, seed: int = 1):
    rng = random.Random(seed)
    records = _trials("a", arm_s, n, 0.01, rng) + _trials("ref", ref_s, n, 0.01, rng)
    return evidence(Claim("c", arm="a", reference="ref", kind=kind, margin=margin), "ref",
                    records, ("crashed",), 1.0)


def test_a_slowdown_beyond_the_margin_is_supported_and_one_within_it_is_not():
    slow = _decide("slower", 0.05, 1.15e-3, 1.0e-3)
    assert slow.direction == "supported" and slow.p_supported < 1e-4
    assert slow.numbers["ratio"] == pytest.approx(1.15, rel=0.02)
    assert slow.numbers["ratio_ci"][0] < 1.15 < slow.numbers["ratio_ci"][1]
    barely = _decide("slower", 0.05, 1.01e-3, 1.0e-3)
    assert barely.direction == "contradicted" and barely.p_supported > 0.5


def test_same_within_the_margin_and_faster():
    same = _decide("same", 0.05, 1.0e-3, 1.0e-3)
    assert same.direction == "supported" and same.p_supported < 1e-3
    apart = _decide("same", 0.05, 1.3e-3, 1.0e-3)
    assert apart.direction == "contradicted" and apart.p_contradicted < 1e-3
    fast = _decide("faster", 0.05, 0.8e-3, 1.0e-3)
    assert fast.direction == "supported" and fast.p_supported < 1e-4


def test_untimed_or_failed_trials_give_no_evidence():
    records = [{"arm": "a", "outcome": "crashed", "observations": {}},
               {"arm": "ref", "outcome": "survived", "observations": {}}]
    ev = evidence(Claim("c", arm="a", reference="ref", kind="slower", margin=0.05), "ref",
                  records, ("crashed",), 1.0)
    assert (ev.p_supported, ev.p_contradicted) == (1.0, 1.0)
    assert "two timed trials" in ev.test
    assert timing.trial_time({"observations": {"timing": {"values": [float("inf"), -1]}}}) is None


def test_the_sentence_names_the_times_and_the_ratio():
    claim = Claim("c", arm="a", reference="ref", kind="slower", margin=0.05)
    ev = _decide("slower", 0.05, 1.15e-3, 1.0e-3)
    record = {"decision": "supported", "p_value": ev.p_value, "test": ev.test, "look": 1,
              "numbers": ev.numbers}
    text = sentence(claim, "ref", record, 1.0, "launches", 0.05)
    assert text.startswith("a is slower than ref by more than 5%: ")
    assert "ms against" in text and "ratio 1.1" in text and "8 and 8 trials" in text


def test_a_timed_claim_margin_must_be_a_fraction():
    import dataclasses
    from pathlib import Path

    from gpurepro.case.load import ManifestError, load_case, validate

    root = Path(__file__).resolve().parents[2]
    fake = load_case(root / "tests" / "fixtures" / "fake_case" / "manifest.py", root)
    good = dataclasses.replace(fake, claims=[Claim("ok-slower", arm="ok", kind="slower",
                                                   margin=0.05)])
    validate(good, "manifest.py")
    bad = dataclasses.replace(good, claims=[Claim("ok-slower", arm="ok", kind="slower",
                                                  margin=1.05)])
    with pytest.raises(ManifestError, match="fraction"):
        validate(bad, "manifest.py")


def test_a_case_with_timed_claims_runs_fixed_size_and_refuses_decisive():
    from gpurepro.cli.args import sequential_design
    from gpurepro.errors import UsageError

    class Timed:
        name = "timed"
        claims = (Claim("b-slower", arm="b", kind="slower", margin=0.05),)

        class defaults:
            trials_per_arm = 8

    args = argparse.Namespace(decisive=False, fixed=False, trials=None, until_decided=False,
                              decisive_by_default=True, look_every=None, max_trials=None,
                              alpha=None)
    design, trials = sequential_design(Timed, args)
    assert (design.to_json(), trials) == (None, 8)
    args.decisive = True
    with pytest.raises(UsageError, match="on times"):
        sequential_design(Timed, args)

