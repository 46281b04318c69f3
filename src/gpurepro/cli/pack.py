"""`python -m gpurepro pack CASE`: the case built here, packed for an offline GPU node.

The build (the pinned toolchain: `nox -s pack -- CASE` installs it) and then the archive
(gpurepro.pack.archive). On the node: ``tar xzf PACK && cd <folder> && python3 run.py``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..errors import EXIT_OK, UsageError
from .args import (
    checked_arms,
    checked_build_dir,
    pack_target,
    python_version,
    repository_root,
    run_scope,
    say,
    show,
)


def cmd(args: argparse.Namespace) -> int:
    from ..case.load import load_case
    from ..pack.archive import make_pack
    from .run import do_build

    root = repository_root()
    case = load_case(args.case, root)
    target, why = pack_target(case, args.arch)
    if args.target_out:  # for the nox session: the target and its pins, nothing built
        Path(args.target_out).write_text(json.dumps(
            {"target": target, "pins": case.pins_for(target)}) + "\n")
        return EXIT_OK
    if why:
        say(why)
    arms = checked_arms(case, args.arms)
    run_scope(case, arms, args.deep)  # --arms and --deep, refused together as `run` refuses them
    for axis in args.bisect or []:
        if axis not in case.axes:
            raise UsageError(f"--bisect {axis}: {case.name} declares no such axis "
                             f"(Case.axes: {', '.join(case.axes) or 'none'})")
    build_dir = checked_build_dir(args.build_dir, root)
    do_build(case, target, root, build_dir, args.python)
    run_args = [*(["--arms", ",".join(arms)] if arms else []), *(["--deep"] if args.deep else []),
                *(["--redact"] if args.redact else [])]
    out = Path(args.out).resolve() if args.out else None
    path, top = make_pack(case, target, root, build_dir, out, run_args, args.bisect or [],
                     args.python, say=say)
    shown = path.relative_to(root) if path.is_relative_to(root) else path
    show(f"pack: {shown}")
    say(f"on the GPU node: tar xzf {path.name} && cd {top} && python3 run.py")
    return EXIT_OK


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("pack", help="build a case and pack it for an offline GPU node: one "
                       "archive whose run.py runs it with the standard library")
    p.add_argument("case", help="case name (folder under cases/) or path to its manifest.py")
    p.add_argument("--arch", help="build target (default: the case's only one; of several, its "
                   "Hopper one, compute capability 9.x: H100, H200)")
    p.add_argument("--arms", help="comma-separated arms the node runs (default: the case's main "
                   "question's, as `make <case>`)")
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
    p.set_defaults(fn=cmd)
    return p
