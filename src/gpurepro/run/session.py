"""A run's session: open it (a new journal, or one resumed: one place for local and Slurm
runs alike), then execute what its plan still needs under a watchdog and the stop signals.

Standard library only (the run stage works on GPU nodes with no network). What the command
line asked for arrives as one checked ``RunRequest``; building and recording are the command
line's steps before and after (gpurepro.cli.run).
"""

from __future__ import annotations

import hashlib
import os
import signal
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..building.artifacts import load_index
from ..case.model import TIMED_KINDS, Case, TrialBudget
from ..env import fingerprint as envmod
from ..errors import (
    EXIT_ERROR,
    EXIT_NO_DRIVER,
    EXIT_OK,
    EXIT_UNSUPPORTED,
    BuildError,
    Stopped,
    UsageError,
    exit_for_signal,
)
from ..model.design import ANALYSIS_VERSION, TIMED_TEST, DesignSpec, RunDesign
from ..model.files import sha256_file
from ..model.journal import RunHeader
from ..model.jsontypes import JSONObject
from ..model.plan import Plan, make_plan
from . import contain, runtime, schedule
from .execute import (
    Gate,
    RunOptions,
    execute_plan,
    execute_trial,
    gate,
    stop_signals,
    unsupported_record,
)
from .journal import (
    Contents,
    Journal,
    check_trials,
    plan_sha256,
    read,
    result_name,
    verify_identity,
)
from .progress import Progress, expectation_of
from .watchdog import Watchdog, end_earlier_harnesses

# What other modules use; the rest is this module's own.
__all__ = [
    "chosen_gpus", "create", "execute", "Gate", "gate_json", "journal_header", "journal_path",
    "load_build", "manifest_sha256", "new_plan", "reopen", "resume", "resume_device",
    "RunRequest", "start", "Started", "substitute_artifacts", "trial_budget"
]


def _say(msg: str) -> None:
    """A note or a diagnostic, on stderr."""
    import sys

    print(msg, file=sys.stderr, flush=True)


def _show(msg: str) -> None:
    """What the command produces (the journal it writes), on stdout."""
    print(msg, flush=True)


@dataclass(frozen=True)
class RunRequest:
    """A run as the command line asked for it, every value checked before anything is built or
    run (gpurepro.cli.args builds it from the flags); with --resume, the journal's own plan and
    options."""

    case: str  # as given (a name or a manifest path): the command that continues the run names it
    target: str
    build_dir: Path  # relative to the repository
    budget: TrialBudget
    jobs: int
    arms: tuple[str, ...] | None
    trials_per_arm: int
    design: DesignSpec  # fixed, until decided or decisive (its looks and priors fixed at the start)
    # --artifact NAME=PATH: prebuilt files used instead of built artifacts (path relative to
    # the repository), e.g. a cubin exported by another toolchain release.
    substitutes: tuple[tuple[str, Path], ...] = ()
    # --runtime-index PATH: another runtime index than the build's (relative to the
    # repository), e.g. one release's wheels written by a runtime axis's sweep.
    runtime_index: Path | None = None
    arch: str | None = None  # --arch as given (None: the target follows the GPU)
    seed: int | None = None  # None: a random seed, recorded
    gpus: str | None = None  # --gpus as given, matched against this machine's GPUs at the start
    redact: bool = False
    journal: Path | None = None  # None: results/<case>/<result name>.journal.jsonl
    out_dir: Path = Path("results")
    resume: Path | None = None  # the journal to continue
    record: bool = True  # record (and report) once the trials are done
    other_device: bool = False  # --resume on a GPU or driver other than the journal's
    # Which arms: "main" (the case's main question, the default), "deep" (every arm), or
    # "arms" (--arms as given).
    scope: str = "main"
    # --priors-from: the result documents the decisive design's priors come from (relative to
    # the repository); empty: chosen by rule from the committed results.
    priors_from: tuple[Path, ...] = ()


def substitute_artifacts(artifacts: dict[str, Any], substitutes: tuple[tuple[str, Path], ...],
                         root: Path) -> dict[str, Any]:
    """The build index's artifacts with each --artifact file in place of the built one.

    The entry keeps the built file's sha256 beside the substitute's own, and drops what
    described the build (its command, key and tool versions): they are not where this file
    came from. The trial commands read artifact paths from here, so every trial uses it."""
    out = dict(artifacts)
    for name, rel in substitutes:
        built = artifacts.get(name) or {}
        out[name] = {
            "path": str(rel),
            "dir": str(rel.parent),
            "outputs": {rel.name: sha256_file(root / rel)},
            "sha256": sha256_file(root / rel),
            "description": f"substituted with --artifact for: {built.get('description', name)}",
            "substituted": {"built_sha256": built.get("sha256")},
        }
    return out


