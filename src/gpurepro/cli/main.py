"""Command line: `python -m gpurepro <command>`; the nox sessions call these.

Errors a user can cause (a bad flag, a bad manifest, a missing build, no GPU, a file that is no
result) end with one line and a documented exit status, never a traceback. Every value is
checked before the first build step or trial; anything else that goes wrong is named as a
harness error (exit 1).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NoReturn

from .. import __version__
from ..case.model import load_case
from ..env import fingerprint as envmod
from ..errors import (
    EXIT_ERROR,
    EXIT_OK,
    EXIT_USAGE,
    BuildError,
    ClusterError,
    HarnessError,
    JournalError,
    JournalMismatch,
    ManifestError,
    RecordError,
    SlurmError,
    Stopped,
    ToolNotFound,
    UsageError,
    exit_for_signal,
)
from ..run.execute import ignore_stop_signals, stop_signals
from ..run.journal import read
from .args import (
    alpha_value,
    artifact_override,
    nonneg_int,
    positive_float,
    positive_int,
    repository_root,
    say,
    sequential_design,
)
from .run import cmd_build, cmd_case, cmd_pins, cmd_prepare, cmd_run, cmd_slurm_task, cmd_target

EPILOG = """\
exit status: 0 done; 1 error (bad manifest, failed build, harness error); 2 usage (a bad flag,
a journal of another case or plan); 4 the GPU cannot run this case (a result document with
every trial 'unsupported' is written); 5 no CUDA driver or GPU (nothing run); 130/143/129
stopped by SIGINT/SIGTERM/SIGHUP (the journal keeps every finished trial: continue with
--resume).
"""


def cmd_record(args: argparse.Namespace) -> int:
    from ..record.result import record_journals

    root = repository_root()
    journals = [Path(j) for j in args.journal]
    header = read(journals[0]).header
    manifest = header.get("manifest")
    if not args.case and manifest and (root / manifest).is_file():
        case = load_case(root / manifest, root)
    else:
        case = load_case(args.case or header["case"], root)
    out = record_journals(case, journals, root, Path(args.out) if args.out else None,
                          force=args.force)
    return EXIT_OK if out else EXIT_ERROR


def _read_document(path: Path, what: str = "result document",
                   written_by: str = "`gpurepro record`") -> dict[str, Any]:
    """A JSON document from a file, or one line saying why it is not one."""
    if path.is_dir():
        raise UsageError(f"{path} is a folder; give a {what} (.json)")
    try:
        doc = json.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError:
        raise UsageError(f"{path} is not a text file; give a {what} (.json)") from None
    except ValueError as exc:
        raise UsageError(f"{path} is not JSON ({exc}); a {what} is written by {written_by}") from None
    if not isinstance(doc, dict):
        raise UsageError(f"{path} holds JSON but not a {what} (no object at the top)")
    return doc



def cmd_report(args: argparse.Namespace) -> int:
    from ..record.validation import validate_document
    from ..report.markdown import write_report

    path = Path(args.result)
    doc = _read_document(path)
    if str(doc.get("schema", "")).startswith("gpurepro/bench"):
        raise UsageError(f"{path} is a benchmark document; `report` renders case results "
                         f"(benchmarks are summarised in the README)")
    if str(doc.get("schema", "")).startswith("gpurepro/matrix"):
        raise UsageError(f"{path} is a toolchain matrix document; `python -m gpurepro matrix "
                         f"table {path}` renders it")
    validate_document(doc, str(path))
    for kind, p in write_report(doc, path).items():
        say(f"{kind}: {p}")
    return EXIT_OK


def cmd_validate(args: argparse.Namespace) -> int:
    from ..record.validation import validation_errors

    paths: list[Path] = []
    for p in args.paths or ["results"]:
        p = Path(p)
        if p.is_dir():
            paths += sorted(x for x in p.rglob("*.json") if not x.name.endswith(".pyperf.json"))
        elif p.exists():
            paths.append(p)
        else:
            raise UsageError(f"{p}: no such file or folder")
    bad = 0
    for p in paths:
        try:
            errors = validation_errors(_read_document(p))
        except UsageError as exc:
            errors = [str(exc)]
        if errors:
            bad += 1
            say(f"INVALID {p}:")
            for e in errors[:20]:
                say(f"  {e}")
        else:
            say(f"ok      {p}")
    say(f"{len(paths) - bad} of {len(paths)} documents valid")
    stale = _stale_indexes(args.paths or ["results"])
    return EXIT_OK if bad == 0 and not stale else EXIT_ERROR


def _stale_indexes(folders: list[str]) -> int:
    """How many results indexes (results/README.md) differ from what their documents give."""
    from ..report.index import index_path, is_current, is_generated

    root_results = (repository_root() / "results").resolve()
    stale = 0
    for folder in map(Path, folders):
        if not folder.is_dir():
            continue
        index = index_path(folder)
        if folder.resolve() != root_results and not is_generated(index):
            continue
        if not is_current(folder):
            stale += 1
            where = "" if folder.resolve() == root_results and str(folder) == "results" else f" {folder}"
            say(f"{index} is out of date: run python -m gpurepro index{where}")
    return stale


def cmd_scrub(args: argparse.Namespace) -> int:
    """Rewrite committed journals and documents with the recording rules of today."""
    from ..record.scrub import scrub_file

    root = repository_root()
    changed = 0
    for p in map(Path, args.paths):
        if not p.is_file():
            raise UsageError(f"{p}: not a file")
        if scrub_file(p, root, redact=args.redact):
            changed += 1
            say(f"rewritten {p}")
        else:
            say(f"unchanged {p}")
    say(f"{changed} of {len(args.paths)} files rewritten")
    return EXIT_OK


def cmd_new(args: argparse.Namespace) -> int:
    from ..case.scaffold import create

    root = repository_root()
    for path in create(args.name, root):
        say(f"wrote {path.relative_to(root)}")
    say(f"next: nox -s {args.name} -- --arch sm_90   (builds; runs where an NVIDIA GPU is)")
    return EXIT_OK


def cmd_env(args: argparse.Namespace) -> int:
    print(json.dumps(envmod.fingerprint(repository_root(), redact=args.redact), indent=2))
    return EXIT_OK


def cmd_compare(args: argparse.Namespace) -> int:
    """Result documents of one case side by side; 1 with --fail-on-change when a decided claim
    flipped."""
    from ..errors import CompareError
    from ..report.compare import compare, markdown

    docs = [_read_document(Path(p)) for p in args.results]
    try:
        result = compare(docs, args.results)
    except CompareError as exc:
        raise UsageError(str(exc)) from None
    print(json.dumps(result, indent=2) if args.json else markdown(result))
    if args.plot:
        from ..report.compare import plot

        drawn = plot(result, Path(args.plot))
        say(f"plot: {args.plot}" if drawn else "plot: nothing to draw (no arm with exposure in two runs)")
    return EXIT_ERROR if args.fail_on_change and result["flipped"] else EXIT_OK


def _matrix_block(path: Path, doc: Mapping[str, Any]) -> tuple[str, str]:
    """A <details> block with a toolchain matrix document's table, for `issue --matrix`."""
    from ..matrix.table import markdown as matrix_markdown

    try:
        matrix = _read_document(path, "matrix document", "`gpurepro matrix assemble`")
    except (OSError, UsageError) as exc:
        raise UsageError(f"--matrix {path}: not a readable matrix document ({exc})") from None
    if not str(matrix.get("schema", "")).startswith("gpurepro/matrix"):
        raise UsageError(f"--matrix {path}: not a matrix document (schema gpurepro/matrix/...)")
    case = (matrix.get("case") or {}).get("name") if isinstance(matrix.get("case"), dict) else None
    if case != doc["case"].get("name"):
        raise UsageError(f"--matrix {path}: a matrix of {case!r}, not of {doc['case'].get('name')!r}")
    return (f"Toolchain matrix ({path.name}; attach it beside the result)", matrix_markdown(matrix))


