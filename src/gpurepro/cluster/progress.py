"""Progress of a cluster run on the submitting side: per-arm outcomes as shard journals are
merged, and the jobs' array tasks as squeue and scontrol report them.

With rich and a terminal: a live view of both tables. Otherwise (CI, a log, a pipe): one line
per merged trial, naming its host and job, and one line per job whenever its tasks' states
change; the job lines carry the job ids a user greps squeue or sacct for.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from ..run.progress import Progress

try:  # optional, as in progress.py
    from rich.console import Group
    from rich.table import Table
except ImportError:  # pragma: no cover - a bare submitting node
    Group = Table = None  # type: ignore[assignment,misc]


def job_summary(job_id: str, job: Mapping[str, Any]) -> str:
    """'job 12 (partition a, round 1): task 0 RUNNING on n1, task 1 PENDING'."""
    parts = []
    for task, s in sorted((job.get("tasks") or {}).items(), key=lambda kv: int(kv[0])):
        where = f" on {s['node']}" if s.get("node") else ""
        code = f" exit {s['exit_code']}" if s.get("exit_code") and s.get("ended") else ""
        parts.append(f"task {task} {s.get('state') or '?'}{where}{code}")
    return f"job {job_id} (partition {job['partition']}, round {job['round']}): " + ", ".join(parts)


class ClusterProgress(Progress):
    def __init__(self, *args: Any, **kwargs: Any):
        self.jobs: dict[str, Mapping[str, Any]] = {}
        self._said: dict[str, str] = {}
        super().__init__(*args, **kwargs)

    def _table(self) -> Any:
        arms = super()._table()
        if Table is None or not self.jobs:
            return arms
        jobs = Table(title="Slurm jobs")
        for column in ("job", "partition", "round", "tasks", "nodes"):
            jobs.add_column(column)
        for job_id, job in self.jobs.items():
            tasks = job.get("tasks") or {}
            states = Counter(str(s.get("state")) for s in tasks.values())
            nodes = sorted({str(s["node"]) for s in tasks.values() if s.get("node")})
            jobs.add_row(job_id, str(job["partition"]), str(job["round"]),
                         ", ".join(f"{n} {st}" for st, n in sorted(states.items())),
                         ", ".join(nodes) or "–")
        return Group(arms, jobs)

    def update_jobs(self, jobs: Mapping[str, Mapping[str, Any]]) -> None:
        with self.lock:
            self.jobs = dict(jobs)
            if self.live is not None:
                self.live.update(self._table())
                return
            for job_id, job in jobs.items():
                line = job_summary(job_id, job)
                if self._said.get(job_id) != line:
                    self._said[job_id] = line
                    self._say(line)

    def say(self, text: str) -> None:
        """A line of its own (a resubmission, a cancellation), above the live view if any."""
        if self.live is not None:
            self.live.console.print(text)
        else:
            self._say(text)

    def finished(self, rec: dict[str, Any]) -> None:
        if self.live is not None:
            super().finished(rec)
            return
        with self.lock:
            self.counts[rec["arm"]][rec["outcome"]] += 1
            self.finished_n += 1
            job = (rec.get("cluster") or {}).get("job_id")
            where = " ".join(x for x in (rec.get("host"),
                                         f"gpu{rec['gpu']}" if rec.get("gpu") is not None else None,
                                         f"job {job}" if job else None) if x)
            self._say(f"[{self.finished_n:>4}/{self.total}] {rec['arm']}#{rec['rep']} {where}: "
                      f"{rec['outcome']} ({rec['detail']}) {rec['duration_s']:.1f}s")
