"""The scheduler: N workers per GPU, every planned trial exactly once, nothing lost, shards merge."""

from __future__ import annotations

from collections import Counter

import pytest

from gpurepro.case import TrialBudget
from gpurepro.errors import HarnessError
from gpurepro.model.plan import make_plan
from gpurepro.record.document import build_document
from gpurepro.record.validation import validation_errors
from gpurepro.run import execute as runmod
from gpurepro.run.execute import RunOptions, execute_plan
from gpurepro.run.journal import Journal, merge, read
from tests.conftest import ROOT


def _header(plan, index, opts):
    from gpurepro.env import fingerprint as env

    return {"case": "fake_case", "started_at": "2026-01-01T00:00:00Z", "plan": plan.to_json(),
            "options": {"budget": opts.budget.__dict__, "jobs": opts.jobs, "gpus": list(opts.gpus),
                        "stopping": None},
            "environment": env.fingerprint(ROOT, redact=True),
            "device": {"supported": True, "target": "host", "name": None,
                       "compute_capability": None, "reason": None},
            "toolchain": index["toolchain"], "artifacts": index["artifacts"], "probe": None}


def test_every_planned_trial_runs_exactly_once_across_workers(fake_case, fake_build, tmp_path):
    _, index = fake_build
    plan = make_plan("fake_case", fake_case.resolved_arms(), 4, seed=3, selected=["ok", "crash", "cuda-error"])
    opts = RunOptions(budget=TrialBudget(0.2, 0, 3.0), jobs=2, gpus=("0", "1"))
    journal = Journal.create(tmp_path / "j.jsonl", _header(plan, index, opts))
    records = execute_plan(fake_case, plan, index, ROOT, journal, opts)
    journaled = read(journal.path).trials
    assert sorted(r["index"] for r in journaled) == list(range(12))
    assert Counter(r["index"] for r in records) == Counter(range(12))
    assert {r["gpu"] for r in journaled} == {"0", "1"}  # spread over both GPUs
    assert len({(r["gpu"], r["worker"]) for r in journaled}) >= 2


def test_a_failing_worker_loses_no_trial_and_fails_the_run(fake_case, fake_build, tmp_path, monkeypatch):
    _, index = fake_build
    plan = make_plan("fake_case", fake_case.resolved_arms(), 3, seed=5, selected=["ok", "crash"])
    opts = RunOptions(budget=TrialBudget(0.2, 0, 3.0), jobs=2)
    real = runmod.execute_trial

    def flaky(case, planned, *a, **kw):
        if planned.index == 2:
            raise RuntimeError("worker blew up")
        return real(case, planned, *a, **kw)

    monkeypatch.setattr(runmod, "execute_trial", flaky)
    journal = Journal.create(tmp_path / "j.jsonl", _header(plan, index, opts))
    with pytest.raises(HarnessError, match="worker blew up"):
        execute_plan(fake_case, plan, index, ROOT, journal, opts)
    trials = read(journal.path).trials
    assert sorted(t["index"] for t in trials) == list(range(6))
    broken = next(t for t in trials if t["index"] == 2)
    assert broken["outcome"] == "harness_error" and "worker blew up" in broken["detail"]


def test_shards_of_one_plan_merge_into_one_valid_document(fake_case, fake_build, tmp_path):
    _, index = fake_build
    plan = make_plan("fake_case", fake_case.resolved_arms(), 3, seed=9, selected=["ok", "crash"])
    opts = RunOptions(budget=TrialBudget(0.2, 0, 3.0))
    first = Journal.create(tmp_path / "a.jsonl", _header(plan, index, opts))
    half = plan.order[:3]
    # Shard A ran the first half; shard B (another GPU or call) ran the rest.
    execute_plan(fake_case, plan, index, ROOT, first, opts,
                 done=[{"index": t.index, "arm": t.arm, "outcome": "x"} for t in plan.order[3:]])
    second = Journal.create(tmp_path / "b.jsonl", _header(plan, index, opts))
    execute_plan(fake_case, plan, index, ROOT, second, opts,
                 done=[{"index": t.index, "arm": t.arm, "outcome": "x"} for t in half])
    header, trials = merge([first.path, second.path])
    assert sorted(t["index"] for t in trials) == list(range(6))
    doc = build_document(fake_case, header, trials, ROOT)
    assert validation_errors(doc) == []
    assert doc["summary"]["crash"]["n"] == 3 and doc["summary"]["ok"]["n"] == 3
