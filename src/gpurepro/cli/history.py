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

from ..errors import EXIT_ERROR, EXIT_OK, CompareError, UsageError
from ..report.history import history, markdown, plot, terminal
from .args import repository_root, say
from .results import _read_document


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
