"""A stop signal that arrives while a journal record is being written (its fsync takes
milliseconds) waits until the record is whole and the hash chain follows it: the records written
after the stop (a cluster run saves its scheduler state when stopped) chain from it, and the
journal reads back whole."""

from __future__ import annotations

import os
import signal

import pytest

from gpurepro.errors import Stopped
from gpurepro.run import journal as journal_mod
from gpurepro.run.execute import stop_signals


def test_a_stop_during_a_records_fsync_is_raised_after_it_and_the_chain_holds(tmp_path, monkeypatch):
    path = tmp_path / "j.journal.jsonl"
    journal = journal_mod.Journal.create(path, {"case": "c"})
    real_fsync = os.fsync
    stops = []

    def fsync_then_stopped(fd: int) -> None:
        real_fsync(fd)
        if not stops:  # the first record's fsync: a SIGTERM arrives while it runs
            stops.append(1)
            signal.raise_signal(signal.SIGTERM)

    monkeypatch.setattr(journal_mod.os, "fsync", fsync_then_stopped)
    with stop_signals():
        with pytest.raises(Stopped):
            journal.append_scheduler({"jobs": {}, "resubmitted": 0})
        # What a stopped cluster run writes next: its scheduler state again.
        journal.append_scheduler({"jobs": {}, "resubmitted": 1})
    journal.close()
    contents = journal_mod.parse(path.read_bytes(), str(path))
    assert contents.chained
    assert contents.header["scheduler_state"]["resubmitted"] == 1
