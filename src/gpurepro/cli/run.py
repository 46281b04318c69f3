"""`run` and `case`, the whole flow as one list of steps:

    check -> build -> [compare artifacts] -> open -> execute (here | Slurm) -> record -> report
          -> index -> [compare verdict]

The steps in brackets are a rerun's check against the document it repeats (``--rerun-of``,
``GPUREPRO_RERUN_OF``: gpurepro.run.rerun_of).

``flow`` spells it out; each step is a function below it, and the commands around it (`build`,
`target`, `pins`, `prepare`, `slurm-task`) reuse them. Every flag is checked before the first
build step; what leaves the check is a typed request (gpurepro.run.session.RunRequest), and no
step below the command line sees a flag.
"""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..analyze.designing import designer
from ..building import runtime as build_runtime
from ..building.artifacts import build_case
from ..case.load import load_case
from ..case.model import Case
from ..cluster import submit
from ..cluster.options import (
    NO_TRIALS_HERE,
    ClusterOptions,
    check_partitions,
    check_time,
    partition_arguments,
    resolve_targets,
)
from ..cluster.task import run_task
from ..env import fingerprint as envmod
from ..errors import (
    EXIT_ERROR,
    EXIT_NOT_REPRODUCED,
    EXIT_OK,
    EXIT_UNSUPPORTED,
    BuildError,
    UsageError,
)
from ..run import rerun_of, session
from ..run import runtime as run_runtime
from ..run.rerun_of import Expected, HashCheck
from ..run.schedule import Allocator, Decider
from ..run.session import RunRequest, Started, load_build, substitute_artifacts
from .args import (
    check_arguments,
    checked_build_dir,
    cluster_options,
    cluster_wanted,
    given_cluster_flags,
    repository_root,
    resolve_target,
    say,
    show,
)
from .record import record_report_index

# What other modules use; the rest is this module's own.
__all__ = [
    "check", "Checked", "cmd_build", "cmd_case", "cmd_pins", "cmd_prepare", "cmd_run",
    "cmd_slurm_task", "cmd_target", "do_build", "execute", "flow", "open_run", "rerun_of",
    "run_runtime", "session", "steering"
]

# The statuses after which the trials that ran are recorded: done, the GPU cannot run the case
# (every trial 'unsupported'), or a harness error (the trials that ran are still evidence).
RECORDED = (EXIT_OK, EXIT_UNSUPPORTED, EXIT_ERROR)


@dataclass(frozen=True)
class Checked:
    """What the check step hands the others: the case, the typed request and, for a cluster
    run, its options (each partition's target resolved) and poll interval."""

    case: Case
    request: RunRequest
    gpu_info: dict[str, Any] | None = None  # this machine's GPUs (a new run here)
    slurm: bool = False  # a cluster run (--slurm, or --resume of a cluster run's journal)
    cluster: ClusterOptions | None = None  # a new cluster run's options
    poll_s: float | None = None  # --poll
    expected: Expected | None = None  # --rerun-of: the document this run repeats

    @property
    def targets(self) -> list[str]:
        """The targets to build, each once."""
        if self.cluster is not None:
            return list(dict.fromkeys(str(t) for t in self.cluster.partitions.values()))
        return [self.request.target]


def flow(args: argparse.Namespace, build: bool) -> int:
    """`run` (from a prebuilt build/) and `case` (``build``): every step in order."""
    root = repository_root()
    checked = check(args, root)
    if build and checked.request.resume is None:
        for target in checked.targets:
            do_build(checked.case, target, root, checked.request.build_dir)
    artifacts = compare_artifacts(checked, root) if checked.expected else None
    opened = open_run(checked, root)
    if isinstance(opened, int):
        return opened  # nothing could run (no CUDA driver): nothing to record
    status, journaled = execute(checked, opened, root)
    recorded = None
    if checked.request.record and journaled and status in RECORDED:
        recorded = record_report_index(checked.case, [journal_of(opened)], root)
    if checked.expected is not None and status == EXIT_OK:
        return compare_verdict(checked.expected, recorded, artifacts)
    return status


# ---------------------------------------------------------------- the steps


def rerun_given(args: argparse.Namespace) -> str | None:
    """The document a rerun repeats: --rerun-of, else GPUREPRO_RERUN_OF; None for a plain run."""
    return getattr(args, "rerun_of", None) or os.environ.get(rerun_of.VARIABLE) or None


