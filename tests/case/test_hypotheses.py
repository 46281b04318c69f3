"""gpurepro.case.hypotheses: what no arm isolates, declared, and stated labelled in the verdict
only where the run's decisions are as declared (by a verdict function or a Conclusion)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gpurepro.analyze.verdict import concluded
from gpurepro.case import Conclusion, ManifestError, load_case, validate
from gpurepro.case.hypotheses import Hypothesis, Said, by_decision, stated
from gpurepro.model.result import Analysis
from tests.conftest import ROOT


def _decisions(**d):
    return lambda name: d.get(name.replace("-", "_"))


def test_stated_with_its_label_where_its_conditions_hold():
    h = Hypothesis("the state is per context.", label="confounded",
                   when={"per-thread": ("supported",), "two-contexts": (None,)})
    assert stated(h, _decisions(per_thread="supported")) == (
        "Hypothesis (confounded): the state is per context.")
    assert stated(h, _decisions(per_thread="supported", two_contexts="not_decided")) is None
    assert stated(h, _decisions(per_thread="contradicted")) is None


def test_an_arm_run_or_not_run_decides_whether_it_is_stated():
    h = Hypothesis("a lock around unloads alone avoids it.", label="not run",
                   when_run=("one-thread", "serialized"), unless_run=("lock",))
    assert stated(h, _decisions()) is None  # none of its arms ran
    assert stated(h, _decisions(serialized="not_decided")).startswith("Hypothesis (not run): ")
    assert stated(h, _decisions(serialized="supported", lock="not_decided")) is None


def test_predictions_are_listed_by_decision_and_then_sentences_follow_theirs():
    h = Hypothesis("a table resized at powers of two.", predictions=("a", "b", "c"),
                   then=(Said("And b.", {"b": ("contradicted",)}), Said("Never.", {"c": ("x",)})))
    d = _decisions(a="supported", b="contradicted")
    assert by_decision(h.predictions, d) == "supported a; contradicted b; not decided none"
    assert stated(h, d) == ("Hypothesis (no arm isolates it): a table resized at powers of two. "
                            "Its predictions, as claims of this run: supported a; contradicted b; "
                            "not decided none. And b.")
    assert h.claims() == ("a", "b", "c")


CASE = "tests/fixtures/cubin_check_case"


def _analysis(decision):
    claim = {"name": "wrong-is-wrong", "kind": "outcome", "arm": "wrong", "decision": decision,
             "family": "confirmatory", "sentence": "."}
    return Analysis.of({"case": {"name": "x", "baseline": "right"}, "device": {}, "summary": {},
                        "crash_sites": [], "analyses": {}, "claims": [claim], "trials": []})


def test_a_conclusion_states_its_hypotheses_where_they_hold():
    case = load_case(ROOT / CASE, ROOT)
    h = Hypothesis("the wrong spec is wrong by design.", when={"wrong-is-wrong": ("supported",)})
    case = replace(case, conclusion=replace(case.conclusion, hypotheses=(h,)))
    assert concluded(case, _analysis("supported"))["hypotheses"] == [
        "Hypothesis (no arm isolates it): the wrong spec is wrong by design."]
    assert concluded(case, _analysis("not_decided"))["hypotheses"] == []


def test_a_hypothesis_naming_no_claim_of_the_case_is_refused_in_one_line():
    case = load_case(ROOT / CASE, ROOT)
    bad = Conclusion(reproduces=("wrong-is-wrong",),
                     hypotheses=(Hypothesis("x", when_run=("nope",)),))
    with pytest.raises(ManifestError) as err:
        validate(replace(case, conclusion=bad), case.path)
    assert "conclusion.hypotheses[0]: 'nope' is not one of" in str(err.value)
