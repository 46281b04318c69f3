"""gpurepro.analyze.declared: a verdict declared as data (Conclusion.declared) evaluated from a
run's decisions: the first row whose conditions hold, an owner only on its supported claims,
readings of a build analysis, evidence labelled with where it was read."""

from __future__ import annotations

import dataclasses

from gpurepro.analyze import declared
from gpurepro.case import load_case
from gpurepro.case.declared import Branch, Declared, Evidence, Measure, Reading, StageMeasure
from gpurepro.model.result import Analysis
from tests.conftest import ROOT

CASE = load_case("cases/tcgen05_alloc_order", ROOT)
ARM = {"factors": {}, "n": 4, "n_valid": 4, "failures": 4, "outcomes": {"cuda_error": 4},
       "proportion": {"estimate": 1.0, "ci95": [0.4, 1.0]}, "errors": {"cudaErrorLaunchFailure": 4}}


def _analysis(decisions, sass=None):
    return Analysis.of({"case": {"name": CASE.name, "baseline": CASE.baseline},
                        "device": {"name": "GPU X", "compute_capability": "10.3"},
                        "summary": {CASE.baseline: ARM},
                        "claims": [{"name": n, "decision": d} for n, d in decisions.items()],
                        "analyses": {"sass": sass} if sass else {}})


TABLE = Declared(
    branches=(Branch("gone", when={"a": "contradicted"}),
              Branch("owned", when={"a": ("supported",), "b": "!supported"}, any_supported=("x", "y"),
                     owner="owner on {target}, b {decision[b]}", because=("a", "x", "y"),
                     sentence="b is {decision[b]}", next="rerun: {rerun}")),
    measures=(Measure("Base {arm}: {prop}.", (CASE.baseline, "no-such-arm")),),
    readings=(Reading("read {finding[f]}", when={"f": "*"}), Reading("never", when={"g": False})),
    evidence=(Evidence("Practice", "they synchronise", ("https://example.org/a",)),),
    target="sm_1xx")


def _conclude(decisions, sass=None):
    return declared.conclude(CASE, _analysis(decisions, sass), TABLE)


def test_the_first_row_whose_conditions_hold_gives_the_status_and_only_supported_claims_back_the_owner():
    v = _conclude({"a": "supported", "b": "not_decided", "x": "contradicted", "y": "supported"})
    assert v["status"] == "owned"
    assert v["owner"] == "owner on sm_1xx, b not decided" and v["owner_because"] == ["a", "y"]
    assert "b is not decided" in v["sentences"]
    assert v["next"][0] == "rerun: `python -m gpurepro run tcgen05_alloc_order --until-decided`"
    assert _conclude({"a": "contradicted"})["status"] == "gone"


def test_no_row_is_inconclusive_and_names_no_owner():
    for decisions in ({"a": "supported", "b": "supported", "y": "supported"},
                      {"a": "supported", "x": "contradicted", "y": "not_decided"}):
        v = _conclude(decisions)
        assert v["status"] == "inconclusive" and v["owner"] is None


def test_measures_readings_and_evidence_are_sentences_in_order():
    sass = {"available": True, "findings": [{"id": "f", "value": "SYNCS [peer]"}]}
    v = _conclude({"a": "contradicted"}, sass)
    assert v["sentences"][1:] == [
        f"Base {CASE.baseline}: 4/4 failed (100%, 95% CI 40%-100%); cudaErrorLaunchFailure x4.",
        "read SYNCS [peer]", "Practice: they synchronise (read at https://example.org/a)."]
    assert "read SYNCS" not in " ".join(_conclude({"a": "contradicted"})["sentences"])


def test_stage_markers_name_each_ctas_most_common_last_stage_and_where_every_trial_stuck():
    stages = {"cta0:end": 3, "cta0:dealloc": 1, "cta1:before_alloc": 4}
    stuck = ("cta1", "before_alloc", "CTA1 never left alloc.", "Hypothesis: alloc faults.")
    table = Declared(branches=(), measures=(StageMeasure(CASE.baseline, stuck),))
    def conclude(**arm):
        return declared.conclude(CASE, Analysis.of({
            "case": {"name": CASE.name, "baseline": CASE.baseline}, "device": {"name": "GPU X"},
            "summary": {CASE.baseline: {**ARM, **arm, "observations": {"stages": stages}}},
            "claims": []}), table)

    v = conclude()
    assert v["sentences"][1:] == [
        f"Progress markers of {CASE.baseline} over 4 trials (4 failed): CTA0 last reached 'end' "
        "in 3/4, CTA1 last reached 'before_alloc' in 4/4.", "CTA1 never left alloc."]
    assert v["hypotheses"] == ["Hypothesis: alloc faults."]
    v = conclude(failures=3)  # one trial ended well: no hypothesis
    assert v["sentences"][-1].startswith("Progress markers") and v["hypotheses"] == []


def test_holds_reads_negations_and_alternatives():
    a = _analysis({"a": "supported"})
    assert declared.holds(a, {"a": ("contradicted", "supported"), "z": "!supported"})
    assert not declared.holds(a, {"a": "!supported"})
    assert declared.holds(a, {"z": "absent"})


def test_the_conclusion_replaces_a_verdict_function():
    assert CASE.verdict is None and CASE.conclusion.declared is not None
    plain = dataclasses.replace(CASE.conclusion, declared=None)
    assert plain.reproduces == ("baseline-launch-failure",)


def test_a_row_may_need_a_declared_measurement_and_a_supported_claim_of_each_group():
    rows = (Branch("owned", when={"a": ("supported", "absent"), "b": ("supported", "absent")},
                   any_of=(("r1", "r2"), ("a", "b")), facts={"in_lib": True},
                   owner="the library: so do {supported[a, b]}", because=("r1", "r2", "a", "b"),
                   next=("Hand it over.", "Rerun on {target}.")),
            Branch("reproduced", any_of=(("r1", "r2"),)))
    table = Declared(branches=rows, target="sm_1xx",
                     facts={"in_lib": lambda analysis: analysis.device.name == "GPU X"})
    v = declared.conclude(CASE, _analysis({"r2": "supported", "b": "supported"}), table)
    assert (v["status"], v["owner"], v["owner_because"]) == (
        "owned", "the library: so do b", ["r2", "b"])
    assert v["next"][:2] == ["Hand it over.", "Rerun on sm_1xx."]
    off = dataclasses.replace(table, facts={"in_lib": lambda analysis: False})
    v = declared.conclude(CASE, _analysis({"r2": "supported", "b": "supported"}), off)
    assert (v["status"], v["owner"]) == ("reproduced", None)
    v = declared.conclude(CASE, _analysis({"r2": "supported", "b": "contradicted"}), table)
    assert v["status"] == "reproduced"
