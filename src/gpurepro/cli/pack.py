"""`python -m gpurepro pack CASE`: the case built here, packed for an offline GPU node.

The build (the pinned toolchain: `nox -s pack -- CASE` installs it) and then the archive
(gpurepro.pack.archive). On the node: ``tar xzf PACK && cd <folder> && python3 run.py``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..case.load import load_case
from ..errors import EXIT_OK, UsageError
from ..pack.archive import make_pack
from .args import (
    checked_arms,
    checked_build_dir,
    pack_target,
    repository_root,
    run_scope,
    say,
    show,
)
from .run import do_build


def cmd(args: argparse.Namespace) -> int:
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
                     args.python, say=say, arms=arms)
    shown = path.relative_to(root) if path.is_relative_to(root) else path
    show(f"pack: {shown}")
    say(f"on the GPU node: tar xzf {path.name} && cd {top} && python3 run.py")
    return EXIT_OK


