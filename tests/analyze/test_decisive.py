"""The decisive design: alpha spent over its potential looks by a rule fixed before the run,
trials allocated where they bring a decision nearest, survivors capped at the exposure that
decides, the known-rates plan it is measured against, and the main job's default."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import pytest

from gpurepro.analyze import simulate as sim
from gpurepro.analyze.allocate import ArmPrior, choose, survivor_cap
from gpurepro.analyze.claims import Decider, DecisiveDesign, Design
from gpurepro.analyze.known_rates import plan_for
from gpurepro.analyze.verdict import plan_sentence
from gpurepro.case import Claim, load_case
from gpurepro.cli.args import sequential_design
from gpurepro.cli.parser import parser
from gpurepro.model.design import DesignSpec
from gpurepro.model.plan import PlannedTrial
from gpurepro.model.result import ClaimDecision
from gpurepro.run.journal import read
from tests import pace
from tests.conftest import ROOT

FAKE = ROOT / "tests" / "fixtures" / "fake_case" / "manifest.py"
LOWER = Claim("ok-lower", arm="ok", kind="lower")  # ok against the baseline, crash


def _prior(rate: float) -> ArmPrior:
    return ArmPrior((("crashed", "SIGSEGV", rate),) if rate else (), budget=10_000.0, seconds=1.0,
                    speed=10_000.0, overhead_s=0.1)


def _rec(arm: str, failed: bool, exposure: float) -> dict:
    return {"arm": arm, "outcome": "crashed" if failed else "survived",
            "detail": "SIGSEGV" if failed else "budget used up", "exposure": exposure}


def test_the_looks_spend_at_most_alpha_together():
    d = DecisiveDesign(alpha=0.05, max_trials=10, first_look=12, total=40, first_share=0.5)
    assert d.schedule == [12, 18, 27, 40]
    spent = sum(d.level_at(i, 0) for i in range(d.looks))
    assert spent == pytest.approx(0.05)
    assert d.level_at(0, 0) == pytest.approx(0.025) and d.level_at(1, 0) == pytest.approx(0.025 / 3)
    assert Design.from_description(d.describe()) == d


@pytest.mark.parametrize("total", [12, 18, 27, 40, 200])
def test_halving_spends_at_most_alpha_and_more_than_even_at_the_second_look(total):
    even = DecisiveDesign(alpha=0.05, max_trials=10, first_look=12, total=total)
    halving = DecisiveDesign(alpha=0.05, max_trials=10, first_look=12, total=total,
                             spending="halving")
    assert halving.schedule == even.schedule
    alphas = halving.alphas
    assert sum(alphas) == pytest.approx(0.05) and sum(alphas) <= 0.05 + 1e-15
    assert alphas[0] == even.alphas[0]  # the first look's share is the same
    later = alphas[1:]
    if len(later) >= 2:
        # Each later look half of the one before, the last what is left (equal to the one
        # before it); the second gets more than an even split's share (as much, with two).
        assert all(b == pytest.approx(a / 2) for a, b in zip(later[:-2], later[1:-1], strict=True))
        assert later[-1] == pytest.approx(later[-2])
        assert later[0] > even.alphas[1] if len(later) > 2 else later == even.alphas[1:]
    elif later:
        assert later == [pytest.approx(0.025)]
    else:
        assert alphas == [pytest.approx(0.05)]
    described = halving.describe()
    assert described["spending"] == "halving" and described["alpha_at_looks"] == alphas
    assert Design.from_description(described) == halving


def test_a_journal_that_names_no_spending_keeps_the_even_split_and_its_description():
    d = DecisiveDesign(alpha=0.05, max_trials=25, first_look=12, total=200)
    described = d.describe()
    assert not {"spending", "alpha_at_looks", "supported_share"} & set(described)
    again = Design.from_description(described)
    assert again.spending == "even" and again.supported_share == 0.5
    # The committed documents' designs, read back from what they journaled, describe themselves
    # exactly as they did.
    for path in sorted((ROOT / "results").glob("*/*.json")):
        stopping = ((json.loads(path.read_text()).get("plan") or {}).get("options") or {}).get("stopping")
        if not stopping or stopping.get("design") != "decisive":
            continue
        if not DesignSpec.from_json(stopping).planned:  # a GPU that could not run the case:
            continue  # the design as asked for, no looks to describe
        again = Design.from_description(stopping).describe()
        assert {k: stopping[k] for k in again} == again, path


def test_a_look_is_due_at_each_scheduled_trial_count():
    design = DecisiveDesign(alpha=0.05, max_trials=10, first_look=3, total=20)
    decider = Decider([LOWER], "crash", design, ("crashed",), 1e6, ["crash", "ok"])
    records = [_rec("crash", True, 100), _rec("ok", False, 100)]
    assert not decider.look_due(records)  # 2 valid trials, first look at 3
    records.append(_rec("crash", True, 200))
    assert decider.look_due(records)
    decider.look(records)  # too little of ok to decide anything yet
    assert decider.last_look_at == 3 and not decider.decisions and not decider.look_due(records)
    records.append(_rec("ok", False, 100))
    assert not decider.look_due(records)  # the next look is at 5
    records.append(_rec("ok", False, 100))
    assert decider.look_due(records)
    restored = Decider([LOWER], "crash", design, ("crashed",), 1e6, ["crash", "ok"])
    restored.restore(decider.to_json())
    assert restored.last_look_at == 3  # a resumed run looks where the first would have


def test_the_next_trial_goes_to_the_arm_whose_trial_brings_the_decision_nearest():
    # ok has run without a failure; the baseline has one crash: a further baseline crash moves
    # the claim more, per second, than another ok survivor does, so the baseline goes next.
    # The baseline fails fast (10 units of exposure on average, a tenth of a second); ok's
    # trial takes a second for its whole budget.
    design = DecisiveDesign(alpha=0.005, max_trials=10, first_look=1, total=20)
    decider = Decider([LOWER], "crash", design, ("crashed",), 1e6, ["crash", "ok"])
    records = [_rec("crash", True, 50), _rec("ok", False, 300), _rec("ok", False, 300)]
    candidates = [PlannedTrial(5, "ok", 2), PlannedTrial(6, "crash", 1)]
    priors = {"crash": _prior(0.1), "ok": _prior(0.0)}
    picked, _ = choose(decider, records, candidates, priors, _prior(0.1))
    assert picked.arm == "crash"
    # Once the baseline has crashed often, ok's exposure is what the claim lacks.
    records += [_rec("crash", True, 10)] * 6
    picked, _ = choose(decider, records, candidates, priors, _prior(0.1))
    assert picked.arm == "ok"


def test_a_survivor_runs_only_to_the_exposure_that_decides_its_claims():
    design = DecisiveDesign(alpha=0.05, max_trials=10, first_look=1, total=20)
    decider = Decider([LOWER], "crash", design, ("crashed",), 1e6, ["crash", "ok"])
    records = [_rec("crash", True, 100.0) for _ in range(8)] + [_rec("ok", False, 100.0)]
    threshold = decider.next_level(records)
    cap = survivor_cap(decider, records, "ok", _prior(0.0), [LOWER], threshold)
    assert cap is not None and 0 < cap < 10_000
    # With that exposure the claim is decided; with much less it is not.
    ev = decider.evidence(LOWER, [*records, _rec("ok", False, cap)])
    assert ev.p_value <= threshold
    assert decider.evidence(LOWER, [*records, _rec("ok", False, cap / 4)]).p_value > threshold


@pytest.mark.parametrize("claim", [
    Claim("ok-survives", arm="ok", kind="outcome", outcome="survived", share=0.5),
    Claim("ok-lower-per-trial", arm="ok", kind="lower", unit="trial"),
])
def test_a_survivor_of_an_arm_whose_claim_counts_whole_trials_is_never_capped(claim):
    """A claim on shares of trials (an outcome, or unit="trial") is decided by how whole trials
    ended, whatever their exposure: a survivor cut short is not such a trial, and the cap would
    shrink to nothing (ptxas_abs_clamp's survivors ran one launch of three)."""
    design = DecisiveDesign(alpha=0.05, max_trials=20, first_look=1, total=40)
    decider = Decider([claim], "crash", design, ("crashed",), 1e6, ["crash", "ok"])
    records = [_rec("crash", True, 100.0) for _ in range(12)] + [_rec("ok", False, 100.0)] * 11
    threshold = decider.next_level(records)
    # One more survivor decides it, at any exposure.
    assert decider.evidence(claim, [*records, _rec("ok", False, 1e-3)]).p_value <= threshold
    assert survivor_cap(decider, records, "ok", _prior(0.0), [claim], threshold) is None
    # Beside a claim on rates the arm's survivors are still not capped.
    assert survivor_cap(decider, records, "ok", _prior(0.0), [LOWER, claim], threshold) is None


def test_the_known_rates_plan_gives_the_reference_its_failures_and_the_quiet_arm_its_exposure():
    case = load_case(FAKE, ROOT)
    priors = {"crash": _prior(1e-3), "ok": _prior(0.0)}
    known = plan_for(case, [LOWER], priors, {}, 0.05, 20)
    assert known["reached"] and known["trials"]["crash"] >= 2 and known["trials"]["ok"] >= 1
    assert known["seconds"] == pytest.approx(sum(n * priors[a].trial_seconds()
                                                 for a, n in known["trials"].items()), abs=1e-3)
    assert "not a lower bound" in known["method"]


def _plan(reached: bool, ratio: float | None, chance: float) -> dict:
    return {"seconds": 80.0, "run_seconds": 160.0, "reached": reached, "ratio": ratio,
            "trials": {"crash": 3, "ok": 2},
            "chance": {"decides_every_claim": chance, "target": 0.9, "runs": 200, "seed": 0},
            "expected_outcome": {"seconds": 40.0, "trials": {"crash": 2, "ok": 1}, "reached": True}}


def test_the_run_is_set_against_the_known_rates_design_only_where_that_design_decides():
    claims = [ClaimDecision.of({"name": "ok-lower", "decision": "supported"})]
    reached = plan_sentence(_plan(True, 2.0, 0.93), claims)
    assert "the run took 2.00x that" in reached and "in 93% of 200 simulated runs with 5 trials" in reached
    assert "not a proven lower bound" in reached and "floor" not in reached
    unreached = plan_sentence(_plan(False, None, 0.6), claims)
    assert "x that" not in unreached and "in 60% of 200 simulated runs at most" in unreached
    assert "short of 90%" in unreached and "is not set against it" in unreached


def test_a_document_from_before_the_design_that_decides_keeps_its_sentence():
    """A known-rates plan recorded as the expected-outcome allocation alone (no
    expected_outcome): the sentence it was recorded with."""
    old = {"seconds": 80.0, "run_seconds": 160.0, "reached": True, "ratio": 2.0,
           "chance": {"decides_every_claim": 0.15, "runs": 200, "seed": 0}}
    text = plan_sentence(old, [ClaimDecision.of({"name": "ok-lower", "decision": "supported"})])
    assert "(the run took 2.00x that)" in text and "in 15% of 200 simulated runs" in text


def test_the_known_rates_design_is_the_fewest_trials_that_decide_in_most_runs():
    """The design that decides: its chance at least DECIDES, and one trial fewer in the same
    proportions (the allocation before it) below it; with too few trials allowed, none is
    reached and no ratio is given."""
    from gpurepro.analyze import known_rates as kr

    case = load_case(FAKE, ROOT)
    models = sim.Models("exposure", {
        "crash": sim.ArmModel((sim.Cause("crashed", "SIGSEGV", 1e-3),), 2000.0, 2000.0, 1.0, 0.0),
        "ok": sim.ArmModel((), 2000.0, 2000.0, 1.0, 0.0)}, [], {})
    priors = {a: ArmPrior.of_model(m) for a, m in models.arms.items()}
    base = plan_for(case, [LOWER], priors, {}, 0.05, 20)["trials"]
    d = kr.design_that_decides(case, [LOWER], models, priors, base, 0.05, 20)
    assert d["reached"] and d["chance"] >= kr.DECIDES
    candidates = kr.allocations(base, 20)
    at = candidates.index(d["trials"])
    assert at == 0 or kr.chance_of_plan(case, [LOWER], models, candidates[at - 1], 0.05) < kr.DECIDES
    assert d["seconds"] == pytest.approx(sum(n * priors[a].trial_seconds()
                                             for a, n in d["trials"].items()), abs=1e-3)
    few = kr.design_that_decides(case, [LOWER], models, priors, {"crash": 1, "ok": 1}, 0.05, 2)
    assert not few["reached"] and few["trials"] == {"crash": 2, "ok": 2}


def test_allocations_keep_the_base_and_its_proportions():
    from gpurepro.analyze.known_rates import allocations

    a = allocations({"x": 4, "y": 2}, 6)
    totals = [sum(c.values()) for c in a]
    assert totals == list(range(2, 13)) and {"x": 4, "y": 2} in a
    assert all(c["x"] >= c["y"] for c in a) and a[-1] == {"x": 6, "y": 6}


def _args(*argv: str):
    return parser().parse_args(list(argv))


def test_the_main_job_defaults_to_the_decisive_design_and_the_fixed_plan_is_one_flag_away():
    case = load_case(FAKE, ROOT)
    def asked(*argv: str) -> tuple[Any, int]:
        design, trials = sequential_design(case, _args(*argv))
        return design.to_json(), trials

    stopping, trials = asked("case", str(FAKE))
    assert stopping == {"design": "decisive", "alpha": 0.05, "max_trials": 25,
                        "spending": "halving", "supported_share": 0.9, "horizon": "auto"}
    assert trials == 25
    none = asked("case", str(FAKE), "--horizon", "none")[0]
    given = asked("case", str(FAKE), "--horizon", "4096")[0]
    assert none == {**stopping, "horizon": "none"} and given == {**stopping, "horizon": 4096.0}
    old = asked("case", str(FAKE), "--alpha-spending", "even", "--supported-share", "0.5")[0]
    assert old == {**stopping, "spending": "even", "supported_share": 0.5}
    assert asked("case", str(FAKE), "--fixed") == (None, case.defaults.trials_per_arm)
    assert asked("case", str(FAKE), "--trials", "3") == (None, 3)
    # `run` (a GPU node's prebuilt tree) has the main job's defaults too.
    assert asked("run", str(FAKE)) == (stopping, 25)
    assert asked("run", str(FAKE), "--fixed")[0] is None


def test_decisive_with_a_fixed_size_is_refused():
    from gpurepro.errors import UsageError

    case = load_case(FAKE, ROOT)
    with pytest.raises(UsageError, match="--decisive is a design of its own"):
        sequential_design(case, _args("run", str(FAKE), "--decisive", "--trials", "3"))
    for other in (["--fixed"], ["--until-decided"]):
        with pytest.raises(UsageError, match="--alpha-spending applies only with --decisive"):
            sequential_design(case, _args("run", str(FAKE), *other, "--alpha-spending", "even"))
        with pytest.raises(UsageError, match="--supported-share applies only with --decisive"):
            sequential_design(case, _args("run", str(FAKE), *other, "--supported-share", "0.5"))


def test_a_decisive_run_journals_its_design_and_its_document_the_known_rates_plan(fake_build,
                                                                                  tmp_path):
    build_dir, _ = fake_build
    journal = tmp_path / "d.journal.jsonl"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = pace.run([sys.executable, "-m", "gpurepro", "run", str(FAKE.relative_to(ROOT)),
                     "--decisive", "--arms", "crash,ok", "--max-trials", "6",
                     "--duration", "0.3", "--seed", "3", "--build-dir", str(build_dir),
                     "--journal", str(journal), "--out-dir", str(tmp_path)],
                    cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    contents = read(journal)
    stopping = contents.header["options"]["stopping"]
    assert stopping["design"] == "decisive" and stopping["total"] == 12
    # New runs halve alpha look by look, and journal it with each look's alpha, and give a
    # claim's stated direction 0.9 of its level.
    assert stopping["spending"] == "halving" and stopping["supported_share"] == 0.9
    assert "over 0.9" in stopping["method"]
    assert stopping["alpha_at_looks"] == DecisiveDesign.from_description(stopping).alphas
    assert sum(stopping["alpha_at_looks"]) == pytest.approx(0.05)
    assert 1 <= stopping["first_look"] <= 12 and "priors" in stopping
    # ok-survives is decided once ok has run without a failure against crash's: ok stops early.
    assert sum(1 for t in contents.trials if t["arm"] == "ok") < 6
    doc = json.loads(next(tmp_path.glob("*.json")).read_text())
    assert any(s.startswith("Time to the verdict:") for s in doc["verdict"]["sentences"])
    known = doc["known_rates_plan"]
    assert 0 <= known["chance"]["decides_every_claim"] <= 1 and known["chance"]["runs"] > 0
    assert (known["ratio"] is None) == (not known["reached"])