def _relative_to(path: Path | None, root: Path) -> str | None:
    if path is None:
        return None
    return str(path.relative_to(root.resolve())) if path.is_relative_to(root.resolve()) else None


def manifest_sha256(case: Case) -> str | None:
    return hashlib.sha256(case.path.read_bytes()).hexdigest() if case.path else None


def chosen_gpus(spec: str | None, gpu_info: dict[str, Any]) -> tuple[str, ...]:
    """--gpus against the GPUs this machine has: 'all' (by UUID), or the UUIDs or indices given."""
    if not spec:
        return ()
    listed = gpu_info.get("gpus") or []
    if spec == "all":
        # By UUID: NVML and CUDA may order devices differently (CUDA puts the fastest first by
        # default); a UUID in CUDA_VISIBLE_DEVICES names the same GPU both ways.
        return tuple(str(g.get("uuid") or g["index"]) for g in listed)
    wanted = tuple(s.strip() for s in spec.split(",") if s.strip())
    known = {str(g.get("index")) for g in listed} | {str(g.get("uuid")) for g in listed}
    unknown = [w for w in wanted if listed and w not in known]
    if unknown or not wanted:
        raise UsageError(f"--gpus {spec}: no such GPU {', '.join(unknown) or ''} "
                         f"(this machine has {', '.join(sorted(known - {'None'})) or 'none'})")
    return wanted


def _stamp() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _ensure_writable(folder: Path) -> None:
    """Fail before any trial when the journal could not be written."""
    folder.mkdir(parents=True, exist_ok=True)
    probe = folder / f".gpurepro-write-test.{os.getpid()}"
    probe.write_bytes(b"")
    probe.unlink()


@dataclass
class Started:
    """A run ready to execute: its journal (locked), plan, options and what is done."""

    journal: Journal
    header: RunHeader  # as the journal holds it (its plan, design and options)
    plan: Plan
    opts: RunOptions
    gate: Gate
    done: list[dict[str, Any]]


def load_build(case: Case, root: Path, build_dir: Path, target: str) -> dict[str, Any]:
    """The build index of ``target``, whose artifact paths must be relative to the repository
    (a copied tree finds them; no machine path reaches a record)."""
    index = load_index(root / build_dir, case, target)
    absolute = [n for n, e in index["artifacts"].items() if Path(e["path"]).is_absolute()]
    if absolute:
        raise BuildError(f"the build index for {case.name}/{target} records absolute paths "
                         f"({', '.join(absolute)}); rebuild it inside the repository")
    return index


def new_plan(case: Case, request: RunRequest) -> Plan:
    return make_plan(case.name, case.resolved_arms(), request.trials_per_arm, request.seed,
                     list(request.arms) if request.arms else None)


def journal_path(case: Case, header: JSONObject, request: RunRequest) -> Path:
    """--journal, or results/<case>/<result name>.journal.jsonl (``header``: the journal's
    first line, about to be written)."""
    if request.journal is not None:
        return request.journal
    return request.out_dir / case.name / f"{result_name(header)}.journal.jsonl"


def create(path: Path, header: JSONObject) -> Journal:
    """A new run's journal, created and locked (a local run's and a cluster run's alike), its
    first line ``header``."""
    journal = Journal.create(path, header)
    _show(f"journal: {journal.path}")
    return journal


def reopen(case: Case, path: Path) -> tuple[Journal, Contents]:
    """A journal to continue (a local run's or a cluster run's): same case, manifest and plan,
    its trials its own; a torn last line cut back to the last complete record."""
    journal, contents = Journal.resume(path)
    try:
        verify_identity(contents.header, case.name, manifest_sha256(case), str(journal.path))
        check_trials(contents, str(journal.path))
    except BaseException:
        journal.close()
        raise
    if contents.torn_bytes:
        _say(f"{journal.path}: cut a torn last line ({contents.torn_bytes} bytes, a write the "
             f"stopped run did not finish); every complete record is kept")
    return journal, contents