def check(args: argparse.Namespace, root: Path) -> Checked:
    """Every flag of `run`/`case`, checked against the case before anything is built or run;
    with the document a rerun repeats, read."""
    checked = _check_flags(args, root)
    given = rerun_given(args)
    if given is None:
        return checked
    if not checked.request.record:
        raise UsageError(f"--rerun-of {given} compares the recorded verdict with the document's: "
                         f"it cannot go with --no-record")
    return replace(checked, expected=rerun_of.read_expected(given, checked.case.name, Path.cwd()))


def _check_flags(args: argparse.Namespace, root: Path) -> Checked:
    slurm = cluster_wanted(args)
    case = load_case(args.case, root)
    if not slurm:
        # A resumed run probes the device too: it must be there, and be the journal's.
        gpu_info = envmod.gpus()
        return Checked(case, check_arguments(case, args, root, gpu_info), gpu_info)
    if args.resume:
        loose = given_cluster_flags(args)
        if loose:
            raise UsageError(f"--resume continues the run's own partitions and Slurm options; "
                             f"{', '.join(loose)} cannot be given with it")
        # Refuses plan flags; checks the journal's identity.
        return Checked(case, check_arguments(case, args, root), slurm=True, poll_s=args.poll)
    opts = cluster_options(args, case)
    request = check_arguments(case, args, root, NO_TRIALS_HERE)
    check_time(opts, request.budget.timeout_s)
    check_partitions(opts)
    opts = replace(opts, partitions=dict(resolve_targets(case, opts, args.arch)))
    if case.devices.requires_gpu and not opts.gpus_per_task:
        say("note: no --gres gpu:N given: tasks get a GPU only where the partition gives one "
            "by default (otherwise their trials are recorded as unsupported)")
    return Checked(case, request, slurm=True, cluster=opts, poll_s=args.poll)


def do_build(case: Case, target: str, root: Path, build_dir: Path,
             python: str | None = None) -> dict[str, Any]:
    """Build a case's artifacts for ``target`` with the pinned toolchain, and its runtime wheels
    for the Python that runs the trials (this one, unless ``python`` names another), saying
    what was made."""
    say(f"building {case.name} for {target}")

    def on_event(name: str, status: str) -> None:
        if status != "building":
            say(f"  {name}: {status}")

    index = build_case(case, target, root, build_dir, on_event)
    for name, e in index["artifacts"].items():
        show(f"  {name}: {e['path']} sha256 {e['sha256'][:16]}")
    wheels = build_runtime.fetch(case, root, build_dir, on_event=on_event, python=python)
    if wheels is not None:
        size, paths = build_runtime.carried(wheels)
        show(f"  runtime packages for Python {wheels['python']}: {len(paths)} wheels, "
             f"{size / 1e6:.1f} MB, in {build_runtime.runtime_dir(build_dir, case)}")
        mismatch = run_runtime.python_mismatch(wheels["python"], wheels["arms"], case.name)
        if mismatch is not None:
            say(f"  note: {mismatch}")
    return index


def compare_artifacts(checked: Checked, root: Path) -> HashCheck | None:
    """After the build: the artifacts the trials will use, and the runtime wheels, against the
    document's, printed (how many are identical; each that differs with both hashes)."""
    expected, request, case = checked.expected, checked.request, checked.case
    assert expected is not None
    target = expected.target if expected.target in checked.targets else request.target
    name = expected.path.name
    try:
        index = load_build(case, root, request.build_dir, target)
    except BuildError as exc:
        say(f"rerun check: no build of {target} to compare with {name}'s artifacts ({exc})")
        return None
    if target != expected.target:
        show(f"rerun check: built for {target}, {name} for {expected.target}")
    found = rerun_of.compare_hashes(
        "artifacts", rerun_of.artifact_hashes(
            substitute_artifacts(index["artifacts"], request.substitutes, root)),
        expected.artifacts)
    for line in found.lines(name):
        show(line)
    wheels_index = build_runtime.index_path(root / request.build_dir, case)
    if case.runtime is not None and expected.wheels and wheels_index.is_file():
        wheels = json.loads(wheels_index.read_text())
        for line in rerun_of.compare_hashes("runtime wheels", rerun_of.wheel_hashes(wheels),
                                            expected.wheels).lines(name):
            show(line)
        if expected.python and wheels.get("python") != expected.python:
            show(f"  the document's wheels are for Python {expected.python}, these for Python "
                 f"{wheels.get('python')} (rerun with --force-python {expected.python} for its "
                 f"own)")
    return found


def compare_verdict(expected: Expected, recorded: Path | None, artifacts: HashCheck | None) -> int:
    """After the record: the rerun's verdict against the document's; EXIT_OK when reproduced,
    EXIT_NOT_REPRODUCED when not, EXIT_ERROR when nothing was recorded to compare."""
    if recorded is None:
        say(f"rerun check: nothing was recorded to compare with {expected.path.name}")
        return EXIT_ERROR
    check = rerun_of.compare_verdicts(json.loads(recorded.read_text()), expected)
    show(check.line(expected.path.name, artifacts))
    return EXIT_OK if check.reproduced else EXIT_NOT_REPRODUCED


