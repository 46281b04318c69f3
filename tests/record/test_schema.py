"""Documents against schema/result.schema.json: malformed ones are rejected with the field's path."""

from __future__ import annotations

import copy
import json

import pytest

from gpurepro.errors import RecordError
from gpurepro.record.document import write_document
from gpurepro.record.validation import validate_document, validation_errors


@pytest.fixture(scope="module")
def good_doc(fake_case, fake_build, root):
    from gpurepro.case import TrialBudget
    from gpurepro.model.plan import make_plan
    from gpurepro.record.document import build_document
    from gpurepro.run.execute import RunOptions, execute_plan
    from gpurepro.run.journal import Journal, read

    _, index = fake_build
    plan = make_plan("fake_case", fake_case.resolved_arms(), 2, seed=1, selected=["crash", "ok"])
    opts = RunOptions(budget=TrialBudget(0.3, 0, 3.0))
    import tempfile
    from pathlib import Path

    from gpurepro.env import fingerprint as env

    with tempfile.TemporaryDirectory() as tmp:
        header = {"case": "fake_case", "started_at": "2026-01-01T00:00:00Z", "plan": plan.to_json(),
                  "options": {"budget": opts.budget.__dict__, "jobs": 1, "gpus": [], "stopping": None},
                  "environment": env.fingerprint(root, redact=True),
                  "device": {"supported": True, "target": "host", "name": None,
                             "compute_capability": None, "reason": None},
                  "toolchain": index["toolchain"], "artifacts": index["artifacts"], "probe": None}
        journal = Journal.create(Path(tmp) / "j.jsonl", header)
        execute_plan(fake_case, plan, index, root, journal, opts)
        contents = read(journal.path)
        h, trials = contents.header, contents.trials
        return build_document(fake_case, h, trials, root)


def test_a_real_document_is_valid(good_doc):
    assert validation_errors(good_doc) == []
    assert good_doc["summary"]["crash"]["failures"] == 2


@pytest.mark.parametrize(
    "mutate, where",
    [
        (lambda d: d["trials"][0].__setitem__("outcome", "exploded"), "trials/0/outcome"),
        (lambda d: d["summary"]["crash"]["proportion"].__setitem__("estimate", 1.5),
         "summary/crash/proportion/estimate"),
        (lambda d: d["artifacts"]["testdriver"].__setitem__("sha256", "xyz"), "artifacts/testdriver/sha256"),
        (lambda d: d["verdict"].__setitem__("sentences", []), "verdict/sentences"),
        (lambda d: d["artifacts"]["testdriver"].__setitem__("path", "/home/someone/x"),
         "artifacts/testdriver/path"),
    ],
)
def test_malformed_documents_are_rejected_with_the_path(good_doc, mutate, where):
    bad = copy.deepcopy(good_doc)
    mutate(bad)
    errors = validation_errors(bad)
    assert any(e.startswith(where + ":") for e in errors), errors


def test_survived_with_zero_exposure_is_invalid_by_schema(good_doc):
    bad = copy.deepcopy(good_doc)
    t = next(t for t in bad["trials"] if t["outcome"] == "survived")
    t["exposure"] = 0
    assert validation_errors(bad)


def test_invalid_document_is_never_written(good_doc, tmp_path):
    bad = copy.deepcopy(good_doc)
    bad["schema"] = "something else"
    with pytest.raises(RecordError):
        write_document(bad, tmp_path / "r.json")
    assert not (tmp_path / "r.json").exists()
    write_document(good_doc, tmp_path / "ok.json")
    validate_document(json.loads((tmp_path / "ok.json").read_text()))
