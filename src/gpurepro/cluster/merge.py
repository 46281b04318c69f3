"""Merge a cluster run: its shard journals into the run's own journal, and the nodes' facts
into the result document's view of them (environment, device, the cluster section and the
per-host table).

Shard journals are read, never written, here: each belongs to the array task that writes it.
A trial keeps its first journaled record (journal.parse's rule); each merged trial names the
host (Slurm node) and the job that ran it.

Standard library only.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import JournalError
from ..model.journal import RunHeader
from ..model.outcomes import EVIDENCE
from ..run.journal import check_trials, plan_sha256, read

# What other modules use; the rest is this module's own.
__all__ = [
    "add_node", "annotate", "cluster_header", "document_fields", "host_label", "per_host",
    "read_shards", "rerun_arguments", "Shard"
]


@dataclass
class Shard:
    path: Path
    header: RunHeader  # the shard's: the run's identity, and its node, task and device
    trials: list[dict[str, Any]]


def read_shards(run_dir: Path, header: RunHeader) -> tuple[list[Shard], list[str]]:
    """Every shard journal of the run in ``run_dir`` that belongs to it, and a line for each
    file that does not (another run's, or damaged)."""
    shards, problems = [], []
    for path in sorted((run_dir / "shards").glob("*.journal.jsonl")):
        try:
            contents = read(path)
            if (contents.header.get("run_id") != header.run_id
                    or plan_sha256(contents.header.get("plan", {})) != header.plan_sha256):
                problems.append(f"{path.name}: a journal of another run; left out")
                continue
            check_trials(contents, str(path))
            shard = Shard(path, RunHeader.from_json(contents.header, str(path)), contents.trials)
        except (JournalError, OSError) as exc:
            problems.append(f"{path.name}: {exc}; left out")
            continue
        shards.append(shard)
    return shards, problems


def host_label(node: str | None, redact: bool) -> str | None:
    """The name a node goes by in the record: its Slurm node name, or with --redact a stable
    pseudonym (the same node gets the same one in every shard and on resume)."""
    if node is None or not redact:
        return node
    return "node-" + hashlib.sha256(node.encode()).hexdigest()[:6]


def _shard(shard_header: RunHeader) -> Mapping[str, Any]:
    """The shard's own section: its round, partition, array task, node and GPUs."""
    shard = shard_header.fields.get("shard")
    return shard if isinstance(shard, Mapping) else {}


def shard_host(shard_header: RunHeader) -> str | None:
    return host_label(_shard(shard_header).get("node"), shard_header.redact)


def annotate(trial: Mapping[str, Any], shard_header: RunHeader) -> dict[str, Any]:
    """A shard's trial record as the merged journal holds it: with its host and job."""
    s = _shard(shard_header)
    return {**trial, "host": shard_host(shard_header),
            "cluster": {"partition": s["partition"], "job_id": f"{s['job_id']}_{s['task']}",
                        "round": s["round"]}}


def node_facts(shard_header: RunHeader) -> dict[str, Any]:
    """What a node's shard header says of it: host, GPUs and driver, and the device gate."""
    env = shard_header.environment
    host = env.get("host") or {}
    return {"hostname": host.get("hostname"), "os": host.get("os"), "kernel": host.get("kernel"),
            "glibc": host.get("glibc"), "cpu": host.get("cpu"), "cpu_count": host.get("cpu_count"),
            "python": host.get("python"), "gpu": env.get("gpu") or {"available": False, "gpus": []},
            "device": dict(shard_header.device),
            "environment": dict(env.get("environment") or {}),
            "partitions": [_shard(shard_header)["partition"]]}


def add_node(nodes: dict[str, Any], shard_header: RunHeader) -> bool:
    """Record the shard's node in ``nodes``; True when that changed anything."""
    label = shard_host(shard_header)
    if label is None:
        return False
    facts = node_facts(shard_header)
    known = nodes.get(label)
    if known is None:
        nodes[label] = facts
        return True
    partition = facts["partitions"][0]
    if partition in known["partitions"]:
        return False
    known["partitions"] = sorted([*known["partitions"], partition])
    return True


# ---------------------------------------------------------------- the document's view


def _joined(values: Sequence[Any]) -> str | None:
    distinct = sorted({str(v) for v in values if v})
    return ", ".join(distinct) if distinct else None


def _scheduler_state(header: RunHeader) -> Mapping[str, Any]:
    """The run's last scheduler record (its jobs, nodes, resubmissions), as the journal's
    reader joins it to the header (``scheduler_state``)."""
    state = header.fields.get("scheduler_state")
    return state if isinstance(state, Mapping) else {}


def cluster_header(header: RunHeader) -> dict[str, Any]:
    """A cluster run's header line as recording reads it: the environment's GPUs are the
    nodes' (each named with its host), the driver versions theirs, and the device the gate the
    nodes found (supported where any node could run the case). The host, repository and
    toolchain stay the submitting side's: the build happened there."""
    line = header.to_json()
    nodes: Mapping[str, Any] = _scheduler_state(header).get("nodes") or {}
    if not nodes:
        return line
    env = dict(header.environment)
    gpus = [{**g, "host": label} for label, n in sorted(nodes.items())
            for g in (n["gpu"].get("gpus") or [])]
    any_gpu = [n["gpu"] for n in nodes.values()]
    env["gpu"] = {"available": any(g.get("available") for g in any_gpu),
                  "reason": _joined([g.get("reason") for g in any_gpu]),
                  "cuda_driver_api": _joined([g.get("cuda_driver_api") for g in any_gpu]),
                  "driver_version": _joined([g.get("driver_version") for g in any_gpu]),
                  "gpus": gpus}
    gates = [n["device"] for _, n in sorted(nodes.items())]
    supported = [d for d in gates if d.get("supported")]
    first = (supported or gates)[0]
    device = {**header.device,
              "name": _joined([d.get("name") for d in gates]),
              "compute_capability": _joined([d.get("compute_capability") for d in gates]),
              "supported": bool(supported),
              "reason": None if len(supported) == len(gates) else (
                  f"{len(gates) - len(supported)} of {len(gates)} node(s) cannot run it: "
                  + "; ".join(sorted({str(d.get('reason')) for d in gates if not d.get('supported')}))),
              "target": first.get("target") or header.device["target"]}
    return {**line, "environment": env, "device": device}


def per_host(trials: Sequence[Mapping[str, Any]], failure_outcomes: Sequence[str],
             gpus: bool = False) -> dict[str, Any]:
    """Failures and valid trials per host and arm (the per-GPU table's shape, by host); with
    ``gpus``, per host and GPU ('node · 0': GPU indices repeat from node to node)."""
    table: dict[str, dict[str, dict[str, int]]] = defaultdict(
        lambda: defaultdict(lambda: {"failures": 0, "valid": 0}))
    for t in trials:
        if t.get("host") is None or (gpus and t.get("gpu") is None):
            continue
        key = f"{t['host']} · {t['gpu']}" if gpus else str(t["host"])
        cell = table[key][t["arm"]]
        if t["outcome"] in EVIDENCE:
            cell["valid"] += 1
            cell["failures"] += int(t["outcome"] in failure_outcomes)
    return {h: dict(arms) for h, arms in sorted(table.items())}


def cluster_section(header: RunHeader, trials: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The document's `cluster`: scheduler, partitions and their targets, every job and array
    task (state, node, exit, trials assigned and journaled), every node's facts."""
    static = header.cluster
    state = _scheduler_state(header)
    journaled: dict[str, int] = defaultdict(int)
    for t in trials:
        job = (t.get("cluster") or {}).get("job_id")
        if job:
            journaled[job] += 1
    jobs = []
    for job_id, job in (state.get("jobs") or {}).items():
        tasks = [{"task": int(task), "state": s.get("state"), "node": s.get("node"),
                  "exit_code": s.get("exit_code"), "trials": len(s.get("trials") or []),
                  "journaled": journaled.get(f"{job_id}_{task}", 0)}
                 for task, s in sorted((job.get("tasks") or {}).items(), key=lambda kv: int(kv[0]))]
        jobs.append({"job_id": job_id, "partition": job["partition"], "round": job["round"],
                     "submitted_at": job.get("submitted_at"), "tasks": tasks})
    return {"scheduler": static["scheduler"], "scheduler_version": static.get("scheduler_version"),
            "shared_dir": static.get("shared_dir"), "options": static.get("options") or {},
            "partitions": static["partitions"], "jobs": jobs, "nodes": state.get("nodes") or {},
            "resubmitted": int(state.get("resubmitted") or 0),
            "stopped_arms": list(state.get("stopped_arms") or []),
            "missing": list(state.get("missing") or [])}


def document_fields(header: RunHeader, trials: Sequence[Mapping[str, Any]],
                    failure_outcomes: Sequence[str]) -> dict[str, Any]:
    """What a cluster run's document adds: the cluster section and the per-host table, and
    its per-GPU table keyed by host and GPU."""
    return {"cluster": cluster_section(header, trials),
            "per_host": per_host(trials, failure_outcomes),
            "per_gpu": per_host(trials, failure_outcomes, gpus=True)}


def rerun_arguments(cluster: Mapping[str, Any]) -> list[str]:
    """The cluster flags that repeat a cluster run, from its document's ``cluster`` section
    (the plan's flags come from comment.py)."""
    args = ["--slurm"]
    for name, p in cluster["partitions"].items():
        args += ["--partition", f"{name}={p['target']}" if p.get("target") else name]
    opts = cluster.get("options") or {}
    for flag in ("gres", "time", "account"):
        if opts.get(flag):
            args += [f"--{flag}", str(opts[flag])]
    if opts.get("jobs_per_partition"):
        args += ["--jobs-per-partition", str(opts["jobs_per_partition"])]
    return args
