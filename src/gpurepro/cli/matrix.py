"""`python -m gpurepro matrix <stage>`: the toolchain matrix's commands (see the package doc).

`cell` and `run` use the standard library only (a cell's toolchain environment, a GPU node);
`collect`, `assemble` and `table` import the analysis packages when they run.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import UsageError
from ..model.files import write_atomic
from ..sweep.cells import run_cell
from ..sweep.choose import Grid, Options
from ..sweep.gpu import run_gpu_stage
from ..sweep.model import MATRIX, read_document
from ..sweep.spec import load
from ..sweep.table import markdown
from .args import checked_build_dir, repository_root, show


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _build_dir(args: argparse.Namespace, root: Path) -> Path | None:
    return root / checked_build_dir(args.build_dir, root) if args.build_dir else None


def cmd_cell(args: argparse.Namespace, root: Path) -> int:
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
    text = markdown(read_document(Path(args.document), MATRIX))
    if args.out:
        write_atomic(Path(args.out), text)
        show(f"table: {args.out}")
    else:
        sys.stdout.write(text)
    return 0


def cmd(args: argparse.Namespace) -> int:
    return int(args.stage_fn(args, repository_root()))