def open_run(checked: Checked, root: Path) -> Started | submit.Watch | int:
    """A new journal or the one resumed (gpurepro.run.session opens both, for a run here and
    for a cluster run); an exit status when nothing can run."""
    case, request = checked.case, checked.request
    if checked.slurm and request.resume is not None:
        return submit.resume(case, request, root, checked.poll_s)
    if checked.slurm:
        assert checked.cluster is not None
        return submit.start(case, request, checked.cluster, root, checked.poll_s)
    if request.resume is not None:
        return session.resume(case, request.resume, checked.gpu_info, request.other_device)
    assert checked.gpu_info is not None
    return session.start(case, request, root, checked.gpu_info, designer(case, request, root))


def execute(checked: Checked, opened: Started | submit.Watch, root: Path) -> tuple[int, bool]:
    """The trials: here, with the design's decider and allocation (``steering``), or as Slurm
    job arrays watched from here. Returns the exit status and whether any trial was
    journaled."""
    if isinstance(opened, submit.Watch):
        status = opened.run()
        return status, opened.recordable
    try:
        decider, allocation = steering(checked.case, opened)
        return session.execute(checked.case, opened, root, checked.request.case, decider,
                               allocation), True
    finally:
        opened.journal.close()


def steering(case: Case, run: Started) -> tuple[Decider | None, Allocator | None]:
    """What a sequential design's run is handed: the decider of its claims and, for the
    decisive design, the allocation of its trials (gpurepro.analyze.allocation; none for a
    fixed-size run, or a device that cannot run the case)."""
    if not run.gate.supported or not run.header.design.sequential:
        return None, None
    from ..analyze.allocation import steering_for  # scipy: only a design that decides as it runs

    return steering_for(case, run.header, run.opts.budget.duration_s)


def journal_of(opened: Started | submit.Watch) -> Path:
    return opened.journal.path


# ---------------------------------------------------------------- the commands


def cmd_run(args: argparse.Namespace) -> int:
    return flow(args, build=False)


def cmd_case(args: argparse.Namespace) -> int:
    """Build, run, record and report: what `nox -s <case>` does."""
    return flow(args, build=True)


def cmd_build(args: argparse.Namespace) -> int:
    root = repository_root()
    case = load_case(args.case, root)
    build_dir = checked_build_dir(args.build_dir, root)
    do_build(case, resolve_target(case, args.arch), root, build_dir, args.python)
    return EXIT_OK


def cmd_target(args: argparse.Namespace) -> int:
    case = load_case(args.case, repository_root())
    print(resolve_target(case, args.arch))
    return EXIT_OK


def cmd_pins(args: argparse.Namespace) -> int:
    case = load_case(args.case, repository_root())
    for pin in case.pins_for(resolve_target(case, args.arch)):
        print(pin)
    return EXIT_OK


def cmd_prepare(args: argparse.Namespace) -> int:
    """For nox: check every case argument as `case` will, then write the target and pins to a
    file (a value read from a file, never from a session's printed output)."""
    root = repository_root()
    case = load_case(args.case, root)
    if cluster_wanted(args) and not args.resume:
        # A cluster run: every partition's target (probed where not given), the pins of each,
        # and the --partition flags with their targets for the run itself.
        opts = cluster_options(args, case)
        request = check_arguments(case, args, root, NO_TRIALS_HERE)
        check_time(opts, request.budget.timeout_s)
        check_partitions(opts)
        targets = resolve_targets(case, opts, args.arch)
        first = next(iter(targets.values()))
        out = {"case": case.name, "target": first, "pins": case.pins_for(first),
               "builds": {t: case.pins_for(t) for t in dict.fromkeys(targets.values())},
               "partitions": partition_arguments(targets)}
    else:
        request = check_arguments(case, args, root)
        out = {"case": case.name, "target": request.target, "pins": case.pins_for(request.target)}
    given = rerun_given(args)
    if given is not None:  # the document a rerun repeats: found before the toolchain installs
        rerun_of.read_expected(given, case.name, Path.cwd())
    Path(args.prepare_out).write_text(json.dumps(out) + "\n")
    return EXIT_OK


def cmd_slurm_task(args: argparse.Namespace) -> int:
    """One array task of a cluster run (Slurm runs this on a node; see cluster/task.py)."""
    return run_task(Path(args.spec), args.task)
