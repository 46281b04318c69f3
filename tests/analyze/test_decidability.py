"""Before a run: each claim's chance of being decided by its plan, and the exploratory family
(claims the plan is unlikely to decide), which neither taxes the confirmatory family nor keeps
arms running, and on which no owner may rest."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from gpurepro.analyze import decidability, planning
from gpurepro.analyze.claims import Decider, Design
from gpurepro.analyze.verdict import compose_verdict
from gpurepro.case import Claim, load_case
from gpurepro.errors import RecordError
from gpurepro.model.plan import make_plan
from gpurepro.model.result import ClaimDecision
from tests.headers import run_header

ROOT = Path(__file__).resolve().parents[2]
FAKE = ROOT / "tests" / "fixtures" / "fake_case" / "manifest.py"


def _trial(arm, failed, exposure, duration=1.0):
    return {"arm": arm, "outcome": "crashed" if failed else "survived", "exposure": exposure,
            "detail": "SIGSEGV" if failed else "budget used up", "duration_s": duration}


def _committed(root: Path, case_name: str) -> None:
    """A committed result: crash and abort fail in 9 of 10 trials early, ok never."""
    trials = []
    for i in range(10):
        trials += [_trial("crash", i < 9, 200 + 50 * i if i < 9 else 2000, 0.1 if i < 9 else 1.2),
                   _trial("ok", False, 2000, 1.2),
                   _trial("abort", i < 9, 250 + 50 * i if i < 9 else 2000, 0.1 if i < 9 else 1.2)]
    folder = root / "results" / case_name
    folder.mkdir(parents=True)
    (folder / "20260101T000000Z_test.json").write_text(json.dumps(
        {"trials": trials, "plan": {"options": {"jobs": 1, "budget": {"duration_s": 1.0,
                                                                      "max_exposure": 0}}}}))


@pytest.fixture
def case():
    return load_case(FAKE, ROOT)


def test_a_claim_the_plan_cannot_decide_goes_exploratory(case, tmp_path):
    # ok never fails against crash's 9 of 10: decided within 6 trials per arm. abort fails as
    # crash does: "within 2x of crash" needs far more failures than 6 trials can give.
    _committed(tmp_path, case.name)
    plan = make_plan(case.name, case.resolved_arms(), 6, 11, ["crash", "ok", "abort"])
    families = planning.assess(case, plan, Design(alpha=0.05), False, 6,
                                   {"duration_s": 1.0, "max_exposure": 0}, 1, tmp_path, runs=200)
    assert families["computed"]
    chance = families["chance"]
    assert chance["ok-survives"] > 0.9
    assert chance["abort-like-crash"] < decidability.THRESHOLD
    assert "abort-like-crash" in families["exploratory"]
    assert "ok-survives" not in families["exploratory"]
    assert families["expected"]["trials"] == 18  # a fixed plan runs every trial
    text = "\n".join(decidability.lines(families, list(chance)))
    assert f"  ok-survives: {chance['ok-survives']:.2f}  (confirmatory)" in text
    assert f"  abort-like-crash: {chance['abort-like-crash']:.2f}  (exploratory)" in text


def test_without_committed_rates_every_claim_stays_confirmatory(case, tmp_path):
    plan = make_plan(case.name, case.resolved_arms(), 3, 1, ["crash", "ok"])
    families = planning.assess(case, plan, Design(alpha=0.05), False, 3,
                                   {"duration_s": 1.0, "max_exposure": 0}, 1, tmp_path, runs=20)
    assert not families["computed"] and families["exploratory"] == []
    assert "every claim is confirmatory" in decidability.lines(families, [])[0]


def _records(arm, failures, n, exposure=1000.0):
    return [{"arm": arm, "outcome": "crashed" if i < failures else "survived",
             "exposure": exposure, "detail": "SIGSEGV"} for i in range(n)]


def test_exploratory_claims_keep_no_arm_running_and_are_decided_at_the_end(case):
    design = Design(alpha=0.05, step=2, max_trials=10)
    decider = Decider(case.claims, case.baseline, design, case.failure_outcomes, 1e6,
                      ["crash", "ok", "abort"], exploratory=["abort-like-crash", "abort-lower"])
    assert [c.name for c in decider.exploratory] == ["abort-like-crash", "abort-lower"]
    assert "abort" not in decider.arms_needed()
    records = _records("crash", 10, 10) + _records("ok", 0, 10) + _records("abort", 0, 10)
    decider.look(records)
    assert "abort-lower" not in decider.decisions  # never decided at a confirmatory look
    decider.final(records)
    assert decider.decisions["abort-lower"]["family"] == "exploratory"
    assert decider.decisions["abort-lower"]["decision"] == "supported"
    assert "family" not in decider.decisions["ok-survives"]
    assert decider.to_json()["exploratory"] == ["abort-like-crash", "abort-lower"]


def _claim_record(name, decision, family=None):
    return ClaimDecision.of({"name": name, "decision": decision, "sentence": f"{name} {decision}.",
                             **({"family": family} if family else {})})


def test_an_owner_resting_on_an_exploratory_claim_is_refused():
    given = {"status": "reproduced", "sentences": [], "owner": "someone",
             "owner_because": ["weak"]}
    with pytest.raises(RecordError, match="weak"):
        compose_verdict(given, [_claim_record("weak", "supported", "exploratory")])
    v = compose_verdict({**given, "owner_because": ["strong"]},
                        [_claim_record("strong", "supported"),
                         _claim_record("weak", "supported", "exploratory")])
    assert v["sentences"] == ["strong supported."]
    assert v["exploratory"][0].startswith("Exploratory (outside the family-wise error rate")


def test_a_claim_on_hangs_counts_hangs_not_the_cases_crashes(case):
    claim = Claim("ok-hangs", arm="ok", kind="higher", reference="crash", failures=("hung",))
    decider = Decider([claim], "crash", Design(alpha=0.05), ("crashed",), 1e6, ["crash", "ok"])
    hangs = [{"arm": "ok", "outcome": "hung", "exposure": 100.0, "detail": "no progress"}] * 8
    crashes = _records("crash", 8, 8, 100.0)
    ev = decider.evidence(claim, hangs + crashes)
    assert ev.numbers["arm"]["failures"] == 8 and ev.numbers["reference"]["failures"] == 0
    assert ev.direction == "supported" and ev.p_value < 0.01


def test_old_journals_without_families_decide_every_claim_as_before(case):
    header = run_header(case.resolved_arms(), {"stopping": None})
    from gpurepro.analyze.claims import decider_for

    decider = decider_for(dataclasses.replace(case), header)
    assert decider.exploratory == [] and len(decider.claims) == len(case.claims)


@pytest.mark.parametrize("document", [
    "results/ptxas_abs_clamp/20261201T142138Z_NVIDIA-H200_redacted.json",
    "results/ctx_get_device_v2/20261201T142253Z_NVIDIA-H200_redacted.json",
])
def test_the_pre_run_check_on_a_committed_plan_keeps_the_owner_claims_confirmatory(document):
    """The plan of the committed ptxas_abs_clamp and ctx_get_device_v2 runs (12 trials per arm,
    per-trial outcomes: wrong results, one query per trial), with that run's own rates: every
    claim, first-bad-wrong and last-bad-wrong and the owner claims among them, more likely than
    0.9 to be decided, none moved to the exploratory family. Modelled as rates per launch or per
    call, an arm wrong in 12 of 12 trials had a chance per trial below 1, and first-bad-wrong
    and last-bad-wrong (ctx: v2-bogus-current-crashes and numba-062-survives) went exploratory
    at 0.03-0.30."""
    from gpurepro.model.plan import Plan

    doc = json.loads((ROOT / document).read_text())
    case = load_case(doc["plan"]["case"], ROOT)
    options = doc["plan"]["options"]
    plan = Plan.from_json(doc["plan"])
    families = planning.assess(case, plan, Design(alpha=0.05), False,
                                   max(plan.trials_per_arm.values()), options["budget"],
                                   options["jobs"], ROOT, priors_from=[ROOT / document])
    assert families["computed"] and families["exploratory"] == []
    assert min(families["chance"].values()) > 0.9
    owner = {"ptxas_abs_clamp": {"first-bad-wrong", "last-bad-wrong"},
             "ctx_get_device_v2": {"v2-bogus-current-crashes", "numba-062-survives"}}[case.name]
    assert owner <= set(families["chance"])
