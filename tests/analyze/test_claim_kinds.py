"""The claim kinds' registry: every kind a manifest may declare is one object, the case's
lists of kinds agree with it, and the harness decides and words a claim through its kind's
object, so a new kind is one module plus its registration."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from gpurepro.analyze import claim_kinds
from gpurepro.analyze.claim_kinds.base import Evidence, Trials
from gpurepro.analyze.claims import Decider, Design, evidence, sentence
from gpurepro.case.model import CLAIM_KINDS, SINGLE_ARM_KINDS, TIMED_KINDS, Claim


def test_every_declared_kind_is_one_registered_object():
    assert sorted(claim_kinds.KINDS) == sorted(CLAIM_KINDS)
    assert sorted(n for n, k in claim_kinds.KINDS.items() if k.single_arm) == sorted(SINGLE_ARM_KINDS)
    assert sorted(n for n, k in claim_kinds.KINDS.items() if k.timed) == sorted(TIMED_KINDS)
    # Rate comparisons share one object; every other kind is its own.
    assert len({id(k) for k in claim_kinds.KINDS.values()}) == 4
    assert claim_kinds.KINDS["lower"] is claim_kinds.KINDS["equivalent"]


def test_the_reference_of_a_single_arm_kind_is_none():
    assert claim_kinds.reference_of(Claim("c", arm="a", kind="outcome", outcome="crashed"), "b") is None
    assert claim_kinds.reference_of(Claim("c", arm="a", kind="lower"), "b") == "b"
    assert claim_kinds.reference_of(Claim("c", arm="a", kind="slower", reference="r", margin=0.1),
                                    "b") == "r"


@dataclass
class _Ratio:
    """A kind no module of the harness knows: the arm's failures outnumber its reference's."""

    names: tuple[str, ...] = ("outnumbers",)
    single_arm: bool = False
    timed: bool = False
    allocates: bool = True
    constant_hazard_only: bool = False

    def fields(self, claim: Claim) -> dict[str, Any]:
        return {}

    def evidence(self, claim: Claim, reference: str, trials: Trials) -> Evidence:
        def count(arm: str) -> int:
            return sum(1 for r in trials.records
                       if r["arm"] == arm and r["outcome"] in trials.failure_outcomes)
        mine, theirs = count(claim.arm), count(reference)
        return Evidence("count", 0.001 if mine > theirs else 1.0, 0.001 if mine < theirs else 1.0,
                        {"count": mine, "n": theirs})

    def on_trials(self, claim: Claim) -> bool:
        return False

    def on_exposure(self, claim: Claim) -> bool:
        return False

    def settle(self, *args: Any) -> None:
        return None

    def truth(self, *args: Any) -> None:
        return None

    def null_target(self, claim: Claim, baseline: str) -> None:
        return None

    def margin_edge(self, claim: Claim) -> None:
        return None

    def values(self, claim: Claim, numbers: Any, per: float, unit: str) -> dict[str, Any]:
        return {"count": numbers["count"], "n": numbers["n"]}

    def needed(self, *args: Any) -> None:
        return None

    def wording(self, claim: Claim, decision: str) -> str:
        return "{arm} failed {count} times against {reference}'s {n}."


def test_a_new_kind_is_decided_and_worded_by_its_own_object(monkeypatch):
    monkeypatch.setitem(claim_kinds.KINDS, "outnumbers", _Ratio())
    claim = Claim("more", arm="x", kind="outnumbers")
    records = ([{"arm": "x", "outcome": "crashed", "exposure": 1.0}] * 3
               + [{"arm": "base", "outcome": "survived", "exposure": 1.0}] * 3)
    ev = evidence(claim, "base", records, ("crashed",), 1.0)
    assert (ev.test, ev.direction, ev.numbers) == ("count", "supported", {"count": 3, "n": 0})
    decider = Decider([claim], "base", Design(alpha=0.05), ("crashed",), 1.0, ["x", "base"])
    decider.final(records)
    rec = decider.decisions["more"]
    assert rec["decision"] == "supported"
    text = sentence(claim, "base", rec, 1.0, "cycles", 0.05)
    assert text.startswith("x failed 3 times against base's 0.")


def test_an_unregistered_kind_is_refused_by_name():
    with pytest.raises(KeyError, match="nothing-like-it"):
        claim_kinds.kind_of(Claim("c", arm="a", kind="nothing-like-it"))
