"""The deterministic shortcut, checked (gpurepro.analyze.shortcut): a new run journals its
declaration as version 2, and then any difference two valid trials of an arm record refutes it
(not only their outcome class), a decided arm keeps a later check trial, and its chance of a
false decision with one arm flaky at 1/2 or 1/10 is bounded and spent from alpha. A journal
from before (no version) is decided as it was."""

from __future__ import annotations

import copy
import json
import math

import pytest

from gpurepro.analyze import shortcut
from gpurepro.analyze import simulate as sim
from gpurepro.analyze.allocate import ArmPrior
from gpurepro.analyze.allocation import Allocation
from gpurepro.analyze.claims import Decider, DecisiveDesign, Design, decider_for
from gpurepro.analyze.verdict import decide_claims, determinism_sentence
from gpurepro.case import Claim, load_case
from gpurepro.model.plan import PlannedTrial
from gpurepro.model.result import ClaimDecision, Trial
from tests.conftest import ROOT
from tests.headers import run_header

WRONG = Claim("bad-wrong", arm="bad", kind="outcome", outcome="wrong_result", share=0.5)
RIGHT = Claim("good-right", arm="good", kind="outcome", outcome="survived", share=0.5)
BOUNDARY = Claim("breaks", arm="bad", reference="good", kind="higher", unit="trial")
CLAIMS = [WRONG, RIGHT, BOUNDARY]
FAILURES = ("wrong_result", "crashed")
OLD = {"reason": "same cubin, same inputs", "trials": 3}  # a journal from before the check


def checked_declaration(trials: int = 3) -> dict:
    return {**shortcut.design("same cubin, same inputs", CLAIMS, 0.05, 3).to_json(),
            "trials": trials}


def _t(arm: str, outcome: str, i: int, **extra) -> dict:
    wrong = outcome == "wrong_result"
    return {"arm": arm, "outcome": outcome, "exposure": 3.0, "index": i, "rep": i // 2,
            "detail": "12 of 40 elements differ" if wrong else "budget used up",
            "check": {"kind": "exact", "n": 120, "mismatches": 36 if wrong else 0,
                      "first": [[0, 0, 9], [1, 0, 6]] if wrong else []},
            "observations": {"launches_agree": True}, **extra}


def _alike(n: int, start: int = 0) -> list[dict]:
    out = []
    for k in range(n):
        out += [_t("bad", "wrong_result", start + 2 * k), _t("good", "survived", start + 2 * k + 1)]
    return out


def _decider(declared, design=None) -> Decider:
    return Decider(CLAIMS, "good", design or Design(alpha=0.05), FAILURES, 1.0, ["bad", "good"],
                   deterministic=declared)


# ---------------------------------------------------------------- the signature


def test_the_signature_reads_the_fields_it_documents():
    a = _t("bad", "wrong_result", 0)
    assert shortcut.disagreement("bad", [a, copy.deepcopy(a)]) is None
    for path, value, field in (
            (("check", "first"), [[0, 0, 9], [2, 0, 3]], "check.first"),
            (("check", "mismatches"), 35, "check.mismatches / check.n"),
            (("observations", "launches_agree"), False, "observations.launches_agree"),
            (("observations", "output_sha256"), "ab" * 32, "observations.output_sha256"),
            (("exit",), {"signal": "SIGSEGV"}, "exit.signal")):
        b = copy.deepcopy(a)
        inner = b
        for key in path[:-1]:
            inner = inner[key]
        inner[path[-1]] = value
        split = shortcut.disagreement("bad", [a, b])
        assert split is not None and field in split.fields, field
        assert field in shortcut.SIGNATURE_FIELDS
    # The same outcome class is not enough: what the trials record must agree, the driver's
    # own observations too (ptxas_abs_clamp's report_m), but not the machine's or the timing.
    b = copy.deepcopy(a)
    b["observations"]["report_m"] = {"got": [0, 0, 0]}
    assert shortcut.disagreement("bad", [a, b]).fields == ("observations.*",)
    b = copy.deepcopy(a)
    b["observations"].update(device={"name": "another"}, timing={"values": [1.0]},
                             conditions={"sm_clock_mhz": 1980})
    assert shortcut.disagreement("bad", [a, b]) is None
    assert set(shortcut.MACHINE_OBSERVATIONS) >= {"device", "timing", "conditions", "bindings"}


