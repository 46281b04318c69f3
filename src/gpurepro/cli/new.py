"""`python -m gpurepro new NAME --kind KIND`: a new case folder from the scaffold of its kind
(gpurepro.case.scaffold)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..case.load import find_repo_root
from ..case.scaffold import create
from ..errors import EXIT_OK, UsageError
from .args import say, show


def cmd_new(args: argparse.Namespace) -> int:
    root = find_repo_root(Path.cwd())
    if root is None:
        raise UsageError(f"`gpurepro new` writes cases/{args.name}/ into a gpurepro checkout, and "
                         f"{Path.cwd()} is not inside one (no cases/ and native/ here or above): "
                         f"run it from the clone")
    for path in create(args.name, root, args.kind):
        show(f"wrote {path.relative_to(root)}")
    say(f"next: make plan CASE={args.name}   (its trials and expected GPU time, no GPU used); "
        f"make {args.name.replace('_', '-')} ARGS='--arch sm_90'   (builds; runs where an NVIDIA "
        f"GPU is)")
    return EXIT_OK
