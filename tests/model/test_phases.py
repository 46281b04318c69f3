"""Where each thread was at a fault (gpurepro.phases): labels, per-arm counts, the table, records
read at the fault against those read after the crash handler's slow work, and the committed H200
run that carries them."""

from __future__ import annotations

import json

from gpurepro.model import phases
from gpurepro.report.markdown import threads_table
from gpurepro.run.execute import crash_summary
from tests.conftest import ROOT


def _crash(arm: str, *threads: tuple[str | None, bool, bool], at_fault: bool = True) -> dict:
    return {"arm": arm, "outcome": "crashed",
            "crash": {**({"snapshot_ns": 2100} if at_fault else {}),
                      "threads": [{"thread": i, "call": c, "inside": inside, "calls": 5 if c else 0,
                                   "faulting": f} for i, (c, inside, f) in enumerate(threads)]}}


def test_label_puts_the_faulting_thread_first_and_sorts_the_others():
    a = _crash("x", ("cuModuleUnload", False, False), ("cuLaunchKernel", True, True), (None, False, False))
    b = _crash("x", (None, False, False), ("cuLaunchKernel", True, True), ("cuModuleUnload", False, False))
    assert phases.label(a["crash"]["threads"]) == phases.label(b["crash"]["threads"]) == (
        "in cuLaunchKernel | after cuModuleUnload, not started")


def test_by_arm_counts_labels_and_crashes_without_threads():
    trials = [_crash("x", ("cuLaunchKernel", True, True), ("cuLaunchKernel", True, False))] * 3
    trials += [{"arm": "x", "outcome": "crashed", "crash": {"signal": "SIGSEGV"}},
               {"arm": "x", "outcome": "survived", "crash": None},
               {"arm": "y", "outcome": "hung", "crash": None}]
    counts, without = phases.by_arm(trials)["x"]
    assert counts == {"in cuLaunchKernel | in cuLaunchKernel": 3} and without == 1
    assert "y" not in phases.by_arm(trials)
    rows = threads_table(trials)
    assert rows[2] == ("| `x` | in cuLaunchKernel | in cuLaunchKernel | at the fault | 3 of 3 "
                       "(+1 without) |")


def test_records_without_a_snapshot_are_read_late_never_at_the_fault():
    early = _crash("x", ("cuLaunchKernel", True, True), ("cuModuleUnload", True, False))
    late = _crash("x", ("cuLaunchKernel", True, True), ("lock-wait", True, False), at_fault=False)
    trials = [early, late, late]
    assert phases.by_arm(trials)["x"] == ({"in cuLaunchKernel | in cuModuleUnload": 1}, 0)
    assert phases.by_arm(trials, read_at_fault=False)["x"] == (
        {"in cuLaunchKernel | in lock-wait": 2}, 0)
    assert threads_table(trials)[2:] == [
        "| `x` | in cuLaunchKernel | in cuModuleUnload | at the fault | 1 of 1 |",
        "| `x` | in cuLaunchKernel | in lock-wait | after the handler's slow work | 2 of 2 |"]


def test_crash_summary_keeps_the_snapshot_and_the_late_read_apart():
    threads = [{"thread": 0, "call": "cuLaunchKernel", "inside": True, "calls": 9, "faulting": True,
                "tid": 4242}]
    late = [{**threads[0], "calls": 12}]
    record = {"signal": "SIGSEGV", "frames": [], "t": 2.31, "snapshot_ns": 2100, "threads": threads,
              "threads_late": late, "late_read_ns": 210000}
    summary = crash_summary(record)
    assert summary["snapshot_ns"] == 2100 and summary["late_read_ns"] == 210000
    assert [t["calls"] for t in summary["threads"]] == [9]
    assert [t["calls"] for t in summary["threads_late"]] == [12]
    assert "tid" not in summary["threads"][0]
    # A record from before the snapshot gets no snapshot fields, and its threads as they were.
    old = crash_summary({k: v for k, v in record.items()
                         if k not in ("snapshot_ns", "threads_late", "late_read_ns")})
    assert not {"snapshot_ns", "threads_late", "late_read_ns"} & set(old)
    assert list(old)[-1] == "threads" and old["threads"] == summary["threads"]


def test_the_committed_mechanism_run_has_every_threads_call_read_late_at_every_crash():
    doc = json.loads((ROOT / "results" / "tile_unload_race"
                      / "20261130T062707Z_NVIDIA-H200_redacted.json").read_text())
    assert phases.by_arm(doc["trials"]) == {}  # recorded before the handler's snapshot
    per_arm = phases.by_arm(doc["trials"], read_at_fault=False)
    assert sum(sum(c.values()) for c, _ in per_arm.values()) == 68
    assert all(without == 0 for _, without in per_arm.values())
    assert per_arm["baseline"][0] == {"in cuLaunchKernel | in cuLaunchKernel": 10}
    assert per_arm["lock-launch"][0] == {"in cuLaunchKernel | in lock-wait": 10}
