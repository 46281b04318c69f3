"""Timed claims of a run that journaled its timed test (options.timing; gpurepro.analyze.timing):
paired by block, so that a drift from block to block cannot decide a claim, and its spread
floored at the timer's resolution, so that trials that agree to the last digit give a finite p,
not p = 0. A journal without options.timing is decided by Welch's test as before."""

from __future__ import annotations

import math
import random

import pytest

from gpurepro.analyze import timing
from gpurepro.analyze.claims import Decider, Design, Wording, decider_for, evidence, sentence
from gpurepro.case import Claim, load_case
from gpurepro.model.design import EVENT_RESOLUTION_S, TIMED_TEST, DesignSpec
from gpurepro.model.journal import RunHeader
from gpurepro.model.plan import make_plan
from tests.conftest import ROOT

PAIRED = timing.TimedTest()
SLOWER = Claim("c", arm="a", reference="ref", kind="slower", margin=0.05)
SAME = Claim("c", arm="a", reference="ref", kind="same", margin=0.02)


def _trial(arm: str, seconds: float, block: int, loops: int = 20, repeats: int = 20) -> dict:
    return {"arm": arm, "outcome": "survived", "exposure": 500, "rep": block,
            "observations": {"timing": {"unit": "s", "loops": loops, "warmups": 5,
                                        "values": [seconds] * repeats}}}


def _identical(ratio: float, blocks: int = 3, loops: int = 20, ref_s: float = 263e-6) -> list[dict]:
    return [t for b in range(blocks)
            for t in (_trial("a", ref_s * ratio, b, loops), _trial("ref", ref_s, b, loops))]


@pytest.mark.filterwarnings("ignore:Precision loss occurred")  # Welch's on identical times
def test_identical_times_give_a_finite_p_and_an_interval_of_finite_width():
    records = _identical(1.09)
    old = evidence(SLOWER, "ref", records, ("crashed",), 1.0)  # a journal without options.timing
    assert old.p_supported == 0.0  # what the issue found: p = 0 from three identical trials
    new = evidence(SLOWER, "ref", records, ("crashed",), 1.0, timed=PAIRED)
    assert 0 < new.p_supported < 1e-5 and new.direction == "supported"
    lo, hi = new.numbers["ratio_ci"]
    assert lo < 1.09 < hi and hi - lo > 0
    # The floor: 0.5 us over loops, over sqrt(6), relative to each trial's time; a block's
    # difference the root of the sum of its two trials' squares.
    floor = math.hypot(*(EVENT_RESOLUTION_S / (math.sqrt(6) * 20) / t
                         for t in (263e-6 * 1.09, 263e-6)))
    assert new.numbers["sd"] == 0 and new.numbers["sd_floor"] == pytest.approx(floor)
    assert new.numbers["blocks"] == 3
    edge = math.log(1.09) - math.log1p(0.05)
    from scipy import stats
    assert new.p_supported == pytest.approx(stats.t.sf(edge / (floor / math.sqrt(3)), 2))
    # A finer timer reading (more launches per value) floors it lower: a smaller p.
    finer = evidence(SLOWER, "ref", _identical(1.09, loops=200), ("crashed",), 1.0, timed=PAIRED)
    assert 0 < finer.p_supported < new.p_supported
    # The same within 2 %: finite too, in the equivalence's two one-sided tests.
    same = evidence(SAME, "ref", _identical(1.0), ("crashed",), 1.0, timed=PAIRED)
    assert same.direction == "supported" and 0 < same.p_supported < 1e-4


def test_a_record_without_loops_is_floored_as_one_launch_per_value():
    record = _trial("a", 1e-4, 0)
    del record["observations"]["timing"]["loops"]
    assert timing.log_floor(record, 1e-4, EVENT_RESOLUTION_S) == pytest.approx(
        EVENT_RESOLUTION_S / math.sqrt(6) / 1e-4)


def _drifting(rng: random.Random, blocks: int, drift: float) -> list[dict]:
    """Two arms of the same cubin (no true difference) in randomized blocks; the GPU's speed
    drifts by ``drift`` from one block to the next and a little within a block, and each
    trial has 0.2 % noise of its own."""
    out = []
    for b in range(blocks):
        order = ["a", "ref"]
        rng.shuffle(order)
        for position, arm in enumerate(order):
            level = 263e-6 * (1 + drift) ** b * (1 + 0.002 * position) * (1 + rng.gauss(0, 0.002))
            out.append(_trial(arm, level, b))
    return out