def test_no_committed_journal_of_a_case_that_does_not_race_disagrees_with_itself():
    """Every valid trial of an arm in the committed journals of the cases with nothing racing
    (ptxas_abs_clamp, ctx_get_device_v2, fa3_wgmma_wait, tcgen05_alloc_order) has one signature,
    capped trials included: the check refutes no declaration that held there. The race's
    journals (tile_unload_race) disagree, as a race's trials should."""
    from gpurepro.model.outcomes import EVIDENCE

    def splits(path):
        by: dict[str, list] = {}
        for line in path.read_text().splitlines():
            t = json.loads(line)
            if t.get("kind") == "trial" and t.get("outcome") in EVIDENCE:
                by.setdefault(t["arm"], []).append(t)
        return [a for a, rs in by.items() if shortcut.disagreement(a, rs)]

    for case in ("ptxas_abs_clamp", "ctx_get_device_v2", "fa3_wgmma_wait", "tcgen05_alloc_order"):
        journals = sorted((ROOT / "results" / case).glob("*.journal.jsonl"))
        assert journals and all(splits(j) == [] for j in journals), case
    assert any(splits(j) for j in (ROOT / "results" / "tile_unload_race").glob("*.journal.jsonl"))


def test_a_trial_that_did_less_work_agrees_where_its_share_of_mismatches_does():
    whole = _t("bad", "wrong_result", 0)
    capped = _t("bad", "wrong_result", 1, exposure=1.0)
    capped["check"] = {"kind": "exact", "n": 40, "mismatches": 12, "first": [[0, 0, 9]]}
    assert shortcut.disagreement("bad", [whole, capped]) is None  # 36/120 = 12/40
    capped["check"]["mismatches"] = 13
    assert shortcut.disagreement("bad", [whole, capped]).fields == ("check.mismatches / check.n",)


# ---------------------------------------------------------------- refuted by any difference


def test_a_checked_declaration_is_refuted_by_a_difference_the_outcome_class_does_not_show():
    records = _alike(3)
    records[4] = {**records[4], "check": {**records[4]["check"], "mismatches": 30}}
    checked = _decider(checked_declaration())
    assert checked.settle(records) == []
    assert checked.refuted["arm"] == "bad" and checked.refuted["differ"] == {
        "trials": [0, 4], "fields": ["check.mismatches / check.n"]}
    # A journal from before the check compares outcome classes: it decides as it did.
    old = _decider(OLD)
    assert sorted(old.settle(records)) == ["bad-wrong", "breaks", "good-right"]
    assert old.refuted is None


# ---------------------------------------------------------------- the check trial


def test_a_decided_arm_keeps_a_later_check_trial_and_its_decision_stands_once_it_agrees():
    d = _decider(checked_declaration(), DecisiveDesign(alpha=0.04, max_trials=12, first_look=20,
                                                      total=24))
    three = _alike(3)
    assert sorted(d.settle(three)) == ["bad-wrong", "breaks", "good-right"]
    assert sorted(d.pending()) == ["bad-wrong", "breaks", "good-right"]
    assert all(r["deterministic"]["checked"] is False for r in d.decisions.values())
    # Decided, and still needed: for its check trial, which the allocation serves first.
    assert d.arms_needed() == {"bad", "good"} and d.establishing(three) == {"bad", "good"}
    four = three + _alike(1, 6)
    d.settle(four)
    assert d.pending() == [] and d.arms_needed() == set() and d.establishing(four) == set()
    rec = d.decisions["bad-wrong"]["deterministic"]
    assert rec["checked"] is True and rec["trials"] == {"bad": 4}
    assert rec["bound"] == checked_declaration()["bound"] and len(rec["signature"]["bad"]) == 12


def test_a_check_trial_that_differs_withdraws_what_the_declaration_decided():
    d = _decider(checked_declaration())
    records = _alike(3)
    d.settle(records)
    records.append(_t("good", "survived", 7, observations={"launches_agree": False}))
    assert d.settle(records) == [] and d.decisions == {}
    assert d.refuted["withdrawn"] == ["bad-wrong", "good-right", "breaks"]
    assert d.refuted["differ"]["fields"] == ["observations.launches_agree"]


