"""Real trial processes that survive, crash, hang, fail or print nothing -> one outcome each."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from gpurepro.case import TrialBudget
from gpurepro.model.plan import PlannedTrial
from gpurepro.run.execute import RunOptions, execute_trial
from gpurepro.run.trial import run_trial
from tests import pace

BUDGET = TrialBudget(duration_s=0.3, max_exposure=0, timeout_s=3.0)


def _trial(fake_case, fake_build, root, mode: str, budget: TrialBudget = BUDGET) -> dict:
    _, index = fake_build
    planned = PlannedTrial(0, mode.replace("_", "-"), 0)
    return execute_trial(fake_case, planned, {"mode": mode}, index, root,
                         RunOptions(budget=budget), gpu=None, worker=0)


@pytest.mark.parametrize(
    "mode, outcome, detail",
    [
        ("ok", "survived", "budget used up"),
        ("crash", "crashed", "SIGSEGV"),
        ("abort", "crashed", "SIGABRT"),
        ("cuda_error", "cuda_error", "CUDA_ERROR_LAUNCH_FAILED"),
        ("unsupported", "unsupported", None),
        ("no_driver", "unsupported", None),
        ("noprogress", "invalid", "no progress: cycles = 0"),
        ("silent", "harness_error", None),
        ("garbage", "harness_error", None),
    ],
)
def test_each_mode_has_exactly_its_outcome(fake_case, fake_build, root, mode, outcome, detail):
    rec = _trial(fake_case, fake_build, root, mode)
    assert rec["outcome"] == outcome, rec
    if detail:
        assert rec["detail"] == detail


def test_crash_record_names_signal_pc_mapping_and_frames(fake_case, fake_build, root):
    rec = _trial(fake_case, fake_build, root, "crash")
    crash = rec["crash"]
    assert rec["exit"]["signal"] == "SIGSEGV"
    assert crash["signal"] == "SIGSEGV" and crash["code_name"] == "SEGV_MAPERR"
    assert crash["pc_module"] == "testdriver"
    assert crash["pc_offset"].startswith("0x")
    assert crash["frames"] and all(f["module"] for f in crash["frames"])
    # The exact counters at the fault come from the crash record, not a lagging heartbeat.
    assert rec["counters"]["cycles"] > 0 and rec["exposure"] == rec["counters"]["cycles"]


def test_hang_is_killed_at_the_limit_with_its_whole_group(root, fake_build):
    _, index = fake_build
    driver = root / index["artifacts"]["testdriver"]["path"]
    started = time.monotonic()
    done = run_trial([str(driver), "hang"], dict(os.environ), root, timeout_s=1.0)
    # Killed at its limit, not long after: within what 20 of this machine's harness start-ups
    # take now (6 s idle), for the kill and the reaping.
    assert done.observed.timed_out and 1.0 <= time.monotonic() - started < 1.0 + pace.limit_s(20)
    # The hang mode forked a sleeping child into the trial's process group: nothing of the
    # group survives the kill (its members end as the kernel gets to them).
    assert pace.until(lambda: _live_members(done.pid) == []), _live_members(done.pid)


def _live_members(pgid: int) -> list[int]:
    """Processes of a group that are still running (zombies awaiting a reaper are dead)."""
    live = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        state, pgrp = fields[0], int(fields[2])
        if pgrp == pgid and state != "Z":
            live.append(int(stat.parent.name))
    return live


def test_hang_classifies_as_hung(fake_case, fake_build, root):
    rec = _trial(fake_case, fake_build, root, "hang",
                 TrialBudget(duration_s=0.3, max_exposure=0, timeout_s=1.0))
    assert rec["outcome"] == "hung" and rec["exit"]["killed_by_harness"]


def test_missing_executable_is_a_harness_error(root):
    done = run_trial(["/nonexistent/driver"], dict(os.environ), root, timeout_s=1.0)
    assert done.observed.launch_error


def test_a_trial_whose_counters_stop_is_stopped_at_the_no_progress_limit(fake_case, fake_build, root):
    # Both workers sit inside fake_sync while main heartbeats on: the counters stop, the output
    # does not. The trial ends at the no-progress limit, long before its budget and its limit,
    # as hung, with where each thread was stuck and the exposure it had reached.
    budget = TrialBudget(duration_s=20.0, max_exposure=0, timeout_s=30.0, stall_s=0.6)
    started = time.monotonic()
    rec = _trial(fake_case, fake_build, root, "stall", budget)
    assert time.monotonic() - started < budget.duration_s
    assert rec["outcome"] == "hung" and rec["detail"].startswith("no progress for ")
    assert rec["exit"] == {"code": None, "signal": "SIGQUIT", "killed_by_harness": True}
    assert rec["crash"] is None  # the harness's SIGQUIT is no crash
    threads = rec["observations"]["threads"]
    assert [(t["call"], t["inside"]) for t in threads] == [("fake_sync", True)] * 2
    assert rec["observations"]["stalled_s"] >= 0.6
    assert rec["exposure"] == rec["counters"]["cycles"] == 80  # up to the hang, it counts


def test_a_healthy_trial_is_not_stopped_by_the_no_progress_limit(fake_case, fake_build, root):
    budget = TrialBudget(duration_s=1.5, max_exposure=0, timeout_s=10.0, stall_s=0.6)
    rec = _trial(fake_case, fake_build, root, "ok", budget)
    assert rec["outcome"] == "survived", rec
