"""`python -m gpurepro scrub PATH...`: committed journals and documents rewritten with the
recording rules of today."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import EXIT_OK, UsageError
from ..record.scrub import scrub_file
from .args import repository_root, show


def cmd_scrub(args: argparse.Namespace) -> int:
    """Rewrite committed journals and documents with the recording rules of today."""
    root = repository_root()
    changed = 0
    for p in map(Path, args.paths):
        if not p.is_file():
            raise UsageError(f"{p}: not a file")
        if scrub_file(p, root, redact=args.redact):
            changed += 1
            show(f"rewritten {p}")
        else:
            show(f"unchanged {p}")
    show(f"{changed} of {len(args.paths)} files rewritten")
    return EXIT_OK