def test_the_allocation_gives_the_decided_arm_its_check_trial():
    d = _decider(checked_declaration(), DecisiveDesign(alpha=0.04, max_trials=12, first_look=20,
                                                      total=24))
    model = sim.ArmModel((), 3.0, 4.0, 0.8, 0.0, per_trial=True)
    allocation = Allocation(d, {a: ArmPrior.of_model(model).to_json() for a in ("bad", "good")},
                            12, "good")
    records = [_t("bad", "wrong_result", i) for i in range(3)] + [
        _t("good", "survived", 3 + i) for i in range(4)]
    remaining = [PlannedTrial(10, "good", 4), PlannedTrial(11, "bad", 3)]
    picked, cap, _seconds = allocation.next(records, remaining)
    assert (picked.arm, cap) == ("bad", None) and "bad-wrong" in d.pending()


def test_a_look_counts_a_decision_waiting_for_its_check_as_open():
    """Holm's number of claims at a look includes the decisions still waiting for their check
    trial, so that one the check withdraws never loosened a threshold: good-lower's p (0.041:
    no failure in 24 units of exposure against bad's 3 in 9) passes alpha / 1 but not
    alpha / 2."""
    rate = Claim("good-lower", arm="good", reference="bad", kind="lower")
    records = [_t("bad", "wrong_result", i) for i in range(3)] + [
        _t("good", "survived", 3 + i, exposure=8.0) for i in range(3)]
    decided = {}
    for declared in (checked_declaration(), OLD):
        d = Decider([WRONG, rate], "good", Design(alpha=0.05), FAILURES, 1.0, ["bad", "good"],
                    deterministic=declared)
        d.settle(records)
        assert d.evidence(rate, records).p_value == pytest.approx(2 * (9 / 33) ** 3)
        d.look(records)
        decided[bool(d.pending())] = d.decisions.get("good-lower", {}).get("decision")
    assert decided == {True: None, False: "supported"}


def test_a_decision_without_its_check_trial_at_the_end_is_left_to_the_design():
    d = _decider(checked_declaration())
    records = _alike(3)
    d.final(records)
    assert not any(r.get("deterministic") for r in d.decisions.values())
    assert sorted(d.unchecked) == ["bad-wrong", "breaks", "good-right"]
    assert d.to_json()["deterministic"]["unchecked"] == sorted(d.unchecked, key=d.unchecked.index)


# ---------------------------------------------------------------- the bound


def test_the_bound_is_the_chance_of_agreeing_trials_in_a_false_direction():
    share = shortcut.share_claims([WRONG])
    for k in (3, 4, 7):
        assert shortcut.false_decision_chance(share, 0.5, k) == pytest.approx(2 ** (1 - k))
        assert shortcut.false_decision_chance(share, 0.1, k) == pytest.approx(0.1 ** k)
    # A claim on two arms' shares adds nothing while one of them is flaky.
    assert shortcut.share_claims([BOUNDARY]) == []
    # "It happens at all": agreeing trials are never decided falsely.
    anywhere = Claim("x", arm="a", kind="outcome", outcome="crashed", share=0.0)
    assert shortcut.false_decision_chance(shortcut.share_claims([anywhere]), 0.5, 3) == 0


def test_the_declaration_takes_the_fewest_trials_whose_bound_is_within_its_share_of_alpha():
    d = shortcut.design("r", CLAIMS, 0.05, 3)
    assert (d.trials, d.check, d.bound, d.usable) == (6, 1, 2 ** -6, True)
    assert d.bound <= d.share * 0.05 < 2 * d.bound  # one fewer would exceed it
    assert d.at_rates == (2 ** -6, pytest.approx(1e-7))
    assert shortcut.design("r", CLAIMS, 0.01, 3).trials == 8  # 2^-8 <= 0.005
    # A claim held at a flake rate's share needs many: all 36 trials must end the common way.
    at_rate = Claim("x", arm="a", kind="outcome", outcome="crashed", share=0.9)
    assert shortcut.design("r", [at_rate], 0.05, 3).trials == 35
    # Where no number of trials up to MOST_AGREEING bounds it, the shortcut is not used.
    off = shortcut.design("r", [WRONG], 1e-30, 3)
    assert not off.usable and shortcut.spent(off.to_json()) == 0
    d = _decider(off.to_json())
    assert d.settle(_alike(8)) == [] and d.establishing(_alike(8)) == set()
    # ptxas_abs_clamp, as a new run journals it: 6 agreeing trials and a check, 1/64 spent.
    ptxas = shortcut.declaration(load_case("ptxas_abs_clamp", ROOT), 0.05)
    assert (ptxas["trials"], ptxas["check"], ptxas["bound"]) == (6, 1, 2 ** -6)
    assert shortcut.design_alpha(0.05, ptxas) == pytest.approx(0.05 - 2 ** -6)
    assert shortcut.design_alpha(0.05, OLD) == 0.05


