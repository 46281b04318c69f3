"""The command line's parser: every command and its flags, each command's function set as
``fn``, named (``Command``): a command's module is imported when the command runs, so what it
imports (the analysis packages, for most commands on documents) is its own and imported at
its top, and `run` on a GPU node imports nothing they need. A usage error is one line (and
exit 2), not the whole usage block.
"""

from __future__ import annotations

import argparse
import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from .. import __version__
from ..errors import EXIT_USAGE
from ..model.design import SPENDINGS
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

# What other modules use; the rest is this module's own.
__all__ = ["Command", "parser", "prog_name"]

# The bisection's stages (gpurepro.cli.bisect).
STAGES = ("all", "cpu", "gpu", "assemble")


@dataclass(frozen=True)
class Command:
    """A command's function by name: ``gpurepro.cli.<module>.<name>``, imported when it runs."""

    module: str
    name: str

    def __call__(self, *args: Any) -> int:
        fn = getattr(importlib.import_module(f"{__package__}.{self.module}"), self.name)
        return int(fn(*args))


def arm_list(text: str) -> tuple[str, ...]:
    """A comma-separated list of arms (``--arms`` of `matrix run`)."""
    arms = tuple(a.strip() for a in text.split(",") if a.strip())
    if not arms:
        raise argparse.ArgumentTypeError("expected a comma-separated list of arms")
    return arms


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
        namespace_out: argparse.Namespace = parsed
        return namespace_out


if TYPE_CHECKING:
    _Subcommands = argparse._SubParsersAction[Parser]


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
    p.add_argument("--runtime-index", metavar="INDEX.json",
                   help="the arms' runtime wheels from this index (inside the repository) instead "
                        "of the build's: one release of a runtime axis (gpurepro bisect); "
                        "recorded with its sha256")
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


