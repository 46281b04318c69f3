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
                   when={"per-thread": "supported", "two-contexts": "absent"})
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
    arm = {"factors": {}, "n": 3, "n_valid": 3, "failures": 0, "outcomes": {"survived": 3},
             "proportion": {"estimate": 0.0, "ci95": [0.0, 0.7]}, "errors": {}}
    return Analysis.of({"case": {"name": "x", "baseline": "right"}, "device": {},
                        "summary": {"wrong": arm}, "crash_sites": [], "analyses": {},
                        "claims": [claim], "trials": []})


def test_a_conclusion_states_its_hypotheses_where_they_hold():
    case = load_case(ROOT / CASE, ROOT)
    h = Hypothesis("the wrong spec is wrong by design.", when={"wrong-is-wrong": "supported"})
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


def test_consistent_and_against_phrases_name_the_supported_arms_and_end_the_sentence():
    h = Hypothesis("the instruments hide it ({named})", label="", names=("c1", "c2"),
                   any_of=(("c1", "c2"),), consistent=(({"a": "supported"}, "a shows it"),),
                   against=(({"b": "!contradicted"}, "b does not"),))
    arms = {"c1": "arm-one", "c2": "arm-two"}
    assert stated(h, _decisions(a="supported"), arms) is None  # no claim of any_of supported
    assert stated(h, _decisions(c2="supported", a="supported", b="contradicted"), arms) == (
        "Hypothesis: the instruments hide it (arm-two); consistent with it, a shows it.")
    assert stated(h, _decisions(c1="supported", c2="supported"), arms) == (
        "Hypothesis: the instruments hide it (arm-one, arm-two); against it, b does not.")
    assert h.claims() == ("c1", "c2", "a", "b")


def test_a_declared_verdict_states_the_same_hypotheses_as_a_conclusion():
    from gpurepro.analyze import declared
    from gpurepro.case.declared import Branch, Declared

    case = load_case(ROOT / CASE, ROOT)
    h = Hypothesis("the wrong spec is wrong by design.", label="not run",
                   when_run=("wrong-is-wrong",), predictions=("wrong-is-wrong",))
    said = ("Hypothesis (not run): the wrong spec is wrong by design. Its predictions, as claims "
            "of this run: supported wrong-is-wrong; contradicted none; not decided none.")
    table = Declared(branches=(Branch("reproduced"),), hypotheses=(h,))
    assert declared.conclude(case, _analysis("supported"), table)["hypotheses"] == [said]
    case = replace(case, conclusion=replace(case.conclusion, hypotheses=(h,)))
    assert concluded(case, _analysis("supported"))["hypotheses"] == [said]


def test_a_declared_hypothesis_naming_no_claim_of_the_case_is_refused_in_one_line():
    from gpurepro.case.declared import Branch, Declared

    case = load_case(ROOT / CASE, ROOT)
    table = Declared(branches=(Branch("reproduced"),),
                     hypotheses=(Hypothesis("x", any_of=(("nope",),)),))
    bad = replace(case.conclusion, declared=table)
    with pytest.raises(ManifestError) as err:
        validate(replace(case, conclusion=bad), case.path)
    assert "conclusion.declared.hypotheses[0]: 'nope' is not one of" in str(err.value)