# ---------------------------------------------------------------- one flaky arm, simulated


def _models(flake: float) -> dict[str, sim.ArmModel]:
    """bad: wrong in every trial but a share ``flake`` of them; good: always right."""
    def arm(p: float) -> sim.ArmModel:
        causes = (sim.Cause("wrong_result", "12 of 40 elements differ", p),) if p else ()
        return sim.ArmModel(causes, 3.0, 4.0, 0.8, 0.0, per_trial=True)
    return {"bad": arm(1 - flake), "good": arm(0.0)}


def _runs(declared, flake: float, n: int) -> list[sim.SimulatedRun]:
    models = _models(0.0)
    design = DecisiveDesign(alpha=shortcut.design_alpha(0.05, declared), max_trials=12,
                            first_look=10, total=24)
    spec = sim.RunSpec(case="fake", arms=("bad", "good"), claims=(WRONG, RIGHT, BOUNDARY),
                       exploratory=(), baseline="good", failure_outcomes=FAILURES, per=1.0,
                       design=design, sequential=True, trials=12, mode="exposure", strata=(),
                       priors={a: ArmPrior.of_model(m).to_json() for a, m in models.items()},
                       deterministic=declared, until_refuted=True)
    return [sim.simulate_run(spec, _models(flake), rng) for rng in sim.streams(11, 0, range(n))]


def _shortcut_false(runs: list[sim.SimulatedRun], true: str | None = None) -> float:
    """The share of runs in which the shortcut kept a false decision of bad-wrong: at flake
    1/2 bad's share of wrong results is exactly the claim's 0.5, so any decision is false
    (``true`` None); at 1/10 it is 0.9, and only "contradicted" is. The other claims' truths
    hold whatever the flake (breaks: bad fails more than good, whose share is 0)."""
    return sum(1 for r in runs if "bad-wrong" in r.by_declaration
               and r.decisions["bad-wrong"] != true) / len(runs)


def test_a_false_declaration_with_one_flaky_arm_is_bounded_by_the_checked_shortcut():
    """The issue's check: one arm flaky at 1/2; the checked shortcut keeps a false decision in
    at most its bound of runs (2^-6, spent from alpha), where the unchecked one of a journal
    from before keeps one in an eighth of them: three wrong results of bad decide bad-wrong,
    falsely (its share is the claim's 0.5), and nothing checks it again; three right ones
    leave breaks open (bad and good then alike), so bad runs on and its trials refute it."""
    declared = shortcut.design("same cubin, same inputs", CLAIMS, 0.05, 3).to_json()
    n = 1500
    checked = _shortcut_false(_runs(declared, 0.5, n))
    bound = declared["bound"]
    assert checked <= bound + 3 * math.sqrt(bound * (1 - bound) / n)
    assert bound <= 0.5 * 0.05
    unchecked = _shortcut_false(_runs(OLD, 0.5, n))
    assert abs(unchecked - 0.125) < 4 * math.sqrt(0.125 * 0.875 / n)
    assert unchecked > 0.5 * 0.05  # the error the check bounds: far past any share of alpha
    # At 1/10 the seven agreeing trials would all have to end the rare way (1e-7).
    assert _shortcut_false(_runs(declared, 0.1, 300), true="supported") == 0


# ---------------------------------------------------------------- a recorded run


def _ptxas(deterministic, trials_per_arm: int = 7, differ: str | None = None):
    case = load_case("ptxas_abs_clamp", ROOT)
    wrong = {"first-bad", "last-bad"}
    trials, i = [], 0
    for rep in range(trials_per_arm):
        for arm in case.resolved_arms():
            t = _t(arm, "wrong_result" if arm in wrong else "survived", i)
            t["rep"] = rep
            if arm == differ and rep == trials_per_arm - 1:
                t["observations"] = {"launches_agree": False}
            trials.append(t)
            i += 1
    header = run_header(case.resolved_arms(),
                        {"stopping": None, "analysis": 2,
                         **({"deterministic": deterministic} if deterministic else {})})
    return case, header, trials


