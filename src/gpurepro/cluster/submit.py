"""A cluster run (``--slurm``) on the submitting side, its targets built: stage the tree the
nodes run from, submit one job array per partition, merge the shard journals as they grow,
resubmit what a failed, preempted or cancelled task left undone, and stop the arms whose claims
are decided; the command line then records one document (gpurepro.cli.run).

Slurm schedules. This module submits (sbatch), watches (squeue, then scontrol or sacct for how
a task ended) and cancels (scancel); it keeps no queue of its own. What counts as done is what
the shard journals hold, never a job state: a task that ended COMPLETED with a trial missing
from its journal still gets that trial resubmitted.

The run's own journal is an ordinary journal (``--resume`` continues it, ``record`` reads it)
whose header carries a ``cluster`` section, whose trial records carry the host and job that
ran them, and whose ``scheduler`` records hold the jobs and nodes as last seen.
"""

from __future__ import annotations

import json
import shlex
import sys
import time
import uuid
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..analyze.designing import designer
from ..case.model import Case
from ..env import fingerprint as envmod
from ..env import privacy
from ..errors import (
    EXIT_ERROR,
    EXIT_OK,
    EXIT_UNSUPPORTED,
    ClusterError,
    SlurmError,
    StageError,
    Stopped,
    UsageError,
    exit_for_signal,
)
from ..model.files import write_atomic
from ..model.journal import RunHeader
from ..model.outcomes import EVIDENCE
from ..run.execute import RunOptions
from ..run.journal import Journal, read, result_name
from ..run.session import (
    RunRequest,
    create,
    journal_header,
    journal_path,
    load_build,
    new_plan,
    reopen,
)
from . import slurm
from .merge import add_node, annotate, host_label, read_shards
from .options import NO_TRIALS_HERE, ClusterOptions
from .partition import by_partition, to_tasks
from .progress import ClusterProgress, job_summary
from .stage import stage
from .task import SKIP_FILE, spec_path

# What other modules use; the rest is this module's own.
__all__ = ["resume", "start", "Watch"]

# A task is taken as ended once squeue has not listed it at this many looks in a row: its
# last journal lines may reach a network file system's readers a little after it exits, and
# the controller may be between answers.
SETTLE_POLLS = 2
# The time limit asked for when --time is not given: the share's trials one after the other
# per worker set, plus this for starting Python and taking the node's fingerprint.
TASK_OVERHEAD_S = 120
# Seconds between looks (--poll): often enough to follow minutes-long tasks, rarely enough
# not to load a busy controller with squeue calls.
DEFAULT_POLL_S = 10.0


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- paths


def _recorded_dir(path: Path, root: Path) -> str:
    """The shared folder as the journal records it: relative to the repository, under ~, or
    as given (it must be found again on resume, so it is never dropped)."""
    resolved = path.resolve()
    if resolved.is_relative_to(root.resolve()):
        return str(resolved.relative_to(root.resolve()))
    return privacy.portable_text(str(resolved), None)


def _resolved_dir(recorded: str, root: Path) -> Path:
    path = Path(recorded).expanduser()
    return path if path.is_absolute() else root / path


def _write_json(path: Path, obj: Any) -> None:
    """Written whole or not at all: tasks on other nodes read these files at any moment."""
    write_atomic(path, json.dumps(obj, sort_keys=True) + "\n")


TASK_SCRIPT = """\
#!/bin/sh
# One array task of a gpurepro cluster run (gpurepro/cluster/task.py): its share of the plan, run
# from the tree staged for this run, journaled in a shard journal of its own.
export PYTHONPATH={src}
export GPUREPRO_COMMIT={commit}
exec {python} -m gpurepro slurm-task "$1"
"""


# ---------------------------------------------------------------- starting and resuming


