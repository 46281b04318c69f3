"""One array task of a cluster run: its share of the plan, run from the shared tree and
journaled in a shard journal of its own (`python -m gpurepro slurm-task SPEC`).

The shard journal is an ordinary journal (run/journal.py): the merged run's identity in its header
(case, manifest and plan hashes, run id), this node's fingerprint and device gate, and the
task's place (round, partition, array job and task, node). A task that Slurm requeues starts a
journal of its own attempt (on whichever node it lands) and skips what earlier attempts
journaled; the submitting side merges what every shard journaled.

Standard library only: this runs on GPU nodes with nothing installed.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import socket
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..case.load import find_repo_root, load_case
from ..case.model import TrialBudget
from ..env import fingerprint as envmod
from ..errors import EXIT_ERROR, EXIT_OK, JournalError, JournalMismatch, Stopped, exit_for_signal
from ..model.plan import Plan
from ..run.contain import contained
from ..run.execute import RunOptions, execute_plan, gate, stop_signals, unsupported_record
from ..run.journal import Journal, check_trials, read, verify_identity
from ..run.session import gate_json, manifest_sha256
from ..run.watchdog import Watchdog, end_earlier_harnesses

# What other modules use; the rest is this module's own.
__all__ = ["run_task", "SETTLE_S", "shard_path", "ShardJournal", "SKIP_FILE", "spec_path"]

# Signals with which Slurm ends a job (scancel, preemption, the time limit). A trial that
# died by one of them while the task was being stopped was ended by the stop, not by the bug.
SCHEDULER_SIGNALS = ("SIGTERM", "SIGKILL", "SIGINT", "SIGHUP", "SIGCONT")
# How long a trial that died by such a signal waits for the harness to learn of the stop: the
# signal reaches the trial and the harness at once, and Python runs its handler a moment later.
SETTLE_S = 2.0
SKIP_FILE = "stopped_arms.json"


def shard_path(run_dir: Path, round_: int, partition: str, task: int, restart: int = 0) -> Path:
    again = f".restart{restart}" if restart else ""
    return run_dir / "shards" / f"r{round_}-{partition}-{task}{again}.journal.jsonl"


def _journaled(path: Path) -> list[dict[str, Any]]:
    try:
        return read(path).trials
    except (JournalError, OSError):
        return []  # that attempt never got as far as its header


def spec_path(run_dir: Path, round_: int, partition: str) -> Path:
    return run_dir / "rounds" / f"r{round_}-{partition}.json"


class ShardJournal(Journal):
    """A journal that leaves out trials killed by the task's own stop (see SETTLE_S), and that
    does without flock where the shared file system has none."""

    stopping: threading.Event | None = None

    def _lock(self) -> None:
        try:
            super()._lock()
        except JournalError as exc:
            # Lustre mounted without flock, for one, answers ENOSYS. A shard file has one
            # writer by construction (one per round, partition, array task and attempt).
            if getattr(exc, "errno", None) not in (errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOLCK):
                raise

    def append_trial(self, record: Mapping[str, Any]) -> None:
        signal_name = (record.get("exit") or {}).get("signal")
        if (self.stopping is not None and signal_name in SCHEDULER_SIGNALS
                and not (record.get("exit") or {}).get("killed_by_harness")
                and self.stopping.wait(SETTLE_S)):
            return  # it reruns when the missing trials are resubmitted
        super().append_trial(record)


def _slurm_gpus() -> tuple[str, ...]:
    """The GPUs Slurm gave this task (its CUDA_VISIBLE_DEVICES): one worker set per GPU."""
    if not (os.environ.get("SLURM_JOB_GPUS") or os.environ.get("SLURM_STEP_GPUS")):
        return ()
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    return tuple(v.strip() for v in visible.split(",") if v.strip())


def _arm_filter(run_dir: Path) -> Any:
    """Before each trial: is its arm still needed? The submitting side lists the arms whose
    claims are decided (--until-decided) in SKIP_FILE."""
    path = run_dir / SKIP_FILE

    def still_needed(arm: str, _records: list[dict[str, Any]]) -> bool:
        try:
            stopped = json.loads(path.read_text()).get("arms", [])
        except (OSError, ValueError):
            return True  # no file yet (or one being replaced): every arm runs
        return arm not in stopped

    return still_needed


def run_task(spec_file: Path, task: int | None = None, root: Path | None = None) -> int:
    spec = json.loads(spec_file.read_text())
    run_dir = spec_file.resolve().parent.parent
    if task is None:
        task = int(os.environ["SLURM_ARRAY_TASK_ID"])
    root = root or find_repo_root(Path.cwd()) or Path.cwd()
    identity = spec["header"]
    case = load_case(root / identity["manifest"], root)
    if manifest_sha256(case) != identity["manifest_sha256"]:
        raise JournalMismatch(f"{case.path}: the staged manifest differs from the run's; the "
                              f"shared tree was changed after submission")
    plan = Plan.from_json(identity["plan"])
    mine = set(spec["tasks"][task])
    share = Plan(plan.case, plan.seed, plan.arms, plan.trials_per_arm,
                 tuple(t for t in plan.order if t.index in mine))
    o = identity["options"]
    # Slurm requeues a preempted task, or one whose node failed, possibly onto another node:
    # each attempt journals in a file of its own, under its own node's fingerprint, and skips
    # what the earlier attempts of the task journaled.
    restart = int(os.environ.get("SLURM_RESTART_COUNT") or 0)
    tag = f"{identity['run_id']}.r{spec['round']}.{spec['partition']}.{task}.{restart}"
    path = shard_path(run_dir, spec["round"], spec["partition"], task, restart)
    done = [t for r in range(restart)
            for t in _journaled(shard_path(run_dir, spec["round"], spec["partition"], task, r))]
    gpus = _slurm_gpus()
    stopping = threading.Event()

    if path.exists():  # this very attempt started before: continue its journal
        journal, contents = ShardJournal.resume(path)
        try:
            verify_identity(contents.header, case.name, identity["manifest_sha256"], str(path))
            check_trials(contents, str(path))
        except BaseException:
            journal.close()
            raise
        header = contents.header
        done += contents.trials
        end_earlier_harnesses(tag)  # what it left running, if anything
    else:
        gpu_info = envmod.gpus()
        g = gate(case, gpu_info, spec["target"], gpus)
        header = {**identity,
                  "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                  "environment": envmod.fingerprint(root, redact=bool(o.get("redact")),
                                                    gpu_info=gpu_info),
                  "device": gate_json(g),
                  "toolchain": spec["index"]["toolchain"], "artifacts": spec["index"]["artifacts"],
                  "probe": None,
                  "shard": {"round": spec["round"], "partition": spec["partition"], "task": task,
                            "restart": restart,
                            "job_id": os.environ.get("SLURM_ARRAY_JOB_ID"),
                            "node": os.environ.get("SLURMD_NODENAME") or socket.gethostname(),
                            "gpus": list(gpus), "tag": tag}}
        journal = ShardJournal.create(path, header)
    if done:
        print(f"{path.name}: {len(done)} of {len(share.order)} trials journaled before", flush=True)
    assert isinstance(journal, ShardJournal)  # Journal's constructors build their own class
    journal.stopping = stopping
    try:
        d = header["device"]
        if not d["supported"]:
            # As on one host: a GPU that cannot run the case gives its share as unsupported.
            print(f"{case.name}: {d['reason']}; this task's trials are recorded as unsupported",
                  flush=True)
            finished = {r["index"] for r in done}
            for t in share.order:
                if t.index not in finished:
                    journal.append_trial(unsupported_record(t, str(d["reason"])))
            return EXIT_OK
        opts = RunOptions(budget=TrialBudget(**o["budget"]), jobs=o["jobs"], gpus=gpus,
                          redact=bool(o.get("redact")), run_id=tag)
        index = {"artifacts": header["artifacts"], "toolchain": header["toolchain"]}
        try:
            with Watchdog(opts.tag or tag) as watchdog, contained(watchdog), stop_signals(stopping):
                execute_plan(case, share, index, root, journal, opts, done,
                             _arm_filter(run_dir) if o.get("stopping") else None)
        except Stopped as exc:
            now = len(read(path).trials)
            print(f"stopped by {signal.Signals(exc.signum).name}: {now} of {len(share.order)} "
                  f"trials journaled in {path.name}; the rest are resubmitted", flush=True)
            return exit_for_signal(exc.signum)
    finally:
        journal.close()
    errors = [t for t in read(path).trials if t["outcome"] == "harness_error"]
    return EXIT_ERROR if errors else EXIT_OK
