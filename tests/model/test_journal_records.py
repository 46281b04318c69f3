"""A journal's lines as types (gpurepro.model.journal): every committed journal's header and
trials read and written back key for key, and a line of the wrong shape named in one line."""

from __future__ import annotations

import json

import pytest

from gpurepro.errors import JournalError
from gpurepro.model.journal import RunHeader, TrialRecord
from gpurepro.run import journal
from tests.conftest import ROOT

JOURNALS = sorted(ROOT.glob("results/**/*.journal.jsonl"))


def test_every_committed_journal_reads_and_writes_back_byte_for_byte():
    assert len(JOURNALS) > 50
    for path in JOURNALS:
        contents = journal.read(path)
        run = contents.run
        assert json.dumps(run.to_json()) == json.dumps(contents.header), path
        assert run.case == contents.header["case"] and run.plan.case == run.case
        assert run.design.to_json() == contents.header["options"].get("stopping")
        for record, trial in zip(contents.records, contents.trials, strict=True):
            assert json.dumps(record.to_json()) == json.dumps(trial), path
            assert record.arm in run.plan.arms and record.outcome == trial["outcome"]


def test_a_header_or_trial_of_the_wrong_shape_is_one_line_naming_its_field():
    header = journal.read(JOURNALS[-1]).header
    budget = {**header["options"]["budget"], "timeout_s": "soon"}
    with pytest.raises(JournalError, match=r"options\.budget: timeout_s: a finite number") as e:
        RunHeader.from_json({**header, "options": {**header["options"], "budget": budget}})
    assert "\n" not in str(e.value)
    with pytest.raises(JournalError, match="case: a string expected"):
        RunHeader.from_json({**header, "case": 3})
    with pytest.raises(JournalError, match="index: a whole number expected"):
        TrialRecord.from_json({"index": "1", "arm": "a", "rep": 0, "outcome": "survived"})
    with pytest.raises(JournalError, match="exposure: a finite number expected"):
        TrialRecord.from_json({"index": 1, "arm": "a", "rep": 0, "outcome": "survived",
                               "exposure": float("nan")})
