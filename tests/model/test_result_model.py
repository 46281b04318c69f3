"""A result document as one type (gpurepro.model.result.Result): every committed document read
and kept as recorded, its case, plan, design, views and verdict typed."""

from __future__ import annotations

import json

from gpurepro.model.result import Result
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
