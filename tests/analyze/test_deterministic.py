"""The deterministic shortcut: a case that declares its outcomes deterministic (Case.deterministic)
has its claims on shares of trials decided once each of their arms has a few valid trials that
all ended alike; the declaration is journaled, stated in the claims and the verdict, and refuted
by any arm whose valid trials end differently, which withdraws what it decided."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest

from gpurepro.analyze import calibrate as cal
from gpurepro.analyze import simulate as sim
from gpurepro.analyze.allocate import ArmPrior
from gpurepro.analyze.claims import Decider, DecisiveDesign, Design
from gpurepro.analyze.designing import run_declaration
from gpurepro.analyze.shortcut import declaration
from gpurepro.analyze.verdict import decide_claims, determinism_sentence
from gpurepro.case import Claim, TrialBudget, load_case
from gpurepro.case.model import DETERMINISTIC_TRIALS
from gpurepro.errors import ManifestError
from gpurepro.model.design import DesignSpec
from gpurepro.model.plan import make_plan
from gpurepro.model.result import ClaimDecision, Result, Trial
from gpurepro.run.execute import RunOptions
from gpurepro.run.session import journal_header
from tests.conftest import ROOT
from tests.headers import run_header

DECLARED = {"reason": "same cubin, same inputs", "trials": 3}
WRONG = Claim("bad-wrong", arm="bad", kind="outcome", outcome="wrong_result", share=0.5)
NEVER = Claim("good-never-wrong", arm="good", kind="outcome", outcome="wrong_result", share=0.5,
              bound="below")
RIGHT = Claim("good-right", arm="good", kind="outcome", outcome="survived", share=0.5)
BOUNDARY = Claim("breaks", arm="bad", reference="good", kind="higher", unit="trial")
RATE = Claim("bad-lower", arm="bad", reference="good", kind="lower")  # a rate in exposure
CLAIMS = [WRONG, NEVER, RIGHT, BOUNDARY, RATE]
FAILURES = ("wrong_result", "crashed")


def _t(arm: str, outcome: str, i: int = 0) -> dict:
    return {"arm": arm, "outcome": outcome, "exposure": 3.0, "index": i,
            "detail": "12 of 40 elements differ" if outcome == "wrong_result" else "budget used up"}


def _decider(design=None, deterministic=DECLARED, claims=CLAIMS) -> Decider:
    return Decider(claims, "good", design or Design(alpha=0.05), FAILURES, 1.0, ["bad", "good"],
                   deterministic=deterministic)


def test_a_case_declares_it_with_its_reason():
    case = load_case("ptxas_abs_clamp", ROOT)  # declares it, with its reason
    assert case.determinism() == {"reason": case.deterministic.strip(),
                                  "trials": DETERMINISTIC_TRIALS}
    assert case.deterministic.startswith("one cubin per arm")
    assert dataclasses.replace(case, deterministic=" ").determinism() is None  # not declared
    declared = dataclasses.replace(case, deterministic="  same cubin, same inputs ")
    assert declared.determinism() == {"reason": "same cubin, same inputs",
                                      "trials": DETERMINISTIC_TRIALS}
    assert DETERMINISTIC_TRIALS >= 2  # one trial could never disagree with itself
    with pytest.raises(ManifestError, match="deterministic"):
        dataclasses.replace(case, deterministic=True).determinism()


def test_agreeing_trials_decide_the_claims_on_shares_of_trials_and_no_other():
    d = _decider()
    two = [_t("bad", "wrong_result"), _t("good", "survived")] * 2
    assert d.settle(two) == [] and d.establishing(two) == {"bad", "good"}
    three = two + [_t("bad", "wrong_result"), _t("good", "survived")]
    assert sorted(d.settle(three)) == sorted(["bad-wrong", "good-never-wrong", "good-right", "breaks"])
    assert {n: r["decision"] for n, r in d.decisions.items()} == dict.fromkeys(
        ["bad-wrong", "good-never-wrong", "good-right", "breaks"], "supported")
    rec = d.decisions["bad-wrong"]
    assert rec["deterministic"]["trials"] == {"bad": 3} and rec["threshold"] is None
    # The binomial test alone would not decide 3 of 3 (p = 0.25): the record keeps its p-value.
    assert rec["p_value"] == pytest.approx(0.25) and rec["deterministic"]["test"] == "binomial share"
    assert "bad-lower" not in d.decisions  # a rate per unit of exposure is no share of trials
    assert d.arms_needed() == {"bad", "good"} and d.establishing(three) == set()


@pytest.mark.parametrize(("bad", "good", "expected"), [
    ("survived", "survived", {"bad-wrong": "contradicted", "good-never-wrong": "supported",
                              "good-right": "supported"}),  # equal shares: breaks has no direction
    ("survived", "wrong_result", {"bad-wrong": "contradicted", "good-never-wrong": "contradicted",
                                  "good-right": "contradicted", "breaks": "contradicted"}),
])
def test_each_bound_and_direction_follows_the_established_shares(bad, good, expected):
    d = _decider()
    d.settle([_t("bad", bad), _t("good", good)] * 3)
    assert {n: r["decision"] for n, r in d.decisions.items()} == expected


def test_without_a_declaration_nothing_changes():
    records = [_t("bad", "wrong_result"), _t("good", "survived")] * 3
    d = _decider(deterministic=None)
    assert d.settle(records) == [] and d.establishing(records) == set()
    d.final(records)
    plain = Decider(CLAIMS, "good", Design(alpha=0.05), FAILURES, 1.0, ["bad", "good"])
    plain.final(records)
    assert d.decisions == plain.decisions and "deterministic" not in d.to_json()
    assert all(r["decision"] == "not_decided" for r in d.decisions.values())


def test_disagreeing_trials_refute_it_and_withdraw_what_it_decided():
    design = DecisiveDesign(alpha=0.05, max_trials=12, first_look=20, total=24)
    d = _decider(design)
    records = [_t("bad", "wrong_result"), _t("good", "survived")] * 3
    d.settle(records)
    assert "bad-wrong" in d.decisions and not d.arms_needed() - {"bad", "good"}
    records.append(_t("good", "wrong_result"))  # good's fourth trial disagrees
    assert d.settle(records) == []
    assert d.refuted == {"arm": "good", "ended": {"survived": 3, "wrong_result": 1}, "at": 7,
                         "withdrawn": ["bad-wrong", "good-never-wrong", "good-right", "breaks"]}
    assert d.decisions == {} and d.arms_needed() == {"bad", "good"}
    # From then on only the design decides, and a resumed run knows it was refuted.
    d.settle(records + [_t("good", "survived")] * 5)
    assert d.decisions == {}
    resumed = _decider(design)
    resumed.restore(d.to_json())
    assert resumed.refuted == d.refuted and resumed.settle(records) == []


def _models(p_bad: float) -> dict[str, sim.ArmModel]:
    def arm(p: float) -> sim.ArmModel:
        causes = (sim.Cause("wrong_result", "12 of 40 elements differ", p),) if p else ()
        return sim.ArmModel(causes, 3.0, 4.0, 0.8, 0.0, per_trial=True)
    return {"bad": arm(p_bad), "good": arm(0.0)}


def _spec(deterministic, claims=(WRONG, RIGHT, BOUNDARY)) -> sim.RunSpec:
    models = _models(1.0)
    return sim.RunSpec(case="fake", arms=("bad", "good"), claims=tuple(claims), exploratory=(),
                       baseline="good", failure_outcomes=FAILURES, per=1.0,
                       design=DecisiveDesign(alpha=0.05, max_trials=12, first_look=10, total=24),
                       sequential=True, trials=12, mode="exposure", strata=(),
                       priors={a: ArmPrior.of_model(m).to_json() for a, m in models.items()},
                       deterministic=deterministic)


def _runs(spec: sim.RunSpec, p_bad: float, n: int) -> list:
    return [sim.simulate_run(spec, _models(p_bad), rng) for rng in sim.streams(7, 0, range(n))]


def test_the_decisive_design_establishes_each_arm_first_and_stops():
    shortcut = _runs(_spec(DECLARED), 1.0, 20)
    assert all(r.trials == 2 * DECLARED["trials"] and not r.refuted for r in shortcut)
    assert all(set(d.values()) == {"supported"} for d, *_ in shortcut)
    designed = _runs(_spec(None), 1.0, 20)
    assert min(r.trials for r in designed) >= 10  # the design's first look
    assert all(set(d.values()) == {"supported"} for d, *_ in designed)


def test_the_arms_that_establish_an_outcome_get_the_next_trials_whatever_the_gain(monkeypatch):
    from gpurepro.analyze import allocate
    from gpurepro.analyze.allocation import Allocation
    from gpurepro.model.plan import PlannedTrial

    design = DecisiveDesign(alpha=0.05, max_trials=12, first_look=20, total=24)
    d = _decider(design, claims=[WRONG, RIGHT, RATE])
    models = _models(1.0)
    allocation = Allocation(d, {a: ArmPrior.of_model(m).to_json() for a, m in models.items()},
                            12, "good")
    # Whatever the allocation's gains say (here: always bad), good has an outcome to establish.
    monkeypatch.setattr(allocate, "choose", lambda _d, _r, candidates, *a, **k: (candidates[0], None))
    records = [_t("bad", "wrong_result", i) for i in range(3)]
    remaining = [PlannedTrial(3, "bad", 3), PlannedTrial(4, "good", 0), PlannedTrial(5, "good", 1)]
    picked, cap, _seconds = allocation.next(records, remaining)
    assert "bad-wrong" in d.decisions and (picked.arm, cap) == ("good", None)
    # Once good's trials are in (and agree), the design's own allocation takes over.
    records += [_t("good", "survived", 4 + i) for i in range(3)]
    assert allocation.next(records, remaining)[0].arm == "bad"
    assert d.decisions["good-right"]["decision"] == "supported"


def test_a_false_declaration_is_refuted_as_often_as_trials_disagree():
    # bad is wrong in half its trials: its first three agree in a quarter of runs, and the
    # run then stops on the shortcut's decisions (the cost of a false declaration, which
    # calibrate reports); in the other runs the trials refute it and the design decides.
    runs = _runs(_spec(DECLARED, claims=(WRONG,)), 0.5, 400)
    refuted = sum(r.refuted for r in runs) / len(runs)
    assert abs(refuted - 0.75) < 4 * math.sqrt(0.75 * 0.25 / len(runs))
    decided_early = [r.decisions for r in runs if not r.refuted]
    assert all(d["bad-wrong"] in ("supported", "contradicted") for d in decided_early)
    assert all(r.decisions["bad-wrong"] == "not_decided" or r.trials > 3
               for r in runs if r.refuted)


def _ptxas_trials(last_good: str = "survived") -> tuple:
    case = load_case("ptxas_abs_clamp", ROOT)
    wrong = {"first-bad", "last-bad"}
    trials, i = [], 0
    for rep in range(3):
        for arm in case.resolved_arms():
            outcome = "wrong_result" if arm in wrong else (
                last_good if arm == "last-good" and rep == 2 else "survived")
            trials.append(_t(arm, outcome, i))
            i += 1
    return case, trials


def _header(case, deterministic):
    return run_header(case.resolved_arms(),
                      {"stopping": None, **({"deterministic": deterministic} if deterministic else {})})


def _determinism_sentence(declared, trials, claims):
    """The verdict's sentence on the declaration, of a run's trials and decided claims."""
    return determinism_sentence(declared, [Trial.of(t) for t in trials],
                                [ClaimDecision.of(c) for c in claims], DesignSpec.fixed())


def test_a_recorded_run_states_the_declaration_in_each_claim_and_the_verdict():
    case, trials = _ptxas_trials()
    declared = {"reason": "same cubin, same inputs", "trials": 3}
    claims = decide_claims(case, _header(case, declared), trials)
    assert {c["decision"] for c in claims} == {"supported"}
    assert all("decided by the case's declaration that its outcomes are deterministic "
               "(same cubin, same inputs): 3 of 3 valid trials of" in c["sentence"] for c in claims)
    text = _determinism_sentence(declared, trials, claims)
    assert "no valid trials of an arm ended differently" in text and "first-bad-wrong" in text
    assert "exact if the declaration holds" in text
    # The same trials without the declaration: three trials per arm decide nothing.
    plain = decide_claims(case, _header(case, None), trials)
    assert {c["decision"] for c in plain} == {"not_decided"}


def test_a_recorded_run_whose_trials_disagree_says_the_declaration_was_refuted():
    case, trials = _ptxas_trials(last_good="wrong_result")
    declared = {"reason": "same cubin, same inputs", "trials": 3}
    claims = decide_claims(case, _header(case, declared), trials)
    assert not any(c.get("deterministic") for c in claims)
    assert claims == decide_claims(case, _header(case, None), trials)
    assert ("but the valid trials of last-good ended as survived (2) and wrong_result (1): the "
            "declaration is refuted" in _determinism_sentence(declared, trials, claims))


def test_a_run_journals_the_declaration_of_its_case():
    case = load_case("ptxas_abs_clamp", ROOT)
    plan = make_plan(case.name, case.resolved_arms(), 3, 1, list(case.resolved_arms()))
    opts = RunOptions(budget=TrialBudget(duration_s=5.0, timeout_s=30.0, max_exposure=3),
                      run_id="0" * 32)
    index = {"toolchain": {}, "artifacts": {}}
    plain = journal_header(dataclasses.replace(case, deterministic=""), ROOT, plan, opts, DesignSpec.fixed(),
                           {}, {}, index)
    assert "deterministic" not in plain["options"]
    declared = dataclasses.replace(case, deterministic="same cubin, same inputs")
    header = journal_header(declared, ROOT, plan, opts, DesignSpec.fixed(), {}, {}, index,
                            deterministic=run_declaration(declared, None))
    # Checked (gpurepro.analyze.shortcut): its trials set so that its bound, spent from the
    # run's alpha, is within half of it; a run from before the check journaled reason and 3.
    journaled = header["options"]["deterministic"]
    assert journaled == declaration(declared, 0.05)
    assert {k: journaled[k] for k in ("reason", "version", "check", "flake_rates")} == {
        "reason": "same cubin, same inputs", "version": 2, "check": 1, "flake_rates": [0.5, 0.1]}
    assert journaled["trials"] == 6 >= DETERMINISTIC_TRIALS and journaled["bound"] == 2 ** -6
    assert header["options"]["analysis"] == 2 and "timing" not in header["options"]


def test_calibrate_reports_the_design_without_it_and_the_cost_of_a_false_declaration():
    """calibrate's own declaration is a new run's: checked, 6 agreeing trials and a later
    check per arm, its bound spent from the design's alpha; and the declaration false for one
    arm at a time, at each flake rate."""
    case = dataclasses.replace(load_case("ptxas_abs_clamp", ROOT), deterministic="same cubin")
    doc = ROOT / "results" / "ptxas_abs_clamp" / "20261201T142138Z_NVIDIA-H200_redacted.json"
    recorded = json.loads(doc.read_text())
    design, sequential, trials, arms, exploratory, budget = cal.design_of(Result.of(recorded))
    models = cal.load_models(case, ROOT, [doc], arms, duration_s=budget.get("duration_s"),
                             max_exposure=budget.get("max_exposure"))
    sequential_design = Design(alpha=0.05, step=3, max_trials=12)
    r = cal.calibrate(case, models, 40, 0, sequential_design, True, 12, 1)
    assert r["holds_alpha"] and "refuted" not in r["null"]
    det = r["deterministic"]
    assert det["declared"] == declaration(case, 0.05) and det["declared"]["trials"] == 6
    assert r["alpha"] == 0.05 and r["design"]["alpha"] == pytest.approx(0.05 - 2 ** -6)
    assert r["observed"]["mean_trials"] == pytest.approx(len(arms) * 7)  # 6 and a check an arm
    assert all(p == 1.0 for p in r["power"].values())
    false = det["false_declaration"]
    assert false["checked"] and false["agreeing_trials"] == 7 and false["bound"] == 2 ** -6
    assert set(false["worst"]) == {"0.5", "0.1"} and set(false["arms"]) == set(arms)
    assert all(0 <= w["shortcut_false"] <= 1 and 0 <= w["refuted"] <= 1
               for w in false["worst"].values())
    assert "if the declaration is false for one arm at a time" in cal.text(r)
    none = cal.calibrate(case, models, 20, 0, sequential_design, True, 12, 1, deterministic=None)
    assert "deterministic" not in none and none["observed"]["mean_trials"] > len(arms) * 3


def test_a_document_decided_from_the_declaration_is_valid_and_says_so():
    """A committed ptxas_abs_clamp journal (12 valid trials per arm, every arm alike) recorded
    as a fixed-size run of a case that declares its outcomes deterministic: valid against the
    schema and for meaning, every claim decided from the declaration, which the verdict and
    the claims table state."""
    import copy

    from gpurepro.record import document
    from gpurepro.record.validation import meaning_errors, validation_errors
    from gpurepro.report.markdown import claims_table
    from gpurepro.run import journal

    path = ROOT / "results" / "ptxas_abs_clamp" / "20261204T032311Z-bed44c_NVIDIA-H200_redacted.journal.jsonl"
    contents = journal.read(path)
    header = copy.deepcopy(contents.header)
    header["options"]["stopping"] = None
    header.pop("stopping_result", None)
    case = dataclasses.replace(load_case("ptxas_abs_clamp", ROOT), deterministic="same cubin")
    header["options"]["deterministic"] = case.determinism()
    committed = json.loads(path.with_name(path.name.replace(".journal.jsonl", ".json")).read_text())
    saved = document.run_analyses
    document.run_analyses = lambda *_a, **_k: committed["analyses"]
    try:
        doc = json.loads(json.dumps(document.build_document(case, header, contents.trials, ROOT,
                                                            path.resolve(), False)))
    finally:
        document.run_analyses = saved
    assert validation_errors(doc) == [] and meaning_errors(doc) == []
    assert all(c["decision"] == "supported" and c["deterministic"]["reason"] == "same cubin"
               for c in doc["claims"])
    assert any(s.startswith("The case declares its outcomes deterministic (same cubin), and no "
                            "valid trials of an arm ended differently") for s in doc["verdict"]["sentences"])
    assert "declared determinism" in claims_table(doc)
