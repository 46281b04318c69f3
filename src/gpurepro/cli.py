"""Command line: `python -m gpurepro <command>`; the nox sessions call these.

Errors a user can cause (a bad manifest, a missing build, no GPU) end with one clear line and
a documented exit status, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from . import __version__
from . import env as envmod
from .build import BuildError, build_case, load_index
from .journal import Journal, JournalError, merge, result_name
from .manifest import Case, ManifestError, TrialBudget, find_repo_root, load_case
from .plan import Plan, make_plan
from .run import (
    EXIT_INTERRUPTED,
    EXIT_NO_DRIVER,
    EXIT_OK,
    EXIT_UNSUPPORTED,
    Gate,
    RunOptions,
    execute_plan,
    execute_trial,
    gate,
    unsupported_record,
)
from .toolchain import ToolNotFound

EXIT_ERROR = 1
EXIT_USAGE = 2

EPILOG = """\
exit status: 0 done; 1 error (bad manifest, failed build, harness error); 2 usage;
3 no CUDA driver or GPU (nothing run); 4 the GPU cannot run this case (a result document
with every trial 'unsupported' is written); 130 interrupted (the journal keeps every
finished trial: continue with --resume).
"""


class UsageError(Exception):
    pass


def _root() -> Path:
    # The repository root: where cases/ lives. Commands run from it (nox does).
    return find_repo_root(Path.cwd()) or Path.cwd()


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- target / pins / build


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


def cmd_target(args: argparse.Namespace) -> int:
    case = load_case(args.case, _root())
    print(resolve_target(case, args.arch))
    return EXIT_OK


def cmd_pins(args: argparse.Namespace) -> int:
    case = load_case(args.case, _root())
    for pin in case.pins_for(resolve_target(case, args.arch)):
        print(pin)
    return EXIT_OK


def do_build(case: Case, target: str, root: Path, build_dir: Path) -> dict[str, Any]:
    _say(f"building {case.name} for {target}")

    def on_event(name: str, status: str) -> None:
        if status != "building":
            _say(f"  {name}: {status}")

    index = build_case(case, target, root, build_dir, on_event)
    for name, e in index["artifacts"].items():
        _say(f"  {name}: {e['path']} sha256 {e['sha256'][:16]}")
    return index


def cmd_build(args: argparse.Namespace) -> int:
    root = _root()
    case = load_case(args.case, root)
    do_build(case, resolve_target(case, args.arch), root, Path(args.build_dir))
    return EXIT_OK


# ---------------------------------------------------------------- run


def _gpus(spec: str | None, gpu_info: dict[str, Any]) -> tuple[str, ...]:
    if not spec:
        return ()
    if spec == "all":
        return tuple(str(g["index"]) for g in gpu_info.get("gpus") or [])
    return tuple(s.strip() for s in spec.split(",") if s.strip())


def _budget(case: Case, args: argparse.Namespace) -> TrialBudget:
    d = case.defaults
    duration = args.duration if args.duration is not None else d.duration_s
    cycles = args.max_cycles if args.max_cycles is not None else d.max_cycles
    timeout = args.timeout if args.timeout is not None else max(d.trial_timeout_s, duration + 30)
    return TrialBudget(duration_s=float(duration), max_cycles=int(cycles), timeout_s=float(timeout))


def _stamp() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _probe(case: Case, plan: Plan, index: dict[str, Any], root: Path, opts: RunOptions) -> dict[str, Any]:
    """On a device the case cannot run on, run one baseline trial to show what happens."""
    planned = next((t for t in plan.order if t.arm == case.baseline), plan.order[0])
    rec = execute_trial(case, planned, plan.arms[planned.arm], index, root, opts,
                        opts.gpus[0] if opts.gpus else None, 0)
    return {"arm": planned.arm, "command": rec["command"], "outcome": rec["outcome"],
            "detail": rec["detail"], "exit": rec["exit"], "stderr_tail": rec["stderr_tail"][-1500:]}


def do_run(case: Case, args: argparse.Namespace, root: Path,
           gpu_info: dict[str, Any] | None = None) -> tuple[int, Path | None]:
    """Plan (or resume) and run; returns the exit status and the journal path."""
    # Asked once per command: it loads libcuda and NVML and may run nvidia-smi.
    gpu_info = gpu_info if gpu_info is not None else envmod.gpus()
    if args.resume:
        journal = Journal(Path(args.resume))
        header, done = journal.read()
        plan = Plan.from_json(header["plan"])
        o = header["options"]
        opts = RunOptions(budget=TrialBudget(**o["budget"]), jobs=o["jobs"],
                          gpus=tuple(o.get("gpus") or ()), redact=o.get("redact", False))
        g = Gate(header["device"]["supported"], header["device"]["target"], header["device"],
                 header["device"].get("reason"))
        stopping = o.get("stopping")
        _say(f"resuming {journal.path}: {len(done)} of {len(plan.order)} trials done")
    else:
        gpus = _gpus(args.gpus, gpu_info)
        g = gate(case, gpu_info, args.arch, gpus)
        if not gpu_info.get("available") and case.devices.requires_gpu:
            _say(f"{case.name}: no CUDA driver is present on this machine ({g.reason}); "
                 f"the artifacts are built, nothing was run. Run this on a machine with an "
                 f"NVIDIA GPU (targets: {', '.join(f'{c} -> {t}' for c, t in case.devices.targets.items())}).")
            return EXIT_NO_DRIVER, None
        opts = RunOptions(budget=_budget(case, args), jobs=args.jobs or case.defaults.jobs,
                          gpus=gpus, redact=args.redact)
        arms = case.resolved_arms()
        selected = args.arms.split(",") if args.arms else None
        trials = args.trials or (args.max_trials if args.until_decided else None) or case.defaults.trials_per_arm
        try:
            plan = make_plan(case.name, arms, trials, args.seed, selected)
        except ValueError as exc:
            raise UsageError(str(exc)) from exc
        stopping = None
        if args.until_decided:
            from .sequential import Design

            stopping = Design(alpha=args.alpha, step=args.look_every, max_trials=trials).describe()
        index = load_index(Path(args.build_dir), case, g.target)
        header = {
            "case": case.name,
            "started_at": _stamp(),
            "plan": plan.to_json(),
            "options": {"budget": opts.budget.__dict__, "jobs": opts.jobs, "gpus": list(opts.gpus),
                        "redact": opts.redact, "stopping": stopping},
            "environment": envmod.fingerprint(root, redact=args.redact, gpu_info=gpu_info),
            "device": {**{k: g.device.get(k) for k in ("name", "compute_capability", "uuid", "index")},
                       "supported": g.supported, "target": g.target, "reason": g.reason},
            "toolchain": index["toolchain"],
            "artifacts": index["artifacts"],
            "probe": None,
        }
        out_dir = Path(args.out_dir) / case.name
        journal = Journal(Path(args.journal) if args.journal else out_dir / f"{result_name(header)}.journal.jsonl")
        if not g.supported:
            header["probe"] = _probe(case, plan, index, root, opts)
        journal.create(header)
        done = []
        _say(f"journal: {journal.path}")

    index = {"artifacts": header["artifacts"], "toolchain": header["toolchain"]}
    if not g.supported:
        _say(f"{case.name}: {g.reason}; every trial is recorded as unsupported")
        finished = {r["index"] for r in done}
        for t in plan.order:
            if t.index not in finished:
                journal.append_trial(unsupported_record(t, str(g.reason)))
        return EXIT_UNSUPPORTED, journal.path

    filter_fn = None
    if stopping:
        from .sequential import Design, Sequential

        seq = Sequential(Design(stopping["alpha"], stopping["looks"][0], stopping["looks"][-1]),
                         case.baseline, list(plan.arms), case.failure_outcomes)
        filter_fn = seq.still_needed
    try:
        execute_plan(case, plan, index, root, journal, opts, done, filter_fn)
        if stopping:
            journal.append_stopping(seq.to_json())
    except KeyboardInterrupt:
        _, now = journal.read()
        _say(f"\ninterrupted: {len(now)} of {len(plan.order)} trials are in {journal.path}; "
             f"continue with: python -m gpurepro run {case.name} --resume {journal.path}")
        return EXIT_INTERRUPTED, journal.path
    return EXIT_OK, journal.path


def do_record(case: Case, journals: list[Path], root: Path, out: Path | None = None) -> Path | None:
    try:
        from .record import build_document, result_name, write_document
        from .report import write_report
    except ImportError as exc:
        _say(f"analysis packages are missing here ({exc.name}); the journal is complete. "
             f"Record it where gpurepro is installed: python -m gpurepro record {' '.join(map(str, journals))}")
        return None
    header, trials = merge(journals) if len(journals) > 1 else Journal(journals[0]).read()
    doc = build_document(case, header, trials, root, journals[0].resolve())
    if out is None:
        out = journals[0].parent / f"{result_name(header)}.json"
    write_document(doc, out)
    written = write_report(doc, out)
    _say(f"result: {out}")
    for kind, path in written.items():
        _say(f"{kind}: {path}")
    _say("verdict: " + doc["verdict"]["status"])
    for s in doc["verdict"]["sentences"]:
        _say(f"  - {s}")
    return out


def cmd_run(args: argparse.Namespace, gpu_info: dict[str, Any] | None = None) -> int:
    root = _root()
    case = load_case(args.case, root)
    status, journal = do_run(case, args, root, gpu_info)
    if journal is not None and not args.no_record and status in (EXIT_OK, EXIT_UNSUPPORTED):
        do_record(case, [journal], root)
    return status


def cmd_case(args: argparse.Namespace) -> int:
    """Build, run, record and report: what `nox -s <case>` does."""
    root = _root()
    case = load_case(args.case, root)
    gpu_info = None
    if not args.resume:
        gpu_info = envmod.gpus()
        target = resolve_target(case, args.arch, gpu_info)
        do_build(case, target, root, Path(args.build_dir))
        args.arch = target
    return cmd_run(args, gpu_info)


def cmd_record(args: argparse.Namespace) -> int:
    root = _root()
    journals = [Path(j) for j in args.journal]
    header, _ = Journal(journals[0]).read()
    case = load_case(args.case or header["case"], root)
    return EXIT_OK if do_record(case, journals, root, Path(args.out) if args.out else None) else EXIT_ERROR


def cmd_report(args: argparse.Namespace) -> int:
    from .record import validate_document
    from .report import write_report

    path = Path(args.result)
    doc = json.loads(path.read_text())
    validate_document(doc, str(path))
    for kind, p in write_report(doc, path).items():
        _say(f"{kind}: {p}")
    return EXIT_OK


def cmd_validate(args: argparse.Namespace) -> int:
    from .record import validation_errors

    paths: list[Path] = []
    for p in args.paths or ["results"]:
        p = Path(p)
        if p.is_dir():
            paths += sorted(x for x in p.rglob("*.json") if not x.name.endswith(".pyperf.json"))
        else:
            paths.append(p)
    bad = 0
    for p in paths:
        try:
            doc = json.loads(p.read_text())
        except ValueError as exc:
            _say(f"INVALID {p}: not JSON ({exc})")
            bad += 1
            continue
        errors = validation_errors(doc)
        if errors:
            bad += 1
            _say(f"INVALID {p}:")
            for e in errors[:20]:
                _say(f"  {e}")
        else:
            _say(f"ok      {p}")
    _say(f"{len(paths) - bad} of {len(paths)} documents valid")
    return EXIT_OK if bad == 0 else EXIT_ERROR


def cmd_env(args: argparse.Namespace) -> int:
    print(json.dumps(envmod.fingerprint(_root(), redact=args.redact), indent=2))
    return EXIT_OK


# ---------------------------------------------------------------- parser


def _run_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("case", help="case name (folder under cases/) or path to its manifest.py")
    p.add_argument("--arch", help="build target (default: from the GPU, e.g. sm_90)")
    p.add_argument("--arms", help="comma-separated arms to run (default: all)")
    p.add_argument("--trials", type=int, help="trials per arm (default: the manifest's)")
    p.add_argument("--duration", type=float, help="seconds per trial (budget)")
    p.add_argument("--max-cycles", type=int, help="cycle budget per trial (0: none)")
    p.add_argument("--timeout", type=float, help="wall-clock limit per trial; the process group is killed after it")
    p.add_argument("--seed", type=int, help="shuffle seed (default: random, recorded)")
    p.add_argument("--jobs", type=int, help="trials at a time per GPU (each its own process; recorded)")
    p.add_argument("--gpus", help="'all' or a list like 0,1: one worker set per GPU via CUDA_VISIBLE_DEVICES")
    p.add_argument("--until-decided", action="store_true",
                   help="stop an arm once its comparison with the baseline is decided (group-sequential)")
    p.add_argument("--max-trials", type=int, default=25, help="with --until-decided: most trials per arm")
    p.add_argument("--look-every", type=int, default=5, help="with --until-decided: trials between looks")
    p.add_argument("--alpha", type=float, default=0.05, help="with --until-decided: overall false-decision level")
    p.add_argument("--resume", metavar="JOURNAL", help="continue an interrupted run from its journal")
    p.add_argument("--journal", help="journal path (default: results/<case>/<stamp>_<gpu>_<host>.journal.jsonl)")
    p.add_argument("--out-dir", default="results", help="folder for journals and results")
    p.add_argument("--build-dir", default="build", help="prebuilt artifacts (default: build/)")
    p.add_argument("--redact", action="store_true", help="drop the hostname and home paths from the record")
    p.add_argument("--no-record", action="store_true", help="only journal; record later with `gpurepro record`")


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m gpurepro",
        description="Turn a GPU bug report into an experiment: build pinned artifacts, run isolated "
                    "trials, classify them, and record a schema-valid verdict.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--version", action="version", version=f"gpurepro {__version__}")
    sub = ap.add_subparsers(dest="command", required=True, metavar="command")

    p = sub.add_parser("case", help="build, run, record and report a case (what `nox -s <case>` runs)",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    _run_arguments(p)
    p.set_defaults(fn=cmd_case)

    p = sub.add_parser("run", help="run (and record) a case from a prebuilt build/",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    _run_arguments(p)
    p.set_defaults(fn=cmd_run)

    p = sub.add_parser("build", help="build a case's artifacts with the pinned toolchain")
    p.add_argument("case")
    p.add_argument("--arch")
    p.add_argument("--build-dir", default="build")
    p.set_defaults(fn=cmd_build)

    p = sub.add_parser("target", help="print the build target for this machine's GPU (or --arch)")
    p.add_argument("case")
    p.add_argument("--arch")
    p.set_defaults(fn=cmd_target)

    p = sub.add_parser("pins", help="print the PyPI requirements of a case for a target")
    p.add_argument("case")
    p.add_argument("--arch")
    p.set_defaults(fn=cmd_pins)

    p = sub.add_parser("record", help="journal(s) -> validated result document + report")
    p.add_argument("journal", nargs="+", help="one journal, or several shards of one plan")
    p.add_argument("--case", help="case (default: from the journal)")
    p.add_argument("--out", help="result path (default: beside the journal)")
    p.set_defaults(fn=cmd_record)

    p = sub.add_parser("report", help="result document -> Markdown, PNG plot, pyperf suite")
    p.add_argument("result")
    p.set_defaults(fn=cmd_report)

    p = sub.add_parser("validate", help="validate result documents against schema/")
    p.add_argument("paths", nargs="*", help="files or folders (default: results/)")
    p.set_defaults(fn=cmd_validate)

    p = sub.add_parser("env", help="print the environment fingerprint")
    p.add_argument("--redact", action="store_true")
    p.set_defaults(fn=cmd_env)
    return ap


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return int(args.fn(args))
    except UsageError as exc:
        _say(f"gpurepro: usage error: {exc}")
        return EXIT_USAGE
    except (ManifestError, BuildError, ToolNotFound, JournalError) as exc:
        _say(f"gpurepro: error: {exc}")
        return EXIT_ERROR
    except FileNotFoundError as exc:
        _say(f"gpurepro: error: {exc.strerror}: {exc.filename}")
        return EXIT_ERROR
    except KeyboardInterrupt:
        _say("gpurepro: interrupted")
        return EXIT_INTERRUPTED
    except Exception as exc:
        # RecordError lives with jsonschema, which a bare GPU node may not have.
        if type(exc).__name__ == "RecordError":
            _say(f"gpurepro: error: {exc}")
            return EXIT_ERROR
        raise
