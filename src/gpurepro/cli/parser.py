"""The command line's parser: every command and its flags, each command's function set as
``fn``. A usage error is one line (and exit 2), not the whole usage block.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, NoReturn

from .. import __version__
from ..errors import EXIT_USAGE
from ..model.design import SPENDINGS
from . import results, run
from .args import (
    alpha_value,
    artifact_override,
    horizon_value,
    journal_path,
    name_list,
    nonneg_int,
    positive_float,
    positive_int,
    python_version,
    say,
)

EPILOG = """\
exit status: 0 done; 1 error (bad manifest, failed build, harness error); 2 usage (a bad flag,
a journal of another case or plan); 4 the GPU cannot run this case (a result document with
every trial 'unsupported' is written); 5 no CUDA driver or GPU (nothing run); 130/143/129
stopped by SIGINT/SIGTERM/SIGHUP (the journal keeps every finished trial: continue with
--resume). With --rerun-of: 0 reproduced, 6 not reproduced, 125 could not run (in place of
1, 2, 4 and 5).
"""


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (and exit 2), not the whole usage block, and its
    hint names a help a person can read: a hidden command's (`prepare`, `slurm-task`) names the
    public command it serves (``see``), and a flag no command knows names the command given."""

    see: str | None = None  # the command whose --help the hint names, where not this one
    commands: dict[str, argparse.ArgumentParser] | None = None  # the top level's subcommands

    def error(self, message: str) -> NoReturn:
        say(f"gpurepro: usage error: {message} (see {self.see or self.prog} --help)")
        raise SystemExit(EXIT_USAGE)

    def parse_args(self, args: Any = None, namespace: Any = None) -> argparse.Namespace:  # type: ignore[override]  # one signature for the overloads argparse declares
        # argparse reports flags no parser took on the top level, whose --help lists none of
        # a command's flags: say it with the command's own hint instead.
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            command = (self.commands or {}).get(getattr(parsed, "command", None) or "")
            (command or self).error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed


def _run_arguments(p: argparse.ArgumentParser) -> None:
    """The flags of `case`, `run` and `prepare`: the case, its plan, where things go, and the
    cluster's."""
    p.add_argument("case", help="case name (folder under cases/) or path to its manifest.py")
    _plan_flags(p)
    _output_flags(p)
    _cluster_flags(p)


def _plan_flags(p: argparse.ArgumentParser) -> None:
    # Defaults that come from the manifest are None here, so that --resume can tell a flag
    # that was given (and would change the journal's plan) from one that was not.
    p.add_argument("--arch", help="build target (default: from the GPU, e.g. sm_90)")
    p.add_argument("--arms", help="comma-separated arms to run (default: the arms of the case's "
                   "main question; --deep: all)")
    p.add_argument("--deep", action="store_true",
                   help="every arm of the case, the mechanism and detail arms beyond its main "
                        "question (whose claims still get their trials first)")
    p.add_argument("--trials", type=positive_int, help="trials per arm (default: the manifest's)")
    p.add_argument("--duration", type=positive_float, help="seconds per trial (budget)")
    p.add_argument("--max-exposure", type=nonneg_int,
                   help="budget per trial in the case's exposure counter, e.g. cycles (0: none)")
    p.add_argument("--timeout", type=positive_float,
                   help="wall-clock limit per trial; the process group is killed after it")
    p.add_argument("--hang-after", type=positive_float, metavar="S",
                   help="no-progress limit: a trial whose counters have not moved for S seconds is "
                        "stopped then and recorded hung, with where its threads were (default: the "
                        "case's)")
    p.add_argument("--seed", type=nonneg_int, help="shuffle seed (default: random, recorded)")
    p.add_argument("--jobs", type=positive_int, help="trials at a time per GPU (each its own process; recorded)")
    p.add_argument("--gpus", help="'all' (every GPU, by UUID) or a list of UUIDs or indices: one worker set per GPU via CUDA_VISIBLE_DEVICES")
    p.add_argument("--decisive", action="store_true",
                   help="the decisive design (the default of `case` for a case with claims): a look "
                        "after any trial once one is due, each trial where it brings a decision "
                        "nearest, survivors capped at the exposure that decides; --max-trials per arm")
    p.add_argument("--fixed", action="store_true",
                   help="the fixed plan: every arm --trials times (default: the manifest's)")
    p.add_argument("--until-decided", action="store_true",
                   help="stop an arm once its comparison with the baseline is decided (group-sequential)")
    p.add_argument("--max-trials", type=positive_int, help="with --until-decided or --decisive: most trials per arm (default 25)")
    p.add_argument("--alpha-spending", choices=SPENDINGS,
                   help="with --decisive: how alpha is spent over the looks after the first "
                        "(halving, the default: each half of the one before; even: equal parts, "
                        "the design of runs that journaled no spending)")
    p.add_argument("--supported-share", type=alpha_value, metavar="W",
                   help="with --decisive: the share of each claim's level given to the direction "
                        "it states, the rest to the opposite (default 0.9; 0.5: a two-sided p, "
                        "the design of runs that journaled no share)")
    p.add_argument("--horizon", type=horizon_value, metavar="auto|none|X",
                   help="with --decisive: decide rate claims on exposure with trials as the unit, "
                        "each trial of their arms run to at most exposure X (auto, the default: "
                        "the X whose plan from the committed trials is shortest; none: the exact "
                        "test of two constant rates)")
    p.add_argument("--look-every", type=positive_int, help="with --until-decided: trials between looks (default 5)")
    p.add_argument("--alpha", type=alpha_value, help="with --until-decided: overall false-decision level (default 0.05)")
    p.add_argument("--priors-from", nargs="+", metavar="RESULT.json",
                   help="result documents (inside the repository) the plan's rates come from, in "
                        "place of the committed results chosen by rule (recorded either way)")


