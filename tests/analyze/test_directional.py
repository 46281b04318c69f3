"""A claim's level split between its two sides (the design's ``supported_share``): the stated
direction tested one-sided at its share, the opposite at the rest, so a claim is falsely decided
with probability at most its level, whichever side is false; an even split is the two-sided p
every journal that names no share ran."""

from __future__ import annotations

import pytest
from scipy.stats import binom

from gpurepro.analyze.claims import Decider, DecisiveDesign, Design, Evidence, evidence
from gpurepro.case import Claim

SHARE = Claim("x-fails", arm="x", kind="outcome", outcome="crashed", share=0.5)
LOWER = Claim("ok-lower", arm="ok", kind="lower")


def _outcome_records(k: int, n: int) -> list[dict]:
    return [{"arm": "x", "outcome": "crashed" if i < k else "survived", "detail": "",
             "exposure": 1.0} for i in range(n)]


def test_an_even_split_is_the_two_sided_p_and_a_directional_one_weighs_each_side():
    ev = Evidence("t", 0.004, 0.3)
    assert ev.p_value == 2 * 0.004 and ev.direction == "supported"
    ev.weight = 0.9
    assert ev.p_value == pytest.approx(0.004 / 0.9) and ev.direction == "supported"
    opposite = Evidence("t", 0.3, 0.004, weight=0.9)
    assert opposite.p_value == pytest.approx(0.04) and opposite.direction == "contradicted"
    # Each side over its share: the opposite's smaller p still loses to the stated side's.
    close = Evidence("t", 0.02, 0.003, weight=0.9)
    assert close.direction == "supported" and close.p_value == pytest.approx(0.02 / 0.9)


@pytest.mark.parametrize("level", [0.05, 0.01, 0.002])
def test_a_claim_at_its_share_is_falsely_decided_at_most_at_its_level(level):
    """Exactly, not by simulation: an outcome claim whose arm ends as it says in exactly half
    of its trials (both sides false), every n from 1 to 40: the chance that the claim's p-value
    is at most the level never exceeds it with the directional split, and does for a split that
    gives both sides the whole level."""
    worst_split = worst_unsplit = 0.0
    for n in range(1, 41):
        split = unsplit = 0.0
        for k in range(n + 1):
            ev = evidence(SHARE, "", _outcome_records(k, n), ("crashed",), 1.0)
            chance = float(binom.pmf(k, n, 0.5))
            ev.weight = 0.9
            split += chance * (ev.p_value <= level)
            unsplit += chance * (min(ev.p_supported, ev.p_contradicted) <= level)
        worst_split, worst_unsplit = max(worst_split, split), max(worst_unsplit, unsplit)
    assert worst_split <= level
    assert worst_unsplit > level


def test_the_decider_supports_at_the_stated_sides_share_and_contradicts_at_the_rest():
    # ok ran 6 units of exposure without failing, crash 4 and failed 6 times: p_supported =
    # (4/10)^6 = 0.0041; two-sided that is 0.0082, above a look at 0.005; at 0.9 it is 0.00455.
    records = ([{"arm": "crash", "outcome": "crashed", "detail": "SIGSEGV", "exposure": 4 / 6}] * 6
               + [{"arm": "ok", "outcome": "survived", "detail": "", "exposure": 6.0}])

    def decide(share: float, claim: Claim = LOWER) -> dict:
        design = DecisiveDesign(alpha=0.01, max_trials=10, first_look=1, total=20,
                                supported_share=share)
        d = Decider([claim], "crash", design, ("crashed",), 1e6, ["crash", "ok"])
        d.look(records)
        return d.decisions.get(claim.name, {"decision": "not_decided"})

    assert decide(0.5)["decision"] == "not_decided"
    got = decide(0.9)
    assert got["decision"] == "supported" and got["p_value"] == pytest.approx(0.4 ** 6 / 0.9)
    # The opposite claim (ok higher) is contradicted by the same numbers only at a tenth of the
    # level: 0.0041 / 0.1 is above 0.005.
    higher = Claim("ok-higher", arm="ok", kind="higher")
    assert decide(0.9, higher)["decision"] == "not_decided"
    assert decide(0.5, higher)["decision"] == "not_decided"


def test_the_share_is_journaled_only_where_it_is_not_the_even_split():
    assert "supported_share" not in Design(alpha=0.05, step=5, max_trials=25).describe()
    d = Design(alpha=0.05, step=5, max_trials=25, supported_share=0.9)
    assert d.describe()["supported_share"] == 0.9
    assert Design.from_description(d.describe()) == d
    decisive = DecisiveDesign(alpha=0.05, max_trials=25, first_look=12, total=200,
                              spending="halving", supported_share=0.9)
    assert Design.from_description(decisive.describe()) == decisive