def start(case: Case, request: RunRequest, opts: ClusterOptions, root: Path,
          poll_s: float | None = None) -> Watch:
    """A new cluster run, its targets built: its journal created and its tree staged, ready to
    submit. ``opts.partitions`` names each partition's target (resolved)."""
    if case.runtime is not None:
        # The staged tree does not carry the runtime wheels yet: the tasks would import the
        # nodes' own packages in place of the pinned ones, and record nothing of it.
        raise UsageError(f"{case.name} pins runtime packages (Case.runtime), which cluster runs "
                         f"do not stage yet; run it on one host (without --slurm)")
    targets = {p: str(t) for p, t in opts.partitions.items()}
    indexes = {t: load_build(case, root, request.build_dir, t) for t in dict.fromkeys(targets.values())}
    plan = new_plan(case, request)
    primary = targets[next(iter(targets))]
    run_opts = RunOptions(budget=request.budget, jobs=request.jobs, redact=request.redact,
                          run_id=uuid.uuid4().hex)
    device = {"name": None, "compute_capability": None, "uuid": None, "index": None,
              "supported": True, "target": primary, "reason": None}
    environment = envmod.fingerprint(root, redact=request.redact, gpu_info=NO_TRIALS_HERE)
    design = designer(case, request, root)(plan, True, None)  # partitions' GPUs: any model
    header = journal_header(case, root, plan, run_opts, design.design, environment, device,
                            indexes[primary], design.families, request.scope,
                            deterministic=design.declared)
    for line in design.lines:  # each claim's chance of being decided, and its family
        _say(line)
    shared = _resolved_dir(opts.shared_dir, root)
    counts = {p: len(ix) for p, ix in by_partition(plan, list(targets)).items()}
    header["cluster"] = {
        "scheduler": "slurm", "scheduler_version": slurm.version(),
        "shared_dir": _recorded_dir(shared, root),
        "partitions": {p: {"target": t, "trials": counts[p]} for p, t in targets.items()},
        "builds": {t: {"toolchain": ix["toolchain"], "artifacts": ix["artifacts"]}
                   for t, ix in indexes.items()},
        "options": opts.to_json(),
    }
    stem = result_name(header)
    header["cluster"]["run"] = stem
    run_dir = shared / stem
    path = journal_path(case, header, request)
    try:
        stage(root, run_dir / "tree", case, indexes)
    except (StageError, OSError) as exc:
        raise ClusterError(f"cannot stage the tree in {run_dir}: {exc}") from None
    (run_dir / "logs").mkdir(exist_ok=True)
    script = run_dir / "task.sh"
    script.write_text(TASK_SCRIPT.format(
        src=_sh(run_dir / "tree" / "src"), python=_sh(opts.node_python),
        commit=_sh(str((environment.get("repository") or {}).get("commit") or ""))))
    script.chmod(0o755)
    journal = create(path, header)
    _say(f"shared tree: {run_dir} (the nodes run from it and journal their shards there)")
    return Watch(case, request.case, journal, read(journal.path).run, root, run_dir, opts, {}, [],
                 poll_s)


def _sh(text: str | Path) -> str:
    return shlex.quote(str(text))


def resume(case: Case, request: RunRequest, root: Path, poll_s: float | None = None) -> Watch:
    """A cluster run's journal continued: what is journaled stays, tasks still queued are
    watched, the missing trials resubmitted."""
    assert request.resume is not None
    journal, contents = reopen(case, request.resume)
    try:
        header = contents.header
        run = RunHeader.from_json(header, str(journal.path))
        if not header.get("cluster"):
            raise UsageError(f"--slurm: {journal.path} is a single-host run's journal; "
                             f"resume it without --slurm")
        c = header["cluster"]
        run_dir = _resolved_dir(c["shared_dir"], root) / c["run"]
        if not (run_dir / "task.sh").is_file():
            raise ClusterError(f"{run_dir}: the run's shared tree is gone; its trials cannot be "
                               f"resubmitted (record what is journaled with gpurepro record)")
    except BaseException:
        journal.close()
        raise
    opts = ClusterOptions(partitions={p: v["target"] for p, v in c["partitions"].items()},
                          shared_dir=c["shared_dir"], **c["options"])
    _say(f"resuming {journal.path}: {len(contents.trials)} of {len(header['plan']['order'])} "
         f"trials merged; tasks still queued are watched, the missing trials resubmitted")
    return Watch(case, request.case, journal, run, root, run_dir, opts,
                 header.get("scheduler_state") or {}, contents.trials, poll_s)


