"""The report's section for a cluster run: which scheduler, partitions, jobs and nodes produced
the trials, each node's fingerprint, and failures per host beside each other.

Renders from the document alone, like every report section.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..model.result import Result, as_result
from .tables import code, escape, table


def _gpus(node: Mapping[str, Any]) -> str:
    gpus = (node.get("gpu") or {}).get("gpus") or []
    if not gpus:
        return "none"
    names = sorted({str(g.get("name")) for g in gpus})
    ccs = sorted({str(g.get("compute_capability")) for g in gpus})
    return escape(f"{', '.join(names)} × {len(gpus)} ({', '.join(ccs)})")


def section(doc: Result | Mapping[str, Any]) -> list[str]:
    r = as_result(doc)
    if r.cluster is None:
        return []
    # The cluster's record as gpurepro.cluster.merge wrote it (its jobs, tasks and nodes).
    cluster: Mapping[str, Any] = r.cluster.fields
    jobs = cluster.get("jobs") or []
    tasks = sum(len(j["tasks"]) for j in jobs)
    parts = ", ".join(f"{code(name)} ({escape(p['target'])}, {p['trials']} trials)"
                      for name, p in cluster["partitions"].items())
    out = ["### Cluster\n",
           f"Run on {escape(cluster['scheduler'].capitalize())} {escape(cluster.get('scheduler_version') or '')}"
           f" as {len(jobs)} job array(s) of {tasks} task(s) in all, over the partitions {parts}; "
           f"{cluster.get('resubmitted', 0)} trial(s) resubmitted after a task ended without "
           f"them. The nodes ran from {code(cluster.get('shared_dir') or '–')}.\n"]
    if cluster.get("stopped_arms"):
        out.append(f"Arms stopped once their claims were decided: "
                   f"{', '.join(code(a) for a in cluster['stopped_arms'])}.\n")
    if cluster.get("missing"):
        out.append(f"**{len(cluster['missing'])} planned trial(s) were never journaled** "
                   f"(indices {', '.join(map(str, cluster['missing'][:20]))}).\n")
    arms = list(r.arms)
    hosts = []
    for host, node in (cluster.get("nodes") or {}).items():
        cells = r.per_host.get(host) or {}
        device = node.get("device") or {}
        target = escape(str(device.get("target")) + ("" if device.get("supported") else " (unsupported)"))
        hosts.append([escape(host), escape(", ".join(node.get("partitions") or [])), _gpus(node),
                      escape((node.get("gpu") or {}).get("driver_version") or "–"), target,
                      *(f"{cells[a].failures}/{cells[a].valid}" if a in cells else "–"
                        for a in arms)])
    out += table(["host", "partitions", "GPUs", "driver", "target", *(code(a) for a in arms)], hosts)
    out += ["", "Failures / valid trials per host. Jobs and array tasks:\n",
            *table(["job", "partition", "round", "task", "state", "node", "exit",
                    "trials journaled / assigned"],
                   [[escape(j["job_id"]), escape(j["partition"]), j["round"], t["task"],
                     escape(t.get("state") or "–"), escape(t.get("node") or "–"),
                     escape(t.get("exit_code") or "–"),
                     f"{t['journaled']} / {t['trials']}"] for j in jobs for t in j["tasks"]]), ""]
    return out