def _run_commands(sub: _Subcommands) -> None:
    """`case`, `run`, `prepare` (for nox) and `slurm-task` (for Slurm): gpurepro.cli.run."""
    p = sub.add_parser("case", help="build, run, record and report a case (what `nox -s <case>` runs)",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    _run_arguments(p)
    p.set_defaults(fn=Command("run", "cmd_case"), decisive_by_default=True)

    # The same defaults as `case` (the main job's: the main question, the decisive design): a
    # GPU node runs from a prebuilt build/ exactly what `make <case>` runs where it builds.
    p = sub.add_parser("run", help="run (and record) a case from a prebuilt build/",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    _run_arguments(p)
    p.set_defaults(fn=Command("run", "cmd_run"), decisive_by_default=True)

    # Internal commands, for nox and for Slurm: given no help=, argparse leaves them out of
    # `gpurepro --help`; their own --help still describes them.
    p = sub.add_parser("prepare", description="check a case's arguments; write its target and "
                       "pins (for the nox sessions; not for people)")
    _run_arguments(p)
    p.add_argument("--prepare-out", required=True, help="JSON file to write {target, pins} to")
    p.set_defaults(fn=Command("run", "cmd_prepare"), decisive_by_default=True)
    # nox passes a case's flags through prepare first: a bad one is a `case` flag to the user.
    p.see = _sibling(p, "case")

    p = sub.add_parser("slurm-task", description="one array task of a cluster run (Slurm runs "
                       "it; not for people)")
    p.add_argument("spec", help="the round's task list, written by the submitting side")
    p.add_argument("--task", type=nonneg_int, help="array task (default: $SLURM_ARRAY_TASK_ID)")
    p.set_defaults(fn=Command("run", "cmd_slurm_task"))
    p.see = _sibling(p, "run")  # it runs one array task of `run --slurm`


def _build_commands(sub: _Subcommands) -> None:
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
    p.set_defaults(fn=Command("run", "cmd_build"))

    p = sub.add_parser("target", help="print the build target for this machine's GPU (or --arch)")
    p.add_argument("case", help=case_help)
    p.add_argument("--arch", help="a target to check against the case's instead")
    p.set_defaults(fn=Command("run", "cmd_target"))

    p = sub.add_parser("pins", help="print the PyPI requirements of a case for a target")
    p.add_argument("case", help=case_help)
    p.add_argument("--arch", help=arch_help)
    p.set_defaults(fn=Command("run", "cmd_pins"))


def _record_commands(sub: _Subcommands) -> None:
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
    p.set_defaults(fn=Command("record", "cmd_record"))

    p = sub.add_parser("report", help="result document -> Markdown and plots")
    p.add_argument("result", metavar="RESULT.json", help="a result document (written by record)")
    p.add_argument("--out-dir", metavar="DIR",
                   help="write the Markdown and plots into DIR (default: beside the document)")
    p.set_defaults(fn=Command("results", "cmd_report"))

    p = sub.add_parser("validate", help="check result documents: schema and meaning")
    p.add_argument("paths", nargs="*", help="files or folders (default: results/)")
    p.add_argument("--schema-only", action="store_true",
                   help="check the schema and the files named, not the meaning (claims and "
                   "verdict are not recomputed)")
    p.set_defaults(fn=Command("results", "cmd_validate"))

    p = sub.add_parser("scrub", help="rewrite journals/documents: checkout paths relative, secrets dropped")
    p.add_argument("paths", nargs="+", metavar="FILE",
                   help="journals (.journal.jsonl) and result documents (.json), rewritten in place")
    p.add_argument("--redact", action="store_true", help="also apply --redact's rules")
    p.set_defaults(fn=Command("scrub", "cmd_scrub"))


def _case_commands(sub: _Subcommands) -> None:
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
    p.set_defaults(fn=Command("calibrate", "cmd_calibrate"))

    p = sub.add_parser("new", help="scaffold a new case folder cases/<name>/ that builds and runs")
    p.add_argument("name", help="lower-case name: the folder and the nox session")
    p.add_argument("--kind", choices=("crash", "wrong-result", "slowdown", "python", "python-value",
                                         "runtime-releases"),
                   default="crash",
                   help="crash: a native host loop (a crash, hang or CUDA error); wrong-result: "
                        "a cubin launched by the stock driver and its outputs checked against a "
                        "reference; slowdown: two builds of a kernel timed with CUDA events, "
                        "outputs checked against the reference build's; python: the reporter's "
                        "Python script run as filed under pinned runtime packages, its exit, "
                        "exception or crash classified; python-value: the same across releases "
                        "of a runtime package, the value it prints checked against the driver's "
                        "own answer; runtime-releases: the script under releases of a runtime "
                        "package as a factor's levels, with an axis gpurepro bisect runs release "
                        "by release (default: crash)")
    p.add_argument("--exit-status-file", help=argparse.SUPPRESS)  # for the nox session
    p.set_defaults(fn=Command("new", "cmd_new"))

    p = sub.add_parser("env", help="print the environment fingerprint")
    p.add_argument("--redact", action="store_true",
                   help="replace the hostname and drop home paths, as a run's --redact does")
    p.set_defaults(fn=Command("env", "cmd_env"))


def _reading_commands(sub: _Subcommands) -> None:
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
    p.set_defaults(fn=Command("results", "cmd_compare"))

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
    p.set_defaults(fn=Command("results", "cmd_issue"))

    _history_command(sub)

    _matrix_command(sub).set_defaults(fn=Command("matrix", "cmd"))

    _bisect_command(sub)

    _pack_command(sub)

    _plan_command(sub)

    p = sub.add_parser("index", help="regenerate results/README.md, the index of result documents")
    p.add_argument("folder", nargs="?", default="results", help="the results folder (default: results/)")
    p.set_defaults(fn=Command("index", "cmd_index"))


def _history_command(sub: _Subcommands) -> argparse.ArgumentParser:
    p = sub.add_parser("history", help="a case's runs across drivers, GPUs and toolchains: rates, "
                       "time ratios, claim decisions, a table and a plot, and a regression check")
    p.add_argument("what", nargs="+", metavar="CASE",
                   help="a case's name (results/CASE/), a folder of result documents, or two or "
                        "more result documents")
    p.add_argument("--results", metavar="DIR",
                   help="where a case's folder is (default: results/ of this checkout)")
    p.add_argument("--arms", metavar="A,B",
                   help="the arms shown and checked (default: the newest run's)")
    p.add_argument("--against", choices=("previous", "first", "same-gpu"), default="previous",
                   help="the earlier run the newest is checked against: the run before it that "
                        "has the arm (default), the first, or the run before it on the same GPU")
    p.add_argument("--rate-factor", type=float, default=1.0, metavar="F",
                   help="a failure rate regressed when it is above F times the earlier run's and "
                        "the difference is significant (default 1.0)")
    p.add_argument("--time-factor", type=float, default=1.05, metavar="F",
                   help="a time ratio regressed when the arm became slower against its reference "
                        "by more than F, significantly (default 1.05: 5%%)")
    p.add_argument("--alpha", type=float, default=0.05,
                   help="the check's level, split over the comparisons it makes (default 0.05)")
    p.add_argument("--fail-on-regression", action="store_true",
                   help="exit 1 when a rate or a time ratio of the newest run regressed")
    p.add_argument("--format", choices=("markdown", "json", "terminal"), default="markdown",
                   help="Markdown tables to paste (default), one JSON object, or terminal tables")
    p.add_argument("--plot", metavar="FILE.png",
                   help="also draw the history (each arm's rate run by run, time ratios below), "
                        "SVG beside it")
    p.set_defaults(fn=Command("history", "cmd"))
    return p


def _matrix_command(sub: _Subcommands) -> argparse.ArgumentParser:
    """The `matrix` command and its stages; each stage sets ``stage_fn(args, root)``."""
    p = sub.add_parser("matrix", help="a case's toolchain matrix: which releases emit what, and "
                       "(on a GPU) how each distinct build fares")
    stages = p.add_subparsers(dest="stage", required=True, metavar="stage",
                              parser_class=type(p))

    case_help = "the case with a matrix.py (e.g. tile_unload_race)"
    s = stages.add_parser("cell", help="one cell, inside its toolchain environment (nox -s tile_matrix runs it)")
    s.add_argument("case", help=case_help)
    s.add_argument("--release", required=True, help="front-end release, e.g. cuda-tile 1.7.0")
    s.add_argument("--family", required=True, help="toolchain family, e.g. 13.5")
    s.add_argument("--install-failed", action="store_true", help="the installer failed (its log says why)")
    s.add_argument("--install-log", help="the installer's output")
    s.add_argument("--build-dir", help="inside the repository (default: build/matrix/<case>/<target>)")
    s.set_defaults(stage_fn=Command("matrix", "cmd_cell"))

    s = stages.add_parser("collect", help="cell records + ELF facts -> the CPU matrix document")
    s.add_argument("case", help=case_help)
    s.add_argument("--out", help="document path (default: <build root>/matrix.cpu.json)")
    s.add_argument("--build-dir", help="where the cells built (default: build/matrix/<case>/<target>)")
    s.set_defaults(stage_fn=Command("matrix", "cmd_collect"))

    s = stages.add_parser("run", help="GPU stage: the harness on each distinct cubin (standard library only)")
    s.add_argument("document", help="a matrix document (the CPU stage's, or an assembled one)")
    s.add_argument("--out", required=True, help="folder for the journals and sweep-gpu.json")
    s.add_argument("--arms", type=arm_list, help="arms for every Tile IR cubin (default: the matrix's, baseline)")
    s.add_argument("--newest-arms", type=arm_list, help="arms for the newest cell's cubin (default: --arms), "
                   "e.g. baseline,lock-unload-launch")
    s.add_argument("--budget-s", type=positive_float, default=420.0,
                   help="wall-clock budget: a run whose trials would not fit is not started, and "
                        "the document says so (default 420: the stage ends within 8 minutes)")
    s.add_argument("--seed", type=nonneg_int, default=0, help="plan seed of the first run (then +1 each)")
    s.set_defaults(stage_fn=Command("matrix", "cmd_run"))

    s = stages.add_parser("assemble", help="CPU document + GPU stage output -> results/<case>/matrix_<stamp>_<gpu>.json")
    s.add_argument("document", help="the CPU matrix document")
    s.add_argument("gpu_out", nargs="?", help="the GPU stage's --out folder (none: not run)")
    s.add_argument("--out-dir", default="results", help="results folder (default: results/)")
    s.add_argument("--force", action="store_true", help="replace an existing document")
    s.set_defaults(stage_fn=Command("matrix", "cmd_assemble"))

    s = stages.add_parser("table", help="the README table of a matrix document (Markdown)")
    s.add_argument("document", help="an assembled matrix document (results/<case>/matrix_*.json)")
    s.add_argument("--out", help="write it to this file (default: print)")
    s.set_defaults(stage_fn=Command("matrix", "cmd_table"))
    for stage in stages.choices.values():
        stage.add_argument("--exit-status-file", help=argparse.SUPPRESS)  # for nox
    return p


def _bisect_command(sub: _Subcommands) -> argparse.ArgumentParser:
    p = sub.add_parser("bisect", help="a case over every release of one toolchain package: build "
                       "each on the CPU, run the fewest that pin every boundary on a GPU")
    p.add_argument("case", nargs="?", help="the case (a name under cases/, or its folder)")
    p.add_argument("--axis", help="the manifest's axis (Case.axes): a toolchain's releases "
                   "(Axis) or a runtime package's (RuntimeAxis)")
    p.add_argument("--arch", help="build target (default: the case's only one)")
    p.add_argument("--stage", choices=STAGES, default="all",
                   help="cpu, gpu, assemble, or all of them one after the other (default)")
    p.add_argument("--exhaustive", action="store_true",
                   help="GPU stage: run every distinct artifact, not only those the search needs")
    p.add_argument("--document", help="the CPU document (default: build/bisect/<case>/<axis>/<target>/bisect.cpu.json)")
    p.add_argument("--gpu-out", help="the GPU stage's folder (default: build/bisect/<case>/<axis>/<target>/gpu)")
    p.add_argument("--out-dir", default="results", help="assemble: results folder (default: results/)")
    p.add_argument("--force", action="store_true", help="assemble: replace an existing document")
    p.add_argument("--only", help="CPU stage: a comma-separated subset of the releases PyPI lists "
                   "in the range (recorded in the document)")
    p.add_argument("--build-dir", default="build", help="the case's build folder (default: build/)")
    p.add_argument("--cache", help="wheel cache (default: build/releases, the build's)")
    p.add_argument("--python", metavar="X.Y",
                   help="CPU stage of a runtime axis: the wheels for this Python, the GPU node's "
                        "(default: the manifest's Runtime.python, else this interpreter's)")
    p.add_argument("--seed", type=nonneg_int, default=0, help="GPU stage: plan seed of the first run (+1 each)")
    p.add_argument("--table", metavar="DOC.json", help="print a bisection document's Markdown and exit")
    p.add_argument("--exit-status-file", help=argparse.SUPPRESS)  # for nox
    p.set_defaults(fn=Command("bisect", "cmd"))
    return p


def _pack_command(sub: _Subcommands) -> argparse.ArgumentParser:
    p = sub.add_parser("pack", help="build a case and pack it for an offline GPU node: one "
                       "archive whose run.py runs it with the standard library")
    p.add_argument("case", help="case name (folder under cases/) or path to its manifest.py")
    p.add_argument("--arch", help="build target (default: the case's only one; of several, its "
                   "Hopper one, compute capability 9.x: H100, H200)")
    p.add_argument("--arms", help="comma-separated arms the node runs, whose runtime wheels "
                   "alone the pack carries (default: the case's main question's, as `make "
                   "<case>`, with every arm's wheels)")
    p.add_argument("--deep", action="store_true", help="the node runs every arm of the case")
    p.add_argument("--redact", action="store_true",
                   help="the node's run drops the hostname and home paths from the record")
    p.add_argument("--bisect", action="append", metavar="AXIS",
                   help="also carry this axis's CPU stage (bisect --stage cpu first); the node "
                        "runs its GPU stage after the case (repeatable)")
    p.add_argument("--python", metavar="X.Y", type=python_version,
                   help="the node's Python, where not this one: the case's runtime wheels are "
                        "downloaded for it (run.py refuses another)")
    p.add_argument("--out", metavar="FILE.tar.gz",
                   help="the archive (default: build/packs/<case>-<target>-<commit>.tar.gz)")
    p.add_argument("--build-dir", default="build", help="the case's build folder (default: build/)")
    p.add_argument("--exit-status-file", help=argparse.SUPPRESS)  # for nox
    p.add_argument("--target-out", help=argparse.SUPPRESS)  # for nox: the target, no build
    p.set_defaults(fn=Command("pack", "cmd"))
    return p


def _plan_command(sub: _Subcommands) -> argparse.ArgumentParser:
    p = sub.add_parser("plan", help="print a run's trials and expected GPU time before any GPU "
                       "is used (nothing is built or run)")
    _run_arguments(p)
    p.add_argument("--gpu-model", metavar="NAME", default=None,
                   help="the GPU model the run will be on, as result documents name it (e.g. "
                        "'NVIDIA H100 80GB HBM3'): an automatic horizon is chosen from that "
                        "model's committed trials, as a run on it does (default: every model's)")
    p.set_defaults(fn=Command("plan", "cmd"), decisive_by_default=True)
    return p
