"""A cluster run's options (``--slurm``; gpurepro.cli.args checks the flags into them), checked
against Slurm itself, and each partition's build target resolved: given, --arch, the case's
only one, or probed.

A bad value is one line and exit 2 (UsageError), as everywhere; a Slurm that cannot be reached
is an error (exit 1). Standard library only.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..case.model import Case
from ..env import privacy
from ..errors import ClusterError, SlurmError, UsageError
from . import slurm

DEFAULT_SHARED_DIR = "build/slurm"
DEFAULT_TASKS, DEFAULT_RESUBMITS = 4, 2
# The submitting side runs no trial: its GPUs (if any) are not the run's.
NO_TRIALS_HERE = {"available": False, "reason": "the submitting side runs no trial", "gpus": []}


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- flags


@dataclass(frozen=True)
class ClusterOptions:
    partitions: dict[str, str | None]  # name -> target given with it (None: resolve)
    gres: str | None = None
    time: str | None = None
    account: str | None = None
    jobs_per_partition: int = DEFAULT_TASKS
    shared_dir: str = DEFAULT_SHARED_DIR  # relative to the repository, or absolute (~ expanded)
    max_resubmits: int = DEFAULT_RESUBMITS
    node_python: str = "python3"

    @property
    def gpus_per_task(self) -> int:
        """GPUs a task asks for in --gres (gpu, gpu:N or gpu:TYPE:N)."""
        if not self.gres:
            return 0
        for item in self.gres.split(","):
            parts = item.split(":")
            if parts[0] == "gpu":
                return int(parts[-1]) if parts[-1].isdigit() else 1
        return 0

    def to_json(self) -> dict[str, Any]:
        # The home folder as ~: a result document may be posted (the task script, written
        # once when the run starts, keeps the path as given).
        return {"gres": self.gres, "time": self.time, "account": self.account,
                "jobs_per_partition": self.jobs_per_partition, "max_resubmits": self.max_resubmits,
                "node_python": privacy.portable_text(self.node_python)}


def check_time(opts: ClusterOptions, timeout_s: float) -> None:
    if opts.time is None:
        return
    seconds = slurm.time_limit_seconds(opts.time) or 0
    if seconds < timeout_s + 60:
        raise UsageError(f"--time {opts.time} ({seconds} s) leaves no room for one trial "
                         f"({timeout_s:g} s limit) and the minute a task needs to start and stop")


def check_partitions(opts: ClusterOptions) -> None:
    try:
        known = slurm.partitions()
    except SlurmError as exc:
        raise ClusterError(f"cannot ask Slurm for its partitions: {exc}") from None
    unknown = [p for p in opts.partitions if p not in known]
    if unknown:
        raise UsageError(f"--partition {unknown[0]}: no such partition (this cluster has "
                         f"{', '.join(sorted(known)) or 'none'})")


def resolve_targets(case: Case, opts: ClusterOptions, arch: str | None) -> dict[str, str]:
    """Each partition's build target: given with it (NAME=TARGET), --arch for all, the case's
    only target, or from the compute capability a probe job finds on one of its nodes."""
    targets = sorted(set(case.devices.targets.values()))
    out = {}
    for name, given in opts.partitions.items():
        if given or arch or len(targets) == 1:
            out[name] = given or arch or targets[0]
            continue
        _say(f"probing partition {name} for its GPUs (srun nvidia-smi)")
        try:
            ccs = slurm.probe_compute_capabilities(name, opts.gres, opts.account)
        except SlurmError as exc:
            raise UsageError(f"--partition {name}: its GPUs could not be probed ({exc}); give "
                             f"its target: --partition {name}=TARGET ({', '.join(targets)})") from None
        found = [t for t in (case.devices.target_for(cc) for cc in ccs) if t]
        if not found:
            raise UsageError(f"--partition {name}: a job there saw "
                             f"{'compute capability ' + ', '.join(ccs) if ccs else 'no GPU'}, which "
                             f"no target of {case.name} runs on; give one: --partition "
                             f"{name}=TARGET ({', '.join(targets)})")
        out[name] = found[0]
        _say(f"  {name}: compute capability {', '.join(ccs)} -> {found[0]}")
    return out


def partition_arguments(targets: Mapping[str, str]) -> list[str]:
    """--partition flags with the resolved targets (what `prepare` hands the nox session)."""
    return [f"{name}={target}" for name, target in targets.items()]


