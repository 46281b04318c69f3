"""A stop signal that arrives while a journal record is being written (its fsync takes
milliseconds) waits until the record is whole and the hash chain follows it: the records written
after the stop (a cluster run saves its scheduler state when stopped) chain from it, and the
journal reads back whole."""

from __future__ import annotations

import os
import signal
import time

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


@pytest.mark.parametrize("held", [True, False])
def test_a_stop_while_a_thread_starts_leaves_it_started_and_prints_nothing(monkeypatch, held):
    """A SIGTERM raised inside ``Thread.start``, just after the new thread began: started with
    the stops held (run.stops.start_thread, as the containment thread and the trial workers
    are), the thread runs, the stop is raised once start returns, and no traceback reaches
    stderr; started plainly, the new thread lost its place in threading's table and printed
    one (the KeyError a fault test found on the run's stderr)."""
    import threading

    from gpurepro.run.stops import start_thread

    unraisable = []
    monkeypatch.setattr("sys.unraisablehook", unraisable.append)
    real_start = threading._start_new_thread  # type: ignore[attr-defined]
    stops = []

    def start_then_stopped(*args):
        got = real_start(*args)
        if not stops:  # the thread has begun: a SIGTERM arrives before start() returns
            stops.append(1)
            signal.raise_signal(signal.SIGTERM)
        return got

    monkeypatch.setattr(threading, "_start_new_thread", start_then_stopped)
    ran = threading.Event()
    thread = threading.Thread(target=ran.set, daemon=True)
    if held:
        with stop_signals():
            with pytest.raises(Stopped):
                start_thread(thread)
        thread.join(timeout=30)
        assert ran.is_set() and not unraisable
        return
    # What start_thread prevents, shown so that this test can tell the two apart. Which of the
    # two threads meets the missing entry first is a race: the new one, if start() took it out
    # while the stop unwound (its KeyError goes to the unraisable hook), or start() itself, if
    # the new thread had already moved itself from the table (a KeyError raised over the stop).
    with stop_signals():
        with pytest.raises((Stopped, KeyError)) as raised:
            thread.start()
    if isinstance(raised.value, KeyError):
        assert isinstance(raised.value.__context__, Stopped)
        return
    for _ in range(3000):
        if unraisable:
            break
        time.sleep(0.01)
    assert unraisable and isinstance(unraisable[0].exc_value, KeyError)
