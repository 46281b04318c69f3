"""Journal(s) -> result document + report, without ever replacing a result by accident."""

from __future__ import annotations

import sys
from pathlib import Path

from ..case.model import Case
from ..errors import UsageError
from ..run.journal import merge, read, result_name


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def record_journals(case: Case, journals: list[Path], root: Path, out: Path | None = None,
                    force: bool = False) -> Path | None:
    """Write the result document (and its report) for one journal or several shards.

    An existing document is never replaced unless ``force``: a committed result holds
    analyses that a re-record from another checkout may not be able to redo."""
    try:
        from ..report.markdown import write_report
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
    written = write_report(doc, out)
    _say(f"result: {out}")
    for kind, path in written.items():
        _say(f"{kind}: {path}")
    _say("verdict: " + doc["verdict"]["status"])
    for s in doc["verdict"]["sentences"]:
        _say(f"  - {s}")
    _refresh_index(out, root)
    return out


def _refresh_index(out: Path, root: Path) -> None:
    """Rewrite the results index (results/README.md) that lists the new document, if any."""
    from ..report.index import indexed_folder, write_index

    folder = indexed_folder(out, root)
    if folder is None:
        return
    try:
        path, changed = write_index(folder)
    except OSError as exc:
        _say(f"the results index could not be rewritten ({exc}); run python -m gpurepro index")
        return
    if changed:
        _say(f"index: {path}")
