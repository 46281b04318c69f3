"""`python -m gpurepro matrix <stage>`: the toolchain matrix's commands (see the package doc).

`cell` and `run` use the standard library only (a cell's toolchain environment, a GPU node);
`collect`, `assemble` and `table` import the analysis packages when they run.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import UsageError
from .args import checked_build_dir, nonneg_int, positive_float, show


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _arms(text: str) -> tuple[str, ...]:
    arms = tuple(a.strip() for a in text.split(",") if a.strip())
    if not arms:
        raise argparse.ArgumentTypeError("expected a comma-separated list of arms")
    return arms


def _build_dir(args: argparse.Namespace, root: Path) -> Path | None:
    return root / checked_build_dir(args.build_dir, root) if args.build_dir else None


def cmd_cell(args: argparse.Namespace, root: Path) -> int:
    from ..sweep.cells import run_cell
    from ..sweep.spec import load

    spec = load(args.case, root)
    cell = spec.cell(args.release, args.family)
    log = Path(args.install_log).read_text(errors="replace") if args.install_log else ""
    if args.install_failed and not log:
        raise UsageError("--install-failed needs --install-log (the installer's output)")
    record = run_cell(spec, cell, root, install_failed=args.install_failed, install_log=log,
                      into=_build_dir(args, root))
    if record["install"]["status"] != "ok":
        _say(f"{cell.id}: install failed: {record['install']['reason']}")
    for e in record["exports"]:
        _say(f"{cell.id} {e['variant']}: " + (f"sha256 {e['sha256'][:16]}" if e["status"] == "ok"
                                              else f"failed: {e['reason']}"))
    return 0


def cmd_collect(args: argparse.Namespace, root: Path) -> int:
    from ..sweep.collect import write_cpu_document

    path = write_cpu_document(args.case, root, Path(args.out) if args.out else None,
                              into=_build_dir(args, root))
    show(f"CPU matrix document: {path.relative_to(root) if path.is_relative_to(root) else path}")
    return 0


def cmd_run(args: argparse.Namespace, root: Path) -> int:
    from ..sweep.choose import Grid, Options
    from ..sweep.gpu import run_gpu_stage
    from ..sweep.model import MATRIX, read_document

    opts = Options(arms=args.arms, newest_arms=args.newest_arms, budget_s=args.budget_s,
                   seed=args.seed)
    choice = Grid(read_document(Path(args.document), MATRIX), opts)
    return run_gpu_stage(Path(args.document), Path(args.out), root, choice, seed=args.seed)


def cmd_assemble(args: argparse.Namespace, root: Path) -> int:
    from ..sweep.assemble import write_document

    path = write_document(Path(args.document), Path(args.gpu_out) if args.gpu_out else None, root,
                          Path(args.out_dir), force=args.force)
    show(f"matrix document: {path.relative_to(root) if path.is_relative_to(root) else path}")
    return 0


def cmd_table(args: argparse.Namespace, root: Path) -> int:
    from ..sweep.model import MATRIX, read_document
    from ..sweep.table import markdown

    text = markdown(read_document(Path(args.document), MATRIX))
    if args.out:
        from ..model.files import write_atomic

        write_atomic(Path(args.out), text)
        show(f"table: {args.out}")
    else:
        sys.stdout.write(text)
    return 0


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
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
    s.set_defaults(stage_fn=cmd_cell)

    s = stages.add_parser("collect", help="cell records + ELF facts -> the CPU matrix document")
    s.add_argument("case", help=case_help)
    s.add_argument("--out", help="document path (default: <build root>/matrix.cpu.json)")
    s.add_argument("--build-dir", help="where the cells built (default: build/matrix/<case>/<target>)")
    s.set_defaults(stage_fn=cmd_collect)

    s = stages.add_parser("run", help="GPU stage: the harness on each distinct cubin (standard library only)")
    s.add_argument("document", help="a matrix document (the CPU stage's, or an assembled one)")
    s.add_argument("--out", required=True, help="folder for the journals and sweep-gpu.json")
    s.add_argument("--arms", type=_arms, help="arms for every Tile IR cubin (default: the matrix's, baseline)")
    s.add_argument("--newest-arms", type=_arms, help="arms for the newest cell's cubin (default: --arms), "
                   "e.g. baseline,lock-unload-launch")
    s.add_argument("--budget-s", type=positive_float, default=420.0,
                   help="wall-clock budget: a run whose trials would not fit is not started, and "
                        "the document says so (default 420: the stage ends within 8 minutes)")
    s.add_argument("--seed", type=nonneg_int, default=0, help="plan seed of the first run (then +1 each)")
    s.set_defaults(stage_fn=cmd_run)

    s = stages.add_parser("assemble", help="CPU document + GPU stage output -> results/<case>/matrix_<stamp>_<gpu>.json")
    s.add_argument("document", help="the CPU matrix document")
    s.add_argument("gpu_out", nargs="?", help="the GPU stage's --out folder (none: not run)")
    s.add_argument("--out-dir", default="results", help="results folder (default: results/)")
    s.add_argument("--force", action="store_true", help="replace an existing document")
    s.set_defaults(stage_fn=cmd_assemble)

    s = stages.add_parser("table", help="the README table of a matrix document (Markdown)")
    s.add_argument("document", help="an assembled matrix document (results/<case>/matrix_*.json)")
    s.add_argument("--out", help="write it to this file (default: print)")
    s.set_defaults(stage_fn=cmd_table)
    for stage in stages.choices.values():
        stage.add_argument("--exit-status-file", help=argparse.SUPPRESS)  # for nox
    return p
