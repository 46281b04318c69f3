"""Every flag checked, at the command line's boundary: a bad value is a one-line usage error
before anything runs (no build step, no trial), never a schema failure after the trials or a
traceback. What leaves here is typed (``RunRequest``, ``ClusterOptions``); nothing below the
command line sees a flag.

Standard library only (the run stage parses its flags on GPU nodes).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..case.load import find_repo_root
from ..case.model import SINGLE_ARM_KINDS, TIMED_KINDS, Case, Claim, TrialBudget
from ..cluster import slurm
from ..cluster.options import DEFAULT_RESUBMITS, DEFAULT_SHARED_DIR, DEFAULT_TASKS, ClusterOptions
from ..env import commits
from ..env import fingerprint as envmod
from ..errors import JournalError, UsageError
from ..model.design import (
    AUTO_HORIZON,
    DEFAULT_ALPHA,
    DEFAULT_LOOK_EVERY,
    DEFAULT_MAX_TRIALS,
    DEFAULT_SPENDING,
    DEFAULT_SUPPORTED_SHARE,
    DesignSpec,
)
from ..model.journal import RunHeader
from ..run.journal import read, refuse_unchained, verify_identity
from ..run.progress import terminal_safe
from ..run.session import RunRequest, manifest_sha256, trial_budget

# What other modules use; the rest is this module's own.
__all__ = [
    "alpha_value", "artifact_override", "check_arguments", "check_named_commit", "checked_arms",
    "checked_build_dir", "checked_substitutes", "cluster_options", "cluster_wanted",
    "given_cluster_flags", "horizon_value", "journal_path", "json", "name_list", "nonneg_int",
    "only_target", "pack_target", "positive_float", "positive_int", "python_version",
    "repository_root", "resolve_target", "run_scope", "say", "sequential_design", "show",
    "slurm"
]


def _number(text: str, kind: type) -> float | int:
    try:
        value = kind(text)
    except ValueError:
        what = "an integer" if kind is int else "a number"
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return float(value) if kind is float else int(value)


def positive_int(text: str) -> int:
    value = int(_number(text, int))
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def name_list(text: str) -> tuple[str, ...]:
    """A comma-separated list of names (``a,b,c``), none empty."""
    names = tuple(n.strip() for n in text.split(","))
    if not all(names):
        raise argparse.ArgumentTypeError(f"give names separated by commas, got {text!r}")
    return names


def journal_path(text: str) -> str:
    """A journal to resume: an empty value (an unset shell variable, say) is refused here
    rather than read as no --resume at all, which would start a whole new run."""
    if not text.strip():
        raise argparse.ArgumentTypeError("is empty: give the journal's path")
    return text


def nonneg_int(text: str) -> int:
    value = int(_number(text, int))
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def positive_float(text: str) -> float:
    value = float(_number(text, float))
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, got {text}")
    return value


def alpha_value(text: str) -> float:
    value = float(_number(text, float))
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"is a probability: more than 0 and less than 1, got {text}")
    return value


def horizon_value(text: str) -> float | str:
    """--horizon: "auto" (chosen from the committed trials), "none" (the constant-rate test), or
    an exposure (more than 0)."""
    if text in ("auto", "none"):
        return text
    try:
        return positive_float(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"expected auto, none or an exposure above 0, got {text}") from None


def python_version(text: str) -> str:
    """A Python version as X.Y (`build --python`, `pack --python`)."""
    if not re.fullmatch(r"3\.\d+", text):
        raise argparse.ArgumentTypeError(f"{text!r}: a Python version as X.Y, e.g. 3.12")
    return text


def artifact_override(text: str) -> tuple[str, str]:
    """``NAME=PATH`` for --artifact: a prebuilt file to use instead of the built artifact NAME."""
    name, sep, path = text.partition("=")
    if not sep or not name.strip() or not path.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=PATH (e.g. tile_cubin=build/x.cubin), got {text!r}")
    return name.strip(), path.strip()


def checked_artifact_file(name: str, given: str, root: Path, flag: str = "") -> Path:
    """A substitute artifact file, relative to the repository.

    Like the build folder, it is recorded relative to the repository (a copied tree finds it,
    and no machine path reaches a result document), so a file elsewhere is refused.
    """
    path = Path(given)
    absolute = (path if path.is_absolute() else root / path).resolve()
    said = f"{flag} {given}" if flag else f"--artifact {name}={given}"
    if not absolute.is_relative_to(root.resolve()):
        raise UsageError(f"{said}: must be inside the repository ({root.name}/); "
                         f"artifact paths are recorded relative to it")
    if not absolute.is_file():
        raise UsageError(f"{said}: no such file")
    return absolute.relative_to(root.resolve())


def checked_runtime_index(case: Case, given: str | None, root: Path) -> Path | None:
    """--runtime-index: a runtime index inside the repository (recorded relative to it), for a
    case that declares runtime packages."""
    if given is None:
        return None
    if case.runtime is None:
        raise UsageError(f"--runtime-index {given}: {case.name} declares no runtime packages "
                         f"(Case.runtime)")
    return checked_artifact_file("runtime-index", given, root, "--runtime-index")


def checked_build_dir(given: str | Path, root: Path) -> Path:
    """The build folder, relative to the repository.

    Artifact paths are recorded relative to the repository so that a copied tree (a GPU node)
    finds them and no machine path reaches a result document; a build folder elsewhere could
    not be recorded, so it is refused before anything is built or run.
    """
    path = Path(given)
    absolute = (path if path.is_absolute() else root / path).resolve()
    if not absolute.is_relative_to(root.resolve()):
        raise UsageError(f"--build-dir {given}: must be inside the repository ({root.name}/); "
                         f"artifact paths are recorded relative to it")
    if absolute.exists() and not absolute.is_dir():
        raise UsageError(f"--build-dir {given}: exists and is not a folder")
    return absolute.relative_to(root.resolve())


# ---------------------------------------------------------------- a run's flags, checked

# Flags that define a run's plan or options: a resumed run takes them from its journal.
PLAN_FLAGS = ("arch", "arms", "trials", "duration", "max_exposure", "timeout", "hang_after", "seed", "jobs",
              "gpus", "max_trials", "look_every", "alpha", "journal", "artifact", "priors_from",
              "alpha_spending", "supported_share", "horizon")
# The flags of a cluster run; each is None when not given (so a flag without --slurm, or
# with --resume, can be refused by name).
CLUSTER_FLAGS = ("partition", "gres", "time", "account", "jobs_per_partition", "shared_dir",
                 "max_resubmits", "node_python")
PARTITION = re.compile(r"^([A-Za-z0-9_.-]+)(?:=(\S+))?$")
GRES = re.compile(r"^[A-Za-z0-9_]+(?::[A-Za-z0-9_.-]+)*(?:,[A-Za-z0-9_]+(?::[A-Za-z0-9_.-]+)*)*$")
# Folders that are node-local on almost every cluster.
NODE_LOCAL = (Path("/tmp"), Path("/var/tmp"), Path("/dev/shm"))


def say(msg: str) -> None:
    """A note, progress or a diagnostic, on stderr (stdout carries what a command produces)."""
    print(terminal_safe(msg, lines=True), file=sys.stderr, flush=True)


def show(line: str) -> None:
    """A line of a command's result (a verdict, a file written, a table), on stdout."""
    print(line, flush=True)


