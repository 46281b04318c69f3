"""Every committed journal re-records to its committed document, byte for byte.

This is what proves a move or refactor behaviour-identical (tests/rerecord.py says which
fields describe the recording checkout and are taken from the committed document)."""

from __future__ import annotations

import pytest

from tests import rerecord

JOURNALS = rerecord.committed_journals()


def test_there_are_committed_journals_to_re_record():
    assert len(JOURNALS) >= 12


# Every committed document re-rendered: the slow tier's (make check), with the refactors it
# guards; the fast tier records fresh documents from the fake case instead.
@pytest.mark.slow
@pytest.mark.parametrize("path", JOURNALS, ids=[p.name.split("_")[0] for p in JOURNALS])
def test_committed_journal_re_records_to_its_document(path):
    doc, committed = rerecord.rerecord(path)
    assert rerecord.normalized(doc, committed) == rerecord.document_of(path).read_text(), (
        f"{rerecord.document_of(path).name} differs when re-recorded: "
        "run python tests/rerecord.py to see which fields")


# One test per document: rendering every document's pictures is minutes of matplotlib on a
# loaded machine, more than one test's timeout. The slow tier's (re-rendering every committed
# document); re-recording them, above, is the fast tier's.
@pytest.mark.slow
@pytest.mark.parametrize("path", JOURNALS, ids=[p.name.split("_")[0] for p in JOURNALS])
def test_committed_document_renders_to_its_committed_files(path, tmp_path):
    assert rerecord.render_difference(path, tmp_path) == []