# ---------------------------------------------------------------- watching


class Watch:
    """One submitting session of a cluster run: polls, merges, resubmits, stops arms."""

    def __init__(self, case: Case, case_arg: str, journal: Journal, header: RunHeader,
                 root: Path, run_dir: Path, opts: ClusterOptions, state: Mapping[str, Any],
                 records: Sequence[dict[str, Any]], poll_s: float | None = None):
        self.case, self.journal, self.header, self.root = case, journal, header, root
        self.case_arg = case_arg  # as given: the command that continues the run names it
        self.run_dir, self.opts = run_dir, opts
        self.plan = header.plan
        self.arm_of = {t.index: t.arm for t in self.plan.order}
        self.redact = header.redact
        self.state: dict[str, Any] = {"jobs": {}, "nodes": {}, "resubmitted": 0,
                                      "stopped_arms": [], "missing": [], **state}
        self.records = {r["index"]: r for r in records}
        self.attempts: Counter[int] = Counter()  # submissions per trial in this session
        self.absent: Counter[str] = Counter()
        self.lost: list[int] = []
        self.cancelled: set[str] = set()  # array tasks cancelled for decided arms
        self.said: set[str] = set()
        self.saved: str | None = None
        self.recordable = True  # False once it is known that no trial was journaled
        self.poll_s = poll_s or DEFAULT_POLL_S
        design = header.design
        self.decider = None
        if design.sequential:
            from ..analyze.claims import decider_for  # scipy: only the sequential design needs it

            self.decider = decider_for(case, header)
        self.max_trials = int(design.max_trials or 0)
        self.decisions = self.decider.to_json() if self.decider else None
        self.progress = ClusterProgress(self.plan, list(self.records.values()))
        self.identity = {k: header.fields[k] for k in ("case", "manifest", "manifest_sha256",
                                                "plan_sha256", "run_id", "plan", "options")}

    # -- the loop

    def run(self) -> int:
        try:
            with self.progress:
                while self.poll():
                    time.sleep(self.poll_s)
            return self.finish()
        except (Stopped, KeyboardInterrupt) as exc:
            signum = exc.signum if isinstance(exc, Stopped) else 2
            cancelled = self._cancel_live("the submitting side was stopped")
            self._save()
            _say(f"\nstopped: {len(self.records)} of {len(self.plan.order)} trials merged into "
                 f"{self.journal.path}; {cancelled} array task(s) cancelled. Continue with: "
                 f"python -m gpurepro run {self.case_arg} --resume {self.journal.path}")
            return exit_for_signal(signum)
        except (ClusterError, SlurmError) as exc:
            self._cancel_live("the run cannot go on")
            self._save()
            raise ClusterError(f"{exc}; the journal keeps every merged trial: continue with "
                               f"--resume {self.journal.path}") from None
        finally:
            self.journal.close()

    def poll(self) -> bool:
        """One look; True while a task is queued or running."""
        self._merge()
        self._task_states()
        if self.decider is not None:
            self._look()
        self._submit_uncovered()
        self._save()
        self.progress.update_jobs(self.state["jobs"])
        return bool(self._live())

    def finish(self) -> int:
        self._merge()
        self.lost = [i for i in self.lost if i not in self.records]
        records = list(self.records.values())
        if self.decider is not None:
            self.decider.final(records)
            self.journal.append_stopping(self.decider.to_json())
        self.state["missing"] = sorted(self.lost)
        self._save()
        self._print_jobs()
        if self.lost:
            _say(f"gpurepro: {len(self.lost)} trial(s) were never journaled after "
                 f"{1 + self.opts.max_resubmits} submission(s) each{self._last_log_line()}; "
                 f"submit them again with: python -m gpurepro run {self.case_arg} "
                 f"--resume {self.journal.path}")
        status = EXIT_ERROR if self.lost else EXIT_OK
        if not records:
            _say("gpurepro: no trial was journaled; no result document is written")
            self.recordable = False
            return status
        errors = [r for r in records if r["outcome"] == "harness_error"]
        if errors:
            _say(f"gpurepro: harness error: {len(errors)} trial(s) ended as harness_error; first: "
                 f"{errors[0]['arm']} on {errors[0].get('host')}: {errors[0]['detail']}")
            status = EXIT_ERROR
        elif records and all(r["outcome"] == "unsupported" for r in records) and not self.lost:
            status = EXIT_UNSUPPORTED
        return status

    # -- steps

    def _say_once(self, text: str) -> None:
        if text not in self.said:
            self.said.add(text)
            self.progress.say(text)

    def _merge(self) -> None:
        shards, problems = read_shards(self.run_dir, self.header)
        for p in problems:
            self._say_once(f"shard {p}")
        for shard in shards:
            add_node(self.state["nodes"], shard.header)
            for t in shard.trials:
                if t["index"] in self.records:
                    continue
                rec = annotate(t, shard.header)
                self.journal.append_trial(rec)
                self.records[rec["index"]] = rec
                self.progress.finished(rec)

    def _live(self) -> list[tuple[str, str, dict[str, Any]]]:
        return [(job_id, task, s) for job_id, job in self.state["jobs"].items()
                for task, s in job["tasks"].items() if not s.get("ended")]

    def _task_states(self) -> None:
        live = self._live()
        if not live:
            return
        try:
            queue = slurm.queued({job_id for job_id, _, _ in live})
        except SlurmError as exc:
            self._say_once(f"squeue: {exc}; asking again at the next look")
            return
        endings: dict[str, dict[int, slurm.TaskState]] = {}
        for job_id, task, s in live:
            label = f"{job_id}_{task}"
            now = queue.get((job_id, int(task)))
            if now is not None:
                self.absent[label] = 0
                s["state"] = now.state
                s["node"] = host_label(now.node, self.redact) or s.get("node")
                continue
            self.absent[label] += 1
            if self.absent[label] < SETTLE_POLLS:
                continue
            if job_id not in endings:
                endings[job_id] = slurm.ended_states(job_id)
            final = endings[job_id].get(int(task))
            s["ended"] = True
            s["state"] = final.state if final else "ENDED"
            s["exit_code"] = final.exit_code if final else None
            if final and final.node:
                s["node"] = host_label(final.node, self.redact)

    def _done(self, arm: str) -> int:
        return sum(1 for r in self.records.values() if r["arm"] == arm and r["outcome"] in EVIDENCE)

    def _look(self) -> None:
        """--until-decided across jobs: a look when the slowest arm still needed reaches the
        next threshold (the Decider's rule, over the merged records); decided arms are listed
        for the tasks to skip, and tasks left with nothing needed are cancelled."""
        assert self.decider is not None
        records = list(self.records.values())
        self.decider.settle(records)
        if self.decider.look_due(records):
            self.decider.look(records)
        now = self.decider.to_json()
        if now != self.decisions:
            self.journal.append_stopping(now)
            self.decisions = now
        needed = self.decider.arms_needed()
        stopped = sorted(a for a in self.plan.arms
                         if a not in needed or self._done(a) >= self.max_trials)
        if stopped != self.state["stopped_arms"]:
            _write_json(self.run_dir / SKIP_FILE, {"arms": stopped})
            new = [a for a in stopped if a not in self.state["stopped_arms"]]
            self.state["stopped_arms"] = stopped
            self.progress.say(f"arm(s) no longer needed (claims decided or maximum reached): "
                              f"{', '.join(new)}; their remaining trials are not run")
        idle = [label for job_id, task, s in self._live()
                if (label := f"{job_id}_{task}") not in self.cancelled
                and all(self.arm_of[i] in stopped for i in s["trials"] if i not in self.records)
                and any(i not in self.records for i in s["trials"])]
        self.cancelled.update(idle)
        if idle:
            self.progress.say(f"scancel {' '.join(idle)}: only trials of arms no longer needed left")
            try:
                slurm.cancel(idle)
            except SlurmError as exc:  # ended meanwhile: nothing left to cancel
                self._say_once(f"scancel: {exc}")

    def _submit_uncovered(self) -> None:
        """Submit every trial that is neither journaled, nor in a task still queued, nor of an
        arm no longer needed: the first submission, and after it what ended tasks left undone."""
        covered = {i for _, _, s in self._live() for i in s["trials"]}
        stopped = set(self.state["stopped_arms"])
        uncovered = [t.index for t in self.plan.order if t.index not in self.records
                     and t.index not in covered and t.arm not in stopped]
        limit = 1 + self.opts.max_resubmits
        ready = [i for i in uncovered if self.attempts[i] < limit]
        self.lost = [i for i in uncovered if self.attempts[i] >= limit]
        if not ready:
            return
        first = not self.state["jobs"]
        if not first:
            self.state["resubmitted"] = int(self.state.get("resubmitted") or 0) + len(ready)
            self.progress.say(f"resubmitting {len(ready)} trial(s) that ended tasks left undone")
        round_ = 1 + max((int(j["round"]) for j in self.state["jobs"].values()), default=0)
        partitions = list(self.opts.partitions)
        for partition, indices in by_partition(self.plan, partitions, set(ready)).items():
            if indices:
                self._submit(round_, partition, indices)
        for i in ready:
            self.attempts[i] += 1

    def _submit(self, round_: int, partition: str, indices: list[int]) -> None:
        target = str(self.opts.partitions[partition])
        build = self.header.cluster["builds"][target]
        tasks = to_tasks(self.plan, indices, self.opts.jobs_per_partition)
        spec = spec_path(self.run_dir, round_, partition)
        _write_json(spec, {"round": round_, "partition": partition, "target": target,
                           "header": self.identity, "index": build, "tasks": tasks})
        workers = max(1, self.header.jobs) * max(1, self.opts.gpus_per_task)
        limit = self.opts.time or slurm.format_minutes(
            -(-max(map(len, tasks)) // workers) * float(self.header.budget.timeout_s)
            + TASK_OVERHEAD_S)
        job = slurm.submit_array(
            self.run_dir / "task.sh", [str(spec)], partition=partition, tasks=len(tasks),
            name=f"gpurepro-{self.case.name}-{str(self.header.run_id)[:8]}",
            output=str(self.run_dir / "logs" / "%A_%a.out"), workdir=self.run_dir / "tree",
            gres=self.opts.gres, time=limit, account=self.opts.account)
        self.state["jobs"][job] = {
            "partition": partition, "round": round_,
            "submitted_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "tasks": {str(i): {"trials": share, "state": "SUBMITTED", "node": None,
                               "exit_code": None, "ended": False} for i, share in enumerate(tasks)}}
        self.progress.say(f"submitted job {job}: partition {partition} ({target}), "
                          f"{len(tasks)} array task(s), {len(indices)} trial(s), time limit {limit}")

    def _cancel_live(self, why: str) -> int:
        labels = sorted({f"{job_id}_{task}" for job_id, task, _ in self._live()})
        if not labels:
            return 0
        try:
            slurm.cancel(labels)
        except SlurmError as exc:
            _say(f"scancel failed ({exc}); cancel them yourself: scancel {' '.join(labels)}")
            return 0
        _say(f"scancel {' '.join(labels)}: {why}")
        return len(labels)

    def _save(self) -> None:
        text = json.dumps(self.state, sort_keys=True)
        if text != self.saved:
            self.journal.append_scheduler(self.state)
            self.saved = text

    def _last_log_line(self) -> str:
        """Where to look, and what the last failed task said last (its Slurm log's last line)."""
        failed = [f"{job_id}_{task}" for job_id, job in self.state["jobs"].items()
                  for task, s in job["tasks"].items()
                  if s.get("ended") and s.get("exit_code") not in (None, "0:0")]
        where = f" (task logs: {self.run_dir / 'logs'})"
        for label in reversed(failed):
            try:
                lines = (self.run_dir / "logs" / f"{label}.out").read_text(errors="replace").splitlines()
            except OSError:
                continue
            if lines:
                return f"{where}; task {label} ended with: {lines[-1].strip()[:300]}"
        return where

    def _print_jobs(self) -> None:
        if not self.state["jobs"]:
            return
        _say("Slurm jobs of this run:")
        for job_id, job in self.state["jobs"].items():
            _say("  " + job_summary(job_id, job))