def repository_root() -> Path:
    """The repository a command runs in: where cases/ and native/ are (nox runs from it)."""
    return find_repo_root(Path.cwd()) or Path.cwd()


def resolve_target(case: Case, arch: str | None, gpu_info: dict[str, Any] | None = None) -> str:
    """--arch, checked against the case's targets; else the target of this machine's first GPU
    the case runs on; else the case's first target."""
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
                    gpu_info: dict[str, Any] | None = None) -> RunRequest:
    """The run that `run`, `case` and `prepare` ask for, every value checked before anything is
    built or run; with --resume, the journal's own plan and options."""
    build_dir = checked_build_dir(args.build_dir, root)
    out_dir = Path(args.out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise UsageError(f"--out-dir {args.out_dir}: exists and is not a folder")
    given: dict[str, Any] = {"case": str(args.case), "build_dir": build_dir,
                             "out_dir": out_dir, "redact": bool(args.redact),
                             "record": not args.no_record}
    if args.resume:
        loose = [f"--{f.replace('_', '-')}" for f in PLAN_FLAGS
                 if getattr(args, f, None) is not None]
        loose += [flag for flag, on in (("--until-decided", args.until_decided),
                                         ("--decisive", getattr(args, "decisive", False)),
                                         ("--fixed", getattr(args, "fixed", False)),
                                         ("--deep", getattr(args, "deep", False))) if on]
        if loose:
            raise UsageError(f"--resume continues the journal's own plan and options; "
                             f"{', '.join(loose)} cannot be given with it")
        contents = read(Path(args.resume))
        refuse_unchained(contents, str(args.resume), bool(getattr(args, "old_journal", False)))
        verify_identity(contents.header, case.name, manifest_sha256(case), args.resume)
        run = RunHeader.from_json(contents.header, str(args.resume))
        return RunRequest(**given, target=run.device["target"], budget=trial_budget(run),
                          jobs=run.jobs, arms=None, trials_per_arm=0, design=run.design,
                          resume=Path(args.resume),
                          other_device=bool(getattr(args, "other_device", False)),
                          scope=run.scope or "arms")
    if getattr(args, "old_journal", False):
        raise UsageError("--old-journal goes with --resume (a new run writes today's journal)")
    if getattr(args, "other_device", False):
        raise UsageError("--other-device goes with --resume (a new run records the device it has)")
    check_named_commit(case, root)

    target = resolve_target(case, args.arch, gpu_info)
    scope, arms = run_scope(case, checked_arms(case, args.arms), bool(getattr(args, "deep", False)))
    d = case.defaults
    duration = args.duration if args.duration is not None else d.duration_s
    exposure = args.max_exposure if args.max_exposure is not None else d.max_exposure
    # The manifest's limit, keeping its margin over the duration when --duration changes it.
    timeout = args.timeout if args.timeout is not None else d.trial_timeout_s + (duration - d.duration_s)
    if timeout <= duration:
        raise UsageError(f"--timeout {timeout:g} must exceed the trial duration ({duration:g} s): "
                         f"a trial needs its whole budget before the limit kills it")
    hang_after = args.hang_after if getattr(args, "hang_after", None) is not None else d.hang_after_s
    if args.journal and Path(args.journal).exists():
        raise UsageError(f"--journal {args.journal} exists; continue it with --resume {args.journal}")

    if (args.until_decided or getattr(args, "decisive", False)) and not case.claims:
        raise UsageError(f"--until-decided and --decisive stop arms once the case's claims are "
                         f"decided; {case.name} declares no claims")
    design, trials = sequential_design(case, args)
    return RunRequest(**given, target=target,
                      budget=TrialBudget(duration_s=float(duration), max_exposure=int(exposure),
                                         timeout_s=float(timeout),
                                         stall_s=None if hang_after is None else float(hang_after)),
                      jobs=args.jobs or d.jobs, arms=arms, trials_per_arm=trials,
                      design=design,
                      substitutes=checked_substitutes(case, target, getattr(args, "artifact", None), root),
                      runtime_index=checked_runtime_index(case, getattr(args, "runtime_index", None),
                                                          root),
                      arch=args.arch, seed=args.seed, gpus=args.gpus,
                      journal=Path(args.journal) if args.journal else None, scope=scope,
                      priors_from=checked_priors_from(case, getattr(args, "priors_from", None), root))


def checked_arms(case: Case, given: str | None) -> tuple[str, ...] | None:
    """--arms: the arms named (comma-separated), each the case's; the baseline among them
    where a claim of the case compares an arm with the baseline (a case whose claims are each
    about one arm, outcome claims, runs any of its arms without the baseline)."""
    arms = tuple(a.strip() for a in given.split(",") if a.strip()) if given else None
    if arms is not None:
        unknown = [a for a in arms if a not in case.resolved_arms()]
        if unknown or not arms:
            raise UsageError(f"--arms: unknown arm(s) {', '.join(unknown) or '(none given)'} "
                             f"(known: {', '.join(case.resolved_arms())})")
        needs = baseline_needed_by(case, arms)
        if needs:
            raise UsageError(f"--arms must include the baseline arm {case.baseline!r}: claim "
                             f"{needs[0].name!r} compares {needs[0].arm} with it"
                             + (f" ({len(needs)} claims do)" if len(needs) > 1 else ""))
    return arms


def baseline_needed_by(case: Case, arms: Sequence[str]) -> list[Claim]:
    """The case's claims that compare an arm with the baseline, where ``arms`` leave the
    baseline out (none where they hold it). Any such claim keeps the baseline in every run of
    the case: the verdict of a case with comparisons reads the baseline's arm."""
    if case.baseline in arms:
        return []
    return [c for c in case.claims if c.kind not in SINGLE_ARM_KINDS
            and (c.reference or case.baseline) == case.baseline]


def only_target(case: Case, given: str | None) -> str:
    """--arch, one of the case's targets; without it the case's only target (a build for
    another machine cannot ask this one's GPU)."""
    targets = sorted(set(case.devices.targets.values()))
    if given:
        if given not in targets:
            raise UsageError(f"--arch {given}: {case.name} builds for {', '.join(targets)}")
        return given
    if len(targets) != 1:
        raise UsageError(f"--arch: {case.name} builds for {', '.join(targets)}; name one")
    return targets[0]


# The GPUs a pack is for when the case builds for several targets and none is named: the
# offline nodes this project's packs run on are Hopper (H100, H200: compute capability 9.0).
PACK_FAMILY = ("9.", "Hopper (H100, H200)")


def pack_target(case: Case, given: str | None) -> tuple[str, str | None]:
    """The target a pack is built for, and why when it was not named: --arch, one of the case's
    targets; else its only one; else its Hopper target (the newest compute capability 9.x it
    declares), for a build made where no GPU is to ask; a case with several targets and none
    for Hopper must be given --arch."""
    targets = sorted(set(case.devices.targets.values()))
    if given or len(targets) == 1:
        return only_target(case, given), None
    prefix, family = PACK_FAMILY
    hopper = sorted((cc for cc in case.devices.targets if cc.startswith(prefix)),
                    key=lambda cc: [int(x) for x in cc.split(".") if x.isdigit()])
    if not hopper:
        raise UsageError(f"--arch: {case.name} builds for {', '.join(targets)} and none of them "
                         f"is for {family}, the default; name the node's target")
    target = case.devices.targets[hopper[-1]]
    return target, (f"packing for {target}: compute capability {hopper[-1]}, {family}, the "
                    f"default of a case with several targets ({', '.join(targets)}); --arch "
                    f"names another node's")


def run_scope(case: Case, arms: tuple[str, ...] | None, deep: bool
              ) -> tuple[str, tuple[str, ...] | None]:
    """Which arms a run plans, and what to call that: the arms given ("arms"), every arm
    (--deep: "deep"), or by default the case's main question ("main": its claims' arms; every
    arm where the case declares none)."""
    if arms is not None and deep:
        raise UsageError("--deep runs every arm and --arms names the arms to run: give one")
    if arms is not None:
        return "arms", arms
    if deep:
        return "deep", None
    return "main", tuple(case.main_arms()) if case.main_question else None


def checked_priors_from(case: Case, given: list[str] | None, root: Path) -> tuple[Path, ...]:
    """--priors-from: result documents of this case, inside the repository (recorded relative
    to it, as every path a run records)."""
    if given is None:
        return ()
    if not case.claims:
        raise UsageError(f"--priors-from sets the rates a plan's claims are simulated with; "
                         f"{case.name} declares no claims")
    out = []
    for text in given:
        path = Path(text)
        absolute = (path if path.is_absolute() else root / path).resolve()
        if not absolute.is_relative_to(root.resolve()):
            raise UsageError(f"--priors-from {text}: must be inside the repository ({root.name}/)")
        if not absolute.is_file():
            raise UsageError(f"--priors-from {text}: no such file")
        try:
            doc = json.loads(absolute.read_text())
        except (OSError, ValueError) as exc:
            raise UsageError(f"--priors-from {text}: not a readable result document ({exc})") from None
        named = ((doc.get("case") or {}).get("name") if isinstance(doc, dict) else None)
        if named != case.name:
            raise UsageError(f"--priors-from {text}: a result of {named or 'no case'}, not of "
                             f"{case.name}")
        out.append(absolute.relative_to(root.resolve()))
    return tuple(out)


def check_named_commit(case: Case, root: Path, environ: Mapping[str, str] | None = None) -> None:
    """GPUREPRO_COMMIT, where this tree's own git can check it, must be a commit whose manifest
    is this run's: a document names it as the commit to rerun."""
    named = ((os.environ if environ is None else environ).get("GPUREPRO_COMMIT") or "").strip()
    sha = manifest_sha256(case)
    if not named or case.path is None or sha is None:
        return
    path = case.path.resolve()
    if not path.is_relative_to(root.resolve()):
        return
    why = commits.named_commit_differs(root, str(path.relative_to(root.resolve())), sha, named)
    if why is not None:
        raise UsageError(why)


def checked_substitutes(case: Case, target: str, given: list[tuple[str, str]] | None,
                        root: Path) -> tuple[tuple[str, Path], ...]:
    """--artifact NAME=PATH values: NAME one of the case's artifacts for ``target``, PATH a file
    inside the repository, each NAME once. An artifact built per release (``Artifact.per``)
    is named by one release's build (``cubin_12.6.85``), as the build index and axes name it."""
    known = [a.built_name(lv) if a.per else a.name
             for a in case.artifacts if not a.archs or target in a.archs
             for lv in (case.factors[a.per].levels if a.per else (None,))]
    out: dict[str, Path] = {}
    for name, path in given or ():
        if name not in known:
            raise UsageError(f"--artifact {name}=...: {case.name} has no artifact {name!r} for "
                             f"{target} (known: {', '.join(known)})")
        if name in out:
            raise UsageError(f"--artifact {name}=... is given twice")
        out[name] = checked_artifact_file(name, path, root)
    return tuple(out.items())


def sequential_design(case: Case, args: argparse.Namespace, alpha_for_fixed: bool = False
                      ) -> tuple[DesignSpec, int]:
    """The design asked for and the trials per arm, from --until-decided, --max-trials,
    --look-every, --alpha and --trials: fixed-size (one look at the end, the default alpha;
    `calibrate` takes --alpha for it too, ``alpha_for_fixed``), until decided, or decisive.

    The decisive design (its looks, priors and families are fixed at the run's start,
    gpurepro.analyze.planning.plan_decisive) with --decisive, and by default for `case` (the
    main job) when the case declares claims and neither --fixed, --trials nor --until-decided
    is given; its horizon is chosen from the committed trials unless --horizon gives one (or
    "none")."""
    decisive = getattr(args, "decisive", False)
    fixed = getattr(args, "fixed", False) or args.trials is not None
    if decisive and (fixed or args.until_decided):
        raise UsageError("--decisive is a design of its own: not with --fixed, --trials or "
                         "--until-decided")
    if getattr(args, "fixed", False) and args.until_decided:
        raise UsageError("--fixed and --until-decided are two designs: give one")
    timed = [c.name for c in case.claims if c.kind in TIMED_KINDS]
    if decisive and timed:
        raise UsageError(f"--decisive allocates trials by failure rates; {case.name}'s claims "
                         f"{', '.join(timed)} are on times: run it fixed-size (the default) or "
                         f"--until-decided")
    # A case with timed claims runs fixed-size by default: one look, at the end.
    if not decisive and not fixed and not args.until_decided and case.claims and not timed \
            and getattr(args, "decisive_by_default", False):
        decisive = True
    for flag in ("alpha_spending", "supported_share", "horizon"):
        if not decisive and getattr(args, flag, None) is not None and not alpha_for_fixed:
            raise UsageError(f"--{flag.replace('_', '-')} applies only with --decisive (the "
                             f"default of `case` and `run` for a case with claims)")
    if decisive:
        if args.look_every is not None:
            raise UsageError("--look-every belongs to --until-decided; the decisive design looks "
                             "after any trial once a look is due")
        horizon = getattr(args, "horizon", None)
        return (DesignSpec.decisive_request(
                    alpha=args.alpha if args.alpha is not None else DEFAULT_ALPHA,
                    max_trials=args.max_trials or DEFAULT_MAX_TRIALS,
                    spending=getattr(args, "alpha_spending", None) or DEFAULT_SPENDING,
                    supported_share=(getattr(args, "supported_share", None)
                                     or DEFAULT_SUPPORTED_SHARE),
                    # New runs decide rate claims with trials as the unit, at a horizon chosen
                    # from the committed trials (analyze.horizon_design); "none": constant rates.
                    horizon=AUTO_HORIZON if horizon is None else horizon),
                int(args.max_trials or DEFAULT_MAX_TRIALS))
    if args.until_decided:
        if args.trials is not None:
            raise UsageError("--trials is fixed-size; with --until-decided give --max-trials")
        step = int(args.look_every or DEFAULT_LOOK_EVERY)
        most = int(args.max_trials or DEFAULT_MAX_TRIALS)
        if step > most:
            raise UsageError(f"--look-every {step} exceeds --max-trials {most}: no look would be "
                             f"taken before the end")
        return (DesignSpec.until_decided(args.alpha if args.alpha is not None else DEFAULT_ALPHA,
                                         step, most), most)
    flags = ("max_trials", "look_every") + (() if alpha_for_fixed else ("alpha",))
    loose = [f for f in flags if getattr(args, f) is not None]
    if loose:
        raise UsageError(f"--{loose[0].replace('_', '-')} applies only with --until-decided or --decisive")
    return (DesignSpec.fixed(args.alpha if alpha_for_fixed and args.alpha is not None
                             else DEFAULT_ALPHA),
            int(args.trials or case.defaults.trials_per_arm))


# ---------------------------------------------------------------- a cluster run's flags


def given_cluster_flags(args: argparse.Namespace) -> list[str]:
    return [f"--{f.replace('_', '-')}" for f in CLUSTER_FLAGS if getattr(args, f, None) is not None]


def cluster_wanted(args: argparse.Namespace) -> bool:
    """Whether this `run`/`case` is a cluster run: --slurm, or --resume of a cluster run's
    journal. Cluster flags without either are refused here."""
    if getattr(args, "slurm", False):
        return True
    if args.resume:
        try:
            return bool(read(Path(args.resume)).header.get("cluster"))
        except (JournalError, OSError):
            return False  # the single-host path says what is wrong with it
    loose = given_cluster_flags(args) + (["--poll"] if getattr(args, "poll", None) is not None else [])
    if loose:
        raise UsageError(f"{loose[0]} applies only with --slurm")
    return False


def cluster_options(args: argparse.Namespace, case: Case) -> ClusterOptions:
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
        say(f"note: --shared-dir {args.shared_dir} is in a folder that compute nodes usually "
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