def _output_flags(p: argparse.ArgumentParser) -> None:
    """Where the journal, the build and the result are, and what the record keeps."""
    p.add_argument("--resume", metavar="JOURNAL", type=journal_path, help="continue an interrupted run from its journal")
    p.add_argument("--other-device", action="store_true",
                   help="with --resume: continue on a GPU or driver other than the journal's "
                        "(recorded in the journal)")
    p.add_argument("--old-journal", action="store_true",
                   help="with --resume: continue a journal from before the hash chain (format 2 "
                        "or older), whose lines nothing checks")
    p.add_argument("--journal", help="journal path (default: results/<case>/<stamp>_<gpu>_<host>.journal.jsonl)")
    p.add_argument("--out-dir", default="results", help="folder for journals and results")
    p.add_argument("--build-dir", default="build", help="prebuilt artifacts, inside the repository (default: build/)")
    p.add_argument("--artifact", action="append", type=artifact_override, metavar="NAME=PATH",
                   help="use this prebuilt file (inside the repository) instead of the built "
                        "artifact NAME; recorded with its sha256 (repeatable)")
    p.add_argument("--redact", action="store_true", help="drop the hostname and home paths from the record")
    p.add_argument("--no-record", action="store_true", help="only journal; record later with `gpurepro record`")
    p.add_argument("--force", action="store_true", help="let record replace an existing result document")
    p.add_argument("--rerun-of", metavar="RESULT.json",
                   help="the result document this run repeats (default: $GPUREPRO_RERUN_OF): "
                        "after the build, say which artifacts are identical to its own; exit 0 "
                        "when the verdict is reproduced, 6 when not, 125 when the trials could "
                        "not run (git bisect run's skip)")
    p.add_argument("--exit-status-file", help=argparse.SUPPRESS)  # for the nox sessions


def _cluster_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("cluster (Slurm)", "run the trials as Slurm job arrays and merge "
                             "them into one document (docs/cluster.md)")
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


def prog_name(argv0: str) -> str:
    """What the usage lines call the program: `gpurepro` when it was run by that name (the
    console script), `python -m gpurepro` otherwise."""
    return "gpurepro" if Path(argv0).name == "gpurepro" else "python -m gpurepro"


def _sibling(p: argparse.ArgumentParser, command: str) -> str:
    """The prog of another command beside ``p`` ("python -m gpurepro prepare" -> "... case")."""
    return f"{p.prog.rsplit(' ', 1)[0]} {command}"


def parser(prog: str = "python -m gpurepro") -> argparse.ArgumentParser:
    ap = Parser(
        prog=prog,
        description="Turn a GPU bug report into an experiment: build pinned artifacts, run isolated "
                    "trials, classify them, and record a schema-valid verdict.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--version", action="version", version=f"gpurepro {__version__}")
    sub = ap.add_subparsers(dest="command", required=True, metavar="command", parser_class=Parser)
    for commands in (_run_commands, _build_commands, _record_commands, _case_commands,
                     _reading_commands):
        commands(sub)
    ap.commands = dict(sub.choices)
    return ap


