"""Where each thread was at a fault (gpurepro.phases): labels, per-arm counts, the table, and
the committed H200 run that carries them."""

from __future__ import annotations

import json

from gpurepro.report.markdown import threads_table
from gpurepro.run import phases

from .conftest import ROOT


def _crash(arm: str, *threads: tuple[str | None, bool, bool]) -> dict:
    return {"arm": arm, "outcome": "crashed",
            "crash": {"threads": [{"thread": i, "call": c, "inside": inside, "calls": 5 if c else 0,
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
    assert rows[2] == "| `x` | in cuLaunchKernel | in cuLaunchKernel | 3 of 3 (+1 without) |"


def test_the_committed_mechanism_run_has_every_threads_call_at_every_crash():
    doc = json.loads((ROOT / "results" / "tile_unload_race"
                      / "20261130T062707Z_NVIDIA-H200_redacted.json").read_text())
    per_arm = phases.by_arm(doc["trials"])
    assert sum(sum(c.values()) for c, _ in per_arm.values()) == 68
    assert all(without == 0 for _, without in per_arm.values())
    assert per_arm["baseline"][0] == {"in cuLaunchKernel | in cuLaunchKernel": 10}
    assert per_arm["lock-launch"][0] == {"in cuLaunchKernel | in lock-wait": 10}
