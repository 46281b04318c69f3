"""The run command in steps: check the arguments, start or resume the journal, execute the
plan under a watchdog and the stop signals, then record.

Standard library only up to recording (the run stage works on GPU nodes with no network);
recording imports the analysis packages lazily and says so when they are missing.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import signal
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..build.artifacts import load_index, sha256_file
from ..case.model import Case, TrialBudget
from ..cli.args import checked_artifact_file, checked_build_dir
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
from . import schedule
from .classify import EVIDENCE
from .execute import (
    Gate,
    RunOptions,
    execute_plan,
    execute_trial,
    gate,
    stop_signals,
    unsupported_record,
)
from .journal import Journal, check_trials, plan_sha256, read, result_name, verify_identity
from .plan import DEFAULT_ALPHA, DEFAULT_LOOK_EVERY, DEFAULT_MAX_TRIALS, Plan, make_plan
from .watchdog import Watchdog, kill_run

# Flags that define a run's plan or options: a resumed run takes them from its journal.
PLAN_FLAGS = ("arch", "arms", "trials", "duration", "max_exposure", "timeout", "seed", "jobs",
              "gpus", "max_trials", "look_every", "alpha", "journal", "artifact")


def _say(msg: str) -> None:
    import sys

    print(msg, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Checked:
    """Every value a run needs, checked before anything is built or run."""

    target: str
    build_dir: Path  # relative to the repository
    budget: TrialBudget
    jobs: int
    arms: tuple[str, ...] | None
    trials_per_arm: int
    stopping: dict[str, Any] | None  # the sequential design: alpha, step, max_trials
    # --artifact NAME=PATH: prebuilt files used instead of built artifacts (path relative to
    # the repository), e.g. a cubin exported by another toolchain release.
    substitutes: tuple[tuple[str, Path], ...] = ()


def resolve_target(case: Case, arch: str | None, gpu_info: dict[str, Any] | None = None) -> str:
    if arch:
        targets = set(case.devices.targets.values())
        if arch not in targets:
            raise UsageError(f"--arch {arch}: {case.name} builds for {', '.join(sorted(targets))}")
        return arch
    gpu_info = gpu_info if gpu_info is not None else envmod.gpus()
    for g in gpu_info.get("gpus") or []:
        t = case.devices.target_for(g.get("compute_capability"))
        if t:
            return t
    return next(iter(case.devices.targets.values()))


def check_arguments(case: Case, args: argparse.Namespace, root: Path,
                    gpu_info: dict[str, Any] | None = None) -> Checked:
    build_dir = checked_build_dir(args.build_dir, root)
    out_dir = Path(args.out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise UsageError(f"--out-dir {args.out_dir}: exists and is not a folder")
    if args.resume:
        given = [f"--{f.replace('_', '-')}" for f in PLAN_FLAGS
                 if getattr(args, f, None) is not None]
        if args.until_decided:
            given.append("--until-decided")
        if given:
            raise UsageError(f"--resume continues the journal's own plan and options; "
                             f"{', '.join(given)} cannot be given with it")
        header = read(Path(args.resume)).header
        verify_identity(header, case.name, manifest_sha256(case), args.resume)
        o = header["options"]
        return Checked(target=header["device"]["target"], build_dir=build_dir,
                       budget=TrialBudget(**o["budget"]), jobs=o["jobs"], arms=None,
                       trials_per_arm=0, stopping=o.get("stopping"))

    target = resolve_target(case, args.arch, gpu_info)
    arms = tuple(a.strip() for a in args.arms.split(",") if a.strip()) if args.arms else None
    if arms is not None:
        unknown = [a for a in arms if a not in case.resolved_arms()]
        if unknown or not arms:
            raise UsageError(f"--arms: unknown arm(s) {', '.join(unknown) or '(none given)'} "
                             f"(known: {', '.join(case.resolved_arms())})")
        if case.baseline not in arms:
            raise UsageError(f"--arms must include the baseline arm {case.baseline!r}: every "
                             f"comparison is made against it")
    d = case.defaults
    duration = args.duration if args.duration is not None else d.duration_s
    exposure = args.max_exposure if args.max_exposure is not None else d.max_exposure
    # The manifest's limit, keeping its margin over the duration when --duration changes it.
    timeout = args.timeout if args.timeout is not None else d.trial_timeout_s + (duration - d.duration_s)
    if timeout <= duration:
        raise UsageError(f"--timeout {timeout:g} must exceed the trial duration ({duration:g} s): "
                         f"a trial needs its whole budget before the limit kills it")
    if args.journal and Path(args.journal).exists():
        raise UsageError(f"--journal {args.journal} exists; continue it with --resume {args.journal}")

    if args.until_decided and not case.claims:
        raise UsageError(f"--until-decided stops arms once the case's claims are decided; "
                         f"{case.name} declares no claims")
    stopping, trials = sequential_design(case, args)
    return Checked(target=target, build_dir=build_dir,
                   budget=TrialBudget(duration_s=float(duration), max_exposure=int(exposure),
                                      timeout_s=float(timeout)),
                   jobs=args.jobs or d.jobs, arms=arms, trials_per_arm=trials, stopping=stopping,
                   substitutes=checked_substitutes(case, target, getattr(args, "artifact", None), root))


def checked_substitutes(case: Case, target: str, given: list[tuple[str, str]] | None,
                        root: Path) -> tuple[tuple[str, Path], ...]:
    """--artifact NAME=PATH values: NAME one of the case's artifacts for ``target``, PATH a file
    inside the repository, each NAME once."""
    known = [a.name for a in case.artifacts if not a.archs or target in a.archs]
    out: dict[str, Path] = {}
    for name, path in given or ():
        if name not in known:
            raise UsageError(f"--artifact {name}=...: {case.name} has no artifact {name!r} for "
                             f"{target} (known: {', '.join(known)})")
        if name in out:
            raise UsageError(f"--artifact {name}=... is given twice")
        out[name] = checked_artifact_file(name, path, root)
    return tuple(out.items())


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


def sequential_design(case: Case, args: argparse.Namespace, alpha_for_fixed: bool = False
                      ) -> tuple[dict[str, Any] | None, int]:
    """The sequential design asked for (alpha, step, max_trials; None for a fixed-size run) and
    the trials per arm, from --until-decided, --max-trials, --look-every, --alpha and --trials.
    `calibrate` takes --alpha for a fixed-size design too (``alpha_for_fixed``)."""
    if args.until_decided:
        if args.trials is not None:
            raise UsageError("--trials is fixed-size; with --until-decided give --max-trials")
        design = {"alpha": args.alpha if args.alpha is not None else DEFAULT_ALPHA,
                  "step": args.look_every or DEFAULT_LOOK_EVERY,
                  "max_trials": args.max_trials or DEFAULT_MAX_TRIALS}
        if design["step"] > design["max_trials"]:
            raise UsageError(f"--look-every {design['step']} exceeds --max-trials "
                             f"{design['max_trials']}: no look would be taken before the end")
        return design, int(design["max_trials"])
    flags = ("max_trials", "look_every") + (() if alpha_for_fixed else ("alpha",))
    loose = [f for f in flags if getattr(args, f) is not None]
    if loose:
        raise UsageError(f"--{loose[0].replace('_', '-')} applies only with --until-decided")
    return None, int(args.trials or case.defaults.trials_per_arm)


def manifest_sha256(case: Case) -> str | None:
    return hashlib.sha256(case.path.read_bytes()).hexdigest() if case.path else None


def _gpus(spec: str | None, gpu_info: dict[str, Any]) -> tuple[str, ...]:
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
    header: dict[str, Any]
    plan: Plan
    opts: RunOptions
    gate: Gate
    done: list[dict[str, Any]]


def start(case: Case, args: argparse.Namespace, checked: Checked, root: Path,
          gpu_info: dict[str, Any]) -> Started | int:
    """A new run: plan it and create its journal. Returns an exit status if nothing can run."""
    gpus = _gpus(args.gpus, gpu_info)
    g = gate(case, gpu_info, args.arch or checked.target, gpus)
    if not gpu_info.get("available") and case.devices.requires_gpu:
        _say(f"{case.name}: no CUDA driver is present on this machine ({g.reason}); nothing was "
             f"run. Run this on a machine with an NVIDIA GPU (targets: "
             f"{', '.join(f'{c} -> {t}' for c, t in case.devices.targets.items())}).")
        return EXIT_NO_DRIVER
    plan = make_plan(case.name, case.resolved_arms(), checked.trials_per_arm, args.seed,
                     list(checked.arms) if checked.arms else None)
    index = load_index(root / checked.build_dir, case, g.target)
    absolute = [n for n, e in index["artifacts"].items() if Path(e["path"]).is_absolute()]
    if absolute:
        raise BuildError(f"the build index for {case.name}/{g.target} records absolute paths "
                         f"({', '.join(absolute)}); rebuild it inside the repository")
    opts = RunOptions(budget=checked.budget, jobs=checked.jobs, gpus=gpus, redact=args.redact,
                      run_id=uuid.uuid4().hex)
    index = {**index, "artifacts": substitute_artifacts(index["artifacts"], checked.substitutes, root)}
    families = claim_families(case, plan, checked, root) if g.supported else None
    header = journal_header(case, root, plan, opts, checked.stopping,
                            envmod.fingerprint(root, redact=args.redact, gpu_info=gpu_info),
                            gate_json(g), index, families)
    path = Path(args.journal) if args.journal else Path(args.out_dir) / case.name / f"{result_name(header)}.journal.jsonl"
    _ensure_writable(path.parent)
    if not g.supported:
        header["probe"] = _probe(case, plan, {**index, "artifacts": header["artifacts"]}, root, opts)
    journal = Journal.create(path, header)
    _say(f"journal: {journal.path}")
    if families is not None:
        from ..analyze.decidability import lines

        for line in lines(families, [c.name for c in case.claims if c.arm in plan.arms]):
            _say(line)
    return Started(journal, header, plan, opts, g, [])


def claim_families(case: Case, plan: Plan, checked: Checked, root: Path) -> dict[str, Any] | None:
    """The run's confirmatory and exploratory claims, fixed before its first trial
    (gpurepro.analyze.decidability); None for a case without claims."""
    if not case.claims:
        return None
    from ..analyze.decidability import assess, not_computed

    try:
        from ..analyze.claims import Design
    except ImportError as exc:
        return not_computed(f"not computed: needs the analysis packages ({exc.name}); "
                            f"pip install 'gpurepro[analysis]'")
    stopping = checked.stopping
    design = Design.from_description(stopping) if stopping else Design(alpha=DEFAULT_ALPHA)
    return assess(case, plan, design, bool(stopping), checked.trials_per_arm,
                  asdict(checked.budget), checked.jobs, root, workers=_cpus())


def _cpus() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return os.cpu_count() or 1


def gate_json(g: Gate) -> dict[str, Any]:
    """A device gate as journal headers hold it."""
    return {**{k: g.device.get(k) for k in ("name", "compute_capability", "uuid", "index")},
            "supported": g.supported, "target": g.target, "reason": g.reason}


def journal_header(case: Case, root: Path, plan: Plan, opts: RunOptions,
                   stopping: dict[str, Any] | None, environment: dict[str, Any],
                   device: dict[str, Any], index: dict[str, Any],
                   families: dict[str, Any] | None = None) -> dict[str, Any]:
    """A new run's journal header: its identity (case, manifest and plan hashes, run id) and
    what continuing or recording it needs (plan, options, fingerprint, device, artifacts)."""
    assert opts.run_id is not None
    return {
        "case": case.name,
        # Where the manifest is, for `record` of a case outside cases/ (relative: portable).
        "manifest": _relative_to(case.path, root),
        "manifest_sha256": manifest_sha256(case),
        "plan_sha256": plan_sha256(plan.to_json()),
        "run_id": opts.run_id,
        "started_at": _stamp(),
        "plan": plan.to_json(),
        "options": {"budget": asdict(opts.budget), "jobs": opts.jobs, "gpus": list(opts.gpus),
                    "redact": opts.redact, "stopping": stopping,
                    **({"families": families} if families is not None else {})},
        "environment": environment,
        "device": device,
        "toolchain": index["toolchain"],
        "artifacts": index["artifacts"],
        "probe": None,
    }


def _probe(case: Case, plan: Plan, index: dict[str, Any], root: Path, opts: RunOptions) -> dict[str, Any]:
    """On a device the case cannot run on, run one baseline trial to show what happens."""
    planned = next((t for t in plan.order if t.arm == case.baseline), plan.order[0])
    with Watchdog(opts.run_id or uuid.uuid4().hex):
        rec = execute_trial(case, planned, plan.arms[planned.arm], index, root, opts,
                            opts.gpus[0] if opts.gpus else None, 0)
    return {"arm": planned.arm, "command": rec["command"], "outcome": rec["outcome"],
            "detail": rec["detail"], "exit": rec["exit"], "stderr_tail": rec["stderr_tail"][-1500:]}


def resume(case: Case, args: argparse.Namespace) -> Started:
    """Continue a journal: same case, manifest and plan; torn tail cut; leftovers killed."""
    journal, contents = Journal.resume(Path(args.resume))
    try:
        verify_identity(contents.header, case.name, manifest_sha256(case), str(journal.path))
        check_trials(contents, str(journal.path))
    except BaseException:
        journal.close()
        raise
    header = contents.header
    if contents.torn_bytes:
        _say(f"{journal.path}: cut a torn last line ({contents.torn_bytes} bytes, a write the "
             f"stopped run did not finish); every complete record is kept")
    # A trial of the interrupted run that is still running (its harness was killed and its
    # watchdog has not swept yet) must not run beside the resumed trials.
    leftovers = kill_run(header["run_id"])
    if leftovers:
        _say(f"killed {leftovers} process(es) left running by the interrupted run")
    plan = Plan.from_json(header["plan"])
    o = header["options"]
    opts = RunOptions(budget=TrialBudget(**o["budget"]), jobs=o["jobs"],
                      gpus=tuple(o.get("gpus") or ()), redact=o.get("redact", False),
                      run_id=header["run_id"])
    d = header["device"]
    g = Gate(d["supported"], d["target"], d, d.get("reason"))
    _say(f"resuming {journal.path}: {len(contents.trials)} of {len(plan.order)} trials done")
    return Started(journal, header, plan, opts, g, contents.trials)


def execute(case: Case, run: Started, root: Path, case_arg: str) -> int:
    """Run what the plan still needs. Returns the exit status."""
    journal, plan = run.journal, run.plan
    index = {"artifacts": run.header["artifacts"], "toolchain": run.header["toolchain"]}
    if not run.gate.supported:
        _say(f"{case.name}: {run.gate.reason}; every trial is recorded as unsupported")
        finished = {r["index"] for r in run.done}
        for t in plan.order:
            if t.index not in finished:
                journal.append_trial(unsupported_record(t, str(run.gate.reason)))
        return EXIT_UNSUPPORTED

    still_needed = None
    decider = None
    stopping = run.header["options"].get("stopping")
    if stopping:
        from ..analyze.claims import decider_for

        decider = decider_for(case, run.header)
        journaled = [decider.to_json()]
        max_trials = int(stopping["max_trials"])

        def still_needed(arm: str, records: list[dict[str, Any]]) -> bool:
            # Called under the run's lock. Every decision is journaled when it is made, so a
            # resumed run continues the same design from the same decisions.
            runs = schedule.still_needed(decider, records, arm, max_trials)
            now = decider.to_json()
            if now != journaled[-1]:
                journal.append_stopping(now)
                journaled.append(now)
            return runs

    try:
        with Watchdog(run.opts.run_id or uuid.uuid4().hex), stop_signals():
            records = execute_plan(case, plan, index, root, journal, run.opts, run.done, still_needed)
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
    return EXIT_OK


def run_case(args: argparse.Namespace, root: Path, build: bool,
             builder: Callable[[Case, str, Path, Path], Any] | None = None) -> int:
    """`run` and `case`: check, (build,) start or resume, execute, record."""
    from ..case.model import load_case

    case = load_case(args.case, root)
    gpu_info = None if args.resume else envmod.gpus()
    checked = check_arguments(case, args, root, gpu_info)
    if build and not args.resume and builder is not None:
        builder(case, checked.target, root, checked.build_dir)
    if args.resume:
        started: Started | int = resume(case, args)
    else:
        assert gpu_info is not None
        started = start(case, args, checked, root, gpu_info)
    if isinstance(started, int):
        return started
    try:
        status = execute(case, started, root, args.case)
    finally:
        started.journal.close()
    if status == EXIT_OK:
        harness_errors = [t for t in read(started.journal.path).trials
                          if t["outcome"] == "harness_error"]
        if harness_errors:
            _say(f"gpurepro: harness error: {len(harness_errors)} trial(s) ended as harness_error "
                 f"(a driver that broke the event protocol, or our bug); first: "
                 f"{harness_errors[0]['arm']}: {harness_errors[0]['detail']}")
            status = EXIT_ERROR
    if not args.no_record and status in (EXIT_OK, EXIT_UNSUPPORTED, EXIT_ERROR):
        from ..record.result import record_journals

        record_journals(case, [started.journal.path], root, None, force=False)
    return status