def start(case: Case, request: RunRequest, root: Path, gpu_info: dict[str, Any],
          designed: Callable[[Plan, bool, str | None], RunDesign]) -> Started | int:
    """A new run on this machine: plan it and create its journal, with the design the flow
    hands it for that plan on the GPU model the run is on (``designed(plan, supported, gpu)``:
    gpurepro.analyze.designing).
    Returns an exit status if nothing can run."""
    gpus = chosen_gpus(request.gpus, gpu_info)
    g = gate(case, gpu_info, request.arch or request.target, gpus)
    if not gpu_info.get("available") and case.devices.requires_gpu:
        _say(f"{case.name}: no CUDA driver is present on this machine ({g.reason}); nothing was "
             f"run. Run this on a machine with an NVIDIA GPU (targets: "
             f"{', '.join(f'{c} -> {t}' for c, t in case.devices.targets.items())}).")
        return EXIT_NO_DRIVER
    plan = new_plan(case, request)
    index = load_build(case, root, request.build_dir, g.target)
    opts = RunOptions(budget=request.budget, jobs=request.jobs, gpus=gpus, redact=request.redact,
                      run_id=uuid.uuid4().hex)
    index = {**index, "artifacts": substitute_artifacts(index["artifacts"], request.substitutes, root),
             "runtime": runtime.prepare(case, root, request.build_dir, plan.arms,
                                        request.runtime_index)}
    name = g.device.get("name")
    design = designed(plan, g.supported, str(name) if name else None)
    header = journal_header(case, root, plan, opts, design.design,
                            envmod.fingerprint(root, redact=request.redact, gpu_info=gpu_info),
                            envmod.redact_value(gate_json(g), None) if request.redact
                            else gate_json(g), index, design.families, request.scope,
                            deterministic=design.declared)
    path = journal_path(case, header, request)
    _ensure_writable(path.parent)
    if not g.supported:
        header["probe"] = _probe(case, plan, {**index, "artifacts": header["artifacts"]}, root, opts)
    journal = create(path, header)
    # The header as journaled (its format, identity and seal slot included), read back: what a
    # resume of this run starts from too.
    started = Started(journal, read(journal.path).run, plan, opts, g, [])
    for line in design.lines:  # each claim's chance of being decided, and its family
        _say(line)
    return started


def gate_json(g: Gate) -> dict[str, Any]:
    """A device gate as journal headers hold it."""
    return {**{k: g.device.get(k) for k in ("name", "compute_capability", "uuid", "index")},
            "supported": g.supported, "target": g.target, "reason": g.reason}


def journal_header(case: Case, root: Path, plan: Plan, opts: RunOptions,
                   design: DesignSpec, environment: dict[str, Any],
                   device: dict[str, Any], index: dict[str, Any],
                   families: dict[str, Any] | None = None, scope: str = "arms",
                   deterministic: dict[str, Any] | None = None) -> dict[str, Any]:
    """A new run's journal header: its identity (case, manifest and plan hashes, run id) and
    what continuing or recording it needs (plan, options, fingerprint, device, artifacts)."""
    assert opts.run_id is not None
    return {
        "case": case.name,
        # Where the manifest is, for `record` of a case outside cases/ (relative: portable).
        "manifest": _relative_to(case.path, root),
        "manifest_sha256": manifest_sha256(case),
        # The targets the case builds (its device table), which the record keeps for the
        # commands its issue comment prints (gpurepro.report.comment).
        "targets": sorted(set(case.devices.targets.values())),
        "plan_sha256": plan_sha256(plan.to_json()),
        "run_id": opts.run_id,
        "started_at": _stamp(),
        # In the file names (journal.result_name) beside the second-resolution start time.
        "name_suffix": opts.run_id[:6],
        "plan": plan.to_json(),
        "options": {"budget": asdict(opts.budget), "jobs": opts.jobs, "gpus": list(opts.gpus),
                    "redact": opts.redact, "stopping": design.to_json(), "scope": scope,
                    **({"families": families} if families is not None else {}),
                    # The case's declaration of deterministic outcomes, which its claims may be
                    # decided from (gpurepro.analyze.claims), checked
                    # (gpurepro.analyze.designing.run_declaration): fixed for the run and its
                    # resume.
                    **({"deterministic": deterministic} if deterministic else {}),
                    # How its claims are decided and stated (design.ANALYSIS_VERSION), and a
                    # case with timed claims its timed test (design.TIMED_TEST): a journal without
                    # them is decided and worded as before.
                    **({"analysis": ANALYSIS_VERSION} if case.claims else {}),
                    **({"timing": dict(TIMED_TEST)}
                       if any(c.kind in TIMED_KINDS for c in case.claims) else {})},
        "environment": environment,
        "device": device,
        "toolchain": index["toolchain"],
        "artifacts": index["artifacts"],
        # The arms' runtime packages (Case.runtime), unpacked here: gpurepro.run.runtime.
        **({"runtime": index["runtime"]} if index.get("runtime") else {}),
        "probe": None,
    }


