"""Cluster runs through a real Slurm: munged, slurmctld and slurmd on localhost with two
partitions (tests/slurm_cluster.py), the fake case submitted with --slurm as job arrays.

- an array task cancelled with scancel mid-run: its finished trials kept, the missing ones
  resubmitted, every trial merged once into one valid document;
- the submitting side stopped mid-run: --resume submits only the trials still missing;
- --until-decided across jobs: decided arms stop, their remaining work is cancelled;
- flags checked against the cluster: partitions, probe jobs.

Run by `make test-slurm` (nox -s slurm_test), which sets GPUREPRO_SLURM_TEST=1; elsewhere
these tests skip, saying so. Output (-s) shows the jobs as squeue and the harness see them.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpurepro.cluster.task import spec_path
from gpurepro.record.validation import validation_errors
from gpurepro.run.journal import read
from tests.conftest import ROOT
from tests.slurm_cluster import LocalCluster, StartError, install

pytestmark = pytest.mark.slurm

FAKE = "tests/fixtures/fake_case/manifest.py"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    if not os.environ.get("GPUREPRO_SLURM_TEST"):
        pytest.skip("starts Slurm daemons: run by make test-slurm (nox -s slurm_test)")
    why = install()
    if why:
        pytest.fail(f"Slurm cannot run here: {why}")
    local = LocalCluster(tmp_path_factory.mktemp("slurm"))
    try:
        local.start()
    except (StartError, OSError) as exc:
        local.stop()
        pytest.fail(f"Slurm did not start: {exc}")
    print(f"\na one-node Slurm on localhost (config {local.conf}):\n"
          + subprocess.run(["sinfo"], env=local.env, capture_output=True, text=True).stdout)
    try:
        yield local
    finally:
        local.stop()


def _start(cluster: LocalCluster, tmp: Path, *args: str, command: str = "case") -> subprocess.Popen:
    env = {**cluster.env, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.Popen(
        [sys.executable, "-m", "gpurepro", command, FAKE, *args, "--poll", "0.5",
         "--build-dir", "build/tests"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _plan_args(tmp: Path, *extra: str) -> list[str]:
    return ["--slurm", "--partition", "alpha", "--partition", "beta", "--jobs-per-partition", "2",
            "--arms", "ok,crash", "--duration", "1", "--out-dir", str(tmp / "results"),
            "--shared-dir", str(tmp / "shared"), *extra]


def _finish(proc: subprocess.Popen, timeout: float = 150) -> str:
    out, _ = proc.communicate(timeout=timeout)
    print(out)
    return out


def _squeue(cluster: LocalCluster) -> str:
    return subprocess.run(["squeue", "--array", "--format=%i %P %T %N %j"], env=cluster.env,
                          capture_output=True, text=True, check=True).stdout


def _trials(path: Path) -> list[dict]:
    try:
        return read(path).trials
    except (OSError, ValueError):
        return []


def _document(tmp: Path) -> dict:
    docs = [p for p in (tmp / "results" / "fake_case").glob("*.json")
            if not p.name.endswith(".pyperf.json")]
    assert len(docs) == 1, docs
    return json.loads(docs[0].read_text())


def _submitted(out: str) -> list[tuple[str, int]]:
    """(job id, trials) of every 'submitted job' line the submitting side printed."""
    return [(m.group(1), int(m.group(2)))
            for m in re.finditer(r"submitted job (\d+): .*?, (\d+) trial\(s\)", out)]


def test_a_cancelled_array_task_loses_no_trial(cluster, tmp_path):
    # Four trials per array task: a window of seconds in which a task has journaled some.
    proc = _start(cluster, tmp_path, *_plan_args(tmp_path, "--trials", "8", "--seed", "11"))
    # Wait for a task that has journaled some of its trials but not all, and cancel it.
    victim = None
    deadline = time.monotonic() + 90
    while victim is None and time.monotonic() < deadline and proc.poll() is None:
        for path in sorted(tmp_path.glob("shared/*/shards/r1-*.journal.jsonl")):
            try:
                contents = read(path)
            except (OSError, ValueError):
                continue  # being created
            shard = contents.header["shard"]
            spec = json.loads(spec_path(path.parent.parent, 1, shard["partition"]).read_text())
            share = set(spec["tasks"][shard["task"]])
            if 1 <= len(contents.trials) < len(share):
                victim = (f"{shard['job_id']}_{shard['task']}",
                          {t["index"] for t in contents.trials}, share)
                break
        time.sleep(0.1)
    assert victim is not None, "no array task was caught mid-run"
    label, kept, share = victim
    print(f"squeue before scancel {label}:\n{_squeue(cluster)}")
    subprocess.run(["scancel", label], env=cluster.env, check=True)
    out = _finish(proc)
    assert proc.returncode == 0, out

    doc = _document(tmp_path)
    assert validation_errors(doc) == []
    trials = {t["index"]: t for t in doc["trials"]}
    assert sorted(trials) == list(range(16))  # every planned trial, each once
    assert doc["summary"]["crash"]["outcomes"] == {"crashed": 8}
    assert doc["summary"]["ok"]["outcomes"] == {"survived": 8}
    # What the cancelled task finished stays its own; the rest of its share came back later.
    assert all(trials[i]["cluster"]["job_id"] == label for i in kept)
    back = share - {i for i, t in trials.items() if t["cluster"]["job_id"] == label}
    assert back and all(trials[i]["cluster"]["round"] >= 2 for i in back)
    assert doc["cluster"]["resubmitted"] >= len(back)
    tasks = {f"{j['job_id']}_{t['task']}": t for j in doc["cluster"]["jobs"] for t in j["tasks"]}
    assert tasks[label]["state"] == "CANCELLED"
    assert {j["partition"] for j in doc["cluster"]["jobs"]} == {"alpha", "beta"}
    assert set(doc["per_host"]) == {"localnode"}
    assert re.search(rf"job {label.split('_')[0]} \(partition \w+, round 1\): .*CANCELLED", out)
    assert "resubmitting" in out

    # The merged document works with the rest of the tool set.
    path = next(p for p in (tmp_path / "results" / "fake_case").glob("*.json")
                if not p.name.endswith(".pyperf.json"))
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    for args in (["validate", str(path)], ["compare", str(path), str(path)], ["issue", str(path)]):
        done = subprocess.run([sys.executable, "-m", "gpurepro", *args], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
    assert "--slurm --partition alpha=host --partition beta=host" in done.stdout


def test_resume_of_a_stopped_cluster_run_submits_only_what_is_missing(cluster, tmp_path):
    proc = _start(cluster, tmp_path, *_plan_args(tmp_path, "--trials", "6", "--seed", "12"))
    journals = tmp_path / "results" / "fake_case"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and proc.poll() is None:
        found = list(journals.glob("*.journal.jsonl"))
        if found and 2 <= len(_trials(found[0])) < 12:
            break
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    out = _finish(proc)
    assert proc.returncode == 143, out
    assert "scancel" in out and "--resume" in out
    journal = next(journals.glob("*.journal.jsonl"))
    before = {t["index"] for t in read(journal).trials}
    assert 2 <= len(before) < 12

    refused = subprocess.run(
        [sys.executable, "-m", "gpurepro", "run", FAKE, "--resume", str(journal), "--partition",
         "alpha"], cwd=ROOT, env={**cluster.env, "PYTHONPATH": str(ROOT / "src")},
        capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2
    assert "--resume continues the run's own partitions" in refused.stderr

    resumed = _start(cluster, tmp_path, "--resume", str(journal), command="run")
    out = _finish(resumed)
    assert resumed.returncode == 0, out
    trials = read(journal).trials
    assert sorted(t["index"] for t in trials) == list(range(12))
    assert sum(1 for line in journal.read_text().splitlines() if '"kind":"trial"' in line) == 12
    # Only what was missing once the cancelled tasks' last trials were merged was submitted.
    rounds = {t["index"]: t["cluster"]["round"] for t in trials}
    later = {i for i, r in rounds.items() if r >= 2}
    assert later and not later & before
    assert sum(n for _, n in _submitted(out)) == len(later)
    assert validation_errors(_document(tmp_path)) == []


def test_until_decided_across_jobs_stops_decided_arms(cluster, tmp_path):
    """And --redact: no node name reaches the document."""
    proc = _start(cluster, tmp_path, *_plan_args(
        tmp_path, "--until-decided", "--max-trials", "12", "--look-every", "3", "--seed", "13",
        "--redact"))
    out = _finish(proc)
    assert proc.returncode == 0, out
    doc = _document(tmp_path)
    assert validation_errors(doc) == []
    claim = next(c for c in doc["claims"] if c["name"] == "ok-survives")
    assert claim["decision"] == "supported" and claim["look"] < claim["looks"]
    assert len(doc["trials"]) < 24  # the arms stopped before their maximum
    assert sorted(doc["cluster"]["stopped_arms"]) == ["crash", "ok"]
    assert "no longer needed" in out
    assert doc["environment"]["host"]["hostname"] == "redacted"
    assert "localnode" not in json.dumps(doc) and len(doc["per_host"]) == 1


def test_flags_are_checked_against_the_cluster(cluster, tmp_path):
    """A partition Slurm does not have, and one whose GPUs a probe job (srun) cannot map to a
    target, are one line and exit 2 before anything is built or submitted."""
    env = {**cluster.env, "PYTHONPATH": str(ROOT / "src")}

    def gpurepro(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "gpurepro", *args], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=120)

    done = gpurepro("run", FAKE, "--slurm", "--partition", "gamma")
    assert done.returncode == 2
    assert "--partition gamma: no such partition (this cluster has alpha, beta)" in done.stderr
    done = gpurepro("prepare", "tile_unload_race", "--slurm", "--partition", "alpha",
                    "--prepare-out", str(tmp_path / "prepared.json"))
    assert done.returncode == 2, done.stderr
    assert "a job there saw no GPU" in done.stderr and "--partition alpha=TARGET" in done.stderr
    done = gpurepro("prepare", "tile_unload_race", "--slurm", "--partition", "alpha=sm_90",
                    "--partition", "beta=sm_120", "--prepare-out", str(tmp_path / "prepared.json"))
    assert done.returncode == 0, done.stderr
    prepared = json.loads((tmp_path / "prepared.json").read_text())
    assert prepared["partitions"] == ["alpha=sm_90", "beta=sm_120"]
    assert set(prepared["builds"]) == {"sm_90", "sm_120"}