def cmd_issue(args: argparse.Namespace) -> int:
    """The body of a GitHub comment for a result document (printed, or written to --out)."""
    from ..errors import IssueError
    from ..report.comment import issue_body

    path = Path(args.result)
    doc = _read_document(path)
    extra: list[tuple[str, str]] = []
    if args.matrix:
        extra.append(_matrix_block(Path(args.matrix), doc))
    try:
        body = issue_body(doc, path, extra_blocks=extra)
    except IssueError as exc:
        raise UsageError(str(exc)) from None
    if args.out:
        from ..run.atomic import write_atomic

        write_atomic(Path(args.out), body)
        say(f"issue comment: {args.out} ({len(body)} characters)")
    else:
        sys.stdout.write(body)
    return EXIT_OK


def cmd_index(args: argparse.Namespace) -> int:
    """Regenerate results/README.md, the index of every result document."""
    from ..report.index import write_index

    folder = Path(args.folder)
    if not folder.is_dir():
        raise UsageError(f"{folder}: no such folder")
    path, changed = write_index(folder)
    say(f"{'wrote' if changed else 'unchanged'} {path}")
    return EXIT_OK


# ---------------------------------------------------------------- parser


def cmd_calibrate(args: argparse.Namespace) -> int:
    from ..analyze.calibrate import run_calibration

    root = repository_root()
    case = load_case(args.case, root)
    if not case.claims:
        raise UsageError(f"{case.name} declares no claims: there is nothing to calibrate")
    stopping, trials = sequential_design(case, args, alpha_for_fixed=True)
    return run_calibration(case, root, stopping, trials, args.alpha, args.rates_from, args.runs,
                           args.seed, args.workers, args.json)