def _probe(case: Case, plan: Plan, index: dict[str, Any], root: Path, opts: RunOptions) -> dict[str, Any]:
    """On a device the case cannot run on, run one baseline trial to show what happens."""
    planned = next((t for t in plan.order if t.arm == case.baseline), plan.order[0])
    with Watchdog(opts.tag or uuid.uuid4().hex) as watchdog, contain.contained(watchdog, _say):
        rec = execute_trial(case, planned, plan.arms[planned.arm], index, root, opts,
                            opts.gpus[0] if opts.gpus else None, 0)
    return {"arm": planned.arm, "command": rec["command"], "outcome": rec["outcome"],
            "detail": rec["detail"], "exit": rec["exit"], "stderr_tail": rec["stderr_tail"][-1500:]}


def resume_device(case: Case, header: RunHeader, gpu_info: dict[str, Any],
                  other_device: bool, where: str) -> dict[str, Any] | int:
    """What a resume finds here, checked as a fresh run's start checks it: no CUDA driver is
    exit 5 with nothing touched; a GPU model, UUID or driver other than the journal's is
    refused (one line) unless ``other_device``. Returns the journal's ``resumed`` record."""
    recorded = header.device
    if case.devices.requires_gpu and not gpu_info.get("available"):
        _say(f"{case.name}: no CUDA driver is present on this machine "
             f"({gpu_info.get('reason') or 'no CUDA driver or GPU present'}); nothing was run and "
             f"{where} is unchanged. Resume it on a machine with "
             f"{recorded.get('name') or 'an NVIDIA GPU'}.")
        return EXIT_NO_DRIVER
    pinned = header.gpus
    g = gate(case, gpu_info, recorded.get("target"), pinned)
    was_driver = (header.environment.get("gpu") or {}).get("driver_version")
    now = {"name": g.device.get("name"), "uuid": g.device.get("uuid"),
           "compute_capability": g.device.get("compute_capability"),
           "driver_version": gpu_info.get("driver_version")}
    differs = []
    if case.devices.requires_gpu:
        for key, was in (("name", recorded.get("name")), ("uuid", recorded.get("uuid")),
                         ("driver_version", was_driver)):
            # A journal of a GPU case always names its device: one whose facts are missing or
            # null says nothing that shows this is the same device, so it counts as another.
            if now[key] != was:
                differs.append(f"{key.replace('_', ' ')} {'unknown' if was is None else was} "
                               f"(journal) against {now[key]} (here)")
        known = {str(x.get(k)) for x in gpu_info.get("gpus") or [] for k in ("uuid", "index")}
        missing = [p for p in pinned if p not in known]
        if missing:
            raise UsageError(f"{where}: its trials run on GPU(s) {', '.join(missing)}, which this "
                             f"machine does not have")
    if differs and not other_device:
        raise UsageError(f"{where} ran on another device or driver ({'; '.join(differs)}); "
                         f"resume it there, or give --other-device to continue here (the "
                         f"journal records it)")
    return {"at": _stamp(), "device": now, "other_device": bool(differs),
            **({"differs": differs} if differs else {})}


def resume(case: Case, path: Path, gpu_info: dict[str, Any] | None = None,
           other_device: bool = False) -> Started | int:
    """Continue a journal of a run on this machine; leftovers of the interrupted run killed.
    With ``gpu_info`` (this machine's GPUs) the device is checked first, before the journal is
    taken over (``resume_device``): an exit status when nothing can run here."""
    resumed = None
    if gpu_info is not None:
        ahead = read(path)  # without taking it over: nothing changes before the device is known
        verify_identity(ahead.header, case.name, manifest_sha256(case), str(path))
        found = resume_device(case, ahead.run, gpu_info, other_device, str(path))
        if isinstance(found, int):
            return found
        resumed = found
    journal, contents = reopen(case, path)
    if resumed is not None:
        try:
            journal.append_resumed(resumed)
        except BaseException:
            journal.close()
            raise
    run = RunHeader.from_json(contents.header, str(journal.path))
    assert run.run_id is not None  # verify_identity: a journal with an identity
    # A trial of the interrupted run that is still running (its harness was killed and its
    # watchdog has not swept yet) must not run beside the resumed trials, nor that watchdog.
    leftovers = end_earlier_harnesses(run.run_id, _say)
    if leftovers:
        _say(f"killed {leftovers} process(es) left running by the interrupted run")
    opts = RunOptions(budget=trial_budget(run), jobs=run.jobs, gpus=run.gpus,
                      redact=run.redact, run_id=run.run_id)
    d = run.device
    g = Gate(d["supported"], d["target"], dict(d), d.get("reason"))
    _say(f"resuming {journal.path}: {len(contents.trials)} of {len(run.plan.order)} trials done")
    return Started(journal, run, run.plan, opts, g, contents.trials)


