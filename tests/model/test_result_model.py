"""A result document as one type (gpurepro.model.result.Result): every committed document read
and kept as recorded, its case, plan, design, views and verdict typed."""

from __future__ import annotations

import json

from gpurepro.model.result import Completion, Result, as_result
from tests.conftest import ROOT


def _results():
    for path in sorted(ROOT.glob("results/*/*.json")):
        doc = json.loads(path.read_text())
        if str(doc.get("schema", "")).startswith("gpurepro/result"):
            yield path, doc


def test_every_committed_result_reads_whole_and_keeps_what_it_records():
    results = list(_results())
    assert len(results) > 20
    for path, doc in results:
        result = Result.of(doc)
        assert json.dumps(result.to_json()) == json.dumps(doc), path
        assert result.case.name == doc["case"]["name"] == result.plan.case
        assert result.case.baseline in result.analysis.arms
        assert result.design.to_json() == doc["plan"]["options"].get("stopping")
        assert result.verdict is not None and result.verdict.status == doc["verdict"]["status"]
        assert len(result.analysis.trials) == len(doc["trials"])


def test_every_committed_result_types_what_its_report_reads():
    for path, doc in _results():
        result = Result.of(doc)
        env = doc["environment"]
        assert [g.name for g in result.environment.gpu.gpus] == [
            g.get("name") for g in env["gpu"].get("gpus") or []], path
        assert result.environment.gpu.driver_version == env["gpu"].get("driver_version")
        assert result.environment.fingerprint == env
        assert result.device.uuid == doc["device"].get("uuid")
        assert result.options.jobs == doc["plan"]["options"].get("jobs", 1)
        assert {n: a.sha256 for n, a in result.artifacts.items()} == {
            n: a["sha256"] for n, a in doc["artifacts"].items()}
        assert set(result.comparisons) == set(doc.get("comparisons") or {})
        assert [c.name for c in result.claims] == [c["name"] for c in doc["claims"]]
        assert result.claims_recorded
        assert result.verdict is not None
        assert result.verdict.stopped == (doc["verdict"].get("stopped") or None)
        assert result.case.exposure_counter == doc["case"]["exposure"]["counter"]


def _minimal(**top):
    """The least a result document holds, as the oldest committed ones hold it."""
    doc = {"case": {"name": "c", "baseline": "a", "exposure": {"unit": "cycles", "per": 1e6}},
           "plan": {"case": "c", "seed": 1, "arms": {"a": {}}, "trials_per_arm": {"a": 1},
                    "order": [{"index": 0, "arm": "a", "rep": 0}], "options": {}},
           "summary": {"a": {"n": 1, "n_valid": 1, "failures": 0}},
           "claims": [], "verdict": {"status": "not_reproduced"}, "trials": []}
    doc.update(top)
    return doc


def test_a_field_an_old_document_lacks_gets_the_default_its_report_used():
    result = Result.of(_minimal())
    assert result.completion == Completion()  # no completion record: counted from the trials
    assert result.cluster is None and result.options.jobs == 1 and not result.options.redact
    assert result.environment.gpu.gpus == () and result.environment.host_python is None
    assert result.case.reported is None and result.case.deeper is None
    assert result.case.exposure_words == "cycles" and result.case.exposure_counter is None
    assert result.verdict is not None and result.verdict.owner_because is None
    assert result.verdict.stopped is None and result.verdict.exploratory == ()
    assert dict(result.comparisons) == {} and dict(result.artifacts) == {}
    assert result.to_json() == _minimal()


def test_a_document_recorded_before_claims_reads_with_none():
    doc = _minimal()
    del doc["claims"]
    result = Result.of(doc)
    assert result.claims == () and not result.claims_recorded
    assert result.to_json() == doc


def test_the_parts_read_what_the_document_says():
    result = Result.of(_minimal(
        completion={"trials": 3, "planned": 8, "complete": False,
                    "resume": "python -m gpurepro run c --resume j"},
        cluster={"nodes": {"n1": {}, "n2": {}}, "partitions": ["gpu"]},
        comparisons={"a": {"rate_ratio": {"estimate": 2.0, "ci95": [1.0, None],
                                          "p_value": 0.01}}},
        verdict={"status": "reproduced", "owner": "driver", "owner_because": ["x"],
                 "stopped": "budget", "exploratory": ["e"]}))
    assert result.completion == Completion(trials=3, planned=8, complete=False,
                                           resume="python -m gpurepro run c --resume j")
    assert result.cluster is not None and result.cluster.nodes == 2
    assert result.cluster.partitions == ("gpu",)
    comparison = result.comparisons["a"]
    assert comparison.rate_ratio is not None and comparison.rate_ratio.ci95 == (1.0, None)
    assert comparison.rate_ratio_p == 0.01
    assert result.verdict is not None and result.verdict.owner_because == ("x",)
    assert result.verdict.stopped == "budget" and result.verdict.exploratory == ("e",)
    assert as_result(result) is result
    assert as_result(_minimal()) == Result.of(_minimal())