def _determinism_sentence(declared, header, trials, claims):
    """The verdict's sentence on the declaration, of a run's trials and decided claims."""
    return determinism_sentence(declared, [Trial.of(t) for t in trials],
                                [ClaimDecision.of(c) for c in claims], header.design)


def test_a_recorded_run_with_a_checked_declaration_says_what_it_spent():
    case = load_case("ptxas_abs_clamp", ROOT)
    declared = shortcut.declaration(case, 0.05)
    case, header, trials = _ptxas(declared)
    claims = decide_claims(case, header, trials)
    assert {c["decision"] for c in claims} == {"supported"}
    assert all(c["alpha"] == pytest.approx(0.05 - 2 ** -6) for c in claims)  # the design's
    assert all("checked: 7 of 7 valid trials of" in c["sentence"]
               and "at most 0.0156, spent from the run's alpha" in c["sentence"] for c in claims)
    text = _determinism_sentence(declared, header, trials, claims)
    assert "checked: no two valid trials of an arm differ in their signature" in text
    assert "spends 0.0156 of the family-wise alpha 0.05" in text and "at 0.0344" in text
    # One trial that records a difference refutes it, though every outcome class agrees.
    case, header, trials = _ptxas(declared, differ="cuda-13")
    claims = decide_claims(case, header, trials)
    assert not any(c.get("deterministic") for c in claims)
    assert "two valid trials of cuda-13" in _determinism_sentence(declared, header, trials, claims)
    assert "differ in observations.launches_agree: the declaration is refuted" in \
        _determinism_sentence(declared, header, trials, claims)


def test_a_resumed_run_knows_its_checks():
    d = decider_for(load_case("ptxas_abs_clamp", ROOT), _ptxas(checked_declaration())[1])
    assert d.checked and isinstance(d.design, Design)
    records = _alike(3)
    first = _decider(checked_declaration())
    first.settle(records)
    resumed = _decider(checked_declaration())
    resumed.restore(json.loads(json.dumps(first.to_json())))
    assert resumed.pending() == first.pending() and resumed.arms_needed() == {"bad", "good"}


def test_a_document_of_a_checked_declaration_is_valid_and_its_statement_splits_alpha():
    """A committed ptxas_abs_clamp journal (12 valid trials per arm; one trial the decisive
    design capped at one launch, whose share of mismatches still agrees) recorded as a
    fixed-size run that journaled the checked declaration and options.analysis: valid against
    the schema and for meaning, every claim decided from the declaration and checked, the design
    at alpha less the bound, and the claims statement says how alpha was split."""
    import dataclasses

    from gpurepro.record import document
    from gpurepro.record.validation import meaning_errors, validation_errors
    from gpurepro.report.families import design_statement
    from gpurepro.run import journal

    path = (ROOT / "results" / "ptxas_abs_clamp"
            / "20261204T032311Z-bed44c_NVIDIA-H200_redacted.journal.jsonl")
    contents = journal.read(path)
    header = copy.deepcopy(contents.header)
    header["options"]["stopping"] = None
    header.pop("stopping_result", None)
    case = dataclasses.replace(load_case("ptxas_abs_clamp", ROOT), deterministic="same cubin")
    header["options"]["deterministic"] = shortcut.declaration(case, 0.05)
    header["options"]["analysis"] = 2
    committed = json.loads(path.with_name(path.name.replace(".journal.jsonl", ".json")).read_text())
    saved = document.run_analyses
    document.run_analyses = lambda *_a, **_k: committed["analyses"]
    try:
        doc = json.loads(json.dumps(document.build_document(case, header, contents.trials, ROOT,
                                                            path.resolve(), False)))
    finally:
        document.run_analyses = saved
    assert validation_errors(doc) == [] and meaning_errors(doc) == []
    assert all(c["decision"] == "supported" and c["deterministic"]["checked"]
               and c["alpha"] == pytest.approx(0.05 - 2 ** -6) for c in doc["claims"])
    statement = design_statement(doc)
    assert "alpha = 0.05 over all of them and all looks, of which the case's declaration of " \
           "deterministic outcomes spends 0.0156 and the design 0.0344" in statement
    assert any("checked: no two valid trials of an arm differ in their signature" in s
               for s in doc["verdict"]["sentences"])
