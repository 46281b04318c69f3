"""`python -m gpurepro history CASE`: every committed run of a case side by side, oldest first,
with a regression check of the newest run that can fail CI (gpurepro.report.history).

CASE is a case's name (its documents under results/CASE/), a folder of result documents, or
result documents themselves (two or more). Matrix, bisection and benchmark documents in a folder
are left out; a case with fewer than two result documents is one line and exit 2.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ..errors import EXIT_ERROR, EXIT_OK, CompareError, UsageError
from .args import repository_root, say


def add_parser(sub: Any) -> argparse.ArgumentParser:
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
    p.set_defaults(fn=cmd)
    return p


def _documents(what: list[str], results: Path) -> list[Path]:
    paths: list[Path] = []
    for item in what:
        path = Path(item)
        if path.suffix == ".json" and not path.is_dir():
            if not path.is_file():
                raise UsageError(f"{item}: no such file")
            paths.append(path)
            continue
        folder = path if path.is_dir() else results / item
        if not folder.is_dir():
            raise UsageError(f"{item}: neither a result document nor a case with a folder under "
                             f"{results}")
        found = []
        for doc in sorted(folder.glob("*.json")):
            if doc.name.endswith(".pyperf.json"):
                continue
            try:
                schema = str(json.loads(doc.read_text()).get("schema", ""))
            except (OSError, ValueError, AttributeError):
                continue
            if schema.startswith("gpurepro/result"):
                found.append(doc)
        if len(found) < 2 and len(what) == 1:
            raise UsageError(f"{item}: history needs two or more result documents of the case, "
                             f"and its folder holds {len(found)}")
        paths += found
    return paths


def cmd(args: argparse.Namespace) -> int:
    from ..report.history import history, markdown, plot, terminal
    from .results import _read_document

    results = Path(args.results) if args.results else repository_root() / "results"
    paths = _documents(args.what, results)
    docs = [_read_document(p) for p in paths]
    arms = [a for a in (args.arms or "").split(",") if a] or None
    try:
        h = history(docs, paths, arms=arms, against=args.against, rate_factor=args.rate_factor,
                    time_factor=args.time_factor, alpha=args.alpha)
    except CompareError as exc:
        raise UsageError(str(exc)) from None
    if args.format == "json":
        print(json.dumps(h.as_json(), indent=2))
    elif args.format == "terminal":
        from rich.console import Console

        Console().print(terminal(h))
    else:
        print(markdown(h), end="")
    if args.plot:
        drawn = plot(h, Path(args.plot))
        say(f"plot: {args.plot}" if drawn else "plot: nothing to draw (no arm with a rate)")
    if h.regressions:
        say(f"{len(h.regressions)} regression(s) in {h.runs[-1].label}: "
            + "; ".join(f"{c.kind} {c.name}" for c in h.regressions))
    return EXIT_ERROR if args.fail_on_regression and h.regressions else EXIT_OK