def test_a_drift_from_block_to_block_cannot_decide_a_claim():
    """With a 5 % drift per block (a GPU warming up over the run) and no true difference, the
    paired test never finds the arm slower or faster than its reference beyond a 5 % margin,
    and it still finds the two the same within 2 %: the blocks' differences do not see the
    drift. Welch's test on the arms' trial times sees it as spread, and cannot tell them the
    same."""
    rng = random.Random(3)
    alpha = 0.05
    runs = [_drifting(rng, 8, 0.05) for _ in range(200)]
    slower = [evidence(SLOWER, "ref", r, ("crashed",), 1.0, timed=PAIRED) for r in runs]
    faster = [evidence(Claim("c", arm="a", reference="ref", kind="faster", margin=0.05), "ref",
                       r, ("crashed",), 1.0, timed=PAIRED) for r in runs]
    assert all(e.p_value > alpha or e.direction == "contradicted" for e in slower + faster)
    same = [evidence(SAME, "ref", r, ("crashed",), 1.0, timed=PAIRED) for r in runs]
    assert sum(e.p_value <= alpha and e.direction == "supported" for e in same) >= 190
    welch = [evidence(SAME, "ref", r, ("crashed",), 1.0) for r in runs]
    assert sum(e.p_value <= alpha and e.direction == "supported" for e in welch) <= 20


def test_blocks_hold_every_timed_arm_once_and_a_trial_knows_its_block():
    case = load_case("fa3_wgmma_wait", ROOT)
    plan = make_plan(case.name, case.resolved_arms(), 12, 978271730)
    arms = len(case.resolved_arms())
    for b in range(12):
        block = plan.order[b * arms:(b + 1) * arms]
        assert sorted(t.arm for t in block) == sorted(case.resolved_arms())
        assert {t.rep for t in block} == {b}
    timed_arms = {x for c in case.claims if c.kind in ("slower", "faster", "same")
                  for x in (c.arm, c.reference)}
    orders = {tuple(t.arm for t in plan.order[b * arms:(b + 1) * arms] if t.arm in timed_arms)
              for b in range(12)}
    assert len(orders) > 1  # in random order, block by block


def test_a_new_run_journals_its_timed_test_and_an_old_journal_keeps_welch():
    import dataclasses

    from gpurepro.case import TrialBudget
    from gpurepro.run.execute import RunOptions
    from gpurepro.run.session import journal_header

    case = load_case("fa3_wgmma_wait", ROOT)
    plan = make_plan(case.name, case.resolved_arms(), 2, 1)
    opts = RunOptions(budget=TrialBudget(duration_s=30.0, timeout_s=120.0, max_exposure=0),
                      run_id="0" * 32)
    header = journal_header(case, ROOT, plan, opts, DesignSpec.fixed(), {}, {}, {"toolchain": {}, "artifacts": {}})
    assert header["options"]["timing"] == TIMED_TEST and header["options"]["analysis"] == 2
    assert decider_for(case, RunHeader.from_json(header)).timed == PAIRED
    old = {**header, "options": {k: v for k, v in header["options"].items()
                                 if k not in ("timing", "analysis")}}
    assert decider_for(case, RunHeader.from_json(old)).timed is None
    untimed = journal_header(dataclasses.replace(case, claims=[c for c in case.claims
                                                              if c.kind == "outcome"]),
                             ROOT, plan, opts, DesignSpec.fixed(), {}, {}, {"toolchain": {}, "artifacts": {}})
    assert "timing" not in untimed["options"]


def test_the_sentence_of_a_paired_claim_gives_its_interval():
    ev = evidence(SLOWER, "ref", _identical(1.09, blocks=4), ("crashed",), 1.0, timed=PAIRED)
    record = {"decision": ev.direction, "p_value": ev.p_value, "test": ev.test, "look": 1,
              "numbers": ev.numbers}
    text = sentence(SLOWER, "ref", record, 1.0, "launches", 0.05)
    assert "ratio 1.090, 95% CI 1.090–1.090" in text and "paired t-test" in text
    labelled = sentence(SLOWER, "ref", record, 1.0, "launches", 0.05,
                        wording=Wording(one_trial=True, stopping_look=True))
    assert "95% CI 1.090–1.090, not adjusted for the stopping look" in labelled


def test_a_decider_with_the_timed_test_decides_by_it():
    d = Decider([SLOWER], "ref", Design(alpha=0.05), ("crashed",), 1.0, ["a", "ref"],
                timed=PAIRED)
    records = _identical(1.09)
    d.final(records)
    assert d.decisions["c"]["decision"] == "supported" and d.decisions["c"]["p_value"] > 0
    assert d.decisions["c"]["numbers"]["blocks"] == 3
