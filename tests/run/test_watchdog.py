"""Whose processes a watchdog's sweep takes: its own harness's, never another harness's (of
another run, or of the same run's start or resume), even where a command line matches one it
was told had escaped; and a resume ends every earlier harness of its run before its first
trial."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

from gpurepro.case.model import TrialBudget
from gpurepro.run import procs
from gpurepro.run.execute import RunOptions
from gpurepro.run.watchdog import (
    RUN_ID_VARIABLE,
    SWEEP_GRACE_S,
    SWEEP_LIMIT_S,
    Watchdog,
    end_earlier_harnesses,
    watchdogs_of,
)

SLEEPER = "import time\nwhile True: time.sleep(1)"


def _sleeper(marker: str, tag: str | None) -> subprocess.Popen:
    """A process with one command line for every ``marker``; tagged as a harness's trial, or
    with the tag cleared as an escapee clears it."""
    env = {k: v for k, v in os.environ.items() if k != RUN_ID_VARIABLE}
    if tag is not None:
        env[RUN_ID_VARIABLE] = tag
    return subprocess.Popen([sys.executable, "-c", SLEEPER, "gpurepro-sleeper", marker], env=env,
                            start_new_session=True)


def _start_time(p: subprocess.Popen) -> int:
    found = procs.proc(p.pid)
    assert found is not None
    return found.start


def _ended(p: subprocess.Popen) -> bool:
    return not procs.alive(p.pid)


def _clean(*ps: subprocess.Popen) -> None:
    for p in ps:
        p.kill()
        p.wait()


def _options(run_id: str) -> RunOptions:
    return RunOptions(budget=TrialBudget(0.1, 0, 1.0), run_id=run_id)


def test_each_harness_of_a_run_tags_its_trials_with_a_token_of_its_own():
    run_id = uuid.uuid4().hex
    start, resume = _options(run_id), _options(run_id)
    assert start.tag != resume.tag
    assert start.tag.startswith(f"{run_id}/") and resume.tag.startswith(f"{run_id}/")


def test_a_sweep_takes_its_own_harness_and_escapees_never_another_harness_trials():
    marker = uuid.uuid4().hex
    run_id = uuid.uuid4().hex
    mine, resumed = _options(run_id).tag, _options(run_id).tag
    other_run = _options(uuid.uuid4().hex).tag
    with Watchdog(mine) as watchdog:
        own_trial = _sleeper(marker, mine)
        named = _sleeper(marker, None)  # an escapee the containment found and named
        watchdog.tell(f"orphan {named.pid} {_start_time(named)}")
        unnamed = _sleeper(marker, None)  # one more with its command line, never named
        resumed_trial = _sleeper(marker, resumed)  # same run, a later harness, same command line
        other_trial = _sleeper(marker, other_run)  # another run of the same case
        survivors = (resumed_trial, other_trial)
        try:
            watchdog.stop(timeout=SWEEP_LIMIT_S + SWEEP_GRACE_S)  # the harness is gone: it sweeps
            assert [_ended(p) for p in (own_trial, named, unnamed)] == [True] * 3
            assert [_ended(p) for p in survivors] == [False, False]
        finally:
            _clean(own_trial, named, unnamed, *survivors)


def test_a_resume_waits_for_the_earlier_harness_watchdog_and_kills_every_earlier_tag():
    run_id = uuid.uuid4().hex
    earlier = _options(run_id).tag
    marker = uuid.uuid4().hex
    watchdog = Watchdog(earlier).start()
    assert watchdog.proc is not None
    trial = _sleeper(marker, earlier)
    # A trial of a harness from before tags were per harness: the run id alone.
    old_style = _sleeper(marker, run_id)
    try:
        assert watchdog.pid in watchdogs_of(run_id)
        assert watchdog.proc.stdin is not None
        watchdog.proc.stdin.close()  # the harness was killed: its watchdog sweeps, then exits
        end_earlier_harnesses(run_id)
        assert watchdog.proc.poll() is not None  # nothing of it can act beside the resume
        assert _ended(trial) and _ended(old_style)
    finally:
        _clean(trial, old_style)
        watchdog.proc.kill()
        watchdog.proc.wait()


def test_an_earlier_watchdog_that_does_not_end_is_killed_and_named():
    run_id = uuid.uuid4().hex
    stuck = Watchdog(_options(run_id).tag).start()  # its pipe held open: it never sweeps
    assert stuck.proc is not None
    said: list[str] = []
    try:
        end_earlier_harnesses(run_id, said.append, wait_s=0.2)
        assert stuck.proc.wait(timeout=SWEEP_LIMIT_S) == -9
        assert said == [f"the interrupted run's watchdog (pid {stuck.pid}) had not finished its "
                        f"sweep within 0.2 s; killed it"]
    finally:
        stuck.proc.kill()
        stuck.proc.wait()


def _fake_proc(root, pid: int, environ: bytes, cmdline: bytes, start: int = 100):
    """/proc/<pid> as the watchdog reads it: stat (state, group, session, start time), the
    initial environment and the command line."""
    entry = root / str(pid)
    entry.mkdir(parents=True)
    rest = ["S", "1", str(pid), str(pid)] + ["0"] * 15 + [str(start)]
    (entry / "stat").write_text(f"{pid} (x) {' '.join(rest)}\n")
    (entry / "environ").write_bytes(environ)
    (entry / "cmdline").write_bytes(cmdline)


def test_a_process_caught_in_its_exec_is_never_taken_for_an_escapee(tmp_path):
    # In the middle of an exec (a trial of another run starting) a process's environment and
    # command line both read as empty, as a zombie's do: an empty command line learnt from an
    # orphan that was exiting once matched, and another run's trial was killed at its start.
    from gpurepro.run.watchdog import Escaped, Tag, _of_run

    mine = Tag(_options(uuid.uuid4().hex).tag)
    _fake_proc(tmp_path, 11, b"", b"")
    _fake_proc(tmp_path, 12, b"HOME=/\0", b"sleep\0infinity\0")
    _fake_proc(tmp_path, 13, f"{RUN_ID_VARIABLE}=other/1\0".encode(), b"sleep\0infinity\0")
    like = Escaped(frozenset({b"", b"sleep\0infinity\0"}), since=0)
    assert not _of_run(11, mine, like, tmp_path)
    assert _of_run(12, mine, like, tmp_path)  # untagged, with an escapee's command line
    assert not _of_run(13, mine, like, tmp_path)  # another harness's


def test_an_exiting_orphan_gives_no_command_line_to_look_for():
    from gpurepro.run.watchdog import escapee_cmdline

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        assert procs.wait_gone(child.pid, _start_time(child), 60)  # a zombie, not reaped yet
        assert escapee_cmdline(child.pid) is None
    finally:
        child.wait()
    assert escapee_cmdline(os.getpid()) == Path("/proc/self/cmdline").read_bytes()