def _run_commands(sub: Any) -> None:
    """`case`, `run`, `prepare` (for nox) and `slurm-task` (for Slurm): gpurepro.cli.run."""
    p = sub.add_parser("case", help="build, run, record and report a case (what `nox -s <case>` runs)",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    _run_arguments(p)
    p.set_defaults(fn=run.cmd_case, decisive_by_default=True)

    # The same defaults as `case` (the main job's: the main question, the decisive design): a
    # GPU node runs from a prebuilt build/ exactly what `make <case>` runs where it builds.
    p = sub.add_parser("run", help="run (and record) a case from a prebuilt build/",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    _run_arguments(p)
    p.set_defaults(fn=run.cmd_run, decisive_by_default=True)

    # Internal commands, for nox and for Slurm: given no help=, argparse leaves them out of
    # `gpurepro --help`; their own --help still describes them.
    p = sub.add_parser("prepare", description="check a case's arguments; write its target and "
                       "pins (for the nox sessions; not for people)")
    _run_arguments(p)
    p.add_argument("--prepare-out", required=True, help="JSON file to write {target, pins} to")
    p.set_defaults(fn=run.cmd_prepare, decisive_by_default=True)
    # nox passes a case's flags through prepare first: a bad one is a `case` flag to the user.
    p.see = _sibling(p, "case")

    p = sub.add_parser("slurm-task", description="one array task of a cluster run (Slurm runs "
                       "it; not for people)")
    p.add_argument("spec", help="the round's task list, written by the submitting side")
    p.add_argument("--task", type=nonneg_int, help="array task (default: $SLURM_ARRAY_TASK_ID)")
    p.set_defaults(fn=run.cmd_slurm_task)
    p.see = _sibling(p, "run")  # it runs one array task of `run --slurm`


def _build_commands(sub: Any) -> None:
    """`build`, `target` and `pins`: a case's artifacts, its target here, its toolchain."""
    case_help = "case name (folder under cases/) or path to its manifest.py"
    arch_help = "build target, e.g. sm_90 (default: from this machine's GPU, else the case's first)"
    p = sub.add_parser("build", help="build a case's artifacts with the pinned toolchain")
    p.add_argument("case", help=case_help)
    p.add_argument("--arch", help=arch_help)
    p.add_argument("--build-dir", default="build",
                   help="where the artifacts go, inside the repository (default: build/)")
    p.add_argument("--python", metavar="X.Y", type=python_version,
                   help="the Python the trials run with, where not this one (a GPU node's): "
                        "the case's runtime wheels are downloaded for it")
    p.set_defaults(fn=run.cmd_build)

    p = sub.add_parser("target", help="print the build target for this machine's GPU (or --arch)")
    p.add_argument("case", help=case_help)
    p.add_argument("--arch", help="a target to check against the case's instead")
    p.set_defaults(fn=run.cmd_target)

    p = sub.add_parser("pins", help="print the PyPI requirements of a case for a target")
    p.add_argument("case", help=case_help)
    p.add_argument("--arch", help=arch_help)
    p.set_defaults(fn=run.cmd_pins)


def _record_commands(sub: Any) -> None:
    """`record`, `report`, `validate` and `scrub`: journals and documents."""
    p = sub.add_parser("record", help="journal(s) -> validated result document + report")
    p.add_argument("journal", nargs="+", help="one journal, or several shards of one plan")
    p.add_argument("--case", help="case (default: from the journal)")
    p.add_argument("--out", help="result path (default: beside the journal)")
    p.add_argument("--force", action="store_true", help="replace an existing result document")
    p.add_argument("--manifest-changed", action="store_true",
                   help="record with the case's manifest as it is now although its sha256 is not "
                        "the run's (recorded in the document)")
    p.add_argument("--old-journal", action="store_true",
                   help="record a journal from before the hash chain (format 2 or older), whose "
                        "lines nothing checks (the document says so)")
    p.set_defaults(fn=results.cmd_record)

    p = sub.add_parser("report", help="result document -> Markdown and plots")
    p.add_argument("result", metavar="RESULT.json", help="a result document (written by record)")
    p.add_argument("--out-dir", metavar="DIR",
                   help="write the Markdown and plots into DIR (default: beside the document)")
    p.set_defaults(fn=results.cmd_report)

    p = sub.add_parser("validate", help="check result documents: schema and meaning")
    p.add_argument("paths", nargs="*", help="files or folders (default: results/)")
    p.add_argument("--schema-only", action="store_true",
                   help="check the schema and the files named, not the meaning (claims and "
                   "verdict are not recomputed)")
    p.set_defaults(fn=results.cmd_validate)

    p = sub.add_parser("scrub", help="rewrite journals/documents: checkout paths relative, secrets dropped")
    p.add_argument("paths", nargs="+", metavar="FILE",
                   help="journals (.journal.jsonl) and result documents (.json), rewritten in place")
    p.add_argument("--redact", action="store_true", help="also apply --redact's rules")
    p.set_defaults(fn=results.cmd_scrub)


def _case_commands(sub: Any) -> None:
    """`calibrate`, `new` and `env`: a case's design, a new case, this machine."""
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
    p.add_argument("--alpha-spending", choices=SPENDINGS,
                   help="with --design-of a decisive run: simulate its design with this spending "
                        "over the later looks in place of the one it journaled")
    p.add_argument("--supported-share", type=alpha_value, metavar="W",
                   help="with --design-of a decisive run: simulate its design with this share of "
                        "each claim's level for its stated direction in place of the journaled one")
    p.add_argument("--design-of", metavar="RESULT.json",
                   help="the design of that recorded run: its arms, trials, looks, budget and "
                        "exploratory claims, with rates from its own trials (unless --from)")
    p.add_argument("--scenarios", type=name_list, metavar="KINDS",
                   help="comma-separated kinds of scenario: null (the global null), arm_null "
                        "(each arm null in turn, the others as observed), margin (timed claims "
                        "at their margins), observed (power) (default: all four)")
    p.add_argument("--processes", type=name_list, metavar="NAMES",
                   help="comma-separated crash processes the null scenarios draw the baseline's "
                        "failures from: poisson (the run's own rates), exponential, weibull, "
                        "lomax, crossing, empirical (fitted to the committed baseline trials) "
                        "(default: poisson,exponential,weibull,lomax,crossing)")
    p.add_argument("--processes-from", nargs="+", metavar="RESULT.json",
                   help="result documents whose baseline trials the crash processes are fitted "
                        "to (default: the committed results on the same GPU model at the same "
                        "trials at a time as the design's document)")
    p.add_argument("--workers", type=positive_int, help="processes (default: the CPUs available)")
    p.add_argument("--exit-status-file", help=argparse.SUPPRESS)  # for the nox session
    p.set_defaults(fn=results.cmd_calibrate)

    p = sub.add_parser("new", help="scaffold a new case folder cases/<name>/ that builds and runs")
    p.add_argument("name", help="lower-case name: the folder and the nox session")
    p.add_argument("--kind", choices=("crash", "wrong-result", "slowdown", "python", "python-value"),
                   default="crash",
                   help="crash: a native host loop (a crash, hang or CUDA error); wrong-result: "
                        "a cubin launched by the stock driver and its outputs checked against a "
                        "reference; slowdown: two builds of a kernel timed with CUDA events, "
                        "outputs checked against the reference build's; python: the reporter's "
                        "Python script run as filed under pinned runtime packages, its exit, "
                        "exception or crash classified; python-value: the same across releases "
                        "of a runtime package, the value it prints checked against the driver's "
                        "own answer (default: crash)")
    p.add_argument("--exit-status-file", help=argparse.SUPPRESS)  # for the nox session
    p.set_defaults(fn=results.cmd_new)

    p = sub.add_parser("env", help="print the environment fingerprint")
    p.add_argument("--redact", action="store_true",
                   help="replace the hostname and drop home paths, as a run's --redact does")
    p.set_defaults(fn=results.cmd_env)


def _reading_commands(sub: Any) -> None:
    """`compare`, `issue`, `matrix` and `index`: what documents say, side by side or posted."""
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
    p.add_argument("--any-conditions", action="store_true",
                   help="compare timed runs whose GPU clocks or temperature differ beyond the "
                        "stated tolerances (refused otherwise); the comparison says so")
    p.add_argument("--exit-status-file", help=argparse.SUPPRESS)  # for the nox session
    p.set_defaults(fn=results.cmd_compare)

    p = sub.add_parser("issue", help="result document -> the body of a GitHub issue comment")
    p.add_argument("result", metavar="RESULT.json", help="the result document the comment is about")
    p.add_argument("--out", metavar="FILE", help="write the body to FILE (default: print it)")
    p.add_argument("--matrix", metavar="MATRIX.json",
                   help="add the case's toolchain matrix table (a matrix document) as a <details> block")
    p.add_argument("--allow-invalid", action="store_true",
                   help="make the comment of a document whose claims, verdict or summaries are "
                        "not what its trials give (refused otherwise, as validate fails it), "
                        "its head saying so")
    p.add_argument("--exit-status-file", help=argparse.SUPPRESS)  # for the nox session
    p.set_defaults(fn=results.cmd_issue)

    from .history import add_parser as add_history_parser

    add_history_parser(sub)

    from .matrix import add_parser as add_matrix_parser

    add_matrix_parser(sub).set_defaults(fn=results.cmd_matrix)

    from .bisect import add_parser as add_bisect_parser

    add_bisect_parser(sub)

    from .pack import add_parser as add_pack_parser

    add_pack_parser(sub)

    from .plan import add_parser as add_plan_parser

    add_plan_parser(sub)

    p = sub.add_parser("index", help="regenerate results/README.md, the index of result documents")
    p.add_argument("folder", nargs="?", default="results", help="the results folder (default: results/)")
    p.set_defaults(fn=results.cmd_index)
