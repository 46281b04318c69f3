"""Journal(s) -> one result document, without ever replacing a result by accident.

The report is drawn from the document afterwards, by whoever asked for it (the command line):
recording knows nothing of reports.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from ..case.model import Case
from ..errors import UsageError
from ..run.journal import merge, read, result_name


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def record_journals(case: Case, journals: list[Path], root: Path, out: Path | None = None,
                    force: bool = False) -> tuple[Path, dict[str, Any]] | None:
    """Write the result document for one journal or several shards; return where, and the
    document. None when the analysis packages are missing here (said in one line).

    An existing document is never replaced unless ``force``: a committed result holds
    analyses that a re-record from another checkout may not be able to redo."""
    try:
        from .document import build_document, write_document
    except ImportError as exc:
        _say(f"analysis packages are missing here ({exc.name}); the journal is complete. "
             f"Record it where gpurepro is installed: python -m gpurepro record "
             f"{' '.join(map(str, journals))}")
        return None
    if len(journals) > 1:
        header, trials = merge(journals)
    else:
        contents = read(journals[0])
        header, trials = contents.header, contents.trials
        if contents.torn_bytes:
            _say(f"{journals[0]}: its last line is torn ({contents.torn_bytes} bytes, a write cut "
                 f"short); the document covers the {len(trials)} complete records")
    planned = len(header["plan"]["order"])
    if len(trials) < planned and not header.get("options", {}).get("stopping"):
        _say(f"note: the journal holds {len(trials)} of {planned} planned trials; the document "
             f"covers those (continue the run with --resume to complete it)")
    if out is None:
        out = journals[0].parent / f"{result_name(header)}.json"
    if out.exists() and not force:
        raise UsageError(f"{out} exists; record never replaces a result: write elsewhere with "
                         f"--out PATH, or replace it with --force")
    doc = build_document(case, header, trials, root, journals[0].resolve())
    write_document(doc, out)
    return out, doc
