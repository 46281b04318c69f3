"""Slurm's own client commands, called and read: sbatch, squeue, scontrol, sacct, scancel, sinfo,
srun. Nothing here schedules anything; Slurm does.

Every call goes through ``_call``: a timeout, and a failure turned into ``SlurmError`` naming
the command and Slurm's last line of complaint. Output is asked for in explicit formats with
``|`` between fields, so a value with spaces cannot shift a column.

Standard library only (the submitting side may be a login node with little installed).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import SlurmError

# What other modules use; the rest is this module's own.
__all__ = [
    "cancel", "ENDED", "ended_states", "format_minutes", "missing_commands", "partitions",
    "probe_compute_capabilities", "queued", "REQUIRED", "submit_array", "TaskState",
    "time_limit_seconds", "version"
]

# What the submitting side needs; sacct and srun are used when present (sacct needs Slurm's
# accounting storage, which small clusters often run without).
REQUIRED = ("sbatch", "squeue", "scontrol", "scancel", "sinfo")
# Array task states after which the task will not run again (a requeued task goes back to
# PENDING instead of reaching one of these).
ENDED = frozenset({"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED",
                   "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE", "REVOKED", "SPECIAL_EXIT"})
TIME_LIMIT = re.compile(r"^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$")


def missing_commands(names: Sequence[str] = REQUIRED) -> list[str]:
    return [n for n in names if shutil.which(n) is None]


def _call(argv: Sequence[str], timeout: float = 60.0) -> str:
    try:
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout,
                              check=False)
    except FileNotFoundError:
        raise SlurmError(f"{argv[0]}: not found on PATH") from None
    except subprocess.TimeoutExpired:
        raise SlurmError(f"{' '.join(argv[:2])}: no answer within {timeout:g} s "
                         f"(is slurmctld reachable?)") from None
    if done.returncode != 0:
        said = (done.stderr.strip() or done.stdout.strip()).splitlines()
        raise SlurmError(f"{' '.join(argv[:2])} failed (exit {done.returncode}): "
                         f"{said[-1] if said else 'no message'}")
    return done.stdout


def version() -> str | None:
    try:
        out = _call(["sbatch", "--version"], timeout=20).strip()
    except SlurmError:
        return None
    return out.split()[-1] if out else None


def time_limit_seconds(text: str) -> int | None:
    """Seconds in a Slurm time limit (minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS);
    None when it is none of these."""
    m = TIME_LIMIT.match(text.strip())
    if not m:
        return None
    days, a, b, c = (int(x) if x is not None else None for x in m.groups())
    if days is None:
        if b is None:
            return (a or 0) * 60  # "minutes"
        if c is None:
            return (a or 0) * 60 + b  # "MM:SS"
        return (a or 0) * 3600 + b * 60 + c  # "HH:MM:SS"
    return days * 86400 + (a or 0) * 3600 + (b or 0) * 60 + (c or 0)


def format_minutes(seconds: float) -> str:
    """A time limit sbatch accepts, in whole minutes (at least one)."""
    return str(max(1, -(-int(seconds) // 60)))


def partitions() -> dict[str, str]:
    """Every partition this user can see, with its state (up, down, drain, inact)."""
    out = _call(["sinfo", "--noheader", "--format=%R|%a"], timeout=30)
    found: dict[str, str] = {}
    for line in out.splitlines():
        name, _, avail = line.strip().partition("|")
        if name:
            found[name] = avail
    return found


def submit_array(script: Path, script_args: Sequence[str], *, partition: str, tasks: int,
                 name: str, output: str, workdir: Path, gres: str | None = None,
                 time: str | None = None, account: str | None = None) -> str:
    """Submit ``script`` as an array of ``tasks`` tasks (0..tasks-1); return its job id."""
    argv = ["sbatch", "--parsable", f"--array=0-{tasks - 1}", f"--partition={partition}",
            f"--job-name={name}", f"--output={output}", f"--chdir={workdir}",
            # Half a minute before the time limit, SIGTERM to the harness alone: it kills its
            # trials and exits with every finished trial journaled, instead of meeting the
            # limit's SIGKILL unannounced. (A cancellation signals every process of the job.)
            "--signal=B:TERM@30"]
    if gres:
        argv.append(f"--gres={gres}")
    if time:
        argv.append(f"--time={time}")
    if account:
        argv.append(f"--account={account}")
    out = _call([*argv, str(script), *script_args], timeout=120).strip()
    job = out.split(";", 1)[0]  # "--parsable" prints "jobid" or "jobid;cluster"
    if not job.isdigit():
        raise SlurmError(f"sbatch printed {out!r} where a job id was expected")
    return job


@dataclass(frozen=True)
class TaskState:
    """One array task as Slurm last described it."""

    job: str  # the array's job id
    task: int
    state: str  # PENDING, RUNNING, COMPLETED, CANCELLED, ...
    node: str | None = None
    exit_code: str | None = None  # "code:signal", once ended
    reason: str | None = None

    @property
    def label(self) -> str:
        return f"{self.job}_{self.task}"

    @property
    def ended(self) -> bool:
        return self.state.split()[0] in ENDED


def _task_id(text: str) -> tuple[str, int] | None:
    job, sep, task = text.partition("_")
    return (job, int(task)) if sep and job.isdigit() and task.isdigit() else None


def queued(jobs: Iterable[str]) -> dict[tuple[str, int], TaskState]:
    """The array tasks of ``jobs`` that Slurm still holds (pending, running, completing,
    requeued), one per task. A task missing here has ended."""
    ids = sorted(set(jobs))
    if not ids:
        return {}
    try:
        out = _call(["squeue", "--noheader", "--array", f"--jobs={','.join(ids)}",
                     "--format=%i|%T|%N|%r"], timeout=60)
    except SlurmError as exc:
        # squeue refuses a list in which every job has left the controller's memory.
        if "Invalid job id" in str(exc):
            return {}
        raise
    found: dict[tuple[str, int], TaskState] = {}
    for line in out.splitlines():
        fields = line.strip().split("|")
        key = _task_id(fields[0]) if fields else None
        if key is None or len(fields) < 4:
            continue
        found[key] = TaskState(key[0], key[1], fields[1], fields[2] or None, None,
                               fields[3] if fields[3] not in ("None", "") else None)
    return found


_FIELD = re.compile(r"(?:^|\s)(ArrayJobId|ArrayTaskId|JobState|ExitCode|NodeList|Reason)=(\S*)")


def ended_states(job: str) -> dict[int, TaskState]:
    """How each array task of ``job`` ended: from the controller (scontrol, while it still
    remembers the job: MinJobAge) or else from accounting (sacct, where it is enabled)."""
    try:
        return _scontrol_states(job)
    except SlurmError:
        pass
    try:
        return _sacct_states(job)
    except SlurmError:
        return {}


def _scontrol_states(job: str) -> dict[int, TaskState]:
    out = _call(["scontrol", "--oneliner", "show", "job", job], timeout=60)
    found: dict[int, TaskState] = {}
    for line in out.splitlines():
        f = dict(_FIELD.findall(line))
        if f.get("ArrayJobId") != job or not f.get("ArrayTaskId", "").isdigit():
            continue
        task = int(f["ArrayTaskId"])
        node = f.get("NodeList")
        found[task] = TaskState(job, task, f.get("JobState", "UNKNOWN"),
                                None if node in (None, "", "(null)") else node,
                                f.get("ExitCode"), f.get("Reason"))
    return found


def _sacct_states(job: str) -> dict[int, TaskState]:
    if shutil.which("sacct") is None:
        raise SlurmError("sacct: not found on PATH")
    out = _call(["sacct", "--noheader", "--parsable2", "--allocations", f"--jobs={job}",
                 "--format=JobID,State,ExitCode,NodeList"], timeout=60)
    found: dict[int, TaskState] = {}
    for line in out.splitlines():
        fields = line.strip().split("|")
        key = _task_id(fields[0]) if fields else None
        if key is None or key[0] != job or len(fields) < 4:
            continue
        # sacct writes "CANCELLED by 0": the state is the first word.
        found[key[1]] = TaskState(job, key[1], fields[1].split()[0], fields[3] or None, fields[2])
    return found


def cancel(labels: Iterable[str]) -> None:
    """scancel whole jobs ("123") or array tasks ("123_4"); Slurm signals the harness first."""
    ids = sorted(set(labels))
    if ids:
        _call(["scancel", *ids], timeout=60)


def probe_compute_capabilities(partition: str, gres: str | None, account: str | None,
                               wait_s: int = 120) -> list[str]:
    """The compute capabilities of the GPUs one node of ``partition`` gives a job, from
    nvidia-smi run there through srun (an empty list: the job saw no GPU). Gives up when no
    node is free within ``wait_s`` seconds."""
    if shutil.which("srun") is None:
        raise SlurmError("srun: not found on PATH")
    argv = ["srun", f"--partition={partition}", "--nodes=1", "--ntasks=1", "--time=2",
            f"--immediate={wait_s}", "--job-name=gpurepro-probe", "--quiet"]
    if gres:
        argv.append(f"--gres={gres}")
    if account:
        argv.append(f"--account={account}")
    # `|| true`: a node without nvidia-smi (or without a GPU) is an answer, not a failure.
    script = "nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null || true"
    out = _call([*argv, "/bin/sh", "-c", script], timeout=wait_s + 90)
    return [line.strip() for line in out.splitlines() if re.fullmatch(r"\d+\.\d+", line.strip())]
