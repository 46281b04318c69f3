"""`python -m gpurepro index [FOLDER]`: results/README.md, the index of the result documents,
written again."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import EXIT_OK, UsageError
from ..report.index import write_index
from .args import show


def cmd_index(args: argparse.Namespace) -> int:
    """Regenerate results/README.md, the index of every result document."""
    folder = Path(args.folder)
    if not folder.is_dir():
        raise UsageError(f"{folder}: no such folder")
    path, changed = write_index(folder)
    show(f"{'wrote' if changed else 'unchanged'} {path}")
    return EXIT_OK