def trial_budget(run: RunHeader) -> TrialBudget:
    """The trials' limits a journal's run was started with."""
    b = run.budget
    return TrialBudget(duration_s=b.duration_s, max_exposure=b.max_exposure,
                       timeout_s=b.timeout_s, stall_s=b.stall_s)


def progress_for(run: Started, decider: schedule.Decider | None) -> Progress:
    """The run's progress on stderr: its expectation (the journal header's), its worker slots
    and, in a design that stops arms as their claims are decided, the trials its open arms may
    still run (what its time left counts)."""
    design = run.header.design
    to_run = None
    if decider is not None and design.sequential:
        max_trials = int(design.max_trials or 0)

        def to_run(records: Any) -> int:
            return schedule.trials_open(decider, run.plan.order, records, max_trials)

    slots = max(1, run.opts.jobs) * max(1, len(run.opts.gpus))
    return Progress(run.plan, run.done, expected=expectation_of(run.header), slots=slots,
                    to_run=to_run)


def execute(case: Case, run: Started, root: Path, case_arg: str,
            decider: schedule.Decider | None = None,
            allocation: schedule.Allocator | None = None) -> int:
    """Run what the plan still needs. A sequential design's ``decider`` (and the decisive
    design's ``allocation``) come from the flow (gpurepro.analyze.allocation.steering_for):
    the decider takes its looks and journals its decisions as the trials come in, and the run
    skips the trials of decided arms; the allocation picks each next trial. Returns the exit
    status: 1 when a trial ended as a harness error (our bug, or a driver that broke the
    event protocol)."""
    journal, plan = run.journal, run.plan
    index = run.header.build_index
    if index["runtime"]:  # unpacked at the start; again here for a run resumed on another node
        runtime.ensure(index["runtime"], root, case.name)
    if not run.gate.supported:
        _say(f"{case.name}: {run.gate.reason}; every trial is recorded as unsupported")
        finished = {r["index"] for r in run.done}
        for t in plan.order:
            if t.index not in finished:
                journal.append_trial(unsupported_record(t, str(run.gate.reason)))
        journal.append_end({"at": _stamp(), "trials": len(read(journal.path).trials)})
        return EXIT_UNSUPPORTED

    still_needed = None
    choose_next = None
    design = run.header.design
    if decider is not None:
        journaled = [decider.to_json()]
        max_trials = int(design.max_trials or 0)

        def journal_decisions() -> None:
            # Called under the run's lock. Every decision is journaled when it is made, so a
            # resumed run continues the same design from the same decisions.
            now = decider.to_json()
            if now != journaled[-1]:
                journal.append_stopping(now)
                journaled.append(now)

        if allocation is not None:
            def choose_next(records: list[dict[str, Any]], remaining: list[Any]) -> Any:
                picked = allocation.next(records, remaining)
                journal_decisions()
                return picked
        else:
            def still_needed(arm: str, records: list[dict[str, Any]]) -> bool:
                runs = schedule.still_needed(decider, records, arm, max_trials)
                journal_decisions()
                return runs

    try:
        with Watchdog(run.opts.tag or uuid.uuid4().hex) as watchdog, \
                contain.contained(watchdog, _say), stop_signals():
            records = execute_plan(case, plan, index, root, journal, run.opts, run.done, still_needed,
                                   progress=progress_for(run, decider), choose_next=choose_next)
            if decider is not None:
                decider.final(records)
                journal.append_stopping(decider.to_json())
    except (Stopped, KeyboardInterrupt) as exc:
        signum = exc.signum if isinstance(exc, Stopped) else signal.SIGINT
        now = read(journal.path).trials
        _say(f"\nstopped by {signal.Signals(signum).name}: {len(now)} of {len(plan.order)} trials "
             f"are in {journal.path}; the trials that were running were killed and rerun on "
             f"resume. Continue with: python -m gpurepro run {case_arg} --resume {journal.path}")
        return exit_for_signal(signum)
    harness_errors = [t for t in read(journal.path).trials if t["outcome"] == "harness_error"]
    if harness_errors:
        _say(f"gpurepro: harness error: {len(harness_errors)} trial(s) ended as harness_error "
             f"(a driver that broke the event protocol, or our bug); first: "
             f"{harness_errors[0]['arm']}: {harness_errors[0]['detail']}")
        return EXIT_ERROR
    return EXIT_OK
