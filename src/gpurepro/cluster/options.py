"""The flags of a cluster run (``--slurm``), checked before anything is built or submitted,
and each partition's build target resolved: given, --arch, the case's only one, or probed.

A bad flag is one line and exit 2 (UsageError), as everywhere; a Slurm that cannot be reached
is an error (exit 1). Standard library only.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..case.model import Case
from ..env import privacy
from ..errors import ClusterError, JournalError, UsageError
from ..run.journal import read
from . import slurm

# The flags of a cluster run; each is None when not given (so a flag without --slurm, or
# with --resume, can be refused by name).
FLAGS = ("partition", "gres", "time", "account", "jobs_per_partition", "shared_dir",
         "max_resubmits", "node_python")
DEFAULT_SHARED_DIR = "build/slurm"
DEFAULT_TASKS, DEFAULT_RESUBMITS = 4, 2
PARTITION = re.compile(r"^([A-Za-z0-9_.-]+)(?:=(\S+))?$")
GRES = re.compile(r"^[A-Za-z0-9_]+(?::[A-Za-z0-9_.-]+)*(?:,[A-Za-z0-9_]+(?::[A-Za-z0-9_.-]+)*)*$")
# Folders that are node-local on almost every cluster.
NODE_LOCAL = (Path("/tmp"), Path("/var/tmp"), Path("/dev/shm"))
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


def given_flags(args: argparse.Namespace) -> list[str]:
    return [f"--{f.replace('_', '-')}" for f in FLAGS if getattr(args, f, None) is not None]


def wanted(args: argparse.Namespace) -> bool:
    """Whether this `run`/`case` is a cluster run: --slurm, or --resume of a cluster run's
    journal. Cluster flags without either are refused here."""
    if getattr(args, "slurm", False):
        return True
    if args.resume:
        try:
            return bool(read(Path(args.resume)).header.get("cluster"))
        except (JournalError, OSError):
            return False  # the single-host path says what is wrong with it
    loose = given_flags(args) + (["--poll"] if getattr(args, "poll", None) is not None else [])
    if loose:
        raise UsageError(f"{loose[0]} applies only with --slurm")
    return False


def check_flags(args: argparse.Namespace, case: Case) -> ClusterOptions:
    """Every cluster flag, checked before anything is built or submitted."""
    missing = slurm.missing_commands()
    if missing:
        raise UsageError(f"--slurm: {', '.join(missing)} not found on PATH; submit from a node "
                         f"with Slurm's client commands")
    if args.gpus:
        raise UsageError("--gpus chooses GPUs of this machine; with --slurm ask each task for "
                         "GPUs with --gres gpu:N")
    if not args.partition:
        raise UsageError("--slurm needs at least one --partition NAME (or NAME=TARGET)")
    targets = sorted(set(case.devices.targets.values()))
    partitions: dict[str, str | None] = {}
    for given in args.partition:
        m = PARTITION.match(given)
        if not m:
            raise UsageError(f"--partition {given!r}: expected NAME or NAME=TARGET")
        name, target = m.group(1), m.group(2)
        if name in partitions:
            raise UsageError(f"--partition {name}: given twice")
        if target is not None and target not in targets:
            raise UsageError(f"--partition {given}: {case.name} builds for {', '.join(targets)}")
        partitions[name] = target
    if args.gres is not None and not GRES.match(args.gres):
        raise UsageError(f"--gres {args.gres!r}: expected Slurm's form, e.g. gpu:1 or gpu:h200:2")
    if args.time is not None and slurm.time_limit_seconds(args.time) is None:
        raise UsageError(f"--time {args.time!r}: expected a Slurm time limit (minutes, "
                         f"HH:MM:SS, D-HH:MM, ...)")
    if args.node_python is not None and not args.node_python.strip():
        raise UsageError("--node-python: empty")
    if args.shared_dir and any(Path(args.shared_dir).resolve().is_relative_to(p) for p in NODE_LOCAL):
        _say(f"note: --shared-dir {args.shared_dir} is in a folder that compute nodes usually "
             f"do not share; the run works only where they do (a single node, or a shared /tmp)")
    return ClusterOptions(
        partitions=partitions, gres=args.gres, time=args.time, account=args.account,
        jobs_per_partition=args.jobs_per_partition or DEFAULT_TASKS,
        # Given: relative to where the command runs, as every path flag; the default is the
        # repository's build/ (fine where the checkout is on a shared file system).
        shared_dir=str(Path(args.shared_dir).expanduser().resolve()) if args.shared_dir
        else DEFAULT_SHARED_DIR,
        max_resubmits=DEFAULT_RESUBMITS if args.max_resubmits is None else args.max_resubmits,
        node_python=args.node_python or "python3")


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
    except slurm.SlurmError as exc:
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
        except slurm.SlurmError as exc:
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


