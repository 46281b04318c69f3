"""Cluster runs without a cluster: sharding, flag checks, and an array task run by hand from a
staged tree, merged into a valid document with per-host tables. (tests/cluster/test_slurm.py runs the
same through a real slurmctld and slurmd.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import uuid
from collections import Counter
from pathlib import Path

import pytest

from gpurepro.case import TrialBudget
from gpurepro.cluster.merge import add_node, annotate, host_label, read_shards
from gpurepro.cluster.partition import by_partition, to_tasks
from gpurepro.cluster.slurm import time_limit_seconds
from gpurepro.cluster.stage import stage
from gpurepro.cluster.task import ShardJournal, shard_path, spec_path
from gpurepro.env import fingerprint as envmod
from gpurepro.model.design import DesignSpec
from gpurepro.model.journal import RunHeader
from gpurepro.model.plan import make_plan
from gpurepro.record.document import build_document
from gpurepro.record.validation import validation_errors
from gpurepro.report.comment import issue_body
from gpurepro.report.markdown import markdown
from gpurepro.run.execute import RunOptions
from gpurepro.run.journal import read
from gpurepro.run.session import journal_header
from tests import pace
from tests.conftest import ROOT
from tests.run.test_stdlib_run import BLOCKER

FAKE = "tests/fixtures/fake_case/manifest.py"


def test_every_partition_and_every_task_gets_every_arm_and_each_trial_once():
    arms = {a: {} for a in ("a", "b", "c")}
    plan = make_plan("x", arms, 8, seed=1)
    parts = by_partition(plan, ["p", "q"])
    assert sorted(i for ix in parts.values() for i in ix) == list(range(24))
    arm_of = {t.index: t.arm for t in plan.order}
    for indices in parts.values():
        assert Counter(arm_of[i] for i in indices) == {"a": 4, "b": 4, "c": 4}
        tasks = to_tasks(plan, indices, 2)
        assert sorted(i for share in tasks for i in share) == sorted(indices)
        for share in tasks:  # no task lines up with an arm
            assert Counter(arm_of[i] for i in share) == {"a": 2, "b": 2, "c": 2}


def test_fewer_trials_than_tasks_gives_no_empty_task():
    plan = make_plan("x", {"a": {}, "b": {}}, 1, seed=2)
    assert to_tasks(plan, [0], 4) == [[0]]
    assert sorted(map(len, to_tasks(plan, [0, 1], 4))) == [1, 1]


def test_slurm_time_limits_in_every_form_sbatch_takes():
    assert time_limit_seconds("30") == 1800
    assert time_limit_seconds("5:30") == 330
    assert time_limit_seconds("1:00:00") == 3600
    assert time_limit_seconds("2-0") == 2 * 86400
    assert time_limit_seconds("1-2:03") == 86400 + 2 * 3600 + 3 * 60
    assert time_limit_seconds("1-0:0:5") == 86405
    assert time_limit_seconds("soon") is None


# ---------------------------------------------------------------- flags


def _stubs(folder: Path) -> Path:
    """Slurm's client commands as stubs that fail if called: the flag checks must refuse
    before any of them runs."""
    folder.mkdir()
    for name in ("sbatch", "squeue", "scontrol", "scancel", "sinfo", "srun"):
        stub = folder / name
        stub.write_text("#!/bin/sh\necho stub called >&2\nexit 1\n")
        stub.chmod(0o755)
    return folder


def _cli(*args: str, path: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "PATH": path}
    return pace.run([sys.executable, "-m", "gpurepro", *args], cwd=ROOT, env=env,
                    capture_output=True, text=True)


@pytest.mark.parametrize(("args", "says"), [
    (["--partition", "alpha"], "--partition applies only with --slurm"),
    (["--gres", "gpu:1"], "--gres applies only with --slurm"),
    (["--slurm"], "--slurm needs at least one --partition"),
    (["--slurm", "--partition", "alpha=sm_99"], "fake_case builds for host"),
    (["--slurm", "--partition", "alpha", "--partition", "alpha"], "given twice"),
    (["--slurm", "--partition", "a b"], "expected NAME or NAME=TARGET"),
    (["--slurm", "--partition", "alpha", "--gpus", "all"], "--gres gpu:N"),
    (["--slurm", "--partition", "alpha", "--gres", "gpu 2"], "--gres 'gpu 2'"),
    (["--slurm", "--partition", "alpha", "--time", "tomorrow"], "expected a Slurm time limit"),
    (["--slurm", "--partition", "alpha", "--time", "0:30"], "leaves no room for one trial"),
    (["--slurm", "--partition", "alpha", "--jobs-per-partition", "0"], "must be at least 1"),
])
def test_a_bad_cluster_flag_is_one_line_and_exit_2(tmp_path, args, says):
    done = _cli("run", FAKE, *args, path=f"{_stubs(tmp_path / 'bin')}:/usr/bin:/bin")
    assert done.returncode == 2, done.stderr
    assert says in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "stub called" not in done.stderr


def test_slurm_without_sbatch_on_path_is_a_usage_error(tmp_path):
    (tmp_path / "empty").mkdir()
    done = _cli("case", FAKE, "--slurm", "--partition", "alpha", path=str(tmp_path / "empty"))
    assert done.returncode == 2
    assert done.stderr.startswith("gpurepro: usage error: --slurm: sbatch, squeue, scontrol, "
                                  "scancel, sinfo not found on PATH")
    assert len(done.stderr.strip().splitlines()) == 1


# ---------------------------------------------------------------- tasks and merging


def test_a_trial_killed_by_the_tasks_own_stop_is_not_journaled(tmp_path, monkeypatch):
    import gpurepro.cluster.task as shard

    monkeypatch.setattr(shard, "SETTLE_S", 0.05)
    journal = ShardJournal.create(tmp_path / "j.jsonl", {"case": "x"})
    journal.stopping = threading.Event()
    killed = {"index": 0, "arm": "a", "outcome": "crashed", "exit": {"signal": "SIGTERM"}}
    journal.append_trial(killed)  # no stop under way: a SIGTERM is the trial's own end
    journal.stopping.set()
    journal.append_trial({**killed, "index": 1})  # the task is stopping: the stop killed it
    journal.append_trial({**killed, "index": 2, "exit": {"signal": "SIGSEGV"}})
    journal.close()
    assert [t["index"] for t in read(tmp_path / "j.jsonl").trials] == [0, 2]


def _identity(fake_case, index, redact: bool):
    plan = make_plan("fake_case", fake_case.resolved_arms(), 3, seed=5, selected=["ok", "crash"])
    # A run id of its own per test: the watchdog of one run kills every process tagged with its
    # id, so two tests sharing one would kill each other's trials when they run at once.
    opts = RunOptions(budget=TrialBudget(0.2, 0, 3.0), jobs=1, redact=redact, run_id=uuid.uuid4().hex)
    device = {"name": None, "compute_capability": None, "uuid": None, "index": None,
              "supported": True, "target": "host", "reason": None}
    header = journal_header(fake_case, ROOT, plan, opts, DesignSpec.fixed(),
                            envmod.fingerprint(ROOT, redact=redact), device, index)
    header["cluster"] = {"scheduler": "slurm", "scheduler_version": "test",
                         "shared_dir": "build/slurm", "run": "r",
                         "partitions": {"alpha": {"target": "host", "trials": 6}},
                         "builds": {"host": index}, "options": {"gres": None}}
    return plan, header


def _staged_task_spec(case, index, header, run_dir: Path, tasks: list[list[int]]) -> Path:
    """Stage the tree a task runs from and write round 1's spec for partition alpha, as the
    submitting side does before sbatch."""
    stage(ROOT, run_dir / "tree", case, {"host": index})
    identity = {k: header[k] for k in ("case", "manifest", "manifest_sha256", "plan_sha256",
                                       "run_id", "plan", "options")}
    spec = spec_path(run_dir, 1, "alpha")
    spec.parent.mkdir(parents=True)
    spec.write_text(json.dumps({"round": 1, "partition": "alpha", "target": "host",
                                "header": identity, "index": index, "tasks": tasks}))
    return spec


@pytest.mark.parametrize("redact", [False, True], ids=["named", "redacted"])
def test_array_tasks_run_from_a_staged_tree_merge_into_one_valid_document(
        fake_case, fake_build, tmp_path, redact):
    """Two array tasks on two nodes, run as Slurm would start them (from the staged tree, with
    only the standard library), merged: every trial once, each with its host and job; the
    document validates and reports per host; `issue` gives a --slurm rerun command."""
    _, index = fake_build
    plan, header = _identity(fake_case, index, redact)
    run_dir = tmp_path / "run"
    shares = to_tasks(plan, [t.index for t in plan.order], 2)
    spec = _staged_task_spec(fake_case, index, header, run_dir, shares)
    for task, node in enumerate(("nodeA", "nodeB")):
        env = {**os.environ, "PYTHONPATH": str(run_dir / "tree" / "src"),
               "SLURM_ARRAY_JOB_ID": "77", "SLURM_ARRAY_TASK_ID": str(task),
               "SLURMD_NODENAME": node}
        done = pace.run([sys.executable, "-c", BLOCKER, "slurm-task", str(spec)],
                        cwd=run_dir / "tree", env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert shard_path(run_dir, 1, "alpha", task).is_file()

    shards, problems = read_shards(run_dir, RunHeader.from_json(header))
    assert problems == [] and len(shards) == 2
    nodes: dict = {}
    trials = []
    for s in shards:
        add_node(nodes, s.header)
        trials += [annotate(t, s.header) for t in s.trials]
    assert sorted(t["index"] for t in trials) == list(range(6))
    hosts = {host_label(n, redact) for n in ("nodeA", "nodeB")}
    assert set(nodes) == hosts == {t["host"] for t in trials}
    state = {"nodes": nodes, "jobs": {"77": {"partition": "alpha", "round": 1, "tasks": {
        str(i): {"trials": share, "state": "COMPLETED", "node": host_label(n, redact),
                 "exit_code": "0:0", "ended": True}
        for i, (share, n) in enumerate(zip(shares, ("nodeA", "nodeB"), strict=True))}}}}
    doc = build_document(fake_case, {**header, "scheduler_state": state},
                         sorted(trials, key=lambda t: t["index"]), ROOT)
    assert validation_errors(doc) == []
    assert set(doc["per_host"]) == hosts
    assert sum(c["valid"] for h in doc["per_host"].values() for c in h.values()) == 6
    assert [t["journaled"] for t in doc["cluster"]["jobs"][0]["tasks"]] == list(map(len, shares))
    assert {t["cluster"]["job_id"] for t in doc["trials"]} == {"77_0", "77_1"}
    text = markdown(doc)
    assert "### Cluster" in text and all(h in text for h in hosts)
    body = issue_body(doc, tmp_path / "doc.json")
    assert "--slurm --partition alpha=host" in body
    if redact:
        assert "nodeA" not in json.dumps(doc) and "nodeB" not in json.dumps(doc)


def test_a_node_whose_gpu_cannot_run_the_case_records_its_share_as_unsupported(
        fake_case, fake_build, tmp_path):
    """A case that needs a GPU of compute capability 1.0 (no machine has one): the task
    journals every trial of its share as unsupported, and the document says why."""
    from gpurepro.case import load_case

    _, index = fake_build
    folder = ROOT / "build" / "tests" / "gpu_case"
    folder.mkdir(parents=True, exist_ok=True)
    text = (ROOT / FAKE).read_text()
    old = 'Devices(targets={"0.0": "host"}, requires_gpu=False)'
    assert old in text
    (folder / "manifest.py").write_text(text.replace('name="fake_case"', 'name="gpu_case"')
                                        .replace(old, 'Devices(targets={"1.0": "host"})'))
    case = load_case(folder / "manifest.py", ROOT)
    plan, header = _identity(case, index, redact=False)
    run_dir = tmp_path / "run"
    spec = _staged_task_spec(case, index, header, run_dir, [[t.index for t in plan.order]])
    env = {**os.environ, "PYTHONPATH": str(run_dir / "tree" / "src"), "SLURM_ARRAY_JOB_ID": "5",
           "SLURM_ARRAY_TASK_ID": "0", "SLURMD_NODENAME": "nodeC"}
    done = pace.run([sys.executable, "-m", "gpurepro", "slurm-task", str(spec)],
                    cwd=run_dir / "tree", env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    (shard,), _ = read_shards(run_dir, RunHeader.from_json(header))
    assert {t["outcome"] for t in shard.trials} == {"unsupported"} and len(shard.trials) == 6
    nodes: dict = {}
    add_node(nodes, shard.header)
    doc = build_document(case, {**header, "scheduler_state": {"nodes": nodes, "jobs": {}}},
                         [annotate(t, shard.header) for t in shard.trials], ROOT)
    assert validation_errors(doc) == []
    assert doc["device"]["supported"] is False
    assert doc["device"]["reason"].startswith("1 of 1 node(s) cannot run it")


def test_gpus_of_a_cluster_run_are_named_with_their_host():
    """GPU 0 of one node is not GPU 0 of another: per-GPU cells are per host and GPU."""
    from gpurepro.cluster.merge import per_host

    trials = [{"host": "n1", "gpu": "0", "arm": "a", "outcome": "crashed"},
              {"host": "n2", "gpu": "0", "arm": "a", "outcome": "survived"},
              {"host": "n2", "gpu": None, "arm": "a", "outcome": "survived"}]
    assert per_host(trials, ["crashed"], gpus=True) == {
        "n1 · 0": {"a": {"failures": 1, "valid": 1}}, "n2 · 0": {"a": {"failures": 0, "valid": 1}}}
    assert per_host(trials, ["crashed"])["n2"] == {"a": {"failures": 0, "valid": 2}}


def test_a_task_runs_one_worker_set_per_gpu_slurm_gave_it(monkeypatch):
    from gpurepro.cluster.task import _slurm_gpus

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    monkeypatch.delenv("SLURM_JOB_GPUS", raising=False)
    monkeypatch.delenv("SLURM_STEP_GPUS", raising=False)
    assert _slurm_gpus() == ()  # not Slurm's choice: left as it is
    monkeypatch.setenv("SLURM_JOB_GPUS", "4,5")
    assert _slurm_gpus() == ("0", "1")


def test_a_requeued_task_on_another_node_continues_its_share_under_that_nodes_name(
        fake_case, fake_build, tmp_path):
    """Slurm requeues a task (preempted, node failure) onto another node: the new attempt
    skips what the first journaled, and each trial names the node that really ran it."""
    _, index = fake_build
    plan, header = _identity(fake_case, index, redact=False)
    run_dir = tmp_path / "run"
    spec = _staged_task_spec(fake_case, index, header, run_dir, [[t.index for t in plan.order]])

    def attempt(node: str, restart: int) -> None:
        env = {**os.environ, "PYTHONPATH": str(run_dir / "tree" / "src"),
               "SLURM_ARRAY_JOB_ID": "9", "SLURM_ARRAY_TASK_ID": "0", "SLURMD_NODENAME": node,
               "SLURM_RESTART_COUNT": str(restart)}
        done = pace.run([sys.executable, "-m", "gpurepro", "slurm-task", str(spec)],
                        cwd=run_dir / "tree", env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr

    attempt("nodeA", 0)
    first = shard_path(run_dir, 1, "alpha", 0)
    from tests.record.test_tampering import reopened

    lines = first.read_text().splitlines()
    # The first attempt was preempted after two trials: no end record, its header unsealed.
    first.write_text("\n".join(reopened(lines[:3])) + "\n")
    attempt("nodeB", 1)
    shards, _ = read_shards(run_dir, RunHeader.from_json(header))
    trials = [annotate(t, s.header) for s in shards for t in s.trials]
    assert sorted(t["index"] for t in trials) == list(range(6))  # each once
    assert Counter(t["host"] for t in trials) == {"nodeA": 2, "nodeB": 4}


def test_a_shard_journal_works_on_a_file_system_without_flock(tmp_path, monkeypatch):
    import errno
    import fcntl

    from gpurepro.errors import JournalError
    from gpurepro.run.journal import Journal

    def no_flock(fd, op):
        raise OSError(errno.ENOSYS, "Function not implemented")

    monkeypatch.setattr(fcntl, "flock", no_flock)
    with pytest.raises(JournalError, match="plain.jsonl: cannot lock the journal"):
        Journal.create(tmp_path / "plain.jsonl", {"case": "x"})
    assert not (tmp_path / "plain.jsonl").exists()
    journal = ShardJournal.create(tmp_path / "shard.jsonl", {"case": "x"})
    journal.append_trial({"index": 0, "arm": "a", "outcome": "survived", "exit": {}})
    journal.close()
    assert [t["index"] for t in read(tmp_path / "shard.jsonl").trials] == [0]
