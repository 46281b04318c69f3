"""`concentrated` claims: failures inside a stratum of each trial's own exposure, against the
share of exposure spent there (gpurepro.claims), and the tile case's power-of-two strata."""

from __future__ import annotations

import math

import pytest

from gpurepro.analyze.claims import Decider, Design, evidence
from gpurepro.case import Claim, load_case
from tests.conftest import ROOT

CLAIM = Claim("c", arm="a", kind="concentrated", stratum="s")


def _records(inside: list[bool], exposure: float = 100.0) -> list[dict]:
    return [{"arm": "a", "outcome": "crashed", "exposure": exposure, "inside": x} for x in inside]


# Each trial spends 10% of its exposure in the stratum.
STRATA = {"s": lambda r, f: (r["exposure"] * 0.1, bool(r.get("inside")))}


def test_failures_inside_a_small_stratum_are_supported():
    ev = evidence(CLAIM, "", _records([True] * 6 + [False] * 2), ("crashed",), 1.0, STRATA, {})
    assert ev.numbers["count"] == 6 and ev.numbers["n"] == 8
    assert ev.numbers["share"] == pytest.approx(0.1)
    assert ev.direction == "supported" and ev.p_value < 1e-3


def test_failures_at_the_exposure_share_are_not_evidence():
    ev = evidence(CLAIM, "", _records([True] + [False] * 9), ("crashed",), 1.0, STRATA, {})
    assert ev.p_value > 0.5


def test_failures_avoiding_a_large_stratum_are_contradicted():
    big = {"s": lambda r, f: (r["exposure"] * 0.9, bool(r.get("inside")))}
    ev = evidence(CLAIM, "", _records([False] * 8), ("crashed",), 1.0, big, {})
    assert ev.direction == "contradicted" and ev.p_value < 1e-5


def test_the_decider_passes_each_arms_factors_to_the_stratum():
    seen = []

    def stratum(r, factors):
        seen.append(factors["k"])
        return 1.0, True

    d = Decider([CLAIM], "b", Design(), ("crashed",), 1.0, ["a", "b"], {"s": stratum},
                {"a": {"k": 7}})
    assert d.reference(CLAIM) is None and d.arms_needed() == {"a"}
    d.final(_records([True] * 5))
    assert set(seen) == {7} and d.decisions["c"]["decision"] == "supported"


def test_a_claim_naming_an_unknown_stratum_is_a_manifest_error():
    import dataclasses

    from gpurepro.case import validate
    from gpurepro.errors import ManifestError

    case = load_case(ROOT / "cases" / "tile_unload_race" / "manifest.py")
    claims = [dataclasses.replace(c, stratum="nowhere") if c.kind == "concentrated" else c
              for c in case.claims]
    with pytest.raises(ManifestError, match="nowhere"):
        validate(dataclasses.replace(case, claims=claims), case.path or "manifest.py")


# ---------------------------------------------------------------- the tile case's strata

@pytest.fixture(scope="module")
def strata():
    from gpurepro.case import load_sibling

    return load_sibling(str(ROOT / "cases" / "tile_unload_race" / "manifest.py"), "strata")


def _brute(start: float, slope: float, cycles: int, strata) -> int:
    return sum(strata.near_power_of_two(start + slope * c) for c in range(cycles))


@pytest.mark.parametrize("start, slope, cycles", [(2000, 0.25, 30_000), (0, 0.25, 60_000),
                                                  (0, 1.0, 40_000), (9000, 0.25, 5_000)])
def test_cycles_near_a_power_of_two_follow_the_line(strata, start, slope, cycles):
    assert strata.cycles_near(start, slope, cycles) == pytest.approx(
        _brute(start, slope, cycles, strata), abs=4 * (1 + math.log2(cycles)))


def test_a_held_count_is_inside_for_the_whole_trial_or_never(strata):
    assert strata.cycles_near(4096, 0.0, 500) == 500
    assert strata.cycles_near(3000, 0.0, 500) == 0


def test_grow_trial_crashing_at_4096_live_modules_is_inside(strata):
    # K = 2000 held; the workers loaded 8384 and unloaded 6288: 4096 live at the crash, and
    # 10384 ever loaded (not near a power of two).
    rec = {"counters": {"loads": 8384, "launches": 8383, "unloads": 6288}}
    exposed, inside = strata.live_near_power_of_two(rec, {"preload": 2000, "prime": 0})
    assert inside and 0 < exposed < 8383 * 0.1
    assert strata.loads_near_power_of_two(rec, {"preload": 2000, "prime": 0})[1] is False
    # Without counters (the reporter's program) there is no trajectory: nothing inside.
    assert strata.live_near_power_of_two({"counters": {}}, {"preload": 0}) == (0.0, False)