def cmd_matrix(args: argparse.Namespace) -> int:
    return int(args.stage_fn(args, repository_root()))


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (and exit 2), not the whole usage block."""

    def error(self, message: str) -> NoReturn:
        say(f"gpurepro: usage error: {message} (see {self.prog} --help)")
        raise SystemExit(EXIT_USAGE)


def _run_arguments(p: argparse.ArgumentParser) -> None:
    # Defaults that come from the manifest are None here, so that --resume can tell a flag
    # that was given (and would change the journal's plan) from one that was not.
    p.add_argument("case", help="case name (folder under cases/) or path to its manifest.py")
    p.add_argument("--arch", help="build target (default: from the GPU, e.g. sm_90)")
    p.add_argument("--arms", help="comma-separated arms to run (default: all)")
    p.add_argument("--trials", type=positive_int, help="trials per arm (default: the manifest's)")
    p.add_argument("--duration", type=positive_float, help="seconds per trial (budget)")
    p.add_argument("--max-exposure", type=nonneg_int,
                   help="budget per trial in the case's exposure counter, e.g. cycles (0: none)")
    p.add_argument("--timeout", type=positive_float,
                   help="wall-clock limit per trial; the process group is killed after it")
    p.add_argument("--seed", type=nonneg_int, help="shuffle seed (default: random, recorded)")
    p.add_argument("--jobs", type=positive_int, help="trials at a time per GPU (each its own process; recorded)")
    p.add_argument("--gpus", help="'all' (every GPU, by UUID) or a list of UUIDs or indices: one worker set per GPU via CUDA_VISIBLE_DEVICES")
    p.add_argument("--until-decided", action="store_true",
                   help="stop an arm once its comparison with the baseline is decided (group-sequential)")
    p.add_argument("--max-trials", type=positive_int, help="with --until-decided: most trials per arm (default 25)")
    p.add_argument("--look-every", type=positive_int, help="with --until-decided: trials between looks (default 5)")
    p.add_argument("--alpha", type=alpha_value, help="with --until-decided: overall false-decision level (default 0.05)")
    p.add_argument("--resume", metavar="JOURNAL", help="continue an interrupted run from its journal")
    p.add_argument("--journal", help="journal path (default: results/<case>/<stamp>_<gpu>_<host>.journal.jsonl)")
    p.add_argument("--out-dir", default="results", help="folder for journals and results")
    p.add_argument("--build-dir", default="build", help="prebuilt artifacts, inside the repository (default: build/)")
    p.add_argument("--artifact", action="append", type=artifact_override, metavar="NAME=PATH",
                   help="use this prebuilt file (inside the repository) instead of the built "
                        "artifact NAME; recorded with its sha256 (repeatable)")
    p.add_argument("--redact", action="store_true", help="drop the hostname and home paths from the record")
    p.add_argument("--no-record", action="store_true", help="only journal; record later with `gpurepro record`")
    p.add_argument("--force", action="store_true", help="let record replace an existing result document")
    p.add_argument("--exit-status-file", help=argparse.SUPPRESS)  # for the nox sessions
    g = p.add_argument_group("cluster (Slurm)", "run the trials as Slurm job arrays and merge "
                             "them into one document (README: Running across a cluster)")
    g.add_argument("--slurm", action="store_true",
                   help="submit the trials to Slurm: one job array per --partition")
    g.add_argument("--partition", action="append", metavar="NAME[=TARGET]",
                   help="a partition to run on (repeat for more); TARGET, e.g. sm_90, is what "
                        "its GPUs need (default: --arch, the case's only target, or a probe job)")
    g.add_argument("--gres", help="generic resources per array task, e.g. gpu:1 (one worker "
                   "set per GPU it gets)")
    g.add_argument("--time", help="time limit per array task, in Slurm's format (default: "
                   "its trials' limits one after the other, plus 2 minutes)")
    g.add_argument("--account", help="the Slurm account to charge")
    g.add_argument("--jobs-per-partition", type=positive_int,
                   help="array tasks per partition, each with its share of the trials (default 4)")
    g.add_argument("--shared-dir", help="a folder every node sees, for the staged tree and the "
                   "shard journals (default: build/slurm in the repository)")
    g.add_argument("--max-resubmits", type=nonneg_int,
                   help="times a trial that a failed, preempted or cancelled task left undone "
                        "is submitted again (default 2)")
    g.add_argument("--node-python", help="Python 3.11+ on the nodes (default: python3); the "
                   "run stage needs only its standard library")
    g.add_argument("--poll", type=positive_float,
                   help="seconds between looks at squeue and the shard journals (default 10)")


def parser() -> argparse.ArgumentParser:
    ap = Parser(
        prog="python -m gpurepro",
        description="Turn a GPU bug report into an experiment: build pinned artifacts, run isolated "
                    "trials, classify them, and record a schema-valid verdict.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--version", action="version", version=f"gpurepro {__version__}")
    sub = ap.add_subparsers(dest="command", required=True, metavar="command", parser_class=Parser)

    p = sub.add_parser("case", help="build, run, record and report a case (what `nox -s <case>` runs)",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    _run_arguments(p)
    p.set_defaults(fn=cmd_case)

    p = sub.add_parser("run", help="run (and record) a case from a prebuilt build/",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    _run_arguments(p)
    p.set_defaults(fn=cmd_run)

    p = sub.add_parser("prepare", help="check a case's arguments; write its target and pins (for nox)")
    _run_arguments(p)
    p.add_argument("--prepare-out", required=True, help="JSON file to write {target, pins} to")
    p.set_defaults(fn=cmd_prepare)

    p = sub.add_parser("slurm-task", help="one array task of a cluster run (Slurm runs it)")
    p.add_argument("spec", help="the round's task list, written by the submitting side")
    p.add_argument("--task", type=nonneg_int, help="array task (default: $SLURM_ARRAY_TASK_ID)")
    p.set_defaults(fn=cmd_slurm_task)

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
    p.add_argument("--force", action="store_true", help="replace an existing result document")
    p.set_defaults(fn=cmd_record)

    p = sub.add_parser("report", help="result document -> Markdown, PNG plot, pyperf suite")
    p.add_argument("result")
    p.set_defaults(fn=cmd_report)

    p = sub.add_parser("validate", help="check result documents: schema and meaning")
    p.add_argument("paths", nargs="*", help="files or folders (default: results/)")
    p.set_defaults(fn=cmd_validate)

    p = sub.add_parser("scrub", help="rewrite journals/documents: checkout paths relative, secrets dropped")
    p.add_argument("paths", nargs="+")
    p.add_argument("--redact", action="store_true", help="also apply --redact's rules")
    p.set_defaults(fn=cmd_scrub)

    p = sub.add_parser("calibrate", help="simulate a case's claims on its design: family-wise "
                       "false-claim rate under the null, power under the observed effects")
    p.add_argument("case", help="case name (folder under cases/) or path to its manifest.py")
    p.add_argument("--runs", type=positive_int, default=2000, help="simulated runs per scenario (default 2000)")
    p.add_argument("--seed", type=nonneg_int, default=0, help="seed of numpy's generator (default 0)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--alpha", type=alpha_value, help="family-wise level (default 0.05)")
    p.add_argument("--until-decided", action="store_true", help="the sequential design (else fixed-size)")
    p.add_argument("--max-trials", type=positive_int, help="with --until-decided (default 25)")
    p.add_argument("--look-every", type=positive_int, help="with --until-decided (default 5)")
    p.add_argument("--trials", type=positive_int, help="fixed-size: trials per arm (default: the manifest's)")
    p.add_argument("--from", dest="rates_from", nargs="+", metavar="RESULT.json",
                   help="result documents to take rates and budgets from (default: the newest "
                        "committed result of the case with every arm of its claims)")
    p.add_argument("--workers", type=positive_int, help="processes (default: the CPUs available)")
    p.add_argument("--exit-status-file", help=argparse.SUPPRESS)  # for the nox session
    p.set_defaults(fn=cmd_calibrate)

    p = sub.add_parser("new", help="scaffold a new case folder cases/<name>/ that builds and runs")
    p.add_argument("name", help="lower-case name: the folder and the nox session")
    p.set_defaults(fn=cmd_new)

    p = sub.add_parser("env", help="print the environment fingerprint")
    p.add_argument("--redact", action="store_true")
    p.set_defaults(fn=cmd_env)

    p = sub.add_parser("compare", help="result documents of one case side by side: rates, "
                       "rate ratios, changed claims and verdict, what differs")
    p.add_argument("results", nargs="+", metavar="RESULT.json",
                   help="two or more result documents of one case; each later one is set against the first")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of Markdown")
    p.add_argument("--fail-on-change", action="store_true",
                   help="exit 1 when a claim decided in the first document is decided otherwise "
                        "(or not decided) in a later one")
    p.add_argument("--plot", metavar="FILE.png",
                   help="also draw the paired forest plot (runs side by side per arm), SVG beside it")
    p.add_argument("--exit-status-file", help=argparse.SUPPRESS)  # for the nox session
    p.set_defaults(fn=cmd_compare)

    p = sub.add_parser("issue", help="result document -> the body of a GitHub issue comment")
    p.add_argument("result", metavar="RESULT.json")
    p.add_argument("--out", metavar="FILE", help="write the body to FILE (default: print it)")
    p.add_argument("--matrix", metavar="MATRIX.json",
                   help="add the case's toolchain matrix table (a matrix document) as a <details> block")
    p.add_argument("--exit-status-file", help=argparse.SUPPRESS)  # for the nox session
    p.set_defaults(fn=cmd_issue)

    from .matrix import add_parser as add_matrix_parser

    add_matrix_parser(sub).set_defaults(fn=cmd_matrix)

    p = sub.add_parser("index", help="regenerate results/README.md, the index of result documents")
    p.add_argument("folder", nargs="?", default="results", help="the results folder (default: results/)")
    p.set_defaults(fn=cmd_index)
    return ap


def _dispatch(args: argparse.Namespace) -> int:
    try:
        return int(args.fn(args))
    except (UsageError, JournalMismatch) as exc:
        say(f"gpurepro: usage error: {exc}")
        return EXIT_USAGE
    except (ManifestError, BuildError, ToolNotFound, JournalError, RecordError) as exc:
        say(f"gpurepro: error: {exc}")
        return EXIT_ERROR
    except (ClusterError, SlurmError) as exc:
        say(f"gpurepro: error: {exc}")
        return EXIT_ERROR
    except HarnessError as exc:
        say(f"gpurepro: harness error: {exc}")
        return EXIT_ERROR
    except OSError as exc:
        where = f": {exc.filename}" if exc.filename else ""
        say(f"gpurepro: error: {exc.strerror or exc}{where}")
        return EXIT_ERROR
    except Stopped as exc:
        say(f"gpurepro: stopped by {exc}")
        return exit_for_signal(exc.signum)
    except KeyboardInterrupt:
        say("gpurepro: stopped by SIGINT")
        return 130
    except Exception as exc:
        if os.environ.get("GPUREPRO_DEBUG"):
            raise
        say(f"gpurepro: harness error (a bug in gpurepro, please report it): "
             f"{type(exc).__name__}: {exc}; GPUREPRO_DEBUG=1 shows the traceback")
        return EXIT_ERROR


def _status_file(argv: list[str]) -> str | None:
    """--exit-status-file, read before parsing: a usage error must reach the file too."""
    for i, a in enumerate(argv):
        if a == "--exit-status-file" and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith("--exit-status-file="):
            return a.split("=", 1)[1]
    return None


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = parser().parse_args(argv)
        # From here on SIGINT, SIGTERM and SIGHUP raise Stopped wherever the main thread is,
        # so a stop at any moment ends with the cleanup of the step it interrupted and one line;
        # once the work is done they are ignored, never restored to their default (a SIGTERM
        # in that window would end the process by the signal, with the run complete).
        try:
            with stop_signals():
                status = _dispatch(args)
        finally:
            ignore_stop_signals()
    except Stopped as exc:  # arrived between the work's end and the line above
        status = exit_for_signal(exc.signum)
    except SystemExit as exc:  # argparse: usage error (2), --help / --version (0)
        status = exc.code if isinstance(exc.code, int) else EXIT_USAGE
    status_file = _status_file(argv)
    if status_file:
        Path(status_file).write_text(f"{status}\n")
    return status
